//! `wirebench lab` end to end (needs root: namespaces). Each test uses its own lab name, so
//! tests run in parallel; a guard removes the lab even when a test fails.

use std::process::{Command, Stdio};

use crate::util::*;

/// Skips (with the reason printed) unless this process can create network namespaces.
fn root_or_skip(test: &str) -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    if !root {
        eprintln!("SKIPPED {test}: needs root to create network namespaces");
    }
    root
}

/// A lab that is removed on drop.
struct LabGuard(String);

impl LabGuard {
    fn up(topology: &str, tag: &str) -> Self {
        let name = format!("{tag}{:x}", std::process::id() & 0xfff);
        let out = run(&["lab", "up", topology, "--name", &name]);
        assert!(
            out.status.success(),
            "lab up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        LabGuard(name)
    }

    fn namespaces(&self) -> Vec<String> {
        let out = Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip netns list");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|ns| ns.starts_with(&format!("wb-{}-", self.0)))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        let _ = Command::new(bin()).args(["lab", "down", &self.0]).output();
    }
}

/// Runs a UDP test from talker to listener across the lab and returns the client's JSON.
fn udp_across(lab: &LabGuard, listener_addr: &str) -> serde_json::Value {
    let mut server = Command::new(bin())
        .args([
            "lab",
            "exec",
            "--name",
            &lab.0,
            "listener",
            "--",
            bin(),
            "server",
            "--bind",
            listener_addr,
            "--run-for",
            "20",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server in the listener namespace");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let v = run_json(&[
        "lab",
        "exec",
        "--name",
        &lab.0,
        "talker",
        "--",
        bin(),
        "client",
        listener_addr,
        "-u",
        "-b",
        "20M",
        "-l",
        "1000",
        "-t",
        "1",
        "-J",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    v
}

#[test]
fn direct_lab_carries_traffic_and_leaves_nothing_behind() {
    if !root_or_skip("direct_lab_carries_traffic_and_leaves_nothing_behind") {
        return;
    }
    let lab = LabGuard::up("direct", "d");
    assert_eq!(lab.namespaces().len(), 2);
    let v = udp_across(&lab, "198.18.0.2");
    let sent = u64_at(&v, "/summary/sent_packets");
    assert!(sent > 2000, "{sent}");
    assert_eq!(
        u64_at(&v, "/summary/received_packets") + u64_at(&v, "/summary/lost_packets"),
        sent
    );
    assert!(u64_at(&v, "/summary/lost_packets") * 1000 <= sent);
    let out = run(&["lab", "down", &lab.0]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(lab.namespaces().is_empty(), "nothing of the lab remains");
}

#[test]
fn router_lab_forwards_between_two_subnets() {
    if !root_or_skip("router_lab_forwards_between_two_subnets") {
        return;
    }
    let lab = LabGuard::up("router", "r");
    assert_eq!(lab.namespaces().len(), 3);
    let v = udp_across(&lab, "198.18.2.1");
    assert!(u64_at(&v, "/summary/received_packets") > 2000);
    // The talker reaches the listener through the dut: its route says so.
    let out = run(&[
        "lab",
        "exec",
        "--name",
        &lab.0,
        "talker",
        "--",
        "ip",
        "route",
        "get",
        "198.18.2.1",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("via 198.18.1.254"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_second_lab_of_the_same_name_is_refused_and_status_lists_it() {
    if !root_or_skip("a_second_lab_of_the_same_name_is_refused_and_status_lists_it") {
        return;
    }
    let lab = LabGuard::up("direct", "s");
    assert_fails(
        &run(&["lab", "up", "router", "--name", &lab.0]),
        2,
        "exists already",
    );
    assert_eq!(lab.namespaces().len(), 2, "the existing lab is untouched");
    let out = run(&["lab", "status"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains(&format!("wb-{}-talker", lab.0)) && s.contains("198.18.0.1/24"),
        "{s}"
    );
    assert_fails(
        &run(&["lab", "exec", "--name", &lab.0, "dut", "--", "true"]),
        2,
        "has no node 'dut'",
    );
}

#[test]
fn dry_run_prints_the_commands_without_root() {
    let out = run(&["lab", "up", "router", "--name", "dry", "--dry-run"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        s.contains("ip netns add wb-dry-dut") && s.contains("net.ipv4.ip_forward=1"),
        "{s}"
    );
    assert_fails(
        &run(&["lab", "up", "mesh", "--dry-run"]),
        2,
        "unknown topology",
    );
}
