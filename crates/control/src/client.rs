//! The client side of a test: connect, authenticate, request, connect the data streams,
//! run the local half, collect interval reports and the server's results.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use engine::live::LiveSnapshot;
use engine::{tcp, udp};
use model::results::{ConnectionFacts, StreamAddresses};
use model::spec::{EchoSpec, Protocol, TestSpec};

use crate::frame::{read_msg_within, write_msg};
use crate::messages::{ClientMsg, Limits, ServerMsg, StreamReport};
use crate::server::{
    grace, sent_counts, spawn_reader, tcp_send_config, tick_end, udp_recv_config, udp_send_config,
    TestKey,
};
use crate::streams::{self, Sender, SideRun};
use crate::{auth, ProtoError, MAGIC, VERSION};

/// Time allowed for each handshake step.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the client waits for the server's results after finishing.
const RESULTS_TIMEOUT: Duration = Duration::from_secs(15);

/// How to reach and talk to a server.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Server control address.
    pub server: SocketAddr,
    /// Pre-shared key, if the server wants one.
    pub key: Option<Vec<u8>>,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// CPU the client pins its data-plane threads to.
    pub cpu: Option<usize>,
    /// Measure round-trip latency with echoed probes even when the clocks are shared.
    pub force_round_trip: bool,
    /// When set (e.g. by Ctrl-C), a running throughput test ends early with the figures so
    /// far ([`TestOutcome::interrupted`]); ping-pong ends with [`ProtoError::Interrupted`].
    pub stop: Option<Arc<AtomicBool>>,
}

/// An established, authenticated control connection.
pub struct Session {
    ctrl: TcpStream,
    server: SocketAddr,
    /// Server and client share one clock (same boot id).
    pub same_host: bool,
    /// The server's limits.
    pub limits: Limits,
    cpu: Option<usize>,
    force_round_trip: bool,
    stop: Option<Arc<AtomicBool>>,
}

/// Everything both sides reported about one test.
#[derive(Debug, Clone)]
pub struct TestOutcome {
    /// The request.
    pub spec: TestSpec,
    /// Receivers recorded one-way latency.
    pub one_way: bool,
    /// Server and client share one clock.
    pub same_host: bool,
    /// Reports of the client's streams.
    pub local: Vec<StreamReport>,
    /// Reports of the server's streams.
    pub remote: Vec<StreamReport>,
    /// Interval samples: (interval end, client streams, server streams).
    pub intervals: Vec<IntervalSample>,
    /// The client stopped the test early (Ctrl-C): the figures cover the time it ran.
    pub interrupted: bool,
    /// Addresses, socket facts and both processes' CPU use.
    pub connection: ConnectionFacts,
}

/// Totals of every stream at the end of one interval, from both sides.
#[derive(Debug, Clone)]
pub struct IntervalSample {
    /// Interval number (0-based).
    pub index: u32,
    /// Interval start, from the test's start.
    pub start: Duration,
    /// Interval length (the last one may be shorter).
    pub length: Duration,
    /// Client streams' totals.
    pub local: Vec<(u8, LiveSnapshot)>,
    /// Server streams' totals.
    pub remote: Vec<(u8, LiveSnapshot)>,
}

/// Interval samples of both sides, paired by index as both arrive.
#[derive(Default)]
struct Ticks {
    local: BTreeMap<u32, Vec<(u8, LiveSnapshot)>>,
    remote: BTreeMap<u32, Vec<(u8, LiveSnapshot)>>,
    samples: Vec<IntervalSample>,
}

impl Ticks {
    /// Hands out, in order, every interval for which both sides' samples are in.
    fn emit(
        &mut self,
        interval: Option<Duration>,
        duration: Duration,
        on_interval: &mut impl FnMut(&IntervalSample),
    ) {
        while let Some((&k, _)) = self.local.first_key_value() {
            let Some(remote) = self.remote.remove(&k) else {
                break;
            };
            let local = self.local.remove(&k).unwrap_or_default();
            let start = interval.unwrap_or_default() * k;
            let end = tick_end(interval, duration, k).unwrap_or(start);
            let s = IntervalSample {
                index: k,
                start,
                length: end.saturating_sub(start),
                local,
                remote,
            };
            on_interval(&s);
            self.samples.push(s);
        }
    }
}

/// Turns a server error message into an error.
fn expect_ok(msg: ServerMsg) -> Result<ServerMsg, ProtoError> {
    match msg {
        ServerMsg::Error { code, message } => Err(ProtoError::Refused { code, message }),
        other => Ok(other),
    }
}

impl Session {
    /// The control connection, for a session that is not a test (a tuning session).
    pub fn into_stream(self) -> TcpStream {
        self.ctrl
    }

    /// Connects, exchanges hellos and authenticates.
    pub fn connect(cfg: &ClientConfig) -> Result<Self, ProtoError> {
        let mut ctrl =
            TcpStream::connect_timeout(&cfg.server, cfg.connect_timeout).map_err(ProtoError::Io)?;
        ctrl.set_nodelay(true).map_err(ProtoError::Io)?;
        ctrl.set_write_timeout(Some(STEP_TIMEOUT))
            .map_err(ProtoError::Io)?;
        write_msg(
            &mut ctrl,
            &ClientMsg::Hello {
                magic: MAGIC.into(),
                version: VERSION,
            },
        )?;
        let hello = expect_ok(read_msg_within(&ctrl, STEP_TIMEOUT)?)?;
        let ServerMsg::Hello {
            version,
            host_id,
            challenge,
            limits,
        } = hello
        else {
            return Err(ProtoError::Unexpected(
                "the server did not answer with hello".into(),
            ));
        };
        if version != VERSION {
            return Err(ProtoError::Version(format!(
                "server speaks version {version}, this client {VERSION}"
            )));
        }
        if let Some(ns_hex) = challenge {
            let key = cfg.key.as_ref().ok_or_else(|| {
                ProtoError::Auth("the server requires authentication: pass --auth-key-file".into())
            })?;
            let ns = auth::from_hex(&ns_hex)
                .ok_or_else(|| ProtoError::Malformed("challenge is not hex".into()))?;
            let nc =
                auth::nonce().map_err(|e| ProtoError::Io(std::io::Error::other(e.to_string())))?;
            let mac = auth::client_proof(key, &ns, &nc);
            write_msg(
                &mut ctrl,
                &ClientMsg::Auth {
                    client_nonce: auth::to_hex(&nc),
                    mac: auth::to_hex(&mac),
                },
            )?;
            match read_msg_within(&ctrl, STEP_TIMEOUT)? {
                ServerMsg::AuthOk { mac } => {
                    let ok = auth::from_hex(&mac)
                        .is_some_and(|m| auth::verify_server(key, &ns, &nc, &m));
                    if !ok {
                        return Err(ProtoError::Auth(
                            "the server could not prove it knows the key".into(),
                        ));
                    }
                }
                ServerMsg::Error { message, .. } => return Err(ProtoError::Auth(message)),
                _ => {
                    return Err(ProtoError::Unexpected(
                        "expected the authentication result".into(),
                    ))
                }
            }
        }
        let same_host = host_id.is_some() && host_id == engine::env::boot_id();
        Ok(Self {
            ctrl,
            server: cfg.server,
            same_host,
            limits,
            cpu: cfg.cpu,
            force_round_trip: cfg.force_round_trip,
            stop: cfg.stop.clone(),
        })
    }

    /// Runs one throughput test. `on_interval` sees each interval as soon as both sides'
    /// figures for it are in.
    pub fn run_test(
        mut self,
        spec: &TestSpec,
        interval: Option<Duration>,
        mut on_interval: impl FnMut(&IntervalSample),
    ) -> Result<TestOutcome, ProtoError> {
        spec.validate().map_err(|m| ProtoError::Refused {
            code: crate::messages::ErrorCode::BadRequest,
            message: m,
        })?;
        let one_way = (self.same_host || spec.synced_clocks) && !self.force_round_trip;
        let interval_ms = interval
            .map(|i| i.as_millis().clamp(1, u128::from(u32::MAX)) as u32)
            .unwrap_or(0);
        // Both sides tick on the same whole-millisecond period.
        let interval = (interval_ms > 0).then(|| Duration::from_millis(u64::from(interval_ms)));
        write_msg(
            &mut self.ctrl,
            &ClientMsg::Test {
                spec: spec.clone(),
                one_way,
                interval_ms,
            },
        )?;
        let accepted = expect_ok(read_msg_within(&self.ctrl, STEP_TIMEOUT)?)?;
        let ServerMsg::Accepted {
            test_id,
            token,
            ports,
        } = accepted
        else {
            return Err(ProtoError::Unexpected(
                "expected the test to be accepted".into(),
            ));
        };
        let key = TestKey {
            test_id,
            token,
            one_way,
        };
        let plan = streams::plan(spec);
        let mut side = SideRun::new(self.cpu);
        let mut connection = self.connection_facts(test_id);
        let setup = match spec.protocol {
            Protocol::Udp => self.setup_udp(spec, key, &ports, &plan, &mut side, &mut connection),
            Protocol::Tcp => self.setup_tcp(spec, key, &ports, &plan, &mut side, &mut connection),
        };
        if let Err(e) = setup {
            let _ = write_msg(
                &mut self.ctrl,
                &ClientMsg::Abort {
                    reason: e.to_string(),
                },
            );
            return Err(ProtoError::Io(e));
        }
        match expect_ok(read_msg_within(&self.ctrl, STEP_TIMEOUT)?)? {
            ServerMsg::Ready => {}
            _ => return Err(ProtoError::Unexpected("expected ready".into())),
        }
        if let Err(e) = side.start() {
            side.abort();
            let _ = write_msg(
                &mut self.ctrl,
                &ClientMsg::Abort {
                    reason: e.to_string(),
                },
            );
            return Err(ProtoError::Io(e));
        }
        // Every stream's handshake is answered and the receivers run: the server may send.
        write_msg(&mut self.ctrl, &ClientMsg::Start)?;
        let cpu = engine::env::ProcessCpu::start();
        let rx = spawn_reader::<ServerMsg>(&self.ctrl, spec.duration + RESULTS_TIMEOUT)
            .map_err(ProtoError::Io)?;
        let start = Instant::now();
        let end = start + spec.duration;
        let tick_at = |k: u32| tick_end(interval, spec.duration, k).map(|t| start + t);
        let mut ticks = Ticks::default();
        let mut tick = 0u32;
        let mut finished = false;
        let mut stopped = false;
        let mut remote_reports = None;
        let results_deadline = end + RESULTS_TIMEOUT;
        let fail = |side: &mut SideRun, e: ProtoError| {
            side.abort();
            Err(e)
        };
        while remote_reports.is_none() {
            let now = Instant::now();
            if now >= results_deadline {
                return fail(&mut side, ProtoError::Timeout);
            }
            // A stop (Ctrl-C) ends the test early but cleanly: this side's senders stop,
            // the server is told to stop its own, and both sides' figures so far come in.
            if !stopped
                && !finished
                && self
                    .stop
                    .as_ref()
                    .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                stopped = true;
                side.stop_senders();
            }
            let mut wait = Duration::from_millis(20);
            if let Some(t) = tick_at(tick) {
                wait = wait.min(t.saturating_duration_since(now));
            }
            match rx.recv_timeout(wait) {
                Ok(Ok(ServerMsg::Interval { index, streams })) => {
                    ticks.remote.insert(index, streams);
                }
                Ok(Ok(ServerMsg::Results { reports, host })) => {
                    if let Some(h) = host {
                        connection.remote_cpu = Some(h.cpu);
                        connection.remote_congestion = h.congestion;
                    }
                    remote_reports = Some(reports)
                }
                Ok(Ok(ServerMsg::Error { code, message })) => {
                    return fail(&mut side, ProtoError::Refused { code, message })
                }
                Ok(Ok(_)) => {
                    return fail(
                        &mut side,
                        ProtoError::Unexpected("unexpected message during the test".into()),
                    )
                }
                Ok(Err(e)) => return fail(&mut side, e),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return fail(&mut side, ProtoError::Closed)
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            // Every tick that is due, even several after a stall; the one at the end waits
            // until this side's streams are done, so the intervals add up to the totals.
            while !stopped && tick_at(tick).is_some_and(|t| Instant::now() >= t && t < end) {
                ticks.local.insert(tick, side.sample());
                tick += 1;
            }
            ticks.emit(interval, spec.duration, &mut on_interval);
            // Finish once the test's time is up and this side's senders are done (in
            // reverse mode there are none, but the time must still be up); by then every
            // tick up to the end has been sampled above.
            if !finished && (stopped || Instant::now() >= end) && side.senders_done() {
                finished = true;
                let reports = side.join_senders();
                write_msg(
                    &mut self.ctrl,
                    &ClientMsg::Finish {
                        reports: reports.clone(),
                        early: stopped,
                    },
                )?;
                side.keep(reports);
            }
        }
        let remote = remote_reports.unwrap_or_default();
        let (quiet, cap) = grace(spec);
        let mut local = side.take_kept();
        local.extend(side.finish_receivers(&sent_counts(&remote), quiet, cap));
        // Ticks the end overtook: sampled now that every counter is final, as the server did
        // (a test stopped early has no more).
        while !stopped && tick_at(tick).is_some() {
            ticks.local.insert(tick, side.sample());
            tick += 1;
        }
        ticks.emit(interval, spec.duration, &mut on_interval);
        let _ = self.ctrl.shutdown(std::net::Shutdown::Both);
        Ok(TestOutcome {
            spec: spec.clone(),
            one_way,
            same_host: self.same_host,
            local,
            remote,
            intervals: ticks.samples,
            interrupted: stopped,
            connection: ConnectionFacts {
                cpu: Some(cpu.used()),
                ..connection
            },
        })
    }

    fn setup_udp(
        &self,
        spec: &TestSpec,
        key: TestKey,
        ports: &[u16],
        plan: &[(u8, Sender)],
        side: &mut SideRun,
        facts: &mut ConnectionFacts,
    ) -> std::io::Result<()> {
        if ports.len() != plan.len() {
            return Err(std::io::Error::other(
                "the server announced the wrong number of stream ports",
            ));
        }
        let bind: SocketAddr = if self.server.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        }
        .parse()
        .map_err(|_| std::io::Error::other("bad bind address"))?;
        let mut socks = Vec::new();
        let deadline = Instant::now() + STEP_TIMEOUT;
        for ((id, _), port) in plan.iter().zip(ports) {
            let s = UdpSocket::bind(bind)?;
            s.connect(SocketAddr::new(self.server.ip(), *port))?;
            udp::prepare_socket(&s, spec.window, spec.dscp)?;
            let left = deadline.saturating_duration_since(Instant::now());
            udp::register(&s, key.test_id, *id, key.token, left)?;
            add_stream(facts, *id, &s.local_addr(), &s.peer_addr(), &s);
            socks.push(s);
        }
        for (s, (id, who)) in socks.iter().zip(plan) {
            if *who == Sender::Server {
                side.udp_receiver(s.try_clone()?, udp_recv_config(spec, key, *id))?;
            }
        }
        for (s, (id, who)) in socks.into_iter().zip(plan) {
            if *who == Sender::Client {
                side.udp_sender_pending(s, udp_send_config(spec, key, *id));
            }
        }
        Ok(())
    }

    fn setup_tcp(
        &self,
        spec: &TestSpec,
        key: TestKey,
        ports: &[u16],
        plan: &[(u8, Sender)],
        side: &mut SideRun,
        facts: &mut ConnectionFacts,
    ) -> std::io::Result<()> {
        let port = *ports
            .first()
            .ok_or_else(|| std::io::Error::other("the server announced no data port"))?;
        let addr = SocketAddr::new(self.server.ip(), port);
        for (id, who) in plan {
            let mut s = TcpStream::connect_timeout(&addr, STEP_TIMEOUT)?;
            tcp::prepare_stream(&s, spec.window, spec.dscp)?;
            streams::write_greeting(&mut s, key.test_id, *id, key.token)?;
            add_stream(facts, *id, &s.local_addr(), &s.peer_addr(), &s);
            if facts.congestion.is_none() {
                facts.congestion = engine::sys::tcp_congestion(&s).ok();
            }
            match who {
                Sender::Server => side.tcp_receiver(s, *id)?,
                Sender::Client => side.tcp_sender_pending(s, tcp_send_config(spec, *id)),
            }
        }
        Ok(())
    }

    /// What the control connection tells about the test's connections.
    fn connection_facts(&self, test_id: u16) -> ConnectionFacts {
        let addr = |a: std::io::Result<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        ConnectionFacts {
            local: addr(self.ctrl.local_addr()),
            remote: addr(self.ctrl.peer_addr()),
            cookie: format!("wirebench-test-{test_id}"),
            tcp_mss: engine::sys::tcp_maxseg(&self.ctrl).ok(),
            ..ConnectionFacts::default()
        }
    }

    /// Opens an echo socket on the server and runs ping-pong for each message size.
    /// `kernel_timestamps` stamps answers on arrival in the kernel (excluding this host's
    /// wake-up time); `false` stamps them after `recv` returns, as sockperf does.
    pub fn run_echo(
        mut self,
        spec: &EchoSpec,
        sizes: &[usize],
        per_size: Duration,
        kernel_timestamps: bool,
    ) -> Result<Vec<udp::PingPongReport>, ProtoError> {
        write_msg(&mut self.ctrl, &ClientMsg::Echo { spec: spec.clone() })?;
        let port = match expect_ok(read_msg_within(&self.ctrl, STEP_TIMEOUT)?)? {
            ServerMsg::EchoReady { port } => port,
            _ => return Err(ProtoError::Unexpected("expected echo-ready".into())),
        };
        let bind = if self.server.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let sock = UdpSocket::bind(bind).map_err(ProtoError::Io)?;
        sock.connect(SocketAddr::new(self.server.ip(), port))
            .map_err(ProtoError::Io)?;
        let kernel_ts = kernel_timestamps && engine::sys::enable_rx_timestamps(&sock).is_ok();
        let mut out = Vec::new();
        let stopped = || {
            self.stop
                .as_ref()
                .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        };
        for &size in sizes {
            // A stop ends the test between message sizes.
            if stopped() {
                break;
            }
            out.push(
                udp::run_ping_pong(&sock, size, per_size, spec.spin, kernel_ts)
                    .map_err(ProtoError::Io)?,
            );
        }
        let interrupted = stopped();
        let _ = write_msg(
            &mut self.ctrl,
            &ClientMsg::Finish {
                reports: Vec::new(),
                early: false,
            },
        );
        if interrupted {
            return Err(ProtoError::Interrupted);
        }
        Ok(out)
    }
}

/// Adds a data stream's addresses to `facts`; the first socket gives the buffer sizes.
pub(crate) fn add_stream(
    facts: &mut ConnectionFacts,
    id: u8,
    local: &std::io::Result<SocketAddr>,
    remote: &std::io::Result<SocketAddr>,
    sock: &impl std::os::fd::AsRawFd,
) {
    let addr =
        |a: &std::io::Result<SocketAddr>| a.as_ref().map(|a| a.to_string()).unwrap_or_default();
    facts.streams.push(StreamAddresses {
        id,
        local: addr(local),
        remote: addr(remote),
    });
    if facts.sndbuf.is_none() {
        if let Ok((snd, rcv)) = engine::sys::socket_buffers(sock) {
            facts.sndbuf = Some(snd);
            facts.rcvbuf = Some(rcv);
        }
    }
}
