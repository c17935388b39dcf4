// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The collective API table and per-process library discovery. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "elfsym.h"
#include "libs.h"
#include "procfs.h"

#define SEQ RS_CKF_SEQ
#define INIT (RS_CKF_INIT | RS_CKF_COUNT32 | RS_CKF_DTYPE32)
#define NSEQ (RS_CKF_SEQ | RS_CKF_DTYPE32)		/* NCCL: ncclDataType_t is an enum */
#define MSEQ (RS_CKF_SEQ | RS_CKF_COUNT32)		/* MPI: int count */
#define CXX (RS_CKF_SEQ | RS_CKF_ENTRY)		/* C++ may throw through it: entry only */
#define MINIT (RS_CKF_INIT | RS_CKF_COUNT32 | RS_CKF_DTYPE32)	/* MPI: a sub-communicator */

/*
 * Argument positions from the headers: nccl.h 2.28 (checked against the real library in
 * tests), OpenMPI 4.1 mpi.h, gloo 0.5, torch 1.13. Position 7+ is on the stack.
 * For COMM_INIT the count slot carries the rank and the dtype slot nranks.
 */
const struct coll_api coll_apis[] = {
	/* ncclAllReduce(send, recv, count, dtype, op, comm, stream) */
	{ RS_LIB_NCCL, RS_OP_ALLREDUCE, "ncclAllReduce", 3, 4, 6, 7, 0, NSEQ, 5, 1, 2 },
	/* ncclAllGather(send, recv, sendcount, dtype, comm, stream) */
	{ RS_LIB_NCCL, RS_OP_ALLGATHER, "ncclAllGather", 3, 4, 5, 6, 0, NSEQ, 0, 1, 2 },
	/* ncclReduceScatter(send, recv, recvcount, dtype, op, comm, stream) */
	{ RS_LIB_NCCL, RS_OP_REDUCE_SCATTER, "ncclReduceScatter", 3, 4, 6, 7, 0, NSEQ, 5, 1, 2 },
	/* ncclBroadcast(send, recv, count, dtype, root, comm, stream) */
	{ RS_LIB_NCCL, RS_OP_BROADCAST, "ncclBroadcast", 3, 4, 6, 7, 5, NSEQ, 0, 1, 2 },
	/* ncclReduce(send, recv, count, dtype, op, root, comm, stream) */
	{ RS_LIB_NCCL, RS_OP_REDUCE, "ncclReduce", 3, 4, 7, 8, 6, NSEQ, 5, 1, 2 },
	/* ncclSend/ncclRecv(buf, count, dtype, peer, comm, stream) */
	{ RS_LIB_NCCL, RS_OP_SEND, "ncclSend", 2, 3, 5, 6, 4, NSEQ, 0, 1, 0 },
	{ RS_LIB_NCCL, RS_OP_RECV, "ncclRecv", 2, 3, 5, 6, 4, NSEQ, 0, 0, 1 },
	{ RS_LIB_NCCL, RS_OP_GROUP_START, "ncclGroupStart", 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ RS_LIB_NCCL, RS_OP_GROUP_END, "ncclGroupEnd", 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	/* ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank):
	 * the 128-byte id goes on the stack, so rank is the third integer register. */
	{ RS_LIB_NCCL, RS_OP_COMM_INIT, "ncclCommInitRank", 3, 2, 0, 0, 0, INIT, 0, 0, 0 },
	{ RS_LIB_NCCL, RS_OP_COMM_INIT, "ncclCommInitRankConfig", 3, 2, 0, 0, 0, INIT, 0, 0, 0 },

	/* MPI_Allreduce(send, recv, count, dtype, op, comm) */
	{ RS_LIB_MPI, RS_OP_ALLREDUCE, "MPI_Allreduce", 3, 4, 6, 0, 0, MSEQ, 5, 1, 2 },
	/* MPI_Allgather(send, scount, stype, recv, rcount, rtype, comm) */
	{ RS_LIB_MPI, RS_OP_ALLGATHER, "MPI_Allgather", 2, 3, 7, 0, 0, MSEQ, 0, 1, 4 },
	/* MPI_Reduce_scatter_block(send, recv, rcount, dtype, op, comm) */
	{ RS_LIB_MPI, RS_OP_REDUCE_SCATTER, "MPI_Reduce_scatter_block", 3, 4, 6, 0, 0, MSEQ, 5, 1, 2 },
	/* MPI_Reduce_scatter(send, recv, rcounts[], dtype, op, comm): counts is an array */
	{ RS_LIB_MPI, RS_OP_REDUCE_SCATTER, "MPI_Reduce_scatter", 0, 4, 6, 0, 0, MSEQ, 5, 1, 2 },
	/* MPI_Bcast(buf, count, dtype, root, comm) */
	{ RS_LIB_MPI, RS_OP_BROADCAST, "MPI_Bcast", 2, 3, 5, 0, 4, MSEQ, 0, 1, 1 },
	/* MPI_Reduce(send, recv, count, dtype, op, root, comm) */
	{ RS_LIB_MPI, RS_OP_REDUCE, "MPI_Reduce", 3, 4, 7, 0, 6, MSEQ, 5, 1, 2 },
	/* MPI_Alltoall(send, scount, stype, recv, rcount, rtype, comm) */
	{ RS_LIB_MPI, RS_OP_ALLTOALL, "MPI_Alltoall", 2, 3, 7, 0, 0, MSEQ, 0, 1, 4 },
	/* MPI_Barrier(comm) */
	{ RS_LIB_MPI, RS_OP_BARRIER, "MPI_Barrier", 0, 0, 1, 0, 0, MSEQ, 0, 0, 0 },
	/* MPI_Gather/Scatter(send, scount, stype, recv, rcount, rtype, root, comm) */
	{ RS_LIB_MPI, RS_OP_GATHER, "MPI_Gather", 2, 3, 8, 0, 7, MSEQ, 0, 1, 4 },
	{ RS_LIB_MPI, RS_OP_SCATTER, "MPI_Scatter", 2, 3, 8, 0, 7, MSEQ, 0, 1, 4 },
	/* Sub-communicators, named from their parent, color and creation order so that every
	 * member calls them the same (a handle is a pointer in each process):
	 * MPI_Comm_split(comm, color, key, MPI_Comm *newcomm), MPI_Comm_split_type(comm, type, key,
	 * info, newcomm), MPI_Comm_dup(comm, newcomm). The out-pointer goes in the stream slot. */
	{ RS_LIB_MPI, RS_OP_COMM_INIT, "MPI_Comm_split", 2, 3, 1, 4, 0, MINIT, 0, 0, 0 },
	{ RS_LIB_MPI, RS_OP_COMM_INIT, "MPI_Comm_split_type", 2, 3, 1, 5, 0, MINIT, 0, 0, 0 },
	{ RS_LIB_MPI, RS_OP_COMM_INIT, "MPI_Comm_dup", 0, 0, 1, 2, 0, MINIT, 0, 0, 0 },
	/* MPI_Send(buf, count, dtype, dest, tag, comm); MPI_Recv(..., source, tag, comm, status).
	 * Point-to-point is sequenced per communicator too: it is part of the job's clock. */
	{ RS_LIB_MPI, RS_OP_SEND, "MPI_Send", 2, 3, 6, 0, 4, MSEQ, 0, 1, 0 },
	{ RS_LIB_MPI, RS_OP_RECV, "MPI_Recv", 2, 3, 6, 0, 4, MSEQ, 0, 0, 1 },

	/* gloo::X(XOptions&): arguments live inside an opaque C++ object; C++ throws (CXX). */
	{ RS_LIB_GLOO, RS_OP_ALLREDUCE, "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_ALLGATHER, "_ZN4gloo9allgatherERNS_16AllgatherOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_ALLGATHER, "_ZN4gloo10allgathervERNS_17AllgathervOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_BROADCAST, "_ZN4gloo9broadcastERNS_16BroadcastOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_BARRIER, "_ZN4gloo7barrierERNS_14BarrierOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_REDUCE, "_ZN4gloo6reduceERNS_13ReduceOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_GATHER, "_ZN4gloo6gatherERNS_13GatherOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_SCATTER, "_ZN4gloo7scatterERNS_14ScatterOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_GLOO, RS_OP_ALLTOALL, "_ZN4gloo8alltoallERNS_15AlltoallOptionsE", 0, 0, 0, 0, 0, CXX, 0, 0, 0 },

	/* DDP step markers: arg1 is the Reducer (this), one per model. */
	{ RS_LIB_TORCH, RS_OP_STEP_FORWARD, "_ZN4c10d7Reducer19prepare_for_forwardEv", 0, 0, 1, 0, 0, CXX, 0, 0, 0 },
	{ RS_LIB_TORCH, RS_OP_STEP_BACKWARD, "_ZN4c10d7Reducer17finalize_backwardEv", 0, 0, 1, 0, 0, RS_CKF_ENTRY, 0, 0, 0 },

	/* The host waiting for the GPU (gpu_wait): runtime and driver, stream or event as arg1.
	 * Not sequenced: they are not collectives. */
	{ RS_LIB_CUDART, RS_OP_GPU_SYNC, "cudaDeviceSynchronize", 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ RS_LIB_CUDART, RS_OP_GPU_SYNC, "cudaStreamSynchronize", 0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ RS_LIB_CUDART, RS_OP_GPU_SYNC, "cudaStreamSynchronize_ptsz", 0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ RS_LIB_CUDART, RS_OP_GPU_SYNC, "cudaEventSynchronize", 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ RS_LIB_CUDA, RS_OP_GPU_SYNC, "cuCtxSynchronize", 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ RS_LIB_CUDA, RS_OP_GPU_SYNC, "cuStreamSynchronize", 0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ RS_LIB_CUDA, RS_OP_GPU_SYNC, "cuStreamSynchronize_ptsz", 0, 0, 0, 1, 0, 0, 0, 0, 0 },
	{ RS_LIB_CUDA, RS_OP_GPU_SYNC, "cuEventSynchronize", 0, 0, 0, 0, 0, 0, 0, 0, 0 },
};
const int coll_apis_n = sizeof(coll_apis) / sizeof(coll_apis[0]);

uint64_t libs__cookie(const struct coll_api *a)
{
	return rs_cookie(a->op, a->lib, a->count, a->dtype, a->comm, a->stream, a->peer, a->flags,
			 a->redop, a->sendbuf, a->recvbuf);
}

/* "libfoo.so" or "libfoo.so.<anything>" */
static bool soname_is(const char *base, const char *stem)
{
	size_t n = strlen(stem);

	return !strncmp(base, stem, n) && (base[n] == '\0' || base[n] == '.');
}

enum rs_lib libs__classify(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (soname_is(base, "libnccl.so"))
		return RS_LIB_NCCL;
	if (soname_is(base, "libmpi.so"))
		return RS_LIB_MPI;
	if (soname_is(base, "libgloo.so"))
		return RS_LIB_GLOO;
	if (soname_is(base, "libtorch_cpu.so"))
		return RS_LIB_TORCH;
	if (soname_is(base, "libcudart.so"))
		return RS_LIB_CUDART;
	if (soname_is(base, "libcuda.so"))
		return RS_LIB_CUDA;
	return RS_LIB_NONE;
}

/* Cut a trailing " (deleted)" off path (its length in *len). */
static bool cut_deleted(char *path, size_t *len)
{
	static const char tail[] = " (deleted)";
	const size_t n = sizeof(tail) - 1;

	if (*len <= n || strcmp(path + *len - n, tail))
		return false;
	*len -= n;
	path[*len] = '\0';
	return true;
}

int libs__scan_maps(const char *maps, struct proc_libs *out)
{
	const char *line = maps, *nl;
	struct proc_map m;
	struct proc_lib *pl;
	char buf[PATH_MAX + 256];
	size_t n, plen;
	enum rs_lib lib;
	bool deleted;
	int found = 0;

	memset(out, 0, sizeof(*out));
	for (; *line; line = nl ? nl + 1 : line + n) {
		nl = strchr(line, '\n');
		n = nl ? (size_t)(nl - line) : strlen(line);
		if (n >= sizeof(buf))
			continue;
		memcpy(buf, line, n);
		buf[n] = '\0';
		if (procfs__parse_maps_line(buf, &m) || m.path[0] != '/' || !m.inode)
			continue;
		plen = strlen(m.path);
		/* replaced or removed on disk since mapping (an upgrade under a running job): the
		 * path no longer names what runs, the mapping itself (map_files) still does */
		deleted = cut_deleted(buf + (m.path - buf), &plen);
		lib = libs__classify(m.path);
		if (lib == RS_LIB_NONE || plen >= PATH_MAX)
			continue;
		pl = &out->lib[lib];
		if (pl->found && (pl->inode != m.inode || pl->start <= m.start))
			continue;	/* keep the first library of a kind, at its lowest mapping */
		if (!pl->found)
			found++;
		pl->found = true;
		pl->deleted = deleted;
		memcpy(pl->path, m.path, plen + 1);
		pl->dev = makedev(m.dev_major, m.dev_minor);
		pl->inode = m.inode;
		pl->start = m.start;
		pl->end = m.end;
		pl->pgoff = m.pgoff;
	}
	return found;
}

int libs__discover(pid_t pid, struct proc_libs *out)
{
	char *maps;
	ssize_t n;
	int found;

	n = procfs__read(pid, "maps", &maps, PROC_MAPS_MAX);
	if (n < 0)
		return n;
	found = libs__scan_maps(maps, out);
	free(maps);
	return found;
}

/* The lowest mapping of the first file pid mapped that match() accepts. */
static int find_mapping(pid_t pid, bool (*match)(const char *path, const void *arg),
			const void *arg, struct proc_lib *out)
{
	char line[PATH_MAX + 256];
	const char *p, *nl;
	struct proc_map m;
	char *maps;
	ssize_t n;
	size_t len, plen;
	bool deleted;

	memset(out, 0, sizeof(*out));
	n = procfs__read(pid, "maps", &maps, PROC_MAPS_MAX);
	if (n < 0)
		return n;
	for (p = maps; *p; p = nl ? nl + 1 : p + len) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (len >= sizeof(line))
			continue;
		memcpy(line, p, len);
		line[len] = '\0';
		if (procfs__parse_maps_line(line, &m) || m.path[0] != '/' || !m.inode)
			continue;
		plen = strlen(m.path);
		deleted = cut_deleted(line + (m.path - line), &plen);
		if (!match(m.path, arg))
			continue;
		if (out->found && (out->inode != m.inode || out->start <= m.start))
			continue;
		out->found = true;
		out->deleted = deleted;
		snprintf(out->path, sizeof(out->path), "%s", m.path);
		out->dev = makedev(m.dev_major, m.dev_minor);
		out->inode = m.inode;
		out->start = m.start;
		out->end = m.end;
		out->pgoff = m.pgoff;
	}
	free(maps);
	return out->found ? 0 : -ENOENT;
}

static bool name_starts(const char *path, const void *stem)
{
	const char *base = strrchr(path, '/') + 1;

	return !strncmp(base, stem, strlen(stem));
}

static bool same_path(const char *path, const void *want)
{
	return !strcmp(path, want);
}

int libs__find_mapped(pid_t pid, const char *stem, struct proc_lib *out)
{
	return find_mapping(pid, name_starts, stem, out);
}

int libs__exe(pid_t pid, struct proc_lib *out)
{
	char link[64], exe[PATH_MAX];
	size_t len;
	ssize_t n;

	memset(out, 0, sizeof(*out));
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	len = n;
	cut_deleted(exe, &len);
	return find_mapping(pid, same_path, exe, out);
}

static const char *const refusal_names[LR_MAX] = {
	[LR_NONE] = "none",
	[LR_DELETED] = "deleted",
	[LR_UNRESOLVED] = "unresolved",
	[LR_NOT_REGULAR] = "not_regular",
	[LR_OTHER_FILE] = "other_file",
};

static const char *const error_names[LE_MAX] = {
	[LE_SYMBOL_NOT_FOUND] = "symbol_not_found",
	[LE_NOT_MAPPED_FILE] = "not_mapped_file",
	[LE_BAD_ELF] = "bad_elf",
	[LE_FD_LIMIT] = "fd_limit",
	[LE_GONE] = "gone",
	[LE_SECCOMP] = "seccomp",
	[LE_OTHER] = "other",
};

const char *libs__refusal_name(enum lib_refusal r)
{
	return r < LR_MAX ? refusal_names[r] : "unknown";
}

const char *libs__error_name(enum lib_error e)
{
	return e < LE_MAX ? error_names[e] : "unknown";
}

enum lib_error libs__error_kind(int err)
{
	switch (-err) {
	case ENOENT:
		return LE_SYMBOL_NOT_FOUND;
	case ESTALE:
		return LE_NOT_MAPPED_FILE;
	case ENOEXEC:
	case ERANGE:
	case EFBIG:
		return LE_BAD_ELF;
	case EMFILE:
	case ENFILE:
		return LE_FD_LIMIT;
	case ESRCH:
		return LE_GONE;
	case ENOTSUP:
		return LE_SECCOMP;
	default:
		return LE_OTHER;
	}
}

/* LR_NONE if fd is the regular file pl maps, else why not. */
static enum lib_refusal check_file(int fd, const struct proc_lib *pl)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return LR_NOT_REGULAR;
	if (st.st_ino != pl->inode || (pl->dev && st.st_dev != pl->dev))
		return LR_OTHER_FILE;
	return LR_NONE;
}

/* Reopen an O_PATH fd for reading once it is known to be the mapped regular file: opening
 * the unchecked path could have hit a device node or a FIFO. Closes opath. */
static int reopen_checked(int opath, const struct proc_lib *pl, enum lib_refusal *why)
{
	char self[64];
	int fd;

	*why = check_file(opath, pl);
	if (*why != LR_NONE) {
		close(opath);
		return -ESTALE;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", opath);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		fd = -errno;
	close(opath);
	return fd;
}

/* The path as pid sees it, resolved inside its root; -errno, *why set, if not the file. */
static int open_in_root(pid_t pid, const struct proc_lib *pl, enum lib_refusal *why)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char path[64];
	int rfd, fd;

	*why = LR_UNRESOLVED;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	rfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = syscall(SYS_openat2, rfd, pl->path, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(rfd);
	return fd < 0 ? fd : reopen_checked(fd, pl, why);
}

int libs__open_mapped(pid_t pid, const struct proc_lib *pl, const char **via,
		      enum lib_refusal *refused)
{
	enum lib_refusal why = LR_DELETED, unused;
	char path[64];
	int fd;

	if (pl->path[0] != '/')
		return -EINVAL;
	if (!pl->deleted) {
		fd = open_in_root(pid, pl, &why);
		if (fd >= 0 || fd == -EMFILE || fd == -ENFILE) {
			*via = "root";
			if (refused)
				*refused = LR_NONE;
			return fd;
		}
	}
	if (refused)
		*refused = why;
	/* overlayfs shows another inode through the path, a deleted file has none: map_files
	 * is the mapping itself */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)pl->start, (unsigned long long)pl->end);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	fd = reopen_checked(fd, pl, &unused);
	if (fd >= 0)
		*via = "map_files";
	return fd;
}

struct resolve_ctx {
	struct elfsym *e;
	unsigned int lib;
	struct probe_site *sites;
	bool *seen;
	int n;
};

static int resolve_cb(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *vctx)
{
	struct resolve_ctx *c = vctx;
	struct probe_site *s;
	int i;

	if (!is_func)
		return 0;
	for (i = 0; i < coll_apis_n; i++) {
		if (coll_apis[i].lib != c->lib || c->seen[i] || strcmp(coll_apis[i].sym, name))
			continue;
		s = &c->sites[c->n];
		if (elfsym__probe_offset(c->e, vaddr, &s->offset, &s->skipped_endbr))
			return 0;
		s->api = &coll_apis[i];
		c->seen[i] = true;
		c->n++;
	}
	return 0;
}

int libs__resolve(const char *host_path, const struct proc_lib *pl, unsigned int lib,
		  struct probe_site *sites)
{
	struct resolve_ctx c = { .lib = lib, .sites = sites };
	uint64_t dev, ino;
	int err;

	err = elfsym__open(host_path, &c.e);
	if (err)
		return err;
	elfsym__ident(c.e, &dev, &ino);
	/* the path must still name the inode the process mapped (no swap behind our back) */
	if (ino != pl->inode || (pl->dev && dev != pl->dev)) {
		err = -ESTALE;
		goto out;
	}
	c.seen = calloc(coll_apis_n, sizeof(bool));
	if (!c.seen) {
		err = -ENOMEM;
		goto out;
	}
	err = elfsym__foreach(c.e, resolve_cb, &c);
	free(c.seen);
	if (!err)
		err = c.n;
out:
	elfsym__free(c.e);
	return err;
}
