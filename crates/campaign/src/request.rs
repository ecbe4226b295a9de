//! What each test asks for, typed. The binary builds these from its command line; a plan
//! builds them from each test's `args` with the same clap definitions. Values are
//! resolved (units read, defaults applied); [`crate::jobs`] checks what needs the machine
//! (interfaces, servers, root).

use std::path::PathBuf;
use std::time::Duration;

use method::blocksize::BlocksizePlan;
use method::rfc2544::{Search, SearchConfig};
use method::streams::Profile;
use method::sweep::SweepPlan;
use model::spec::TestSpec;
use model::units::FrameRate;

/// How a controller reaches the servers that lend ports (`HOST/IFACE`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Agents {
    /// Their control port, unless `HOST:PORT/IFACE` says.
    pub port: u16,
    /// The key they require (`--raw-ports` needs one).
    pub key_file: Option<std::path::PathBuf>,
    /// Their clocks and this host's are synchronised (PTP, NTP): one-way latency between
    /// hosts is reported.
    pub synced_clocks: bool,
}

/// A wirebench server to test against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Host name or address.
    pub host: String,
    /// Control port.
    pub port: u16,
    /// Pre-shared key file, when the server requires authentication.
    pub key_file: Option<PathBuf>,
    /// With a key: go on with a server that does not ask for it.
    pub allow_unauthenticated: bool,
}

/// A TCP or UDP throughput test (`client`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRequest {
    /// Where.
    pub server: Server,
    /// What.
    pub spec: TestSpec,
    /// Interval reports (`-i`), none when absent.
    pub interval: Option<Duration>,
    /// CPU the client's data threads are pinned to (`-A N`).
    pub cpu: Option<usize>,
    /// Round-trip latency from echoed probes even when the clocks are shared.
    pub round_trip: bool,
    /// The server is a stock iperf3 (`--iperf3`): its dialect, its UDP format.
    pub iperf3: bool,
    /// How to connect: address family, local address and port, timeout.
    pub connect: Connect,
    /// Ask an iperf3 server for its own output (`--get-server-output`).
    pub get_server_output: bool,
    /// A title for the result (`-T`).
    pub title: Option<String>,
}

/// How a client connects (iperf3's `-4`, `-6`, `-B`, `--cport`, `--connect-timeout`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connect {
    /// Use only this address family of the server's name.
    pub family: Option<IpFamily>,
    /// Send from this local address.
    pub bind: Option<std::net::IpAddr>,
    /// Local port of the first data stream; stream `i` uses `cport + i`.
    pub cport: Option<u16>,
    /// Give up connecting after this long (default 5 s).
    pub timeout: Option<Duration>,
}

/// An IP address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpFamily {
    /// IPv4 only (`-4`).
    V4,
    /// IPv6 only (`-6`).
    V6,
}

/// One host of a mesh: its name and its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeshHost {
    /// Its name in the matrix.
    pub name: String,
    /// Its server (the controller's way in; the other hosts reach it at the same address).
    pub server: Server,
}

/// Client tests from every host to every other (`mesh`), each run by the source's server
/// toward the destination's (the sources run with `--allow-third-party`).
#[derive(Debug, Clone, PartialEq)]
pub struct MeshRequest {
    /// The hosts, in matrix order.
    pub hosts: Vec<MeshHost>,
    /// Each pair's test.
    pub spec: TestSpec,
    /// Most pairs at once (no host in two at once).
    pub parallel: usize,
}

/// A zero-loss UDP sweep (`sweep`).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRequest {
    /// Where.
    pub server: Server,
    /// The steps.
    pub plan: SweepPlan,
}

/// A netio-style block-size sweep (`blocksize`).
#[derive(Debug, Clone, PartialEq)]
pub struct BlocksizeRequest {
    /// Where.
    pub server: Server,
    /// The sizes.
    pub plan: BlocksizePlan,
    /// The write sizes as asked (for the parameters).
    pub sizes: Vec<usize>,
    /// Seconds per size and direction.
    pub time: Duration,
    /// TCP connections at once (`-P`).
    pub streams: u8,
    /// Write sizes and rates the way netio 1.33 does (powers of two, 32k = 32,767 bytes)
    /// instead of SI.
    pub netio: bool,
}

/// The NIC matrix (`nicmatrix`): a block-size sweep per MTU and feature combination, with
/// both ends set before each and everything restored afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct NicMatrixRequest {
    /// The sweep; its server is ignored when the matrix runs its own in a lab.
    pub sweep: BlocksizeRequest,
    /// Sweep against this server (`false`: a server of the run on the last end, in a lab).
    pub remote: bool,
    /// The lab whose `NODE:IFACE` ports `ends` names.
    pub lab: String,
    /// The interfaces to set: `IFACE` of this host or `NODE:IFACE` of the lab.
    pub ends: Vec<String>,
    /// MTUs to set, in order (none: left as they are).
    pub mtus: Vec<u32>,
    /// Features (kernel names or ethtool aliases) with the states to set.
    pub features: Vec<(String, Vec<bool>)>,
}

/// UDP ping-pong latency per message size (`latency`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyRequest {
    /// Where.
    pub server: Server,
    /// Message sizes, bytes.
    pub sizes: Vec<usize>,
    /// Seconds per size.
    pub time: Duration,
    /// Both ends busy-poll.
    pub spin: bool,
    /// Stamp answers in user space (as sockperf) instead of with the kernel's stamp.
    pub user_timestamps: bool,
    /// Round-trip limits per message size as (percentile, µs): avg = −1, max = 100.
    pub latency_limits: Vec<(f64, f64)>,
    /// Where a limit's MARGINAL band lies (`None`: no band).
    pub marginal_band: Option<crate::limits::Band>,
    /// Interval rows every this long (`None`: none).
    pub interval: Option<Duration>,
}

/// Latency under load (`rrul`): TCP streams each way and pings, with idle pings before
/// and after.
#[derive(Debug, Clone, PartialEq)]
pub struct RrulRequest {
    /// Where.
    pub server: Server,
    /// How long the load runs.
    pub time: Duration,
    /// Idle baseline before the load, and again after it.
    pub idle: Duration,
    /// TCP streams in each direction.
    pub streams: u16,
    /// Pings per second.
    pub ping_hz: f64,
    /// Throughput interval (the plot's resolution).
    pub interval: Duration,
}

/// The transport of test frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameProto {
    /// UDP datagrams.
    Udp,
    /// TCP segments (crafted, no connection).
    Tcp,
    /// ICMP echo requests.
    Icmp,
}

/// The frame I/O backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameBackend {
    /// The fastest that opens: AF_XDP, then the TX ring, then sendmmsg.
    Auto,
    /// AF_PACKET with sendmmsg / recvmmsg.
    Packet,
    /// PACKET_MMAP rings.
    Ring,
    /// AF_XDP sending, the ring receiving.
    Xdp,
}

/// How test frames look; unset addresses come from the interfaces.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameRequest {
    /// Transport.
    pub proto: FrameProto,
    /// Destination MAC (default: the next hop's).
    pub dst_mac: Option<[u8; 6]>,
    /// Source MAC (default: the sending interface's).
    pub src_mac: Option<[u8; 6]>,
    /// Destination IP (default: the receiving interface's).
    pub dst_ip: Option<std::net::IpAddr>,
    /// Source IP (default: the sending interface's).
    pub src_ip: Option<std::net::IpAddr>,
    /// UDP/TCP source port.
    pub src_port: u16,
    /// UDP/TCP destination port.
    pub dst_port: u16,
    /// 802.1Q VLAN id.
    pub vlan: Option<u16>,
    /// 802.1Q priority.
    pub pcp: u8,
    /// DSCP.
    pub dscp: u8,
    /// Lab whose nodes `NODE:IFACE` names.
    pub lab: String,
    /// Line rate percentages refer to, bit/s.
    pub line_rate: f64,
    /// Frame I/O backend.
    pub backend: FrameBackend,
    /// The receivers' backend, when not `backend`'s.
    pub rx_backend: Option<FrameBackend>,
}

impl FrameRequest {
    /// The receivers' backend.
    pub fn rx_backend(&self) -> FrameBackend {
        self.rx_backend.unwrap_or(self.backend)
    }
}

impl Default for FrameRequest {
    /// UDP from port 49184 to 7 (discard), untagged, DSCP 0, lab `lab`, 1 Gbit/s, auto.
    fn default() -> Self {
        Self {
            proto: FrameProto::Udp,
            dst_mac: None,
            src_mac: None,
            dst_ip: None,
            src_ip: None,
            src_port: 49184,
            dst_port: 7,
            vlan: None,
            pcp: 0,
            dscp: 0,
            lab: "lab".into(),
            line_rate: 1e9,
            backend: FrameBackend::Auto,
            rx_backend: None,
        }
    }
}

/// One of the RFC 2544 benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rfc2544Test {
    /// §26.1.
    Throughput,
    /// §26.2.
    Latency,
    /// §26.3.
    Loss,
    /// §26.4.
    B2b,
}

/// Where RFC 2544 frames go.
#[derive(Debug, Clone, PartialEq)]
pub enum Rfc2544Path {
    /// As UDP datagrams through a wirebench server.
    Server(Server),
    /// Between two raw ports: of this host (`IFACE` or `NODE:IFACE`) or lent by a
    /// wirebench server (`HOST/IFACE`).
    Ports {
        /// Sending port.
        tx: String,
        /// Receiving port.
        rx: String,
        /// How to reach the servers of `HOST/IFACE` ports.
        agents: Agents,
        /// `rx` turns the frames around and `tx` counts them back (round-trip latency).
        reflect: bool,
    },
}

/// The RFC 2544 benchmarks per frame size (`rfc2544`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rfc2544Request {
    /// Where.
    pub path: Rfc2544Path,
    /// Benchmarks, in this order.
    pub tests: Vec<Rfc2544Test>,
    /// Frame sizes, FCS included.
    pub sizes: Vec<u64>,
    /// The throughput search.
    pub search: Search,
    /// Its settings (line rate, trial durations, loss tolerance, width).
    pub config: SearchConfig,
    /// Latency trials per size.
    pub latency_trials: usize,
    /// Latency limits as (percentile, µs): avg = −1, max = 100.
    pub latency_limits: Vec<(f64, f64)>,
    /// Where a limit's MARGINAL band lies (`None`: no band).
    pub marginal_band: Option<crate::limits::Band>,
    /// Frame loss rate step, % of line rate.
    pub loss_step: f64,
    /// Back-to-back repetitions per size.
    pub b2b_trials: usize,
    /// Longest burst tried, frames.
    pub b2b_max_burst: Option<u64>,
    /// The frames (raw ports).
    pub frame: FrameRequest,
}

/// A multi-stream profile (`streams`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamsRequest {
    /// The profile file, as named.
    pub file: String,
    /// The checked profile.
    pub profile: Profile,
    /// Lab whose nodes `NODE:IFACE` names.
    pub lab: String,
    /// Frame I/O backend for every sender.
    pub backend: FrameBackend,
    /// Interval rows every this long (`None`: none).
    pub interval: Option<Duration>,
    /// Servers whose ports are ends of streams (`HOST/IFACE`).
    pub agents: Agents,
}

/// The shaper accuracy matrix (`shaping`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShapingRequest {
    /// Sending port.
    pub tx: String,
    /// Receiving port (after the shaper).
    pub rx: String,
    /// Frame sizes with FCS.
    pub sizes: Vec<u64>,
    /// Bandwidths to configure, bit/s.
    pub bandwidths: Vec<f64>,
    /// How to set a bandwidth: a shell command with `{bandwidth}`, `{bandwidth_k}`,
    /// `{bandwidth_m}`; without it, the lab shaper's first class.
    pub dut_cmd: Option<String>,
    /// Seconds of traffic per cell.
    pub duration: Duration,
    /// The frames.
    pub frame: FrameRequest,
    /// Servers whose ports `tx` or `rx` name (`HOST/IFACE`).
    pub agents: Agents,
}

/// What FRER costs against a control group (`frer compare`).
#[derive(Debug, Clone, PartialEq)]
pub struct FrerCompareRequest {
    /// Impairment of path A in both groups.
    pub path_a: Option<String>,
    /// Impairment of path B in both groups.
    pub path_b: Option<String>,
    /// Seconds per measurement.
    pub time: f64,
    /// UDP payload bytes of the throughput test.
    pub length: u32,
    /// Lab name prefix (the labs are PREFIXc and PREFIXf).
    pub name: String,
    /// The line rate the throughputs are stated against, bit/s (the links' nominal speed).
    pub line_rate: Option<f64>,
    /// The UDP throughput test's load: unlimited, or each group's zero-loss rate.
    pub udp: method::overhead::UdpLoad,
    /// How often each group is measured (alternating, see `method::overhead::order`).
    pub repeat: u32,
}

/// Frames of one size at a rate (`gen`).
#[derive(Debug, Clone, PartialEq)]
pub struct GenRequest {
    /// Sending port.
    pub port: String,
    /// Receiving port, when the frames are counted back.
    pub rx: Option<String>,
    /// Frame size with FCS.
    pub size: u64,
    /// Rate: frames/s, % of line rate or L2 bit/s.
    pub rate: FrameRate,
    /// Stop after this many frames.
    pub count: Option<u64>,
    /// Stop after this long.
    pub time: Duration,
    /// The frames.
    pub frame: FrameRequest,
    /// With a receiving port: interval rows every this long (`None`: none).
    pub interval: Option<Duration>,
    /// Generator threads, each with its own sender (and stream) and its share of the rate.
    pub threads: usize,
    /// How to reach the servers of `HOST/IFACE` ports.
    pub agents: Agents,
}

/// Capturing test frames on the paths of a redundant network (`frer analyze`).
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeRequest {
    /// The paths: `IFACE` or `NODE:IFACE`.
    pub ports: Vec<String>,
    /// Lab whose nodes `NODE:IFACE` names.
    pub lab: String,
    /// Seconds to capture.
    pub time: f64,
    /// Receive backend.
    pub backend: FrameBackend,
}
