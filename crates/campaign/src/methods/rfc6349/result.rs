//! What an `rfc6349` run found: its part of a result document (`"rfc6349": {...}`), next
//! to the TCP test's own summary and interval rows.

use serde::{Deserialize, Serialize};

use method::rfc6349::WindowPlan;
use model::results::RunResult;

/// Its part of a result (`"rfc6349": {...}`).
pub const PART: &str = "rfc6349";

/// How a path figure was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Measured by the method's probes through the server's echo.
    Measured,
    /// Given on the command line.
    Given,
    /// Read from the test connection's `TCP_INFO`.
    TcpInfo,
}

/// The path before the test: MTU, baseline RTT, bottleneck bandwidth, and how each was
/// found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathFigures {
    /// Path MTU, bytes.
    pub mtu: u32,
    /// How.
    pub mtu_from: Source,
    /// The search's probes, and the interface MTU it started from (measured only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu_search: Option<method::rfc6349::PmtuResult>,
    /// Baseline RTT, µs.
    pub baseline_rtt_us: f64,
    /// How.
    pub rtt_from: Source,
    /// Echoes sent and answered while the path was idle (measured only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_echoes: Option<(u64, u64)>,
    /// Bottleneck bandwidth, bit/s of link, each packet with Ethernet's framing.
    pub bottleneck_bps: f64,
    /// How.
    pub bottleneck_from: Source,
    /// Each train's dispersion rate, bit/s (measured only; the bandwidth is their median).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trains_bps: Vec<f64>,
}

/// Where a connection's window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowFrom {
    /// The BDP.
    Bdp,
    /// The command line (`-w SIZE`).
    Given,
    /// None set: the kernel's autotuning.
    Auto,
}

/// What `rfc6349` found (its part of a result; the TCP test's own figures are the
/// document's summary and interval rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rfc6349Result {
    /// The path before the test.
    pub path: PathFigures,
    /// The BDP, the connections and the window each was asked for.
    pub plan: WindowPlan,
    /// Where the window came from (`auto`: none set).
    pub window_from: WindowFrom,
    /// The largest window one connection could have, bytes.
    pub max_window: u64,
    /// The largest window the receiver advertised during the test, bytes (the interval
    /// rows' `TCP_INFO`): Linux turns a socket buffer of W into a window of about W to
    /// 1.3 W, as the receiver's buffer overhead allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertised_window: Option<u64>,
    /// TCP payload bytes per segment the connection used (its MSS).
    pub mss: u32,
    /// The maximum achievable TCP throughput (§4.1.1), bit/s of payload: the ideal.
    pub ideal_bps: f64,
    /// What the test moved, bit/s of payload (the receiver's count).
    pub throughput_bps: f64,
    /// TCP Transfer Time Ratio (§4.1): actual over ideal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_time_ratio: Option<f64>,
    /// TCP Efficiency (§4.2), %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_efficiency_pct: Option<f64>,
    /// Buffer Delay Percentage (§4.3), %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_delay_pct: Option<f64>,
    /// The mean RTT during the transfer, µs, and of how many samples (the interval rows'
    /// smoothed RTTs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_during_us: Option<(f64, usize)>,
    /// What a reader needs to know to trust the figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A result's `rfc6349` part.
pub fn part(r: &RunResult) -> Option<Rfc6349Result> {
    r.part(PART)?.ok()
}
