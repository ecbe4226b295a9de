//! Zero-loss sweep: a UDP trial at each target rate from `from` to `to` in `step`s, plus
//! any extra points, each run `repeat` times.
//!
//! Each step is classified by its worst repetition as in the FRER report: zero loss,
//! marginal (up to the marginal limit, 0.5 %), loss detected, or high loss (from the high
//! limit, 1 %). The maximum sustained zero-loss rate is the highest target below the first
//! step that was not zero-loss (a later lucky zero-loss step above a lossy one does not
//! count), and a step where the generator fell behind is never credited. The recommended
//! operating rate is that rate times a safety margin (80 %).

use std::time::Duration;

use model::results::{SweepRow, SweepStatus, SweepTable};
use model::spec::{Direction, Protocol, Rate};

use crate::{PlanError, Trial, TrialData, TrialRequest};

/// Most steps one sweep may have (repetitions counted).
pub const MAX_STEPS: usize = 1000;

/// The loss limits of the levels, as shares (0..1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Levels {
    /// Loss up to this is marginal (default 0.5 %).
    pub marginal: f64,
    /// Loss from this on is high (default 1 %).
    pub high: f64,
}

impl Default for Levels {
    fn default() -> Self {
        Self {
            marginal: 0.005,
            high: 0.01,
        }
    }
}

impl Levels {
    /// The level of a loss ratio (0..1).
    pub fn classify(&self, loss_ratio: f64) -> SweepStatus {
        if loss_ratio <= 0.0 {
            SweepStatus::ZeroLoss
        } else if loss_ratio <= self.marginal {
            SweepStatus::Marginal
        } else if loss_ratio < self.high {
            SweepStatus::Loss
        } else {
            SweepStatus::HighLoss
        }
    }
}

/// A validated sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    targets: Vec<f64>,
    step: f64,
    points: Vec<f64>,
    len: usize,
    duration: Duration,
    direction: Direction,
    repeat: u32,
    levels: Levels,
    safety_margin: f64,
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
            step: step_bps,
            points: vec![],
            len,
            duration,
            direction,
            repeat: 1,
            levels: Levels::default(),
            safety_margin: 0.8,
        })
    }

    /// Adds steps at `points` (bits/s) to the staircase; the steps run in rate order.
    ///
    /// # Errors
    /// A point that is not a positive rate, or too many steps.
    pub fn with_points(mut self, points: &[f64]) -> Result<Self, PlanError> {
        if let Some(p) = points.iter().find(|p| !(p.is_finite() && **p > 0.0)) {
            return Err(PlanError::Range(format!(
                "--points: {p} is not a positive rate"
            )));
        }
        self.targets.extend_from_slice(points);
        self.points.extend_from_slice(points);
        self.targets.sort_by(f64::total_cmp);
        self.targets
            .dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs());
        self.check_steps()?;
        Ok(self)
    }

    /// Runs every step `n` times (1..=100).
    ///
    /// # Errors
    /// `n` out of range, or too many steps.
    pub fn repeat(mut self, n: u32) -> Result<Self, PlanError> {
        if !(1..=100).contains(&n) {
            return Err(PlanError::Range(format!("--repeat {n}: give 1..=100")));
        }
        self.repeat = n;
        self.check_steps()?;
        Ok(self)
    }

    /// The loss limits of the levels (shares, 0 < marginal < high <= 1).
    ///
    /// # Errors
    /// Limits out of order or range.
    pub fn levels(mut self, levels: Levels) -> Result<Self, PlanError> {
        let Levels { marginal, high } = levels;
        if !(marginal > 0.0 && marginal < high && high <= 1.0) {
            return Err(PlanError::Range(format!(
                "--marginal {} % must be above 0 and below --high {} % (at most 100 %)",
                marginal * 100.0,
                high * 100.0
            )));
        }
        self.levels = levels;
        Ok(self)
    }

    /// The safety margin of the operating rate (a share, 0 < m <= 1).
    ///
    /// # Errors
    /// A margin out of range.
    pub fn safety_margin(mut self, margin: f64) -> Result<Self, PlanError> {
        if !(margin > 0.0 && margin <= 1.0) {
            return Err(PlanError::Range(format!(
                "--safety-margin {} %: give above 0 and at most 100 %",
                margin * 100.0
            )));
        }
        self.safety_margin = margin;
        Ok(self)
    }

    fn check_steps(&self) -> Result<(), PlanError> {
        let steps = self.targets.len() * self.repeat as usize;
        if steps > MAX_STEPS {
            return Err(PlanError::TooManySteps {
                steps,
                max: MAX_STEPS,
            });
        }
        Ok(())
    }

    /// Repetitions per step.
    pub fn repeats(&self) -> u32 {
        self.repeat
    }

    /// The staircase's step, bits/s.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// The extra points, bits/s, as given.
    pub fn points(&self) -> &[f64] {
        &self.points
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
            let mut runs = Vec::with_capacity(self.repeat as usize);
            for _ in 0..self.repeat {
                runs.push(trial.run(&req)?);
            }
            let row = self.row(target, &runs);
            on_row(&row);
            rows.push(row);
        }
        let zero_loss = max_sustained_zero_loss(&rows);
        let max_zero_loss_bps = zero_loss.map(|z| z.bps);
        Ok(SweepTable {
            rows,
            max_zero_loss_bps,
            max_zero_loss_is_lower_bound: zero_loss.is_some_and(|z| z.lower_bound),
            marginal_pct: Some(self.levels.marginal * 100.0),
            high_pct: Some(self.levels.high * 100.0),
            operating_bps: max_zero_loss_bps.map(|m| m * self.safety_margin),
            safety_margin: Some(self.safety_margin),
        })
    }

    /// One step from its repetitions: mean rates, summed counts, the worst loss decides.
    fn row(&self, target: f64, runs: &[TrialData]) -> SweepRow {
        let n = runs.len().max(1) as f64;
        let losses: Vec<f64> = runs.iter().map(loss_ratio).collect();
        let achieved: Vec<f64> = runs.iter().map(|r| r.received_bps.unwrap_or(0.0)).collect();
        let worst = losses.iter().copied().fold(0.0, f64::max);
        let range = |v: &[f64], scale: f64| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            (v.len() > 1).then_some([lo * scale, hi * scale])
        };
        SweepRow {
            target_bps: target,
            offered_bps: runs
                .iter()
                .map(|r| r.offered_bps.unwrap_or(0.0))
                .sum::<f64>()
                / n,
            achieved_bps: achieved.iter().sum::<f64>() / n,
            loss_pct: worst * 100.0,
            sent_packets: runs.iter().map(|r| r.counters.sent).sum(),
            lost_packets: runs.iter().map(|r| r.counters.lost).sum(),
            duration_s: self.duration.as_secs_f64(),
            status: self.levels.classify(worst),
            generator_limited: runs.iter().any(|r| r.generator_limited),
            repeats: (runs.len() > 1).then_some(runs.len() as u32),
            achieved_range_bps: range(&achieved, 1.0),
            loss_range_pct: range(&losses, 100.0),
        }
    }
}

/// A trial's loss ratio; nothing sent counts as total loss (a step that could not send
/// proves nothing).
fn loss_ratio(r: &TrialData) -> f64 {
    let (sent, lost) = (r.counters.sent, r.counters.lost);
    if sent == 0 {
        1.0
    } else {
        lost as f64 / sent as f64
    }
}

/// The highest rate proven free of loss, and whether it is only a lower bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZeroLoss {
    /// bits/s.
    pub bps: f64,
    /// The run of zero-loss steps ended in steps the generator could not offer in full:
    /// the network lost nothing of what was offered, so its zero-loss rate is at least
    /// `bps` (what was offered), and where it ends was not measured.
    pub lower_bound: bool,
}

/// The unbroken run of zero-loss steps from the lowest target up: its highest target when
/// the generator kept up with it, or, when the generator fell short in the run's upper
/// steps, the most that was offered there without loss, as a lower bound (a
/// generator-limited step is never the network's limit, and never hides a zero-loss rate
/// either).
#[must_use]
pub fn max_sustained_zero_loss(rows: &[SweepRow]) -> Option<ZeroLoss> {
    let mut sorted: Vec<&SweepRow> = rows.iter().collect();
    sorted.sort_by(|a, b| a.target_bps.total_cmp(&b.target_bps));
    let run = sorted
        .iter()
        .take_while(|r| r.status == SweepStatus::ZeroLoss && r.sent_packets > 0);
    let mut best: Option<ZeroLoss> = None;
    for r in run {
        let (bps, lower_bound) = if r.generator_limited {
            (r.offered_bps, true)
        } else {
            (r.target_bps, false)
        };
        match best {
            Some(b) if b.bps >= bps => {
                // A limited step that offered less than an earlier one proves nothing new,
                // but the zero-loss rate is still open above.
                best = Some(ZeroLoss {
                    bps: b.bps,
                    lower_bound: b.lower_bound || lower_bound,
                });
            }
            _ => best = Some(ZeroLoss { bps, lower_bound }),
        }
    }
    best.filter(|b| b.bps > 0.0)
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
    fn levels_follow_the_report() {
        let l = Levels::default();
        assert_eq!(l.classify(0.0), SweepStatus::ZeroLoss);
        assert_eq!(l.classify(0.0024), SweepStatus::Marginal);
        assert_eq!(l.classify(0.005), SweepStatus::Marginal);
        assert_eq!(l.classify(0.0052), SweepStatus::Loss);
        assert_eq!(l.classify(0.01), SweepStatus::HighLoss);
        assert_eq!(l.classify(0.023), SweepStatus::HighLoss);
        let strict = Levels {
            marginal: 0.001,
            high: 0.002,
        };
        assert_eq!(strict.classify(0.0015), SweepStatus::Loss);
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
        // 50 of 750 Mbit/s lost: 6.7 %, high loss.
        assert_eq!(r750.status, SweepStatus::HighLoss, "{r750:?}");
        assert!((r750.achieved_bps - 700e6).abs() < 1e3);
        assert_eq!(t.operating_bps, Some(560e6), "80 % of 700 Mbit/s");
        assert_eq!((t.marginal_pct, t.high_pct), (Some(0.5), Some(1.0)));
    }

    #[test]
    fn repeats_give_ranges_and_points_join_the_staircase() {
        // Each trial at 550 Mbit/s loses a little more than the one before: 0.2 %, 0.4 %,
        // 0.6 % of what is sent (a device with random loss).
        struct Wobbly(u32);
        impl Trial for Wobbly {
            type Error = std::convert::Infallible;
            fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Self::Error> {
                let bps = match req.load {
                    crate::Load::Rate(Rate::BitsPerSec(b), _) => b,
                    _ => 0.0,
                };
                let lost = if bps > 540e6 {
                    self.0 += 1;
                    20 * u64::from(self.0)
                } else {
                    0
                };
                let c = model::stats::Counters {
                    received: 10_000 - lost,
                    ..Default::default()
                };
                Ok(TrialData {
                    counters: c.settle(10_000),
                    offered_bps: Some(bps),
                    received_bps: Some(bps * (1.0 - lost as f64 / 10_000.0)),
                    duration: req.duration(),
                    ..TrialData::default()
                })
            }
        }
        let p = SweepPlan::new(
            500e6,
            550e6,
            50e6,
            1472,
            Duration::from_secs(5),
            Direction::Forward,
        )
        .unwrap()
        .with_points(&[520e6, 540e6, 550e6])
        .unwrap()
        .repeat(3)
        .unwrap();
        let t = p.run(&mut Wobbly(0), |_| {}).unwrap();
        let targets: Vec<f64> = t.rows.iter().map(|r| r.target_bps).collect();
        assert_eq!(targets, [500e6, 520e6, 540e6, 550e6]);
        let last = &t.rows[3];
        assert_eq!(last.repeats, Some(3));
        assert_eq!(last.loss_range_pct, Some([0.2, 0.6]));
        assert_eq!(
            last.status,
            SweepStatus::Loss,
            "the worst repetition decides: {last:?}"
        );
        assert_eq!(t.max_zero_loss_bps, Some(540e6));
        assert!(SweepPlan::new(
            1e6,
            2e6,
            1e6,
            100,
            Duration::from_secs(1),
            Direction::Forward
        )
        .unwrap()
        .repeat(0)
        .is_err());
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
        // 700M and 800M could not be offered: the network lost nothing of the 600M that
        // was, and its limit above was not measured.
        assert_eq!(t.max_zero_loss_bps, Some(600e6));
        assert!(t.max_zero_loss_is_lower_bound);
    }

    /// The sweep: 400M and 450M lost nothing but the generator fell short of both
    /// (it offered 380M and 390M). That is a zero-loss rate of at least 390M, not "none".
    #[test]
    fn zero_loss_steps_the_generator_fell_short_of_are_a_lower_bound() {
        let step = |target: f64, offered: f64, lost: u64| SweepRow {
            target_bps: target,
            offered_bps: offered,
            achieved_bps: offered,
            loss_pct: if lost > 0 { 1.0 } else { 0.0 },
            sent_packets: 1000,
            lost_packets: lost,
            duration_s: 1.0,
            status: if lost > 0 {
                SweepStatus::HighLoss
            } else {
                SweepStatus::ZeroLoss
            },
            generator_limited: offered < target * 0.99,
            repeats: None,
            achieved_range_bps: None,
            loss_range_pct: None,
        };
        let z = max_sustained_zero_loss(&[step(400e6, 380e6, 0), step(450e6, 390e6, 0)]).unwrap();
        assert_eq!(
            z,
            ZeroLoss {
                bps: 390e6,
                lower_bound: true
            }
        );
        // A kept step above a limited one is exact again.
        let z = max_sustained_zero_loss(&[step(400e6, 380e6, 0), step(450e6, 450e6, 0)]).unwrap();
        assert_eq!(
            z,
            ZeroLoss {
                bps: 450e6,
                lower_bound: false
            }
        );
        // A limited step that offered less than the kept one below: the kept target stands,
        // and it is a lower bound.
        let z = max_sustained_zero_loss(&[step(400e6, 400e6, 0), step(450e6, 300e6, 0)]).unwrap();
        assert_eq!(
            z,
            ZeroLoss {
                bps: 400e6,
                lower_bound: true
            }
        );
        // Loss ends the run, limited or not; a step that sent nothing proves nothing.
        assert_eq!(max_sustained_zero_loss(&[step(400e6, 380e6, 5)]), None);
        let mut silent = step(400e6, 0.0, 0);
        silent.sent_packets = 0;
        assert_eq!(max_sustained_zero_loss(&[silent]), None);
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
            repeats: None,
            achieved_range_bps: None,
            loss_range_pct: None,
        };
        let rows = vec![
            mk(1.0, SweepStatus::ZeroLoss),
            mk(2.0, SweepStatus::Marginal),
            mk(3.0, SweepStatus::ZeroLoss),
        ];
        assert_eq!(max_sustained_zero_loss(&rows).map(|z| z.bps), Some(1.0));
        assert_eq!(max_sustained_zero_loss(&rows[1..2]), None);
    }
}
