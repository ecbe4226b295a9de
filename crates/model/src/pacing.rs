//! Packet pacing: absolute schedules that never accumulate drift, and a sans-I/O pacer.
//!
//! What this module does:
//! - [`Schedule`] is a constant rate (packets per second) or unlimited. Packet `n` (0-based) is
//!   due at `t0 + n / rate`, computed from `n` alone in integer arithmetic
//!   ([`Schedule::deadline`]), never by adding periods, so the error after a billion packets is
//!   the same as after one (DEPENDENCIES.md §5: "a token-bucket schedule computed from a start
//!   instant; never `sleep(period)` in a loop").
//! - [`Pacer`] is a state machine: the caller passes the elapsed monotonic time since `t0`
//!   ([`crate::clock::Clock::mono`] minus the start) to [`Pacer::poll`] and gets back what to do:
//!   send `k` packets now, wait until a time, or stop. [`Pacer::sent`] reports what was actually
//!   sent and when; the lateness of every packet goes into a pacing-error histogram that belongs
//!   in every result (STYLE §10).
//! - [`wait_plan`] splits a wait into "sleep, then re-poll" and "spin": sleeping overshoots by
//!   30–70 µs on this machine (DEPENDENCIES.md §2d: `clock_nanosleep` wakes p50 ≈ 74 µs late at
//!   the default timer slack), so the last [`DEFAULT_SPIN_THRESHOLD`] before a deadline is spun.
//! - [`Pacer::behind_ratio`] and [`GENERATOR_LIMITED_THRESHOLD`] tell whether the generator kept
//!   up with its schedule; a result where it fell behind by more than 1 % is marked
//!   generator-limited.
//!
//! What it does not do: no sleeping, spinning or clock reads (the caller does those), no
//! token-bucket burst allowance beyond `batch_max`, no rate changes in the middle of a schedule
//! (make a new [`Pacer`]), no SO_TXTIME/ETF launch times (not available on this kernel).
//!
//! # Precision
//! The rate is stored as an integer number of nano-packets per second (`round(rate × 10⁹)`), so
//! a rate is exact when it has at most 9 decimal places (1.234567 Mpps, 0.5 pps, 14 880 952.38
//! pps are all exact). Deadlines are `floor(n × 10¹⁸ / rate_npps)` ns in `u128`, i.e. exact to
//! the nanosecond below for every `n` up to `u64::MAX`. Rates must lie in
//! [`MIN_RATE_PPS`]`..=`[`MAX_RATE_PPS`].

use std::time::Duration;

use crate::clock::duration_to_nanos_saturating;
use crate::stats::histogram::LatencyHistogram;

/// Below this remaining wait, [`wait_plan`] says spin rather than sleep (200 µs).
pub const DEFAULT_SPIN_THRESHOLD: Duration = Duration::from_micros(200);

/// A generator that fell behind its schedule by more than this fraction (1 %) of the packets due
/// is generator-limited: the result measures the sender, not the network.
pub const GENERATOR_LIMITED_THRESHOLD: f64 = 0.01;

/// Lowest accepted rate: one packet per 10⁹ s (one nano-packet per second).
pub const MIN_RATE_PPS: f64 = 1e-9;

/// Highest accepted rate: 10¹⁰ packets/s (far above any line rate; keeps the `u128` arithmetic
/// of [`Schedule::due_count`] free of overflow).
pub const MAX_RATE_PPS: f64 = 1e10;

/// 10¹⁸: nanoseconds per second × nano-packets per packet.
const NS_TIMES_NANO: u128 = 1_000_000_000_000_000_000;

/// Errors building a [`Schedule`].
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PacingError {
    /// The rate is NaN, infinite, or outside [`MIN_RATE_PPS`]`..=`[`MAX_RATE_PPS`].
    #[error("packet rate {0} pps is not in {MIN_RATE_PPS}..={MAX_RATE_PPS} pps")]
    InvalidRate(f64),
}

/// When packets are due, relative to the start of sending (`t0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// `None` = unlimited; otherwise the rate in nano-packets per second (≥ 1).
    rate_npps: Option<u128>,
}

impl Schedule {
    /// A constant rate of `rate_pps` packets per second.
    ///
    /// # Errors
    /// [`PacingError::InvalidRate`] when the rate is not finite or outside
    /// [`MIN_RATE_PPS`]`..=`[`MAX_RATE_PPS`].
    pub fn constant(rate_pps: f64) -> Result<Schedule, PacingError> {
        if !rate_pps.is_finite() || !(MIN_RATE_PPS..=MAX_RATE_PPS).contains(&rate_pps) {
            return Err(PacingError::InvalidRate(rate_pps));
        }
        Ok(Schedule::per_second(rate_pps))
    }

    /// A constant rate that cannot fail: `rate_pps` is clamped to
    /// [`MIN_RATE_PPS`]`..=`[`MAX_RATE_PPS`], and NaN becomes [`MIN_RATE_PPS`] (a bad rate
    /// sends too little rather than flooding). Use [`Schedule::constant`] to reject bad rates.
    pub fn per_second(rate_pps: f64) -> Schedule {
        let rate = if rate_pps.is_nan() {
            MIN_RATE_PPS
        } else {
            rate_pps.clamp(MIN_RATE_PPS, MAX_RATE_PPS)
        };
        // rate · 10⁹ lies in 1.0..=1e19: the cast is exact up to f64 rounding, never saturates.
        let npps = (rate * 1e9).round().max(1.0) as u128;
        Schedule {
            rate_npps: Some(npps),
        }
    }

    /// No rate limit: every packet is due at `t0`.
    pub const fn unlimited() -> Schedule {
        Schedule { rate_npps: None }
    }

    /// True for [`Schedule::unlimited`].
    pub fn is_unlimited(&self) -> bool {
        self.rate_npps.is_none()
    }

    /// The rate in packets per second as stored (rounded to 10⁻⁹ pps); `None` when unlimited.
    pub fn rate_pps(&self) -> Option<f64> {
        self.rate_npps.map(|r| r as f64 / 1e9)
    }

    /// Time between consecutive deadlines (rounded to the nearest ns); `None` when unlimited.
    pub fn gap(&self) -> Option<Duration> {
        self.rate_npps.map(|r| {
            let ns = (NS_TIMES_NANO + r / 2) / r;
            Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
        })
    }

    /// When packet `n` (0-based) is due, relative to `t0`: exactly `floor(n / rate)` in ns,
    /// computed from `n` (no accumulated error). Saturates at `u64::MAX` ns. Always zero when
    /// unlimited.
    pub fn deadline(&self, n: u64) -> Duration {
        Duration::from_nanos(self.deadline_ns(n))
    }

    fn deadline_ns(&self, n: u64) -> u64 {
        match self.rate_npps {
            None => 0,
            Some(r) => {
                // n < 2^64 and 10^18 < 2^60, so the product fits in u128.
                let ns = u128::from(n) * NS_TIMES_NANO / r;
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }

    /// Exact deadlines of packets `n, n+1, …` (rated schedules only).
    fn deadlines_from(&self, n: u64) -> Option<Deadlines> {
        self.rate_npps.map(|r| Deadlines::starting_at(r, n))
    }

    /// How many packets are due by `elapsed` since `t0`: the number of `n` with
    /// `deadline(n) <= elapsed`. Packet 0 is due at `t0`, so this is at least 1, and at exactly
    /// `elapsed = 1 s` at 10 kpps it is 10 001 (packets 0..=10 000). `u64::MAX` when unlimited.
    pub fn due_count(&self, elapsed: Duration) -> u64 {
        let Some(r) = self.rate_npps else {
            return u64::MAX;
        };
        // floor(n·10¹⁸/r) ≤ e  ⇔  n·10¹⁸ < (e+1)·r  ⇔  n < (e+1)·r/10¹⁸,
        // so the count is ceil((e+1)·r / 10¹⁸). (e+1) ≤ 2^64 and r ≤ 10^19 < 2^64: no overflow.
        let e1 = u128::from(duration_to_nanos_saturating(elapsed)) + 1;
        let count = (e1 * r).div_ceil(NS_TIMES_NANO);
        u64::try_from(count).unwrap_or(u64::MAX)
    }
}

/// Deadlines of consecutive packets, exact, with one division to start and none per step.
///
/// Invariant: `n · 10¹⁸ = d · r + frac` with `0 ≤ frac < r`, so `d = floor(n · 10¹⁸ / r)` is
/// the deadline of packet `n` in ns. A step adds `10¹⁸ = q · r + rem` to the left side.
#[derive(Clone, Copy, Debug)]
struct Deadlines {
    d: u128,
    frac: u128,
    q: u128,
    rem: u128,
    r: u128,
}

impl Deadlines {
    fn starting_at(r: u128, n: u64) -> Deadlines {
        let x = u128::from(n) * NS_TIMES_NANO;
        Deadlines {
            d: x / r,
            frac: x % r,
            q: NS_TIMES_NANO / r,
            rem: NS_TIMES_NANO % r,
            r,
        }
    }

    /// Deadline of the current packet in ns (saturating at `u64::MAX`).
    fn current_ns(&self) -> u64 {
        u64::try_from(self.d).unwrap_or(u64::MAX)
    }

    /// Moves to the next packet. `d` stays below 2^64 · 10¹⁸ < 2^124 for every u64 `n`.
    fn step(&mut self) {
        self.d = self.d.saturating_add(self.q);
        self.frac += self.rem;
        if self.frac >= self.r {
            self.frac -= self.r;
            self.d = self.d.saturating_add(1);
        }
    }
}

/// What the sender should do now, from [`Pacer::poll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaceAction {
    /// Send this many packets now (`1..=batch_max`), then report them with [`Pacer::sent`].
    Send(usize),
    /// Nothing is due; the next deadline is at this elapsed time (see [`wait_plan`]).
    Wait(Duration),
    /// All `total` packets were sent.
    Done,
}

/// How to wait for a deadline, from [`wait_plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPlan {
    /// Sleep this long (the remaining time minus the spin threshold), then poll again.
    Sleep(Duration),
    /// Busy-wait (re-reading the clock) until the deadline: it is nearer than the threshold.
    Spin,
}

/// Splits the wait for a deadline `remaining` away into sleep-then-repoll or spin.
///
/// `remaining > spin_threshold` gives `Sleep(remaining − spin_threshold)`; anything else gives
/// `Spin`. Use [`DEFAULT_SPIN_THRESHOLD`] unless measured otherwise: it covers the 30–70 µs
/// sleep overshoot seen on this machine with margin (DEPENDENCIES.md §2d measured the hybrid
/// "sleep until deadline − 150 µs, then spin" at p50 26 ns, p99 6.6 µs late).
pub fn wait_plan(remaining: Duration, spin_threshold: Duration) -> WaitPlan {
    if remaining > spin_threshold {
        WaitPlan::Sleep(remaining - spin_threshold)
    } else {
        WaitPlan::Spin
    }
}

/// The pacing state machine of one sender (sans I/O: time is passed in).
///
/// Loop: `match pacer.poll(now - t0)`: on `Send(k)` send up to `k` packets and call
/// [`Pacer::sent`] with how many left and when; on `Wait(t)` follow [`wait_plan`] and poll again;
/// on `Done` stop. A sender that cannot keep up simply gets larger `Send` batches (up to
/// `batch_max`) until it has caught up: the schedule stays absolute.
#[derive(Clone, Debug)]
pub struct Pacer {
    schedule: Schedule,
    batch_max: usize,
    total: Option<u64>,
    sent: u64,
    /// `schedule.deadline(sent)` in ns, cached so that an early `poll` costs no division.
    next_deadline_ns: u64,
    early: u64,
    pacing_error: LatencyHistogram,
}

impl Pacer {
    /// A pacer for `schedule` that hands out at most `batch_max` packets per `Send` (0 is taken
    /// as 1) and stops after `total` packets (`None`: never stops by itself).
    pub fn new(schedule: Schedule, batch_max: usize, total: Option<u64>) -> Pacer {
        Pacer {
            schedule,
            batch_max: batch_max.max(1),
            total,
            sent: 0,
            next_deadline_ns: 0,
            early: 0,
            pacing_error: LatencyHistogram::new(),
        }
    }

    /// The schedule this pacer follows.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Largest `k` that [`PaceAction::Send`] can carry.
    pub fn batch_max(&self) -> usize {
        self.batch_max
    }

    /// Packets reported sent so far.
    pub fn sent_count(&self) -> u64 {
        self.sent
    }

    /// Packets still to send, `None` when there is no total.
    pub fn remaining(&self) -> Option<u64> {
        self.total.map(|t| t.saturating_sub(self.sent))
    }

    /// True once `total` packets were sent.
    pub fn is_done(&self) -> bool {
        self.remaining() == Some(0)
    }

    /// Deadline of the next packet to send (`None` when done).
    pub fn next_deadline(&self) -> Option<Duration> {
        (!self.is_done()).then(|| self.schedule.deadline(self.sent))
    }

    /// What to do at `elapsed` since `t0`.
    pub fn poll(&mut self, elapsed: Duration) -> PaceAction {
        let remaining = self.remaining().unwrap_or(u64::MAX);
        if remaining == 0 {
            return PaceAction::Done;
        }
        if duration_to_nanos_saturating(elapsed) < self.next_deadline_ns {
            return PaceAction::Wait(Duration::from_nanos(self.next_deadline_ns));
        }
        let batch = u64::try_from(self.batch_max).unwrap_or(u64::MAX);
        let due_now = self
            .schedule
            .due_count(elapsed)
            .saturating_sub(self.sent)
            .min(remaining);
        if due_now == 0 {
            return PaceAction::Wait(Duration::from_nanos(self.next_deadline_ns));
        }
        // ≤ batch_max, which is a usize.
        let k = usize::try_from(due_now.min(batch)).unwrap_or(self.batch_max);
        PaceAction::Send(k)
    }

    /// Records that `k` packets were sent at `elapsed_at_send` since `t0`.
    ///
    /// The lateness of each packet (`elapsed_at_send − deadline(n)`) goes into the pacing-error
    /// histogram (ns). Packets sent before their deadline (a caller that did not follow
    /// [`Pacer::poll`]) are counted by [`Pacer::early_count`] instead. Nothing is recorded for an
    /// unlimited schedule, where lateness has no meaning.
    pub fn sent(&mut self, k: usize, elapsed_at_send: Duration) {
        let k = u64::try_from(k).unwrap_or(u64::MAX);
        let first = self.sent;
        self.sent = first.saturating_add(k);
        if let Some(mut deadlines) = self.schedule.deadlines_from(first) {
            let at = duration_to_nanos_saturating(elapsed_at_send);
            // One lateness sample per packet (k ≤ batch_max in normal use); no division per
            // packet, so this stays cheap on the hot path.
            for _ in first..self.sent {
                match at.checked_sub(deadlines.current_ns()) {
                    Some(late) => self.pacing_error.record_ns(late),
                    None => self.early += 1,
                }
                deadlines.step();
            }
            self.next_deadline_ns = deadlines.current_ns();
        }
    }

    /// Packets that were reported sent before their deadline.
    pub fn early_count(&self) -> u64 {
        self.early
    }

    /// Lateness of every packet sent (send time minus deadline), in nanoseconds.
    pub fn pacing_error(&self) -> &LatencyHistogram {
        &self.pacing_error
    }

    /// Share of the packets due by `elapsed` (capped at `total`) that were not sent yet:
    /// `(due − sent) / due`, 0 when nothing is due, when ahead, or when unlimited.
    pub fn behind_ratio(&self, elapsed: Duration) -> f64 {
        if self.schedule.is_unlimited() {
            return 0.0;
        }
        let due = self
            .schedule
            .due_count(elapsed)
            .min(self.total.unwrap_or(u64::MAX));
        if due == 0 {
            return 0.0;
        }
        due.saturating_sub(self.sent) as f64 / due as f64
    }

    /// True when [`Pacer::behind_ratio`] exceeds [`GENERATOR_LIMITED_THRESHOLD`].
    pub fn is_generator_limited(&self, elapsed: Duration) -> bool {
        self.behind_ratio(elapsed) > GENERATOR_LIMITED_THRESHOLD
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, UnixNanos, VirtualClock};
    use proptest::prelude::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn rejects_invalid_rates() {
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-10, 2e10] {
            assert!(
                matches!(Schedule::constant(r), Err(PacingError::InvalidRate(_))),
                "{r}"
            );
        }
        assert!(Schedule::constant(MIN_RATE_PPS).is_ok());
        // The infallible constructor clamps instead.
        assert_eq!(
            Schedule::per_second(0.0),
            Schedule::constant(MIN_RATE_PPS).unwrap()
        );
        assert_eq!(
            Schedule::per_second(f64::NAN),
            Schedule::constant(MIN_RATE_PPS).unwrap()
        );
        assert_eq!(
            Schedule::per_second(f64::INFINITY),
            Schedule::constant(MAX_RATE_PPS).unwrap()
        );
        assert_eq!(Schedule::per_second(1e4), Schedule::constant(1e4).unwrap());
        assert!(Schedule::constant(MAX_RATE_PPS).is_ok());
    }

    #[test]
    fn schedule_basics() {
        let s = Schedule::constant(10_000.0).unwrap();
        assert_eq!(s.gap(), Some(Duration::from_micros(100)));
        assert_eq!(s.rate_pps(), Some(10_000.0));
        assert_eq!(s.deadline(0), Duration::ZERO);
        assert_eq!(s.deadline(1), Duration::from_micros(100));
        assert_eq!(s.deadline(10_000), SECOND);
        assert_eq!(s.due_count(Duration::ZERO), 1);
        assert_eq!(s.due_count(Duration::from_nanos(99_999)), 1);
        assert_eq!(s.due_count(Duration::from_micros(100)), 2);
        assert_eq!(s.due_count(SECOND - Duration::from_nanos(1)), 10_000);
        assert_eq!(s.due_count(SECOND), 10_001);
        assert_eq!(s.due_count(Duration::MAX), 184_467_440_737_096);

        let u = Schedule::unlimited();
        assert!(u.is_unlimited());
        assert_eq!(u.gap(), None);
        assert_eq!(u.rate_pps(), None);
        assert_eq!(u.deadline(123), Duration::ZERO);
        assert_eq!(u.due_count(Duration::ZERO), u64::MAX);

        // Slow rates saturate instead of overflowing.
        let slow = Schedule::constant(MIN_RATE_PPS).unwrap();
        assert_eq!(slow.deadline(u64::MAX), Duration::from_nanos(u64::MAX));
        assert_eq!(slow.due_count(Duration::ZERO), 1);
        let fast = Schedule::constant(MAX_RATE_PPS).unwrap();
        assert_eq!(fast.due_count(Duration::MAX), u64::MAX);
    }

    #[test]
    fn deadlines_are_exact_after_a_billion_packets() {
        // 1.234567 Mpps = 1 234 567 pps exactly: deadline(n) = floor(n · 10⁹ / 1 234 567) ns.
        let s = Schedule::constant(1.234567e6).unwrap();
        for n in [
            1u64,
            7,
            1_234_567,
            999_999_999,
            1_000_000_000,
            1 << 40,
            u64::MAX / 2,
        ] {
            let exact = u128::from(n) * 1_000_000_000 / 1_234_567;
            // Saturates at u64::MAX ns (584 years) for the largest n.
            let exact = exact.min(u128::from(u64::MAX));
            assert_eq!(u128::from(s.deadline_ns(n)), exact, "n = {n}");
        }
        assert_eq!(
            s.deadline(1_000_000_000),
            Duration::from_nanos(810_000_591_300)
        );
        // Adding the period in f64 one packet at a time drifts; the schedule does not.
        let period_s = 1.0 / 1.234567e6;
        let mut acc = 0.0f64;
        for _ in 0..1_000_000 {
            acc += period_s;
        }
        let exact_s = 1_000_000.0 / 1.234567e6;
        assert!(
            (acc - exact_s).abs() > 1e-12,
            "f64 accumulation drift expected"
        );
        assert_eq!(s.deadline(1_000_000), Duration::from_nanos(810_000_591));

        // Fractional rates with a few decimals are exact too: 1.5 pps and 14 880 952.38 pps.
        let s = Schedule::constant(1.5).unwrap();
        assert_eq!(s.deadline(3), Duration::from_secs(2));
        assert_eq!(s.deadline(1), Duration::from_nanos(666_666_666));
        let s = Schedule::constant(14_880_952.38).unwrap();
        let exact = 1_000_000_000u128 * NS_TIMES_NANO / 14_880_952_380_000_000;
        assert_eq!(u128::from(s.deadline_ns(1_000_000_000)), exact);
    }

    proptest! {
        #[test]
        fn due_count_agrees_with_deadlines(
            rate in 1e-3f64..1e9,
            e_ns in 0u64..1_000_000_000_000,
        ) {
            let s = Schedule::constant(rate).unwrap();
            let e = Duration::from_nanos(e_ns);
            let c = s.due_count(e);
            prop_assert!(c >= 1);
            // Packet c-1 is due by e, packet c is not.
            prop_assert!(s.deadline(c - 1) <= e);
            prop_assert!(s.deadline(c) > e);
        }

        #[test]
        fn deadlines_are_monotonic(rate in 1e-3f64..1e10, n in 0u64..u64::MAX) {
            let s = Schedule::constant(rate).unwrap();
            prop_assert!(s.deadline(n) <= s.deadline(n + 1));
        }
    }

    proptest! {
        #[test]
        fn stepped_deadlines_equal_direct_ones(
            rate in 1e-3f64..1e10,
            start in any::<u64>().prop_map(|n| n >> 8),
        ) {
            let s = Schedule::constant(rate).unwrap();
            let mut it = s.deadlines_from(start).unwrap();
            for n in start..start + 1_000 {
                prop_assert_eq!(it.current_ns(), s.deadline_ns(n), "n = {}", n);
                it.step();
            }
        }
    }

    #[test]
    fn wait_plan_splits_sleep_and_spin() {
        let t = DEFAULT_SPIN_THRESHOLD;
        assert_eq!(t, Duration::from_micros(200));
        assert_eq!(
            wait_plan(Duration::from_millis(1), t),
            WaitPlan::Sleep(Duration::from_micros(800))
        );
        assert_eq!(
            wait_plan(Duration::from_micros(201), t),
            WaitPlan::Sleep(Duration::from_micros(1))
        );
        assert_eq!(wait_plan(Duration::from_micros(200), t), WaitPlan::Spin);
        assert_eq!(wait_plan(Duration::from_micros(50), t), WaitPlan::Spin);
        assert_eq!(wait_plan(Duration::ZERO, t), WaitPlan::Spin);
        assert_eq!(
            wait_plan(Duration::from_micros(5), Duration::ZERO),
            WaitPlan::Sleep(Duration::from_micros(5))
        );
    }

    /// A simulated sender driven by a virtual clock.
    ///
    /// `cost_per_packet`: time one packet takes to send; `sleep_overshoot`: how late a sleep
    /// wakes. Spinning lands exactly on the deadline. Runs until the clock reaches `until`
    /// (sends are only started before `until`) or the pacer is done. Returns the batch sizes.
    fn simulate(
        pacer: &mut Pacer,
        clock: &VirtualClock,
        cost_per_packet: Duration,
        sleep_overshoot: Duration,
        until: Duration,
    ) -> Vec<usize> {
        let mut batches = Vec::new();
        while clock.mono() < until {
            match pacer.poll(clock.mono()) {
                PaceAction::Send(k) => {
                    let at = clock.mono();
                    // Every packet handed out must be due already.
                    assert!(pacer.schedule().deadline(pacer.sent_count() + k as u64 - 1) <= at);
                    pacer.sent(k, at);
                    batches.push(k);
                    clock.advance(cost_per_packet * k as u32);
                }
                PaceAction::Wait(deadline) => {
                    let now = clock.mono();
                    assert!(deadline > now);
                    match wait_plan(deadline - now, DEFAULT_SPIN_THRESHOLD) {
                        WaitPlan::Sleep(d) => clock.advance(d + sleep_overshoot),
                        WaitPlan::Spin => clock.set_mono(deadline),
                    }
                }
                PaceAction::Done => break,
            }
        }
        batches
    }

    #[test]
    fn ten_kpps_for_one_second_with_an_instant_sender() {
        let clock = VirtualClock::new(UnixNanos(1_700_000_000_000_000_000));
        let mut pacer = Pacer::new(Schedule::constant(10_000.0).unwrap(), 32, None);
        let batches = simulate(&mut pacer, &clock, Duration::ZERO, Duration::ZERO, SECOND);
        let sent: usize = batches.iter().sum();
        assert_eq!(sent, 10_000);
        assert!(batches.iter().all(|&k| k == 1));
        assert_eq!(pacer.sent_count(), 10_000);
        assert_eq!(pacer.early_count(), 0);
        assert_eq!(pacer.pacing_error().len(), 10_000);
        assert_eq!(pacer.pacing_error().max_ns(), Some(0));
        assert_eq!(pacer.behind_ratio(SECOND - Duration::from_nanos(1)), 0.0);
        assert!(!pacer.is_generator_limited(SECOND - Duration::from_nanos(1)));
    }

    #[test]
    fn hybrid_sleep_then_spin_is_never_late_at_1_kpps() {
        // 1 ms gaps: the sender sleeps 800 µs, wakes 50 µs late, spins the rest.
        let clock = VirtualClock::default();
        let mut pacer = Pacer::new(Schedule::constant(1_000.0).unwrap(), 8, Some(500));
        let batches = simulate(
            &mut pacer,
            &clock,
            Duration::from_nanos(500),
            Duration::from_micros(50),
            Duration::from_secs(10),
        );
        assert_eq!(batches.len(), 500);
        assert!(pacer.is_done());
        assert_eq!(pacer.poll(clock.mono()), PaceAction::Done);
        assert_eq!(pacer.pacing_error().max_ns(), Some(0));
        assert_eq!(pacer.early_count(), 0);
        assert_eq!(pacer.next_deadline(), None);
    }

    #[test]
    fn slow_sender_falls_behind_and_is_generator_limited() {
        // Each packet costs 150 µs but the schedule asks for one every 100 µs.
        let clock = VirtualClock::default();
        let mut pacer = Pacer::new(Schedule::constant(10_000.0).unwrap(), 1, None);
        let batches = simulate(
            &mut pacer,
            &clock,
            Duration::from_micros(150),
            Duration::ZERO,
            SECOND,
        );
        assert!(batches.iter().all(|&k| k == 1));
        assert_eq!(pacer.sent_count(), 6_667); // sends start at 0, 150 µs, …, 999.9 ms
        let ratio = pacer.behind_ratio(clock.mono());
        assert!((0.32..0.35).contains(&ratio), "ratio {ratio}");
        assert!(pacer.is_generator_limited(clock.mono()));
        // Lateness grows linearly: packet n is sent at 150·n µs, due at 100·n µs.
        let max_late = pacer.pacing_error().max_ns().unwrap();
        assert!(
            (332_000_000..=334_000_000).contains(&max_late),
            "{max_late}"
        );
    }

    #[test]
    fn batch_max_is_respected_when_catching_up() {
        // The sender only gets to poll every 1 ms at 100 kpps: 100 packets are due each time.
        let clock = VirtualClock::default();
        let mut pacer = Pacer::new(Schedule::constant(100_000.0).unwrap(), 32, Some(10_000));
        let mut total = 0u64;
        let mut max_batch = 0;
        let mut polls = 0;
        while !pacer.is_done() {
            polls += 1;
            while let PaceAction::Send(k) = pacer.poll(clock.mono()) {
                assert!((1..=32).contains(&k));
                max_batch = max_batch.max(k);
                pacer.sent(k, clock.mono());
                total += k as u64;
            }
            // Having drained everything due, the pacer is exactly on schedule.
            assert_eq!(
                pacer.sent_count(),
                pacer.schedule().due_count(clock.mono()).min(10_000)
            );
            clock.advance(Duration::from_millis(1));
        }
        assert_eq!(total, 10_000);
        assert_eq!(max_batch, 32);
        assert_eq!(polls, 101); // t = 0 (1 packet), 1 ms, …, 100 ms (the last packet)
        assert_eq!(pacer.early_count(), 0);
        // Lateness is below one polling interval.
        assert!(pacer.pacing_error().max_ns().unwrap() < 1_000_000);
    }

    #[test]
    fn unlimited_always_sends_batch_max() {
        let mut pacer = Pacer::new(Schedule::unlimited(), 64, Some(150));
        assert_eq!(pacer.poll(Duration::ZERO), PaceAction::Send(64));
        pacer.sent(64, Duration::ZERO);
        assert_eq!(pacer.poll(Duration::ZERO), PaceAction::Send(64));
        pacer.sent(64, Duration::from_nanos(10));
        assert_eq!(pacer.poll(Duration::ZERO), PaceAction::Send(22));
        pacer.sent(22, Duration::from_nanos(20));
        assert_eq!(pacer.poll(Duration::ZERO), PaceAction::Done);
        assert!(pacer.pacing_error().is_empty());
        assert_eq!(pacer.behind_ratio(SECOND), 0.0);

        let mut forever = Pacer::new(Schedule::unlimited(), 0, None);
        assert_eq!(forever.batch_max(), 1);
        for _ in 0..10 {
            assert_eq!(forever.poll(Duration::ZERO), PaceAction::Send(1));
            forever.sent(1, Duration::ZERO);
        }
        assert_eq!(forever.remaining(), None);
    }

    #[test]
    fn total_caps_due_and_early_sends_are_counted() {
        let mut pacer = Pacer::new(Schedule::constant(1_000.0).unwrap(), 1_000, Some(5));
        assert_eq!(pacer.poll(SECOND), PaceAction::Send(5));
        assert_eq!(pacer.behind_ratio(SECOND), 1.0);
        pacer.sent(5, SECOND);
        assert_eq!(pacer.poll(SECOND), PaceAction::Done);
        assert_eq!(pacer.behind_ratio(SECOND), 0.0);

        // A caller that ignores Wait: its packets are early, not negative lateness.
        let mut p = Pacer::new(Schedule::constant(1_000.0).unwrap(), 4, None);
        assert_eq!(p.poll(Duration::ZERO), PaceAction::Send(1));
        p.sent(1, Duration::ZERO);
        assert_eq!(
            p.poll(Duration::ZERO),
            PaceAction::Wait(Duration::from_millis(1))
        );
        p.sent(3, Duration::from_micros(10));
        assert_eq!(p.early_count(), 3);
        assert_eq!(p.pacing_error().len(), 1);
        assert_eq!(p.behind_ratio(Duration::ZERO), 0.0);
        assert_eq!(
            p.poll(Duration::from_millis(2)),
            PaceAction::Wait(Duration::from_millis(4))
        );
    }
}
