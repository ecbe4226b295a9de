//! Sequence recovery (IEEE 802.1CB 7.4.2, 7.4.3) and individual recovery (7.5): duplicate
//! elimination on the sequence numbers of one stream, with the Vector (7.4.3.4) or Match
//! (7.4.3.5) algorithm, the reset timer (7.4.3.3) and the per-stream counters (10.8).
//!
//! Time is an input (`now_ms`, any monotonic millisecond clock): the reset timer runs
//! out when no frame passed for `reset_ms` (and, in individual recovery, none was
//! discarded either); [`Recovery::on_frame`] and [`Recovery::tick`] check it.
//!
//! `lost` follows the algorithm literally: after a reset the history holds only the first
//! accepted number, so the first `history_length − 1` shifts of the window count numbers
//! that were never expected as lost (see the caveat in `frer-8021cb.md` §5). End-to-end
//! loss is better measured from the delivered sequence numbers.

use crate::signed_delta;

/// The recovery algorithm (frerSeqRcvyAlgorithm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// VectorRecoveryAlgorithm: a window of `history_length` numbers (the default).
    Vector,
    /// MatchRecoveryAlgorithm: only an exact repeat of the last number is discarded.
    Match,
}

/// The largest history length this implementation keeps (802.1CB leaves the maximum to
/// the implementation; switches offer 32 to 2048).
pub const MAX_HISTORY: u16 = 2048;

/// A recovery function's configuration (frerSeqRcvyEntry, 10.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryConfig {
    /// frerSeqRcvyAlgorithm.
    pub algorithm: Algorithm,
    /// frerSeqRcvyHistoryLength (2..=[`MAX_HISTORY`]; Vector only).
    pub history_length: u16,
    /// frerSeqRcvyResetMSec; `None` = no timer.
    pub reset_ms: Option<u64>,
    /// frerSeqRcvyTakeNoSequence: pass frames without a sequence number.
    pub take_no_sequence: bool,
    /// frerSeqRcvyIndividualRecovery: discards restart the timer too.
    pub individual: bool,
}

impl Default for RecoveryConfig {
    /// The YANG defaults: Vector, history 2, no tagless frames; a 2000 ms reset timer.
    fn default() -> Self {
        Self {
            algorithm: Algorithm::Vector,
            history_length: 2,
            reset_ms: Some(2000),
            take_no_sequence: false,
            individual: false,
        }
    }
}

/// The per-stream counters of a recovery function (802.1CB 10.8, YANG leaf in brackets).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Counters {
    /// frerCpsSeqRcvyPassedPackets (rx-passed-pkts).
    pub passed: u64,
    /// frerCpsSeqRcvyDiscardedPackets (rx-discarded-pkts): duplicates.
    pub discarded: u64,
    /// frerCpsSeqRcvyOutOfOrderPackets (rx-out-of-order-pkts): passed, but not the
    /// successor of the last passed number.
    pub out_of_order: u64,
    /// frerCpsSeqRcvyRoguePackets (rx-rogue-pkts): outside the history window.
    pub rogue: u64,
    /// frerCpsSeqRcvyLostPackets (rx-lost-pkts): numbers that left the window unseen.
    pub lost: u64,
    /// Of `lost`, numbers older than the first frame accepted after a reset: never
    /// expected, but counted by the literal algorithm (up to `history_length − 1` per
    /// reset). `lost − lost_before_first` is the loss a receiver would count.
    #[cfg_attr(feature = "serde", serde(default))]
    pub lost_before_first: u64,
    /// frerCpsSeqRcvyTaglessPackets (rx-tagless-pkts).
    pub tagless: u64,
    /// frerCpsSeqRcvyResets (rx-resets).
    pub resets: u64,
}

/// What to do with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Forward it.
    Pass,
    /// Drop it.
    Discard,
}

const WORDS: usize = MAX_HISTORY as usize / 64;

/// One sequence (or individual) recovery function.
#[derive(Debug, Clone)]
pub struct Recovery {
    cfg: RecoveryConfig,
    recov_seq_num: u16,
    /// Bit k: `recov_seq_num − k` was accepted.
    history: [u64; WORDS],
    take_any: bool,
    /// History positions 0..valid hold numbers at or after the first one accepted since
    /// the last reset.
    valid: u16,
    deadline_ms: Option<u64>,
    counters: Counters,
}

impl Recovery {
    /// A recovery function in its reset state (the reset at BEGIN is not counted).
    /// The history length is clamped to 2..=[`MAX_HISTORY`].
    pub fn new(mut cfg: RecoveryConfig) -> Self {
        cfg.history_length = cfg.history_length.clamp(2, MAX_HISTORY);
        Self {
            cfg,
            recov_seq_num: u16::MAX,
            history: [0; WORDS],
            take_any: true,
            valid: 0,
            deadline_ms: None,
            counters: Counters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RecoveryConfig {
        &self.cfg
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// SequenceRecoveryReset (7.4.3.3): take any number next, forget the history. Counted.
    pub fn reset(&mut self) {
        self.recov_seq_num = u16::MAX;
        self.history = [0; WORDS];
        self.take_any = true;
        self.deadline_ms = None;
        self.counters.resets += 1;
    }

    /// Runs the reset timer to `now_ms`; returns whether it ran out (and reset).
    pub fn tick(&mut self, now_ms: u64) -> bool {
        if self.deadline_ms.is_some_and(|d| now_ms >= d) {
            self.reset();
            true
        } else {
            false
        }
    }

    fn restart_timer(&mut self, now_ms: u64) {
        self.deadline_ms = self.cfg.reset_ms.map(|r| now_ms + r);
    }

    fn bit(&self, k: usize) -> bool {
        self.history[k / 64] >> (k % 64) & 1 == 1
    }

    fn set_bit(&mut self, k: usize) {
        self.history[k / 64] |= 1 << (k % 64);
    }

    /// ShiftSequenceHistory once: the oldest bit leaves (counted lost if unset).
    fn shift(&mut self) {
        let len = usize::from(self.cfg.history_length);
        if !self.bit(len - 1) {
            self.counters.lost += 1;
            if len > usize::from(self.valid) {
                self.counters.lost_before_first += 1;
            }
        }
        self.valid = (self.valid + 1).min(self.cfg.history_length);
        let words = len.div_ceil(64);
        for i in (0..words).rev() {
            let carry = if i > 0 { self.history[i - 1] >> 63 } else { 0 };
            self.history[i] = self.history[i] << 1 | carry;
        }
        // Keep bits at and above `len` clear.
        let top = len % 64;
        if top != 0 {
            self.history[words - 1] &= (1u64 << top) - 1;
        }
    }

    /// A frame of this stream arrived at `now_ms` with sequence number `seq` (`None`: no
    /// R-TAG). Returns whether to pass or discard it.
    pub fn on_frame(&mut self, now_ms: u64, seq: Option<u16>) -> Verdict {
        self.tick(now_ms);
        let v = match seq {
            None => {
                self.counters.tagless += 1;
                if self.cfg.take_no_sequence {
                    Verdict::Pass
                } else {
                    Verdict::Discard
                }
            }
            Some(s) => match self.cfg.algorithm {
                Algorithm::Vector => self.vector(s),
                Algorithm::Match => self.matching(s),
            },
        };
        match v {
            Verdict::Pass => {
                self.counters.passed += 1;
                self.restart_timer(now_ms);
            }
            Verdict::Discard if self.cfg.individual && seq.is_some() => self.restart_timer(now_ms),
            Verdict::Discard => {}
        }
        v
    }

    /// VectorRecoveryAlgorithm (7.4.3.4).
    fn vector(&mut self, s: u16) -> Verdict {
        let len = i32::from(self.cfg.history_length);
        if self.take_any {
            self.take_any = false;
            self.history = [0; WORDS];
            self.set_bit(0);
            self.valid = 1;
            self.recov_seq_num = s;
            return Verdict::Pass;
        }
        let delta = signed_delta(s, self.recov_seq_num);
        if delta >= len || delta <= -len {
            self.counters.rogue += 1;
            Verdict::Discard
        } else if delta <= 0 {
            let k = (-delta) as usize;
            if self.bit(k) {
                self.counters.discarded += 1;
                Verdict::Discard
            } else {
                self.set_bit(k);
                self.counters.out_of_order += 1;
                Verdict::Pass
            }
        } else {
            if delta != 1 {
                self.counters.out_of_order += 1;
            }
            for _ in 0..delta {
                self.shift();
            }
            self.set_bit(0);
            self.recov_seq_num = s;
            Verdict::Pass
        }
    }

    /// MatchRecoveryAlgorithm (7.4.3.5).
    fn matching(&mut self, s: u16) -> Verdict {
        if self.take_any {
            self.take_any = false;
            self.recov_seq_num = s;
            return Verdict::Pass;
        }
        let delta = s.wrapping_sub(self.recov_seq_num);
        if delta == 0 {
            self.counters.discarded += 1;
            return Verdict::Discard;
        }
        if delta != 1 {
            self.counters.out_of_order += 1;
        }
        self.recov_seq_num = s;
        Verdict::Pass
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use Verdict::{Discard as D, Pass as P};

    fn run(cfg: RecoveryConfig, seqs: &[u16]) -> (std::vec::Vec<Verdict>, Counters) {
        let mut r = Recovery::new(cfg);
        let v = seqs.iter().map(|s| r.on_frame(0, Some(*s))).collect();
        (v, r.counters())
    }

    fn vector(h: u16) -> RecoveryConfig {
        RecoveryConfig {
            history_length: h,
            ..RecoveryConfig::default()
        }
    }

    extern crate std;

    /// The reference vectors of frer-8021cb.md §10 (history 4 unless noted).
    #[test]
    fn spec_vectors() {
        /// History length, arrivals, verdicts, [passed, duplicates, rogue, out of order, lost].
        type Case<'a> = (u16, &'a [u16], &'a [Verdict], [u64; 5]);
        let cases: [Case; 6] = [
            (
                4,
                &[0, 0, 1, 1, 2, 2, 3, 3],
                &[P, D, P, D, P, D, P, D],
                [4, 4, 0, 0, 3],
            ),
            (
                4,
                &[0, 1, 0, 2, 1, 3, 2, 3],
                &[P, P, D, P, D, P, D, D],
                [4, 4, 0, 0, 3],
            ),
            (
                4,
                &[0, 0, 1, 1, 3, 3, 4, 4, 5, 6, 7],
                &[P, D, P, D, P, D, P, D, P, P, P],
                [7, 4, 0, 1, 4],
            ),
            (4, &[10, 11, 500, 12, 13], &[P, P, D, P, P], [4, 0, 1, 0, 3]),
            (
                4,
                &[65534, 65535, 0, 1, 65535],
                &[P, P, P, P, D],
                [4, 1, 0, 0, 3],
            ),
            (8, &[0, 2, 1, 3, 3], &[P, P, P, P, D], [4, 1, 0, 2, 3]),
        ];
        for (h, input, want, [passed, dup, rogue, ooo, lost]) in cases {
            let (v, c) = run(vector(h), input);
            assert_eq!(v, want, "{input:?}");
            assert_eq!(
                (c.passed, c.discarded, c.rogue, c.out_of_order, c.lost),
                (passed, dup, rogue, ooo, lost),
                "{input:?}"
            );
            // Only the fourth case misses a number the stream really sent (2); every
            // other literal loss is a number before the first frame accepted.
            let real = u64::from(input == [0, 0, 1, 1, 3, 3, 4, 4, 5, 6, 7]);
            assert_eq!(c.lost - c.lost_before_first, real, "{input:?}");
        }
        let m = RecoveryConfig {
            algorithm: Algorithm::Match,
            ..RecoveryConfig::default()
        };
        let (v, c) = run(m, &[0, 0, 1, 1, 2, 2]);
        assert_eq!(v, [P, D, P, D, P, D]);
        assert_eq!((c.passed, c.discarded, c.out_of_order), (3, 3, 0));
        let (v, c) = run(m, &[5, 5, 5, 6]);
        assert_eq!(v, [P, D, D, P]);
        assert_eq!((c.passed, c.discarded), (2, 2));
    }

    #[test]
    fn lost_before_first_separates_reset_artifacts_from_real_gaps() {
        let mut r = Recovery::new(RecoveryConfig {
            reset_ms: Some(100),
            ..vector(16)
        });
        let mut now = 0;
        for base in [0u16, 1000, 40_000] {
            for s in (base..base + 100).filter(|s| s % 100 != 50) {
                r.on_frame(now, Some(s));
                now += 1;
            }
            now += 500; // silent: the timer resets the function
        }
        let c = r.counters();
        assert_eq!(c.resets, 2);
        assert_eq!(c.lost_before_first, 3 * 15);
        assert_eq!(c.lost - c.lost_before_first, 3);
    }

    #[test]
    fn the_timer_resets_a_silent_stream_and_individual_recovery_keeps_it_alive() {
        let cfg = RecoveryConfig {
            history_length: 4,
            reset_ms: Some(100),
            ..RecoveryConfig::default()
        };
        let mut r = Recovery::new(cfg);
        assert_eq!(r.on_frame(0, Some(10)), P);
        assert_eq!(r.on_frame(50, Some(10)), D);
        // A far jump is rogue while the state holds, accepted after a timeout.
        assert_eq!(r.on_frame(90, Some(5000)), D);
        // The last pass was at 0 (discards do not restart the timer here).
        assert!(!r.tick(99));
        assert!(r.tick(100), "no pass for 100 ms");
        assert_eq!(r.on_frame(101, Some(5000)), P);
        assert_eq!(r.counters().resets, 1);
        // Sequence recovery: duplicates alone do not restart the timer...
        let mut seq = Recovery::new(cfg);
        seq.on_frame(0, Some(1));
        seq.on_frame(60, Some(1));
        assert!(seq.tick(100));
        // ...individual recovery: they do.
        let mut ind = Recovery::new(RecoveryConfig {
            individual: true,
            ..cfg
        });
        ind.on_frame(0, Some(1));
        ind.on_frame(60, Some(1));
        assert!(!ind.tick(100));
        assert!(ind.tick(160));
    }

    #[test]
    fn tagless_frames_follow_take_no_sequence() {
        let mut r = Recovery::new(RecoveryConfig::default());
        assert_eq!(r.on_frame(0, None), D);
        let mut t = Recovery::new(RecoveryConfig {
            take_no_sequence: true,
            ..RecoveryConfig::default()
        });
        assert_eq!(t.on_frame(0, None), P);
        assert_eq!((r.counters().tagless, t.counters().tagless), (1, 1));
    }

    #[test]
    fn long_histories_span_words() {
        // History 200: numbers 0..200 in reverse after 199 all pass once, then all repeat.
        let mut r = Recovery::new(vector(200));
        assert_eq!(r.on_frame(0, Some(199)), P);
        for s in (0..199).rev() {
            assert_eq!(r.on_frame(0, Some(s)), P, "{s}");
        }
        for s in 0..200 {
            assert_eq!(r.on_frame(0, Some(s)), D, "{s}");
        }
        // 399 is 200 ahead of 199: outside the window (± history − 1), rogue.
        assert_eq!(r.on_frame(0, Some(399)), D);
        assert_eq!(r.counters().rogue, 1);
        // 398 moves the window 199 ahead: 199 is at its far edge, seen; 198 fell out.
        assert_eq!(r.on_frame(0, Some(398)), P);
        assert_eq!(r.on_frame(0, Some(199)), D);
        assert_eq!(r.on_frame(0, Some(198)), D);
        assert_eq!(r.counters().rogue, 2);
    }
}
