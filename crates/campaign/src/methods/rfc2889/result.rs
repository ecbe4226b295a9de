//! What an `rfc2889` run found: its part of a result document (`"rfc2889": {...}`). Rates
//! are frames/s, loads % of each port's line rate, times µs.

use serde::{Deserialize, Serialize};

use method::rfc2889::Aggregate;
use model::results::rfc2544::ThroughputResult;
use model::results::RunResult;

/// Its part of a result.
pub const PART: &str = "rfc2889";

/// Latency of the frames a port received, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Least.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Most.
    pub max_us: f64,
}

/// One port in one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortRow {
    /// The port.
    pub port: String,
    /// Intended load, frames/s.
    pub iload_fps: f64,
    /// Offered load: frames it sent per second.
    pub oload_fps: f64,
    /// Frames it sent.
    pub sent: u64,
    /// Deliveries of its frames that did not happen.
    pub lost: u64,
    /// `lost` over the deliveries its frames should have made.
    pub loss_ratio: f64,
    /// Frames meant for it that arrived.
    pub received: u64,
    /// Forwarding rate: frames/s meant for it that arrived, over the time they arrived
    /// (at least the trial's).
    pub forwarding_fps: f64,
    /// What a switch that forwards everything would deliver here, frames/s.
    pub intended_rx_fps: f64,
    /// Flood count: frames of the test meant for other ports that arrived here.
    pub flood: u64,
    /// Latency of the frames meant for it (broadcasts: as they reached it).
    pub latency: Option<Latency>,
}

/// §5.5's verdicts for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Congestion {
    /// Loss of the frames offered to the congested port C.
    pub congested_loss: f64,
    /// The share of C's frames that cannot fit its line rate.
    pub overload_share: f64,
    /// Loss of the frames offered to the uncongested port D.
    pub uncongested_loss: f64,
    /// D lost frames although it was not congested.
    pub head_of_line_blocking: bool,
    /// Whether back pressure was seen, or why it could not be.
    pub back_pressure: String,
}

/// One trial at a load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRows {
    /// Intended load of each sending port, % of line rate.
    pub load_pct: f64,
    /// Its length, s.
    pub duration_s: f64,
    /// Per port.
    pub ports: Vec<PortRow>,
    /// Over every port.
    pub totals: Aggregate,
    /// A sender fell behind its schedule: the offered load is below the intended.
    pub generator_limited: bool,
    /// Frames the receiving sockets of this host dropped before counting them: lost to
    /// the tester, not to the switch.
    #[serde(default)]
    pub receiver_drops: u64,
}

/// One frame size of a traffic test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    /// Frame size, bytes with FCS.
    pub frame_len: u64,
    /// The zero-loss load of each sending port (RFC 2544 §26.1's search over the pattern),
    /// when searched.
    pub throughput: Option<ThroughputResult>,
    /// The trial at the asked load: forwarding rate, loss and flood count.
    pub at_load: TrialRows,
    /// §5.5 only.
    pub congestion: Option<Congestion>,
    /// §5.6: the trials at each load step, lowest first (the last is `at_load`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<TrialRows>,
    /// §5.6: the maximum forwarding rate over the steps, frames/s over all ports, and the
    /// load it was seen at, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_forwarding: Option<(f64, f64)>,
}

/// One trial of an address search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddressTrial {
    /// Addresses (§5.7) or learning rate, frames/s (§5.8).
    pub value: f64,
    /// Addresses learned in it.
    pub addresses: u64,
    /// The learning frames' rate, frames/s.
    pub rate_fps: f64,
    /// Test frames sent to the learned addresses.
    pub sent: u64,
    /// Of them, at the learning port.
    pub at_learning_port: u64,
    /// Of them, flooded to the monitor port.
    pub at_monitor: u64,
    /// Every frame delivered, none flooded.
    pub passed: bool,
    /// The learning frames fell behind their rate (or not all were sent).
    #[serde(default)]
    pub generator_limited: bool,
}

/// §5.7 or §5.8's search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddressResult {
    /// Frame size, bytes.
    pub frame_len: u64,
    /// Searched from.
    pub min: f64,
    /// Searched to.
    pub max: f64,
    /// Step (addresses) or width (fraction) the search ends at.
    pub resolution: f64,
    /// The highest value that passed (`None`: even the lowest failed).
    pub result: Option<f64>,
    /// The lowest that failed above it (`None`: the highest searched passed, so the
    /// switch does at least `max`).
    pub failed: Option<f64>,
    /// How the switch forgot between trials: its bridge flushed, or its ageing time waited.
    pub forgetting: String,
    /// The bridge's own count and limit, when the switch is a lab's.
    pub bridge: Option<(u32, u32)>,
    /// Every trial, in order.
    pub trials: Vec<AddressTrial>,
}

/// One kind of frame in §5.9.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErroredRow {
    /// What is wrong with it (`undersized`, `oversized`, `bad FCS`, ...).
    pub kind: String,
    /// Its length with FCS, when sent.
    pub frame_len: Option<u64>,
    /// Frames sent (`None`: not possible here).
    pub sent: Option<u64>,
    /// Of them, forwarded to the destination.
    pub forwarded: Option<u64>,
    /// `filtered`, `forwarded`, or why it could not be sent.
    pub verdict: String,
}

/// §5.9's trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Errored {
    /// The valid frames' length with FCS.
    pub valid_len: u64,
    /// Valid frames sent.
    pub valid_sent: u64,
    /// Of them, lost.
    pub valid_lost: u64,
    /// Per kind of errored frame.
    pub rows: Vec<ErroredRow>,
    /// Every errored frame sent was filtered and no valid frame was lost.
    pub passed: bool,
}

/// An `rfc2889` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rfc2889Result {
    /// The test's name.
    pub test: String,
    /// Its RFC 2889 section.
    pub section: String,
    /// The ports, in role order.
    pub ports: Vec<String>,
    /// Each port's line rate, bit/s.
    pub line_rate_bps: f64,
    /// Traffic tests: per frame size.
    pub sizes: Vec<SizeResult>,
    /// Address tests: the search.
    pub addresses: Option<AddressResult>,
    /// §5.9: errored frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errored: Option<Errored>,
}

impl Rfc2889Result {
    /// The result of `req` before anything ran: its test and ports, no figures.
    pub(super) fn of(req: &super::request::Rfc2889Request) -> Self {
        Self {
            test: req.test.name().into(),
            section: req.test.section().into(),
            ports: req.ports.clone(),
            line_rate_bps: req.line_rate.0 as f64,
            sizes: Vec::new(),
            addresses: None,
            errored: None,
        }
    }
}

/// The `rfc2889` part of `r`, if it has one.
pub fn part(r: &RunResult) -> Option<Rfc2889Result> {
    r.part(PART)?.ok()
}
