//! Unit tests of `gen`'s document from a trial's report, and of what `gen` through a
//! server's port and `frer analyze` refuse before opening anything.

use model::stats::Counters;
use model::units::FrameRate;

use super::*;

fn gen_req(port: &str, rx: Option<&str>, threads: usize) -> GenRequest {
    GenRequest {
        port: port.into(),
        rx: rx.map(str::to_owned),
        size: 64,
        rate: FrameRate::Pps(1000.0),
        count: None,
        time: Duration::from_secs(1),
        frame: Default::default(),
        interval: None,
        threads,
        agents: Default::default(),
    }
}

/// A report of `sent` frames of which `received` came back, at `offered` frames/s.
fn report(sent: u64, received: u64, offered: f64, limited: bool) -> engine::raw::RawTrialReport {
    engine::raw::RawTrialReport {
        counters: Counters {
            received,
            ..Counters::default()
        }
        .settle(sent),
        offered_pps: offered,
        generator_limited: limited,
        behind_ratio: if limited { 0.5 } else { 0.0 },
        elapsed: Duration::from_secs(1),
        ..Default::default()
    }
}

#[test]
fn gen_counts_what_came_back_only_with_a_receiving_port() {
    let req = gen_req("eth0", Some("eth1"), 1);
    let line = LineRate(1_000_000_000);
    let r = report(1000, 990, 1000.0, false);
    let doc = gen_doc(
        &req,
        serde_json::json!({}),
        &r,
        1000.0,
        line,
        "x".into(),
        true,
    );
    let g = doc.gen.as_ref().expect("a gen table");
    assert_eq!(
        (g.sent, g.target_pps, g.achieved_pps),
        (1000, 1000.0, 1000.0)
    );
    let rx = g.rx.as_ref().expect("what came back");
    assert_eq!((rx.received, rx.lost), (990, 10));
    assert!(doc.notes.is_empty(), "{:?}", doc.notes);
    let doc = gen_doc(
        &req,
        serde_json::json!({}),
        &r,
        1000.0,
        line,
        "x".into(),
        false,
    );
    assert!(doc.gen.as_ref().is_some_and(|g| g.rx.is_none()));
}

#[test]
fn a_generator_that_fell_behind_is_marked_and_noted() {
    let req = gen_req("eth0", None, 1);
    let r = report(500, 0, 500.0, true);
    let line = LineRate(1_000_000_000);
    let doc = gen_doc(
        &req,
        serde_json::json!({}),
        &r,
        1000.0,
        line,
        "x".into(),
        false,
    );
    assert!(doc.gen.as_ref().is_some_and(|g| g.generator_limited));
    assert_eq!(
        doc.notes,
        ["generator limited: asked 1000 frames/s, offered 500 (50.0 % behind its schedule); the figures measure the tool, not the network"]
    );
}

#[test]
fn gen_through_a_servers_port_needs_a_receiver_and_one_thread() {
    let stop = Stop::new();
    let refused = |req: &GenRequest| match gen(req, &stop) {
        Err(Error::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(refused(&gen_req("h1/eth0", None, 1)).starts_with("gen at a server's port"));
    assert!(refused(&gen_req("h1/eth0", Some("h2/eth0"), 2))
        .starts_with("--threads with a server's port"));
}

#[test]
fn analyze_refuses_a_time_out_of_range_and_more_than_eight_paths() {
    let req = |time: f64, paths: usize| AnalyzeRequest {
        ports: (0..paths).map(|i| format!("eth{i}")).collect(),
        lab: "lab".into(),
        time,
        backend: FrameBackend::Auto,
    };
    let stop = Stop::new();
    let refused = |r: AnalyzeRequest| match analyze(&r, &mut crate::Quiet, &stop) {
        Err(Error::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(refused(req(0.0, 2)), "-t 0: give 0 < seconds <= 3600");
    assert_eq!(refused(req(3601.0, 2)), "-t 3601: give 0 < seconds <= 3600");
    assert_eq!(refused(req(1.0, 9)), "at most 8 paths (--rx)");
}
