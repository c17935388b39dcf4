// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* rankscope: dispatch to one verb. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "log.h"
#include "rankscope.h"

#define RANKSCOPE_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: rankscope COMMAND [OPTIONS]\n"
"\n"
"Zero-instrumentation profiler for distributed training jobs.\n"
"\n"
"Commands:\n"
"  attach    attach to running ranks by PID and show per-rank collectives, I/O,\n"
"            scheduling and TCP (rankscope attach --help)\n"
"  diagnose  attach, split steps into phases and say which rank is slow, in\n"
"            which phase, and why (rankscope diagnose --help)\n"
"  daemon    watch every training process on the node and serve Prometheus\n"
"            metrics and a JSON API (rankscope daemon --help)\n"
"  hub       join node daemons into one verdict per job across nodes\n"
"            (rankscope hub --help)\n"
"  capture   record a Perfetto/Chrome trace of every rank for N seconds\n"
"            (rankscope capture --help)\n"
"  inject    load the CUPTI library into a running process (rankscope inject --help)\n"
"  stacks    every rank's threads' native stacks, merged into classes (a stuck job)\n"
"            (rankscope stacks --help)\n"
"  version   print the version\n"
"  help      this help\n");
}

int main(int argc, char **argv)
{
	/* step and verdict lines go out in bursts, flushed once a drain: one write per 64 KiB,
	 * not per 4 KiB (a terminal stays line-buffered) */
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOFBF, 64 << 10);
	/* A rank's model is ~1 MiB in blocks of 100+ KiB, made again whenever its job's
	 * membership changes. A fixed threshold keeps such blocks mmap'd: calloc gets them zeroed
	 * by the kernel and only the pages touched cost memory, where heap blocks would be
	 * cleared whole each time (half the daemon's CPU under rank churn), and free gives them
	 * back to the node. glibc would otherwise raise the threshold on the first free. */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "attach"))
		return cmd_attach(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diagnose"))
		return cmd_diagnose(argc - 1, argv + 1);
	if (!strcmp(argv[1], "daemon"))
		return cmd_daemon(argc - 1, argv + 1);
	if (!strcmp(argv[1], "hub"))
		return cmd_hub(argc - 1, argv + 1);
	if (!strcmp(argv[1], "capture"))
		return cmd_capture(argc - 1, argv + 1);
	if (!strcmp(argv[1], "inject"))
		return cmd_inject(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stacks"))
		return cmd_stacks(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("rankscope %s (wire ABI %d)\n", RANKSCOPE_VERSION, RS_ABI);
		return 0;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		/* help VERB: that verb's own help */
		if (argc > 2 && strcmp(argv[2], "help") && strcmp(argv[2], "version") &&
		    argv[2][0] != '-') {
			char *hv[] = { argv[0], argv[2], "--help", NULL };

			return main(3, hv);
		}
		usage(stdout);
		return 0;
	}
	pr_warn("unknown command '%s'; run 'rankscope help' for the list", argv[1]);
	return 2;
}
