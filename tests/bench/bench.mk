# bench.mk - make fragment building the helpers of tests/bench/bench.sh into $(BENCHDIR)
#
# Included by the top-level Makefile, or run standalone from anywhere:
#
#   make -f tests/bench/bench.mk [BENCHDIR=build/bench]
#
# Defines BENCH_BIN (every output), the phony targets "bench-bin" and "bench-clean", and
# nothing else global: helper variables start with BENCH_ so they cannot collide with the
# including Makefile's CFLAGS/LDLIBS (which are deliberately not used here).

BENCHDIR ?= build/bench
CC ?= gcc
MPICC ?= mpicc
CLANG ?= clang
BPFTOOL ?= bpftool

# Where this fragment lives, so that it works whatever directory make runs from.
BENCH_SRC := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
BENCH_OBJ := $(BENCHDIR)/obj
BENCH_VMLINUX := $(BENCH_SRC)/../../vmlinux/x86
BENCH_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter
BENCH_BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BENCH_VMLINUX) \
		    -I/usr/include/$(shell uname -m)-linux-gnu -Wall

BENCH_BIN := \
	$(BENCHDIR)/uprobe_floor \
	$(BENCHDIR)/hook_floor \
	$(BENCHDIR)/hookcost \
	$(BENCHDIR)/allreduce_ns

# "bench-bin" is the default goal only when this file is the whole makefile (see the end).
BENCH_SAVED_GOAL := $(.DEFAULT_GOAL)

.PHONY: bench-bin bench-clean
bench-bin: $(BENCH_BIN)

bench-clean:
	rm -rf $(BENCHDIR)

$(BENCH_OBJ)/uprobe_floor.bpf.o: $(BENCH_SRC)/uprobe_floor.bpf.c $(BENCH_VMLINUX)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BENCH_BPF_CFLAGS) -c $< -o $@

# Via a temporary file: a failed bpftool must not leave a half skeleton that looks up to date.
$(BENCH_OBJ)/uprobe_floor.skel.h: $(BENCH_OBJ)/uprobe_floor.bpf.o
	$(BPFTOOL) gen skeleton $< name uprobe_floor_bpf > $@.tmp
	mv $@.tmp $@

$(BENCHDIR)/uprobe_floor: $(BENCH_SRC)/uprobe_floor.c $(BENCH_OBJ)/uprobe_floor.skel.h
	$(CC) $(BENCH_CFLAGS) -I$(BENCH_OBJ) -o $@ $< -lbpf -lelf -lz

$(BENCH_OBJ)/hook_floor.bpf.o: $(BENCH_SRC)/hook_floor.bpf.c $(BENCH_VMLINUX)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BENCH_BPF_CFLAGS) -c $< -o $@

$(BENCH_OBJ)/hook_floor.skel.h: $(BENCH_OBJ)/hook_floor.bpf.o
	$(BPFTOOL) gen skeleton $< name hook_floor_bpf > $@.tmp
	mv $@.tmp $@

$(BENCHDIR)/hook_floor: $(BENCH_SRC)/hook_floor.c $(BENCH_OBJ)/hook_floor.skel.h
	$(CC) $(BENCH_CFLAGS) -I$(BENCH_OBJ) -o $@ $< -lbpf -lelf -lz

$(BENCHDIR)/hookcost: $(BENCH_SRC)/hookcost.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ $< -lpthread

$(BENCHDIR)/allreduce_ns: $(BENCH_SRC)/allreduce_ns.c
	@mkdir -p $(@D)
	$(MPICC) $(BENCH_CFLAGS) -o $@ $<

# Last, after every rule of this file: if the includer had no goal yet, the empty value
# lets its next rule become the default goal, as if this file had not been included.
ifneq ($(words $(MAKEFILE_LIST)),1)
.DEFAULT_GOAL := $(BENCH_SAVED_GOAL)
endif
