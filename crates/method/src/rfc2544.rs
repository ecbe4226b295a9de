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
    BackToBack, LatencyResult, LossRow, Search, ThroughputResult, TrialLog,
};
use model::stats::histogram::LatencyHistogram;
use wire::linerate::LineRate;

use crate::trial::{Load, Trial, TrialData, TrialRequest};

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

/// Runs trials and keeps the log.
struct Runner<'a, T: Trial> {
    trial: &'a mut T,
    log: &'a mut Vec<TrialLog>,
    budget: usize,
}

impl<T: Trial> Runner<'_, T> {
    fn run(&mut self, purpose: &str, req: TrialRequest) -> Result<TrialData, T::Error> {
        self.budget = self.budget.saturating_sub(1);
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
    /// Duration of each search trial.
    pub duration: Duration,
    /// Duration of the final verification trial (RFC 2544 §24: full length).
    pub final_duration: Duration,
    /// Tolerated loss ratio per trial (0 = RFC 2544 throughput).
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
    /// At most this many trials per frame size.
    pub max_trials: usize,
}

impl Default for SearchConfig {
    /// 1GbE, 2 s trials with a 2 s verification, zero loss, 0.5 % width; MLRsearch with the
    /// ETSI NFV-TST 009 "loss verification, max(r) = 2" preset (exceed ratio 0.5 over two
    /// trial durations).
    fn default() -> Self {
        Self {
            line_rate: LineRate(1_000_000_000),
            duration: Duration::from_secs(2),
            final_duration: Duration::from_secs(2),
            loss_ratio: 0.0,
            width: 0.005,
            min_fps: 100.0,
            exceed_ratio: 0.5,
            duration_sum_trials: 2,
            max_trials: 60,
        }
    }
}

fn rate_req(len: u64, fps: f64, duration: Duration) -> TrialRequest {
    TrialRequest::frames(len, fps, duration)
}

/// Offers the maximum load once; caps it at the generator's reach when the generator fell
/// behind. Returns (max load, its trial).
fn probe_max<T: Trial>(
    run: &mut Runner<'_, T>,
    len: u64,
    cfg: &SearchConfig,
) -> Result<(f64, TrialData, Option<f64>), T::Error> {
    let max = cfg.line_rate.max_fps(len);
    let r = run.run("throughput", rate_req(len, max, cfg.duration))?;
    if r.generator_limited && r.offered_pps > cfg.min_fps {
        let cap = r.offered_pps * 0.99;
        let r2 = run.run("throughput", rate_req(len, cap, cfg.duration))?;
        return Ok((cap, r2, Some(cap)));
    }
    Ok((max, r, None))
}

/// RFC 2544 §26.1 throughput by binary search, with a final full-length verification at
/// the result; a failed verification continues the search below it.
pub fn binary_search<T: Trial>(
    trial: &mut T,
    len: u64,
    cfg: &SearchConfig,
    log: &mut Vec<TrialLog>,
) -> Result<ThroughputResult, T::Error> {
    let mut run = Runner {
        trial,
        log,
        budget: cfg.max_trials,
    };
    let (max, first, cap) = probe_max(&mut run, len, cfg)?;
    let ok = |r: &TrialData| r.loss_ratio() <= cfg.loss_ratio;
    let mut out = ThroughputResult {
        frame_len: len,
        search: Search::Binary,
        fps: None,
        upper_fps: None,
        conditional_fps: None,
        max_fps: cfg.line_rate.max_fps(len),
        generator_cap_fps: cap,
        irregular: None,
        trials: 0,
    };
    let (mut lo, mut hi) = (cfg.min_fps, max);
    if ok(&first) {
        out.fps = Some(max);
    } else {
        loop {
            if run.budget == 0 {
                out.irregular = Some("trial budget spent".into());
                break;
            }
            if (hi - lo) / hi <= cfg.width || lo >= hi {
                let v = run.run("verify", rate_req(len, lo, cfg.final_duration))?;
                if ok(&v) {
                    out.fps = Some(lo);
                    break;
                }
                if lo <= cfg.min_fps {
                    out.irregular = Some("the minimum load loses frames".into());
                    break;
                }
                // §24: the full-length trial failed; search on below it.
                hi = lo;
                lo = cfg.min_fps;
                continue;
            }
            let mid = (lo + hi) / 2.0;
            let r = run.run("throughput", rate_req(len, mid, cfg.duration))?;
            if ok(&r) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        out.upper_fps = Some(hi);
    }
    out.trials = cfg.max_trials - run.budget;
    Ok(out)
}

/// MLRsearch bookkeeping: the trials measured at one load.
#[derive(Debug, Default, Clone)]
struct LoadStats {
    good_s: f64,
    bad_s: f64,
    /// Loss ratios with their durations (for conditional throughput).
    trials: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    Undecided,
}

/// RFC 9971 Appendix A load classification, for trials that are all full-length.
fn classify(s: &LoadStats, exceed: f64, duration_sum: f64) -> Class {
    let eff_hi = s.bad_s;
    let whole = (s.good_s + s.bad_s).max(duration_sum);
    let allowed = whole * exceed;
    let pess_hi = whole - s.good_s;
    let lower_pess = pess_hi <= allowed + 1e-9;
    let lower_opt = eff_hi <= allowed + 1e-9;
    match (lower_pess, lower_opt) {
        (true, true) => Class::Lower,
        (false, false) => Class::Upper,
        _ => Class::Undecided,
    }
}

/// RFC 9971 Appendix B conditional throughput at `load`.
fn conditional(load: f64, s: &LoadStats, exceed: f64, duration_sum: f64) -> f64 {
    let full: f64 = s.trials.iter().map(|t| t.1).sum();
    let mut remain = full.max(duration_sum) * (1.0 - exceed);
    let mut sorted = s.trials.clone();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut q = None;
    for (loss, dur) in sorted {
        if q.is_none() || remain > 0.0 {
            q = Some(loss);
            remain -= dur;
        } else {
            break;
        }
    }
    if remain > 0.0 {
        q = Some(1.0);
    }
    load * (1.0 - q.unwrap_or(1.0))
}

/// Throughput by MLRsearch (RFC 9971) with one search goal (the loss ratio of `cfg`), all
/// trials of one duration, loads on a whole-frames/s grid so that loads recur and gather
/// trials; ends with a verification trial at the relevant lower bound.
pub fn mlr_search<T: Trial>(
    trial: &mut T,
    len: u64,
    cfg: &SearchConfig,
    log: &mut Vec<TrialLog>,
) -> Result<ThroughputResult, T::Error> {
    use std::collections::BTreeMap;
    let mut run = Runner {
        trial,
        log,
        budget: cfg.max_trials,
    };
    let d = cfg.duration.as_secs_f64();
    let sum = d * f64::from(cfg.duration_sum_trials.max(1));
    let exceed = cfg.exceed_ratio.clamp(0.0, 0.99);
    let mut db: BTreeMap<u64, LoadStats> = BTreeMap::new();
    let record = |db: &mut BTreeMap<u64, LoadStats>, load: u64, r: &TrialData, dur: f64| {
        let s = db.entry(load).or_default();
        let loss = r.loss_ratio();
        if loss <= cfg.loss_ratio {
            s.good_s += dur;
        } else {
            s.bad_s += dur;
        }
        s.trials.push((loss, dur));
    };
    let (max, first, cap) = probe_max(&mut run, len, cfg)?;
    let max_load = max.floor().max(1.0) as u64;
    let min_load = cfg.min_fps.ceil().max(1.0) as u64;
    record(&mut db, max_load, &first, d);
    // Forwarding rate at maximum offered load (RFC 2285 §3.6.2), a first guess.
    let frmol = ((max_load as f64) * (1.0 - first.loss_ratio())).floor() as u64;
    let mut verified: Option<u64> = None;
    let mut irregular = None;
    let bounds = |db: &BTreeMap<u64, LoadStats>| {
        let ub = db
            .iter()
            .find(|(_, s)| classify(s, exceed, sum) == Class::Upper)
            .map(|(l, _)| *l);
        let lb = db
            .iter()
            .rev()
            .filter(|(l, _)| ub.is_none_or(|u| **l < u))
            .find(|(_, s)| classify(s, exceed, sum) == Class::Lower)
            .map(|(l, _)| *l);
        (lb, ub)
    };
    loop {
        if run.budget == 0 {
            irregular = Some("trial budget spent".to_owned());
            break;
        }
        let (lb, ub) = bounds(&db);
        // 1. Undecided loads at or below the upper bound are measured again, lowest first.
        let undecided = db
            .iter()
            .find(|(l, s)| {
                ub.is_none_or(|u| **l <= u) && classify(s, exceed, sum) == Class::Undecided
            })
            .map(|(l, _)| *l);
        let next = if let Some(l) = undecided {
            Some(l)
        } else if ub.is_none() {
            None // the maximum load is a lower bound
        } else if let (None, Some(u)) = (lb, ub) {
            if u <= min_load {
                irregular = Some("the minimum load is an upper bound".to_owned());
                None
            } else if !db.contains_key(&frmol) && frmol >= min_load && frmol < u {
                Some(frmol)
            } else {
                let l = ((u as f64) * (1.0 - 2.0 * cfg.width)).floor() as u64;
                Some(l.clamp(min_load, u - 1))
            }
        } else if let (Some(l), Some(u)) = (lb, ub) {
            if (u - l) as f64 / u as f64 > cfg.width && u - l > 1 {
                Some((((l as f64) * (u as f64)).sqrt().round() as u64).clamp(l + 1, u - 1))
            } else if verified != Some(l) {
                verified = Some(l);
                let r = run.run("verify", rate_req(len, l as f64, cfg.final_duration))?;
                record(&mut db, l, &r, cfg.final_duration.as_secs_f64());
                continue;
            } else {
                None
            }
        } else {
            None
        };
        let Some(load) = next else { break };
        let r = run.run("throughput", rate_req(len, load as f64, cfg.duration))?;
        record(&mut db, load, &r, d);
    }
    let (lb, ub) = bounds(&db);
    if ub.is_none() && irregular.is_none() {
        // Not an error: the device forwards everything the generator offers.
        if cap.is_some() {
            irregular = Some("the generator's maximum is a lower bound".to_owned());
        }
    }
    let conditional_fps = lb
        .and_then(|l| db.get(&l).map(|s| (l, s)))
        .map(|(l, s)| conditional(l as f64, s, exceed, sum));
    Ok(ThroughputResult {
        frame_len: len,
        search: Search::Mlr,
        fps: lb.map(|l| if l == max_load { max } else { l as f64 }),
        upper_fps: ub.map(|u| u as f64),
        conditional_fps,
        max_fps: cfg.line_rate.max_fps(len),
        generator_cap_fps: cap,
        irregular,
        trials: cfg.max_trials - run.budget,
    })
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
        Search::Binary => binary_search(trial, len, cfg, log),
        Search::Mlr => mlr_search(trial, len, cfg, log),
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
    let mut run = Runner {
        trial,
        log,
        budget: usize::MAX,
    };
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
    let mut run = Runner {
        trial,
        log,
        budget: usize::MAX,
    };
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
    let mut run = Runner {
        trial,
        log,
        budget: usize::MAX,
    };
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
pub(crate) mod sim {
    //! A simulated device for RFC 2544 searches: a forwarding capacity, a buffer, random
    //! per-frame loss, occasional stalls (a trial that loses a burst), a generator ceiling
    //! and a latency that grows near capacity. Seeded, so every run is the same.
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{RngExt, SeedableRng};

    pub(crate) struct Device {
        pub(crate) line: LineRate,
        /// Frames/s it forwards without loss (per frame size: bits/s cap as well).
        pub(crate) capacity_fps: f64,
        pub(crate) buffer_frames: f64,
        pub(crate) random_loss: f64,
        pub(crate) stall_probability: f64,
        pub(crate) generator_max_fps: f64,
        pub(crate) base_latency_ns: u64,
        rng: SmallRng,
        pub(crate) trials: usize,
    }

    impl Device {
        pub(crate) fn new(capacity_fps: f64, seed: u64) -> Self {
            Self {
                line: LineRate(1_000_000_000),
                capacity_fps,
                buffer_frames: 1000.0,
                random_loss: 0.0,
                stall_probability: 0.0,
                generator_max_fps: f64::INFINITY,
                base_latency_ns: 10_000,
                rng: SmallRng::seed_from_u64(seed),
                trials: 0,
            }
        }

        /// Frames lost at random among `n`, each with probability p (geometric skips).
        fn random_losses(&mut self, n: u64) -> u64 {
            let p = self.random_loss;
            if p <= 0.0 {
                return 0;
            }
            let mut lost = 0;
            let mut i = 0u64;
            loop {
                let u: f64 = self.rng.random::<f64>().max(1e-300);
                i += (u.ln() / (1.0 - p).ln()).floor() as u64 + 1;
                if i > n {
                    return lost;
                }
                lost += 1;
            }
        }
    }

    impl Trial for Device {
        type Error = std::convert::Infallible;

        fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Self::Error> {
            self.trials += 1;
            let frame_len = req.frame_len().unwrap_or(64);
            let cap = self.capacity_fps.min(self.line.max_fps(frame_len));
            let (sent, passed, offered, limited) = match req.load {
                Load::Rate(rate, duration) => {
                    let fps = rate.packets_per_sec(1).unwrap_or(f64::INFINITY);
                    let offered = fps.min(self.generator_max_fps);
                    let secs = duration.as_secs_f64();
                    let sent = (offered * secs).round() as u64;
                    let passed = if offered <= cap {
                        sent
                    } else {
                        ((cap * secs + self.buffer_frames).round() as u64).min(sent)
                    };
                    (sent, passed, offered, offered < fps * 0.999)
                }
                Load::Burst(frames) => {
                    let line = self.line.max_fps(frame_len);
                    // The queue grows by (1 − cap/line) per frame arriving at line rate.
                    let fill = 1.0 - (cap / line).min(1.0);
                    let longest = if fill <= 0.0 {
                        u64::MAX
                    } else {
                        (self.buffer_frames / fill).floor() as u64
                    };
                    let limited = self.generator_max_fps < line * 0.999;
                    (frames, frames.min(longest), line, limited)
                }
            };
            let mut lost_extra = self.random_losses(passed);
            if self.stall_probability > 0.0 && self.rng.random_bool(self.stall_probability) {
                lost_extra += (passed / 1000).max(1);
            }
            let received = passed.saturating_sub(lost_extra);
            let latency = req.latency.then(|| {
                let mut h = LatencyHistogram::new();
                let busy = if let Load::Rate(rate, _) = req.load {
                    (rate.packets_per_sec(1).unwrap_or(cap) / cap).min(1.0)
                } else {
                    1.0
                };
                let base = self.base_latency_ns + (busy * busy * 20_000.0) as u64;
                h.record_n_ns(base, received * 98 / 100);
                h.record_n_ns(base * 2, received - received * 98 / 100 - received / 1000);
                h.record_n_ns(base * 5, received / 1000);
                h
            });
            Ok(TrialData {
                counters: model::stats::Counters {
                    received,
                    ..Default::default()
                }
                .settle(sent),
                offered_pps: offered,
                generator_limited: limited,
                latency,
                ..TrialData::default()
            })
        }
    }
}

#[cfg(test)]
mod test {
    use super::sim::Device;
    use super::*;

    fn cfg() -> SearchConfig {
        SearchConfig {
            duration: Duration::from_secs(1),
            final_duration: Duration::from_secs(1),
            ..SearchConfig::default()
        }
    }

    fn within(x: f64, want: f64, rel: f64) -> bool {
        (x - want).abs() <= want * rel
    }

    #[test]
    fn both_searches_find_a_known_capacity_within_one_percent() {
        // 64-byte frames, 1GbE: line rate 1,488,095 fps; the device forwards 600 kfps.
        for search in [Search::Binary, Search::Mlr] {
            let mut dev = Device::new(600_000.0, 1);
            let mut log = vec![];
            let r = throughput(&mut dev, 64, search, &cfg(), &mut log).unwrap();
            let fps = r.fps.unwrap();
            assert!(within(fps, 600_000.0, 0.01), "{search:?}: {fps}");
            // Never above what the device forwards in a trial: its capacity plus what its
            // 1000-frame buffer absorbs in 1 s.
            assert!(fps <= 601_000.0, "{fps}");
            assert!(r.irregular.is_none(), "{r:?}");
            assert_eq!(log.len(), r.trials);
            assert!(
                log.iter().any(|l| l.purpose == "verify"),
                "a final verification"
            );
        }
    }

    #[test]
    fn a_device_at_line_rate_is_found_in_one_trial() {
        let mut dev = Device::new(1e9, 1);
        let mut log = vec![];
        let r = binary_search(&mut dev, 1518, &cfg(), &mut log).unwrap();
        assert_eq!(r.fps, Some(LineRate(1_000_000_000).max_fps(1518)));
        assert_eq!(log.len(), 1);
        let r = mlr_search(&mut dev, 1518, &cfg(), &mut vec![]).unwrap();
        assert_eq!(r.fps, Some(LineRate(1_000_000_000).max_fps(1518)));
        assert_eq!(r.upper_fps, None);
    }

    #[test]
    fn the_generator_limit_caps_the_search_and_is_reported() {
        let mut dev = Device::new(1e9, 1);
        dev.generator_max_fps = 500_000.0;
        let r = mlr_search(&mut dev, 64, &cfg(), &mut vec![]).unwrap();
        let cap = r.generator_cap_fps.expect("capped");
        assert!(within(cap, 495_000.0, 0.001));
        assert!(r.fps.unwrap() <= cap);
        assert!(r.irregular.unwrap().contains("generator"));
    }

    #[test]
    fn occasional_stalls_fool_binary_search_but_not_mlr() {
        // One trial in five loses a burst: RFC 9971's "noisy SUT". Binary search believes
        // every bad trial and ends low; MLRsearch re-measures and tolerates them.
        let capacity = 400_000.0;
        let mut binary_low = 0;
        for seed in 0..10 {
            let mut dev = Device::new(capacity, seed);
            dev.stall_probability = 0.2;
            let b = binary_search(&mut dev, 64, &cfg(), &mut vec![]).unwrap();
            let mut dev = Device::new(capacity, seed);
            dev.stall_probability = 0.2;
            let m = mlr_search(&mut dev, 64, &cfg(), &mut vec![]).unwrap();
            let mf = m.fps.unwrap();
            assert!(within(mf, capacity, 0.02), "seed {seed}: MLR {mf}");
            if b.fps.is_none_or(|f| f < capacity * 0.98) {
                binary_low += 1;
            }
        }
        assert!(
            binary_low >= 3,
            "binary search was fooled only {binary_low}/10 times"
        );
    }

    #[test]
    fn random_loss_floor_with_a_loss_goal() {
        // 0.01 % random loss at every load: a 1 s trial is loss-free only at loads of a few
        // thousand frames/s, so a zero-loss goal ends far below the capacity, for either
        // search; with a 0.1 % goal MLR lands within 2 % of the load where loss reaches
        // 0.1 %.
        let capacity = 500_000.0;
        for search in [Search::Binary, Search::Mlr] {
            let mut dev = Device::new(capacity, 3);
            dev.random_loss = 1e-4;
            let zero = throughput(&mut dev, 64, search, &cfg(), &mut vec![]).unwrap();
            assert!(
                zero.fps.is_none_or(|f| f < capacity * 0.1),
                "{search:?}: {zero:?}"
            );
        }
        let goal = SearchConfig {
            loss_ratio: 1e-3,
            ..cfg()
        };
        // Above capacity the loss is 1 − cap/load (+ the buffer): 0.1 % at cap / 0.999.
        let want = capacity / (1.0 - 1e-3 + 1e-4);
        let mut dev = Device::new(capacity, 3);
        dev.random_loss = 1e-4;
        let m = mlr_search(&mut dev, 64, &goal, &mut vec![]).unwrap();
        assert!(within(m.fps.unwrap(), want, 0.02), "{m:?}");
        assert!(m.conditional_fps.unwrap() <= m.fps.unwrap());
    }

    #[test]
    fn classification_follows_rfc9971_appendix_a() {
        let s = |good: f64, bad: f64| LoadStats {
            good_s: good,
            bad_s: bad,
            trials: vec![],
        };
        // Exceed ratio 0.5, duration sum 2 s, 1 s trials.
        assert_eq!(classify(&s(0.0, 0.0), 0.5, 2.0), Class::Undecided);
        assert_eq!(classify(&s(1.0, 0.0), 0.5, 2.0), Class::Lower);
        assert_eq!(classify(&s(0.0, 1.0), 0.5, 2.0), Class::Undecided);
        assert_eq!(classify(&s(1.0, 1.0), 0.5, 2.0), Class::Lower);
        assert_eq!(classify(&s(0.0, 2.0), 0.5, 2.0), Class::Upper);
        assert_eq!(classify(&s(1.0, 2.0), 0.5, 2.0), Class::Upper);
        // The RFC 2544 preset (exceed 0, sum = one trial): one trial decides.
        assert_eq!(classify(&s(1.0, 0.0), 0.0, 1.0), Class::Lower);
        assert_eq!(classify(&s(0.0, 1.0), 0.0, 1.0), Class::Upper);
        assert_eq!(classify(&s(5.0, 1.0), 0.0, 1.0), Class::Upper);
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
