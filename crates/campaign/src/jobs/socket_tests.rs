//! Unit tests of the jobs against a wirebench server, over a server behind a device of
//! known capacity (`trials::fakes`): the tests each asks for, what its document says of
//! them, and what is refused before anything is asked.

use std::time::Duration;

use method::blocksize::BlocksizePlan;
use method::sweep::SweepPlan;
use model::spec::{Direction, Rate};

use super::*;
use crate::request::Server;
use crate::trials::fakes::{latency as histogram, FakeServer};
use crate::Quiet;

/// A server address that fails at once were it ever contacted.
fn nowhere() -> Server {
    Server {
        host: "127.0.0.1".into(),
        port: 0,
        key_file: None,
        allow_unauthenticated: false,
    }
}

/// A sweep of 1000-byte datagrams at 100, 200 and 300 Mbit/s, 1 s each.
fn sweep_req() -> SweepRequest {
    SweepRequest {
        server: nowhere(),
        plan: SweepPlan::new(
            100e6,
            300e6,
            100e6,
            1000,
            Duration::from_secs(1),
            Direction::Forward,
        )
        .expect("a plan"),
    }
}

#[test]
fn a_sweep_asks_a_udp_test_of_its_payload_at_each_target_rate() {
    // 20 000 packets/s of 1000 bytes: 160 Mbit/s pass.
    let mut server = FakeServer::behind(20_000.0);
    let r = sweep_over(&sweep_req(), &mut server, &mut Quiet).expect("the sweep");
    let asked: Vec<(Protocol, usize, Rate)> = server
        .asked
        .iter()
        .map(|s| (s.protocol, s.len, s.rate))
        .collect();
    assert_eq!(
        asked,
        [100e6, 200e6, 300e6].map(|b| (Protocol::Udp, 1000, Rate::BitsPerSec(b)))
    );
    let table = r.sweep.as_ref().expect("a sweep table");
    assert_eq!(table.max_zero_loss_bps, Some(100e6));
    let lost: Vec<u64> = table.rows.iter().map(|x| x.lost_packets).collect();
    assert_eq!(lost, [0, 5_000, 17_500]);
    assert_eq!(r.backend.as_deref(), Some("fake-udp"), "the first trial's");
    assert_eq!(r.params["server"], "192.0.2.1:5201");
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

#[test]
fn a_sweep_whose_sender_fell_behind_says_it_measured_the_tool() {
    let mut server = FakeServer::behind(1e6);
    // 25 000 packets/s of 1000 bytes: 200 Mbit/s at most.
    server.generator_pps = Some(25_000.0);
    let r = sweep_over(&sweep_req(), &mut server, &mut Quiet).expect("the sweep");
    let limited: Vec<bool> = r
        .sweep
        .as_ref()
        .map(|t| t.rows.iter().map(|x| x.generator_limited).collect())
        .unwrap_or_default();
    assert_eq!(limited, [false, false, true]);
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("some steps were generator limited")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_sweep_the_server_would_refuse_is_refused_before_any_test() {
    let mut req = sweep_req();
    req.plan = SweepPlan::new(100e6, 100e6, 1e6, 1000, Duration::ZERO, Direction::Forward)
        .expect("a plan");
    let e = sweep(&req, &mut Quiet, &Stop::new()).expect_err("refused");
    assert!(matches!(e, Error::Spec(_)), "{e:?}");
}

#[test]
fn a_block_size_sweep_asks_tcp_each_way_per_size_with_its_streams() {
    let req = BlocksizeRequest {
        server: nowhere(),
        plan: BlocksizePlan::new(vec![1024, 65536], Duration::from_secs(2)).expect("a plan"),
        sizes: vec![1024, 65536],
        time: Duration::from_secs(2),
        streams: 0,
        netio: false,
    };
    // Unlimited TCP through a device of 10 000 packets/s.
    let mut server = FakeServer::behind(10_000.0);
    let r = blocksize_over(&req, &mut server, &mut Quiet).expect("the sweep");
    let asked: Vec<(Protocol, Direction, usize, u8, Rate)> = server
        .asked
        .iter()
        .map(|s| (s.protocol, s.direction, s.len, s.streams, s.rate))
        .collect();
    let tcp = |d, len| (Protocol::Tcp, d, len, 1, Rate::Unlimited);
    assert_eq!(
        asked,
        [
            tcp(Direction::Forward, 1024),
            tcp(Direction::Reverse, 1024),
            tcp(Direction::Forward, 65536),
            tcp(Direction::Reverse, 65536),
        ]
    );
    let rows = r.blocksize.as_ref().expect("rows");
    // 10 000 blocks/s of 1024 bytes each way.
    assert!((rows[0].tx_mbyte_s - 10.24).abs() < 1e-9, "{rows:?}");
    assert!((rows[0].rx_mbyte_s - 10.24).abs() < 1e-9, "{rows:?}");
    assert_eq!(r.backend.as_deref(), Some("tcp"));
}

/// A ping-pong size's report: `sent`, `received` answers of 50 us each (none: no rtt).
fn pings(size: usize, sent: u64, received: u64, kernel: bool) -> engine::udp::PingPongReport {
    let h = histogram(received);
    engine::udp::PingPongReport {
        size,
        sent,
        received,
        rtt: (received > 0).then(|| h.summary()).flatten(),
        rtt_histogram: (received > 0).then_some(h),
        mode: "blocking".into(),
        kernel_timestamps: kernel,
        ticks: vec![],
    }
}

fn latency_req(limits: Vec<(f64, f64)>) -> LatencyRequest {
    LatencyRequest {
        server: nowhere(),
        sizes: vec![64, 1024],
        time: Duration::from_secs(1),
        spin: false,
        user_timestamps: false,
        latency_limits: limits,
        marginal_band: None,
        interval: None,
    }
}

#[test]
fn ping_pong_rows_count_the_unanswered_and_limits_become_verdicts_per_size() {
    let req = latency_req(vec![(99.0, 10.0), (50.0, 100.0)]);
    let server = std::net::SocketAddr::from(([192, 0, 2, 1], 5201));
    let r = latency_result(
        &req,
        server,
        &[pings(64, 100, 97, true), pings(1024, 100, 100, true)],
    );
    let rows = r.latency.as_ref().expect("rows");
    let counted: Vec<(usize, u64, u64)> =
        rows.iter().map(|x| (x.size, x.samples, x.lost)).collect();
    assert_eq!(counted, [(64, 97, 3), (1024, 100, 0)]);
    assert!((rows[0].half_rtt_p50_us - rows[0].rtt_us.p50 / 2.0).abs() < 1e-9);
    // Every round trip is 50 us: p99 <= 10 us fails, p50 <= 100 us holds, per size.
    let v: Vec<(bool, bool)> = r
        .verdicts
        .iter()
        .map(|v| (v.name.contains("64 bytes"), v.passed))
        .collect();
    assert_eq!(
        v,
        [(true, false), (true, true), (false, false), (false, true)]
    );
    assert_eq!(r.timestamp_source.as_deref(), Some("kernel-software"));
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

#[test]
fn a_size_nobody_answered_has_no_row_and_is_noted() {
    let req = latency_req(vec![]);
    let server = std::net::SocketAddr::from(([192, 0, 2, 1], 5201));
    let r = latency_result(
        &req,
        server,
        &[pings(64, 100, 100, false), pings(1024, 100, 0, false)],
    );
    let sizes: Vec<usize> = r.latency.iter().flatten().map(|x| x.size).collect();
    assert_eq!(sizes, [64]);
    assert_eq!(r.notes, ["some message sizes got no answer at all"]);
    assert_eq!(r.timestamp_source.as_deref(), Some("user"));
}

#[test]
fn message_sizes_out_of_range_are_refused_before_any_test() {
    let refused = |sizes: Vec<usize>| {
        let req = LatencyRequest {
            sizes,
            ..latency_req(vec![])
        };
        match latency(&req, &Stop::new()) {
            Err(Error::Usage(m)) => m,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(refused(vec![]), "give at least one message size with -l");
    let big = TestSpec::MAX_UDP_LEN + 1;
    assert!(
        refused(vec![64, big]).starts_with(&format!("message size {big} is outside")),
        "{big}"
    );
}

#[test]
fn a_client_test_the_server_would_refuse_is_refused_before_connecting() {
    let req = ClientRequest {
        server: nowhere(),
        spec: TestSpec {
            duration: Duration::ZERO,
            ..base_spec(Protocol::Udp)
        },
        interval: None,
        cpu: None,
        round_trip: false,
        iperf3: false,
        connect: Default::default(),
        get_server_output: false,
        title: None,
    };
    let e = client(&req, &mut Quiet, &Stop::new()).expect_err("refused");
    // Not "cannot start a test with 127.0.0.1:0": nothing was contacted.
    assert!(matches!(e, Error::Spec(_)), "{e:?}");
}
