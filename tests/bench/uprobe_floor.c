// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* uprobe_floor.c - attaches the empty uprobe + uretprobe pair to one function of one process */
/*
 *   uprobe_floor -p PID -l LIBRARY -s SYMBOL
 *
 * Prints "uprobe_floor: attached ..." on stdout once both probes are live, then holds them
 * until PID exits or SIGINT/SIGTERM arrives. Exit status: 0 on a clean detach, 1 on any error.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <libelf.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "uprobe_floor.skel.h"

/*
 * Returns the file offset of SYMBOL's code in LIB (what a uprobe is attached at), or -errno.
 * A defined STT_FUNC in .dynsym or .symtab; its address is mapped to the file through the
 * PT_LOAD segment that holds it (MPI_Allreduce is a weak alias at PMPI_Allreduce's address).
 */
static long elf__func_offset(const char *lib, const char *sym)
{
	long off = -ENOENT;
	GElf_Addr addr = 0;
	Elf_Scn *scn = NULL;
	size_t i, nphdr;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(lib, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		off = -EINVAL;
		goto out_fd;
	}
	while (!addr && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(data, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (name && !strcmp(name, sym)) {
				addr = s.st_value;
				break;
			}
		}
	}
	if (!addr)
		goto out_elf;
	if (elf_getphdrnum(elf, &nphdr)) {
		off = -EINVAL;
		goto out_elf;
	}
	off = -ERANGE;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_filesz) {
			off = (long)(addr - ph.p_vaddr + ph.p_offset);
			break;
		}
	}
out_elf:
	elf_end(elf);
out_fd:
	close(fd);
	return off;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, args) : 0;
}

/* Returns 0 once PID has exited or a stop signal came, -errno if waiting itself failed. */
static int wait_target(int pid)
{
	struct pollfd fds[2];
	sigset_t mask;
	int err = 0;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	fds[0].fd = signalfd(-1, &mask, SFD_CLOEXEC);
	fds[1].fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fds[0].fd < 0 || fds[1].fd < 0) {
		err = -errno;
		goto out;
	}
	fds[0].events = fds[1].events = POLLIN;
	while (poll(fds, 2, -1) < 0) {
		if (errno != EINTR) {
			err = -errno;
			break;
		}
	}
out:
	if (fds[0].fd >= 0)
		close(fds[0].fd);
	if (fds[1].fd >= 0)
		close(fds[1].fd);
	return err;
}

int main(int argc, char **argv)
{
	struct bpf_link *enter = NULL, *exit_ = NULL;
	const char *lib = NULL, *sym = NULL;
	struct uprobe_floor_bpf *skel;
	sigset_t mask;
	int pid = 0, c, err;
	long off;

	while ((c = getopt(argc, argv, "p:l:s:")) != -1) {
		switch (c) {
		case 'p': pid = atoi(optarg); break;
		case 'l': lib = optarg; break;
		case 's': sym = optarg; break;
		default: pid = -1; break;
		}
	}
	if (pid <= 0 || !lib || !sym || optind != argc) {
		fprintf(stderr, "usage: %s -p PID -l LIBRARY -s SYMBOL\n", argv[0]);
		return 1;
	}
	/* Blocked before attaching, so a SIGTERM from bench.sh's cleanup always detaches cleanly. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	off = elf__func_offset(lib, sym);
	if (off < 0) {
		fprintf(stderr, "uprobe_floor: failed to find function '%s' in '%s': %s; "
			"is it an exported function of that file?\n", sym, lib, strerror((int)-off));
		return 1;
	}
	libbpf_set_print(libbpf_quiet);
	skel = uprobe_floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "uprobe_floor: failed to load the BPF programs: %s; "
			"run as root or grant CAP_BPF+CAP_PERFMON\n", strerror(errno));
		return 1;
	}
	enter = bpf_program__attach_uprobe(skel->progs.floor_enter, false, pid, lib, (size_t)off);
	err = enter ? 0 : -errno;
	if (!err) {
		exit_ = bpf_program__attach_uprobe(skel->progs.floor_exit, true, pid, lib,
						   (size_t)off);
		err = exit_ ? 0 : -errno;
	}
	if (err) {
		fprintf(stderr, "uprobe_floor: failed to attach uprobe '%s+0x%lx' to pid %d: %s; "
			"is PID %d still alive?\n", lib, off, pid, strerror(-err), pid);
		goto out;
	}
	printf("uprobe_floor: attached pid=%d lib=%s sym=%s off=0x%lx\n", pid, lib, sym, off);
	fflush(stdout);

	err = wait_target(pid);
	if (err)
		fprintf(stderr, "uprobe_floor: failed to wait for pid %d: %s\n", pid, strerror(-err));
out:
	bpf_link__destroy(exit_);
	bpf_link__destroy(enter);
	uprobe_floor_bpf__destroy(skel);
	return err ? 1 : 0;
}
