/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* CLI verbs: each returns the process exit status. */
#ifndef RS_CMD_H
#define RS_CMD_H

int cmd_attach(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);

#endif /* RS_CMD_H */
