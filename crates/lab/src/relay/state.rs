//! Running relays seen from outside: where their state files are, whether they still run,
//! and what their counters say about a test that ran between two snapshots.
//!
//! There is one counter-delta function ([`Snapshot::since`]); the per-path figures of a
//! `frer` lab ([`frer_paths`]) and the merge relay's frames per frame delivered
//! ([`frames_per_delivered`]) are read from its result.

use std::path::{Path, PathBuf};

use model::results::campaign::FrerPathRow;
use model::results::relay::RelayReport;
use serde_json::Value;

use super::core::RelayCounters;
use super::process::RelayState;
use crate::managed::{run_dir, RUN_ROOT};

/// Where standalone relays (`wirebench frer relay --name NAME`) publish their counters.
pub const STANDALONE_DIR: &str = "/run/wirebench/frer";

/// The state file of a standalone relay named `name`.
pub fn standalone_state(name: &str) -> PathBuf {
    Path::new(STANDALONE_DIR).join(format!("{name}.json"))
}

/// The state file of the relay on `node` of lab `lab`.
pub fn lab_state(lab: &str, node: &str) -> PathBuf {
    run_dir(lab).join(format!("{node}.relay.json"))
}

fn files(dir: &Path, suffix: &str) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let stem = name.strip_suffix(suffix)?.to_owned();
                    Some((stem, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every relay state file as (label, path): standalone relays (unless `lab` is given),
/// then those of each lab (`LAB/NODE`), or of lab `lab` only.
pub fn state_files(lab: Option<&str>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if lab.is_none() {
        out.extend(files(Path::new(STANDALONE_DIR), ".json"));
    }
    let labs: Vec<String> = match lab {
        Some(l) => vec![l.to_owned()],
        None => files(Path::new(RUN_ROOT), "")
            .into_iter()
            .map(|(l, _)| l)
            .collect(),
    };
    for l in labs {
        for (node, path) in files(&run_dir(&l), ".relay.json") {
            out.push((format!("{l}/{node}"), path));
        }
    }
    out
}

impl RelayState {
    /// The relay as `frer stats` shows it, under `label`.
    pub fn report(self, label: String) -> RelayReport {
        RelayReport {
            label,
            pid: self.pid,
            state: crate::lifecycle::liveness(self.running, self.pid, self.stopped.as_ref()),
            uptime_s: self.uptime_s,
            counters: self.counters,
            latent_alarms: self.latent_alarms,
            data_path: self.data_path,
        }
    }
}

/// A relay's counters at one moment, with the process that counted them.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The relay's process.
    pub pid: u32,
    /// Its counters.
    pub counters: RelayCounters,
}

impl Snapshot {
    /// The relay on `node` of lab `lab` now; `None` when it publishes no readable state.
    pub fn of(lab: &str, node: &str) -> Option<Snapshot> {
        let s = RelayState::read(&lab_state(lab, node)).ok()?;
        Some(Snapshot {
            pid: s.pid,
            counters: s.counters,
        })
    }

    /// The relay on `node` of lab `lab` once it has published what it counted until now:
    /// waits two publication periods (the relays publish every 200 ms), then reads.
    pub fn settled(lab: &str, node: &str) -> Option<Snapshot> {
        std::thread::sleep(2 * super::process::PUBLISH_EVERY);
        Self::of(lab, node)
    }

    /// What the relay counted since `earlier`: every counter's increase, names and
    /// settings as now. `None` when another process counted (the relay restarted, so its
    /// counters started again), the streams or ports changed, or a counter went
    /// backwards: a wrapped figure is never given.
    pub fn since(&self, earlier: &Snapshot) -> Option<RelayCounters> {
        if self.pid != earlier.pid {
            return None;
        }
        let now = serde_json::to_value(&self.counters).ok()?;
        let before = serde_json::to_value(&earlier.counters).ok()?;
        serde_json::from_value(delta(&now, &before)?).ok()
    }
}

/// `now − before` for every number of two documents of the same shape; other values as
/// in `now`. `None` where the shapes differ or a number decreased.
fn delta(now: &Value, before: &Value) -> Option<Value> {
    Some(match (now, before) {
        (Value::Number(a), Value::Number(b)) => Value::from(a.as_u64()?.checked_sub(b.as_u64()?)?),
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => Value::Array(
            a.iter()
                .zip(b)
                .map(|(x, y)| delta(x, y))
                .collect::<Option<_>>()?,
        ),
        (Value::Object(a), Value::Object(b)) => Value::Object(
            a.iter()
                .map(|(k, x)| match b.get(k) {
                    Some(y) => Some((k.clone(), delta(x, y)?)),
                    None => Some((k.clone(), x.clone())),
                })
                .collect::<Option<_>>()?,
        ),
        (Value::String(a), Value::String(b)) if a != b => return None,
        (x, _) => x.clone(),
    })
}

/// What each path carried, per stream one relay replicates and the other eliminates, from
/// the counts of the two relays of a `frer` lab during a test ([`Snapshot::since`] of the
/// split and the merge relay): frames replicated onto the path, frames that arrived over
/// it, how many it delivered first, and how many the eliminator passed in all. Streams
/// that sent nothing are left out.
pub fn frer_paths(split: &RelayCounters, merge: &RelayCounters) -> Vec<FrerPathRow> {
    let mut out = Vec::new();
    // Split replicates toward the listener and merge eliminates; the other way round back.
    for (replicating, eliminating) in [(split, merge), (merge, split)] {
        for st in &replicating.streams {
            let Some(rep) = &st.replication else { continue };
            let Some(elim) = eliminating
                .streams
                .iter()
                .find(|s| s.name == st.name)
                .and_then(|s| s.elimination.as_ref())
            else {
                continue;
            };
            let passed = elim.paths.iter().map(|p| p.passed).sum();
            out.extend(elim.paths.iter().map(|p| FrerPathRow {
                stream: st.name.clone(),
                path: p.port.clone(),
                sent: rep.frames,
                received: p.received,
                first: p.passed,
                passed,
            }));
        }
    }
    out.retain(|r| r.sent > 0);
    out
}

/// Frames the merge relay received on its path ports (`eth1`, `eth2`) per frame it
/// delivered to the listener (`eth0`), from its counts during a test; `None` when it
/// delivered nothing or a port is missing.
pub fn frames_per_delivered(merge: &RelayCounters) -> Option<f64> {
    let port = |n: &str| merge.ports.iter().find(|p| p.name == n);
    let inbound: u64 = ["eth1", "eth2"]
        .iter()
        .filter_map(|n| port(n))
        .map(|p| p.received)
        .sum();
    let delivered = port("eth0")?.sent;
    (delivered > 0).then(|| inbound as f64 / delivered as f64)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::relay::core::{
        EliminationCounters, PathCounters, PortCounters, ReplicationCounters, StreamCounters,
    };

    fn port(name: &str, received: u64, sent: u64) -> PortCounters {
        PortCounters {
            name: name.into(),
            received,
            sent,
            ..PortCounters::default()
        }
    }

    fn path(port: &str, received: u64, passed: u64) -> PathCounters {
        PathCounters {
            port: port.into(),
            received,
            passed,
            individual_discarded: 0,
        }
    }

    /// Split replicated `frames`; merge received `a`/`b` on its paths and passed `pa`/`pb`
    /// first from each.
    fn lab(frames: u64, (a, pa): (u64, u64), (b, pb): (u64, u64)) -> [RelayCounters; 2] {
        let split = RelayCounters {
            ports: vec![port("eth0", frames, 0)],
            streams: vec![StreamCounters {
                name: "to-listener".into(),
                replication: Some(ReplicationCounters {
                    from: "eth0".into(),
                    to: vec!["eth1".into(), "eth2".into()],
                    frames,
                    seq_gen_resets: 0,
                }),
                elimination: None,
            }],
            ..RelayCounters::default()
        };
        let merge = RelayCounters {
            ports: vec![
                port("eth1", a, 0),
                port("eth2", b, 0),
                port("eth0", 0, pa + pb),
            ],
            streams: vec![StreamCounters {
                name: "to-listener".into(),
                replication: None,
                elimination: Some(EliminationCounters {
                    to: "eth0".into(),
                    paths: vec![path("eth1", a, pa), path("eth2", b, pb)],
                    ..EliminationCounters::default()
                }),
            }],
            ..RelayCounters::default()
        };
        [split, merge]
    }

    fn snap(pid: u32, c: &RelayCounters) -> Snapshot {
        Snapshot {
            pid,
            counters: c.clone(),
        }
    }

    #[test]
    fn paths_and_work_come_from_the_delta_of_two_snapshots() {
        let [s0, m0] = lab(100, (95, 60), (97, 35));
        let [s1, m1] = lab(1100, (1045, 600), (1047, 495));
        let split = snap(7, &s1).since(&snap(7, &s0)).unwrap();
        let merge = snap(8, &m1).since(&snap(8, &m0)).unwrap();
        let rows = frer_paths(&split, &merge);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].sent,
                rows[0].received,
                rows[0].first,
                rows[0].passed
            ),
            (1000, 950, 540, 1000)
        );
        assert_eq!((rows[1].path.as_str(), rows[1].received), ("eth2", 950));
        let per = frames_per_delivered(&merge).unwrap();
        assert!((per - 1.9).abs() < 1e-9, "{per}");
        assert_eq!(merge.streams[0].name, "to-listener", "names stay");
    }

    #[test]
    fn a_restart_or_a_counter_going_back_gives_no_figures() {
        let [s0, _] = lab(100, (95, 60), (97, 35));
        let [s1, _] = lab(50, (40, 20), (45, 20));
        assert!(
            snap(7, &s1).since(&snap(8, &s0)).is_none(),
            "another process"
        );
        assert!(
            snap(7, &s1).since(&snap(7, &s0)).is_none(),
            "went backwards"
        );
        let mut renamed = s0.clone();
        renamed.streams[0].name = "other".into();
        assert!(snap(7, &s0).since(&snap(7, &renamed)).is_none());
        // Nothing sent: no path rows, and no work figure.
        let [s, m] = lab(0, (0, 0), (0, 0));
        assert!(frer_paths(&s, &m).is_empty());
        assert_eq!(frames_per_delivered(&m), None);
    }
}
