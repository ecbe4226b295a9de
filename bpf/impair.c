// SPDX-License-Identifier: MIT OR Apache-2.0 OR GPL-2.0-only
//
// The impairment stage's kernel fast path, a tc program on both of the stage's
// interfaces (tc ingress, attached through TCX links that the kernel removes when the
// stage process ends, however it ends).
//
// What it does, per frame arriving on one of the two interfaces, in the order of the
// userspace stage (lab::impair::model, which stays the reference):
// - Router mode: an IPv4 frame to this interface's MAC and not to the node itself
//   leaves with the other side's MACs and one TTL less, its header checksum computed
//   again (RFC 1812 5.3.1); a frame whose TTL would reach 0 is dropped and counted;
//   anything else is left to the node's kernel (TC_ACT_OK) and counted as not forwarded.
//   Bridge mode forwards every frame unchanged.
// - Loss: Bernoulli, or the two-state Gilbert model for bursts; duplication: a clone
//   follows the frame. Both draw from the userspace stage's own generator (xoshiro256++,
//   seeded as rand's SmallRng::seed_from_u64, compared as rand's Bernoulli compares), kept
//   per direction under a bpf_spin_lock: the same seed makes the same decisions on the
//   same frame sequence.
// - Rate limiting is not here: the loader puts an HTB class with a pfifo of `limit`
//   frames on the outgoing interface, so the kernel's qdisc queues and serialises.
//
// What it does not do: delay, jitter and reordering (they hold frames, which a tc program
// cannot); the loader refuses such settings and the userspace stage runs them.
//
// Built by bpf/build.sh with Debian's clang; the object is checked in (bpf/impair.o).

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_FRAME 9216

#define LOSS_NONE 0
#define LOSS_ALL 1
#define LOSS_BERNOULLI 2
#define LOSS_GILBERT 3

// rand's Bernoulli: a threshold of all ones means "always", with no draw.
#define ALWAYS ((__u64)-1)

// One of the stage's two interfaces, keyed by its interface index.
struct impair_port {
	__u32 dir; // 0: forward (a to b), 1: reverse
	__u32 out_ifindex;
	__u32 router;
	__u32 local_in; // router mode: the node's addresses (network order)
	__u32 local_out;
	__u8 in_mac[6];
	__u8 out_mac[6];
	__u8 neighbour[6]; // the next hop behind the outgoing interface
	__u8 pad[2];
};

// One direction's decisions, as thresholds of rand's Bernoulli (p * 2^64).
struct impair_params {
	__u32 loss_mode;
	__u32 dup_on;
	__u64 loss_t;
	__u64 enter_t; // Gilbert: into the loss state
	__u64 exit_t; // Gilbert: out of it (1 / mean burst)
	__u64 dup_t;
};

// One direction's generator state.
struct impair_rng {
	struct bpf_spin_lock lock;
	__u32 bursting;
	__u64 s[4];
};

// One direction's counters (lab::impair::model::Counters, the queue ones aside).
struct impair_counters {
	__u64 frames_in;
	__u64 bytes_in;
	__u64 dropped_loss;
	__u64 duplicated;
	__u64 frames_out;
	__u64 bytes_out;
	__u64 send_errors;
};

struct stage_counters {
	__u64 not_forwarded;
	__u64 ttl_expired;
	__u64 too_long;
};

// The sizes engine::sys::bpf mirrors (its layout test pins the same numbers).
_Static_assert(sizeof(struct impair_port) == 40, "impair_port");
_Static_assert(sizeof(struct impair_params) == 40, "impair_params");
_Static_assert(sizeof(struct impair_rng) == 40, "impair_rng");
_Static_assert(sizeof(struct impair_counters) == 56, "impair_counters");
_Static_assert(sizeof(struct stage_counters) == 24, "stage_counters");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct impair_port);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct impair_params);
} params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct impair_rng);
} rngs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct impair_counters);
} dir_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stage_counters);
} stage_stats SEC(".maps");

static __always_inline __u64 rotl(__u64 x, int k)
{
	return (x << k) | (x >> (64 - k));
}

// xoshiro256++ (Blackman and Vigna), as rand's Xoshiro256PlusPlus::next_u64.
static __always_inline __u64 next_u64(struct impair_rng *r)
{
	__u64 res = rotl(r->s[0] + r->s[3], 23) + r->s[0];
	__u64 t = r->s[1] << 17;
	r->s[2] ^= r->s[0];
	r->s[3] ^= r->s[1];
	r->s[1] ^= r->s[2];
	r->s[0] ^= r->s[3];
	r->s[2] ^= t;
	r->s[3] = rotl(r->s[3], 45);
	return res;
}

// rand's Bernoulli::sample: true when a draw falls under the threshold.
static __always_inline int draw(struct impair_rng *r, __u64 threshold)
{
	if (threshold == ALWAYS)
		return 1;
	return next_u64(r) < threshold;
}

// lab::impair::model::Impairer::lose
static __always_inline int lose(struct impair_rng *r, struct impair_params *p)
{
	switch (p->loss_mode) {
	case LOSS_ALL:
		return 1;
	case LOSS_BERNOULLI:
		return draw(r, p->loss_t);
	case LOSS_GILBERT:
		if (r->bursting)
			r->bursting = !draw(r, p->exit_t);
		else
			r->bursting = draw(r, p->enter_t);
		return r->bursting;
	default:
		return 0;
	}
}

static __always_inline struct stage_counters *stage_counters(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&stage_stats, &k);
}

// What route() decided.
#define ROUTE_FORWARD 0
#define ROUTE_KERNEL 1
#define ROUTE_TTL 2

// lab::impair::stage::route: the rewrite for the next hop, or why not.
static __always_inline int route(struct __sk_buff *skb, struct impair_port *port)
{
	__u8 eth[14];
	__u8 ip[60] = {};
	if (skb->vlan_present || skb->len < 14 + 20)
		return ROUTE_KERNEL;
	if (bpf_skb_load_bytes(skb, 0, eth, 14) || bpf_skb_load_bytes(skb, 14, ip, 20))
		return ROUTE_KERNEL;
	for (int i = 0; i < 6; i++)
		if (eth[i] != port->in_mac[i])
			return ROUTE_KERNEL;
	if (eth[12] != 0x08 || eth[13] != 0x00)
		return ROUTE_KERNEL;
	// wire::ipv4::Packet::check_len
	__u32 len = skb->len - 14;
	__u32 hl = (ip[0] & 0x0f) * 4;
	__u32 total = ((__u32)ip[2] << 8) | ip[3];
	if (hl < 20 || hl > len || total < hl || total > len || (ip[0] >> 4) != 4)
		return ROUTE_KERNEL;
	__u32 dst;
	__builtin_memcpy(&dst, &ip[16], 4);
	if (dst == port->local_in || dst == port->local_out)
		return ROUTE_KERNEL;
	if (ip[8] <= 1)
		return ROUTE_TTL;
	if (hl > 20 && bpf_skb_load_bytes(skb, 14, ip, hl))
		return ROUTE_KERNEL;
	ip[8]--;
	ip[10] = 0;
	ip[11] = 0;
	// The header checksum from scratch (RFC 791), as fill_checksum computes it.
	__u32 sum = 0;
	for (int i = 0; i < 30; i++) {
		if (i * 2 >= hl)
			break;
		sum += ((__u32)ip[2 * i] << 8) | ip[2 * i + 1];
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = sum >> 8;
	ip[11] = sum & 0xff;
	__builtin_memcpy(eth, port->neighbour, 6);
	__builtin_memcpy(eth + 6, port->out_mac, 6);
	if (bpf_skb_store_bytes(skb, 0, eth, 12, 0) ||
	    bpf_skb_store_bytes(skb, 14 + 8, &ip[8], 4, BPF_F_RECOMPUTE_CSUM))
		return ROUTE_KERNEL;
	return ROUTE_FORWARD;
}

SEC("classifier")
int impair_port(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ingress_ifindex ? skb->ingress_ifindex : skb->ifindex;
	struct impair_port *port = bpf_map_lookup_elem(&ports, &ifindex);
	struct stage_counters *sc = stage_counters();
	if (!port || !sc)
		return TC_ACT_OK;
	__u32 dir = port->dir & 1;
	struct impair_params *p = bpf_map_lookup_elem(&params, &dir);
	struct impair_rng *r = bpf_map_lookup_elem(&rngs, &dir);
	struct impair_counters *c = bpf_map_lookup_elem(&dir_stats, &dir);
	if (!p || !r || !c)
		return TC_ACT_OK;
	__u32 len = skb->len;
	if (len > MAX_FRAME) {
		sc->too_long++;
		return TC_ACT_SHOT;
	}
	if (port->router) {
		switch (route(skb, port)) {
		case ROUTE_FORWARD:
			break;
		case ROUTE_TTL:
			sc->ttl_expired++;
			return TC_ACT_SHOT;
		default:
			sc->not_forwarded++;
			return TC_ACT_OK;
		}
	}
	c->frames_in++;
	c->bytes_in += len;
	int lost, dup = 0;
	bpf_spin_lock(&r->lock);
	lost = lose(r, p);
	if (!lost && p->dup_on)
		dup = draw(r, p->dup_t);
	bpf_spin_unlock(&r->lock);
	if (lost) {
		c->dropped_loss++;
		return TC_ACT_SHOT;
	}
	if (dup) {
		c->duplicated++;
		c->frames_out++;
		c->bytes_out += len;
		if (bpf_clone_redirect(skb, port->out_ifindex, 0))
			c->send_errors++;
	}
	c->frames_out++;
	c->bytes_out += len;
	return bpf_redirect(port->out_ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
