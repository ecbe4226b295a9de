//! The registry's promises: a new method is its module and one line in a list, and every
//! registered method can be checked by thresholds and compared.

use model::results::campaign::{Campaign, TestEntry, TestStatus};
use model::results::figures::{Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;
use serde_json::json;

use super::*;
use crate::plan::{CommandError, Commands, Plan};
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

/// The toy's own part of a result (`"toy": {...}` in the document).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct ToyResult {
    speed_bps: f64,
}

/// The toy's section of the campaign report.
#[rustfmt::skip]
const TOY_SECTION: (&str, &str, &str) = ("toy", "Toy speeds", "source|speed Mbit/s>");

#[derive(Debug, Clone, PartialEq)]
struct ToyRequest {
    host: String,
    speed_bps: f64,
    /// The n-th run of the process at 100 %, 110 %, ..., 140 % of the speed, cycling.
    wobble: bool,
}

/// Runs of a wobbling toy so far.
static WOBBLES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The toy's command line: `toy HOST [-p N] --speed RATE`.
#[derive(Debug, clap::Args)]
struct ToyArgs {
    host: String,
    #[arg(short, long)]
    port: Option<u16>,
    #[arg(long, value_parser = model::units::rate_bps)]
    speed: f64,
    #[arg(short = 'J', long)]
    json: bool,
    #[arg(long)]
    wobble: bool,
    #[command(flatten)]
    repeat: args::Repeat,
}

impl Method for Toy {
    type Request = ToyRequest;
    type Args = ToyArgs;

    fn request(&self, a: &ToyArgs) -> Result<ToyRequest, Error> {
        if a.speed <= 0.0 {
            return Err(Error::Usage("--speed must be above 0".into()));
        }
        Ok(ToyRequest {
            host: a.host.clone(),
            speed_bps: a.speed,
            wobble: a.wobble,
        })
    }

    fn json(&self, a: &ToyArgs) -> bool {
        a.json
    }

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
        let k = if req.wobble {
            WOBBLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        } else {
            0
        };
        let part = ToyResult {
            speed_bps: req.speed_bps * (1.0 + 0.1 * f64::from(k % 5)),
        };
        r.set_part("toy", &part)
            .map_err(|e| Error::Failed(e.to_string()))?;
        Ok(r)
    }

    fn text(&self, _req: &ToyRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        toy(r)
            .map(|t| format!("speed {}\n", t.speed_bps))
            .unwrap_or_default()
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &TOY_THRESHOLDS
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        toy(r)
            .map(|t| TOY_SPEED.at("", t.speed_bps))
            .into_iter()
            .collect()
    }

    fn report_tables(&self, tests: &[(&str, &RunResult)]) -> Vec<report::table::Table> {
        let rows = tests
            .iter()
            .filter_map(|(id, r)| {
                Some(vec![
                    (*id).to_owned(),
                    format!("{:.1}", toy(r)?.speed_bps / 1e6),
                ])
            })
            .collect();
        let (name, title, columns) = TOY_SECTION;
        vec![report::table::Table {
            name,
            title,
            intro: "What each toy test was asked for.".into(),
            headers: report::table::columns(columns),
            rows,
        }]
    }

    fn report_charts(&self, id: &str, r: &RunResult) -> Vec<report::campaign::Chart> {
        let Some(t) = toy(r) else { return Vec::new() };
        let svg = report::svg::bars(
            "Toy speed",
            "Mbit/s",
            &[id.to_owned()],
            &[("speed".into(), vec![Some(t.speed_bps / 1e6)])],
        );
        vec![report::campaign::Chart {
            section: Some(TOY_SECTION.0),
            caption: format!("{id}: toy speed"),
            svg,
        }]
    }

    fn findings(&self, r: &RunResult) -> Vec<String> {
        toy(r)
            .map(|t| format!("toy speed {:.0} Mbit/s", t.speed_bps / 1e6))
            .into_iter()
            .collect()
    }
}

/// The toy's part of a result.
fn toy(r: &RunResult) -> Option<ToyResult> {
    r.part("toy")?.ok()
}

/// The standard methods and the toy: the one line that registers it.
fn with_toy() -> Methods {
    let mut list: Vec<&'static dyn Registered> = ALL.to_vec();
    list.push(&Toy);
    Methods::new(Vec::leak(list))
}

// ---- What the rest of the program does with it, through the registry alone. ----

/// A command line that has the toy's command, as the binary's has a variant for each
/// method: its arguments come from the toy's own definition.
fn toy_command_line() -> clap::Command {
    use clap::Args as _;
    clap::Command::new("wirebench").subcommand(ToyArgs::augment_args(clap::Command::new("toy")))
}

/// A plan's parser that knows the toy's flags, and finds its method through the registry.
struct ToyCommands;

impl Commands for ToyCommands {
    fn test(&self, argv: &[String]) -> Result<TestRequest, CommandError> {
        let matches = toy_command_line()
            .try_get_matches_from(argv)
            .map_err(|e| CommandError::Refused(e.to_string()))?;
        match with_toy().request(&matches) {
            Some(r) => r.map_err(CommandError::from),
            None => Err(CommandError::NotATest(argv.join(" "))),
        }
    }

    fn lab(&self, _: &str, _: &[String]) -> Result<lab::topology::Request, CommandError> {
        Err(CommandError::Refused("no labs".into()))
    }

    fn methods(&self) -> Methods {
        with_toy()
    }
}

/// The same parser with the standard methods only.
struct Standard;

impl Commands for Standard {
    fn test(&self, argv: &[String]) -> Result<TestRequest, CommandError> {
        ToyCommands.test(argv)
    }

    fn lab(&self, _: &str, _: &[String]) -> Result<lab::topology::Request, CommandError> {
        Err(CommandError::Refused("no labs".into()))
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
    let e = Plan::parse(TOY_PLAN, &Standard).unwrap_err().to_string();
    assert!(e.contains("unknown kind 'toy'"), "{e}");

    let stop = Stop::new();
    let mut results = Vec::new();
    for t in &plan.tests {
        let req = ToyCommands.test(&t.argv(&ctx)).expect("request");
        assert_eq!(req.kind(), "toy");
        let r = crate::methods::run(&req, &mut crate::Quiet, &stop).expect("the toy runs");
        results.push(r);
    }
    // Its command line is its own definition, found through the registry: -J asks for
    // JSON, and its request's own checks are usage errors.
    let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let m = toy_command_line()
        .try_get_matches_from(words("wirebench toy h --speed 1M -J"))
        .expect("the toy's flags");
    let (method, args) = with_toy().matched(&m).expect("the toy's command");
    assert_eq!(method.kind(), "toy");
    assert!(method.json_from(args));
    assert!(Methods::STANDARD.matched(&m).is_none());
    let e = ToyCommands
        .test(&words("wirebench toy h --speed 0"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("above 0"), "{e}");

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

    // Its result is a member of the document under its name, and the campaign report
    // shows its own table, chart and finding, in every format.
    let doc = serde_json::to_value(&results[0]).unwrap();
    assert_eq!(doc["toy"]["speed_bps"], 8e8, "{doc}");
    let both = campaign(vec![
        entry("t1", "fast toy", "toy", results[0].clone()),
        entry("t2", "slow toy", "toy", results[1].clone()),
    ]);
    let md = report::campaign::markdown_with(&both, &methods);
    assert!(md.contains("Toy speeds"), "{md}");
    assert!(md.contains("| [t2](#t2) | 300.0 |"), "{md}");
    assert!(md.contains("toy speed 800 Mbit/s"), "{md}");
    let html = report::campaign::html_with(&both, &methods);
    assert!(
        html.contains("t1: toy speed") && html.contains("<svg"),
        "chart missing"
    );
    let csv = report::campaign::csv_tables_with(&both, &methods);
    assert!(
        csv.iter()
            .any(|(name, text)| name == "toy" && text.contains("t1,800.0")),
        "{csv:?}"
    );
    // The standard methods do not know it: the report leaves it out.
    assert!(!report::campaign::markdown(&both).contains("Toy speeds"));
}

/// `--repeat N` (or a plan test's `repeat = N`) runs any method N times through the
/// registry: the result is the median run's document with every run kept, its figures are
/// the medians with their spreads, thresholds check the medians, and a comparison of two
/// repeated results says whether they differ beyond the noise.
#[test]
fn a_repeated_method_keeps_every_run_and_each_figure_its_spread() {
    let plan = r#"
[target]
host = "198.18.0.1"

[[test]]
name = "toy"
kind = "toy"
args = "--speed 100M --wobble"
repeat = 5

[[threshold]]
metric = "toy_speed_bps"
max = "125M"
"#;
    let plan = Plan::parse(plan, &ToyCommands).expect("the plan parses");
    let ctx = crate::target::Context::stand_in(&plan.target);
    let argv = plan.tests[0].argv(&ctx);
    let req = ToyCommands.test(&argv).expect("request");
    assert_eq!(req.repeat(), 5, "{argv:?}");
    let r = crate::methods::run(&req, &mut crate::Quiet, &Stop::new()).expect("runs");
    // Five runs at 100, 110, ..., 140 Mbit/s (no other test wobbles).
    assert_eq!(r.runs.len(), 5);
    let speeds: Vec<f64> = r.runs.iter().map(|x| toy(x).unwrap().speed_bps).collect();
    let want: Vec<f64> = (0..5).map(|k| 100e6 * (1.0 + 0.1 * f64::from(k))).collect();
    assert_eq!(speeds, want);
    let rep = r.repeated.as_ref().expect("repeated");
    assert_eq!((rep.n, rep.shown), (5, 3), "the third run is the median");
    assert_eq!(toy(&r).unwrap().speed_bps, speeds[2]);
    let f = &with_toy().figures(&r)[0];
    let s = f.spread.as_ref().expect("spread");
    assert_eq!((f.value, s.ci95), (speeds[2], [speeds[0], speeds[4]]));
    assert_eq!(rep.figures[0].figure, "toy_speed_bps");
    assert_eq!(rep.figures[0].samples, speeds);
    // The threshold checks the median, not the last run or the shown one's neighbours.
    let outcome = Outcome {
        id: "t1",
        name: "toy",
        kind: "toy",
        result: Some(&r),
    };
    let v = evaluate(&plan.thresholds, &[outcome]);
    assert_eq!(
        v[0].passed,
        speeds[2] <= 125e6,
        "{v:?} against the median {}",
        speeds[2]
    );
    // Two repeated runs of the same thing: no significant difference; against a run 10x
    // faster, a difference with its interval; against a single run, no finding at all.
    let methods = with_toy();
    let again = crate::methods::run(&req, &mut crate::Quiet, &Stop::new()).expect("runs");
    let fast = ToyCommands
        .test(
            &argv
                .iter()
                .map(|a| a.replace("100M", "1G"))
                .collect::<Vec<_>>(),
        )
        .expect("request");
    let fast = crate::methods::run(&fast, &mut crate::Quiet, &Stop::new()).expect("runs");
    let at = argv.iter().position(|a| a == "--repeat").expect("--repeat");
    let mut single = argv.clone();
    single.drain(at..at + 2);
    let once = ToyCommands.test(&single).expect("request");
    assert_eq!(once.repeat(), 1);
    let once = crate::methods::run(&once, &mut crate::Quiet, &Stop::new()).expect("runs");
    assert!(once.repeated.is_none() && once.runs.is_empty());
    let finding = |b: &RunResult| {
        let a = campaign(vec![entry("t1", "toy", "toy", r.clone())]);
        let b = campaign(vec![entry("t1", "toy", "toy", b.clone())]);
        let rows = report::campaign::compare_rows_with(&a, &b, &|x| methods.figures(x));
        rows[0].last().cloned().unwrap()
    };
    let same = finding(&again);
    let far = finding(&fast);
    let single = finding(&once);
    assert_eq!(
        same,
        "no significant difference (A 100.00..140.00 vs B 100.00..140.00)"
    );
    // 1 G against 100 M, both wobbling alike: B is 900 % better, within [614, 1300].
    assert_eq!(far, "B better by 900.0 % [614.3, 1300.0]");
    assert!(single.starts_with("one run: not a finding"), "{single}");
    // The campaign report has the spread in its own section.
    let md = report::campaign::markdown_with(
        &campaign(vec![entry("t1", "toy", "toy", r.clone())]),
        &methods,
    );
    assert!(
        md.contains("Repeated measurements")
            && md.contains(
                "| toy_speed_bps | - | Mbit/s | 5 | 120.00 | [100.00, 140.00] | 93.75 % |"
            ),
        "{md}"
    );
    // The HTML report draws the figure run by run, with its median and interval.
    let html = report::campaign::html_with(
        &campaign(vec![entry("t1", "toy", "toy", r.clone())]),
        &methods,
    );
    assert!(
        html.contains("toy_speed_bps over 5 runs") && html.contains("93.75 % interval: [100, 140]"),
        "{html}"
    );
    // Its finding reads the median with its interval, not the shown run's figure alone.
    assert!(
        md.contains(
            "over 5 runs, medians [93.75 % interval]: toy_speed_bps 120.00 [100.00, 140.00] Mbit/s"
        ),
        "{md}"
    );
    // repeat = N beside --repeat in args is refused, naming the test.
    let twice = "[target]\nhost = \"198.18.0.1\"\n[[test]]\nkind = \"toy\"\nargs = \"--speed 1M --repeat 2\"\nrepeat = 3\n";
    let e = Plan::parse(twice, &ToyCommands).unwrap_err().to_string();
    assert!(e.contains("give it once"), "{e}");
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
    let mut r = new("rfc6349");
    let part: rfc6349::Rfc6349Result = parse(json!({ "path": { "mtu": 1500,
        "mtu_from": "measured", "baseline_rtt_us": 40000.0, "rtt_from": "measured",
        "bottleneck_bps": 5.0e7, "bottleneck_from": "given" },
        "plan": { "bdp_bytes": 250000, "connections": 1, "window_bytes": 250000 },
        "window_from": "bdp", "max_window": 4194304, "mss": 1448, "ideal_bps": 4.7e7,
        "throughput_bps": 4.6e7, "transfer_time_ratio": 1.02, "tcp_efficiency_pct": 99.9,
        "buffer_delay_pct": 12.0 }));
    r.set_part(rfc6349::PART, &part).expect("a part");
    out.push(r);
    let mut r = new("y1564");
    let part: y1564::Y1564Result = parse(json!({ "performance": { "duration_s": 60.0,
        "services": [{ "service": "voice", "cir_bps": 1.0e7, "ir_bps": 1.0e7, "sent": 100,
        "lost": 0, "flr": 0.0, "availability_pct": 100.0, "seconds": 60,
        "sac": { "flr_max": 0.001, "ftd_max_us": 5000.0, "fdv_max_us": 1000.0,
            "availability_min_pct": 99.9, "ir_tolerance": 0.01 },
        "pass": true }] } }));
    r.set_part(y1564::PART, &part).expect("a part");
    out.push(r);
    let mut r = new("rfc2889");
    let part: rfc2889::Rfc2889Result = parse(json!({ "test": "fully-meshed",
        "section": "5.1", "ports": ["a", "b"], "line_rate_bps": 1.0e9, "addresses": null,
        "sizes": [{ "frame_len": 64, "throughput": null, "congestion": null,
            "at_load": { "load_pct": 100.0, "duration_s": 1.0, "ports": [],
                "generator_limited": false, "totals": { "iload_fps": 2.0e6,
                "oload_fps": 2.0e6, "forwarding_fps": 2.0e6, "sent": 2000000, "lost": 0,
                "loss_ratio": 0.0, "flood": 0 } } }] }));
    r.set_part(rfc2889::PART, &part).expect("a part");
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
        "client, sweep, blocksize, latency, rrul, mesh, rfc2544, rfc6349, streams, shaping, frer-compare, nicmatrix, y1564, rfc2889"
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
