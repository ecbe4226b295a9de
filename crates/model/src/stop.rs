//! The stop token: one flag, shared by everything that should end when it is raised (a
//! signal, a session's end, a failed sibling thread, a test's deadline).
//!
//! What this module does:
//! - [`Stop`] is a cheap handle to the shared flag (an `Arc` inside): clones see the same
//!   flag. Once raised it stays raised. [`Stop::is_raised`] is one atomic load, so hot data
//!   loops check it on every batch.
//! - [`RaiseOnDrop`] raises a stop when it is dropped, so a thread's end (an error or a
//!   panic too) reaches whoever waits on it.
//!
//! What it does not do: no signals (the binary registers its handlers on
//! [`Stop::shared_flag`]), no waiting (`crate::wait` polls with a stop).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A stop token: raised once, seen by every clone.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A token not yet raised.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// A token already raised (a run told to stop before it starts, in tests).
    pub fn raised() -> Stop {
        Stop(Arc::new(AtomicBool::new(true)))
    }

    /// Raises the token: every clone sees it (at the latest on its next check).
    #[inline]
    pub fn raise(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the token has been raised: one atomic load.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// The flag itself, for code that can only set an `Arc<AtomicBool>` (a signal handler
    /// registered with `signal_hook::flag`): setting it raises this token.
    pub fn shared_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

/// Raises its stop when dropped, unless [`RaiseOnDrop::disarm`]ed first.
#[derive(Debug)]
pub struct RaiseOnDrop<'a> {
    stop: &'a Stop,
    armed: bool,
}

impl<'a> RaiseOnDrop<'a> {
    /// A guard that raises `stop` when it is dropped.
    pub fn new(stop: &'a Stop) -> Self {
        Self { stop, armed: true }
    }

    /// Leaves the stop as it is at the drop (the work ended well).
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.stop.raise();
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn clones_share_one_flag_that_stays_raised() {
        let stop = Stop::new();
        let other = stop.clone();
        assert!(!stop.is_raised() && !other.is_raised());
        other.raise();
        assert!(stop.is_raised() && other.is_raised());
        other.raise();
        assert!(stop.is_raised());
        assert!(Stop::raised().is_raised());
        assert!(!Stop::default().is_raised());
        // The shared flag is the token's own.
        stop.shared_flag().store(false, Ordering::Release);
        assert!(!other.is_raised());
        stop.shared_flag().store(true, Ordering::Release);
        assert!(other.is_raised());
    }

    #[test]
    fn the_stop_is_raised_at_the_drop_unless_disarmed_and_on_a_panic() {
        let stop = Stop::new();
        drop(RaiseOnDrop::new(&stop));
        assert!(stop.is_raised());
        let stop = Stop::new();
        let mut g = RaiseOnDrop::new(&stop);
        g.disarm();
        drop(g);
        assert!(!stop.is_raised());
        let stop = Stop::new();
        let r = std::panic::catch_unwind(|| {
            let _g = RaiseOnDrop::new(&stop);
            panic!("work failed");
        });
        assert!(r.is_err() && stop.is_raised());
    }
}
