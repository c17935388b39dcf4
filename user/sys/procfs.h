/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* /proc readers and parsers. Everything read here comes from a possibly hostile process. */
#ifndef RS_PROCFS_H
#define RS_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_ENVIRON_MAX	(1 << 20)	/* larger environs are truncated, never trusted further */
#define PROC_MAPS_MAX		(16 << 20)
#define PROC_CGROUP_MAX		(64 << 10)	/* /proc/PID/cgroup: a line per v1 hierarchy */

struct proc_map {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	uint64_t inode;
	unsigned int dev_major;
	unsigned int dev_minor;
	char perms[5];
	const char *path;	/* points into the parsed line; "" for anonymous mappings */
};

struct proc_stat {
	int pid;
	char comm[64];
	char state;
	int ppid;
	uint64_t starttime;	/* clock ticks since boot: with pid, identifies a process across reuse */
	uint64_t vsize;		/* virtual memory size, bytes: grows when a library is mapped */
	uint64_t flags;		/* the task's PF_* flags (field 9) */
};

#define PROCFS_PF_KTHREAD	0x00200000ULL	/* a kernel thread: never a rank */
#define PROCFS_PF_EXITING	0x00000004ULL	/* past its exit record, not yet a zombie */

/* Read /proc/PID/NAME into a NUL-terminated malloc'd buffer of at most max bytes.
 * Returns the length, or -errno (-ENOENT/-ESRCH when the process is gone). */
ssize_t procfs__read(pid_t pid, const char *name, char **buf, size_t max);

/* Parse one /proc/PID/maps line (NUL-terminated, no newline); modifies nothing.
 * Returns 0, or -EINVAL on malformed input. m->path points into line. */
int procfs__parse_maps_line(const char *line, struct proc_map *m);

/* Find KEY in a NUL-separated environ block of len bytes.
 * Returns a pointer to the value inside env (NUL-terminated within len), or NULL. */
const char *procfs__environ_get(const char *env, size_t len, const char *key);

/* Is a process whose /proc/PID/cgroup text (len bytes) this is in cgroup path or below it,
 * in any hierarchy? path is absolute, without a trailing slash ("/" matches every one). */
bool procfs__cgroup_under(const char *text, size_t len, const char *path);
/* The next line of /proc/PID/cgroup text (len bytes) from *pos with a path: true, with the path
 * (after the second colon, not NUL-terminated) in *path and *plen; false at the end. Lines
 * without two colons or with a NUL are skipped. */
bool procfs__cgroup_next(const char *text, size_t len, size_t *pos, const char **path,
			 size_t *plen);

/* The numbers of the "KEY:" line of /proc status text (len bytes, NUL or not), at most max
 * of them into ids (NSpid: one per PID namespace, outermost first; Tgid, Seccomp: one).
 * Returns how many the line has (past max too), 0 without the line. */
int procfs__status_ids(const char *text, size_t len, const char *key, long *ids, int max);

#define PROCFS_NS_LEVELS	40	/* ids an NSpid line can have (the kernel nests 32 deep) */

/* The same of /proc/PID/NAME ("status", "task/TID/status"); 0 when unreadable. */
int procfs__status_field(pid_t pid, const char *name, const char *key, long *ids, int max);

/* Read n bytes at addr in pid's memory (process_vm_readv: no ptrace stop). Returns 0, or -1
 * when any of them cannot be read. */
int procfs__read_mem(pid_t pid, uint64_t addr, void *buf, size_t n);

/* How many fds this process has open (not counting the one the count itself takes), or
 * -errno. */
long procfs__self_fds(void);

/* Parse /proc/PID/stat text. Returns 0 or -EINVAL. */
int procfs__parse_stat(const char *buf, size_t len, struct proc_stat *st);

/* Read and parse /proc/PID/stat. Returns 0 or -errno. */
int procfs__stat(pid_t pid, struct proc_stat *st);

/* Strict decimal parse of a whole string into [lo, hi]. Returns 0 or -EINVAL/-ERANGE. */
int parse_long(const char *s, long lo, long hi, long *out);

#endif /* RS_PROCFS_H */
