//! Unit tests of thresholds: which figures a threshold reads, its bounds, and what a test
//! that did not measure it gives.

use super::*;
use model::results::{BlocksizeRow, Summary};

/// The standard metric `name`.
fn metric(name: &str) -> Metric {
    Metric::parse(name, Methods::STANDARD).expect(name)
}

/// A threshold on `name` of test `test` (every test: `None`), on line 7.
fn threshold(test: Option<&str>, name: &str, min: Option<f64>, max: Option<f64>) -> Threshold {
    Threshold {
        test: test.map(str::to_owned),
        metric: metric(name),
        metric_name: name.into(),
        min,
        max,
        line: 7,
    }
}

/// A client result that received `bps` and lost `loss` of its packets.
fn client(bps: f64, loss: f64) -> RunResult {
    let mut r = RunResult::new(
        "client",
        serde_json::json!({}),
        String::new(),
        Default::default(),
    );
    r.summary = Some(Summary {
        received_bps: Some(bps),
        loss_ratio: Some(loss),
        ..Summary::default()
    });
    r
}

/// A block-size result with one row per `(block, tx MByte/s)`.
fn blocksize(rows: &[(usize, f64)]) -> RunResult {
    let mut r = RunResult::new(
        "blocksize",
        serde_json::json!({}),
        String::new(),
        Default::default(),
    );
    r.blocksize = Some(
        rows.iter()
            .map(|&(block_bytes, tx)| BlocksizeRow {
                block_bytes,
                tx_mbyte_s: tx,
                rx_mbyte_s: tx,
                duration_s: 1.0,
                client_cpu: None,
                server_cpu: None,
            })
            .collect(),
    );
    r
}

fn outcome<'a>(id: &'a str, name: &'a str, kind: &'a str, r: Option<&'a RunResult>) -> Outcome<'a> {
    Outcome {
        id,
        name,
        kind,
        result: r,
    }
}

/// (passed, detail) of each verdict.
fn judged(v: &[Verdict]) -> Vec<(bool, &str)> {
    v.iter().map(|v| (v.passed, v.detail.as_str())).collect()
}

#[test]
fn a_bound_is_met_at_its_value_and_missed_past_it() {
    let r = client(500e6, 0.001);
    let tests = [outcome("t1", "tcp", "client", Some(&r))];
    let at_min = evaluate(
        &[threshold(None, "received_bps", Some(500e6), None)],
        &tests,
    );
    let above_min = evaluate(
        &[threshold(None, "received_bps", Some(501e6), None)],
        &tests,
    );
    let at_max = evaluate(&[threshold(None, "loss", None, Some(0.001))], &tests);
    let below_max = evaluate(&[threshold(None, "loss", None, Some(0.0009))], &tests);
    assert_eq!(
        judged(&at_min),
        [(true, "measured 500.00 Mbit/s, required >= 500.00 Mbit/s")]
    );
    assert_eq!(
        judged(&above_min),
        [(false, "measured 500.00 Mbit/s, required >= 501.00 Mbit/s")]
    );
    assert_eq!(
        judged(&at_max),
        [(true, "measured 0.1000 %, required <= 0.1000 %")]
    );
    assert_eq!(
        judged(&below_max),
        [(false, "measured 0.1000 %, required <= 0.0900 %")]
    );
}

#[test]
fn a_range_holds_only_between_its_bounds() {
    let range = [threshold(None, "received_bps", Some(100e6), Some(200e6))];
    let verdict = |bps: f64| {
        let r = client(bps, 0.0);
        let v = evaluate(&range, &[outcome("t1", "tcp", "client", Some(&r))]);
        assert_eq!(v.len(), 1, "{v:?}");
        (v[0].passed, v[0].detail.clone())
    };
    assert_eq!(
        verdict(150e6),
        (
            true,
            "measured 150.00 Mbit/s, required 100.00 Mbit/s .. 200.00 Mbit/s".into()
        )
    );
    assert!(!verdict(99e6).0, "below the range");
    assert!(!verdict(201e6).0, "above the range");
}

#[test]
fn each_size_of_a_test_is_its_own_verdict() {
    let r = blocksize(&[(1024, 120.0), (65536, 80.0)]);
    let v = evaluate(
        &[threshold(Some("bs"), "block_tx_mbyte_s", Some(100.0), None)],
        &[outcome("t3", "bs", "blocksize", Some(&r))],
    );
    let names: Vec<(&str, bool)> = v.iter().map(|v| (v.name.as_str(), v.passed)).collect();
    assert_eq!(
        names,
        [
            ("block_tx_mbyte_s at 1k of bs (t3)", true),
            ("block_tx_mbyte_s at 64k of bs (t3)", false)
        ]
    );
}

#[test]
fn a_threshold_without_a_test_checks_every_test_that_measured_it() {
    let (fast, slow) = (client(900e6, 0.0), client(100e6, 0.0));
    let bs = blocksize(&[(1024, 1.0)]);
    let v = evaluate(
        &[threshold(None, "received_bps", Some(500e6), None)],
        &[
            outcome("t1", "fast", "client", Some(&fast)),
            // A kind that has no such figure is not judged by it.
            outcome("t2", "bs", "blocksize", Some(&bs)),
            outcome("t3", "slow", "client", Some(&slow)),
        ],
    );
    let names: Vec<(&str, bool)> = v.iter().map(|v| (v.name.as_str(), v.passed)).collect();
    assert_eq!(
        names,
        [
            ("received_bps of fast (t1)", true),
            ("received_bps of slow (t3)", false)
        ]
    );
}

#[test]
fn a_test_that_should_have_measured_it_but_did_not_fails() {
    let th = [threshold(None, "received_bps", Some(1.0), None)];
    // A client test that failed (no result) would have measured it.
    let v = evaluate(&th, &[outcome("t1", "tcp", "client", None)]);
    assert_eq!(
        judged(&v),
        [(false, "not measured (required >= 1.00 bit/s)")],
        "{v:?}"
    );
    assert_eq!(v[0].name, "received_bps of tcp (t1)");
    // A failed test of a kind that never measures it is not named; the threshold then
    // fails by its line.
    let v = evaluate(&th, &[outcome("t1", "bs", "blocksize", None)]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].name, "received_bps (line 7)");
    assert!(!v[0].passed);
    // A test named by the threshold whose result lacks the figure fails as not measured.
    let bs = blocksize(&[(1024, 1.0)]);
    let named = [threshold(Some("bs"), "received_bps", Some(1.0), None)];
    let v = evaluate(&named, &[outcome("t1", "bs", "blocksize", Some(&bs))]);
    assert_eq!(
        judged(&v),
        [(false, "not measured (required >= 1.00 bit/s)")]
    );
}

#[test]
fn a_named_threshold_judges_only_its_test() {
    let (a, b) = (client(900e6, 0.0), client(100e6, 0.0));
    let v = evaluate(
        &[threshold(Some("b"), "received_bps", None, Some(500e6))],
        &[
            outcome("t1", "a", "client", Some(&a)),
            outcome("t2", "b", "client", Some(&b)),
        ],
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].name.as_str(), v[0].passed),
        ("received_bps of b (t2)", true)
    );
}

#[test]
fn a_metric_is_produced_only_by_the_methods_that_declare_it() {
    assert!(metric("received_bps").produced_by("client"));
    assert!(!metric("received_bps").produced_by("blocksize"));
    assert!(metric("block_tx_mbyte_s").produced_by("blocksize"));
    assert!(!metric("received_bps").produced_by("no-such-kind"));
}
