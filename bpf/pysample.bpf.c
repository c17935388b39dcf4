// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Attached to each capture's cpu-clock perf events (user/capture/stacks.c): at a sample of a
 * thread that runs Python (its thread state is in pys_tstate, put there by user space from
 * the interpreter's list), the chain of its _PyInterpreterFrames: each frame's code object,
 * position and entry flag. The perf sample itself is left to go out as it would (return 1).
 * Offsets are CPython 3.11's, generated from python3.11-dev at build time.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "py311_offsets.h"
#include "pysample.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYS_THREADS_MAX);
	__type(key, __u32);	/* tid */
	__type(value, __u64);	/* its PyThreadState */
} pys_tstate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 21);
} pys_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pys_drops SEC(".maps");

SEC("perf_event")
int pys_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0;
	__u64 *ts = bpf_map_lookup_elem(&pys_tstate, &tid), cframe = 0, frame = 0, *drops;
	struct pys_rec *r;
	__u8 fr[PY_FRAME_SIZE];
	int i;

	if (!ts)
		return 1;
	r = bpf_ringbuf_reserve(&pys_ring, sizeof(*r), 0);
	if (!r) {
		drops = bpf_map_lookup_elem(&pys_drops, &zero);
		if (drops)
			(*drops)++;
		return 1;
	}
	r->tid = tid;
	r->t_ns = bpf_ktime_get_ns();
	r->nframes = 0;
	r->truncated = 0;
	if (bpf_probe_read_user(&cframe, sizeof(cframe), (void *)(*ts + PY_OFF_TSTATE_CFRAME)) ||
	    bpf_probe_read_user(&frame, sizeof(frame), (void *)(cframe + PY_OFF_CFRAME_CURRENT)))
		frame = 0;
	for (i = 0; i < PYS_FRAMES && frame; i++) {
		if (bpf_probe_read_user(fr, sizeof(fr), (void *)frame))
			break;
		r->f[i].code = *(__u64 *)(fr + PY_OFF_FRAME_CODE);
		r->f[i].prev_instr = *(__u64 *)(fr + PY_OFF_FRAME_PREV_INSTR);
		r->f[i].entry = fr[PY_OFF_FRAME_IS_ENTRY];
		r->nframes = i + 1;
		frame = *(__u64 *)(fr + PY_OFF_FRAME_PREVIOUS);
	}
	r->truncated = frame && i == PYS_FRAMES;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 1;
}
