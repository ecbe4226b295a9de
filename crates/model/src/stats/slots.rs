//! Packets counted by the time they were sent, so that a loss lands in the interval in which
//! the missing packet was due, not the one in which the gap was noticed.
//!
//! What this module does: [`TxSlots`] counts packets by their sender timestamp in fixed slots
//! aligned to the Unix epoch (`slot = tx_ns / width`). The sender counts what it sent, the
//! receiver what it accepted (first copies); both use the same width, chosen from the
//! interval by [`slot_width`], so `sent − received` of a slot is exactly the packets of that
//! slot that never arrived (late ones included, as in the totals). [`lost_per_interval`] then
//! adds the slots up per reporting interval, each slot going to the interval that holds its
//! middle: a loss is placed to within half a slot (a twentieth of an interval).
//!
//! What it does not do: no clocks (timestamps are inputs), no sequence accounting (see
//! [`super::seq`]). The sender's timestamps are its own clock on both sides, so the two
//! hosts' clocks need not agree.

use serde::{Deserialize, Serialize};

use crate::clock::UnixNanos;

/// Most slots one stream keeps (they travel in its report); a longer test counts the rest as
/// `beyond` and its losses stay where they were noticed.
pub const MAX_SLOTS: usize = 4096;
/// Narrowest slot.
pub const MIN_SLOT_NS: u64 = 1_000_000;

/// The slot width for a test reporting every `interval_ns`: a twentieth of it, at least
/// 1 ms, and wide enough that `duration_ns` fits in half of [`MAX_SLOTS`]. A test of more
/// than 1024 intervals gets slots wider than half an interval, too coarse to place a loss
/// ([`lost_per_interval`] then declines).
pub fn slot_width(interval_ns: u64, duration_ns: u64) -> u64 {
    (interval_ns / 20)
        .max(MIN_SLOT_NS)
        .max(duration_ns.div_ceil(MAX_SLOTS as u64 / 2))
}

/// Packets per slot of sender time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxSlots {
    /// Slot width, ns (0: not counting).
    pub width_ns: u64,
    /// The epoch slot number of `counts[0]`.
    pub first: u64,
    /// Packets per slot from `first` on.
    pub counts: Vec<u64>,
    /// Packets stamped outside the [`MAX_SLOTS`] slots from `first`.
    #[serde(default)]
    pub beyond: u64,
}

impl TxSlots {
    /// Slots of `width_ns` (0 turns counting off).
    pub fn new(width_ns: u64) -> TxSlots {
        TxSlots {
            width_ns,
            ..TxSlots::default()
        }
    }

    /// Counts `n` packets stamped `tx`. The first call fixes the first slot.
    pub fn record(&mut self, tx: UnixNanos, n: u64) {
        if self.width_ns == 0 {
            return;
        }
        let slot = tx.0 / self.width_ns;
        if self.counts.is_empty() {
            self.first = slot;
        }
        if slot < self.first {
            // An earlier packet overtaken at the start: the slots grow backwards.
            let back = usize::try_from(self.first - slot).unwrap_or(usize::MAX);
            if back.saturating_add(self.counts.len()) <= MAX_SLOTS {
                self.counts.splice(0..0, std::iter::repeat_n(0, back));
                self.first = slot;
            }
        }
        let Some(i) = slot
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|i| *i < MAX_SLOTS)
        else {
            self.beyond += n;
            return;
        };
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
    }

    /// Packets counted in slots.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    fn count_at(&self, slot: u64) -> u64 {
        slot.checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }
}

/// Packets lost per reporting interval: for each slot the sender counted, `sent − received`,
/// added to the interval holding the slot's middle. `origin` is the sender's clock at the
/// start of interval 0; `ends_s` the intervals' ends in seconds from it (the last interval
/// also takes what came after it). `None` when the two counts cannot be compared (different
/// widths, no slots, or packets outside the slots).
pub fn lost_per_interval(
    sent: &TxSlots,
    received: &TxSlots,
    origin: UnixNanos,
    ends_s: &[f64],
) -> Option<Vec<u64>> {
    if sent.width_ns == 0 || sent.width_ns != received.width_ns || ends_s.is_empty() {
        return None;
    }
    if sent.beyond > 0 || received.beyond > 0 {
        return None;
    }
    // Slots wider than half the shortest whole interval cannot tell intervals apart.
    // (The last interval may be a partial one.)
    let lengths: Vec<f64> = ends_s
        .first()
        .copied()
        .into_iter()
        .chain(ends_s.windows(2).map(|w| w[1] - w[0]))
        .collect();
    let whole = &lengths[..lengths.len().saturating_sub(1).max(1)];
    let shortest = whole.iter().copied().fold(f64::INFINITY, f64::min);
    if sent.width_ns as f64 / 1e9 > shortest / 2.0 {
        return None;
    }
    let mut lost = vec![0u64; ends_s.len()];
    for (i, &n) in sent.counts.iter().enumerate() {
        let slot = sent.first + i as u64;
        let missing = n.saturating_sub(received.count_at(slot));
        if missing == 0 {
            continue;
        }
        let middle_ns = slot as f64 * sent.width_ns as f64 + sent.width_ns as f64 / 2.0;
        let at_s = (middle_ns - origin.0 as f64) / 1e9;
        let k = ends_s
            .iter()
            .position(|end| at_s < *end)
            .unwrap_or(ends_s.len() - 1);
        lost[k] += missing;
    }
    Some(lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000_000_000;

    fn at_ms(ms: u64) -> UnixNanos {
        UnixNanos(T0 + ms * 1_000_000)
    }

    #[test]
    fn width_follows_the_interval_and_the_duration() {
        assert_eq!(slot_width(1_000_000_000, 10_000_000_000), 50_000_000);
        assert_eq!(slot_width(10_000_000, 1_000_000_000), MIN_SLOT_NS);
        // A week at 1 s intervals still fits, in slots too wide to place a loss.
        let week = 7 * 86_400 * 1_000_000_000u64;
        let w = slot_width(1_000_000_000, week);
        assert!(week / w < MAX_SLOTS as u64);
        let (mut s, r) = (TxSlots::new(w), TxSlots::new(w));
        s.record(at_ms(0), 1);
        assert!(lost_per_interval(&s, &r, at_ms(0), &[1.0, 2.0, 3.0]).is_none());
    }

    /// A 5 s stream at 1000 packets/s, one interval per second; the packets sent during
    /// second 3 (2.0 ..< 3.0 s) never arrive, and the receiver notices the gap only at 3.4 s.
    #[test]
    fn a_loss_at_second_three_lands_in_interval_three() {
        let w = slot_width(1_000_000_000, 5_000_000_000);
        let (mut sent, mut recv) = (TxSlots::new(w), TxSlots::new(w));
        for ms in 0..5_000 {
            sent.record(at_ms(ms), 1);
            if !(2_000..3_000).contains(&ms) {
                recv.record(at_ms(ms), 1);
            }
        }
        let ends = [1.0, 2.0, 3.0, 4.0, 5.0];
        let lost = lost_per_interval(&sent, &recv, at_ms(0), &ends).unwrap();
        assert_eq!(lost, vec![0, 0, 1_000, 0, 0]);
        assert_eq!(sent.total(), 5_000);
    }

    #[test]
    fn the_tail_goes_to_the_last_interval_and_mismatches_give_none() {
        let w = 1_000_000;
        let (mut sent, recv) = (TxSlots::new(w), TxSlots::new(w));
        sent.record(at_ms(0), 3);
        sent.record(at_ms(2_500), 2); // after the last interval's end
        let lost = lost_per_interval(&sent, &recv, at_ms(0), &[1.0, 2.0]).unwrap();
        assert_eq!(lost, vec![3, 2]);
        assert!(lost_per_interval(&sent, &TxSlots::new(2 * w), at_ms(0), &[1.0]).is_none());
        assert!(lost_per_interval(&TxSlots::new(0), &recv, at_ms(0), &[1.0]).is_none());
        // A packet overtaken at the start moves the first slot back.
        let mut odd = TxSlots::new(w);
        odd.record(at_ms(10), 1);
        odd.record(at_ms(5), 1);
        assert_eq!(
            (odd.first, odd.counts.len(), odd.beyond),
            (at_ms(5).0 / w, 6, 0)
        );
        // A packet beyond the slots that fit makes the counts incomparable.
        odd.record(UnixNanos(at_ms(5).0 + MAX_SLOTS as u64 * w), 1);
        assert_eq!(odd.beyond, 1);
        assert!(lost_per_interval(&odd, &recv, at_ms(0), &[1.0]).is_none());
    }

    #[test]
    fn duplicates_and_extra_receptions_never_make_negative_loss() {
        let w = 1_000_000;
        let (mut sent, mut recv) = (TxSlots::new(w), TxSlots::new(w));
        sent.record(at_ms(0), 1);
        recv.record(at_ms(0), 2);
        let lost = lost_per_interval(&sent, &recv, at_ms(0), &[1.0]).unwrap();
        assert_eq!(lost, vec![0]);
    }
}
