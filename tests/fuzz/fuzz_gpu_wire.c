// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* libFuzzer harness: the daemon's decoder for CUPTI library messages, and what the daemon does
 * with what it accepts (names, per-rank accounting). Built with ASan and UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "gpu.h"
#include "gpu_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gpu_names names;	/* the names' text stays: bounded by the id range */
	static struct gpu_acc acc;
	struct gpu_msg m;
	struct rsc_rec r;
	uint32_t i;

	if (gpu_wire__decode(data, size, &m))
		return 0;
	switch (m.type) {
	case RSC_NAME:
		gpu_names__set(&names, m.name.id, m.name.text, m.name.len);
		break;
	case RSC_BATCH:
		for (i = 0; i < m.batch.nrec; i++)
			if (!gpu_wire__rec(&m, i, &r))
				gpu__on_rec(&acc, &names, &r);
		break;
	case RSC_STATUS:
		if (strlen(m.status.detail) >= sizeof(m.status.detail))
			__builtin_trap();
		gpu_wire__state_name(m.status.state);
		break;
	default:
		break;
	}
	return 0;
}
