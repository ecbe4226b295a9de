//! The campaign report from a checked-in results file: the schema test (a document of
//! each schema version loads) and snapshot tests (Markdown, every CSV and every SVG chart
//! are the exact bytes stored under tests/data/snapshots). After an intended change,
//! regenerate with `WIREBENCH_UPDATE_SNAPSHOTS=1 cargo test -p wirebench-report` and
//! review the diff.

use std::path::PathBuf;

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

fn fixture() -> model::results::campaign::Campaign {
    let text = std::fs::read_to_string(data("campaign-v1.json")).expect("fixture");
    report::campaign::load(&text).expect("campaign/1 loads")
}

fn snapshot(name: &str, actual: &str) {
    let path = data("snapshots").join(name);
    if std::env::var_os("WIREBENCH_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (WIREBENCH_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .map_or("at the end".to_owned(), |l| format!("at line {}", l + 1));
        panic!("{name} differs from its snapshot {line}");
    }
}

/// The CSV tables of the fixture, in report order.
#[rustfmt::skip]
const TABLES: [&str; 10] = ["tests", "throughput", "sweep", "rfc2544_throughput", "latency", "loss", "overhead", "frer_paths", "compliance", "interfaces"];

/// The charts of the fixture, in report order.
#[rustfmt::skip]
const CHARTS: [&str; 9] = ["FRER per-path loss", "t3: throughput against offered load", "t3: loss against offered load", "t5: frame loss rate", "t5: latency by frame size", "t5: latency CDF", "t9: latency by frame size", "t9: latency CDF", "t10: FRER overhead"];

#[test]
fn every_schema_version_loads() {
    let c = fixture();
    assert_eq!(c.schema, "wirebench.campaign/1");
    assert_eq!(c.tests.len(), 10);
    assert!(c.tests.iter().all(|t| t.result.is_some()));
    // Refused: other schemas, other documents, garbage.
    for (text, want) in [
        (
            r#"{"schema":"wirebench.campaign/9"}"#,
            "not one this version reads",
        ),
        (
            r#"{"schema":"wirebench.result/1"}"#,
            "not one this version reads",
        ),
        (r#"{"tests":[]}"#, "no schema"),
        ("{", "not JSON"),
    ] {
        let e = report::campaign::load(text).unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
}

#[test]
fn markdown_is_stable_and_has_every_section() {
    let md = report::campaign::markdown(&fixture());
    for section in [
        "## Summary of key findings",
        "## Tests and methods",
        "## Throughput",
        "## Zero-loss sweep",
        "## Throughput by frame size (RFC 2544)",
        "## Latency by frame size",
        "## Loss against offered load",
        "## Overhead against a control group (FRER)",
        "## FRER per path",
        "## Standards and threshold compliance",
        "## Test environment",
        "## Test details",
    ] {
        assert!(md.contains(section), "{section} missing");
    }
    assert!(
        md.contains("| plan | loss of UDP 20 kpps (t7) | FAIL |"),
        "a failed threshold shows"
    );
    assert!(md.contains("1 of 8 thresholds FAILED"));
    // A generator-limited result is marked as such, exactly when the results say so.
    let capped = fixture()
        .tests
        .iter()
        .filter_map(|t| t.result.as_ref()?.rfc2544.as_ref())
        .any(|x| x.throughput.iter().any(|r| r.generator_cap_fps.is_some()));
    assert_eq!(md.contains("generator limited at"), capped);
    snapshot("report.md", &md);
}

#[test]
fn csv_tables_are_stable() {
    let tables = report::campaign::csv_tables(&fixture());
    let names: Vec<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, TABLES);
    for (name, csv) in &tables {
        // Every row has as many fields as the header (quoted commas do not split).
        let width = |line: &str| {
            let mut n = 1;
            let mut quoted = false;
            for ch in line.chars() {
                match ch {
                    '"' => quoted = !quoted,
                    ',' if !quoted => n += 1,
                    _ => {}
                }
            }
            n
        };
        let mut lines = csv.lines();
        let w = width(lines.next().unwrap());
        assert!(lines.all(|l| width(l) == w), "{name}.csv has ragged rows");
        snapshot(&format!("{name}.csv"), csv);
    }
}

#[test]
fn svg_charts_are_stable() {
    let charts = report::campaign::charts(&fixture());
    let titles: Vec<&str> = charts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(titles, CHARTS);
    for (i, (_, svg)) in charts.iter().enumerate() {
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        snapshot(&format!("chart-{}.svg", i + 1), svg);
    }
    // The HTML report is one file: no script, nothing fetched.
    let html = report::campaign::html(&fixture());
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    assert_eq!(html.matches("<svg").count(), charts.len());
}

#[test]
fn compare_puts_two_runs_side_by_side() {
    let a = fixture();
    let mut b = fixture();
    // B received half of A's TCP throughput and saw twice its ping-pong latency.
    let s = b.tests[0]
        .result
        .as_mut()
        .unwrap()
        .summary
        .as_mut()
        .unwrap();
    let tcp = s.received_bps.unwrap();
    s.received_bps = Some(tcp / 2.0);
    let lat = b.tests[3]
        .result
        .as_mut()
        .unwrap()
        .latency
        .as_mut()
        .unwrap();
    lat[0].rtt_us.p50 *= 2.0;
    let rows = report::campaign::compare_rows(&a, &b);
    let row = |test: &str, figure: &str| {
        rows.iter()
            .find(|r| r[0] == test && r[1] == figure)
            .unwrap_or_else(|| panic!("{test} / {figure} missing"))
            .clone()
    };
    let r = row(&a.tests[0].name, "received");
    assert_eq!((r[2].as_str(), r[6].as_str()), ("Mbit/s", "+50.0"), "{r:?}");
    let r = row(&a.tests[3].name, "64 B round trip p50");
    assert_eq!(r[6], "+100.0", "{r:?}");
    // What did not change costs nothing.
    let r = row(&a.tests[2].name, "highest zero-loss rate");
    assert_eq!((r[5].as_str(), r[6].as_str()), ("+0.00", "+0.0"));
    // A single command's -J document compares too.
    let one = serde_json::to_string(a.tests[0].result.as_ref().unwrap()).unwrap();
    let c = report::campaign::load_any(&one).unwrap();
    assert_eq!(c.tests.len(), 1);
    let md = report::campaign::compare_markdown(&c, &c, "a.json", "a.json");
    assert!(md.contains("| client | received | Mbit/s |"), "{md}");
}
