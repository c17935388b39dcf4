// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* ptrace_inject: the call frame, the safe-stop rules, /proc/PID/status, the reasons ptrace is
 * refused, dlopen found in our own libc, and real calls made by a child of ours (a parent may
 * ptrace its child without root; skipped where even that is refused). */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "procfs.h"
#include "ptrace_inject.h"

static const char maps_text[] =
	"55d0c0000000-55d0c0001000 r--p 00000000 fe:00 100 /usr/bin/python3.11\n"
	"55d0c0001000-55d0c0300000 r-xp 00001000 fe:00 100 /usr/bin/python3.11\n"
	"7f0000000000-7f0000028000 r--p 00000000 fe:00 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000028000-7f000019d000 r-xp 00028000 fe:00 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000200000-7f0000210000 r-xp 00002000 fe:00 300 /rs/librankscope_cupti.so (deleted)\n"
	"7f0000300000-7f0000310000 r-xp 00001000 fe:00 400 /usr/lib/libgcc_s.so.1\n"
	"7f0000400000-7f0000401000 rw-p 00000000 00:00 0 \n"
	"7f0000500000-7f0000530000 r-xp 00001000 fe:00 500 /lib64/ld-linux-x86-64.so.2\n"
	"7f0000600000-7f0000680000 r-xp 00010000 fe:00 600 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n"
	"7f0000700000-7f0000780000 r-xp 00010000 fe:00 700 /opt/lib/libtcmalloc_minimal.so.4\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";

static void frame__any_rsp__red_zone_kept_and_sysv_aligned(void **state)
{
	static const uint64_t rsps[] = { 0x7ffd00010000, 0x7ffd00010008, 0x7ffd0001000f,
					 0x7ffd00010001 };
	static const size_t lens[] = { 8, 16, 56, 200 };
	uint64_t sp, data;
	size_t i, j;

	for (i = 0; i < sizeof(rsps) / sizeof(rsps[0]); i++) {
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			sp = ptrace_inject__frame(rsps[i], lens[j], &data);
			assert_int_equal(data % 16, 0);
			assert_true(data + lens[j] <= rsps[i] - 128);
			/* after the pushed return address, as after a call instruction */
			assert_int_equal(sp % 16, 8);
			assert_int_equal(sp + 8, data);
		}
	}
}

static void maps_has__path_or_base_name__true(void **state)
{
	assert_true(ptrace_inject__maps_has(maps_text, "/usr/lib/x86_64-linux-gnu/libc.so.6"));
	assert_true(ptrace_inject__maps_has(maps_text, "/elsewhere/libc.so.6"));
	/* replaced on disk since: still loaded */
	assert_true(ptrace_inject__maps_has(maps_text, "/rs/librankscope_cupti.so"));
	assert_true(ptrace_inject__maps_has(maps_text, "/build/librankscope_cupti.so"));
}

static void maps_has__other_names__false(void **state)
{
	assert_false(ptrace_inject__maps_has(maps_text, "/usr/lib/libc.so"));
	assert_false(ptrace_inject__maps_has(maps_text, "/x/librankscope_cupti.so.1"));
	assert_false(ptrace_inject__maps_has(maps_text, "/x/[stack]"));
	assert_false(ptrace_inject__maps_has("", "/x/libc.so.6"));
}

static void pc_in_loader__libc_ld_libgcc_code__true(void **state)
{
	assert_true(ptrace_inject__pc_in_loader(maps_text, 0x7f0000028000));
	assert_true(ptrace_inject__pc_in_loader(maps_text, 0x7f000019cfff));
	assert_true(ptrace_inject__pc_in_loader(maps_text, 0x7f0000510000));
	assert_true(ptrace_inject__pc_in_loader(maps_text, 0x7f0000300010));
	/* a preloaded allocator holds its own locks, which our dlopen's malloc would take */
	assert_true(ptrace_inject__pc_in_loader(maps_text, 0x7f0000600010));
	assert_true(ptrace_inject__pc_in_loader(maps_text, 0x7f0000700010));
}

static void pc_in_loader__own_code_data_anon__false(void **state)
{
	assert_false(ptrace_inject__pc_in_loader(maps_text, 0x55d0c0002000));
	assert_false(ptrace_inject__pc_in_loader(maps_text, 0x7f0000000100));	/* libc, r-- */
	assert_false(ptrace_inject__pc_in_loader(maps_text, 0x7f000019d000));	/* just past */
	assert_false(ptrace_inject__pc_in_loader(maps_text, 0x7f0000400010));
	assert_false(ptrace_inject__pc_in_loader(maps_text, 0x7f0000200010));	/* ours */
}

static void syscall_safe__interrupted_waits__true(void **state)
{
	assert_true(ptrace_inject__syscall_safe(SYS_read, 0, -512));
	assert_true(ptrace_inject__syscall_safe(SYS_clock_nanosleep, 0, -516));
	assert_true(ptrace_inject__syscall_safe(SYS_poll, 0, -516));
	assert_true(ptrace_inject__syscall_safe(SYS_epoll_wait, 0, -EINTR));
	/* FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG (| FUTEX_CLOCK_REALTIME): a condition variable */
	assert_true(ptrace_inject__syscall_safe(SYS_futex, 9 | 128, -512));
	assert_true(ptrace_inject__syscall_safe(SYS_futex, 9 | 128 | 256, -516));
}

static void syscall_safe__locks_allocs_completed__false(void **state)
{
	/* FUTEX_WAIT | FUTEX_PRIVATE_FLAG: glibc's internal lock, malloc's among them */
	assert_false(ptrace_inject__syscall_safe(SYS_futex, 0 | 128, -512));
	assert_false(ptrace_inject__syscall_safe(SYS_mmap, 0, -512));
	assert_false(ptrace_inject__syscall_safe(SYS_openat, 0, -512));
	/* a read that returned: maybe dlopen reading an ELF header, the loader lock held */
	assert_false(ptrace_inject__syscall_safe(SYS_read, 0, 832));
	assert_false(ptrace_inject__syscall_safe(SYS_read, 0, -EAGAIN));
}

static const char status_text[] =
	"Name:\tpython3\n"
	"State:\tS (sleeping)\n"
	"TracerPid:\t4242\n"
	"Uid:\t1000\t1001\t1002\t1003\n"
	"Gid:\t100\t101\t102\t103\n"
	"SigPnd:\t0000000000000000\n"
	"SigBlk:\t0000000000000400\n"
	"SigIgn:\t0000000001001000\n"
	"x86_Thread_features:\tshstk wrss\n";

static void parse_status__fields__parsed(void **state)
{
	struct inject_status st;

	assert_int_equal(ptrace_inject__parse_status(status_text, &st), 0);
	assert_int_equal(st.tracer, 4242);
	assert_int_equal(st.uid[0], 1000);
	assert_int_equal(st.uid[2], 1002);
	assert_int_equal(st.gid[1], 101);
	assert_true(st.sig_blk & (1ULL << (SIGSEGV - 1)));
	assert_true(st.sig_ign & (1ULL << (SIGPIPE - 1)));
	assert_true(st.shstk);
}

static void parse_status__no_uid_or_sigblk__einval(void **state)
{
	struct inject_status st;

	assert_int_equal(ptrace_inject__parse_status("Name:\tx\nSigBlk:\t0\n", &st), -EINVAL);
	assert_int_equal(ptrace_inject__parse_status("Uid:\t0\t0\t0\t0\n", &st), -EINVAL);
	assert_int_equal(ptrace_inject__parse_status("", &st), -EINVAL);
}

static void why_eperm__each_cause__names_it_and_the_fix(void **state)
{
	struct ptrace_facts f = { .yama_scope = -1, .cap_sys_ptrace = true, .same_uid = true,
				  .dumpable = true };
	char msg[512];

	f.tracer = 77;
	strcpy(f.tracer_comm, "gdb\x1b[2J");
	ptrace_inject__why_eperm(&f, msg, sizeof(msg));
	assert_non_null(strstr(msg, "already traced by PID 77 (gdb?[2J)"));
	f.tracer = 0;
	f.yama_scope = 3;
	ptrace_inject__why_eperm(&f, msg, sizeof(msg));
	assert_non_null(strstr(msg, "ptrace_scope is 3"));
	f.yama_scope = 1;
	ptrace_inject__why_eperm(&f, msg, sizeof(msg));
	/* CAP_SYS_PTRACE passes Yama 1 */
	assert_non_null(strstr(msg, "the kernel refused"));
	f.cap_sys_ptrace = false;
	ptrace_inject__why_eperm(&f, msg, sizeof(msg));
	assert_non_null(strstr(msg, "kernel.yama.ptrace_scope=0"));
	f.same_uid = false;
	ptrace_inject__why_eperm(&f, msg, sizeof(msg));
	assert_non_null(strstr(msg, "another user; run as root or grant CAP_SYS_PTRACE"));
	f.same_uid = true;
	f.yama_scope = 0;
	f.dumpable = false;
	ptrace_inject__why_eperm(&f, msg, sizeof(msg));
	assert_non_null(strstr(msg, "not dumpable"));
}

static void resolve__self__libc_dlopen_and_dlsym(void **state)
{
	/* libc's own symbols, not the first definition (ASan's interceptors come first) */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	struct inject_syms s;

	assert_non_null(libc);
	assert_int_equal(ptrace_inject__resolve(getpid(), &s), 0);
	assert_non_null(strstr(s.lib, "libc"));
	assert_int_equal(s.dlopen, (uint64_t)(uintptr_t)dlsym(libc, "dlopen"));
	assert_int_equal(s.dlsym, (uint64_t)(uintptr_t)dlsym(libc, "dlsym"));
	assert_int_equal(s.dlclose, (uint64_t)(uintptr_t)dlsym(libc, "dlclose"));
	assert_int_equal(s.dlerror, (uint64_t)(uintptr_t)dlsym(libc, "dlerror"));
	dlclose(libc);
}

static pid_t sleeper(void)
{
	struct timespec ts = { .tv_nsec = 2000000 };
	pid_t pid = fork();

	if (pid == 0) {
		/* gone with the test binary, even when an assertion leaves before reap() */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			nanosleep(&ts, NULL);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, __WALL);
}

/* Run an injection into a fresh child; skip where the kernel forbids even that. */
static int inject_child(pid_t *pid, const char *lib, const char *sym, struct inject_report *r)
{
	struct inject_opts o = { .lib = lib, .init_sym = sym, .timeout_ms = 5000 };
	struct inject_syms s;
	int err;

	*pid = sleeper();
	assert_true(*pid > 0);
	assert_int_equal(ptrace_inject__resolve(*pid, &s), 0);
	err = ptrace_inject__run(*pid, &s, &o, r);
	if (err == -EPERM) {
		reap(*pid);
		skip();
	}
	return err;
}

static void run__child_libc_getpid__returns_its_pid(void **state)
{
	struct inject_report r;
	struct inject_syms s;
	pid_t pid;

	/* dlopen of the libc it has, dlsym(getpid) in it, and the call: its pid comes back */
	assert_int_equal(ptrace_inject__resolve(getpid(), &s), 0);
	assert_int_equal(inject_child(&pid, s.lib, "getpid", &r), 0);
	assert_int_equal(r.stage, INJ_DONE);
	assert_true(r.handle != 0);
	assert_int_equal(r.init_ret, pid);
	assert_true(r.restored);
	/* still alive and sleeping */
	assert_int_equal(kill(pid, 0), 0);
	assert_int_equal(waitpid(pid, NULL, WNOHANG | __WALL), 0);
	reap(pid);
}

static void run__missing_library__elibacc_with_dlerror(void **state)
{
	struct inject_report r;
	pid_t pid;

	assert_int_equal(inject_child(&pid, "/nonexistent/librs-none.so", "x", &r), -ELIBACC);
	assert_int_equal(r.stage, INJ_DLOPEN);
	assert_non_null(strstr(r.dlerror, "librs-none.so"));
	assert_true(r.restored);
	assert_int_equal(waitpid(pid, NULL, WNOHANG | __WALL), 0);
	reap(pid);
}

static void run__missing_init_symbol__enoent(void **state)
{
	struct inject_report r;
	struct inject_syms s;
	pid_t pid;

	assert_int_equal(ptrace_inject__resolve(getpid(), &s), 0);
	assert_int_equal(inject_child(&pid, s.lib, "rs_no_such_symbol", &r), -ENOENT);
	assert_int_equal(r.stage, INJ_DLSYM);
	assert_true(r.restored);
	assert_int_equal(waitpid(pid, NULL, WNOHANG | __WALL), 0);
	reap(pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frame__any_rsp__red_zone_kept_and_sysv_aligned),
		cmocka_unit_test(maps_has__path_or_base_name__true),
		cmocka_unit_test(maps_has__other_names__false),
		cmocka_unit_test(pc_in_loader__libc_ld_libgcc_code__true),
		cmocka_unit_test(pc_in_loader__own_code_data_anon__false),
		cmocka_unit_test(syscall_safe__interrupted_waits__true),
		cmocka_unit_test(syscall_safe__locks_allocs_completed__false),
		cmocka_unit_test(parse_status__fields__parsed),
		cmocka_unit_test(parse_status__no_uid_or_sigblk__einval),
		cmocka_unit_test(why_eperm__each_cause__names_it_and_the_fix),
		cmocka_unit_test(resolve__self__libc_dlopen_and_dlsym),
		cmocka_unit_test(run__child_libc_getpid__returns_its_pid),
		cmocka_unit_test(run__missing_library__elibacc_with_dlerror),
		cmocka_unit_test(run__missing_init_symbol__enoent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
