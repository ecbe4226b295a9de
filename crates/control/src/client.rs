//! The client side of a test: connect, authenticate, request, connect the data streams,
//! run the local half, collect interval reports and the server's results.
//!
//! It shares with the server only what both sides derive from a request (`streams`,
//! `timing`) and the control connection's plumbing (`conn`); it imports
//! nothing of the server. A session reads time from its clock (the real one, or the one
//! given to [`Session::connect_with_clock`]): its deadlines, ticks and `Alive` messages.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use engine::clock::RealClock;
use engine::live::LiveSnapshot;
use engine::{tcp, udp};
use model::clock::Clock;
use model::results::ConnectionFacts;
use model::spec::{EchoSpec, Protocol, TestSpec};
use model::stop::Stop;

use crate::conn::{keep_alive, spawn_reader, ALIVE_EVERY};
use crate::frame::{read_msg_within, write_msg};
use crate::messages::{ClientMsg, Limits, ServerMsg};
use crate::outcome::add_stream;
pub use crate::outcome::{IntervalSample, TestOutcome};
use crate::streams::{
    self, stream_local, tcp_send_config, udp_recv_config, udp_send_config, Sender, SideRun, TestKey,
};
use crate::timing::{grace, sent_counts, tick_end};
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
    /// Local address to send from (`-B`); the system picks by route when absent.
    pub bind: Option<std::net::IpAddr>,
    /// Local port of the first data stream (`--cport`); stream `i` uses `cport + i`.
    pub cport: Option<u16>,
    /// CPU the client pins its data-plane threads to.
    pub cpu: Option<usize>,
    /// Measure round-trip latency with echoed probes even when the clocks are shared.
    pub force_round_trip: bool,
    /// When set (e.g. by Ctrl-C), a running throughput test ends early with the figures so
    /// far ([`TestOutcome::interrupted`]); ping-pong ends with [`ProtoError::Interrupted`].
    pub stop: Option<Stop>,
    /// With a key: go on with a server that does not ask for it (by default such a server
    /// is refused: it could be an impostor, and the test would run unauthenticated).
    pub allow_unauthenticated_server: bool,
}

/// An established, authenticated control connection.
pub struct Session {
    pub(crate) ctrl: TcpStream,
    /// Where the session reads time.
    pub(crate) clock: Arc<dyn Clock>,
    server: SocketAddr,
    bind: Option<std::net::IpAddr>,
    cport: Option<u16>,
    /// Server and client share one clock (same boot id).
    pub same_host: bool,
    /// The server's boot id, when it said it: equal ones share a clock.
    pub host_id: Option<String>,
    /// The server's limits.
    pub limits: Limits,
    cpu: Option<usize>,
    force_round_trip: bool,
    pub(crate) stop: Option<Stop>,
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
        Self::connect_with_clock(cfg, Arc::new(RealClock::new()))
    }

    /// [`Session::connect`], the session reading time from `clock` (a virtual one in
    /// tests).
    pub fn connect_with_clock(
        cfg: &ClientConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ProtoError> {
        let bind = cfg.bind.map(|ip| SocketAddr::new(ip, 0));
        let mut ctrl =
            tcp::connect(cfg.server, bind, None, cfg.connect_timeout).map_err(ProtoError::Io)?;
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
        // A wirebench answer starts with its length (below 2^24: a 0 byte); an iperf3
        // server answers our first 37 bytes, its cookie, with one state byte (9, or -1/-2).
        ctrl.set_read_timeout(Some(STEP_TIMEOUT))
            .map_err(ProtoError::Io)?;
        let mut first = [0u8; 1];
        if ctrl.peek(&mut first).map_err(ProtoError::from_io)? == 1 && first[0] != 0 {
            // An iperf3 server cannot prove it holds the key: with one, it is refused as
            // any server that does not ask for the key is.
            if cfg.key.is_some() && !cfg.allow_unauthenticated_server {
                return Err(ProtoError::Auth(
                    "this client has a key but the server answers as iperf3, which cannot check it (--allow-unauthenticated-server to go on)".into(),
                ));
            }
            return Err(ProtoError::Iperf3Peer);
        }
        let hello = expect_ok(read_msg_within(&ctrl, STEP_TIMEOUT, &*clock)?)?;
        let ServerMsg::Hello {
            version,
            mut host_id,
            challenge,
            mut limits,
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
        if challenge.is_none() && cfg.key.is_some() && !cfg.allow_unauthenticated_server {
            return Err(ProtoError::Auth(
                "this client has a key but the server did not ask for it: it may not be the server you meant (--allow-unauthenticated-server to go on)".into(),
            ));
        }
        keep_alive(&ctrl);
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
            match read_msg_within(&ctrl, STEP_TIMEOUT, &*clock)? {
                ServerMsg::AuthOk {
                    mac,
                    host_id: id,
                    limits: l,
                } => {
                    let ok = auth::from_hex(&mac)
                        .is_some_and(|m| auth::verify_server(key, &ns, &nc, &m));
                    if !ok {
                        return Err(ProtoError::Auth(
                            "the server could not prove it knows the key".into(),
                        ));
                    }
                    host_id = host_id.or(id);
                    limits = limits.or(l);
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
        let limits = limits.ok_or_else(|| {
            ProtoError::Unexpected("the server did not say what it allows".into())
        })?;
        Ok(Self {
            ctrl,
            clock,
            server: cfg.server,
            bind: cfg.bind,
            cport: cfg.cport,
            same_host,
            host_id,
            limits,
            cpu: cfg.cpu,
            force_round_trip: cfg.force_round_trip,
            stop: cfg.stop.clone(),
        })
    }

    /// Runs one throughput test. `on_interval` sees each interval as soon as both sides'
    /// figures for it are in.
    pub fn run_test(
        self,
        spec: &TestSpec,
        interval: Option<Duration>,
        on_interval: impl FnMut(&IntervalSample),
    ) -> Result<TestOutcome, ProtoError> {
        self.run_test_telling(spec, spec, interval, on_interval)
    }

    /// Runs a test whose request says `told` while the senders run `spec` (the same but
    /// for tests of the server's metering: a client that lies about its rate).
    pub(crate) fn run_test_telling(
        mut self,
        told: &TestSpec,
        spec: &TestSpec,
        interval: Option<Duration>,
        mut on_interval: impl FnMut(&IntervalSample),
    ) -> Result<TestOutcome, ProtoError> {
        spec.check().map_err(|e| ProtoError::Refused {
            code: crate::messages::ErrorCode::BadRequest,
            message: e.to_string(),
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
                spec: told.clone(),
                one_way,
                interval_ms,
            },
        )?;
        let clock = Arc::clone(&self.clock);
        let clock = &*clock;
        let accepted = expect_ok(read_msg_within(&self.ctrl, STEP_TIMEOUT, clock)?)?;
        let ServerMsg::Accepted {
            test_id,
            token,
            ports,
            udp_max_send,
        } = accepted
        else {
            return Err(ProtoError::Unexpected(
                "expected the test to be accepted".into(),
            ));
        };
        let key = TestKey::new(spec, test_id, token, one_way, interval_ms);
        let plan = streams::plan(spec);
        let mut side = SideRun::new(self.cpu);
        let mut connection = self.connection_facts(test_id);
        let setup = match spec.protocol {
            Protocol::Udp => {
                let max_send = udp_max_send.map(|m| m as usize);
                self.setup_udp(
                    spec,
                    key,
                    (&ports, max_send),
                    &plan,
                    &mut side,
                    &mut connection,
                )
            }
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
        match expect_ok(read_msg_within(&self.ctrl, STEP_TIMEOUT, clock)?)? {
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
        let started = clock.wall().saturating_add(spec.omit.unwrap_or_default());
        let cpu = engine::env::ProcessCpu::start();
        let rx = spawn_reader::<ServerMsg>(&self.ctrl, spec.total_duration() + RESULTS_TIMEOUT)
            .map_err(ProtoError::Io)?;
        let start = clock.mono();
        // The measured time starts after the warm-up (-O); the intervals with it.
        let omit = spec.omit.unwrap_or_default();
        let end = start + spec.total_duration();
        let tick_at = |k: u32| tick_end(interval, spec.duration, k).map(|t| start + omit + t);
        let mut ticks = Ticks::default();
        let mut tick = 0u32;
        let mut finished = false;
        let mut stopped = false;
        // -n/-k: the test ends when the senders have sent their amount.
        let by_amount = spec.bytes_per_stream.is_some();
        // How long the test ran: its duration, unless it ended early.
        let mut ran_for = spec.duration;
        let mut remote_reports = None;
        let mut results_deadline = end + RESULTS_TIMEOUT;
        // Told every second until the client finishes: the server ends a silent one.
        let mut alive_at = start + ALIVE_EVERY;
        let fail = |side: &mut SideRun, e: ProtoError| {
            side.abort();
            Err(e)
        };
        while remote_reports.is_none() {
            let now = clock.mono();
            if now >= results_deadline {
                return fail(&mut side, ProtoError::Timeout);
            }
            // A stop (Ctrl-C) ends the test early but cleanly: this side's senders stop,
            // the server is told to stop its own, and both sides' figures so far come in.
            if !stopped && !finished && self.stop.as_ref().is_some_and(Stop::is_raised) {
                stopped = true;
                side.stop_senders();
                // The server has as long to answer as after a test's end.
                results_deadline = results_deadline.min(now + RESULTS_TIMEOUT);
            }
            if !finished && now >= alive_at {
                if let Err(e) = write_msg(&mut self.ctrl, &ClientMsg::Alive) {
                    return fail(&mut side, e);
                }
                alive_at = now + ALIVE_EVERY;
            }
            let mut wait = Duration::from_millis(20);
            if let (false, false, Some(t)) = (stopped, finished, tick_at(tick)) {
                wait = wait.min(t.saturating_sub(now));
            }
            match rx.recv_timeout(wait) {
                Ok(Ok(ServerMsg::Interval { index, streams })) => {
                    let streams = streams.into_iter().map(|(id, s)| (id, s.into()));
                    ticks.remote.insert(index, streams.collect());
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
            // until this side's senders are done, so the intervals add up to what was sent
            // (a receiver's count then leaves out what a queue still holds, as in iperf3).
            while !stopped
                && !finished
                && tick_at(tick)
                    .is_some_and(|t| clock.mono() >= t && (t < end || side.senders_done()))
            {
                ticks.local.insert(tick, side.sample());
                tick += 1;
            }
            ticks.emit(interval, ran_for, &mut on_interval);
            // Finish once the test's time is up (or its amount sent, or a stop) and this
            // side's senders are done (in reverse mode there are none, but the time must
            // still be up); by then every tick up to the end has been sampled above.
            let now = clock.mono();
            if !finished && (stopped || by_amount || now >= end) && side.senders_done() {
                finished = true;
                let reports = side.join_senders();
                // Ended before its time: the intervals end where the test did, the last
                // one partial, on both sides.
                let early = now < end;
                if early {
                    ran_for = now.saturating_sub(start + omit);
                    results_deadline = results_deadline.min(now + RESULTS_TIMEOUT);
                }
                let intervals = (early && interval.is_some()).then(|| {
                    (0..)
                        .take_while(|k| tick_end(interval, ran_for, *k).is_some())
                        .count() as u32
                });
                // The tick at the end (and any the end overtook), now that this side's
                // senders are done: what arrives later (a queue's tail) is in the totals,
                // not in an interval, as in iperf3.
                while tick_end(interval, ran_for, tick).is_some() {
                    ticks.local.insert(tick, side.sample());
                    tick += 1;
                }
                let mut sent = reports.clone();
                crate::messages::fit(&mut sent);
                write_msg(
                    &mut self.ctrl,
                    &ClientMsg::Finish {
                        reports: sent,
                        early,
                        intervals,
                    },
                )?;
                side.keep(reports);
            }
        }
        let remote = remote_reports.unwrap_or_default();
        let (quiet, cap) = grace(spec);
        let mut local = side.take_kept();
        local.extend(side.finish_receivers(&sent_counts(&remote), quiet, cap, clock));
        ticks.emit(interval, ran_for, &mut on_interval);
        let _ = self.ctrl.shutdown(std::net::Shutdown::Both);
        Ok(TestOutcome {
            started: Some(started),
            spec: spec.clone(),
            one_way,
            same_host: self.same_host,
            local,
            remote,
            intervals: ticks.samples,
            interrupted: stopped,
            ran_for,
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
        (ports, max_send_bytes): (&[u16], Option<usize>),
        plan: &[(u8, Sender)],
        side: &mut SideRun,
        facts: &mut ConnectionFacts,
    ) -> std::io::Result<()> {
        if ports.len() != plan.len() {
            return Err(std::io::Error::other(
                "the server announced the wrong number of stream ports",
            ));
        }
        let mut socks = Vec::new();
        let deadline = self.clock.mono() + STEP_TIMEOUT;
        for (i, ((id, _), port)) in plan.iter().zip(ports).enumerate() {
            let s = UdpSocket::bind(self.local_for(i))?;
            s.connect(SocketAddr::new(self.server.ip(), *port))?;
            udp::prepare_socket(&s, spec.window, spec.dscp)?;
            let left = deadline.saturating_sub(self.clock.mono());
            udp::register(&s, key.test_id, *id, key.token, left)?;
            add_stream(facts, *id, &s.local_addr(), &s.peer_addr(), &s);
            socks.push(s);
        }
        for (s, (id, who)) in socks.iter().zip(plan) {
            if *who == Sender::Server {
                side.udp_receiver(s.try_clone()?, udp_recv_config(spec, key, *id), None)?;
            }
        }
        for (s, (id, who)) in socks.into_iter().zip(plan) {
            if *who == Sender::Client {
                let cfg = udp::UdpSendConfig {
                    max_send_bytes,
                    ..udp_send_config(spec, key, *id)
                };
                side.udp_sender_pending(s, cfg);
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
        let mut receiving = Vec::new();
        for (i, (id, who)) in plan.iter().enumerate() {
            let from = (self.bind.is_some() || self.cport.is_some()).then(|| self.local_for(i));
            let mut s = tcp::connect(addr, from, spec.tcp.mss, STEP_TIMEOUT)?;
            tcp::prepare_stream(&s, spec.window, spec.dscp, &spec.tcp)?;
            streams::write_greeting(&mut s, key.test_id, *id, key.token)?;
            add_stream(facts, *id, &s.local_addr(), &s.peer_addr(), &s);
            if facts.congestion.is_none() {
                facts.congestion = engine::tcp::congestion(&s);
                facts.tcp_mss = engine::tcp::mss(&s).or(facts.tcp_mss);
                facts.nodelay = s.nodelay().ok();
            }
            match who {
                Sender::Server => receiving.push((s, *id)),
                Sender::Client => side.tcp_sender_pending(s, tcp_send_config(spec, *id)),
            }
        }
        side.tcp_receivers(receiving, spec.omit.unwrap_or_default())
    }

    fn local_for(&self, i: usize) -> SocketAddr {
        stream_local(self.server, self.bind, self.cport, i)
    }

    /// What the control connection tells about the test's connections.
    fn connection_facts(&self, test_id: u16) -> ConnectionFacts {
        let addr = |a: std::io::Result<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        ConnectionFacts {
            local: addr(self.ctrl.local_addr()),
            remote: addr(self.ctrl.peer_addr()),
            cookie: format!("wirebench-test-{test_id}"),
            tcp_mss: engine::tcp::mss(&self.ctrl),
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
        interval: Option<Duration>,
    ) -> Result<Vec<udp::PingPongReport>, ProtoError> {
        let sock = self.open_echo(spec)?;
        let kernel_ts = kernel_timestamps && engine::sys::enable_rx_timestamps(&sock).is_ok();
        let mut out = Vec::new();
        let stopped = || self.stop.as_ref().is_some_and(Stop::is_raised);
        for &size in sizes {
            // A stop ends the test between message sizes.
            if stopped() {
                break;
            }
            out.push(
                udp::run_ping_pong(&sock, size, per_size, spec.spin, kernel_ts, interval)
                    .map_err(ProtoError::Io)?,
            );
        }
        let interrupted = stopped();
        self.end_echo();
        if interrupted {
            return Err(ProtoError::Interrupted);
        }
        Ok(out)
    }
}

impl Session {
    /// Opens an echo socket on the server for `duration` with answers of up to `max_len`
    /// bytes, hands `probe` a local socket connected to it whose answers the kernel stamps
    /// on arrival, and ends the session when `probe` returns (pings, path probes:
    /// [`engine::probe`]).
    ///
    /// # Errors
    /// The server refused the echo session.
    pub fn with_echo<R>(
        mut self,
        max_len: usize,
        duration: Duration,
        probe: impl FnOnce(&UdpSocket) -> R,
    ) -> Result<R, ProtoError> {
        let sock = self.open_echo(&EchoSpec {
            duration,
            max_len,
            spin: false,
        })?;
        let _ = engine::sys::enable_rx_timestamps(&sock);
        let out = probe(&sock);
        self.end_echo();
        Ok(out)
    }
}

impl Session {
    /// Asks the server for an echo socket and connects a local one to it.
    fn open_echo(&mut self, spec: &EchoSpec) -> Result<UdpSocket, ProtoError> {
        write_msg(&mut self.ctrl, &ClientMsg::Echo { spec: spec.clone() })?;
        let port = match expect_ok(read_msg_within(&self.ctrl, STEP_TIMEOUT, &*self.clock)?)? {
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
        Ok(sock)
    }

    /// Tells the server the echo session is over (best effort: the results are ours).
    fn end_echo(&mut self) {
        let _ = write_msg(
            &mut self.ctrl,
            &ClientMsg::Finish {
                reports: Vec::new(),
                early: false,
                intervals: None,
            },
        );
    }

    /// Opens an echo socket on the server and sends it a `size`-byte ping every `every`
    /// for `duration` (see [`udp::run_paced_pings`]), answers stamped by the kernel. A
    /// stop, or `end`, ends the pings early; what was measured is returned.
    pub fn run_paced_echo(
        self,
        size: usize,
        every: Duration,
        duration: Duration,
        wait: Duration,
        end: &Stop,
    ) -> Result<udp::PacedPings, ProtoError> {
        let stop = self.stop.clone().unwrap_or_default();
        self.with_echo(size, duration + wait, |sock| {
            udp::run_paced_pings(sock, size, every, duration, wait, &stop, end)
        })?
        .map_err(ProtoError::Io)
    }
}
