// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * `rankscope stacks`: one snapshot of every thread's native stack of every rank, merged the
 * way LLNL's STAT does: ranks whose main threads share a stack form one class, and the
 * smallest class (the odd ones out) is shown with its whole stack.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "detect.h"
#include "json.h"
#include "log.h"
#include "procfs.h"
#include "ranks.h"
#include "targets.h"
#include "unwind.h"

struct rank_snap {
	pid_t pid;
	struct rank_info ri;
	struct unwind_proc up;
	char key[2048];		/* the main thread's functions, outermost first */
	int cls;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: rankscope stacks (-p PID[,PID...] | --all) [--json]\n"
"\n"
"One snapshot of the stack of every thread of every rank, merged: ranks whose main\n"
"threads share a stack form one class, and the smallest class is shown with its whole\n"
"stack. Native frames are unwound from CFI (so without frame pointers too) and symbolized,\n"
"with file:line where debug info exists. In a CPython %s rank the Python frames (function,\n"
"file, line) are read from the interpreter and shown where they run; another Python\n"
"version gets native frames only, with a note. Each process is held (ptrace) only while\n"
"its threads are read; a stopped or zombie process, or one another tracer holds, is not\n"
"attached: it is shown with its threads' states and Python frames.\n"
"\n"
"  -p, --pid LIST   the ranks' PIDs\n"
"      --all        every process that looks like a training rank\n"
"      --json       one {\"type\":\"stacks\",...} line per rank, then one\n"
"                   {\"type\":\"stack_classes\",...}\n"
"  -h, --help       this help\n"
"\n"
"Exit status: 0, 1 when no rank could be read, 2 on bad arguments.\n",
		pyframes__built_version());
}

static void make_key(struct rank_snap *r)
{
	unwind__class_key(&r->up, r->key, sizeof(r->key));
}

static void print_stack(const struct unwind_thread *t)
{
	int i;

	for (i = 0; i < t->nframes; i++) {
		const struct unwind_frame *f = &t->frames[i];

		printf("      #%-2d %s", i, f->func[0] ? f->func : "??");
		if (f->file[0])
			printf(" at %s:%d", f->file, f->line);
		printf(" (%s)\n", f->python ? "python" : f->lib[0] ? f->lib : "?");
	}
	if (t->truncated)
		printf("      ... deeper frames cut\n");
}

int cmd_stacks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	pid_t pids[TARGETS_MAX];
	struct rank_snap *r;
	const char *plist = NULL, *bad = NULL;
	bool all = false, json = false;
	int c, n = 0, i, k, ncls = 0, ok = 0, *size, nheld = 0;
	uint64_t held_max = 0, *held = NULL;

	while ((c = getopt_long(argc, argv, "p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': plist = optarg; break;
		case 'a': all = true; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default:
			pr_warn("stacks: run 'rankscope stacks --help' for the options");
			return 2;
		}
	}
	if (optind < argc || !plist == !all) {
		pr_warn("stacks: give the ranks' PIDs (-p PID[,PID...]) or --all, one of them");
		return 2;
	}
	if (plist) {
		n = targets__parse_pids(plist, pids, TARGETS_MAX, &bad);
		if (n < 0) {
			pr_warn("stacks: bad PID list at '%s': give -p PID[,PID...] (at most %d)",
				bad ? bad : plist, TARGETS_MAX);
			return 2;
		}
	} else {
		n = targets__discover(pids, TARGETS_MAX, getpid());
		if (n <= 0) {
			pr_warn("stacks: --all found no training process (no rank variable in any "
				"environ, no NCCL, MPI or gloo mapped); give -p PIDS");
			return 1;
		}
	}
	r = calloc(n, sizeof(*r));
	size = calloc(n, sizeof(*size));
	if (!r || !size) {
		pr_warn("stacks: out of memory");
		return 1;
	}
	for (i = 0; i < n; i++) {
		char *env = NULL;
		ssize_t len;

		r[i].pid = pids[i];
		ranks__init(&r[i].ri);
		len = procfs__read(pids[i], "environ", &env, 1 << 20);
		if (len > 0)
			ranks__from_environ(env, len, &r[i].ri);
		free(env);
		if (unwind__process(pids[i], &r[i].up))
			pr_warn("stacks: PID %d: %s", pids[i], r[i].up.err);
		else
			ok++;
		if (r[i].up.held_ns > held_max)
			held_max = r[i].up.held_ns;
		make_key(&r[i]);
	}
	/* how long each thread was stopped: the median and the most */
	for (i = 0; i < n; i++)
		nheld += r[i].up.nthreads;
	held = calloc(nheld ? nheld : 1, sizeof(*held));
	for (i = 0, nheld = 0; held && i < n; i++)
		for (k = 0; k < r[i].up.nthreads; k++)
			if (!r[i].up.threads[k].err[0])
				held[nheld++] = r[i].up.threads[k].held_ns;
	if (held)
		qsort(held, nheld, sizeof(*held), detect__cmp_u64);
	/* classes: ranks whose main threads share a stack */
	for (i = 0; i < n; i++) {
		for (k = 0; k < i && strcmp(r[k].key, r[i].key); k++)
			;
		r[i].cls = k < i ? r[k].cls : ncls++;
		size[r[i].cls]++;
	}
	if (json) {
		struct json j;
		int cl;

		for (i = 0; i < n; i++) {
			json__init(&j);
			unwind__json(&j, &r[i].up, r[i].ri.rank, r[i].ri.job);
			if (!j.err)
				printf("%s\n", j.buf);
			json__free(&j);
		}
		json__init(&j);
		json__obj_begin(&j);
		json__kstr(&j, "type", "stack_classes");
		json__kuint(&j, "process_held_max_ns", held_max);
		json__kuint(&j, "thread_held_median_ns", nheld ? held[nheld / 2] : 0);
		json__kuint(&j, "thread_held_max_ns", nheld ? held[nheld - 1] : 0);
		json__key(&j, "classes");
		json__arr_begin(&j);
		for (cl = 0; cl < ncls; cl++) {
			json__obj_begin(&j);
			json__key(&j, "ranks");
			json__arr_begin(&j);
			for (i = 0; i < n; i++)
				if (r[i].cls == cl)
					json__int(&j, r[i].ri.rank >= 0 ? r[i].ri.rank : -1);
			json__arr_end(&j);
			json__key(&j, "pids");
			json__arr_begin(&j);
			for (i = 0; i < n; i++)
				if (r[i].cls == cl)
					json__int(&j, r[i].pid);
			json__arr_end(&j);
			for (i = 0; i < n && r[i].cls != cl; i++)
				;
			json__kstr(&j, "main_stack", r[i].key);
			json__key(&j, "outlier");
			json__bool(&j, ncls > 1 && size[cl] < n - size[cl]);
			json__obj_end(&j);
		}
		json__arr_end(&j);
		json__obj_end(&j);
		if (!j.err)
			printf("%s\n", j.buf);
		json__free(&j);
	} else {
		int cl;

		printf("%d rank(s), %d stack class(es) of the main thread; each thread stopped %.2f "
		       "ms (median), %.2f ms at most\n", n, ncls,
		       nheld ? held[nheld / 2] / 1e6 : 0, nheld ? held[nheld - 1] / 1e6 : 0);
		for (cl = 0; cl < ncls; cl++) {
			bool odd = ncls > 1 && size[cl] < n - size[cl];
			const struct unwind_thread *t;

			printf("%sclass %d: rank(s)", odd ? "* " : "  ", cl);
			for (i = 0; i < n; i++)
				if (r[i].cls == cl)
					printf(" %d (pid %d, %c)", r[i].ri.rank, r[i].pid,
					       r[i].up.state ? r[i].up.state : '?');
			printf("%s\n", odd ? "   <- the odd one(s) out" : "");
			for (i = 0; i < n && r[i].cls != cl; i++)
				;
			t = unwind__main_thread(&r[i].up);
			if (r[i].up.err[0])
				printf("      %s\n", r[i].up.err);
			if (t)
				print_stack(t);
		}
		for (i = 0; i < n; i++) {
			if (r[i].up.threads_cut)
				printf("note: rank %d (pid %d): %d thread(s) past the first %d not "
				       "read\n", r[i].ri.rank, r[i].pid, r[i].up.threads_cut,
				       UNWIND_THREADS);
			if (r[i].up.py_note[0])
				printf("note: rank %d (pid %d): %s\n", r[i].ri.rank, r[i].pid,
				       r[i].up.py_note);
		}
	}
	for (i = 0; i < n; i++)
		unwind__free(&r[i].up);
	free(r);
	free(size);
	free(held);
	return ok ? 0 : 1;
}
