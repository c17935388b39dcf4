// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: a node's capture as the hub merges it (hub/hubcap.c), next to a fixed,
 * valid one of another node. The input is node B's whole trace; its first byte also picks
 * whether node B is lined up and how far its clock is off. The merged trace goes to
 * /dev/null. Built with ASan and UBSan.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hubcap.h"

static const char node_a[] =
	"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":100,\"tid\":0,\"args\":{\"name\":\"rank 0\"}},\n"
	"{\"ph\":\"X\",\"name\":\"allreduce\",\"cat\":\"collective\",\"pid\":100,\"tid\":100,"
	"\"ts\":1000.000,\"dur\":50.000,\"args\":{\"comm\":\"mpi:world\",\"seq\":0}},\n"
	"{\"ph\":\"X\",\"name\":\"allreduce\",\"cat\":\"collective\",\"pid\":100,\"tid\":100,"
	"\"ts\":2000.000,\"dur\":70.000,\"args\":{\"comm\":\"mpi:world\",\"seq\":1}}\n"
	"]}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct hubcap_node n[2] = {
		{ .name = "10.0.0.1:9464", .capture = "a", .text = node_a, .len = sizeof(node_a) - 1,
		  .lined_up = true },
		{ .name = "10.0.0.2:9464", .capture = "b" },
	};
	struct hubcap_stats st;

	if (fd < 0)
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (!size || fd < 0)
		return 0;
	n[1].lined_up = data[0] & 1;
	n[1].offset_ns = (int64_t)(data[0] >> 1) * 123456789LL - 5000000000LL;
	n[1].err_ns = (data[0] & 2) ? 1000000 : 0;
	n[1].text = (const char *)data + 1;
	n[1].len = size - 1;
	hubcap__merge(n, 2, "fuzz", fd, data[0] & 4, &st);
	return 0;
}
