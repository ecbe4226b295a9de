//! A measurement repeated `n` times (`--repeat N`, a plan test's `repeat = N`): every
//! repetition's document is kept (`RunResult::runs`), and each headline figure is
//! summarised across them with its spread ([`crate::stats::spread`]: the median, the
//! range and the distribution-free order-statistic interval for the median).
//!
//! The repeated result is the document of one repetition, the one whose first headline
//! figure is the median (the lower middle one for an even `n`), so that every table of a
//! single run shows a run that happened; [`Repeated`] beside it holds the figures of all.
//! Figures are matched across repetitions by metric and row ([`Figure::metric`],
//! [`Figure::at`]); a figure a repetition did not produce is left out of its samples.
//!
//! What it does not do: run anything, or know which figures a method has (the caller
//! gives its extractor), or decide whether two results differ (`spread::compare`).

use serde::{Deserialize, Serialize};

use super::figures::{Figure, Metric};
use super::RunResult;
use crate::stats::spread::Spread;

/// Which figures a result has: a method's extractor.
pub type Figures<'f> = &'f dyn Fn(&RunResult) -> Vec<Figure>;

/// How a repeated result came about, and each headline figure across its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeated {
    /// Repetitions run (fewer than asked when the test was stopped).
    pub n: u32,
    /// The repetition (1-based) whose document this is: its first figure is the median.
    pub shown: u32,
    /// Each headline figure, in the order the repetitions first gave them.
    pub figures: Vec<RepeatedFigure>,
}

/// One headline figure across the repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatedFigure {
    /// What it measures (a plan's threshold metric name, e.g. `received_bps`).
    pub figure: String,
    /// Its row (`64 B`, a stream's name); empty for a test's summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub at: String,
    /// The unit of its samples (`bit/s`, `ratio`, `us`, `frames/s`, `%`, `MByte/s`).
    pub unit: String,
    /// Each repetition's value, in order; a repetition without the figure has none here.
    pub samples: Vec<f64>,
    /// `{n, median, min, max, ci95, coverage}` of the samples (absent below two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
}

/// The name of a figure's metric in a repeated figure: its plan threshold name, or for a
/// FRER measurement (which has none) `frer_value`.
fn metric_name(m: Metric) -> String {
    m.threshold().unwrap_or("frer_value").to_owned()
}

/// The unit of a figure's value.
fn unit_of(f: &Figure) -> String {
    use super::figures::Unit;
    match f.metric {
        Metric::ReceivedBps | Metric::ZeroLossBps | Metric::StreamReceivedBps => "bit/s".into(),
        Metric::Loss => "ratio".into(),
        Metric::Latency(_) | Metric::RoundTrip(_) | Metric::FrameLatency(_) => "us".into(),
        Metric::ThroughputFps => "frames/s".into(),
        Metric::FrerValue => f.unit.clone().unwrap_or_default(),
        Metric::FrerOverhead => "%".into(),
        Metric::BlockTx | Metric::BlockRx | Metric::NicTx | Metric::NicRx => "MByte/s".into(),
        Metric::Named(n) => match n.unit {
            Unit::BitsPerSec => "bit/s",
            Unit::Ratio => "ratio",
            Unit::Micros => "us",
            Unit::Percent => "%",
            Unit::MBytePerSec => "MByte/s",
            Unit::Number => "",
        }
        .into(),
    }
}

/// The figures of every run, matched by metric and row: (a figure as found first, each
/// run's value or none), in first-seen order.
fn matched(per_run: &[Vec<Figure>]) -> Vec<(Figure, Vec<Option<f64>>)> {
    let mut out: Vec<(Figure, Vec<Option<f64>>)> = Vec::new();
    for (i, figures) in per_run.iter().enumerate() {
        for f in figures {
            let at = out
                .iter()
                .position(|(g, _)| g.metric == f.metric && g.at == f.at);
            let at = at.unwrap_or_else(|| {
                out.push((f.clone(), vec![None; per_run.len()]));
                out.len() - 1
            });
            out[at].1[i] = Some(f.value);
        }
    }
    out
}

/// The repetitions `runs` (at least one, in the order they ran) as one result: the
/// document of the repetition whose first figure is the median, with every repetition in
/// its `runs`, their figures summarised in `repeated`, `interrupted` when any was, and
/// the verdicts of each repetition, named by it.
///
/// # Panics
/// `runs` is empty.
#[must_use]
pub fn combine(runs: Vec<RunResult>, figures: Figures<'_>) -> RunResult {
    assert!(!runs.is_empty(), "combine needs a repetition");
    let per_run: Vec<Vec<Figure>> = runs.iter().map(figures).collect();
    let all = matched(&per_run);
    // The repetition whose first figure is the median: sorted by it, the lower middle.
    let shown = match all.first() {
        Some((_, values)) => {
            let mut by: Vec<(usize, f64)> = values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i, v)))
                .collect();
            by.sort_by(|a, b| a.1.total_cmp(&b.1));
            by.get(by.len().saturating_sub(1) / 2).map_or(0, |x| x.0)
        }
        None => runs.len() - 1,
    };
    let n = runs.len();
    let mut out = runs[shown].clone();
    out.interrupted = runs.iter().any(|r| r.interrupted);
    out.verdicts = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            r.verdicts.iter().map(move |v| {
                let mut v = v.clone();
                v.name = format!("{} (run {}/{n})", v.name, i + 1);
                v
            })
        })
        .collect();
    out.repeated = Some(Repeated {
        n: u32::try_from(n).unwrap_or(u32::MAX),
        shown: u32::try_from(shown + 1).unwrap_or(u32::MAX),
        figures: summarised(all)
            .into_iter()
            .map(|(f, samples)| RepeatedFigure {
                figure: metric_name(f.metric),
                at: f.at.clone(),
                unit: unit_of(&f),
                spread: f.spread,
                samples,
            })
            .collect(),
    });
    out.runs = runs;
    out
}

/// Each matched figure as its median over the runs that gave it, with its spread (one
/// sample: its value, no spread), and those samples.
fn summarised(matched: Vec<(Figure, Vec<Option<f64>>)>) -> Vec<(Figure, Vec<f64>)> {
    matched
        .into_iter()
        .map(|(f, values)| {
            let samples: Vec<f64> = values.into_iter().flatten().collect();
            let spread = Spread::of(&samples);
            let figure = Figure {
                value: spread.as_ref().map_or(f.value, |s| s.median),
                spread,
                ..f
            };
            (figure, samples)
        })
        .collect()
}

/// The headline figures of `r`: for a repeated result, each the median over its
/// repetitions with its spread (in the order the repetitions first gave them);
/// otherwise `figures(r)` as they are.
#[must_use]
pub fn figures_of(r: &RunResult, figures: Figures<'_>) -> Vec<Figure> {
    if r.repeated.is_none() || r.runs.is_empty() {
        return figures(r);
    }
    let per_run: Vec<Vec<Figure>> = r.runs.iter().map(figures).collect();
    summarised(matched(&per_run))
        .into_iter()
        .map(|(f, _)| f)
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::results::{Environment, Summary, Verdict};

    fn run(received: f64, loss: Option<f64>) -> RunResult {
        let mut r = RunResult::new(
            "client",
            serde_json::Value::Null,
            "2026-12-04T00:00:00Z".into(),
            Environment::default(),
        );
        r.summary = Some(Summary {
            received_bps: Some(received),
            loss_ratio: loss,
            ..Summary::default()
        });
        r
    }

    #[test]
    fn the_median_repetition_is_shown_and_every_one_is_kept() {
        let runs = vec![
            run(900e6, Some(0.0)),
            run(700e6, Some(0.01)),
            run(800e6, Some(0.02)),
        ];
        let r = combine(runs, &crate::results::figures::figures);
        let rep = r.repeated.as_ref().unwrap();
        assert_eq!((rep.n, rep.shown), (3, 3), "800M is the median");
        assert_eq!(r.summary.as_ref().unwrap().received_bps, Some(800e6));
        assert_eq!(r.runs.len(), 3);
        let rx = &rep.figures[0];
        assert_eq!(
            (rx.figure.as_str(), rx.unit.as_str()),
            ("received_bps", "bit/s")
        );
        assert_eq!(rx.samples, [900e6, 700e6, 800e6]);
        let s = rx.spread.as_ref().unwrap();
        assert_eq!((s.median, s.ci95), (800e6, [700e6, 900e6]));
        // The loss figure's median is its own (0.01), not the shown repetition's (0.02).
        let f = figures_of(&r, &crate::results::figures::figures);
        assert_eq!(f[1].value, 0.01);
        assert_eq!(f[1].spread.as_ref().unwrap().n, 3);
        assert_eq!(f[0].value, 800e6);
    }

    #[test]
    fn a_figure_some_repetitions_lack_has_the_others_samples() {
        let runs = vec![run(1.0, Some(0.5)), run(2.0, None)];
        let r = combine(runs, &crate::results::figures::figures);
        let rep = r.repeated.unwrap();
        assert_eq!(rep.figures[1].samples, [0.5]);
        assert_eq!(rep.figures[1].spread, None, "one sample claims no interval");
        assert_eq!(rep.shown, 1, "the lower middle of two");
    }

    #[test]
    fn each_repetitions_verdicts_are_kept_and_named() {
        let mut a = run(1.0, None);
        let mut b = run(2.0, None);
        let v = |passed| Verdict {
            name: "p99".into(),
            passed,
            detail: String::new(),
            marginal: false,
        };
        a.verdicts.push(v(true));
        b.verdicts.push(v(false));
        b.interrupted = true;
        let r = combine(vec![a, b], &crate::results::figures::figures);
        let names: Vec<_> = r
            .verdicts
            .iter()
            .map(|v| (v.name.as_str(), v.passed))
            .collect();
        assert_eq!(names, [("p99 (run 1/2)", true), ("p99 (run 2/2)", false)]);
        assert!(r.interrupted);
    }

    #[test]
    fn a_single_result_keeps_its_figures() {
        let r = run(5.0, Some(0.0));
        let f = figures_of(&r, &crate::results::figures::figures);
        assert_eq!((f[0].value, f[0].spread.is_none()), (5.0, true));
    }
}
