//! The results model: what a run measured, as plain serde data.
//!
//! One model is the source of truth for every renderer (terminal tables, JSON, later
//! Markdown/HTML/CSV); renderers only read it. Field names are a contract with scripts and
//! change only with [`SCHEMA`]. Rates are bits per second of payload, times in
//! microseconds, ratios in 0..1. A value that was not measured is `None` (absent in JSON),
//! never zero.

use serde::{Deserialize, Serialize};

use crate::stats::histogram::LatencySummary;

/// Schema identifier written into every result document.
pub const SCHEMA: &str = "wirebench.result/1";

/// A whole result document (one command's output).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// Always [`SCHEMA`] for documents written by this version.
    pub schema: String,
    /// The command that produced it (`client`, `sweep`, `blocksize`, `latency`, `demo`).
    pub command: String,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// What was asked, as the command resolved it.
    pub params: serde_json::Value,
    /// Where it ran.
    pub environment: Environment,
    /// Send/receive path that produced the figures (e.g. `udp-sendmmsg`, `udp-gso`, `tcp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// How the receiver waited for packets: `blocking` (sleeps in `recvmmsg`) or `spin`
    /// (busy-polls; used above 100 kpps). Figures differ between the two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receive_mode: Option<String>,
    /// An AF_XDP receiver's frames as the XDP program and the kernel counted them, against
    /// what the receiver read (`server --rx-backend xdp`), over all its streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub af_xdp_frames: Option<XdpFrameCheck>,
    /// Where latency timestamps came from (`kernel-software`, `user`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp_source: Option<String>,
    /// Per-interval rows (`-i`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalRow>,
    /// Per-stream results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamResult>,
    /// Totals over all streams of the main direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// With `--bidir`: totals of the server-to-client direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse_summary: Option<Summary>,
    /// Zero-loss sweep table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepTable>,
    /// Block-size table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocksize: Option<Vec<BlocksizeRow>>,
    /// Ping-pong latency per message size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Vec<LatencyRow>>,
    /// Latency under load (`rrul`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrul: Option<rrul::RrulResult>,
    /// RFC 2544 tables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rfc2544: Option<rfc2544::Rfc2544Report>,
    /// Multi-stream profile table (`streams`; named `profile` because `streams` holds the
    /// per-stream results of a client test).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::ProfileReport>,
    /// Shaper accuracy matrix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shaping: Option<shaping::ShapingReport>,
    /// FRER overhead against a control group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frer: Option<frer::FrerReport>,
    /// What `gen` sent and received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gen: Option<frames::GenTable>,
    /// What `frer analyze` saw on the paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frer_analysis: Option<frames::FrerAnalysis>,
    /// The FRER relays `frer stats` read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relays: Vec<relay::RelayReport>,
    /// A measurement repeated (`--repeat N`): each headline figure across the
    /// repetitions, whose documents are in `runs`; this document is the one whose first
    /// figure is the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated: Option<repeats::Repeated>,
    /// Sub-results (used by `demo`, which runs several commands, `frer compare`, and a
    /// repeated measurement: each repetition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunResult>,
    /// The NIC matrix (`nicmatrix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_matrix: Option<nic::NicMatrix>,
    /// Client tests between every ordered pair of hosts (`mesh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<mesh::MeshReport>,
    /// The interfaces the test used, as they were when it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<nic::InterfaceState>,
    /// The host's CPU load during the test (all of it, whatever ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<nic::HostLoad>,
    /// What the devices of the lab the test ran through (relays, impairment stages) cost
    /// in CPU, with their data paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab_cost: Option<lab::LabCost>,
    /// What the host counted during the test (interrupts, softirqs, CPU), per side.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub activity: Vec<nic::HostActivity>,
    /// Pass/fail checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
    /// Warnings a reader must see (generator limits, fallbacks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The connections of a client test: addresses, socket facts, both processes' CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<ConnectionFacts>,
    /// The test was stopped early (Ctrl-C, SIGTERM): the figures cover the time it ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// A method's own results when the parts above do not fit them, each under the
    /// method's name and written at the top level beside the others (`"y1564": {...}`);
    /// typed through [`RunResult::part`] and [`RunResult::set_part`]. A reader of an older
    /// or newer document keeps the members it does not know here, so nothing is lost.
    #[serde(flatten)]
    pub parts: std::collections::BTreeMap<String, serde_json::Value>,
}

impl RunResult {
    /// An empty document for `command`, started at `started_at` (RFC 3339) in
    /// `environment` (both read by the caller: `engine::env::result` does it for the real
    /// machine).
    pub fn new(
        command: &str,
        params: serde_json::Value,
        started_at: String,
        environment: Environment,
    ) -> Self {
        Self {
            schema: SCHEMA.to_owned(),
            command: command.to_owned(),
            started_at,
            params,
            environment,
            backend: None,
            receive_mode: None,
            af_xdp_frames: None,
            timestamp_source: None,
            connection: None,
            interrupted: false,
            intervals: Vec::new(),
            streams: Vec::new(),
            summary: None,
            reverse_summary: None,
            sweep: None,
            blocksize: None,
            latency: None,
            rrul: None,
            mesh: None,
            rfc2544: None,
            profile: None,
            shaping: None,
            frer: None,
            gen: None,
            frer_analysis: None,
            relays: Vec::new(),
            repeated: None,
            runs: Vec::new(),
            nic_matrix: None,
            interfaces: Vec::new(),
            host_load: None,
            lab_cost: None,
            activity: Vec::new(),
            verdicts: Vec::new(),
            notes: Vec::new(),
            parts: Default::default(),
        }
    }

    /// The method's own part `name`, typed; `None` when the result has none.
    ///
    /// # Errors
    /// The part is not a `T` (another version's, or another method's).
    pub fn part<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Option<Result<T, serde_json::Error>> {
        self.parts
            .get(name)
            .map(|v| serde_json::from_value(v.clone()))
    }

    /// Stores `part` as the method's own part `name` (see [`RunResult::parts`]); `name`
    /// is the method's kind, never a member the document already has (`summary`).
    ///
    /// # Errors
    /// `part` does not serialise to JSON (a map with non-string keys).
    pub fn set_part<T: Serialize>(
        &mut self,
        name: &str,
        part: &T,
    ) -> Result<(), serde_json::Error> {
        self.parts
            .insert(name.to_owned(), serde_json::to_value(part)?);
        Ok(())
    }
}

/// What a TCP connection sent, as `TCP_INFO` counts it (`tcpi_bytes_sent`,
/// `tcpi_bytes_retrans`): payload bytes put on the wire, a byte sent three times counted
/// three times, and of them those that were retransmissions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpBytes {
    /// Bytes sent, retransmissions included.
    pub sent: u64,
    /// Bytes retransmitted.
    pub retransmitted: u64,
}

impl TcpBytes {
    /// TCP efficiency (RFC 6349 §4.2), %: `(sent − retransmitted) / sent × 100`; `None`
    /// if nothing was sent.
    pub fn efficiency_percent(&self) -> Option<f64> {
        (self.sent > 0)
            .then(|| self.sent.saturating_sub(self.retransmitted) as f64 / self.sent as f64 * 100.0)
    }

    /// Two connections' counts together.
    pub fn plus(self, o: Self) -> Self {
        Self {
            sent: self.sent.saturating_add(o.sent),
            retransmitted: self.retransmitted.saturating_add(o.retransmitted),
        }
    }
}

/// Frames through an AF_XDP receiver, counted three ways: by the XDP program that
/// redirected them, by the kernel (XDP_STATISTICS: no room on the socket's ring, or no
/// chunk to put a frame in) and by the receiver that read them. Every redirected frame is
/// either read or dropped, so the three agree when `redirected == read + dropped`: a
/// frame lost between the program and the reader, or a receiver counting frames that
/// never came, breaks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct XdpFrameCheck {
    /// Frames the program redirected to the receiver's sockets.
    pub redirected: u64,
    /// Frames the receiver read from them.
    pub read: u64,
    /// Frames the kernel dropped for the sockets.
    pub dropped: u64,
}

impl XdpFrameCheck {
    /// Whether every redirected frame was read or dropped, and no other.
    pub fn agrees(&self) -> bool {
        self.read.checked_add(self.dropped) == Some(self.redirected)
    }

    /// Two receivers' counts together.
    pub fn plus(self, o: Self) -> Self {
        Self {
            redirected: self.redirected.saturating_add(o.redirected),
            read: self.read.saturating_add(o.read),
            dropped: self.dropped.saturating_add(o.dropped),
        }
    }
}

/// Where a result was measured.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Environment {
    /// Host name of the machine running the command.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Online CPUs.
    pub cpus: usize,
    /// CPU model (`/proc/cpuinfo` "model name"), when the kernel names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// wirebench version.
    pub wirebench_version: String,
}

/// Whether latency figures are one-way or round-trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatencyKind {
    /// Receive time minus transmit time on one shared or synchronised clock.
    OneWay,
    /// Echoed probes: the sender's receive time minus its own transmit time.
    RoundTrip,
}

impl LatencyKind {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LatencyKind::OneWay => "one-way",
            LatencyKind::RoundTrip => "round-trip",
        }
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyUs {
    /// One-way or round-trip.
    pub kind: LatencyKind,
    /// Samples behind the figures.
    pub count: u64,
    /// Minimum.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Maximum.
    pub max: f64,
}

impl LatencyUs {
    /// Tags a histogram summary with its kind.
    pub fn from_summary(kind: LatencyKind, s: &LatencySummary) -> Self {
        Self {
            kind,
            count: s.count,
            min: s.min_us,
            avg: s.avg_us,
            p50: s.p50_us,
            p90: s.p90_us,
            p99: s.p99_us,
            p999: s.p999_us,
            p9999: s.p9999_us,
            max: s.max_us,
        }
    }
}

/// Distribution of inter-arrival gaps at the receiver, against the nominal gap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GapStats {
    /// The gap the schedule asked for (1 / packet rate), if paced.
    pub nominal_us: Option<f64>,
    /// Median measured gap.
    pub p50_us: f64,
    /// 99th percentile gap.
    pub p99_us: f64,
    /// Gaps measured.
    pub count: u64,
}

/// The measured totals of one stream or of all streams of a direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Seconds the sender sent.
    pub duration_s: f64,
    /// Asked-for rate, bits/s of payload (absent = unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_bps: Option<f64>,
    /// What the sender actually sent, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_bps: Option<f64>,
    /// What the receiver got, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_bps: Option<f64>,
    /// Packets sent (UDP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_packets: Option<u64>,
    /// Unique packets received (UDP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_packets: Option<u64>,
    /// Sent but never received (UDP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// Extra copies received (UDP, RFC 5560).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_packets: Option<u64>,
    /// Reordered packets (UDP, RFC 4737).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reordered_packets: Option<u64>,
    /// Arrived too late to classify (older than the sequence window); counted as lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_packets: Option<u64>,
    /// lost / sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_ratio: Option<f64>,
    /// RFC 3550 interarrival jitter, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<f64>,
    /// Latency percentiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<LatencyUs>,
    /// Receiver inter-arrival gaps (how pacing landed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_gap_us: Option<GapStats>,
    /// Sender lateness against its schedule, µs percentiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing_error_us: Option<LatencySummary>,
    /// Payload bytes sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    /// Payload bytes received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    /// TCP retransmitted segments (TCP_INFO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP smoothed RTT at the end, µs (TCP_INFO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_rtt_us: Option<f64>,
    /// TCP: the bytes the sending connections put on the wire, retransmissions included,
    /// and those that were retransmissions (TCP_INFO, Linux 4.19+), over each connection's
    /// whole life (a warm-up `-O` included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes: Option<TcpBytes>,
    /// TCP efficiency, % (RFC 6349 §4.2): of the bytes sent, those that were not
    /// retransmissions ([`TcpBytes::efficiency_percent`]; set with
    /// [`Summary::set_tcp_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_efficiency_pct: Option<f64>,
    /// The sender fell behind its schedule by more than 1 %: the figures show the tool.
    pub generator_limited: bool,
    /// Sender CPU use, % of one core (data-plane threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_cpu: Option<f64>,
    /// Receiver CPU use, % of one core (data-plane threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver_cpu: Option<f64>,
}

impl Summary {
    /// Sets what the TCP connections sent and the efficiency that follows from it.
    pub fn set_tcp_bytes(&mut self, b: Option<TcpBytes>) {
        self.tcp_bytes = b;
        self.tcp_efficiency_pct = b.and_then(|b| b.efficiency_percent());
    }
}

/// One stream's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    /// Stream id (1-based).
    pub id: u8,
    /// `tcp` or `udp`.
    pub protocol: String,
    /// `tx` (client sends) or `rx` (client receives).
    pub direction: String,
    /// The figures.
    #[serde(flatten)]
    pub summary: Summary,
    /// Raw latency histogram (HdrHistogram V2 + deflate, base64) for recomputation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<String>,
}

/// Latency of one interval (µs), from bucket counts (see [`IntervalRow::latency`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalLatency {
    /// `one-way` or `round-trip`.
    pub kind: LatencyKind,
    /// Samples.
    pub count: u64,
    /// Lowest.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Highest.
    pub max_us: f64,
}

impl IntervalLatency {
    /// The figures of `s`, of `kind`.
    pub fn from_buckets(kind: LatencyKind, s: &crate::stats::buckets::BucketSummary) -> Self {
        IntervalLatency {
            kind,
            count: s.count,
            min_us: s.min_us,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            max_us: s.max_us,
        }
    }
}

/// One interval line (`-i`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRow {
    /// Interval start, seconds since the test start.
    pub start_s: f64,
    /// Interval end.
    pub end_s: f64,
    /// `tx` or `rx` from the client's view.
    pub direction: String,
    /// The stream this row is about; absent on the sum over the direction's streams (with
    /// one stream the sum is its only row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<u8>,
    /// Payload bytes sent in the interval (absent when the sender's view is unknown: a
    /// stock iperf3 server sends no counts during a test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    /// Payload bytes received in the interval (absent when the receiver's view is unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    /// Send rate, bits/s (absent with `sent_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bps: Option<f64>,
    /// Receive rate, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_bps: Option<f64>,
    /// UDP: packets sent in the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_packets: Option<u64>,
    /// UDP: unique packets received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_packets: Option<u64>,
    /// UDP: packets lost. In a finished test's result, the packets that were due (sent) in
    /// this interval and never arrived (`loss_attributed`); while a test runs, and where the
    /// two sides' counts cannot be matched, the sequence numbers found missing in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// UDP: `lost_packets` counts the packets due in this interval (not the gaps noticed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loss_attributed: bool,
    /// UDP: extra copies received in the interval (RFC 5560).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_packets: Option<u64>,
    /// UDP: packets received after a higher sequence number (RFC 4737).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordered_packets: Option<u64>,
    /// UDP: latency of the packets received in the interval (one-way or round-trip as in
    /// the summary), read from 1/8-octave buckets: within ±6.1 %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<IntervalLatency>,
    /// UDP: jitter at the interval's end, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<f64>,
    /// TCP: retransmits in the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP: the sending connection's state at the interval's end, from `TCP_INFO` (rows
    /// about one stream only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpState>,
}

/// The connections of a client test, as the sockets gave them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionFacts {
    /// The control connection: this side's address.
    pub local: String,
    /// The control connection: the server's address.
    pub remote: String,
    /// The test's identifier on the server (iperf3's cookie, or wirebench's test id).
    pub cookie: String,
    /// Each data stream's addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamAddresses>,
    /// The TCP maximum segment size of the first data connection (the control
    /// connection's for UDP tests), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_mss: Option<u32>,
    /// `TCP_NODELAY` as the first data connection has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelay: Option<bool>,
    /// A data socket's send buffer as the kernel set it, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf: Option<u32>,
    /// A data socket's receive buffer as the kernel set it, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf: Option<u32>,
    /// TCP congestion control of this side's data sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// TCP congestion control of the server's data sockets, as it reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_congestion: Option<String>,
    /// This process's CPU use over the test, % of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuUse>,
    /// The server process's CPU use over the test, % of one core, as it reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_cpu: Option<CpuUse>,
    /// What the server printed about the test, when asked (`--get-server-output`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output: Option<String>,
}

/// One data stream's socket addresses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamAddresses {
    /// Stream id.
    pub id: u8,
    /// This side's address.
    pub local: String,
    /// The server's address.
    pub remote: String,
}

/// A process's CPU use over a time, % of one core (`getrusage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// User and system.
    pub total: f64,
    /// User.
    pub user: f64,
    /// System.
    pub system: f64,
}

impl CpuUse {
    /// CPU use from (user, system) CPU seconds over `wall_s` seconds.
    pub fn over(user_s: f64, system_s: f64, wall_s: f64) -> Option<Self> {
        (wall_s > 0.0).then(|| CpuUse {
            total: (user_s + system_s) / wall_s * 100.0,
            user: user_s / wall_s * 100.0,
            system: system_s / wall_s * 100.0,
        })
    }
}

/// A TCP connection's state at one moment, as `TCP_INFO` gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpState {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// The peer's advertised receive window, bytes.
    pub snd_wnd: u64,
    /// Smoothed round-trip time, µs.
    pub rtt_us: u64,
    /// Round-trip time variation, µs.
    pub rttvar_us: u64,
    /// Path MTU, bytes.
    pub pmtu: u64,
}

/// Status of one sweep step (the FRER report's levels), by the step's worst loss against
/// the sweep's two limits ([`SweepTable::marginal_pct`], [`SweepTable::high_pct`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepStatus {
    /// No packet lost.
    ZeroLoss,
    /// Some loss, at most the marginal limit (default 0.5 %).
    Marginal,
    /// Loss above the marginal limit and below the high limit ("loss detected").
    Loss,
    /// Loss at or above the high limit (default 1 %).
    HighLoss,
}

impl SweepStatus {
    /// Human label.
    pub fn label(self) -> &'static str {
        match self {
            SweepStatus::ZeroLoss => "zero-loss",
            SweepStatus::Marginal => "marginal",
            SweepStatus::Loss => "loss detected",
            SweepStatus::HighLoss => "high loss",
        }
    }
}

/// One sweep step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Asked-for rate, bits/s.
    pub target_bps: f64,
    /// What the sender actually sent, bits/s (mean of the repetitions).
    pub offered_bps: f64,
    /// What arrived, bits/s (mean of the repetitions).
    pub achieved_bps: f64,
    /// Loss in percent (the worst repetition).
    pub loss_pct: f64,
    /// Packets sent (all repetitions).
    pub sent_packets: u64,
    /// Packets lost (all repetitions).
    pub lost_packets: u64,
    /// Trial length, seconds.
    pub duration_s: f64,
    /// Classification.
    pub status: SweepStatus,
    /// The sender could not keep the asked rate: the step measures the tool.
    pub generator_limited: bool,
    /// How often the step ran (`--repeat`); absent: once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// With repetitions: the lowest and highest received rate, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_range_bps: Option<[f64; 2]>,
    /// With repetitions: the lowest and highest loss, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_range_pct: Option<[f64; 2]>,
}

/// The sweep table and its conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepTable {
    /// Steps in the order run.
    pub rows: Vec<SweepRow>,
    /// Highest target with zero loss (and the generator keeping up), bits/s; with
    /// `max_zero_loss_is_lower_bound`, the most the generator offered without loss.
    pub max_zero_loss_bps: Option<f64>,
    /// The zero-loss steps at the top were generator-limited: `max_zero_loss_bps` is a
    /// lower bound (the network's limit lies above what could be offered).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub max_zero_loss_is_lower_bound: bool,
    /// Loss up to this (percent) is marginal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marginal_pct: Option<f64>,
    /// Loss from this on (percent) is high.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_pct: Option<f64>,
    /// The recommended operating rate: the highest zero-loss rate times the safety margin,
    /// bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operating_bps: Option<f64>,
    /// The safety margin applied (0..1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_margin: Option<f64>,
}

/// One block-size step (netio style).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlocksizeRow {
    /// Bytes per write.
    pub block_bytes: usize,
    /// Client-to-server, MByte/s (10^6 bytes) as the receiver measured it.
    pub tx_mbyte_s: f64,
    /// Server-to-client, MByte/s as the receiver measured it.
    pub rx_mbyte_s: f64,
    /// Seconds per direction.
    pub duration_s: f64,
    /// The client's CPU, % of one core (data-plane threads), mean of both directions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu: Option<f64>,
    /// The server's CPU, % of one core (data-plane threads), mean of both directions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<f64>,
}

/// Ping-pong latency for one message size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRow {
    /// Message payload bytes.
    pub size: usize,
    /// Messages answered.
    pub samples: u64,
    /// Messages sent without an answer in time.
    pub lost: u64,
    /// Round-trip time percentiles.
    pub rtt_us: LatencyUs,
    /// Half of the round trip (sockperf's "latency"), median.
    pub half_rtt_p50_us: f64,
    /// `blocking` or `spin`.
    pub mode: String,
    /// The raw round-trip histogram (HdrHistogram V2 + deflate, base64), so percentiles
    /// and the CDF can be recomputed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
}

/// A pass/fail check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// What was checked.
    pub name: String,
    /// Outcome.
    pub passed: bool,
    /// Measured against threshold, in words.
    pub detail: String,
    /// Inside the MARGINAL band: over the limit by at most the band (the default,
    /// `--marginal-above`, 15 %: passed, but over) or, with `--marginal-band`, above that
    /// share of the limit and within it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub marginal: bool,
}

impl Verdict {
    /// `pass`, `MARGINAL` or `FAIL`.
    pub fn word(&self) -> &'static str {
        match (self.passed, self.marginal) {
            (false, _) => "FAIL",
            (true, true) => "MARGINAL",
            (true, false) => "pass",
        }
    }
}

pub mod rfc2544;

pub mod rrul;

pub mod mesh;

pub mod profile;

pub mod shaping;

pub mod frames;

pub mod figures;
/// Repeated measurements: every repetition kept, each figure with its spread.
pub mod repeats;

pub mod frer;

pub mod relay;

pub mod lab;

/// Interface state, host activity and the NIC matrix.
pub mod nic;

pub mod campaign;

#[cfg(test)]
mod parts_test {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Toy {
        rows: Vec<u32>,
        max_bps: f64,
    }

    /// A method's own part sits at the top level of the document, reads back typed, and a
    /// member this version does not know survives a read and a write.
    #[test]
    fn a_method_s_part_is_a_top_level_member_that_round_trips() {
        let mut r = RunResult::new("toy", serde_json::json!({}), "t".into(), Default::default());
        let toy = Toy {
            rows: vec![1, 2],
            max_bps: 5e8,
        };
        r.set_part("toy", &toy).unwrap();
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(doc["toy"]["max_bps"], 5e8);
        assert_eq!(doc["schema"], SCHEMA);
        let mut text = serde_json::to_string(&r).unwrap();
        text.insert_str(1, r#""future": {"x": 1},"#);
        let back: RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back.part::<Toy>("toy").unwrap().unwrap(), toy);
        assert!(back.part::<Toy>("other").is_none());
        assert!(back.part::<Toy>("future").unwrap().is_err());
        assert_eq!(serde_json::to_value(&back).unwrap()["future"]["x"], 1);
        // The known members stay typed, not parts.
        assert!(!back.parts.contains_key("schema") && !back.parts.contains_key("command"));
    }
}

#[cfg(test)]
mod xdp_frame_check_test {
    use super::XdpFrameCheck;

    #[test]
    fn frames_agree_only_when_every_redirected_one_was_read_or_dropped() {
        let c = |redirected, read, dropped| XdpFrameCheck {
            redirected,
            read,
            dropped,
        };
        assert!(c(10, 7, 3).agrees());
        assert!(c(0, 0, 0).agrees());
        assert!(
            !c(10, 7, 2).agrees(),
            "a frame lost between program and reader"
        );
        assert!(
            !c(10, 11, 0).agrees(),
            "a frame read that was never redirected"
        );
        assert!(
            !c(u64::MAX, u64::MAX, 1).agrees(),
            "no overflow into agreement"
        );
        let sum = c(10, 7, 3).plus(c(5, 5, 0));
        assert_eq!(sum, c(15, 12, 3));
        assert!(sum.agrees());
    }
}
