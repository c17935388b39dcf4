/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Collective libraries: which APIs we probe, where a process mapped them, and the probe sites. */
#ifndef RS_LIBS_H
#define RS_LIBS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "collectives.h"

/* One probed API: which SysV argument holds what (see RS_CK_* in collectives.h). */
struct coll_api {
	unsigned char lib;
	unsigned char op;
	const char *sym;	/* exact (mangled) name */
	unsigned char count, dtype, comm, stream, peer, flags;
	unsigned char redop, sendbuf, recvbuf;
};

extern const struct coll_api coll_apis[];
extern const int coll_apis_n;

/* A supported library as one process mapped it. */
struct proc_lib {
	bool found;
	char path[PATH_MAX];	/* as in /proc/PID/maps (inside the process' mount namespace) */
	uint64_t dev;		/* makedev(major, minor) from maps */
	uint64_t inode;
	uint64_t start;		/* lowest mapping, for the load bias */
	uint64_t end;
	uint64_t pgoff;
	bool deleted;		/* maps said "(deleted)" (cut from path): only map_files has it */
};

struct proc_libs {
	struct proc_lib lib[RS_LIB_MAX];
};

struct probe_site {
	const struct coll_api *api;
	uint64_t offset;	/* file offset for the uprobe */
	bool skipped_endbr;
};

/* Which supported library a mapped path is, by file name; RS_LIB_NONE if none. */
enum rs_lib libs__classify(const char *path);

/* Scan a maps text (NUL-terminated) for supported libraries. Returns how many were found. */
int libs__scan_maps(const char *maps, struct proc_libs *out);

/* The lowest mapping of the first file pid mapped whose name starts with stem ("libfoo",
 * "libfoo.so.1"). Returns 0 or -ENOENT. */
int libs__find_mapped(pid_t pid, const char *stem, struct proc_lib *out);

/* The main executable's lowest mapping (copy relocations put library data there). */
int libs__exe(pid_t pid, struct proc_lib *out);

/* Read /proc/PID/maps and scan it. Returns the count found or -errno. */
int libs__discover(pid_t pid, struct proc_libs *out);

/* Why the path under /proc/PID/root was not used for a library (rankscope_library_path_refused_total). */
enum lib_refusal {
	LR_NONE,
	LR_DELETED,		/* maps says "(deleted)": replaced or removed since it was mapped */
	LR_UNRESOLVED,		/* openat2 refused it (missing, a magic link, a loop) */
	LR_NOT_REGULAR,		/* a FIFO, a device, a directory... */
	LR_OTHER_FILE,		/* a regular file, but not the inode pid mapped */
	LR_MAX,
};

/* Why probing a library failed for good (rankscope_library_probe_errors_total). */
enum lib_error {
	LE_SYMBOL_NOT_FOUND,	/* no API of the table among its exported functions */
	LE_NOT_MAPPED_FILE,	/* neither way led to the file pid mapped */
	LE_BAD_ELF,
	LE_FD_LIMIT,		/* EMFILE/ENFILE: raise the daemon's open file limit */
	LE_GONE,		/* the process or its mapping went away */
	LE_SECCOMP,		/* -ENOTSUP: a seccomp filter the kernel's uretprobes would trip */
	LE_OTHER,
	LE_MAX,
};

const char *libs__refusal_name(enum lib_refusal r);
enum lib_error libs__error_kind(int err);
const char *libs__error_name(enum lib_error e);

/* Open the file pl names as pid sees it, without letting the process' symlinks lead outside
 * its root: openat2(RESOLVE_IN_ROOT) under /proc/PID/root, else /proc/PID/map_files (the exact
 * mapping; the only way for a library deleted or replaced since it was mapped). The file must
 * be regular and the inode pid mapped. *via says which way worked; *refused (may be NULL) why
 * the path under the root was not used (LR_NONE: it was). Returns the fd, or -errno (-ESTALE:
 * not the mapped file, -ESRCH: the process or the mapping is gone). */
int libs__open_mapped(pid_t pid, const struct proc_lib *pl, const char **via,
		      enum lib_refusal *refused);

/* Resolve every table API of lib in the file at host_path (which must be the mapped inode:
 * -ESTALE otherwise). sites must hold coll_apis_n entries. Returns the number of sites. */
int libs__resolve(const char *host_path, const struct proc_lib *pl, unsigned int lib,
		  struct probe_site *sites);

uint64_t libs__cookie(const struct coll_api *api);

#endif /* RS_LIBS_H */
