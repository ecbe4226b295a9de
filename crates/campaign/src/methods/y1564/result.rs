//! What a `y1564` run found: its part of a result document (`"y1564": {...}`), the
//! configuration test's steps per service and the performance test's rows, each with its
//! verdict. Times are µs, rates bit/s of L2 frames with FCS.

use serde::{Deserialize, Serialize};

use method::y1564::{Profile, Sac, Step};
use model::results::RunResult;

/// Its part of a result.
pub const PART: &str = "y1564";

/// A service's acceptance criteria as the document writes them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Criteria {
    /// FLR, at most (ratio).
    pub flr_max: f64,
    /// Mean FTD, at most, µs.
    pub ftd_max_us: f64,
    /// FDV, at most, µs.
    pub fdv_max_us: f64,
    /// Availability, at least, %.
    pub availability_min_pct: f64,
    /// IR tolerance (ratio).
    pub ir_tolerance: f64,
}

impl From<&Sac> for Criteria {
    fn from(s: &Sac) -> Self {
        Self {
            flr_max: s.flr_max,
            ftd_max_us: s.ftd_max.as_secs_f64() * 1e6,
            fdv_max_us: s.fdv_max.as_secs_f64() * 1e6,
            availability_min_pct: s.availability_min,
            ir_tolerance: s.ir_tolerance,
        }
    }
}

/// Frame transfer delay of the green frames, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Delay {
    /// Least.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Most.
    pub max_us: f64,
    /// Frame delay variation: the 99th percentile less the least.
    pub fdv_us: f64,
}

/// One configuration step as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    /// What was offered.
    pub step: Step,
    /// IR received, all colours, bit/s.
    pub ir_bps: f64,
    /// Green IR received, bit/s.
    pub green_ir_bps: f64,
    /// Frames sent, all colours.
    pub sent: u64,
    /// Frames lost, all colours.
    pub lost: u64,
    /// Frame loss ratio of the green frames.
    pub green_flr: f64,
    /// Green frames' delay (absent when the ends share no clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Delay>,
    /// The generator could not keep the step's rate.
    pub generator_limited: bool,
    /// Passed.
    pub pass: bool,
    /// The criteria it missed, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<String>,
}

/// One service's configuration test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceConfiguration {
    /// The service.
    pub service: String,
    /// Frame sizes, as configured.
    pub frame: String,
    /// CIR, EIR, colour mode.
    pub profile: Profile,
    /// Its criteria.
    pub sac: Criteria,
    /// The steps, in order.
    pub steps: Vec<StepResult>,
}

/// One service in the performance test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerformanceRow {
    /// The service.
    pub service: String,
    /// Its CIR, offered, bit/s.
    pub cir_bps: f64,
    /// IR received over the test, bit/s.
    pub ir_bps: f64,
    /// The least and most IR of one second, bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ir_range_bps: Option<(f64, f64)>,
    /// Frames sent.
    pub sent: u64,
    /// Frames lost.
    pub lost: u64,
    /// Frame loss ratio.
    pub flr: f64,
    /// Delay (absent when the ends share no clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Delay>,
    /// Availability over the test's seconds, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability_pct: Option<f64>,
    /// Seconds it was judged over.
    pub seconds: usize,
    /// Its criteria.
    pub sac: Criteria,
    /// Passed.
    pub pass: bool,
    /// The criteria it missed, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<String>,
}

/// The performance test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Performance {
    /// Its length, s.
    pub duration_s: f64,
    /// One row per service.
    pub services: Vec<PerformanceRow>,
}

/// What `y1564` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Y1564Result {
    /// The configuration test, per service (empty when not run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configuration: Vec<ServiceConfiguration>,
    /// The performance test, when run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance: Option<Performance>,
}

/// A result's `y1564` part.
pub fn part(r: &RunResult) -> Option<Y1564Result> {
    r.part(PART)?.ok()
}
