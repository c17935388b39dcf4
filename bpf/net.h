/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* net family wire format: TCP retransmits, state changes and srtt of sockets a rank owns. */
#ifndef RS_NET_H
#define RS_NET_H

#include "rankscope.h"

/* RS_EV_TCP_STATE / RS_EV_TCP_RETRANS. IPv4 addresses are stored v4-mapped (::ffff:a.b.c.d). */
struct rs_ev_tcp {
	struct rs_hdr h;
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;	/* host order */
	__u16 dport;	/* host order */
	__u16 family;	/* AF_INET or AF_INET6 as the socket says */
	__u8 oldstate;
	__u8 newstate;
	__u32 srtt_us;
	__u32 pad;
};
_Static_assert(sizeof(struct rs_ev_tcp) == 72, "rs_ev_tcp wire size");

/* rs_net_slots value, indexed by slot. */
struct rs_net_slot {
	__u64 retransmits;
	__u64 srtt_sum_us;
	__u64 srtt_samples;
	__u64 srtt_last_us;
	__u64 state_changes;
};
_Static_assert(sizeof(struct rs_net_slot) == 40, "rs_net_slot wire size");

#endif /* RS_NET_H */
