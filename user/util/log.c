// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* stderr logging with a verbosity threshold. */
#include <stdarg.h>
#include <stdio.h>
#include "log.h"

int log_verbosity = LOG_INFO;

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if ((int)lvl > log_verbosity)
		return;
	fputs("rankscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *log__safe(const char *s, char *buf, size_t n)
{
	size_t i;

	if (!n)
		return buf;
	for (i = 0; s && s[i] && i + 1 < n; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}
