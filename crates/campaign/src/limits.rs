//! A test's own latency limits (`latency --latency-limit p99.9=300us`, RFC 2544's
//! `--latency-limit`) as verdicts, with the FRER report's MARGINAL band. Plan thresholds
//! are [`crate::verdicts`]; these belong to one test and are decided where it runs.

use model::results::Verdict;

/// The verdicts of a test's own latency limits at `at` (`64 bytes`): one per limit
/// `(percentile, µs)` (avg = −1, min = 0, max = 100, as `units::latency_limit` reads them),
/// with `value(percentile)` the measured statistic. With a `band` (0..1), a value above
/// `band` × limit that still holds the limit is MARGINAL (the FRER report's column). A
/// statistic that was not measured fails.
pub fn latency_limits(
    at: &str,
    limits: &[(f64, f64)],
    band: Option<f64>,
    value: impl Fn(f64) -> Option<f64>,
) -> Vec<Verdict> {
    limits
        .iter()
        .map(|&(q, limit)| {
            let name = match q {
                q if q < 0.0 => "avg".to_owned(),
                q if q >= 100.0 => "max".to_owned(),
                q if q <= 0.0 => "min".to_owned(),
                q => format!("p{q}"),
            };
            let v = value(q).filter(|v| v.is_finite());
            let from = band.map(|b| b * limit);
            let detail = match (v, from) {
                (None, _) => format!("not measured (limit {limit} us)"),
                (Some(v), None) => format!("{v:.1} us (limit {limit} us)"),
                (Some(v), Some(f)) => {
                    format!("{v:.1} us (limit {limit} us, marginal above {f:.1} us)")
                }
            };
            Verdict {
                name: format!("latency {name} at {at}"),
                passed: v.is_some_and(|v| v <= limit),
                detail,
                marginal: matches!((v, from), (Some(v), Some(f)) if v > f && v <= limit),
            }
        })
        .collect()
}
