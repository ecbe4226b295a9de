//! `wirebench lab` end to end (needs root: namespaces). Each test uses its own lab name, so
//! tests run in parallel; a guard removes the lab even when a test fails.

use std::process::{Command, Stdio};

use crate::util::*;

/// Skips (with the reason printed) unless this process can create network namespaces.
fn root_or_skip(test: &str) -> bool {
    let root = lab::cmd::is_root();
    if !root {
        eprintln!("SKIPPED {test}: needs root to create network namespaces");
    }
    root
}

/// A lab that is removed on drop.
struct LabGuard(String);

impl LabGuard {
    fn up(topology: &str, tag: &str) -> Self {
        Self::up_with(topology, tag, &[])
    }

    fn up_with(topology: &str, tag: &str, extra: &[&str]) -> Self {
        let name = format!("{tag}{:x}", std::process::id() & 0xfff);
        let mut args = vec!["lab", "up", topology, "--name", &name];
        args.extend(extra);
        let out = run(&args);
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
    client_across(
        lab,
        listener_addr,
        &["-u", "-b", "20M", "-l", "1000", "-t", "1"],
    )
}

/// Runs `wirebench client ADDR ARGS -J` from the talker against a server on the listener.
fn client_across(lab: &LabGuard, listener_addr: &str, args: &[&str]) -> serde_json::Value {
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
    let mut argv = vec![
        "lab",
        "exec",
        "--name",
        &lab.0,
        "talker",
        "--",
        bin(),
        "client",
        listener_addr,
    ];
    argv.extend(args);
    argv.push("-J");
    let v = run_json(&argv);
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

#[test]
fn shaper_holds_the_udp_class_to_its_rate() {
    // examples/shaper-two-classes.toml: UDP 10 Mbit/s, TCP 40 Mbit/s. UDP is offered at
    // twice its class rate with 1472- and 100-byte payloads; HTB counts L2 bytes (payload +
    // 8 UDP + 20 IPv4 + 14 Ethernet), so the L2 rate that arrives each second must be
    // 10 Mbit/s within 2 %.
    if !root_or_skip("shaper_holds_the_udp_class_to_its_rate") {
        return;
    }
    let shape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/shaper-two-classes.toml"
    );
    let lab = LabGuard::up_with("shaper", "h", &["--shape", shape]);
    for (len, payload_rate) in [(1472u64, "19.45M"), (100, "14.08M")] {
        let len_arg = len.to_string();
        let v = client_across(
            &lab,
            "198.18.2.1",
            &[
                "-u",
                "-b",
                payload_rate,
                "-l",
                &len_arg,
                "-t",
                "3",
                "-i",
                "1",
            ],
        );
        let rows = v["intervals"].as_array().expect("intervals");
        assert_eq!(rows.len(), 3);
        // The first second fills the class's queue; the next two are the steady state.
        for r in &rows[1..] {
            let l2 = r["received_packets"].as_u64().unwrap() as f64 * (len + 42) as f64 * 8.0;
            assert!(
                (l2 - 10e6).abs() <= 0.2e6,
                "len {len}: {l2} bit/s of L2 in {r}"
            );
        }
        assert!(
            u64_at(&v, "/summary/lost_packets") > 0,
            "at twice the class rate the shaper drops"
        );
    }
    // Status shows the classes with the shaper's own counters.
    let out = run(&["lab", "status"]);
    let s = String::from_utf8_lossy(&out.stdout);
    let row = s
        .lines()
        .find(|l| l.starts_with(&format!("{} ", lab.0)) && l.contains(" 1:10 "))
        .unwrap_or_else(|| panic!("{s}"));
    let dropped: u64 = row
        .split_whitespace()
        .last()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    assert!(row.contains("10Mbit") && dropped > 0, "{row}");
}

#[test]
fn shaper_class_lists_are_checked_before_anything_is_built() {
    let dir = std::env::temp_dir().join(format!("wb-shape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[[class]]\nname = \"u\"\nprotocol = \"sctp\"\nrate = \"1M\"\n",
    )
    .unwrap();
    let bad_arg = bad.to_string_lossy().into_owned();
    assert_fails(
        &run(&[
            "lab",
            "up",
            "shaper",
            "--name",
            "bad",
            "--shape",
            &bad_arg,
            "--dry-run",
        ]),
        2,
        "sctp",
    );
    assert_fails(
        &run(&["lab", "up", "shaper", "--dry-run"]),
        2,
        "--shape FILE.toml",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
