// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* `rankscope attach` and `rankscope diagnose`: a session over ranks given by PID. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "decode.h"
#include "detect.h"
#include "log.h"
#include "period.h"
#include "preflight.h"
#include "procfs.h"
#include "ranks.h"
#include "session.h"
#include "targets.h"

static void print_report(struct session *s);

static int run(int argc, char **argv, enum cmd_verb verb)
{
	struct rank_info *infos = NULL;
	struct session s = {};
	char msg[256];
	int err, i, n;

	err = cmd__parse_opts(argc, argv, &s.o, verb);
	if (err)
		return err > 0 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	session__block_signals();
	s.out = stdout;
	s.tty = isatty(STDOUT_FILENO);

	if (s.o.all) {
		i = targets__discover(s.o.pids + s.o.npids, TARGETS_MAX - s.o.npids, getpid());
		if (i < 0) {
			pr_warn("attach: failed to scan /proc: %s", strerror(-i));
			return 1;
		}
		s.o.npids = targets__dedup(s.o.pids, s.o.npids + i);
		if (!s.o.npids) {
			pr_warn("attach: --all found no training process (none maps NCCL, MPI or gloo "
				"or has RANK/OMPI_COMM_WORLD_RANK/PMI_RANK/SLURM_PROCID); start the job first");
			return 1;
		}
	}
	for (i = 0; i < s.o.npids; i++) {
		if (s.o.pids[i] == getpid()) {
			pr_warn("attach: PID %d is rankscope itself; give the training processes' PIDs",
				s.o.pids[i]);
			return 2;
		}
	}
	if (preflight__privileges(msg, sizeof(msg)) ||
	    preflight__btf(&preflight_default, msg, sizeof(msg)) ||
	    (access("/sys/bus/event_source/devices/uprobe/type", R_OK) &&
	     preflight__tracefs(&preflight_default, 1, msg, sizeof(msg)))) {
		pr_warn("attach: %s", msg);
		return 1;
	}
	s.o.max_ranks = s.o.npids;
	s.o.max_jobs = 1;
	err = session__open(&s);
	if (err)
		goto out;
	infos = calloc(s.o.npids, sizeof(*infos));
	if (!infos) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < s.o.npids; i++) {
		err = session__prepare(&s, i, s.o.pids[i]);
		if (err)
			goto out;
		infos[i] = s.ranks[i].info;
	}
	/* the given order numbers the ranks the environ did not */
	ranks__assign_by_order(infos, s.o.npids);
	for (i = 0, n = 0; i < s.o.npids; i++) {
		s.ranks[i].info.rank = infos[i].rank;
		s.ranks[i].info.src = infos[i].src;
		n += session__join(&s, i, true) == AR_OK;
	}
	if (!n) {
		err = -ENOENT;
		goto out;
	}
	err = session__build_jobs(&s);
	if (err)
		goto out;
	pr_info("attach: attached to %d rank%s, %u probes; Ctrl-C to detach", n, n == 1 ? "" : "s",
		probes__count(&s.probes));
	/* the first stats interval starts now */
	for (i = 0; i < s.nranks; i++) {
		struct slot_snapshot snap;
		struct rank_row row;
		uint64_t t = session__now();

		if (!s.ranks[i].used)
			continue;
		probes__read_slot(&s.probes, s.ranks[i].slot, s.ranks[i].pid, t, &snap);
		stats__row(&s.ranks[i], &snap, t, &row);
	}
	err = session__loop(&s, NULL);
	session__finish(&s);
	if (s.o.report && !s.o.json)
		print_report(&s);
	if (!err && s.write_err) {
		err = s.write_err;
		pr_warn("attach: failed to write output: %s; was the reader closed?", strerror(-err));
	}
out:
	session__close(&s);
	free(infos);
	return err ? 1 : 0;
}

int cmd_attach(int argc, char **argv)
{
	return run(argc, argv, VERB_ATTACH);
}

int cmd_diagnose(int argc, char **argv)
{
	return run(argc, argv, VERB_DIAGNOSE);
}

/* diagnose's human report: the rule, each rank's last step, and the verdict. */
static void print_report(struct session *s)
{
	const struct sjob *j = &s->jobs[0];
	char a[16], line[512];
	double conf = 0;
	int period = 0, i, p, rank = -1;
	const char *rule = j->model ? job__rule(j->model, &conf, &period) : "";

	printf("rankscope diagnose: %d rank%s, %llu rank-steps", j->ncols, j->ncols == 1 ? "" : "s",
	       (unsigned long long)j->steps_seen);
	if (rule[0])
		printf("; steps by %s (period %d, confidence %.2f)\n", rule, period, conf);
	else
		printf("; no step boundary found (too few collectives?)\n");
	if (j->steps_seen) {
		printf("\nlast step per rank:\n  %-5s %-9s", "RANK", "STEP");
		for (p = 0; p < PH_MAX; p++)
			printf(" %-11s", steps__phase_name(p));
		printf("\n");
		for (i = 0; i < j->ncols; i++) {
			const struct rank_state *rs = &s->ranks[j->slots[i]];
			const struct job_step *st = &rs->last_step;

			if (!st->dur_ns)
				continue;
			printf("  %-5d %-9s", rs->info.rank, report__dur(st->dur_ns, a, sizeof(a)));
			for (p = 0; p < PH_MAX; p++)
				printf(" %-11s", report__dur(st->ph.ns[p], a, sizeof(a)));
			printf("\n");
		}
	}
	printf("\n");
	if (!j->have_worst) {
		printf("verdict: none yet (fewer than %d steps seen on every rank)\n", s->o.jcfg.window);
		return;
	}
	if (j->worst.col >= 0 && j->worst.col < j->ncols)
		rank = s->ranks[j->slots[j->worst.col]].info.rank;
	report__verdict_text(stdout, &j->worst, rank, line, sizeof(line));
	printf("experiment: %s\n", detect__experiment(j->worst.cls));
}
