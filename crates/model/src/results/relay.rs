//! What a FRER relay (IEEE 802.1CB) counts, under the 802.1CB (10.8) / YANG names: per
//! port, per stream (replication and elimination, per path of an elimination), and what
//! matched no stream. `lab::relay` fills them; `wirebench frer stats` and the campaign
//! report read them.

use serde::{Deserialize, Serialize};

/// Counters of one port (the I/O loop fills the socket fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortCounters {
    /// Interface name.
    pub name: String,
    /// Frames received.
    pub received: u64,
    /// Frames handed to the interface.
    pub sent: u64,
    /// Frames the kernel dropped before the relay read them (it was overloaded).
    pub kernel_drops: u64,
    /// Frames the interface refused (e.g. its link is down).
    pub send_errors: u64,
    /// Times the interface reported its link down.
    pub link_down_events: u64,
}

/// Replication counters of a stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicationCounters {
    /// In-port.
    pub from: String,
    /// Out-ports.
    pub to: Vec<String>,
    /// Frames given a sequence number (each left once per out-port).
    pub frames: u64,
    /// frerCpsSeqGenResets.
    pub seq_gen_resets: u64,
}

/// One in-port of an elimination.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathCounters {
    /// In-port.
    pub port: String,
    /// Frames of the stream that arrived on it.
    pub received: u64,
    /// Of those, frames passed: this path delivered the number first.
    pub passed: u64,
    /// Frames its individual recovery discarded (when configured).
    pub individual_discarded: u64,
}

/// Elimination counters of a stream, under their 802.1CB (10.8) / YANG names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EliminationCounters {
    /// Out-port.
    pub to: String,
    /// Elimination turned off (every copy passes).
    pub off: bool,
    /// The recovery function's counters (passed, discarded, out_of_order, rogue, lost,
    /// lost_before_first, tagless, resets); with elimination off, `passed` counts every
    /// copy let through.
    #[serde(flatten)]
    pub recovery: frer::recovery::Counters,
    /// Latent errors signalled (7.4.4); absent when detection is not configured.
    pub latent_errors: Option<u64>,
    /// frerCpsSeqRcvyLatentErrorResets.
    pub latent_resets: Option<u64>,
    /// Per in-port.
    pub paths: Vec<PathCounters>,
}

/// A stream's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamCounters {
    /// Stream name.
    pub name: String,
    /// When the relay replicates it.
    pub replication: Option<ReplicationCounters>,
    /// When the relay eliminates it.
    pub elimination: Option<EliminationCounters>,
}

/// Everything the relay counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RelayCounters {
    /// Per port.
    pub ports: Vec<PortCounters>,
    /// Per stream.
    pub streams: Vec<StreamCounters>,
    /// Frames of no stream forwarded by the pass map.
    pub unmatched_passed: u64,
    /// Frames of no stream dropped (no pass entry for their port).
    pub unmatched_dropped: u64,
    /// Frames too short for the headers the relay reads (Ethernet and VLAN tags; with an
    /// IP-matching stream also the R-TAG and EtherType behind them), dropped.
    pub malformed: u64,
    /// Frames too long for the relay's buffer once tagged, dropped.
    pub too_long: u64,
}

/// One relay as `wirebench frer stats` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RelayReport {
    /// `LAB/NODE` of a lab's relay, the name of a standalone one, or its state file.
    pub label: String,
    /// Its process.
    pub pid: u32,
    /// `running`, `stopped: WHY`, or `gone` (it ended without saying why).
    pub state: String,
    /// Seconds it has been running.
    pub uptime_s: f64,
    /// Its counters.
    pub counters: RelayCounters,
    /// Latent errors signalled (802.1CB 7.4.4), as (seconds since start, stream, drift),
    /// the last 100.
    pub latent_alarms: Vec<(f64, String, i64)>,
    /// Which data path forwards the frames: `kernel` (the BPF fast path) or `userspace`
    /// (with the reason when the fast path was asked for and could not run).
    #[serde(default)]
    pub data_path: String,
}
