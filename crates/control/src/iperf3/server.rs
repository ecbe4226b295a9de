//! Serving stock iperf3 clients (`iperf3 -c`) on iperf3's port, several at once (iperf3's
//! own server runs one test at a time): the server's half of the dialect around
//! wirebench's data plane, under the same admission and limits as wirebench's own tests.
//!
//! iperf3 brings its data streams to the control port: a TCP data connection is told apart
//! from a new test by its cookie (that of a test waiting for its streams, from the same
//! address); a UDP stream starts with a 4-byte hello and carries no cookie, so UDP stream
//! set-up is one test at a time, and only a hello from the client's address is taken.
//!
//! Admission is the server's own (`session::admit`): one accept thread reads every new
//! connection's set-up itself, without a thread per connection: its cookie, and for a new
//! test its parameters, all within one deadline ([`STEP`]), holding a place at the
//! server's gate (per-address shares, eviction of the oldest for newcomers, penalties for
//! connections that close or stall before their set-up ends), as a control connection's
//! handshake does; extra places are given only to the data streams a waiting test of the
//! same address still expects. Only then does a new test get a thread, with one of
//! `--max-tests` (shared with wirebench's clients); it takes its address's share and its
//! memory; whatever is refused gets iperf3's access-denied state. Whether the port is
//! served at all on a server with a key (`--iperf3-open`) is the caller's choice.

use std::collections::HashMap;
use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use engine::iperf3_udp::{self, Iperf3SendConfig};
use engine::live::LiveCounters;
use engine::tcp::{self, TcpSendConfig};
use model::clock::Clock;
use model::spec::{Direction, Protocol, Rate, TcpOptions, TestSpec};
use model::stop::{RaiseOnDrop, Stop};
use serde_json::Value;

use super::setup::{Pending, Phase, Step};
use super::{read_json, read_state, state, stream_id, write_json, write_state};
use super::{Params, Results, StreamResult, COOKIE_SIZE, UDP_REPLY};
use crate::conn::keep_alive;
use crate::handshake::Deadline;
use crate::limits::{check_limits, test_memory};
use crate::messages::{ErrorCode, Limits};
use crate::session::admit::{self, turn_away, OwnedSlot};
use crate::session::Ctx;
use crate::ProtoError;
use engine::clock::RealPauses;
use model::wait::{Poll, Wait};

/// Time a client has for each step of the set-up: its cookie, its parameters, each of
/// its streams.
const STEP: Duration = Duration::from_secs(10);
/// iperf3's access-denied state as bytes on the wire (what a refused client reads).
const DENIED: [u8; 1] = state::ACCESS_DENIED.to_be_bytes();
/// How long receivers go on reading after the client's end.
const DRAIN: Duration = Duration::from_millis(250);

/// How long a test's streams may move nothing before the test is ended: `idle`, or four
/// packet gaps of a paced stream if that is longer (`-u -b 1k` sends a datagram every
/// 11.7 s).
pub fn silent_after(spec: &TestSpec, idle: Duration) -> Duration {
    let gap = spec
        .rate
        .packets_per_sec(spec.len)
        .filter(|pps| *pps > 0.0)
        .and_then(|pps| Duration::try_from_secs_f64(4.0 / pps).ok())
        .unwrap_or_default();
    idle.max(gap)
}

/// A data stream and its place in the accept order.
type Ordered = (u64, TcpStream);

/// A test waiting for its TCP data streams.
struct Waiting {
    /// Its client's address (canonical): streams come from there.
    client: IpAddr,
    /// Streams it still expects (0 until its parameters are read).
    expects: usize,
    streams: Sender<Ordered>,
}

/// What the iperf3 side's accept thread and its tests share.
struct Shared {
    ctx: Arc<Ctx>,
    /// Tests waiting for their TCP data streams, by cookie; each stream with its place in
    /// the accept order (a client connects its streams one after the other, and their
    /// order says which direction each one runs).
    waiting: Mutex<HashMap<[u8; COOKIE_SIZE], Waiting>>,
    /// UDP stream set-up, one test at a time.
    udp_setup: Mutex<()>,
}

impl Shared {
    fn waiting(&self) -> MutexGuard<'_, HashMap<[u8; COOKIE_SIZE], Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Streams the tests of `ip` still expect.
    fn expected_from(&self, ip: IpAddr) -> usize {
        let ip = ip.to_canonical();
        self.waiting()
            .values()
            .filter(|w| w.client == ip)
            .map(|w| w.expects)
            .sum()
    }
}

/// Binds iperf3's port (TCP; UDP streams are bound as they come).
///
/// # Errors
/// The port is taken or not allowed.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    engine::tcp::listen(addr, None)
}

/// Connections accepted in one go before their set-ups are read.
const ACCEPT_BATCH: usize = 64;

/// Serves iperf3 clients on `listener` (non-blocking) under `ctx`'s admission until
/// `stop` is raised: the port's one accept thread (see the module's doc).
pub(crate) fn serve(listener: &TcpListener, ctx: &Arc<Ctx>, stop: &Stop) {
    let sh = Arc::new(Shared {
        ctx: Arc::clone(ctx),
        waiting: Mutex::new(HashMap::new()),
        udp_setup: Mutex::new(()),
    });
    let clock = Arc::clone(&ctx.clock);
    let mut pending: Vec<Pending> = Vec::new();
    let mut accepted = 0u64;
    Wait::on(&RealPauses(&*clock))
        .or_stop(stop)
        .poll(|| -> Poll<()> {
            let mut busy = false;
            for _ in 0..ACCEPT_BATCH {
                match listener.accept() {
                    Ok((s, peer)) => {
                        busy = true;
                        accepted += 1;
                        if let Some(p) = enter(&sh, s, peer, accepted) {
                            pending.push(p);
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => {
                        tracing::warn!("iperf3 accept: {e}");
                        break;
                    }
                }
            }
            let now = clock.mono();
            let mut i = 0;
            while i < pending.len() {
                let step = pending[i].read();
                match step {
                    Step::Waiting if !pending[i].deadline.passed(now) => {
                        i += 1;
                        continue;
                    }
                    Step::Cookie => {
                        busy = true;
                        let p = pending.swap_remove(i);
                        if let Some(p) = cookie_read(&sh, p) {
                            // A new test: its parameters are read next, at once if they
                            // came with the cookie.
                            pending.push(p);
                        }
                        continue;
                    }
                    _ => {}
                }
                busy = true;
                let p = pending.swap_remove(i);
                // Out of the gate; an evicted one was closed by the gate's newcomer.
                let evicted = p
                    .place
                    .is_some_and(|id| !admit::leave(ctx, p.peer.ip(), id));
                match step {
                    Step::Params(v) => {
                        ctx.gate().succeeded(p.peer.ip());
                        start_test(&sh, p, &v);
                    }
                    Step::Bad(why) => {
                        tracing::info!("iperf3 client {}: {why}", p.peer);
                        ctx.refused(ErrorCode::Protocol);
                    }
                    // Closed, failed or out of time before its set-up ended: penalised
                    // (from the third time in a row), unless the gate closed it for a
                    // newcomer.
                    _ if evicted => {}
                    _ => {
                        ctx.gate().failed(p.peer.ip(), now);
                        tracing::debug!("iperf3 client {}: set-up not finished", p.peer);
                    }
                }
            }
            if busy {
                Poll::Again
            } else if pending.is_empty() {
                Poll::Wait(Duration::from_millis(20))
            } else {
                Poll::Wait(Duration::from_millis(2))
            }
        });
    for p in pending {
        if let Some(id) = p.place {
            admit::leave(ctx, p.peer.ip(), id);
        }
    }
}

/// A new connection: its place at the gate (or beyond its address's share, when a test of
/// that address expects more streams than are on their way), or turned away.
fn enter(sh: &Shared, s: TcpStream, peer: SocketAddr, order: u64) -> Option<Pending> {
    let ctx = &sh.ctx;
    if let Some(m) = &ctx.metrics {
        m.connection();
    }
    let ip = peer.ip();
    let now = ctx.clock.mono();
    let place = match admit::enter(ctx, ip, &s, now) {
        Ok(id) => Some(id),
        Err(_) if sh.expected_from(ip) > 0 => None,
        Err((code, message)) => {
            tracing::debug!("iperf3 client {peer}: turned away: {message}");
            ctx.refused(code);
            turn_away(ctx, s, &DENIED);
            return None;
        }
    };
    if place.is_none() {
        // Counted against what its tests expect until it is handed over.
        let ip = ip.to_canonical();
        if let Some(w) = sh
            .waiting()
            .values_mut()
            .find(|w| w.client == ip && w.expects > 0)
        {
            w.expects -= 1;
        }
    }
    let _ = s.set_nonblocking(true);
    Some(Pending {
        stream: s,
        peer,
        order,
        cookie: [0; COOKIE_SIZE],
        got: 0,
        phase: Phase::Cookie,
        place,
        deadline: Deadline::new(now, STEP),
    })
}

/// A connection whose cookie is read: a data stream of a waiting test from the same
/// address is handed to it (and leaves the gate); a new test is asked for its
/// parameters and stays pending (returned).
fn cookie_read(sh: &Arc<Shared>, mut p: Pending) -> Option<Pending> {
    let client = p.peer.ip().to_canonical();
    let stream_of = sh
        .waiting()
        .get_mut(&p.cookie)
        .filter(|w| w.client == client)
        .map(|w| {
            // (One let in beyond its address's share was counted when it came.)
            if p.place.is_some() {
                w.expects = w.expects.saturating_sub(1);
            }
            w.streams.clone()
        });
    let to_test = stream_of.is_some();
    // A data stream leaves the gate here, and so does a test that cannot be asked for its
    // parameters; one being asked keeps its place.
    let asked = !to_test && write_state(&mut p.stream, state::PARAM_EXCHANGE).is_ok();
    if !asked {
        if let Some(id) = p.place {
            let _ = admit::leave(&sh.ctx, p.peer.ip(), id);
        }
    }
    if let Some(tx) = stream_of {
        let _ = p.stream.set_nonblocking(false);
        let _ = tx.send((p.order, p.stream));
        return None;
    }
    if !asked {
        return None;
    }
    p.phase = Phase::Params(Vec::new());
    Some(p)
}

/// A new test whose parameters are read (out of the gate): on a thread of its own with
/// one of `--max-tests`, or turned away with access denied.
fn start_test(sh: &Arc<Shared>, p: Pending, v: &Value) {
    let Pending {
        stream: s,
        peer,
        cookie,
        ..
    } = p;
    let ctx = &sh.ctx;
    let slot = match OwnedSlot::test(ctx) {
        Ok(slot) => slot,
        Err(e) => {
            tracing::info!("iperf3 client {peer}: refused: {e}");
            ctx.refused(ErrorCode::Busy);
            turn_away(ctx, s, &DENIED);
            return;
        }
    };
    let _ = s.set_nonblocking(false);
    let (sh, p) = (Arc::clone(sh), params(v));
    let spawned = thread::Builder::new()
        .name("wb-iperf3".into())
        .spawn(move || {
            if let Err(e) = connection(s, peer, cookie, &p, &sh, slot) {
                tracing::warn!("iperf3 client {peer}: {e}");
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start an iperf3 test thread: {e}");
    }
}

/// A new test, holding one of `--max-tests` (`_slot`): its address's share, then the test.
fn connection(
    mut s: TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_SIZE],
    p: &Params,
    sh: &Shared,
    _slot: OwnedSlot,
) -> Result<(), ProtoError> {
    let ctx = &*sh.ctx;
    s.set_nodelay(true).map_err(ProtoError::Io)?;
    // A vanished client ends its test within about 10 s.
    keep_alive(&s);
    s.set_write_timeout(Some(STEP)).map_err(ProtoError::Io)?;
    let _source = match ctx.source_test(peer.ip()) {
        Ok(source) => source,
        Err(e) => {
            tracing::info!("iperf3 client {peer}: refused: {e}");
            ctx.refused(ErrorCode::Busy);
            return write_state(&mut s, state::ACCESS_DENIED);
        }
    };
    let _ended = ctx.finished.as_ref().map(RaiseOnDrop::new);
    let (tx, rx) = mpsc::channel();
    sh.waiting().insert(
        cookie,
        Waiting {
            client: peer.ip().to_canonical(),
            expects: 0,
            streams: tx,
        },
    );
    let result = test(s, peer, cookie, p, sh, &rx);
    sh.waiting().remove(&cookie);
    result
}

/// iperf3's parameters as its server reads them (flags by presence).
fn params(v: &Value) -> Params {
    let has = |k: &str| v.get(k).is_some();
    let num = |k: &str| v.get(k).and_then(Value::as_u64);
    let udp = has("udp") && !has("tcp");
    Params {
        udp,
        time: num("time").unwrap_or(10),
        parallel: num("parallel").unwrap_or(1).clamp(1, 128) as usize,
        len: num("len")
            .unwrap_or(if udp { 1460 } else { 128 * 1024 })
            .clamp(16, 16 * 1024 * 1024) as usize,
        bandwidth: num("bandwidth").unwrap_or(if udp { 1 << 20 } else { 0 }),
        reverse: has("reverse"),
        bidir: has("bidirectional"),
        window: num("window"),
        counters_64bit: has("udp_counters_64bit"),
        tcp: TcpOptions {
            congestion: v
                .get("congestion")
                .and_then(Value::as_str)
                .map(str::to_owned),
            mss: num("MSS")
                .filter(|m| *m > 0)
                .and_then(|m| u32::try_from(m).ok()),
            nodelay: has("nodelay"),
            zerocopy: false,
        },
        // -k: blocks of `len` bytes.
        num: num("num")
            .filter(|n| *n > 0)
            .or_else(|| num("blockcount").map(|k| k.saturating_mul(num("len").unwrap_or(0))))
            .unwrap_or(0),
        omit: num("omit").unwrap_or(0).min(3600),
        get_server_output: num("get_server_output").is_some_and(|x| x > 0),
    }
}

/// The test an iperf3 client asks for. With `-n`/`-k` iperf3 sends `time` 0: the client
/// ends the test, which may take up to the server's longest.
fn spec_of(p: &Params, limits: &Limits) -> TestSpec {
    let longest = Duration::try_from_secs_f64(limits.max_duration_s)
        .unwrap_or(TestSpec::MAX_DURATION)
        .min(TestSpec::MAX_DURATION);
    TestSpec {
        protocol: if p.udp { Protocol::Udp } else { Protocol::Tcp },
        duration: if p.time == 0 && p.num > 0 {
            longest
        } else {
            Duration::from_secs(p.time.max(1))
        },
        rate: if p.bandwidth == 0 {
            Rate::Unlimited
        } else {
            Rate::BitsPerSec(p.bandwidth as f64)
        },
        len: p.len,
        streams: u8::try_from(p.parallel).unwrap_or(u8::MAX),
        direction: match (p.bidir, p.reverse) {
            (true, _) => Direction::Bidir,
            (false, true) => Direction::Reverse,
            (false, false) => Direction::Forward,
        },
        udp_backend: model::spec::UdpBackend::Auto,
        synced_clocks: false,
        dscp: None,
        window: p.window.and_then(|w| u32::try_from(w).ok()),
        server_cpu: None,
        tcp: p.tcp.clone(),
        bytes_per_stream: None,
        // A UDP test counts every datagram (its warm-up is in the figures).
        omit: (p.omit > 0 && !p.udp).then(|| Duration::from_secs(p.omit)),
    }
}

enum Stream {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

fn server_error(ctrl: &mut TcpStream, code: i32) -> ProtoError {
    let _ = write_state(ctrl, state::SERVER_ERROR);
    let mut b = code.to_be_bytes().to_vec();
    b.extend(0i32.to_be_bytes());
    let _ = std::io::Write::write_all(ctrl, &b);
    ProtoError::Unexpected(format!("refused with iperf3 error {code}"))
}

/// One test of a client whose parameters (`p`) were read, from the limits to the
/// results; its data streams come through `data`.
fn test(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_SIZE],
    p: &Params,
    sh: &Shared,
    data: &Receiver<Ordered>,
) -> Result<(), ProtoError> {
    let ctx = &*sh.ctx;
    let clock = &*ctx.clock;
    let spec = spec_of(p, &ctx.limits);
    if let Err(m) = check_limits(&spec, &ctx.limits) {
        tracing::info!("iperf3 client {peer}: refused: {m}");
        ctx.refused(ErrorCode::Limit);
        // iperf3's IEBADFORMAT-class "bad parameter" (100 + the limit's kind is not in its
        // table; 1 is "parameter error").
        return Err(server_error(&mut ctrl, 1));
    }
    // Its buffers from the server's --max-memory, shared with wirebench's clients.
    let _memory = match ctx.reserve_memory(test_memory(&spec)) {
        Ok(m) => m,
        Err(e) => {
            tracing::info!("iperf3 client {peer}: refused: {e}");
            ctx.refused(ErrorCode::Busy);
            write_state(&mut ctrl, state::ACCESS_DENIED)?;
            return Err(e);
        }
    };
    let total = if p.bidir { 2 * p.parallel } else { p.parallel };
    if !p.udp {
        if let Some(w) = sh.waiting().get_mut(&cookie) {
            w.expects = total;
        }
    }
    let local = ctrl.local_addr().map_err(ProtoError::Io)?;
    let mut streams = Vec::with_capacity(total);
    if p.udp {
        let _one = sh.udp_setup.lock();
        // A socket waits on the port before the client is told to come, and the next one
        // before the answer to each hello (a hello to no socket is refused by the kernel);
        // one unconnected socket at a time, so that a hello has one place to go.
        let mut waiting = Some(udp_socket(local)?);
        write_state(&mut ctrl, state::CREATE_STREAMS)?;
        for i in 0..total {
            let Some(w) = waiting.take() else { break };
            let (stream, from) = udp_hello(w, peer.ip(), clock)?;
            if i + 1 < total {
                waiting = Some(udp_socket(local)?);
            }
            stream.send_to(&UDP_REPLY, from).map_err(ProtoError::Io)?;
            streams.push(Stream::Udp(stream));
        }
    } else {
        write_state(&mut ctrl, state::CREATE_STREAMS)?;
        let mut tcp = Vec::with_capacity(total);
        for _ in 0..total {
            let s = data
                .recv_timeout(STEP)
                .map_err(|_| ProtoError::Unexpected("a data stream did not come".into()))?;
            tcp.push(s);
        }
        // In the order the client connected them, whichever thread read its cookie first.
        tcp.sort_by_key(|(order, _)| *order);
        for (_, s) in &tcp {
            // The client's -C, -N (and -M, which only lowers the MSS once connected).
            let _ = tcp::prepare_stream(s, spec.window, spec.dscp, &spec.tcp);
            if let Some(m) = spec.tcp.mss {
                let _ = socket2::SockRef::from(s).set_tcp_mss(m);
            }
        }
        streams.extend(tcp.into_iter().map(|(_, s)| Stream::Tcp(s)));
    }
    write_state(&mut ctrl, state::TEST_START)?;
    write_state(&mut ctrl, state::TEST_RUNNING)?;
    let cpu = engine::env::ProcessCpu::start();
    // The client's senders come first: its first `parallel` streams are received here.
    let receives = |i: usize| match spec.direction {
        Direction::Forward => true,
        Direction::Reverse => false,
        Direction::Bidir => i < p.parallel,
    };
    let stop = Stop::new();
    let lives: Vec<Arc<LiveCounters>> = (0..streams.len()).map(|_| Arc::default()).collect();
    let threads: Vec<_> = streams
        .into_iter()
        .zip(&lives)
        .enumerate()
        .map(|(i, (s, live))| {
            let (stop, live) = (stop.clone(), Arc::clone(live));
            let (spec, p) = (spec.clone(), p.clone());
            let rx = receives(i);
            thread::spawn(move || run(s, rx, &spec, &p, &live, &stop))
        })
        .collect();
    // The client ends the test (TEST_END); a client that vanishes, or whose streams stop
    // moving (a stopped process), ends it too.
    let received: Vec<Arc<LiveCounters>> = lives
        .iter()
        .enumerate()
        .filter(|(i, _)| receives(*i))
        .map(|(_, l)| Arc::clone(l))
        .collect();
    // Scrapes read this test's streams until it ends, however it ends.
    let _watched = ctx.metrics.as_ref().map(|m| {
        let id = ctx
            .next_test_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let streams = lives
            .iter()
            .enumerate()
            .map(|(i, l)| (!receives(i), Arc::clone(l)))
            .collect();
        m.start_test(id, spec.protocol.as_str(), peer.ip(), streams)
    });
    let end = wait_for_end(
        &mut ctrl,
        (&spec, &lives),
        Meter {
            received: &received,
            max_rate: ctx.limits.max_rate_bps,
        },
        ctx.idle_timeout,
        peer,
        clock,
    );
    if let Some(m) = &ctx.metrics {
        m.ended(match &end {
            Ok(state::TEST_END) => "completed",
            Ok(state::CLIENT_TERMINATE) => "aborted",
            _ => "failed",
        });
    }
    // The client stopped sending before it said so; what it sent is still in the socket
    // buffers: read it before counting (iperf3's own server stops at once and leaves it).
    thread::sleep(DRAIN);
    stop.raise();
    let ours: Vec<StreamResult> = threads
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let mut r = t.join().unwrap_or_default();
            r.id = stream_id(i);
            r
        })
        .collect();
    match end? {
        state::TEST_END => {}
        state::CLIENT_TERMINATE => return Ok(()),
        other => {
            return Err(ProtoError::Unexpected(format!(
                "state {other} instead of the end"
            )))
        }
    }
    ctrl.set_read_timeout(Some(STEP)).map_err(ProtoError::Io)?;
    write_state(&mut ctrl, state::EXCHANGE_RESULTS)?;
    let theirs = Results::from_json(&read_json(&mut ctrl)?)?;
    let sends_only = (0..total).all(|i| !receives(i));
    let used = cpu.used();
    let congestion = (!p.udp)
        .then(|| {
            p.tcp
                .congestion
                .clone()
                .or_else(engine::env::tcp_congestion_default)
        })
        .flatten();
    let server_output = p.get_server_output.then(|| server_text(&ours, &receives));
    let ours = Results {
        cpu: [used.total, used.user, used.system],
        congestion,
        server_output,
        streams: ours,
    };
    write_json(&mut ctrl, &ours.to_json(if sends_only { 1 } else { -1 }))?;
    write_state(&mut ctrl, state::DISPLAY_RESULTS)?;
    let _ = read_state(&mut ctrl);
    let bytes: u64 = ours.streams.iter().map(|s| s.bytes).sum();
    let peer_bytes: u64 = theirs.streams.iter().map(|s| s.bytes).sum();
    tracing::info!(
        target: crate::server::summary::TARGET,
        "iperf3 client {peer}: {} {} stream(s), {} s: this side {bytes} bytes, the client {peer_bytes}",
        if p.udp { "UDP" } else { "TCP" },
        total,
        p.time
    );
    Ok(())
}

/// A UDP socket on the port, for the next stream.
fn udp_socket(local: SocketAddr) -> Result<UdpSocket, ProtoError> {
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(local),
        socket2::Type::DGRAM,
        None,
    )
    .map_err(ProtoError::Io)?;
    sock.set_reuse_address(true).map_err(ProtoError::Io)?;
    sock.bind(&local.into()).map_err(ProtoError::Io)?;
    let sock: UdpSocket = sock.into();
    sock.set_read_timeout(Some(STEP)).map_err(ProtoError::Io)?;
    Ok(sock)
}

/// One UDP stream: `sock` connected to the client's first hello (answered by the caller
/// once the next socket waits). Only a hello from the control connection's address
/// (`client`, compared in canonical form: `::ffff:127.0.0.1` is 127.0.0.1) is the
/// client's; one from elsewhere is dropped, or anyone who could send one datagram could
/// make this server send a test's datagrams to a third host. The whole wait is [`STEP`].
fn udp_hello(
    sock: UdpSocket,
    client: IpAddr,
    clock: &dyn Clock,
) -> Result<(UdpSocket, SocketAddr), ProtoError> {
    let deadline = Deadline::new(clock.mono(), STEP);
    let mut b = [0u8; 64];
    let mut foreign = 0u64;
    loop {
        // Checked before each read: a stream of foreign hellos cannot extend the wait.
        let now = clock.mono();
        if deadline.passed(now) {
            return Err(ProtoError::Timeout);
        }
        sock.set_read_timeout(Some(deadline.left(now)))
            .map_err(ProtoError::Io)?;
        let (_, from) = sock.recv_from(&mut b).map_err(ProtoError::from_io)?;
        if from.ip().to_canonical() == client.to_canonical() {
            sock.set_read_timeout(Some(STEP)).map_err(ProtoError::Io)?;
            sock.connect(from).map_err(ProtoError::Io)?;
            return Ok((sock, from));
        }
        foreign += 1;
        if foreign == 1 {
            tracing::warn!(
                "iperf3 client {client}: a UDP hello from {from} ignored (not the client's address)"
            );
        }
    }
}

/// What this server saw, as text for a client that asked (`--get-server-output`): one
/// line per stream.
fn server_text(streams: &[StreamResult], receives: &dyn Fn(usize) -> bool) -> String {
    let mut out = String::from("wirebench server (iperf3 dialect)\n");
    for (i, s) in streams.iter().enumerate() {
        let rate = if s.end_time > 0.0 {
            s.bytes as f64 * 8.0 / s.end_time
        } else {
            0.0
        };
        out.push_str(&format!(
            "[{:>3}] 0.00-{:.2} sec  {} bytes  {}{}  {}\n",
            s.id,
            s.end_time,
            s.bytes,
            model::units::bps(rate),
            if s.packets > 0 {
                format!("  {} lost of {} datagrams", s.errors, s.packets)
            } else {
                String::new()
            },
            if receives(i) { "receiver" } else { "sender" }
        ));
    }
    out
}

/// One stream's data; what iperf3 reads of it.
/// Reads the client's next state while the test (`spec`, its streams' `lives`) runs; ends
/// the test with [`ProtoError::Timeout`] when the streams move nothing for
/// [`silent_after`], or after the test's time and 30 s more (both on `clock`).
/// What the server meters while a test runs: the bytes its receiving streams read (every
/// datagram that reached a stream's socket, counted or not), against `--max-rate`.
struct Meter<'a> {
    received: &'a [Arc<LiveCounters>],
    max_rate: Option<f64>,
}

fn wait_for_end(
    ctrl: &mut TcpStream,
    (spec, lives): (&TestSpec, &[Arc<LiveCounters>]),
    meter: Meter<'_>,
    idle: Duration,
    peer: SocketAddr,
    clock: &dyn Clock,
) -> Result<i8, ProtoError> {
    let received = || -> u64 { meter.received.iter().map(|l| l.raw_bytes()).sum() };
    // The same watch as the server's own tests (`crate::watch`): more than 10 % above
    // --max-rate over a second ends the test; only its meter is used here.
    let mut watch = crate::watch::Watch::new(
        spec,
        meter.received.len(),
        meter.max_rate,
        idle,
        clock.mono(),
    );
    let moved = || -> u64 {
        lives
            .iter()
            .map(|l| {
                let s = l.snapshot();
                l.raw_bytes() + s.counters.sent + s.counters.received
            })
            .sum()
    };
    let silent = silent_after(spec, idle);
    ctrl.set_read_timeout(Some(Duration::from_millis(250)))
        .map_err(ProtoError::Io)?;
    let (mut last, mut since) = (moved(), clock.mono());
    // Each read waits up to 250 ms itself.
    let limit = spec.total_duration() + Duration::from_secs(30);
    let end = Wait::on(&RealPauses(clock)).at_most(limit).poll(|| {
        let mut b = [0u8; 1];
        match ctrl.read(&mut b) {
            Ok(1) => return Poll::Ready(Ok(i8::from_be_bytes(b))),
            Ok(_) => return Poll::Ready(Err(ProtoError::Closed)),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Poll::Ready(Err(ProtoError::from_io(e))),
        }
        let now = clock.mono();
        if watch.meter_due(now) {
            if let Err((bps, max)) = watch.metered(now, received()) {
                tracing::warn!(
                    "iperf3 client {peer}: sends {:.1} Mbit/s, above --max-rate {:.1} Mbit/s: test ended",
                    bps / 1e6,
                    max / 1e6
                );
                return Poll::Ready(Err(ProtoError::Unexpected(format!(
                    "the client sent {:.1} Mbit/s, above --max-rate",
                    bps / 1e6
                ))));
            }
        }
        let m = moved();
        if m != last {
            (last, since) = (m, now);
        } else if now.saturating_sub(since) >= silent {
            tracing::warn!(
                "iperf3 client {peer}: its streams moved nothing for {:.1} s \
                 (--idle-timeout): test ended",
                silent.as_secs_f64()
            );
            return Poll::Ready(Err(ProtoError::Timeout));
        }
        Poll::Again
    });
    end.ready().unwrap_or(Err(ProtoError::Timeout))
}

fn run(
    s: Stream,
    receives: bool,
    spec: &TestSpec,
    p: &Params,
    live: &LiveCounters,
    stop: &Stop,
) -> StreamResult {
    // A sender sends for the test's duration, from TEST_RUNNING: it ends just before the
    // client's own timer, so every byte it sent arrives while the client still counts (as
    // iperf3's own server does). A receiver listens until the client ends the test.
    let cap = spec.total_duration() + Duration::from_secs(5);
    match (s, receives) {
        (Stream::Tcp(s), true) => {
            let n = usize::from(spec.streams);
            let r = tcp::run_receiver(&s, 0, spec.omit.unwrap_or_default(), n, live, stop);
            StreamResult {
                // iperf3 counts from the end of the warm-up (-O), on this side's clock.
                bytes: r.bytes - r.omitted_bytes,
                end_time: r.elapsed.as_secs_f64(),
                ..Default::default()
            }
        }
        (Stream::Tcp(s), false) => {
            let cfg = TcpSendConfig {
                stream_id: 0,
                block_len: p.len,
                rate: spec.rate,
                duration: spec.duration,
                // -R with -n/-k: this side sends the amount, shared by the streams.
                bytes: (p.num > 0).then(|| p.num.div_ceil(p.parallel.max(1) as u64)),
                zerocopy: false,
                omit: spec.omit.unwrap_or_default(),
            };
            let r = tcp::run_sender(&s, &cfg, live, stop);
            let _ = s.shutdown(std::net::Shutdown::Both);
            StreamResult {
                bytes: r.bytes,
                retransmits: r.retransmits,
                end_time: r.elapsed.as_secs_f64(),
                ..Default::default()
            }
        }
        (Stream::Udp(s), true) => {
            let r =
                iperf3_udp::run_receiver(&s, p.len + 64, p.counters_64bit, cap, false, live, stop);
            StreamResult::received(&r)
        }
        (Stream::Udp(s), false) => {
            let cfg = Iperf3SendConfig {
                len: p.len,
                rate: spec.rate,
                duration: spec.duration,
                counters_64bit: p.counters_64bit,
                packets: (p.num > 0)
                    .then(|| p.num.div_ceil((p.parallel.max(1) * p.len.max(1)) as u64)),
            };
            let r = iperf3_udp::run_sender(&s, &cfg, live, stop);
            if r.receiver_gone {
                // iperf3 ends a test whose datagrams are refused; so does this server.
                tracing::warn!("iperf3 UDP test: the client's port is closed (port unreachable): the test ends");
                stop.raise();
            }
            StreamResult {
                bytes: r.bytes,
                packets: r.packets,
                end_time: r.elapsed.as_secs_f64(),
                ..Default::default()
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_slow_paced_stream_may_be_silent_longer_than_the_idle_timeout() {
        let idle = Duration::from_secs(5);
        let mut spec = spec_of(
            &params(&json!({"udp": true, "len": 1460})),
            &Limits::default(),
        );
        // iperf3's UDP default, 1 Mbit/s: a datagram every 11.7 ms.
        spec.rate = Rate::BitsPerSec(1e6);
        assert_eq!(silent_after(&spec, idle), idle);
        // -b 1k: a datagram every 11.68 s, four of them 46.7 s.
        spec.rate = Rate::BitsPerSec(1e3);
        let s = silent_after(&spec, idle).as_secs_f64();
        assert!((46.7..46.8).contains(&s), "{s}");
        spec.rate = Rate::Unlimited;
        assert_eq!(silent_after(&spec, idle), idle);
    }

    #[test]
    fn parameters_are_read_as_iperf3_reads_them() {
        // Flags count by presence, as iperf3's server reads them.
        let p = params(&json!({"udp": true, "time": 3, "parallel": 2, "len": 1400,
            "bandwidth": 100_000_000u64, "reverse": false, "udp_counters_64bit": 1}));
        assert!(p.udp && p.reverse && p.counters_64bit && !p.bidir);
        assert_eq!(
            (p.time, p.parallel, p.len, p.bandwidth),
            (3, 2, 1400, 100_000_000)
        );
        // An empty object is a default TCP test, as for iperf3.
        let d = params(&json!({}));
        assert!(!d.udp && !d.reverse);
        assert_eq!(
            (d.time, d.parallel, d.len, d.bandwidth),
            (10, 1, 131_072, 0)
        );
        let limits = Limits::default();
        let s = spec_of(&p, &limits);
        assert_eq!(s.direction, Direction::Reverse);
        assert_eq!(s.rate, Rate::BitsPerSec(1e8));
        // -n without -t: iperf3 sends time 0; the test may take the server's longest.
        let n = params(&json!({"tcp": true, "time": 0, "num": 1000, "omit": 2}));
        assert_eq!(n.num, 1000);
        let s = spec_of(&n, &limits);
        assert_eq!(s.duration.as_secs_f64(), limits.max_duration_s);
        assert_eq!(s.omit, Some(Duration::from_secs(2)));
        // -k: blocks of len; UDP's warm-up is counted (every datagram is).
        let k = params(&json!({"udp": true, "blockcount": 10, "len": 1000, "omit": 2}));
        assert_eq!(k.num, 10_000);
        assert_eq!(spec_of(&k, &limits).omit, None);
        // A time no clock holds is refused, not a panic.
        let huge = params(&json!({"tcp": true, "time": u64::MAX, "omit": 1}));
        assert!(check_limits(&spec_of(&huge, &limits), &limits).is_err());
    }
}
