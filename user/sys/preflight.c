// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Preflight checks: the cheapest place to turn a cryptic libbpf error into the fix. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/capability.h>
#include "preflight.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

const struct preflight_paths preflight_default = {
	.btf = "/sys/kernel/btf/vmlinux",
	.tracefs = "/sys/kernel/tracing",
	.debugfs_tracing = "/sys/kernel/debug/tracing",
	.paranoid = "/proc/sys/kernel/perf_event_paranoid",
};

int preflight__caps_missing(uint64_t effective, char *msg, size_t n)
{
	static const struct { int cap; const char *name; } need[] = {
		{ CAP_BPF, "CAP_BPF" }, { CAP_PERFMON, "CAP_PERFMON" },
	};
	size_t i, len = 0;

	if (effective & (1ULL << CAP_SYS_ADMIN))
		return 0;
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!(effective & (1ULL << need[i].cap)) && len < n)
			len += snprintf(msg + len, n - len, "%s%s", len ? ", " : "missing ",
					need[i].name);
	if (!len)
		return 0;
	if (len < n)
		len += snprintf(msg + len, n - len, " (or CAP_SYS_ADMIN) to load eBPF probes; run "
				"as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE (in "
				"Kubernetes: the DaemonSet in deploy/)");
	if (len < n && !(effective & (1ULL << CAP_PERFMON)))
		preflight__paranoid_hint(msg + len, n - len);
	return -EPERM;
}

int preflight__paranoid_at(const char *path)
{
	char buf[32] = "", *end;
	ssize_t r;
	long v;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return INT_MIN;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return INT_MIN;
	v = strtol(buf, &end, 10);
	if (end == buf || (*end && *end != '\n') || v < -1000 || v > 1000)
		return INT_MIN;
	return (int)v;
}

int preflight__paranoid(void)
{
	return preflight__paranoid_at(preflight_default.paranoid);
}

/* Debian's patch (carried by Ubuntu, Android and others; mainline stops at 2) adds levels 3
 * and 4 and checks capable(CAP_SYS_ADMIN), not perfmon_capable(), in perf_event_open(). */
static size_t paranoid_msg(int level, char *msg, size_t n)
{
	int len = snprintf(msg, n, "kernel.perf_event_paranoid is %d: at 3 or more the kernel opens "
			   "no perf event (uprobes, stack samples) without CAP_SYS_ADMIN on Debian "
			   "and Ubuntu kernels, not even with CAP_PERFMON; run `sysctl -w "
			   "kernel.perf_event_paranoid=2` on the node, or grant CAP_SYS_ADMIN "
			   "(Kubernetes: the privileged/ component)", level);

	return len < 0 ? 0 : (size_t)len < n ? (size_t)len : n ? n - 1 : 0;
}

size_t preflight__paranoid_hint(char *msg, size_t n)
{
	int level = preflight__paranoid();

	int len;

	if (level < 3 || level == INT_MIN || !n)
		return 0;
	/* short: it ends lines that already say what failed (192 bytes in session.c) */
	len = snprintf(msg, n, "; kernel.perf_event_paranoid is %d: at 3 or more the kernel opens "
		       "no perf event without CAP_SYS_ADMIN (Debian, Ubuntu); run sysctl -w "
		       "kernel.perf_event_paranoid=2", level);
	return len < 0 ? 0 : (size_t)len < n ? (size_t)len : n - 1;
}

int preflight__paranoid_check(int level, uint64_t effective, char *msg, size_t n)
{
	if (level == INT_MIN || level < 3 || (effective & (1ULL << CAP_SYS_ADMIN)))
		return 0;
	if (n)
		paranoid_msg(level, msg, n);
	return -EACCES;
}

static int effective_caps(uint64_t *eff)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d))
		return -errno;
	*eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	return 0;
}

int preflight__perf_events(const struct preflight_paths *pp, char *msg, size_t n)
{
	uint64_t eff;

	if (effective_caps(&eff))
		return 0;	/* preflight__privileges says so */
	return preflight__paranoid_check(preflight__paranoid_at(pp->paranoid), eff, msg, n);
}

int preflight__privileges(char *msg, size_t n)
{
	uint64_t eff;
	int e = effective_caps(&eff);

	if (e) {
		snprintf(msg, n, "failed to read capabilities: %s", strerror(-e));
		return -EPERM;
	}
	return preflight__caps_missing(eff, msg, n);
}

int preflight__btf(const struct preflight_paths *pp, char *msg, size_t n)
{
	if (!access(pp->btf, R_OK))
		return 0;
	snprintf(msg, n, "kernel BTF not found at %s; rankscope needs a kernel built with "
		 "CONFIG_DEBUG_INFO_BTF=y (5.8 or later)", pp->btf);
	return -ENOENT;
}

static int has_events(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/events", dir);
	return !stat(p, &st) && S_ISDIR(st.st_mode);
}

int preflight__tracefs(const struct preflight_paths *pp, int try_mount, char *msg, size_t n)
{
	if (has_events(pp->tracefs) || has_events(pp->debugfs_tracing))
		return 0;
	/* Debian does not mount it in containers or minimal VMs; it is safe to mount. */
	if (try_mount && !mount("nodev", pp->tracefs, "tracefs", 0, NULL) &&
	    has_events(pp->tracefs))
		return 0;
	snprintf(msg, n, "tracefs is not mounted at %s (needed for uprobes on this kernel); run: "
		 "mount -t tracefs nodev %s", pp->tracefs, pp->tracefs);
	return -ENOENT;
}

int preflight__kernel_version(const char *release)
{
	unsigned int major = 0, minor = 0;

	if (sscanf(release, "%u.%u", &major, &minor) != 2)
		return -1;
	return (int)(major * 1000 + minor);
}

bool preflight__uretprobe_seccomp_risk(const char *release)
{
	struct utsname u;
	int v;

	if (!release) {
		if (uname(&u))
			return false;
		release = u.release;
	}
	v = preflight__kernel_version(release);
	return v >= 6011 && v < 6014;
}

/* The smaller of *lim and the memory limit in file (a number; "max": none). */
static void limit_from(const char *file, uint64_t *lim, char *where, size_t n)
{
	char buf[64] = "";
	unsigned long long v;
	ssize_t r;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0 || sscanf(buf, "%llu", &v) != 1 || v >= (1ULL << 60) || v >= *lim)
		return;
	*lim = v;
	snprintf(where, n, "%s", file);
}

uint64_t preflight__memcg_limit(char *where, size_t n)
{
	static const char *const v2_roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char line[512], path[PATH_MAX], cg[400], *slash;
	uint64_t lim = UINT64_MAX;
	FILE *f;
	size_t i;

	if (n)
		where[0] = '\0';
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return lim;
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *rel;
		bool v2, v1mem;

		if (!ctrl || !(rel = strchr(ctrl + 1, ':')))
			continue;
		*rel++ = '\0';
		ctrl++;
		rel[strcspn(rel, "\n")] = '\0';
		v2 = !strcmp(line, "0") && !*ctrl;
		v1mem = !v2 && (!strcmp(ctrl, "memory") || strstr(ctrl, ",memory") ||
				!strncmp(ctrl, "memory,", 7));
		if ((!v2 && !v1mem) || strstr(rel, "..") || strlen(rel) >= sizeof(cg))
			continue;
		/* the cgroup and every ancestor: the lowest limit holds */
		snprintf(cg, sizeof(cg), "%s", rel);
		for (;;) {
			for (i = 0; v2 && i < 2; i++) {
				snprintf(path, sizeof(path), "%s%s/memory.max", v2_roots[i], cg);
				limit_from(path, &lim, where, n);
			}
			if (v1mem) {
				snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/memory.limit_in_bytes",
					 cg);
				limit_from(path, &lim, where, n);
			}
			slash = strrchr(cg, '/');
			if (!slash || !cg[1])
				break;
			*(slash == cg ? slash + 1 : slash) = '\0';
		}
	}
	fclose(f);
	return lim;
}
