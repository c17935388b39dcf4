/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Messages to stderr: "<module>: failed to <verb> <object>: <reason>; <hint>". Never on hot paths. */
#ifndef RS_LOG_H
#define RS_LOG_H

#include <stddef.h>

enum log_level { LOG_WARN, LOG_INFO, LOG_DEBUG };

extern int log_verbosity;

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copy s into buf with every byte that is not printable ASCII shown as '?', so text from a
 * traced process (comm, paths) cannot drive the terminal. Returns buf. */
const char *log__safe(const char *s, char *buf, size_t n);

#define pr_warn(...)	log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* RS_LOG_H */
