//! The map keys and values of the BPF programs in `bpf/` as Rust sees them: `#[repr(C)]`
//! mirrors of the C structs (same fields, same order, explicit padding), which aya reads
//! and writes as plain bytes. The C source is the reference; a layout test pins the sizes.
//!
//! What it does not do: load or attach programs (lab's fast paths do, through aya's safe
//! API); this module holds the `unsafe impl aya::Pod` that lets aya copy these types.

/// Ports, streams and out-ports a relay fast path serves at most (`MAX_PORTS`,
/// `MAX_STREAMS`, `MAX_OUT` in `bpf/frer.c`).
pub const FRER_MAX_PORTS: usize = 64;
/// See [`FRER_MAX_PORTS`].
pub const FRER_MAX_STREAMS: usize = 64;
/// See [`FRER_MAX_PORTS`].
pub const FRER_MAX_OUT: usize = 8;
/// Words of a recovery function's history bitmap (2048 bits).
pub const FRER_HIST_WORDS: usize = 32;

/// `struct port_cfg`: an ingress port's index and where frames of no stream go.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrerPortCfg {
    /// The port's index in the relay's port list.
    pub port: u32,
    /// Interface index frames of no stream are redirected to; 0 drops them.
    pub pass_ifindex: u32,
    /// The pass port's index.
    pub pass_port: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct rule_key`: (ingress interface, destination MAC); an all-zero MAC matches any.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrerRuleKey {
    /// Ingress interface index.
    pub ifindex: u32,
    /// Destination MAC.
    pub mac: [u8; 6],
    /// Padding.
    pub pad: u16,
}

/// `struct rule`: a stream's function on an in-port.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrerRule {
    /// 1 replicate, 2 eliminate.
    pub kind: u32,
    /// The stream's index.
    pub stream: u32,
    /// Elimination: the in-port's index among the stream's paths.
    pub path: u32,
    /// Out-ports used.
    pub n_out: u32,
    /// Their interface indexes.
    pub out_ifindex: [u32; FRER_MAX_OUT],
    /// Their port indexes.
    pub out_port: [u32; FRER_MAX_OUT],
}

/// `struct generator`: a sequence generator (the low 16 bits of `next`) and its frames.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrerGenerator {
    /// The next sequence number in the low 16 bits.
    pub next: u64,
    /// Frames replicated.
    pub frames: u64,
}

/// `struct recovery`: a sequence recovery function, its configuration, state and counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrerRecovery {
    /// `struct bpf_spin_lock` (the kernel's; zero when written from user space).
    pub lock: u32,
    /// 0 Vector, 1 Match.
    pub algorithm: u32,
    /// History length.
    pub history: u32,
    /// 1 take frames without a sequence number, 2 elimination off, 4 keep the tag.
    pub flags: u32,
    /// Take any number next (after a reset).
    pub take_any: u32,
    /// RecovSeqNum.
    pub recov: u32,
    /// History positions holding numbers at or after the first accepted since the reset.
    pub valid: u32,
    /// Padding.
    pub pad: u32,
    /// The reset timer, ns; 0 none.
    pub reset_ns: u64,
    /// When the timer runs out, ns of the programs' clock; 0 not running.
    pub deadline_ns: u64,
    /// Passed frames.
    pub passed: u64,
    /// Discarded duplicates.
    pub discarded: u64,
    /// Out of order.
    pub out_of_order: u64,
    /// Rogue.
    pub rogue: u64,
    /// Lost.
    pub lost: u64,
    /// Lost before the first accepted number after a reset.
    pub lost_before_first: u64,
    /// Frames without an R-TAG.
    pub tagless: u64,
    /// Resets.
    pub resets: u64,
    /// The history bitmap, indexed by sequence number modulo 2048.
    pub hist: [u64; FRER_HIST_WORDS],
}

/// `struct port_counters` (per CPU).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrerPortCounters {
    /// Frames received.
    pub received: u64,
    /// Frames sent.
    pub sent: u64,
    /// Frames the kernel refused to send.
    pub send_errors: u64,
}

/// `struct path_counters` (per CPU).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrerPathCounters {
    /// Frames received on the path.
    pub received: u64,
    /// Of them, passed (this path delivered first).
    pub passed: u64,
}

/// `struct relay_counters` (per CPU).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrerRelayCounters {
    /// Frames of no stream passed on.
    pub unmatched_passed: u64,
    /// Frames of no stream dropped.
    pub unmatched_dropped: u64,
    /// Runts and frames the fast path cannot handle.
    pub malformed: u64,
    /// Frames longer than the relay's largest.
    pub too_long: u64,
}

/// `struct impair_port` (`bpf/impair.c`): one of an impairment stage's two interfaces.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImpairPort {
    /// 0 forward (a to b), 1 reverse.
    pub dir: u32,
    /// Where its frames leave.
    pub out_ifindex: u32,
    /// 1 in router mode.
    pub router: u32,
    /// Router mode: the node's address on this interface (network order).
    pub local_in: u32,
    /// Router mode: the node's address on the other interface (network order).
    pub local_out: u32,
    /// This interface's MAC.
    pub in_mac: [u8; 6],
    /// The outgoing interface's MAC.
    pub out_mac: [u8; 6],
    /// The next hop behind the outgoing interface.
    pub neighbour: [u8; 6],
    /// Padding.
    pub pad: [u8; 2],
}

/// `struct impair_params`: one direction's decisions as thresholds of rand's Bernoulli.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImpairParams {
    /// 0 none, 1 every frame, 2 Bernoulli, 3 Gilbert.
    pub loss_mode: u32,
    /// 1 when duplication draws.
    pub dup_on: u32,
    /// Bernoulli loss threshold.
    pub loss_t: u64,
    /// Gilbert: into the loss state.
    pub enter_t: u64,
    /// Gilbert: out of it.
    pub exit_t: u64,
    /// Duplication threshold.
    pub dup_t: u64,
}

/// `struct impair_rng`: one direction's generator state (xoshiro256++).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImpairRng {
    /// `struct bpf_spin_lock` (zero when written from user space).
    pub lock: u32,
    /// Gilbert: in the loss state.
    pub bursting: u32,
    /// The generator's state.
    pub s: [u64; 4],
}

/// `struct impair_counters`: one direction's counters (per CPU).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImpairCounters {
    /// Frames that entered.
    pub frames_in: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Dropped by the loss model.
    pub dropped_loss: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Frames (copies included) handed on.
    pub frames_out: u64,
    /// Their bytes.
    pub bytes_out: u64,
    /// Clones the kernel refused.
    pub send_errors: u64,
}

/// `struct stage_counters`: the stage's own counters (per CPU).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImpairStageCounters {
    /// Router mode: left to the node's kernel.
    pub not_forwarded: u64,
    /// Router mode: TTL ran out.
    pub ttl_expired: u64,
    /// Longer than the stage forwards.
    pub too_long: u64,
}

// SAFETY: each type is `#[repr(C)]`, `Copy`, made only of integers and arrays of integers
// with explicit padding fields (no implicit padding bytes), so every bit pattern is a valid
// value and copying it as bytes is sound; the layout test below pins the sizes the C
// structs have.
unsafe impl aya::Pod for FrerPortCfg {}
// SAFETY: as above.
unsafe impl aya::Pod for FrerRuleKey {}
// SAFETY: as above.
unsafe impl aya::Pod for FrerRule {}
// SAFETY: as above.
unsafe impl aya::Pod for FrerGenerator {}
// SAFETY: as above.
unsafe impl aya::Pod for FrerRecovery {}
// SAFETY: as above.
unsafe impl aya::Pod for FrerPortCounters {}
// SAFETY: as above.
unsafe impl aya::Pod for FrerPathCounters {}
// SAFETY: as above.
unsafe impl aya::Pod for FrerRelayCounters {}
// SAFETY: as above.
unsafe impl aya::Pod for ImpairPort {}
// SAFETY: as above.
unsafe impl aya::Pod for ImpairParams {}
// SAFETY: as above.
unsafe impl aya::Pod for ImpairRng {}
// SAFETY: as above.
unsafe impl aya::Pod for ImpairCounters {}
// SAFETY: as above.
unsafe impl aya::Pod for ImpairStageCounters {}

#[cfg(test)]
mod test {
    use super::*;
    use std::mem::size_of;

    /// The sizes of the C structs (clang -target bpf, x86-64 alike), which `bpf/frer.c`
    /// and `bpf/impair.c` assert at compile time too.
    #[test]
    fn layouts_match_the_c_structs() {
        assert_eq!(size_of::<FrerPortCfg>(), 16);
        assert_eq!(size_of::<FrerRuleKey>(), 12);
        assert_eq!(size_of::<FrerRule>(), 16 + 2 * 4 * FRER_MAX_OUT);
        assert_eq!(size_of::<FrerGenerator>(), 16);
        assert_eq!(size_of::<FrerRecovery>(), 32 + 10 * 8 + 8 * FRER_HIST_WORDS);
        assert_eq!(std::mem::offset_of!(FrerRecovery, reset_ns), 32);
        assert_eq!(std::mem::offset_of!(FrerRecovery, hist), 112);
        assert_eq!(size_of::<FrerPortCounters>(), 24);
        assert_eq!(size_of::<FrerPathCounters>(), 16);
        assert_eq!(size_of::<FrerRelayCounters>(), 32);
        // bpf/impair.c
        assert_eq!(size_of::<ImpairPort>(), 40);
        assert_eq!(size_of::<ImpairParams>(), 40);
        assert_eq!(size_of::<ImpairRng>(), 40);
        assert_eq!(size_of::<ImpairCounters>(), 56);
        assert_eq!(size_of::<ImpairStageCounters>(), 24);
    }
}
