//! Two runs side by side (`wirebench compare`): every figure both measured, in the same
//! test, with the difference and the overhead of B against A. The figures come from the
//! one extractor of the results model.

use model::results::campaign::Campaign;
use model::results::figures::{figures, Figure, Metric, Stat};

use crate::table::{columns, opt, Table};

/// How a figure is compared: (label, unit, value in that unit, higher is better); `None`
/// for figures a comparison leaves out.
fn compared(f: &Figure) -> Option<(String, &'static str, f64, bool)> {
    let at = &f.at;
    let stat = |what: &str, q: Stat| format!("{what} {}", q.label());
    Some(match f.metric {
        Metric::ReceivedBps => ("received".into(), "Mbit/s", f.value / 1e6, true),
        Metric::Loss => ("loss".into(), "%", f.value * 100.0, false),
        Metric::Latency(q) if q != Stat::Max => (stat("latency", q), "us", f.value, false),
        Metric::ZeroLossBps => (
            "highest zero-loss rate".into(),
            "Mbit/s",
            f.value / 1e6,
            true,
        ),
        Metric::RoundTrip(q @ (Stat::P50 | Stat::P99)) => {
            (stat(&format!("{at} round trip"), q), "us", f.value, false)
        }
        Metric::ThroughputFps => (format!("{at} throughput"), "fps", f.value, true),
        Metric::FrameLatency(q @ (Stat::P50 | Stat::P999)) => {
            (stat(&format!("{at} latency"), q), "us", f.value, false)
        }
        Metric::StreamReceivedBps => (
            format!("stream {at} received"),
            "Mbit/s",
            f.value / 1e6,
            true,
        ),
        Metric::FrerValue => (
            format!("{at} (FRER)"),
            "",
            f.value,
            f.unit.as_deref() == Some("Mbit/s"),
        ),
        _ => return None,
    })
}

/// Two runs side by side: every figure both measured, in the same test (by name, else by
/// position and kind), with the difference and the overhead of B against A (positive: B is
/// worse: less throughput, more loss or latency). Rows: test, figure, unit, A, B, B − A,
/// overhead %.
pub fn compare_rows(a: &Campaign, b: &Campaign) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (i, ta) in a.tests.iter().enumerate() {
        let tb = b
            .tests
            .iter()
            .find(|t| t.name == ta.name)
            .or_else(|| b.tests.get(i).filter(|t| t.kind == ta.kind));
        let (Some(ra), Some(rb)) = (ta.result.as_ref(), tb.and_then(|t| t.result.as_ref())) else {
            continue;
        };
        let fb: Vec<_> = figures(rb).iter().filter_map(compared).collect();
        for (label, unit, va, higher) in figures(ra).iter().filter_map(compared) {
            let Some((_, _, vb, _)) = fb.iter().find(|f| f.0 == label) else {
                continue;
            };
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
            ]);
        }
    }
    rows
}

/// [`compare_rows`] as a Markdown report.
pub fn compare_markdown(a: &Campaign, b: &Campaign, a_name: &str, b_name: &str) -> String {
    let t = Table {
        name: "compare",
        title: "Comparison",
        intro: String::new(),
        headers: columns("test|figure|unit|A>|B>|B - A>|overhead of B %>"),
        rows: compare_rows(a, b),
    };
    let mut s = format!(
        "# {} (A) against {} (B)\n\nA: {a_name}, {} ({})\nB: {b_name}, {} ({})\n\nOverhead of B: what B costs against A in % of A (less throughput, more loss or latency is positive).\n\n",
        a.title, b.title, a.started_at, a.target, b.started_at, b.target
    );
    if t.rows.is_empty() {
        s.push_str("No figure was measured in both runs.\n");
    } else {
        s.push_str(&t.markdown());
    }
    s
}
