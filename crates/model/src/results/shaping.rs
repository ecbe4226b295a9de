//! The shaper accuracy matrix (`wirebench shaping`).

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
    /// received_l2_bps / offered L2 bit/s: the RTX2000 report's "passed rate" (100 % of
    /// the port rate offered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_of_offered: Option<f64>,
    /// How long the device took to empty its queue of the previous cell's frames before
    /// this cell started, seconds (absent: the device's queue cannot be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_s: Option<f64>,
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
