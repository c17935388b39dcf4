// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: what a node daemon (or anything that answers on its port) sends the hub.
 * The first byte picks the document (ranks, steps, diagnosis, jobs) and the node; the rest is its
 * text. The hub keeps state across inputs, so answers build on each other, as in a poll loop;
 * every few inputs it judges and renders every document. Built with ASan and UBSan.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "hub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hub *h;
	static uint64_t cursor[4], calls;
	char err[160], *doc;
	int node, kind;
	size_t len;
	bool more;

	if (!h) {
		h = hub__new(8);
		if (!h)
			return 0;
		hub__node(h, "10.0.0.1:9464");
		hub__node(h, "10.0.0.2:9464");
		hub__node(h, "10.0.0.3:9464");
		hub__node(h, "10.0.0.4:9464");
	}
	if (!size)
		return 0;
	node = data[0] & 3;
	kind = (data[0] >> 2) % 6;
	data++;
	size--;
	switch (kind) {
	case 0:
		hub__feed_ranks(h, node, (const char *)data, size, err, sizeof(err));
		break;
	case 1:
	case 2:
		hub__feed_steps(h, node, (const char *)data, size, &cursor[node], &more, err,
				sizeof(err));
		break;
	case 3:
		hub__feed_diagnosis(h, node, (const char *)data, size, err, sizeof(err));
		break;
	case 4:
		hub__feed_jobs(h, node, (const char *)data, size, err, sizeof(err));
		break;
	default:
		if (size && data[0] & 1)
			hub__node_failed(h, node, "fuzz", calls);
		else
			hub__node_ok(h, node, calls);
		break;
	}
	if (++calls % 8)
		return 0;
	hub__judge(h, calls, NULL, NULL);
	hub__drain_steps(h, NULL, NULL);
	doc = hub__diagnosis(h, &len);
	free(doc);
	doc = hub__ranks(h, &len);
	free(doc);
	doc = hub__nodes(h, &len);
	free(doc);
	doc = hub__metrics(h, &len);
	free(doc);
	doc = hub__jobs(h, &len);
	free(doc);
	return 0;
}
