//! The FRER overhead comparison: the same measurements through a FRER network and through
//! the same network forwarding plainly (the control group).

use serde::{Deserialize, Serialize};

use crate::stats::spread::{Difference, Spread};

/// One measurement in both groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverheadRow {
    /// What was measured (`TCP throughput`, `UDP round-trip latency p99`, ...).
    pub metric: String,
    /// Unit of `control` and `frer` (`Mbit/s`, `us`, `%`).
    pub unit: String,
    /// Measured through the control group (the median of its repetitions); absent when
    /// no run produced it.
    #[serde(default)]
    pub control: Option<f64>,
    /// Measured through the FRER network (the median of its repetitions); absent when no
    /// run produced it.
    #[serde(default)]
    pub frer: Option<f64>,
    /// The cost of FRER in % of the control value: a throughput that drops, or a
    /// latency that grows, is a positive overhead. Absent when either side is absent or
    /// the control is 0. Of the medians; a finding only when `difference` says it is
    /// significant.
    pub overhead_percent: Option<f64>,
    /// With repetitions: the control group's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_spread: Option<Spread>,
    /// With repetitions: the FRER group's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frer_spread: Option<Spread>,
    /// With repetitions in both groups: FRER against the control by the overlap rule of
    /// their intervals (`stats::spread::compare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
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
    /// How often each group was measured (`--repeat`); absent: once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// The order the groups were measured in, e.g. `control, FRER, FRER, control`: pairs
    /// alternate which group goes first, so drift on the machine hits both alike.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub order: String,
    /// The data path the control group's relays used (`kernel`: the BPF fast path, or
    /// `userspace` with the reason), as their state files said while the tests ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_data_path: Option<String>,
    /// The data path the FRER group's relays used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frer_data_path: Option<String>,
}
