// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The cheapest possible enter/exit probe pair: what any uprobe-based collective tracer pays
 * per call before it does any work. bench.sh compares rankscope's collective probes to this.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Attached by hand (pid, library, file offset) from uprobe_floor.c, hence no target here. */
SEC("uprobe")
int floor_enter(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_exit(void *ctx)
{
	return 0;
}
