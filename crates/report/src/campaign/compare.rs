//! Two runs side by side (`wirebench compare`): every figure both measured, in the same
//! test, with the difference and the overhead of B against A, and every fact of the
//! interfaces that differs between them (why the figures may differ). The figures come
//! from an extractor the caller gives (the campaign's methods), or from the results
//! model's shared parts.

use model::results::campaign::{Campaign, TestEntry};
use model::results::figures::{figures, Figure, Metric, Stat};
use model::results::nic::InterfaceState;
use model::results::repeats::figures_of;
use model::results::RunResult;
use model::stats::spread;

use std::fmt::Write as _;

use crate::table::{columns, md_escape, opt, Table};

/// How a figure is compared: (label, unit, the factor from the figure's unit to that
/// unit, higher is better); `None` for figures a comparison leaves out.
fn compared(f: &Figure) -> Option<(String, &'static str, f64, bool)> {
    let at = &f.at;
    let stat = |what: &str, q: Stat| format!("{what} {}", q.label());
    Some(match f.metric {
        Metric::ReceivedBps => ("received".into(), "Mbit/s", 1e-6, true),
        Metric::Loss => ("loss".into(), "%", 100.0, false),
        Metric::Latency(q) if q != Stat::Max => (stat("latency", q), "us", 1.0, false),
        Metric::ZeroLossBps => ("highest zero-loss rate".into(), "Mbit/s", 1e-6, true),
        Metric::RoundTrip(q @ (Stat::P50 | Stat::P99)) => {
            (stat(&format!("{at} round trip"), q), "us", 1.0, false)
        }
        Metric::ThroughputFps => (format!("{at} throughput"), "fps", 1.0, true),
        Metric::FrameLatency(q @ (Stat::P50 | Stat::P999)) => {
            (stat(&format!("{at} latency"), q), "us", 1.0, false)
        }
        Metric::StreamReceivedBps => (format!("stream {at} received"), "Mbit/s", 1e-6, true),
        Metric::BlockTx | Metric::NicTx => (format!("{at} Tx"), "MByte/s", 1.0, true),
        Metric::BlockRx | Metric::NicRx => (format!("{at} Rx"), "MByte/s", 1.0, true),
        Metric::FrerValue => (
            format!("{at} (FRER)"),
            "",
            1.0,
            f.unit.as_deref() == Some("Mbit/s"),
        ),
        Metric::Named(n) => {
            let (unit, k) = n.unit.compared(1.0);
            let label = format!("{at} {}", n.label).trim().to_owned();
            (label, unit, k, n.higher_is_better)
        }
        _ => return None,
    })
}

/// Whether B differs from A beyond the noise, in words: with both measured more than once
/// (`--repeat`), by the overlap of their intervals ([`spread::compare`]); a figure
/// measured once on either side is no finding.
fn finding(a: &Figure, b: &Figure, k: f64, higher: bool) -> String {
    let (Some(sa), Some(sb)) = (&a.spread, &b.spread) else {
        return spread::ONE_RUN.into();
    };
    let better = if higher {
        spread::Better::Higher
    } else {
        spread::Better::Lower
    };
    let d = spread::compare(sa, sb, better);
    let range = |s: &spread::Spread| format!("{:.2}..{:.2}", s.ci95[0] * k, s.ci95[1] * k);
    if !d.significant {
        return format!(
            "no significant difference (A {} vs B {})",
            range(sa),
            range(sb)
        );
    }
    match (d.cost_percent, d.cost_interval_percent) {
        (Some(c), Some([lo, hi])) if c >= 0.0 => format!("B costs {c:.1} % [{lo:.1}, {hi:.1}]"),
        (Some(c), Some([lo, hi])) => {
            format!("B better by {:.1} % [{:.1}, {:.1}]", -c, -hi, -lo)
        }
        _ => format!(
            "B - A {:+.2} [{:+.2}, {:+.2}]",
            d.median * k,
            d.interval[0] * k,
            d.interval[1] * k
        ),
    }
}

/// Which figures a result has: the caller's extractor.
pub type Figures<'f> = &'f dyn Fn(&RunResult) -> Vec<Figure>;

/// The tests of A with a result and the result of the same test in B (by name, else by
/// position and kind).
fn pairs<'c>(
    a: &'c Campaign,
    b: &'c Campaign,
) -> Vec<(&'c TestEntry, &'c RunResult, &'c RunResult)> {
    let mut out = Vec::new();
    for (i, ta) in a.tests.iter().enumerate() {
        let tb = b
            .tests
            .iter()
            .find(|t| t.name == ta.name)
            .or_else(|| b.tests.get(i).filter(|t| t.kind == ta.kind));
        if let (Some(ra), Some(rb)) = (ta.result.as_ref(), tb.and_then(|t| t.result.as_ref())) {
            out.push((ta, ra, rb));
        }
    }
    out
}

/// An interface's facts with its name first (`interface eth0`).
fn named_facts(i: &InterfaceState) -> Vec<(String, String)> {
    let mut f = vec![("interface".to_owned(), i.name.clone())];
    f.extend(i.facts());
    f
}

/// Every fact of the interfaces that differs between the two runs, matched by test (as
/// [`compare_rows`] matches them) and role: `test / role: fact: A -> B`, `-` where a run
/// has no such fact; an interface only one run has is said so.
pub fn interface_differences(a: &Campaign, b: &Campaign) -> Vec<String> {
    let mut out = Vec::new();
    for (t, ra, rb) in pairs(a, b) {
        for ia in &ra.interfaces {
            let head = format!("{} / {}", t.name, ia.role);
            let Some(ib) = rb.interfaces.iter().find(|i| i.role == ia.role) else {
                out.push(format!("{head}: only in A ({})", ia.name));
                continue;
            };
            let (fa, fb) = (named_facts(ia), named_facts(ib));
            let mut names: Vec<&String> = fa.iter().map(|(k, _)| k).collect();
            for (k, _) in &fb {
                if !names.contains(&k) {
                    names.push(k);
                }
            }
            let value = |f: &[(String, String)], k: &String| {
                let v = f.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
                v.unwrap_or("-").to_owned()
            };
            for k in names {
                let (va, vb) = (value(&fa, k), value(&fb, k));
                if va != vb {
                    out.push(format!("{head}: {k}: {va} -> {vb}"));
                }
            }
        }
        for ib in &rb.interfaces {
            if !ra.interfaces.iter().any(|i| i.role == ib.role) {
                out.push(format!("{} / {}: only in B ({})", t.name, ib.role, ib.name));
            }
        }
    }
    out
}

/// Two runs side by side: every figure both measured, in the same test (by name, else by
/// position and kind), with the difference and the overhead of B against A (positive: B is
/// worse: less throughput, more loss or latency). Rows: test, figure, unit, A, B, B − A,
/// overhead %, finding (whether the difference is beyond the noise: see [`finding`]). The
/// figures of the results model's shared parts.
pub fn compare_rows(a: &Campaign, b: &Campaign) -> Vec<Vec<String>> {
    compare_rows_with(a, b, &|r| figures_of(r, &figures))
}

/// [`compare_rows`] with the figures `figures` finds in each result.
pub fn compare_rows_with(a: &Campaign, b: &Campaign, figures: Figures<'_>) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (ta, ra, rb) in pairs(a, b) {
        let with = |f: Figure| compared(&f).map(|c| (c, f));
        let fb: Vec<_> = figures(rb).into_iter().filter_map(with).collect();
        for ((label, unit, k, higher), fa) in figures(ra).into_iter().filter_map(with) {
            let Some((_, fb)) = fb.iter().find(|f| f.0 .0 == label) else {
                continue;
            };
            let (va, vb) = (fa.value * k, fb.value * k);
            let over = (va != 0.0).then(|| {
                let d = if higher { va - vb } else { vb - va };
                d / va.abs() * 100.0
            });
            rows.push(vec![
                ta.name.clone(),
                label,
                unit.to_owned(),
                format!("{va:.2}"),
                format!("{vb:.2}"),
                format!("{:+.2}", vb - va),
                opt(over, |o| format!("{o:+.1}")),
                finding(&fa, fb, k, higher),
            ]);
        }
    }
    rows
}

/// [`compare_rows`] as a Markdown report.
pub fn compare_markdown(a: &Campaign, b: &Campaign, a_name: &str, b_name: &str) -> String {
    compare_markdown_with(a, b, a_name, b_name, &|r| figures_of(r, &figures))
}

/// [`compare_markdown`] with the figures `figures` finds in each result.
pub fn compare_markdown_with(
    a: &Campaign,
    b: &Campaign,
    a_name: &str,
    b_name: &str,
    figures: Figures<'_>,
) -> String {
    let t = Table {
        name: "compare",
        title: "Comparison",
        intro: String::new(),
        headers: columns("test|figure|unit|A>|B>|B - A>|overhead of B %>|finding"),
        rows: compare_rows_with(a, b, figures),
    };
    let mut s = format!(
        "# {} (A) against {} (B)\n\nA: {a_name}, {} ({})\nB: {b_name}, {} ({})\n\nOverhead of B: what B costs against A in % of A (less throughput, more loss or latency is positive). Finding: a difference is one only when both runs measured the figure more than once (--repeat) and the intervals for their medians do not overlap.\n\n",
        a.title, b.title, a.started_at, a.target, b.started_at, b.target
    );
    if t.rows.is_empty() {
        s.push_str("No figure was measured in both runs.\n");
    } else {
        s.push_str(&t.markdown());
    }
    let differ = interface_differences(a, b);
    if !differ.is_empty() {
        s.push_str("\n## Interfaces that differ\n\nWhere the interfaces of a test were not the same in A and B (test / role: fact: A -> B), the figures may differ for that reason.\n\n");
        for d in differ {
            let _ = writeln!(s, "- {}", md_escape(&d));
        }
    }
    s
}
