//! The wirebench server: many tests at once, each on its own control connection thread.
//!
//! Every read has a deadline; a connection that sends bad bytes, an oversized length, an
//! unknown version or nothing at all gets an error message (when it can still be sent) and
//! is closed, and no other connection or test notices. Before a thread is started for a
//! connection, the [`crate::gate`] decides whether its address may open another handshake
//! (per-address shares, penalties after failures); the whole handshake has one deadline.
//! Limits (rate, duration, streams, concurrent tests, tests per address) are checked
//! before any socket of a test is opened, and a running test is metered: one that sends
//! more than 10 % above `--max-rate` over a second, or whose client falls silent for the
//! idle timeout (clients say they are alive every second), is ended. Control connections
//! have TCP keepalive and a user timeout, so a vanished host ends its test within 10 s.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::flag::SetOnDrop;
use engine::{tcp, udp};
use model::spec::{EchoSpec, Protocol, TestSpec};

use crate::frame::{read_msg, read_msg_within, write_msg};
use crate::gate::{Admit, Gate, GateConfig, HandshakeId};
use crate::messages::{ClientMsg, ErrorCode, Limits, ServerHost, ServerMsg, StreamReport};
use crate::streams::{self, Sender, SideRun};
use crate::{auth, ProtoError, MAGIC, VERSION};

/// Default time a client has for its whole handshake (hello, auth, request).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a started test's client may stay silent (it says it is alive every
/// second) before the test is ended.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// A test may exceed `--max-rate` by this share over a second before it is ended.
const RATE_TOLERANCE: f64 = 0.10;
/// Time the client has to connect its data streams after `Accepted`.
const STREAM_SETUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Most buffer memory one test may make the server allocate.
pub const MAX_TEST_BUFFER_BYTES: u64 = 512 << 20;
/// Interval ticks up to this much past the test's end still count (timer rounding), and a
/// remainder this short makes no last partial interval.
pub(crate) const TICK_SLACK: Duration = Duration::from_millis(1);

/// When interval `k` of a test ends, as an offset from its start; `None` past the last.
/// Both sides use it, so their samples pair by index. Every interval is `interval` long
/// except the last, which ends with the test (`-t 1.5 -i 1` gives 0-1 s and 1-1.5 s).
pub(crate) fn tick_end(interval: Option<Duration>, duration: Duration, k: u32) -> Option<Duration> {
    let i = interval.filter(|i| !i.is_zero())?;
    let start = i.checked_mul(k)?;
    if start + TICK_SLACK >= duration {
        return None;
    }
    let end = start + i;
    Some(if end <= duration + TICK_SLACK {
        end
    } else {
        duration
    })
}
/// Shortest interval a client may ask for (the client's `-i` takes no less).
const MIN_INTERVAL_MS: u32 = 10;
/// Extra time past the test's duration before the server gives up on a silent client.
const FINISH_SLACK: Duration = Duration::from_secs(10);

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on.
    pub bind: SocketAddr,
    /// Limits announced to and enforced on clients.
    pub limits: Limits,
    /// Pre-shared key; `Some` makes authentication mandatory.
    pub key: Option<Vec<u8>>,
    /// Time a client has for each handshake message.
    pub handshake_timeout: Duration,
    /// Authenticated clients may set the MTU and features of the interface their
    /// connection arrived on (`--allow-tuning`; needs a key and CAP_NET_ADMIN).
    pub allow_tuning: bool,
    /// Set when a test the server accepted has ended (`--one-off` stops on it).
    pub finished: Option<Arc<AtomicBool>>,
    /// Counted for `--metrics` when given.
    pub metrics: Option<Arc<crate::metrics::ServerMetrics>>,
    /// Per-address shares of handshakes and tests.
    pub gate: GateConfig,
    /// A started test whose client says nothing for this long is ended.
    pub idle_timeout: Duration,
    /// Memory all running tests together may hold (buffers and socket buffers), bytes.
    pub max_memory: u64,
    /// Count the datagrams of UDP tests clients send through AF_XDP (`--rx-backend xdp`),
    /// past the kernel's UDP stack, where the interface allows.
    pub rx_xdp: bool,
    /// Interfaces an authenticated client may send and receive raw frames on
    /// (`--raw-ports`; needs a key).
    pub raw_ports: Vec<String>,
    /// Authenticated controllers may have this server run client tests toward other
    /// wirebench servers (`--allow-third-party`; needs a key, which it authenticates with).
    pub third_party: bool,
    /// Address blocks third-party tests may go to (`--third-party-peers`; empty: any
    /// address but the special ones).
    pub third_party_peers: Vec<(IpAddr, u8)>,
}

/// The default `--max-memory`: a quarter of this host's memory (1 GiB where it is not
/// known).
pub fn default_max_memory() -> u64 {
    engine::env::memory_total().map_or(1 << 30, |m| m / 4)
}

pub(crate) struct Ctx {
    pub(crate) limits: Limits,
    pub(crate) key: Option<Vec<u8>>,
    host_id: Option<String>,
    handshake_timeout: Duration,
    active_tests: AtomicUsize,
    connections: AtomicUsize,
    next_test_id: AtomicU16,
    pub(crate) allow_tuning: bool,
    pub(crate) finished: Option<Arc<AtomicBool>>,
    /// A tuning session is running (one at a time).
    pub(crate) tuning: AtomicUsize,
    metrics: Option<Arc<crate::metrics::ServerMetrics>>,
    gate: std::sync::Mutex<Gate>,
    /// Open handshakes' sockets, to close one the gate evicts.
    handshakes: std::sync::Mutex<std::collections::HashMap<HandshakeId, TcpStream>>,
    idle_timeout: Duration,
    /// Bytes reserved by running tests, and the most they may reserve.
    memory: std::sync::atomic::AtomicU64,
    max_memory: u64,
    /// Connections being turned away now.
    turning: AtomicUsize,
    rx_xdp: bool,
    pub(crate) raw_ports: Vec<String>,
    /// Lent ports in use: (interface, sending), one session each.
    pub(crate) raw_busy: std::sync::Mutex<std::collections::HashSet<(String, bool)>>,
    /// Runs client tests toward other servers for authenticated controllers.
    pub(crate) third_party: bool,
    /// ... only toward these blocks (empty: any but the special addresses).
    pub(crate) third_party_peers: Vec<(IpAddr, u8)>,
}

impl Ctx {
    fn gate(&self) -> std::sync::MutexGuard<'_, Gate> {
        self.gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn refused(&self, code: ErrorCode) {
        if let Some(m) = &self.metrics {
            m.refused(code);
        }
    }
}

/// A handshake let in by the gate: leaves it when dropped, however the handshake ended.
struct Handshake<'a> {
    ctx: &'a Ctx,
    ip: IpAddr,
    id: HandshakeId,
}

impl Drop for Handshake<'_> {
    fn drop(&mut self) {
        self.ctx.gate().handshake_done(self.ip, self.id);
        self.ctx
            .handshakes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.id);
    }
}

/// A test counted against its address's share until dropped.
struct SourceTest<'a> {
    ctx: &'a Ctx,
    ip: IpAddr,
}

impl<'a> SourceTest<'a> {
    fn take(ctx: &'a Ctx, ip: IpAddr) -> Option<Self> {
        // The gate's lock is let go before a guard exists (its drop takes the lock).
        let counted = ctx.gate().start_test(ip);
        counted.then(|| SourceTest { ctx, ip })
    }
}

impl Drop for SourceTest<'_> {
    fn drop(&mut self) {
        self.ctx.gate().end_test(self.ip);
    }
}

/// Watches a controller that says nothing while its work runs, until `done`: anything
/// readable (an abort) or the end of its connection sets `stop` and `gone`; `wait`
/// passing sets `stop` alone.
pub(crate) fn watch_controller(
    ctrl: &TcpStream,
    done: &AtomicBool,
    stop: &AtomicBool,
    gone: &AtomicBool,
    wait: Duration,
) {
    let start = Instant::now();
    let _ = ctrl.set_read_timeout(Some(Duration::from_millis(100)));
    let mut byte = [0u8; 1];
    while !done.load(Ordering::Acquire) {
        if start.elapsed() > wait {
            stop.store(true, Ordering::Relaxed);
            return;
        }
        match ctrl.peek(&mut byte) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            // Readable, closed or broken: the controller is done with us.
            _ => {
                gone.store(true, Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
}

/// TCP keepalive (first probe after 3 s idle, then every second, 3 unanswered end it) and
/// a 10 s user timeout (unacknowledged data): a control connection to a host that
/// vanished fails within about 10 s.
pub(crate) fn keep_alive(s: &TcpStream) {
    let sock = socket2::SockRef::from(s);
    let ka = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(3))
        .with_interval(Duration::from_secs(1))
        .with_retries(3);
    let _ = sock.set_tcp_keepalive(&ka);
    let _ = sock.set_tcp_user_timeout(Some(Duration::from_secs(10)));
}

/// Refuses a connection without holding up the accept thread: the refusal is written
/// at once (it fits the socket's buffer); then, on a short-lived thread (at most
/// [`MAX_TURNING`] at once), what the client sends for up to 200 ms is read and dropped,
/// so that closing does not reset the connection before the client has read the refusal.
fn turn_away(ctx: &Arc<Ctx>, stream: TcpStream, code: ErrorCode, message: String) {
    use std::io::Read;
    let mut s = stream;
    let _ = s.set_nonblocking(true);
    let _ = write_msg(&mut s, &refusal(code, message));
    let _ = s.shutdown(std::net::Shutdown::Write);
    let Some(slot) = OwnedSlot::take(ctx, MAX_TURNING) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("wb-turn-away".into())
        .spawn(move || {
            let _slot = slot;
            let _ = s.set_nonblocking(false);
            let until = Instant::now() + Duration::from_millis(200);
            let mut sink = [0u8; 4096];
            while let Some(left) = until.checked_duration_since(Instant::now()) {
                let _ = s.set_read_timeout(Some(left.max(Duration::from_millis(1))));
                if !matches!(s.read(&mut sink), Ok(n) if n > 0) {
                    break;
                }
            }
        });
}

/// Connections being turned away at once, each on its own short thread.
const MAX_TURNING: usize = 16;

/// A slot in a shared counter, released on drop (movable to another thread).
struct OwnedSlot(Arc<Ctx>);

impl OwnedSlot {
    fn take(ctx: &Arc<Ctx>, max: usize) -> Option<Self> {
        reserve(&ctx.turning, max).then(|| OwnedSlot(Arc::clone(ctx)))
    }
}

impl Drop for OwnedSlot {
    fn drop(&mut self) {
        self.0.turning.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A bound server, ready to serve.
pub struct Server {
    listener: TcpListener,
    ctx: Arc<Ctx>,
}

/// A server running on a background thread (used by `demo` and tests).
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Counts one more in `counter` if it is below `max`.
fn reserve(counter: &AtomicUsize, max: usize) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// A slot in a counter, released on drop.
pub(crate) struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    pub(crate) fn take(counter: &'a AtomicUsize, max: usize) -> Option<Self> {
        // Lazily: a Slot built and dropped here would release a count never taken.
        reserve(counter, max).then(|| Slot(counter))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Server {
    /// Binds the listening socket.
    pub fn bind(cfg: ServerConfig) -> std::io::Result<Self> {
        let listener = tcp::listen(cfg.bind, None)?;
        let ctx = Ctx {
            limits: cfg.limits,
            key: cfg.key.clone(),
            host_id: engine::env::boot_id(),
            handshake_timeout: cfg.handshake_timeout,
            active_tests: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            next_test_id: AtomicU16::new(1),
            allow_tuning: cfg.allow_tuning && cfg.key.is_some(),
            tuning: AtomicUsize::new(0),
            finished: cfg.finished.clone(),
            metrics: cfg.metrics.clone(),
            gate: std::sync::Mutex::new(Gate::new(cfg.gate)),
            handshakes: std::sync::Mutex::new(std::collections::HashMap::new()),
            idle_timeout: cfg.idle_timeout,
            memory: std::sync::atomic::AtomicU64::new(0),
            max_memory: cfg.max_memory,
            turning: AtomicUsize::new(0),
            rx_xdp: cfg.rx_xdp,
            // Raw ports only with a key: every session that may use them is authenticated.
            raw_ports: if cfg.key.is_some() {
                cfg.raw_ports.clone()
            } else {
                Vec::new()
            },
            raw_busy: std::sync::Mutex::default(),
            third_party: cfg.third_party && cfg.key.is_some(),
            third_party_peers: cfg.third_party_peers.clone(),
        };
        Ok(Self {
            listener,
            ctx: Arc::new(ctx),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `stop` is set (checked every 50 ms).
    pub fn serve(self, stop: &AtomicBool) -> std::io::Result<()> {
        self.listener.set_nonblocking(true)?;
        let max_conns = usize::from(self.ctx.limits.max_tests) * 2 + 16;
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if let Some(m) = &self.ctx.metrics {
                        m.connection();
                    }
                    let ctx = self.ctx.clone();
                    // The gate decides before a thread is started.
                    let ip = peer.ip();
                    // (The gate's lock is let go before the arms, which take it again.)
                    let admitted = ctx.gate().admit(ip, Instant::now());
                    let id = match admitted {
                        Admit::Yes { id, evict } => {
                            let mut open = ctx
                                .handshakes
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            if let Some(old) = evict.and_then(|e| open.remove(&e)) {
                                let _ = old.shutdown(std::net::Shutdown::Both);
                            }
                            if let Ok(c) = stream.try_clone() {
                                open.insert(id, c);
                            }
                            id
                        }
                        Admit::Full => {
                            ctx.refused(ErrorCode::Busy);
                            let max = ctx.gate().open_handshakes();
                            turn_away(
                                &ctx,
                                stream,
                                ErrorCode::Busy,
                                format!("too many handshakes open from {ip} ({max} in all)"),
                            );
                            continue;
                        }
                        Admit::Penalised(d) => {
                            ctx.refused(ErrorCode::Auth);
                            turn_away(
                                &ctx,
                                stream,
                                ErrorCode::Auth,
                                format!(
                                    "{ip} failed to authenticate or to finish its handshake: try again in {} s",
                                    d.as_secs_f64().ceil()
                                ),
                            );
                            continue;
                        }
                    };
                    let _ = stream.set_nonblocking(false);
                    let spawned =
                        std::thread::Builder::new()
                            .name("wb-conn".into())
                            .spawn(move || {
                                let handshake = Handshake { ctx: &ctx, ip, id };
                                let Some(_slot) = Slot::take(&ctx.connections, max_conns) else {
                                    ctx.refused(ErrorCode::Busy);
                                    let mut s = stream;
                                    let _ = write_msg(
                                        &mut s,
                                        &refusal(ErrorCode::Busy, "too many connections"),
                                    );
                                    return;
                                };
                                keep_alive(&stream);
                                let closer = stream.try_clone().ok();
                                let started = std::cell::Cell::new(false);
                                let result = handle_connection(stream, &ctx, handshake, &started);
                                // Refusals before a test started; a started one ends in
                                // the metrics as completed, aborted or failed.
                                if let (Err(ProtoError::Refused { code, .. }), false) =
                                    (&result, started.get())
                                {
                                    ctx.refused(*code);
                                }
                                // Ends the control reader thread with the connection.
                                if let Some(c) = closer {
                                    let _ = c.shutdown(std::net::Shutdown::Both);
                                }
                                match result {
                                    Ok(()) => tracing::info!("{peer}: done"),
                                    Err(e) => tracing::warn!("{peer}: {e}"),
                                }
                            });
                    if let Err(e) = spawned {
                        // The closure never ran: its handshake leaves the gate here.
                        self.ctx.gate().handshake_done(ip, id);
                        self.ctx
                            .handshakes
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .remove(&id);
                        tracing::error!("cannot start a connection thread: {e}");
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => {
                    tracing::warn!("accept: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        Ok(())
    }

    /// Runs the server on a background thread until the handle is dropped.
    pub fn spawn(self) -> std::io::Result<ServerHandle> {
        let addr = self.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wb-server".into())
            .spawn(move || {
                let _ = self.serve(&s);
            })?;
        Ok(ServerHandle {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

fn refusal(code: ErrorCode, message: impl Into<String>) -> ServerMsg {
    ServerMsg::Error {
        code,
        message: message.into(),
    }
}

/// Sends an error to the client (best effort) and returns it as this connection's error.
pub(crate) fn refuse(ctrl: &mut TcpStream, code: ErrorCode, message: String) -> ProtoError {
    let _ = write_msg(ctrl, &refusal(code, message.clone()));
    ProtoError::Refused { code, message }
}

/// Serves one control connection; `started` is set once a test has started (its end is
/// counted in the metrics, not as a refusal). The handshake, from hello to the request,
/// has one deadline; it leaves the gate when the request is read. A failed
/// authentication or a handshake out of time penalises the address.
fn handle_connection(
    mut ctrl: TcpStream,
    ctx: &Ctx,
    handshake: Handshake<'_>,
    started: &std::cell::Cell<bool>,
) -> Result<(), ProtoError> {
    let ip = handshake.ip;
    let deadline = Instant::now() + ctx.handshake_timeout;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let failed = |e: ProtoError| {
        if matches!(
            e,
            ProtoError::Refused {
                code: ErrorCode::Auth | ErrorCode::Timeout,
                ..
            } | ProtoError::Timeout
        ) {
            ctx.gate().failed(ip, Instant::now());
        }
        e
    };
    ctrl.set_nodelay(true).map_err(ProtoError::Io)?;
    ctrl.set_write_timeout(Some(ctx.handshake_timeout))
        .map_err(ProtoError::Io)?;
    let hello = read_or_refuse(&mut ctrl, left(), "hello").map_err(failed)?;
    match hello {
        ClientMsg::Hello { magic, version } if magic == MAGIC && version == VERSION => {}
        ClientMsg::Hello { magic, version } => {
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Version,
                format!("this server speaks {MAGIC} protocol version {VERSION}; client sent {magic:?} version {version}"),
            ))
        }
        other => return Err(refuse(&mut ctrl, ErrorCode::Protocol, format!("expected hello, got {}", kind(&other)))),
    }
    let challenge = match &ctx.key {
        Some(_) => {
            Some(auth::nonce().map_err(|e| ProtoError::Io(std::io::Error::other(e.to_string())))?)
        }
        None => None,
    };
    // With a key, an unauthenticated peer learns the protocol version and nothing else;
    // the server's boot id and limits come with the proof of the key.
    let facts = (ctx.host_id.clone(), ctx.limits);
    write_msg(
        &mut ctrl,
        &ServerMsg::Hello {
            version: VERSION,
            host_id: challenge.is_none().then(|| facts.0.clone()).flatten(),
            challenge: challenge.map(|c| auth::to_hex(&c)),
            limits: challenge.is_none().then_some(facts.1),
        },
    )?;
    if let (Some(key), Some(ns)) = (&ctx.key, challenge) {
        // A peer that goes away (or is evicted) is not penalised; one that answers
        // wrongly, or not in time, is.
        let msg: ClientMsg = match read_msg_within(&ctrl, left()) {
            Ok(m) => m,
            Err(e @ (ProtoError::Closed | ProtoError::Io(_))) => return Err(e),
            Err(e) => return Err(failed(refuse(&mut ctrl, ErrorCode::Auth, e.to_string()))),
        };
        let ClientMsg::Auth { client_nonce, mac } = msg else {
            return Err(failed(refuse(
                &mut ctrl,
                ErrorCode::Auth,
                "this server requires authentication (--auth-key-file)".into(),
            )));
        };
        let (Some(nc), Some(mac)) = (auth::from_hex(&client_nonce), auth::from_hex(&mac)) else {
            return Err(failed(refuse(
                &mut ctrl,
                ErrorCode::Auth,
                "authentication fields are not hex".into(),
            )));
        };
        if nc.len() != 32 || !auth::verify_client(key, &ns, &nc, &mac) {
            return Err(failed(refuse(
                &mut ctrl,
                ErrorCode::Auth,
                "authentication failed: wrong key".into(),
            )));
        }
        write_msg(
            &mut ctrl,
            &ServerMsg::AuthOk {
                mac: auth::to_hex(&auth::server_proof(key, &ns, &nc)),
                host_id: facts.0,
                limits: Some(facts.1),
            },
        )?;
    }
    let request = read_or_refuse(&mut ctrl, left(), "a test request").map_err(failed)?;
    // The handshake is over: its place at the gate is free, and the address in good
    // standing.
    drop(handshake);
    ctx.gate().succeeded(ip);
    ctrl.set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(ProtoError::Io)?;
    match request {
        ClientMsg::Test {
            spec,
            one_way,
            interval_ms,
        } => serve_test(ctrl, ctx, spec, one_way, interval_ms, started),
        ClientMsg::Echo { spec } => serve_echo(ctrl, ctx, spec),
        ClientMsg::Tune { mtu, features } => crate::tuning::serve(ctrl, ctx, mtu, features),
        open @ ClientMsg::RawOpen { .. } => crate::rawport::serve(ctrl, ctx, open),
        ClientMsg::RunClient { to, spec } => crate::third_party::serve(ctrl, ctx, &to, &spec),
        other => Err(refuse(
            &mut ctrl,
            ErrorCode::Protocol,
            format!("expected a test request, got {}", kind(&other)),
        )),
    }
}

/// Reads one handshake message; a timeout or undecodable message is answered with an
/// error before the connection closes.
fn read_or_refuse(
    ctrl: &mut TcpStream,
    timeout: Duration,
    what: &str,
) -> Result<ClientMsg, ProtoError> {
    match read_msg_within(ctrl, timeout) {
        Ok(m) => Ok(m),
        Err(ProtoError::Closed) => Err(ProtoError::Closed),
        Err(e) => {
            let code = if matches!(e, ProtoError::Timeout) {
                ErrorCode::Timeout
            } else {
                ErrorCode::Protocol
            };
            Err(refuse(ctrl, code, format!("expected {what}: {e}")))
        }
    }
}

pub(crate) fn kind(m: &ClientMsg) -> &'static str {
    match m {
        ClientMsg::Hello { .. } => "hello",
        ClientMsg::Auth { .. } => "auth",
        ClientMsg::Start => "start",
        ClientMsg::Test { .. } => "test",
        ClientMsg::Echo { .. } => "echo",
        ClientMsg::Finish { .. } => "finish",
        ClientMsg::Abort { .. } => "abort",
        ClientMsg::Tune { .. } => "tune",
        ClientMsg::Restore => "restore",
        ClientMsg::Alive => "alive",
        ClientMsg::RawOpen { .. } => "raw_open",
        ClientMsg::RawReceive { .. } => "raw_receive",
        ClientMsg::RawSend { .. } => "raw_send",
        ClientMsg::RawDone { .. } => "raw_done",
        ClientMsg::RawReflect { .. } => "raw_reflect",
        ClientMsg::RawStreams { .. } => "raw_streams",
        ClientMsg::RunClient { .. } => "run_client",
    }
}

/// Memory a test may make the server hold: its buffers and its socket buffers.
pub fn test_memory(spec: &TestSpec) -> u64 {
    spec.buffer_bytes()
        .saturating_add(spec.socket_buffer_bytes())
}

/// Memory held by running tests, reserved until dropped.
struct Reserved<'a> {
    ctx: &'a Ctx,
    bytes: u64,
}

impl<'a> Reserved<'a> {
    /// Reserves `bytes` of the server's budget, or says what is left.
    fn take(ctx: &'a Ctx, bytes: u64) -> Result<Self, u64> {
        ctx.memory
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|u| *u <= ctx.max_memory)
            })
            .map(|_| Reserved { ctx, bytes })
            .map_err(|used| ctx.max_memory.saturating_sub(used))
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.ctx.memory.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Checks a request against the server's limits; the message names the limit.
pub fn check_limits(spec: &TestSpec, limits: &Limits) -> Result<(), String> {
    spec.validate()?;
    if spec.total_duration().as_secs_f64() > limits.max_duration_s {
        return Err(format!(
            "duration {:.1} s exceeds this server's --max-duration of {:.1} s",
            spec.total_duration().as_secs_f64(),
            limits.max_duration_s
        ));
    }
    if spec.buffer_bytes() > MAX_TEST_BUFFER_BYTES {
        return Err(format!(
            "{} streams of {}-byte payloads need {} MiB of buffers; this server allows {} MiB per test",
            streams::total_streams(spec),
            spec.len,
            spec.buffer_bytes() >> 20,
            MAX_TEST_BUFFER_BYTES >> 20
        ));
    }
    if test_memory(spec) > MAX_TEST_BUFFER_BYTES {
        return Err(format!(
            "-w {} KiB on {} streams needs {} MiB of socket buffers (the kernel doubles each, send and receive); this server allows {} MiB per test: ask for a smaller window",
            spec.window.unwrap_or(0) >> 10,
            streams::total_streams(spec),
            spec.socket_buffer_bytes() >> 20,
            MAX_TEST_BUFFER_BYTES >> 20
        ));
    }
    let n = streams::total_streams(spec);
    if n > limits.max_streams {
        return Err(format!(
            "{n} streams exceed this server's --max-streams of {}",
            limits.max_streams
        ));
    }
    if let Some(max) = limits.max_rate_bps {
        match spec.total_bits_per_sec() {
            None => {
                return Err(format!(
                    "this server limits tests to {max:.0} bit/s (--max-rate); give a rate with -b"
                ))
            }
            Some(total) if total > max * 1.000_001 => {
                return Err(format!(
                    "{total:.0} bit/s exceeds this server's --max-rate of {max:.0} bit/s"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The client's address's share of tests, or its refusal.
fn source_test<'a>(ctrl: &mut TcpStream, ctx: &'a Ctx) -> Result<SourceTest<'a>, ProtoError> {
    let ip = ctrl.peer_addr().map_err(ProtoError::Io)?.ip();
    SourceTest::take(ctx, ip).ok_or_else(|| {
        refuse(
            ctrl,
            ErrorCode::Busy,
            format!("{ip} runs its share of tests at once (--max-tests-per-source)"),
        )
    })
}

/// A test's place on the server: one of `--max-tests`, one of its source's, and its
/// share of `--max-memory`; given back when dropped.
pub(crate) struct Admission<'a> {
    _slot: Slot<'a>,
    _source: SourceTest<'a>,
    _memory: Reserved<'a>,
}

/// Admits a test that needs `memory` bytes of buffers, or refuses it saying which limit
/// it met.
pub(crate) fn admit<'a>(
    ctrl: &mut TcpStream,
    ctx: &'a Ctx,
    memory: u64,
) -> Result<Admission<'a>, ProtoError> {
    let Some(slot) = Slot::take(&ctx.active_tests, usize::from(ctx.limits.max_tests)) else {
        return Err(refuse(
            ctrl,
            ErrorCode::Busy,
            format!(
                "the server is running its maximum of {} tests (--max-tests)",
                ctx.limits.max_tests
            ),
        ));
    };
    let source = source_test(ctrl, ctx)?;
    let reserved = match Reserved::take(ctx, memory) {
        Ok(r) => r,
        Err(free) => {
            return Err(refuse(
                ctrl,
                ErrorCode::Busy,
                format!(
                    "this test needs {} MiB of buffers; {} MiB of this server's --max-memory of {} MiB are free now",
                    memory >> 20,
                    free >> 20,
                    ctx.max_memory >> 20
                ),
            ))
        }
    };
    Ok(Admission {
        _slot: slot,
        _source: source,
        _memory: reserved,
    })
}

fn serve_test(
    mut ctrl: TcpStream,
    ctx: &Ctx,
    spec: TestSpec,
    one_way: bool,
    interval_ms: u32,
    started: &std::cell::Cell<bool>,
) -> Result<(), ProtoError> {
    if let Err(msg) = check_limits(&spec, &ctx.limits) {
        return Err(refuse(&mut ctrl, ErrorCode::Limit, msg));
    }
    if (1..MIN_INTERVAL_MS).contains(&interval_ms) {
        let msg = format!("intervals of {interval_ms} ms: the shortest is {MIN_INTERVAL_MS} ms");
        return Err(refuse(&mut ctrl, ErrorCode::Limit, msg));
    }
    let _admitted = admit(&mut ctrl, ctx, test_memory(&spec))?;
    // A test has ended, however it ended.
    let _ended = ctx.finished.as_deref().map(SetOnDrop::new);
    let test_id = ctx.next_test_id.fetch_add(1, Ordering::Relaxed);
    let Ok(nonce) = auth::nonce() else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Internal,
            "no randomness for the test token".into(),
        ));
    };
    let token = u64::from_le_bytes([
        nonce[0], nonce[1], nonce[2], nonce[3], nonce[4], nonce[5], nonce[6], nonce[7],
    ]);
    let local_ip = ctrl.local_addr().map_err(ProtoError::Io)?.ip();
    let plan = streams::plan(&spec);
    let mut side = SideRun::new(spec.server_cpu.map(usize::from));
    let setup = match spec.protocol {
        Protocol::Udp => setup_udp(
            &mut ctrl,
            &spec,
            TestKey::new(&spec, test_id, token, one_way, interval_ms),
            local_ip,
            &plan,
            &mut side,
            ctx.rx_xdp,
        ),
        Protocol::Tcp => setup_tcp(&mut ctrl, &spec, test_id, token, local_ip, &plan, &mut side),
    };
    if let Err(e) = setup {
        side.abort();
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Internal,
            format!("stream setup failed: {e}"),
        ));
    }
    write_msg(&mut ctrl, &ServerMsg::Ready)?;
    // The senders start on the client's go-ahead: by then the client has every stream's
    // handshake answer and its receivers run, so no data is lost to the handshake.
    match read_msg_within::<ClientMsg>(&ctrl, STREAM_SETUP_TIMEOUT) {
        Ok(ClientMsg::Start) => {}
        Ok(ClientMsg::Abort { .. }) => return Ok(()),
        Ok(other) => {
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Protocol,
                format!("expected start, got {}", kind(&other)),
            ))
        }
        Err(e) => return Err(e),
    }
    if let Err(e) = side.start() {
        side.abort();
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Internal,
            format!("cannot start the senders: {e}"),
        ));
    }
    // Scrapes read this test's streams until it ends, however it ends.
    let _watched = ctx.metrics.as_ref().map(|m| {
        let sends = |id: u8| plan.iter().any(|(i, w)| *i == id && *w == Sender::Server);
        let streams = side
            .lives()
            .into_iter()
            .map(|(id, live)| (sends(id), live))
            .collect();
        let client = ctrl
            .peer_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        m.start_test(test_id, spec.protocol.as_str(), client.ip(), streams)
    });
    started.set(true);
    let client_sent: Vec<u8> = plan
        .iter()
        .filter(|(_, w)| *w == Sender::Client)
        .map(|(id, _)| *id)
        .collect();
    // A UDP sender's first batch may hold 64 datagrams (GSO).
    let block = if spec.protocol == Protocol::Udp {
        64
    } else {
        1
    };
    let burst_bits = client_sent.len() as f64 * (block * spec.len) as f64 * 8.0
        + ctx.limits.max_rate_bps.unwrap_or(0.0) * 0.25;
    let watch = Watch {
        idle: ctx.idle_timeout,
        max_rate: ctx.limits.max_rate_bps,
        client_sent,
        burst_bits,
    };
    let done = run_control_loop(ctrl, spec, interval_ms, side, &watch);
    if let Some(m) = &ctx.metrics {
        m.ended(match &done {
            Ok(true) => "completed",
            Ok(false) => "aborted",
            Err(_) => "failed",
        });
    }
    done.map(|_| ())
}

#[allow(clippy::too_many_arguments)]
fn setup_udp(
    ctrl: &mut TcpStream,
    spec: &TestSpec,
    key: TestKey,
    local_ip: IpAddr,
    plan: &[(u8, Sender)],
    side: &mut SideRun,
    rx_xdp: bool,
) -> std::io::Result<()> {
    let mut socks = Vec::with_capacity(plan.len());
    for _ in plan {
        let s = UdpSocket::bind((local_ip, 0))?;
        udp::prepare_socket(&s, spec.window, spec.dscp)?;
        socks.push(s);
    }
    let ports = socks
        .iter()
        .map(|s| s.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()?;
    write_msg(
        ctrl,
        &ServerMsg::Accepted {
            test_id: key.test_id,
            token: key.token,
            ports,
        },
    )
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    let peer_ip = ctrl.peer_addr()?.ip();
    let pairs: Vec<(&UdpSocket, u8)> = socks
        .iter()
        .zip(plan)
        .map(|(s, (id, _))| (s, *id))
        .collect();
    udp::accept_registrations(
        &pairs,
        key.test_id,
        key.token,
        peer_ip,
        STREAM_SETUP_TIMEOUT,
    )?;
    // Receivers first so that nothing the client sends at once is missed.
    let receiving = plan
        .iter()
        .filter(|(_, who)| *who == Sender::Client)
        .count();
    for (s, (id, who)) in socks.iter().zip(plan) {
        if *who != Sender::Client {
            continue;
        }
        let cfg = udp_recv_config(spec, key, *id);
        let mut not_xdp = None;
        if rx_xdp {
            match xdp_receiver(local_ip, s, receiving) {
                Ok((rx, claim)) => {
                    side.udp_receiver_xdp(s.try_clone()?, rx, claim, cfg)?;
                    continue;
                }
                Err(why) => {
                    tracing::warn!("UDP test {}: af_xdp not used: {why}", key.test_id);
                    not_xdp = Some(why);
                }
            }
        }
        side.udp_receiver(s.try_clone()?, cfg, not_xdp)?;
    }
    for (s, (id, who)) in socks.into_iter().zip(plan) {
        if *who == Sender::Server {
            side.udp_sender_pending(s, udp_send_config(spec, key, *id));
        }
    }
    Ok(())
}

/// Interfaces whose AF_XDP receiver a test holds (one program per interface).
static XDP_IFACES: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A test's hold on an interface's AF_XDP receiver, given back when dropped.
pub(crate) struct XdpClaim(String);

impl Drop for XdpClaim {
    fn drop(&mut self) {
        XDP_IFACES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// An AF_XDP receiver taking the datagrams to `sock`'s port on the interface that holds
/// `local_ip`, with the test's hold on that interface; or why there is none: a test of
/// more than one receiving stream, an interface another test holds, or one AF_XDP does
/// not work on (loopback's 64 KiB MTU, no BPF).
fn xdp_receiver(
    local_ip: IpAddr,
    sock: &UdpSocket,
    receiving: usize,
) -> Result<(Box<dyn engine::frameio::FrameRx>, XdpClaim), String> {
    if receiving != 1 {
        return Err(format!(
            "it serves one receiving stream per test, this one has {receiving}"
        ));
    }
    let ip = local_ip.to_canonical();
    let iface = engine::sys::interface_with_address(ip)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no interface holds {ip}"))?;
    if !XDP_IFACES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(iface.clone())
    {
        return Err(format!("another test holds {iface}'s AF_XDP receiver"));
    }
    let claim = XdpClaim(iface.clone());
    let port = sock.local_addr().map_err(|e| e.to_string())?.port();
    let ep = engine::frameio::Endpoint { netns: None, iface };
    let filter = engine::frameio::XdpFilter::UdpPorts(vec![port]);
    // Echo probes are answered as they are read: no gathering of short batches.
    let rx = engine::frameio::XdpFrameRx::open_with(&ep, &filter)
        .map_err(|e| e.to_string())?
        .without_gathering();
    Ok((Box::new(rx), claim))
}

/// What identifies a test on its data sockets, and how its latency is measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TestKey {
    /// In every data packet's header.
    pub(crate) test_id: u16,
    /// Secret of the test: in CONTROL datagrams and TCP greetings.
    pub(crate) token: u64,
    /// Receivers record one-way latency; otherwise senders send echo probes.
    pub(crate) one_way: bool,
    /// Both sides count UDP datagrams per slot of this many ns of send time.
    pub(crate) slot_ns: u64,
}

impl TestKey {
    /// The key of a test reporting every `interval_ms` (0: no intervals, no slots).
    pub(crate) fn new(
        spec: &TestSpec,
        test_id: u16,
        token: u64,
        one_way: bool,
        interval_ms: u32,
    ) -> TestKey {
        let slot_ns = match interval_ms {
            0 => 0,
            ms => model::stats::slots::slot_width(
                u64::from(ms) * 1_000_000,
                u64::try_from(spec.total_duration().as_nanos()).unwrap_or(u64::MAX),
            ),
        };
        TestKey {
            test_id,
            token,
            one_way,
            slot_ns,
        }
    }
}

/// The receiver configuration both sides derive from a request.
pub(crate) fn udp_recv_config(spec: &TestSpec, key: TestKey, stream_id: u8) -> udp::UdpRecvConfig {
    udp::UdpRecvConfig {
        test_id: key.test_id,
        stream_id,
        one_way: key.one_way,
        max_len: spec.len,
        spin: udp::spin_receiver_for(spec.rate.packets_per_sec(spec.len)),
        token: key.token,
        slot_ns: key.slot_ns,
    }
}

/// The sender configuration both sides derive from a request.
pub(crate) fn udp_send_config(spec: &TestSpec, key: TestKey, stream_id: u8) -> udp::UdpSendConfig {
    udp::UdpSendConfig {
        test_id: key.test_id,
        stream_id,
        payload_len: spec.len,
        rate: spec.rate,
        duration: spec.duration,
        backend: spec.udp_backend,
        echo_probes: !key.one_way,
        token: key.token,
        packets: spec
            .bytes_per_stream
            .map(|b| b.div_ceil(spec.len.max(1) as u64)),
        slot_ns: key.slot_ns,
    }
}

fn setup_tcp(
    ctrl: &mut TcpStream,
    spec: &TestSpec,
    test_id: u16,
    token: u64,
    local_ip: IpAddr,
    plan: &[(u8, Sender)],
    side: &mut SideRun,
) -> std::io::Result<()> {
    let listener = tcp::listen(SocketAddr::new(local_ip, 0), spec.tcp.mss)?;
    let port = listener.local_addr()?.port();
    write_msg(
        ctrl,
        &ServerMsg::Accepted {
            test_id,
            token,
            ports: vec![port],
        },
    )
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    listener.set_nonblocking(true)?;
    let peer_ip = ctrl.peer_addr()?.ip();
    let deadline = Instant::now() + STREAM_SETUP_TIMEOUT;
    let mut conns: Vec<Option<TcpStream>> = (0..plan.len()).map(|_| None).collect();
    while conns.iter().any(Option::is_none) {
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "not all TCP data connections arrived",
            ));
        }
        match listener.accept() {
            // Only the control connection's peer may connect data streams; its greeting
            // must come at once (a silent connection cannot hold up the setup).
            Ok((s, from)) if from.ip() != peer_ip => drop(s),
            Ok((mut s, _)) => {
                s.set_nonblocking(false)?;
                let Ok(id) =
                    streams::read_greeting(&mut s, test_id, token, Duration::from_millis(500))
                else {
                    continue;
                };
                if let Some(slot) = plan.iter().position(|(i, _)| *i == id) {
                    if conns[slot].is_none() {
                        tcp::prepare_stream(&s, spec.window, spec.dscp, &spec.tcp)?;
                        conns[slot] = Some(s);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) => return Err(e),
        }
    }
    for (c, (id, who)) in conns.into_iter().zip(plan) {
        let Some(s) = c else { continue };
        match who {
            Sender::Client => side.tcp_receiver(s, *id, spec.omit.unwrap_or_default())?,
            Sender::Server => side.tcp_sender_pending(s, tcp_send_config(spec, *id)),
        }
    }
    Ok(())
}

/// TCP sender configuration derived from a request.
pub(crate) fn tcp_send_config(spec: &TestSpec, stream_id: u8) -> tcp::TcpSendConfig {
    tcp::TcpSendConfig {
        stream_id,
        block_len: spec.len,
        rate: spec.rate,
        duration: spec.duration,
        bytes: spec.bytes_per_stream,
        zerocopy: spec.tcp.zerocopy,
        omit: spec.omit.unwrap_or_default(),
    }
}

/// Reads client messages on a helper thread so that the control loop can wait with a
/// timeout without tearing a message in half.
pub(crate) fn spawn_reader<T>(
    ctrl: &TcpStream,
    timeout: Duration,
) -> std::io::Result<mpsc::Receiver<Result<T, ProtoError>>>
where
    T: serde::de::DeserializeOwned + Send + 'static,
{
    let mut r = ctrl.try_clone()?;
    r.set_read_timeout(Some(timeout))?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("wb-ctrl-rx".into())
        .spawn(move || loop {
            let m = read_msg::<T>(&mut r);
            let end = m.is_err();
            if tx.send(m).is_err() || end {
                break;
            }
        })?;
    Ok(rx)
}

/// What a running test is watched for: a silent client, and a rate above the limit.
struct Watch {
    /// Longest the client may say nothing (and send nothing) before it has finished.
    idle: Duration,
    /// `--max-rate`, bits/s.
    max_rate: Option<f64>,
    /// The streams the client sends (metered against `max_rate`).
    client_sent: Vec<u8>,
    /// What a client at the limit may be ahead of it: a first block per stream sent at
    /// once (pacers start with one), and a quarter second at the limit, bits.
    burst_bits: f64,
}

impl Watch {
    /// Payload bytes received so far on the client's streams, a warm-up's too.
    fn received(&self, side: &SideRun) -> u64 {
        side.lives()
            .iter()
            .filter(|(id, _)| self.client_sent.contains(id))
            .map(|(_, live)| live.raw_bytes())
            .sum()
    }

    /// Whether `bytes` received in `elapsed` are more than 10 % above `max` (bits/s),
    /// beyond the burst a paced client may be ahead (a token bucket since the start).
    fn over(&self, max: f64, bytes: u64, elapsed: Duration) -> bool {
        bytes as f64 * 8.0 > max * (1.0 + RATE_TOLERANCE) * elapsed.as_secs_f64() + self.burst_bits
    }
}

/// How often a running test's received bytes are looked at.
const METER_EVERY: Duration = Duration::from_millis(250);

/// Runs a started test to its end; `Ok(false)` when the client aborted it.
fn run_control_loop(
    mut ctrl: TcpStream,
    spec: TestSpec,
    interval_ms: u32,
    mut side: SideRun,
    watch: &Watch,
) -> Result<bool, ProtoError> {
    let limit = spec.total_duration() + FINISH_SLACK;
    let rx = spawn_reader::<ClientMsg>(&ctrl, limit).map_err(ProtoError::Io)?;
    let start = Instant::now();
    let mut heard = start;
    // The client's bytes when last looked at, and when that was.
    let mut metered = (0u64, start);
    let cpu = engine::env::ProcessCpu::start();
    let interval = (interval_ms > 0).then(|| Duration::from_millis(u64::from(interval_ms)));
    // The measured time starts after the warm-up (-O); the intervals with it.
    let omit = spec.omit.unwrap_or_default();
    let tick_at = |k: u32| tick_end(interval, spec.duration, k).map(|t| omit + t);
    let mut index = 0u32;
    let mut client_reports: Option<Vec<StreamReport>> = None;
    let mut stopped_early = false;
    let mut last_interval: Option<u32> = None;
    // Runs until the client has finished and this side's senders are done; keeps reading
    // the control connection all along (an abort or a vanished client stops the test).
    while client_reports.is_none() || !side.senders_done() {
        let now = start.elapsed();
        if now >= limit {
            side.abort();
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Timeout,
                "the client did not finish the test in time".into(),
            ));
        }
        // What the client sends: against the server's limit, and as a sign of life (its
        // Alive messages may wait behind the data on a saturated path).
        if metered.1.elapsed() >= METER_EVERY && !watch.client_sent.is_empty() {
            let bytes = watch.received(&side);
            if bytes > metered.0 {
                heard = Instant::now();
            }
            metered = (bytes, Instant::now());
            if let Some(max) = watch.max_rate {
                if watch.over(max, bytes, start.elapsed()) {
                    side.abort();
                    let bps = bytes as f64 * 8.0 / start.elapsed().as_secs_f64().max(1e-3);
                    return Err(refuse(
                        &mut ctrl,
                        ErrorCode::Limit,
                        format!(
                            "the client sent {} on average, more than this server's --max-rate of {} (+10 %): test ended",
                            model::units::bps(bps),
                            model::units::bps(max)
                        ),
                    ));
                }
            }
        }
        // A client that fell silent (stopped, or its host gone) before it finished.
        if client_reports.is_none() && heard.elapsed() > watch.idle {
            side.abort();
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Timeout,
                format!(
                    "the client said nothing for {} s (--idle-timeout): test ended",
                    watch.idle.as_secs_f64()
                ),
            ));
        }
        let next_tick = tick_at(index);
        let wait = next_tick
            .map(|t| t.saturating_sub(now))
            .unwrap_or(Duration::from_millis(20))
            .min(Duration::from_millis(20))
            .min(limit - now);
        let got = rx.recv_timeout(wait);
        if matches!(got, Ok(Ok(_))) {
            heard = Instant::now();
        }
        match got {
            Ok(Ok(ClientMsg::Alive)) => {}
            Ok(Ok(ClientMsg::Finish {
                reports,
                early,
                intervals,
            })) if client_reports.is_none() => {
                if early {
                    side.stop_senders();
                    stopped_early = true;
                    last_interval = intervals;
                }
                client_reports = Some(reports)
            }
            Ok(Ok(ClientMsg::Abort { reason })) => {
                side.abort();
                tracing::info!("client aborted: {reason}");
                return Ok(false);
            }
            Ok(Ok(other)) => {
                side.abort();
                return Err(refuse(
                    &mut ctrl,
                    ErrorCode::Protocol,
                    format!("unexpected {} during a test", kind(&other)),
                ));
            }
            Ok(Err(e)) => {
                side.abort();
                return Err(e);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                side.abort();
                return Err(ProtoError::Closed);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        // The tick at the end is taken at the end, once this side's senders are done (a
        // receiver's count then leaves out what a queue still holds, as in iperf3).
        if let Some(t) = next_tick {
            if start.elapsed() >= t && (t < spec.total_duration() || side.senders_done()) {
                send_interval(&mut ctrl, &mut index, &side)?;
            }
        }
    }
    let mut reports = side.join_senders();
    // The tick at the end (and any the end overtook), now that both sides' senders are
    // done: what arrives after it (a queue's tail) is in the totals, not in an interval,
    // as in iperf3. A test stopped early has no more intervals than the client counted,
    // the last one partial (and no more than the test's duration has).
    while !stopped_early && tick_at(index).is_some() {
        send_interval(&mut ctrl, &mut index, &side)?;
    }
    while last_interval.is_some_and(|n| index < n) && tick_at(index).is_some() {
        send_interval(&mut ctrl, &mut index, &side)?;
    }
    let expected = sent_counts(client_reports.as_deref().unwrap_or_default());
    let (quiet, cap) = grace(&spec);
    reports.extend(side.finish_receivers(&expected, quiet, cap));
    let tcp = spec.protocol == Protocol::Tcp;
    let host = ServerHost {
        cpu: cpu.used(),
        congestion: tcp
            .then(|| {
                spec.tcp
                    .congestion
                    .clone()
                    .or_else(engine::env::tcp_congestion_default)
            })
            .flatten(),
    };
    crate::messages::fit(&mut reports);
    write_msg(
        &mut ctrl,
        &ServerMsg::Results {
            reports,
            host: Some(host),
        },
    )?;
    Ok(true)
}

/// Sends this side's counters as interval `index` and moves to the next interval.
fn send_interval(ctrl: &mut TcpStream, index: &mut u32, side: &SideRun) -> Result<(), ProtoError> {
    write_msg(
        ctrl,
        &ServerMsg::Interval {
            index: *index,
            streams: side.sample(),
        },
    )?;
    *index += 1;
    Ok(())
}

/// Packets each UDP sender reported sending: what its receiver waits for at the end.
pub(crate) fn sent_counts(reports: &[StreamReport]) -> Vec<(u8, u64)> {
    reports
        .iter()
        .filter_map(|r| match r {
            StreamReport::UdpTx(t) => Some((t.stream_id, t.packets)),
            _ => None,
        })
        .collect()
}

/// How long receivers wait for the tail of a test: (quiet period, cap). UDP stops early
/// once every sent packet is counted, or when nothing arrived for the quiet period: 100 ms,
/// or three packet gaps for slow streams. TCP stops once every stream reached its end.
pub(crate) fn grace(spec: &TestSpec) -> (Duration, Duration) {
    match spec.protocol {
        Protocol::Udp => {
            let cap = Duration::from_secs(2);
            let gaps = spec
                .rate
                .packets_per_sec(spec.len)
                .map(|p| Duration::from_secs_f64((3.0 / p).min(2.0)));
            (
                gaps.unwrap_or_default()
                    .max(Duration::from_millis(100))
                    .min(cap),
                cap,
            )
        }
        Protocol::Tcp => (Duration::from_millis(500), Duration::from_secs(3)),
    }
}

fn serve_echo(mut ctrl: TcpStream, ctx: &Ctx, spec: EchoSpec) -> Result<(), ProtoError> {
    if spec.duration.as_secs_f64() > ctx.limits.max_duration_s {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Limit,
            format!(
                "duration exceeds this server's --max-duration of {:.1} s",
                ctx.limits.max_duration_s
            ),
        ));
    }
    let Some(_slot) = Slot::take(&ctx.active_tests, usize::from(ctx.limits.max_tests)) else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Busy,
            "the server is running its maximum number of tests".into(),
        ));
    };
    let _source = source_test(&mut ctrl, ctx)?;
    let local_ip = ctrl.local_addr().map_err(ProtoError::Io)?.ip();
    let peer_ip = ctrl.peer_addr().map_err(ProtoError::Io)?.ip();
    let sock = UdpSocket::bind((local_ip, 0)).map_err(ProtoError::Io)?;
    let _ = engine::sys::enable_rx_timestamps(&sock);
    let port = sock.local_addr().map_err(ProtoError::Io)?.port();
    let stop = Arc::new(AtomicBool::new(false));
    let (max_len, idle) = (spec.max_len, ctx.idle_timeout);
    // Spinning is charged to the client's address (`--max-spin-per-source`).
    let mut charge = |spent: Duration| ctx.gate().charge_spin(peer_ip, spent, Instant::now());
    let (res, end) = std::thread::scope(|scope| {
        // However this ends, the echo thread is told to stop before the scope waits for it.
        let _stop = SetOnDrop::new(&stop);
        let echo = std::thread::Builder::new()
            .name("wb-echo".into())
            .spawn_scoped(scope, || {
                let spin = spec
                    .spin
                    .then_some(&mut charge as &mut dyn FnMut(Duration) -> bool);
                udp::run_echo(&sock, peer_ip, max_len, spin, idle, &stop)
            })
            .map_err(ProtoError::Io)?;
        write_msg(&mut ctrl, &ServerMsg::EchoReady { port })?;
        let limit = spec.duration + FINISH_SLACK;
        let rx = spawn_reader::<ClientMsg>(&ctrl, limit).map_err(ProtoError::Io)?;
        let until = Instant::now() + limit;
        // The client's finish, its going away, or the echo falling idle (no message for
        // the idle timeout), whichever comes first.
        let res = loop {
            if echo.is_finished() {
                break Err(ProtoError::Timeout);
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(m) => break m,
                Err(mpsc::RecvTimeoutError::Disconnected) => break Err(ProtoError::Closed),
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() >= until => {
                    break Err(ProtoError::Timeout)
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        };
        stop.store(true, Ordering::Relaxed);
        let end = echo.join().unwrap_or(udp::EchoEnd {
            echoed: 0,
            went_idle: false,
            spin_refused: false,
        });
        Ok::<_, ProtoError>((res, end))
    })?;
    let (echoed, went_idle) = (end.echoed, end.went_idle);
    tracing::info!("echo test done: {echoed} messages echoed");
    if end.spin_refused {
        tracing::warn!(
            "{peer_ip} used up its busy-polling time (--max-spin-per-source {} s, given \
             back at a quarter of a core): its echo answered from recv instead",
            ctx.gate().spin_burst().as_secs_f64()
        );
    }
    if went_idle {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Timeout,
            format!(
                "no message for {} s (--idle-timeout): latency session ended",
                idle.as_secs_f64()
            ),
        ));
    }
    match res {
        Ok(ClientMsg::Finish { .. } | ClientMsg::Abort { .. }) | Err(ProtoError::Closed) => Ok(()),
        Ok(other) => Err(refuse(
            &mut ctrl,
            ErrorCode::Protocol,
            format!("unexpected {} during an echo test", kind(&other)),
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use model::spec::{Direction, Rate, UdpBackend};

    pub(super) fn spec() -> TestSpec {
        TestSpec {
            protocol: Protocol::Udp,
            duration: Duration::from_secs(10),
            rate: Rate::BitsPerSec(100e6),
            len: 1000,
            streams: 2,
            direction: Direction::Bidir,
            udp_backend: UdpBackend::Auto,
            synced_clocks: false,
            dscp: None,
            window: None,
            server_cpu: None,
            tcp: Default::default(),
            bytes_per_stream: None,
            omit: None,
        }
    }

    #[test]
    fn limits_name_the_limit() {
        let l = Limits {
            max_rate_bps: Some(150e6),
            max_duration_s: 5.0,
            max_streams: 3,
            max_tests: 1,
        };
        let e = check_limits(&spec(), &l).unwrap_err();
        assert!(e.contains("--max-duration"), "{e}");
        let l = Limits {
            max_duration_s: 60.0,
            ..l
        };
        let e = check_limits(&spec(), &l).unwrap_err();
        assert!(
            e.contains("4 streams") && e.contains("--max-streams"),
            "{e}"
        );
        let l = Limits {
            max_streams: 8,
            ..l
        };
        let e = check_limits(&spec(), &l).unwrap_err();
        assert!(e.contains("--max-rate"), "{e}");
        let l = Limits {
            max_rate_bps: Some(400e6), // 2 streams each way at 100 Mbit/s
            ..l
        };
        assert!(check_limits(&spec(), &l).is_ok());
        let mut unlimited = spec();
        unlimited.rate = Rate::Unlimited;
        assert!(check_limits(&unlimited, &l).unwrap_err().contains("-b"));
    }
}

#[cfg(test)]
mod tests {
    use super::test::spec;
    use super::*;
    use model::spec::{Direction, Rate};

    fn ends(interval_ms: u64, duration_ms: u64) -> Vec<u128> {
        let i = Some(Duration::from_millis(interval_ms));
        let d = Duration::from_millis(duration_ms);
        (0..)
            .map_while(|k| tick_end(i, d, k))
            .map(|t| t.as_millis())
            .collect()
    }

    #[test]
    fn the_last_partial_interval_is_kept() {
        assert_eq!(ends(1000, 1500), [1000, 1500]);
        assert_eq!(ends(1000, 3000), [1000, 2000, 3000]);
        assert_eq!(ends(500, 1200), [500, 1000, 1200]);
        // A remainder within the slack is timer rounding, not an interval.
        assert_eq!(ends(1000, 2001), [1000, 2000]);
        assert!(tick_end(None, Duration::from_secs(5), 0).is_none());
        assert!(tick_end(Some(Duration::ZERO), Duration::from_secs(5), 0).is_none());
        // Longer than the test: one interval, the test's length.
        assert_eq!(ends(5000, 1500), [1500]);
    }

    fn server(limits: Limits, key: Option<Vec<u8>>) -> ServerHandle {
        Server::bind(ServerConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            limits,
            key,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            allow_tuning: false,
            rx_xdp: false,
            raw_ports: Vec::new(),
            third_party: false,
            third_party_peers: Vec::new(),
            finished: None,
            metrics: None,
            gate: GateConfig::default(),
            idle_timeout: IDLE_TIMEOUT,
            max_memory: 1 << 30,
        })
        .unwrap()
        .spawn()
        .unwrap()
    }

    fn client(addr: SocketAddr, key: Option<Vec<u8>>) -> crate::client::ClientConfig {
        crate::client::ClientConfig {
            server: addr,
            key,
            connect_timeout: Duration::from_secs(2),
            bind: None,
            cport: None,
            cpu: None,
            force_round_trip: false,
            stop: None,
            allow_unauthenticated_server: false,
        }
    }

    /// A client that asks for 0.5 Mbit/s and sends 5 against a 1 Mbit/s limit is stopped
    /// after about a second of its ten, with the reason; an honest one at the limit runs.
    #[test]
    fn a_client_sending_above_the_limit_is_stopped() {
        let limits = Limits {
            max_rate_bps: Some(1e6),
            ..Limits::default()
        };
        let srv = server(limits, None);
        let udp = |bps: f64, secs: u64| TestSpec {
            rate: Rate::BitsPerSec(bps),
            streams: 1,
            direction: Direction::Forward,
            duration: Duration::from_secs(secs),
            ..spec()
        };
        let session = crate::client::Session::connect(&client(srv.addr(), None)).unwrap();
        let started = Instant::now();
        let r = session.run_test_telling(&udp(0.5e6, 10), &udp(5e6, 10), None, |_| {});
        let took = started.elapsed();
        match r {
            Err(ProtoError::Refused {
                code: ErrorCode::Limit,
                message,
            }) => assert!(message.contains("--max-rate"), "{message}"),
            other => panic!("not stopped for its rate: {other:?}"),
        }
        assert!(
            took < Duration::from_secs(4),
            "stopped after {took:?} of 10 s"
        );
        // At the limit: runs to its end.
        let session = crate::client::Session::connect(&client(srv.addr(), None)).unwrap();
        let ok = session.run_test(&udp(1e6, 3), None, |_| {}).unwrap();
        assert!(!ok.remote.is_empty());
    }

    /// With a key, the hello says the version and the challenge and nothing else; the
    /// limits and boot id come after the proof. Without one, the hello has them.
    #[test]
    fn an_unauthenticated_peer_learns_only_the_version() {
        let key = b"a key of more than sixteen bytes".to_vec();
        for (keyed, srv) in [
            (true, server(Limits::default(), Some(key.clone()))),
            (false, server(Limits::default(), None)),
        ] {
            let mut c = TcpStream::connect(srv.addr()).unwrap();
            write_msg(
                &mut c,
                &ClientMsg::Hello {
                    magic: MAGIC.into(),
                    version: VERSION,
                },
            )
            .unwrap();
            let hello: ServerMsg = read_msg_within(&c, Duration::from_secs(5)).unwrap();
            let ServerMsg::Hello {
                version,
                host_id,
                challenge,
                limits,
            } = hello
            else {
                panic!("{hello:?}")
            };
            assert_eq!(version, VERSION);
            assert_eq!(challenge.is_some(), keyed);
            assert_eq!(limits.is_some(), !keyed);
            assert!(!keyed || host_id.is_none());
            // The client with the key gets them after the proof.
            let session =
                crate::client::Session::connect(&client(srv.addr(), keyed.then(|| key.clone())))
                    .unwrap();
            assert_eq!(session.limits, Limits::default());
        }
    }

    /// A client with a key refuses a server that does not ask for it, unless told to go
    /// on.
    #[test]
    fn a_client_with_a_key_refuses_a_server_without_one() {
        let srv = server(Limits::default(), None);
        let key = Some(b"a key of more than sixteen bytes".to_vec());
        let e = crate::client::Session::connect(&client(srv.addr(), key.clone()))
            .err()
            .expect("refused");
        assert!(e.to_string().contains("did not ask"), "{e}");
        let cfg = crate::client::ClientConfig {
            allow_unauthenticated_server: true,
            ..client(srv.addr(), key)
        };
        assert!(crate::client::Session::connect(&cfg).is_ok());
    }

    #[test]
    fn socket_buffers_count_against_a_test() {
        let tcp = TestSpec {
            protocol: Protocol::Tcp,
            rate: Rate::Unlimited,
            streams: 1,
            direction: Direction::Forward,
            len: 128 << 10,
            window: Some(1 << 30),
            ..spec()
        };
        let e = check_limits(&tcp, &Limits::default()).unwrap_err();
        assert!(
            e.contains("-w 1048576 KiB") && e.contains("socket buffers"),
            "{e}"
        );
        let small = TestSpec {
            window: Some(4 << 20),
            ..tcp
        };
        assert!(check_limits(&small, &Limits::default()).is_ok());
        assert_eq!(test_memory(&small), (128 << 10) + (16 << 20));
    }
}
