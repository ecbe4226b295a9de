//! Unit tests of the server runner over a scripted server (`fakes.rs`).

use super::*;
use crate::trials::fakes::{summary, FakeServer};
use model::spec::{Direction, Rate};

/// A 1518-byte frame trial at 10 000 frames/s for 2 s, with latency.
fn frames_req() -> TrialRequest {
    TrialRequest::frames(1518, 10_000.0, Duration::from_secs(2)).with_latency()
}

#[test]
fn a_frame_trial_is_a_udp_test_of_its_payload_at_its_frame_rate() {
    let mut trial = ServerTrial {
        cfg: FakeServer::answering(vec![Ok(summary(20_000, 19_990))]),
        base: TestSpec {
            dscp: Some(46),
            ..base_spec(Protocol::Udp)
        },
    };
    trial.run(&frames_req()).expect("trial");
    let asked = &trial.cfg.asked;
    assert_eq!(asked.len(), 1);
    let spec = &asked[0];
    assert_eq!(spec.protocol, Protocol::Udp);
    assert_eq!(spec.len, 1518 - 46);
    assert_eq!(spec.rate, Rate::PacketsPerSec(10_000.0));
    assert_eq!(spec.duration, Duration::from_secs(2));
    assert_eq!(spec.direction, Direction::Forward);
    // The base's settings stay.
    assert_eq!(spec.dscp, Some(46));
}

#[test]
fn a_payload_trial_keeps_its_size_protocol_and_direction() {
    let mut trial = ServerTrial {
        cfg: FakeServer::answering(vec![Ok(summary(0, 0))]),
        base: TestSpec {
            streams: 4,
            ..base_spec(Protocol::Tcp)
        },
    };
    let req = TrialRequest::payload(
        Protocol::Tcp,
        Direction::Reverse,
        8192,
        Rate::BitsPerSec(5e8),
        Duration::from_secs(3),
    );
    trial.run(&req).expect("trial");
    let spec = &trial.cfg.asked[0];
    assert_eq!(
        (spec.protocol, spec.direction, spec.len, spec.streams),
        (Protocol::Tcp, Direction::Reverse, 8192, 4)
    );
    assert_eq!(spec.rate, Rate::BitsPerSec(5e8));
    assert_eq!(spec.duration, Duration::from_secs(3));
}

#[test]
fn the_servers_counts_settle_into_the_trial() {
    let mut s = summary(20_000, 19_990);
    s.duplicate_packets = Some(3);
    s.reordered_packets = Some(5);
    s.offered_bps = Some(10_000.0 * 1472.0 * 8.0);
    s.generator_limited = true;
    let mut trial = ServerTrial {
        cfg: FakeServer::answering(vec![Ok(s)]),
        base: base_spec(Protocol::Udp),
    };
    let d = trial.run(&frames_req()).expect("trial");
    assert_eq!(d.counters.sent, 20_000);
    assert_eq!(d.counters.received, 19_990);
    assert_eq!(d.counters.lost, 10);
    assert_eq!((d.counters.duplicates, d.counters.reordered), (3, 5));
    // Offered packets per second from the offered payload rate.
    assert!((d.offered_pps - 10_000.0).abs() < 1e-6, "{}", d.offered_pps);
    assert!(d.generator_limited);
    assert_eq!(d.duration, Duration::from_secs(2));
    assert_eq!(d.backend.as_deref(), Some("fake-udp"));
}

#[test]
fn latency_only_when_the_method_asked_for_it() {
    let with = |latency: bool| {
        let mut trial = ServerTrial {
            cfg: FakeServer::answering(vec![Ok(summary(100, 100))]),
            base: base_spec(Protocol::Udp),
        };
        let req = TrialRequest {
            latency,
            ..frames_req()
        };
        trial.run(&req).expect("trial").latency
    };
    assert!(with(true).is_some());
    assert!(with(false).is_none());
}

#[test]
fn a_stopped_test_is_no_result_and_a_burst_is_refused_before_any_test() {
    let mut trial = ServerTrial {
        cfg: FakeServer::answering(vec![Ok(summary(100, 100))]),
        base: base_spec(Protocol::Udp),
    };
    trial.cfg.interrupted = true;
    assert!(matches!(trial.run(&frames_req()), Err(Error::Interrupted)));
    trial.cfg.asked.clear();
    let burst = TrialRequest::burst(64, 1000);
    assert!(matches!(trial.run(&burst), Err(Error::Usage(_))));
    assert!(trial.cfg.asked.is_empty(), "no test for a burst");
}

#[test]
fn a_test_without_its_direction_or_that_fails_is_a_failed_trial() {
    let mut trial = ServerTrial {
        cfg: FakeServer::answering(vec![]),
        base: base_spec(Protocol::Udp),
    };
    let e = trial.run(&frames_req()).err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some("the trial produced no result"));
    trial.cfg.script = vec![Err(Error::Failed("test with fake failed: refused".into()))];
    assert!(matches!(trial.run(&frames_req()), Err(Error::Failed(_))));
}

#[test]
fn a_trial_the_server_would_refuse_fails_without_a_test() {
    let mut trial = ServerTrial {
        cfg: FakeServer::answering(vec![Ok(summary(1, 1))]),
        base: base_spec(Protocol::Udp),
    };
    // A frame too small for the headers leaves no payload.
    let e = trial.run(&TrialRequest::frames(40, 1000.0, Duration::from_secs(1)));
    let msg = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.starts_with("test with 192.0.2.1:5201 failed"), "{msg}");
    assert!(trial.cfg.asked.is_empty());
}
