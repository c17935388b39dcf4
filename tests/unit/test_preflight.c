// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* preflight: BTF, tracefs and kernel.perf_event_paranoid checks fail with the message that names
 * the fix. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <limits.h>
#include "preflight.h"

static char tmpdir[64], tracefs[128], events[160], btf[128], plain[128], plain_events[160];

static int group_setup(void **state)
{
	int fd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rs-preflight-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	/* tracefs: a directory with an events/ subdirectory */
	snprintf(tracefs, sizeof(tracefs), "%s/tracing", tmpdir);
	snprintf(events, sizeof(events), "%s/events", tracefs);
	/* plain: a directory whose events is a file, not a directory */
	snprintf(plain, sizeof(plain), "%s/plain", tmpdir);
	snprintf(plain_events, sizeof(plain_events), "%s/events", plain);
	snprintf(btf, sizeof(btf), "%s/vmlinux", tmpdir);
	if (mkdir(tracefs, 0700) || mkdir(events, 0700) || mkdir(plain, 0700))
		return -1;
	fd = open(plain_events, O_WRONLY | O_CREAT, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	fd = open(btf, O_WRONLY | O_CREAT, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int group_teardown(void **state)
{
	unlink(btf);
	unlink(plain_events);
	rmdir(plain);
	rmdir(events);
	rmdir(tracefs);
	rmdir(tmpdir);
	return 0;
}

/* Without CAP_SYS_ADMIN, the message names each capability missing, and only those. */
static void caps__each_missing__named(void **state)
{
	const uint64_t bpf = 1ULL << 39, perfmon = 1ULL << 38, admin = 1ULL << 21;
	char msg[256];

	assert_int_equal(preflight__caps_missing(admin, msg, sizeof(msg)), 0);
	assert_int_equal(preflight__caps_missing(bpf | perfmon, msg, sizeof(msg)), 0);
	assert_int_equal(preflight__caps_missing(perfmon, msg, sizeof(msg)), -EPERM);
	assert_true(!strncmp(msg, "missing CAP_BPF (or CAP_SYS_ADMIN)", 34));
	assert_int_equal(preflight__caps_missing(bpf, msg, sizeof(msg)), -EPERM);
	assert_true(!strncmp(msg, "missing CAP_PERFMON (or CAP_SYS_ADMIN)", 38));
	assert_int_equal(preflight__caps_missing(0, msg, sizeof(msg)), -EPERM);
	assert_true(!strncmp(msg, "missing CAP_BPF, CAP_PERFMON (or CAP_SYS_ADMIN)", 47));
	/* a short buffer: cut, terminated */
	assert_int_equal(preflight__caps_missing(0, msg, 12), -EPERM);
	assert_int_equal(strlen(msg), 11);
}

static void btf__missing__enoent_names_config(void **state)
{
	struct preflight_paths pp = preflight_default;
	char msg[512] = "";

	pp.btf = "/nonexistent/btf/vmlinux";
	assert_int_equal(preflight__btf(&pp, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "CONFIG_DEBUG_INFO_BTF"));
	assert_non_null(strstr(msg, "/nonexistent/btf/vmlinux"));
	assert_null(strchr(msg, '\n'));
}

static void btf__small_buffer__truncated_terminated(void **state)
{
	struct preflight_paths pp = preflight_default;
	char msg[16];

	memset(msg, 'x', sizeof(msg));
	pp.btf = "/nonexistent/btf/vmlinux";
	assert_int_equal(preflight__btf(&pp, msg, sizeof(msg)), -ENOENT);
	assert_int_equal(strlen(msg), sizeof(msg) - 1);
}

static void btf__readable_file__ok(void **state)
{
	struct preflight_paths pp = preflight_default;
	char msg[512] = "untouched";

	pp.btf = btf;
	assert_int_equal(preflight__btf(&pp, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "untouched");
}

static void tracefs__not_mounted_no_mount__enoent_with_command(void **state)
{
	struct preflight_paths pp = {
		.btf = btf,
		.tracefs = "/nonexistent/sys/kernel/tracing",
		.debugfs_tracing = "/nonexistent/sys/kernel/debug/tracing",
	};
	char msg[512] = "";

	assert_int_equal(preflight__tracefs(&pp, 0, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "mount -t tracefs"));
	/* the command mounts it where we looked */
	assert_non_null(strstr(msg, "mount -t tracefs nodev /nonexistent/sys/kernel/tracing"));
	assert_null(strchr(msg, '\n'));
}

static void tracefs__events_dir__ok(void **state)
{
	struct preflight_paths pp = {
		.btf = btf,
		.tracefs = tracefs,
		.debugfs_tracing = "/nonexistent/debug/tracing",
	};
	char msg[512] = "untouched";

	assert_int_equal(preflight__tracefs(&pp, 0, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "untouched");
}

static void tracefs__only_debugfs_path__ok(void **state)
{
	struct preflight_paths pp = {
		.btf = btf,
		.tracefs = "/nonexistent/tracing",
		.debugfs_tracing = tracefs,
	};
	char msg[512];

	assert_int_equal(preflight__tracefs(&pp, 0, msg, sizeof(msg)), 0);
}

static void tracefs__events_is_a_file__enoent(void **state)
{
	struct preflight_paths pp = {
		.btf = btf,
		.tracefs = plain,
		.debugfs_tracing = plain,
	};
	char msg[512] = "";

	/* an existing directory without events/ is not a mounted tracefs */
	assert_int_equal(preflight__tracefs(&pp, 0, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, plain));
	pp.tracefs = tmpdir;
	pp.debugfs_tracing = tmpdir;
	assert_int_equal(preflight__tracefs(&pp, 0, msg, sizeof(msg)), -ENOENT);
}

static void uretprobe_seccomp__kernel_window__6_11_to_6_13(void **state)
{
	assert_int_equal(preflight__kernel_version("6.12.3-amd64"), 6012);
	assert_int_equal(preflight__kernel_version("junk"), -1);
	assert_false(preflight__uretprobe_seccomp_risk("6.10.14"));
	assert_true(preflight__uretprobe_seccomp_risk("6.11.0"));
	assert_true(preflight__uretprobe_seccomp_risk("6.13.12-cloud"));
	assert_false(preflight__uretprobe_seccomp_risk("6.14.0"));
	assert_false(preflight__uretprobe_seccomp_risk("6.18.44-fc-v973"));
	assert_false(preflight__uretprobe_seccomp_risk("5.15.0"));
	assert_false(preflight__uretprobe_seccomp_risk("7.0"));
}

/* A fake /proc/sys/kernel/perf_event_paranoid holding text; its level as read. */
static int paranoid_file(const char *text)
{
	char path[160];
	int fd, level;

	snprintf(path, sizeof(path), "%s/perf_event_paranoid", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	level = preflight__paranoid_at(path);
	unlink(path);
	return level;
}

static void paranoid_at__fake_procfs__the_level_or_int_min(void **state)
{
	assert_int_equal(paranoid_file("2\n"), 2);
	assert_int_equal(paranoid_file("3\n"), 3);
	assert_int_equal(paranoid_file("4"), 4);
	assert_int_equal(paranoid_file("-1\n"), -1);
	assert_int_equal(paranoid_file(""), INT_MIN);
	assert_int_equal(paranoid_file("three\n"), INT_MIN);
	assert_int_equal(paranoid_file("3x\n"), INT_MIN);
	assert_int_equal(preflight__paranoid_at("/nonexistent/perf_event_paranoid"), INT_MIN);
}

/* Debian's level 3 and Ubuntu's 4 want CAP_SYS_ADMIN: CAP_PERFMON (the DaemonSet's) is not
 * enough, and the message says so and names the sysctl. */
static void paranoid_check__3_or_more_without_sys_admin__eacces_names_sysctl(void **state)
{
	const uint64_t bpf = 1ULL << 39, perfmon = 1ULL << 38, admin = 1ULL << 21;
	char msg[512];

	msg[0] = '\0';
	assert_int_equal(preflight__paranoid_check(2, bpf | perfmon, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(preflight__paranoid_check(-1, 0, msg, sizeof(msg)), 0);
	assert_int_equal(preflight__paranoid_check(INT_MIN, bpf | perfmon, msg, sizeof(msg)), 0);
	assert_int_equal(preflight__paranoid_check(3, bpf | perfmon | admin, msg, sizeof(msg)), 0);
	assert_int_equal(preflight__paranoid_check(3, bpf | perfmon, msg, sizeof(msg)), -EACCES);
	assert_non_null(strstr(msg, "kernel.perf_event_paranoid is 3"));
	assert_non_null(strstr(msg, "sysctl -w kernel.perf_event_paranoid=2"));
	assert_non_null(strstr(msg, "CAP_SYS_ADMIN"));
	assert_non_null(strstr(msg, "not even with CAP_PERFMON"));
	assert_null(strchr(msg, '\n'));
	assert_int_equal(preflight__paranoid_check(4, bpf | perfmon, msg, sizeof(msg)), -EACCES);
	assert_non_null(strstr(msg, "is 4"));
	/* a small buffer: cut, terminated */
	assert_int_equal(preflight__paranoid_check(3, 0, msg, 16), -EACCES);
	assert_int_equal(strlen(msg), 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(btf__missing__enoent_names_config),
		cmocka_unit_test(btf__small_buffer__truncated_terminated),
		cmocka_unit_test(btf__readable_file__ok),
		cmocka_unit_test(tracefs__not_mounted_no_mount__enoent_with_command),
		cmocka_unit_test(tracefs__events_dir__ok),
		cmocka_unit_test(tracefs__only_debugfs_path__ok),
		cmocka_unit_test(tracefs__events_is_a_file__enoent),
		cmocka_unit_test(caps__each_missing__named),
		cmocka_unit_test(uretprobe_seccomp__kernel_window__6_11_to_6_13),
		cmocka_unit_test(paranoid_at__fake_procfs__the_level_or_int_min),
		cmocka_unit_test(paranoid_check__3_or_more_without_sys_admin__eacces_names_sysctl),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
