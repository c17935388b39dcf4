// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* stderr logging with a verbosity threshold. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "log.h"

int log_verbosity = LOG_INFO;

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if ((int)lvl > log_verbosity)
		return;
	n = snprintf(line, sizeof(line), "rankscope: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	/* stdout and stderr may share a terminal or a file (2>&1), and a full buffer may have cut
	 * a JSON line: with stdout's lock held, finish that line, then write the message whole,
	 * so no other thread's line or message lands inside it */
	flockfile(stdout);
	fflush(stdout);
	fputs(line, stderr);
	funlockfile(stdout);
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
