//! The control messages, typed. Compatibility rules:
//!
//! - A connection starts with [`ClientMsg::Hello`] carrying [`crate::MAGIC`] and
//!   [`crate::VERSION`]; the server answers [`ServerMsg::Hello`] or, for another magic or
//!   version, [`ServerMsg::Error`] with [`ErrorCode::Version`] and closes.
//! - Within one version, messages and fields only change together with the version number.
//! - Every message is one JSON object tagged by `type`, framed by [`crate::frame`], at
//!   most [`MAX_MESSAGE`] bytes of it.
//! - Messages carry types of the protocol's own ([`report`], [`raw`]), never the
//!   engine's (since version 8): those convert at the edge (`From`, both ways), and the
//!   JSON of every message that carries a stream's or a port's figures is pinned by a
//!   golden test, so a change in the engine cannot change the wire unnoticed. Figures
//!   that belong to the results model (`model`'s counters, latency, specs) travel as that
//!   model serialises them.
//!
//! This module is data only: it reads no socket and imports no other module of the crate
//! (a stream's reports are in [`report`], the raw-port payloads in [`raw`]).

#[cfg(test)]
mod golden;
pub mod raw;
pub mod report;

use serde::{Deserialize, Serialize};

use model::spec::{EchoSpec, TestSpec};

use report::{LiveCounts, TcpRxReport, TcpTxReport, UdpRxReport, UdpTxReport};

/// Client to server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMsg {
    /// First message of every connection.
    Hello {
        /// Must equal [`crate::MAGIC`].
        magic: String,
        /// The client's protocol version.
        version: u32,
    },
    /// Answer to the server's challenge: HMAC-SHA256 over both nonces (see [`crate::auth`]).
    Auth {
        /// Client nonce, hex.
        client_nonce: String,
        /// HMAC, hex.
        mac: String,
    },
    /// Run a throughput test.
    Test {
        /// What to run.
        spec: TestSpec,
        /// Receivers record one-way latency (shared or synchronised clocks).
        one_way: bool,
        /// Interval report period in milliseconds (0 = none).
        interval_ms: u32,
    },
    /// Every data stream is connected and its handshake answered: the server may start
    /// its senders (sent after [`ServerMsg::Ready`]).
    Start,
    /// Open an echo socket for ping-pong latency.
    Echo {
        /// What to run.
        spec: EchoSpec,
    },
    /// The client's senders are done; here is what they sent.
    Finish {
        /// Reports of the client's senders.
        reports: Vec<StreamReport>,
        /// The client stops before the test's time is up (Ctrl-C): the server's senders
        /// stop now and the results cover the time the test ran.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        early: bool,
        /// With `early`: how many intervals the test had, the last one partial (the server
        /// sends its samples up to there).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        intervals: Option<u32>,
    },
    /// Stop now; results are not wanted.
    Abort {
        /// Why, for the server's log.
        reason: String,
    },
    /// Set the interface this connection arrived on (a server started with
    /// `--allow-tuning`): the MTU and features by kernel name. The first one saves the
    /// interface's settings; they are put back on [`ClientMsg::Restore`] or when the
    /// connection ends, whichever comes first.
    Tune {
        /// MTU to set.
        mtu: Option<u32>,
        /// Features to set on or off.
        features: std::collections::BTreeMap<String, bool>,
    },
    /// Put the settings back and end the tuning session.
    Restore,
    /// The client is still there: sent every second while a test runs, until `Finish`
    /// (a server ends a test whose client says nothing for its idle timeout).
    Alive,
    /// Use raw port `port` of a server started with `--raw-ports` (which needs a key, so
    /// the session is authenticated): it is opened for sending and/or receiving and stays
    /// open for the session's trials ([`crate::rawport`]).
    RawOpen {
        /// The interface.
        port: String,
        /// Open a sender, with this backend (`packet`, `ring`, `xdp`, or `auto`: the
        /// fastest that opens).
        send: Option<String>,
        /// Open a receiver, with this backend (`auto`: the ring, then packet).
        receive: Option<String>,
        /// Largest frame to send, FCS included.
        max_len: u64,
        /// Resolve the next hop's MAC toward this address (a sender without `--dst-mac`).
        resolve: Option<std::net::IpAddr>,
    },
    /// Count the frames of test `test_id`, streams `streams`, until [`ClientMsg::RawDone`].
    RawReceive {
        /// Test id.
        test_id: u16,
        /// Stream ids.
        streams: Vec<u8>,
        /// Wait this long after the last frame (ms).
        drain_ms: u64,
    },
    /// Send one stream: frames like `frame` (hex, one frame of the stream: its headers are
    /// taken, its test header and length are not) of `frame_len` bytes with FCS.
    RawSend {
        /// A frame of the stream, hex.
        frame: String,
        /// Frame size with FCS.
        frame_len: u64,
        /// Test id.
        test_id: u16,
        /// Stream id.
        stream_id: u8,
        /// Rate and duration, or a burst.
        load: raw::RawSendLoad,
    },
    /// Send several streams at once, each on its own schedule (`streams` with a source on
    /// this port); answered when all have reached their stop offsets.
    RawStreams {
        /// Test id.
        test_id: u16,
        /// The streams.
        streams: Vec<raw::RawStream>,
    },
    /// Turn every frame of test `test_id` around and send it back on the same port (a
    /// far-end loopback, `engine::raw::reflect`) until [`ClientMsg::RawDone`]; needs a
    /// port opened for sending and receiving.
    RawReflect {
        /// Test id.
        test_id: u16,
    },
    /// The sender is done after `sent` frames: the receiver drains and answers (a
    /// reflector goes on for 100 ms more, for the frames still on their way, and stops).
    RawDone {
        /// Frames sent.
        sent: u64,
    },
    /// Run a client test toward the wirebench server at `to` (`HOST:PORT`) from this
    /// server, authenticated with this server's own key, and answer with its result
    /// ([`crate::third_party`]; a server started with `--allow-third-party`).
    RunClient {
        /// The other server's control address.
        to: String,
        /// The test.
        spec: TestSpec,
    },
}

impl ClientMsg {
    /// The message's `type`, for refusals and logs.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
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
}

/// Server to client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMsg {
    /// Answer to the client's hello.
    Hello {
        /// The server's protocol version.
        version: u32,
        /// The server's boot id: equal boot ids share one clock.
        host_id: Option<String>,
        /// Present when the server requires authentication: its nonce, hex.
        challenge: Option<String>,
        /// What the server allows; absent when it requires authentication (then in
        /// [`ServerMsg::AuthOk`]).
        limits: Option<Limits>,
    },
    /// Authentication succeeded; the server proves it knows the key too, and says what
    /// it told no one before.
    AuthOk {
        /// HMAC over the nonces in the other order, hex.
        mac: String,
        /// The server's boot id.
        host_id: Option<String>,
        /// What the server allows.
        limits: Option<Limits>,
    },
    /// The test is set up; connect the data streams.
    Accepted {
        /// Test id (in every data packet's header).
        test_id: u16,
        /// Token the client sends on every TCP data connection.
        token: u64,
        /// UDP: one port per stream id (index 0 = stream 1). TCP: one listening port.
        ports: Vec<u16>,
        /// UDP: the most payload bytes one send of the client may carry, when the
        /// server's receiver takes a GSO batch whole (AF_XDP) and has room for this much
        /// only. Absent: no limit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        udp_max_send: Option<u32>,
    },
    /// All data streams are connected and the server's receivers run; the client starts
    /// its senders and answers [`ClientMsg::Start`].
    Ready,
    /// Live counters of the server's streams at the end of interval `index`.
    Interval {
        /// 0-based interval number.
        index: u32,
        /// (stream id, totals so far).
        streams: Vec<(u8, LiveCounts)>,
    },
    /// Final reports of the server's streams.
    Results {
        /// One per stream the server sent or received.
        reports: Vec<StreamReport>,
        /// The server process over the test (absent from servers before it was added).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<ServerHost>,
    },
    /// The echo socket is ready.
    EchoReady {
        /// UDP port to send messages to.
        port: u16,
    },
    /// Answer to [`ClientMsg::Tune`] and [`ClientMsg::Restore`]: the interface as it is
    /// now, or why a setting was refused (the session goes on).
    Tuned {
        /// The interface's state.
        interface: Option<Box<model::results::nic::InterfaceState>>,
        /// The refusal, when the driver or the kernel refused a setting.
        refused: Option<String>,
    },
    /// The reflector runs.
    RawReflecting,
    /// The client test a [`ClientMsg::RunClient`] asked for ended: its result, or why it
    /// has none.
    ClientRan {
        /// The result document (a [`model::results::RunResult`]), as this server's client
        /// assembled it.
        result: Option<serde_json::Value>,
        /// Why there is no result (the other server refused, could not be reached...).
        error: Option<String>,
    },
    /// What the reflector did.
    RawReflected {
        /// Its counts.
        reflected: raw::RawReflected,
    },
    /// The raw port is open.
    RawOpened {
        /// Its MAC address.
        mac: [u8; 6],
        /// Its first IPv4 address.
        ipv4: Option<std::net::Ipv4Addr>,
        /// Its first IPv6 address that is not link-local.
        ipv6: Option<std::net::Ipv6Addr>,
        /// Its MTU.
        mtu: Option<u32>,
        /// The next hop's MAC toward the address asked for.
        next_hop_mac: Option<[u8; 6]>,
        /// The backends opened, `sender / receiver`.
        backend: String,
    },
    /// The receiver counts.
    RawReceiving,
    /// What each stream of a [`ClientMsg::RawStreams`] sent.
    RawStreamsSent {
        /// Per stream.
        sent: Vec<raw::RawStreamSent>,
    },
    /// What the sender sent.
    RawSent {
        /// The sender's figures.
        sent: raw::RawSending,
    },
    /// What the receiver counted.
    RawReceived {
        /// Per stream.
        reception: raw::RawReception,
    },
    /// Something went wrong; the server closes the connection after this.
    Error {
        /// Machine-readable class.
        code: ErrorCode,
        /// Human-readable explanation.
        message: String,
    },
}

/// Classes of [`ServerMsg::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Wrong magic or unsupported version.
    Version,
    /// Authentication required or failed.
    Auth,
    /// The request exceeds a server limit.
    Limit,
    /// The server is running its maximum number of tests.
    Busy,
    /// The request is invalid.
    BadRequest,
    /// The message could not be decoded or came out of order.
    Protocol,
    /// A read timed out.
    Timeout,
    /// The server failed internally (sockets, threads).
    Internal,
}

/// Server limits, announced in the hello.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Total bits/s per test over all streams (`None` = no limit).
    pub max_rate_bps: Option<f64>,
    /// Longest test.
    pub max_duration_s: f64,
    /// Most streams per test (both directions together).
    pub max_streams: u16,
    /// Most tests at once.
    pub max_tests: u16,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_rate_bps: None,
            max_duration_s: 3600.0,
            max_streams: 128,
            max_tests: 16,
        }
    }
}

/// One stream's final report, from whichever side ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StreamReport {
    /// A UDP sender.
    UdpTx(UdpTxReport),
    /// A UDP receiver.
    UdpRx(UdpRxReport),
    /// A TCP sender.
    TcpTx(TcpTxReport),
    /// A TCP receiver.
    TcpRx(TcpRxReport),
}

/// Largest message accepted or sent (results with histograms stay far below this).
pub const MAX_MESSAGE: usize = 1 << 20;

/// Drops the per-slot send-time counts of `reports` when they would take more than half of
/// a message ([`MAX_MESSAGE`]): many streams of a long test. Their interval rows then keep
/// the loss where it was noticed; nothing else is lost.
pub fn fit(reports: &mut [StreamReport]) {
    let size = serde_json::to_vec(reports).map_or(usize::MAX, |v| v.len());
    if size <= MAX_MESSAGE / 2 {
        return;
    }
    for r in reports.iter_mut() {
        match r {
            StreamReport::UdpTx(t) => t.slots = Default::default(),
            StreamReport::UdpRx(x) => x.slots = Default::default(),
            _ => {}
        }
    }
}

impl StreamReport {
    /// The stream id the report belongs to.
    pub fn stream_id(&self) -> u8 {
        match self {
            StreamReport::UdpTx(r) => r.stream_id,
            StreamReport::UdpRx(r) => r.stream_id,
            StreamReport::TcpTx(r) => r.stream_id,
            StreamReport::TcpRx(r) => r.stream_id,
        }
    }
}

/// What the server says about its process at the end of a test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerHost {
    /// Process CPU over the test, % of one core (the whole server process, as iperf3's).
    pub cpu: model::results::CpuUse,
    /// TCP congestion control of the server's data sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
}
