// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* libs: library classification, maps scanning, the API table and its cookies, resolution
 * of probe sites in the real OpenMPI (and NCCL, when installed) libraries. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>
#include "elfsym.h"
#include "libs.h"
#include "procfs.h"

#define LIBMPI "/usr/lib/x86_64-linux-gnu/libmpi.so.40"
#define MPI_H "/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h"

static const char *const nccl_libs[] = {
	"/usr/local/cuda/lib/libnccl.so.2",
	"/usr/local/cuda/lib64/libnccl.so.2",
	"/usr/lib/x86_64-linux-gnu/libnccl.so.2",
	NULL,
};
static const char *const nccl_hdrs[] = {
	"/usr/local/cuda/include/nccl.h",
	"/usr/include/nccl.h",
	NULL,
};

static const char *first_existing(const char *const *paths)
{
	for (; *paths; paths++)
		if (!access(*paths, R_OK))
			return *paths;
	return NULL;
}

static const struct coll_api *api_by_sym(const char *sym)
{
	int i;

	for (i = 0; i < coll_apis_n; i++)
		if (!strcmp(coll_apis[i].sym, sym))
			return &coll_apis[i];
	return NULL;
}

static void classify__known_sonames__library(void **state)
{
	assert_int_equal(libs__classify("/usr/lib/x86_64-linux-gnu/libnccl.so.2"), RS_LIB_NCCL);
	assert_int_equal(libs__classify("libnccl.so"), RS_LIB_NCCL);
	assert_int_equal(libs__classify("/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4"),
			 RS_LIB_MPI);
	assert_int_equal(libs__classify("/usr/lib/libgloo.so.0"), RS_LIB_GLOO);
	assert_int_equal(libs__classify("/opt/venv/lib/python3.11/site-packages/torch/lib/"
					"libtorch_cpu.so"), RS_LIB_TORCH);
}

static void classify__look_alikes__none(void **state)
{
	assert_int_equal(libs__classify("/usr/lib/x86_64-linux-gnu/libmpi_cxx.so.40"),
			 RS_LIB_NONE);
	assert_int_equal(libs__classify("/usr/lib/libnccl-net.so"), RS_LIB_NONE);
	assert_int_equal(libs__classify("/usr/lib/libnccl.sox"), RS_LIB_NONE);
	assert_int_equal(libs__classify("/usr/lib/libtorch.so"), RS_LIB_NONE);
	assert_int_equal(libs__classify("/usr/lib/libtorch_cuda.so"), RS_LIB_NONE);
	assert_int_equal(libs__classify("/usr/lib/xlibmpi.so.40"), RS_LIB_NONE);
	/* the directory name does not count, only the file's */
	assert_int_equal(libs__classify("/opt/libnccl.so/libfoo.so"), RS_LIB_NONE);
	assert_int_equal(libs__classify(""), RS_LIB_NONE);
	assert_int_equal(libs__classify("/"), RS_LIB_NONE);
}

static const char maps_text[] =
	"55d0a0000000-55d0a0001000 r--p 00000000 fd:01 100 /usr/bin/python3.11\n"
	/* NCCL: listed out of address order, the lowest mapping must win */
	"7f0000002000-7f0000010000 r-xp 00002000 fd:01 200 /usr/lib/libnccl.so.2\n"
	"7f0000000000-7f0000002000 r--p 00000000 fd:01 200 /usr/lib/libnccl.so.2\n"
	"7f0000010000-7f0000011000 rw-p 00010000 fd:01 200 /usr/lib/libnccl.so.2\n"
	/* a second libnccl (other inode), even lower: the first one seen is kept */
	"7e0000000000-7e0000001000 r--p 00000000 fd:01 201 /opt/other/libnccl.so.2\n"
	/* MPI: the replaced file is the one mapped lowest: kept, marked deleted */
	"7f1000000000-7f1000001000 r--p 00000000 fd:01 300 /usr/lib/libmpi.so.40.30.4 (deleted)\n"
	"7f1100000000-7f1100001000 r--p 00000000 fd:01 400 /usr/lib/libmpi.so.40.30.4\n"
	"\n"
	/* gloo only as an inode-0 mapping: not a file we can resolve */
	"7f2000000000-7f2000001000 r--p 00000000 00:00 0 /usr/lib/libgloo.so.0\n"
	"7f3000000000-7f3000001000 rw-p 00000000 00:00 0 \n"
	"7f3000001000-7f3000002000 rw-p 00000000 00:00 0\n"
	"this line is not a mapping\n"
	"7f4000000000-7f4000001000 r--p 00000000 fd:01 500 libtorch_cpu.so\n"
	/* last line without a newline */
	"7f5000000000-7f5000001000 r--p 00000000 08:03 600 /usr/lib/libmpi_cxx.so.40";

static void scan_maps__synthetic__lowest_mapping_per_library(void **state)
{
	struct proc_libs out;
	const struct proc_lib *p;

	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(libs__scan_maps(maps_text, &out), 2);
	p = &out.lib[RS_LIB_NCCL];
	assert_true(p->found);
	assert_string_equal(p->path, "/usr/lib/libnccl.so.2");
	assert_true(p->inode == 200);
	assert_true(p->dev == makedev(0xfd, 1));
	assert_true(p->start == 0x7f0000000000ULL);
	assert_true(p->end == 0x7f0000002000ULL);
	assert_true(p->pgoff == 0);
	assert_false(p->deleted);
	p = &out.lib[RS_LIB_MPI];
	assert_true(p->found);
	assert_true(p->inode == 300);
	assert_true(p->deleted);
	assert_true(p->start == 0x7f1000000000ULL);
	assert_string_equal(p->path, "/usr/lib/libmpi.so.40.30.4");
	assert_false(out.lib[RS_LIB_GLOO].found);
	assert_false(out.lib[RS_LIB_TORCH].found);	/* relative path: not a file path */
	assert_false(out.lib[RS_LIB_NONE].found);
}

static void scan_maps__deleted_path__kept_marked(void **state)
{
	struct proc_libs out;

	assert_int_equal(libs__scan_maps("7f1000000000-7f1000001000 r--p 00000000 fd:01 300 "
					 "/usr/lib/libmpi.so.40 (deleted)\n", &out), 1);
	assert_true(out.lib[RS_LIB_MPI].found);
	assert_true(out.lib[RS_LIB_MPI].deleted);
	assert_string_equal(out.lib[RS_LIB_MPI].path, "/usr/lib/libmpi.so.40");
	/* " (deleted)" alone is a name, not a mark */
	assert_int_equal(libs__scan_maps("7f1000000000-7f1000001000 r--p 00000000 fd:01 300 "
					 " (deleted)\n", &out), 0);
}

static void scan_maps__anonymous_and_empty__nothing(void **state)
{
	struct proc_libs out;

	assert_int_equal(libs__scan_maps("", &out), 0);
	assert_int_equal(libs__scan_maps("\n\n\n", &out), 0);
	assert_int_equal(libs__scan_maps("7f00-7f10 rw-p 00000000 00:00 0\n", &out), 0);
}

static void scan_maps__overlong_line__skipped(void **state)
{
	struct proc_libs out;
	size_t n = PATH_MAX + 1024, off;
	char *text = malloc(2 * n);

	assert_non_null(text);
	off = (size_t)snprintf(text, 2 * n, "7f00-7f10 r--p 00000000 fd:01 1 /");
	memset(text + off, 'a', n);
	off += n;
	off += (size_t)snprintf(text + off, 2 * n - off, "/libnccl.so.2\n"
				"7f20-7f30 r--p 00000000 fd:01 2 /usr/lib/libmpi.so.40\n");
	assert_int_equal(libs__scan_maps(text, &out), 1);
	assert_false(out.lib[RS_LIB_NCCL].found);
	assert_true(out.lib[RS_LIB_MPI].found);
	free(text);
}

/* The lowest mapping of this process' libc, as libs__scan_maps would record it. */
static int self_libc(struct proc_lib *pl)
{
	char *maps, *line, *save = NULL;
	struct proc_map m;
	int found = 0;

	if (procfs__read(getpid(), "maps", &maps, PROC_MAPS_MAX) < 0)
		return 0;
	memset(pl, 0, sizeof(*pl));
	for (line = strtok_r(maps, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
		if (procfs__parse_maps_line(line, &m) || !strstr(m.path, "/libc.so"))
			continue;
		snprintf(pl->path, sizeof(pl->path), "%s", m.path);
		pl->dev = makedev(m.dev_major, m.dev_minor);
		pl->inode = m.inode;
		pl->start = m.start;
		pl->end = m.end;
		pl->pgoff = m.pgoff;
		found = 1;
		pl->found = true;
	}
	free(maps);
	return found;
}

static void open_mapped__self_libc__root(void **state)
{
	struct proc_lib pl;
	const char *via = NULL;
	struct stat st;
	int fd;

	if (!self_libc(&pl))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	fd = libs__open_mapped(getpid(), &pl, &via, NULL);
	assert_true(fd >= 0);
	assert_string_equal(via, "root");
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(st.st_ino == pl.inode);
	close(fd);
}

static void open_mapped__wrong_inode__not_opened(void **state)
{
	struct proc_lib pl;
	const char *via = NULL;
	int fd;

	if (!self_libc(&pl))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	/* the path names another file than the mapping: neither way may return it */
	pl.inode ^= 1;
	fd = libs__open_mapped(getpid(), &pl, &via, NULL);
	assert_true(fd < 0);
}

static void open_mapped__relative_path__einval(void **state)
{
	struct proc_lib pl = { .found = true, .path = "lib/libc.so.6", .inode = 1 };
	const char *via;

	assert_int_equal(libs__open_mapped(getpid(), &pl, &via, NULL), -EINVAL);
}

/* A library deleted since it was mapped: only the mapping itself is opened. */
static void open_mapped__deleted__map_files(void **state)
{
	enum lib_refusal why = LR_NONE;
	struct proc_lib pl;
	const char *via = NULL;
	struct stat st;
	int fd;

	if (geteuid())
		skip();		/* /proc/PID/map_files needs CAP_SYS_ADMIN */
	if (!self_libc(&pl))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	pl.deleted = true;
	fd = libs__open_mapped(getpid(), &pl, &via, &why);
	assert_true(fd >= 0);
	assert_string_equal(via, "map_files");
	assert_int_equal(why, LR_DELETED);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(st.st_ino == pl.inode);
	close(fd);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A hostile container: a child chrooted into a scratch root names library paths that are
 * symlinks to the host's /etc/shadow, ".." walks, a magic link, a FIFO and a device. The
 * proc_lib even carries the host file's inode, so only the path walk stands between the
 * daemon and that file: it must stay inside the child's root, and nothing is returned.
 */
static void open_mapped__hostile_root__nothing_outside(void **state)
{
	static const struct {
		const char *path;
		enum lib_refusal want;
	} cases[] = {
		{ "/lib/to_shadow.so", LR_UNRESOLVED },		/* -> /etc/shadow */
		{ "/lib/up.so", LR_UNRESOLVED },		/* -> ../../../../../etc/shadow */
		{ "/../../../../etc/shadow", LR_UNRESOLVED },
		{ "/lib/../../etc/shadow", LR_UNRESOLVED },
		{ "/proc/self/root/etc/shadow", LR_UNRESOLVED },
		{ "/lib/fifo.so", LR_NOT_REGULAR },
		{ "/lib/zero.so", LR_NOT_REGULAR },
		{ "/lib/other.so", LR_OTHER_FILE },
	};
	char root[] = "/tmp/rs_libs_rootXXXXXX", p[PATH_MAX];
	struct stat host;
	pid_t kid;
	size_t i;
	int fd, status;

	if (geteuid())
		skip();		/* chroot and mknod need root */
	if (stat("/etc/shadow", &host))
		skip();
	assert_non_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/lib", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/to_shadow.so", root);
	assert_int_equal(symlink("/etc/shadow", p), 0);
	snprintf(p, sizeof(p), "%s/lib/up.so", root);
	assert_int_equal(symlink("../../../../../etc/shadow", p), 0);
	snprintf(p, sizeof(p), "%s/lib/fifo.so", root);
	assert_int_equal(mkfifo(p, 0644), 0);
	snprintf(p, sizeof(p), "%s/lib/zero.so", root);
	assert_int_equal(mknod(p, S_IFCHR | 0644, makedev(1, 5)), 0);
	snprintf(p, sizeof(p), "%s/lib/other.so", root);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);

	kid = fork();
	assert_true(kid >= 0);
	if (!kid) {
		/* gone with the test, even one that fails, and holding none of its pipes */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(STDOUT_FILENO);
		close(STDERR_FILENO);
		if (chroot(root) || chdir("/"))
			_exit(1);
		pause();
		_exit(0);
	}
	usleep(100000);		/* chrooted by now */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proc_lib pl = {
			.found = true, .dev = host.st_dev, .inode = host.st_ino,
			/* no such mapping in the child: map_files cannot rescue it */
			.start = 0x1000, .end = 0x2000,
		};
		enum lib_refusal why = LR_NONE;
		const char *via = NULL;
		int64_t t0 = mono_ms();

		snprintf(pl.path, sizeof(pl.path), "%s", cases[i].path);
		fd = libs__open_mapped(kid, &pl, &via, &why);
		if (fd >= 0)
			fail_msg("%s: opened (via %s)", cases[i].path, via);
		if (why != cases[i].want)
			fail_msg("%s: refused as %s, want %s", cases[i].path,
				 libs__refusal_name(why), libs__refusal_name(cases[i].want));
		/* a FIFO opened for reading would block until a writer came */
		if (mono_ms() - t0 > 100)
			fail_msg("%s: took %lld ms", cases[i].path, (long long)(mono_ms() - t0));
	}
	kill(kid, SIGKILL);
	waitpid(kid, &status, 0);
	for (i = 0; i < 5; i++) {
		static const char *const names[] = { "to_shadow.so", "up.so", "fifo.so",
						     "zero.so", "other.so" };

		snprintf(p, sizeof(p), "%s/lib/%s", root, names[i]);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/lib", root);
	rmdir(p);
	rmdir(root);
}

static void error_kind__errnos__named(void **state)
{
	assert_string_equal(libs__error_name(libs__error_kind(-ENOENT)), "symbol_not_found");
	assert_string_equal(libs__error_name(libs__error_kind(-ESTALE)), "not_mapped_file");
	assert_string_equal(libs__error_name(libs__error_kind(-EMFILE)), "fd_limit");
	assert_string_equal(libs__error_name(libs__error_kind(-ENOEXEC)), "bad_elf");
	assert_string_equal(libs__error_name(libs__error_kind(-ESRCH)), "gone");
	assert_string_equal(libs__error_name(libs__error_kind(-EIO)), "other");
}

static void table__rows__well_formed(void **state)
{
	int i, k;

	assert_true(coll_apis_n > 0);
	for (i = 0; i < coll_apis_n; i++) {
		const struct coll_api *a = &coll_apis[i];

		assert_non_null(a->sym);
		assert_true(a->sym[0]);
		assert_in_range(a->lib, RS_LIB_NCCL, RS_LIB_MAX - 1);
		assert_in_range(a->op, RS_OP_NONE + 1, RS_OP_MAX - 1);
		/* a row resolves once per library: a duplicate would never be probed */
		for (k = 0; k < i; k++)
			if (coll_apis[k].lib == a->lib && !strcmp(coll_apis[k].sym, a->sym))
				fail_msg("duplicate table row for %s", a->sym);
	}
}

static void cookie__every_row__round_trips(void **state)
{
	uint64_t ck;
	int i;

	for (i = 0; i < coll_apis_n; i++) {
		const struct coll_api *a = &coll_apis[i];

		ck = libs__cookie(a);
		if (RS_CK_OP(ck) != a->op || RS_CK_LIB(ck) != a->lib ||
		    RS_CK_COUNT(ck) != a->count || RS_CK_DTYPE(ck) != a->dtype ||
		    RS_CK_COMM(ck) != a->comm || RS_CK_STREAM(ck) != a->stream ||
		    RS_CK_PEER(ck) != a->peer || RS_CK_FLAGS(ck) != a->flags ||
		    RS_CK_REDOP(ck) != a->redop || RS_CK_SENDBUF(ck) != a->sendbuf ||
		    RS_CK_RECVBUF(ck) != a->recvbuf)
			fail_msg("%s: cookie 0x%016llx does not round-trip", a->sym,
				 (unsigned long long)ck);
	}
}

static void cookie__fields__disjoint_bits(void **state)
{
	struct coll_api a = { 0 };
	uint64_t ck;

	/* each field at its maximum, alone: no other field may read it */
	a.op = 0xff;
	ck = libs__cookie(&a);
	assert_int_equal(RS_CK_OP(ck), 0xff);
	assert_int_equal(RS_CK_LIB(ck) | RS_CK_COUNT(ck) | RS_CK_FLAGS(ck), 0);
	memset(&a, 0, sizeof(a));
	a.stream = 0xf;
	ck = libs__cookie(&a);
	assert_int_equal(RS_CK_STREAM(ck), 0xf);
	assert_int_equal(RS_CK_COMM(ck) | RS_CK_PEER(ck) | RS_CK_OP(ck), 0);
	memset(&a, 0, sizeof(a));
	a.flags = 0xff;
	ck = libs__cookie(&a);
	assert_int_equal(RS_CK_FLAGS(ck), 0xff);
	assert_int_equal(RS_CK_PEER(ck) | RS_CK_REDOP(ck), 0);
}

/* The slot rides in the top bits: every field keeps its value, and a cookie without it says so. */
static void cookie__with_slot__fields_kept(void **state)
{
	uint64_t ck, with;
	int i, slot;

	for (i = 0; i < coll_apis_n; i++) {
		ck = libs__cookie(&coll_apis[i]);
		assert_int_equal(RS_CK_HAS_SLOT(ck), 0);
		for (slot = 0; slot < RS_MAX_SLOTS; slot += 85) {
			with = RS_CK_WITH_SLOT(ck, slot);
			assert_int_equal(RS_CK_HAS_SLOT(with), 1);
			assert_int_equal(RS_CK_SLOT(with), slot);
			assert_true((with & ((1ULL << 52) - 1)) == ck);
		}
	}
	assert_int_equal(RS_CK_SLOT(RS_CK_WITH_SLOT(0ULL, RS_MAX_SLOTS - 1)), RS_MAX_SLOTS - 1);
}

static void table__nccl_allreduce__comm6_stream7(void **state)
{
	const struct coll_api *a = api_by_sym("ncclAllReduce");

	/* ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream) */
	assert_non_null(a);
	assert_int_equal(a->lib, RS_LIB_NCCL);
	assert_int_equal(a->op, RS_OP_ALLREDUCE);
	assert_int_equal(a->comm, 6);
	assert_int_equal(a->stream, 7);
	assert_int_equal(a->count, 3);
	assert_int_equal(a->dtype, 4);
	assert_int_equal(a->redop, 5);
	assert_int_equal(a->flags & RS_CKF_SEQ, RS_CKF_SEQ);
	assert_int_equal(RS_CK_STREAM(libs__cookie(a)), 7);
	assert_int_equal(RS_CK_COMM(libs__cookie(a)), 6);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The parameter list of sym's prototype in a header: the line starts with line_prefix and
 * names sym right after a space. Returns a malloc'd copy of the text inside the parens. */
static char *proto_params(const char *hdr, const char *line_prefix, const char *sym)
{
	size_t slen = strlen(sym), plen = strlen(line_prefix);
	const char *p, *bol, *open, *close;

	for (p = hdr; (p = strstr(p, sym)); p += slen) {
		if (p == hdr || p[-1] != ' ' || p[slen] != '(')
			continue;
		for (bol = p; bol > hdr && bol[-1] != '\n'; bol--)
			;
		if (strncmp(bol, line_prefix, plen))
			continue;
		open = p + slen;
		close = strchr(open, ')');
		if (!close)
			return NULL;
		return strndup(open + 1, close - open - 1);
	}
	return NULL;
}

/* 1-based position of the first parameter whose text contains needle; 0 if none. */
static int param_pos(const char *params, const char *needle)
{
	const char *p = params, *comma;
	char one[256];
	size_t n;
	int i;

	for (i = 1;; i++) {
		comma = strchr(p, ',');
		n = comma ? (size_t)(comma - p) : strlen(p);
		if (n >= sizeof(one))
			n = sizeof(one) - 1;
		memcpy(one, p, n);
		one[n] = '\0';
		if (strstr(one, needle))
			return i;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static int first_pos(const char *params, const char *const *needles)
{
	int pos;

	for (; *needles; needles++)
		if ((pos = param_pos(params, *needles)))
			return pos;
	return 0;
}

static void check_row(const struct coll_api *a, const char *what, int have, int want)
{
	if (have != want)
		fail_msg("%s: table says %s is argument %d, the header says %d", a->sym, what, have,
			 want);
}

static void table__nccl_rows__match_nccl_h(void **state)
{
	static const char *const peer[] = { "int root", "int peer", NULL };
	static const char *const count[] = { "count", NULL };
	const char *path = first_existing(nccl_hdrs);
	char *hdr, *params;
	int i, checked = 0;

	if (!path)
		skip();
	hdr = slurp(path);
	assert_non_null(hdr);
	for (i = 0; i < coll_apis_n; i++) {
		const struct coll_api *a = &coll_apis[i];

		if (a->lib != RS_LIB_NCCL || (a->flags & RS_CKF_INIT))
			continue;
		params = proto_params(hdr, "ncclResult_t", a->sym);
		if (!params)
			fail_msg("%s: no prototype in %s", a->sym, path);
		check_row(a, "comm", a->comm, param_pos(params, "ncclComm_t comm"));
		check_row(a, "stream", a->stream, param_pos(params, "cudaStream_t stream"));
		check_row(a, "count", a->count, first_pos(params, count));
		check_row(a, "dtype", a->dtype, param_pos(params, "ncclDataType_t datatype"));
		check_row(a, "peer", a->peer, first_pos(params, peer));
		check_row(a, "redop", a->redop, param_pos(params, "ncclRedOp_t op"));
		check_row(a, "sendbuf", a->sendbuf, param_pos(params, "sendbuff"));
		check_row(a, "recvbuf", a->recvbuf, param_pos(params, "recvbuff"));
		free(params);
		checked++;
	}
	assert_true(checked >= 7);
	free(hdr);
}

static void table__mpi_rows__match_mpi_h(void **state)
{
	static const char *const peer[] = { "int root", "int dest", "int source", NULL };
	char *hdr, *params;
	int i, checked = 0, count;

	if (access(MPI_H, R_OK))
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	hdr = slurp(MPI_H);
	assert_non_null(hdr);
	for (i = 0; i < coll_apis_n; i++) {
		const struct coll_api *a = &coll_apis[i];

		if (a->lib != RS_LIB_MPI)
			continue;
		params = proto_params(hdr, "OMPI_DECLSPEC", a->sym);
		if (!params)
			fail_msg("%s: no prototype in %s", a->sym, MPI_H);
		check_row(a, "comm", a->comm, param_pos(params, "MPI_Comm comm"));
		if (a->op == RS_OP_COMM_INIT) {
			/* a sub-communicator: color (or split type) in the count slot, key in
			 * the dtype slot, the MPI_Comm* out in the stream slot */
			static const char *const color[] = { "int color", "int split_type", NULL };

			check_row(a, "color", a->count, first_pos(params, color));
			check_row(a, "key", a->dtype, param_pos(params, "int key"));
			check_row(a, "newcomm", a->stream, param_pos(params, "MPI_Comm *newcomm"));
			assert_true(a->flags & RS_CKF_INIT);
			free(params);
			checked++;
			continue;
		}
		check_row(a, "dtype", a->dtype, param_pos(params, "MPI_Datatype"));
		check_row(a, "peer", a->peer, first_pos(params, peer));
		check_row(a, "redop", a->redop, param_pos(params, "MPI_Op op"));
		assert_int_equal(a->stream, 0);
		/* a counts[] array is not a count */
		count = param_pos(params, "count");
		if (strstr(params, "counts[]"))
			count = 0;
		check_row(a, "count", a->count, count);
		if (strstr(params, "sendbuf"))
			check_row(a, "sendbuf", a->sendbuf, param_pos(params, "sendbuf"));
		if (strstr(params, "recvbuf"))
			check_row(a, "recvbuf", a->recvbuf, param_pos(params, "recvbuf"));
		free(params);
		checked++;
	}
	assert_true(checked >= 8);
	free(hdr);
}

/* Independent of elfsym: the file offset of a dynamic symbol, straight from libelf. */
static int libelf_sym_off(const char *path, const char *name, uint64_t *off)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	Elf_Data *d;
	size_t i, n;
	int fd, err = -ENOENT;
	uint64_t vaddr = 0;
	Elf *elf;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && (scn = elf_nextscn(elf, scn)) && !vaddr) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			if (gelf_getsym(d, i, &sym) && sym.st_shndx != SHN_UNDEF &&
			    !strcmp(elf_strptr(elf, sh.sh_link, sym.st_name), name)) {
				vaddr = sym.st_value;
				break;
			}
		}
	}
	if (vaddr && !elf_getphdrnum(elf, &n)) {
		for (i = 0; i < n; i++) {
			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD &&
			    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
				*off = vaddr - ph.p_vaddr + ph.p_offset;
				err = 0;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static int pl_for(const char *path, struct proc_lib *pl)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	memset(pl, 0, sizeof(*pl));
	pl->found = true;
	snprintf(pl->path, sizeof(pl->path), "%s", path);
	pl->dev = st.st_dev;
	pl->inode = st.st_ino;
	return 0;
}

static void check_sites(const char *path, unsigned int lib, const struct probe_site *sites,
			int n)
{
	struct elfsym *e;
	uint8_t insn[4];
	uint64_t want = 0;
	int i, k;

	assert_int_equal(elfsym__open(path, &e), 0);
	for (i = 0; i < n; i++) {
		const struct probe_site *s = &sites[i];

		assert_non_null(s->api);
		assert_int_equal(s->api->lib, lib);
		assert_true(s->offset > 0);
		for (k = 0; k < i; k++)
			if (sites[k].api == s->api)
				fail_msg("%s resolved twice", s->api->sym);
		if (libelf_sym_off(path, s->api->sym, &want))
			fail_msg("%s: libelf finds no such symbol", s->api->sym);
		/* the probe goes on the function, or just past its endbr64 */
		assert_int_equal(elfsym__read(e, want, insn, sizeof(insn)), 0);
		if (s->offset != want + (s->skipped_endbr ? 4 : 0))
			fail_msg("%s: offset 0x%llx, libelf says 0x%llx", s->api->sym,
				 (unsigned long long)s->offset, (unsigned long long)want);
		assert_int_equal(s->skipped_endbr, elfsym__is_endbr64(insn, sizeof(insn)));
	}
	elfsym__free(e);
}

static void resolve__libmpi__every_mpi_api(void **state)
{
	struct probe_site *sites = calloc(coll_apis_n, sizeof(*sites));
	struct proc_lib pl;
	int n, i, want = 0;

	if (pl_for(LIBMPI, &pl)) {
		free(sites);
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	}
	n = libs__resolve(LIBMPI, &pl, RS_LIB_MPI, sites);
	assert_true(n >= 8);
	for (i = 0; i < coll_apis_n; i++)
		want += coll_apis[i].lib == RS_LIB_MPI;
	assert_true(n <= want);
	check_sites(LIBMPI, RS_LIB_MPI, sites, n);
	for (i = 0; i < n; i++)
		if (!strcmp(sites[i].api->sym, "MPI_Allreduce"))
			break;
	assert_true(i < n);
	free(sites);
}

static void resolve__libmpi_other_library__no_sites(void **state)
{
	struct probe_site *sites = calloc(coll_apis_n, sizeof(*sites));
	struct proc_lib pl;

	if (pl_for(LIBMPI, &pl)) {
		free(sites);
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	}
	/* libmpi holds none of NCCL's symbols */
	assert_int_equal(libs__resolve(LIBMPI, &pl, RS_LIB_NCCL, sites), 0);
	free(sites);
}

static void resolve__libnccl__every_nccl_api(void **state)
{
	const char *path = first_existing(nccl_libs);
	struct probe_site *sites;
	struct proc_lib pl;
	int n, i, want = 0;

	if (!path)
		skip();		/* no CUDA toolkit: the e2e NCCL tests say so too */
	if (pl_for(path, &pl))
		fail_msg("failed to map %s", path);
	sites = calloc(coll_apis_n, sizeof(*sites));
	n = libs__resolve(path, &pl, RS_LIB_NCCL, sites);
	for (i = 0; i < coll_apis_n; i++)
		want += coll_apis[i].lib == RS_LIB_NCCL;
	assert_int_equal(n, want);
	check_sites(path, RS_LIB_NCCL, sites, n);
	free(sites);
}

static void resolve__inode_mismatch__estale(void **state)
{
	struct probe_site *sites = calloc(coll_apis_n, sizeof(*sites));
	struct proc_lib pl;

	if (pl_for(LIBMPI, &pl)) {
		free(sites);
		fail_msg("%s", "a file this test reads is missing (OpenMPI or libc): run make deps");
	}
	pl.inode++;
	assert_int_equal(libs__resolve(LIBMPI, &pl, RS_LIB_MPI, sites), -ESTALE);
	pl.inode--;
	pl.dev = makedev(major(pl.dev) + 1, minor(pl.dev));
	assert_int_equal(libs__resolve(LIBMPI, &pl, RS_LIB_MPI, sites), -ESTALE);
	free(sites);
}

static void resolve__missing_file__enoent(void **state)
{
	struct probe_site sites[1];
	struct proc_lib pl = { .found = true, .inode = 1 };

	assert_int_equal(libs__resolve("/nonexistent/libmpi.so.40", &pl, RS_LIB_MPI, sites),
			 -ENOENT);
}

static void discover__self__matches_scan(void **state)
{
	struct proc_libs a, b;
	char *maps;
	ssize_t n;

	/* this test links none of the libraries: both must agree on that */
	assert_true(libs__discover(getpid(), &a) >= 0);
	n = procfs__read(getpid(), "maps", &maps, PROC_MAPS_MAX);
	assert_true(n > 0);
	assert_int_equal(libs__scan_maps(maps, &b), libs__discover(getpid(), &a));
	free(maps);
	assert_int_equal(libs__discover(99999999, &a), -ENOENT);
}

static void exe__self__lowest_mapping_of_exe(void **state)
{
	struct proc_lib pl;
	char exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(libs__exe(getpid(), &pl), 0);
	assert_true(pl.found);
	assert_string_equal(pl.path, exe);
	assert_true(pl.pgoff == 0);
	assert_true(pl.start <= (uint64_t)(uintptr_t)&exe__self__lowest_mapping_of_exe);
	assert_int_equal(libs__exe(99999999, &pl), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classify__known_sonames__library),
		cmocka_unit_test(classify__look_alikes__none),
		cmocka_unit_test(scan_maps__synthetic__lowest_mapping_per_library),
		cmocka_unit_test(scan_maps__deleted_path__kept_marked),
		cmocka_unit_test(scan_maps__anonymous_and_empty__nothing),
		cmocka_unit_test(scan_maps__overlong_line__skipped),
		cmocka_unit_test(open_mapped__self_libc__root),
		cmocka_unit_test(open_mapped__wrong_inode__not_opened),
		cmocka_unit_test(open_mapped__relative_path__einval),
		cmocka_unit_test(open_mapped__deleted__map_files),
		cmocka_unit_test(open_mapped__hostile_root__nothing_outside),
		cmocka_unit_test(error_kind__errnos__named),
		cmocka_unit_test(table__rows__well_formed),
		cmocka_unit_test(cookie__every_row__round_trips),
		cmocka_unit_test(cookie__fields__disjoint_bits),
		cmocka_unit_test(cookie__with_slot__fields_kept),
		cmocka_unit_test(table__nccl_allreduce__comm6_stream7),
		cmocka_unit_test(table__nccl_rows__match_nccl_h),
		cmocka_unit_test(table__mpi_rows__match_mpi_h),
		cmocka_unit_test(resolve__libmpi__every_mpi_api),
		cmocka_unit_test(resolve__libmpi_other_library__no_sites),
		cmocka_unit_test(resolve__libnccl__every_nccl_api),
		cmocka_unit_test(resolve__inode_mismatch__estale),
		cmocka_unit_test(resolve__missing_file__enoent),
		cmocka_unit_test(discover__self__matches_scan),
		cmocka_unit_test(exe__self__lowest_mapping_of_exe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
