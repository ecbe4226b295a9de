// SPDX-License-Identifier: MIT OR Apache-2.0 OR GPL-2.0-only
//
// The AF_XDP receivers' program: an XDP program on the receiving interface that hands
// frames to the AF_XDP socket bound to the queue they arrived on (an XSKMAP entry per
// queue, filled by engine::frameio::XdpFrameRx). Which frames, `filter` says:
// - FILTER_ALL (the raw receiver, the `xdp` frame backend): every frame but ARP and IPv6
//   neighbour discovery;
// - FILTER_UDP_PORTS (the server's `--rx-backend xdp`): UDP datagrams over IPv4 (any
//   header length, not fragments) or IPv6 (no extension headers) to a destination port
//   in `udp_ports`; everything else passes to the stack (the test's control connection,
//   other tests, ARP, neighbour discovery).
//
// Each redirected frame carries its arrival time (bpf_ktime_get_ns, CLOCK_MONOTONIC) in 8
// bytes of XDP metadata right before the frame, which AF_XDP copies into the UMEM chunk;
// the receiver turns it into CLOCK_REALTIME. A frame whose metadata could not be reserved
// carries none (zero there), and the receiver stamps it when it reads it.
//
// What FILTER_ALL leaves to the host's stack: ARP and IPv6 neighbour discovery, so the
// receiving host still answers for its addresses while a test runs, and frames of a queue
// with no socket (the XSKMAP's default action, XDP_PASS). Everything else is taken from the stack while the
// program is attached: the raw receiver is a sink, as a tester's port is.
//
// The program counts what it hands on (`counters`, per CPU): [0] frames it redirected to
// a socket, [1] frames the redirect refused (no socket on the queue: passed to the stack).
// A receiver checks its own count against them: frames redirected = frames read + the
// kernel's drops for the socket (XDP_STATISTICS), so a frame lost between the program and
// the reader shows, and so does a receiver that counts what never came.
//
// Built by bpf/build.sh with Debian's clang; the object is checked in (bpf/xsk.o).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_QUEUES 64
#define FILTER_ALL 0
#define FILTER_UDP_PORTS 1

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} filter SEC(".maps");

#define COUNT_REDIRECTED 0
#define COUNT_REFUSED 1

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		*c += 1;
}

// Destination ports (network order) whose datagrams are taken, with FILTER_UDP_PORTS.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u8);
} udp_ports SEC(".maps");

// Whether a frame is a UDP datagram to one of `udp_ports`.
static __always_inline int udp_to_a_port(void *data, void *end)
{
	__u8 *eth = data;
	__u8 *l4;
	if (data + 14 > end)
		return 0;
	if (eth[12] == 0x08 && eth[13] == 0x00) {
		__u8 *ip = data + 14;
		if ((void *)(ip + 20) > end || ip[9] != 17)
			return 0;
		// Not a fragment: no offset, no more-fragments flag.
		if ((ip[6] & 0x3f) || ip[7])
			return 0;
		__u32 hl = (ip[0] & 0x0f) * 4;
		if (hl < 20)
			return 0;
		l4 = ip + hl;
	} else if (eth[12] == 0x86 && eth[13] == 0xdd) {
		__u8 *ip = data + 14;
		if ((void *)(ip + 40) > end || ip[6] != 17)
			return 0;
		l4 = ip + 40;
	} else {
		return 0;
	}
	if ((void *)(l4 + 8) > end)
		return 0;
	__u16 port = *(__u16 *)(l4 + 2);
	return bpf_map_lookup_elem(&udp_ports, &port) != 0;
}

// FILTER_ALL leaves these to the host: ARP, and IPv6 neighbour discovery (ICMPv6 types
// 133-137 without extension headers), so the host keeps its neighbours while a test runs.
static __always_inline int keep_for_host(void *data, void *end)
{
	__u8 *eth = data;
	if (data + 14 > end)
		return 0;
	if (eth[12] == 0x08 && eth[13] == 0x06)
		return 1;
	if (eth[12] == 0x86 && eth[13] == 0xdd) {
		__u8 *ip = data + 14;
		if ((void *)(ip + 41) > end || ip[6] != 58)
			return 0;
		return ip[40] >= 133 && ip[40] <= 137;
	}
	return 0;
}

SEC("xdp")
int xsk_rx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	__u32 *mode = bpf_map_lookup_elem(&filter, &zero);
	if (mode && *mode == FILTER_UDP_PORTS) {
		if (!udp_to_a_port(data, end))
			return XDP_PASS;
	} else if (keep_for_host(data, end)) {
		return XDP_PASS;
	}
	if (bpf_xdp_adjust_meta(ctx, -8) == 0) {
		__u64 *meta = (void *)(long)ctx->data_meta;
		if ((void *)(meta + 1) <= (void *)(long)ctx->data)
			*meta = bpf_ktime_get_ns();
	}
	long action = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	count(action == XDP_REDIRECT ? COUNT_REDIRECTED : COUNT_REFUSED);
	return action;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
