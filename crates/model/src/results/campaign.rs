//! A whole campaign (`wirebench run PLAN.toml`): the plan's metadata, every test with the
//! document its command produced, the plan's thresholds as verdicts, and where the
//! environment stood. `results.json` of a run directory; the reports are rendered from it
//! alone.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Environment, RunResult, Verdict};

/// The schema of campaign documents written by this version.
pub const SCHEMA: &str = "wirebench.campaign/1";

/// How a test of the plan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestStatus {
    /// It ran and produced its result.
    Done,
    /// It could not run or failed; `error` says why.
    Failed,
    /// The run stopped before it.
    NotRun,
}

/// One test of the plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestEntry {
    /// `t1`, `t2`, ...: what report tables cite as their source.
    pub id: String,
    /// The plan's name for it.
    pub name: String,
    /// Its kind (`client`, `sweep`, `rfc2544`, ...).
    pub kind: String,
    /// The command line it ran (`wirebench ...`).
    pub command: String,
    /// Where it ran (`talker of lab run1`, `this host`).
    pub node: String,
    /// How it ended.
    pub status: TestStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall-clock seconds it took.
    pub duration_s: f64,
    /// The command's own result document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// In a lab with FRER relays: what each path carried during the test, from the
    /// relays' own counters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frer_paths: Vec<FrerPathRow>,
}

/// One path of one FRER stream during a test, from the relays' counters: frames the
/// replicating relay sent onto it, frames the eliminating relay received from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrerPathRow {
    /// Stream name (`to-listener`).
    pub stream: String,
    /// Path: the eliminating relay's in-port (`eth1` = path A).
    pub path: String,
    /// Frames replicated onto it.
    pub sent: u64,
    /// Frames that arrived over it.
    pub received: u64,
    /// Frames it delivered first (the eliminator passed its copy).
    pub first: u64,
    /// Frames passed by the eliminator in all (every path).
    pub passed: u64,
}

/// A campaign.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Campaign {
    /// Always [`SCHEMA`] for documents written by this version.
    pub schema: String,
    /// The plan's title.
    pub title: String,
    /// The plan's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Free-form metadata from the plan (device, operator, ...).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// What was tested (`lab frer (built and removed)`, `host 192.0.2.1`).
    pub target: String,
    /// The plan file.
    pub plan_file: String,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339, once the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Where the controlling process ran.
    pub environment: Environment,
    /// The interfaces of the nodes that took part, as `ip -d -j link` and the ethtool ioctl
    /// report them (name, driver, speed, MTU, offloads, addresses).
    #[serde(default)]
    pub interfaces: Vec<InterfaceFacts>,
    /// The tests in plan order.
    pub tests: Vec<TestEntry>,
    /// The plan's thresholds, evaluated.
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
    /// Why the run stopped before its end (interrupted, a test's setup failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// One interface of the test setup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterfaceFacts {
    /// Node (lab node, or `host`).
    pub node: String,
    /// Interface name.
    pub name: String,
    /// Kernel driver (`veth`, `ixgbe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Link speed, Mbit/s, when the driver reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Addresses with prefix length.
    #[serde(default)]
    pub addresses: Vec<String>,
    /// Offloads that are on (`tx-checksumming`, `generic-segmentation-offload`, ...).
    #[serde(default)]
    pub offloads_on: Vec<String>,
}

impl Campaign {
    /// Whether every evaluated threshold passed.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.passed)
    }
}
