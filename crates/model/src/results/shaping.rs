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
    /// Frames/s asked: the line rate at this frame size (absent in older documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_fps: Option<f64>,
    /// The generator offered less than it was asked (below [`Cell::TARGET_SHARE`] of
    /// `target_fps`, or its own pacer fell behind), whatever the backend: the passed rate
    /// of offered is of a smaller load than the line rate.
    #[serde(default)]
    pub below_target: bool,
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

impl Cell {
    /// The share of the asked rate a cell must offer not to be [`Cell::below_target`].
    pub const TARGET_SHARE: f64 = 0.95;
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
