//! Exact loss, duplicate and reorder accounting over a sliding window of sequence numbers.
//!
//! What this module does: [`SeqTracker`] classifies every arriving sequence number (in arrival
//! order) and keeps counters, using a bitmap of the sequence numbers received in the window
//! `[highest + 1 − window, highest]`. Memory is `window / 8` bytes; every arrival is O(1) except
//! a forward move of the window, which clears the bits it uncovers word by word (at most
//! `window / 64` words, however large the jump).
//!
//! The rules, in the order they are applied (`NextExp = highest + 1`):
//! - **In order / gap** (RFC 4737 §3.3, Type-P-Reordered = FALSE): `seq >= NextExp`. The packet
//!   becomes the new highest; `seq > NextExp` is a [`Arrival::Gap`] of `seq − NextExp` packets not
//!   (yet) received.
//! - **Late** (local policy): `seq` older than the window (`highest − seq >= window`) or below the
//!   origin. Such a packet is too old to tell a late original from a duplicate, so it is
//!   **not** counted as received: it stays counted as lost and is counted in
//!   [`Counters::late`] instead. Choose a window larger than the worst reordering you expect
//!   (the default covers 65 536 packets, e.g. 65 ms at 1 Mpps).
//! - **Duplicate** (RFC 5560): the sequence number was already received; only the first copy is
//!   evaluated, so a duplicate changes nothing but [`Counters::duplicates`] (it is never
//!   credited as received in loss computations, delay-metrics.md §4).
//! - **Reordered** (RFC 4737 §3.3, Type-P-Reordered = TRUE): `seq < NextExp` and not received
//!   before. It counts as received (reducing the in-flight loss) and as reordered. Its
//!   displacement `NextExp − 1 − seq` (how far behind the highest sequence number it arrived)
//!   feeds [`SeqTracker::max_reorder_distance`], a cheap stand-in for the RFC 4737 §4.2 reordering
//!   extent (which counts arrival positions, not sequence numbers).
//!
//! Reordered packet ratio (RFC 4737 §4.1) = `reordered / received`.
//!
//! What it does not do: no RFC 4737 arrival-position extent, n-reordering or gap statistics, no
//! per-packet duplicate counts (`packets_with_duplicates`), no wrap-around (sequence numbers are
//! 64-bit and do not wrap), no timing (see [`super::receiver`]).

use serde::{Deserialize, Serialize};

use super::counters::Counters;

/// Default window: 65 536 sequence numbers (8 KiB of bitmap).
pub const DEFAULT_WINDOW: u64 = 65_536;
/// Smallest window (one bitmap word).
pub const MIN_WINDOW: u64 = 64;
/// Largest window: 2²⁶ sequence numbers (8 MiB of bitmap). Larger requests are clamped.
pub const MAX_WINDOW: u64 = 1 << 26;

/// How one arriving packet was classified by [`SeqTracker::on_packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arrival {
    /// `seq == NextExp`: the next expected packet.
    InOrder,
    /// `seq > NextExp`: in order, but `skipped` packets before it have not arrived (yet).
    Gap {
        /// `seq − NextExp`.
        skipped: u64,
    },
    /// `seq < NextExp`, first copy, inside the window: counted as received and as reordered.
    Reordered,
    /// Already received: not counted as received again.
    Duplicate,
    /// Older than the window (or below the origin): not counted as received (stays lost).
    Late,
}

impl Arrival {
    /// True when the packet was counted as received (`InOrder`, `Gap` or `Reordered`): the first
    /// copy of a packet, which the other statistics should evaluate.
    pub fn is_accepted(self) -> bool {
        matches!(
            self,
            Arrival::InOrder | Arrival::Gap { .. } | Arrival::Reordered
        )
    }
}

/// Sequence-number accounting for one stream (see the module docs for the rules).
#[derive(Clone, Debug)]
pub struct SeqTracker {
    /// Window size, a power of two ≥ 64.
    window: u64,
    /// Bit `s & (window − 1)` is set when `s` (inside the window) was received.
    bits: Vec<u64>,
    /// First expected sequence number; set by the first packet when not given.
    origin: Option<u64>,
    /// Highest sequence number received, `None` before the first packet.
    highest: Option<u64>,
    /// `received`, `duplicates`, `reordered` and `late`; `lost` is derived on reading.
    counters: Counters,
    max_reorder_distance: u64,
}

impl Default for SeqTracker {
    /// [`DEFAULT_WINDOW`], origin set by the first packet.
    fn default() -> Self {
        SeqTracker::new(DEFAULT_WINDOW)
    }
}

impl SeqTracker {
    /// A tracker whose origin is the first sequence number that arrives.
    ///
    /// `window` is rounded up to a power of two and clamped to [`MIN_WINDOW`]`..=`[`MAX_WINDOW`].
    /// With this constructor, packets lost before the first arrival are invisible; use
    /// [`SeqTracker::with_origin`] when the first sequence number is known.
    pub fn new(window: u64) -> SeqTracker {
        let window = window
            .clamp(MIN_WINDOW, MAX_WINDOW)
            .checked_next_power_of_two()
            .unwrap_or(MAX_WINDOW)
            .min(MAX_WINDOW);
        // window ≤ 2^26, so the word count fits in usize on every platform.
        let words = usize::try_from(window / 64).unwrap_or(1);
        SeqTracker {
            window,
            bits: vec![0; words],
            origin: None,
            highest: None,
            counters: Counters::default(),
            max_reorder_distance: 0,
        }
    }

    /// A tracker that expects `first_expected_seq` first, so that losing the first packets
    /// counts as loss. wirebench senders start every stream at 0: receivers use
    /// `with_origin(window, 0)`. Sequence numbers below the origin are [`Arrival::Late`].
    pub fn with_origin(window: u64, first_expected_seq: u64) -> SeqTracker {
        let mut t = SeqTracker::new(window);
        t.origin = Some(first_expected_seq);
        t
    }

    /// The window size actually used (a power of two).
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The first expected sequence number (`None` until the first packet when not given).
    pub fn origin(&self) -> Option<u64> {
        self.origin
    }

    /// Classifies one arriving sequence number and updates the counters.
    pub fn on_packet(&mut self, seq: u64) -> Arrival {
        let Some(highest) = self.highest else {
            return self.first_packet(seq);
        };
        if seq > highest {
            // RFC 4737 §3.3: seq >= NextExp, not reordered; NextExp becomes seq + 1.
            self.advance(highest, seq);
            self.set(seq);
            self.highest = Some(seq);
            self.counters.received += 1;
            let skipped = seq - highest - 1;
            return if skipped == 0 {
                Arrival::InOrder
            } else {
                Arrival::Gap { skipped }
            };
        }
        let distance = highest - seq;
        if distance >= self.window || self.origin.is_some_and(|o| seq < o) {
            // Outside the window: cannot tell a late original from a duplicate.
            self.counters.late += 1;
            return Arrival::Late;
        }
        if self.get(seq) {
            // RFC 5560: only the first copy is evaluated.
            self.counters.duplicates += 1;
            return Arrival::Duplicate;
        }
        // RFC 4737 §3.3: seq < NextExp, first copy ⇒ Type-P-Reordered = TRUE.
        self.set(seq);
        self.counters.received += 1;
        self.counters.reordered += 1;
        self.max_reorder_distance = self.max_reorder_distance.max(distance);
        Arrival::Reordered
    }

    fn first_packet(&mut self, seq: u64) -> Arrival {
        let origin = *self.origin.get_or_insert(seq);
        if seq < origin {
            self.counters.late += 1;
            return Arrival::Late;
        }
        // The bitmap is all zeros: nothing to clear.
        self.set(seq);
        self.highest = Some(seq);
        self.counters.received += 1;
        match seq - origin {
            0 => Arrival::InOrder,
            skipped => Arrival::Gap { skipped },
        }
    }

    /// The window moves from ending at `old` to ending at `new > old`: clear the bits of
    /// `old + 1 ..= new`, which still hold the sequence numbers that leave the window.
    fn advance(&mut self, old: u64, new: u64) {
        let count = new - old;
        if count >= self.window {
            self.bits.fill(0);
            return;
        }
        let mask = self.window - 1;
        let mut pos = (old + 1) & mask;
        let mut left = count;
        while left > 0 {
            // pos < window ≤ 2^26: fits in usize.
            let word = (pos / 64) as usize;
            let bit = pos % 64;
            let n = left.min(64 - bit);
            let m = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            self.bits[word] &= !m;
            left -= n;
            pos = (pos + n) & mask;
        }
    }

    fn index(&self, seq: u64) -> (usize, u64) {
        let pos = seq & (self.window - 1);
        ((pos / 64) as usize, 1u64 << (pos % 64))
    }

    fn get(&self, seq: u64) -> bool {
        let (w, b) = self.index(seq);
        self.bits[w] & b != 0
    }

    fn set(&mut self, seq: u64) {
        let (w, b) = self.index(seq);
        self.bits[w] |= b;
    }

    /// The counters, `lost` being [`SeqTracker::lost_so_far`] (`sent` stays 0: the
    /// receiver does not know it).
    pub fn counters(&self) -> Counters {
        Counters {
            lost: self.lost_so_far(),
            ..self.counters
        }
    }

    /// Highest sequence number received, `None` before the first packet.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// Packets expected so far: `highest − origin + 1`, 0 before the first accepted packet.
    pub fn expected_so_far(&self) -> u64 {
        match (self.highest, self.origin) {
            (Some(h), Some(o)) => (h - o).saturating_add(1),
            _ => 0,
        }
    }

    /// In-flight loss: `expected_so_far − received`. Packets not seen yet count as lost for now;
    /// later reordered arrivals reduce this number.
    pub fn lost_so_far(&self) -> u64 {
        self.expected_so_far()
            .saturating_sub(self.counters.received)
    }

    /// Final loss once the sender's count is known: `sent − received` (saturating).
    pub fn lost_given_sent(&self, sent: u64) -> u64 {
        sent.saturating_sub(self.counters.received)
    }

    /// Largest `NextExp − 1 − seq` over reordered packets (0 when none was reordered).
    pub fn max_reorder_distance(&self) -> u64 {
        self.max_reorder_distance
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    /// The naive model: a set of every accepted sequence number and the highest one.
    struct Model {
        window: u64,
        origin: Option<u64>,
        seen: HashSet<u64>,
        highest: Option<u64>,
        c: Counters,
        max_dist: u64,
    }

    impl Model {
        fn new(window: u64, origin: Option<u64>) -> Model {
            Model {
                window,
                origin,
                seen: HashSet::new(),
                highest: None,
                c: Counters::default(),
                max_dist: 0,
            }
        }

        fn on_packet(&mut self, s: u64) -> Arrival {
            let origin = *self.origin.get_or_insert(s);
            let late = s < origin || self.highest.is_some_and(|h| s < h && h - s >= self.window);
            let next_exp = self.highest.map_or(origin, |h| h + 1);
            let a = if s >= next_exp {
                self.highest = Some(s);
                self.seen.insert(s);
                self.c.received += 1;
                if s == next_exp {
                    Arrival::InOrder
                } else {
                    Arrival::Gap {
                        skipped: s - next_exp,
                    }
                }
            } else if late {
                self.c.late += 1;
                Arrival::Late
            } else if self.seen.contains(&s) {
                self.c.duplicates += 1;
                Arrival::Duplicate
            } else {
                self.seen.insert(s);
                self.c.received += 1;
                self.c.reordered += 1;
                self.max_dist = self.max_dist.max(next_exp - 1 - s);
                Arrival::Reordered
            };
            let expected = match (self.highest, self.origin) {
                (Some(h), Some(o)) => h - o + 1,
                _ => 0,
            };
            self.c.lost = expected - self.c.received;
            a
        }
    }

    fn check(window: u64, origin: Option<u64>, seqs: &[u64]) -> Result<(), TestCaseError> {
        let mut t = match origin {
            Some(o) => SeqTracker::with_origin(window, o),
            None => SeqTracker::new(window),
        };
        let mut m = Model::new(t.window(), origin);
        for &s in seqs {
            let got = t.on_packet(s);
            let want = m.on_packet(s);
            prop_assert_eq!(got, want, "seq {}", s);
        }
        prop_assert_eq!(t.counters(), m.c);
        prop_assert_eq!(t.max_reorder_distance(), m.max_dist);
        let expected = match (m.highest, m.origin) {
            (Some(h), Some(o)) => h - o + 1,
            _ => 0,
        };
        prop_assert_eq!(t.expected_so_far(), expected);
        prop_assert_eq!(t.lost_so_far(), expected - m.c.received);
        Ok(())
    }

    /// 0..n with each packet displaced by less than `max_disp` positions, some dropped and some
    /// duplicated (copies arrive shortly after the original).
    fn bounded_stream(n: u64, max_disp: u64) -> impl Strategy<Value = Vec<u64>> {
        (
            proptest::collection::vec(0..max_disp, n as usize),
            proptest::collection::vec(0u8..100, n as usize),
        )
            .prop_map(move |(disp, fate)| {
                let mut keyed: Vec<(u64, u64)> = Vec::new();
                for s in 0..n {
                    let i = s as usize;
                    match fate[i] {
                        0..=9 => {} // dropped
                        10..=19 => {
                            keyed.push((s + disp[i], s));
                            keyed.push((s + disp[i] + u64::from(fate[i] % 5), s));
                        }
                        _ => keyed.push((s + disp[i], s)),
                    }
                }
                keyed.sort();
                keyed.into_iter().map(|(_, s)| s).collect()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn bounded_reordering_matches_model(
            seqs in bounded_stream(2_000, 60),
            base in 0u64..1_000_000,
        ) {
            let seqs: Vec<u64> = seqs.into_iter().map(|s| s + base).collect();
            // Displacement < window: nothing is late, with or without an origin.
            check(64, Some(base), &seqs)?;
            check(64, None, &seqs)?;
            check(DEFAULT_WINDOW, Some(base), &seqs)?;
        }

        #[test]
        fn bounded_reordering_counts_are_exact(seqs in bounded_stream(3_000, 100)) {
            let mut t = SeqTracker::with_origin(128, 0);
            for &s in &seqs {
                prop_assert_ne!(t.on_packet(s), Arrival::Late);
            }
            let unique: HashSet<u64> = seqs.iter().copied().collect();
            let c = t.counters();
            prop_assert_eq!(c.received, unique.len() as u64);
            prop_assert_eq!(c.duplicates, (seqs.len() - unique.len()) as u64);
            prop_assert_eq!(c.late, 0);
            prop_assert_eq!(t.lost_given_sent(3_000), 3_000 - unique.len() as u64);
        }

        #[test]
        fn wide_displacement_and_late_match_model(
            seqs in proptest::collection::vec(0u64..600, 0..2_000),
            origin in proptest::option::of(0u64..50),
        ) {
            // Window 64 over a range of 600: many packets are older than the window.
            check(64, origin, &seqs)?;
            check(256, origin, &seqs)?;
        }

        #[test]
        fn jumps_match_model(
            steps in proptest::collection::vec((any::<bool>(), 0u64..5_000, 0u64..200), 1..500),
            start in any::<u64>().prop_map(|s| s / 4),
        ) {
            // A walk that mostly moves forward, sometimes by far more than the window,
            // and sometimes looks back.
            let mut seqs = Vec::new();
            let mut cur = start;
            for (back, jump, look_back) in steps {
                if back {
                    seqs.push(cur.saturating_sub(look_back));
                } else {
                    cur = cur.saturating_add(jump);
                    seqs.push(cur);
                }
            }
            check(64, None, &seqs)?;
            check(1024, Some(start), &seqs)?;
        }
    }

    #[test]
    fn window_is_rounded_and_clamped() {
        assert_eq!(SeqTracker::new(0).window(), 64);
        assert_eq!(SeqTracker::new(65).window(), 128);
        assert_eq!(SeqTracker::new(65_536).window(), 65_536);
        assert_eq!(SeqTracker::new(u64::MAX).window(), MAX_WINDOW);
        assert_eq!(SeqTracker::default().window(), DEFAULT_WINDOW);
    }

    #[test]
    fn scripted_classification() {
        let mut t = SeqTracker::with_origin(64, 0);
        assert_eq!(t.expected_so_far(), 0);
        assert_eq!(t.on_packet(1), Arrival::Gap { skipped: 1 }); // 0 missing
        assert_eq!(t.lost_so_far(), 1);
        assert_eq!(t.on_packet(2), Arrival::InOrder);
        assert_eq!(t.on_packet(0), Arrival::Reordered);
        assert_eq!(t.lost_so_far(), 0);
        assert_eq!(t.on_packet(0), Arrival::Duplicate);
        assert_eq!(t.on_packet(2), Arrival::Duplicate);
        assert_eq!(t.on_packet(10), Arrival::Gap { skipped: 7 });
        assert_eq!(t.on_packet(5), Arrival::Reordered);
        assert_eq!(t.max_reorder_distance(), 5);
        assert_eq!(t.on_packet(100), Arrival::Gap { skipped: 89 });
        // 36 = 100 − 64: just outside the window [37, 100].
        assert_eq!(t.on_packet(36), Arrival::Late);
        assert_eq!(t.on_packet(37), Arrival::Reordered);
        assert_eq!(t.on_packet(10), Arrival::Late); // received before, but out of the window now
        let c = t.counters();
        assert_eq!(
            c,
            Counters {
                sent: 0,
                received: 7,
                lost: 94,
                duplicates: 2,
                reordered: 3,
                late: 2,
            }
        );
        assert_eq!(t.highest(), Some(100));
        assert_eq!(t.expected_so_far(), 101);
        assert_eq!(t.lost_so_far(), 94);
        assert_eq!(t.lost_given_sent(120), 113);
        assert_eq!(t.lost_given_sent(3), 0);
    }

    #[test]
    fn origin_from_first_packet_or_given() {
        let mut t = SeqTracker::new(64);
        assert_eq!(t.on_packet(1_000), Arrival::InOrder);
        assert_eq!(t.origin(), Some(1_000));
        assert_eq!(t.on_packet(999), Arrival::Late); // before the origin
        assert_eq!(t.expected_so_far(), 1);

        let mut t = SeqTracker::with_origin(64, 10);
        assert_eq!(t.on_packet(3), Arrival::Late);
        assert_eq!(t.highest(), None);
        assert_eq!(t.on_packet(10), Arrival::InOrder);
    }

    #[test]
    fn huge_jumps_are_cheap_and_clear_the_window() {
        let mut t = SeqTracker::with_origin(DEFAULT_WINDOW, 0);
        for s in 0..DEFAULT_WINDOW {
            t.on_packet(s);
        }
        assert_eq!(
            t.on_packet(u64::MAX - 1),
            Arrival::Gap {
                skipped: u64::MAX - 1 - DEFAULT_WINDOW
            }
        );
        // The bits of the old window must not be mistaken for the new one.
        assert_eq!(t.on_packet(u64::MAX - 2), Arrival::Reordered);
        assert_eq!(t.on_packet(u64::MAX - DEFAULT_WINDOW), Arrival::Reordered);
        assert_eq!(t.on_packet(u64::MAX), Arrival::InOrder);
        assert_eq!(t.on_packet(u64::MAX), Arrival::Duplicate);
        assert_eq!(t.expected_so_far(), u64::MAX); // saturated (true value is 2^64)
                                                   // A jump shorter than the window clears exactly the uncovered bits.
        let mut t = SeqTracker::with_origin(64, 0);
        for s in 0..64 {
            t.on_packet(s);
        }
        assert_eq!(t.on_packet(100), Arrival::Gap { skipped: 36 });
        for s in 64..100 {
            assert_eq!(t.on_packet(s), Arrival::Reordered, "{s}");
        }
        assert_eq!(t.on_packet(40), Arrival::Duplicate);
        assert_eq!(t.on_packet(36), Arrival::Late);
    }
}
