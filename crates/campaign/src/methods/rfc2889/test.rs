//! The method's own decisions on known inputs: its command line, and the figures and
//! text it reads from a result (the patterns, figures and searches themselves are tested
//! in `method::rfc2889`).

use clap::{FromArgMatches, Parser};

use super::result::{AddressResult, AddressTrial, PortRow, SizeResult, TrialRows};
use super::*;
use method::rfc2889::Aggregate;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: Rfc2889Args,
}

/// `rfc2889 LINE`.
fn req(line: &str) -> Result<Rfc2889Request, String> {
    let argv = std::iter::once("rfc2889").chain(line.split_whitespace());
    let m = <Cli as clap::CommandFactory>::command()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    let cli = Cli::from_arg_matches(&m).map_err(|e| e.to_string())?;
    request(&cli.args).map_err(|e| e.to_string())
}

#[test]
fn the_command_line_gives_the_test_its_ports_and_the_rfcs_defaults() {
    let r = req("fully-meshed a:eth0 b:eth0 c:eth0 d:eth0 --lab s1").unwrap();
    assert_eq!(r.test, Test::Traffic(Pattern::FullyMeshed));
    assert_eq!(r.ports.len(), 4);
    assert_eq!(r.sizes, [64, 128, 256, 512, 1024, 1280, 1518]);
    assert_eq!(r.trial, Duration::from_secs(30));
    assert_eq!((r.load, r.search), (1.0, true));
    let r = req("address-caching a:e b:e c:e --switch sw --max-addresses 1024").unwrap();
    assert_eq!(r.test, Test::Caching);
    assert_eq!(r.addresses.count, (1, 1024, 1));
    assert_eq!(r.addresses.switch.as_deref(), Some("sw"));
    // A server's lent ports carry the traffic tests, reached with its key and port.
    let r = req("fully-meshed a:eth0 srv/eth1 srv:6000/eth2 --auth-key-file k -p 7000").unwrap();
    assert_eq!(r.ports[1], "srv/eth1");
    assert_eq!(
        r.agents.key_file.as_deref(),
        Some(std::path::Path::new("k"))
    );
    assert_eq!(r.agents.port, 7000);
}

#[test]
fn bad_command_lines_say_what_is_wrong() {
    for (line, want) in [
        ("congestion a b c", "exactly 4 ports"),
        ("many-to-one a b", "at least 3 ports; 2 given"),
        (
            "address-caching a b c d",
            "takes 3 ports: learning, test and monitor",
        ),
        ("fully-meshed a b a", "port a is given twice"),
        ("address-caching a host/eth1 c", "many source MACs"),
        ("learning-rate a b host/eth1", "many source MACs"),
        ("errored-frames a host/eth1", "undersized and oversized"),
        ("fully-meshed a b --load 0", "not a load"),
        ("fully-meshed a b --load 120%", "not a load"),
        ("forward-pressure a b", "not possible on these ports"),
        (
            "errored-frames a b c",
            "takes 2 ports: source and destination; 3 given",
        ),
        ("max-forwarding-rate a b --steps 0", "0 is not in 1..=100"),
        (
            "learning-rate a b c --max-rate 0",
            "--max-rate must be a rate above 0",
        ),
        ("fully-meshed a", "2 values required"),
    ] {
        let e = req(line).unwrap_err();
        assert!(e.contains(want), "{line}: {e}");
    }
}

fn port(name: &str, forwarding: f64, flood: u64) -> PortRow {
    PortRow {
        port: name.into(),
        iload_fps: 1000.0,
        oload_fps: 1000.0,
        sent: 1000,
        lost: 0,
        loss_ratio: 0.0,
        received: forwarding as u64,
        forwarding_fps: forwarding,
        intended_rx_fps: 1000.0,
        flood,
        latency: None,
    }
}

fn doc(p: &Rfc2889Result) -> RunResult {
    let mut r = engine::env::result("rfc2889", serde_json::json!({}));
    r.set_part(PART, p).unwrap();
    r
}

#[test]
fn figures_and_text_come_from_the_result() {
    let line = LineRate(100_000_000);
    let mut t = model::results::rfc2544::ThroughputResult {
        frame_len: 64,
        search: model::results::rfc2544::Search::Binary,
        fps: Some(line.max_fps(64) / 2.0),
        lower_fps: None,
        upper_fps: None,
        max_fps: line.max_fps(64),
        generator_cap_fps: None,
        irregular: None,
        trials: 9,
        trial_time_s: None,
        goal: None,
    };
    t.upper_fps = t.fps.map(|f| f * 1.01);
    let p = Rfc2889Result {
        test: "fully-meshed".into(),
        section: "5.1".into(),
        ports: vec!["a".into(), "b".into()],
        line_rate_bps: 1e8,
        sizes: vec![SizeResult {
            frame_len: 64,
            throughput: Some(t),
            at_load: TrialRows {
                load_pct: 100.0,
                duration_s: 1.0,
                ports: vec![port("a", 1000.0, 0), port("b", 990.0, 3)],
                totals: Aggregate {
                    iload_fps: 2000.0,
                    oload_fps: 2000.0,
                    forwarding_fps: 1990.0,
                    sent: 2000,
                    lost: 10,
                    loss_ratio: 0.005,
                    flood: 3,
                },
                generator_limited: false,
                receiver_drops: 0,
            },
            congestion: None,
            steps: Vec::new(),
            max_forwarding: None,
        }],
        addresses: None,
        errored: None,
    };
    let figs = Rfc2889.figures(&doc(&p));
    let value = |name: &str| {
        figs.iter()
            .find(|f| f.metric.threshold() == Some(name))
            .map(|f| f.value)
    };
    assert_eq!(value("rfc2889_throughput"), Some(0.5));
    assert_eq!(value("rfc2889_forwarding_fps"), Some(1990.0));
    assert_eq!(value("rfc2889_flood"), Some(3.0));
    let text = show::text(&doc(&p));
    assert!(text.contains("throughput 50.000 % of line rate"), "{text}");
    assert!(text.contains("all ports"), "{text}");
    // An address search: its result, or what the search could say.
    let mut a = p.clone();
    a.test = "address-caching".into();
    a.section = "5.7".into();
    a.ports = vec!["l".into(), "t".into(), "m".into()];
    a.sizes.clear();
    let trial = |n: u64, passed: bool| AddressTrial {
        value: n as f64,
        addresses: n,
        rate_fps: 1000.0,
        sent: n,
        at_learning_port: n,
        at_monitor: u64::from(!passed),
        passed,
        generator_limited: false,
    };
    a.addresses = Some(AddressResult {
        frame_len: 64,
        min: 1.0,
        max: 1024.0,
        resolution: 1.0,
        result: Some(512.0),
        failed: Some(513.0),
        forgetting: "flushed".into(),
        bridge: Some((512, 512)),
        trials: vec![
            trial(1024, false),
            trial(1, true),
            trial(512, true),
            trial(513, false),
        ],
    });
    let figs = Rfc2889.figures(&doc(&a));
    assert!(figs
        .iter()
        .any(|f| f.metric.threshold() == Some("rfc2889_addresses") && f.value == 512.0));
    let text = show::text(&doc(&a));
    assert!(
        text.contains("address caching capacity: 512 addresses (513 failed"),
        "{text}"
    );
    assert!(
        text.contains("held 512 learned addresses after the last trial (limit 512)"),
        "{text}"
    );
}

#[test]
fn load_steps_run_from_the_throughput_up_to_the_load() {
    assert_eq!(super::run::steps(0.5, 1.0, 3), [0.5, 0.75, 1.0]);
    assert_eq!(
        super::run::steps(1.0, 1.0, 5),
        [1.0],
        "throughput = MOL: one trial"
    );
    assert_eq!(super::run::steps(0.2, 1.0, 1), [1.0]);
    let r = req("max-forwarding-rate a b c --steps 4").unwrap();
    assert_eq!((r.test, r.steps), (Test::MaxForwardingRate, 4));
    let r = req("errored-frames a b").unwrap();
    assert_eq!(r.test, Test::Errored);
}
