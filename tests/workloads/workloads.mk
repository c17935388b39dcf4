# workloads.mk - make fragment building the rankscope accuracy workloads (tests/workloads)
#
# Included by the top-level Makefile (next to tests/fixtures/fixtures.mk), or run standalone:
#
#   make -f tests/workloads/workloads.mk WORKLOADS_DIR=build/workloads
#
# Defines WORKLOADS_BIN (every output), the phony targets "workloads" and "workloads-clean",
# and nothing else global: helper variables start with WL_ (the includer's CFLAGS are not used).
# tests/workloads/check_truth.py is used in place (python3, stdlib only).

WORKLOADS_DIR ?= $(if $(OUTPUT),$(OUTPUT),build)/workloads
MPICC ?= mpicc

WL_SRC := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
WL_CFLAGS := -O2 -g -Wall -Wextra
WL_COMMON_H := $(WL_SRC)/../fixtures/fixture_common.h

WORKLOADS_BIN := $(WORKLOADS_DIR)/zoo_mpi

# Put the includer's default goal back at the end (as fixtures.mk does).
WL_SAVED_GOAL := $(.DEFAULT_GOAL)

.PHONY: workloads workloads-clean
workloads: $(WORKLOADS_BIN)

workloads-clean:
	rm -rf $(WORKLOADS_DIR)

# One program from two files (the options, setup and loop; the step structures), one header.
WL_ZOO_SRCS := $(WL_SRC)/zoo_mpi.c $(WL_SRC)/zoo_shapes.c

$(WORKLOADS_DIR)/zoo_mpi: $(WL_ZOO_SRCS) $(WL_SRC)/zoo_mpi.h $(WL_COMMON_H)
	@mkdir -p $(@D)
	$(MPICC) $(WL_CFLAGS) -o $@ $(WL_ZOO_SRCS)

ifneq ($(words $(MAKEFILE_LIST)),1)
.DEFAULT_GOAL := $(WL_SAVED_GOAL)
endif
