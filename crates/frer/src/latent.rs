//! Latent error detection (IEEE 802.1CB 7.4.4): with N paths working, every passed frame
//! has N − 1 discarded copies, so `passed · (N − 1) − discarded` stays constant; a path
//! that silently stops moves it. Tested every `period_ms`, re-based every
//! `reset_period_ms`. Time is an input.

/// Parameters (frerSeqRcvyLatentError…).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatentConfig {
    /// frerSeqRcvyLatentErrorPaths (N).
    pub paths: u16,
    /// frerSeqRcvyLatentErrorDifference: the drift that raises the error.
    pub difference: i64,
    /// frerSeqRcvyLatentErrorPeriod, ms (default 2000).
    pub period_ms: u64,
    /// frerSeqRcvyLatentResetPeriod, ms (default 30000).
    pub reset_period_ms: u64,
}

impl Default for LatentConfig {
    /// Two paths, the YANG default periods, any drift above 0 is an error.
    fn default() -> Self {
        Self {
            paths: 2,
            difference: 0,
            period_ms: 2000,
            reset_period_ms: 30_000,
        }
    }
}

/// The detector's state.
#[derive(Debug, Clone)]
pub struct LatentErrorDetector {
    cfg: LatentConfig,
    base: i64,
    next_test: u64,
    next_reset: u64,
    /// frerCpsSeqRcvyLatentErrorResets (10.8.10).
    pub resets: u64,
    /// Latent errors signalled so far.
    pub errors: u64,
}

fn value(cfg: &LatentConfig, passed: u64, discarded: u64) -> i64 {
    passed as i64 * (i64::from(cfg.paths) - 1) - discarded as i64
}

impl LatentErrorDetector {
    /// A detector started (LatentErrorReset) at `now_ms` with the counters as they are.
    pub fn new(cfg: LatentConfig, now_ms: u64, passed: u64, discarded: u64) -> Self {
        Self {
            cfg,
            base: value(&cfg, passed, discarded),
            next_test: now_ms + cfg.period_ms,
            next_reset: now_ms + cfg.reset_period_ms,
            resets: 1,
            errors: 0,
        }
    }

    /// Runs the test and reset timers to `now_ms` with the recovery function's current
    /// passed and discarded counts; returns the drift when a test fails (SIGNAL_LATENT_ERROR).
    pub fn poll(&mut self, now_ms: u64, passed: u64, discarded: u64) -> Option<i64> {
        let mut signal = None;
        if now_ms >= self.next_test {
            self.next_test = now_ms + self.cfg.period_ms;
            let diff = self.base - value(&self.cfg, passed, discarded);
            if self.cfg.paths > 1 && diff.abs() > self.cfg.difference {
                self.errors += 1;
                signal = Some(diff);
            }
        }
        if now_ms >= self.next_reset {
            self.next_reset = now_ms + self.cfg.reset_period_ms;
            self.base = value(&self.cfg, passed, discarded);
            self.resets += 1;
        }
        signal
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_silent_path_raises_the_error_and_a_reset_rebases() {
        let cfg = LatentConfig {
            difference: 5,
            ..LatentConfig::default()
        };
        let mut d = LatentErrorDetector::new(cfg, 0, 0, 0);
        // Both paths deliver: 1000 passed, 1000 duplicates discarded.
        assert_eq!(d.poll(2000, 1000, 1000), None);
        // Path B goes silent: 1000 more passed, no more duplicates.
        assert_eq!(d.poll(4000, 2000, 1000), Some(-1000));
        assert_eq!(d.errors, 1);
        // After the reset period the drift is the new base.
        assert_eq!(d.poll(30_000, 3000, 1000), Some(-2000));
        assert_eq!(d.resets, 2);
        assert_eq!(d.poll(32_000, 3500, 1000), Some(-500));
        // One path configured: never an error.
        let mut one = LatentErrorDetector::new(LatentConfig { paths: 1, ..cfg }, 0, 0, 0);
        assert_eq!(one.poll(2000, 100, 0), None);
    }
}
