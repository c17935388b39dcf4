// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the ELF symbol reader (user/sys/elfsym.c) on any bytes, as a library a
 * container could hand the daemon: open it from a memfd, walk every symbol, look one up, turn
 * addresses into file offsets and read the first instruction there. Built with ASan and UBSan;
 * the test bounds its memory (-rss_limit_mb).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elfsym.h"

struct walk {
	struct elfsym *e;
	unsigned long n;
};

static int each(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *ctx)
{
	struct walk *w = ctx;
	uint64_t off;
	uint8_t insn[16];
	bool skipped;

	if (!name || strlen(name) > (1 << 20))
		abort();
	(void)size;
	if (is_func && !elfsym__vaddr_to_off(w->e, vaddr, &off))
		(void)elfsym__read(w->e, off, insn, sizeof(insn));
	(void)elfsym__probe_offset(w->e, vaddr, &off, &skipped);
	return ++w->n >= 4096;	/* enough of one file: the next input */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct elfsym *e;
	struct walk w = {};
	char path[64];
	uint64_t vaddr, sz, bias;

	if (fd < 0)
		fd = memfd_create("fuzz_elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (elfsym__open(path, &e))
		return 0;
	w.e = e;
	(void)elfsym__foreach(e, each, &w);
	if (!elfsym__find(e, "MPI_Allreduce", &vaddr, &sz))
		(void)elfsym__vaddr_to_off(e, vaddr, &sz);
	(void)elfsym__load_bias(e, 0x7f0000000000ULL, 0, &bias);
	elfsym__free(e);
	return 0;
}
