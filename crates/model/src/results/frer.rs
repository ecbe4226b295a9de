//! The FRER overhead comparison: the same measurements through a FRER network and through
//! the same network forwarding plainly (the control group).

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
    /// For a throughput: the line rate it is stated against (`--line-rate`, the FRER
    /// report's "theoretical" column), in `unit`; absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical: Option<f64>,
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
