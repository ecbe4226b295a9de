// SPDX-License-Identifier: MIT OR Apache-2.0 OR GPL-2.0-only
//
// The FRER relay's kernel fast path (IEEE 802.1CB), a tc program on each relay port.
//
// What it does, per frame arriving on a port (tc ingress, attached through TCX links that
// the kernel removes when the relay process ends, however it ends):
// - Replication (802.1CB 7.4.1, 7.8): a frame of a replicated stream gets the next
//   number of the stream's sequence generator in an R-TAG (inserted after the MACs, or
//   rewritten if it has one) and leaves on every out-port: clones on
//   all but the last (bpf_clone_redirect), the frame itself on the last (bpf_redirect).
// - Elimination (7.4.2, 7.4.3): the stream's sequence recovery function, Vector (7.4.3.4,
//   history up to 2048) or Match (7.4.3.5), with the reset timer (7.4.3.3) and the
//   counters of 10.8, decides; a passed frame leaves on the stream's out-port, its R-TAG
//   popped unless kept.
// - Frames of no stream follow the port's pass entry; without one they are counted as
//   dropped and left to this host's stack (TC_ACT_OK), as are runts and frames over
//   MAX_FRAME: the userspace relay reads copies and never takes a frame from the host.
//   Frames of a stream are taken (redirected or dropped).
// - `sent` counts a copy when it is handed on: a clone the kernel refuses counts in
//   send_errors, but the last copy's fate (bpf_redirect) is known only after the program.
//
// What it does not do (the userspace relay does; the loader refuses such configurations
// with the reason): identification by anything but the destination MAC, individual
// recovery (7.5), latent error detection (7.4.4). Frames of a stream with in-band VLAN
// tags (802.1ad inner tags; the outer tag is offloaded by the kernel) are counted
// malformed and dropped.
//
// Userspace (lab::relay::fast) fills the maps, ticks the reset timers by running
// `frer_tick` every few milliseconds, and reads the counters. The per-stream recovery
// state is guarded by a bpf_spin_lock: the paths of one stream arrive on several CPUs.
//
// Built by bpf/build.sh with Debian's clang; the object is checked in (bpf/frer.o).

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_PORTS 64
#define MAX_STREAMS 64
#define MAX_OUT 8
#define MAX_FRAME 9216
#define HIST_BITS 2048
#define HIST_WORDS (HIST_BITS / 64)
#define RTAG_TYPE 0xF1C1
#define RTAG_LEN 6

#define RULE_REPLICATE 1
#define RULE_ELIMINATE 2

#define ALG_VECTOR 0
#define ALG_MATCH 1

#define F_TAKE_NO_SEQ 1
#define F_OFF 2
#define F_KEEP_TAG 4

// Ingress port: its index in the relay's port list and where frames of no stream go.
struct port_cfg {
	__u32 port;
	__u32 pass_ifindex; // 0: dropped
	__u32 pass_port;
	__u32 pad;
};

// A stream's function on an in-port, found by (ifindex, destination MAC); an all-zero MAC
// matches any frame (a stream without identification keys).
struct rule_key {
	__u32 ifindex;
	__u8 mac[6];
	__u16 pad;
};

struct rule {
	__u32 kind;
	__u32 stream;
	__u32 path; // elimination: the in-port's index among the stream's paths
	__u32 n_out;
	__u32 out_ifindex[MAX_OUT];
	__u32 out_port[MAX_OUT];
};

struct generator {
	__u64 next; // the low 16 bits are the next sequence number
	__u64 frames;
};

// One sequence recovery function (802.1CB 7.4.3) with its configuration and counters.
// The history is indexed by sequence number modulo HIST_BITS: bit (s % 2048) is set when
// s, inside the window recov - history + 1 ..= recov, was accepted; bits outside the
// window are kept clear.
struct recovery {
	struct bpf_spin_lock lock;
	__u32 algorithm;
	__u32 history;
	__u32 flags;
	__u32 take_any;
	__u32 recov;
	__u32 valid;
	__u32 pad;
	__u64 reset_ns; // 0: no timer
	__u64 deadline_ns; // 0: not running
	__u64 passed;
	__u64 discarded;
	__u64 out_of_order;
	__u64 rogue;
	__u64 lost;
	__u64 lost_before_first;
	__u64 tagless;
	__u64 resets;
	__u64 hist[HIST_WORDS];
};

struct port_counters {
	__u64 received;
	__u64 sent;
	__u64 send_errors;
};

struct path_counters {
	__u64 received;
	__u64 passed;
};

struct relay_counters {
	__u64 unmatched_passed;
	__u64 unmatched_dropped;
	__u64 malformed;
	__u64 too_long;
};

// The sizes engine::sys::bpf mirrors (its layout test pins the same numbers).
_Static_assert(sizeof(struct port_cfg) == 16, "port_cfg");
_Static_assert(sizeof(struct rule_key) == 12, "rule_key");
_Static_assert(sizeof(struct rule) == 16 + 8 * MAX_OUT, "rule");
_Static_assert(sizeof(struct generator) == 16, "generator");
_Static_assert(sizeof(struct recovery) == 32 + 80 + 8 * HIST_WORDS, "recovery");
_Static_assert(__builtin_offsetof(struct recovery, reset_ns) == 32, "recovery.reset_ns");
_Static_assert(__builtin_offsetof(struct recovery, hist) == 112, "recovery.hist");
_Static_assert(sizeof(struct port_counters) == 24, "port_counters");
_Static_assert(sizeof(struct path_counters) == 16, "path_counters");
_Static_assert(sizeof(struct relay_counters) == 32, "relay_counters");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, struct port_cfg);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS * MAX_STREAMS);
	__type(key, struct rule_key);
	__type(value, struct rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct generator);
} generators SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct recovery);
} recoveries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, struct port_counters);
} port_stats SEC(".maps");

// Keyed by stream * MAX_PORTS + path.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_STREAMS * MAX_PORTS);
	__type(key, __u32);
	__type(value, struct path_counters);
} path_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct relay_counters);
} relay_stats SEC(".maps");

// Entry 0: a virtual clock in nanoseconds for tests (0: the kernel's monotonic clock).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} clock SEC(".maps");

static __always_inline __u64 now_ns(void)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&clock, &k);
	if (v && *v)
		return *v;
	return bpf_ktime_get_ns();
}

static __always_inline struct relay_counters *relay_counters(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&relay_stats, &k);
}

static __always_inline struct port_counters *port_counters(__u32 port)
{
	return bpf_map_lookup_elem(&port_stats, &port);
}

static __always_inline void clear_history(struct recovery *r)
{
	for (int i = 0; i < HIST_WORDS; i++)
		r->hist[i] = 0;
}

static __always_inline void reset_recovery(struct recovery *r)
{
	r->recov = 0xFFFF;
	r->take_any = 1;
	r->deadline_ns = 0;
	r->resets++;
	clear_history(r);
}

// ShiftSequenceHistory `delta` times at once (0 < delta < history): the numbers
// recov - history + 1 .. recov - history + delta leave the window; the unset ones are lost,
// and the first (history - valid) of them are older than the first number accepted since
// the last reset (lost_before_first). Their slots are cleared. One pass per number: in
// order, a frame moves the window by one.
static __always_inline void shift_history(struct recovery *r, __u32 delta)
{
	__u32 len = r->history;
	__u32 start = r->recov - len + 1;
	__u32 before = len > r->valid ? len - r->valid : 0;
	__u32 valid = r->valid + delta;
	r->valid = valid < len ? valid : len;
	// The verifier walks every pass of this loop and then the rest of the program once
	// for each way out; so nothing the loop compares (delta, before) or sums is used
	// after it (the sums go straight to the map value, j < before is arithmetic), and
	// the ways out look alike and are pruned.
	for (__u32 j = 0; j < HIST_BITS; j++) {
		if (j >= delta)
			break;
		__u32 slot = (start + j) & (HIST_BITS - 1);
		__u64 *word = &r->hist[slot / 64];
		__u64 bit = 1ULL << (slot % 64);
		__u64 unseen = !(*word & bit);
		r->lost += unseen;
		r->lost_before_first += unseen & ((j - before) >> 31);
		*word &= ~bit;
	}
}

static __always_inline int test_bit(struct recovery *r, __u32 s)
{
	__u32 slot = s & (HIST_BITS - 1);
	return (r->hist[(slot / 64) & (HIST_WORDS - 1)] >> (slot % 64)) & 1;
}

static __always_inline void set_bit(struct recovery *r, __u32 s)
{
	__u32 slot = s & (HIST_BITS - 1);
	r->hist[(slot / 64) & (HIST_WORDS - 1)] |= 1ULL << (slot % 64);
}

// VectorRecoveryAlgorithm (7.4.3.4): 1 pass, 0 discard.
static __always_inline int vector(struct recovery *r, __u32 s)
{
	if (r->take_any) {
		r->take_any = 0;
		clear_history(r);
		set_bit(r, s);
		r->valid = 1;
		r->recov = s;
		return 1;
	}
	__s32 delta = (__s32)((s - r->recov) & 0xFFFF);
	if (delta >= 0x8000)
		delta -= 0x10000;
	__s32 len = r->history;
	if (delta >= len || delta <= -len) {
		r->rogue++;
		return 0;
	}
	if (delta <= 0) {
		if (test_bit(r, s)) {
			r->discarded++;
			return 0;
		}
		set_bit(r, s);
		r->out_of_order++;
		return 1;
	}
	if (delta != 1)
		r->out_of_order++;
	shift_history(r, delta);
	set_bit(r, s);
	r->recov = s;
	return 1;
}

// MatchRecoveryAlgorithm (7.4.3.5).
static __always_inline int match(struct recovery *r, __u32 s)
{
	if (r->take_any) {
		r->take_any = 0;
		r->recov = s;
		return 1;
	}
	__u32 delta = (s - r->recov) & 0xFFFF;
	if (delta == 0) {
		r->discarded++;
		return 0;
	}
	if (delta != 1)
		r->out_of_order++;
	r->recov = s;
	return 1;
}

// The recovery function's decision for a frame with sequence number seq (negative: no
// R-TAG) at `now`, under the lock. 1 pass, 0 discard.
static __always_inline int recover(struct recovery *r, __s32 seq, __u64 now)
{
	int pass;
	if (r->deadline_ns && now >= r->deadline_ns)
		reset_recovery(r);
	if (seq < 0) {
		r->tagless++;
		pass = !!(r->flags & F_TAKE_NO_SEQ);
	} else if (r->algorithm == ALG_MATCH) {
		pass = match(r, seq);
	} else {
		pass = vector(r, seq);
	}
	if (pass) {
		r->passed++;
		r->deadline_ns = r->reset_ns ? now + r->reset_ns : 0;
	}
	return pass;
}

// Whether the frame carries in-band VLAN tags (the outer tag of a frame that came in
// through a device is offloaded to skb->vlan_tci and not in the bytes): 0 no, 1 yes, -1
// too short to say.
static __always_inline int inband_tags(struct __sk_buff *skb)
{
	__u16 t;
	if (bpf_skb_load_bytes(skb, 12, &t, 2))
		return -1;
	return t == bpf_htons(0x8100) || t == bpf_htons(0x88A8);
}

// The R-TAG's sequence number, or -1 when the frame has none (rtag::decode).
static __always_inline __s32 rtag_seq(struct __sk_buff *skb)
{
	__u16 t, s;
	if (skb->len < 12 + RTAG_LEN + 2)
		return -1;
	if (bpf_skb_load_bytes(skb, 12, &t, 2) || t != bpf_htons(RTAG_TYPE))
		return -1;
	if (bpf_skb_load_bytes(skb, 16, &s, 2))
		return -1;
	return bpf_ntohs(s);
}

// Inserts an R-TAG carrying seq after the MACs (rtag::encode; an existing tag is
// rewritten). bpf_skb_change_head opens the room at the front, whatever the protocol
// (bpf_skb_adjust_room takes IP frames only); the MACs move to it.
static __always_inline int push_rtag(struct __sk_buff *skb, __u16 seq)
{
	__u16 be = bpf_htons(seq);
	if (rtag_seq(skb) >= 0)
		return bpf_skb_store_bytes(skb, 16, &be, 2, 0);
	__u8 h[20];
	if (bpf_skb_change_head(skb, RTAG_LEN, 0))
		return -1;
	// The old MACs and EtherType now sit at [6, 20).
	if (bpf_skb_load_bytes(skb, RTAG_LEN, h, 14))
		return -1;
	h[18] = h[12];
	h[19] = h[13];
	h[12] = 0xF1;
	h[13] = 0xC1;
	h[14] = 0;
	h[15] = 0;
	h[16] = seq >> 8;
	h[17] = seq & 0xFF;
	return bpf_skb_store_bytes(skb, 0, h, 20, 0);
}

// Removes the R-TAG after the MACs (rtag::strip). The frame's protocol is the R-TAG's,
// and bpf_skb_adjust_room takes IP frames only, so the tag is first dressed as an 802.1Q
// tag whose EtherType is IPv4 or IPv6 (8100 0000 0800) and taken off with the VLAN
// helpers (a second accelerated push moves the first in-band and makes the frame's
// protocol 802.1Q; three pops take off both and leave protocol IP); the two bytes left
// are then closed with bpf_skb_adjust_room. An accelerated VLAN tag is kept. The
// differential test (lab::relay::fast) checks the result against rtag::strip through
// BPF_PROG_TEST_RUN.
static __always_inline int pop_rtag(struct __sk_buff *skb)
{
	__u16 et, l3, vlan = bpf_htons(0x8100);
	__u32 had_tag = skb->vlan_present;
	__u16 tci = skb->vlan_tci;
	__u16 tpid = skb->vlan_proto;
	if (bpf_skb_load_bytes(skb, 12 + RTAG_LEN, &et, 2))
		return -1;
	// The frame leaves with the protocol its EtherType says for IPv6, IPv4 otherwise.
	l3 = et == bpf_htons(0x86DD) ? et : bpf_htons(0x0800);
	if (had_tag && bpf_skb_vlan_pop(skb))
		return -1;
	if (bpf_skb_store_bytes(skb, 12, &vlan, 2, 0) ||
	    bpf_skb_store_bytes(skb, 16, &l3, 2, 0))
		return -1;
	if (bpf_skb_vlan_push(skb, vlan, 0) || bpf_skb_vlan_push(skb, vlan, 0))
		return -1;
	if (bpf_skb_vlan_pop(skb) || bpf_skb_vlan_pop(skb) || bpf_skb_vlan_pop(skb))
		return -1;
	if (skb->protocol != l3 || skb->vlan_present)
		return -1;
	if (bpf_skb_store_bytes(skb, 12, &et, 2, 0))
		return -1;
	if (bpf_skb_adjust_room(skb, -2, BPF_ADJ_ROOM_MAC, 0))
		return -1;
	if (had_tag && bpf_skb_vlan_push(skb, tpid, tci))
		return -1;
	return 0;
}

static __always_inline void count_sent(__u32 port, long err)
{
	struct port_counters *pc = port_counters(port);
	if (!pc)
		return;
	if (err)
		pc->send_errors++;
	else
		pc->sent++;
}

static __always_inline int replicate(struct __sk_buff *skb, struct rule *ru)
{
	__u32 stream = ru->stream;
	struct generator *g = bpf_map_lookup_elem(&generators, &stream);
	struct relay_counters *rc = relay_counters();
	if (!g)
		return TC_ACT_SHOT;
	__u16 seq = __sync_fetch_and_add(&g->next, 1) & 0xFFFF;
	if (push_rtag(skb, seq)) {
		if (rc)
			rc->malformed++;
		return TC_ACT_SHOT;
	}
	__sync_fetch_and_add(&g->frames, 1);
	__u32 n = ru->n_out;
	if (n == 0 || n > MAX_OUT)
		return TC_ACT_SHOT;
	for (__u32 i = 0; i + 1 < MAX_OUT; i++) {
		if (i + 1 >= n)
			break;
		count_sent(ru->out_port[i], bpf_clone_redirect(skb, ru->out_ifindex[i], 0));
	}
	__u32 last = (n - 1) & (MAX_OUT - 1);
	count_sent(ru->out_port[last], 0);
	return bpf_redirect(ru->out_ifindex[last], 0);
}

static __always_inline int eliminate(struct __sk_buff *skb, struct rule *ru)
{
	__u32 stream = ru->stream;
	__u32 pk = stream * MAX_PORTS + (ru->path & (MAX_PORTS - 1));
	struct path_counters *pc = bpf_map_lookup_elem(&path_stats, &pk);
	struct recovery *r = bpf_map_lookup_elem(&recoveries, &stream);
	if (!pc || !r)
		return TC_ACT_SHOT;
	pc->received++;
	__s32 seq = rtag_seq(skb);
	__u64 now = now_ns();
	int pass, keep;
	bpf_spin_lock(&r->lock);
	if (r->flags & F_OFF)
		pass = 1;
	else
		pass = recover(r, seq, now);
	keep = !!(r->flags & F_KEEP_TAG);
	bpf_spin_unlock(&r->lock);
	if (!pass)
		return TC_ACT_SHOT;
	pc->passed++;
	if (!keep && seq >= 0 && pop_rtag(skb)) {
		struct relay_counters *rc = relay_counters();
		if (rc)
			rc->malformed++;
		return TC_ACT_SHOT;
	}
	count_sent(ru->out_port[0], 0);
	return bpf_redirect(ru->out_ifindex[0], 0);
}

SEC("classifier")
int frer_port(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ingress_ifindex ? skb->ingress_ifindex : skb->ifindex;
	struct port_cfg *p = bpf_map_lookup_elem(&ports, &ifindex);
	if (!p)
		return TC_ACT_OK;
	struct port_counters *pc = port_counters(p->port);
	if (pc)
		pc->received++;
	struct relay_counters *rc = relay_counters();
	if (!rc)
		return TC_ACT_OK;
	if (skb->len > MAX_FRAME) {
		rc->too_long++;
		return TC_ACT_OK;
	}
	struct rule_key k = { .ifindex = ifindex };
	if (skb->len < 14 || bpf_skb_load_bytes(skb, 0, k.mac, 6)) {
		rc->malformed++;
		return TC_ACT_OK;
	}
	int tags = inband_tags(skb);
	if (tags < 0) {
		rc->malformed++;
		return TC_ACT_OK;
	}
	struct rule *ru = bpf_map_lookup_elem(&rules, &k);
	if (!ru) {
		__builtin_memset(k.mac, 0, 6);
		ru = bpf_map_lookup_elem(&rules, &k);
	}
	if (!ru) {
		// Not forwarded: left to this host's stack, as the userspace relay (which reads
		// copies) leaves it.
		if (!p->pass_ifindex) {
			rc->unmatched_dropped++;
			return TC_ACT_OK;
		}
		rc->unmatched_passed++;
		count_sent(p->pass_port, 0);
		return bpf_redirect(p->pass_ifindex, 0);
	}
	// In-band VLAN tags (802.1ad inner tags): the userspace relay handles them.
	if (tags) {
		rc->malformed++;
		return TC_ACT_OK;
	}
	if (ru->kind == RULE_REPLICATE)
		return replicate(skb, ru);
	return eliminate(skb, ru);
}

// Runs every stream's reset timer to now (7.4.3.3); run by userspace with
// BPF_PROG_TEST_RUN every few milliseconds, so a timer runs out when no frame comes.
SEC("classifier")
int frer_tick(struct __sk_buff *skb)
{
	__u64 now = now_ns();
	for (__u32 i = 0; i < MAX_STREAMS; i++) {
		__u32 k = i;
		struct recovery *r = bpf_map_lookup_elem(&recoveries, &k);
		if (!r)
			continue;
		bpf_spin_lock(&r->lock);
		if (r->deadline_ns && now >= r->deadline_ns)
			reset_recovery(r);
		bpf_spin_unlock(&r->lock);
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
