/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Python frames at each capture stack sample (bpf/pysample.bpf.c): the frame chain of the
 * sampled thread's CPython 3.11 thread state, read in the kernel at the sample, since it is
 * gone by the time the capture is written. Names are looked up later from the code objects.
 */
#ifndef RS_PYSAMPLE_H
#define RS_PYSAMPLE_H

#define PYS_FRAMES	32	/* Python frames a sample; deeper ones are cut */
#define PYS_THREADS_MAX	4096	/* threads with a thread state, over all ranks */

struct pys_frame {
	__u64 code;		/* the PyCodeObject */
	__u64 prev_instr;	/* where in its code (the frame's prev_instr) */
	__u8 entry;		/* the outermost frame of its _PyEval_EvalFrameDefault */
	__u8 pad[7];
};

struct pys_rec {
	__u32 tid;
	__u32 nframes;
	__u64 t_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC, as the sample's time */
	__u8 truncated;
	__u8 pad[7];
	struct pys_frame f[PYS_FRAMES];
};

#endif /* RS_PYSAMPLE_H */
