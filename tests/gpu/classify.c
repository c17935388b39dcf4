// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Prints "nccl" or "compute" for each kernel name on stdin, with the daemon's classifier. */
#include <stdio.h>
#include <string.h>
#include "gpu.h"

int main(void)
{
	char line[4096];
	size_t n;

	while (fgets(line, sizeof(line), stdin)) {
		n = strcspn(line, "\n");
		printf("%s\n", gpu__kclass_name(gpu__classify(line, n)));
	}
	return 0;
}
