// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Empty tp_btf programs on every global hook rankscope's sched, io and net families use: what
 * any tracer pays per event on those hooks before its first instruction. bench.sh part 10
 * compares what rankscope costs processes it does not track to this floor.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_wakeup) { return 0; }

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(floor_wakeup_new) { return 0; }

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch) { return 0; }

SEC("tp_btf/sched_process_fork")
int BPF_PROG(floor_fork) { return 0; }

SEC("tp_btf/sched_process_exit")
int BPF_PROG(floor_exit) { return 0; }

SEC("tp_btf/sched_process_exec")
int BPF_PROG(floor_exec) { return 0; }

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_sys_enter) { return 0; }

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_sys_exit) { return 0; }

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(floor_retransmit) { return 0; }

SEC("tp_btf/tcp_probe")
int BPF_PROG(floor_tcp_probe) { return 0; }

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(floor_sock_state) { return 0; }
