//! Waiting: the one loop that polls something until it is ready, sleeping in between,
//! for every accept loop, setup wait and drain of the crate ([`poll`], [`poll_until`]).
//!
//! Time is read only through the [`Clock`] it is given (the server's, the session's), so
//! a deadline runs on a virtual clock in a test as it does on the real one. The sleeping
//! is real: what is polled (a socket, a thread) moves in real time.

use std::time::Duration;

use model::clock::Clock;

/// What one poll found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Poll<T> {
    /// Done, with this.
    Ready(T),
    /// Not yet, but something happened (a connection accepted, a read that waited on its
    /// own timeout): poll again at once.
    Again,
    /// Not yet: sleep this long before polling again (no longer than the time left).
    Wait(Duration),
}

/// Polls until `poll` is ready; there is no deadline (the poll itself ends the wait, on a
/// stop flag for instance).
pub(crate) fn poll<T>(mut poll: impl FnMut() -> Poll<T>) -> T {
    loop {
        match poll() {
            Poll::Ready(t) => return t,
            Poll::Again => {}
            Poll::Wait(d) => std::thread::sleep(d),
        }
    }
}

/// Polls until `poll` is ready, or until `timeout` has passed on `clock` (`None`). The time
/// is looked at before every poll: one that would start at or past the deadline is not
/// made.
pub(crate) fn poll_until<T>(
    clock: &dyn Clock,
    timeout: Duration,
    mut poll: impl FnMut() -> Poll<T>,
) -> Option<T> {
    let deadline = clock.mono().saturating_add(timeout);
    loop {
        let left = deadline
            .checked_sub(clock.mono())
            .filter(|l| !l.is_zero())?;
        match poll() {
            Poll::Ready(t) => return Some(t),
            Poll::Again => {}
            Poll::Wait(d) => std::thread::sleep(d.min(left)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::clock::{UnixNanos, VirtualClock};

    /// On a virtual clock moved 10 ms per poll, a 100 ms wait polls ten times and gives up;
    /// nothing is polled at or past its deadline.
    #[test]
    fn a_deadline_runs_on_the_clock_given() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut polls = 0;
        let got: Option<()> = poll_until(&clock, Duration::from_millis(100), || {
            polls += 1;
            clock.advance(Duration::from_millis(10));
            Poll::Wait(Duration::ZERO)
        });
        assert_eq!((got, polls), (None, 10));
        assert_eq!(clock.mono(), Duration::from_millis(100));
        // A deadline already past polls nothing.
        let never = poll_until(&clock, Duration::ZERO, || -> Poll<()> {
            panic!("polled past the deadline")
        });
        assert_eq!(never, None);
    }

    /// What is ready is returned at once; `Again` polls again without waiting for time to
    /// pass (the clock never moves here).
    #[test]
    fn ready_returns_and_again_polls_at_once() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut n = 0;
        let got = poll_until(&clock, Duration::from_secs(1), || {
            n += 1;
            if n < 4 {
                Poll::Again
            } else {
                Poll::Ready(n)
            }
        });
        assert_eq!(got, Some(4));
        let mut m = 0;
        let got = poll(|| {
            m += 1;
            if m < 3 {
                Poll::Wait(Duration::from_millis(1))
            } else {
                Poll::Ready("done")
            }
        });
        assert_eq!((got, m), ("done", 3));
    }
}
