//! What a run of a profile's streams is given ([`StreamsRun`]), and the pure rules of its
//! streams: which go through a wirebench server, what such a stream may be, and each
//! stream's frame request. The run itself is in `streams.rs`, the ends it uses in
//! `streams_ends.rs`.

use std::time::Duration;

use method::streams::{StreamProto, StreamSpec};
use wire::linerate::LineRate;

use crate::request::{Agents, FrameBackend, FrameRequest};
use crate::{usage, Error};
use model::stop::Stop;

/// Every stream of a profile at once on the raw-frame engine: one generator per source
/// interleaving its streams on their own schedules, one receiver per destination; streams
/// whose source is `wirebench://HOST[:PORT]` run as UDP tests through that server at the
/// same time.
pub struct StreamsRun {
    /// Lab whose nodes `NODE:IFACE` names.
    pub lab: String,
    /// Frame I/O backend of every sender.
    pub backend: FrameBackend,
    /// Ends the run early.
    pub stop: Stop,
    /// Interval rows every this long (`None`: none).
    pub interval: Option<Duration>,
    /// Servers whose ports are ends of streams (`HOST/IFACE`).
    pub agents: Agents,
    /// Ports (of this host, or servers' `HOST/IFACE`) that count every frame of the
    /// test's streams that reaches them, though no stream or not that stream ends there
    /// (a switch's other ports, to see what it floods: [`method::StreamsData::strays`]).
    pub listen: Vec<String>,
}

/// The server of a stream whose source is `wirebench://HOST[:PORT]`.
pub fn server_of(source: &str) -> Option<&str> {
    source.strip_prefix("wirebench://")
}

/// A stream through a wirebench server carries UDP datagrams of one size.
///
/// # Errors
/// Any other stream through a server.
pub fn check_server_stream(s: &StreamSpec, server: &str) -> Result<(), Error> {
    let refuse = |why: &str| Err(usage(format!("stream '{}': {why}", s.name)));
    if server.is_empty() {
        return refuse("wirebench://HOST[:PORT] needs a host");
    }
    if s.protocol != StreamProto::Udp {
        return refuse("a stream through a wirebench server is UDP");
    }
    if s.pattern.iter().any(|l| *l != s.pattern[0]) {
        return refuse("a stream through a wirebench server has one frame size");
    }
    Ok(())
}

/// The frame request of stream `s` (its headers' fields; the ports add the addresses).
pub(crate) fn stream_request(s: &StreamSpec, run: &StreamsRun, line: LineRate) -> FrameRequest {
    FrameRequest {
        proto: match s.protocol {
            StreamProto::Tcp => crate::request::FrameProto::Tcp,
            StreamProto::Icmp => crate::request::FrameProto::Icmp,
            _ => crate::request::FrameProto::Udp,
        },
        dst_mac: s.dst_mac,
        dst_ip: s.dst_ip,
        src_port: s.src_port,
        dst_port: s.dst_port,
        vlan: s.vlan,
        pcp: s.pcp,
        dscp: s.dscp,
        lab: run.lab.clone(),
        line_rate: line.0 as f64,
        backend: run.backend,
        ..FrameRequest::default()
    }
}
