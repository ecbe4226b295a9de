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
    /// Sub-results (used by `demo`, which runs several commands).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunResult>,
    /// Pass/fail checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
    /// Warnings a reader must see (generator limits, fallbacks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RunResult {
    /// An empty document for `command`, stamped now.
    pub fn new(command: &str, params: serde_json::Value) -> Self {
        Self {
            schema: SCHEMA.to_owned(),
            command: command.to_owned(),
            started_at: crate::env::now_rfc3339(),
            params,
            environment: Environment::probe(),
            backend: None,
            receive_mode: None,
            timestamp_source: None,
            intervals: Vec::new(),
            streams: Vec::new(),
            summary: None,
            reverse_summary: None,
            sweep: None,
            blocksize: None,
            latency: None,
            rfc2544: None,
            profile: None,
            shaping: None,
            frer: None,
            runs: Vec::new(),
            verdicts: Vec::new(),
            notes: Vec::new(),
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

impl Environment {
    /// Reads the environment of this process.
    pub fn probe() -> Self {
        Self {
            hostname: crate::env::hostname(),
            kernel: crate::env::kernel_release(),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model: std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .and_then(|rest| rest.split_once(':'))
                    .map(|(_, m)| m.trim().to_owned())
            }),
            wirebench_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
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
    /// The sender fell behind its schedule by more than 1 %: the figures show the tool.
    pub generator_limited: bool,
    /// Sender CPU use, % of one core (data-plane threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_cpu: Option<f64>,
    /// Receiver CPU use, % of one core (data-plane threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver_cpu: Option<f64>,
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

/// One interval line (`-i`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRow {
    /// Interval start, seconds since the test start.
    pub start_s: f64,
    /// Interval end.
    pub end_s: f64,
    /// `tx` or `rx` from the client's view.
    pub direction: String,
    /// Payload bytes sent in the interval.
    pub sent_bytes: u64,
    /// Payload bytes received in the interval (absent when the receiver's view is unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    /// Send rate, bits/s.
    pub sent_bps: f64,
    /// Receive rate, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_bps: Option<f64>,
    /// UDP: packets sent in the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_packets: Option<u64>,
    /// UDP: unique packets received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_packets: Option<u64>,
    /// UDP: newly missing sequence numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// UDP: jitter at the interval's end, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<f64>,
    /// TCP: retransmits in the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
}

/// Status of one sweep step (the FRER report's classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepStatus {
    /// No packet lost.
    ZeroLoss,
    /// Loss below 0.5 %.
    Marginal,
    /// Loss of 0.5 % or more.
    Loss,
}

impl SweepStatus {
    /// Human label.
    pub fn label(self) -> &'static str {
        match self {
            SweepStatus::ZeroLoss => "zero-loss",
            SweepStatus::Marginal => "marginal",
            SweepStatus::Loss => "loss",
        }
    }
}

/// One sweep step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Asked-for rate, bits/s.
    pub target_bps: f64,
    /// What the sender actually sent, bits/s.
    pub offered_bps: f64,
    /// What arrived, bits/s.
    pub achieved_bps: f64,
    /// Loss in percent.
    pub loss_pct: f64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets lost.
    pub lost_packets: u64,
    /// Trial length, seconds.
    pub duration_s: f64,
    /// Classification.
    pub status: SweepStatus,
    /// The sender could not keep the asked rate: the step measures the tool.
    pub generator_limited: bool,
}

/// The sweep table and its conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepTable {
    /// Steps in the order run.
    pub rows: Vec<SweepRow>,
    /// Highest target with zero loss (and the generator keeping up), bits/s.
    pub max_zero_loss_bps: Option<f64>,
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
}

/// The RFC 2544 benchmark tables (`wirebench rfc2544`), filled by `method::rfc2544`.
pub mod rfc2544 {
    use serde::{Deserialize, Serialize};

    /// Everything one `rfc2544` run measured.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
    pub struct Rfc2544Report {
        /// Link speed the percentages refer to, bit/s.
        pub line_rate_bps: u64,
        /// Throughput per frame size (§26.1).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub throughput: Vec<ThroughputResult>,
        /// Latency per frame size (§26.2).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub latency: Vec<LatencyResult>,
        /// Frame loss rate steps (§26.3).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub loss: Vec<LossRow>,
        /// Back-to-back bursts (§26.4, RFC 9004).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub b2b: Vec<BackToBack>,
        /// Every trial, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub trials: Vec<TrialLog>,
    }

    /// One line of the trial log.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct TrialLog {
        /// Which benchmark and step: `throughput`, `verify`, `latency`, `loss`, `b2b`.
        pub purpose: String,
        /// Frame size.
        pub frame_len: u64,
        /// Asked load, frames/s (a burst: its length in frames).
        pub load: f64,
        /// `rate` or `burst`.
        pub kind: String,
        /// Trial duration, s (0 for a burst).
        pub duration_s: f64,
        /// Frames sent.
        pub sent: u64,
        /// Frames received.
        pub received: u64,
        /// Duplicates received.
        pub duplicates: u64,
        /// Loss ratio.
        pub loss_ratio: f64,
        /// Load offered, frames/s.
        pub offered_fps: f64,
        /// The generator fell behind.
        pub generator_limited: bool,
    }

    /// The throughput search algorithm.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Search {
        /// Classic bisection between a loss-free and a lossy load, one trial per load.
        Binary,
        /// RFC 9971 MLRsearch: loads classified from all their trials with an exceed ratio.
        Mlr,
    }

    /// The result of a throughput search for one frame size.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ThroughputResult {
        /// Frame size.
        pub frame_len: u64,
        /// Which search.
        pub search: Search,
        /// Highest load that met the loss goal (the relevant lower bound), frames/s; `None`
        /// when even the minimum load failed.
        pub fps: Option<f64>,
        /// Lowest load that failed (the relevant upper bound), frames/s; `None` if none did.
        pub upper_fps: Option<f64>,
        /// MLRsearch conditional throughput: forwarding rate at the lower bound.
        pub conditional_fps: Option<f64>,
        /// Theoretical maximum at the line rate.
        pub max_fps: f64,
        /// The maximum load searched was capped at what the generator reached.
        pub generator_cap_fps: Option<f64>,
        /// Why the result is irregular, if it is.
        pub irregular: Option<String>,
        /// Trials spent.
        pub trials: usize,
    }

    /// One row of the frame loss rate benchmark.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct LossRow {
        /// Frame size.
        pub frame_len: u64,
        /// Offered load in % of line rate.
        pub percent: f64,
        /// Offered load, frames/s.
        pub fps: f64,
        /// Frames sent.
        pub sent: u64,
        /// Frames received.
        pub received: u64,
        /// `(sent − received) · 100 / sent`.
        pub loss_percent: f64,
        /// The generator could not offer this load: the step measures the tool.
        #[serde(default)]
        pub generator_limited: bool,
    }

    /// The back-to-back result for one frame size.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct BackToBack {
        /// Frame size.
        pub frame_len: u64,
        /// Longest zero-loss burst of each repetition, frames.
        pub bursts: Vec<u64>,
        /// Their mean.
        pub mean: Option<f64>,
        /// Their standard deviation.
        pub std_dev: Option<f64>,
        /// RFC 9004 implied buffer time: mean burst / max frame rate, µs.
        pub buffer_time_us: Option<f64>,
        /// Why there is no figure (e.g. the device forwards at line rate, RFC 9004).
        pub note: Option<String>,
    }

    /// The latency result for one frame size.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct LatencyResult {
        /// Frame size.
        pub frame_len: u64,
        /// Load the latency was measured at, frames/s.
        pub fps: f64,
        /// Trials run.
        pub trials: usize,
        /// Percentiles over all tagged frames of all trials.
        pub summary: Option<crate::stats::histogram::LatencySummary>,
        /// The merged histogram (base64 HdrHistogram V2, deflated).
        pub histogram: Option<String>,
    }
}

/// The multi-stream table (`wirebench streams`), the SmartBits analyzer's view.
pub mod profile {
    use serde::{Deserialize, Serialize};

    /// One stream's row.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct StreamRow {
        /// Name from the profile.
        pub name: String,
        /// Sending interface.
        pub source: String,
        /// Receiving interface.
        pub destination: String,
        /// udp, tcp, icmp or an EtherType.
        pub protocol: String,
        /// Frame size(s) as configured: `1518`, `64,512,1518`, `imix`.
        pub frame: String,
        /// Mean frame size sent, bytes with FCS.
        pub mean_frame_len: f64,
        /// Offered load asked, % of line rate.
        pub load_percent: f64,
        /// Frames/s asked.
        pub target_fps: f64,
        /// Frames sent.
        pub sent: u64,
        /// Distinct frames received.
        pub received: u64,
        /// sent − received.
        pub lost: u64,
        /// lost / sent.
        pub loss_ratio: f64,
        /// Extra copies received.
        pub duplicates: u64,
        /// Frames that arrived after a later one.
        pub reordered: u64,
        /// Received L2 bit/s (frames with FCS) over the stream's active time.
        pub received_l2_bps: f64,
        /// Seconds the stream was sending.
        pub active_s: f64,
        /// The generator fell behind this stream's schedule.
        pub generator_limited: bool,
        /// Latency of the received frames.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub latency: Option<crate::stats::histogram::LatencySummary>,
        /// Expected received L2 bit/s, if the profile says.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub expected_l2_bps: Option<f64>,
        /// Tolerance of the expectation, ratio.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tolerance: Option<f64>,
        /// Whether the expectation held.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub passed: Option<bool>,
    }

    /// All streams and the total.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
    pub struct ProfileReport {
        /// Line rate the percentages refer to, bit/s.
        pub line_rate_bps: u64,
        /// One row per stream.
        pub rows: Vec<StreamRow>,
        /// Frames sent over all streams.
        pub total_sent: u64,
        /// Frames received over all streams.
        pub total_received: u64,
        /// Received L2 bit/s over all streams.
        pub total_received_l2_bps: f64,
    }
}

/// The shaper accuracy matrix (`wirebench shaping`).
pub mod shaping {
    use serde::{Deserialize, Serialize};

    /// One frame size at one configured bandwidth.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Cell {
        /// Frame size, bytes with FCS.
        pub frame_len: u64,
        /// Bandwidth configured on the device, bit/s.
        pub bandwidth_bps: f64,
        /// Frames/s offered.
        pub offered_fps: f64,
        /// Frames sent and received.
        pub sent: u64,
        /// Distinct frames received.
        pub received: u64,
        /// Received L2 bit/s (frames with FCS) over the receive span.
        pub received_l2_bps: f64,
        /// received_l2_bps / bandwidth_bps.
        pub passed_ratio: f64,
        /// The generator offered less than the bandwidth: the cell measures the tool.
        pub generator_limited: bool,
    }

    /// The whole matrix.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
    pub struct ShapingReport {
        /// Frame sizes (rows).
        pub sizes: Vec<u64>,
        /// Bandwidths (columns), bit/s.
        pub bandwidths_bps: Vec<f64>,
        /// How the device was reconfigured (`lab` or the --dut-cmd template).
        pub configured_by: String,
        /// Every cell, bandwidth-major.
        pub cells: Vec<Cell>,
    }
}

/// The FRER overhead comparison: the same measurements through a FRER network and through
/// the same network forwarding plainly (the control group).
pub mod frer {
    use serde::{Deserialize, Serialize};

    /// One measurement in both groups.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct OverheadRow {
        /// What was measured (`TCP throughput`, `UDP round-trip latency p99`, ...).
        pub metric: String,
        /// Unit of `control` and `frer` (`Mbit/s`, `us`, `%`).
        pub unit: String,
        /// Measured through the control group; absent when that run did not produce it.
        #[serde(default)]
        pub control: Option<f64>,
        /// Measured through the FRER network; absent when that run did not produce it.
        #[serde(default)]
        pub frer: Option<f64>,
        /// The cost of FRER in % of the control value: a throughput that drops, or a
        /// latency that grows, is a positive overhead. Absent when either side is absent or
        /// the control is 0.
        pub overhead_percent: Option<f64>,
        /// Why, from what was measured alongside (frames the relays handled, tag size).
        pub reason: String,
    }

    /// The comparison.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
    pub struct FrerReport {
        /// The control group.
        pub control: String,
        /// The FRER network.
        pub treatment: String,
        /// The measurements (each group's full results are the document's `runs`).
        pub rows: Vec<OverheadRow>,
    }
}

/// A whole campaign (`wirebench run PLAN.toml`): the plan's metadata, every test with the
/// document its command produced, the plan's thresholds as verdicts, and where the
/// environment stood. `results.json` of a run directory; the reports are rendered from it
/// alone.
pub mod campaign {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::{Environment, RunResult, Verdict};

    /// The schema of campaign documents written by this version.
    pub const SCHEMA: &str = "wirebench.campaign/1";

    /// How a test of the plan ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum TestStatus {
        /// It ran and produced its result.
        Done,
        /// It could not run or failed; `error` says why.
        Failed,
        /// The run stopped before it.
        NotRun,
    }

    /// One test of the plan.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct TestEntry {
        /// `t1`, `t2`, ...: what report tables cite as their source.
        pub id: String,
        /// The plan's name for it.
        pub name: String,
        /// Its kind (`client`, `sweep`, `rfc2544`, ...).
        pub kind: String,
        /// The command line it ran (`wirebench ...`).
        pub command: String,
        /// Where it ran (`talker of lab run1`, `this host`).
        pub node: String,
        /// How it ended.
        pub status: TestStatus,
        /// Why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
        /// Wall-clock seconds it took.
        pub duration_s: f64,
        /// The command's own result document.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result: Option<RunResult>,
        /// In a lab with FRER relays: what each path carried during the test, from the
        /// relays' own counters.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub frer_paths: Vec<FrerPathRow>,
    }

    /// One path of one FRER stream during a test, from the relays' counters: frames the
    /// replicating relay sent onto it, frames the eliminating relay received from it.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct FrerPathRow {
        /// Stream name (`to-listener`).
        pub stream: String,
        /// Path: the eliminating relay's in-port (`eth1` = path A).
        pub path: String,
        /// Frames replicated onto it.
        pub sent: u64,
        /// Frames that arrived over it.
        pub received: u64,
        /// Frames it delivered first (the eliminator passed its copy).
        pub first: u64,
        /// Frames passed by the eliminator in all (every path).
        pub passed: u64,
    }

    /// A campaign.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Campaign {
        /// Always [`SCHEMA`] for documents written by this version.
        pub schema: String,
        /// The plan's title.
        pub title: String,
        /// The plan's description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub description: Option<String>,
        /// Free-form metadata from the plan (device, operator, ...).
        #[serde(default)]
        pub metadata: BTreeMap<String, String>,
        /// What was tested (`lab frer (built and removed)`, `host 192.0.2.1`).
        pub target: String,
        /// The plan file.
        pub plan_file: String,
        /// RFC 3339.
        pub started_at: String,
        /// RFC 3339, once the run ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub finished_at: Option<String>,
        /// Where the controlling process ran.
        pub environment: Environment,
        /// The interfaces of the nodes that took part, as `ip -d -j link` and `ethtool`
        /// report them (name, driver, speed, MTU, offloads, addresses).
        #[serde(default)]
        pub interfaces: Vec<InterfaceFacts>,
        /// The tests in plan order.
        pub tests: Vec<TestEntry>,
        /// The plan's thresholds, evaluated.
        #[serde(default)]
        pub verdicts: Vec<Verdict>,
        /// Why the run stopped before its end (interrupted, a test's setup failed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub stopped: Option<String>,
    }

    /// One interface of the test setup.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct InterfaceFacts {
        /// Node (lab node, or `host`).
        pub node: String,
        /// Interface name.
        pub name: String,
        /// Kernel driver (`veth`, `ixgbe`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub driver: Option<String>,
        /// Link speed, Mbit/s, when the driver reports one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub speed_mbps: Option<u64>,
        /// MTU.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mtu: Option<u32>,
        /// MAC address.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mac: Option<String>,
        /// Addresses with prefix length.
        #[serde(default)]
        pub addresses: Vec<String>,
        /// Offloads that are on (`tx-checksumming`, `generic-segmentation-offload`, ...).
        #[serde(default)]
        pub offloads_on: Vec<String>,
    }

    impl Campaign {
        /// Whether every evaluated threshold passed.
        pub fn passed(&self) -> bool {
            self.verdicts.iter().all(|v| v.passed)
        }
    }
}
