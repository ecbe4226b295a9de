//! The spread of a repeated measurement, and whether two repeated measurements differ.
//!
//! A figure measured `n ≥ 2` times is summarised as `{n, median, min, max, ci95}`, where
//! `ci95` is the distribution-free order-statistic confidence interval for the median
//! (Conover, *Practical Nonparametric Statistics*, 3rd ed., §3.2; Hahn & Meeker,
//! *Statistical Intervals*, §5.2): with the samples sorted, `[x(k), x(n+1-k)]` covers the
//! true median with probability `1 − 2·P(Bin(n, ½) ≤ k − 1)` whatever the distribution of
//! the figure. `k` is the largest that keeps this at 95 % or more (from `n = 6` on). Fewer
//! than 6 samples cannot reach 95 %: their interval is `[min, max]`, and `coverage` says
//! what it does reach (n = 2: 50 %, 3: 75 %, 4: 87.5 %, 5: 93.75 %). One sample has no
//! spread at all: [`Spread::of`] gives none, never an interval of zero width.
//!
//! Two figures differ when their intervals do not overlap ([`compare`]): then the interval
//! that the two intervals bound for their difference excludes 0. Overlapping intervals
//! read "no significant difference", whatever the medians' difference.
//!
//! What this module does not do: measure, repeat or order the repetitions (the methods
//! interleave the groups they compare), or print.

use serde::{Deserialize, Serialize};

/// The coverage the interval aims for.
pub const LEVEL: f64 = 0.95;

/// What a comparison says of a figure measured once: no interval, so no finding.
pub const ONE_RUN: &str = "one run: not a finding (measure with --repeat)";

/// A figure's repeated samples summarised: at least two samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Samples.
    pub n: u32,
    /// Their median (the mean of the middle two when `n` is even).
    pub median: f64,
    /// The lowest sample.
    pub min: f64,
    /// The highest sample.
    pub max: f64,
    /// The order-statistic confidence interval for the median, `[low, high]`.
    pub ci95: [f64; 2],
    /// The interval's exact coverage (0..1): at least 0.95 from 6 samples on; below that,
    /// what `[min, max]` of `n` samples reaches.
    pub coverage: f64,
}

impl Spread {
    /// The spread of `samples`; none for fewer than two samples or a sample that is not a
    /// finite number (a figure a repetition did not produce is left out by the caller).
    #[must_use]
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.len() < 2 || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let n = u32::try_from(samples.len()).ok()?;
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let len = s.len();
        let median = if len % 2 == 1 {
            s[len / 2]
        } else {
            (s[len / 2 - 1] + s[len / 2]) / 2.0
        };
        let (k, coverage) = order_statistic(n);
        let k = k as usize;
        Some(Self {
            n,
            median,
            min: s[0],
            max: s[len - 1],
            ci95: [s[k - 1], s[len - k]],
            coverage,
        })
    }

    /// The interval in percent of its coverage, for a label: "95 %", "93.75 %".
    #[must_use]
    pub fn coverage_label(&self) -> String {
        let pct = self.coverage * 100.0;
        if (pct - pct.round()).abs() < 1e-9 {
            format!("{pct:.0} %")
        } else {
            format!("{} %", format!("{pct:.2}").trim_end_matches('0'))
        }
    }

    /// Whether the two intervals share a point.
    #[must_use]
    pub fn overlaps(&self, other: &Self) -> bool {
        self.ci95[0] <= other.ci95[1] && other.ci95[0] <= self.ci95[1]
    }
}

/// The 1-based rank `k` of the interval `[x(k), x(n+1-k)]` for `n` samples, and its exact
/// coverage: the largest `k` whose coverage is at least [`LEVEL`], or 1 when none is.
fn order_statistic(n: u32) -> (u32, f64) {
    if n > 1000 {
        // 2^-n leaves f64's range: the normal approximation (Conover, §3.2), which is
        // within a rank of the exact one long before this.
        let k = (f64::from(n) / 2.0 - 1.96 * f64::from(n).sqrt() / 2.0).floor();
        return (k.max(1.0) as u32, LEVEL);
    }
    // P(Bin(n, 1/2) <= j) by summing C(n, i) / 2^n, formed in floating point.
    let mut below = 0.0; // P(Bin <= k - 1)
    let mut term = 0.5f64.powi(i32::try_from(n).unwrap_or(i32::MAX)); // C(n, 0) / 2^n
    let mut best = (1, 1.0 - 2.0 * term);
    for k in 1..=n.div_ceil(2) {
        // `below` is P(Bin <= k - 1) after adding C(n, k - 1) / 2^n.
        below += term;
        let coverage = 1.0 - 2.0 * below;
        if coverage >= LEVEL || k == 1 {
            best = (k, coverage);
        }
        if coverage < LEVEL {
            break;
        }
        // C(n, k) = C(n, k - 1) * (n - k + 1) / k
        term *= f64::from(n - k + 1) / f64::from(k);
    }
    best
}

/// Which figure is better, for the sign of a difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// A throughput: more is better.
    Higher,
    /// A latency, a loss: less is better.
    Lower,
}

/// What `b` costs in % of `a`: a drop of a higher-is-better figure, or a rise of a
/// lower-is-better one, is positive; none when `a` is 0.
#[must_use]
pub fn cost_percent(a: f64, b: f64, better: Better) -> Option<f64> {
    let sign = match better {
        Better::Higher => -1.0,
        Better::Lower => 1.0,
    };
    (a != 0.0).then(|| sign * (b - a) / a * 100.0)
}

/// Two repeated figures compared: B against A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The intervals are disjoint.
    pub significant: bool,
    /// `B − A` of the medians.
    pub median: f64,
    /// The interval the two intervals bound for `B − A`: it holds 0 exactly when the
    /// difference is not significant.
    pub interval: [f64; 2],
    /// What B costs in % of A (a drop of a higher-is-better figure, a rise of a
    /// lower-is-better one is positive), of the medians; absent when A's median is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_percent: Option<f64>,
    /// The cost's interval in %, from the bounds of `B / A`, when A's interval is above 0;
    /// like `interval`, it holds 0 exactly when the difference is not significant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_interval_percent: Option<[f64; 2]>,
}

/// Compares B against A by the overlap rule: disjoint intervals are a significant
/// difference; overlapping ones are not, and their difference's interval holds 0.
#[must_use]
pub fn compare(a: &Spread, b: &Spread, better: Better) -> Difference {
    let significant = !a.overlaps(b);
    let [alo, ahi] = a.ci95;
    let [blo, bhi] = b.ci95;
    // B/A lies in [blo/ahi, bhi/alo]: the cost's bounds are those two ratios' costs.
    let cost_interval_percent = match (
        cost_percent(ahi, blo, better).filter(|_| alo > 0.0),
        cost_percent(alo, bhi, better),
    ) {
        (Some(x), Some(y)) => Some([x.min(y), x.max(y)]),
        _ => None,
    };
    Difference {
        significant,
        median: b.median - a.median,
        interval: [blo - ahi, bhi - alo],
        cost_percent: cost_percent(a.median, b.median, better),
        cost_interval_percent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_or_a_missing_figure_has_no_spread() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[3.0]), None, "n = 1 claims no interval");
        assert_eq!(Spread::of(&[3.0, f64::NAN]), None);
        assert_eq!(Spread::of(&[3.0, f64::INFINITY]), None);
    }

    #[test]
    fn below_six_samples_the_interval_is_the_range_with_its_own_coverage() {
        let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (5, 3.0, 1.0, 5.0));
        assert_eq!(s.ci95, [1.0, 5.0]);
        assert!((s.coverage - 0.9375).abs() < 1e-12, "{}", s.coverage);
        assert_eq!(s.coverage_label(), "93.75 %");
        let two = Spread::of(&[2.0, 1.0]).unwrap();
        assert_eq!((two.median, two.ci95), (1.5, [1.0, 2.0]));
        assert!((two.coverage - 0.5).abs() < 1e-12);
        assert!((Spread::of(&[1.0, 2.0, 3.0]).unwrap().coverage - 0.75).abs() < 1e-12);
        assert!((Spread::of(&[1.0, 2.0, 3.0, 4.0]).unwrap().coverage - 0.875).abs() < 1e-12);
    }

    /// The ranks against the published table of the binomial interval for the median
    /// (Conover, Table A3, α = 0.05 two-sided): n = 6..8 → k = 1, 9..11 → 2, 12..14 → 3,
    /// 15..16 → 4, 20 → 6, 30 → 10.
    #[test]
    fn from_six_samples_the_ranks_are_the_binomial_tables() {
        for (n, k) in [
            (6, 1),
            (8, 1),
            (9, 2),
            (11, 2),
            (12, 3),
            (14, 3),
            (15, 4),
            (16, 4),
            (17, 5),
            (20, 6),
            (30, 10),
        ] {
            let (got, coverage) = order_statistic(n);
            assert_eq!(got, k, "n = {n}");
            assert!(coverage >= LEVEL, "n = {n}: {coverage}");
            // One rank further in would fall below 95 %.
            let mut below = 0.0;
            for i in 0..=k {
                below += binomial(n, i);
            }
            assert!(
                1.0 - 2.0 * below < LEVEL,
                "n = {n}: k + 1 would still cover"
            );
        }
        assert!((order_statistic(6).1 - 0.96875).abs() < 1e-12);
        // Past 2^-1000, the normal approximation: 2000 samples, rank 956.
        assert_eq!(order_statistic(2000).0, 956);
        // Samples 10, 20, ... 90: n = 9, k = 2: [20, 80].
        let s = Spread::of(&(1..=9).map(|i| f64::from(i) * 10.0).collect::<Vec<_>>()).unwrap();
        assert_eq!((s.median, s.ci95), (50.0, [20.0, 80.0]));
        assert_eq!(s.coverage_label(), "96.09 %");
    }

    fn binomial(n: u32, k: u32) -> f64 {
        let mut c = 1.0;
        for i in 0..k {
            c = c * f64::from(n - i) / f64::from(i + 1);
        }
        c / 2f64.powi(n as i32)
    }

    #[test]
    fn ties_give_an_interval_of_the_tied_value() {
        let s = Spread::of(&[7.0; 8]).unwrap();
        assert_eq!(
            (s.median, s.min, s.max, s.ci95),
            (7.0, 7.0, 7.0, [7.0, 7.0])
        );
        let s = Spread::of(&[1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 9.0, 9.0]).unwrap();
        assert_eq!((s.median, s.ci95), (2.0, [2.0, 9.0]));
    }

    #[test]
    fn overlapping_intervals_are_no_significant_difference() {
        let control = Spread::of(&[900.0, 910.0, 920.0, 905.0, 915.0]).unwrap();
        let frer = Spread::of(&[890.0, 912.0, 930.0, 880.0, 925.0]).unwrap();
        let d = compare(&control, &frer, Better::Higher);
        assert!(!d.significant);
        // Both intervals hold 0: the difference could be either way.
        assert!(d.interval[0] < 0.0 && d.interval[1] > 0.0, "{d:?}");
        let [lo, hi] = d.cost_interval_percent.unwrap();
        assert!(lo < 0.0 && hi > 0.0, "{d:?}");
        // The medians' cost is still stated, and is small.
        assert!((d.cost_percent.unwrap() - (910.0 - 912.0) / 910.0 * 100.0).abs() < 1e-9);
        // Touching intervals share a point: not significant either.
        let a = Spread::of(&[1.0, 2.0]).unwrap();
        let b = Spread::of(&[2.0, 3.0]).unwrap();
        assert!(!compare(&a, &b, Better::Lower).significant);
    }

    #[test]
    fn disjoint_intervals_state_the_difference_with_its_bounds() {
        let control = Spread::of(&[900.0, 910.0, 920.0]).unwrap();
        let frer = Spread::of(&[600.0, 700.0, 650.0]).unwrap();
        let d = compare(&control, &frer, Better::Higher);
        assert!(d.significant);
        assert_eq!(d.median, 650.0 - 910.0);
        assert_eq!(d.interval, [600.0 - 920.0, 700.0 - 900.0]);
        // Throughput lost: between 1 - 700/900 and 1 - 600/920, positive.
        let [lo, hi] = d.cost_interval_percent.unwrap();
        assert!((lo - (1.0 - 700.0 / 900.0) * 100.0).abs() < 1e-9, "{lo}");
        assert!((hi - (1.0 - 600.0 / 920.0) * 100.0).abs() < 1e-9, "{hi}");
        let c = d.cost_percent.unwrap();
        assert!(lo <= c && c <= hi && lo > 0.0);
        // A latency that grows is a positive cost; one that shrinks, a negative one.
        let fast = Spread::of(&[40.0, 41.0, 42.0]).unwrap();
        let slow = Spread::of(&[50.0, 52.0, 51.0]).unwrap();
        let up = compare(&fast, &slow, Better::Lower);
        assert!(up.significant && up.cost_interval_percent.unwrap()[0] > 0.0);
        let down = compare(&slow, &fast, Better::Lower);
        assert!(down.significant && down.cost_interval_percent.unwrap()[1] < 0.0);
    }

    #[test]
    fn a_control_at_zero_has_no_cost_in_percent() {
        let zero = Spread::of(&[0.0, 0.0, 0.0]).unwrap();
        let some = Spread::of(&[1.0, 2.0, 3.0]).unwrap();
        let d = compare(&zero, &some, Better::Lower);
        assert!(d.significant);
        assert_eq!((d.cost_percent, d.cost_interval_percent), (None, None));
        assert_eq!(d.interval, [1.0, 3.0]);
    }

    #[test]
    fn the_json_object_has_the_interval_and_its_coverage() {
        let s = Spread::of(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["n"], 6);
        assert_eq!(v["median"], 3.5);
        assert_eq!(v["ci95"], serde_json::json!([1.0, 6.0]));
        assert_eq!(v["coverage"], 0.96875);
        let back: Spread = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }
}
