//! Time in the lab, read only through a [`Clock`]: the one loop that waits for something
//! another process or the kernel does ([`poll`]: ask, and while it is not so, pause and ask
//! again until a timeout), and the one timer of the managed processes' periodic work
//! ([`Every`]: publish the counters every 200 ms).
//!
//! The lab's processes and its life cycle run on the real clock (`engine::clock::RealClock`);
//! the tests here run the same code on a virtual one.

use std::time::Duration;

use model::clock::Clock;

/// Asks `ready` until it gives a value, pausing `every` between two asks; gives up with
/// `None` once `timeout` has passed on `clock` since the first ask (never, without one).
/// The first ask is at once, and a value given at the last ask counts.
pub(crate) fn poll<T>(
    clock: &dyn Clock,
    every: Duration,
    timeout: Option<Duration>,
    mut ready: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = timeout.map(|t| clock.mono().saturating_add(t));
    loop {
        if let Some(v) = ready() {
            return Some(v);
        }
        if deadline.is_some_and(|d| clock.mono() >= d) {
            return None;
        }
        // The real clock sleeps the thread; a test's virtual clock moves on.
        clock.sleep(every);
    }
}

/// A period on a clock's monotonic time: [`Every::due`] says whether a period has passed
/// since it last said so (or since the start) and, if so, starts the next from `now`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Every {
    period: Duration,
    last: Duration,
}

impl Every {
    /// A period of `period` that starts at `now`.
    pub(crate) fn new(period: Duration, now: Duration) -> Self {
        Every { period, last: now }
    }

    /// Whether `period` has passed at `now`; when it has, the next period starts at `now`.
    pub(crate) fn due(&mut self, now: Duration) -> bool {
        if now.saturating_sub(self.last) >= self.period {
            self.last = now;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use model::clock::{UnixNanos, VirtualClock};

    #[test]
    fn polling_asks_at_once_then_every_pause_until_ready() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut asked = Vec::new();
        let got = poll(
            &clock,
            Duration::from_millis(20),
            Some(Duration::from_secs(5)),
            || {
                asked.push(clock.mono());
                (asked.len() == 3).then_some("up")
            },
        );
        assert_eq!(got, Some("up"));
        let ms = |m| Duration::from_millis(m);
        assert_eq!(asked, [ms(0), ms(20), ms(40)]);
    }

    #[test]
    fn polling_gives_up_after_its_timeout_on_the_clock() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut asks = 0;
        let got: Option<()> = poll(
            &clock,
            Duration::from_millis(20),
            Some(Duration::from_millis(100)),
            || {
                asks += 1;
                None
            },
        );
        assert_eq!(got, None);
        // Asked at 0, 20, ..., 100 ms: the ask at the deadline still counts.
        assert_eq!(asks, 6);
        assert_eq!(clock.mono(), Duration::from_millis(100));
    }

    #[test]
    fn polling_without_a_timeout_waits_for_the_answer() {
        let clock = VirtualClock::new(UnixNanos(0));
        let mut asks = 0;
        let got = poll(&clock, Duration::from_millis(50), None, || {
            asks += 1;
            (asks == 1000).then_some(asks)
        });
        assert_eq!(got, Some(1000));
        assert_eq!(clock.mono(), Duration::from_millis(50 * 999));
    }

    #[test]
    fn a_period_is_due_once_it_has_passed_and_starts_again_then() {
        let ms = |m| Duration::from_millis(m);
        let mut every = Every::new(ms(200), ms(1000));
        assert!(!every.due(ms(1000)));
        assert!(!every.due(ms(1199)));
        assert!(every.due(ms(1210)));
        // The next period counts from when the last was seen due, not from the schedule.
        assert!(!every.due(ms(1400)));
        assert!(every.due(ms(1410)));
    }
}
