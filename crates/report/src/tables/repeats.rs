//! The spread of repeated measurements (`--repeat N`): every headline figure of a repeated
//! result with its median, its 95 % interval for the median (and the coverage that
//! interval really has), its range and its samples' count; on a terminal under the
//! method's own tables, in the campaign report as one section over every repeated test.
//! The figures and their spreads are the results model's (`model::results::repeats`);
//! nothing is computed here but units.

use model::results::repeats::RepeatedFigure;
use model::results::RunResult;

use super::sections::REPEATS;
use crate::table::Table;

/// A figure's samples in the unit a table shows them: (unit, scale from the figure's).
pub(crate) fn shown_unit(unit: &str) -> (&str, f64) {
    match unit {
        "bit/s" => ("Mbit/s", 1e-6),
        "ratio" => ("%", 100.0),
        other => (other, 1.0),
    }
}

/// How a figure's values are written in its shown unit: a loss ratio shown in % needs more
/// places than a rate or a time.
fn writer(f: &RepeatedFigure) -> impl Fn(f64) -> String {
    let (_, k) = shown_unit(&f.unit);
    let places = if f.unit == "ratio" { 4 } else { 2 };
    move |x: f64| format!("{:.places$}", x * k)
}

/// A figure's name with the row it is of, `stream_received_bps udp`.
pub(crate) fn named(f: &RepeatedFigure) -> String {
    if f.at.is_empty() {
        f.figure.clone()
    } else {
        format!("{} {}", f.figure, f.at)
    }
}

/// One figure's row: figure, row, unit, n, median, 95 % interval, coverage, min, max.
fn row(f: &RepeatedFigure) -> Vec<String> {
    let (unit, _) = shown_unit(&f.unit);
    let v = writer(f);
    let mut out = vec![
        f.figure.clone(),
        if f.at.is_empty() {
            "-".into()
        } else {
            f.at.clone()
        },
        unit.to_owned(),
    ];
    match &f.spread {
        Some(s) => out.extend([
            s.n.to_string(),
            v(s.median),
            format!("[{}, {}]", v(s.ci95[0]), v(s.ci95[1])),
            s.coverage_label(),
            v(s.min),
            v(s.max),
        ]),
        // Fewer than two repetitions produced it: its one value, no interval.
        None => out.extend([
            f.samples.len().to_string(),
            f.samples.first().map_or("-".into(), |x| v(*x)),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ]),
    }
    out
}

/// The figures of a repeated result as rows (none for a result measured once).
pub fn rows(r: &RunResult) -> Vec<Vec<String>> {
    r.repeated
        .iter()
        .flat_map(|x| &x.figures)
        .map(row)
        .collect()
}

/// How many figures the report's findings name for a repeated test (the rest are in the
/// "Repeated measurements" section).
const IN_FINDINGS: usize = 3;

/// A repeated result in the report's findings: its first figures' medians with their
/// intervals, e.g. `over 5 runs: received 941.20 Mbit/s [930.10, 950.20] (median, 94 %
/// interval)`; `None` for a result measured once.
pub fn finding(r: &RunResult) -> Option<String> {
    let x = r.repeated.as_ref()?;
    let said: Vec<String> = x
        .figures
        .iter()
        .filter_map(|f| {
            let s = f.spread.as_ref()?;
            let (unit, _) = shown_unit(&f.unit);
            let v = writer(f);
            Some(format!(
                "{} {} [{}, {}] {unit}",
                named(f),
                v(s.median),
                v(s.ci95[0]),
                v(s.ci95[1])
            ))
        })
        .collect();
    let first = x.figures.iter().find_map(|f| f.spread.as_ref())?;
    let more = if said.len() > IN_FINDINGS {
        format!(
            ", {} more in Repeated measurements",
            said.len() - IN_FINDINGS
        )
    } else {
        String::new()
    };
    Some(format!(
        "over {} runs, medians [{} interval]: {}{more}",
        x.n,
        first.coverage_label(),
        said.into_iter()
            .take(IN_FINDINGS)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// A repeated result's figures for a terminal, under the method's tables (which show the
/// repetition named here); `None` for a result measured once.
pub fn text(r: &RunResult) -> Option<String> {
    let x = r.repeated.as_ref()?;
    let cols = REPEATS.columns.split_once('|').map_or("", |(_, rest)| rest);
    Some(format!(
        "\nRepeated {} times; the tables above show run {}, whose first figure is the median. Each figure across the runs, its median with the order-statistic interval for the median:\n{}",
        x.n,
        x.shown,
        Table::plain(cols, rows(r)).text()
    ))
}

/// The campaign report's section: every repeated test's figures, led by the test.
pub fn report(c: &model::results::campaign::Campaign) -> Option<Table> {
    REPEATS.table(super::sourced(c, rows))
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::figures::figures;
    use model::results::repeats::combine;
    use model::results::{Environment, Summary};

    fn run(received: f64) -> RunResult {
        let mut r = RunResult::new(
            "client",
            serde_json::Value::Null,
            String::new(),
            Environment::default(),
        );
        r.summary = Some(Summary {
            received_bps: Some(received),
            loss_ratio: Some(0.001),
            ..Summary::default()
        });
        r
    }

    #[test]
    fn each_figure_shows_its_median_interval_and_coverage() {
        let r = combine(
            (1..=5).map(|i| run(f64::from(i) * 100e6)).collect(),
            &figures,
        );
        let t = text(&r).unwrap();
        assert!(t.contains("Repeated 5 times"), "{t}");
        assert!(t.contains("run 3, whose first figure is the median"), "{t}");
        let rx = rows(&r).remove(0);
        assert_eq!(
            rx,
            [
                "received_bps",
                "-",
                "Mbit/s",
                "5",
                "300.00",
                "[100.00, 500.00]",
                "93.75 %",
                "100.00",
                "500.00"
            ]
        );
        let loss = rows(&r).remove(1);
        assert_eq!((loss[2].as_str(), loss[4].as_str()), ("%", "0.1000"));
    }

    #[test]
    fn a_result_measured_once_has_no_repeats_table() {
        assert_eq!(text(&run(1.0)), None);
        assert!(rows(&run(1.0)).is_empty());
    }
}
