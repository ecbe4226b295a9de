//! Waiting: the one loop of the program that polls something until it is ready, pausing in
//! between, until a deadline or a stop ([`Wait`]).
//!
//! Time is read and passed only through the [`Clock`] it is given: the real clock sleeps
//! the thread between two polls, a virtual clock moves on at once, so a wait runs in a test
//! without waiting. ([`crate::clock::wait_until`], a wait for a time, is one such wait.)
//!
//! The rules of a wait:
//! - the stop is looked at before every poll and every pause: once it is raised, nothing
//!   more is polled or waited;
//! - the first poll is at once;
//! - a pause never passes the deadline, and after a poll at or past the deadline the wait
//!   gives up: a poll is made at the deadline at the latest, never after it on the clock.

use std::time::Duration;

use crate::clock::Clock;
use crate::stop::Stop;

/// What one poll found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll<T> {
    /// Done, with this.
    Ready(T),
    /// Not yet, but something happened (a connection accepted, a read that waited on its
    /// own timeout): poll again at once.
    Again,
    /// Not yet: pause this long before polling again (no longer than the time left).
    Wait(Duration),
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polled<T> {
    /// The poll was ready, with this.
    Ready(T),
    /// The deadline came first.
    TimedOut,
    /// The stop was raised first.
    Stopped,
}

impl<T> Polled<T> {
    /// The value, if the poll was ready.
    pub fn ready(self) -> Option<T> {
        match self {
            Polled::Ready(t) => Some(t),
            Polled::TimedOut | Polled::Stopped => None,
        }
    }
}

/// A wait on a clock, with an optional deadline and an optional stop; [`Wait::poll`] runs
/// it.
#[derive(Clone, Copy)]
pub struct Wait<'a> {
    clock: &'a dyn Clock,
    deadline: Option<Duration>,
    stop: Option<&'a Stop>,
}

impl std::fmt::Debug for Wait<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wait")
            .field("deadline", &self.deadline)
            .field("stop", &self.stop)
            .finish_non_exhaustive()
    }
}

impl<'a> Wait<'a> {
    /// A wait on `clock` with neither deadline nor stop: it ends when the poll is ready.
    pub fn on(clock: &'a dyn Clock) -> Self {
        Wait {
            clock,
            deadline: None,
            stop: None,
        }
    }

    /// Gives up once `timeout` has passed on the clock from now.
    pub fn at_most(self, timeout: Duration) -> Self {
        let deadline = self.clock.mono().saturating_add(timeout);
        self.until(deadline)
    }

    /// [`Wait::at_most`] when there is a timeout; without one, no deadline is added.
    pub fn at_most_opt(self, timeout: Option<Duration>) -> Self {
        match timeout {
            Some(t) => self.at_most(t),
            None => self,
        }
    }

    /// Gives up once the clock's monotonic time reaches `deadline` (the earlier one, with
    /// a deadline already set).
    pub fn until(mut self, deadline: Duration) -> Self {
        self.deadline = Some(self.deadline.map_or(deadline, |d| d.min(deadline)));
        self
    }

    /// Ends the wait once `stop` is raised (looked at before every poll).
    pub fn or_stop(mut self, stop: &'a Stop) -> Self {
        self.stop = Some(stop);
        self
    }

    /// [`Wait::or_stop`] when there is a stop.
    pub fn or_stop_opt(mut self, stop: Option<&'a Stop>) -> Self {
        self.stop = stop;
        self
    }

    /// [`Wait::poll`] with the same pause after every answer that is not yet a value:
    /// asks `ready` until it gives one, pausing `every` in between.
    pub fn poll_every<T>(self, every: Duration, mut ready: impl FnMut() -> Option<T>) -> Polled<T> {
        self.poll(|| ready().map_or(Poll::Wait(every), Poll::Ready))
    }

    /// Polls `poll` until it is ready, the deadline passes or the stop is raised, pausing
    /// through [`Clock::sleep`] as each poll asks (never past the deadline).
    pub fn poll<T>(self, mut poll: impl FnMut() -> Poll<T>) -> Polled<T> {
        loop {
            if self.stop.is_some_and(Stop::is_raised) {
                return Polled::Stopped;
            }
            let mut pause = match poll() {
                Poll::Ready(t) => return Polled::Ready(t),
                Poll::Again => Duration::ZERO,
                Poll::Wait(d) => d,
            };
            if let Some(deadline) = self.deadline {
                let now = self.clock.mono();
                if now >= deadline {
                    return Polled::TimedOut;
                }
                pause = pause.min(deadline - now);
            }
            if !pause.is_zero() {
                // A stop raised while polling is not waited out.
                if self.stop.is_some_and(Stop::is_raised) {
                    return Polled::Stopped;
                }
                self.clock.sleep(pause);
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::clock::{UnixNanos, VirtualClock};

    fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    #[test]
    fn the_first_poll_is_at_once_and_each_pause_is_the_polls() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut asked = Vec::new();
        let got = Wait::on(&clock).at_most(ms(5000)).poll(|| {
            asked.push(clock.mono());
            if asked.len() == 3 {
                Poll::Ready("up")
            } else {
                Poll::Wait(ms(20))
            }
        });
        assert_eq!(got, Polled::Ready("up"));
        assert_eq!(asked, [ms(0), ms(20), ms(40)]);
        // Without a deadline, it waits as long as the answer takes.
        let mut asks = 0;
        let got = Wait::on(&clock).poll(|| {
            asks += 1;
            if asks == 1000 {
                Poll::Ready(asks)
            } else {
                Poll::Wait(ms(50))
            }
        });
        assert_eq!(got, Polled::Ready(1000));
        assert_eq!(clock.mono(), ms(40 + 50 * 999));
    }

    #[test]
    fn the_deadline_ends_the_wait_and_nothing_is_polled_past_it() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut asked = Vec::new();
        let got: Polled<()> = Wait::on(&clock).at_most(ms(100)).poll(|| {
            asked.push(clock.mono());
            Poll::Wait(ms(30))
        });
        assert_eq!(got, Polled::TimedOut);
        // The last pause is cut to the deadline; the poll at the deadline is the last.
        assert_eq!(asked, [ms(0), ms(30), ms(60), ms(90), ms(100)]);
        assert_eq!(clock.mono(), ms(100));
        // A poll that moves the clock itself (a read that waits on its own timeout): ten
        // polls of 10 ms fill a 100 ms wait, the tenth ends at the deadline.
        let mut polls = 0;
        let got: Polled<()> = Wait::on(&clock).at_most(ms(100)).poll(|| {
            polls += 1;
            clock.advance(ms(10));
            Poll::Again
        });
        assert_eq!((got, polls), (Polled::TimedOut, 10));
        assert_eq!(clock.mono(), ms(200));
        // A deadline already reached: one poll, at once, then no more.
        let mut polls = 0;
        let got: Polled<()> = Wait::on(&clock).until(ms(50)).poll(|| {
            polls += 1;
            Poll::Wait(ms(1))
        });
        assert_eq!((got, polls), (Polled::TimedOut, 1));
        assert_eq!(clock.mono(), ms(200), "no pause past the deadline");
        // Of two deadlines, the earlier counts.
        let got: Polled<()> = Wait::on(&clock)
            .until(ms(210))
            .at_most(ms(1000))
            .poll(|| Poll::Wait(ms(7)));
        assert_eq!(got, Polled::TimedOut);
        assert_eq!(clock.mono(), ms(210));
    }

    #[test]
    fn a_raised_stop_ends_the_wait_before_the_next_poll() {
        let clock = VirtualClock::new(UnixNanos(0));
        let stop = Stop::new();
        let mut polls = 0;
        let got: Polled<()> = Wait::on(&clock).at_most(ms(1000)).or_stop(&stop).poll(|| {
            polls += 1;
            if polls == 3 {
                stop.raise();
            }
            Poll::Wait(ms(10))
        });
        assert_eq!((got, polls), (Polled::Stopped, 3));
        assert_eq!(
            clock.mono(),
            ms(20),
            "a stop raised in a poll is not waited out"
        );
        // Raised before the wait: nothing is polled, no time passes.
        let got: Polled<()> = Wait::on(&clock)
            .or_stop(&stop)
            .poll(|| panic!("polled after the stop"));
        assert_eq!(got, Polled::Stopped);
        assert_eq!(clock.mono(), ms(20));
        // No stop given: a raised one elsewhere changes nothing.
        let got = Wait::on(&clock).or_stop_opt(None).poll(|| Poll::Ready(1));
        assert_eq!(got.ready(), Some(1));
    }

    #[test]
    fn asking_every_pause_until_an_answer() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut asks = 0;
        let got = Wait::on(&clock).at_most(ms(1000)).poll_every(ms(20), || {
            asks += 1;
            (asks == 4).then_some(asks)
        });
        assert_eq!(got, Polled::Ready(4));
        assert_eq!(clock.mono(), ms(60));
        let got: Polled<()> = Wait::on(&clock)
            .at_most(ms(100))
            .poll_every(ms(20), || None);
        assert_eq!(got, Polled::TimedOut);
        assert_eq!(clock.mono(), ms(160));
    }

    #[test]
    fn again_polls_at_once_without_moving_the_clock() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut n = 0;
        let got = Wait::on(&clock).at_most(ms(1)).poll(|| {
            n += 1;
            if n < 4 {
                Poll::Again
            } else {
                Poll::Ready(n)
            }
        });
        assert_eq!(got, Polled::Ready(4));
        assert_eq!(clock.mono(), Duration::ZERO);
    }
}
