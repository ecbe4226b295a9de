//! RFC 2544 benchmarks as pure logic over a frame [`Trial`] runner: throughput by binary
//! search (§26.1, the de-facto algorithm of ETSI GS NFV-TST 009 §12.3.2) or by MLRsearch
//! (RFC 9971), latency (§26.2, histogram mode as RFC 8219), frame loss rate (§26.3) and
//! back-to-back frames (§26.4 as updated by RFC 9004).
//!
//! Policy (RFC 2544 §10 leaves it to the implementer): only frames of the trial count;
//! duplicates are not credited as received, they are reported apart; the loss ratio is
//! `(sent − received) / sent` after the trial's drain. A trial whose generator could not
//! offer the asked load is never credited with that load: the search caps its maximum
//! load at what the generator reached and says so.
//!
//! It does not send frames: the binary plugs in a runner over raw interfaces or over UDP
//! through a wirebench server; unit tests plug in a simulated device.

use std::time::Duration;

pub use model::results::rfc2544::{
    BackToBack, LatencyResult, LossRow, Search, SearchGoal, ThroughputResult, TrialLog,
};
use model::stats::histogram::LatencyHistogram;
use wire::linerate::LineRate;

use crate::trial::{Load, Trial, TrialData, TrialRequest};

mod binary;
mod mlr;
#[cfg(test)]
mod search_tests;
#[cfg(test)]
pub(crate) mod sim;

pub use binary::search as binary_search;
pub use mlr::search as mlr_search;

fn log_line(purpose: &str, req: &TrialRequest, r: &TrialData) -> TrialLog {
    let (load, kind, duration_s) = match req.load {
        Load::Rate(rate, duration) => (
            rate.packets_per_sec(1).unwrap_or(0.0),
            "rate",
            duration.as_secs_f64(),
        ),
        Load::Burst(frames) => (frames as f64, "burst", 0.0),
    };
    TrialLog {
        purpose: purpose.to_owned(),
        frame_len: req.frame_len().unwrap_or(0),
        load,
        kind: kind.to_owned(),
        duration_s,
        sent: r.counters.sent,
        received: r.counters.received,
        duplicates: r.counters.duplicates,
        loss_ratio: r.loss_ratio(),
        offered_fps: r.offered_pps,
        generator_limited: r.generator_limited,
    }
}

/// Runs trials, keeps the log, and counts trials and their time.
struct Runner<'a, T: Trial> {
    trial: &'a mut T,
    log: &'a mut Vec<TrialLog>,
    trials: usize,
    /// Intended trial time spent, s.
    spent_s: f64,
    /// Trial time allowed, s.
    budget_s: f64,
}

impl<'a, T: Trial> Runner<'a, T> {
    fn new(trial: &'a mut T, log: &'a mut Vec<TrialLog>, budget: Option<Duration>) -> Self {
        Self {
            trial,
            log,
            trials: 0,
            spent_s: 0.0,
            budget_s: budget.map_or(f64::INFINITY, |b| b.as_secs_f64()),
        }
    }

    /// Whether a trial of `duration` still fits in the time budget.
    fn fits(&self, duration: Duration) -> bool {
        self.spent_s + duration.as_secs_f64() <= self.budget_s + 1e-9
    }

    fn run(&mut self, purpose: &str, req: TrialRequest) -> Result<TrialData, T::Error> {
        self.trials += 1;
        if let Load::Rate(_, d) = req.load {
            self.spent_s += d.as_secs_f64();
        }
        let r = self.trial.run(&req)?;
        self.log.push(log_line(purpose, &req, &r));
        Ok(r)
    }
}

/// Settings of a throughput search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchConfig {
    /// The medium's speed: the upper search limit is its maximum frame rate (§20).
    pub line_rate: LineRate,
    /// Duration of the trials that decide the result: RFC 9971's Goal Final Trial
    /// Duration; binary search's trial duration.
    pub duration: Duration,
    /// Duration of the verification trial at the result (RFC 2544 §24: full length).
    pub final_duration: Duration,
    /// Run the verification trial: binary search ends with it (a failure searches on
    /// below); MLRsearch adds it to the load's trials (it needs none: its bounds already
    /// have their duration sum).
    pub verify: bool,
    /// Tolerated loss ratio per trial (0 = RFC 2544 throughput): Goal Loss Ratio.
    pub loss_ratio: f64,
    /// Stop when the bounds are this close, relative to the upper bound (Goal Width).
    pub width: f64,
    /// The lowest load searched, frames/s.
    pub min_fps: f64,
    /// MLRsearch Goal Exceed Ratio: the share of trial time at a lower bound that may
    /// exceed the loss ratio.
    pub exceed_ratio: f64,
    /// MLRsearch Goal Duration Sum, in trials of `duration`.
    pub duration_sum_trials: u32,
    /// MLRsearch preceding targets: searches with shorter trials and twice the width
    /// each, before the goal itself.
    pub preceding: u32,
    /// Trial time (intended durations added up) one search may spend; `None`: sixty
    /// trials of `duration`.
    pub max_search_time: Option<Duration>,
}

impl Default for SearchConfig {
    /// 1GbE, 2 s trials, zero loss, 0.5 % width, no verification; MLRsearch with the ETSI
    /// NFV-TST 009 "loss verification, max(r) = 2" preset (exceed ratio 0.5 over two trial
    /// durations) and two preceding targets.
    fn default() -> Self {
        Self {
            line_rate: LineRate(1_000_000_000),
            duration: Duration::from_secs(2),
            final_duration: Duration::from_secs(2),
            verify: false,
            loss_ratio: 0.0,
            width: 0.005,
            min_fps: 100.0,
            exceed_ratio: 0.5,
            duration_sum_trials: 2,
            preceding: 2,
            max_search_time: None,
        }
    }
}

impl SearchConfig {
    /// The search's time budget: as asked, or sixty trials of `duration`.
    pub fn search_time(&self) -> Duration {
        self.max_search_time.unwrap_or(self.duration * 60)
    }
}

fn rate_req(len: u64, fps: f64, duration: Duration) -> TrialRequest {
    TrialRequest::frames(len, fps, duration)
}

/// Offers the maximum load once for `duration`; caps it at the generator's reach when
/// the generator fell behind. Returns (max load, its trial, the cap).
fn probe_max<T: Trial>(
    run: &mut Runner<'_, T>,
    len: u64,
    cfg: &SearchConfig,
    duration: Duration,
) -> Result<(f64, TrialData, Option<f64>), T::Error> {
    let max = cfg.line_rate.max_fps(len);
    let r = run.run("throughput", rate_req(len, max, duration))?;
    if r.generator_limited && r.offered_pps > cfg.min_fps {
        let cap = r.offered_pps * 0.99;
        let r2 = run.run("throughput", rate_req(len, cap, duration))?;
        return Ok((cap, r2, Some(cap)));
    }
    Ok((max, r, None))
}

/// The note of a search that ran out of time.
fn out_of_time(cfg: &SearchConfig, lower: Option<f64>, upper: Option<f64>) -> String {
    let bound = |x: Option<f64>, none: &str| x.map_or(none.to_owned(), |f| format!("{f:.0}"));
    format!(
        "search time spent ({} s of trials): the answer lies between {} and {} frames/s",
        model::units::secs(cfg.search_time().as_secs_f64()),
        bound(lower, "0"),
        bound(upper, "the maximum load"),
    )
}

/// Throughput with the chosen search.
pub fn throughput<T: Trial>(
    trial: &mut T,
    len: u64,
    search: Search,
    cfg: &SearchConfig,
    log: &mut Vec<TrialLog>,
) -> Result<ThroughputResult, T::Error> {
    match search {
        Search::Binary => binary::search(trial, len, cfg, log),
        Search::Mlr => mlr::search(trial, len, cfg, log),
    }
}

/// RFC 2544 §26.3: from 100 % of line rate down in `step_percent` steps until two
/// successive trials without loss.
pub fn frame_loss_rate<T: Trial>(
    trial: &mut T,
    len: u64,
    line_rate: LineRate,
    step_percent: f64,
    duration: Duration,
    log: &mut Vec<TrialLog>,
) -> Result<Vec<LossRow>, T::Error> {
    let step = step_percent.clamp(1.0, 10.0);
    let mut run = Runner::new(trial, log, None);
    let mut rows = Vec::new();
    let mut zero_streak = 0;
    let mut pct = 100.0;
    while pct > 0.0 && zero_streak < 2 {
        let fps = line_rate.fps_at_percent(len, pct);
        let r = run.run("loss", rate_req(len, fps, duration))?;
        let c = r.counters;
        zero_streak = if c.sent > 0 && c.received >= c.sent {
            zero_streak + 1
        } else {
            0
        };
        rows.push(LossRow {
            frame_len: len,
            percent: pct,
            fps: r.offered_pps,
            sent: c.sent,
            received: c.received,
            loss_percent: r.loss_ratio() * 100.0,
            generator_limited: r.generator_limited,
        });
        pct -= step;
    }
    Ok(rows)
}

/// RFC 2544 §26.4 / RFC 9004: the longest burst at line rate forwarded without loss,
/// found by bisection on the burst length (up to `max_burst`), repeated `repeats` times.
/// When `throughput_fps` reached line rate the device never has to buffer and there is no
/// figure to find (RFC 9004); that is reported instead.
#[allow(clippy::too_many_arguments)]
pub fn back_to_back<T: Trial>(
    trial: &mut T,
    len: u64,
    line_rate: LineRate,
    throughput_fps: Option<f64>,
    max_burst: u64,
    repeats: usize,
    log: &mut Vec<TrialLog>,
) -> Result<BackToBack, T::Error> {
    let max_fps = line_rate.max_fps(len);
    let mut out = BackToBack {
        frame_len: len,
        bursts: vec![],
        mean: None,
        std_dev: None,
        buffer_time_us: None,
        note: None,
    };
    if throughput_fps.is_some_and(|t| t >= max_fps * 0.999) {
        out.note = Some("throughput is line rate: no buffering to measure (RFC 9004)".into());
        return Ok(out);
    }
    let mut run = Runner::new(trial, log, None);
    let burst = |run: &mut Runner<'_, T>, n: u64| run.run("b2b", TrialRequest::burst(len, n));
    for _ in 0..repeats.max(1) {
        let r = burst(&mut run, max_burst)?;
        if r.generator_limited {
            out.note =
                Some("the generator cannot send back-to-back at line rate: no figure".into());
            return Ok(out);
        }
        if r.counters.received >= r.counters.sent {
            out.bursts.push(max_burst);
            continue;
        }
        let (mut lo, mut hi) = (0u64, max_burst);
        while hi - lo > 1.max(hi / 200) {
            let mid = lo + (hi - lo) / 2;
            let r = burst(&mut run, mid)?;
            if r.counters.received >= r.counters.sent {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        out.bursts.push(lo);
    }
    let n = out.bursts.len() as f64;
    let mean = out.bursts.iter().sum::<u64>() as f64 / n;
    let var = out
        .bursts
        .iter()
        .map(|&b| (b as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    out.mean = Some(mean);
    out.std_dev = Some(var.sqrt());
    out.buffer_time_us = Some(mean / max_fps * 1e6);
    Ok(out)
}

/// RFC 2544 §26.2 at the throughput rate: `trials` trials of `duration`, every frame
/// tagged (histogram mode, as RFC 8219 counts ≥ 500 tagged frames), merged.
pub fn latency<T: Trial>(
    trial: &mut T,
    len: u64,
    fps: f64,
    trials: usize,
    duration: Duration,
    log: &mut Vec<TrialLog>,
) -> Result<LatencyResult, T::Error> {
    let mut run = Runner::new(trial, log, None);
    let mut all = LatencyHistogram::new();
    for _ in 0..trials.max(1) {
        let r = run.run("latency", rate_req(len, fps, duration).with_latency())?;
        if let Some(h) = &r.latency {
            all.merge(h);
        }
    }
    Ok(LatencyResult {
        frame_len: len,
        fps,
        trials: trials.max(1),
        summary: all.summary(),
        histogram: (!all.is_empty()).then(|| all.to_base64()),
    })
}

#[cfg(test)]
mod test {
    use super::sim::Device;
    use super::*;

    fn within(x: f64, want: f64, rel: f64) -> bool {
        (x - want).abs() <= want * rel
    }

    #[test]
    fn frame_loss_rate_steps_down_until_two_clean_trials() {
        let mut dev = Device::new(700_000.0, 1);
        dev.buffer_frames = 0.0;
        let rows = frame_loss_rate(
            &mut dev,
            64,
            LineRate(1_000_000_000),
            10.0,
            Duration::from_secs(1),
            &mut vec![],
        )
        .unwrap();
        let pcts: Vec<f64> = rows.iter().map(|r| r.percent).collect();
        // 700 kfps is 47 % of line rate: losses down to 50 %, clean at 40 and 30.
        assert_eq!(pcts, [100.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0]);
        let first = &rows[0];
        assert!(within(
            first.loss_percent,
            100.0 * (1.0 - 700_000.0 / 1_488_095.2),
            0.001
        ));
        assert!(rows[6].loss_percent == 0.0 && rows[7].loss_percent == 0.0);
    }

    #[test]
    fn back_to_back_finds_the_buffer() {
        // Forwarding half of line rate with a 1000-frame buffer: bursts up to 2000 frames.
        let line = LineRate(1_000_000_000);
        let mut dev = Device::new(line.max_fps(64) / 2.0, 1);
        let r = back_to_back(&mut dev, 64, line, Some(744_047.0), 100_000, 5, &mut vec![]).unwrap();
        assert_eq!(r.bursts.len(), 5);
        let mean = r.mean.unwrap();
        assert!(within(mean, 2000.0, 0.01), "{r:?}");
        assert!(within(
            r.buffer_time_us.unwrap(),
            2000.0 / line.max_fps(64) * 1e6,
            0.01
        ));
        // A device at line rate has no figure (RFC 9004).
        let r = back_to_back(
            &mut dev,
            64,
            line,
            Some(line.max_fps(64)),
            1000,
            5,
            &mut vec![],
        )
        .unwrap();
        assert!(r.mean.is_none() && r.note.unwrap().contains("line rate"));
    }

    #[test]
    fn latency_merges_every_trial() {
        let mut dev = Device::new(100_000.0, 1);
        let mut log = vec![];
        let r = latency(&mut dev, 512, 50_000.0, 3, Duration::from_secs(1), &mut log).unwrap();
        let s = r.summary.unwrap();
        assert_eq!(s.count, 150_000, "three trials of 50,000 tagged frames");
        assert!(s.p50_us < s.p99_us && s.p99_us < s.max_us, "{s:?}");
        assert_eq!(log.len(), 3);
        assert!(r.histogram.is_some());
    }
}
