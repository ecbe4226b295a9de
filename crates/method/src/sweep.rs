//! Zero-loss sweep: a UDP trial at each target rate from `from` to `to` in `step`s.
//!
//! Each step is classified as in the FRER report: zero loss, marginal (loss below 0.5 %),
//! or loss. The maximum sustained zero-loss rate is the highest target below the first step
//! that was not zero-loss (a later lucky zero-loss step above a lossy one does not count),
//! and a step where the generator fell behind is never credited.

use std::time::Duration;

use model::results::{SweepRow, SweepStatus, SweepTable};
use model::spec::{Direction, Protocol, Rate};

use crate::{PlanError, Trial, TrialData, TrialRequest};

/// Loss below this share (0.5 %) is "marginal".
pub const MARGINAL_BELOW: f64 = 0.005;
/// Most steps one sweep may have.
pub const MAX_STEPS: usize = 1000;

/// A validated sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    targets: Vec<f64>,
    len: usize,
    duration: Duration,
    direction: Direction,
}

impl SweepPlan {
    /// Targets `from, from+step, …` up to and including `to` (within 1e-9 relative).
    pub fn new(
        from_bps: f64,
        to_bps: f64,
        step_bps: f64,
        len: usize,
        duration: Duration,
        direction: Direction,
    ) -> Result<Self, PlanError> {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        if !ok(from_bps) || !ok(to_bps) || !ok(step_bps) {
            return Err(PlanError::Range(
                "--from, --to and --step must be positive rates".into(),
            ));
        }
        if to_bps < from_bps {
            return Err(PlanError::Range(format!(
                "--to ({to_bps}) is below --from ({from_bps})"
            )));
        }
        let steps = ((to_bps - from_bps) / step_bps * (1.0 + 1e-9)).floor() as usize + 1;
        if steps > MAX_STEPS {
            return Err(PlanError::TooManySteps {
                steps,
                max: MAX_STEPS,
            });
        }
        let targets = (0..steps).map(|i| from_bps + step_bps * i as f64).collect();
        Ok(Self {
            targets,
            len,
            duration,
            direction,
        })
    }

    /// The target rates in order.
    pub fn targets(&self) -> &[f64] {
        &self.targets
    }

    /// Payload bytes per datagram.
    pub fn payload_len(&self) -> usize {
        self.len
    }

    /// Length of each step.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Direction of the traffic.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// Runs every step, calling `on_row` after each, and returns the table.
    pub fn run<T: Trial>(
        &self,
        trial: &mut T,
        mut on_row: impl FnMut(&SweepRow),
    ) -> Result<SweepTable, T::Error> {
        let mut rows = Vec::with_capacity(self.targets.len());
        for &target in &self.targets {
            let req = TrialRequest::payload(
                Protocol::Udp,
                self.direction,
                self.len,
                Rate::BitsPerSec(target),
                self.duration,
            );
            let res = trial.run(&req)?;
            let row = row(target, &res);
            on_row(&row);
            rows.push(row);
        }
        let max_zero_loss_bps = max_sustained_zero_loss(&rows);
        Ok(SweepTable {
            rows,
            max_zero_loss_bps,
        })
    }
}

/// Classifies a loss ratio (0..1).
pub fn classify(loss_ratio: f64) -> SweepStatus {
    if loss_ratio <= 0.0 {
        SweepStatus::ZeroLoss
    } else if loss_ratio < MARGINAL_BELOW {
        SweepStatus::Marginal
    } else {
        SweepStatus::Loss
    }
}

fn row(target: f64, r: &TrialData) -> SweepRow {
    let (sent, lost) = (r.counters.sent, r.counters.lost);
    // Nothing sent counts as total loss: a step that could not send proves nothing.
    let loss_ratio = if sent == 0 {
        1.0
    } else {
        lost as f64 / sent as f64
    };
    SweepRow {
        target_bps: target,
        offered_bps: r.offered_bps.unwrap_or(0.0),
        achieved_bps: r.received_bps.unwrap_or(0.0),
        loss_pct: loss_ratio * 100.0,
        sent_packets: sent,
        lost_packets: lost,
        duration_s: r.duration.as_secs_f64(),
        status: classify(loss_ratio),
        generator_limited: r.generator_limited,
    }
}

/// The highest target of the unbroken run of zero-loss, generator-kept steps from the
/// lowest target up.
pub fn max_sustained_zero_loss(rows: &[SweepRow]) -> Option<f64> {
    let mut sorted: Vec<&SweepRow> = rows.iter().collect();
    sorted.sort_by(|a, b| a.target_bps.total_cmp(&b.target_bps));
    sorted
        .iter()
        .take_while(|r| r.status == SweepStatus::ZeroLoss && !r.generator_limited)
        .last()
        .map(|r| r.target_bps)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_device::Device;

    #[test]
    fn plan_steps_include_both_ends() {
        let p = SweepPlan::new(
            400e6,
            950e6,
            50e6,
            1472,
            Duration::from_secs(5),
            Direction::Forward,
        )
        .unwrap();
        assert_eq!(p.targets().len(), 12);
        assert_eq!(p.targets()[0], 400e6);
        assert!((p.targets()[11] - 950e6).abs() < 1.0);
    }

    #[test]
    fn bad_plans_are_refused() {
        let d = Duration::from_secs(1);
        assert!(matches!(
            SweepPlan::new(5e6, 1e6, 1e6, 100, d, Direction::Forward),
            Err(PlanError::Range(_))
        ));
        assert!(matches!(
            SweepPlan::new(1e6, 5e6, 0.0, 100, d, Direction::Forward),
            Err(PlanError::Range(_))
        ));
        assert!(matches!(
            SweepPlan::new(1e3, 1e9, 1.0, 100, d, Direction::Forward),
            Err(PlanError::TooManySteps { .. })
        ));
    }

    #[test]
    fn classes_follow_the_report() {
        assert_eq!(classify(0.0), SweepStatus::ZeroLoss);
        assert_eq!(classify(0.001), SweepStatus::Marginal);
        assert_eq!(classify(0.004_999), SweepStatus::Marginal);
        assert_eq!(classify(0.005), SweepStatus::Loss);
    }

    #[test]
    fn sweep_over_a_device_finds_its_capacity() {
        // A device that forwards 700 Mbit/s without loss and drops the excess.
        let mut dev = Device::new(700e6, f64::INFINITY);
        let p = SweepPlan::new(
            400e6,
            950e6,
            50e6,
            1472,
            Duration::from_secs(5),
            Direction::Forward,
        )
        .unwrap();
        let mut seen = 0;
        let t = p.run(&mut dev, |_| seen += 1).unwrap();
        assert_eq!(seen, 12);
        assert_eq!(t.max_zero_loss_bps, Some(700e6));
        let r750 = &t.rows[7];
        assert_eq!(r750.target_bps, 750e6);
        assert_eq!(r750.status, SweepStatus::Loss, "{r750:?}");
        assert!((r750.achieved_bps - 700e6).abs() < 1e3);
    }

    #[test]
    fn generator_limit_is_never_credited() {
        // The device is perfect but the generator tops out at 600 Mbit/s.
        let mut dev = Device::new(f64::INFINITY, 600e6);
        let p = SweepPlan::new(
            400e6,
            800e6,
            100e6,
            1472,
            Duration::from_secs(1),
            Direction::Forward,
        )
        .unwrap();
        let t = p.run(&mut dev, |_| {}).unwrap();
        assert!(t.rows[3].generator_limited);
        assert_eq!(t.max_zero_loss_bps, Some(600e6));
    }

    #[test]
    fn lucky_step_above_a_lossy_one_does_not_count() {
        let mk = |t: f64, status| SweepRow {
            target_bps: t,
            offered_bps: t,
            achieved_bps: t,
            loss_pct: 0.0,
            sent_packets: 1,
            lost_packets: 0,
            duration_s: 1.0,
            status,
            generator_limited: false,
        };
        let rows = vec![
            mk(1.0, SweepStatus::ZeroLoss),
            mk(2.0, SweepStatus::Marginal),
            mk(3.0, SweepStatus::ZeroLoss),
        ];
        assert_eq!(max_sustained_zero_loss(&rows), Some(1.0));
        assert_eq!(max_sustained_zero_loss(&rows[1..2]), None);
    }
}
