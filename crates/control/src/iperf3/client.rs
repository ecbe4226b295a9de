//! A test against a stock iperf3 server: the control dialogue of `iperf3 -c` (cookie,
//! parameters, streams, start, end, results) around wirebench's own data plane: TCP
//! through `engine::tcp`, UDP in iperf3's format through `engine::iperf3_udp`, with
//! wirebench's accounting on everything received. The outcome is a [`TestOutcome`] like a
//! wirebench server's (the iperf3 server's streams as its remote reports), plus the iperf3
//! server's own results as it sent them.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use engine::clock::RealClock;
use engine::iperf3_udp::{self, Iperf3RecvReport, Iperf3SendConfig, Iperf3SendReport};
use engine::live::LiveCounters;
use engine::tcp::{self, TcpReceiverReport, TcpSendConfig, TcpSenderReport};
use model::clock::Clock;
use model::spec::{Direction, Protocol, TestSpec};
use model::stop::Stop;

use super::{
    cookie, is_udp_reply, read_json, read_state, state, stream_id, write_json, write_state, Params,
    Results, StreamResult, UDP_HELLO,
};
use crate::messages::report::{TcpRxReport, TcpTxReport, UdpRxReport, UdpTxReport};
use crate::messages::StreamReport;
use crate::outcome::{add_stream, IntervalSample, TestOutcome};
use crate::streams::stream_local;
use crate::timing::tick_end;
use crate::ProtoError;
use model::results::{ConnectionFacts, CpuUse};
use model::wait::{Poll, Wait};

/// Longest wait for the server between states.
const STEP: Duration = Duration::from_secs(30);

/// A test against an iperf3 server.
#[derive(Debug, Clone)]
pub struct Iperf3Client {
    /// The server.
    pub server: SocketAddr,
    /// What to run (protocol, direction, rate per stream, length, streams, duration,
    /// window).
    pub spec: TestSpec,
    /// Stop early (Ctrl-C): the test ends now, with the figures so far.
    pub stop: Option<Stop>,
    /// Interval length (`-i`); `None` for none.
    pub interval: Option<Duration>,
    /// Local address (`-B`) and first data port (`--cport`).
    pub bind: Option<std::net::IpAddr>,
    /// Local port of the first data stream; stream `i` uses `cport + i`.
    pub cport: Option<u16>,
    /// Connect timeout of the control connection.
    pub connect_timeout: Duration,
    /// Ask the server for its own output (`--get-server-output`).
    pub get_server_output: bool,
}

/// What the test gave.
#[derive(Debug, Clone)]
pub struct Iperf3Outcome {
    /// Both sides' streams, as a wirebench test's.
    pub outcome: TestOutcome,
    /// The iperf3 server's own results, as it sent them.
    pub server: Results,
}

enum Data {
    TcpTx(TcpStream),
    TcpRx(TcpStream),
    UdpTx(UdpSocket),
    UdpRx(UdpSocket),
}

enum Report {
    TcpTx(TcpSenderReport),
    TcpRx(TcpReceiverReport),
    UdpTx(Iperf3SendReport),
    UdpRx(Iperf3RecvReport),
}

fn refused(ctrl: &mut TcpStream, s: i8) -> ProtoError {
    let message = match s {
        state::ACCESS_DENIED => {
            "the iperf3 server refused: it is busy running a test (an iperf3 server runs one at a time)".to_owned()
        }
        state::SERVER_ERROR => {
            let mut b = [0u8; 8];
            let n = std::io::Read::read(ctrl, &mut b).unwrap_or(0);
            let code = (n >= 4).then(|| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            let errno = (n >= 8).then(|| i32::from_be_bytes([b[4], b[5], b[6], b[7]]));
            format!(
                "the iperf3 server failed to set the test up (iperf3 error {}, errno {})",
                code.map_or("?".into(), |c| c.to_string()),
                errno.map_or("?".into(), |c| c.to_string())
            )
        }
        state::SERVER_TERMINATE => "the iperf3 server was stopped".into(),
        other => format!("the iperf3 server sent an unexpected state {other}"),
    };
    ProtoError::Refused {
        code: crate::messages::ErrorCode::BadRequest,
        message,
    }
}

/// Reads states until `want`; anything else that is not `want` ends the test.
fn expect(ctrl: &mut TcpStream, want: i8) -> Result<(), ProtoError> {
    match read_state(ctrl)? {
        s if s == want => Ok(()),
        s => Err(refused(ctrl, s)),
    }
}

impl Iperf3Client {
    fn params(&self) -> Params {
        let s = &self.spec;
        Params {
            udp: s.protocol == Protocol::Udp,
            time: s.duration.as_secs_f64().ceil().max(1.0) as u64,
            parallel: usize::from(s.streams.max(1)),
            len: s.len,
            bandwidth: s.rate.bits_per_sec(s.len).map_or(0, |b| b.round() as u64),
            reverse: s.direction == Direction::Reverse,
            bidir: s.direction == Direction::Bidir,
            window: s.window.map(u64::from),
            counters_64bit: true,
            tcp: model::spec::TcpOptions {
                zerocopy: false,
                ..s.tcp.clone()
            },
            num: s
                .bytes_per_stream
                .map_or(0, |b| b.saturating_mul(u64::from(s.streams))),
            omit: s.omit.map_or(0, |o| o.as_secs()),
            get_server_output: self.get_server_output,
        }
    }

    /// Runs the test; `on_interval` sees each interval sample (with the one before it) as
    /// it is taken.
    ///
    /// # Errors
    /// No connection, the server refused or failed, or the dialogue broke.
    pub fn run(
        &self,
        mut on_interval: impl FnMut(&IntervalSample, Option<&IntervalSample>),
    ) -> Result<Iperf3Outcome, ProtoError> {
        // iperf3 takes its warm-up (-O) in whole seconds: both sides use the same.
        let mut this = std::borrow::Cow::Borrowed(self);
        if let Some(o) = self.spec.omit.filter(|o| o.subsec_nanos() != 0) {
            this.to_mut().spec.omit = Some(Duration::from_secs(o.as_secs() + 1));
        }
        this.run_as_asked(&mut on_interval)
    }

    fn run_as_asked(
        &self,
        on_interval: &mut impl FnMut(&IntervalSample, Option<&IntervalSample>),
    ) -> Result<Iperf3Outcome, ProtoError> {
        let p = self.params();
        let cookie = cookie()?;
        let bind = self.bind.map(|ip| SocketAddr::new(ip, 0));
        let mut ctrl =
            tcp::connect(self.server, bind, None, self.connect_timeout).map_err(ProtoError::Io)?;
        ctrl.set_nodelay(true).map_err(ProtoError::Io)?;
        ctrl.set_read_timeout(Some(STEP)).map_err(ProtoError::Io)?;
        std::io::Write::write_all(&mut ctrl, &cookie).map_err(ProtoError::Io)?;
        expect(&mut ctrl, state::PARAM_EXCHANGE)?;
        write_json(&mut ctrl, &p.to_json())?;
        expect(&mut ctrl, state::CREATE_STREAMS)?;
        // Streams in iperf3's order: with --bidir the client's senders first.
        let n = p.parallel;
        let sends = |i: usize| match self.spec.direction {
            Direction::Forward => true,
            Direction::Reverse => false,
            Direction::Bidir => i < n,
        };
        let total = if p.bidir { 2 * n } else { n };
        let addr = |a: std::io::Result<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        let mut facts = ConnectionFacts {
            local: addr(ctrl.local_addr()),
            remote: addr(ctrl.peer_addr()),
            cookie: String::from_utf8_lossy(&cookie)
                .trim_end_matches('\0')
                .to_owned(),
            tcp_mss: engine::tcp::mss(&ctrl),
            ..ConnectionFacts::default()
        };
        let mut data = Vec::with_capacity(total);
        for i in 0..total {
            data.push(self.open_stream(&cookie, p.udp, sends(i), (i + 1) as u8, &mut facts)?);
        }
        expect(&mut ctrl, state::TEST_START)?;
        expect(&mut ctrl, state::TEST_RUNNING)?;
        let cpu = engine::env::ProcessCpu::start();
        // Senders stop at their duration or at a user's stop; receivers at the server's end.
        let send_stop = Stop::new();
        let stop = Stop::new();
        let user_stop = self.stop.clone();
        let lives: Vec<Arc<LiveCounters>> = (0..data.len()).map(|_| Arc::default()).collect();
        let same_host = self.same_host();
        let threads: Vec<_> = data
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                let stop = if sends(i) { &send_stop } else { &stop }.clone();
                let spec = self.spec.clone();
                let live = Arc::clone(&lives[i]);
                (
                    sends(i),
                    thread::spawn(move || run_stream(d, &spec, same_host, &live, &stop)),
                )
            })
            .collect();
        // The client decides the end; intervals are this side's counters (an iperf3 server
        // sends none during the test).
        // The measured time (and its intervals) starts after the warm-up (-O).
        let omit = self.spec.omit.unwrap_or_default();
        let clock = RealClock::new();
        let start = clock.mono() + omit;
        let mut samples = Vec::new();
        let mut interrupted = false;
        let mut ran_for = self.spec.duration;
        let interval = self.interval;
        Wait::on(&RealClock::new()).poll(|| {
            let now = clock.mono().saturating_sub(start);
            // Ticks that are due; the one at the end waits until the streams are done.
            while let Some(t) = tick_end(interval, ran_for, samples.len() as u32) {
                if now < t || t >= ran_for {
                    break;
                }
                take_sample(&mut samples, interval, t, &lives, on_interval);
            }
            if now >= self.spec.duration {
                return Poll::Ready(());
            }
            // -n/-k: the test ends when every sender has sent its share.
            if self.spec.bytes_per_stream.is_some()
                && threads.iter().all(|(sends, t)| !sends || t.is_finished())
            {
                ran_for = now;
                return Poll::Ready(());
            }
            if user_stop.as_ref().is_some_and(Stop::is_raised) {
                // A stop ends the test early but cleanly: iperf3 takes TEST_END at any time.
                interrupted = true;
                ran_for = now;
                send_stop.raise();
                return Poll::Ready(());
            }
            Poll::Wait(
                Duration::from_millis(20).min(
                    tick_end(interval, ran_for, samples.len() as u32)
                        .unwrap_or(ran_for)
                        .saturating_sub(now)
                        .max(Duration::from_millis(1)),
                ),
            )
        });
        // Our senders end on their own duration, before the end is said: the server counts
        // what they sent up to the end. Receivers end at the server's close (TCP) or after
        // their drain (UDP).
        let join = |t: thread::JoinHandle<Report>| {
            t.join()
                .map_err(|_| ProtoError::Unexpected("a data thread panicked".into()))
        };
        let mut reports: Vec<Option<Report>> = Vec::with_capacity(threads.len());
        let mut receivers = Vec::new();
        for (i, (sender, t)) in threads.into_iter().enumerate() {
            if sender {
                reports.push(Some(join(t)?));
            } else {
                reports.push(None);
                receivers.push((i, t));
            }
        }
        // The intervals up to the end (the last one partial), now that our senders are done:
        // what arrives later (a queue's tail) is in the totals, not in an interval.
        while let Some(t) = tick_end(interval, ran_for, samples.len() as u32) {
            take_sample(&mut samples, interval, t, &lives, on_interval);
        }
        write_state(&mut ctrl, state::TEST_END)?;
        let watchdog = {
            let stop = stop.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_secs(5));
                stop.raise();
            })
        };
        for (i, t) in receivers {
            reports[i] = Some(join(t)?);
        }
        let reports: Vec<Report> = reports.into_iter().flatten().collect();
        drop(watchdog);
        expect(&mut ctrl, state::EXCHANGE_RESULTS)?;
        let used = cpu.used();
        facts.cpu = Some(used);
        write_json(
            &mut ctrl,
            &ours(&reports, used).to_json(if sends(0) { 1 } else { -1 }),
        )?;
        let server = Results::from_json(&read_json(&mut ctrl)?)?;
        facts.remote_cpu = Some(CpuUse {
            total: server.cpu[0],
            user: server.cpu[1],
            system: server.cpu[2],
        });
        facts.remote_congestion = server.congestion.clone();
        expect(&mut ctrl, state::DISPLAY_RESULTS)?;
        write_state(&mut ctrl, state::IPERF_DONE)?;
        let mut outcome = self.outcome(&reports, &server);
        outcome.intervals = samples;
        outcome.interrupted = interrupted;
        outcome.ran_for = ran_for;
        outcome.connection = facts;
        Ok(Iperf3Outcome { outcome, server })
    }

    fn open_stream(
        &self,
        cookie: &[u8],
        udp: bool,
        sends: bool,
        id: u8,
        facts: &mut ConnectionFacts,
    ) -> Result<Data, ProtoError> {
        if udp {
            let sock = UdpSocket::bind(self.local_for(id)).map_err(ProtoError::Io)?;
            sock.connect(self.server).map_err(ProtoError::Io)?;
            sock.set_read_timeout(Some(Duration::from_secs(5)))
                .map_err(ProtoError::Io)?;
            sock.send(&UDP_HELLO).map_err(ProtoError::Io)?;
            let mut b = [0u8; 64];
            let n = sock.recv(&mut b).map_err(ProtoError::from_io)?;
            if !is_udp_reply(&b[..n]) {
                return Err(ProtoError::Unexpected(
                    "the iperf3 server did not answer the UDP stream's hello".into(),
                ));
            }
            let _ = engine::udp::prepare_socket(&sock, self.spec.window, self.spec.dscp);
            add_stream(facts, id, &sock.local_addr(), &sock.peer_addr(), &sock);
            Ok(if sends {
                Data::UdpTx(sock)
            } else {
                Data::UdpRx(sock)
            })
        } else {
            let from = (self.bind.is_some() || self.cport.is_some()).then(|| self.local_for(id));
            let mut s =
                tcp::connect(self.server, from, self.spec.tcp.mss, STEP).map_err(ProtoError::Io)?;
            std::io::Write::write_all(&mut s, cookie).map_err(ProtoError::Io)?;
            tcp::prepare_stream(&s, self.spec.window, self.spec.dscp, &self.spec.tcp)
                .map_err(ProtoError::Io)?;
            add_stream(facts, id, &s.local_addr(), &s.peer_addr(), &s);
            if facts.congestion.is_none() {
                facts.congestion = engine::tcp::congestion(&s);
                facts.tcp_mss = engine::tcp::mss(&s).or(facts.tcp_mss);
                facts.nodelay = s.nodelay().ok();
            }
            Ok(if sends {
                Data::TcpTx(s)
            } else {
                Data::TcpRx(s)
            })
        }
    }

    /// The local address of stream `id` (from 1).
    fn local_for(&self, id: u8) -> SocketAddr {
        stream_local(
            self.server,
            self.bind,
            self.cport,
            usize::from(id.saturating_sub(1)),
        )
    }

    /// The iperf3 server runs on this host (an address of this network namespace): its
    /// `CLOCK_MONOTONIC` stamps are on our clock.
    fn same_host(&self) -> bool {
        let ip = self.server.ip();
        ip.is_loopback() || engine::nic::interface_with_address(ip).is_ok_and(|i| i.is_some())
    }

    /// Our streams as local reports and the iperf3 server's as remote ones.
    fn outcome(&self, reports: &[Report], server: &Results) -> TestOutcome {
        let mut local = Vec::new();
        let mut remote = Vec::new();
        for (i, r) in reports.iter().enumerate() {
            let id = (i + 1) as u8;
            let peer = server
                .streams
                .iter()
                .find(|s| s.id == stream_id(i))
                .copied()
                .unwrap_or_default();
            // Figures from the peer: a value no duration can hold is none.
            let elapsed = Duration::try_from_secs_f64(peer.end_time).unwrap_or_default();
            // The iperf3 server's CPU use, % of one core, over the stream's time.
            let cpu_time =
                Duration::try_from_secs_f64(server.cpu[0] / 100.0 * elapsed.as_secs_f64())
                    .unwrap_or_default();
            match r {
                Report::TcpTx(t) => {
                    // iperf3's count of what it received leaves the warm-up (-O) out
                    // already: nothing is to be taken off it.
                    local.push(StreamReport::TcpTx(TcpTxReport {
                        stream_id: id,
                        omitted_bytes: 0,
                        ..t.clone().into()
                    }));
                    remote.push(StreamReport::TcpRx(TcpRxReport {
                        stream_id: id,
                        bytes: peer.bytes,
                        elapsed,
                        cpu_time,
                        ..Default::default()
                    }));
                }
                Report::TcpRx(t) => {
                    local.push(StreamReport::TcpRx(TcpRxReport {
                        stream_id: id,
                        ..t.clone().into()
                    }));
                    // What we read in our warm-up (-O) comes off what we read (iperf3
                    // counts its own from the end of its warm-up).
                    remote.push(StreamReport::TcpTx(TcpTxReport {
                        stream_id: id,
                        bytes: peer.bytes,
                        elapsed,
                        retransmits: peer.retransmits,
                        cpu_time,
                        omitted_bytes: t.omitted_bytes,
                        ..Default::default()
                    }));
                }
                Report::UdpTx(t) => {
                    let mut tx = udp_tx(id, t.packets, t.bytes, t.elapsed);
                    tx.cpu_time = t.cpu_time;
                    tx.send_errors = t.errors;
                    local.push(StreamReport::UdpTx(tx));
                    // The iperf3 server's accounting: received = highest count − lost.
                    let received = peer.packets.saturating_sub(peer.errors);
                    remote.push(StreamReport::UdpRx(UdpRxReport {
                        stream_id: id,
                        counters: model::stats::Counters {
                            received,
                            lost: peer.errors,
                            ..Default::default()
                        },
                        bytes: peer.bytes,
                        jitter_us: peer.jitter_s * 1e6,
                        active: elapsed,
                        mode: "iperf3".into(),
                        cpu_time,
                        wall_time: elapsed,
                        ..Default::default()
                    }));
                }
                Report::UdpRx(t) => {
                    let s = &t.snapshot;
                    let active = match (s.first_rx, s.last_rx) {
                        (Some(a), Some(b)) => b.saturating_sub(a),
                        _ => Duration::ZERO,
                    };
                    local.push(StreamReport::UdpRx(UdpRxReport {
                        stream_id: id,
                        counters: s.counters,
                        bytes: s.bytes,
                        jitter_us: s.jitter_us,
                        latency: t.latency.as_ref().and_then(|h| h.summary()),
                        latency_histogram: t.latency.clone(),
                        active,
                        mode: "blocking".into(),
                        cpu_time: t.cpu_time,
                        wall_time: t.wall_time,
                        ..Default::default()
                    }));
                    let mut tx = udp_tx(id, peer.packets, peer.bytes, elapsed);
                    tx.cpu_time = cpu_time;
                    remote.push(StreamReport::UdpTx(tx));
                }
            }
        }
        let same_host = self.same_host();
        TestOutcome {
            started: None,
            spec: self.spec.clone(),
            one_way: same_host,
            same_host,
            local,
            remote,
            intervals: Vec::new(),
            interrupted: false,
            ran_for: self.spec.duration,
            connection: ConnectionFacts::default(),
        }
    }
}

/// Samples every stream's counters as the interval ending at `end`, and hands it out with
/// the one before it.
fn take_sample(
    samples: &mut Vec<IntervalSample>,
    interval: Option<Duration>,
    end: Duration,
    lives: &[Arc<LiveCounters>],
    on_interval: &mut impl FnMut(&IntervalSample, Option<&IntervalSample>),
) {
    let k = samples.len() as u32;
    let start = interval.unwrap_or_default() * k;
    samples.push(IntervalSample {
        index: k,
        start,
        length: end.saturating_sub(start),
        local: lives
            .iter()
            .enumerate()
            .map(|(i, l)| ((i + 1) as u8, l.snapshot()))
            .collect(),
        remote: Vec::new(),
    });
    match samples.as_slice() {
        [.., prev, cur] => on_interval(cur, Some(prev)),
        [cur] => on_interval(cur, None),
        [] => {}
    }
}

fn udp_tx(id: u8, packets: u64, bytes: u64, elapsed: Duration) -> UdpTxReport {
    UdpTxReport {
        stream_id: id,
        packets,
        bytes,
        elapsed,
        backend: "udp-iperf3".into(),
        ..Default::default()
    }
}

/// Our side's results object, as iperf3 reads it.
fn ours(reports: &[Report], cpu: CpuUse) -> Results {
    let streams = reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let id = stream_id(i);
            match r {
                Report::TcpTx(t) => StreamResult {
                    id,
                    bytes: t.bytes,
                    retransmits: t.retransmits,
                    end_time: t.elapsed.as_secs_f64(),
                    ..Default::default()
                },
                Report::TcpRx(t) => StreamResult {
                    id,
                    bytes: t.bytes,
                    end_time: t.elapsed.as_secs_f64(),
                    ..Default::default()
                },
                Report::UdpTx(t) => StreamResult {
                    id,
                    bytes: t.bytes,
                    packets: t.packets,
                    end_time: t.elapsed.as_secs_f64(),
                    ..Default::default()
                },
                Report::UdpRx(t) => StreamResult {
                    id,
                    ..StreamResult::received(t)
                },
            }
        })
        .collect();
    Results {
        cpu: [cpu.total, cpu.user, cpu.system],
        congestion: None,
        server_output: None,
        streams,
    }
}

/// One stream's data, until its duration (a sender) or the peer's end (a receiver).
fn run_stream(
    d: Data,
    spec: &TestSpec,
    same_host: bool,
    live: &LiveCounters,
    stop: &Stop,
) -> Report {
    match d {
        Data::TcpTx(s) => Report::TcpTx(tcp::run_sender(
            &s,
            &TcpSendConfig {
                stream_id: 0,
                block_len: spec.len,
                rate: spec.rate,
                duration: spec.duration,
                bytes: spec.bytes_per_stream,
                zerocopy: spec.tcp.zerocopy,
                omit: spec.omit.unwrap_or_default(),
            },
            live,
            stop,
        )),
        Data::TcpRx(s) => Report::TcpRx(tcp::run_receiver(
            &s,
            0,
            spec.omit.unwrap_or_default(),
            usize::from(spec.streams),
            live,
            stop,
        )),
        Data::UdpTx(s) => Report::UdpTx(iperf3_udp::run_sender(
            &s,
            &Iperf3SendConfig {
                len: spec.len,
                rate: spec.rate,
                duration: spec.duration,
                counters_64bit: true,
                packets: spec
                    .bytes_per_stream
                    .map(|b| b.div_ceil(spec.len.max(1) as u64)),
            },
            live,
            stop,
        )),
        Data::UdpRx(s) => Report::UdpRx(iperf3_udp::run_receiver(
            &s,
            spec.len + 64,
            true,
            spec.duration,
            same_host,
            live,
            stop,
        )),
    }
}
