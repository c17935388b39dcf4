# rankscope: one entry point. `make`, `make check`, `make demo`, `make bench`, `make deps`.
MAKEFLAGS += -r
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:

OUTPUT    := build
OBJ       := $(OUTPUT)/obj
ARCH      := x86
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
FAMILIES  := sched io net collectives

CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP
CFLAGS    += -I$(OBJ)/bpf -iquote bpf -iquote user -iquote cupti -D_GNU_SOURCE
ifeq ($(CI),true)
CFLAGS    += -Werror
endif
LDLIBS    := -lbpf -lelf -lz -lm -lmicrohttpd -lpthread
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf \
	      -I/usr/include/$(shell uname -m)-linux-gnu -Wall -Wno-unused-function

SKELS     := $(patsubst %,$(OBJ)/bpf/%.skel.h,$(FAMILIES))
# generated once, kept: not intermediates for make to delete after each build
.SECONDARY: $(SKELS) $(patsubst %,$(OBJ)/bpf/%.bpf.o,$(FAMILIES))
# Kernel-free modules: unit-tested without root.
LIB_SRCS  := $(filter-out user/main.c user/cmd_%.c user/probe_%.c user/probes.c user/session.c,$(wildcard user/*.c))
APP_SRCS  := $(filter-out $(LIB_SRCS),$(wildcard user/*.c))
LIB_OBJS  := $(patsubst user/%.c,$(OBJ)/user/%.o,$(LIB_SRCS))
APP_OBJS  := $(patsubst user/%.c,$(OBJ)/user/%.o,$(APP_SRCS))
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(wildcard tests/unit/test_*.c))

FIXDIR    := $(OUTPUT)/fixtures

# The CUPTI injection library: CUPTI's headers from the CUDA toolkit, CUPTI itself at run time.
CUDA_HOME ?= /usr/local/cuda
CUPTI_INC := $(firstword $(wildcard $(CUDA_HOME)/include/cupti.h $(CUDA_HOME)/extras/CUPTI/include/cupti.h))
CUPTI_LIB := $(if $(CUPTI_INC),$(OUTPUT)/librankscope_cupti.so)
CUPTI_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -fPIC -fvisibility=hidden \
		-MMD -MP -iquote cupti -I$(dir $(CUPTI_INC)) -I$(CUDA_HOME)/include -D_GNU_SOURCE
ifeq ($(CI),true)
CUPTI_CFLAGS += -Werror
endif

# libFuzzer harnesses (tests/fuzz), with ASan and UBSan; left out when clang lacks libFuzzer.
FUZZ_BINS := $(if $(shell echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' | \
		$(CLANG) -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null && echo y),\
		$(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c)))

$(OUTPUT)/fuzz/fuzz_gpu_wire: tests/fuzz/fuzz_gpu_wire.c user/gpu_wire.c user/gpu.c | $(OUTPUT)/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-iquote user -iquote cupti -D_GNU_SOURCE $^ -o $@

$(OUTPUT)/fuzz/fuzz_hub: tests/fuzz/fuzz_hub.c user/hub.c user/jsonp.c user/json.c user/prom.c \
		user/report.c user/detect.c user/steps.c user/gpu.c user/gpu_wire.c user/decode.c \
		user/ranks.c user/procfs.c | $(OUTPUT)/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-iquote user -iquote cupti -iquote bpf -I$(OBJ)/bpf -D_GNU_SOURCE $^ -lm -o $@

fuzz: $(FUZZ_BINS)

.PHONY: all deps check unit demo bench clean vmlinux fixtures fuzz
all: $(OUTPUT)/rankscope $(CUPTI_LIB)

$(OBJ)/cupti/%.o: cupti/%.c | $(OBJ)/cupti
	$(CC) $(CUPTI_CFLAGS) -c $< -o $@

$(OUTPUT)/librankscope_cupti.so: $(OBJ)/cupti/lib.o $(OBJ)/cupti/records.o cupti/exports.map
	$(CC) -shared -Wl,--version-script=cupti/exports.map -Wl,-z,defs -Wl,-z,now \
		$(OBJ)/cupti/lib.o $(OBJ)/cupti/records.o -ldl -lpthread -o $@

$(OBJ)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(OBJ)/bpf
	$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(OBJ)/bpf/%.skel.h: $(OBJ)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@

$(OBJ)/user/%.o: user/%.c | $(OBJ)/user $(SKELS)
	$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/rankscope: $(APP_OBJS) $(LIB_OBJS)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) | $(OUTPUT)/tests
	$(CC) $(CFLAGS) $< $(LIB_OBJS) $(LDLIBS) -lcmocka -o $@

$(OBJ)/bpf $(OBJ)/user $(OBJ)/cupti $(OUTPUT)/tests $(OUTPUT)/fuzz:
	mkdir -p $@

include tests/fixtures/fixtures.mk
include tests/fixtures/cupti_double/double.mk
include tests/bench/bench.mk
include tests/workloads/workloads.mk
fixtures: $(FIXTURES_BIN) $(CUPTI_FIXTURES) $(WORKLOADS_BIN)

# Every Debian package the build, the tests, the demo and the bench need; fast when present.
DEB_PKGS := clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev pkg-config \
	    libmicrohttpd-dev libcmocka-dev openmpi-bin libopenmpi-dev python3-torch bpftrace \
	    iproute2 procps prometheus yamllint chromium
deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${db:Status-Abbrev}' $$p 2>/dev/null | grep -q '^ii' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all present"; exit 0; fi; \
	echo "deps: installing$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -q && apt-get install -y -q --no-install-recommends $$missing

unit: $(UNIT_BINS)
	@for t in $(UNIT_BINS); do $$t || exit 1; done

check: deps
	$(MAKE) all fixtures $(UNIT_BINS) fuzz
	tests/run.sh

demo: deps
	$(MAKE) all fixtures
	tests/demo.sh

bench: deps
	$(MAKE) all fixtures bench-bin
	tests/bench/bench.sh

vmlinux:
	@mkdir -p $(OUTPUT)
	@$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(OUTPUT)/vmlinux.h.new
	@if cmp -s $(OUTPUT)/vmlinux.h.new vmlinux/$(ARCH)/vmlinux.h; then \
		echo "vmlinux: unchanged"; rm -f $(OUTPUT)/vmlinux.h.new; \
	else mv $(OUTPUT)/vmlinux.h.new vmlinux/$(ARCH)/vmlinux.h; echo "vmlinux: updated"; fi

clean:
	rm -rf $(OUTPUT)

-include $(wildcard $(OBJ)/user/*.d $(OBJ)/bpf/*.d $(OBJ)/cupti/*.d $(OUTPUT)/tests/*.d)
$(OBJ)/user/view.o: user/view.html
