/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* CLI verbs: each returns the process exit status. */
#ifndef RS_CMD_H
#define RS_CMD_H

#include "session.h"

enum cmd_verb {
	VERB_ATTACH,
	VERB_DIAGNOSE,
	VERB_DAEMON,
	VERB_CAPTURE,
};

int cmd_attach(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_inject(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_hub(int argc, char **argv);
int cmd_stacks(int argc, char **argv);

/* Parse the options of a session verb into o. Returns 0, 1 after --help, or -EINVAL with
 * the reason printed. */
int cmd__parse_opts(int argc, char **argv, struct session_opts *o, enum cmd_verb verb);

/* An option's number or seconds within [lo, hi]: 0, or -EINVAL with a line naming the verb,
 * the option and the range. */
int cmd__parse_num(const char *verb, const char *opt, const char *arg, long lo, long hi,
		   long *out);
int cmd__parse_secs(const char *verb, const char *opt, const char *arg, double lo, double hi,
		    double *out);
/* --gpu-hour-cost: US dollars per GPU-hour, 0.01 to 10000. */
int cmd__parse_price(const char *verb, const char *arg, double *out);

/* After session__open: serve the API on --api-listen too, and say where the API is when
 * --listen does not serve it. Returns 0, or -errno with the reason printed. */
int cmd__serve_api(struct session *s, const char *verb);

/* rankscope capture --server URL: ask a running daemon. Set by cmd__parse_opts. */
extern const char *cmd_capture_server;

#endif /* RS_CMD_H */
