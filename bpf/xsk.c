// SPDX-License-Identifier: MIT OR Apache-2.0 OR GPL-2.0-only
//
// The raw receiver's AF_XDP program (the `xdp` receive backend): an XDP program on the
// receiving interface that hands every frame to the AF_XDP socket bound to the queue it
// arrived on (an XSKMAP entry per queue, filled by engine::frameio::XdpFrameRx).
//
// Each redirected frame carries its arrival time (bpf_ktime_get_ns, CLOCK_MONOTONIC) in 8
// bytes of XDP metadata right before the frame, which AF_XDP copies into the UMEM chunk;
// the receiver turns it into CLOCK_REALTIME. A frame whose metadata could not be reserved
// carries none (zero there), and the receiver stamps it when it reads it.
//
// What it leaves to the host's stack: ARP (0x0806), so the receiving host still answers
// for its address while a test runs, and frames of a queue with no socket (the XSKMAP's
// default action, XDP_PASS). Everything else is taken from the stack while the program is
// attached: the receiver is a sink, as a tester's port is.
//
// Built by bpf/build.sh with Debian's clang; the object is checked in (bpf/xsk.o).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_QUEUES 64

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

SEC("xdp")
int xsk_rx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *eth = data;
	if (data + 14 <= end && eth[12] == 0x08 && eth[13] == 0x06)
		return XDP_PASS;
	if (bpf_xdp_adjust_meta(ctx, -8) == 0) {
		__u64 *meta = (void *)(long)ctx->data_meta;
		if ((void *)(meta + 1) <= (void *)(long)ctx->data)
			*meta = bpf_ktime_get_ns();
	}
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
