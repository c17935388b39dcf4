// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: what the HTTP server takes from a request before anything else runs. The
 * first byte picks it: a number argument (parse_long, between bounds from the input), the
 * capture query (seconds, ranks, align, format: NUL-separated, absent past the last), a
 * capture id looked up in a capture directory (only the server's own names may reach a file),
 * a --listen address. Each answer must keep its contract. Built with ASan and UBSan.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "capture.h"
#include "httpd.h"
#include "procfs.h"

/* The next NUL-separated field of the input, or NULL past the last. */
static const char *field(const char **p, const char *end)
{
	const char *s = *p, *nul;

	if (s >= end)
		return NULL;
	nul = memchr(s, '\0', end - s);
	*p = nul ? nul + 1 : end;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct capture cap;
	static bool opened;
	char *text, err[160], dir[] = "/tmp/rs-fuzz-http.XXXXXX";
	const char *p, *end, *f[4];
	struct capture_entry e;
	struct capture_req req;
	struct sockaddr_in6 sa;
	unsigned int salen;
	long lo, hi, v;
	bool gz;
	int i, fd;

	if (!opened) {
		if (!mkdtemp(dir) || capture__open(&cap, dir, 4, 1 << 20, err, sizeof(err)))
			abort();
		opened = true;
	}
	if (size < 1)
		return 0;
	/* the server sees NUL-terminated strings: one copy, NUL after the last field */
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	p = text;
	end = text + size - 1;
	switch (data[0] % 4) {
	case 0:
		lo = size > 2 ? (long)(int8_t)data[1] * 1000 : 0;
		hi = lo + (size > 3 ? data[2] * 100000L : 1);
		if (!parse_long(text, lo, hi, &v) && (v < lo || v > hi))
			abort();
		break;
	case 1:
		for (i = 0; i < 4; i++)
			f[i] = field(&p, end);
		err[0] = '\0';
		if (capture__parse(f[0], f[1], f[2], f[3], &req, err, sizeof(err))) {
			if (!err[0] || !memchr(err, '\0', sizeof(err)))
				abort();
			break;
		}
		if (req.seconds < 1 || req.seconds > CAPTURE_SECONDS_MAX ||
		    req.nranks < 0 || req.nranks > CAPTURE_RANKS_MAX)
			abort();
		for (i = 0; i < req.nranks; i++)
			if (req.ranks[i] < 0)
				abort();
		break;
	case 2:
		/* no capture was made: whatever the id, nothing is found or opened */
		i = capture__lookup(&cap, text, &e, &fd, &gz);
		if ((i != -EINVAL && i != -ENOENT) || fd >= 0)
			abort();
		break;
	default:
		if (!httpd__parse_listen(text, &sa, &salen) &&
		    salen != sizeof(struct sockaddr_in) && salen != sizeof(struct sockaddr_in6))
			abort();
		break;
	}
	free(text);
	return 0;
}
