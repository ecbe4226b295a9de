//! What a lab is, in words and rows: how to reach each node of a topology just built
//! ([`describe`]), and the labs that are up, read back from the namespaces, the shaper's
//! class counters, the relays' and the impairment stages' state files ([`status`]).
//!
//! It does not print: the binary lays out what it returns (`report` for the status).

use model::results::lab::{LabNode, LabStatus, ShaperClass, StageRow};

use crate::cmd::{Cmd, Runner};
use crate::impair::spec::ImpairSpec;
use crate::impair::stage::Mode;
use crate::lifecycle::{lab_namespaces, liveness, Lab};
use crate::relay::process::RelayState;
use crate::relay::state::state_files;
use crate::{naming, LabError, Topology};

/// A topology as built under a name: one row per interface (node, namespace, interface,
/// address) and one line per device it runs (shaper classes, impairment stages, relays).
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    /// `[node, namespace, interface, address]` per interface.
    pub interfaces: Vec<Vec<String>>,
    /// The devices, one line each (a shaper's classes indented under it).
    pub devices: Vec<String>,
}

/// A shaper on port `at` (`NODE PORT`) as `lab status` lists it: a plain FIFO in one line,
/// or its HTB classes and the default class.
fn shaper_lines(at: &str, sh: &crate::shaper::ShaperSpec) -> Vec<String> {
    if sh.class.is_empty() {
        let rate = sh.default.as_ref().map_or("?", |d| d.rate.as_str());
        return vec![format!(
            "egress on {at}: one FIFO at {rate} bit/s, no classes"
        )];
    }
    let mut out = vec![format!("shaper on {at}, HTB classes:")];
    for (i, c) in sh.class.iter().enumerate() {
        let protocol = c.protocol.map(|p| format!("{p:?}").to_lowercase());
        out.push(format!(
            "  1:{:<3} {:<10} protocol {:<4} rate {} ceil {}",
            10 + i,
            c.name,
            protocol.as_deref().unwrap_or("any"),
            c.rate,
            c.ceil.as_deref().unwrap_or(&c.rate)
        ));
    }
    out.push("  1:999 default (unmatched traffic)".to_owned());
    out
}

/// How to reach each node of `topo` built as lab `name`, and what its devices do.
pub fn describe(topo: &Topology, name: &str) -> Description {
    let interfaces = topo
        .links
        .iter()
        .flat_map(|l| [&l.a, &l.b])
        .map(|i| {
            let addr = match i.addr {
                Some(a) => format!("{a}/{}", i.prefix),
                None if topo.relays.iter().any(|r| r.node == i.node) => "- (relay port)".into(),
                None => "- (stage port)".into(),
            };
            let ns = naming::namespace(name, &i.node);
            vec![i.node.clone(), ns, i.name.clone(), addr]
        })
        .collect();
    let mut devices = Vec::new();
    // The built-in shaper's plain FIFO is listed before the port limits, its classes after.
    let builtin = topo.shaper.as_ref().map(|sh| {
        (
            sh.class.is_empty(),
            shaper_lines("dut eth1 (toward the listener)", sh),
        )
    });
    if let Some((true, lines)) = &builtin {
        devices.extend(lines.iter().cloned());
    }
    for (node, dev, bps) in &topo.policers {
        devices.push(format!("port {node} {dev}: carries at most {bps} bit/s in"));
    }
    for (node, dev, bps) in &topo.egress_limits {
        devices.push(format!("port {node} {dev}: sends at most {bps} bit/s out"));
    }
    if let Some((false, lines)) = builtin {
        devices.extend(lines);
    }
    for (node, port, sh) in &topo.file_shapers {
        devices.extend(shaper_lines(&format!("{node} {port}"), sh));
    }
    for s in &topo.stages {
        let how = match s.config.mode {
            Mode::Bridge => "bridge",
            Mode::Router { .. } => "router",
        };
        devices.push(format!(
            "impairment stage on {} ({how}, {} <-> {}): forward {}; reverse {}",
            s.node,
            s.config.a,
            s.config.b,
            ImpairSpec::describe(&s.config.spec.forward),
            ImpairSpec::describe(&s.config.spec.reverse),
        ));
    }
    for r in &topo.relays {
        let mut what: Vec<String> = Vec::new();
        for s in &r.config.streams {
            if let Some(p) = &s.replicate {
                what.push(format!(
                    "replicates {} {} -> {}",
                    s.name,
                    p.from,
                    p.to.join(",")
                ));
            }
            if let Some(e) = &s.eliminate {
                let off = if e.off { ", ELIMINATION OFF" } else { "" };
                what.push(format!(
                    "eliminates {} {} -> {} (history {}{off})",
                    s.name,
                    e.from.join(","),
                    e.to,
                    e.history
                ));
            }
        }
        if what.is_empty() {
            what.push("plain forwarding, no FRER (control group)".into());
        }
        devices.push(format!("FRER relay on {}: {}", r.node, what.join("; ")));
    }
    Description {
        interfaces,
        devices,
    }
}

/// The labs that are up: their nodes and interfaces, shaper classes, relays and stages.
///
/// # Errors
/// The namespaces or their addresses cannot be listed.
pub fn status(runner: &mut dyn Runner) -> Result<LabStatus, LabError> {
    let namespaces = lab_namespaces(runner)?;
    let mut out = LabStatus::default();
    let mut gone = Vec::new();
    for (ns, lab, node) in &namespaces {
        let addrs = match runner.run(&Cmd::brief_addrs(ns)) {
            Ok(addrs) => addrs,
            // Another process took this lab down since the namespaces were listed: it is
            // no longer up, so it is left out (the others are still reported).
            Err(_) if !lab_namespaces(runner)?.iter().any(|(n, _, _)| n == ns) => {
                gone.push(lab.clone());
                continue;
            }
            Err(e) => return Err(e),
        };
        let interfaces = addrs
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let name = f.next()?.split('@').next()?.to_owned();
                let state = f.next()?.to_owned();
                let addrs: Vec<&str> = f.collect();
                let line = format!("{name} {state} {}", addrs.join(" "));
                (name != "lo").then(|| line.trim_end().to_owned())
            })
            .collect();
        out.nodes.push(LabNode {
            lab: lab.clone(),
            node: node.clone(),
            namespace: ns.clone(),
            interfaces,
        });
        // The shaper's classes sit on the dut's egress toward the listener.
        if node == "dut" {
            if let Ok(text) = runner.run(&Cmd::class_stats(ns, "eth1")) {
                out.classes.extend(
                    crate::shaper::parse_class_stats(&text)
                        .into_iter()
                        .map(|c| ShaperClass {
                            lab: lab.clone(),
                            id: c.id,
                            rate: c.rate,
                            packets: c.packets,
                            bytes: c.bytes,
                            dropped: c.dropped,
                        }),
                );
            }
        }
    }
    // Its nodes read before it went are left out as well.
    out.nodes.retain(|n| !gone.contains(&n.lab));
    out.classes.retain(|c| !gone.contains(&c.lab));
    let mut labs: Vec<&str> = namespaces
        .iter()
        .map(|(_, l, _)| l.as_str())
        .filter(|l| !gone.iter().any(|g| g == l))
        .collect();
    labs.sort_unstable();
    labs.dedup();
    for &lab in &labs {
        for (label, path) in state_files(Some(lab)) {
            if let Ok(st) = RelayState::read(&path) {
                out.relays.push(st.report(label));
            }
        }
        for (node, st) in Lab::stage_states(lab) {
            let state = liveness(st.running, st.pid, st.stopped.as_ref());
            // Frames lost before the stage saw them (both sides together): the stage
            // itself was the bottleneck.
            let overload = (st.kernel_drops > 0).then(|| {
                format!(
                    "{} frames (both directions) dropped before the stage read them: overloaded",
                    st.kernel_drops
                )
            });
            for (dir, c) in [("forward", st.forward), ("reverse", st.reverse)] {
                out.stages.push(StageRow {
                    lab: lab.to_owned(),
                    node: node.clone(),
                    direction: dir.to_owned(),
                    frames_in: c.frames_in,
                    lost: c.dropped_loss,
                    duplicated: c.duplicated,
                    reordered: c.reordered,
                    delayed: (!st.data_path.starts_with("kernel")).then_some(c.delayed),
                    queue_drops: c.dropped_queue,
                    frames_out: c.frames_out,
                    state: match (&overload, dir) {
                        (Some(o), "forward") => format!("{state}; {o}"),
                        _ => state.clone(),
                    },
                    data_path: st.data_path.clone(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two labs' talkers; lab `b` is taken down by another process while `status` runs:
    /// its namespace is gone by the time its addresses are asked for. `gone` says whether
    /// the second listing still shows it (a namespace that is there but cannot be read).
    struct Racing {
        listings: u32,
        gone: bool,
    }

    impl Runner for Racing {
        fn run(&mut self, cmd: &Cmd) -> Result<String, LabError> {
            let line = cmd.to_string();
            if line == "ip netns list" {
                self.listings += 1;
                return Ok(if self.listings > 1 && self.gone {
                    "wb-a-talker\n".into()
                } else {
                    "wb-a-talker\nwb-b-talker\n".into()
                });
            }
            if line.contains("wb-b-talker") {
                return Err(LabError::Command {
                    cmd: line,
                    detail: "Cannot open network namespace".into(),
                });
            }
            if line.contains("-br addr") {
                return Ok("lo UNKNOWN 127.0.0.1/8\neth0@if5 UP 198.18.0.1/24\n".into());
            }
            Ok(String::new())
        }
    }

    #[test]
    fn a_lab_taken_down_while_status_reads_it_is_left_out_not_an_error() {
        let mut runner = Racing {
            listings: 0,
            gone: true,
        };
        let st = status(&mut runner).expect("status of the labs that are still up");
        let nodes: Vec<&str> = st.nodes.iter().map(|n| n.namespace.as_str()).collect();
        assert_eq!(nodes, ["wb-a-talker"]);
        assert_eq!(st.nodes[0].interfaces, ["eth0 UP 198.18.0.1/24"]);
        // A namespace that is still there but cannot be read is an error, as before.
        let mut runner = Racing {
            listings: 0,
            gone: false,
        };
        assert!(status(&mut runner).is_err());
    }
}
