//! The command-line arguments that several methods share, as clap structs ("low" args:
//! syntax and per-value checks), and their translation into the parts of requests they
//! make: the server a test talks to ([`Target`]), how test frames look ([`FrameArgs`]),
//! the block-size sweep's options ([`SweepOptions`]).
//!
//! Commands that are not methods (`gen`, `frer analyze`) use them too.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use model::units;

use crate::request::{self as req, BlocksizeRequest, Server};
use crate::Error;

/// `--repeat N`: the flag of every measuring method that does not repeat in its own way
/// (`sweep` repeats each step, `frer compare` alternates its groups). The registry runs
/// the measurement N times and summarises each figure ([`model::results::repeats`]).
#[derive(Debug, Args, Clone)]
pub struct Repeat {
    /// Run the measurement N times: each headline figure is then the median of the N, with
    /// its range and its 95 % interval (the order-statistic interval for the median: from
    /// 6 runs on it covers 95 %; below, [min, max] and its own coverage, 93.75 % at 5).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
}

/// Flags every command that talks to a server shares.
#[derive(Debug, Args, Clone)]
pub struct Target {
    /// Server host name or address.
    pub host: String,
    /// Server control port (default 5301; 5201, iperf3's, with --iperf3).
    #[arg(short, long)]
    pub port: Option<u16>,
    /// Pre-shared key file, when the server requires authentication (readable by its
    /// owner only).
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// With --auth-key-file: go on when the server does not ask for the key (by default
    /// such a server is refused: it may not be the one you meant).
    #[arg(long, requires = "auth_key_file")]
    pub allow_unauthenticated_server: bool,
    /// Print one JSON document instead of tables.
    #[arg(short = 'J', long)]
    pub json: bool,
}

/// How test frames look (shared by `gen` and `rfc2544`). Unset addresses come from the
/// interfaces: source MAC/IP of the sending interface, destination IP of the receiving
/// one, destination MAC of the next hop (resolved by the kernel's ARP).
#[derive(Debug, Args, Clone)]
pub struct FrameArgs {
    /// Transport: udp, tcp (crafted segments, no connection) or icmp (echo requests).
    #[arg(long, value_enum, default_value_t = FrameProto::Udp)]
    pub proto: FrameProto,
    /// Destination MAC (default: the next hop toward --dst-ip).
    #[arg(long, value_parser = units::mac)]
    pub dst_mac: Option<[u8; 6]>,
    /// Source MAC (default: the sending interface's).
    #[arg(long, value_parser = units::mac)]
    pub src_mac: Option<[u8; 6]>,
    /// Destination IP address, IPv4 or IPv6 (default: the receiving interface's IPv4).
    #[arg(long)]
    pub dst_ip: Option<IpAddr>,
    /// Source IP address, the same family (default: the sending interface's address).
    #[arg(long)]
    pub src_ip: Option<IpAddr>,
    /// UDP/TCP source port.
    #[arg(long, default_value_t = 49184)]
    pub src_port: u16,
    /// UDP/TCP destination port.
    #[arg(long, default_value_t = 7)]
    pub dst_port: u16,
    /// 802.1Q VLAN id (adds a tag; 4 bytes of the frame size).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..4095))]
    pub vlan: Option<u16>,
    /// 802.1Q priority (PCP), with --vlan.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..8))]
    pub pcp: u8,
    /// DSCP (IPv4) or traffic class DSCP bits (IPv6).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..64))]
    pub dscp: u8,
    /// Lab whose nodes NODE:IFACE names refer to.
    #[arg(long, default_value = "lab")]
    pub lab: String,
    /// Link speed that percentages of line rate refer to (bit/s, e.g. 1G, 10G).
    #[arg(long, value_parser = units::rate_bps, default_value = "1G")]
    pub line_rate: f64,
    /// Frame I/O: auto, packet (AF_PACKET sendmmsg/recvmmsg), ring (PACKET_MMAP TX/RX
    /// rings) or xdp (AF_XDP: sending frames up to 2048 bytes, receiving up to 1792 with
    /// the port's frames, all but ARP and neighbour discovery, taken from the host's stack
    /// during the test; auto receives with the ring).
    #[arg(long, value_enum, default_value_t = FrameBackend::Auto)]
    pub backend: FrameBackend,
    /// The receivers' frame I/O when it should differ from --backend (e.g. xdp sending,
    /// ring receiving, which leaves the frames to the host's stack too).
    #[arg(long, value_enum)]
    pub rx_backend: Option<FrameBackend>,
}

/// Frame I/O of a sender or a receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FrameBackend {
    /// Sending: the fastest that opens here, xdp, then ring, then packet; receiving: ring,
    /// then packet (the result says which).
    Auto,
    /// AF_PACKET sockets with sendmmsg / recvmmsg batches.
    Packet,
    /// PACKET_MMAP rings: TPACKET_V2 for sending, TPACKET_V3 for receiving.
    Ring,
    /// AF_XDP (copy mode); the receiver attaches an XDP program that takes the port's frames
    /// (all but ARP and neighbour discovery) from the host's stack while it runs.
    Xdp,
}

/// The transport of test frames.
#[allow(missing_docs)] // Its values have no docs: the help lists them bare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FrameProto {
    Udp,
    Tcp,
    Icmp,
}

/// The block-size sweep's options (`blocksize`, `nicmatrix`).
#[derive(Debug, Args)]
pub struct SweepOptions {
    /// Write sizes, comma-separated (k = 1024 bytes; with --units netio, 32k is netio's
    /// 32,767).
    #[arg(long, value_parser = units::size_list, default_value = "1k,2k,4k,8k,16k,32k")]
    pub sizes: std::vec::Vec<usize>,
    /// Seconds per size and direction.
    #[arg(short, long, value_parser = units::seconds, default_value = "5")]
    pub time: Duration,
    /// TCP connections at once.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=64))]
    pub parallel: u8,
    /// How sizes and rates are written: si (MByte/s = 10^6 bytes/s) or netio (netio 1.33:
    /// KByte/s and MByte/s in powers of 2, 32k = 32,767 bytes).
    #[arg(long, value_enum, default_value_t = UnitsArg::Si)]
    pub units: UnitsArg,
}

/// How block sizes and rates are written.
#[allow(missing_docs)] // Its values have no docs: the help lists them bare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitsArg {
    Si,
    Netio,
}

/// A usage error (exit code 2) saying `msg`.
pub(crate) fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// The server a command talks to.
pub fn server(t: &Target) -> Server {
    Server {
        host: t.host.clone(),
        port: t.port.unwrap_or(control::DEFAULT_PORT),
        key_file: t.auth_key_file.clone(),
        allow_unauthenticated: t.allow_unauthenticated_server,
    }
}

/// The request's frame I/O for the command line's.
pub fn backend(b: FrameBackend) -> req::FrameBackend {
    match b {
        FrameBackend::Auto => req::FrameBackend::Auto,
        FrameBackend::Packet => req::FrameBackend::Packet,
        FrameBackend::Ring => req::FrameBackend::Ring,
        FrameBackend::Xdp => req::FrameBackend::Xdp,
    }
}

/// How test frames look.
pub fn frame(a: &FrameArgs) -> req::FrameRequest {
    req::FrameRequest {
        proto: match a.proto {
            FrameProto::Udp => req::FrameProto::Udp,
            FrameProto::Tcp => req::FrameProto::Tcp,
            FrameProto::Icmp => req::FrameProto::Icmp,
        },
        dst_mac: a.dst_mac,
        src_mac: a.src_mac,
        dst_ip: a.dst_ip,
        src_ip: a.src_ip,
        src_port: a.src_port,
        dst_port: a.dst_port,
        vlan: a.vlan,
        pcp: a.pcp,
        dscp: a.dscp,
        lab: a.lab.clone(),
        line_rate: a.line_rate,
        backend: backend(a.backend),
        rx_backend: a.rx_backend.map(backend),
    }
}

/// The block-size sweep's request against `server` (`blocksize`, `nicmatrix`).
///
/// # Errors
/// The sizes or the time do not make a sweep.
pub fn sweep_request(server: Server, o: &SweepOptions) -> Result<BlocksizeRequest, Error> {
    let netio = o.units == UnitsArg::Netio;
    // netio 1.33 sends 32,767 bytes for "32k".
    let sizes: Vec<usize> = o
        .sizes
        .iter()
        .map(|&s| if netio && s == 32 * 1024 { 32_767 } else { s })
        .collect();
    let plan = method::blocksize::BlocksizePlan::new(sizes.clone(), o.time).map_err(Error::from)?;
    Ok(BlocksizeRequest {
        server,
        plan,
        sizes,
        time: o.time,
        streams: o.parallel,
        netio,
    })
}
