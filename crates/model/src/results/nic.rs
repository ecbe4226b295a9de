//! What a network interface was while a result was measured (driver, link, MTU, offload
//! features, interrupt coalescing, rings, channels, PCIe link), what the host counted
//! during a test (the interface's interrupts, NET_RX softirqs, CPU), and the NIC matrix
//! (`nicmatrix`: block-size sweeps per MTU and offload combination).
//!
//! Only data: `engine::nic` reads the kernel, the report renders.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::BlocksizeRow;

/// One interface's state, as the kernel's ethtool interface and sysfs give it. A fact the
/// driver does not answer is `None`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InterfaceState {
    /// Which end it is: `local`, `tx`, `rx`, or a lab node's `NODE:IFACE`.
    pub role: String,
    /// Interface name.
    pub name: String,
    /// Driver name (`ethtool -i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// Firmware version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Bus address (`0000:03:00.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_info: Option<String>,
    /// Link speed, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// `full` or `half`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplex: Option<String>,
    /// MTU, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Every feature by its kernel name (`rx-checksum`, `rx-lro`, `rx-vlan-hw-parse`):
    /// on or off.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, bool>,
    /// The features the driver does not let change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed_features: Vec<String>,
    /// Interrupt coalescing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<Coalesce>,
    /// Ring sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rings: Option<Rings>,
    /// Channel (queue) counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Channels>,
    /// The PCIe link, for a PCIe device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie: Option<PcieLink>,
    /// Why there is no PCIe link (`not a PCIe device`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_note: Option<String>,
}

/// Interrupt coalescing (`ethtool -c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Coalesce {
    /// `rx-usecs`.
    pub rx_usecs: u32,
    /// `rx-frames`.
    pub rx_frames: u32,
    /// `tx-usecs`.
    pub tx_usecs: u32,
    /// `tx-frames`.
    pub tx_frames: u32,
    /// Adaptive RX.
    pub adaptive_rx: bool,
    /// Adaptive TX.
    pub adaptive_tx: bool,
}

/// Ring sizes (`ethtool -g`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Rings {
    /// RX descriptors.
    pub rx: u32,
    /// The driver's maximum.
    pub rx_max: u32,
    /// TX descriptors.
    pub tx: u32,
    /// The driver's maximum.
    pub tx_max: u32,
}

/// Channel counts (`ethtool -l`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Channels {
    /// RX-only channels.
    pub rx: u32,
    /// TX-only channels.
    pub tx: u32,
    /// Other channels.
    pub other: u32,
    /// Combined channels.
    pub combined: u32,
    /// The driver's maximum of combined channels.
    pub max_combined: u32,
}

/// A PCIe link as sysfs gives it (`current_link_speed` is `8.0 GT/s PCIe`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PcieLink {
    /// Current speed, GT/s.
    pub current_gts: f64,
    /// Current width, lanes.
    pub current_width: u32,
    /// Maximum speed, GT/s.
    pub max_gts: f64,
    /// Maximum width, lanes.
    pub max_width: u32,
}

impl PcieLink {
    /// The PCIe generation of a speed in GT/s (2.5 = Gen1 ... 64 = Gen6).
    pub fn generation(gts: f64) -> Option<u8> {
        [
            (2.5, 1),
            (5.0, 2),
            (8.0, 3),
            (16.0, 4),
            (32.0, 5),
            (64.0, 6),
        ]
        .into_iter()
        .find(|(s, _)| (gts - s).abs() < 0.01)
        .map(|(_, g)| g)
    }

    /// `Gen3 x1 of Gen4 x1`: the link as trained, of what the device can do.
    pub fn words(&self) -> String {
        let one = |gts: f64, width: u32| match Self::generation(gts) {
            Some(g) => format!("Gen{g} x{width}"),
            None => format!("{gts} GT/s x{width}"),
        };
        format!(
            "{} of {}",
            one(self.current_gts, self.current_width),
            one(self.max_gts, self.max_width)
        )
    }

    /// Whether the link trained below what the device can do.
    pub fn degraded(&self) -> bool {
        self.current_gts < self.max_gts || self.current_width < self.max_width
    }
}

impl InterfaceState {
    /// Every fact as (name, value), in a fixed order: what a report's environment table
    /// lists and what `compare` matches between two runs.
    pub fn facts(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                out.push((k.to_owned(), v));
            }
        };
        put("driver", self.driver.clone());
        put("driver version", self.driver_version.clone());
        put("firmware", self.firmware.clone());
        put("bus", self.bus_info.clone());
        put("speed", self.speed_mbps.map(|s| format!("{s} Mbit/s")));
        put("duplex", self.duplex.clone());
        put("mtu", self.mtu.map(|m| m.to_string()));
        put(
            "pcie",
            self.pcie
                .as_ref()
                .map(PcieLink::words)
                .or_else(|| self.pcie_note.clone()),
        );
        if let Some(c) = &self.coalesce {
            put(
                "coalesce",
                Some(format!(
                    "rx-usecs {} rx-frames {} tx-usecs {} tx-frames {} adaptive-rx {} adaptive-tx {}",
                    c.rx_usecs,
                    c.rx_frames,
                    c.tx_usecs,
                    c.tx_frames,
                    on_off(c.adaptive_rx),
                    on_off(c.adaptive_tx)
                )),
            );
        }
        if let Some(r) = &self.rings {
            put(
                "rings",
                Some(format!(
                    "rx {} of {}, tx {} of {}",
                    r.rx, r.rx_max, r.tx, r.tx_max
                )),
            );
        }
        if let Some(c) = &self.channels {
            put(
                "channels",
                Some(format!(
                    "combined {} of {}, rx {}, tx {}, other {}",
                    c.combined, c.max_combined, c.rx, c.tx, c.other
                )),
            );
        }
        for (name, on) in &self.features {
            let fixed = self.fixed_features.contains(name);
            let v = format!("{}{}", on_off(*on), if fixed { " [fixed]" } else { "" });
            out.push((format!("feature {name}"), v));
        }
        out
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// What the host counted on one side while a test ran.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostActivity {
    /// Which end: `local`, or a lab node's `NODE:IFACE`.
    pub role: String,
    /// The interface whose interrupts were counted.
    pub interface: String,
    /// Interrupts on the interface's own IRQ lines (`/proc/interrupts`); `None` when it
    /// has none (a virtual device: its work runs as softirqs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqs: Option<u64>,
    /// NET_RX softirqs on all CPUs (`/proc/softirqs`).
    pub net_rx_softirqs: u64,
    /// CPU busy, % of all CPUs of the host (`/proc/stat`).
    pub cpu_busy_percent: f64,
    /// Seconds the counters cover.
    pub seconds: f64,
}

/// The host's CPU load while a test ran (`/proc/stat`), whatever ran on it: the test's own
/// processes, a lab's devices (relays, impairment stages, the kernel's forwarding and
/// shaping softirqs) and anything else.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostLoad {
    /// CPU busy, % of all CPUs of the host.
    pub cpu_busy_percent: f64,
    /// The host's CPUs.
    pub cpus: u32,
    /// Seconds the load covers.
    pub seconds: f64,
}

impl HostLoad {
    /// From this share of all CPUs on, the host is saturated.
    pub const SATURATED_PERCENT: f64 = 90.0;

    /// The note a figure measured on a saturated host carries; `None` below
    /// [`Self::SATURATED_PERCENT`].
    pub fn note(&self) -> Option<String> {
        (self.cpu_busy_percent >= Self::SATURATED_PERCENT).then(|| {
            format!(
                "the host's {} CPUs were {:.0} % busy during the test (its own processes and the lab's devices included): a figure the host limited reads here as the network's",
                self.cpus, self.cpu_busy_percent
            )
        })
    }
}

/// The NIC matrix: one block-size sweep per MTU and offload combination.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NicMatrix {
    /// The interfaces that were set, as `role=IFACE`.
    pub interfaces: Vec<String>,
    /// How sizes and rates are written: `si` (MByte/s = 10^6 bytes/s) or `netio` (netio
    /// 1.33: powers of two, 32k = 32,767 bytes).
    pub units: String,
    /// Every combination, in the order run.
    pub cells: Vec<NicCell>,
    /// The MTU whose sweeps had the highest mean Tx + Rx rate (with more than one MTU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_mtu: Option<u32>,
    /// How the best MTU was decided: one run's, or over repeated runs by the intervals of
    /// each MTU's median (and "no significant difference" when they overlap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_mtu_basis: Option<String>,
}

impl NicMatrix {
    /// The best MTU's basis as a parenthesis after it (` (one run: ...)`), or nothing.
    pub fn basis_words(&self) -> String {
        self.best_mtu_basis
            .as_deref()
            .map(|b| format!(" ({b})"))
            .unwrap_or_default()
    }
}

/// One combination of the NIC matrix and its sweep.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NicCell {
    /// `mtu 9000, rx-checksum off`.
    pub label: String,
    /// The MTU set, when the matrix sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// The features set, by kernel name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, bool>,
    /// The sweep.
    pub rows: Vec<BlocksizeRow>,
    /// What the host counted during the sweep, per side.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub activity: Vec<HostActivity>,
    /// Why the combination has no sweep (a setting the driver refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl NicCell {
    /// Mean of Tx and Rx over the sweep, MByte/s (10^6 bytes/s); `None` without rows.
    pub fn mean_mbyte_s(&self) -> Option<f64> {
        let n = self.rows.len() as f64;
        (n > 0.0).then(|| {
            self.rows
                .iter()
                .map(|r| (r.tx_mbyte_s + r.rx_mbyte_s) / 2.0)
                .sum::<f64>()
                / n
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn pcie_links_read_in_words() {
        let l = PcieLink {
            current_gts: 8.0,
            current_width: 1,
            max_gts: 16.0,
            max_width: 1,
        };
        assert_eq!(l.words(), "Gen3 x1 of Gen4 x1");
        assert!(l.degraded());
        let full = PcieLink {
            current_gts: 16.0,
            max_gts: 16.0,
            ..l
        };
        assert!(!full.degraded());
        assert_eq!(PcieLink::generation(2.5), Some(1));
        assert_eq!(PcieLink::generation(3.0), None);
    }

    #[test]
    fn facts_name_every_setting() {
        let s = InterfaceState {
            name: "eth0".into(),
            driver: Some("r8169".into()),
            mtu: Some(9000),
            features: [("rx-checksum".to_owned(), false)].into(),
            fixed_features: vec!["rx-checksum".into()],
            pcie_note: Some("not a PCIe device".into()),
            ..Default::default()
        };
        let f = s.facts();
        assert!(f.contains(&("mtu".into(), "9000".into())), "{f:?}");
        assert!(f.contains(&("feature rx-checksum".into(), "off [fixed]".into())));
        assert!(f.contains(&("pcie".into(), "not a PCIe device".into())));
    }
}

#[cfg(test)]
mod host_load_test {
    use super::HostLoad;

    #[test]
    fn a_saturated_host_gives_its_figures_a_note() {
        let load = |p| HostLoad {
            cpu_busy_percent: p,
            cpus: 2,
            seconds: 3.0,
        };
        assert_eq!(load(89.9).note(), None);
        let note = load(97.4).note().expect("saturated");
        assert!(
            note.starts_with("the host's 2 CPUs were 97 % busy"),
            "{note}"
        );
    }
}
