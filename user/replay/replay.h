/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * diagnose --replay: the job model run on recorded input, no kernel. Two inputs:
 *  - a recording (diagnose/attach --json --events): its model, tick and answer lines make the
 *    replay run the model exactly as the live run did, record for record;
 *  - an op trace (README "Op traces"), from another tool or tests/sim: each rank's ops on its
 *    own clock, aligned here by the completions of the collectives they share.
 * Records reach the model through feed__apply(), as live.
 */
#ifndef RS_REPLAY_H
#define RS_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "job.h"

#define REPLAY_FILES_MAX 64

struct replay_opts {
	struct job_cfg jcfg;
	uint64_t tick_ns;	/* time between the model's steps and verdicts (--drain-ms) */
	bool json;		/* step, rule, verdict and cost lines; else the diagnose report */
	FILE *out;
};

/* Run the model over files[0..n) ("-": stdin). Returns 0, or -errno with one line printed
 * that names the file, the line and the fix. */
int replay__run(char *const *files, int n, const struct replay_opts *o);

#endif /* RS_REPLAY_H */
