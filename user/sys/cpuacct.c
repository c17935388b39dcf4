// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* rankscope's own CPU time, by thread kind, from per-thread CPU clocks. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "cpuacct.h"

#define GONE_MAX 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double ended[CPUACCT_KINDS];	/* threads that ended, counted at their end */
static double last[CPUACCT_KINDS];	/* what the last read returned: the floor of the next */
static pid_t gone[GONE_MAX];		/* counted in ended[] but maybe still in /proc a moment */
static unsigned int ngone;

const char *cpuacct__name(enum cpuacct_kind k)
{
	static const char *const names[CPUACCT_KINDS] = { "loop", "http", "capture" };

	return k < CPUACCT_KINDS ? names[k] : "unknown";
}

/* The kernel's clock id of one thread's CPU time (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED),
 * what pthread_getcpuclockid() returns): readable for any thread of this process. */
static clockid_t thread_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned int)tid) << 3) | 6;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void cpuacct__thread_exit(enum cpuacct_kind k)
{
	double s = clock_s(CLOCK_THREAD_CPUTIME_ID);

	if (k >= CPUACCT_KINDS)
		return;
	pthread_mutex_lock(&lock);
	ended[k] += s;
	gone[ngone++ % GONE_MAX] = (pid_t)syscall(SYS_gettid);
	pthread_mutex_unlock(&lock);
}

static enum cpuacct_kind kind_of(pid_t tid, pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (tid == pid)
		return CPUACCT_LOOP;
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	f = fopen(path, "re");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = '\0';
	return strcmp(comm, CPUACCT_CAPTURE_NAME) ? CPUACCT_HTTP : CPUACCT_CAPTURE;
}

int cpuacct__read(double out[CPUACCT_KINDS])
{
	double sum[CPUACCT_KINDS];
	struct dirent *de;
	pid_t pid = getpid(), tid;
	unsigned int i;
	int k, err = 0;
	DIR *d;

	pthread_mutex_lock(&lock);
	memcpy(sum, ended, sizeof(sum));
	d = opendir("/proc/self/task");
	if (!d) {
		err = -errno;
		memcpy(out, last, sizeof(last));
		pthread_mutex_unlock(&lock);
		return err;
	}
	while ((de = readdir(d))) {
		tid = (pid_t)strtol(de->d_name, NULL, 10);
		if (tid <= 0)
			continue;
		for (i = 0; i < GONE_MAX && gone[i] != tid; i++)
			;
		if (i < GONE_MAX)
			continue;
		sum[kind_of(tid, pid)] += clock_s(thread_clock(tid));
	}
	closedir(d);
	for (k = 0; k < CPUACCT_KINDS; k++) {
		/* a thread read just before it ended, then counted again at its end, must not
		 * make the next reading go back */
		if (sum[k] > last[k])
			last[k] = sum[k];
		out[k] = last[k];
	}
	pthread_mutex_unlock(&lock);
	return 0;
}
