//! The multi-stream table (`wirebench streams`), the SmartBits analyzer's view.

use serde::{Deserialize, Serialize};

/// One stream's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRow {
    /// Name from the profile.
    pub name: String,
    /// Sending interface.
    pub source: String,
    /// Receiving interface.
    pub destination: String,
    /// udp, tcp, icmp or an EtherType.
    pub protocol: String,
    /// Frame size(s) as configured: `1518`, `64,512,1518`, `imix`.
    pub frame: String,
    /// Mean frame size sent, bytes with FCS.
    pub mean_frame_len: f64,
    /// Offered load asked, % of line rate.
    pub load_percent: f64,
    /// Frames/s asked.
    pub target_fps: f64,
    /// Frames sent.
    pub sent: u64,
    /// Distinct frames received.
    pub received: u64,
    /// sent − received.
    pub lost: u64,
    /// lost / sent.
    pub loss_ratio: f64,
    /// Extra copies received.
    pub duplicates: u64,
    /// Frames that arrived after a later one.
    pub reordered: u64,
    /// Received L2 bit/s (frames with FCS) over the stream's active time.
    pub received_l2_bps: f64,
    /// Seconds the stream was sending.
    pub active_s: f64,
    /// The generator fell behind this stream's schedule.
    pub generator_limited: bool,
    /// Latency of the received frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::stats::histogram::LatencySummary>,
    /// Expected received L2 bit/s, if the profile says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_l2_bps: Option<f64>,
    /// Tolerance of the expectation, ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// Whether the expectation held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
}

/// All streams and the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ProfileReport {
    /// Line rate the percentages refer to, bit/s.
    pub line_rate_bps: u64,
    /// One row per stream.
    pub rows: Vec<StreamRow>,
    /// Frames sent over all streams.
    pub total_sent: u64,
    /// Frames received over all streams.
    pub total_received: u64,
    /// Received L2 bit/s over all streams.
    pub total_received_l2_bps: f64,
    /// Frames the receivers' rings or sockets dropped before counting them (the kernel's
    /// count, all receivers): lost to the tool, not to the network.
    #[serde(default)]
    pub receiver_drops: u64,
    /// Where the lost frames went, by the counters of the places that drop them (a lab's
    /// ingress limiters and shaper classes, and the receivers); absent without a lab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops: Option<DropAccount>,
}

/// The lost frames of a run, attributed to the places that counted them dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DropAccount {
    /// Frames lost over all streams (sent − received).
    pub lost: u64,
    /// Each place and the frames it dropped while the streams ran.
    pub sites: Vec<DropSite>,
    /// `lost` minus what the sites dropped: frames still queued when the receivers
    /// stopped, or dropped where nothing counts them (a busy host's backlog); negative
    /// when the sites dropped frames of others beside the test's (ARP and the like).
    pub unattributed: i64,
}

/// A place that drops frames, and how many it dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DropSite {
    /// `ingress limiter dut eth2`, `shaper class 1:10 (10Mbit)`, `receivers`.
    pub site: String,
    /// Frames it dropped.
    pub dropped: u64,
}

impl DropAccount {
    /// The account of `lost` frames over `sites` (each with its drops).
    pub fn of(lost: u64, sites: Vec<DropSite>) -> Self {
        let dropped: u64 = sites.iter().map(|s| s.dropped).sum();
        let unattributed = i64::try_from(lost)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(dropped).unwrap_or(i64::MAX));
        Self {
            lost,
            sites,
            unattributed,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_account_adds_the_sites_up_against_the_lost_frames() {
        let site = |s: &str, d| DropSite {
            site: s.into(),
            dropped: d,
        };
        let a = DropAccount::of(1000, vec![site("limiter", 700), site("class", 290)]);
        assert_eq!(a.unattributed, 10);
        let over = DropAccount::of(5, vec![site("class", 7)]);
        assert_eq!(over.unattributed, -2);
    }
}
