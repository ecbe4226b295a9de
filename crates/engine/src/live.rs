//! Live per-stream counters: written by one data-plane thread, read by anyone.
//!
//! The data thread stores its running totals after each batch with relaxed atomic stores
//! (one writer, no locks); the controller reads a [`LiveSnapshot`] at every interval tick
//! and reports the difference to the previous one.

use std::sync::atomic::{AtomicU64, Ordering};

/// Running totals of one stream.
#[derive(Debug, Default)]
pub struct LiveCounters {
    packets: AtomicU64,
    bytes: AtomicU64,
    lost: AtomicU64,
    duplicates: AtomicU64,
    reordered: AtomicU64,
    jitter_ns: AtomicU64,
    retransmits: AtomicU64,
}

/// A copy of [`LiveCounters`] at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LiveSnapshot {
    /// Packets sent (sender) or unique packets received (receiver).
    pub packets: u64,
    /// Payload bytes sent or received.
    pub bytes: u64,
    /// Receiver: sequence numbers not yet seen below the highest seen.
    pub lost: u64,
    /// Receiver: extra copies.
    pub duplicates: u64,
    /// Receiver: RFC 4737 reordered packets.
    pub reordered: u64,
    /// Receiver: current RFC 3550 jitter in nanoseconds.
    pub jitter_ns: u64,
    /// TCP sender: retransmitted segments so far.
    pub retransmits: u64,
}

impl LiveCounters {
    /// Publishes new totals (called by the single writer thread).
    pub fn publish(&self, s: &LiveSnapshot) {
        self.packets.store(s.packets, Ordering::Relaxed);
        self.bytes.store(s.bytes, Ordering::Relaxed);
        self.lost.store(s.lost, Ordering::Relaxed);
        self.duplicates.store(s.duplicates, Ordering::Relaxed);
        self.reordered.store(s.reordered, Ordering::Relaxed);
        self.jitter_ns.store(s.jitter_ns, Ordering::Relaxed);
        self.retransmits.store(s.retransmits, Ordering::Relaxed);
    }

    /// Reads the current totals.
    pub fn snapshot(&self) -> LiveSnapshot {
        LiveSnapshot {
            packets: self.packets.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            reordered: self.reordered.load(Ordering::Relaxed),
            jitter_ns: self.jitter_ns.load(Ordering::Relaxed),
            retransmits: self.retransmits.load(Ordering::Relaxed),
        }
    }
}

impl LiveSnapshot {
    /// Counter increase since `earlier` (jitter is a level, so the current value is kept).
    pub fn since(&self, earlier: &LiveSnapshot) -> LiveSnapshot {
        LiveSnapshot {
            packets: self.packets.saturating_sub(earlier.packets),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            lost: self.lost.saturating_sub(earlier.lost),
            duplicates: self.duplicates.saturating_sub(earlier.duplicates),
            reordered: self.reordered.saturating_sub(earlier.reordered),
            jitter_ns: self.jitter_ns,
            retransmits: self.retransmits.saturating_sub(earlier.retransmits),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn publish_then_snapshot_and_delta() {
        let c = LiveCounters::default();
        let a = LiveSnapshot {
            packets: 10,
            bytes: 1000,
            lost: 1,
            jitter_ns: 5,
            ..Default::default()
        };
        c.publish(&a);
        assert_eq!(c.snapshot(), a);
        let b = LiveSnapshot {
            packets: 25,
            bytes: 2500,
            lost: 1,
            jitter_ns: 7,
            ..Default::default()
        };
        c.publish(&b);
        let d = c.snapshot().since(&a);
        assert_eq!(d.packets, 15);
        assert_eq!(d.bytes, 1500);
        assert_eq!(d.lost, 0);
        assert_eq!(d.jitter_ns, 7);
    }
}
