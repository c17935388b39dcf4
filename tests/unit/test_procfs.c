// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* procfs: /proc/PID/maps, environ and stat parsers, strict integer parsing, procfs__read. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "procfs.h"

/* A string literal as an environ block: every entry NUL-terminated, the literal's own NUL not
 * counted. */
#define ENV(lit) (lit), (sizeof(lit) - 1)

static void maps_line__normal__all_fields(void **state)
{
	const char *line = "7f1234560000-7f1234580000 r-xp 00002000 fd:01 1234567    "
			   "/usr/lib/x86_64-linux-gnu/libnccl.so.2";
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line(line, &m), 0);
	assert_true(m.start == 0x7f1234560000ULL);
	assert_true(m.end == 0x7f1234580000ULL);
	assert_string_equal(m.perms, "r-xp");
	assert_true(m.pgoff == 0x2000);
	assert_int_equal(m.dev_major, 0xfd);
	assert_int_equal(m.dev_minor, 1);
	assert_true(m.inode == 1234567);
	assert_string_equal(m.path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2");
	/* the path points into the line, not a copy */
	assert_true(m.path > line && m.path < line + strlen(line));
}

static void maps_line__anonymous__empty_path(void **state)
{
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0", &m), 0);
	assert_string_equal(m.path, "");
	assert_true(m.inode == 0);
	assert_string_equal(m.perms, "rw-p");
	assert_true(m.start == 0x7ffd1000 && m.end == 0x7ffd2000);
}

static void maps_line__pseudo_path__kept(void **state)
{
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0    "
						 "              [stack]", &m), 0);
	assert_string_equal(m.path, "[stack]");
}

static void maps_line__path_with_spaces__whole_path(void **state)
{
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line("1000-2000 r--p 00000000 08:02 42 "
						 "/opt/my libs/lib mpi.so.40", &m), 0);
	assert_string_equal(m.path, "/opt/my libs/lib mpi.so.40");
	assert_true(m.inode == 42);
	assert_int_equal(m.dev_major, 8);
	assert_int_equal(m.dev_minor, 2);
}

static void maps_line__uppercase_hex__accepted(void **state)
{
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line("ABC000-ABD000 r--p 0000A000 FD:0A 7 /x", &m), 0);
	assert_true(m.start == 0xabc000 && m.end == 0xabd000 && m.pgoff == 0xa000);
	assert_int_equal(m.dev_minor, 10);
}

static void maps_line__missing_fields__einval(void **state)
{
	static const char *const bad[] = {
		"",
		"7f00",
		"7f00-",
		"7f00-7f10",
		"7f00-7f10 ",
		"7f00-7f10 r-xp",
		"7f00-7f10 r-x 00000000 fd:01 1 /x",		/* 3 perms */
		"7f00-7f10 r-xp 00000000",
		"7f00-7f10 r-xp 00000000 fd:01",
		"7f00-7f10 r-xp 00000000 fd:01 ",
		"7f00-7f10 r-xp 00000000 fd 1 /x",		/* no minor */
		"7f00-7f10 r-xp 00000000 fd:01 /x",		/* no inode */
		"7f00 7f10 r-xp 00000000 fd:01 1 /x",		/* no '-' */
	};
	struct proc_map m;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (procfs__parse_maps_line(bad[i], &m) != -EINVAL)
			fail_msg("accepted malformed maps line '%s'", bad[i]);
	}
}

static void maps_line__bad_hex__einval(void **state)
{
	static const char *const bad[] = {
		"7g00-7f10 r-xp 00000000 fd:01 1 /x",
		"zz-7f10 r-xp 00000000 fd:01 1 /x",
		"7f00-7fxx r-xp 00000000 fd:01 1 /x",
		"7f00-7f10 r-xp 0000z000 fd:01 1 /x",
		"7f00-7f10 r-xp 00000000 fg:01 1 /x",
		"-7f10 r-xp 00000000 fd:01 1 /x",
		"0x7f00-0x7f10 r-xp 00000000 fd:01 1 /x",
	};
	struct proc_map m;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (procfs__parse_maps_line(bad[i], &m) != -EINVAL)
			fail_msg("accepted maps line with bad hex '%s'", bad[i]);
	}
}

static void maps_line__17_hex_digits__einval(void **state)
{
	struct proc_map m;

	/* 16 digits is the most a 64-bit address has */
	assert_int_equal(procfs__parse_maps_line("fffffffffff00000-ffffffffffffffff r--p 00000000 "
						 "00:00 0", &m), 0);
	assert_true(m.end == UINT64_MAX);
	assert_int_equal(procfs__parse_maps_line("10000000000000000-20000000000000000 r--p "
						 "00000000 00:00 0", &m), -EINVAL);
	assert_int_equal(procfs__parse_maps_line("1000-2000 r--p 10000000000000000 00:00 0", &m),
			 -EINVAL);
	/* leading zeros count as digits too: never read more than 16 */
	assert_int_equal(procfs__parse_maps_line("00000000000001000-2000 r--p 00000000 00:00 0",
						 &m), -EINVAL);
}

static void maps_line__dev_over_uint__einval(void **state)
{
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line("1000-2000 r--p 00000000 100000000:01 1 /x", &m),
			 -EINVAL);
	assert_int_equal(procfs__parse_maps_line("1000-2000 r--p 00000000 01:100000000 1 /x", &m),
			 -EINVAL);
}

static void maps_line__inode_overflow__einval(void **state)
{
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line("1000-2000 r--p 00000000 08:01 "
						 "99999999999999999999 /x", &m), -EINVAL);
	assert_int_equal(procfs__parse_maps_line("1000-2000 r--p 00000000 08:01 "
						 "1844674407370955160 /x", &m), 0);
	assert_true(m.inode == 1844674407370955160ULL);
}

static void maps_line__end_before_start__einval(void **state)
{
	struct proc_map m;

	assert_int_equal(procfs__parse_maps_line("2000-1000 r--p 00000000 08:01 1 /x", &m), -EINVAL);
	/* empty range is not inverted */
	assert_int_equal(procfs__parse_maps_line("2000-2000 r--p 00000000 08:01 1 /x", &m), 0);
}

static void environ_get__found__value(void **state)
{
	const char *v;

	v = procfs__environ_get(ENV("HOME=/root\0RANK=3\0WORLD_SIZE=8\0"), "RANK");
	assert_non_null(v);
	assert_string_equal(v, "3");
	v = procfs__environ_get(ENV("HOME=/root\0RANK=3\0WORLD_SIZE=8\0"), "WORLD_SIZE");
	assert_non_null(v);
	assert_string_equal(v, "8");
	/* the first '=' splits: values may contain '=' */
	v = procfs__environ_get(ENV("A=b=c\0"), "A");
	assert_non_null(v);
	assert_string_equal(v, "b=c");
}

static void environ_get__missing__null(void **state)
{
	assert_null(procfs__environ_get(ENV("HOME=/root\0PATH=/bin\0"), "RANK"));
	assert_null(procfs__environ_get("", 0, "RANK"));
	/* a value that looks like the key does not count */
	assert_null(procfs__environ_get(ENV("X=RANK=1\0"), "RANK"));
	/* an entry with no '=' is not a match for its name */
	assert_null(procfs__environ_get(ENV("RANK\0"), "RANK"));
}

static void environ_get__key_prefix__exact_match_only(void **state)
{
	const char *v;

	/* RANKX comes first and must not satisfy RANK */
	v = procfs__environ_get(ENV("RANKX=9\0LOCAL_RANK=1\0RANK=2\0"), "RANK");
	assert_non_null(v);
	assert_string_equal(v, "2");
	assert_null(procfs__environ_get(ENV("RANKX=9\0"), "RANK"));
	/* and a key that is a prefix of the entry's name does not match either way */
	assert_null(procfs__environ_get(ENV("RANK=2\0"), "RANKX"));
	assert_null(procfs__environ_get(ENV("RANK=2\0"), "RAN"));
}

static void environ_get__unterminated_last__ignored(void **state)
{
	static const char env[] = { 'A', '=', '1', '\0', 'R', 'A', 'N', 'K', '=', '3' };
	const char *v;

	assert_null(procfs__environ_get(env, sizeof(env), "RANK"));
	v = procfs__environ_get(env, sizeof(env), "A");
	assert_non_null(v);
	assert_string_equal(v, "1");
	/* len bounds the search even when the buffer goes on */
	assert_null(procfs__environ_get("A=1\0RANK=3", 4 + 5, "RANK"));
}

static void environ_get__empty_value__empty_string(void **state)
{
	const char *v = procfs__environ_get(ENV("RANK=\0X=1\0"), "RANK");

	assert_non_null(v);
	assert_string_equal(v, "");
}

/* Fields after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
 * utime stime cutime cstime priority nice threads itrealvalue starttime vsize ... */
#define STAT_TAIL " S 1 1234 1234 0 -1 4194304 100 0 0 0 5 3 0 0 20 0 1 0 987654 12345678 99 " \
		  "18446744073709551615"

static void parse_stat__plain__all_fields(void **state)
{
	const char *s = "1234 (python3)" STAT_TAIL "\n";
	struct proc_stat st;

	assert_int_equal(procfs__parse_stat(s, strlen(s), &st), 0);
	assert_int_equal(st.pid, 1234);
	assert_string_equal(st.comm, "python3");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_true(st.starttime == 987654);
	assert_true(st.vsize == 12345678);
	assert_true(st.flags == 4194304);
	assert_false(st.flags & PROCFS_PF_KTHREAD);
}

/* A kernel thread's stat (kthreadd's child): PF_KTHREAD among its flags, vsize 0. */
static void parse_stat__kernel_thread__kthread_flag(void **state)
{
	const char *s = "57 (kworker/0:1H-kblockd) I 2 0 0 0 -1 69238880 0 0 0 0 0 0 0 0 0 -20 1 0 "
			"120 0 0 18446744073709551615\n";
	struct proc_stat st;

	assert_int_equal(procfs__parse_stat(s, strlen(s), &st), 0);
	assert_int_equal(st.ppid, 2);
	assert_true(st.flags == 69238880);
	assert_true(st.flags & PROCFS_PF_KTHREAD);
	assert_true(st.vsize == 0);
	assert_true(st.starttime == 120);
}

static void parse_stat__comm_spaces_and_parens__last_paren_wins(void **state)
{
	const char *s = "77 (a b) c) (d)" STAT_TAIL;
	struct proc_stat st;

	assert_int_equal(procfs__parse_stat(s, strlen(s), &st), 0);
	assert_int_equal(st.pid, 77);
	assert_string_equal(st.comm, "a b) c) (d");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_true(st.starttime == 987654);
}

static void parse_stat__long_comm__truncated(void **state)
{
	char s[512], comm[100];
	struct proc_stat st;

	memset(comm, 'x', sizeof(comm) - 1);
	comm[sizeof(comm) - 1] = '\0';
	snprintf(s, sizeof(s), "5 (%s)" STAT_TAIL, comm);
	assert_int_equal(procfs__parse_stat(s, strlen(s), &st), 0);
	assert_int_equal(strlen(st.comm), sizeof(st.comm) - 1);
	assert_true(st.starttime == 987654);
}

static void parse_stat__truncated__einval(void **state)
{
	const char *full = "1234 (python3)" STAT_TAIL;
	const char *at = strstr(full, " 987654");
	struct proc_stat st;
	size_t cut[] = { 0, 3, 5, 9, 13, 14, 15, 16, 17, 20 };
	char *copy;
	size_t i;

	assert_non_null(at);
	/* cut before starttime: every prefix must be refused, whatever len says */
	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		copy = strndup(full, cut[i]);
		assert_non_null(copy);
		if (procfs__parse_stat(copy, cut[i], &st) != -EINVAL)
			fail_msg("accepted stat truncated to %zu bytes: '%s'", cut[i], copy);
		free(copy);
	}
	/* ending right after itrealvalue */
	copy = strndup(full, at - full);
	assert_int_equal(procfs__parse_stat(copy, at - full, &st), -EINVAL);
	free(copy);
	assert_int_equal(procfs__parse_stat("1234 (cat", 9, &st), -EINVAL);
	assert_int_equal(procfs__parse_stat("1234 cat) S 1", 13, &st), -EINVAL);
	assert_int_equal(procfs__parse_stat("(cat) S 1" STAT_TAIL, strlen("(cat) S 1" STAT_TAIL),
					    &st), -EINVAL);
}

static void parse_stat__len_shorter_than_text__stops_at_len(void **state)
{
	const char *full = "1234 (python3)" STAT_TAIL;
	const char *at = strstr(full, " 987654");
	struct proc_stat st;
	int err;

	assert_non_null(at);
	/* len ends inside starttime ("98" of "987654"): nothing past len may be read */
	err = procfs__parse_stat(full, at - full + 3, &st);
	assert_true(err == 0 || err == -EINVAL);
	assert_true(err == -EINVAL || st.starttime == 98);
}

static void procfs_stat__self__matches(void **state)
{
	struct proc_stat st;

	assert_int_equal(procfs__stat(getpid(), &st), 0);
	assert_int_equal(st.pid, getpid());
	assert_int_equal(st.ppid, getppid());
	assert_true(st.starttime > 0);
	assert_int_equal(st.state, 'R');
}

static void parse_long__in_range__value(void **state)
{
	long v = -1;

	assert_int_equal(parse_long("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(parse_long("0", 0, 100, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_long("100", 0, 100, &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(parse_long("-7", -10, 10, &v), 0);
	assert_int_equal(v, -7);
	assert_int_equal(parse_long("9223372036854775807", 0, LONG_MAX, &v), 0);
	assert_true(v == LONG_MAX);
}

static void parse_long__out_of_range__erange(void **state)
{
	long v = 5;

	assert_int_equal(parse_long("101", 0, 100, &v), -ERANGE);
	assert_int_equal(parse_long("-1", 0, 100, &v), -ERANGE);
	assert_int_equal(v, 5);	/* untouched on failure */
}

static void parse_long__junk__einval(void **state)
{
	static const char *const bad[] = { "12a", "a12", "1 2", " 5", "5 ", "0x10", "1.5", "-",
					   "--1", "5\n" };
	long v = 5;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_long(bad[i], -100, 100, &v) != -EINVAL)
			fail_msg("parse_long accepted '%s'", bad[i]);
	}
	assert_int_equal(v, 5);
}

static void parse_long__leading_control_whitespace__einval(void **state)
{
	long v = 5;
	int err = parse_long("\t7", 0, 100, &v);

	assert_int_equal(err, -EINVAL);
	assert_int_equal(parse_long("\n7", 0, 100, &v), -EINVAL);
	assert_int_equal(parse_long(" 7", 0, 100, &v), -EINVAL);
}

static void parse_long__empty_or_null__einval(void **state)
{
	long v;

	assert_int_equal(parse_long("", 0, 100, &v), -EINVAL);
	assert_int_equal(parse_long(NULL, 0, 100, &v), -EINVAL);
}

static void parse_long__overflow__erange(void **state)
{
	long v = 5;

	assert_int_equal(parse_long("99999999999999999999", LONG_MIN, LONG_MAX, &v), -ERANGE);
	assert_int_equal(parse_long("-99999999999999999999", LONG_MIN, LONG_MAX, &v), -ERANGE);
	assert_int_equal(parse_long("9223372036854775808", 0, LONG_MAX, &v), -ERANGE);
	assert_int_equal(v, 5);
}

static void cgroup_under__v2_and_v1_lines__prefix_by_component(void **state)
{
	static const char v2[] = "0::/slurm/uid_0/job_42/step_0/task_1\n";
	static const char v1[] = "12:cpu,cpuacct:/kubepods/pod7\n"
				 "11:memory:/kubepods/pod7\n"
				 "1:name=systemd:/system.slice/x.service\n";

	assert_true(procfs__cgroup_under(v2, sizeof(v2) - 1, "/slurm/uid_0/job_42"));
	assert_true(procfs__cgroup_under(v2, sizeof(v2) - 1, "/slurm/uid_0/job_42/step_0/task_1"));
	assert_true(procfs__cgroup_under(v2, sizeof(v2) - 1, "/"));
	/* a prefix of a name is not a parent */
	assert_false(procfs__cgroup_under(v2, sizeof(v2) - 1, "/slurm/uid_0/job_4"));
	assert_false(procfs__cgroup_under(v2, sizeof(v2) - 1, "/other"));
	assert_true(procfs__cgroup_under(v1, sizeof(v1) - 1, "/kubepods"));
	assert_true(procfs__cgroup_under(v1, sizeof(v1) - 1, "/system.slice"));
	assert_false(procfs__cgroup_under(v1, sizeof(v1) - 1, "/kubepods/pod"));
}

static void cgroup_under__hostile_text__no_match_no_overread(void **state)
{
	static const char no_colon[] = "garbage without colons\n";
	static const char one_colon[] = "0:/slurm\n";
	static const char nul[] = "0::/slu\0rm\n";
	static const char colon_in_path[] = "0::/a:b/c\n";
	char *big;

	assert_false(procfs__cgroup_under(no_colon, sizeof(no_colon) - 1, "/"));
	assert_false(procfs__cgroup_under(one_colon, sizeof(one_colon) - 1, "/slurm"));
	assert_false(procfs__cgroup_under(nul, sizeof(nul) - 1, "/slu"));
	assert_true(procfs__cgroup_under(colon_in_path, sizeof(colon_in_path) - 1, "/a:b"));
	assert_false(procfs__cgroup_under("", 0, "/"));
	/* no newline at the end, and the path cut short by len */
	assert_true(procfs__cgroup_under("0::/x/y", 7, "/x"));
	assert_false(procfs__cgroup_under("0::/x/y", 5, "/x/y"));
	/* a long line without a terminator in a heap buffer of exactly its length */
	big = malloc(100000);
	assert_non_null(big);
	memset(big, ':', 100000);
	assert_false(procfs__cgroup_under(big, 100000, "/x"));
	free(big);
}

static void read__self_status__text(void **state)
{
	char *buf = NULL, want[32];
	ssize_t n;

	n = procfs__read(getpid(), "status", &buf, 1 << 16);
	assert_true(n > 0);
	assert_non_null(buf);
	assert_int_equal(strlen(buf), n);
	assert_memory_equal(buf, "Name:", 5);
	snprintf(want, sizeof(want), "\nPid:\t%d\n", getpid());
	assert_non_null(strstr(buf, want));
	free(buf);
}

static void read__max__truncated_and_terminated(void **state)
{
	char *buf = NULL;
	ssize_t n;

	n = procfs__read(getpid(), "status", &buf, 10);
	assert_int_equal(n, 10);
	assert_int_equal(strlen(buf), 10);
	assert_memory_equal(buf, "Name:", 5);
	free(buf);
}

static void read__large_file__grows_past_first_chunk(void **state)
{
	char *buf = NULL;
	ssize_t n;

	/* smaps: some 25 lines a mapping, so well over one 4 KiB chunk for any process */
	n = procfs__read(getpid(), "smaps", &buf, PROC_MAPS_MAX);
	assert_true(n > 4096);
	assert_int_equal(strlen(buf), n);
	assert_int_equal(buf[n - 1], '\n');
	free(buf);
}

static void read__nonexistent_pid__enoent(void **state)
{
	char *buf = (char *)0x1;

	/* above PID_MAX_LIMIT (4194304): can never exist */
	assert_int_equal(procfs__read(99999999, "status", &buf, 4096), -ENOENT);
	assert_ptr_equal(buf, (char *)0x1);
	assert_int_equal(procfs__read(getpid(), "no_such_file", &buf, 4096), -ENOENT);
}

static const char status_text[] =
	"Name:\tpython3\nTgid:\t4242\nNgid:\t0\nPid:\t4243\nTracerPid:\t0\n"
	"NSpid:\t4243\t17\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n";

static void status_ids__nspid__outermost_first(void **state)
{
	long ids[8];

	(void)state;
	assert_int_equal(procfs__status_ids(status_text, sizeof(status_text) - 1, "NSpid", ids, 8),
			 3);
	assert_int_equal(ids[0], 4243);
	assert_int_equal(ids[1], 17);
	assert_int_equal(ids[2], 1);
}

static void status_ids__key_prefix__exact_key_only(void **state)
{
	long v = -1;

	(void)state;
	/* "Tgid" is not "Ngid"'s or "TracerPid"'s, "Seccomp" not "Seccomp_filters" */
	assert_int_equal(procfs__status_ids(status_text, sizeof(status_text) - 1, "Tgid", &v, 1),
			 1);
	assert_int_equal(v, 4242);
	assert_int_equal(procfs__status_ids(status_text, sizeof(status_text) - 1, "Seccomp", &v, 1),
			 1);
	assert_int_equal(v, 2);
	assert_int_equal(procfs__status_ids(status_text, sizeof(status_text) - 1, "gid", &v, 1), 0);
	assert_int_equal(procfs__status_ids(status_text, sizeof(status_text) - 1, "Umask", &v, 1),
			 0);
}

static void status_ids__first_line_and_len__bounded(void **state)
{
	long ids[2] = { 0, 0 };

	(void)state;
	assert_int_equal(procfs__status_ids("Name:\t12 34", 12, "Name", ids, 2), 2);
	assert_int_equal(ids[1], 34);
	/* len ends inside the number: what is past it is not read */
	assert_int_equal(procfs__status_ids("Tgid:\t4242", 8, "Tgid", ids, 2), 1);
	assert_int_equal(ids[0], 42);
	/* more than max: counted, not stored */
	assert_int_equal(procfs__status_ids("NSpid:\t1\t2\t3\n", 14, "NSpid", ids, 2), 3);
	/* no digits, huge numbers */
	assert_int_equal(procfs__status_ids("Tgid:\tx\n", 8, "Tgid", ids, 2), 0);
	assert_int_equal(procfs__status_ids("Tgid:\t99999999999999999999999\n", 30, "Tgid", ids, 1),
			 1);
	assert_true(ids[0] > 0);
}

static void status_field__self__tgid_is_pid(void **state)
{
	long v = 0, ns[PROCFS_NS_LEVELS];

	(void)state;
	assert_int_equal(procfs__status_field(getpid(), "status", "Tgid", &v, 1), 1);
	assert_int_equal(v, getpid());
	assert_true(procfs__status_field(getpid(), "status", "NSpid", ns, PROCFS_NS_LEVELS) >= 1);
	assert_int_equal(procfs__status_field(-1, "status", "Tgid", &v, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(maps_line__normal__all_fields),
		cmocka_unit_test(cgroup_under__v2_and_v1_lines__prefix_by_component),
		cmocka_unit_test(cgroup_under__hostile_text__no_match_no_overread),
		cmocka_unit_test(maps_line__anonymous__empty_path),
		cmocka_unit_test(maps_line__pseudo_path__kept),
		cmocka_unit_test(maps_line__path_with_spaces__whole_path),
		cmocka_unit_test(maps_line__uppercase_hex__accepted),
		cmocka_unit_test(maps_line__missing_fields__einval),
		cmocka_unit_test(maps_line__bad_hex__einval),
		cmocka_unit_test(maps_line__17_hex_digits__einval),
		cmocka_unit_test(maps_line__dev_over_uint__einval),
		cmocka_unit_test(maps_line__inode_overflow__einval),
		cmocka_unit_test(maps_line__end_before_start__einval),
		cmocka_unit_test(environ_get__found__value),
		cmocka_unit_test(environ_get__missing__null),
		cmocka_unit_test(environ_get__key_prefix__exact_match_only),
		cmocka_unit_test(environ_get__unterminated_last__ignored),
		cmocka_unit_test(environ_get__empty_value__empty_string),
		cmocka_unit_test(parse_stat__plain__all_fields),
		cmocka_unit_test(parse_stat__kernel_thread__kthread_flag),
		cmocka_unit_test(parse_stat__comm_spaces_and_parens__last_paren_wins),
		cmocka_unit_test(parse_stat__long_comm__truncated),
		cmocka_unit_test(parse_stat__truncated__einval),
		cmocka_unit_test(parse_stat__len_shorter_than_text__stops_at_len),
		cmocka_unit_test(procfs_stat__self__matches),
		cmocka_unit_test(parse_long__in_range__value),
		cmocka_unit_test(parse_long__out_of_range__erange),
		cmocka_unit_test(parse_long__junk__einval),
		cmocka_unit_test(parse_long__leading_control_whitespace__einval),
		cmocka_unit_test(parse_long__empty_or_null__einval),
		cmocka_unit_test(parse_long__overflow__erange),
		cmocka_unit_test(read__self_status__text),
		cmocka_unit_test(read__max__truncated_and_terminated),
		cmocka_unit_test(read__large_file__grows_past_first_chunk),
		cmocka_unit_test(read__nonexistent_pid__enoent),
		cmocka_unit_test(status_ids__nspid__outermost_first),
		cmocka_unit_test(status_ids__key_prefix__exact_key_only),
		cmocka_unit_test(status_ids__first_line_and_len__bounded),
		cmocka_unit_test(status_field__self__tgid_is_pid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
