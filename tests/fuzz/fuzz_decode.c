// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the ring-buffer record decoder (user/util/decode.c) and the names the
 * daemon gives a record's enums, on records of any length and content. A record it accepts
 * must fit what was read and name a known family. Built with ASan and UBSan.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_event ev;
	char addr[64];
	uint8_t *copy;
	int fam;

	/* an exact-size heap copy: ASan sees any read past the record */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (decode__event(copy, size, &ev)) {
		free(copy);
		return 0;
	}
	if (ev.h.size > size || ev.kind != ev.h.kind)
		abort();
	fam = decode__family(ev.kind);
	if (fam < 0 || fam >= RS_FAM_MAX || !decode__family_name(fam))
		abort();
	switch (ev.kind) {
	case RS_EV_COLL:
		if (!decode__op_name(ev.coll.op) || !decode__lib_name(ev.coll.lib))
			abort();
		(void)decode__nccl_dtype_size(ev.coll.dtype);
		break;
	case RS_EV_IO:
		if (!decode__fd_kind_name(ev.io.fd_kind) || !decode__io_op_name(ev.io.op))
			abort();
		break;
	case RS_EV_TCP_STATE:
	case RS_EV_TCP_RETRANS:
		if (!decode__tcp_state_name(ev.tcp.newstate) ||
		    !decode__tcp_state_name(ev.tcp.oldstate) ||
		    !decode__addr(ev.tcp.daddr, addr, sizeof(addr)) ||
		    strnlen(addr, sizeof(addr)) == sizeof(addr))
			abort();
		break;
	case RS_EV_OFFCPU:
		(void)decode__syscall_name(ev.offcpu.syscall);
		break;
	default:
		break;
	}
	free(copy);
	return 0;
}
