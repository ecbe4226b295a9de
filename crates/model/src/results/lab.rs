//! What `wirebench lab status` shows: the labs that are up, as read back from the
//! namespaces themselves (nodes and interfaces), the shaper classes of their duts with
//! their counters, their FRER relays and their impairment stages. `lab::status` fills it;
//! `report::text::lab_status` lays it out.

use serde::{Deserialize, Serialize};

use super::relay::RelayReport;

/// Everything `lab status` found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LabStatus {
    /// One row per node of every lab.
    pub nodes: Vec<LabNode>,
    /// HTB classes on the dut's egress toward the listener (shaper labs).
    pub classes: Vec<ShaperClass>,
    /// The labs' FRER relays.
    pub relays: Vec<RelayReport>,
    /// The labs' impairment stages, one row per direction.
    pub stages: Vec<StageRow>,
}

/// A node of a lab.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LabNode {
    /// Lab name.
    pub lab: String,
    /// Node name (talker, dut, listener, ...).
    pub node: String,
    /// Its network namespace.
    pub namespace: String,
    /// Its interfaces but `lo`, each `NAME STATE ADDRESS...`.
    pub interfaces: Vec<String>,
}

/// One HTB class of a shaper and what it passed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShaperClass {
    /// Lab name.
    pub lab: String,
    /// Class id (`1:10`).
    pub id: String,
    /// Configured rate as the kernel prints it (`10Mbit`).
    pub rate: String,
    /// Packets sent.
    pub packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets dropped.
    pub dropped: u64,
}

/// One direction of an impairment stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    /// Lab name.
    pub lab: String,
    /// Node the stage runs on.
    pub node: String,
    /// `forward` (toward the listener) or `reverse`.
    pub direction: String,
    /// Frames read.
    pub frames_in: u64,
    /// Frames dropped by the loss model.
    pub lost: u64,
    /// Extra copies sent.
    pub duplicated: u64,
    /// Frames held back behind later ones.
    pub reordered: u64,
    /// Frames delayed; absent when the kernel fast path forwarded (frames waiting in its
    /// rate queue are not counted one by one).
    pub delayed: Option<u64>,
    /// Frames dropped because the stage's queue was full.
    pub queue_drops: u64,
    /// Frames sent on.
    pub frames_out: u64,
    /// `running`, `stopped: WHY` or `gone`; with what overloaded it, if anything did.
    pub state: String,
    /// `kernel` (the BPF fast path) or `userspace`, with the reason the fast path was not
    /// used when it was asked for.
    #[serde(default)]
    pub data_path: String,
}
