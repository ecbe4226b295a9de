//! The shaper accuracy matrix (the RTX2000 report's table): for each configured bandwidth,
//! line-rate traffic at each frame size through the device; the passed rate is what
//! arrived, in L2 bit/s of frames with FCS over the receive span, divided by the
//! bandwidth. A shaper that counts frames without FCS passes 4 bytes per frame more.
//!
//! It sends nothing: a [`Dut`] sets each bandwidth, a frame [`Trial`] offers the load.

use std::time::Duration;

use model::results::shaping::{Cell, ShapingReport};
use wire::linerate::LineRate;

use crate::streams::received_l2_bps;
use crate::trial::{Dut, Trial, TrialRequest};
use crate::PlanError;

/// A cell whose offered L2 rate is not 5 % above its bandwidth cannot show the shaper at
/// work: it measures the generator.
const MIN_OVERLOAD: f64 = 1.05;

/// A validated matrix: rows frame sizes, columns bandwidths.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapingPlan {
    sizes: Vec<u64>,
    bandwidths: Vec<f64>,
    duration: Duration,
    line: LineRate,
}

/// The matrix and the notes a reader must see.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapingOutcome {
    /// Every cell.
    pub report: ShapingReport,
    /// What the passed rate means, and which cells measure the tool.
    pub notes: Vec<String>,
}

impl ShapingPlan {
    /// Frame sizes (FCS included), bandwidths (bit/s) and the seconds of traffic per cell,
    /// offered at `line`.
    ///
    /// # Errors
    /// No sizes or bandwidths, a bandwidth that is not positive, a zero duration.
    pub fn new(
        sizes: Vec<u64>,
        bandwidths: Vec<f64>,
        duration: Duration,
        line: LineRate,
    ) -> Result<Self, PlanError> {
        if sizes.is_empty() {
            return Err(PlanError::Sizes("give at least one frame size".into()));
        }
        if bandwidths.is_empty() || bandwidths.iter().any(|b| !(b.is_finite() && *b > 0.0)) {
            return Err(PlanError::Range(
                "give positive bandwidths, e.g. 100m,10m".into(),
            ));
        }
        if duration.is_zero() {
            return Err(PlanError::Range("a cell needs some time".into()));
        }
        Ok(Self {
            sizes,
            bandwidths,
            duration,
            line,
        })
    }

    /// For each bandwidth and frame size: waits until `dut` has emptied its queue of the
    /// previous cell, sets the bandwidth, and offers line rate on `trial`, calling
    /// `on_cell` after each cell. The device gets its rate back at the end, also when a
    /// cell fails or the run is stopped.
    ///
    /// # Errors
    /// The runner's or the device's, when a cell could not run or a rate not be set.
    pub fn run<T: Trial, D: Dut<Error = T::Error>>(
        &self,
        trial: &mut T,
        dut: &mut D,
        on_cell: impl FnMut(&Cell),
    ) -> Result<ShapingOutcome, T::Error> {
        let cells = self.cells(trial, dut, on_cell);
        let restored = dut.restore();
        let cells = cells?;
        restored?;
        let report = ShapingReport {
            sizes: self.sizes.clone(),
            bandwidths_bps: self.bandwidths.clone(),
            configured_by: dut.describe(),
            cells,
        };
        let mut notes = Vec::new();
        if report.cells.iter().any(|c| c.generator_limited) {
            notes.push("some cells could not be offered above their bandwidth (generator limited): they measure the tool, not the shaper".into());
        }
        let below: Vec<&Cell> = report.cells.iter().filter(|c| c.below_target).collect();
        if !below.is_empty() {
            let share = |c: &&Cell| c.target_fps.map_or(0.0, |t| c.offered_fps / t * 100.0);
            let (lo, hi) = below
                .iter()
                .map(share)
                .fold((f64::MAX, 0.0f64), |(lo, hi), s| (lo.min(s), hi.max(s)));
            let range = if format!("{lo:.1}") == format!("{hi:.1}") {
                format!("{lo:.1} %")
            } else {
                format!("{lo:.1}–{hi:.1} %")
            };
            notes.push(format!(
                "{} of {} cells were offered less than the line rate they asked ({range} of it; the backend is named below): their passed rate of offered is of that smaller load",
                below.len(),
                report.cells.len(),
            ));
        }
        notes.push("passed rate = received L2 bit/s (frames with FCS, over the receive span) / offered L2 bit/s (the RTX2000 report's figure), and / configured bandwidth; a shaper that counts frames without FCS passes 4 bytes per frame more".into());
        let drains: Vec<f64> = report.cells.iter().filter_map(|c| c.drain_s).collect();
        if drains.is_empty() {
            notes.push("the device's queue was not read: a cell may start behind the previous cell's backlog".into());
        } else {
            let (n, max) = (
                drains.iter().filter(|d| **d > 0.0).count(),
                drains.iter().copied().fold(0.0, f64::max),
            );
            notes.push(format!("before each cell the shaper's queue was emptied of the previous cell's frames: {n} of {} cells waited, at most {max:.2} s", drains.len()));
        }
        Ok(ShapingOutcome { report, notes })
    }

    fn cells<T: Trial, D: Dut<Error = T::Error>>(
        &self,
        trial: &mut T,
        dut: &mut D,
        mut on_cell: impl FnMut(&Cell),
    ) -> Result<Vec<Cell>, T::Error> {
        let mut cells = Vec::new();
        for &bw in &self.bandwidths {
            for &len in &self.sizes {
                let drained = dut.drain()?;
                dut.set_bandwidth(bw)?;
                let fps = self.line.max_fps(len);
                let r = trial.run(&TrialRequest::frames(len, fps, self.duration))?;
                let rx_bps = received_l2_bps(&r);
                let offered_l2 = r.offered_pps * 8.0 * len as f64;
                let cell = Cell {
                    frame_len: len,
                    bandwidth_bps: bw,
                    offered_fps: r.offered_pps,
                    target_fps: Some(fps),
                    below_target: r.generator_limited || r.offered_pps < fps * Cell::TARGET_SHARE,
                    sent: r.counters.sent,
                    received: r.counters.received,
                    received_l2_bps: rx_bps,
                    passed_ratio: rx_bps / bw,
                    generator_limited: offered_l2 <= bw * MIN_OVERLOAD,
                    passed_of_offered: (offered_l2 > 0.0).then(|| rx_bps / offered_l2),
                    drain_s: drained.map(|d| d.as_secs_f64()),
                };
                on_cell(&cell);
                cells.push(cell);
            }
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod test {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::trial::{Load, TrialData};
    use model::stats::Counters;

    /// A token-bucket shaper: it passes `rate` bit/s of L2 frames (FCS included, or
    /// without it when `counts_fcs` is false) and drops the rest, behind a generator of at
    /// most `generator_max_fps`. One handle is the device (its rate is set), a clone the
    /// path the trials cross.
    #[derive(Clone)]
    struct Sim(Rc<RefCell<Shaper>>);

    struct Shaper {
        rate: f64,
        counts_fcs: bool,
        generator_max_fps: f64,
        set: Vec<f64>,
        /// Frames left in the queue by the last trial, which a new trial's frames find
        /// in their way.
        backlog: u64,
        drains: usize,
        restored: usize,
        /// The trial that fails (counted from 0), if any.
        fail_at: Option<usize>,
        trials: usize,
    }

    impl Sim {
        fn new(counts_fcs: bool, generator_max_fps: f64) -> Self {
            Sim(Rc::new(RefCell::new(Shaper {
                rate: 0.0,
                counts_fcs,
                generator_max_fps,
                set: vec![],
                backlog: 0,
                drains: 0,
                restored: 0,
                fail_at: None,
                trials: 0,
            })))
        }
    }

    impl Dut for Sim {
        type Error = String;
        fn set_bandwidth(&mut self, bps: f64) -> Result<(), String> {
            let mut s = self.0.borrow_mut();
            s.rate = bps;
            s.set.push(bps);
            Ok(())
        }
        fn describe(&self) -> String {
            "the simulated shaper".into()
        }
        fn drain(&mut self) -> Result<Option<Duration>, String> {
            let mut s = self.0.borrow_mut();
            s.drains += 1;
            let waited = Duration::from_millis(s.backlog);
            s.backlog = 0;
            Ok(Some(waited))
        }
        fn restore(&mut self) -> Result<(), String> {
            self.0.borrow_mut().restored += 1;
            Ok(())
        }
    }

    impl Trial for Sim {
        type Error = String;
        fn run(&mut self, req: &TrialRequest) -> Result<TrialData, String> {
            let mut s = self.0.borrow_mut();
            s.trials += 1;
            if s.fail_at == Some(s.trials - 1) {
                return Err("the link went down".into());
            }
            let len = req.frame_len().ok_or("frames only")?;
            let Load::Rate(rate, d) = req.load else {
                return Err("no bursts".into());
            };
            let fps = rate
                .packets_per_sec(1)
                .unwrap_or(0.0)
                .min(s.generator_max_fps);
            let secs = d.as_secs_f64();
            let counted = if s.counts_fcs { len } else { len - 4 };
            let passed_fps = (s.rate / (8.0 * counted as f64)).min(fps);
            let sent = (fps * secs).round() as u64;
            // A queue still full of the previous trial's frames drops this one's.
            let received = ((passed_fps * secs).round() as u64).saturating_sub(s.backlog);
            s.backlog = 1000;
            Ok(TrialData {
                counters: Counters {
                    received,
                    ..Counters::default()
                }
                .settle(sent),
                // Frames without FCS, one every 1/passed_fps.
                received_bytes: received * (len - 4),
                rx_span: Some(Duration::from_secs_f64(
                    received.saturating_sub(1) as f64 / passed_fps.max(1e-9),
                )),
                offered_pps: fps,
                duration: d,
                ..TrialData::default()
            })
        }
    }

    fn plan(sizes: Vec<u64>, bandwidths: Vec<f64>) -> ShapingPlan {
        ShapingPlan::new(
            sizes,
            bandwidths,
            Duration::from_secs(2),
            LineRate(100_000_000),
        )
        .unwrap()
    }

    #[test]
    fn an_exact_shaper_passes_100_percent_in_every_cell() {
        let sim = Sim::new(true, f64::INFINITY);
        let mut seen = 0;
        let out = plan(vec![128, 1518], vec![50e6, 10e6])
            .run(&mut sim.clone(), &mut sim.clone(), |_| seen += 1)
            .unwrap();
        assert_eq!(seen, 4);
        // Set before every cell, after the queue of the cell before was emptied.
        assert_eq!(sim.0.borrow().set, [50e6, 50e6, 10e6, 10e6]);
        assert_eq!((sim.0.borrow().drains, sim.0.borrow().restored), (4, 1));
        assert_eq!(out.report.cells[2].bandwidth_bps, 10e6);
        for c in &out.report.cells {
            assert!((c.passed_ratio - 1.0).abs() < 0.002, "{c:?}");
            assert!(!c.generator_limited, "{c:?}");
        }
        // The RTX2000 figure: received / offered, 100 % of a 100 Mbit/s port offered (in
        // L2 bit/s: 1518 of every 1538 bytes on the line).
        let of_offered = |i: usize| out.report.cells[i].passed_of_offered.unwrap();
        let offered_l2 = 100e6 * 1518.0 / 1538.0;
        assert!(
            (of_offered(1) - 50e6 / offered_l2).abs() < 0.002,
            "{}",
            of_offered(1)
        );
        assert!(
            (of_offered(3) - 10e6 / offered_l2).abs() < 0.002,
            "{}",
            of_offered(3)
        );
        assert_eq!(out.report.cells[0].drain_s, Some(0.0));
        assert_eq!(
            out.report.cells[1].drain_s,
            Some(1.0),
            "the first cell left 1000 frames"
        );
        assert_eq!(out.report.configured_by, "the simulated shaper");
        assert!(
            out.notes[1].contains("3 of 4 cells waited, at most 1.00 s"),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn the_rate_is_restored_when_a_cell_fails() {
        let sim = Sim::new(true, f64::INFINITY);
        sim.0.borrow_mut().fail_at = Some(2);
        let e =
            plan(vec![128, 1518], vec![50e6, 10e6]).run(&mut sim.clone(), &mut sim.clone(), |_| {});
        assert_eq!(e.unwrap_err(), "the link went down");
        assert_eq!(sim.0.borrow().restored, 1);
    }

    #[test]
    fn a_shaper_without_fcs_passes_more_small_frames_and_a_slow_generator_is_marked() {
        let sim = Sim::new(false, f64::INFINITY);
        let out = plan(vec![64, 1518], vec![10e6])
            .run(&mut sim.clone(), &mut sim.clone(), |_| {})
            .unwrap();
        // 64-byte frames counted as 60: 64/60 of the rate passes.
        let small = &out.report.cells[0];
        assert!(
            (small.passed_ratio - 64.0 / 60.0).abs() < 0.002,
            "{small:?}"
        );
        let big = &out.report.cells[1];
        assert!(
            (big.passed_ratio - 1518.0 / 1514.0).abs() < 0.002,
            "{big:?}"
        );
        // A generator that cannot exceed the bandwidth measures itself.
        let slow = Sim::new(true, 700.0);
        let out = plan(vec![64, 1518], vec![10e6])
            .run(&mut slow.clone(), &mut slow.clone(), |_| {})
            .unwrap();
        assert!(out.report.cells.iter().all(|c| c.generator_limited));
        assert!(
            out.notes[0].contains("generator limited"),
            "{:?}",
            out.notes
        );
        // A generator above the bandwidth but far below the line rate (the AF_XDP backend
        // offered 2.5 % of it): not generator-limited, yet every cell is marked below its
        // target and a note says how far.
        let partial = Sim::new(true, 20_000.0);
        let out = plan(vec![64, 128], vec![1e6])
            .run(&mut partial.clone(), &mut partial.clone(), |_| {})
            .unwrap();
        for c in &out.report.cells {
            assert!(!c.generator_limited && c.below_target, "{c:?}");
            assert_eq!(
                c.target_fps,
                Some(plan(vec![64], vec![1e6]).line.max_fps(c.frame_len))
            );
        }
        assert!(
            out.notes
                .iter()
                .any(|n| n.contains("2 of 2 cells were offered less than the line rate")),
            "{:?}",
            out.notes
        );
        let bad = ShapingPlan::new(vec![64], vec![0.0], Duration::from_secs(1), LineRate(1));
        assert!(bad.is_err());
    }
}
