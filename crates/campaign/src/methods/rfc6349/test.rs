//! The method's own decisions on known inputs: its command line, the window plan, and the
//! metrics of a TCP test's result on a simulated path (the arithmetic itself is tested in
//! `method::rfc6349`).

use std::time::Duration;

use clap::{FromArgMatches, Parser};
use method::rfc6349::WindowPlan;
use model::results::{ConnectionFacts, RunResult, Summary, TcpBytes};
use serde_json::json;

use super::run::{metrics, plan};
use super::*;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: Rfc6349Args,
}

fn req(line: &str) -> Result<Rfc6349Request, String> {
    let argv = std::iter::once("rfc6349").chain(line.split_whitespace());
    let m = <Cli as clap::CommandFactory>::command()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    let cli = Cli::from_arg_matches(&m).map_err(|e| e.to_string())?;
    request(&cli.args).map_err(|e| e.to_string())
}

#[test]
fn the_command_line_reads_windows_and_refuses_what_cannot_run() {
    let r = req("198.18.0.1").unwrap();
    assert_eq!(r.window, WindowChoice::Bdp);
    assert_eq!(r.server.port, control::DEFAULT_PORT);
    assert_eq!(r.trains, (5, 200));
    assert_eq!(req("h -w auto").unwrap().window, WindowChoice::Auto);
    assert_eq!(
        req("h -w 256K").unwrap().window,
        WindowChoice::Bytes(256 * 1024)
    );
    let e = req("h -w lots").unwrap_err();
    assert!(e.contains("give bdp, auto or a size"), "{e}");
    assert!(req("h -w 0").unwrap_err().contains("0 bytes"));
    assert!(req("h --rtt 0ms").unwrap_err().contains("not above zero"));
    assert!(req("h --bb 0")
        .unwrap_err()
        .contains("not a rate above zero"));
    // iperf3 has no echo: the path's figures are given, its port is its own.
    let e = req("h --iperf3 --bb 50M").unwrap_err();
    assert!(e.contains("give --rtt and --bb"), "{e}");
    let r = req("h --iperf3 --bb 50M --rtt 40ms").unwrap();
    assert_eq!(r.server.port, 5201);
    assert_eq!(r.rtt, Some(Duration::from_millis(40)));
    assert!(req("h -P 9 --max-connections 8")
        .unwrap_err()
        .contains("above --max-connections"));
}

#[test]
fn the_plan_splits_a_bdp_one_window_cannot_hold_and_keeps_what_is_given() {
    let mut r = req("h").unwrap();
    // 250 kB fits a 4 MiB window: one connection.
    let p = plan(&r, 250_000, 4 << 20);
    assert_eq!((p.connections, p.window_bytes), (1, 250_000));
    // 1 MB over 300 kB windows: four connections of 250 kB.
    let p = plan(&r, 1_000_000, 300_000);
    assert_eq!((p.connections, p.window_bytes), (4, 250_000));
    // -P 2: the BDP split in two whatever one window could hold.
    r.connections = Some(2);
    let p = plan(&r, 250_000, 4 << 20);
    assert_eq!((p.connections, p.window_bytes), (2, 125_000));
    // A given window is what is asked, however the BDP compares.
    r.window = WindowChoice::Bytes(64 * 1024);
    let p = plan(&r, 250_000, 4 << 20);
    assert_eq!(
        (p.connections, p.window_bytes, p.bdp_bytes),
        (2, 65_536, 250_000)
    );
}

/// A path of 40 ms and 50.8 Mbit/s (50 Mbit/s of L2 framing at 1500 bytes), measured.
fn path() -> PathFigures {
    PathFigures {
        mtu: 1500,
        mtu_from: Source::Measured,
        mtu_search: None,
        baseline_rtt_us: 40_000.0,
        rtt_from: Source::Measured,
        rtt_echoes: Some((100, 100)),
        bottleneck_bps: 50e6 * 1538.0 / 1514.0,
        bottleneck_from: Source::Measured,
        trains_bps: vec![50.3e6, 50.8e6, 50.9e6],
    }
}

/// A TCP test's result: `received_bps` over 5 s, TCP_INFO's byte counts, and one
/// interval row per RTT sample (ms), each advertising a 320 kB window.
fn tcp_result(received_bps: f64, sent: u64, retransmitted: u64, rtts_ms: &[f64]) -> RunResult {
    let mut r = RunResult::new("client", json!({}), "t0".into(), Default::default());
    let mut s = Summary {
        duration_s: 5.0,
        received_bps: Some(received_bps),
        received_bytes: Some((received_bps * 5.0 / 8.0) as u64),
        ..Summary::default()
    };
    s.set_tcp_bytes(Some(TcpBytes {
        sent,
        retransmitted,
    }));
    r.summary = Some(s);
    r.connection = Some(ConnectionFacts {
        remote: "198.18.2.1:5301".into(),
        tcp_mss: Some(1448),
        ..ConnectionFacts::default()
    });
    for (i, ms) in rtts_ms.iter().enumerate() {
        let row = json!({
            "start_s": i as f64, "end_s": i as f64 + 1.0, "direction": "tx",
            "loss_attributed": false,
            "tcp": {"cwnd_bytes": 300000, "snd_wnd": 320000,
                    "rtt_us": (ms * 1e3) as u64, "rttvar_us": 100, "pmtu": 1500},
        });
        r.intervals.push(serde_json::from_value(row).unwrap());
    }
    r
}

#[test]
fn the_metrics_of_a_test_at_the_ideal_rate() {
    let r = req("h").unwrap();
    let p = plan(&r, 254_000, 4 << 20);
    // The ideal: 50 Mbit/s of L2 at 1514 bytes carries 1448 of TCP payload each.
    let ideal = 50e6 * 1448.0 / 1514.0;
    let t = tcp_result(ideal / 1.02, 1_000_000, 100, &[41.0, 42.0, 43.0, 42.0]);
    let m = metrics(&r, &t, path(), p, 4 << 20);
    assert!((m.ideal_bps - ideal).abs() < 1.0, "{}", m.ideal_bps);
    assert!((m.transfer_time_ratio.unwrap() - 1.02).abs() < 1e-9);
    assert!((m.tcp_efficiency_pct.unwrap() - 99.99).abs() < 1e-9);
    // Mean 42 ms against 40: 5 %.
    assert!((m.buffer_delay_pct.unwrap() - 5.0).abs() < 1e-6);
    assert_eq!(m.rtt_during_us.map(|r| r.1), Some(4));
    assert_eq!(m.advertised_window, Some(320_000));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
}

#[test]
fn the_metrics_say_what_limited_the_test() {
    let mut r = req("h").unwrap();
    r.connections = Some(1);
    // Two connections' worth of BDP in a window of a quarter of it.
    let p = WindowPlan {
        bdp_bytes: 1_000_000,
        connections: 1,
        window_bytes: 250_000,
    };
    let mut path = path();
    path.trains_bps = vec![20e6, 50e6, 51e6];
    // Faster than the ideal: the bottleneck bandwidth was underestimated.
    let t = tcp_result(60e6, 1_000, 0, &[]);
    let m = metrics(&r, &t, path, p, 4 << 20);
    let notes = m.notes.join("\n");
    assert!(notes.contains("window-limited"), "{notes}");
    assert!(notes.contains("the trains disagree"), "{notes}");
    assert!(notes.contains("underestimated"), "{notes}");
    assert!(notes.contains("no buffer delay"), "{notes}");
    assert_eq!(m.buffer_delay_pct, None);
    assert!(m.transfer_time_ratio.unwrap() < 1.0);
}
