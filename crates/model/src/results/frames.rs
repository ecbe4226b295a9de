//! The tables of the raw-frame tools: what `wirebench gen` sent (and, with a receiver,
//! what arrived), and what `wirebench frer analyze` saw on the paths of a redundant
//! network.

use serde::{Deserialize, Serialize};

use crate::stats::histogram::LatencySummary;
use crate::stats::paths::StreamPaths;

/// What one `gen` run sent, and what its receiver counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenTable {
    /// Frames the backend took.
    pub sent: u64,
    /// From the first to the last frame sent, seconds.
    pub elapsed_s: f64,
    /// Frames/s asked.
    pub target_pps: f64,
    /// Frames/s offered.
    pub achieved_pps: f64,
    /// The offered rate in L2 bit/s (frames with FCS).
    pub l2_bps: f64,
    /// The offered rate in L1 bit/s (preamble and gap included).
    pub l1_bps: f64,
    /// The offered rate in % of the line rate.
    pub percent_of_line_rate: f64,
    /// The generator fell behind its schedule by more than 1 %.
    pub generator_limited: bool,
    /// Share of the schedule it was behind at the end.
    pub behind_ratio: f64,
    /// Lateness of frames against their schedule.
    pub pacing_error_us: Option<LatencySummary>,
    /// Batches the backend refused.
    pub send_errors: u64,
    /// CPU seconds of the generator thread.
    pub tx_cpu_s: f64,
    /// With a receiving port: what arrived.
    #[serde(flatten)]
    pub rx: Option<GenReceived>,
}

/// What the receiving port of a `gen` run counted of its frames.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenReceived {
    /// Distinct frames received.
    pub received: u64,
    /// sent − received.
    pub lost: u64,
    /// Extra copies.
    pub duplicates: u64,
    /// Frames that arrived after a later one.
    pub reordered: u64,
    /// Frames the receive socket's kernel buffer dropped.
    pub rx_kernel_drops: u64,
    /// Frames received without a kernel receive stamp (not in the latency).
    pub unstamped: u64,
    /// Kernel receive stamp − transmit stamp.
    pub latency_us: Option<LatencySummary>,
}

/// What `frer analyze` captured on the paths of a redundant network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrerAnalysis {
    /// The paths (interfaces) listened on, as given.
    pub paths: Vec<String>,
    /// Per test stream: merged and per path.
    pub streams: Vec<StreamPaths>,
    /// Per path: frames that were not test frames.
    pub foreign: Vec<u64>,
    /// Per path: frames the kernel dropped before the capture read them.
    pub kernel_drops: Vec<u64>,
}
