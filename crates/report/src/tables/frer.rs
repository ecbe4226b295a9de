//! FRER (IEEE 802.1CB): the overhead against a control group (terminal and report), what
//! each path carried by the relays' counters (report), the relays' own counters (`frer
//! stats`) and what `frer analyze` saw on the paths.

use model::results::campaign::Campaign;
use model::results::frer::{FrerReport, OverheadRow};
use model::results::relay::RelayCounters;
use model::stats::paths::{PathStats, StreamPaths};

use super::sections::{FRER_PATHS, OVERHEAD};
use super::{counts, sourced};
use crate::table::{opt, Table};

/// `part` in % of `whole` with one decimal, `-` when `whole` is 0.
fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

/// The overhead table on a terminal: values with their unit.
pub fn overhead(f: &FrerReport) -> Table {
    let num = |v: Option<f64>, unit: &str| match (v, unit) {
        (None, _) => "-".to_owned(),
        (Some(v), "us") => format!("{v:.1} us"),
        (Some(v), "%") => format!("{v:.3} %"),
        (Some(v), _) => format!("{v:.2} {unit}"),
    };
    // Against the line rate, when one was given: `941.42 Mbit/s (94.1 %)`.
    let of_line = |v: Option<f64>, x: &OverheadRow| match (v, x.theoretical) {
        (Some(v), Some(t)) if t > 0.0 => {
            format!("{} ({:.1} %)", num(Some(v), &x.unit), v / t * 100.0)
        }
        _ => num(v, &x.unit),
    };
    let row = |x: &OverheadRow| {
        let over = opt(x.overhead_percent, |o| format!("{o:+.1} %"));
        let line = num(x.theoretical, &x.unit);
        let [control, frer] = [x.control, x.frer].map(|v| of_line(v, x));
        vec![
            x.metric.clone(),
            line,
            control,
            frer,
            over,
            x.reason.clone(),
        ]
    };
    let rows = f.rows.iter().map(row).collect();
    Table::plain(
        "measurement|line rate>|control>|FRER>|overhead>|reason",
        rows,
    )
}

/// The report's overhead table.
pub fn overhead_report(c: &Campaign) -> Option<Table> {
    OVERHEAD.table(sourced(c, |r| {
        let rows = r.frer.iter().flat_map(|f| &f.rows);
        rows.map(|row| {
            let two = |v: Option<f64>| opt(v, |v| format!("{v:.2}"));
            let mut cells = vec![row.metric.clone(), row.unit.clone()];
            cells.extend([two(row.theoretical), two(row.control), two(row.frer)]);
            cells.push(opt(row.overhead_percent, |o| format!("{o:+.1}")));
            cells.push(row.reason.clone());
            cells
        })
        .collect()
    }))
}

/// The report's per-path table, from the relays' counters during each test.
pub fn paths_report(c: &Campaign) -> Option<Table> {
    let rows = c.tests.iter().flat_map(|t| {
        t.frer_paths.iter().map(|p| {
            let loss = p.sent.saturating_sub(p.received) as f64 / p.sent.max(1) as f64 * 100.0;
            let first = (p.passed > 0).then(|| p.first as f64 / p.passed as f64 * 100.0);
            let mut cells = vec![t.id.clone(), p.stream.clone(), p.path.clone()];
            cells.extend(counts([p.sent, p.received]));
            cells.extend([format!("{loss:.3}"), p.first.to_string()]);
            cells.push(opt(first, |f| format!("{f:.1}")));
            cells
        })
    });
    FRER_PATHS.table(rows.collect())
}

/// A relay's counters: its ports, its streams (802.1CB counter names) and the paths of
/// each elimination (empty tables are left out).
pub fn relay(c: &RelayCounters) -> (Table, Option<Table>, Option<Table>) {
    let ports = c
        .ports
        .iter()
        .map(|p| {
            let mut row = vec![p.name.clone()];
            row.extend(
                [
                    p.received,
                    p.sent,
                    p.kernel_drops,
                    p.send_errors,
                    p.link_down_events,
                ]
                .map(|n| n.to_string()),
            );
            row
        })
        .collect();
    let mut streams = Vec::new();
    let mut paths = Vec::new();
    let dash = || "-".to_owned();
    for st in &c.streams {
        if let Some(r) = &st.replication {
            let mut row = vec![
                st.name.clone(),
                "replicate".into(),
                format!("{} -> {}", r.from, r.to.join(",")),
                r.frames.to_string(),
            ];
            row.extend(std::iter::repeat_with(dash).take(5));
            row.extend([r.seq_gen_resets.to_string(), dash()]);
            streams.push(row);
        }
        if let Some(e) = &st.elimination {
            let from: Vec<&str> = e.paths.iter().map(|p| p.port.as_str()).collect();
            let r = &e.recovery;
            let off = if e.off { " (OFF)" } else { "" };
            let mut row = vec![
                st.name.clone(),
                format!("eliminate{off}"),
                format!("{} -> {}", from.join(","), e.to),
            ];
            let net_lost = r.lost.saturating_sub(r.lost_before_first);
            row.extend(
                [
                    r.passed,
                    r.discarded,
                    r.out_of_order,
                    r.rogue,
                    net_lost,
                    r.tagless,
                    r.resets,
                ]
                .map(|n| n.to_string()),
            );
            row.push(opt(e.latent_errors, |n| n.to_string()));
            streams.push(row);
            paths.extend(e.paths.iter().map(|p| {
                vec![
                    st.name.clone(),
                    p.port.clone(),
                    p.received.to_string(),
                    p.passed.to_string(),
                    pct(p.passed, r.passed),
                    p.individual_discarded.to_string(),
                ]
            }));
        }
    }
    (
        Table::plain(
            "port|received>|sent>|kernel drops>|send errors>|link down>",
            ports,
        ),
        (!streams.is_empty()).then(|| {
            Table::plain(
                "stream|function|ports|frames/passed>|discarded>|out of order>|rogue>|lost (net)>|tagless>|resets>|latent errors>",
                streams,
            )
        }),
        (!paths.is_empty()).then(|| {
            Table::plain(
                "stream|path port|received>|passed first>|share>|individual discards>",
                paths,
            )
        }),
    )
}

fn path_row(s: &StreamPaths, p: &PathStats) -> Vec<String> {
    let mut row = vec![p.path.clone()];
    row.extend(counts([p.received, p.unique, p.missing]));
    row.push(pct(p.missing, s.unique + s.lost));
    row.extend(counts([p.duplicates, p.first]));
    row.extend([pct(p.first, s.unique), p.rtagged.to_string()]);
    row
}

/// One analysed stream's paths: what each delivered, missed, duplicated, and how often it
/// was first.
pub fn analysed_paths(s: &StreamPaths) -> Table {
    let rows = s.paths.iter().map(|p| path_row(s, p)).collect();
    Table::plain(
        "path|received>|distinct>|missed>|missed %>|duplicates>|first>|first %>|R-tagged>",
        rows,
    )
}

/// `part` of `whole` in % (for the lines around the analysis tables).
pub fn share(part: u64, whole: u64) -> String {
    pct(part, whole)
}
