/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* rankscope's own CPU time, by what its threads do (rankscope_cpu_seconds_total). */
#ifndef RS_CPUACCT_H
#define RS_CPUACCT_H

enum cpuacct_kind {
	CPUACCT_LOOP,		/* the main thread: drain, decode, steps, verdicts, publish */
	CPUACCT_HTTP,		/* the HTTP server's threads (every thread not named below) */
	CPUACCT_CAPTURE,	/* capture writers, named CPUACCT_CAPTURE_NAME */
	CPUACCT_KINDS,
};

#define CPUACCT_CAPTURE_NAME "rs-capture"

const char *cpuacct__name(enum cpuacct_kind k);

/* Call last in a thread that ends before the process does: its CPU time stays counted. */
void cpuacct__thread_exit(enum cpuacct_kind k);

/* CPU seconds (user + system) of each kind since start: the live threads of this process,
 * read from their per-thread CPU clocks, plus those that ended. Never decreases. Returns 0,
 * or -errno when /proc/self/task cannot be read (out[] then holds the last values). */
int cpuacct__read(double out[CPUACCT_KINDS]);

#endif /* RS_CPUACCT_H */
