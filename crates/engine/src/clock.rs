//! The real clock: `std::time::Instant` for [`Clock::mono`], `SystemTime` for [`Clock::wall`].
//! The [`Clock`] trait, timestamps and the virtual clock for tests are pure and live in
//! `model::clock`; this is the one place that reads the operating system's clocks.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use model::clock::{Clock, UnixNanos};

/// The operating system's clocks: `Instant` for [`Clock::mono`], `SystemTime` for [`Clock::wall`].
#[derive(Clone, Copy, Debug)]
pub struct RealClock {
    start: Instant,
}

impl RealClock {
    /// A real clock whose `mono` epoch is now.
    #[allow(clippy::disallowed_methods)] // the one real clock
    pub fn new() -> RealClock {
        RealClock {
            start: Instant::now(),
        }
    }
}

impl Default for RealClock {
    fn default() -> Self {
        RealClock::new()
    }
}

#[allow(clippy::disallowed_methods)] // the one real clock
impl Clock for RealClock {
    fn mono(&self) -> std::time::Duration {
        self.start.elapsed()
    }

    fn sleep(&self, d: std::time::Duration) {
        std::thread::sleep(d);
    }

    /// A system clock set before 1970 reads as [`UnixNanos::EPOCH`].
    fn wall(&self) -> UnixNanos {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(UnixNanos::from_since_epoch)
            .unwrap_or(UnixNanos::EPOCH)
    }
}

/// Another clock's time with real pauses: for a wait on sockets and threads (which move in
/// real time) whose deadline runs on a clock that may be virtual (a server's, in a test).
/// [`Clock::mono`] and [`Clock::wall`] are the given clock's; [`Clock::sleep`] sleeps the
/// thread, as the real clock does.
#[derive(Clone, Copy)]
pub struct RealPauses<'a>(pub &'a dyn Clock);

impl std::fmt::Debug for RealPauses<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RealPauses").finish_non_exhaustive()
    }
}

impl Clock for RealPauses<'_> {
    fn mono(&self) -> std::time::Duration {
        self.0.mono()
    }

    fn wall(&self) -> UnixNanos {
        self.0.wall()
    }

    fn sleep(&self, d: std::time::Duration) {
        std::thread::sleep(d);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn real_clock_is_monotonic_and_near_system_time() {
        let clock = RealClock::new();
        let a = clock.mono();
        let b = clock.mono();
        assert!(b >= a);
        let wall = clock.wall();
        // After 2020-01-01: the machine's clock is set.
        assert!(wall > UnixNanos(1_577_836_800_000_000_000));
    }
}
