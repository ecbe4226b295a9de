//! The RFC 2544 benchmark tables (`wirebench rfc2544`), filled by `method::rfc2544`.

use serde::{Deserialize, Serialize};

/// Everything one `rfc2544` run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Rfc2544Report {
    /// Link speed the percentages refer to, bit/s.
    pub line_rate_bps: u64,
    /// Throughput per frame size (§26.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throughput: Vec<ThroughputResult>,
    /// Latency per frame size (§26.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<LatencyResult>,
    /// Frame loss rate steps (§26.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loss: Vec<LossRow>,
    /// Back-to-back bursts (§26.4, RFC 9004).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub b2b: Vec<BackToBack>,
    /// Every trial, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<TrialLog>,
}

/// One line of the trial log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialLog {
    /// Which benchmark and step: `throughput`, `verify`, `latency`, `loss`, `b2b`.
    pub purpose: String,
    /// Frame size.
    pub frame_len: u64,
    /// Asked load, frames/s (a burst: its length in frames).
    pub load: f64,
    /// `rate` or `burst`.
    pub kind: String,
    /// Trial duration, s (0 for a burst).
    pub duration_s: f64,
    /// Frames sent.
    pub sent: u64,
    /// Frames received.
    pub received: u64,
    /// Duplicates received.
    pub duplicates: u64,
    /// Loss ratio.
    pub loss_ratio: f64,
    /// Load offered, frames/s.
    pub offered_fps: f64,
    /// The generator fell behind.
    pub generator_limited: bool,
}

/// The throughput search algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// Classic bisection between a loss-free and a lossy load, one trial per load.
    Binary,
    /// RFC 9971 MLRsearch: loads classified from all their trials with an exceed ratio.
    Mlr,
}

/// The result of a throughput search for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ThroughputDocument")]
pub struct ThroughputResult {
    /// Frame size.
    pub frame_len: u64,
    /// Which search.
    pub search: Search,
    /// The headline, frames/s. MLRsearch: RFC 9971's conditional throughput (the
    /// forwarding rate at the relevant lower bound, Appendix B); binary search: the highest
    /// load that met the loss goal (RFC 2544 throughput). `None` when no load met the goal
    /// or the search ran out of time: [`Self::lower_fps`] and [`Self::upper_fps`] then say
    /// between which loads the answer lies.
    pub fps: Option<f64>,
    /// The relevant lower bound: the highest load below the upper bound that met the goal,
    /// frames/s.
    #[serde(default)]
    pub lower_fps: Option<f64>,
    /// The relevant upper bound: the lowest load that failed the goal, frames/s; `None` if
    /// none did.
    pub upper_fps: Option<f64>,
    /// Theoretical maximum at the line rate.
    pub max_fps: f64,
    /// The maximum load searched was capped at what the generator reached.
    pub generator_cap_fps: Option<f64>,
    /// Why the result is irregular, if it is.
    pub irregular: Option<String>,
    /// Trials spent.
    pub trials: usize,
    /// Their intended durations added up, s (RFC 9971's trial effective duration: the
    /// time traffic was asked for, without set-up and drain); `None` in results written
    /// before it was recorded.
    pub trial_time_s: Option<f64>,
    /// The goal searched for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<SearchGoal>,
}

impl ThroughputResult {
    /// Whether the figure is only a lower bound of the device's: the generator could not
    /// offer more than its cap and no load failed the goal, so the limit found is the
    /// tool's, and the device's throughput is at least this.
    pub fn is_lower_bound(&self) -> bool {
        self.generator_cap_fps.is_some() && self.upper_fps.is_none()
    }

    /// Between which loads the answer lies, frames/s: from the relevant lower bound (0
    /// when none is known) to the relevant upper bound (the maximum load when none is).
    pub fn bracket(&self) -> (f64, f64) {
        let hi = self
            .upper_fps
            .unwrap_or(self.generator_cap_fps.unwrap_or(self.max_fps));
        (self.lower_fps.unwrap_or(0.0), hi)
    }
}

/// A throughput result as stored, also as written before the relevant lower bound and the
/// trial time were recorded: then `fps` was the lower bound and `conditional_fps` the
/// conditional throughput.
#[derive(Deserialize)]
struct ThroughputDocument {
    frame_len: u64,
    search: Search,
    fps: Option<f64>,
    #[serde(default)]
    lower_fps: Option<f64>,
    upper_fps: Option<f64>,
    #[serde(default)]
    conditional_fps: Option<f64>,
    max_fps: f64,
    generator_cap_fps: Option<f64>,
    irregular: Option<String>,
    trials: usize,
    #[serde(default)]
    trial_time_s: Option<f64>,
    #[serde(default)]
    goal: Option<SearchGoal>,
}

impl From<ThroughputDocument> for ThroughputResult {
    fn from(d: ThroughputDocument) -> Self {
        let old = d.trial_time_s.is_none();
        let (fps, lower_fps) = match (old, d.search) {
            (true, Search::Mlr) => (d.conditional_fps, d.fps),
            (true, Search::Binary) => (d.fps, d.fps),
            (false, _) => (d.fps, d.lower_fps),
        };
        Self {
            frame_len: d.frame_len,
            search: d.search,
            fps,
            lower_fps,
            upper_fps: d.upper_fps,
            max_fps: d.max_fps,
            generator_cap_fps: d.generator_cap_fps,
            irregular: d.irregular,
            trials: d.trials,
            trial_time_s: d.trial_time_s,
            goal: d.goal,
        }
    }
}

/// The search goal of a throughput result (RFC 9971 §4.6.1 Search Goal attributes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchGoal {
    /// Goal Loss Ratio: the loss a trial may have and still count as low-loss.
    pub loss_ratio: f64,
    /// Goal Exceed Ratio: the share of full-length trial time at a lower bound that may
    /// be high-loss (0 for binary search).
    pub exceed_ratio: f64,
    /// Goal Final Trial Duration, s.
    pub final_trial_s: f64,
    /// Goal Duration Sum, s.
    pub duration_sum_s: f64,
    /// Goal Width, relative to the upper bound.
    pub width: f64,
    /// Preceding targets searched first, with shorter trials and wider widths.
    pub preceding: u32,
    /// Shortest trial of the preceding targets, s.
    pub initial_trial_s: f64,
}

/// One row of the frame loss rate benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossRow {
    /// Frame size.
    pub frame_len: u64,
    /// Offered load in % of line rate.
    pub percent: f64,
    /// Offered load, frames/s.
    pub fps: f64,
    /// Frames sent.
    pub sent: u64,
    /// Frames received.
    pub received: u64,
    /// `(sent − received) · 100 / sent`.
    pub loss_percent: f64,
    /// The generator could not offer this load: the step measures the tool.
    #[serde(default)]
    pub generator_limited: bool,
}

/// The back-to-back result for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackToBack {
    /// Frame size.
    pub frame_len: u64,
    /// Longest zero-loss burst of each repetition, frames.
    pub bursts: Vec<u64>,
    /// Their mean.
    pub mean: Option<f64>,
    /// Their standard deviation.
    pub std_dev: Option<f64>,
    /// RFC 9004 implied buffer time: mean burst / max frame rate, µs.
    pub buffer_time_us: Option<f64>,
    /// Why there is no figure (e.g. the device forwards at line rate, RFC 9004).
    pub note: Option<String>,
}

/// The latency result for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    /// Frame size.
    pub frame_len: u64,
    /// Load the latency was measured at, frames/s.
    pub fps: f64,
    /// Trials run.
    pub trials: usize,
    /// Percentiles over all tagged frames of all trials.
    pub summary: Option<crate::stats::histogram::LatencySummary>,
    /// The merged histogram (base64 HdrHistogram V2, deflated).
    pub histogram: Option<String>,
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_throughput_result_reads_back_and_older_documents_keep_their_meaning() {
        let r = ThroughputResult {
            frame_len: 64,
            search: Search::Mlr,
            fps: Some(400_000.0),
            lower_fps: Some(402_009.0),
            upper_fps: Some(403_031.0),
            max_fps: 1_488_095.2,
            generator_cap_fps: None,
            irregular: None,
            trials: 10,
            trial_time_s: Some(8.5),
            goal: None,
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<ThroughputResult>(&json).unwrap(), r);
        // Written before the trial time: `fps` was the lower bound.
        let old = r#"{"frame_len":64,"search":"mlr","fps":402009.0,"upper_fps":403031.0,
            "conditional_fps":400000.0,"max_fps":1488095.2,"generator_cap_fps":null,
            "irregular":null,"trials":10}"#;
        let o: ThroughputResult = serde_json::from_str(old).unwrap();
        assert_eq!((o.fps, o.lower_fps), (Some(400_000.0), Some(402_009.0)));
        assert_eq!(o.trial_time_s, None);
        let old_binary = old.replace("mlr", "binary").replace("400000.0", "null");
        let o: ThroughputResult = serde_json::from_str(&old_binary).unwrap();
        assert_eq!((o.fps, o.lower_fps), (Some(402_009.0), Some(402_009.0)));
    }
}
