//! What the impairment stage does to each frame, without I/O: the decisions (loss, bursts,
//! duplicate, reorder, delay and jitter, rate limit, queue limit) and the counters. Time is
//! an input (nanoseconds on any monotonic clock) and randomness comes from a seeded
//! generator, so a virtual clock and a fixed seed reproduce every run exactly.
//!
//! Order of operations for a frame that arrives (the same order as Linux netem):
//! 1. **loss**: dropped with probability `loss`; with `loss_burst` > 1 losses come in
//!    bursts (a two-state Gilbert model whose loss-state probability is `loss` and whose
//!    mean burst length is `loss_burst` frames), otherwise independently (Bernoulli).
//! 2. **duplicate**: with probability `duplicate` a second copy follows right after it.
//! 3. **reorder**: a fraction `reorder` of frames is held back and sent right after the
//!    next frame (a swap of neighbours). A held frame with no successor within
//!    [`REORDER_HOLD_NS`] goes out on its own and does not count as reordered.
//! 4. **delay**: each frame is due `delay` ± a uniform `jitter` after it arrived. Jitter
//!    never reorders frames: a frame is never due before the one queued ahead of it (so at
//!    high rates the effective delay distribution is shifted up, never scrambled).
//! 5. **rate**: a serialiser at `rate` bit/s (L2 length, as `tc` counts) starts each frame
//!    when the previous one has left; frames wait in one FIFO of at most `limit` frames
//!    (delay and rate queue together), beyond which they are dropped (tail drop).
//!
//! It does not parse frames, route, or touch sockets; see [`super::stage`] for that.

use std::collections::VecDeque;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// How long a frame held for reordering waits for a successor before it goes out alone.
pub const REORDER_HOLD_NS: u64 = 1_000_000;

/// Impairment of one direction, in the stage's own units (validated by [`super::spec`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Probability of loss, 0..=1.
    pub loss: f64,
    /// Mean loss burst length in frames (1 = independent losses).
    pub loss_burst: f64,
    /// Fixed delay, ns.
    pub delay_ns: u64,
    /// Jitter: delay varies uniformly by ± this much, ns.
    pub jitter_ns: u64,
    /// Probability of duplication, 0..=1.
    pub duplicate: f64,
    /// Fraction of frames sent after their successor, 0..=0.5.
    pub reorder: f64,
    /// Rate limit in bit/s of L2 frames; `None` = unlimited.
    pub rate_bps: Option<f64>,
    /// Frames held at most (delay and rate queue together).
    pub limit: usize,
}

impl Default for Params {
    /// No impairment: every frame passes at once, in order.
    fn default() -> Self {
        Self {
            loss: 0.0,
            loss_burst: 1.0,
            delay_ns: 0,
            jitter_ns: 0,
            duplicate: 0.0,
            reorder: 0.0,
            rate_bps: None,
            limit: 10_000,
        }
    }
}

/// The counters of one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Frames that entered the stage.
    pub frames_in: u64,
    /// Their bytes (L2, no FCS).
    pub bytes_in: u64,
    /// Frames dropped by the loss model.
    pub dropped_loss: u64,
    /// Frames (or copies) dropped because `limit` frames were already waiting.
    pub dropped_queue: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Frames sent after their successor.
    pub reordered: u64,
    /// Frames (copies included) that waited for delay or rate before leaving.
    pub delayed: u64,
    /// Frames (copies included) handed out to be sent.
    pub frames_out: u64,
    /// Their bytes.
    pub bytes_out: u64,
}

struct Queued<F> {
    due: u64,
    frame: F,
    len: usize,
}

struct Held<F> {
    frame: F,
    len: usize,
    copies: u8,
    deadline: u64,
}

/// One direction of the stage: frames go in with [`Impairer::push`] and come out, when
/// due, from [`Impairer::poll`].
pub struct Impairer<F> {
    p: Params,
    rng: SmallRng,
    /// Gilbert model: in the loss state.
    bursting: bool,
    /// Per-frame hold probability that makes the held fraction equal `reorder`.
    hold_p: f64,
    held: Option<Held<F>>,
    queue: VecDeque<Queued<F>>,
    last_due: u64,
    link_free: u64,
    counters: Counters,
}

impl<F: Clone> Impairer<F> {
    /// A stage direction with parameters `p`, random decisions seeded by `seed`.
    pub fn new(p: Params, seed: u64) -> Self {
        let r = p.reorder.clamp(0.0, 0.5);
        Self {
            p,
            rng: SmallRng::seed_from_u64(seed),
            bursting: false,
            // A frame can be held only when none is held (the one right after a held frame
            // releases it), so the held fraction is q / (1 + q); q = r / (1 - r) makes it r.
            hold_p: if r >= 0.5 { 1.0 } else { r / (1.0 - r) },
            held: None,
            queue: VecDeque::new(),
            last_due: 0,
            link_free: 0,
            counters: Counters::default(),
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.p
    }

    /// Frames waiting (queued or held).
    pub fn waiting(&self) -> usize {
        self.queue.len() + self.held.as_ref().map_or(0, |h| usize::from(h.copies))
    }

    fn lose(&mut self) -> bool {
        let p = self.p.loss;
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        if self.p.loss_burst <= 1.0 {
            return self.rng.random_bool(p);
        }
        // Gilbert model (two states, loss in the bad state): leaving the bad state with
        // probability 1/b gives bursts of mean length b; entering it with p / (b (1 - p))
        // makes the stationary loss probability p.
        let b = self.p.loss_burst;
        let enter = (p / (b * (1.0 - p))).min(1.0);
        self.bursting = if self.bursting {
            !self.rng.random_bool(1.0 / b)
        } else {
            self.rng.random_bool(enter)
        };
        self.bursting
    }

    /// A frame of `len` bytes arrived at `now`.
    pub fn push(&mut self, now: u64, frame: F, len: usize) {
        self.counters.frames_in += 1;
        self.counters.bytes_in += len as u64;
        self.release_expired_hold(now);
        if self.lose() {
            self.counters.dropped_loss += 1;
            return;
        }
        let copies = if self.p.duplicate > 0.0 && self.rng.random_bool(self.p.duplicate.min(1.0)) {
            self.counters.duplicated += 1;
            2
        } else {
            1
        };
        if self.held.is_none() && self.hold_p > 0.0 && self.rng.random_bool(self.hold_p) {
            self.held = Some(Held {
                frame,
                len,
                copies,
                deadline: now + REORDER_HOLD_NS,
            });
            return;
        }
        self.enqueue(now, frame, len, copies);
        if let Some(h) = self.held.take() {
            self.counters.reordered += 1;
            self.enqueue(now, h.frame, h.len, h.copies);
        }
    }

    fn release_expired_hold(&mut self, now: u64) {
        if self.held.as_ref().is_some_and(|h| h.deadline <= now) {
            if let Some(h) = self.held.take() {
                self.enqueue(h.deadline, h.frame, h.len, h.copies);
            }
        }
    }

    fn enqueue(&mut self, now: u64, frame: F, len: usize, copies: u8) {
        if copies > 1 {
            self.enqueue_one(now, frame.clone(), len);
        }
        self.enqueue_one(now, frame, len);
    }

    fn enqueue_one(&mut self, now: u64, frame: F, len: usize) {
        if self.queue.len() >= self.p.limit {
            self.counters.dropped_queue += 1;
            return;
        }
        let mut due = now + self.p.delay_ns;
        if self.p.jitter_ns > 0 {
            let j = self.p.jitter_ns.min(i64::MAX as u64) as i64;
            let off = self.rng.random_range(-j..=j);
            due = due.saturating_add_signed(off).max(now);
        }
        due = due.max(self.last_due);
        if let Some(rate) = self.p.rate_bps {
            due = due.max(self.link_free);
            // The time to serialise `len` bytes at `rate` bit/s.
            let tx = (len as f64 * 8.0 * 1e9 / rate).round() as u64;
            self.link_free = due + tx;
        }
        self.last_due = due;
        if due > now {
            self.counters.delayed += 1;
        }
        self.queue.push_back(Queued { due, frame, len });
    }

    /// The next frame due at or before `now`, if any.
    pub fn poll(&mut self, now: u64) -> Option<F> {
        self.release_expired_hold(now);
        let front = self.queue.front()?;
        if front.due > now {
            return None;
        }
        let q = self.queue.pop_front()?;
        self.counters.frames_out += 1;
        self.counters.bytes_out += q.len as u64;
        Some(q.frame)
    }

    /// When the next frame falls due (or a held frame times out); `None` when empty.
    pub fn next_due(&self) -> Option<u64> {
        let q = self.queue.front().map(|q| q.due);
        let h = self.held.as_ref().map(|h| h.deadline);
        match (q, h) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// Pushes `n` frames (their sequence numbers) `gap` ns apart, polling after each, and
    /// returns what came out in order with its departure time.
    fn run(p: Params, seed: u64, n: u64, gap: u64) -> (Vec<(u64, u64)>, Counters) {
        let mut s = Impairer::new(p, seed);
        let mut out = Vec::new();
        // A virtual clock that visits every due time up to `until`, so each frame is
        // taken out exactly when it falls due.
        let advance = |s: &mut Impairer<u64>, out: &mut Vec<(u64, u64)>, until: u64| {
            while let Some(t) = s.next_due().filter(|&t| t <= until) {
                while let Some(f) = s.poll(t) {
                    out.push((t, f));
                }
            }
        };
        for seq in 0..n {
            let now = seq * gap;
            advance(&mut s, &mut out, now);
            s.push(now, seq, 1000);
            advance(&mut s, &mut out, now);
        }
        advance(&mut s, &mut out, u64::MAX);
        (out, s.counters())
    }

    /// |observed - p n| within 4.5 standard deviations of a binomial(n, p).
    fn within_binomial(observed: u64, n: u64, p: f64) -> bool {
        let mean = p * n as f64;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        (observed as f64 - mean).abs() <= 4.5 * sd
    }

    #[test]
    fn no_impairment_passes_everything_at_once_in_order() {
        let (out, c) = run(Params::default(), 1, 10_000, 1_000);
        assert_eq!(out.len(), 10_000);
        assert!(out
            .iter()
            .enumerate()
            .all(|(i, &(t, f))| f == i as u64 && t == f * 1_000));
        assert_eq!((c.frames_in, c.frames_out, c.delayed), (10_000, 10_000, 0));
        assert_eq!(c.bytes_out, 10_000_000);
    }

    #[test]
    fn random_loss_is_binomial_and_seeded() {
        let p = Params {
            loss: 0.05,
            ..Params::default()
        };
        let (out, c) = run(p, 7, 1_000_000, 100);
        assert!(within_binomial(c.dropped_loss, 1_000_000, 0.05), "{c:?}");
        assert_eq!(out.len() as u64 + c.dropped_loss, 1_000_000);
        let (_, again) = run(p, 7, 1_000_000, 100);
        assert_eq!(again, c, "same seed, same run");
        let (_, other) = run(p, 8, 1_000_000, 100);
        assert_ne!(
            other.dropped_loss, c.dropped_loss,
            "another seed, another run"
        );
    }

    #[test]
    fn burst_loss_keeps_the_rate_and_the_mean_burst_length() {
        let p = Params {
            loss: 0.05,
            loss_burst: 4.0,
            ..Params::default()
        };
        let (out, c) = run(p, 3, 1_000_000, 100);
        let ratio = c.dropped_loss as f64 / 1e6;
        assert!((ratio - 0.05).abs() < 0.005, "loss {ratio}");
        // Bursts: runs of missing sequence numbers.
        let (mut bursts, mut lost, mut prev) = (0u64, 0u64, None::<u64>);
        for &(_, f) in &out {
            let gap = f - prev.map_or(0, |p| p + 1);
            if gap > 0 {
                bursts += 1;
                lost += gap;
            }
            prev = Some(f);
        }
        let mean = lost as f64 / bursts as f64;
        assert!((mean - 4.0).abs() < 0.3, "mean burst {mean}");
    }

    #[test]
    fn duplicates_follow_their_original() {
        let p = Params {
            duplicate: 0.02,
            ..Params::default()
        };
        let (out, c) = run(p, 11, 200_000, 100);
        assert!(within_binomial(c.duplicated, 200_000, 0.02), "{c:?}");
        assert_eq!(out.len() as u64, 200_000 + c.duplicated);
        let doubles = out.windows(2).filter(|w| w[0].1 == w[1].1).count() as u64;
        assert_eq!(doubles, c.duplicated);
    }

    #[test]
    fn reorder_swaps_neighbours_at_the_configured_fraction() {
        let p = Params {
            reorder: 0.03,
            ..Params::default()
        };
        let (out, c) = run(p, 5, 500_000, 100);
        assert_eq!(out.len(), 500_000, "nothing lost or added");
        let mut max = None::<u64>;
        let mut late = 0u64;
        for &(_, f) in &out {
            match max {
                Some(m) if f < m => late += 1,
                _ => max = Some(f),
            }
        }
        assert_eq!(
            late, c.reordered,
            "every reordered frame arrives after a later one"
        );
        assert!(within_binomial(c.reordered, 500_000, 0.03), "{c:?}");
    }

    #[test]
    fn a_held_frame_without_successor_leaves_after_the_hold_time() {
        let p = Params {
            reorder: 0.5,
            ..Params::default()
        };
        // Seed search is not needed: with reorder 0.5 every frame is held when none is.
        let (out, c) = run(p, 1, 1, 0);
        assert_eq!(out, [(REORDER_HOLD_NS, 0)]);
        assert_eq!(c.reordered, 0);
    }

    #[test]
    fn delay_and_jitter_stay_in_bounds_and_in_order() {
        let p = Params {
            delay_ns: 5_000_000,
            jitter_ns: 1_000_000,
            ..Params::default()
        };
        // Frames 3 ms apart: jitter alone never needs the in-order clamp.
        let (out, c) = run(p, 9, 10_000, 3_000_000);
        let mut sum = 0.0;
        for (i, &(t, f)) in out.iter().enumerate() {
            assert_eq!(f, i as u64, "in order");
            let d = t - f * 3_000_000;
            assert!((4_000_000..=6_000_000).contains(&d), "delay {d}");
            sum += d as f64;
        }
        let mean = sum / out.len() as f64;
        assert!((mean - 5e6).abs() < 2e4, "mean delay {mean}");
        assert_eq!(c.delayed, 10_000);
    }

    #[test]
    fn the_rate_limit_serialises_and_the_queue_limit_drops() {
        let p = Params {
            rate_bps: Some(8e6), // 1000-byte frames: 1 ms each
            limit: 50,
            ..Params::default()
        };
        // 100 frames at once: the first leaves at once, 50 wait, 49 find the queue full.
        let (out, c) = run(p, 1, 100, 0);
        assert_eq!(c.dropped_queue, 49);
        assert_eq!(out.len(), 51);
        for (i, &(t, f)) in out.iter().enumerate() {
            assert_eq!((t, f), (i as u64 * 1_000_000, i as u64));
        }
        // A long steady stream at twice the rate leaves at exactly the rate.
        let p = Params {
            rate_bps: Some(8e6),
            limit: 1_000_000,
            ..Params::default()
        };
        let (out, _) = run(p, 1, 10_000, 500_000);
        let span = out.last().unwrap().0 - out.first().unwrap().0;
        assert_eq!(span, 9_999 * 1_000_000);
    }
}
