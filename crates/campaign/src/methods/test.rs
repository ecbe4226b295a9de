//! The registry's promises: a new method is its module and one line in a list, and every
//! registered method can be checked by thresholds and compared.

use model::results::campaign::{Campaign, TestEntry, TestStatus};
use model::results::figures::{Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;
use serde_json::json;

use super::*;
use crate::plan::{Commands, Plan};
use crate::verdicts::{evaluate, Outcome};
use crate::{Error, Watch};

// ---- A toy method: everything it needs is in this block and the list below. ----

/// A method that "measures" the speed it was asked for.
struct Toy;

/// The toy's one figure.
const TOY_SPEED: Named = Named {
    name: "toy_speed_bps",
    label: "speed",
    unit: Unit::BitsPerSec,
    higher_is_better: true,
};

const TOY_THRESHOLDS: [ThresholdMetric; 1] = [shared::named(TOY_SPEED)];

#[derive(Debug, Clone, PartialEq)]
struct ToyRequest {
    host: String,
    speed_bps: f64,
}

impl Method for Toy {
    type Request = ToyRequest;

    fn kind(&self) -> &'static str {
        "toy"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &ToyRequest,
        watch: &mut dyn Watch,
        _stop: &Stop,
    ) -> Result<RunResult, Error> {
        watch.progress(&format!("toy toward {}", req.host));
        let mut r = RunResult::new(
            "toy",
            json!({ "host": req.host }),
            "t0".into(),
            Default::default(),
        );
        r.notes.push(format!("speed {}", req.speed_bps));
        Ok(r)
    }

    fn text(&self, _req: &ToyRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        r.notes.join("\n")
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &TOY_THRESHOLDS
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        let speed = r
            .notes
            .iter()
            .find_map(|n| n.strip_prefix("speed ")?.parse().ok());
        speed.map(|v| TOY_SPEED.at("", v)).into_iter().collect()
    }
}

/// The standard methods and the toy: the one line that registers it.
fn with_toy() -> Methods {
    let mut list: Vec<&'static dyn Registered> = ALL.to_vec();
    list.push(&Toy);
    Methods::new(Vec::leak(list))
}

// ---- What the rest of the program does with it, through the registry alone. ----

/// A plan's parser that knows the toy's flags (`toy HOST -p N --speed RATE`).
struct ToyCommands;

impl Commands for ToyCommands {
    fn test(&self, argv: &[String]) -> Result<TestRequest, String> {
        if argv.get(1).map(String::as_str) != Some("toy") {
            return Err(format!("not a toy: {argv:?}"));
        }
        let host = argv.get(2).cloned().ok_or("no host")?;
        let speed = argv
            .iter()
            .position(|a| a == "--speed")
            .and_then(|i| argv.get(i + 1))
            .ok_or("no --speed")?;
        let speed_bps = model::units::rate_bps(speed).map_err(|e| e.to_string())?;
        Ok(TestRequest::new(&Toy, ToyRequest { host, speed_bps }))
    }

    fn lab(&self, _: &str, _: &[String]) -> Result<lab::topology::Request, String> {
        Err("no labs".into())
    }

    fn methods(&self) -> Methods {
        with_toy()
    }
}

/// The same parser with the standard methods only.
struct Standard;

impl Commands for Standard {
    fn test(&self, argv: &[String]) -> Result<TestRequest, String> {
        ToyCommands.test(argv)
    }

    fn lab(&self, _: &str, _: &[String]) -> Result<lab::topology::Request, String> {
        Err("no labs".into())
    }
}

const TOY_PLAN: &str = r#"
[target]
host = "198.18.0.1"

[[test]]
name = "fast toy"
kind = "toy"
args = "--speed 800M"

[[test]]
name = "slow toy"
kind = "toy"
args = "--speed 300M"

[[threshold]]
metric = "toy_speed_bps"
min = "500M"
"#;

fn entry(id: &str, name: &str, kind: &str, r: RunResult) -> TestEntry {
    TestEntry {
        id: id.into(),
        name: name.into(),
        kind: kind.into(),
        command: format!("wirebench {kind}"),
        node: String::new(),
        status: TestStatus::Done,
        error: None,
        duration_s: 1.0,
        result: Some(r),
        frer_paths: vec![],
    }
}

fn campaign(tests: Vec<TestEntry>) -> Campaign {
    Campaign {
        schema: model::results::campaign::SCHEMA.into(),
        title: "t".into(),
        description: None,
        metadata: Default::default(),
        target: String::new(),
        plan_file: String::new(),
        started_at: String::new(),
        finished_at: None,
        environment: Default::default(),
        interfaces: vec![],
        tests,
        verdicts: vec![],
        stopped: None,
    }
}

/// A method registered on one line is a plan kind with its command line against the
/// target, runs through the jobs, is checked by its thresholds and shows in a comparison.
#[test]
fn a_toy_method_needs_only_its_module_and_one_line() {
    let plan = Plan::parse(TOY_PLAN, &ToyCommands).expect("the toy plan parses");
    assert_eq!(plan.tests.len(), 2);
    let t = &plan.tests[0];
    assert_eq!(t.kind.name(), "toy");
    assert!(t.kind.needs_server(&t.args));
    let ctx = crate::target::Context::stand_in(&plan.target);
    let argv = t.argv(&ctx);
    assert_eq!(argv[..3], ["wirebench", "toy", "198.18.0.1"], "{argv:?}");
    assert!(
        argv.ends_with(&["--speed".into(), "800M".into(), "-J".into()]),
        "{argv:?}"
    );

    // The standard list does not know it.
    let e = Plan::parse(TOY_PLAN, &Standard).unwrap_err();
    assert!(e.contains("unknown kind 'toy'"), "{e}");

    let stop = Stop::new();
    let mut results = Vec::new();
    for t in &plan.tests {
        let req = ToyCommands.test(&t.argv(&ctx)).expect("request");
        assert_eq!(req.kind(), "toy");
        let r = crate::methods::run(&req, &mut crate::Quiet, &stop).expect("the toy runs");
        results.push(r);
    }
    let outcomes: Vec<Outcome<'_>> = plan
        .tests
        .iter()
        .zip(&results)
        .enumerate()
        .map(|(i, (t, r))| Outcome {
            id: ["t1", "t2"][i],
            name: &t.name,
            kind: t.kind.name(),
            result: Some(r),
        })
        .collect();
    let v = evaluate(&plan.thresholds, &outcomes);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].passed && v[0].name.contains("fast toy"), "{v:?}");
    assert!(!v[1].passed && v[1].detail.contains("300"), "{v:?}");

    // A comparison of the two runs shows the toy's figure with its label and unit.
    let a = campaign(vec![entry("t1", "toy", "toy", results[0].clone())]);
    let b = campaign(vec![entry("t1", "toy", "toy", results[1].clone())]);
    let methods = with_toy();
    let rows = report::campaign::compare_rows_with(&a, &b, &|r| methods.figures(r));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][1..4], ["speed", "Mbit/s", "800.00"], "{rows:?}");
    // Without the toy registered, nothing knows its figure.
    assert!(report::campaign::compare_rows_with(&a, &b, &figures).is_empty());
}

/// One result of each standard method, as small as its figures allow.
fn samples() -> Vec<RunResult> {
    let fixture = include_str!("../../../../tests/data/campaign-v1.json");
    let c: Campaign = serde_json::from_str(fixture).expect("the campaign fixture");
    let mut out: Vec<RunResult> = Vec::new();
    for t in c.tests {
        if let Some(r) = t.result {
            if !out.iter().any(|o| o.command == r.command) {
                out.push(r);
            }
        }
    }
    let new = |command: &str| RunResult::new(command, json!({}), String::new(), Default::default());
    fn parse<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).expect("sample part")
    }
    let block = json!([{ "block_bytes": 1024, "tx_mbyte_s": 100.0, "rx_mbyte_s": 90.0,
        "duration_s": 1.0 }]);
    let mut r = new("blocksize");
    r.blocksize = Some(parse(block.clone()));
    out.push(r);
    let mut r = new("nicmatrix");
    r.nic_matrix = Some(parse(
        json!({ "interfaces": [], "units": "si", "cells": [{ "label": "mtu 1500",
        "rows": block }] }),
    ));
    out.push(r);
    let mut r = new("mesh");
    r.mesh = Some(parse(
        json!({ "hosts": [], "protocol": "udp", "test_s": 1.0,
        "parallel": 1, "cells": [{ "from": "a", "to": "b", "duration_s": 1.0,
        "summary": { "duration_s": 1.0, "generator_limited": false, "received_bps": 9.0e8, "loss_ratio": 0.001 } }] }),
    ));
    out.push(r);
    let mut r = new("streams");
    r.profile = Some(parse(
        json!({ "line_rate_bps": 1000000000u64, "total_sent": 10,
        "total_received": 10, "total_received_l2_bps": 1.0e6, "rows": [{ "name": "voice",
        "source": "a", "destination": "b", "protocol": "udp", "frame": "128",
        "mean_frame_len": 128.0, "load_percent": 1.0, "target_fps": 10.0, "sent": 10,
        "received": 10, "lost": 0, "loss_ratio": 0.0, "duplicates": 0, "reordered": 0,
        "received_l2_bps": 1.0e6, "active_s": 1.0, "generator_limited": false }] }),
    ));
    out.push(r);
    let mut r = new("shaping");
    r.shaping = Some(parse(json!({ "sizes": [128], "bandwidths_bps": [1.0e7],
        "configured_by": "test", "cells": [{ "frame_len": 128, "bandwidth_bps": 1.0e7,
        "offered_fps": 1.0e5, "sent": 100, "received": 80, "received_l2_bps": 9.9e6,
        "passed_ratio": 0.8, "generator_limited": false }] })));
    out.push(r);
    out
}

/// Every registered method declares threshold metrics, each of them is read from its
/// results' figures, and `wirebench compare` shows at least one figure of each.
#[test]
fn every_method_has_thresholds_and_compared_figures() {
    let samples = samples();
    let mut kinds: Vec<&str> = Vec::new();
    for m in Methods::STANDARD.iter() {
        assert!(!kinds.contains(&m.kind()), "{} twice", m.kind());
        kinds.push(m.kind());
        assert!(
            !m.thresholds().is_empty(),
            "{} has no threshold metric",
            m.kind()
        );
        let r = samples
            .iter()
            .find(|r| Methods::STANDARD.find(&r.command).map(|x| x.kind()) == Some(m.kind()))
            .unwrap_or_else(|| panic!("no sample result of {}", m.kind()));
        for t in m.thresholds() {
            let metric = crate::verdicts::Metric::parse(t.name, Methods::STANDARD)
                .unwrap_or_else(|| panic!("{} is not a metric", t.name));
            assert!(metric.produced_by(m.kind()), "{}", t.name);
        }
        let checked = m.thresholds().iter().any(|t| {
            let metric = crate::verdicts::Metric::parse(t.name, Methods::STANDARD);
            metric.is_some_and(|x| !crate::verdicts::figures_of(x, r).is_empty())
        });
        assert!(
            checked,
            "no threshold of {} reads a figure of its result",
            m.kind()
        );
        let c = campaign(vec![entry("t1", m.kind(), m.kind(), r.clone())]);
        let rows = report::campaign::compare_rows_with(&c, &c, &figures);
        assert!(!rows.is_empty(), "compare shows nothing of {}", m.kind());
    }
    assert_eq!(
        Methods::STANDARD.kinds(),
        "client, sweep, blocksize, latency, rrul, mesh, rfc2544, streams, shaping, frer-compare, nicmatrix"
    );
}

/// A threshold metric's unit reads and shows its bounds as before the registry.
#[test]
fn threshold_units_read_their_bounds() {
    let m = |n| crate::verdicts::Metric::parse(n, Methods::STANDARD).expect(n);
    assert_eq!(m("received_bps").value("500M"), Ok(5e8));
    assert!(m("latency_p999").value("300").is_err());
    assert_eq!(m("loss").value("0.1%"), Ok(0.001));
    assert!(m("frer_overhead").value("x").is_err());
    assert_eq!(m("nic_rx_mbyte_s").value("110"), Ok(110.0));
    assert!(m("block_tx_mbyte_s").value("fast").is_err());
    assert!(crate::verdicts::Metric::parse("speed", Methods::STANDARD).is_none());
}
