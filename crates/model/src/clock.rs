//! Time sources: a monotonic clock for pacing deadlines and a realtime clock for timestamps.
//!
//! What this module does:
//! - [`Clock`] is the only way the engine reads time (STYLE §1: time is an input). It has two faces:
//!   [`Clock::mono`] is monotonic time since the clock's own epoch, used for pacing deadlines;
//!   [`Clock::wall`] is `CLOCK_REALTIME` as [`UnixNanos`], the time base that is written into probe
//!   packets and compared with kernel `SO_TIMESTAMPING` stamps (which are `CLOCK_REALTIME` too).
//! - The real clock (`crate::clock::RealClock`) reads the operating system's clocks; this crate
//!   never does.
//! - [`VirtualClock`] is a settable clock for deterministic tests and simulations. It is `Sync`
//!   (atomics), so a test can advance it while a component under test holds a shared reference.
//!
//! What it does not do: no `CLOCK_TAI`, no PTP/PHC clocks, no clock-offset estimation between hosts.
//! `wall` and `mono` of the real clock are read separately and may step apart (NTP slews or steps
//! `CLOCK_REALTIME`, never `mono`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::stop::Stop;
use crate::wait::{Poll, Polled, Wait};

/// A realtime timestamp: nanoseconds since the Unix epoch (`CLOCK_REALTIME`).
///
/// `u64` nanoseconds reach the year 2554, so no wrap-around handling is needed.
/// Serialised as a bare integer.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct UnixNanos(pub u64);

impl UnixNanos {
    /// The Unix epoch itself (also used for "no timestamp" in zeroed packets).
    pub const EPOCH: UnixNanos = UnixNanos(0);

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Builds a timestamp from a duration since the epoch, saturating at `u64::MAX` ns.
    pub fn from_since_epoch(d: Duration) -> UnixNanos {
        UnixNanos(duration_to_nanos_saturating(d))
    }

    /// `self − earlier`, or `Duration::ZERO` when `earlier` is later than `self`.
    pub fn saturating_sub(self, earlier: UnixNanos) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self − earlier`, or `None` when `earlier` is later than `self`.
    pub fn checked_sub(self, earlier: UnixNanos) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_nanos)
    }

    /// Signed difference `self − earlier` in nanoseconds (never overflows).
    pub fn signed_diff_ns(self, earlier: UnixNanos) -> i128 {
        i128::from(self.0) - i128::from(earlier.0)
    }

    /// `self + d`, saturating at `u64::MAX` ns.
    pub fn saturating_add(self, d: Duration) -> UnixNanos {
        UnixNanos(self.0.saturating_add(duration_to_nanos_saturating(d)))
    }
}

/// `Duration` → whole nanoseconds, saturating at `u64::MAX` (about 584 years).
pub fn duration_to_nanos_saturating(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A source of time for the engine.
///
/// Implementations must be cheap to call (the real one costs ~22 ns per read on this kind of
/// machine) and `mono` must never go backwards.
pub trait Clock: Send + Sync {
    /// Monotonic time since this clock's own epoch (its construction, for the real clock).
    /// Used for pacing deadlines.
    fn mono(&self) -> Duration;

    /// Realtime (`CLOCK_REALTIME`), as written into packets and compared with kernel timestamps.
    fn wall(&self) -> UnixNanos;

    /// Lets `d` pass: the real clock sleeps the calling thread, a virtual clock moves
    /// forward by `d` at once (so a loop that waits runs without waiting in a test).
    fn sleep(&self, d: Duration);
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The clock reached the time waited for.
    Reached,
    /// The stop was raised first.
    Stopped,
}

/// The longest single sleep of [`wait_until`]: how late a stop is seen at most.
pub const WAIT_STEP: Duration = Duration::from_millis(20);

/// Waits until `clock`'s monotonic time reaches `until` (a time already reached is
/// reached, stop or not), or until `stop` is raised, in pauses of at most [`WAIT_STEP`]: a
/// [`Wait`] for a time, for a start time, a deadline between retries, a phase of a test.
pub fn wait_until(clock: &dyn Clock, until: Duration, stop: &Stop) -> Waited {
    if clock.mono() >= until {
        return Waited::Reached;
    }
    let waited = Wait::on(clock)
        .until(until)
        .or_stop(stop)
        .poll(|| Poll::<()>::Wait(WAIT_STEP));
    match waited {
        Polled::Stopped => Waited::Stopped,
        Polled::Ready(()) | Polled::TimedOut => Waited::Reached,
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn mono(&self) -> Duration {
        (**self).mono()
    }
    fn wall(&self) -> UnixNanos {
        (**self).wall()
    }
    fn sleep(&self, d: Duration) {
        (**self).sleep(d)
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn mono(&self) -> Duration {
        (**self).mono()
    }
    fn wall(&self) -> UnixNanos {
        (**self).wall()
    }
    fn sleep(&self, d: Duration) {
        (**self).sleep(d)
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn mono(&self) -> Duration {
        (**self).mono()
    }
    fn wall(&self) -> UnixNanos {
        (**self).wall()
    }
    fn sleep(&self, d: Duration) {
        (**self).sleep(d)
    }
}

/// A clock that only moves when told to: for tests and simulations.
///
/// `mono` starts at zero; `wall` is always `wall_start + mono`, so both faces move together.
/// The state is one `AtomicU64` (nanoseconds), so the clock is `Sync` and can be shared
/// (`&VirtualClock` and `Arc<VirtualClock>` are clocks too).
#[derive(Debug, Default)]
pub struct VirtualClock {
    mono_ns: AtomicU64,
    wall_start: UnixNanos,
}

impl VirtualClock {
    /// A virtual clock at `mono = 0` whose wall time starts at `wall_start`.
    pub fn new(wall_start: UnixNanos) -> VirtualClock {
        VirtualClock {
            mono_ns: AtomicU64::new(0),
            wall_start,
        }
    }

    /// Moves the clock forward by `d` (saturating at `u64::MAX` ns).
    pub fn advance(&self, d: Duration) {
        let step = duration_to_nanos_saturating(d);
        // `fetch_update` with a closure that always returns `Some` cannot fail.
        let _ = self
            .mono_ns
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(step))
            });
    }

    /// Sets the monotonic time. Going backwards is allowed here (it is a test tool), but a
    /// component that relies on monotonicity will see it.
    pub fn set_mono(&self, t: Duration) {
        self.mono_ns
            .store(duration_to_nanos_saturating(t), Ordering::Release);
    }

    /// The wall time at `mono = 0`.
    pub fn wall_start(&self) -> UnixNanos {
        self.wall_start
    }
}

impl Clock for VirtualClock {
    fn mono(&self) -> Duration {
        Duration::from_nanos(self.mono_ns.load(Ordering::Acquire))
    }

    fn wall(&self) -> UnixNanos {
        UnixNanos(
            self.wall_start
                .0
                .saturating_add(self.mono_ns.load(Ordering::Acquire)),
        )
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_nanos_arithmetic() {
        let a = UnixNanos(1_000);
        let b = UnixNanos(1_500);
        assert_eq!(b.saturating_sub(a), Duration::from_nanos(500));
        assert_eq!(a.saturating_sub(b), Duration::ZERO);
        assert_eq!(b.checked_sub(a), Some(Duration::from_nanos(500)));
        assert_eq!(a.checked_sub(b), None);
        assert_eq!(a.signed_diff_ns(b), -500);
        assert_eq!(
            UnixNanos(0).signed_diff_ns(UnixNanos(u64::MAX)),
            -i128::from(u64::MAX)
        );
        assert_eq!(a.saturating_add(Duration::from_nanos(5)), UnixNanos(1_005));
        assert_eq!(
            UnixNanos(u64::MAX - 1).saturating_add(Duration::from_secs(1)),
            UnixNanos(u64::MAX)
        );
        assert_eq!(
            UnixNanos::from_since_epoch(Duration::MAX),
            UnixNanos(u64::MAX)
        );
        assert!(a < b);
    }

    #[test]
    fn unix_nanos_serde_is_a_bare_integer() {
        let json = serde_json::to_string(&UnixNanos(42)).unwrap();
        assert_eq!(json, "42");
        let back: UnixNanos = serde_json::from_str(&json).unwrap();
        assert_eq!(back, UnixNanos(42));
    }

    #[test]
    fn virtual_clock_moves_only_when_told() {
        let clock = VirtualClock::new(UnixNanos(1_700_000_000_000_000_000));
        assert_eq!(clock.mono(), Duration::ZERO);
        assert_eq!(clock.wall(), UnixNanos(1_700_000_000_000_000_000));
        clock.advance(Duration::from_micros(250));
        assert_eq!(clock.mono(), Duration::from_micros(250));
        assert_eq!(clock.wall(), UnixNanos(1_700_000_000_000_250_000));
        clock.set_mono(Duration::from_secs(2));
        assert_eq!(clock.mono(), Duration::from_secs(2));
        assert_eq!(
            clock.wall().saturating_sub(clock.wall_start()),
            Duration::from_secs(2)
        );
        clock.advance(Duration::MAX);
        assert_eq!(clock.mono(), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn virtual_clock_is_shareable_across_threads() {
        let clock = Arc::new(VirtualClock::default());
        std::thread::scope(|s| {
            for _ in 0..2 {
                let c = Arc::clone(&clock);
                s.spawn(move || {
                    for _ in 0..1000 {
                        c.advance(Duration::from_nanos(1));
                    }
                });
            }
        });
        assert_eq!(clock.mono(), Duration::from_nanos(2000));
        // Shared references and Arcs are clocks too.
        fn read(c: impl Clock) -> Duration {
            c.mono()
        }
        assert_eq!(read(&*clock), Duration::from_nanos(2000));
        assert_eq!(read(Arc::clone(&clock)), Duration::from_nanos(2000));
    }

    #[test]
    fn waiting_ends_at_its_time_or_at_a_stop() {
        let clock = VirtualClock::new(UnixNanos(0));
        let stop = Stop::new();
        let until = Duration::from_millis(250);
        assert_eq!(wait_until(&clock, until, &stop), Waited::Reached);
        assert_eq!(clock.mono(), until, "no later than asked");
        // Already past: no sleep at all.
        assert_eq!(wait_until(&clock, Duration::ZERO, &stop), Waited::Reached);
        assert_eq!(clock.mono(), until);
        stop.raise();
        assert_eq!(wait_until(&clock, until * 10, &stop), Waited::Stopped);
        assert_eq!(clock.mono(), until, "a raised stop ends the wait at once");
        // A time already reached is reached, stop or not.
        assert_eq!(wait_until(&clock, until, &stop), Waited::Reached);
    }
}
