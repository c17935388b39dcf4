// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* `rankscope inject`: load the CUPTI library into a process that is already running, as the
 * CUDA driver would have with CUDA_INJECTION64_PATH at its start. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "cmd.h"
#include "log.h"
#include "procfs.h"
#include "ptrace_inject.h"
#include "rs_cupti_wire.h"

#define INJECT_LIB	"librankscope_cupti.so"
#define INJECT_INIT	"InitializeInjection"
#define INJECT_INIT_SOCK	"RankscopeInjectWithSocket"	/* (const char *socket) */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: rankscope inject -p PID [--lib PATH] [--cupti-socket PATH] [--timeout S]\n"
"\n"
"Load rankscope's CUPTI library into a running process, as CUDA_INJECTION64_PATH would have\n"
"at its start: the main thread, stopped with ptrace for a few milliseconds, calls dlopen()\n"
"and the library's " INJECT_INIT "(), then gets every register back. The library\n"
"starts one thread and waits, dormant, for rankscope daemon. Only where the process was\n"
"stopped in a plain wait (read, poll, sleep, a condition variable) or in its own code, never\n"
"inside the C library or the loader, so that it holds no lock dlopen() needs. x86-64 only.\n"
"\n"
"  -p, --pid PID      the process\n"
"      --lib PATH     the library, an absolute path as the process sees it in its mount\n"
"                     namespace (default: " INJECT_LIB " next to the rankscope\n"
"                     binary)\n"
"      --cupti-socket PATH  the daemon's GPU timing socket, as the process sees it (its\n"
"                     mount namespace), for a daemon started with --cupti-socket;\n"
"                     default: the process' RANKSCOPE_CUPTI_SOCKET, else\n"
"                     " RSC_SOCKET_DEFAULT "\n"
"      --timeout S    seconds to wait for a safe stop, and for each call (default 5)\n"
"  -v, --verbose      more diagnostics\n"
"  -h, --help         this help\n"
"\n"
"Exit status: 0 loaded, 1 not loaded (the reason is printed), 2 bad usage.\n"
"Needs root or CAP_SYS_PTRACE.\n");
}

/* The default library: next to /proc/self/exe, where make builds both. */
static int default_lib(char *out, size_t n)
{
	char exe[PATH_MAX], *slash;
	ssize_t len;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len < 0)
		return -errno;
	exe[len] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	if ((size_t)snprintf(out, n, "%s/%s", exe, INJECT_LIB) >= n)
		return -ENAMETOOLONG;
	return 0;
}

/* Whether pid sees a regular file at path, resolved inside its root. Returns 0, -ENOENT,
 * -EISDIR (not a regular file), or -errno when its root cannot be looked at (then ptrace
 * says why). */
static int target_sees(pid_t pid, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[64];
	struct stat st;
	int rfd, fd, err = 0;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	if (fd < 0)
		err = -errno;
	else if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EISDIR;
	if (fd >= 0)
		close(fd);
	close(rfd);
	return err;
}

static const char *stage_name(enum inject_stage s)
{
	switch (s) {
	case INJ_DLOPEN:	return "dlopen";
	case INJ_DLSYM:		return "dlsym";
	case INJ_INIT:		return INJECT_INIT;
	default:		return "the call";
	}
}

static int print_eperm(pid_t pid)
{
	struct ptrace_facts f;
	char msg[512];

	if (ptrace_inject__facts(pid, &f))
		snprintf(msg, sizeof(msg), "the kernel refused; run as root or grant "
			 "CAP_SYS_PTRACE");
	else
		ptrace_inject__why_eperm(&f, msg, sizeof(msg));
	pr_warn("inject: cannot ptrace PID %d: %s", pid, msg);
	return 1;
}

/* Refusals before anything is touched. Returns 0 or the exit status. */
static int precheck(pid_t pid, const char *lib, const char *safe)
{
	struct inject_status ist;
	struct proc_stat st;
	struct stat sb;
	char *maps;
	ssize_t n;
	int err;

	err = procfs__stat(pid, &st);
	if (err == -ENOENT || err == -ESRCH) {
		pr_warn("inject: no process with PID %d; is it still running? (ps -p %d)", pid,
			pid);
		return 1;
	}
	if (err) {
		pr_warn("inject: failed to read /proc/%d/stat: %s", pid, strerror(-err));
		return 1;
	}
	if (st.state == 'Z' || st.state == 'X') {
		pr_warn("inject: PID %d is a zombie (it, or its main thread, has exited); there is "
			"no thread left to load the library", pid);
		return 1;
	}
	if (st.state == 'T') {
		pr_warn("inject: PID %d is stopped (state T); resume it with kill -CONT %d first",
			pid, pid);
		return 1;
	}
	err = target_sees(pid, lib);
	if ((err == -ENOENT || err == -ENOTDIR) && stat(lib, &sb)) {
		pr_warn("inject: %s: no such file; give the library's path with --lib", safe);
		return 1;
	}
	if (err == -ENOENT || err == -ENOTDIR) {
		pr_warn("inject: PID %d does not see %s: it opens the library in its own mount "
			"namespace (a container?); copy it into its filesystem and give that path "
			"with --lib", pid, safe);
		return 1;
	}
	if (err == -EISDIR) {
		pr_warn("inject: %s is not a regular file in PID %d's filesystem; give the library "
			"with --lib", safe, pid);
		return 1;
	}
	if (err)
		pr_debug("inject: cannot look into /proc/%d/root (%s); dlopen will say", pid,
			 strerror(-err));
	n = procfs__read(pid, "maps", &maps, PROC_MAPS_MAX);
	if (n == -EACCES || n == -EPERM)
		return print_eperm(pid);	/* the same check as ptrace's */
	if (n < 0) {
		pr_warn("inject: failed to read /proc/%d/maps: %s; run as root or grant "
			"CAP_SYS_PTRACE", pid, strerror(-n));
		return 1;
	}
	if (!n) {
		free(maps);
		pr_warn("inject: PID %d has no user memory (a kernel thread); nothing to inject "
			"into", pid);
		return 1;
	}
	err = ptrace_inject__maps_has(maps, lib);
	free(maps);
	if (err) {
		pr_warn("inject: PID %d already has %s loaded; nothing to do", pid,
			strrchr(safe, '/') ? strrchr(safe, '/') + 1 : safe);
		return 1;
	}
	err = ptrace_inject__status(pid, &ist);
	if (err) {
		pr_warn("inject: failed to read /proc/%d/status: %s", pid, strerror(-err));
		return 1;
	}
	/* each call ends with a SIGSEGV at rip 0; the kernel forces a blocked or ignored one to
	 * SIG_DFL for good, which would change the process */
	if ((ist.sig_blk | ist.sig_ign) & (1ULL << (SIGSEGV - 1))) {
		pr_warn("inject: PID %d %s SIGSEGV, which ends each injected call; the kernel "
			"would reset its handling for good, so nothing was done", pid,
			ist.sig_blk & (1ULL << (SIGSEGV - 1)) ? "blocks" : "ignores");
		return 1;
	}
	if (ist.shstk) {
		pr_warn("inject: PID %d runs with x86 shadow stacks, which refuse the return "
			"address inject forges; not supported", pid);
		return 1;
	}
	return 0;
}

static int report_error(pid_t pid, int err, const struct inject_report *r,
			const struct inject_opts *o, const char *safe)
{
	char dl[sizeof(r->dlerror)];
	double secs = o->timeout_ms / 1000.0;
	const char *left = r->restored ? "; its registers were restored" : "";

	switch (err) {
	case -EPERM:
		return print_eperm(pid);
	case -ESRCH:
		if (r->stage == INJ_ATTACH)
			pr_warn("inject: no process with PID %d; is it still running? (ps -p %d)",
				pid, pid);
		else if (r->stage == INJ_STOP)
			pr_warn("inject: PID %d exited before it could be stopped; nothing to "
				"inject into", pid);
		else
			pr_warn("inject: PID %d exited during the injection (in %s)", pid,
				stage_name(r->stage));
		break;
	case -EBUSY:
		pr_warn("inject: PID %d was stopped by signal %d (job control); nothing was done; "
			"resume it with kill -CONT %d and try again", pid, r->sig, pid);
		break;
	case -ETIMEDOUT:
		if (r->stage != INJ_STOP)
			pr_warn("inject: %s() in PID %d did not return within %g s%s, but the "
				"library may be left half loaded (a lock held?); check the process",
				stage_name(r->stage), pid, secs, left);
		else if (r->stops <= 1 && !r->restored)
			pr_warn("inject: PID %d did not stop within %g s (uninterruptible "
				"sleep, state D?); nothing was changed; try again, or raise "
				"--timeout", pid, secs);
		else
			pr_warn("inject: PID %d's main thread was inside the C library or the "
				"loader (it might hold a lock dlopen needs) at each of %d stops in "
				"%g s; nothing was changed; try again, or raise --timeout", pid,
				r->stops, secs);
		break;
	case -ELIBACC:
		pr_warn("inject: dlopen of %s in PID %d failed: %s; check that the process can "
			"read it and has the libraries it needs", safe, pid,
			r->dlerror[0] ? log__safe(r->dlerror, dl, sizeof(dl)) : "no reason given");
		break;
	case -ENOENT:
		pr_warn("inject: %s has no %s(); it was closed again; give rankscope's CUPTI "
			"library with --lib", safe, o->init_sym);
		break;
	case -EFAULT:
		pr_warn("inject: %s() faulted in PID %d (signal %d at 0x%llx)%s and the fault "
			"discarded, but the library may be left half loaded; check the process",
			stage_name(r->stage), pid, r->sig, (unsigned long long)r->sig_pc, left);
		break;
	case -ENOTSUP:
		pr_warn("inject: not supported on this architecture (x86-64 only)");
		break;
	default:
		pr_warn("inject: failed to inject into PID %d (in %s): %s%s", pid,
			stage_name(r->stage), strerror(-err), left);
	}
	return 1;
}

static int parse_timeout(const char *arg, int *ms)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(s) || s <= 0 || s > 3600) {
		pr_warn("inject: invalid --timeout '%s': expected seconds, more than 0 and at most "
			"3600", arg);
		return -EINVAL;
	}
	*ms = (int)(s * 1000);
	if (!*ms)
		*ms = 1;
	return 0;
}

/* Does something listen where the library will connect (the target's RANKSCOPE_CUPTI_SOCKET,
 * else the default), as the target sees its file system? Says so when not: the library then
 * stays dormant, retrying, and inject's "loaded" alone would hide that. */
static void check_listener(pid_t pid, const char *given)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char root[64], *env = NULL, safe[PATH_MAX];
	const char *path = RSC_SOCKET_DEFAULT, *v;
	struct stat st;
	int rfd, fd = -1, sk = -1, why = 0;
	ssize_t n;

	n = given ? 0 : procfs__read(pid, "environ", &env, PROC_ENVIRON_MAX);
	if (given)
		path = given;
	else if (n > 0 && (v = procfs__environ_get(env, n, RSC_SOCKET_ENV)) && v[0] == '/')
		path = v;
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0)
		fd = syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	if (fd < 0)
		why = errno;
	else if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		why = ENOTSOCK;
	if (!why) {
		/* through our fd of it: the path is the target's, not ours */
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", fd);
		sk = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);	/* as the library */
		if (sk < 0 || connect(sk, (struct sockaddr *)&sa, sizeof(sa)))
			why = errno;
	}
	if (why)
		pr_warn("inject: nothing listens on %s as PID %d sees it (%s): the library waits, "
			"dormant, until a daemon does (rankscope daemon --cupti-socket, and "
			"inject --cupti-socket the same path)",
			log__safe(path, safe, sizeof(safe)), pid, strerror(why));
	if (sk >= 0)
		close(sk);
	if (fd >= 0)
		close(fd);
	if (rfd >= 0)
		close(rfd);
	free(env);
}

int cmd_inject(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "lib", required_argument, NULL, 'l' },
		{ "timeout", required_argument, NULL, 't' },
		{ "cupti-socket", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct inject_opts o = { .init_sym = INJECT_INIT, .timeout_ms = 5000 };
	char lib[PATH_MAX], safe[PATH_MAX];
	struct inject_report r;
	struct inject_syms s;
	sigset_t hold, old;
	struct stat st;
	pid_t pid = 0;
	long v;
	int c, err;

	lib[0] = '\0';
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_long(optarg, 1, INT_MAX, &v)) {
				pr_warn("inject: invalid PID '%s': expected one process id",
					optarg);
				return 2;
			}
			pid = v;
			break;
		case 'l':
			if (optarg[0] != '/') {
				pr_warn("inject: --lib '%s' is not an absolute path; the process "
					"would resolve it from its own working directory", optarg);
				return 2;
			}
			if (strlen(optarg) >= sizeof(lib)) {
				pr_warn("inject: --lib path too long");
				return 2;
			}
			strcpy(lib, optarg);
			break;
		case 't':
			if (parse_timeout(optarg, &o.timeout_ms))
				return 2;
			break;
		case 's':
			if (optarg[0] != '/' ||
			    strlen(optarg) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
				pr_warn("inject: invalid --cupti-socket '%s': give the absolute path "
					"of the daemon's socket, under %zu bytes", log__safe(optarg,
					safe, sizeof(safe)), sizeof(((struct sockaddr_un *)0)->sun_path));
				return 2;
			}
			o.init_sym = INJECT_INIT_SOCK;
			o.init_arg = optarg;
			break;
		case 'v':
			log_verbosity = LOG_DEBUG;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		pr_warn("inject: unexpected argument '%s'; see rankscope inject --help",
			argv[optind]);
		return 2;
	}
	if (!pid) {
		pr_warn("inject: no process given; use -p PID");
		return 2;
	}
#if !defined(__x86_64__)
	pr_warn("inject: not supported on this architecture (x86-64 only)");
	return 1;
#endif
	if (pid == getpid()) {
		pr_warn("inject: PID %d is rankscope itself; give the target process' PID", pid);
		return 2;
	}
	if (!lib[0]) {
		err = default_lib(lib, sizeof(lib));
		if (err) {
			pr_warn("inject: failed to find the rankscope binary's directory: %s; give "
				"the library with --lib", strerror(-err));
			return 1;
		}
		if (stat(lib, &st)) {
			pr_warn("inject: %s not found; build it with make (it needs cupti.h from "
				"the CUDA toolkit), or give the library with --lib",
				log__safe(lib, safe, sizeof(safe)));
			return 1;
		}
	}
	o.lib = lib;
	log__safe(lib, safe, sizeof(safe));
	err = precheck(pid, lib, safe);
	if (err)
		return err;
	err = ptrace_inject__resolve(pid, &s);
	if (err == -ENOENT && !s.lib[0]) {
		pr_warn("inject: PID %d maps no C library with dlopen (a static binary?); cannot "
			"inject", pid);
		return 1;
	}
	if (err == -ENOENT) {
		pr_warn("inject: no dlopen/dlsym in %s mapped by PID %d (glibc before 2.34, "
			"without libdl loaded?); cannot inject",
			log__safe(s.lib, safe, sizeof(safe)), pid);
		return 1;
	}
	if (err) {
		pr_warn("inject: failed to read the C library of PID %d: %s", pid, strerror(-err));
		return 1;
	}
	pr_debug("inject: dlopen at 0x%llx, dlsym at 0x%llx in %s", (unsigned long long)s.dlopen,
		 (unsigned long long)s.dlsym, s.lib);

	/* dying between two ptrace calls would leave the thread to return into address 0 */
	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigaddset(&hold, SIGQUIT);
	sigaddset(&hold, SIGTSTP);
	sigprocmask(SIG_BLOCK, &hold, &old);
	err = ptrace_inject__run(pid, &s, &o, &r);
	sigprocmask(SIG_SETMASK, &old, NULL);
	pr_debug("inject: %d stop(s), syscall %ld, %d signal(s) held back", r.stops, r.syscall_nr,
		 r.deferred);
	if (err)
		return report_error(pid, err, &r, &o, safe);
	printf("rankscope: inject: loaded %s into PID %d (handle 0x%llx, %s returned %d)\n", safe,
	       pid, (unsigned long long)r.handle, o.init_sym, r.init_ret);
	check_listener(pid, o.init_arg);
	return 0;
}
