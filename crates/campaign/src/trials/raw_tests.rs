//! The raw runner over fake ports: two ports here joined by an in-memory wire (the
//! engine's own trial runs over them), and servers' ports that answer from a script.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use engine::raw::{Reflected, Sending};
use model::spec::Rate;
use model::stop::Stop;

use super::*;
use crate::trials::fakes::{FakeLent, FakeRx, FakeTx, FakeWire};

/// UDP frames from 10.0.0.1 to 10.0.0.2.
fn frame_spec() -> FrameSpec {
    let here = lab::probe::Addresses {
        mac: [2, 0, 0, 0, 0, 1],
        ipv4: Some(Ipv4Addr::new(10, 0, 0, 1)),
        ipv6: None,
    };
    let to = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    frames::headers(
        &FrameRequest::default(),
        ("fake0", &here),
        to,
        [2, 0, 0, 0, 0, 2],
    )
    .expect("headers")
}

/// A trial over `sides` on a 1 Gbit/s line.
fn trial(
    sides: (TxSide, RxSide),
    no_latency: Option<&str>,
    reflector: Option<FakeLent>,
) -> RawTrial {
    let req = FrameRequest {
        line_rate: 1e9,
        ..FrameRequest::default()
    };
    let reflector = reflector.map(|r| Box::new(r) as Box<dyn LentPort>);
    RawTrial::assemble(
        &req,
        sides,
        frame_spec(),
        Stop::new(),
        no_latency.map(str::to_owned),
        reflector,
    )
}

/// Two fake ports here on one wire, the sender as `tx` makes it.
fn local(tx: impl FnOnce(FakeTx) -> FakeTx, stamps: bool) -> (TxSide, RxSide) {
    let wire = FakeWire::default();
    (
        TxSide::Local(Box::new(tx(FakeTx::on(&wire)))),
        RxSide::Local(Box::new(FakeRx::on(&wire, stamps))),
    )
}

/// A lent port and its call log.
fn lent(port: FakeLent) -> (Box<dyn LentPort>, Arc<Mutex<Vec<String>>>) {
    let log = Arc::clone(&port.log);
    (Box::new(port), log)
}

/// 128-byte frames at 2000 frames/s for 100 ms, with latency.
fn req() -> TrialRequest {
    TrialRequest::frames(128, 2000.0, Duration::from_millis(100)).with_latency()
}

#[test]
fn two_ports_here_count_what_the_wire_delivered() {
    let lossy = |t: FakeTx| FakeTx {
        lose_every: 10,
        ..t
    };
    let mut t = trial(local(lossy, true), None, None);
    let d = t.run(&req()).expect("trial");
    let c = d.counters;
    assert!(c.sent >= 100, "sent {}", c.sent);
    assert_eq!(c.lost, c.sent / 10, "{c:?}");
    assert_eq!(c.received + c.lost, c.sent, "{c:?}");
    // Frames without their FCS.
    assert_eq!(d.received_bytes, c.received * 124);
    assert_eq!(d.backend.as_deref(), Some("fake-tx / fake-rx"));
}

#[test]
fn latency_only_where_the_ports_share_a_clock_and_it_was_asked_for() {
    let mut shared = trial(local(|t| t, true), None, None);
    let h = shared.run(&req()).expect("trial").latency;
    assert!(h.is_some_and(|h| !h.is_empty()));
    let quiet = TrialRequest {
        latency: false,
        ..req()
    };
    assert!(shared.run(&quiet).expect("trial").latency.is_none());
    let mut apart = trial(local(|t| t, true), Some("clocks differ"), None);
    assert!(apart.run(&req()).expect("trial").latency.is_none());
    assert_eq!(apart.latency_absent(), Some("clocks differ"));
}

#[test]
fn a_port_that_cannot_keep_up_marks_the_trial_generator_limited() {
    // One frame per 5 ms call against 10 000 frames/s asked.
    let slow = |t: FakeTx| FakeTx {
        batch: 1,
        pause: Duration::from_millis(5),
        ..t
    };
    let mut t = trial(local(slow, false), None, None);
    let d = t
        .run(&TrialRequest::frames(
            128,
            10_000.0,
            Duration::from_millis(100),
        ))
        .expect("trial");
    assert!(d.generator_limited, "{d:?}");
    assert!(d.offered_pps < 5_000.0, "{}", d.offered_pps);
}

#[test]
fn the_ports_share_a_clock_only_on_one_host_or_when_told() {
    assert_eq!(latency_note(Some("a"), Some("a"), false), None);
    assert!(latency_note(Some("a"), Some("b"), false).is_some());
    assert!(
        latency_note(None, None, false).is_some(),
        "unknown is not shared"
    );
    assert_eq!(latency_note(Some("a"), Some("b"), true), None);
}

#[test]
fn a_lent_receiver_is_told_what_was_sent_and_its_count_settles() {
    let wire = FakeWire::default();
    let (rx, log) = lent(FakeLent {
        lose: 3,
        ..FakeLent::new("h2/eth1")
    });
    let sides = (
        TxSide::Local(Box::new(FakeTx::on(&wire))),
        RxSide::Agent(rx),
    );
    let mut t = trial(sides, None, None);
    let d = t.run(&req()).expect("trial");
    let sent = d.counters.sent;
    assert!(sent >= 100, "sent {sent}");
    assert_eq!(d.counters.lost, 3);
    assert_eq!(d.counters.received, sent - 3);
    assert_eq!(d.rx_span, Some(Duration::from_millis(2)));
    let calls = FakeLent::calls(&log);
    assert_eq!(
        calls,
        [
            "start_receive [1]".to_owned(),
            format!("finish_receive {sent}")
        ]
    );
    assert_eq!(d.backend.as_deref(), Some("fake-tx / ring at h2/eth1"));
}

#[test]
fn a_lent_sender_that_fell_behind_marks_the_trial_and_each_trial_has_its_stream() {
    let (tx, tx_log) = lent(FakeLent {
        sending: Sending {
            sent: 1000,
            elapsed: Duration::from_secs(1),
            offered_pps: 1000.0,
            generator_limited: true,
            ..Sending::default()
        },
        ..FakeLent::new("h1/eth0")
    });
    let (rx, rx_log) = lent(FakeLent::new("h2/eth1"));
    let mut t = trial((TxSide::Agent(tx), RxSide::Agent(rx)), None, None);
    let d = t.run(&req()).expect("trial");
    assert!(d.generator_limited);
    assert_eq!((d.counters.sent, d.counters.received), (1000, 1000));
    assert_eq!(d.offered_pps, 1000.0);
    t.run(&req()).expect("second trial");
    assert_eq!(
        FakeLent::calls(&rx_log),
        [
            "start_receive [1]",
            "finish_receive 1000",
            "start_receive [2]",
            "finish_receive 1000"
        ]
    );
    let sends = FakeLent::calls(&tx_log);
    assert_eq!(sends.len(), 2);
    assert!(sends[0].contains("pps: 2000.0"), "{sends:?}");
    assert_eq!(t.backend(), "packet at h1/eth0 / ring at h2/eth1");
}

#[test]
fn a_trial_longer_than_a_servers_longest_test_is_refused_before_anything_runs() {
    let (rx, log) = lent(FakeLent {
        longest: 0.05,
        ..FakeLent::new("h2/eth1")
    });
    let wire = FakeWire::default();
    let sides = (
        TxSide::Local(Box::new(FakeTx::on(&wire))),
        RxSide::Agent(rx),
    );
    let mut t = trial(sides, None, None);
    let e = t.run(&req()).err();
    assert!(
        matches!(&e, Some(Error::Usage(m)) if m.starts_with("h2/eth1: a trial of 0.1 s")),
        "{e:?}"
    );
    assert!(FakeLent::calls(&log).is_empty());
    // A burst has no duration to refuse.
    assert!(t.run(&TrialRequest::burst(128, 10)).is_ok());
}

#[test]
fn the_reflector_turns_every_trial_and_its_own_losses_add_up() {
    let far = FakeLent {
        reflected: Reflected {
            not_sent: 2,
            rx_drops: 1,
            ..Reflected::default()
        },
        ..FakeLent::new("h2/eth1")
    };
    let log = Arc::clone(&far.log);
    let mut t = trial(local(|t| t, true), None, Some(far));
    assert_eq!(t.reflected_at(), Some("h2/eth1"));
    let d = t.run(&req()).expect("trial");
    t.run(&req()).expect("trial");
    assert_eq!(t.reflector_lost(), 6);
    let calls = FakeLent::calls(&log);
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert!(calls[0].starts_with("start_reflect"));
    assert_eq!(calls[1], format!("finish_reflect {}", d.counters.sent));
}

#[test]
fn the_reflector_stops_even_when_the_trial_fails() {
    let far = FakeLent::new("h2/eth1");
    let far_log = Arc::clone(&far.log);
    let (rx, _) = lent(FakeLent {
        fail_receive: true,
        ..FakeLent::new("h1/eth0")
    });
    let wire = FakeWire::default();
    let sides = (
        TxSide::Local(Box::new(FakeTx::on(&wire))),
        RxSide::Agent(rx),
    );
    let mut t = trial(sides, None, Some(far));
    let e = t.run(&req()).err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some("h1/eth0: connection reset"));
    let calls = FakeLent::calls(&far_log);
    assert_eq!(calls.last().map(String::as_str), Some("finish_reflect 0"));
    assert_eq!(t.reflector_lost(), 0);
}

#[test]
fn a_stopped_trial_is_no_result() {
    let mut t = trial(local(|t| t, false), None, None);
    t.stop.raise();
    assert!(matches!(t.run(&req()), Err(Error::Interrupted)));
}

#[test]
fn loads_come_from_the_request_and_the_line() {
    let t = trial(local(|t| t, false), None, None);
    let line = LineRate(1_000_000_000);
    let (len, load) = t.load_for(&req()).expect("load");
    assert_eq!(len, 128);
    assert_eq!(
        load,
        RawLoad::Rate {
            pps: 2000.0,
            duration: Duration::from_millis(100),
            count: None
        }
    );
    let unlimited = TrialRequest {
        load: Load::Rate(Rate::Unlimited, Duration::from_secs(1)),
        ..req()
    };
    let (_, load) = t.load_for(&unlimited).expect("load");
    assert!(matches!(load, RawLoad::Rate { pps, .. } if pps == line.max_fps(128)));
    let (_, load) = t.load_for(&TrialRequest::burst(64, 500)).expect("load");
    assert_eq!(
        load,
        RawLoad::Burst {
            frames: 500,
            target_pps: line.max_fps(64)
        }
    );
    let payload = TrialRequest::payload(
        model::spec::Protocol::Udp,
        model::spec::Direction::Forward,
        100,
        Rate::Unlimited,
        Duration::from_secs(1),
    );
    assert!(matches!(t.load_for(&payload), Err(Error::Usage(_))));
}
