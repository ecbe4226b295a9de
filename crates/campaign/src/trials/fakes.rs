//! Test doubles for the runners' seams, so that their unit tests run without root, a
//! network or a lab: a server that answers tests from a script ([`FakeServer`]), raw
//! ports joined by an in-memory wire ([`FakeTx`], [`FakeRx`]), a port a server lends
//! ([`FakeLent`]) and a command runner that records what it was asked ([`FakeRunner`]).

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use engine::frameio::{FrameRx, FrameTx};
use engine::raw::{RawTrialSpec, ReceivedStream, Reception, Reflected, Sending};
use lab::{Cmd, LabError, Runner};
use model::clock::{Clock, UnixNanos};
use model::results::Summary;
use model::spec::{Rate, TestSpec};
use model::stats::{Counters, LatencyHistogram};

use crate::trials::agents::LentPort;
use crate::trials::server::{ServerOutcome, TestServer};
use crate::Error;

/// A latency histogram of `n` samples of 50 µs.
pub(crate) fn latency(n: u64) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    h.record_n(Duration::from_micros(50), n);
    h
}

/// The totals of a 2 s UDP test that sent `sent` packets and received `received`.
pub(crate) fn summary(sent: u64, received: u64) -> Summary {
    Summary {
        duration_s: 2.0,
        sent_packets: Some(sent),
        received_packets: Some(received),
        lost_packets: Some(sent.saturating_sub(received)),
        ..Summary::default()
    }
}

/// A server that answers each test with the next totals of its script (a one-way latency
/// histogram with them), or, once the script is done, as a device of a known capacity
/// would; it records the specs it was asked to run.
pub(crate) struct FakeServer {
    /// The specs of the tests asked for, in order.
    pub(crate) asked: Vec<TestSpec>,
    /// The answers, in order; once empty, the device answers, or without one a test gives
    /// no stream of its direction.
    pub(crate) script: Vec<Result<Summary, Error>>,
    /// Every test reports it was cut short by a stop.
    pub(crate) interrupted: bool,
    /// The device between client and server: packets/s it passes, the rest lost.
    pub(crate) capacity_pps: Option<f64>,
    /// The most packets/s the client's sender offers; a test asking more is generator
    /// limited.
    pub(crate) generator_pps: Option<f64>,
}

impl FakeServer {
    /// A server answering `script`.
    pub(crate) fn answering(script: Vec<Result<Summary, Error>>) -> Self {
        Self {
            asked: Vec::new(),
            script,
            interrupted: false,
            capacity_pps: None,
            generator_pps: None,
        }
    }

    /// A server behind a device that passes `capacity_pps` packets/s and loses the rest.
    pub(crate) fn behind(capacity_pps: f64) -> Self {
        Self {
            capacity_pps: Some(capacity_pps),
            ..Self::answering(Vec::new())
        }
    }

    /// The totals of `spec` through a device passing `capacity` packets/s: what was
    /// offered (at most the generator's rate) less what the device could not pass.
    fn through_device(&self, spec: &TestSpec, capacity: f64) -> Summary {
        let secs = spec.duration.as_secs_f64();
        let bits = 8.0 * spec.len.max(1) as f64;
        let asked = match spec.rate {
            Rate::PacketsPerSec(p) => p,
            Rate::BitsPerSec(b) => b / bits,
            Rate::Unlimited => self.generator_pps.unwrap_or(capacity * 2.0),
        };
        let offered = self.generator_pps.map_or(asked, |g| asked.min(g));
        let sent = (offered * secs).round() as u64;
        let received = sent.min((capacity * secs).round() as u64);
        Summary {
            duration_s: secs,
            sent_packets: Some(sent),
            received_packets: Some(received),
            lost_packets: Some(sent - received),
            received_bytes: Some(received * spec.len as u64),
            offered_bps: Some(offered * bits),
            received_bps: Some(received as f64 * bits / secs),
            generator_limited: self.generator_pps.is_some_and(|g| asked > g * 1.001),
            ..Summary::default()
        }
    }
}

impl TestServer for FakeServer {
    fn server(&self) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], 5201))
    }

    fn run_test(&mut self, spec: &TestSpec) -> Result<ServerOutcome, Error> {
        self.asked.push(spec.clone());
        let main = match (self.script.is_empty(), self.capacity_pps) {
            (false, _) => Some((self.script.remove(0)?, Some(latency(10)))),
            (true, Some(c)) => Some((self.through_device(spec, c), Some(latency(10)))),
            (true, None) => None,
        };
        Ok(ServerOutcome {
            interrupted: self.interrupted,
            main,
            backend: "fake-udp".into(),
            timestamp_source: "kernel-software".into(),
        })
    }
}

/// An in-memory wire: what a [`FakeTx`] sends, the [`FakeRx`] on the same wire receives.
#[derive(Clone, Default)]
pub(crate) struct FakeWire(Arc<Mutex<VecDeque<Vec<u8>>>>);

impl FakeWire {
    fn frames(&self) -> MutexGuard<'_, VecDeque<Vec<u8>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A sending port onto a [`FakeWire`]: it can lose every n-th frame, take few frames per
/// call and take its time (a generator that cannot keep up).
pub(crate) struct FakeTx {
    pub(crate) wire: FakeWire,
    /// Loses every `lose_every`-th frame it takes (0: none).
    pub(crate) lose_every: u64,
    /// Frames it takes per call at most.
    pub(crate) batch: usize,
    /// How long each call takes.
    pub(crate) pause: Duration,
    /// Frames taken so far.
    pub(crate) taken: u64,
}

impl FakeTx {
    /// A port onto `wire` that loses nothing, 64 frames a call, at once.
    pub(crate) fn on(wire: &FakeWire) -> Self {
        Self {
            wire: wire.clone(),
            lose_every: 0,
            batch: 64,
            pause: Duration::ZERO,
            taken: 0,
        }
    }
}

impl FrameTx for FakeTx {
    fn name(&self) -> &'static str {
        "fake-tx"
    }

    fn batch_max(&self) -> usize {
        self.batch
    }

    fn send_frames(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> io::Result<usize> {
        if !self.pause.is_zero() {
            std::thread::sleep(self.pause);
        }
        let n = n.min(self.batch);
        let mut frames = self.wire.frames();
        for i in 0..n {
            let mut buf = vec![0u8; len];
            let used = fill(i, &mut buf);
            buf.truncate(used);
            self.taken += 1;
            if self.lose_every == 0 || !self.taken.is_multiple_of(self.lose_every) {
                frames.push_back(buf);
            }
        }
        Ok(n)
    }
}

/// A receiving port on a [`FakeWire`], stamping each frame with the wall clock when it
/// is read (as a kernel would when it arrives), or not at all.
pub(crate) struct FakeRx {
    wire: FakeWire,
    stamps: bool,
}

impl FakeRx {
    /// A port on `wire`; `stamps`: receive timestamps, for latency.
    pub(crate) fn on(wire: &FakeWire, stamps: bool) -> Self {
        Self {
            wire: wire.clone(),
            stamps,
        }
    }
}

impl FrameRx for FakeRx {
    fn name(&self) -> &'static str {
        "fake-rx"
    }

    fn recv_frames(
        &mut self,
        timeout: Duration,
        on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>),
    ) -> io::Result<usize> {
        let frames: Vec<Vec<u8>> = self.wire.frames().drain(..).collect();
        if frames.is_empty() {
            std::thread::sleep(timeout.min(Duration::from_millis(1)));
            return Ok(0);
        }
        let stamp = self.stamps.then(|| engine::clock::RealClock::new().wall());
        for f in &frames {
            on_frame(f, stamp);
        }
        Ok(frames.len())
    }

    fn take_drops(&mut self) -> u64 {
        0
    }
}

/// A port a server lends: it counts `sent − lose` of each trial's frames, sends as
/// `sending` says, turns frames around as `reflected` says, and logs every call.
pub(crate) struct FakeLent {
    /// `HOST/IFACE`.
    pub(crate) label: String,
    /// `sender / receiver` backends.
    pub(crate) backend: String,
    /// Its host's boot id.
    pub(crate) host: Option<String>,
    /// Its server's longest test, seconds.
    pub(crate) longest: f64,
    /// Frames of each trial it does not count.
    pub(crate) lose: u64,
    /// What it says it sent.
    pub(crate) sending: Sending,
    /// What it says it turned around.
    pub(crate) reflected: Reflected,
    /// Its receiver fails when told what was sent.
    pub(crate) fail_receive: bool,
    /// Every call, as `name argument`.
    pub(crate) log: Arc<Mutex<Vec<String>>>,
    /// The stream it counts now.
    pub(crate) stream: u8,
}

impl FakeLent {
    /// A port `label` of a server whose tests last up to 60 s, losing nothing.
    pub(crate) fn new(label: &str) -> Self {
        Self {
            label: label.to_owned(),
            backend: "packet / ring".into(),
            host: Some("other-host".into()),
            longest: 60.0,
            lose: 0,
            sending: Sending::default(),
            reflected: Reflected::default(),
            fail_receive: false,
            log: Arc::default(),
            stream: 0,
        }
    }

    /// The calls so far.
    pub(crate) fn calls(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
        log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn note(&self, call: String) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call);
    }
}

impl LentPort for FakeLent {
    fn label(&self) -> &str {
        &self.label
    }

    fn backend(&self) -> &str {
        &self.backend
    }

    fn host_id(&self) -> Option<&str> {
        self.host.as_deref()
    }

    fn longest_test(&self) -> f64 {
        self.longest
    }

    fn start_receive(&mut self, _test_id: u16, ids: &[u8], _drain: Duration) -> Result<(), Error> {
        self.stream = ids.first().copied().unwrap_or(0);
        self.note(format!("start_receive {ids:?}"));
        Ok(())
    }

    fn finish_receive(&mut self, sent: u64) -> Result<Reception, Error> {
        self.note(format!("finish_receive {sent}"));
        if self.fail_receive {
            return Err(Error::Failed(format!("{}: connection reset", self.label)));
        }
        let received = sent.saturating_sub(self.lose);
        Ok(Reception {
            streams: vec![ReceivedStream {
                id: self.stream,
                counters: Counters {
                    received,
                    ..Counters::default()
                },
                bytes: received * 124,
                latency: latency(received),
                unstamped: 0,
                span: Some((UnixNanos(1_000_000), UnixNanos(3_000_000))),
            }],
            strays: Vec::new(),
            foreign: 0,
            drops: 0,
        })
    }

    fn start_reflect(&mut self, test_id: u16) -> Result<(), Error> {
        self.note(format!("start_reflect {test_id}"));
        Ok(())
    }

    fn finish_reflect(&mut self, sent: u64) -> Result<Reflected, Error> {
        self.note(format!("finish_reflect {sent}"));
        Ok(self.reflected)
    }

    fn send(&mut self, _frame: &[u8], spec: &RawTrialSpec) -> Result<Sending, Error> {
        self.note(format!("send {:?}", spec.load));
        Ok(self.sending.clone())
    }
}

/// A command runner that records every command and answers them in turn from a script
/// (then with nothing), or fails them all.
pub(crate) struct FakeRunner {
    /// The commands run, in order.
    pub(crate) ran: Vec<Cmd>,
    answers: VecDeque<String>,
    fail: bool,
}

impl FakeRunner {
    /// A runner answering `answers`, one per command.
    pub(crate) fn answering(answers: Vec<String>) -> Self {
        Self {
            ran: Vec::new(),
            answers: answers.into(),
            fail: false,
        }
    }

    /// A runner whose every command exits with status 1.
    pub(crate) fn failing() -> Self {
        Self {
            fail: true,
            ..Self::answering(Vec::new())
        }
    }
}

impl Runner for FakeRunner {
    fn run(&mut self, cmd: &Cmd) -> Result<String, LabError> {
        self.ran.push(cmd.clone());
        if self.fail {
            return Err(LabError::Command {
                cmd: cmd.to_string(),
                detail: "exit status: 1".into(),
            });
        }
        Ok(self.answers.pop_front().unwrap_or_default())
    }
}
