//! A server's configuration ([`ServerConfig`], its defaults) and the context all its
//! sessions share ([`Ctx`]): the limits and key, the clock every session reads time from,
//! the gate, the counters admission takes from, and what the services need of the server
//! (tuning, raw ports, third-party tests).
//! [`refuse`] sends a session's refusal.
//!
//! It does not listen, accept or dispatch ([`crate::server`] does), and decides nothing
//! about a request ([`crate::limits`], [`crate::gate`] and [`super::admit`] do).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use model::clock::Clock;
use model::stop::Stop;

use crate::frame::write_msg;
use crate::gate::{Gate, GateConfig, HandshakeId};
use crate::messages::{ErrorCode, Limits, ServerMsg};
use crate::metrics::ServerMetrics;
use crate::ProtoError;

/// Default time a client has for its whole handshake (hello, auth, request).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a started test's client may stay silent (it says it is alive every
/// second) before the test is ended.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// The default `--raw-max-rate`, bits/s of frames with FCS: a gigabit port's line rate,
/// which a trial at the methods' default `--line-rate 1G` stays under at every frame size.
const DEFAULT_RAW_MAX_RATE_BPS: f64 = 1e9;

/// What a server's lent ports may send (`--raw-max-rate`, `--raw-allow-spoof`,
/// `--raw-allow-broadcast`, `--raw-destinations`). The default is the safe one: 1 Gbit/s
/// per port, from the port's own MAC and addresses, to unicast destinations on its own
/// subnets or in the benchmarking blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct RawPortPolicy {
    /// Most bits/s of frames (FCS included) one port sends, all its streams together.
    pub max_rate_bps: f64,
    /// Frames may carry any source MAC and IP address, and TCP SYN or RST.
    pub allow_spoof: bool,
    /// Frames may go to broadcast and multicast MAC and IP addresses.
    pub allow_broadcast: bool,
    /// Address blocks frames may go to besides the port's subnets and the benchmarking
    /// blocks.
    pub destinations: Vec<(IpAddr, u8)>,
}

impl Default for RawPortPolicy {
    fn default() -> Self {
        Self {
            max_rate_bps: DEFAULT_RAW_MAX_RATE_BPS,
            allow_spoof: false,
            allow_broadcast: false,
            destinations: Vec::new(),
        }
    }
}

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
    pub finished: Option<Stop>,
    /// Counted for `--metrics` when given.
    pub metrics: Option<Arc<ServerMetrics>>,
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
    /// What the lent ports may send (`--raw-max-rate`, `--raw-allow-spoof`,
    /// `--raw-allow-broadcast`, `--raw-destinations`).
    pub raw_policy: RawPortPolicy,
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

/// What every session of one server shares.
pub(crate) struct Ctx {
    /// Where every session, deadline and watch of the server reads time.
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) limits: Limits,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) host_id: Option<String>,
    pub(crate) handshake_timeout: Duration,
    pub(crate) active_tests: AtomicUsize,
    pub(crate) connections: AtomicUsize,
    pub(crate) next_test_id: AtomicU16,
    pub(crate) allow_tuning: bool,
    pub(crate) finished: Option<Stop>,
    /// A tuning session is running (one at a time).
    pub(crate) tuning: AtomicUsize,
    /// The running tuning session's control connection: closed when the server stops, so
    /// that the session puts its interface back before the process ends.
    pub(crate) tuning_conn: Mutex<Option<TcpStream>>,
    pub(crate) metrics: Option<Arc<ServerMetrics>>,
    gate: Mutex<Gate>,
    /// Open handshakes' sockets, to close one the gate evicts.
    pub(crate) handshakes: Mutex<HashMap<HandshakeId, TcpStream>>,
    pub(crate) idle_timeout: Duration,
    /// Bytes reserved by running tests, and the most they may reserve.
    pub(crate) memory: AtomicU64,
    pub(crate) max_memory: u64,
    /// Connections being turned away now.
    pub(crate) turning: AtomicUsize,
    pub(crate) rx_xdp: bool,
    pub(crate) raw_ports: Vec<String>,
    pub(crate) raw_policy: RawPortPolicy,
    /// Lent ports in use: (interface, sending), one session each.
    pub(crate) raw_busy: Mutex<HashSet<(String, bool)>>,
    /// Runs client tests toward other servers for authenticated controllers.
    pub(crate) third_party: bool,
    /// ... only toward these blocks (empty: any but the special addresses).
    pub(crate) third_party_peers: Vec<(IpAddr, u8)>,
}

impl Ctx {
    /// The context of a server configured by `cfg`, reading time from `clock`: what needs
    /// a key (tuning, raw ports, third-party tests) is off without one.
    pub(crate) fn new(cfg: &ServerConfig, clock: Arc<dyn Clock>) -> Ctx {
        Ctx {
            clock,
            limits: cfg.limits,
            key: cfg.key.clone(),
            host_id: engine::env::boot_id(),
            handshake_timeout: cfg.handshake_timeout,
            active_tests: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            next_test_id: AtomicU16::new(1),
            allow_tuning: cfg.allow_tuning && cfg.key.is_some(),
            tuning: AtomicUsize::new(0),
            tuning_conn: Mutex::new(None),
            finished: cfg.finished.clone(),
            metrics: cfg.metrics.clone(),
            gate: Mutex::new(Gate::new(cfg.gate)),
            handshakes: Mutex::new(HashMap::new()),
            idle_timeout: cfg.idle_timeout,
            memory: AtomicU64::new(0),
            max_memory: cfg.max_memory,
            turning: AtomicUsize::new(0),
            rx_xdp: cfg.rx_xdp,
            // Raw ports only with a key: every session that may use them is authenticated.
            raw_ports: if cfg.key.is_some() {
                cfg.raw_ports.clone()
            } else {
                Vec::new()
            },
            raw_policy: cfg.raw_policy.clone(),
            raw_busy: Mutex::default(),
            third_party: cfg.third_party && cfg.key.is_some(),
            third_party_peers: cfg.third_party_peers.clone(),
        }
    }

    /// The gate (a panic elsewhere does not lock it for good).
    pub(crate) fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open handshakes' sockets.
    pub(crate) fn handshakes(&self) -> MutexGuard<'_, HashMap<HandshakeId, TcpStream>> {
        self.handshakes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The running tuning session's connection.
    pub(crate) fn tuning_conn(&self) -> MutexGuard<'_, Option<TcpStream>> {
        self.tuning_conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a refusal for `--metrics`.
    pub(crate) fn refused(&self, code: ErrorCode) {
        if let Some(m) = &self.metrics {
            m.refused(code);
        }
    }
}

/// The error message of a refusal.
pub(crate) fn refusal(code: ErrorCode, message: impl Into<String>) -> ServerMsg {
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

/// Sends a refusal decided without I/O ([`ProtoError::Refused`]) to the client (best
/// effort) and returns it; any other error is returned as it is.
pub(crate) fn send_refusal(ctrl: &mut TcpStream, e: ProtoError) -> ProtoError {
    match e {
        ProtoError::Refused { code, message } => refuse(ctrl, code, message),
        other => other,
    }
}
