//! RFC 2544 §26.1 throughput by binary search (the de-facto algorithm of ETSI GS NFV-TST
//! 009 §12.3.2): the maximum load first, then bisection between the highest load that met
//! the loss goal and the lowest that failed, one trial per load, until they are a width
//! apart; optionally a full-length verification at the result (§24), whose failure
//! searches on below it.
//!
//! It believes every trial: one unlucky trial moves the result for good (the reason for
//! MLRsearch, [`super::mlr`]). When its time budget runs out it says between which loads
//! the answer lies.

use super::{out_of_time, probe_max, rate_req, Runner, SearchConfig};
use super::{Search, SearchGoal, ThroughputResult, TrialLog};
use crate::trial::{Trial, TrialData};

/// Throughput by binary search.
pub fn search<T: Trial>(
    trial: &mut T,
    len: u64,
    cfg: &SearchConfig,
    log: &mut Vec<TrialLog>,
) -> Result<ThroughputResult, T::Error> {
    let mut run = Runner::new(trial, log, Some(cfg.search_time()));
    let d = cfg.duration;
    let (max, first, cap) = probe_max(&mut run, len, cfg, d)?;
    let ok = |r: &TrialData| r.loss_ratio() <= cfg.loss_ratio;
    let mut out = ThroughputResult {
        frame_len: len,
        search: Search::Binary,
        fps: None,
        lower_fps: None,
        upper_fps: None,
        max_fps: cfg.line_rate.max_fps(len),
        generator_cap_fps: cap,
        irregular: None,
        trials: 0,
        trial_time_s: None,
        goal: Some(SearchGoal {
            loss_ratio: cfg.loss_ratio,
            exceed_ratio: 0.0,
            final_trial_s: d.as_secs_f64(),
            duration_sum_s: d.as_secs_f64(),
            width: cfg.width,
            preceding: 0,
            initial_trial_s: d.as_secs_f64(),
        }),
    };
    // `lo`: a load that met the goal (measured); `hi`: one that failed.
    let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, None);
    let mut verified = !cfg.verify;
    let mut timed_out = false;
    if ok(&first) {
        lo = Some(max);
    } else {
        hi = Some(max);
    }
    while let Some(h) = hi {
        let floor = lo.unwrap_or(cfg.min_fps);
        let converged = (h - floor) / h <= cfg.width || floor >= h;
        let (load, duration, purpose) = match (converged, lo) {
            (true, None) => (cfg.min_fps, d, "throughput"),
            (true, Some(l)) if !verified => (l, cfg.final_duration, "verify"),
            (true, Some(_)) => break,
            (false, _) => ((floor + h) / 2.0, d, "throughput"),
        };
        if !run.fits(duration) {
            out.irregular = Some(out_of_time(cfg, lo, hi));
            timed_out = true;
            break;
        }
        let r = run.run(purpose, rate_req(len, load, duration))?;
        match (ok(&r), purpose) {
            (true, "verify") => verified = true,
            // §24: the full-length trial failed; search on below it.
            (false, "verify") => (lo, hi) = (None, Some(load)),
            (true, _) => lo = Some(load),
            (false, _) if load <= cfg.min_fps => {
                hi = Some(load);
                out.irregular = Some(format!(
                    "the minimum load ({load:.0} frames/s) loses frames: the answer is below it"
                ));
                break;
            }
            (false, _) => hi = Some(load),
        }
    }
    out.lower_fps = lo;
    out.upper_fps = hi;
    // Out of time, the bracket is the answer; the minimum load failing leaves no `lo`.
    out.fps = if timed_out { None } else { lo };
    out.trials = run.trials;
    out.trial_time_s = Some(run.spent_s);
    Ok(out)
}
