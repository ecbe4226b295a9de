//! Unit tests of rrul's figures from the load's interval rows and the pings, and of what
//! it refuses before connecting.

use engine::udp::PingSample;
use model::results::Summary;

use super::*;
use crate::request::Server;

fn req() -> RrulRequest {
    RrulRequest {
        // Were it ever contacted, port 0 of this host fails at once.
        server: Server {
            host: "127.0.0.1".into(),
            port: 0,
            key_file: None,
            allow_unauthenticated: false,
        },
        time: Duration::from_secs(1),
        idle: Duration::from_secs(1),
        streams: 2,
        ping_hz: 10.0,
        interval: Duration::from_secs(1),
    }
}

/// An interval row of `dir` (stream `stream`, or the sum) over `secs` that received
/// `bytes`, with TCP's smoothed round trip `rtt_us`.
fn row(dir: &str, stream: Option<u8>, secs: f64, bytes: u64, rtt_us: Option<u32>) -> IntervalRow {
    let tcp = rtt_us.map(|rtt_us| model::results::TcpState {
        cwnd_bytes: 14_480,
        snd_wnd: 65_535,
        rtt_us: u64::from(rtt_us),
        rttvar_us: 0,
        pmtu: 1500,
    });
    IntervalRow {
        start_s: 0.0,
        end_s: secs,
        direction: dir.into(),
        stream,
        sent_bytes: Some(bytes),
        received_bytes: Some(bytes),
        sent_bps: Some(bytes as f64 * 8.0 / secs),
        received_bps: Some(bytes as f64 * 8.0 / secs),
        sent_packets: None,
        received_packets: None,
        lost_packets: None,
        loss_attributed: false,
        duplicate_packets: None,
        reordered_packets: None,
        latency: None,
        jitter_us: None,
        retransmits: None,
        tcp,
    }
}

/// The load's result with `rows`.
fn load(rows: Vec<IntervalRow>) -> RunResult {
    let mut r = RunResult::new(
        "rrul",
        serde_json::json!({}),
        String::new(),
        Default::default(),
    );
    r.summary = Some(Summary::default());
    r.intervals = rows;
    r
}

const S: u64 = 1_000_000_000;

/// `sent` pings, answered ones at (seconds from the origin, round trip ms).
fn pings(sent: u64, answered: &[(f64, u64)]) -> PacedPings {
    PacedPings {
        sent,
        samples: answered
            .iter()
            .map(|&(at, ms)| PingSample {
                tx: UnixNanos(S + (at * 1e9) as u64),
                rtt_ns: ms * 1_000_000,
            })
            .collect(),
        kernel_timestamps: true,
    }
}

#[test]
fn pings_sent_during_the_load_are_loaded_and_the_rest_idle() {
    let origin = UnixNanos(S);
    let window = (UnixNanos(2 * S), UnixNanos(3 * S));
    // Idle pings of 1 ms around a load whose pings took 10 ms; one of five never came.
    let p = pings(5, &[(0.5, 1), (1.5, 10), (1.9, 10), (2.5, 1)]);
    let r = result(&req(), 2, &load(vec![]), &p, origin, window);
    let (idle, loaded) = (r.idle.expect("idle"), r.loaded.expect("loaded"));
    assert!((idle.p50 - 1000.0).abs() < 20.0, "{idle:?}");
    assert!((loaded.p50 - 10_000.0).abs() < 200.0, "{loaded:?}");
    let added = r.added_us.expect("added");
    assert!((added.p50 - 9_000.0).abs() < 200.0, "{added:?}");
    assert!(r.loaded_over_idle.is_some_and(|x| x > 9.0 && x < 11.0));
    assert_eq!((r.pings_sent, r.pings_lost), (5, 1));
    assert_eq!((r.load_from_s, r.load_to_s), (1.0, 2.0));
    assert_eq!(
        note(Some(&r)).as_deref(),
        Some("1 of 5 pings got no answer (lost, or answered more than 2 s after the end)")
    );
}

#[test]
fn without_pings_of_a_phase_there_is_nothing_to_compare_and_it_is_said() {
    let window = (UnixNanos(2 * S), UnixNanos(3 * S));
    let p = pings(2, &[(0.5, 1), (2.5, 1)]);
    let r = result(&req(), 2, &load(vec![]), &p, UnixNanos(S), window);
    assert!(r.loaded.is_none() && r.added_us.is_none());
    assert_eq!(
        note(Some(&r)).as_deref(),
        Some("2 of 2 pings were answered: no loaded latency to compare")
    );
    let all = pings(2, &[(0.5, 1), (1.5, 1)]);
    let r = result(&req(), 2, &load(vec![]), &all, UnixNanos(S), window);
    assert_eq!(note(Some(&r)), None, "every ping answered, both phases");
}

#[test]
fn each_ways_rate_comes_from_its_sum_rows_and_tcps_round_trip_from_its_streams() {
    let rows = vec![
        row("tx", None, 1.0, 125_000_000, None),
        row("tx", Some(1), 1.0, 999_000_000, Some(4000)),
        row("tx", Some(2), 1.0, 999_000_000, Some(2000)),
        row("rx", None, 2.0, 125_000_000, Some(90_000)),
    ];
    let p = pings(1, &[(0.5, 1)]);
    let window = (UnixNanos(2 * S), UnixNanos(3 * S));
    let r = result(&req(), 2, &load(rows), &p, UnixNanos(S), window);
    assert_eq!(r.up_bps, Some(1e9));
    assert_eq!(r.down_bps, Some(5e8));
    // The streams' own round trips, not the sum row's.
    assert_eq!(r.tcp_rtt_us, Some(3000.0));
    assert_eq!(r.throughput, [(2.0, 1e9, 5e8)]);
}

#[test]
fn bad_parameters_are_refused_before_connecting() {
    let refused = |r: RrulRequest| match rrul(&r, &mut crate::Quiet, &Stop::new()) {
        Err(Error::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    let long = Duration::from_secs(3601);
    assert!(refused(RrulRequest {
        time: long,
        ..req()
    })
    .starts_with("-t / --idle"));
    assert!(refused(RrulRequest {
        idle: long,
        ..req()
    })
    .starts_with("-t / --idle"));
    let slow = refused(RrulRequest {
        ping_hz: 0.5,
        ..req()
    });
    assert!(slow.starts_with("--ping-rate 0.5 Hz"), "{slow}");
    let many = refused(RrulRequest {
        streams: 65,
        ..req()
    });
    assert_eq!(many, "--streams 65: give 1 to 64");
    let none = refused(RrulRequest {
        streams: 0,
        ..req()
    });
    assert_eq!(none, "--streams 0: give 1 to 64");
}
