/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Python frames at capture stack samples: bpf/pysample.bpf.c attached to the capture's perf
 * events, fed the thread states of the ranks that run CPython 3.11, its records drained on
 * the loop's timer (they are submitted without wakeups). Loaded only for a capture with a
 * Python rank, and gone with it.
 */
#ifndef RS_PROBE_PYSAMPLE_H
#define RS_PROBE_PYSAMPLE_H

#include <stdint.h>
#include <linux/types.h>
#include "pysample.h"

struct pysample;

/* Load the program. Returns 0, or -errno with *why saying what failed. */
int pysample__open(struct pysample **out, const char **why);
/* Run it at each sample of the perf event fd (fd itself stays the caller's). */
int pysample__attach(struct pysample *ps, int perf_fd);
/* Thread tid runs Python with thread state tstate. */
int pysample__thread(struct pysample *ps, uint32_t tid, uint64_t tstate);
typedef void (*pysample_fn)(void *ctx, const struct pys_rec *r);
/* Hand every record the ring holds to fn. Returns how many. */
int pysample__poll(struct pysample *ps, pysample_fn fn, void *ctx);
/* Records the ring had no room for. */
uint64_t pysample__drops(struct pysample *ps);
void pysample__close(struct pysample *ps);

#endif /* RS_PROBE_PYSAMPLE_H */
