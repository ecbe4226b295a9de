//! What a raw-port request may ask, checked before anything is sent: the frames a
//! controller's example frame gives ([`send_spec`], [`stream_specs`]) within the server's
//! limits and the largest frame a port was opened for, and the waits both sides bound a
//! trial by.
//!
//! Every frame is also held to the port's policy ([`RawPortPolicy`](crate::server::RawPortPolicy), issue 33): by default
//! a port sends from its own MAC and addresses ([`PortRules`]), to unicast MACs and
//! addresses on its own subnets or in the benchmarking blocks, no TCP SYN or RST, and at
//! most `--raw-max-rate` in all. The port's frames are built here from the example's
//! headers, and the engine only writes sequence numbers and stamps into them, so checking
//! the headers once checks every frame sent; a reflector's frames are the ones it
//! receives turned around and are not checked here.
//!
//! Pure: no socket, no clock; the serving side ([`super::serve`]) refuses what these say
//! and meters what a sender actually sends.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use engine::raw::RawTrialSpec;

use crate::auth;
use crate::cidr::in_block;
use crate::messages::raw::{RawSendLoad, RawStream};
use crate::messages::Limits;
use crate::session::ctx::RawPortPolicy;

/// Beyond a trial's duration: the longest wait for its end.
pub(super) const SLACK: Duration = Duration::from_secs(30);

/// Largest frame a lent port sends, FCS included (jumbo 9216 and a VLAN tag).
pub(super) const MAX_LEN: u64 = 9216 + 4;

/// Most sizes per stream and pattern entries a
/// [`ClientMsg::RawStreams`](crate::messages::ClientMsg::RawStreams) may hold, and the most
/// bytes of frames it may have the port build (its templates).
const MAX_SIZES: usize = 64;
const MAX_PATTERN: usize = 4096;
const MAX_TEMPLATE_BYTES: u64 = 16 << 20;

/// The address blocks set aside for benchmarking (RFC 2544 appendix C as RFC 6890 lists
/// it, and RFC 5180 for IPv6): a lent port may always send to them.
const BENCHMARKING: [(IpAddr, u8); 2] = [
    (IpAddr::V4(Ipv4Addr::new(198, 18, 0, 0)), 15),
    (IpAddr::V6(Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0)), 48),
];

/// One lent port as the checks see it: its own MAC and addresses (with their prefix
/// lengths: the subnets it is on), and the server's policy.
#[derive(Debug, Clone, Copy)]
pub(super) struct PortRules<'a> {
    /// The port's MAC.
    pub(super) mac: [u8; 6],
    /// The port's addresses and prefix lengths.
    pub(super) networks: &'a [(IpAddr, u8)],
    /// The server's policy.
    pub(super) policy: &'a RawPortPolicy,
}

/// Why a raw-port request is refused (the message is the controller's refusal).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RawRequestError {
    /// The example frame is not hex.
    #[error("the frame is not hex")]
    NotHex,
    /// The example frame has no headers this server builds frames from.
    #[error("the frame has no IP and transport header this server can build")]
    NoHeaders,
    /// A stream's example frame has no headers this server builds a stream's frames from.
    #[error("the frame has no IP and transport header, nor the test EtherType 0x88B5 and a test header, that this server can build")]
    NoStreamHeaders,
    /// A frame size below the headers, or beyond what a lent port sends.
    #[error("frame size {0} B does not fit its headers")]
    SizeDoesNotFit(u64),
    /// No streams, or more than `--max-streams`.
    #[error("1 to {0} streams (--max-streams)")]
    Streams(usize),
    /// No sizes, too many, or one twice.
    #[error("1 to {MAX_SIZES} frame sizes, each once")]
    Sizes,
    /// No pattern, too long a one, or one naming a size the stream does not have.
    #[error("a pattern of 1 to {MAX_PATTERN} of its sizes")]
    Pattern,
    /// A stream's rate that is not a positive number of frames/s.
    #[error("a rate of {0} frames/s")]
    StreamRate(f64),
    /// A stream's start and stop that do not make a time span.
    #[error("from {0} s to {1} s")]
    Span(f64, f64),
    /// Longer than the server's longest test.
    #[error("{secs} s: this server's longest test is {max_s} s")]
    TooLong {
        /// How long it would run, s.
        secs: f64,
        /// `--max-duration`, s.
        max_s: f64,
    },
    /// Frames larger than the port was opened for.
    #[error("frames of {len} bytes on a port opened for {max_len}")]
    LargerThanOpened {
        /// The frame size asked for.
        len: u64,
        /// The largest the port was opened for.
        max_len: u64,
    },
    /// More frame bytes to build than a request may have the port hold.
    #[error("more than {} MiB of frames to build", MAX_TEMPLATE_BYTES >> 20)]
    TooManyFrameBytes,
    /// The port could not build a frame of the stream.
    #[error("{0}")]
    Build(wire::Error),
    /// A send's rate that is not a positive number of frames/s.
    #[error("a rate of {0} frames/s: give one above 0")]
    Rate(f64),
    /// A send's rate above `--max-rate`.
    #[error("{bps:.0} bit/s: this server allows {max:.0} bit/s per test")]
    RateTooHigh {
        /// The send's rate, bits/s.
        bps: f64,
        /// `--max-rate`, bits/s.
        max: f64,
    },
    /// All streams together above `--max-rate` (as if they ran at once).
    #[error("{bps:.0} bit/s in all: this server allows {max:.0} bit/s per test")]
    AllTooFast {
        /// The streams' rates added up, bits/s.
        bps: f64,
        /// `--max-rate`, bits/s.
        max: f64,
    },
    /// A burst's line rate that is not a positive number of frames/s.
    #[error("a burst at {0} frames/s: give one above 0")]
    BurstRate(f64),
    /// A burst that would last longer than the server's longest test.
    #[error(
        "a burst of {frames} frames at {target_pps:.0} frames/s lasts longer than this server's longest test of {max_s} s"
    )]
    BurstTooLong {
        /// Burst length, frames.
        frames: u64,
        /// Its line rate, frames/s.
        target_pps: f64,
        /// `--max-duration`, s.
        max_s: f64,
    },
    /// A source MAC that is not the port's own.
    #[error("source MAC {mac} is not the port's own ({own}): this server sends other source MACs only when started with --raw-allow-spoof")]
    SpoofedMac {
        /// The frame's source MAC.
        mac: wire::EthernetAddress,
        /// The port's.
        own: wire::EthernetAddress,
    },
    /// A source address that is not one of the port's own.
    #[error("source address {0} is not one of the port's own: this server sends from other addresses only when started with --raw-allow-spoof")]
    SpoofedIp(IpAddr),
    /// A TCP segment with SYN or RST set (a flood of them opens or tears down
    /// connections at the receiver).
    #[error("TCP segments with SYN or RST set: this server sends them only when started with --raw-allow-spoof")]
    TcpControl,
    /// A broadcast or multicast destination MAC.
    #[error("destination MAC {0} is broadcast or multicast: this server sends to those only when started with --raw-allow-broadcast")]
    BroadcastMac(wire::EthernetAddress),
    /// A broadcast or multicast destination address.
    #[error("destination address {0} is broadcast or multicast: this server sends to those only when started with --raw-allow-broadcast")]
    BroadcastIp(IpAddr),
    /// A destination neither on the port's subnets, in the benchmarking blocks nor in
    /// `--raw-destinations`.
    #[error("destination {0} is not on the port's subnets nor in 198.18.0.0/15 or 2001:2::/48: this server sends elsewhere only to the blocks given with --raw-destinations")]
    Destination(IpAddr),
    /// More than `--raw-max-rate` from one port.
    #[error("{} from one port: this server's ports send at most {} (--raw-max-rate)", model::units::bps(*.bps), model::units::bps(*.max))]
    PortRateTooHigh {
        /// What the port would send, bits/s (all its streams together).
        bps: f64,
        /// `--raw-max-rate`, bits/s.
        max: f64,
    },
    /// What is wrong with one stream of several.
    #[error("stream {id}: {error}")]
    InStream {
        /// The stream's id.
        id: u8,
        /// What is wrong with it.
        error: Box<RawRequestError>,
    },
}

impl RawRequestError {
    /// This error, said of stream `id`.
    fn of_stream(self, id: u8) -> Self {
        RawRequestError::InStream {
            id,
            error: Box::new(self),
        }
    }
}

/// The headers of an example frame (hex) a controller sent, for this port to build its
/// frames from.
fn example_spec(hex: &str) -> Result<wire::frame::FrameSpec, RawRequestError> {
    let bytes = auth::from_hex(hex).ok_or(RawRequestError::NotHex)?;
    wire::frame::parse_frame(&bytes)
        .ok()
        .and_then(|p| p.spec())
        .ok_or(RawRequestError::NoHeaders)
}

/// The headers a stream's frames are built from: IP and transport, or raw test frames of
/// the IEEE 802 local experimental EtherType (0x88B5, as RFC 2889's tests send them).
enum Example {
    /// An IP frame's headers.
    Ip(wire::frame::FrameSpec),
    /// A raw test frame's Ethernet header and 802.1Q tag (its EtherType the test one).
    L2 {
        eth: wire::ethernet::EthernetRepr,
        vlan: Option<wire::vlan::VlanRepr>,
    },
}

impl Example {
    /// The headers of an example frame (hex) a stream's controller sent.
    fn of(hex: &str) -> Result<Self, RawRequestError> {
        let bytes = auth::from_hex(hex).ok_or(RawRequestError::NotHex)?;
        let p = wire::frame::parse_frame(&bytes).map_err(|_| RawRequestError::NoStreamHeaders)?;
        if let Some(spec) = p.spec() {
            return Ok(Self::Ip(spec));
        }
        let inner = p.vlan.map_or(p.eth.ethertype, |v| v.inner_ethertype);
        match (p.ip, p.test) {
            (None, Some(_)) if inner == wire::EtherType::EXPERIMENTAL => Ok(Self::L2 {
                eth: p.eth,
                vlan: p.vlan,
            }),
            _ => Err(RawRequestError::NoStreamHeaders),
        }
    }

    /// Whether the port may send these frames under its policy: IP frames as
    /// [`frames_allowed`] says; raw test frames from the port's own MAC (unless
    /// `--raw-allow-spoof`) to a unicast MAC (unless `--raw-allow-broadcast`). Those need
    /// no address check: no router forwards their EtherType, so they stay on the port's
    /// own layer-2 segment.
    fn allowed(&self, port: &PortRules) -> Result<(), RawRequestError> {
        match self {
            Self::Ip(spec) => frames_allowed(spec, port),
            Self::L2 { eth, .. } => ethernet_allowed(eth, port),
        }
    }

    /// A frame of `len` bytes (FCS included) with test header `hdr`, and where a sender
    /// patches it.
    fn build(
        &self,
        len: u64,
        hdr: &wire::testhdr::TestHeaderRepr,
    ) -> Result<(Vec<u8>, engine::multi::Patch), RawRequestError> {
        let n = len as usize;
        let (mut buf, patch) = match self {
            Self::Ip(spec) => {
                fits_len(spec, len)?;
                let mut buf = vec![0u8; n];
                let built = spec
                    .build(n, hdr, &mut buf)
                    .map_err(RawRequestError::Build)?;
                buf.truncate(built);
                let layout = spec.layout(n).map_err(RawRequestError::Build)?;
                (buf, engine::multi::Patch::L4(layout))
            }
            Self::L2 { eth, vlan } => {
                if !(64..=MAX_LEN).contains(&len) {
                    return Err(RawRequestError::SizeDoesNotFit(len));
                }
                engine::multi::Patch::l2_frame(eth, vlan.as_ref(), n, hdr)
                    .map_err(|_| RawRequestError::SizeDoesNotFit(len))?
            }
        };
        buf.shrink_to_fit();
        Ok((buf, patch))
    }
}

/// Whether the port may send frames with Ethernet header `eth` under its policy: from its
/// own MAC (unless `--raw-allow-spoof`), to a unicast one (unless `--raw-allow-broadcast`).
fn ethernet_allowed(
    eth: &wire::ethernet::EthernetRepr,
    port: &PortRules,
) -> Result<(), RawRequestError> {
    let own = wire::EthernetAddress(port.mac);
    if !port.policy.allow_spoof && eth.src_addr != own {
        return Err(RawRequestError::SpoofedMac {
            mac: eth.src_addr,
            own,
        });
    }
    if !port.policy.allow_broadcast && eth.dst_addr.is_multicast() {
        return Err(RawRequestError::BroadcastMac(eth.dst_addr));
    }
    Ok(())
}

/// Whether the port may send frames of `spec`'s headers under its policy: its own source
/// MAC and address, no TCP SYN or RST (unless `--raw-allow-spoof`), a unicast destination
/// (unless `--raw-allow-broadcast`) on its subnets, in the benchmarking blocks or in
/// `--raw-destinations`.
///
/// Why SYN and RST: with the destinations held nearby and the rate capped, a key holder
/// cannot aim a SYN flood at arbitrary hosts, but could still open or tear down
/// connections of hosts next to the port; wirebench's own TCP test frames carry ACK.
fn frames_allowed(spec: &wire::frame::FrameSpec, port: &PortRules) -> Result<(), RawRequestError> {
    let policy = port.policy;
    let (src, dst) = (
        IpAddr::from(spec.ip.src_addr()),
        IpAddr::from(spec.ip.dst_addr()),
    );
    ethernet_allowed(&spec.eth, port)?;
    if !policy.allow_spoof {
        if !port.networks.iter().any(|(ip, _)| *ip == src) {
            return Err(RawRequestError::SpoofedIp(src));
        }
        if let wire::frame::L4Spec::Tcp(t) = &spec.l4 {
            use wire::tcp::TcpFlags;
            if t.flags.contains(TcpFlags::SYN) || t.flags.contains(TcpFlags::RST) {
                return Err(RawRequestError::TcpControl);
            }
        }
    }
    let group = is_broadcast_or_multicast(dst, port.networks);
    if !policy.allow_broadcast && group {
        return Err(RawRequestError::BroadcastIp(dst));
    }
    // A group address allowed above is no one host's: the blocks are for unicast ones.
    let nearby = group
        || port
            .networks
            .iter()
            .chain(&BENCHMARKING)
            .chain(&policy.destinations)
            .any(|block| in_block(dst, *block));
    if !nearby {
        return Err(RawRequestError::Destination(dst));
    }
    Ok(())
}

/// Whether `ip` is a multicast address, IPv4's limited broadcast, or the broadcast
/// address of one of the IPv4 subnets in `networks` (those with room for one: /30 and
/// wider).
fn is_broadcast_or_multicast(ip: IpAddr, networks: &[(IpAddr, u8)]) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            a.is_multicast()
                || a.is_broadcast()
                || networks.iter().any(|(net, len)| match net {
                    IpAddr::V4(n) if *len <= 30 => {
                        let host = u32::MAX >> len;
                        u32::from(a) & !host == u32::from(*n) & !host && u32::from(a) & host == host
                    }
                    _ => false,
                })
        }
        IpAddr::V6(a) => a.is_multicast(),
    }
}

/// Whether `bps` (bits/s of frames with FCS) is within the port's `--raw-max-rate`.
fn port_rate_allowed(bps: f64, port: &PortRules) -> Result<(), RawRequestError> {
    let max = port.policy.max_rate_bps;
    if bps > max {
        return Err(RawRequestError::PortRateTooHigh { bps, max });
    }
    Ok(())
}

/// Whether frames of `len` bytes (with FCS) fit `spec`'s headers and this port.
fn fits_len(spec: &wire::frame::FrameSpec, len: u64) -> Result<(), RawRequestError> {
    if !(64..=MAX_LEN).contains(&len) || (len as usize) < spec.min_frame_len() {
        return Err(RawRequestError::SizeDoesNotFit(len));
    }
    Ok(())
}

/// The streams a [`ClientMsg::RawStreams`](crate::messages::ClientMsg::RawStreams) asks
/// for, built by this port from the example frames' headers, within the server's limits
/// (streams per test, longest test, most bits/s in all), the port's policy (its frames,
/// `--raw-max-rate` for all streams together), the largest frame the port was opened for,
/// and 16 MiB of frames.
pub(super) fn stream_specs(
    test_id: u16,
    streams: &[RawStream],
    max_len: u64,
    limits: &Limits,
    port: &PortRules,
) -> Result<Vec<engine::multi::StreamTx>, RawRequestError> {
    let most = usize::from(limits.max_streams).clamp(1, 255);
    if streams.is_empty() || streams.len() > most {
        return Err(RawRequestError::Streams(most));
    }
    let max_s = limits.max_duration_s;
    let (mut bits, mut template_bytes) = (0.0, 0u64);
    let mut out = Vec::with_capacity(streams.len());
    for s in streams {
        let bad = |e: RawRequestError| e.of_stream(s.stream_id);
        let mut distinct = s.sizes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if s.sizes.is_empty() || s.sizes.len() > MAX_SIZES || distinct.len() != s.sizes.len() {
            return Err(bad(RawRequestError::Sizes));
        }
        if s.pattern.is_empty()
            || s.pattern.len() > MAX_PATTERN
            || s.pattern.iter().any(|i| usize::from(*i) >= s.sizes.len())
        {
            return Err(bad(RawRequestError::Pattern));
        }
        if !(s.pps.is_finite() && s.pps > 0.0) {
            return Err(bad(RawRequestError::StreamRate(s.pps)));
        }
        if !(s.start_s.is_finite()
            && s.stop_s.is_finite()
            && 0.0 <= s.start_s
            && s.start_s < s.stop_s)
        {
            return Err(bad(RawRequestError::Span(s.start_s, s.stop_s)));
        }
        if s.stop_s > max_s {
            return Err(bad(RawRequestError::TooLong {
                secs: s.stop_s,
                max_s,
            }));
        }
        let example = Example::of(&s.frame).map_err(bad)?;
        example.allowed(port).map_err(bad)?;
        let hdr = wire::testhdr::TestHeaderRepr::template(test_id, s.stream_id);
        let mut templates = Vec::with_capacity(s.sizes.len());
        for len in &s.sizes {
            if *len > max_len {
                return Err(bad(RawRequestError::LargerThanOpened {
                    len: *len,
                    max_len,
                }));
            }
            template_bytes += len;
            if template_bytes > MAX_TEMPLATE_BYTES {
                return Err(RawRequestError::TooManyFrameBytes);
            }
            templates.push(example.build(*len, &hdr).map_err(bad)?);
        }
        let mean_len: f64 = s
            .pattern
            .iter()
            .map(|i| s.sizes[usize::from(*i)] as f64)
            .sum::<f64>()
            / s.pattern.len() as f64;
        bits += s.pps * mean_len * 8.0;
        out.push(engine::multi::StreamTx {
            stream_id: s.stream_id,
            templates,
            pattern: s.pattern.iter().map(|i| usize::from(*i)).collect(),
            pps: s.pps,
            start: Duration::from_secs_f64(s.start_s),
            stop: Duration::from_secs_f64(s.stop_s),
            count: None,
            live: std::sync::Arc::default(),
            slot_ns: 0,
        });
    }
    // All streams counted as if they ran at once (they may not overlap: conservative).
    if let Some(max) = limits.max_rate_bps.filter(|m| bits > *m) {
        return Err(RawRequestError::AllTooFast { bps: bits, max });
    }
    port_rate_allowed(bits, port)?;
    Ok(out)
}

/// The trial a [`ClientMsg::RawSend`](crate::messages::ClientMsg::RawSend) asks for,
/// within the server's limits (longest test, most bits/s) and the port's policy (its
/// frames; `--raw-max-rate` for the rate, or a burst's line rate).
pub(super) fn send_spec(
    frame: &str,
    frame_len: u64,
    (test_id, stream_id): (u16, u8),
    load: RawSendLoad,
    limits: &Limits,
    port: &PortRules,
) -> Result<RawTrialSpec, RawRequestError> {
    let spec = example_spec(frame)?;
    fits_len(&spec, frame_len)?;
    frames_allowed(&spec, port)?;
    let max_s = limits.max_duration_s;
    let bits = |pps: f64| pps * frame_len as f64 * 8.0;
    match load {
        RawSendLoad::Rate { pps, .. } if !(pps.is_finite() && pps > 0.0) => {
            return Err(RawRequestError::Rate(pps))
        }
        RawSendLoad::Rate { duration, .. } if duration.as_secs_f64() > max_s => {
            return Err(RawRequestError::TooLong {
                secs: duration.as_secs_f64(),
                max_s,
            })
        }
        RawSendLoad::Rate { pps, .. } => {
            if let Some(max) = limits.max_rate_bps.filter(|m| bits(pps) > *m) {
                return Err(RawRequestError::RateTooHigh {
                    bps: bits(pps),
                    max,
                });
            }
            port_rate_allowed(bits(pps), port)?;
        }
        RawSendLoad::Burst { target_pps, .. } if !(target_pps.is_finite() && target_pps > 0.0) => {
            return Err(RawRequestError::BurstRate(target_pps))
        }
        RawSendLoad::Burst { frames, target_pps } if frames as f64 / target_pps > max_s => {
            return Err(RawRequestError::BurstTooLong {
                frames,
                target_pps,
                max_s,
            })
        }
        // Back to back at the line rate it names: that is what the port would send.
        RawSendLoad::Burst { target_pps, .. } => port_rate_allowed(bits(target_pps), port)?,
    }
    Ok(RawTrialSpec {
        frame: spec,
        frame_len: frame_len as usize,
        test_id,
        stream_id,
        load: load.into(),
        drain: Duration::ZERO,
        interval: None,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    use wire::frame::{FrameSpec, L4Spec};

    /// The headers of a UDP test frame from the port of [`port_rules`] to its neighbour.
    fn spec() -> FrameSpec {
        FrameSpec {
            eth: wire::ethernet::EthernetRepr {
                src_addr: wire::EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_addr: wire::EthernetAddress([2, 0, 0, 0, 0, 2]),
                ethertype: wire::EtherType::IPV4,
            },
            vlan: None,
            ip: wire::IpRepr::V4(wire::ipv4::Ipv4Repr {
                src_addr: wire::Ipv4Address([198, 18, 0, 1]),
                dst_addr: wire::Ipv4Address([198, 18, 0, 2]),
                protocol: wire::IpProtocol::UDP,
                payload_len: 0,
                ttl: 64,
                dscp: 0,
                ecn: 0,
                dont_frag: true,
                ident: 0,
            }),
            l4: L4Spec::Udp {
                src_port: 1,
                dst_port: 2,
            },
        }
    }

    /// A 128-byte frame of `spec` (as a controller sends it: a built test frame).
    fn frame_of(spec: &FrameSpec) -> Vec<u8> {
        let hdr = wire::testhdr::TestHeaderRepr::template(7, 1);
        let mut buf = vec![0u8; 128];
        let n = spec.build(128, &hdr, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    /// A frame of [`spec`].
    fn frame() -> Vec<u8> {
        frame_of(&spec())
    }

    /// The port [`frame`] comes from: its MAC and 198.18.0.1/24, under `policy`.
    fn port_rules(policy: &RawPortPolicy) -> PortRules<'_> {
        PortRules {
            mac: [2, 0, 0, 0, 0, 1],
            networks: NETWORKS,
            policy,
        }
    }

    const NETWORKS: &[(IpAddr, u8)] = &[
        (IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)), 24),
        (IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1)), 64),
    ];

    fn rate(pps: f64, secs: u64) -> RawSendLoad {
        RawSendLoad::Rate {
            pps,
            duration: Duration::from_secs(secs),
            count: None,
        }
    }

    #[test]
    fn a_send_request_is_checked_before_anything_is_sent() {
        let hex = auth::to_hex(&frame());
        let limits = Limits {
            max_duration_s: 60.0,
            max_rate_bps: Some(1e9),
            ..Default::default()
        };
        let policy = RawPortPolicy::default();
        let rules = port_rules(&policy);
        let ok = send_spec(&hex, 128, (7, 1), rate(1000.0, 2), &limits, &rules).unwrap();
        assert_eq!((ok.frame_len, ok.test_id, ok.stream_id), (128, 7, 1));
        assert_eq!(ok.frame.eth.dst_addr.0, [2, 0, 0, 0, 0, 2]);
        let refused = |frame: &str, len: u64, load: RawSendLoad| {
            send_spec(frame, len, (7, 1), load, &limits, &rules)
                .unwrap_err()
                .to_string()
        };
        assert!(refused("zz", 128, rate(1.0, 1)).contains("not hex"));
        assert!(refused("0102", 128, rate(1.0, 1)).contains("no IP"));
        assert!(refused(&hex, 40, rate(1.0, 1)).contains("does not fit"));
        assert!(refused(&hex, 100_000, rate(1.0, 1)).contains("does not fit"));
        assert!(refused(&hex, 128, rate(f64::NAN, 1)).contains("above 0"));
        assert!(refused(&hex, 128, rate(-5.0, 1)).contains("above 0"));
        assert_eq!(
            refused(&hex, 128, rate(1000.0, 61)),
            "61 s: this server's longest test is 60 s"
        );
        // 1e6 frames/s of 128 bytes: 1.024 Gbit/s.
        assert!(refused(&hex, 128, rate(1e6, 1)).contains("allows 1000000000 bit/s"));
        let burst = |frames, target_pps| RawSendLoad::Burst { frames, target_pps };
        assert!(refused(&hex, 128, burst(u64::MAX, 1.0)).contains("longer than"));
        assert!(refused(&hex, 128, burst(61_000, 1000.0)).contains("longer than"));
        assert!(refused(&hex, 128, burst(10, 0.0)).contains("above 0"));
        assert!(send_spec(&hex, 128, (7, 1), burst(59_000, 1000.0), &limits, &rules).is_ok());
    }

    #[test]
    fn streams_are_built_here_and_checked_before_anything_is_sent() {
        let hex = auth::to_hex(&frame());
        let limits = Limits {
            max_duration_s: 60.0,
            max_rate_bps: Some(1e12),
            max_streams: 128,
            ..Default::default()
        };
        let policy = RawPortPolicy::default();
        let rules = port_rules(&policy);
        let stream = |id: u8, pps: f64, (start_s, stop_s): (f64, f64)| RawStream {
            stream_id: id,
            frame: hex.clone(),
            sizes: vec![128, 256],
            pattern: vec![0, 1, 1],
            pps,
            start_s,
            stop_s,
        };
        let ok = stream_specs(
            9,
            &[stream(1, 1000.0, (0.0, 2.0)), stream(2, 10.0, (0.5, 1.0))],
            1518,
            &limits,
            &rules,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!((ok[0].stream_id, ok[0].pattern.clone()), (1, vec![0, 1, 1]));
        assert_eq!(ok[1].start, Duration::from_millis(500));
        // Each size built here, with this test's header, to its length without FCS.
        let lens: Vec<usize> = ok[0].templates.iter().map(|(b, _)| b.len()).collect();
        assert_eq!(lens, [124, 252]);
        let parsed = wire::frame::parse_frame(&ok[1].templates[1].0).unwrap();
        assert_eq!(parsed.test.map(|t| (t.test_id, t.stream_id)), Some((9, 2)));
        let refused = |streams: &[RawStream], max_len: u64| match stream_specs(
            9, streams, max_len, &limits, &rules,
        ) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        };
        assert!(refused(&[], 1518).contains("1 to 128 streams"));
        let many: Vec<RawStream> = (0..129).map(|i| stream(i, 1.0, (0.0, 1.0))).collect();
        assert!(refused(&many, 1518).contains("--max-streams"));
        let mut bad = stream(1, 1000.0, (0.0, 1.0));
        bad.pattern = vec![0, 2];
        assert_eq!(
            refused(&[bad], 1518),
            "stream 1: a pattern of 1 to 4096 of its sizes"
        );
        let mut bad = stream(1, 1000.0, (0.0, 1.0));
        bad.frame = "zz".into();
        assert!(refused(&[bad], 1518).contains("not hex"));
        let mut bad = stream(1, 1000.0, (0.0, 1.0));
        bad.sizes = vec![128, 128];
        assert!(refused(&[bad], 1518).contains("each once"));
        // 128 streams of 64 jumbo sizes would be 75 MiB of frames to build.
        let jumbo: Vec<RawStream> = (0..128)
            .map(|i| RawStream {
                sizes: (0..64).map(|k| 9000 + k).collect(),
                pattern: vec![0],
                ..stream(i, 1.0, (0.0, 1.0))
            })
            .collect();
        assert_eq!(
            stream_specs(9, &jumbo, 9220, &limits, &rules).err(),
            Some(RawRequestError::TooManyFrameBytes)
        );
        assert!(refused(&[stream(1, f64::NAN, (0.0, 1.0))], 1518).contains("frames/s"));
        assert!(refused(&[stream(1, 1.0, (1.0, 1.0))], 1518).contains("from 1 s to 1 s"));
        assert!(refused(&[stream(1, 1.0, (0.0, 61.0))], 1518).contains("longest test is 60 s"));
        assert_eq!(
            refused(&[stream(1, 1.0, (0.0, 1.0))], 200),
            "stream 1: frames of 256 bytes on a port opened for 200"
        );
        // Two streams of 500M frames/s, mean 213 bytes: 1.7 Tbit/s in all.
        let both = [stream(1, 5e8, (0.0, 1.0)), stream(2, 5e8, (0.0, 1.0))];
        assert!(refused(&both, 1518).contains("in all: this server allows"));
    }

    /// Version 10: a stream of raw test frames (EtherType 0x88B5, as RFC 2889 sends them)
    /// is built here at each size with its test header where the sender patches it; it
    /// must come from the port's MAC and go to a unicast one unless the policy allows
    /// otherwise, and no other EtherType without IP headers is built.
    #[test]
    fn raw_test_frames_are_built_from_the_ports_own_mac_to_a_unicast_one() {
        let limits = Limits {
            max_duration_s: 60.0,
            max_rate_bps: Some(1e12),
            max_streams: 8,
            ..Default::default()
        };
        let l2 = |src: [u8; 6], dst: [u8; 6], ethertype: u16, vid: Option<u16>| {
            let eth = wire::ethernet::EthernetRepr {
                src_addr: wire::EthernetAddress(src),
                dst_addr: wire::EthernetAddress(dst),
                ethertype: wire::EtherType::from(ethertype),
            };
            let vlan = vid.map(|vid| wire::vlan::VlanRepr {
                pcp: 3,
                dei: false,
                vid,
                inner_ethertype: wire::EtherType::from(ethertype),
            });
            let hdr = wire::testhdr::TestHeaderRepr::template(7, 1);
            let mut buf = vec![0u8; 64];
            let n = wire::frame::build_l2(&eth, vlan.as_ref(), 64, &hdr, &mut buf).unwrap();
            buf.truncate(n);
            RawStream {
                stream_id: 3,
                frame: auth::to_hex(&buf),
                sizes: vec![64, 1518],
                pattern: vec![0, 1],
                pps: 100.0,
                start_s: 0.0,
                stop_s: 1.0,
            }
        };
        let (own, peer) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let policy = RawPortPolicy::default();
        let rules = port_rules(&policy);
        for (vid, at) in [(None, 14), (Some(10), 18)] {
            let built =
                stream_specs(9, &[l2(own, peer, 0x88b5, vid)], 1518, &limits, &rules).unwrap();
            let lens: Vec<usize> = built[0].templates.iter().map(|(b, _)| b.len()).collect();
            assert_eq!(lens, [60, 1514]);
            for (frame, patch) in &built[0].templates {
                assert!(matches!(patch, engine::multi::Patch::L2(x) if *x == at));
                let p = wire::frame::parse_frame(frame).unwrap();
                assert_eq!(p.test.map(|t| (t.test_id, t.stream_id)), Some((9, 3)));
                assert_eq!((p.eth.src_addr.0, p.eth.dst_addr.0), (own, peer));
                assert_eq!(p.vlan.map(|v| v.vid), vid);
            }
        }
        let refused = |stream: RawStream, rules: &PortRules| {
            stream_specs(9, &[stream], 1518, &limits, rules)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let other = [2, 0, 0, 0, 0, 9];
        assert!(refused(l2(other, peer, 0x88b5, None), &rules).contains("--raw-allow-spoof"));
        assert!(refused(l2(own, [0xff; 6], 0x88b5, None), &rules).contains("--raw-allow-broadcast"));
        // PTP's EtherType, say, could reach a clock next to the port: not built; nor the
        // test EtherType behind a second tag or an 802.1ad one (only one 802.1Q tag is read).
        assert!(refused(l2(own, peer, 0x88f7, None), &rules).contains("EtherType 0x88B5"));
        for outer in [0x8100u16, 0x88a8] {
            let mut s = l2(own, peer, 0x88b5, Some(10));
            let mut bytes = auth::from_hex(&s.frame).unwrap();
            // Another tag in front: outer TPID, TCI 20, then the frame's own 0x8100 tag.
            let mut tag = outer.to_be_bytes().to_vec();
            tag.extend_from_slice(&20u16.to_be_bytes());
            bytes.splice(12..12, tag);
            s.frame = auth::to_hex(&bytes);
            assert!(refused(s, &rules).contains("EtherType 0x88B5"), "{outer:x}");
        }
        let open = RawPortPolicy {
            allow_spoof: true,
            allow_broadcast: true,
            ..RawPortPolicy::default()
        };
        let open = port_rules(&open);
        assert_eq!(refused(l2(other, [0xff; 6], 0x88b5, None), &open), "");
    }

    /// [`spec`] with its IPv4 addresses changed by `f`.
    fn with_ipv4(f: impl FnOnce(&mut wire::ipv4::Ipv4Repr)) -> FrameSpec {
        let mut s = spec();
        if let wire::IpRepr::V4(ip) = &mut s.ip {
            f(ip);
        }
        s
    }

    /// Issue 33: by default a port sends only from its own MAC and addresses, to unicast
    /// MACs and addresses on its subnets or in the benchmarking blocks, and no TCP SYN or
    /// RST; the request is refused naming the flag that would allow it, and each flag
    /// lets its frames through. Several streams are held to the same rules, each.
    #[test]
    fn spoofed_broadcast_and_far_frames_are_refused_unless_allowed() {
        let limits = Limits {
            max_duration_s: 60.0,
            ..Default::default()
        };
        let strict = RawPortPolicy::default();
        let open = RawPortPolicy {
            allow_spoof: true,
            allow_broadcast: true,
            destinations: vec![(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 0)), 24)],
            ..RawPortPolicy::default()
        };
        let check = |s: &FrameSpec, policy: &RawPortPolicy| {
            let hex = auth::to_hex(&frame_of(s));
            send_spec(
                &hex,
                128,
                (7, 1),
                rate(1000.0, 1),
                &limits,
                &port_rules(policy),
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
        };
        assert_eq!(check(&spec(), &strict), Ok(()));
        // Off the port's subnet but in the benchmarking block (through a router).
        let bench = with_ipv4(|ip| ip.dst_addr = wire::Ipv4Address([198, 19, 7, 1]));
        assert_eq!(check(&bench, &strict), Ok(()));
        let mut mac = spec();
        mac.eth.src_addr = wire::EthernetAddress([2, 0, 0, 0, 0, 0x99]);
        let mut broadcast = spec();
        broadcast.eth.dst_addr = wire::EthernetAddress::BROADCAST;
        let mut multicast = spec();
        multicast.eth.dst_addr = wire::EthernetAddress([1, 0, 0x5e, 0, 0, 1]);
        let mut syn = spec();
        syn.l4 = L4Spec::Tcp(wire::tcp::TcpRepr {
            src_port: 1,
            dst_port: 80,
            seq: 0,
            ack: 0,
            flags: wire::tcp::TcpFlags::SYN,
            window: 1024,
        });
        let mut rst = syn;
        if let L4Spec::Tcp(t) = &mut rst.l4 {
            t.flags = wire::tcp::TcpFlags::RST;
        }
        let to = |octets| with_ipv4(|ip| ip.dst_addr = wire::Ipv4Address(octets));
        let refused = [
            (mac, "source MAC 02:00:00:00:00:99", "--raw-allow-spoof"),
            (
                with_ipv4(|ip| ip.src_addr = wire::Ipv4Address([198, 18, 0, 99])),
                "source address 198.18.0.99",
                "--raw-allow-spoof",
            ),
            (syn, "SYN", "--raw-allow-spoof"),
            (rst, "RST", "--raw-allow-spoof"),
            (broadcast, "ff:ff:ff:ff:ff:ff", "--raw-allow-broadcast"),
            (multicast, "01:00:5e:00:00:01", "--raw-allow-broadcast"),
            (
                to([255, 255, 255, 255]),
                "255.255.255.255",
                "--raw-allow-broadcast",
            ),
            (
                to([198, 18, 0, 255]),
                "198.18.0.255",
                "--raw-allow-broadcast",
            ),
            (to([224, 0, 0, 1]), "224.0.0.1", "--raw-allow-broadcast"),
            (to([192, 0, 2, 1]), "192.0.2.1", "--raw-destinations"),
        ];
        for (s, what, flag) in refused {
            let e = check(&s, &strict).expect_err(what);
            assert!(e.contains(what) && e.contains(flag), "{what}: {e}");
            assert_eq!(check(&s, &open), Ok(()), "{what} with {flag}");
        }
        // Only the blocks given: 192.0.3.1 is still refused.
        assert!(check(&to([192, 0, 3, 1]), &open).is_err_and(|e| e.contains("--raw-destinations")));
        // The same rules for each of several streams.
        let stream = |frame: &FrameSpec| RawStream {
            stream_id: 3,
            frame: auth::to_hex(&frame_of(frame)),
            sizes: vec![128],
            pattern: vec![0],
            pps: 10.0,
            start_s: 0.0,
            stop_s: 1.0,
        };
        let rules = port_rules(&strict);
        assert!(stream_specs(9, &[stream(&spec())], 1518, &limits, &rules).is_ok());
        let e = stream_specs(9, &[stream(&mac)], 1518, &limits, &rules)
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(
                |e| e.starts_with("stream 3: source MAC") && e.contains("--raw-allow-spoof")
            ),
            "{e:?}"
        );
    }

    /// Issue 33: a port sends at most `--raw-max-rate` (1 Gbit/s unless given), even on a
    /// server without `--max-rate`: a rate, a burst's line rate or streams together above
    /// it are refused naming the flag.
    #[test]
    fn rates_above_the_port_cap_are_refused() {
        let hex = auth::to_hex(&frame());
        let limits = Limits {
            max_duration_s: 60.0,
            max_rate_bps: None,
            ..Default::default()
        };
        let send = |load: RawSendLoad, policy: &RawPortPolicy| {
            send_spec(&hex, 128, (7, 1), load, &limits, &port_rules(policy))
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let capped = RawPortPolicy {
            max_rate_bps: 10e6,
            ..RawPortPolicy::default()
        };
        // 128-byte frames: 9,765 frames/s are 9.9994 Mbit/s, 9,766 are 10.0004.
        assert_eq!(send(rate(9_765.0, 1), &capped), Ok(()));
        let e = send(rate(9_766.0, 1), &capped).unwrap_err();
        assert!(
            e.contains("10.00 Mbit/s from one port")
                && e.contains("at most 10.00 Mbit/s (--raw-max-rate)"),
            "{e}"
        );
        let burst = |target_pps| RawSendLoad::Burst {
            frames: 1000,
            target_pps,
        };
        assert_eq!(send(burst(9_000.0), &capped), Ok(()));
        assert!(send(burst(10_000.0), &capped).is_err_and(|e| e.contains("--raw-max-rate")));
        // The default: 1 Gbit/s; 1M frames/s of 128 bytes are 1.024 Gbit/s.
        assert_eq!(RawPortPolicy::default().max_rate_bps, 1e9);
        assert!(send(rate(1e6, 1), &RawPortPolicy::default())
            .is_err_and(|e| e.contains("--raw-max-rate")));
        assert_eq!(send(rate(9e5, 1), &RawPortPolicy::default()), Ok(()));
        // Streams are added up: two of 6 Mbit/s each are 12.
        let stream = |id| RawStream {
            stream_id: id,
            frame: hex.clone(),
            sizes: vec![128],
            pattern: vec![0],
            pps: 6e6 / 1024.0,
            start_s: 0.0,
            stop_s: 1.0,
        };
        let rules = port_rules(&capped);
        assert!(stream_specs(9, &[stream(1)], 1518, &limits, &rules).is_ok());
        let e = stream_specs(9, &[stream(1), stream(2)], 1518, &limits, &rules)
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.contains("--raw-max-rate")),
            "{e:?}"
        );
    }
}
