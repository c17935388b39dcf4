/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* ELF symbol lookup and uprobe-site checks on a library a target process really mapped. */
#ifndef RS_ELFSYM_H
#define RS_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfsym;

#define ELFSYM_MAX_FILE (2ULL << 30)	/* refuse larger "libraries": hostile or not a library */
#define ELFSYM_MAX_TABLE (24ULL << 20)	/* a symbol table or its strings: -EFBIG past this */

/* Open path (already resolved through /proc/PID/root by the caller).
 * Returns 0 and *out, or -errno (-ENOEXEC for non-ELF / unsupported ELF). */
int elfsym__open(const char *path, struct elfsym **out);
void elfsym__free(struct elfsym *e);

/* Device and inode of the opened file, to match against /proc/PID/maps. */
void elfsym__ident(const struct elfsym *e, uint64_t *dev, uint64_t *ino);

typedef int (*elfsym_cb)(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *ctx);

/* Call cb for every defined function and object symbol in .dynsym, then .symtab.
 * A non-zero return from cb stops and is returned. A table past the end of the file or whose
 * strings are (-ENOEXEC), or bigger than ELFSYM_MAX_TABLE with its strings (-EFBIG), is
 * skipped, never read; that error is returned when no table gave a symbol. Returns 0 or
 * -errno. */
int elfsym__foreach(struct elfsym *e, elfsym_cb cb, void *ctx);

/* Find a defined symbol by exact name. Returns 0 and its vaddr/size, or -ENOENT. */
int elfsym__find(struct elfsym *e, const char *name, uint64_t *vaddr, uint64_t *size);

/* Translate a virtual address to a file offset through PT_LOAD. Returns 0 or -ENOENT. */
int elfsym__vaddr_to_off(const struct elfsym *e, uint64_t vaddr, uint64_t *off);

/* Load bias of a mapping: runtime address = vaddr + bias, given one mapping's start and
 * file offset (pgoff) from /proc/PID/maps. Returns 0 or -ENOENT. */
int elfsym__load_bias(const struct elfsym *e, uint64_t map_start, uint64_t pgoff, uint64_t *bias);

/* Read n bytes at file offset off. Returns 0 or -errno. */
int elfsym__read(const struct elfsym *e, uint64_t off, void *buf, size_t n);

/* The file offset where a uprobe on the function at vaddr should go: after an endbr64
 * (which uprobes cannot emulate and would single-step, ~10x the cost). *skipped says so.
 * Returns 0 or -errno. */
int elfsym__probe_offset(const struct elfsym *e, uint64_t vaddr, uint64_t *off, bool *skipped);

/* Pure check on instruction bytes: 1 if they start with endbr64 (f3 0f 1e fa). */
int elfsym__is_endbr64(const uint8_t *insn, size_t n);

#endif /* RS_ELFSYM_H */
