//! The wirebench control protocol, server and client.
//!
//! A test is negotiated over one TCP connection ([`messages`], framed by [`frame`]): hello
//! with magic and version, optional HMAC authentication ([`auth`]), the test request,
//! accepted with ports and a test id, data streams connected, `Ready`, interval reports from
//! the server, `Finish` from the client, `Results` from the server. The data itself flows on
//! separate sockets run by [`engine`]. [`server`] serves many tests at once, one thread per
//! control connection, with limits and timeouts on every read; [`client`] runs one test and
//! [`assemble`] turns both sides' reports into the results model; [`metrics`] counts what
//! the server does for Prometheus, served over the small HTTP of [`http`]; [`rawport`]
//! lends raw ports and [`third_party`] runs client tests toward other servers for a
//! controller.
//!
//! The modules stack without a circle, each importing only those above it in this list:
//!
//! - decided without I/O (time comes in as `now`): [`messages`] (data only, of the
//!   protocol's own types), [`auth`], [`cidr`] (address blocks),
//!   [`gate`] (per-address admission), `limits` (a request against the server's limits),
//!   `handshake` (the server's hello, authentication and deadline), `watch` (a running
//!   test's silence, rate and time), `timing` (interval ends, the tail's grace);
//! - session I/O both sides use: [`frame`], `conn` (keepalive, the reader thread, the watchers), `streams` (the data
//!   streams of one side), `outcome` (what a test gave);
//! - the server's sessions: `session` (the context, admission and refusals every service
//!   shares);
//! - the users: [`client`], [`iperf3`] (the dialect, both sides), [`assemble`], and the
//!   services [`tuning`], [`rawport`], [`third_party`]; [`metrics`] over [`http`];
//! - [`server`], the listener and the dispatcher, which only it imports.
//!
//! Time is read only through [`model::clock::Clock`] (clippy enforces it): the server
//! holds one clock for all its sessions, a client session one of its own (the real clock
//! unless a test gives a virtual one), and the deciders above take `now` on its
//! monotonic axis.
//!
//! This crate does not print or parse command lines; the binary does.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod assemble;
pub mod auth;
pub mod cidr;
pub mod client;
mod conn;
pub mod frame;
pub mod gate;
mod handshake;
pub mod http;
pub mod iperf3;
mod limits;
pub mod messages;
pub mod metrics;
mod outcome;
pub mod rawport;
pub mod server;
mod session;
mod streams;
pub mod third_party;
mod timing;
pub mod tuning;
mod watch;

use std::io;

/// Identifies the wirebench control protocol in the hello.
pub const MAGIC: &str = "wirebench";
/// Control protocol version spoken by this build.
/// Version 2: handshake answers are marked, data streams start on the client's `Start`.
/// Version 3: a server started with `--allow-tuning` sets its interface (`Tune`, `Restore`).
/// Version 4: an early `Finish` (Ctrl-C, `-n`), the server's process figures in `Results`,
/// TCP options, amount and warm-up in the test, TCP state in interval samples.
/// Version 5: clients say they are `Alive` every second during a test; a server with a key
/// says its boot id and limits only in `AuthOk`.
/// Version 6: raw ports of a server started with `--raw-ports` (`RawOpen` and the
/// messages after it).
/// Version 7: third-party client tests (`RunClient`, `ClientRan`) of a server started
/// with `--allow-third-party`.
/// Version 8: messages are built of the protocol's own types ([`messages::report`],
/// [`messages::raw`]) instead of the engine's, their JSON pinned by golden tests; the JSON
/// is version 7's, but a peer of version 7 could still change with its engine.
/// Version 9: a controller says it is `Alive` every second while a lent raw port sends for
/// it, and the server stops a silent one's send (a version 8 server took any message then
/// as the controller leaving; a version 8 controller says nothing and would be stopped).
/// Version 10: a lent port's reception reports the test's other streams it saw (`strays`,
/// RFC 2889's flood count), a receiver may count no stream of its own (a port that only
/// listens for floods), and a lent port sends raw test frames of the local experimental
/// EtherType (0x88B5) as well as IP ones.
pub const VERSION: u32 = 10;
/// Default control port (iperf3 uses 5201; a different default lets both run side by side).
pub const DEFAULT_PORT: u16 = 5301;

/// Errors of the control protocol.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtoError {
    /// The peer closed the connection between messages.
    #[error("the peer closed the connection")]
    Closed,
    /// The peer closed the connection in the middle of a message.
    #[error("the peer closed the connection in the middle of a message")]
    Truncated,
    /// A read or write timed out.
    #[error("timed out waiting for the peer")]
    Timeout,
    /// A length prefix above the cap.
    #[error("message of {0} bytes exceeds the {max} byte limit", max = messages::MAX_MESSAGE)]
    TooLarge(usize),
    /// The body is not a valid message.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A message could not be encoded.
    #[error("cannot encode message: {0}")]
    Encode(String),
    /// The peer speaks another protocol or version.
    #[error("protocol mismatch: {0}")]
    Version(String),
    /// A valid message arrived where another was expected.
    #[error("unexpected message: {0}")]
    Unexpected(String),
    /// The server refused the request.
    #[error("server refused: {message} ({code:?})")]
    Refused {
        /// The server's class.
        code: messages::ErrorCode,
        /// The server's explanation.
        message: String,
    },
    /// Authentication failed.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// Socket or thread error.
    #[error("I/O error: {0}")]
    Io(io::Error),
    /// The client was asked to stop (Ctrl-C) before the test ended.
    #[error("interrupted")]
    Interrupted,
    /// The server answered as a stock iperf3 does (a state byte, not a wirebench message).
    #[error("the server speaks iperf3, not wirebench: `client --iperf3` runs a test against it")]
    Iperf3Peer,
}

impl ProtoError {
    /// Maps timeouts to [`ProtoError::Timeout`], other I/O errors to [`ProtoError::Io`].
    pub fn from_io(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ProtoError::Timeout,
            io::ErrorKind::UnexpectedEof => ProtoError::Truncated,
            _ => ProtoError::Io(e),
        }
    }
}
