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
FAMILIES  := sched io net collectives pysample

CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP
CFLAGS    += -I$(OBJ)/bpf -I$(OBJ)/gen -iquote bpf -iquote cupti -D_GNU_SOURCE
ifeq ($(CI),true)
CFLAGS    += -Werror
endif
LDLIBS    := -lbpf -ldw -lelf -lz -lm -lmicrohttpd -lpthread
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -I$(OBJ)/gen \
	      -I/usr/include/$(shell uname -m)-linux-gnu -Wall -Wno-unused-function

SKELS     := $(patsubst %,$(OBJ)/bpf/%.skel.h,$(FAMILIES))
# generated once, kept: not intermediates for make to delete after each build
.SECONDARY: $(SKELS) $(patsubst %,$(OBJ)/bpf/%.bpf.o,$(FAMILIES))
# user/ is one folder per layer, one static library each (docs/layout.md). A folder sees only
# the headers of the folders it may use (each also sees bpf/ and cupti/, the wire structs), so
# a wrong include fails the build; libraries link in this order, so a call upwards fails too.
USER_DIRS   := node hub replay serve capture probe gpu sys model util
DEPS_util    := util
DEPS_model   := model util
DEPS_sys     := sys util
DEPS_gpu     := gpu util
DEPS_probe   := probe sys util
DEPS_capture := capture model sys util
DEPS_serve   := serve capture model sys util
DEPS_hub     := hub serve capture model sys util
DEPS_replay  := replay serve capture model sys util
DEPS_node    := node hub serve capture model probe gpu sys util
DEPS_cli     := cli $(USER_DIRS)
USER_LIBS := $(foreach d,$(USER_DIRS),$(OBJ)/lib$(d).a)
CLI_OBJS  := $(patsubst user/%.c,$(OBJ)/user/%.o,$(wildcard user/cli/*.c))
ALL_IQUOTE := $(foreach d,cli $(USER_DIRS),-iquote user/$(d))
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

$(OUTPUT)/fuzz/fuzz_gpu_wire: tests/fuzz/fuzz_gpu_wire.c user/gpu/gpu_wire.c user/gpu/gpu.c | $(OUTPUT)/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-iquote user/gpu -iquote cupti -D_GNU_SOURCE $^ -o $@

$(OUTPUT)/fuzz/fuzz_hub: tests/fuzz/fuzz_hub.c user/hub/hub.c user/hub/hublife.c user/util/jsonp.c \
		user/util/json.c \
		user/util/utf8.c \
		user/util/prom.c user/serve/report.c user/model/detect.c user/model/steps.c \
		user/model/cost.c user/util/hist.c \
		user/sys/comms.c user/sys/elfsym.c \
		user/util/decode.c | $(OUTPUT)/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		$(ALL_IQUOTE) -iquote cupti -iquote bpf -I$(OBJ)/bpf -D_GNU_SOURCE $^ -lelf -lm -o $@

$(OUTPUT)/fuzz/fuzz_hubcap: tests/fuzz/fuzz_hubcap.c user/hub/hubcap.c user/util/jsonp.c \
		user/util/utf8.c \
		user/util/json.c user/capture/trace.c user/model/detect.c user/model/steps.c \
		user/sys/comms.c user/sys/elfsym.c \
		user/util/decode.c | $(OUTPUT)/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		$(ALL_IQUOTE) -iquote cupti -iquote bpf -I$(OBJ)/bpf -D_GNU_SOURCE $^ -lelf -lz -lm -o $@

$(OUTPUT)/fuzz/fuzz_pyframes: tests/fuzz/fuzz_pyframes.c user/sys/pyframes.c user/sys/procfs.c \
		$(OBJ)/gen/py311_offsets.h | $(OUTPUT)/fuzz
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-iquote user/sys -I$(OBJ)/gen -D_GNU_SOURCE $(filter %.c,$^) -o $@

FUZZ_CC = $(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(ALL_IQUOTE) -iquote cupti -iquote bpf -I$(OBJ)/bpf -D_GNU_SOURCE

$(OUTPUT)/fuzz/fuzz_decode: tests/fuzz/fuzz_decode.c user/util/decode.c | $(OUTPUT)/fuzz
	$(FUZZ_CC) $^ -o $@

$(OUTPUT)/fuzz/fuzz_elfsym: tests/fuzz/fuzz_elfsym.c user/sys/elfsym.c | $(OUTPUT)/fuzz
	$(FUZZ_CC) $^ -lelf -o $@

$(OUTPUT)/fuzz/fuzz_k8s: tests/fuzz/fuzz_k8s.c user/sys/k8s.c user/sys/procfs.c \
		user/util/jsonp.c | $(OUTPUT)/fuzz
	$(FUZZ_CC) $^ -o $@

$(OUTPUT)/fuzz/fuzz_procfs: tests/fuzz/fuzz_procfs.c user/sys/procfs.c user/sys/libs.c \
		user/sys/ranks.c user/sys/elfsym.c | $(OUTPUT)/fuzz
	$(FUZZ_CC) $^ -lelf -o $@

$(OUTPUT)/fuzz/fuzz_http: tests/fuzz/fuzz_http.c user/capture/capture.c user/sys/procfs.c \
		user/serve/httpd.c user/serve/view.c user/serve/report.c user/capture/trace.c \
		user/util/json.c user/util/utf8.c user/model/detect.c user/model/steps.c \
		user/model/cost.c user/util/hist.c user/util/prom.c \
		user/util/decode.c user/util/log.c user/sys/comms.c user/sys/elfsym.c \
		user/serve/view.html \
		| $(OUTPUT)/fuzz
	$(FUZZ_CC) $(filter %.c,$^) -lmicrohttpd -lelf -lz -lm -lpthread -o $@

$(OUTPUT)/fuzz/fuzz_prom: tests/fuzz/fuzz_prom.c user/util/prom.c user/util/utf8.c \
		tests/fuzz/fuzz_common.h | $(OUTPUT)/fuzz
	$(FUZZ_CC) $(filter %.c,$^) -lm -o $@

$(OUTPUT)/fuzz/fuzz_json: tests/fuzz/fuzz_json.c user/util/json.c user/util/jsonp.c \
		user/util/utf8.c tests/fuzz/fuzz_common.h | $(OUTPUT)/fuzz
	$(FUZZ_CC) $(filter %.c,$^) -lm -o $@

fuzz: $(FUZZ_BINS)

.PHONY: soak all deps check unit demo bench clean vmlinux fixtures fuzz fuzz-long layers sanitized
all: $(OUTPUT)/rankscope $(CUPTI_LIB)

$(OBJ)/cupti/%.o: cupti/%.c | $(OBJ)/cupti
	$(CC) $(CUPTI_CFLAGS) -c $< -o $@

CUPTI_OBJS := $(patsubst %,$(OBJ)/cupti/%.o,lib records timeline pool)
# --no-as-needed: an older glibc has the pthread and dl functions the library binds to (at their
# GLIBC_2.2.5 versions, cupti/glibc_compat.h) in libpthread.so.0 and libdl.so.2
$(OUTPUT)/librankscope_cupti.so: $(CUPTI_OBJS) cupti/exports.map
	$(CC) -shared -Wl,--version-script=cupti/exports.map -Wl,-z,defs -Wl,-z,now \
		$(CUPTI_OBJS) -Wl,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0 -Wl,--as-needed -o $@

$(OBJ)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(OBJ)/bpf
	$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(OBJ)/bpf/%.skel.h: $(OBJ)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@

define user_dir
$(OBJ)/user/$(1)/%.o: user/$(1)/%.c | $(OBJ)/user/$(1) $(SKELS)
	$$(CC) $$(CFLAGS) $(foreach x,$(DEPS_$(1)),-iquote user/$(x)) -c $$< -o $$@

$(OBJ)/lib$(1).a: $(patsubst user/%.c,$(OBJ)/user/%.o,$(wildcard user/$(1)/*.c))
	rm -f $$@ && ar rcs $$@ $$^

$(OBJ)/user/$(1):
	mkdir -p $$@
endef
$(foreach d,cli $(USER_DIRS),$(eval $(call user_dir,$(d))))

# CPython 3.11's struct layout, from python3.11-dev's internal headers (user/sys/pyframes.c).
PY311_INC ?= /usr/include/python3.11
$(OBJ)/gen/py311_offsets.h: user/sys/gen/pyoffsets.c
	@[ -f $(PY311_INC)/internal/pycore_frame.h ] || { echo "no CPython 3.11 headers in \
		$(PY311_INC): run 'make deps' (python3.11-dev) or set PY311_INC"; exit 1; }
	mkdir -p $(OBJ)/gen
	$(CC) -std=gnu11 -I$(PY311_INC) $< -o $(OBJ)/gen/pyoffsets
	$(OBJ)/gen/pyoffsets > $@
$(OBJ)/user/sys/pyframes.o $(OBJ)/bpf/pysample.bpf.o: $(OBJ)/gen/py311_offsets.h

$(OUTPUT)/rankscope: $(CLI_OBJS) $(USER_LIBS)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/tests/test_%: tests/unit/test_%.c $(USER_LIBS) | $(OUTPUT)/tests
	$(CC) $(CFLAGS) $(ALL_IQUOTE) $< $(USER_LIBS) $(LDLIBS) -lcmocka -o $@

# The layers below node/ and probe/ call neither libbpf nor libmicrohttpd (serve/ alone serves
# HTTP): what their libraries leave undefined says so.
layers: $(USER_LIBS)
	@for d in util model sys gpu capture hub replay serve; do \
		bad=$$(nm -u $(OBJ)/lib$$d.a | grep -E ' U (bpf_|bpf__|ring_buffer__|perf_buffer__|libbpf_)' ); \
		[ "$$d" = serve ] || bad="$$bad$$(nm -u $(OBJ)/lib$$d.a | grep -E ' U MHD_')"; \
		[ -z "$$bad" ] || { echo "layers: user/$$d calls what it must not:$$bad"; exit 1; }; \
	done; echo "layers: model, util, sys, gpu, capture, hub, replay and serve call no libbpf; only serve calls libmicrohttpd"

$(OBJ)/bpf $(OBJ)/cupti $(OUTPUT)/tests $(OUTPUT)/fuzz:
	mkdir -p $@

include tests/fixtures/fixtures.mk
include tests/fixtures/cupti_double/double.mk
include tests/bench/bench.mk
include tests/workloads/workloads.mk
fixtures: $(FIXTURES_BIN) $(CUPTI_FIXTURES) $(WORKLOADS_BIN)

# Every Debian package the build, the tests, the demo and the bench need; fast when present.
DEB_PKGS := clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev pkg-config \
	    libmicrohttpd-dev libcmocka-dev python3.11-dev openmpi-bin libopenmpi-dev python3-torch bpftrace libbpf-tools \
	    iproute2 procps util-linux strace prometheus yamllint chromium
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

# make check SANITIZE=1 (CI runs it after make check): rankscope and the unit tests built again
# with ASan and UBSan in build/asan; the unit tests and SANITIZE_E2E run on that rankscope, and
# a sanitizer report from any of them fails the run, whatever the test said. UBSan beside ASan
# (gcc) writes its reports to stderr whatever log_path says, where a test may never look: it
# stops the process instead (-fno-sanitize-recover), so the test fails with it.
SANITIZE_E2E := mpi_allreduce daemon capture hub nccl_double http_token stuck_first_look replay
ifeq ($(SAN),1)
CFLAGS    += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
LDFLAGS   += -fsanitize=address,undefined
endif

check: deps
ifeq ($(SANITIZE),1)
	$(MAKE) all fixtures
	$(MAKE) OUTPUT=build/asan SAN=1 sanitized
	tests/run.sh --sanitize build/asan $(SANITIZE_E2E)
else
	$(MAKE) all fixtures $(UNIT_BINS) fuzz layers
	tests/run.sh
endif

sanitized: $(OUTPUT)/rankscope $(UNIT_BINS)

# Each fuzzer for FUZZ_SECONDS (default 600) instead of make check's 20; not in make check.
fuzz-long: all fixtures fuzz
	@for t in tests/fuzz/*.sh; do \
		echo "== $$t"; FUZZ_SECONDS=$${FUZZ_SECONDS:-600} bash $$t || exit 1; \
	done

demo: deps
	$(MAKE) all fixtures
	tests/demo.sh

bench: deps
	$(MAKE) all fixtures bench-bin
	tests/bench/bench.sh

# SOAK_MINUTES (default 60) of a churning mix under one daemon; table and plot in build/soak.
# Not in make check.
soak: deps
	@command -v gnuplot >/dev/null || { export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q --no-install-recommends gnuplot-nox; }
	$(MAKE) all fixtures
	tests/bench/soak.sh

vmlinux:
	@mkdir -p $(OUTPUT)
	@$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(OUTPUT)/vmlinux.h.new
	@if cmp -s $(OUTPUT)/vmlinux.h.new vmlinux/$(ARCH)/vmlinux.h; then \
		echo "vmlinux: unchanged"; rm -f $(OUTPUT)/vmlinux.h.new; \
	else mv $(OUTPUT)/vmlinux.h.new vmlinux/$(ARCH)/vmlinux.h; echo "vmlinux: updated"; fi

clean:
	rm -rf $(OUTPUT)

-include $(wildcard $(OBJ)/user/*/*.d $(OBJ)/bpf/*.d $(OBJ)/cupti/*.d $(OUTPUT)/tests/*.d)
$(OBJ)/user/serve/view.o: user/serve/view.html
