//! Thresholds and the verdicts they make: a metric of one test (or of every test that has
//! it), bounded below or above, checked against the figures of the results model's one
//! extractor. A threshold whose test did not run, or has no such figure, fails as "not
//! measured"; it never passes silently.

use model::results::figures::Unit;
use model::results::{RunResult, Verdict};
use model::units::UnitError;

use crate::methods::Methods;

/// What a threshold checks: a metric that one or more methods declare
/// ([`crate::methods::Method::thresholds`]), with the methods whose figures it reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    /// Its name in a plan.
    pub name: &'static str,
    /// The unit of its bounds.
    pub unit: Unit,
    /// The methods that know it.
    methods: Methods,
}

impl Metric {
    /// The metric of a plan's name, when one of `methods` declares it.
    pub fn parse(s: &str, methods: Methods) -> Option<Self> {
        let t = methods.threshold(s)?;
        Some(Self {
            name: t.name,
            unit: t.unit,
            methods,
        })
    }

    /// Whether a test of `kind` produces this metric.
    pub fn produced_by(self, kind: &str) -> bool {
        let m = self.methods.find(kind);
        m.is_some_and(|m| m.thresholds().iter().any(|t| t.name == self.name))
    }

    /// Reads a bound in this metric's unit.
    ///
    /// # Errors
    /// A value not in the unit (`300` for a latency, which needs `300us`).
    pub fn value(self, s: &str) -> Result<f64, UnitError> {
        self.unit.parse(s)
    }

    fn show(self, v: f64) -> String {
        self.unit.show(v)
    }

    /// This metric's value of figure `f`, if `f` is one of its figures.
    fn of(self, f: &model::results::figures::Figure) -> Option<f64> {
        (f.metric.threshold() == Some(self.name)).then(|| f.threshold_value())
    }
}

/// The figures of `metric` in one test's result, as (where, value): `""` for a summary,
/// `64 B` for a frame or message size, a measurement's name. Empty when it has none.
pub fn figures_of(metric: Metric, r: &RunResult) -> Vec<(String, f64)> {
    metric
        .methods
        .figures(r)
        .into_iter()
        .filter_map(|f| Some((f.at.clone(), metric.of(&f)?)))
        .collect()
}

/// A threshold: a metric of one test (or of every test that has it) and its bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The test's name, or every test.
    pub test: Option<String>,
    /// What it checks.
    pub metric: Metric,
    /// The metric as written.
    pub metric_name: String,
    /// Lower bound.
    pub min: Option<f64>,
    /// Upper bound.
    pub max: Option<f64>,
    /// Line in the plan.
    pub line: usize,
}

/// A finished (or failed) test as the thresholds see it.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    /// Its id (`t1`).
    pub id: &'a str,
    /// Its name in the plan.
    pub name: &'a str,
    /// Its kind (`client`, `rfc2544`, ...).
    pub kind: &'a str,
    /// Its result, when it produced one.
    pub result: Option<&'a RunResult>,
}

/// Evaluates the thresholds against the tests that ran, as verdicts naming the test (its
/// id), the figure, the measured value and the bound. A threshold whose test did not run
/// or has no such figure is a failed verdict ("not measured"), never a pass.
pub fn evaluate(thresholds: &[Threshold], tests: &[Outcome<'_>]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for th in thresholds {
        let m = th.metric;
        let bound = match (th.min, th.max) {
            (Some(lo), Some(hi)) => format!("{} .. {}", m.show(lo), m.show(hi)),
            (Some(lo), None) => format!(">= {}", m.show(lo)),
            (None, Some(hi)) => format!("<= {}", m.show(hi)),
            (None, None) => String::new(),
        };
        let before = out.len();
        for t in tests {
            if th.test.as_ref().is_some_and(|n| n != t.name) {
                continue;
            }
            let figs = t.result.map(|r| figures_of(m, r)).unwrap_or_default();
            let named = |at: &str| {
                let at = if at.is_empty() {
                    String::new()
                } else {
                    format!(" at {at}")
                };
                format!("{}{at} of {} ({})", th.metric_name, t.name, t.id)
            };
            // Named, or a test of a kind that would have measured it but did not run.
            if figs.is_empty() && (th.test.is_some() || t.result.is_none() && m.produced_by(t.kind))
            {
                out.push(Verdict {
                    name: named(""),
                    passed: false,
                    detail: format!("not measured (required {bound})"),
                    marginal: false,
                });
            }
            for (at, v) in figs {
                let passed = th.min.is_none_or(|lo| v >= lo) && th.max.is_none_or(|hi| v <= hi);
                out.push(Verdict {
                    name: named(&at),
                    passed,
                    detail: format!("measured {}, required {bound}", m.show(v)),
                    marginal: false,
                });
            }
        }
        if out.len() == before {
            out.push(Verdict {
                name: format!("{} (line {})", th.metric_name, th.line),
                passed: false,
                detail: format!("no test measured it (required {bound})"),
                marginal: false,
            });
        }
    }
    out
}

#[cfg(test)]
#[path = "verdicts_tests.rs"]
mod test;
