// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* libelf-based symbol reader. The file may come from a hostile container: bound everything. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elfsym.h"

#define MAX_PHDRS 64

struct elfsym {
	int fd;
	Elf *elf;
	uint64_t dev;
	uint64_t ino;
	uint64_t fsize;
	size_t nload;
	struct {
		uint64_t vaddr, off, filesz;
	} load[MAX_PHDRS];
};

int elfsym__open(const char *path, struct elfsym **out)
{
	struct elfsym *e;
	struct stat st;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t i, n;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (e->fd < 0) {
		err = -errno;
		free(e);
		return err;
	}
	if (fstat(e->fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ELFSYM_MAX_FILE) {
		err = -ENOEXEC;
		goto fail;
	}
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->fsize = st.st_size;
	/* read, not mmap: a file truncated under us must be an error, not a SIGBUS */
	e->elf = elf_begin(e->fd, ELF_C_READ, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		err = -ENOEXEC;
		goto fail;
	}
	if (elf_getphdrnum(e->elf, &n)) {
		err = -ENOEXEC;
		goto fail;
	}
	for (i = 0; i < n && e->nload < MAX_PHDRS; i++) {
		if (!gelf_getphdr(e->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > e->fsize || ph.p_filesz > e->fsize - ph.p_offset)
			continue;	/* lies about its size: not usable */
		e->load[e->nload].vaddr = ph.p_vaddr;
		e->load[e->nload].off = ph.p_offset;
		e->load[e->nload].filesz = ph.p_filesz;
		e->nload++;
	}
	if (!e->nload) {
		err = -ENOEXEC;
		goto fail;
	}
	*out = e;
	return 0;
fail:
	elfsym__free(e);
	return err;
}

void elfsym__free(struct elfsym *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

void elfsym__ident(const struct elfsym *e, uint64_t *dev, uint64_t *ino)
{
	*dev = e->dev;
	*ino = e->ino;
}

static int foreach_in(struct elfsym *e, Elf_Scn *scn, GElf_Shdr *sh, elfsym_cb cb, void *ctx,
		      size_t *delivered)
{
	Elf_Scn *strscn;
	GElf_Shdr strsh;
	Elf_Data *data;
	GElf_Sym sym;
	const char *name;
	size_t i, n;
	int type, err;

	if (!sh->sh_entsize)
		return 0;
	/* a table read is a table in memory: bound it and its strings before libelf reads them
	 * (libtorch_cpu, the largest here, has 0.8 MiB of symbols and 2.7 MiB of names) */
	if (sh->sh_offset > e->fsize || sh->sh_size > e->fsize - sh->sh_offset)
		return -ENOEXEC;	/* past the end of the file */
	strscn = elf_getscn(e->elf, sh->sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh))
		return -ENOEXEC;
	if (sh->sh_size > ELFSYM_MAX_TABLE || strsh.sh_size > ELFSYM_MAX_TABLE)
		return -EFBIG;
	if (strsh.sh_offset > e->fsize || strsh.sh_size > e->fsize - strsh.sh_offset)
		return -ENOEXEC;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	n = data->d_size / sizeof(Elf64_Sym);
	for (i = 0; i < n; i++) {
		if (!gelf_getsym(data, i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(e->elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		++*delivered;
		err = cb(name, sym.st_value, sym.st_size, type != STT_OBJECT, ctx);
		if (err)
			return err;
	}
	return 0;
}

int elfsym__foreach(struct elfsym *e, elfsym_cb cb, void *ctx)
{
	static const unsigned int order[] = { SHT_DYNSYM, SHT_SYMTAB };
	size_t k, delivered = 0;
	int err, bad = 0;
	Elf_Scn *scn;
	GElf_Shdr sh;

	for (k = 0; k < 2; k++) {
		for (scn = NULL; (scn = elf_nextscn(e->elf, scn));) {
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != order[k])
				continue;
			err = foreach_in(e, scn, &sh, cb, ctx, &delivered);
			if (err == -EFBIG || err == -ENOEXEC) {
				bad = bad ? bad : err;	/* skipped: the other table may do */
				continue;
			}
			if (err)
				return err;
		}
	}
	/* a broken or oversized table is an error only when no other gave a symbol */
	return delivered ? 0 : bad;
}

struct find_ctx {
	const char *name;
	uint64_t vaddr, size;
};

static int find_cb(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *ctx)
{
	struct find_ctx *f = ctx;

	if (strcmp(name, f->name))
		return 0;
	f->vaddr = vaddr;
	f->size = size;
	return 1;
}

int elfsym__find(struct elfsym *e, const char *name, uint64_t *vaddr, uint64_t *size)
{
	struct find_ctx f = { .name = name };
	int err;

	err = elfsym__foreach(e, find_cb, &f);
	if (err < 0)
		return err;
	if (err == 0)
		return -ENOENT;
	*vaddr = f.vaddr;
	if (size)
		*size = f.size;
	return 0;
}

int elfsym__vaddr_to_off(const struct elfsym *e, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < e->nload; i++) {
		if (vaddr >= e->load[i].vaddr && vaddr - e->load[i].vaddr < e->load[i].filesz) {
			*off = vaddr - e->load[i].vaddr + e->load[i].off;
			return 0;
		}
	}
	return -ENOENT;
}

int elfsym__load_bias(const struct elfsym *e, uint64_t map_start, uint64_t pgoff, uint64_t *bias)
{
	uint64_t page = 4096, seg_page_off;
	size_t i;
	int pass;

	/* A page can hold the tail of one segment and the head of the next (RELRO): prefer the
	 * segment that starts on this page, then the one that contains it. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < e->nload; i++) {
			seg_page_off = e->load[i].off & ~(page - 1);
			if (pass == 0 ? pgoff != seg_page_off :
			    pgoff < seg_page_off || pgoff - seg_page_off >= e->load[i].filesz)
				continue;
			/* the mapping at pgoff shows vaddr (page-aligned) + (pgoff - seg_page_off) */
			*bias = map_start - ((e->load[i].vaddr & ~(page - 1)) + (pgoff - seg_page_off));
			return 0;
		}
	}
	return -ENOENT;
}

int elfsym__read(const struct elfsym *e, uint64_t off, void *buf, size_t n)
{
	ssize_t r;

	if (off > e->fsize || n > e->fsize - off)
		return -ERANGE;
	r = pread(e->fd, buf, n, off);
	if (r < 0)
		return -errno;
	return (size_t)r == n ? 0 : -EIO;
}

int elfsym__is_endbr64(const uint8_t *insn, size_t n)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

	return n >= 4 && !memcmp(insn, endbr64, 4);
}

int elfsym__probe_offset(const struct elfsym *e, uint64_t vaddr, uint64_t *off, bool *skipped)
{
	uint8_t insn[4];
	int err;

	err = elfsym__vaddr_to_off(e, vaddr, off);
	if (err)
		return err;
	*skipped = false;
	if (elfsym__read(e, *off, insn, sizeof(insn)))
		return 0;
	if (elfsym__is_endbr64(insn, sizeof(insn))) {
		*off += 4;
		*skipped = true;
	}
	return 0;
}
