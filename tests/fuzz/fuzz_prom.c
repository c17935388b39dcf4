// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the Prometheus text writer's escaping (user/util/prom.c) on label values
 * and HELP text from a container (job ids, communicator names, process names): any bytes,
 * NUL-separated into HELP and three label values. Each label value must read back, unescaped,
 * as what was given (with U+FFFD for each byte that is not UTF-8). With FUZZ_PROM_OUT set,
 * each exposition is also written there, for tests/fuzz/prom.sh to hand to promtool. Built
 * with ASan and UBSan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_common.h"
#include "prom.h"

/* Read the sample's labels from the "{" at p, in order, as a parser would: each name must be
 * names[i] and each value, unescaped, is compared with what was given. */
static void labels_back(const char *p, const char *const *names, const char *const *given,
			char *got, char *exp)
{
	size_t o, i, n;

	if (*p++ != '{')
		abort();
	for (i = 0; i < 3; i++) {
		n = strlen(names[i]);
		if (strncmp(p, names[i], n) || p[n] != '=' || p[n + 1] != '"')
			abort();
		for (p += n + 2, o = 0; *p != '"'; p++) {
			if (!*p || *p == '\n')
				abort();	/* unterminated, or a raw newline in the sample */
			if (*p == '\\') {
				p++;
				if (*p == 'n')
					got[o++] = '\n';
				else if (*p == '\\' || *p == '"')
					got[o++] = *p;
				else
					abort();	/* no other escape is written */
			} else {
				got[o++] = *p;
			}
		}
		got[o] = '\0';
		fuzz_expect_utf8(given[i], strlen(given[i]), exp);
		if (strcmp(got, exp))
			abort();
		p++;
		if (*p != (i < 2 ? ',' : '}'))
			abort();
		p++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "job_id", "comm", "rank" };
	const char *f[4], *labels[7], *line;
	char *text, *p, *got, *exp, *help = NULL;
	struct prom pr;
	size_t i;

	text = malloc(size + 1);
	got = malloc(3 * size + 1);
	exp = malloc(3 * size + 1);
	if (!text || !got || !exp)
		goto out;
	memcpy(text, data, size);
	text[size] = '\0';
	for (p = text, i = 0; i < 4; i++) {
		f[i] = p < text + size ? p : "";
		if (p < text + size)
			p += strlen(p) + 1;
	}
	for (i = 0; i < 3; i++) {
		labels[2 * i] = names[i];
		labels[2 * i + 1] = f[i + 1];
	}
	labels[6] = NULL;
	help = malloc(strlen(f[0]) + sizeof("Fuzzed: "));
	if (!help)
		goto out;
	strcpy(help, "Fuzzed: ");
	strcat(help, f[0]);	/* never empty: promtool's lint wants a help text */
	prom__init(&pr);
	prom__family(&pr, "rankscope_fuzz_total", "counter", help);
	prom__sample(&pr, "rankscope_fuzz_total", labels, 1);
	if (!pr.buf)
		goto done;
	line = strstr(pr.buf, "\nrankscope_fuzz_total{");
	if (!line)
		abort();
	labels_back(line + strlen("\nrankscope_fuzz_total"), names, f + 1, got, exp);
	/* HELP is one line */
	if (strchr(pr.buf + strlen("# HELP "), '\n') != strstr(pr.buf, "\n# TYPE"))
		abort();
	fuzz_write_out("FUZZ_PROM_OUT", "prom", pr.buf, pr.len);
done:
	prom__free(&pr);
out:
	free(help);
	free(text);
	free(got);
	free(exp);
	return 0;
}
