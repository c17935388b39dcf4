// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* net family: TCP retransmits, srtt and state changes, charged to the rank owning the socket. */
#include "common.bpf.h"
#include "net.h"

#define AF_INET		2
#define AF_INET6	10
#define IPPROTO_TCP	6
#define TCP_SYN_SENT	2
#define TCP_CLOSE	7
#define TCP_LISTEN	10

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct rs_net_slot);
} rs_net_slots SEC(".maps");

static __always_inline struct rs_track *sock_owner(const struct sock *sk)
{
	__u64 key = (__u64)sk;

	return bpf_map_lookup_elem(&rs_sock_owner, &key);
}

static __always_inline __u32 sock_srtt_us(const struct sock *sk)
{
	/* srtt_us is kept << 3 (RFC 6298 scaled). */
	return BPF_CORE_READ((struct tcp_sock *)sk, srtt_us) >> 3;
}

static __always_inline void fill_addrs(struct rs_ev_tcp *e, const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	__be32 a;

	e->family = family;
	e->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET6) {
		BPF_CORE_READ_INTO(&e->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&e->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
		return;
	}
	e->saddr[10] = e->saddr[11] = 0xff;
	e->daddr[10] = e->daddr[11] = 0xff;
	a = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	__builtin_memcpy(&e->saddr[12], &a, 4);
	a = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	__builtin_memcpy(&e->daddr[12], &a, 4);
}

static __always_inline void emit(__u32 kind, const struct sock *sk, const struct rs_track *tr,
				 int oldstate, int newstate)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct rs_track *cur;
	struct rs_ev_tcp *e;

	e = rs_reserve(RS_FAM_NET, sizeof(*e), kind, tr, tr->root_tgid, 0);
	if (!e)
		return;
	/* Softirq context runs on any task: name it only when it is of the owning rank. */
	cur = rs_lookup(id >> 32);
	if (cur && cur->slot == tr->slot) {
		e->h.tgid = id >> 32;
		e->h.tid = (__u32)id;
	}
	__builtin_memset(e->saddr, 0, sizeof(e->saddr));
	__builtin_memset(e->daddr, 0, sizeof(e->daddr));
	fill_addrs(e, sk);
	e->oldstate = oldstate;
	e->newstate = newstate;
	e->srtt_us = sock_srtt_us(sk);
	e->pad = 0;
	rs_submit(e);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(rs_tcp_retransmit, const struct sock *sk)
{
	struct rs_net_slot *ns;
	struct rs_track *tr;

	tr = sock_owner(sk);
	if (!tr)
		return 0;
	ns = bpf_map_lookup_elem(&rs_net_slots, &tr->slot);
	if (ns)
		__sync_fetch_and_add(&ns->retransmits, 1);
	emit(RS_EV_TCP_RETRANS, sk, tr, BPF_CORE_READ(sk, __sk_common.skc_state),
	     BPF_CORE_READ(sk, __sk_common.skc_state));
	return 0;
}

/* Fires for every segment received on an established socket: aggregate, never stream. */
SEC("tp_btf/tcp_probe")
int BPF_PROG(rs_tcp_probe, struct sock *sk)
{
	struct rs_net_slot *ns;
	struct rs_track *tr;
	__u32 srtt;

	tr = sock_owner(sk);
	if (!tr)
		return 0;
	ns = bpf_map_lookup_elem(&rs_net_slots, &tr->slot);
	if (!ns)
		return 0;
	srtt = sock_srtt_us(sk);
	if (!srtt)
		return 0;
	__sync_fetch_and_add(&ns->srtt_sum_us, srtt);
	__sync_fetch_and_add(&ns->srtt_samples, 1);
	ns->srtt_last_us = srtt;
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(rs_sock_state, const struct sock *sk, int oldstate, int newstate)
{
	struct rs_net_slot *ns;
	struct rs_track *tr;
	__u64 key = (__u64)sk;

	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	tr = sock_owner(sk);
	if (!tr) {
		/* Only connect() and listen() are sure to run in the owner's context; the other
		 * transitions of an unowned socket may be softirq work on any task's time. */
		if (oldstate != TCP_CLOSE || (newstate != TCP_SYN_SENT && newstate != TCP_LISTEN))
			return 0;
		tr = rs_current();
		if (!tr)
			return 0;
		if (!bpf_map_update_elem(&rs_sock_owner, &key, tr, BPF_NOEXIST))
			rs_count_lru(RS_FAM_NET, true);
		tr = sock_owner(sk);
		if (!tr)
			return 0;
	}
	ns = bpf_map_lookup_elem(&rs_net_slots, &tr->slot);
	if (ns)
		__sync_fetch_and_add(&ns->state_changes, 1);
	emit(RS_EV_TCP_STATE, sk, tr, oldstate, newstate);
	if (newstate == TCP_CLOSE && !bpf_map_delete_elem(&rs_sock_owner, &key))
		rs_count_lru(RS_FAM_NET, false);
	return 0;
}
