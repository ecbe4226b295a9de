//! What a throughput test gave, whichever client ran it (ours toward a wirebench server,
//! or [`crate::iperf3::client`] toward a stock iperf3 one): both sides' stream reports,
//! the interval samples paired by index, and the facts about its connections.
//!
//! Data, and `add_stream`, which reads a data socket's addresses and buffer sizes into the
//! facts; [`crate::assemble`] turns an outcome into the results model.

use std::net::SocketAddr;
use std::time::Duration;

use engine::live::LiveSnapshot;
use model::results::{ConnectionFacts, StreamAddresses};
use model::spec::TestSpec;

use crate::messages::StreamReport;

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
    /// How long the test ran: its duration, or less when it ended early (a stop, `-n`).
    pub ran_for: Duration,
    /// Addresses, socket facts and both processes' CPU use.
    pub connection: ConnectionFacts,
    /// This host's wall clock when the senders were let go (the start of interval 0,
    /// after any warm-up); `None` where unknown.
    pub started: Option<model::clock::UnixNanos>,
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

/// Adds a data stream's addresses to `facts`; the first socket gives the buffer sizes.
pub(crate) fn add_stream(
    facts: &mut ConnectionFacts,
    id: u8,
    local: &std::io::Result<SocketAddr>,
    remote: &std::io::Result<SocketAddr>,
    sock: &impl std::os::fd::AsFd,
) {
    let addr =
        |a: &std::io::Result<SocketAddr>| a.as_ref().map(|a| a.to_string()).unwrap_or_default();
    facts.streams.push(StreamAddresses {
        id,
        local: addr(local),
        remote: addr(remote),
    });
    if facts.sndbuf.is_none() {
        if let Some((snd, rcv)) = engine::tcp::buffer_sizes(sock) {
            facts.sndbuf = Some(snd);
            facts.rcvbuf = Some(rcv);
        }
    }
}
