//! What an `rfc6349` run is asked: the server, the test's length, which path figures
//! are given, and the window.

use std::time::Duration;

use super::result::WindowFrom;
use crate::request::Server;

/// What the window of each connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowChoice {
    /// From the BDP (RFC 6349 §3.3.1), split over connections when one cannot hold it.
    Bdp,
    /// These bytes per connection.
    Bytes(u64),
    /// None set: the kernel's autotuning (the window grows until the path's queue
    /// overflows; what the buffer delay then shows is that queue).
    Auto,
}

impl WindowChoice {
    /// Where a window of this choice comes from.
    pub fn from(self) -> WindowFrom {
        match self {
            WindowChoice::Bdp => WindowFrom::Bdp,
            WindowChoice::Bytes(_) => WindowFrom::Given,
            WindowChoice::Auto => WindowFrom::Auto,
        }
    }
}

/// What one `rfc6349` run does.
#[derive(Debug, Clone, PartialEq)]
pub struct Rfc6349Request {
    /// The server.
    pub server: Server,
    /// It is a stock iperf3: no echo, so the RTT and bottleneck bandwidth are given.
    pub iperf3: bool,
    /// The TCP throughput test's length.
    pub time: Duration,
    /// The idle period over which the baseline RTT is the least echo.
    pub rtt_time: Duration,
    /// The baseline RTT, given.
    pub rtt: Option<Duration>,
    /// The bottleneck bandwidth, given, bit/s of link with Ethernet framing.
    pub bb: Option<f64>,
    /// The path MTU, given.
    pub mtu: Option<u32>,
    /// The window per connection.
    pub window: WindowChoice,
    /// Connections, given; otherwise as many as the BDP needs.
    pub connections: Option<u8>,
    /// The most connections the BDP may be split over.
    pub max_connections: u8,
    /// The largest window of one connection, bytes (the socket buffer limit).
    pub max_window: Option<u64>,
    /// Trains of the bottleneck bandwidth probe, and packets in each.
    pub trains: (u32, u32),
    /// Interval rows of the TCP test (each gives an RTT sample for the buffer delay).
    pub interval: Duration,
    /// The test connections' congestion control, when not the host's default.
    pub congestion: Option<String>,
}
