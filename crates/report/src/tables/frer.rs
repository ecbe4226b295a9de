//! FRER (IEEE 802.1CB): the overhead against a control group (terminal and report), what
//! each path carried by the relays' counters (report), the relays' own counters (`frer
//! stats`) and what `frer analyze` saw on the paths.

use model::results::campaign::Campaign;
use model::results::frer::{FrerReport, OverheadRow};
use model::results::relay::RelayCounters;
use model::stats::paths::{PathStats, StreamPaths};
use model::stats::spread::Spread;

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

/// A figure in its unit's precision, without the unit.
fn bare(v: f64, unit: &str) -> String {
    match unit {
        "us" => format!("{v:.1}"),
        "%" => format!("{v:.3}"),
        _ => format!("{v:.2}"),
    }
}

/// A figure with its unit: `941.42 Mbit/s`, `40.1 us`, `0.020 %`.
fn num(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{} {unit}", bare(v, unit)))
}

/// A repeated figure's interval: `[905.10, 920.40]`.
fn interval(s: &Spread, unit: &str) -> String {
    format!("[{}, {}]", bare(s.ci95[0], unit), bare(s.ci95[1], unit))
}

/// What a row says about FRER's cost, for the table's overhead column and the report's
/// findings:
/// - repeated in both groups, with intervals that overlap: `no significant difference
///   (control 912.40 [905.10, 920.40] vs FRER 905.00 [880.00, 930.00] Mbit/s)`;
/// - with disjoint intervals: the cost and its interval, `+25.0 % [+14.5, +34.0]` (for a
///   row without a cost in %, such as loss: FRER minus control in the row's unit);
/// - measured once: the cost, marked `(one run each)`: not a finding.
#[must_use]
pub fn finding(x: &OverheadRow) -> String {
    let u = &x.unit;
    match (&x.control_spread, &x.frer_spread, &x.difference) {
        (Some(c), Some(f), Some(d)) if !d.significant => format!(
            "no significant difference (control {} {} vs FRER {} {} {u})",
            bare(c.median, u),
            interval(c, u),
            bare(f.median, u),
            interval(f, u)
        ),
        (_, _, Some(d)) => match (x.overhead_percent, d.cost_interval_percent, d.interval) {
            (Some(o), Some([lo, hi]), _) => format!("{o:+.1} % [{lo:+.1}, {hi:+.1}]"),
            (_, _, [lo, hi]) => format!(
                "FRER {}{} {u} [{}{}, {}{}]",
                sign(d.median),
                bare(d.median, u),
                sign(lo),
                bare(lo, u),
                sign(hi),
                bare(hi, u)
            ),
        },
        _ => x
            .overhead_percent
            .map_or_else(|| "-".into(), |o| format!("{o:+.1} % (one run each)")),
    }
}

/// `+` before a figure that is not negative (a negative one brings its own sign).
fn sign(v: f64) -> &'static str {
    if v >= 0.0 {
        "+"
    } else {
        ""
    }
}

/// The overhead table on a terminal: values with their unit, and with repetitions their
/// interval.
pub fn overhead(f: &FrerReport) -> Table {
    // Against the line rate, when one was given: `941.42 Mbit/s (94.1 %)`.
    let of_line = |v: Option<f64>, spread: Option<&Spread>, x: &OverheadRow| {
        let mut cell = match (v, x.theoretical) {
            (Some(v), Some(t)) if t > 0.0 => {
                format!("{} ({:.1} %)", num(Some(v), &x.unit), v / t * 100.0)
            }
            _ => num(v, &x.unit),
        };
        if let Some(s) = spread {
            cell.push(' ');
            cell.push_str(&interval(s, &x.unit));
        }
        cell
    };
    let row = |x: &OverheadRow| {
        // The intervals stand in the control and FRER cells beside it.
        let over = match &x.difference {
            Some(d) if !d.significant => "no significant difference".to_owned(),
            _ => finding(x),
        };
        let line = num(x.theoretical, &x.unit);
        let control = of_line(x.control, x.control_spread.as_ref(), x);
        let frer = of_line(x.frer, x.frer_spread.as_ref(), x);
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
            let with = |v: Option<f64>, s: Option<&Spread>| match s {
                Some(s) => format!("{} {}", two(v), interval(s, &row.unit)),
                None => two(v),
            };
            let mut cells = vec![row.metric.clone(), row.unit.clone()];
            cells.extend([
                two(row.theoretical),
                with(row.control, row.control_spread.as_ref()),
                with(row.frer, row.frer_spread.as_ref()),
            ]);
            cells.push(finding(row));
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

#[cfg(test)]
mod tests {
    use super::*;
    use model::stats::spread::{compare, Better};

    fn row(control: &[f64], frer: &[f64]) -> OverheadRow {
        let (c, f) = (Spread::of(control), Spread::of(frer));
        let (cv, fv) = (
            c.as_ref().map_or(control[0], |s| s.median),
            f.as_ref().map_or(frer[0], |s| s.median),
        );
        OverheadRow {
            metric: "TCP throughput".into(),
            unit: "Mbit/s".into(),
            control: Some(cv),
            frer: Some(fv),
            overhead_percent: Some((cv - fv) / cv * 100.0),
            difference: c
                .as_ref()
                .zip(f.as_ref())
                .map(|(c, f)| compare(c, f, Better::Higher)),
            control_spread: c,
            frer_spread: f,
            reason: String::new(),
            theoretical: None,
        }
    }

    /// The FRER report's failure: one sample each read -613.8 %. Repeated, a run whose
    /// groups overlap says so and prints no overhead at all.
    #[test]
    fn overlapping_groups_read_no_significant_difference_whatever_the_medians() {
        let x = row(&[100.0, 900.0, 500.0], &[700.0, 50.0, 600.0]);
        assert!(x.overhead_percent.unwrap() < -10.0, "the medians differ");
        let said = finding(&x);
        assert_eq!(
            said,
            "no significant difference (control 500.00 [100.00, 900.00] vs FRER 600.00 [50.00, 700.00] Mbit/s)"
        );
        let table = overhead(&FrerReport {
            rows: vec![x],
            ..FrerReport::default()
        })
        .text();
        assert!(table.contains("no significant difference"), "{table}");
        assert!(!table.contains("-20.0 %"), "no overhead printed:\n{table}");
        assert!(table.contains("500.00 Mbit/s [100.00, 900.00]"), "{table}");
    }

    #[test]
    fn disjoint_groups_read_the_cost_with_its_interval() {
        let x = row(&[900.0, 910.0, 920.0], &[600.0, 700.0, 650.0]);
        // 1 - 650/910 = 28.6 %; bounds 1 - 700/900 and 1 - 600/920.
        assert_eq!(finding(&x), "+28.6 % [+22.2, +34.8]");
        // Loss has no cost in %: FRER minus control in the row's unit.
        let mut loss = row(&[0.0, 0.01, 0.02], &[1.0, 1.5, 2.0]);
        loss.unit = "%".into();
        loss.overhead_percent = None;
        loss.difference = Some(compare(
            loss.control_spread.as_ref().unwrap(),
            loss.frer_spread.as_ref().unwrap(),
            Better::Lower,
        ));
        assert_eq!(finding(&loss), "FRER +1.490 % [+0.980, +2.000]");
    }

    #[test]
    fn a_single_sample_is_marked_as_such() {
        let x = row(&[900.0], &[675.0]);
        assert_eq!(finding(&x), "+25.0 % (one run each)");
        let table = overhead(&FrerReport {
            rows: vec![x],
            ..FrerReport::default()
        })
        .text();
        assert!(table.contains("+25.0 % (one run each)"), "{table}");
    }
}
