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

/// What the lab's own devices cost while a test ran through it: each managed device's CPU
/// time (its process; its BPF programs where the kernel fast path forwards) and the
/// host's softirq time, where the kernel forwards, shapes and runs the fast paths.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LabCost {
    /// The labs the test ran through.
    pub labs: Vec<String>,
    /// Seconds the figures cover.
    pub seconds: f64,
    /// One row per relay and impairment stage of those labs.
    pub devices: Vec<DeviceCost>,
    /// Softirq CPU time of the whole host, in seconds (`/proc/stat`): the kernel's
    /// forwarding, the shaper (HTB), the BPF fast paths, and the test's own send and
    /// receive paths all run there, so it is not one device's.
    pub host_softirq_s: f64,
}

/// One device of a lab and the CPU it used while a test ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceCost {
    /// Lab name.
    pub lab: String,
    /// Node the device runs on.
    pub node: String,
    /// `FRER relay` or `impairment stage`.
    pub device: String,
    /// `kernel` (the BPF fast path) or `userspace` (with the reason the fast path was
    /// not used, when it was asked for).
    pub data_path: String,
    /// CPU time of its process (user and system), in seconds.
    pub process_cpu_s: f64,
    /// Run time of its BPF programs, in seconds, as the kernel counts it; absent with the
    /// userspace data path or when the kernel does not count it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cpu_s: Option<f64>,
    /// Both together in % of one CPU over the test ([`DeviceCost::share_of_cpu`]).
    #[serde(default)]
    pub cpu_percent: f64,
}

impl DeviceCost {
    /// Its CPU time (process and programs) in % of one CPU over `seconds`.
    pub fn share_of_cpu(&self, seconds: f64) -> f64 {
        if seconds <= 0.0 {
            return 0.0;
        }
        (self.process_cpu_s + self.kernel_cpu_s.unwrap_or(0.0)) * 100.0 / seconds
    }
}

impl LabCost {
    /// From this share of one CPU on, a device was the bottleneck it may have been.
    pub const BUSY_PERCENT: f64 = 90.0;

    /// A note for each device that used one CPU (almost) fully: its figure may be the
    /// device's limit rather than the network's.
    pub fn notes(&self) -> Vec<String> {
        self.devices
            .iter()
            .filter(|d| d.cpu_percent >= Self::BUSY_PERCENT)
            .map(|d| {
                format!(
                    "the lab's {} on {} ({}, {}) used {:.0} % of a CPU during the test: the figure may be its limit, not the network's",
                    d.device,
                    d.node,
                    d.lab,
                    d.data_path,
                    d.cpu_percent
                )
            })
            .collect()
    }

    /// The data paths of the lab's relays, each once, in the order found (e.g.
    /// `kernel`); empty without relays.
    pub fn relay_data_paths(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for d in self.devices.iter().filter(|d| d.device == DEVICE_RELAY) {
            if !out.contains(&d.data_path.as_str()) {
                out.push(&d.data_path);
            }
        }
        out
    }
}

/// [`DeviceCost::device`] of a FRER relay.
pub const DEVICE_RELAY: &str = "FRER relay";
/// [`DeviceCost::device`] of an impairment stage.
pub const DEVICE_STAGE: &str = "impairment stage";

#[cfg(test)]
mod test {
    use super::*;

    fn device(path: &str, process: f64, kernel: Option<f64>) -> DeviceCost {
        let mut d = DeviceCost {
            lab: "l".into(),
            node: "split".into(),
            device: DEVICE_RELAY.into(),
            data_path: path.into(),
            process_cpu_s: process,
            kernel_cpu_s: kernel,
            cpu_percent: 0.0,
        };
        d.cpu_percent = d.share_of_cpu(2.0);
        d
    }

    #[test]
    fn a_device_that_used_a_whole_cpu_is_noted_with_its_data_path() {
        let cost = LabCost {
            labs: vec!["l".into()],
            seconds: 2.0,
            devices: vec![
                device("userspace", 1.9, None),
                device("kernel", 0.01, Some(0.3)),
                device("kernel", 0.0, Some(1.88)),
            ],
            host_softirq_s: 1.0,
        };
        assert_eq!(cost.devices[0].cpu_percent, 95.0);
        assert!((cost.devices[1].cpu_percent - 15.5).abs() < 1e-9);
        let notes = cost.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("userspace") && notes[0].contains("95 %"));
        assert!(notes[1].contains("kernel") && notes[1].contains("94 %"));
        assert_eq!(cost.relay_data_paths(), ["userspace", "kernel"]);
        assert_eq!(device("kernel", 1.0, None).share_of_cpu(0.0), 0.0);
    }
}
