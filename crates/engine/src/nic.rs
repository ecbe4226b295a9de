//! What an interface's driver says about it, and its settings, through the kernel's
//! ethtool interface and sysfs (no `ethtool` program): driver, firmware, link, MTU, every
//! feature by its kernel name, interrupt coalescing, rings, channels and the PCIe link
//! ([`state`]); setting the MTU and features ([`set_mtu`], [`set_feature`]); and what the
//! host counted while a test ran: the interface's interrupts, NET_RX softirqs and CPU
//! ([`ActivityProbe`]).
//!
//! Interface calls act in the calling thread's network namespace; run them inside
//! [`crate::frameio::in_netns`] for a lab's node. /proc and the PCI tree of sysfs are the
//! host's whatever the namespace, so the device is found by its bus address, never by a
//! name another namespace may also use.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use model::results::nic::{Channels, Coalesce, HostActivity, InterfaceState, PcieLink, Rings};

use model::clock::Clock;

use crate::clock::RealClock;
use crate::sys::ethtool;
use model::results::nic::HostLoad;

/// What `ethtool -i` and `ethtool -k` would say, as far as a report needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Driver name (`veth`, `r8169`), when the driver gives one.
    pub driver: Option<String>,
    /// Link speed in Mbit/s, when the driver knows it.
    pub speed_mbps: Option<u64>,
    /// The offloads that are on, by their `ethtool -k` names.
    pub offloads_on: Vec<String>,
}

/// The facts of interface `ifname`; a fact the driver does not answer is left out.
///
/// # Errors
/// No such interface (`ENODEV`), or no socket to ask with.
pub fn facts(ifname: &str) -> io::Result<Facts> {
    let s = ethtool::control_socket()?;
    let driver = match ethtool::driver(&s, ifname) {
        Ok(d) => Some(d).filter(|d| !d.is_empty()),
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Err(e),
        Err(_) => None,
    };
    let speed_mbps = ethtool::speed_mbps(&s, ifname)
        .ok()
        .flatten()
        .map(u64::from);
    let mut offloads_on: Vec<String> = ethtool::SWITCHES
        .iter()
        .filter(|(_, get, _)| ethtool::value(&s, ifname, *get, 0).is_ok_and(|v| v != 0))
        .map(|(name, _, _)| (*name).to_owned())
        .collect();
    let flags = ethtool::value(&s, ifname, ethtool::GFLAGS, 0).unwrap_or(0);
    if flags & ethtool::FLAG_LRO != 0 {
        offloads_on.push("large-receive-offload".into());
    }
    Ok(Facts {
        driver,
        speed_mbps,
        offloads_on,
    })
}

/// The offloads a user-space stage on the path needs off: transmit checksums, TCP and
/// generic segmentation (`ethtool -K IFACE tx off tso off gso off`), so frames leave whole
/// and with their checksums filled in.
pub const STAGE_OFFLOADS: [&str; 3] = [
    "tx-checksumming",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
];

/// Turns the offloads `names` (their `ethtool -k` names) off on `ifname`.
///
/// # Errors
/// An unknown name, no such interface, or the driver refuses (`EOPNOTSUPP`, `EPERM`).
pub fn offloads_off(ifname: &str, names: &[&str]) -> io::Result<()> {
    let s = ethtool::control_socket()?;
    for name in names {
        let Some((_, _, set)) = ethtool::SWITCHES.iter().find(|(n, _, _)| n == name) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no offload named '{name}'"),
            ));
        };
        ethtool::value(&s, ifname, *set, 0)
            .map_err(|e| io::Error::new(e.kind(), format!("{ifname}: {name} off: {e}")))?;
    }
    Ok(())
}

/// Where sysfs keeps PCI devices, by bus address.
const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// The ethtool short and long names (`ethtool -K IFACE lro off`, `ethtool -k`'s
/// `large-receive-offload`) of features with one kernel name.
const ALIASES: [(&str, &str); 18] = [
    ("rx", "rx-checksum"),
    ("rx-checksumming", "rx-checksum"),
    ("sg", "tx-scatter-gather"),
    ("scatter-gather", "tx-scatter-gather"),
    ("gso", "tx-generic-segmentation"),
    ("generic-segmentation-offload", "tx-generic-segmentation"),
    ("gro", "rx-gro"),
    ("generic-receive-offload", "rx-gro"),
    ("lro", "rx-lro"),
    ("large-receive-offload", "rx-lro"),
    ("rxvlan", "rx-vlan-hw-parse"),
    ("rx-vlan-offload", "rx-vlan-hw-parse"),
    ("rx-vlan-hw", "rx-vlan-hw-parse"),
    ("txvlan", "tx-vlan-hw-insert"),
    ("tx-vlan-offload", "tx-vlan-hw-insert"),
    ("tx-vlan-hw", "tx-vlan-hw-insert"),
    ("ntuple", "rx-ntuple-filter"),
    ("rxhash", "rx-hashing"),
];

/// ethtool's names that stand for several kernel features, as `ethtool -K IFACE tx off`
/// takes them (ethtool's `off_flag_def`: `tx` is the kernel's `NETIF_F_CSUM_MASK`, `tso`
/// `NETIF_F_ALL_TSO`): the name `ethtool -k` prints, its short name, and the members.
const GROUPS: [(&str, &str, &[&str]); 2] = [
    (
        "tx-checksumming",
        "tx",
        &[
            "tx-checksum-ipv4",
            "tx-checksum-ip-generic",
            "tx-checksum-ipv6",
            "tx-checksum-fcoe-crc",
            "tx-checksum-sctp",
        ],
    ),
    (
        "tcp-segmentation-offload",
        "tso",
        &[
            "tx-tcp-segmentation",
            "tx-tcp-ecn-segmentation",
            "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation",
        ],
    ),
];

/// The kernel's name of a feature given by its kernel name or an ethtool alias; for one of
/// ethtool's groups (`tx`, `tso`), the group's name as `ethtool -k` prints it.
pub fn feature_name(name: &str) -> &str {
    if let Some((group, _, _)) = GROUPS.iter().find(|(g, a, _)| *g == name || *a == name) {
        return group;
    }
    ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, k)| k)
}

/// The kernel features `name` stands for: a group's members, or the one feature.
pub fn feature_members(name: &str) -> Vec<&str> {
    let name = feature_name(name);
    GROUPS
        .iter()
        .find(|(g, _, _)| *g == name)
        .map_or_else(|| vec![name], |(_, _, m)| m.to_vec())
}

/// Whether an interface with `features` (kernel names) has feature `name` (kernel name,
/// alias or group: a group when it has one of its members).
pub fn has_feature(features: &BTreeMap<String, bool>, name: &str) -> bool {
    feature_members(name)
        .iter()
        .any(|m| features.contains_key(*m))
}

/// Everything [`InterfaceState`] holds about `ifname`, as `role`; facts the driver does not
/// answer are left out.
///
/// # Errors
/// No such interface, or no socket to ask with.
pub fn state(role: &str, ifname: &str) -> io::Result<InterfaceState> {
    let s = ethtool::control_socket()?;
    let mtu = ethtool::mtu(&s, ifname)?;
    let info = ethtool::driver_info(&s, ifname).unwrap_or_default();
    let (speed, duplex) = ethtool::link(&s, ifname).unwrap_or((None, None));
    let some = |x: &str| Some(x.to_owned()).filter(|x| !x.is_empty() && x != "N/A");
    let features = ethtool::features(&s, ifname).unwrap_or_default();
    let (pcie, pcie_note) = match pcie_address(&info.bus_info) {
        Some(bus) => match pcie_link(&Path::new(PCI_DEVICES).join(bus)) {
            Some(l) => (Some(l), None),
            None => (
                None,
                Some(format!("PCI device {bus}: no PCIe link in sysfs")),
            ),
        },
        None => (None, Some("not a PCIe device".to_owned())),
    };
    Ok(InterfaceState {
        role: role.to_owned(),
        name: ifname.to_owned(),
        driver: some(&info.driver),
        driver_version: some(&info.version),
        firmware: some(&info.firmware),
        bus_info: some(&info.bus_info),
        speed_mbps: speed.map(u64::from),
        duplex: duplex.map(str::to_owned),
        mtu: Some(mtu),
        fixed_features: features
            .iter()
            .filter(|f| !f.changeable)
            .map(|f| f.name.clone())
            .collect(),
        features: features.into_iter().map(|f| (f.name, f.on)).collect(),
        coalesce: ethtool::coalesce(&s, ifname).ok().map(|c| Coalesce {
            rx_usecs: c[0],
            rx_frames: c[1],
            tx_usecs: c[2],
            tx_frames: c[3],
            adaptive_rx: c[4] != 0,
            adaptive_tx: c[5] != 0,
        }),
        rings: ethtool::rings(&s, ifname).ok().map(|r| Rings {
            rx: r[0],
            rx_max: r[1],
            tx: r[2],
            tx_max: r[3],
        }),
        channels: ethtool::channels(&s, ifname).ok().map(|c| Channels {
            rx: c[0],
            tx: c[1],
            other: c[2],
            combined: c[3],
            max_combined: c[4],
        }),
        pcie,
        pcie_note,
    })
}

/// A PCI bus address (`0000:03:00.0`), as drivers of PCI devices give it.
fn pcie_address(bus: &str) -> Option<&str> {
    let b = bus.as_bytes();
    let ok = b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && bus
            .chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit());
    ok.then_some(bus)
}

/// The PCIe link from a PCI device's sysfs directory (`current_link_speed` reads
/// `8.0 GT/s PCIe`, `current_link_width` `1`); `None` when the device has none.
pub fn pcie_link(dir: &Path) -> Option<PcieLink> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let gts = |f: &str| -> Option<f64> {
        read(f)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
            .filter(|v: &f64| *v > 0.0)
    };
    let width = |f: &str| -> Option<u32> { read(f)?.trim().parse().ok().filter(|w| *w > 0) };
    Some(PcieLink {
        current_gts: gts("current_link_speed")?,
        current_width: width("current_link_width")?,
        max_gts: gts("max_link_speed")?,
        max_width: width("max_link_width")?,
    })
}

/// The interface that holds local address `ip` (where a connection to it arrived).
///
/// # Errors
/// The kernel's interface list cannot be read.
pub fn interface_with_address(ip: std::net::IpAddr) -> io::Result<Option<String>> {
    crate::sys::interface_with_address(ip)
}

/// Sets the MTU of `ifname`.
///
/// # Errors
/// No such interface, not permitted, or the driver refuses the size (`EINVAL`).
pub fn set_mtu(ifname: &str, mtu: u32) -> io::Result<()> {
    let s = ethtool::control_socket()?;
    ethtool::set_mtu(&s, ifname, mtu)
        .map_err(|e| io::Error::new(e.kind(), format!("{ifname}: MTU {mtu}: {e}")))
}

/// The MTU of `ifname`.
///
/// # Errors
/// No such interface.
pub fn mtu(ifname: &str) -> io::Result<u32> {
    ethtool::mtu(&ethtool::control_socket()?, ifname)
}

/// Turns feature `name` (kernel name or ethtool alias) on or off on `ifname` and checks
/// that it took.
///
/// # Errors
/// No such feature, one the driver does not let change, or a refusal.
pub fn set_feature(ifname: &str, name: &str, on: bool) -> io::Result<()> {
    let s = ethtool::control_socket()?;
    let members = feature_members(name);
    let now = ethtool::features(&s, ifname)?;
    let here: Vec<&ethtool::Feature> = now
        .iter()
        .filter(|f| members.contains(&f.name.as_str()))
        .collect();
    if here.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{ifname} has no feature '{name}' (kernel names as in /usr/include/linux/netdev_features.h, such as rx-checksum, rx-lro, tx-checksum-ip-generic, or ethtool's: rx, tx, sg, tso, gso, gro, lro, rxvlan, txvlan, ntuple, rxhash)"),
        ));
    }
    let word = if on { "on" } else { "off" };
    // A group, as ethtool sets it: every member the driver lets change; those it does not
    // stay as they are, unless none could change.
    let to_set: Vec<&str> = here
        .iter()
        .filter(|f| f.on != on && f.changeable)
        .map(|f| f.name.as_str())
        .collect();
    let fixed: Vec<String> = here
        .iter()
        .filter(|f| f.on != on && !f.changeable)
        .map(|f| format!("{} fixed {}", f.name, if f.on { "on" } else { "off" }))
        .collect();
    if to_set.is_empty() {
        if fixed.is_empty() || here.iter().any(|f| f.changeable) {
            return Ok(());
        }
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{ifname}: the driver does not let {} change ({})",
                feature_name(name),
                fixed.join(", ")
            ),
        ));
    }
    for kernel in &to_set {
        ethtool::set_feature(&s, ifname, kernel, on)
            .map_err(|e| io::Error::new(e.kind(), format!("{ifname}: {kernel} {word}: {e}")))?;
    }
    let after = ethtool::features(&s, ifname)?;
    let kept: Vec<&str> = to_set
        .iter()
        .copied()
        .filter(|k| !after.iter().any(|f| f.name == *k && f.on == on))
        .collect();
    if kept.is_empty() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{ifname}: {} {word} was asked for but the driver kept it (a feature it depends on is off?)",
            kept.join(", ")
        )))
    }
}

/// What the host counted from [`ActivityProbe::start`] to [`ActivityProbe::finish`].
#[derive(Debug, Clone)]
pub struct ActivityProbe {
    role: String,
    interface: String,
    /// The device's IRQ lines and bus name, when it has any.
    lines: Option<(Vec<u32>, String)>,
    irqs: u64,
    net_rx: u64,
    cpu: (u64, u64),
    clock: RealClock,
}

impl ActivityProbe {
    /// Reads the counters now. Call it in the interface's namespace (the bus address comes
    /// from its driver).
    pub fn start(role: &str, ifname: &str) -> Self {
        let bus = ethtool::control_socket()
            .and_then(|s| ethtool::driver_info(&s, ifname))
            .map(|i| i.bus_info)
            .unwrap_or_default();
        let lines = pcie_address(&bus).map(|b| {
            let dir = Path::new(PCI_DEVICES).join(b).join("msi_irqs");
            let mut irqs: Vec<u32> = std::fs::read_dir(dir)
                .map(|d| {
                    d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            if let Some(legacy) =
                std::fs::read_to_string(Path::new(PCI_DEVICES).join(b).join("irq"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .filter(|&i: &u32| i > 0)
            {
                irqs.push(legacy);
            }
            (irqs, ifname.to_owned())
        });
        let mut p = Self {
            role: role.to_owned(),
            interface: ifname.to_owned(),
            lines,
            irqs: 0,
            net_rx: 0,
            cpu: (0, 0),
            clock: RealClock::new(),
        };
        (p.irqs, p.net_rx, p.cpu) = p.read();
        p
    }

    fn read(&self) -> (u64, u64, (u64, u64)) {
        let text = |f: &str| std::fs::read_to_string(f).unwrap_or_default();
        let irqs = self.lines.as_ref().map_or(0, |(lines, name)| {
            interrupts(&text("/proc/interrupts"), lines, name)
        });
        let net_rx = softirqs(&text("/proc/softirqs"), "NET_RX");
        let cpu = cpu_busy(&text("/proc/stat"));
        (irqs, net_rx, cpu)
    }

    /// The counts since [`Self::start`].
    pub fn finish(self) -> HostActivity {
        let (irqs, net_rx, cpu) = self.read();
        HostActivity {
            role: self.role,
            interface: self.interface,
            irqs: self.lines.map(|_| irqs.saturating_sub(self.irqs)),
            net_rx_softirqs: net_rx.saturating_sub(self.net_rx),
            cpu_busy_percent: busy_percent(self.cpu, cpu),
            seconds: self.clock.mono().as_secs_f64(),
        }
    }
}

/// The host's CPU load over a span, whatever ran on it (`/proc/stat`): started before a
/// test, finished after it.
#[derive(Debug)]
pub struct LoadProbe {
    cpu: (u64, u64),
    clock: RealClock,
}

impl LoadProbe {
    /// Reads the host's CPU time now.
    pub fn start() -> Self {
        Self {
            cpu: cpu_busy(&std::fs::read_to_string("/proc/stat").unwrap_or_default()),
            clock: RealClock::new(),
        }
    }

    /// The load since [`Self::start`].
    pub fn finish(self) -> HostLoad {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        HostLoad {
            cpu_busy_percent: busy_percent(self.cpu, cpu_busy(&text)),
            cpus: cpu_count(&text),
            seconds: self.clock.mono().as_secs_f64(),
        }
    }
}

/// Busy CPU time in % of all CPU time between two readings of [`cpu_busy`].
fn busy_percent(before: (u64, u64), after: (u64, u64)) -> f64 {
    let total = after.1.saturating_sub(before.1);
    if total == 0 {
        0.0
    } else {
        after.0.saturating_sub(before.0) as f64 * 100.0 / total as f64
    }
}

/// The CPUs of `/proc/stat` text (its `cpuN` rows).
pub fn cpu_count(text: &str) -> u32 {
    let n = text
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Interrupts counted on all CPUs for the IRQ lines `lines`, and for lines whose action is
/// named after interface `name` (`eth0`, `eth0-rx-0`), in `/proc/interrupts` text.
pub fn interrupts(text: &str, lines: &[u32], name: &str) -> u64 {
    let mut rows = text.lines();
    let cpus = rows.next().map_or(0, |h| h.split_whitespace().count());
    rows.filter_map(|row| {
        let (irq, rest) = row.split_once(':')?;
        let irq: Option<u32> = irq.trim().parse().ok();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let named = fields[cpus.min(fields.len())..]
            .iter()
            .any(|f| *f == name || f.strip_prefix(name).is_some_and(|r| r.starts_with('-')));
        (irq.is_some_and(|i| lines.contains(&i)) || named).then(|| {
            fields
                .iter()
                .take(cpus)
                .filter_map(|c| c.parse::<u64>().ok())
                .sum::<u64>()
        })
    })
    .sum()
}

/// The softirq `kind` (`NET_RX`) summed over all CPUs, from `/proc/softirqs` text.
pub fn softirqs(text: &str, kind: &str) -> u64 {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(kind)?.strip_prefix(':'))
        .map_or(0, |rest| {
            rest.split_whitespace()
                .filter_map(|c| c.parse::<u64>().ok())
                .sum()
        })
}

/// (busy, total) CPU time in ticks over all CPUs, from `/proc/stat` text (busy: all but
/// idle and iowait).
pub fn cpu_busy(text: &str) -> (u64, u64) {
    let Some(row) = text.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    let v: Vec<u64> = row
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total.saturating_sub(idle), total)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_host_load_counts_every_cpu_and_its_busy_share() {
        let before = "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0 0 0\nintr 1\n";
        let after = "cpu  400 0 200 900 0 0 0 0 0 0\ncpu0 200 0 100 450 0 0 0 0 0 0\ncpu1 200 0 100 450 0 0 0 0 0 0\n";
        assert_eq!(cpu_count(after), 2);
        assert_eq!(cpu_count("cpu  1 2 3\n"), 0);
        // 400 busy ticks of 500: 80 %.
        let p = busy_percent(cpu_busy(before), cpu_busy(after));
        assert!((p - 80.0).abs() < 1e-9, "{p}");
        assert_eq!(busy_percent((5, 10), (5, 10)), 0.0, "no time passed");
    }

    #[test]
    fn proc_counters_parse() {
        let interrupts_text = "           CPU0       CPU1\n  \
             16:          5          7   IO-APIC   16-fasteoi   i801_smbus\n \
             130:        100        200   PCI-MSIX-0000:03:00.0    0-edge      eth0-rx-0\n \
             131:         10         20   PCI-MSIX-0000:03:00.0    1-edge      eth0-tx-0\n \
             132:          1          2   PCI-MSIX-0000:04:00.0    0-edge      eth01-rx-0\n \
             NMI:          3          4   Non-maskable interrupts\n";
        assert_eq!(interrupts(interrupts_text, &[], "eth0"), 330);
        assert_eq!(interrupts(interrupts_text, &[16], "nothing"), 12);
        assert_eq!(interrupts(interrupts_text, &[], "wb0"), 0);
        let soft = "                    CPU0       CPU1\n          HI:          0          1\n      NET_TX:          5          6\n      NET_RX:     123456        544\n";
        assert_eq!(softirqs(soft, "NET_RX"), 124_000);
        assert_eq!(softirqs(soft, "BLOCK"), 0);
        let stat = "cpu  100 5 50 800 20 3 7 0 0 0\ncpu0 50 2 25 400 10 1 3 0 0 0\n";
        assert_eq!(cpu_busy(stat), (165, 985));
        assert_eq!(cpu_busy(""), (0, 0));
    }

    #[test]
    fn pcie_links_parse_from_sysfs_files() {
        let dir = std::env::temp_dir().join(format!("wb-pcie-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (f, v) in [
            ("current_link_speed", "8.0 GT/s PCIe\n"),
            ("current_link_width", "1\n"),
            ("max_link_speed", "16.0 GT/s PCIe\n"),
            ("max_link_width", "1\n"),
        ] {
            std::fs::write(dir.join(f), v).unwrap();
        }
        let l = pcie_link(&dir).unwrap();
        assert_eq!(l.words(), "Gen3 x1 of Gen4 x1");
        std::fs::write(dir.join("current_link_speed"), "Unknown\n").unwrap();
        assert_eq!(pcie_link(&dir), None);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(pcie_address("0000:03:00.0"), Some("0000:03:00.0"));
        assert_eq!(pcie_address(""), None);
        assert_eq!(pcie_address("usb-0000:00:14.0-1"), None);
    }

    #[test]
    fn the_interface_of_an_address() {
        let lo = interface_with_address("127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(lo.as_deref(), Some("lo"));
        let none = interface_with_address("198.51.100.77".parse().unwrap()).unwrap();
        assert_eq!(none, None);
    }

    #[test]
    fn loopback_state_names_every_feature_and_is_not_pcie() {
        let s = state("local", "lo").unwrap();
        assert_eq!(s.features.get("rx-checksum"), Some(&true), "{s:?}");
        assert!(s
            .fixed_features
            .iter()
            .any(|f| f == "tx-checksum-ip-generic"));
        assert!(s.mtu.is_some_and(|m| m >= 1500));
        assert_eq!(s.pcie_note.as_deref(), Some("not a PCIe device"));
        assert!(state("local", "no-such-if0").is_err());
        assert_eq!(feature_name("lro"), "rx-lro");
        assert_eq!(feature_name("rx-checksum"), "rx-checksum");
        // ethtool's groups: one name, every member the interface has.
        assert_eq!(feature_name("tx"), "tx-checksumming");
        assert_eq!(feature_name("tso"), "tcp-segmentation-offload");
        assert!(feature_members("tx").contains(&"tx-checksum-ip-generic"));
        assert_eq!(feature_members("gro"), ["rx-gro"]);
        assert!(has_feature(&s.features, "tx-checksumming"));
        assert!(!has_feature(&s.features, "no-such-feature"));
        // Loopback's checksum feature cannot change: the refusal says so.
        let e = set_feature("lo", "tx-checksum-ip-generic", false).unwrap_err();
        assert!(e.to_string().contains("does not let"), "{e}");
        let e = set_feature("lo", "tx", false).unwrap_err();
        assert!(
            e.to_string().contains("tx-checksum-ip-generic fixed on"),
            "{e}"
        );
        let a = ActivityProbe::start("local", "lo").finish();
        assert_eq!(a.irqs, None, "loopback has no IRQ lines");
        assert!(a.cpu_busy_percent >= 0.0 && a.cpu_busy_percent <= 100.0);
    }

    #[test]
    fn loopback_has_facts_and_unknown_names_are_errors() {
        let f = facts("lo").unwrap();
        assert!(
            f.offloads_on.iter().any(|o| o == "tx-checksumming"),
            "{f:?}"
        );
        assert!(facts("no-such-if0").is_err());
        let e = offloads_off("lo", &["warp-drive"]).unwrap_err();
        assert!(e.to_string().contains("warp-drive"), "{e}");
    }
}
