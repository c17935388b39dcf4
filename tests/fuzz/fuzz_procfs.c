// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the daemon's readers of /proc text that a container controls, on any
 * bytes. The first byte picks the file: maps (each line, then the library scan of the whole),
 * stat (a comm may hold spaces and parentheses; the same bytes as status text too), environ
 * (the rank variables), cgroup (with the scope path after the first NUL). Built with ASan and
 * UBSan.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "libs.h"
#include "procfs.h"
#include "ranks.h"

static void maps(const char *text, size_t len)
{
	struct proc_libs libs;
	struct proc_map m;
	char *copy = strndup(text, len), *line, *save = NULL;
	const char *at;

	if (!copy)
		return;
	(void)libs__scan_maps(copy, &libs);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (procfs__parse_maps_line(line, &m))
			continue;
		/* the path points into the line, or at "" */
		at = m.path;
		if (!at || (*at && (at < line || at > line + strlen(line))))
			abort();
		if (m.perms[4] != '\0')
			abort();
	}
	free(copy);
}

/* len bytes of text in a heap block of exactly that size: ASan sees a read past them. */
static char *exact_copy(const char *text, size_t len)
{
	char *copy = malloc(len ? len : 1);

	if (copy)
		memcpy(copy, text, len);
	return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1, *nul;
	size_t len = size ? size - 1 : 0;
	struct rank_info ri;
	struct proc_stat st;
	char *copy;
	int k;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
		maps(text, len);
		break;
	case 1:
		copy = exact_copy(text, len);
		if (!copy)
			return 0;
		if (!procfs__parse_stat(copy, len, &st) &&
		    strnlen(st.comm, sizeof(st.comm)) == sizeof(st.comm))
			abort();
		for (k = 0; k < 3; k++) {
			static const char *const keys[] = { "NSpid", "Tgid", "Seccomp" };
			long ids[PROCFS_NS_LEVELS];

			if (procfs__status_ids(copy, len, keys[k], ids, PROCFS_NS_LEVELS) < 0)
				abort();
		}
		free(copy);
		break;
	case 2:
		/* environ: NUL-separated, not NUL-terminated at the end */
		copy = exact_copy(text, len);
		if (!copy)
			return 0;
		ranks__init(&ri);
		(void)ranks__from_environ(copy, len, &ri);
		if (strnlen(ri.job, sizeof(ri.job)) == sizeof(ri.job))
			abort();
		(void)procfs__environ_get(copy, len, "RANK");
		(void)procfs__environ_get(copy, len, "");
		free(copy);
		break;
	default:
		nul = memchr(text, '\0', len);
		copy = strndup(nul ? nul + 1 : "/kubepods", nul ? len - (nul + 1 - text) : 9);
		if (!copy)
			return 0;
		(void)procfs__cgroup_under(text, nul ? (size_t)(nul - text) : len, copy);
		free(copy);
		break;
	}
	return 0;
}
