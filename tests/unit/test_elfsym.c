// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* elfsym: opening hostile or broken files, symbol lookup, vaddr -> offset, load bias. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "elfsym.h"
#include "procfs.h"

#define LIBMPI "/usr/lib/x86_64-linux-gnu/libmpi.so.40"

struct load {
	uint64_t vaddr, off, filesz;
};

/* PT_LOAD headers of path, straight from libelf (the reference elfsym must agree with). */
static int loads_of(const char *path, struct load *l, int max)
{
	GElf_Phdr ph;
	size_t i, n;
	int fd, k = 0;
	Elf *elf;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getphdrnum(elf, &n)) {
		for (i = 0; i < n && k < max; i++) {
			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
				continue;
			l[k].vaddr = ph.p_vaddr;
			l[k].off = ph.p_offset;
			l[k].filesz = ph.p_filesz;
			k++;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return k;
}

static char tmpdir[64];

static int group_setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rs-elfsym-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	char cmdpath[128];

	snprintf(cmdpath, sizeof(cmdpath), "%s/f", tmpdir);
	unlink(cmdpath);
	rmdir(tmpdir);
	return 0;
}

/* Write n bytes to tmpdir/f and return its path. */
static const char *tmpfile_with(const void *data, size_t n)
{
	static char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/f", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
	return path;
}

static void *read_prefix(const char *path, size_t n, size_t *got)
{
	void *buf = malloc(n);
	int fd = open(path, O_RDONLY);
	ssize_t r;

	assert_non_null(buf);
	assert_true(fd >= 0);
	r = read(fd, buf, n);
	assert_true(r >= 0);
	close(fd);
	*got = r;
	return buf;
}

static void is_endbr64__bytes__detected(void **state)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55 };
	static const uint8_t endbr32[] = { 0xf3, 0x0f, 0x1e, 0xfb };
	static const uint8_t push[] = { 0x41, 0x57, 0x49, 0x89 };

	assert_int_equal(elfsym__is_endbr64(endbr64, sizeof(endbr64)), 1);
	assert_int_equal(elfsym__is_endbr64(endbr64, 4), 1);
	assert_int_equal(elfsym__is_endbr64(endbr64, 3), 0);
	assert_int_equal(elfsym__is_endbr64(endbr64, 0), 0);
	assert_int_equal(elfsym__is_endbr64(endbr32, sizeof(endbr32)), 0);
	assert_int_equal(elfsym__is_endbr64(push, sizeof(push)), 0);
	assert_int_equal(elfsym__is_endbr64(endbr64 + 1, 4), 0);
}

static void open__non_elf__enoexec(void **state)
{
	static const char text[] = "#!/bin/sh\necho not an ELF file\n";
	struct elfsym *e = (struct elfsym *)0x1;

	assert_int_equal(elfsym__open(tmpfile_with(text, sizeof(text) - 1), &e), -ENOEXEC);
	assert_ptr_equal(e, (struct elfsym *)0x1);
	assert_int_equal(elfsym__open(tmpfile_with("", 0), &e), -ENOEXEC);
	/* the magic alone is not an ELF file */
	assert_int_equal(elfsym__open(tmpfile_with("\x7f" "ELF", 4), &e), -ENOEXEC);
}

static void open__directory__enoexec(void **state)
{
	struct elfsym *e = (struct elfsym *)0x1;

	assert_int_equal(elfsym__open(tmpdir, &e), -ENOEXEC);
	assert_ptr_equal(e, (struct elfsym *)0x1);
}

static void open__missing__enoent(void **state)
{
	struct elfsym *e;

	assert_int_equal(elfsym__open("/nonexistent/libfoo.so", &e), -ENOENT);
}

static void open__truncated_100_bytes__error(void **state)
{
	struct elfsym *e = (struct elfsym *)0x1;
	size_t got;
	void *head;

	if (access(LIBMPI, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	head = read_prefix(LIBMPI, 100, &got);
	assert_int_equal(got, 100);
	assert_int_equal(elfsym__open(tmpfile_with(head, got), &e), -ENOEXEC);
	assert_ptr_equal(e, (struct elfsym *)0x1);
	free(head);
}

static void open__truncated_at_many_sizes__no_crash(void **state)
{
	struct elfsym *e;
	struct stat st;
	uint64_t vaddr, size, off;
	size_t sizes[] = { 4, 16, 63, 64, 65, 120, 64 + 56 * 3, 1000, 4096, 65536, 0, 0, 0 };
	size_t i, got;
	int err;
	void *all;

	if (stat(LIBMPI, &st))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	all = read_prefix(LIBMPI, st.st_size, &got);
	assert_int_equal(got, st.st_size);
	/* cut inside the section headers, inside the last segment, one byte short */
	sizes[10] = got - 1;
	sizes[11] = got - 4096;
	sizes[12] = got / 2;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		err = elfsym__open(tmpfile_with(all, sizes[i]), &e);
		if (err) {
			assert_true(err < 0);
			continue;
		}
		/* opened: whatever lookups return, they must stay inside the file */
		if (!elfsym__find(e, "MPI_Allreduce", &vaddr, &size) &&
		    !elfsym__vaddr_to_off(e, vaddr, &off))
			assert_true(off < sizes[i]);
		elfsym__free(e);
	}
	/* every PT_LOAD of the first 64 KiB lies about its size: nothing usable */
	assert_int_equal(elfsym__open(tmpfile_with(all, 65536), &e), -ENOEXEC);
	free(all);
}

static void open__32bit_elf__enoexec(void **state)
{
	Elf32_Ehdr eh = { 0 };

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS32;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_386;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	{
		struct elfsym *e;

		assert_int_equal(elfsym__open(tmpfile_with(&eh, sizeof(eh)), &e), -ENOEXEC);
	}
}

static void free__null__noop(void **state)
{
	elfsym__free(NULL);
}

static void find__mpi_allreduce__function_in_text(void **state)
{
	struct elfsym *e;
	struct load l[16];
	uint64_t vaddr = 0, size = 0, v2;
	int n, i, in_load = 0;

	if (access(LIBMPI, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	assert_int_equal(elfsym__find(e, "MPI_Allreduce", &vaddr, &size), 0);
	assert_true(vaddr > 0);
	assert_true(size > 0);
	n = loads_of(LIBMPI, l, 16);
	assert_true(n > 0);
	for (i = 0; i < n; i++)
		in_load |= vaddr >= l[i].vaddr && vaddr < l[i].vaddr + l[i].filesz;
	assert_true(in_load);
	/* size is optional */
	assert_int_equal(elfsym__find(e, "MPI_Allreduce", &v2, NULL), 0);
	assert_true(v2 == vaddr);
	/* the profiling alias is a different name for the same code */
	if (!elfsym__find(e, "PMPI_Allreduce", &v2, NULL))
		assert_true(v2 == vaddr);
	assert_int_equal(elfsym__find(e, "MPI_No_such_function_xyz", &v2, NULL), -ENOENT);
	assert_int_equal(elfsym__find(e, "MPI_Allreduc", &v2, NULL), -ENOENT);
	assert_int_equal(elfsym__find(e, "", &v2, NULL), -ENOENT);
	elfsym__free(e);
}

struct count_ctx {
	int funcs, objects;
	int stop_after;
};

static int count_cb(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *vctx)
{
	struct count_ctx *c = vctx;

	assert_true(name && *name);
	assert_true(vaddr != 0);
	if (is_func)
		c->funcs++;
	else
		c->objects++;
	if (c->stop_after && c->funcs + c->objects == c->stop_after)
		return 42;
	return 0;
}

static void foreach__libmpi__funcs_and_objects_then_stop(void **state)
{
	struct count_ctx c = { 0 };
	struct elfsym *e;

	if (access(LIBMPI, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	assert_int_equal(elfsym__foreach(e, count_cb, &c), 0);
	assert_true(c.funcs > 100);
	assert_true(c.objects > 100);	/* ompi_mpi_comm_world, ompi_mpi_double, ... */
	memset(&c, 0, sizeof(c));
	c.stop_after = 5;
	assert_int_equal(elfsym__foreach(e, count_cb, &c), 42);
	assert_int_equal(c.funcs + c.objects, 5);
	elfsym__free(e);
}

static void vaddr_to_off__each_load__matches_phdrs(void **state)
{
	struct elfsym *e;
	struct load l[16];
	uint64_t off;
	int n, i;

	if (access(LIBMPI, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	n = loads_of(LIBMPI, l, 16);
	assert_true(n > 1);
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(elfsym__vaddr_to_off(e, l[i].vaddr, &off), 0);
		assert_true(off == l[i].off);
		assert_int_equal(elfsym__vaddr_to_off(e, l[i].vaddr + l[i].filesz - 1, &off), 0);
		assert_true(off == l[i].off + l[i].filesz - 1);
	}
	/* past the file part of the last segment (its .bss) there is no file offset */
	assert_int_equal(elfsym__vaddr_to_off(e, l[n - 1].vaddr + l[n - 1].filesz, &off),
			 -ENOENT);
	assert_int_equal(elfsym__vaddr_to_off(e, UINT64_MAX - 8, &off), -ENOENT);
	elfsym__free(e);
}

static void vaddr_to_off__bss_object__enoent(void **state)
{
	struct elfsym *e;
	uint64_t vaddr, off;

	if (access(LIBMPI, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	/* MPI_COMM_WORLD lives in .bss in OpenMPI 4 */
	if (elfsym__find(e, "ompi_mpi_comm_world", &vaddr, NULL)) {
		elfsym__free(e);
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	}
	assert_int_equal(elfsym__vaddr_to_off(e, vaddr, &off), -ENOENT);
	elfsym__free(e);
}

static void load_bias__pgoff0__start_minus_first_vaddr(void **state)
{
	struct elfsym *e;
	struct load l[16];
	uint64_t bias, start = 0x7f1234500000ULL;
	int n, i;

	if (access(LIBMPI, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	n = loads_of(LIBMPI, l, 16);
	assert_true(n > 1);
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	assert_int_equal(elfsym__load_bias(e, start, 0, &bias), 0);
	assert_true(bias == start - (l[0].vaddr & ~0xfffULL));
	/* every other segment, mapped where the loader puts it, gives the same bias */
	for (i = 1; i < n; i++) {
		uint64_t b2, pg = l[i].off & ~0xfffULL;
		bool shares_page = pg < l[i - 1].off + l[i - 1].filesz;

		assert_int_equal(elfsym__load_bias(e, bias + (l[i].vaddr & ~0xfffULL), pg, &b2), 0);
		/* the RELRO segment shares its first file page with the one before it */
		(void)shares_page;
		if (b2 != bias)
			fail_msg("segment %d (pgoff 0x%llx): bias 0x%llx, want 0x%llx", i,
				 (unsigned long long)pg, (unsigned long long)b2,
				 (unsigned long long)bias);
	}
	/* a pgoff past the file */
	assert_int_equal(elfsym__load_bias(e, start, 1ULL << 40, &bias), -ENOENT);
	elfsym__free(e);
}

static void load_bias__libc_in_this_process__symbol_address(void **state)
{
	struct proc_map m;
	char *maps, *line, *save = NULL, path[PATH_MAX] = "";
	uint64_t start = 0, pgoff = 0, bias, vaddr;
	struct elfsym *e;
	void *libc, *sym;
	ssize_t n;

	/* the runtime address of getpid in libc, as the dynamic linker resolved it */
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	sym = dlsym(libc, "getpid");
	assert_non_null(sym);
	n = procfs__read(getpid(), "maps", &maps, PROC_MAPS_MAX);
	assert_true(n > 0);
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (procfs__parse_maps_line(line, &m) || !strstr(m.path, "/libc.so.6"))
			continue;
		/* any mapping of it will do; take the first, as rankscope does */
		snprintf(path, sizeof(path), "%s", m.path);
		start = m.start;
		pgoff = m.pgoff;
		break;
	}
	free(maps);
	if (!path[0]) {
		dlclose(libc);
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	}
	assert_int_equal(elfsym__open(path, &e), 0);
	assert_int_equal(elfsym__load_bias(e, start, pgoff, &bias), 0);
	assert_int_equal(elfsym__find(e, "getpid", &vaddr, NULL), 0);
	assert_true(vaddr + bias == (uint64_t)(uintptr_t)sym);
	elfsym__free(e);
	dlclose(libc);
}

static void probe_offset__libc_getpid__after_endbr_if_any(void **state)
{
	struct elfsym *e;
	uint64_t vaddr, off, probe;
	uint8_t insn[4];
	bool skipped;
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";

	if (access(libc, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	assert_int_equal(elfsym__open(libc, &e), 0);
	assert_int_equal(elfsym__find(e, "getpid", &vaddr, NULL), 0);
	assert_int_equal(elfsym__vaddr_to_off(e, vaddr, &off), 0);
	assert_int_equal(elfsym__read(e, off, insn, sizeof(insn)), 0);
	assert_int_equal(elfsym__probe_offset(e, vaddr, &probe, &skipped), 0);
	assert_int_equal(skipped, elfsym__is_endbr64(insn, sizeof(insn)));
	assert_true(probe == off + (skipped ? 4 : 0));
	elfsym__free(e);
}

/* Two functions in this binary's .text with known first bytes (found through .symtab). */
__asm__(".text\n"
	".globl rs_test_endbr_fn\n.type rs_test_endbr_fn, @function\n"
	"rs_test_endbr_fn:\n\tendbr64\n\tret\n.size rs_test_endbr_fn, .-rs_test_endbr_fn\n"
	".globl rs_test_plain_fn\n.type rs_test_plain_fn, @function\n"
	"rs_test_plain_fn:\n\tnop\n\tnop\n\tnop\n\tnop\n\tret\n"
	".size rs_test_plain_fn, .-rs_test_plain_fn\n");

static void probe_offset__endbr64_function__moved_past_it(void **state)
{
	char exe[PATH_MAX];
	struct elfsym *e;
	uint64_t vaddr, off, probe;
	bool skipped = false;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(elfsym__open(exe, &e), 0);
	assert_int_equal(elfsym__find(e, "rs_test_endbr_fn", &vaddr, NULL), 0);
	assert_int_equal(elfsym__vaddr_to_off(e, vaddr, &off), 0);
	assert_int_equal(elfsym__probe_offset(e, vaddr, &probe, &skipped), 0);
	assert_true(skipped);
	assert_true(probe == off + 4);
	assert_int_equal(elfsym__find(e, "rs_test_plain_fn", &vaddr, NULL), 0);
	assert_int_equal(elfsym__vaddr_to_off(e, vaddr, &off), 0);
	assert_int_equal(elfsym__probe_offset(e, vaddr, &probe, &skipped), 0);
	assert_false(skipped);
	assert_true(probe == off);
	/* an address with no file offset */
	assert_int_equal(elfsym__probe_offset(e, UINT64_MAX - 8, &probe, &skipped), -ENOENT);
	elfsym__free(e);
}

static void read__bounds__erange(void **state)
{
	struct elfsym *e;
	struct stat st;
	uint8_t b[8];

	if (stat(LIBMPI, &st))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	assert_int_equal(elfsym__read(e, 0, b, 4), 0);
	assert_memory_equal(b, "\x7f" "ELF", 4);
	assert_int_equal(elfsym__read(e, st.st_size - 1, b, 1), 0);
	assert_int_equal(elfsym__read(e, st.st_size, b, 0), 0);
	assert_int_equal(elfsym__read(e, st.st_size, b, 1), -ERANGE);
	assert_int_equal(elfsym__read(e, st.st_size - 2, b, 4), -ERANGE);
	assert_int_equal(elfsym__read(e, UINT64_MAX, b, 1), -ERANGE);
	elfsym__free(e);
}

static void ident__libmpi__stat_of_file(void **state)
{
	struct elfsym *e;
	struct stat st;
	uint64_t dev, ino;

	if (stat(LIBMPI, &st))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	elfsym__ident(e, &dev, &ino);
	assert_true(dev == st.st_dev);
	assert_true(ino == st.st_ino);
	elfsym__free(e);
}

/*
 * Crafted files, made from a real library by editing its section headers: a table past the
 * end of the file, a 1 GiB sparse .dynstr, 10M symbols in a sparse .dynsym, overlapping
 * sections, a section header table past the end. Each gives an error (or garbage symbols,
 * never a crash) and the peak RSS grows by less than 64 MiB.
 */
enum craft { C_SHOFF_PAST_EOF, C_DYNSTR_1G, C_DYNSYM_10M, C_OVERLAP, C_DYNSYM_PAST_EOF };

static Elf64_Shdr *section(char *img, const char *want)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + eh->e_shoff);
	const char *names = img + sh[eh->e_shstrndx].sh_offset;
	int i;

	for (i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, want))
			return &sh[i];
	return NULL;
}

/* A copy of src edited as c says, at path. */
static void craft_file(const char *src, const char *path, enum craft c)
{
	Elf64_Shdr *dynsym, *dynstr;
	Elf64_Ehdr *eh;
	uint64_t end;
	size_t n;
	char *img;
	int fd;

	img = read_prefix(src, 64 << 20, &n);
	assert_non_null(img);
	eh = (Elf64_Ehdr *)img;
	assert_true(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= n);
	dynsym = section(img, ".dynsym");
	dynstr = section(img, ".dynstr");
	assert_non_null(dynsym);
	assert_non_null(dynstr);
	end = n;
	switch (c) {
	case C_SHOFF_PAST_EOF:
		eh->e_shoff = n + 4096;
		break;
	case C_DYNSTR_1G:		/* the file grows, sparse, to hold it */
		dynstr->sh_offset = (n + 4095) & ~4095ULL;
		dynstr->sh_size = 1ULL << 30;
		end = dynstr->sh_offset + dynstr->sh_size;
		break;
	case C_DYNSYM_10M:
		dynsym->sh_offset = (n + 4095) & ~4095ULL;
		dynsym->sh_size = 10000000ULL * sizeof(Elf64_Sym);
		end = dynsym->sh_offset + dynsym->sh_size;
		break;
	case C_OVERLAP:			/* the symbols read from the strings, and the other way */
		dynsym->sh_offset = dynstr->sh_offset;
		dynstr->sh_offset = dynsym->sh_offset + 8;
		break;
	case C_DYNSYM_PAST_EOF:
		dynsym->sh_offset = n - 16;
		dynsym->sh_size = 1 << 20;
		break;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_true(write(fd, img, n) == (ssize_t)n);
	assert_int_equal(ftruncate(fd, end), 0);
	close(fd);
	free(img);
}

static void reset_hwm(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "5", 1) != 1)
			print_message("clear_refs: %s\n", strerror(errno));
		close(fd);
	}
}

static long hwm_kib(void)
{
	char *st = NULL, *at;
	long v = -1;

	if (procfs__read(getpid(), "status", &st, 65536) > 0 && (at = strstr(st, "VmHWM:")))
		v = strtol(at + 6, NULL, 10);
	free(st);
	return v;
}

static int tally_cb(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *ctx)
{
	++*(size_t *)ctx;
	return 0;
}

static void foreach__crafted_tables__bounded_error(void **state)
{
	static const struct {
		enum craft c;
		const char *what;
		int want;		/* from foreach; 1: any outcome but a crash */
	} cases[] = {
		{ C_SHOFF_PAST_EOF, "section headers past EOF", 1 },
		{ C_DYNSTR_1G, "1 GiB sparse .dynstr", -EFBIG },
		{ C_DYNSYM_10M, "10M symbols", -EFBIG },
		{ C_OVERLAP, "overlapping .dynsym and .dynstr", 1 },
		{ C_DYNSYM_PAST_EOF, ".dynsym past EOF", -ENOEXEC },
	};
	char path[] = "/tmp/rs_elfcraftXXXXXX";
	struct elfsym *e;
	long before, after;
	size_t i, syms;
	int fd, err;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		craft_file(LIBMPI, path, cases[i].c);
		/* the peak from here: "5" resets VmHWM (Linux 4.0+) */
		reset_hwm();
		before = hwm_kib();
		syms = 0;
		err = elfsym__open(path, &e);
		if (!err) {
			err = elfsym__foreach(e, tally_cb, &syms);
			elfsym__free(e);
		}
		after = hwm_kib();
		print_message("%s: %s (%zu symbols), peak RSS +%ld KiB\n", cases[i].what,
			      err ? strerror(-err) : "ok", syms, after - before);
		if (cases[i].want != 1)
			assert_int_equal(err, cases[i].want);
		assert_true(before > 0 && after - before < 64 * 1024);
	}
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(is_endbr64__bytes__detected),
		cmocka_unit_test(open__non_elf__enoexec),
		cmocka_unit_test(open__directory__enoexec),
		cmocka_unit_test(open__missing__enoent),
		cmocka_unit_test(open__truncated_100_bytes__error),
		cmocka_unit_test(open__truncated_at_many_sizes__no_crash),
		cmocka_unit_test(open__32bit_elf__enoexec),
		cmocka_unit_test(free__null__noop),
		cmocka_unit_test(find__mpi_allreduce__function_in_text),
		cmocka_unit_test(foreach__libmpi__funcs_and_objects_then_stop),
		cmocka_unit_test(vaddr_to_off__each_load__matches_phdrs),
		cmocka_unit_test(vaddr_to_off__bss_object__enoent),
		cmocka_unit_test(load_bias__pgoff0__start_minus_first_vaddr),
		cmocka_unit_test(load_bias__libc_in_this_process__symbol_address),
		cmocka_unit_test(probe_offset__libc_getpid__after_endbr_if_any),
		cmocka_unit_test(probe_offset__endbr64_function__moved_past_it),
		cmocka_unit_test(read__bounds__erange),
		cmocka_unit_test(ident__libmpi__stat_of_file),
		cmocka_unit_test(foreach__crafted_tables__bounded_error),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
