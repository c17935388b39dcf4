// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* hook_floor.c - attaches empty tp_btf programs to rankscope's global hooks and holds them */
/*
 *   hook_floor
 *
 * Prints "hook_floor: attached N programs" on stdout once every program is live, then holds
 * them until SIGINT/SIGTERM. Exit status: 0 on a clean detach, 1 on any error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "hook_floor.skel.h"

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, args) : 0;
}

int main(int argc, char **argv)
{
	struct hook_floor_bpf *skel;
	struct bpf_program *prog;
	sigset_t mask;
	int sig = 0, n = 0, err;

	if (argc != 1) {
		fprintf(stderr, "usage: %s (no arguments; SIGINT or SIGTERM detaches)\n", argv[0]);
		return 1;
	}
	/* Blocked before attaching, so a SIGTERM from bench.sh's cleanup always detaches cleanly. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	libbpf_set_print(libbpf_quiet);
	skel = hook_floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "hook_floor: failed to load the BPF programs: %s; "
			"run as root or grant CAP_BPF+CAP_PERFMON\n", strerror(errno));
		return 1;
	}
	err = hook_floor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "hook_floor: failed to attach: %s; does the kernel have BTF "
			"(/sys/kernel/btf/vmlinux)?\n", strerror(-err));
		goto out;
	}
	bpf_object__for_each_program(prog, skel->obj)
		n++;
	printf("hook_floor: attached %d programs\n", n);
	fflush(stdout);
	if (sigwait(&mask, &sig))
		err = -EINTR;
out:
	hook_floor_bpf__destroy(skel);
	return err ? 1 : 0;
}
