//! The one timer of the lab's managed processes' periodic work ([`Every`]: publish the
//! counters every 200 ms), on a clock's monotonic time. Waiting for something another
//! process or the kernel does is `model::wait::Wait`, on the real clock
//! (`engine::clock::RealClock`).

use std::time::Duration;

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
