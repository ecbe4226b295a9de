//! Unit tests of the RFC 2544 job over a server behind a device of known capacity
//! (`trials::fakes`) and over a device that buffers bursts: what each benchmark asks
//! for, what it finds, and what the document says of it.

use method::rfc2544::{Search, SearchConfig};
use method::{Load, TrialData, TrialRequest};
use model::spec::{Rate, TestSpec};
use model::stats::Counters;
use wire::linerate::LineRate;

use super::*;
use crate::request::{FrameRequest, Server};
use crate::trials::fakes::FakeServer;
use crate::Quiet;

/// Frames/s of 64-byte frames at 1 Gbit/s.
const LINE_64: f64 = 1_488_095.238_095_238;

/// A request over a server of `tests` at `sizes`, binary search, 1 s trials at 1 Gbit/s.
fn request(tests: &[Rfc2544Test], sizes: &[u64]) -> Rfc2544Request {
    Rfc2544Request {
        path: Rfc2544Path::Server(Server {
            host: "192.0.2.1".into(),
            port: 5201,
            key_file: None,
            allow_unauthenticated: false,
        }),
        tests: tests.to_vec(),
        sizes: sizes.to_vec(),
        search: Search::Binary,
        config: SearchConfig {
            duration: Duration::from_secs(1),
            final_duration: Duration::from_secs(1),
            ..SearchConfig::default()
        },
        latency_trials: 2,
        latency_limits: vec![],
        marginal_band: None,
        loss_step: 10.0,
        b2b_trials: 1,
        b2b_max_burst: None,
        frame: FrameRequest::default(),
    }
}

/// The packets/s of a spec the runner asked for.
fn pps(spec: &TestSpec) -> f64 {
    match spec.rate {
        Rate::PacketsPerSec(p) => p,
        r => panic!("not a frame rate: {r:?}"),
    }
}

fn run_over(a: &Rfc2544Request, server: &mut FakeServer) -> RunResult {
    over_server(a, server, &mut Quiet).expect("the benchmarks run")
}

#[test]
fn throughput_over_a_server_asks_udp_tests_of_each_frames_payload_at_the_rates_it_searches() {
    let a = request(&[Rfc2544Test::Throughput], &[64, 1518]);
    let mut server = FakeServer::behind(50_000.0);
    let doc = run_over(&a, &mut server);
    let rep = doc.rfc2544.as_ref().expect("a report");
    assert_eq!(server.asked.len(), rep.trials.len(), "one test per trial");
    for (spec, t) in server.asked.iter().zip(&rep.trials) {
        assert_eq!(spec.protocol, Protocol::Udp);
        assert_eq!(spec.len as u64, t.frame_len - UDP_FRAME_OVERHEAD);
        assert_eq!(pps(spec), t.load, "{t:?}");
        assert_eq!(spec.duration, Duration::from_secs(1));
    }
    // The search starts at the line rate of each size, the small frames first.
    assert_eq!(server.asked[0].len, 18);
    assert!((pps(&server.asked[0]) - LINE_64).abs() < 1.0);
    assert_eq!(server.asked.last().map(|s| s.len), Some(1472));
    // It finds the device's capacity from below, within its width.
    let found: Vec<(u64, f64)> = rep
        .throughput
        .iter()
        .map(|t| (t.frame_len, t.fps.unwrap_or(0.0)))
        .collect();
    assert_eq!(found.len(), 2);
    for (len, fps) in found {
        assert!((50_000.0 * 0.99..=50_000.0).contains(&fps), "{len}: {fps}");
    }
    assert_eq!(doc.params["server"], "192.0.2.1:5201", "{}", doc.params);
}

#[test]
fn latency_is_measured_at_the_throughput_found_and_its_limits_are_verdicts() {
    let mut a = request(&[Rfc2544Test::Throughput, Rfc2544Test::Latency], &[64]);
    // Every answer's latency is 50 us: p99 over 10 us fails, under 100 us holds.
    a.latency_limits = vec![(99.0, 10.0), (99.0, 100.0)];
    let mut server = FakeServer::behind(50_000.0);
    let doc = run_over(&a, &mut server);
    let rep = doc.rfc2544.as_ref().expect("a report");
    let fps = rep.throughput[0].fps.expect("a throughput");
    let latency: Vec<&TestSpec> = server
        .asked
        .iter()
        .zip(&rep.trials)
        .filter(|(_, t)| t.purpose == "latency")
        .map(|(s, _)| s)
        .collect();
    assert_eq!(latency.len(), 2, "latency_trials");
    assert!(
        latency.iter().all(|s| pps(s) == fps),
        "at {fps}: {latency:?}"
    );
    let v: Vec<(bool, &str)> = doc
        .verdicts
        .iter()
        .map(|v| (v.passed, v.detail.as_str()))
        .collect();
    assert_eq!(v.len(), 2, "{:?}", doc.verdicts);
    assert!(!v[0].0 && v[1].0, "{v:?}");
    assert!(doc.verdicts.iter().all(|v| v.name.contains("64 bytes")));
}

#[test]
fn frame_loss_steps_down_from_line_rate_until_two_trials_lose_nothing() {
    let mut a = request(&[Rfc2544Test::Loss], &[64]);
    a.loss_step = 5.0;
    // The device passes 45 % of line rate.
    let mut server = FakeServer::behind(LINE_64 * 0.45);
    let doc = run_over(&a, &mut server);
    let rows = &doc.rfc2544.as_ref().expect("a report").loss;
    let percents: Vec<f64> = rows.iter().map(|r| r.percent).collect();
    let want: Vec<f64> = (0..13).map(|i| 100.0 - 5.0 * f64::from(i)).collect();
    assert_eq!(percents, want);
    let lossless = rows.iter().filter(|r| r.loss_percent == 0.0).count();
    assert_eq!(lossless, 2, "45 % and 40 %: {rows:?}");
}

#[test]
fn a_generator_below_line_rate_caps_the_search_and_the_document_says_so() {
    let a = request(&[Rfc2544Test::Throughput], &[64]);
    let mut server = FakeServer::behind(LINE_64);
    server.generator_pps = Some(300_000.0);
    let doc = run_over(&a, &mut server);
    let t = &doc.rfc2544.as_ref().expect("a report").throughput[0];
    let cap = t
        .generator_cap_fps
        .expect("capped at what the generator offered");
    assert!(cap <= 300_000.0, "{cap}");
    assert!(t.fps.is_some_and(|f| f <= cap), "{t:?}");
    assert!(
        doc.notes
            .iter()
            .any(|n| n.starts_with("the generator could not reach line rate")),
        "{:?}",
        doc.notes
    );
    // A generator that keeps up is not noted.
    let doc = run_over(&a, &mut FakeServer::behind(50_000.0));
    assert!(
        !doc.notes.iter().any(|n| n.contains("generator")),
        "{:?}",
        doc.notes
    );
}

#[test]
fn the_document_says_its_trials_are_short_over_udp_and_loss_tolerant() {
    let mut a = request(&[Rfc2544Test::Throughput], &[64]);
    let doc = run_over(&a, &mut FakeServer::behind(50_000.0));
    let starts = |doc: &RunResult, s: &str| doc.notes.iter().any(|n| n.starts_with(s));
    assert!(starts(
        &doc,
        "over UDP: a frame of L bytes is a datagram of L - 46 bytes"
    ));
    assert!(starts(&doc, "trials of 1 s: RFC 2544 §24 asks for 60 s"));
    assert!(!starts(&doc, "loss-tolerant"));
    a.config.loss_ratio = 0.01;
    a.config.duration = Duration::from_secs(60);
    let doc = run_over(&a, &mut FakeServer::behind(50_000.0));
    assert!(
        starts(&doc, "loss-tolerant throughput at 1 % loss"),
        "{:?}",
        doc.notes
    );
    assert!(!starts(&doc, "trials of"), "{:?}", doc.notes);
}

#[test]
fn latency_without_throughput_and_bursts_through_a_socket_are_refused_before_any_test() {
    let refused = |tests: &[Rfc2544Test]| {
        let mut a = request(tests, &[64]);
        // Were it not refused, port 0 of this host fails at once, not in a timeout.
        a.path = Rfc2544Path::Server(Server {
            host: "127.0.0.1".into(),
            port: 0,
            key_file: None,
            allow_unauthenticated: false,
        });
        match rfc2544(&a, &mut Quiet, &Stop::new()) {
            Err(Error::Usage(m)) => m,
            other => panic!("{other:?}"),
        }
    };
    assert!(refused(&[Rfc2544Test::Latency]).contains("include throughput in --tests"));
    assert!(refused(&[Rfc2544Test::Throughput, Rfc2544Test::B2b]).contains("drop b2b"));
}

/// A device with a buffer of `frames` frames: a burst longer than that loses the rest; a
/// timed trial passes everything.
struct Buffer {
    frames: u64,
    asked: Vec<TrialRequest>,
}

impl method::Trial for Buffer {
    type Error = Error;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Error> {
        self.asked.push(*req);
        let sent = match req.load {
            Load::Burst(n) => n,
            Load::Rate(r, d) => (r.packets_per_sec(64).unwrap_or(0.0) * d.as_secs_f64()) as u64,
        };
        let received = match req.load {
            Load::Burst(n) => n.min(self.frames),
            Load::Rate(..) => sent,
        };
        let c = Counters {
            received,
            ..Counters::default()
        };
        Ok(TrialData {
            counters: c.settle(sent),
            offered_pps: LINE_64,
            duration: Duration::from_secs(1),
            ..TrialData::default()
        })
    }
}

#[test]
fn back_to_back_bursts_start_at_two_seconds_of_line_rate_unless_told() {
    let bursts = |a: &Rfc2544Request| {
        let mut dev = Buffer {
            frames: 10_000,
            asked: Vec::new(),
        };
        let rep = benchmarks(&mut dev, a, &mut Quiet).expect("b2b");
        let asked: Vec<u64> = dev
            .asked
            .iter()
            .filter_map(|r| match r.load {
                Load::Burst(n) => Some(n),
                Load::Rate(..) => None,
            })
            .collect();
        (asked, rep.b2b[0].bursts.clone())
    };
    let mut a = request(&[Rfc2544Test::B2b], &[64]);
    let line = LineRate(1_000_000_000);
    let (asked, found) = bursts(&a);
    assert_eq!(asked[0], (line.max_fps(64) * 2.0).ceil() as u64);
    assert!(found[0] <= 10_000 && found[0] >= 9_950, "{found:?}");
    a.b2b_max_burst = Some(20_000);
    let (asked, _) = bursts(&a);
    assert_eq!(asked[0], 20_000);
    // A device that forwards at line rate buffers nothing: no bursts.
    let a = request(&[Rfc2544Test::Throughput, Rfc2544Test::B2b], &[64]);
    let (asked, found) = bursts(&a);
    assert!(asked.is_empty() && found.is_empty(), "{asked:?}");
}
