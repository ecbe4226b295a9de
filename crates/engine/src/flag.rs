//! A stop flag raised when a guard is dropped, so a thread's end (an error or a panic
//! too) reaches whoever waits on the flag. Only the guard; the flags themselves are the
//! callers' `AtomicBool`s.

use std::sync::atomic::{AtomicBool, Ordering};

/// Sets its flag when dropped, unless [`SetOnDrop::disarm`]ed first.
pub struct SetOnDrop<'a> {
    flag: &'a AtomicBool,
    armed: bool,
}

impl<'a> SetOnDrop<'a> {
    /// A guard that sets `flag` when it is dropped.
    pub fn new(flag: &'a AtomicBool) -> Self {
        Self { flag, armed: true }
    }

    /// Leaves the flag as it is at the drop (the work ended well).
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.flag.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_flag_is_set_at_the_drop_unless_disarmed_and_on_a_panic() {
        let flag = AtomicBool::new(false);
        drop(SetOnDrop::new(&flag));
        assert!(flag.load(Ordering::Acquire));
        let flag = AtomicBool::new(false);
        let mut g = SetOnDrop::new(&flag);
        g.disarm();
        drop(g);
        assert!(!flag.load(Ordering::Acquire));
        let flag = AtomicBool::new(false);
        let r = std::panic::catch_unwind(|| {
            let _g = SetOnDrop::new(&flag);
            panic!("work failed");
        });
        assert!(r.is_err() && flag.load(Ordering::Acquire));
    }
}
