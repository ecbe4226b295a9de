//! What a lab's own devices cost while a test runs through it: the CPU time of each relay
//! and impairment stage (its process from `/proc/PID/stat`; its BPF programs' run time,
//! which the fast path publishes in its state file) and the host's softirq time, read
//! before and after the test ([`CostProbe`]). Which labs a test runs through is found from
//! the namespaces of its ports and of the thread that runs it ([`labs_of`]).
//!
//! It does not find per-device kernel time of the shaper or the kernel's forwarding: both
//! run in softirqs on whatever CPU takes the frame, so only the host's total is given.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use model::clock::Clock;
use model::results::lab::{DeviceCost, LabCost, DEVICE_RELAY, DEVICE_STAGE};

use crate::lifecycle::Lab;
use crate::relay::process::RelayState;
use crate::relay::state::state_files;

/// Clock ticks per second of `/proc`'s CPU times (`USER_HZ`: 100 on every architecture
/// Linux gives user space, x86-64 and arm64 included).
const USER_HZ: f64 = 100.0;

/// The labs whose namespaces are among `namespaces` (`wb-LAB-NODE`) or hold the calling
/// thread, each once, sorted.
pub fn labs_of<'a>(namespaces: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = namespaces
        .into_iter()
        .filter_map(|ns| crate::naming::parse(ns).map(|(lab, _)| lab.to_owned()))
        .collect();
    out.extend(lab_of_this_thread());
    out.sort();
    out.dedup();
    out
}

/// The lab whose namespace the calling thread is in (a test run on a lab's talker), by the
/// namespace's identity (device and inode), not its name.
fn lab_of_this_thread() -> Option<String> {
    let own = std::fs::metadata("/proc/thread-self/ns/net").ok()?;
    let dir = std::fs::read_dir("/run/netns").ok()?;
    dir.filter_map(Result::ok).find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let (lab, _) = crate::naming::parse(&name)?;
        let m = std::fs::metadata(e.path()).ok()?;
        (m.ino() == own.ino() && m.dev() == own.dev()).then(|| lab.to_owned())
    })
}

/// One device as read at one moment.
#[derive(Debug, Clone, PartialEq)]
struct Reading {
    data_path: String,
    pid: u32,
    /// Its process's CPU time, seconds; `None` when the process is gone.
    process_s: Option<f64>,
    kernel_s: Option<f64>,
}

/// Key of a device: (lab, node, device kind).
type Key = (String, String, &'static str);

/// The devices of `labs` now.
fn read_devices(labs: &[String]) -> BTreeMap<Key, Reading> {
    let mut out = BTreeMap::new();
    for lab in labs {
        for (label, path) in state_files(Some(lab)) {
            let Ok(st) = RelayState::read(&path) else {
                continue;
            };
            let node = label.rsplit('/').next().unwrap_or(&label).to_owned();
            let r = Reading {
                process_s: process_cpu_s(st.pid),
                data_path: st.data_path,
                pid: st.pid,
                kernel_s: st.kernel_cpu_s,
            };
            out.insert((lab.clone(), node, DEVICE_RELAY), r);
        }
        for (node, st) in Lab::stage_states(lab) {
            let r = Reading {
                process_s: process_cpu_s(st.pid),
                data_path: st.data_path.clone(),
                pid: st.pid,
                kernel_s: st.kernel_cpu_s,
            };
            out.insert((lab.clone(), node, DEVICE_STAGE), r);
        }
    }
    out
}

/// CPU time (user and system) of process `pid`, seconds; `None` when it is gone.
fn process_cpu_s(pid: u32) -> Option<f64> {
    let text =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    parse_process_ticks(&text).map(|t| t as f64 / USER_HZ)
}

/// utime + stime (fields 14 and 15) of `/proc/PID/stat` text. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its last ')'.
fn parse_process_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) is index 11 here.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The host's softirq time (the `cpu` row's 7th value of `/proc/stat`), seconds.
fn host_softirq_s() -> f64 {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    parse_softirq_ticks(&text).unwrap_or(0) as f64 / USER_HZ
}

fn parse_softirq_ticks(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    line.split_whitespace().nth(7)?.parse().ok()
}

/// The lab's devices read before a test; [`CostProbe::finish`] reads them again.
#[derive(Debug)]
pub struct CostProbe {
    labs: Vec<String>,
    before: BTreeMap<Key, Reading>,
    softirq_s: f64,
    clock: engine::clock::RealClock,
}

impl CostProbe {
    /// Reads the devices of `labs` now; `None` without labs.
    pub fn start(labs: Vec<String>) -> Option<Self> {
        if labs.is_empty() {
            return None;
        }
        Some(Self {
            before: read_devices(&labs),
            labs,
            softirq_s: host_softirq_s(),
            clock: engine::clock::RealClock::new(),
        })
    }

    /// What each device used since [`Self::start`]. A device that started or restarted
    /// in between counts from zero; one that went is left out.
    pub fn finish(self) -> LabCost {
        let seconds = self.clock.mono().as_secs_f64();
        let after = read_devices(&self.labs);
        let mut devices = costs(&self.before, &after);
        for d in &mut devices {
            d.cpu_percent = d.share_of_cpu(seconds);
        }
        LabCost {
            labs: self.labs,
            seconds,
            devices,
            host_softirq_s: (host_softirq_s() - self.softirq_s).max(0.0),
        }
    }
}

/// The devices' use between two readings.
fn costs(before: &BTreeMap<Key, Reading>, after: &BTreeMap<Key, Reading>) -> Vec<DeviceCost> {
    after
        .iter()
        .filter_map(|((lab, node, device), a)| {
            let now = a.process_s?;
            let b = before.get(&(lab.clone(), node.clone(), *device));
            let same = b.filter(|b| b.pid == a.pid);
            let since = |x: Option<f64>, y: Option<f64>| match (x, y) {
                (Some(x), Some(y)) => Some((x - y).max(0.0)),
                (Some(x), None) => Some(x),
                (None, _) => None,
            };
            Some(DeviceCost {
                lab: lab.clone(),
                node: node.clone(),
                device: (*device).to_owned(),
                data_path: a.data_path.clone(),
                process_cpu_s: since(Some(now), same.and_then(|b| b.process_s)).unwrap_or(0.0),
                kernel_cpu_s: since(a.kernel_s, same.and_then(|b| b.kernel_s)),
                cpu_percent: 0.0,
            })
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn proc_stat_fields_are_counted_after_the_command_name() {
        let line =
            "4242 (relay (a) b) S 1 4242 4242 0 -1 4194560 120 0 0 0 250 37 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_process_ticks(line), Some(287));
        assert_eq!(parse_process_ticks("garbage"), None);
        assert_eq!(parse_process_ticks("1 (x) S 1 2"), None);
        let stat = "cpu  100 2 300 4000 5 6 77 0 0 0\ncpu0 50 1 150 2000 2 3 40 0 0 0\n";
        assert_eq!(parse_softirq_ticks(stat), Some(77));
        assert_eq!(parse_softirq_ticks("intr 1 2"), None);
    }

    fn reading(pid: u32, process: Option<f64>, kernel: Option<f64>) -> Reading {
        Reading {
            data_path: "kernel".into(),
            pid,
            process_s: process,
            kernel_s: kernel,
        }
    }

    #[test]
    fn a_device_counts_from_its_first_reading_and_a_restart_counts_from_zero() {
        let key = |node: &str| ("l".to_owned(), node.to_owned(), DEVICE_RELAY);
        let before = BTreeMap::from([
            (key("split"), reading(10, Some(1.0), Some(0.5))),
            (key("merge"), reading(11, Some(2.0), None)),
            (key("gone"), reading(12, Some(2.0), None)),
        ]);
        let after = BTreeMap::from([
            (key("split"), reading(10, Some(1.25), Some(0.75))),
            // Restarted: a new process, counted from zero.
            (key("merge"), reading(99, Some(0.5), None)),
            // Its process ended between the state file and /proc.
            (key("gone"), reading(12, None, None)),
            // Started during the test.
            (key("new"), reading(13, Some(0.1), Some(0.2))),
        ]);
        let c = costs(&before, &after);
        let by = |n: &str| c.iter().find(|d| d.node == n).cloned();
        let split = by("split").unwrap();
        assert!((split.process_cpu_s - 0.25).abs() < 1e-9);
        assert!((split.kernel_cpu_s.unwrap() - 0.25).abs() < 1e-9);
        assert!((by("merge").unwrap().process_cpu_s - 0.5).abs() < 1e-9);
        assert_eq!(by("merge").unwrap().kernel_cpu_s, None);
        assert!(by("gone").is_none());
        assert_eq!(by("new").unwrap().kernel_cpu_s, Some(0.2));
    }

    #[test]
    fn labs_are_read_from_namespace_names() {
        let labs = labs_of(["wb-dcf-talker", "wb-dcf-listener", "wb-x-dut", "other"]);
        assert!(labs.contains(&"dcf".to_owned()) && labs.contains(&"x".to_owned()));
        assert!(!labs.iter().any(|l| l == "other"));
    }
}
