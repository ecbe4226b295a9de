//! The one pacing driver: the loop every sender runs (UDP, TCP, raw frames, many streams).
//!
//! A sender decides what to do now ([`Step`]): send what its `model::pacing::Pacer` says is
//! due and go again, wait until its next deadline, or stop. The driver owns everything
//! around that: timer slack, reading the clock, the end of the test, the stop, and
//! the wait itself, which sleeps for long gaps and spins for the last
//! [`DEFAULT_SPIN_THRESHOLD`] before a deadline (DEPENDENCIES.md §2d: sleeps wake 30–70 µs
//! late), never past the end and never so long that `stop` goes unseen.
//!
//! What it does not do: decide when packets are due (the pure `Pacer` does) or send them
//! (the sender's step does).

use std::time::Duration;

use model::clock::Clock;
use model::pacing::{wait_plan, PaceAction, WaitPlan, DEFAULT_SPIN_THRESHOLD};
use model::stop::Stop;

use crate::clock::RealClock;
use crate::sys;

/// The longest single sleep, so that `stop` is seen in time.
pub const MAX_SLEEP: Duration = Duration::from_millis(50);

/// What a sender wants after one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// It did something (or could not and will retry): call it again at once.
    Again,
    /// Nothing is due before this time (since `t0`).
    WaitUntil(Duration),
    /// It is finished.
    Done,
}

impl Step {
    /// The step for a pacer's answer that is not `Send` (the sender handles `Send`).
    pub fn from_wait(action: PaceAction) -> Step {
        match action {
            PaceAction::Send(_) => Step::Again,
            PaceAction::Wait(until) => Step::WaitUntil(until),
            PaceAction::Done => Step::Done,
        }
    }
}

/// Calls `step(elapsed)` until it returns [`Step::Done`], `end` has passed (both measured
/// from `t0` on `clock`'s monotonic face) or `stop` is raised; waits between steps as asked,
/// and until `t0` before the first (a `t0` ahead of now starts several senders together).
/// Returns the elapsed time at the last step.
pub fn drive(
    clock: &RealClock,
    t0: Duration,
    end: Duration,
    stop: &Stop,
    mut step: impl FnMut(Duration) -> Step,
) -> Duration {
    sys::set_timer_slack_1ns();
    let mut elapsed = Duration::ZERO;
    while !stop.is_raised() {
        let now = clock.mono();
        if let Some(early) = t0.checked_sub(now).filter(|d| !d.is_zero()) {
            // Nothing is due before t0: senders given one t0 start together.
            match wait_plan(early, DEFAULT_SPIN_THRESHOLD) {
                WaitPlan::Sleep(d) => std::thread::sleep(d.min(MAX_SLEEP)),
                WaitPlan::Spin => std::hint::spin_loop(),
            }
            continue;
        }
        elapsed = now.saturating_sub(t0);
        if elapsed >= end {
            break;
        }
        match step(elapsed) {
            Step::Again => {}
            Step::Done => break,
            Step::WaitUntil(until) => {
                let now = clock.mono().saturating_sub(t0);
                match wait_plan(until.saturating_sub(now), DEFAULT_SPIN_THRESHOLD) {
                    WaitPlan::Sleep(d) => {
                        std::thread::sleep(d.min(end.saturating_sub(now)).min(MAX_SLEEP))
                    }
                    WaitPlan::Spin => std::hint::spin_loop(),
                }
            }
        }
    }
    elapsed
}

#[cfg(test)]
mod test {
    use super::*;
    use model::pacing::{Pacer, Schedule};

    #[test]
    fn a_paced_sender_sends_on_schedule_and_stops_at_the_end() {
        let clock = RealClock::new();
        let stop = Stop::new();
        // 1000 packets/s for 50 ms: never more than the 51 due by the end (packet 0 at t0).
        let mut pacer = Pacer::new(Schedule::per_second(1000.0), 8, None);
        let mut sent = 0u64;
        let end = Duration::from_millis(50);
        let elapsed = drive(&clock, clock.mono(), end, &stop, |now| {
            match pacer.poll(now) {
                PaceAction::Send(k) => {
                    pacer.sent(k, now);
                    sent += k as u64;
                    Step::Again
                }
                other => Step::from_wait(other),
            }
        });
        assert!(elapsed >= end, "{elapsed:?}");
        assert!((1..=51).contains(&sent), "{sent}");
    }

    #[test]
    fn nothing_runs_before_a_t0_in_the_future() {
        // Generators given one t0 ahead of now (every stream of a profile starts at the
        // same moment) must not send their first frame early: that frame stretched a
        // stream's receive span by the 20 ms head start and read its rate 1 % low over 2 s.
        let clock = RealClock::new();
        let stop = Stop::new();
        let t0 = clock.mono() + Duration::from_millis(30);
        let mut first: Option<Duration> = None;
        drive(&clock, t0, Duration::from_millis(5), &stop, |_| {
            first.get_or_insert_with(|| clock.mono());
            Step::Done
        });
        let first = first.expect("a step ran");
        assert!(first >= t0, "the first step ran {:?} before t0", t0 - first);
    }

    #[test]
    fn stop_and_done_end_the_loop() {
        let clock = RealClock::new();
        let stop = Stop::raised();
        let mut calls = 0;
        drive(&clock, clock.mono(), Duration::from_secs(60), &stop, |_| {
            calls += 1;
            Step::Again
        });
        assert_eq!(calls, 0, "a raised stop ends it before the first step");
        let stop = Stop::new();
        drive(&clock, clock.mono(), Duration::from_secs(60), &stop, |_| {
            calls += 1;
            if calls == 3 {
                Step::Done
            } else {
                Step::WaitUntil(Duration::ZERO)
            }
        });
        assert_eq!(calls, 3);
    }
}
