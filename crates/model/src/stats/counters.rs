//! The one counters struct: the packet accounting of one stream.

use serde::{Deserialize, Serialize};

/// Packet accounting of one stream: what its sender sent and what its receiver made of the
/// sequence numbers (RFC 4737 reordering, RFC 5560 duplicates). Receivers
/// ([`super::seq::SeqTracker`], [`super::receiver::StreamReceiver`], [`super::table`]), live
/// snapshots, trial reports and the methods' inputs embed it instead of keeping their own.
///
/// A side fills what it knows: a sender `sent`, a receiver the rest; [`Counters::settle`]
/// combines both once the test is over.
///
/// Serialised with the names the control protocol's receiver report has carried since
/// version 2 (`packets` for `received`, `lost_so_far` for `lost`; `sent` only when set), so
/// that the reports that embed it keep their wire form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// Packets (datagrams, frames) the sender handed to the kernel.
    #[serde(skip_serializing_if = "is_zero")]
    pub sent: u64,
    /// Unique packets received (first copies, including reordered ones; not late ones).
    #[serde(rename = "packets")]
    pub received: u64,
    /// Sequence numbers not received: while a test runs, the numbers missing below the
    /// highest one seen; once settled, `sent − received`.
    #[serde(rename = "lost_so_far")]
    pub lost: u64,
    /// Extra copies of packets already received (RFC 5560).
    pub duplicates: u64,
    /// Packets that arrived after a packet with a higher sequence number (RFC 4737).
    pub reordered: u64,
    /// Packets older than the accounting window: not counted as received (they stay lost).
    pub late: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counters {
    /// The receiver's counters with the sender's count: `lost = sent − received`.
    pub fn settle(self, sent: u64) -> Counters {
        Counters {
            sent,
            lost: sent.saturating_sub(self.received),
            ..self
        }
    }

    /// `lost / sent`, `None` when nothing was sent.
    pub fn loss_ratio(&self) -> Option<f64> {
        (self.sent > 0).then(|| self.lost as f64 / self.sent as f64)
    }

    /// What changed since `earlier` (each counter saturating at 0).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            sent: self.sent.saturating_sub(earlier.sent),
            received: self.received.saturating_sub(earlier.received),
            lost: self.lost.saturating_sub(earlier.lost),
            duplicates: self.duplicates.saturating_sub(earlier.duplicates),
            reordered: self.reordered.saturating_sub(earlier.reordered),
            late: self.late.saturating_sub(earlier.late),
        }
    }

    /// Both added up (two streams, two intervals), saturating.
    pub fn plus(&self, other: &Counters) -> Counters {
        Counters {
            sent: self.sent.saturating_add(other.sent),
            received: self.received.saturating_add(other.received),
            lost: self.lost.saturating_add(other.lost),
            duplicates: self.duplicates.saturating_add(other.duplicates),
            reordered: self.reordered.saturating_add(other.reordered),
            late: self.late.saturating_add(other.late),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn settle_since_and_plus() {
        let rx = Counters {
            received: 90,
            lost: 3,
            duplicates: 2,
            reordered: 1,
            late: 1,
            ..Counters::default()
        };
        let done = rx.settle(100);
        assert_eq!((done.sent, done.lost), (100, 10));
        assert_eq!(done.loss_ratio(), Some(0.1));
        assert_eq!(Counters::default().loss_ratio(), None);
        let d = done.since(&rx);
        assert_eq!((d.sent, d.received, d.lost), (100, 0, 7));
        assert_eq!(rx.since(&done).sent, 0);
        let two = done.plus(&done);
        assert_eq!((two.sent, two.duplicates), (200, 4));
        // Absent fields read as zero, so a side that knows only some of them can send them.
        let only: Counters = serde_json::from_str(r#"{"packets":5}"#).unwrap();
        assert_eq!(only.received, 5);
        // The receiver report's wire names (control protocol version 2).
        let json = serde_json::to_value(rx).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"packets": 90, "lost_so_far": 3, "duplicates": 2,
                "reordered": 1, "late": 1})
        );
    }
}
