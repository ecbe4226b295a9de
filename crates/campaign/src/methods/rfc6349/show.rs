//! An `rfc6349` result shown: the terminal's page (the path, the plan, the TCP test's
//! rows and summary, the three metrics), and its section, chart and findings in the
//! campaign report.

use model::results::RunResult;
use model::units::{bps, Fixed};
use report::table::{columns, Table};

use super::result::{part, PathFigures, Rfc6349Result, Source, WindowFrom};

/// The report's section: (name, title, columns).
#[rustfmt::skip]
const SECTION: (&str, &str, &str) = (
    "rfc6349",
    "TCP throughput (RFC 6349)",
    "source|path MTU>|baseline RTT ms>|bottleneck Mbit/s>|BDP bytes>|connections>|window bytes>|ideal Mbit/s>|TCP Mbit/s>|TTR>|efficiency %>|buffer delay %>",
);

fn how(s: Source) -> &'static str {
    match s {
        Source::Measured => "measured",
        Source::Given => "given",
        Source::TcpInfo => "from TCP_INFO",
    }
}

/// How each path figure was found, in words.
fn path_lines(p: &PathFigures) -> Vec<(String, String)> {
    let mtu = match (&p.mtu_search, p.mtu_from) {
        (Some(s), _) => format!(
            "{} bytes (RFC 4821 search: {} from the route's {} bytes)",
            p.mtu,
            model::units::counted(u64::from(s.probes), "probe"),
            s.interface_mtu
        ),
        (None, f) => format!("{} bytes ({})", p.mtu, how(f)),
    };
    let rtt = match p.rtt_echoes {
        Some((sent, answered)) => format!(
            "{:.3} ms (least of {answered} echoes answered of {sent}, path idle)",
            p.baseline_rtt_us / 1e3
        ),
        None => format!("{:.3} ms ({})", p.baseline_rtt_us / 1e3, how(p.rtt_from)),
    };
    let bb = if p.trains_bps.is_empty() {
        format!("{} ({})", bps(p.bottleneck_bps), how(p.bottleneck_from))
    } else {
        let lo = p.trains_bps.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = p.trains_bps.iter().copied().fold(0.0, f64::max);
        format!(
            "{} (median of {} trains' dispersion, {} to {}; Ethernet framing)",
            bps(p.bottleneck_bps),
            p.trains_bps.len(),
            bps(lo),
            bps(hi)
        )
    };
    vec![
        ("path MTU".into(), mtu),
        ("baseline RTT".into(), rtt),
        ("bottleneck bandwidth".into(), bb),
    ]
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

/// The terminal's page.
pub(super) fn text(r: &RunResult, unit: Option<Fixed>) -> String {
    let Some(p) = part(r) else {
        return report::text::client_summary_in(r, unit);
    };
    let mut rows = path_lines(&p.path);
    let window = match p.window_from {
        WindowFrom::Auto => "not set: the kernel's autotuning".to_owned(),
        WindowFrom::Bdp => format!("{} bytes each (bdp)", p.plan.window_bytes),
        WindowFrom::Given => format!("{} bytes each (given)", p.plan.window_bytes),
    };
    let window = match p.advertised_window {
        Some(w) => format!("{window}; the receiver advertised up to {w}"),
        None => window,
    };
    rows.push((
        "BDP".into(),
        format!(
            "{} bytes; {} connection(s), window {window}",
            p.plan.bdp_bytes, p.plan.connections
        ),
    ));
    rows.push((
        "ideal TCP throughput".into(),
        format!("{} (MSS {} bytes, §4.1.1)", bps(p.ideal_bps), p.mss),
    ));
    let head = Table::plain(
        "RFC 6349|",
        rows.into_iter().map(|(k, v)| vec![k, v]).collect(),
    );
    let mut out = head.text();
    out.push('\n');
    out.push_str(&report::text::client_summary_in(r, unit));
    out.push('\n');
    let metrics = Table::plain(
        "metric|value>|",
        vec![
            vec![
                "TCP throughput".into(),
                bps(p.throughput_bps),
                format!("ideal {}", bps(p.ideal_bps)),
            ],
            vec![
                "transfer time ratio".into(),
                opt(p.transfer_time_ratio, |v| format!("{v:.3}")),
                "actual / ideal (§4.1; 1.0 is ideal)".into(),
            ],
            vec![
                "TCP efficiency".into(),
                opt(p.tcp_efficiency_pct, |v| format!("{v:.3} %")),
                "bytes not retransmitted / bytes sent (§4.2)".into(),
            ],
            vec![
                "buffer delay".into(),
                opt(p.buffer_delay_pct, |v| format!("{v:.1} %")),
                p.rtt_during_us.map_or_else(String::new, |(m, n)| {
                    format!(
                        "mean RTT {:.3} ms over {n} samples against {:.3} ms (§4.3)",
                        m / 1e3,
                        p.path.baseline_rtt_us / 1e3
                    )
                }),
            ],
        ],
    );
    out.push_str(&metrics.text());
    for n in &p.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// One row of the report's section.
fn row(id: &str, p: &Rfc6349Result) -> Vec<String> {
    let f = |v: Option<f64>, d: usize| opt(v, |x| format!("{x:.d$}"));
    vec![
        id.to_owned(),
        p.path.mtu.to_string(),
        format!("{:.3}", p.path.baseline_rtt_us / 1e3),
        format!("{:.2}", p.path.bottleneck_bps / 1e6),
        p.plan.bdp_bytes.to_string(),
        p.plan.connections.to_string(),
        match p.window_from {
            WindowFrom::Auto => "auto".into(),
            _ => p.plan.window_bytes.to_string(),
        },
        format!("{:.2}", p.ideal_bps / 1e6),
        format!("{:.2}", p.throughput_bps / 1e6),
        f(p.transfer_time_ratio, 3),
        f(p.tcp_efficiency_pct, 3),
        f(p.buffer_delay_pct, 1),
    ]
}

/// The report's section over `tests`.
pub(super) fn tables(tests: &[(&str, &RunResult)]) -> Vec<Table> {
    let rows: Vec<Vec<String>> = tests
        .iter()
        .filter_map(|(id, r)| Some(row(id, &part(r)?)))
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let (name, title, spec) = SECTION;
    vec![Table {
        name,
        title,
        intro: "The path (MTU by an RFC 4821 search, the least RTT of idle echoes, the \
                bottleneck from packet trains' dispersion, or as given), the window the BDP \
                asks for, and the TCP test's transfer time ratio (actual / ideal), \
                efficiency (bytes not retransmitted) and buffer delay (RTT during the test \
                over the baseline)."
            .into(),
        headers: columns(spec),
        rows,
    }]
}

/// The RTT during the test against the baseline, over time.
pub(super) fn charts(id: &str, r: &RunResult) -> Vec<report::campaign::Chart> {
    let Some(p) = part(r) else { return Vec::new() };
    let during: Vec<(f64, f64)> = r
        .intervals
        .iter()
        .filter(|row| row.direction == "tx")
        .filter_map(|row| row.tcp.map(|t| (row.end_s, t.rtt_us as f64 / 1e3)))
        .collect();
    if during.is_empty() {
        return Vec::new();
    }
    let end = during.iter().map(|d| d.0).fold(0.0, f64::max);
    let base = p.path.baseline_rtt_us / 1e3;
    let svg = report::svg::lines(
        "RTT during the TCP test",
        "s",
        ("ms", report::svg::Scale::Linear),
        &[
            ("smoothed RTT".into(), during),
            ("baseline RTT".into(), vec![(0.0, base), (end, base)]),
        ],
    );
    vec![report::campaign::Chart {
        section: Some(SECTION.0),
        caption: format!("{id}: RTT during the TCP test against the baseline (buffer delay)"),
        svg,
    }]
}

/// The report's findings of one test.
pub(super) fn findings(r: &RunResult) -> Vec<String> {
    let Some(p) = part(r) else { return Vec::new() };
    let mut out = vec![format!(
        "TCP {} of an ideal {}",
        bps(p.throughput_bps),
        bps(p.ideal_bps)
    )];
    out.extend(
        p.transfer_time_ratio
            .map(|v| format!("transfer time ratio {v:.2}")),
    );
    out.extend(
        p.tcp_efficiency_pct
            .map(|v| format!("TCP efficiency {v:.2} %")),
    );
    out.extend(p.buffer_delay_pct.map(|v| format!("buffer delay {v:.0} %")));
    out
}
