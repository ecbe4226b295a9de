//! A test's own latency limits (`latency --latency-limit p99.9=300us`, RFC 2544's
//! `--latency-limit`) as verdicts, with a MARGINAL band. Plan thresholds are
//! [`crate::verdicts`]; these belong to one test and are decided where it runs.
//!
//! The band, as the LAN9662 FRER report (reference 000) reads its 300 µs limit: a tail
//! slightly over the limit is "⚠ Marginal", not a failure (p99.9 at 301–338 µs while p99
//! held the limit). So by default ([`DEFAULT_BAND`]) a statistic over its limit by at most
//! 15 % is MARGINAL (passed, and said to be over), and only beyond that FAIL; `0%` turns
//! the band off. The other band warns before the limit instead: a statistic above a share
//! of its limit (e.g. 90 %: 270–300 µs) that still holds it is MARGINAL, and anything over
//! the limit fails.

use model::results::Verdict;

/// Where a limit's MARGINAL band lies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Band {
    /// Over the limit by at most this share of it (0.15: 300–345 µs under 300 µs).
    Above(f64),
    /// Above this share of the limit and within it (0.9: 270–300 µs under 300 µs).
    Below(f64),
}

/// The band when none is asked for: the LAN9662 report's, 15 % over the limit.
pub const DEFAULT_BAND: Band = Band::Above(0.15);

/// The band of a method's flags: `--marginal-band SHARE` (below the limit) when given,
/// else `--marginal-above SHARE` (0 turns the band off), else [`DEFAULT_BAND`].
#[must_use]
pub fn band(above: Option<f64>, below: Option<f64>) -> Option<Band> {
    match (above, below) {
        (_, Some(b)) => Some(Band::Below(b)),
        (Some(a), None) => (a > 0.0).then_some(Band::Above(a)),
        (None, None) => Some(DEFAULT_BAND),
    }
}

/// The verdicts of a test's own latency limits at `at` (`64 bytes`): one per limit
/// `(percentile, µs)` (avg = −1, min = 0, max = 100, as `units::latency_limit` reads them),
/// with `value(percentile)` the measured statistic, MARGINAL inside `band` (see the module
/// doc). A statistic that was not measured fails.
pub fn latency_limits(
    at: &str,
    limits: &[(f64, f64)],
    band: Option<Band>,
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
            let (passed, marginal, detail) = match (v, band) {
                (None, _) => (false, false, format!("not measured (limit {limit} us)")),
                (Some(v), None) => (v <= limit, false, format!("{v:.1} us (limit {limit} us)")),
                (Some(v), Some(Band::Below(share))) => {
                    let from = share * limit;
                    (
                        v <= limit,
                        v > from && v <= limit,
                        format!("{v:.1} us (limit {limit} us, marginal above {from:.1} us)"),
                    )
                }
                (Some(v), Some(Band::Above(share))) => {
                    let to = (1.0 + share) * limit;
                    let over = (v - limit) / limit * 100.0;
                    let detail = if v > limit {
                        format!(
                            "{v:.1} us: {over:.1} % over the limit of {limit} us (marginal up to {to:.1} us)"
                        )
                    } else {
                        format!("{v:.1} us (limit {limit} us, marginal up to {to:.1} us)")
                    };
                    (v <= to, v > limit && v <= to, detail)
                }
            };
            Verdict {
                name: format!("latency {name} at {at}"),
                passed,
                detail,
                marginal,
            }
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    fn word(v: f64, band: Option<Band>) -> &'static str {
        latency_limits("64 bytes", &[(99.9, 300.0)], band, |_| Some(v))[0].word()
    }

    /// The LAN9662 report's latency table: limit 300 µs, p99.9 at 301–338 µs reads
    /// "⚠ Marginal"; the default band says the same, and fails beyond 345 µs.
    #[test]
    fn a_tail_slightly_over_the_limit_is_marginal_as_the_lan9662_report_reads_it() {
        let band = band(None, None);
        assert_eq!(band, Some(DEFAULT_BAND));
        for (v, want) in [
            (250.0, "pass"),
            (300.0, "pass"),
            (301.0, "MARGINAL"),
            (338.0, "MARGINAL"),
            (345.0, "MARGINAL"),
            (345.1, "FAIL"),
            (600.0, "FAIL"),
        ] {
            assert_eq!(word(v, band), want, "{v} us");
        }
        let v = &latency_limits("64 bytes", &[(99.9, 300.0)], band, |_| Some(338.0))[0];
        assert_eq!(v.name, "latency p99.9 at 64 bytes");
        assert!(
            v.detail.contains("12.7 % over the limit of 300 us"),
            "{}",
            v.detail
        );
    }

    #[test]
    fn the_band_below_the_limit_warns_before_it_and_fails_over_it() {
        let band = band(Some(0.15), Some(0.9));
        assert_eq!(band, Some(Band::Below(0.9)));
        for (v, want) in [
            (250.0, "pass"),
            (280.0, "MARGINAL"),
            (300.0, "MARGINAL"),
            (301.0, "FAIL"),
        ] {
            assert_eq!(word(v, band), want, "{v} us");
        }
    }

    #[test]
    fn no_band_and_an_unmeasured_statistic() {
        let off = band(Some(0.0), None);
        assert_eq!(off, None);
        assert_eq!(word(301.0, off), "FAIL");
        assert_eq!(word(300.0, off), "pass");
        let v = latency_limits("64 bytes", &[(99.9, 300.0)], band(None, None), |_| None);
        assert_eq!(
            (v[0].word(), v[0].detail.as_str()),
            ("FAIL", "not measured (limit 300 us)")
        );
    }
}
