//! Throughput by MLRsearch (RFC 9971) for one search goal.
//!
//! Normative parts, as the RFC defines them: a load is classified as a lower bound, an
//! upper bound or undecided from all its trials (Appendix A, [`classify`]); the relevant
//! upper bound is the lowest upper bound, the relevant lower bound the highest lower bound
//! below it (§4.6.2); the result is the conditional throughput at the relevant lower bound
//! (Appendix B, [`conditional`]).
//!
//! Trial selection is ours (RFC 9971 leaves it free), after the reference implementation:
//! - the goal is searched last, after `preceding` targets with shorter trials, smaller
//!   duration sums and twice the width each ([`targets`]); a shorter trial never makes a
//!   lower bound of a longer target, and its high-loss time counts towards an upper bound
//!   only beyond what its low-loss time balances (Appendix A);
//! - the first load after the maximum is the one at which the forwarding rate seen at the
//!   maximum load (RFC 2285 §3.6.2) leaves exactly the goal's loss ratio;
//! - where a bound is missing, an external search moves away from the known bound in steps
//!   that double each time the bound moves; then bisection in log space;
//! - a target re-measures only the loads that can still move its bounds: the relevant
//!   bounds of the target before it and the load it measured last;
//! - trial time is budgeted; when it runs out the result says between which loads the
//!   answer lies.
//!
//! Loads are whole frames/s so that loads recur and gather trials.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{out_of_time, probe_max, rate_req, Runner, SearchConfig};
use super::{Search, SearchGoal, ThroughputResult, TrialLog};
use crate::trial::Trial;

/// One target of the search: the goal itself, or a preceding target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Target {
    /// Goal Loss Ratio.
    pub loss_ratio: f64,
    /// Goal Exceed Ratio.
    pub exceed_ratio: f64,
    /// Trials at least this long are full-length for this target, s.
    pub trial_s: f64,
    /// Goal Duration Sum, s.
    pub sum_s: f64,
    /// Goal Width, relative to the upper bound.
    pub width: f64,
}

/// The shortest trial of the preceding targets: a quarter of the goal's trial, at least
/// 0.5 s (never longer than the goal's trial).
fn initial_trial_s(final_s: f64) -> f64 {
    final_s.min((final_s / 4.0).max(0.5))
}

/// The targets in the order they are searched: `preceding` targets, then the goal. Each
/// preceding target has twice the width of the next; their duration sums fall
/// geometrically from the goal's to one initial trial, and no trial is longer than its
/// target's duration sum.
pub(super) fn targets(cfg: &SearchConfig) -> Vec<Target> {
    let d = cfg.duration.as_secs_f64();
    let goal = Target {
        loss_ratio: cfg.loss_ratio,
        exceed_ratio: cfg.exceed_ratio.clamp(0.0, 0.99),
        trial_s: d,
        sum_s: d * f64::from(cfg.duration_sum_trials.max(1)),
        width: cfg.width,
    };
    let initial = initial_trial_s(d);
    let p = cfg.preceding;
    let m = (initial / goal.sum_s).powf(1.0 / f64::from(p.max(1)));
    let mut out: Vec<Target> = (1..=p)
        .rev()
        .map(|k| {
            let sum_s = if k == p {
                initial
            } else {
                goal.sum_s * m.powi(k as i32)
            };
            Target {
                trial_s: d.min(sum_s),
                sum_s,
                width: (goal.width * 2f64.powi(k as i32)).min(0.5),
                ..goal
            }
        })
        .collect();
    out.push(goal);
    out
}

/// One trial at a load: its intended duration and its loss ratio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Record {
    pub duration_s: f64,
    pub loss: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    Lower,
    Upper,
    Undecided,
}

/// RFC 9971 Appendix A: the classification of a load for a target from its trials.
pub(super) fn classify(trials: &[Record], t: &Target) -> Class {
    let (mut fl_lo, mut fl_hi, mut sh_lo, mut sh_hi) = (0.0, 0.0, 0.0, 0.0);
    for r in trials {
        let full = r.duration_s >= t.trial_s - 1e-9;
        let low = r.loss <= t.loss_ratio;
        match (full, low) {
            (true, true) => fl_lo += r.duration_s,
            (true, false) => fl_hi += r.duration_s,
            (false, true) => sh_lo += r.duration_s,
            (false, false) => sh_hi += r.duration_s,
        }
    }
    let exceed = t.exceed_ratio;
    let coef = exceed / (1.0 - exceed);
    let excess = f64::max(0.0, sh_hi - sh_lo * coef);
    let eff_hi = fl_hi + excess;
    let whole = f64::max(fl_lo + eff_hi, t.sum_s);
    let allowed = whole * exceed + 1e-9;
    let lower_pessimistic = whole - fl_lo <= allowed;
    let lower_optimistic = eff_hi <= allowed;
    match (lower_pessimistic, lower_optimistic) {
        (true, true) => Class::Lower,
        (false, false) => Class::Upper,
        _ => Class::Undecided,
    }
}

/// RFC 9971 Appendix B: the conditional throughput at `load` for a target, from its
/// full-length trials (the loss ratio quantile at 1 − exceed ratio, time weighted, with
/// missing time counted as 100 % loss).
pub(super) fn conditional(load: f64, trials: &[Record], t: &Target) -> f64 {
    let mut full: Vec<Record> = trials
        .iter()
        .filter(|r| r.duration_s >= t.trial_s - 1e-9)
        .copied()
        .collect();
    full.sort_by(|a, b| a.loss.total_cmp(&b.loss));
    let sum: f64 = full.iter().map(|r| r.duration_s).sum();
    let mut remain = sum.max(t.sum_s) * (1.0 - t.exceed_ratio);
    let mut q = None;
    for r in &full {
        if q.is_some() && remain <= 1e-9 {
            break;
        }
        q = Some(r.loss);
        remain -= r.duration_s;
    }
    if remain > 1e-9 {
        q = Some(1.0);
    }
    load * (1.0 - q.unwrap_or(1.0))
}

/// Every trial, by load.
#[derive(Debug, Default)]
struct Db(BTreeMap<u64, Vec<Record>>);

impl Db {
    fn add(&mut self, load: u64, duration: Duration, loss: f64) {
        self.0.entry(load).or_default().push(Record {
            duration_s: duration.as_secs_f64(),
            loss,
        });
    }

    fn class(&self, load: u64, t: &Target) -> Class {
        self.0
            .get(&load)
            .map_or(Class::Undecided, |r| classify(r, t))
    }

    /// The relevant lower and upper bounds of a target (RFC 9971 §4.6.2).
    fn bounds(&self, t: &Target) -> (Option<u64>, Option<u64>) {
        let ub = self
            .0
            .iter()
            .find(|(_, r)| classify(r, t) == Class::Upper)
            .map(|(l, _)| *l);
        let lb = self
            .0
            .iter()
            .rev()
            .filter(|(l, _)| ub.is_none_or(|u| **l < u))
            .find(|(_, r)| classify(r, t) == Class::Lower)
            .map(|(l, _)| *l);
        (lb, ub)
    }
}

/// The search of one target: which load to measure next.
struct Walk {
    target: Target,
    /// Loads worth measuring again while undecided: the preceding target's bounds.
    hints: Vec<u64>,
    /// Distance of the next external step, log of the load ratio.
    step: f64,
    /// The last load measured, and the class of the bound it stepped away from.
    last: Option<(u64, Option<Class>)>,
}

impl Walk {
    fn new(target: Target, hints: Vec<u64>) -> Self {
        Self {
            target,
            hints,
            step: -(1.0 - target.width).ln(),
            last: None,
        }
    }

    /// The next load for this target, or `None` when the target is settled.
    fn next(&mut self, db: &Db, min: u64, max: u64, guess: &mut Option<u64>) -> Option<u64> {
        let t = &self.target;
        let (lb, ub) = db.bounds(t);
        match (lb, ub) {
            (Some(l), Some(u)) if u - l <= 1 || (u - l) as f64 / u as f64 <= t.width => {
                return None
            }
            (Some(l), None) if l == max => return None,
            (None, Some(u)) if u <= min => return None,
            _ => {}
        }
        let inside = |x: u64| lb.is_none_or(|l| x > l) && ub.is_none_or(|u| x < u);
        // Loads that can still move a bound, lowest first.
        let last = self.last.map(|(x, _)| x);
        let mut again: Vec<u64> = self.hints.iter().copied().chain(last).collect();
        again.sort_unstable();
        if let Some(x) = again
            .into_iter()
            .find(|&x| inside(x) && db.class(x, t) == Class::Undecided)
        {
            let kept = self.last.filter(|&(y, _)| y == x).and_then(|(_, c)| c);
            self.last = Some((x, kept));
            return Some(x);
        }
        // The last external step moved its bound: double the next.
        if let Some((x, Some(from))) = self.last {
            if db.class(x, t) == from {
                self.step *= 2.0;
            }
        }
        let (load, class) = match (lb, ub) {
            (None, ub) => {
                let u = ub.unwrap_or(max);
                if let Some(g) = guess.take().filter(|&g| g < u && g >= min) {
                    self.last = Some((g, None));
                    return Some(g);
                }
                (u as f64 * (-self.step).exp(), Some(Class::Upper))
            }
            (Some(l), None) => (l as f64 * self.step.exp(), Some(Class::Lower)),
            (Some(l), Some(u)) => {
                let half = (u as f64 / l as f64).ln() / 2.0;
                let gallop = self.step < half;
                match last {
                    Some(x) if x == l && gallop => (l as f64 * self.step.exp(), Some(Class::Lower)),
                    Some(x) if x == u && gallop => {
                        (u as f64 * (-self.step).exp(), Some(Class::Upper))
                    }
                    _ => ((l as f64 * u as f64).sqrt(), None),
                }
            }
        };
        let (lo, hi) = (lb.map_or(min, |l| l + 1), ub.map_or(max, |u| u - 1));
        let load = (load.round() as u64).clamp(lo.min(hi), hi);
        self.last = Some((load, class));
        Some(load)
    }
}

/// Throughput by MLRsearch with one goal (the loss ratio of `cfg`).
pub fn search<T: Trial>(
    trial: &mut T,
    len: u64,
    cfg: &SearchConfig,
    log: &mut Vec<TrialLog>,
) -> Result<ThroughputResult, T::Error> {
    let targets = targets(cfg);
    let goal = *targets.last().expect("the goal is always a target");
    let mut run = Runner::new(trial, log, Some(cfg.search_time()));
    let first_d = Duration::from_secs_f64(targets[0].trial_s);
    let (max, first, cap) = probe_max(&mut run, len, cfg, first_d)?;
    let max_load = max.floor().max(1.0) as u64;
    let min_load = (cfg.min_fps.ceil().max(1.0) as u64).min(max_load);
    let mut db = Db::default();
    db.add(max_load, first_d, first.loss_ratio());
    // The load at which the forwarding rate seen at the maximum load leaves the goal's
    // loss ratio.
    let frmol = max * (1.0 - first.loss_ratio());
    let mut guess = Some((frmol / (1.0 - cfg.loss_ratio)).floor() as u64)
        .filter(|&g| g >= min_load && g < max_load);
    let mut timed_out = None;
    let mut hints = vec![];
    let mut verified = !cfg.verify;
    let mut i = 0;
    while i < targets.len() {
        let t = targets[i];
        let mut walk = Walk::new(t, std::mem::take(&mut hints));
        let d = Duration::from_secs_f64(t.trial_s);
        while let Some(load) = walk.next(&db, min_load, max_load, &mut guess) {
            if !run.fits(d) {
                timed_out = Some(db.bounds(&t));
                break;
            }
            let r = run.run("throughput", rate_req(len, load as f64, d))?;
            db.add(load, d, r.loss_ratio());
        }
        if timed_out.is_some() {
            break;
        }
        let (lb, ub) = db.bounds(&t);
        hints = lb.into_iter().chain(ub).collect();
        // A verification trial, when asked for, joins the goal's trials at its lower
        // bound; the goal is then settled again.
        if i + 1 == targets.len() && !verified {
            verified = true;
            if let Some(l) = lb.filter(|_| run.fits(cfg.final_duration)) {
                let r = run.run("verify", rate_req(len, l as f64, cfg.final_duration))?;
                db.add(l, cfg.final_duration, r.loss_ratio());
                continue;
            }
        }
        i += 1;
    }
    let as_fps = |l: u64| if l == max_load { max } else { l as f64 };
    let (lb, ub) = db.bounds(&goal);
    let mut irregular = None;
    if let Some((l, u)) = timed_out {
        irregular = Some(out_of_time(cfg, l.map(as_fps), u.map(as_fps)));
    } else if lb.is_none() && ub.is_some_and(|u| u <= min_load) {
        irregular = Some(format!(
            "the minimum load ({min_load} frames/s) is an upper bound: the answer is below it"
        ));
    } else if ub.is_none() && cap.is_some() {
        irregular = Some("the generator's maximum is a lower bound".to_owned());
    }
    let fps = lb
        .filter(|_| timed_out.is_none())
        .and_then(|l| db.0.get(&l).map(|r| conditional(as_fps(l), r, &goal)));
    Ok(ThroughputResult {
        frame_len: len,
        search: Search::Mlr,
        fps,
        lower_fps: lb.map(as_fps),
        upper_fps: ub.map(as_fps),
        max_fps: cfg.line_rate.max_fps(len),
        generator_cap_fps: cap,
        irregular,
        trials: run.trials,
        trial_time_s: Some(run.spent_s),
        goal: Some(SearchGoal {
            loss_ratio: goal.loss_ratio,
            exceed_ratio: goal.exceed_ratio,
            final_trial_s: goal.trial_s,
            duration_sum_s: goal.sum_s,
            width: goal.width,
            preceding: cfg.preceding,
            initial_trial_s: targets[0].trial_s,
        }),
    })
}
