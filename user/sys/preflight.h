/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Checks before loading anything, each failing with the one-line fix. */
#ifndef RS_PREFLIGHT_H
#define RS_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct preflight_paths {
	const char *btf;	/* /sys/kernel/btf/vmlinux */
	const char *tracefs;	/* /sys/kernel/tracing */
	const char *debugfs_tracing;	/* /sys/kernel/debug/tracing */
	const char *paranoid;	/* /proc/sys/kernel/perf_event_paranoid */
};

extern const struct preflight_paths preflight_default;

/* Privileges: root, or CAP_BPF + CAP_PERFMON (+ CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH for /proc).
 * Returns 0 or -EPERM with msg filled. */
int preflight__privileges(char *msg, size_t n);
/* The same for an effective capability set (bit N: capability N): msg names each one missing. */
int preflight__caps_missing(uint64_t effective, char *msg, size_t n);

/* kernel.perf_event_paranoid now (INT_MIN if unreadable). */
int preflight__paranoid(void);
/* The same from the file at path (a fake procfs in tests); INT_MIN if unreadable or not a
 * number. */
int preflight__paranoid_at(const char *path);

/* "; kernel.perf_event_paranoid is N: ..." into msg when N >= 3, else nothing. Returns the
 * length written. */
size_t preflight__paranoid_hint(char *msg, size_t n);

/*
 * At level 3 or more, Debian's patch (Debian, Ubuntu; mainline stops at 2 and treats more as
 * 2) refuses perf_event_open() to a process without CAP_SYS_ADMIN: CAP_PERFMON, which the
 * DaemonSet grants, is not enough. Returns -EACCES with the fix in msg (the sysctl, or
 * CAP_SYS_ADMIN) for such a level and an effective set (bit N: capability N) without
 * CAP_SYS_ADMIN; 0 otherwise, and for INT_MIN (unreadable).
 */
int preflight__paranoid_check(int level, uint64_t effective, char *msg, size_t n);
/* preflight__paranoid_check for pp->paranoid and this process' effective capabilities. */
int preflight__perf_events(const struct preflight_paths *pp, char *msg, size_t n);

/* "6.12.3-foo" -> 6012 (major * 1000 + minor); -1 if unparsable. */
int preflight__kernel_version(const char *release);

/* Does this kernel (release; NULL: the running one) return from a uretprobe through a
 * uretprobe() system call that seccomp filters? Linux 6.11 to 6.13 do (6.14 lets it pass): a
 * process under a filter that does not know it is killed on its first return. */
bool preflight__uretprobe_seccomp_risk(const char *release);

/* The memory limit of this process' cgroup and its ancestors (cgroup v2 memory.max, v1
 * memory.limit_in_bytes), the lowest; UINT64_MAX if none. where: the file that set it. */
uint64_t preflight__memcg_limit(char *where, size_t n);

/* BTF present. Returns 0 or -ENOENT with msg filled. */
int preflight__btf(const struct preflight_paths *pp, char *msg, size_t n);

/* tracefs reachable (tries to mount it when try_mount). Only kernels without the uprobe PMU
 * (before 4.17) need it, for legacy uprobes. Returns 0 or -ENOENT with msg. */
int preflight__tracefs(const struct preflight_paths *pp, int try_mount, char *msg, size_t n);

#endif /* RS_PREFLIGHT_H */
