// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* hookcost.c - what global hooks cost a process nobody traces, per operation */
/*
 *   hookcost [-n ITERS] [-k REPEATS]
 *
 * Runs three loops on CPU 0 and prints one line per loop, "hookcost: LOOP NS_PER_OP", the
 * fastest of REPEATS runs (a CPU-bound loop is only ever slowed by noise, so its minimum is the
 * repeatable figure):
 *   read     read(2) of one byte from /dev/zero: sys_enter/sys_exit on a syscall the io
 *            family records, so the "is this task ours" test is all that stops it;
 *   getppid  a syscall no family records: the syscall-number filter stops it;
 *   pipe     two threads ping-pong one byte through pipes: every op is two writes, two reads,
 *            two wakeups and two context switches (sched_switch, sched_wakeup).
 * Exit status: 0, or 1 on any error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static long iters = 200000;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static double loop_read(void)
{
	double t0;
	char c;
	long i;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	t0 = now_ns();
	for (i = 0; i < iters; i++)
		if (read(fd, &c, 1) != 1)
			break;
	t0 = (now_ns() - t0) / iters;
	close(fd);
	return i == iters ? t0 : -1;
}

static double loop_getppid(void)
{
	double t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++)
		syscall(SYS_getppid);
	return (now_ns() - t0) / iters;
}

struct pong {
	int in, out;
	long n;
};

static void *pong_main(void *arg)
{
	struct pong *p = arg;
	char c;
	long i;

	pin_cpu0();
	for (i = 0; i < p->n; i++)
		if (read(p->in, &c, 1) != 1 || write(p->out, &c, 1) != 1)
			break;
	return NULL;
}

static double loop_pipe(void)
{
	int ab[2], ba[2];
	struct pong p;
	pthread_t th;
	double t0;
	long i, n = iters / 10;	/* an op is ~100x a syscall */
	char c = 'x';

	if (pipe(ab) || pipe(ba))
		return -1;
	p.in = ab[0];
	p.out = ba[1];
	p.n = n;
	if (pthread_create(&th, NULL, pong_main, &p))
		return -1;
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			break;
	t0 = (now_ns() - t0) / n;
	pthread_join(th, NULL);
	close(ab[0]);
	close(ab[1]);
	close(ba[0]);
	close(ba[1]);
	return i == n ? t0 : -1;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		double (*fn)(void);
	} loops[] = {
		{ "read", loop_read },
		{ "getppid", loop_getppid },
		{ "pipe", loop_pipe },
	};
	int k = 15, c, l, r;

	while ((c = getopt(argc, argv, "n:k:")) != -1) {
		switch (c) {
		case 'n': iters = atol(optarg); break;
		case 'k': k = atoi(optarg); break;
		default: iters = 0; break;
		}
	}
	if (iters < 100 || k < 1 || optind != argc) {
		fprintf(stderr, "usage: %s [-n ITERS>=100] [-k REPEATS>=1]\n", argv[0]);
		return 1;
	}
	if (pin_cpu0()) {
		fprintf(stderr, "hookcost: failed to pin to CPU 0: %s\n", strerror(errno));
		return 1;
	}
	for (l = 0; l < (int)(sizeof(loops) / sizeof(loops[0])); l++) {
		double best = 0, v;

		for (r = 0; r < k; r++) {
			v = loops[l].fn();
			if (v < 0) {
				fprintf(stderr, "hookcost: loop %s failed: %s\n", loops[l].name,
					strerror(errno));
				return 1;
			}
			if (!r || v < best)
				best = v;
		}
		printf("hookcost: %s %.1f\n", loops[l].name, best);
	}
	return 0;
}
