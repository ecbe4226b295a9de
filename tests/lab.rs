//! `wirebench lab` end to end (needs root: namespaces). Each test uses its own lab name, so
//! tests run in parallel; a guard removes the lab even when a test fails.

use std::process::{Command, Stdio};

use crate::util::*;

/// A lab that is removed on drop.
pub(crate) struct LabGuard(pub(crate) String);

impl LabGuard {
    pub(crate) fn up(topology: &str, tag: &str) -> Self {
        Self::up_with(topology, tag, &[])
    }

    pub(crate) fn up_with(topology: &str, tag: &str, extra: &[&str]) -> Self {
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
        namespaces_of(&self.0)
    }
}

/// The namespaces of lab `name` now.
fn namespaces_of(name: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|ns| ns.starts_with(&format!("wb-{name}-")))
        .map(str::to_owned)
        .collect()
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

/// Starts `wirebench server` on `node` of the lab, bound to `addr`, and waits until it
/// can have started.
pub(crate) fn server_on(lab: &LabGuard, node: &str, addr: &str) -> std::process::Child {
    server_on_with(lab, node, addr, &[])
}

/// As [`server_on`], with more server options.
pub(crate) fn server_on_with(
    lab: &LabGuard,
    node: &str,
    addr: &str,
    extra: &[&str],
) -> std::process::Child {
    let mut args = vec![
        "lab",
        "exec",
        "--name",
        &lab.0,
        node,
        "--",
        bin(),
        "server",
        "--bind",
        addr,
        "--run-for",
        "20",
    ];
    args.extend(extra);
    let child = Command::new(bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server in the lab");
    std::thread::sleep(std::time::Duration::from_millis(500));
    child
}

/// Runs `wirebench client ADDR ARGS -J` from the talker against a server on the listener.
pub(crate) fn client_across(
    lab: &LabGuard,
    listener_addr: &str,
    args: &[&str],
) -> serde_json::Value {
    command_across(lab, "client", listener_addr, args)
}

/// `command` (a test against a server) from the talker to a server on the listener at
/// `listener_addr`, as JSON.
pub(crate) fn command_across(
    lab: &LabGuard,
    command: &str,
    listener_addr: &str,
    args: &[&str],
) -> serde_json::Value {
    let mut server = server_on(lab, "listener", listener_addr);
    let mut argv = vec![
        "lab",
        "exec",
        "--name",
        &lab.0,
        "talker",
        "--",
        bin(),
        command,
        listener_addr,
    ];
    argv.extend(args);
    argv.push("-J");
    let v = run_json(&argv);
    let _ = server.kill();
    let _ = server.wait();
    v
}

fn direct_lab_carries_traffic_and_leaves_nothing_behind() {
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

fn router_lab_forwards_between_two_subnets() {
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

fn a_second_lab_of_the_same_name_is_refused_and_status_lists_it() {
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

/// When `lab up` returns, every link has carrier: `lab status` right after shows no port
/// DOWN (the relays' ports of a `frer` lab were DOWN for up to a second).
fn every_port_is_up_when_lab_up_returns() {
    let lab = LabGuard::up("frer", "u");
    let out = run(&["lab", "status"]);
    let s = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = s
        .lines()
        .filter(|l| l.starts_with(&format!("{} ", lab.0)) && l.contains(" eth0 "))
        .collect();
    assert_eq!(rows.len(), 6, "six nodes: {s}");
    for r in rows {
        assert!(!r.contains("DOWN"), "{r}");
    }
}

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

fn shaper_holds_the_udp_class_to_its_rate() {
    // examples/shaper-two-classes.toml: UDP 10 Mbit/s, TCP 40 Mbit/s. UDP is offered at
    // twice its class rate with 1472- and 100-byte payloads; HTB counts L2 bytes (payload +
    // 8 UDP + 20 IPv4 + 14 Ethernet), so the L2 rate that arrives each second must be
    // 10 Mbit/s within 2 %.
    let shape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/shaper-two-classes.toml"
    );
    let lab = LabGuard::up_with("shaper", "h", &["--shape", shape]);
    for (len, payload_rate) in [(1472u64, "19.45M"), (100, "14.08M")] {
        let len_arg = len.to_string();
        let before = shaper_classes(&lab);
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
                "4",
                "-i",
                "1",
            ],
        );
        // Every datagram received went through class 1:10 (TCP, the control connection
        // too, goes to 1:11), which passed no more than that and what was still on its way
        // when the receiver stopped.
        let received = u64_at(&v, "/summary/received_packets");
        let passed = class_passed(&before, &shaper_classes(&lab), "1:10");
        assert!(
            received <= passed && passed - received <= in_flight_after_stop(),
            "len {len}: received {received}, the class passed {passed}"
        );
        let rows = v["intervals"].as_array().expect("intervals");
        assert_eq!(rows.len(), 4);
        // The first second fills the class's queue, and the last one may also count the
        // queue draining after the sender stopped (1000 frames of 142 bytes are 113 ms at
        // 10 Mbit/s); the two between are the steady state, 2 % over at most (clean CI
        // runs read 9.50-9.76 Mbit/s, alone 9.84-10.04; one CI second 8.79).
        for r in &rows[1..3] {
            let l2 = r["received_packets"].as_u64().unwrap() as f64 * (len + 42) as f64 * 8.0;
            assert!(
                shaped_rate_holds(l2, 10e6, 0.02),
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

/// flent's RRUL through a 20 Mbit/s shaper class: with a 1000-packet queue (veth's
/// default txqueuelen) the load adds more than 10x the idle median, with a 20-packet queue
/// far less; a plain router (no shaper) carries far more.
fn shaper_queue_length_sets_the_latency_rrul_measures() {
    let dir = fresh_path("rrul");
    let rrul = |lab: &LabGuard| {
        command_across(
            lab,
            "rrul",
            "198.18.2.1",
            // Six seconds: on a slow machine four TCP streams take a few seconds to fill a
            // 1000-packet queue (1.5 MB, 600 ms at 20 Mbit/s).
            &["-t", "6", "--idle", "1", "-P", "4"],
        )
    };
    let mut shaped = Vec::new();
    for (tag, limit) in [("qa", 1000), ("qb", 20)] {
        let file = dir.join(format!("{tag}.toml"));
        std::fs::write(
            &file,
            format!("[[class]]\nname = \"all\"\nrate = \"20M\"\nlimit = {limit}\n"),
        )
        .unwrap();
        let lab = LabGuard::up_with("shaper", tag, &["--shape", file.to_str().unwrap()]);
        shaped.push(rrul(&lab));
    }
    let lab = LabGuard::up("router", "qc");
    let plain = rrul(&lab);
    drop(lab);
    let p50 = |v: &serde_json::Value, phase: &str| f64_at(v, &format!("/rrul/{phase}/p50"));
    let (long, short) = (&shaped[0], &shaped[1]);
    for (name, v) in [
        ("queue 1000", long),
        ("queue 20", short),
        ("router", &plain),
    ] {
        eprintln!(
            "rrul {name}: up {:.1} Mbit/s, down {:.1} Mbit/s, idle p50 {:.0} us, loaded p50 {:.0} us p99 {:.0} us",
            f64_at(v, "/rrul/up_bps") / 1e6,
            f64_at(v, "/rrul/down_bps") / 1e6,
            p50(v, "idle"),
            p50(v, "loaded"),
            f64_at(v, "/rrul/loaded/p99"),
        );
    }
    for v in [long, short] {
        // The upload (its rate while the load ran) is held to the class rate: payload under 20
        // Mbit/s of frames (HTB on veth runs about 1 % over).
        let up = f64_at(v, "/rrul/up_bps");
        assert!((15e6..20.5e6).contains(&up), "upload {up}: {v:#}");
        assert!(u64_at(v, "/rrul/pings_sent") > 500, "{v:#}");
        assert!(!v["intervals"].as_array().unwrap().is_empty());
    }
    assert!(
        p50(long, "loaded") - p50(long, "idle") > 10.0 * p50(long, "idle"),
        "a 1000-packet queue: idle {} us, loaded {} us",
        p50(long, "idle"),
        p50(long, "loaded")
    );
    // The median over the load includes the time the long queue takes to fill (it varies
    // with the machine); the 99th percentile is the queue standing full.
    let p99 = |v: &serde_json::Value| f64_at(v, "/rrul/loaded/p99");
    assert!(
        p50(short, "loaded") * 2.0 < p50(long, "loaded") && p99(short) * 2.0 < p99(long),
        "a 20-packet queue (loaded p50 {} us, p99 {} us) should add far less than a 1000-packet one ({} us, {} us)",
        p50(short, "loaded"),
        p99(short),
        p50(long, "loaded"),
        p99(long)
    );
    assert!(
        f64_at(&plain, "/rrul/up_bps") > 5.0 * f64_at(long, "/rrul/up_bps"),
        "{plain:#}"
    );
}

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

/// The shaper's own counters of the dut's HTB classes toward the listener (`tc -s class
/// show dev eth1` in the dut namespace): what the lab passed, for a test to compare the
/// figure it measured with.
pub(crate) fn shaper_classes(lab: &LabGuard) -> Vec<lab::shaper::ClassStats> {
    let out = Command::new("tc")
        .args([
            "-n",
            &format!("wb-{}-dut", lab.0),
            "-s",
            "class",
            "show",
            "dev",
            "eth1",
        ])
        .output()
        .expect("tc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lab::shaper::parse_class_stats(&String::from_utf8_lossy(&out.stdout))
}

/// A shaped rate (`got`, bits/s) against its class's rate. Above it is the shaper's fault
/// (HTB counts 1514 of 1518 bytes: 0.3 % over), so `over` (2-6 % by how long the sample
/// is) is the bound that tests it. Below it is the machine's: HTB loses tokens whenever
/// the dut's softirq runs later than the class's bucket lasts, which a 2-core machine with
/// other work does at random (seen: 96.0 of 100 Mbit/s beside two busy loops; 87.9 % of a
/// 10 Mbit/s class for one second and 68 % of a 50 Mbit/s matrix cell in a CI run). What a
/// test holds wirebench to there is the shaper's own count (`class_passed`); the lower
/// bound only tells the class from the rates it could be confused with, the next class of
/// an example profile or the next bandwidth of a matrix (at most half of it: 15 of 30,
/// 50 of 100, 512k of 1M) and no shaping at all (the line rate, more than twice): 55 %.
pub(crate) fn shaped_rate_holds(got: f64, class_bps: f64, over: f64) -> bool {
    (class_bps * 0.55..=class_bps * (1.0 + over)).contains(&got)
}

/// Class `id` in a reading of [`shaper_classes`].
fn class_of<'a>(s: &'a [lab::shaper::ClassStats], id: &str) -> &'a lab::shaper::ClassStats {
    s.iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no class {id}: {s:?}"))
}

/// Packets class `id` passed between two readings of [`shaper_classes`].
pub(crate) fn class_passed(
    before: &[lab::shaper::ClassStats],
    after: &[lab::shaper::ClassStats],
    id: &str,
) -> u64 {
    class_of(after, id).packets - class_of(before, id).packets
}

/// Packets class `id` dropped between two readings of [`shaper_classes`].
pub(crate) fn class_dropped(
    before: &[lab::shaper::ClassStats],
    after: &[lab::shaper::ClassStats],
    id: &str,
) -> u64 {
    class_of(after, id).dropped - class_of(before, id).dropped
}

/// The loss an RFC 2544 result's trials saw is the shaper's: every frame the class
/// dropped (`dropped`) was lost to a trial, and a trial lost no more than that and what
/// was still in the class's queue (`queue` frames) when its receiver stopped.
pub(crate) fn assert_loss_is_the_shapers(
    what: &str,
    v: &serde_json::Value,
    dropped: u64,
    queue: u64,
) {
    let trials = v["rfc2544"]["trials"].as_array().expect("trials");
    let lost: u64 = trials
        .iter()
        .map(|x| u64_at(x, "/sent") - u64_at(x, "/received"))
        .sum();
    assert!(
        dropped <= lost && lost - dropped <= queue * trials.len() as u64,
        "{what}: the trials lost {lost} frames, the class dropped {dropped}"
    );
}

/// Frames the kernel dropped anywhere on this machine because a CPU's backlog queue was
/// full (`/proc/net/softnet_stat`, second column, summed over the CPUs): veth hands every
/// frame to such a queue, and a busy machine overflows it. Machine-wide, so a test reads it
/// before and after to know whether frames went missing that no lab device dropped.
pub(crate) fn backlog_drops() -> u64 {
    let text = std::fs::read_to_string("/proc/net/softnet_stat").expect("softnet_stat");
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|d| u64::from_str_radix(d, 16).expect("softnet_stat column"))
        .sum()
}

/// The most frames a shaper class may have passed that its receiver never saw once it
/// stopped: those still in the veth's queue (its txqueuelen, 1000 frames) and those still
/// in the receiving CPU's backlog queue (`net.core.netdev_max_backlog`).
pub(crate) fn in_flight_after_stop() -> u64 {
    let backlog = std::fs::read_to_string("/proc/sys/net/core/netdev_max_backlog")
        .expect("netdev_max_backlog");
    1000 + backlog.trim().parse::<u64>().expect("netdev_max_backlog")
}

/// |observed − p·n| within 4.5 standard deviations of a binomial(n, p): a false failure
/// has a probability below 1e-5.
pub(crate) fn within_binomial(observed: u64, n: u64, p: f64) -> bool {
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    (observed as f64 - p * n as f64).abs() <= 4.5 * sd
}

/// Whether process `pid` runs (a zombie waiting for its parent to reap it does not).
fn running(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// The impairment stage's published state on `node` of `lab`.
pub(crate) fn stage_state(lab: &LabGuard, node: &str) -> serde_json::Value {
    let path = format!("/run/wirebench/labs/{}/{node}.state.json", lab.0);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).expect("state JSON")
}

/// The `forward` row of `lab`'s impairment stage in `lab status`.
fn forward_stage_row(lab: &LabGuard) -> String {
    let out = run(&["lab", "status"]);
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines()
        .find(|l| l.starts_with(&format!("{} ", lab.0)) && l.contains(" forward "))
        .unwrap_or_else(|| panic!("{s}"))
        .to_owned()
}

/// Whether an XDP program is attached to `dev` in namespace `ns` (`ip -j link show`).
pub(crate) fn xdp_attached(ns: &str, dev: &str) -> bool {
    let out = Command::new("ip")
        .args(["-j", "-n", ns, "link", "show", dev])
        .output()
        .expect("ip");
    String::from_utf8_lossy(&out.stdout).contains("\"xdp\"")
}

/// The ids of the BPF programs process `pid` holds, found through its descriptors.
pub(crate) fn bpf_programs_of(pid: u64) -> Vec<u32> {
    let mut ids = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).expect("fdinfo") {
        let text = std::fs::read_to_string(fd.expect("fd").path()).unwrap_or_default();
        ids.extend(
            text.lines()
                .filter_map(|l| l.strip_prefix("prog_id:"))
                .filter_map(|id| id.trim().parse::<u32>().ok()),
        );
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Those of `ids` the kernel still has loaded (its program list).
pub(crate) fn loaded_programs(ids: &[u32]) -> Vec<u32> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .map(|p| p.id())
        .filter(|id| ids.contains(id))
        .collect()
}

/// Fails unless every program of `ids` leaves the kernel within 5 s of `after`.
pub(crate) fn unloaded_within_5s(ids: &[u32], after: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !loaded_programs(ids).is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "still loaded 5 s after {after}: {:?}",
            loaded_programs(ids)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The fast path: loss and duplication decided in the kernel give the configured
/// fractions, the stage's counters agree with the receiver, `lab status` says `kernel`;
/// a killed stage takes its program with it, and `lab down` leaves nothing loaded.
fn impair_fast_path_loses_and_duplicates_in_the_kernel() {
    let lab = LabGuard::up_with("impair", "if", &["--impair", "loss=5%,duplicate=1%,seed=7"]);
    let st = stage_state(&lab, "dut");
    assert_eq!(st["data_path"], "kernel", "{st}");
    let socket_before = crate::iperf3::drops_in(&lab, "listener");
    let backlog_before = backlog_drops();
    let v = client_across(
        &lab,
        "198.18.2.1",
        &["-u", "--pps", "30000", "-l", "100", "-t", "4", "-i", "1"],
    );
    let socket = (crate::iperf3::drops_in(&lab, "listener") - socket_before) as u64;
    let backlog = backlog_drops() - backlog_before;
    let sent = u64_at(&v, "/summary/sent_packets");
    let lost = u64_at(&v, "/summary/lost_packets");
    let dups = u64_at(&v, "/summary/duplicate_packets");
    assert!(sent >= 100_000, "{sent} frames");
    assert!(
        within_binomial(dups, sent - lost, 0.01),
        "duplicates {dups}/{}",
        sent - lost
    );
    assert_eq!(u64_at(&v, "/summary/reordered_packets"), 0);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let st = stage_state(&lab, "dut");
    let fwd = &st["forward"];
    let stage_lost = fwd["dropped_loss"].as_u64().unwrap();
    // The stage drops what it was told to (5 %, within its binomial interval); the
    // receiver lost all of that and what its socket had no room for on a busy machine
    // (the listener's kernel counts it: 476 were seen), but for the few segments of the
    // control connection that the stage also dropped; and nothing more but what a CPU's
    // full backlog queue dropped (machine-wide, so only an upper bound).
    assert!(
        within_binomial(stage_lost, sent, 0.05),
        "stage loss {stage_lost}/{sent}"
    );
    assert!(
        stage_lost + socket <= lost + 100 && lost <= stage_lost + socket + backlog,
        "stage dropped {stage_lost}, the receiving socket {socket}, backlog queues {backlog}, receiver lost {lost}"
    );
    let (n_in, n_out) = (u64_at(fwd, "/frames_in"), u64_at(fwd, "/frames_out"));
    assert_eq!(
        n_out,
        n_in - stage_lost + u64_at(fwd, "/duplicated"),
        "{st}"
    );
    let row = forward_stage_row(&lab);
    assert!(
        row.contains(&stage_lost.to_string()) && row.contains("kernel"),
        "{row}"
    );
    // The stage's program, through its descriptors; SIGKILL takes it out of the kernel.
    let pid = u64_at(&st, "/pid");
    let ids = bpf_programs_of(pid);
    assert_eq!(ids.len(), 1, "the port program: {ids:?}");
    assert_eq!(loaded_programs(&ids), ids);
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    assert!(killed.is_ok_and(|s| s.success()));
    unloaded_within_5s(&ids, "SIGKILL");
}

/// A rate on the fast path: the kernel's queue serialises at the rate and drops beyond
/// `limit` frames, and the stage reports those drops.
fn impair_fast_path_rate_limits() {
    let lab = LabGuard::up_with("impair", "ir", &["--impair", "forward.rate=10M,limit=200"]);
    assert_eq!(stage_state(&lab, "dut")["data_path"], "kernel");
    let v = client_across(
        &lab,
        "198.18.2.1",
        &["-u", "-b", "19.45M", "-l", "1472", "-t", "3", "-i", "1"],
    );
    // The kernel's HTB class paces, not a virtual clock. Above the rate is the class's
    // fault: each interval within 5 % over, their mean within 2 %. Below it is the
    // machine's: the class loses tokens whenever the dut's softirq runs late (a mean of
    // 9.78 Mbit/s was seen beside two busy loops and a build), so 10 % under, which still
    // tells the 10 Mbit/s limit from the 19.45 Mbit/s offered.
    let rows = &v["intervals"].as_array().expect("intervals")[1..];
    let l2: Vec<f64> = rows
        .iter()
        .map(|r| r["received_packets"].as_u64().unwrap() as f64 * 1514.0 * 8.0)
        .collect();
    for (r, bits) in rows.iter().zip(&l2) {
        assert!((8.5e6..=10.5e6).contains(bits), "{bits} bit/s of L2 in {r}");
    }
    let mean = l2.iter().sum::<f64>() / l2.len() as f64;
    assert!(
        (9e6..=10.2e6).contains(&mean),
        "mean {mean} bit/s of L2: {l2:?}"
    );
    let lost = u64_at(&v, "/summary/lost_packets");
    assert!(lost > 0, "the 200-frame queue overflows");
    std::thread::sleep(std::time::Duration::from_millis(400));
    let st = stage_state(&lab, "dut");
    let drops = u64_at(&st, "/forward/dropped_queue");
    assert!(
        drops >= lost && drops - lost < 100,
        "queue dropped {drops}, receiver lost {lost}: {st}"
    );
    // `lab down` removes the lab with its queue; the stage's program goes with it.
    let ids = bpf_programs_of(u64_at(&st, "/pid"));
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(run(&["lab", "down", &lab.0]).status.success());
    unloaded_within_5s(&ids, "lab down");
}

fn impair_stage_loss_duplicate_and_reorder_match_the_configuration() {
    let lab = LabGuard::up_with(
        "impair",
        "i",
        &["--impair", "loss=5%,duplicate=1%,reorder=2%,seed=7"],
    );
    // 120,000 UDP datagrams at a rate this machine forwards without loss of its own.
    let socket_before = crate::iperf3::drops_in(&lab, "listener");
    let backlog_before = backlog_drops();
    let v = client_across(
        &lab,
        "198.18.2.1",
        &["-u", "--pps", "30000", "-l", "100", "-t", "4", "-i", "1"],
    );
    let socket = (crate::iperf3::drops_in(&lab, "listener") - socket_before) as u64;
    let backlog = backlog_drops() - backlog_before;
    let sent = u64_at(&v, "/summary/sent_packets");
    let lost = u64_at(&v, "/summary/lost_packets");
    // The stage's own counters (it writes them a few times a second). What it dropped on
    // purpose, and what its socket had no room for when a busy machine held it back.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let st = stage_state(&lab, "dut");
    let fwd = &st["forward"];
    let stage_lost = fwd["dropped_loss"].as_u64().unwrap();
    let stage_overrun = st["kernel_drops"].as_u64().unwrap();
    // Each interval's loss is the packets due in it that never came: 5 % of what it sent
    // (when nothing but the stage lost them), never more than it sent, and the intervals
    // add up to the total.
    let rows = v["intervals"].as_array().expect("intervals");
    assert_eq!(rows.len(), 4, "{rows:#?}");
    for r in rows {
        let (l, n) = (u64_at(r, "/lost_packets"), u64_at(r, "/sent_packets"));
        assert_eq!(r["loss_attributed"], true, "{r}");
        assert!(l <= n, "{r}");
        if socket + stage_overrun + backlog == 0 {
            assert!(within_binomial(l, n, 0.05), "interval loss {l}/{n}: {r}");
        }
        let lat = &r["latency"];
        assert!(
            f64_at(lat, "/p50_us") > 0.0 && f64_at(lat, "/p99_us") >= f64_at(lat, "/p50_us"),
            "{r}"
        );
    }
    let in_rows: u64 = rows.iter().map(|r| u64_at(r, "/lost_packets")).sum();
    assert_eq!(in_rows, lost, "{rows:#?}");
    let dups = u64_at(&v, "/summary/duplicate_packets");
    let reordered = u64_at(&v, "/summary/reordered_packets");
    assert!(sent >= 100_000, "{sent} frames");
    let passed = sent - lost;
    assert!(
        within_binomial(stage_lost, sent, 0.05),
        "the stage's loss {stage_lost}/{sent} is not 5 % within its binomial interval"
    );
    assert!(
        within_binomial(dups, passed, 0.01),
        "duplicates {dups}/{passed} is not 1 %"
    );
    assert!(
        within_binomial(reordered, passed, 0.02),
        "reordered {reordered}/{passed} is not 2 %"
    );
    // The receiver's loss is what the stage dropped, what its socket overran and what
    // the receiving socket had no room for (the listener's kernel counts it), less the
    // control connection's few frames that the stage also dropped (the small slack), and
    // at most what a CPU's full backlog queue dropped (machine-wide: an upper bound).
    let accounted = stage_lost + stage_overrun + socket;
    assert!(
        accounted <= lost + 100 && lost <= accounted + backlog,
        "receiver lost {lost}: the stage dropped {stage_lost} and overran {stage_overrun}, the receiving socket {socket}, backlog queues {backlog}"
    );
    assert!(u64_at(fwd, "/frames_in") + stage_overrun >= sent, "{st}");
    let path = st["data_path"].as_str().unwrap_or_default();
    assert!(
        path.starts_with("userspace (fast path not used: forward reorder"),
        "{path}"
    );
    // And `lab status` shows them: its dropped column is the stage's own count when it read
    // it, between our reading before and one after (a CI run's row showed 5,969, not the
    // count this test had read 400 ms earlier: the stage may count on after a test).
    let row = forward_stage_row(&lab);
    let later = stage_state(&lab, "dut")["forward"]["dropped_loss"]
        .as_u64()
        .unwrap();
    let shown: u64 = row
        .split_whitespace()
        .nth(4)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no dropped count in {row}"));
    assert!(
        (stage_lost..=later).contains(&shown) && row.contains("running"),
        "{row}: dropped {shown}, the state file said {stage_lost} before and {later} after"
    );
}

fn impair_stage_delays_and_rate_limits() {
    // 5 ms each way with ± 1 ms jitter; toward the listener at most 10 Mbit/s of L2.
    let lab = LabGuard::up_with(
        "impair",
        "j",
        &[
            "--impair",
            "delay=5ms,jitter=1ms,forward.rate=10M,limit=200",
        ],
    );
    let v = client_across(
        &lab,
        "198.18.2.1",
        &[
            "-u",
            "-b",
            "19.45M",
            "-l",
            "1472",
            "-t",
            "3",
            "-i",
            "1",
            "--round-trip",
        ],
    );
    // Above the rate is the stage's fault: 2 %. Below it is the machine's: a stage starved
    // of CPU forwards less than its rate, never more (7.6 and 5.7 Mbit/s were seen with
    // four tests and two busy loops on the two cores), so the lower bound only tells the
    // limit from the 19.45 Mbit/s offered. (The token bucket itself is unit-tested on a
    // virtual clock: impair::model.)
    for r in &v["intervals"].as_array().expect("intervals")[1..] {
        let l2 = r["received_packets"].as_u64().unwrap() as f64 * 1514.0 * 8.0;
        assert!((4e6..=10.2e6).contains(&l2), "{l2} bit/s of L2 in {r}");
    }
    assert!(
        u64_at(&v, "/summary/lost_packets") > 0,
        "the 200-frame queue overflows"
    );
    let st = stage_state(&lab, "dut");
    assert!(st["forward"]["dropped_queue"].as_u64().unwrap() > 0, "{st}");
    // Round trip through both directions: 2 x (5 ± 1) ms plus the 10 Mbit/s queue.
    let min = f64_at(&v, "/summary/latency_us/min");
    assert!(min >= 8_000.0, "round trip {min} us");
}

fn twopath_lab_has_two_independently_impaired_paths() {
    let lab = LabGuard::up_with(
        "twopath",
        "p",
        &["--path-a", "loss=10%", "--path-b", "delay=2ms"],
    );
    assert_eq!(lab.namespaces().len(), 6);
    // Talker to listener goes over path A, with its 10 % loss.
    let v = client_across(
        &lab,
        "198.18.23.1",
        &["-u", "--pps", "10000", "-l", "100", "-t", "2"],
    );
    let (sent, lost) = (
        u64_at(&v, "/summary/sent_packets"),
        u64_at(&v, "/summary/lost_packets"),
    );
    assert!(within_binomial(lost, sent, 0.10), "{lost}/{sent}");
    // Path B is there too: merge's path-B address, reached from split, crosses it.
    let mut server = server_on(&lab, "merge", "198.18.22.2");
    let v = run_json(&[
        "lab",
        "exec",
        "--name",
        &lab.0,
        "split",
        "--",
        bin(),
        "latency",
        "198.18.22.2",
        "-t",
        "1",
        "-J",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    let p50 = f64_at(&v, "/latency/0/rtt_us/p50");
    assert!(
        p50 >= 4_000.0,
        "round trip over path B (2 ms each way): {p50} us"
    );
    std::thread::sleep(std::time::Duration::from_millis(400));
    let a = stage_state(&lab, "patha");
    let b = stage_state(&lab, "pathb");
    assert!(a["forward"]["dropped_loss"].as_u64().unwrap() > 0, "{a}");
    assert!(b["forward"]["frames_in"].as_u64().unwrap() > 0, "{b}");
    assert_eq!(b["forward"]["dropped_loss"].as_u64(), Some(0), "{b}");
}

/// TCP efficiency (RFC 6349 §4.2) across a path that loses 2 %: the connection
/// retransmits, `TCP_INFO`'s byte counts say how much, and the efficiency is what they
/// give; each retransmitted segment carried at most one MSS.
fn tcp_efficiency_counts_the_retransmissions_a_lossy_path_causes() {
    let lab = LabGuard::up_with("impair", "te", &["--impair", "loss=2%,seed=11"]);
    let v = client_across(&lab, "198.18.2.1", &["-t", "2"]);
    let sent = u64_at(&v, "/summary/tcp_bytes/sent");
    let retransmitted = u64_at(&v, "/summary/tcp_bytes/retransmitted");
    let segments = u64_at(&v, "/summary/retransmits");
    assert!(segments > 0 && retransmitted > 0, "{v}");
    assert!(
        retransmitted <= segments * 1500,
        "{retransmitted} bytes in {segments} segments"
    );
    // What the kernel put on the wire covers what the receiver counted.
    assert!(sent >= u64_at(&v, "/summary/received_bytes"), "{v}");
    let eff = v["summary"]["tcp_efficiency_pct"].as_f64().unwrap_or(0.0);
    let want = (sent - retransmitted) as f64 / sent as f64 * 100.0;
    assert!((eff - want).abs() < 1e-9, "{eff} against {want}");
    // 2 % of segments lost, each sent again: about 98 %, certainly below 100 and far
    // above what a broken count (0, or sent twice over) would give.
    assert!((80.0..100.0).contains(&eff), "efficiency {eff} %");
}

/// RFC 6349 across a path of 20 ms each way and 50 Mbit/s of L2 toward the listener, its
/// queue about ten BDPs deep (1700 frames of the BDP's ~170): the method finds the path
/// (MTU, baseline RTT, bottleneck bandwidth), the BDP and window follow from them, and a
/// TCP test in that window moves what the path carries without retransmitting. Then with
/// the kernel's autotuning and a loss-based congestion control the queue fills, and the
/// buffer delay says so.
fn rfc6349_finds_the_path_and_tests_tcp_in_the_window_it_needs() {
    let lab = LabGuard::up_with(
        "impair",
        "r69",
        &["--impair", "delay=20ms,forward.rate=50M,forward.limit=1700"],
    );
    let args = ["-t", "4", "--rtt-time", "1", "-C", "cubic"];
    let v = command_across(&lab, "rfc6349", "198.18.2.1", &args);
    let p = &v["rfc6349"];
    let f = |ptr: &str| p.pointer(ptr).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
    assert_eq!(p["path"]["mtu"], 1500, "{p}");
    assert_eq!(p["path"]["mtu_from"], "measured", "{p}");
    let rtt = f("/path/baseline_rtt_us");
    assert!(
        (36_000.0..=44_000.0).contains(&rtt),
        "baseline RTT {rtt} us"
    );
    // The stage counts 50 Mbit/s of L2 (1514-byte frames); the bandwidth is counted with
    // Ethernet's 38 bytes of framing: 50.8 Mbit/s, within 5 % of 50.
    let bb = f("/path/bottleneck_bps");
    assert!((47.5e6..=52.5e6).contains(&bb), "bottleneck {bb} bit/s");
    let bdp = f("/plan/bdp_bytes");
    assert!((bdp - rtt / 1e6 * bb / 8.0).abs() <= 1.0, "BDP {bdp}: {p}");
    assert_eq!(f("/plan/connections"), 1.0, "{p}");
    assert_eq!(f("/plan/window_bytes"), bdp, "{p}");
    let ttr = f("/transfer_time_ratio");
    assert!((0.9..1.2).contains(&ttr), "transfer time ratio {ttr}: {p}");
    let eff = f("/tcp_efficiency_pct");
    assert!(eff > 99.0, "efficiency {eff} %: {p}");
    assert!(f("/buffer_delay_pct").is_finite(), "{p}");
    assert_eq!(v["command"], "rfc6349");

    // The window left to the kernel: cubic fills the ten-BDP queue.
    let auto = ["-t", "4", "--rtt-time", "1", "-C", "cubic", "-w", "auto"];
    let v = command_across(&lab, "rfc6349", "198.18.2.1", &auto);
    let delay = v["rfc6349"]["buffer_delay_pct"].as_f64().unwrap_or(0.0);
    assert!(
        delay > 100.0,
        "buffer delay {delay} % over a 10-BDP queue: {v}"
    );
}

/// The same path with a short queue (40 frames, a quarter of the BDP): the queue cannot
/// hold the RTT up, so the buffer delay is small, and is reported.
fn rfc6349_buffer_delay_is_small_over_a_short_queue() {
    let lab = LabGuard::up_with(
        "impair",
        "r6s",
        &["--impair", "delay=20ms,forward.rate=50M,forward.limit=40"],
    );
    let args = ["-t", "4", "--rtt-time", "1", "-C", "cubic", "-w", "auto"];
    let v = command_across(&lab, "rfc6349", "198.18.2.1", &args);
    let delay = v["rfc6349"]["buffer_delay_pct"]
        .as_f64()
        .expect("a buffer delay");
    // At most 40 frames of 1514 bytes at 50 Mbit/s (9.7 ms) over 40 ms: 24 %.
    assert!((-5.0..30.0).contains(&delay), "buffer delay {delay} %: {v}");
}

/// `wirebench y1564 LIST --lab NAME ARGS -J` for the service list `list`, as JSON; the
/// exit status is part of the result (3 when a service failed), so the caller asserts it.
fn y1564(lab: &LabGuard, list: &str, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let dir = Scratch::new("y1564");
    let file = dir.join("services.toml");
    std::fs::write(&file, list).unwrap();
    let mut argv = vec!["y1564", file.to_str().unwrap(), "--lab", &lab.0, "-J"];
    argv.extend(args);
    let out = run_within(&argv, std::time::Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "y1564 gave no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), v)
}

/// Y.1564's configuration test through a 20 Mbit/s shaper class behind a port policed at
/// 30 Mbit/s: one colour-blind service of CIR 20M and EIR 5M. The CIR steps pass without
/// a frame lost; above CIR the class holds the rate at its 20 Mbit/s (of frames without
/// FCS: 20.05 Mbit/s with it), so CIR + EIR passes and the policing step (31.25 Mbit/s
/// offered) shows the excess dropped.
fn y1564_configuration_test_through_a_shaper_class_and_a_port_policer() {
    let dir = Scratch::new("y1564-shape");
    let shape = dir.join("shape.toml");
    std::fs::write(&shape, "[[class]]\nname = \"all\"\nrate = \"20M\"\n").unwrap();
    let lab = LabGuard::up_with(
        "shaper",
        "y1c",
        &["--shape", shape.to_str().unwrap(), "--port-rate", "30M"],
    );
    let list = r#"line_rate = "100M"
[[service]]
name = "data"
source = "talker:eth0"
destination = "listener:eth0"
size = 1518
cir = "20M"
eir = "5M"
[service.sac]
flr = "0.1%"
ftd = "50ms"
fdv = "20ms"
"#;
    let (code, v) = y1564(&lab, list, &["--tests", "configuration", "-t", "2"]);
    let svc = &v["y1564"]["configuration"][0];
    let steps = svc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 6, "{svc}");
    for s in &steps[..4] {
        assert_eq!(s["step"]["kind"], "cir", "{s}");
        assert_eq!(s["lost"], 0, "a CIR step lost frames: {s}");
        assert_eq!(s["pass"], true, "{s}");
        assert!(s["delay"]["mean_us"].as_f64().is_some(), "{s}");
    }
    let limit = 20e6 * 1518.0 / 1514.0;
    for s in &steps[4..] {
        let ir = s["ir_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (ir - limit).abs() <= limit * 0.03,
            "IR {ir} against {limit}: {s}"
        );
        assert_eq!(s["pass"], true, "{s}");
    }
    let policing = &steps[5];
    assert_eq!(policing["step"]["kind"], "policing");
    assert!(policing["lost"].as_u64().unwrap_or(0) > 0, "{policing}");
    assert!((policing["step"]["yellow_bps"].as_f64().unwrap() - 11.25e6).abs() < 1.0);
    assert_eq!(code, Some(0), "{v}");
}

/// Y.1564's performance test with two services of different DSCP at once, each below its
/// shaper class (DSCP 46 in a 20 Mbit/s class at CIR 15M, DSCP 10 in a 10 Mbit/s class at
/// CIR 8M), for 30 s: each carried at its CIR, nothing lost, delay reported, available
/// every second. Voice sends 1518-byte frames and video an EMIX: at a few thousand frames
/// a second the generator spins on its core between frames, and larger frames keep that
/// neighbour to the other tests small.
fn y1564_performance_test_runs_two_services_at_once() {
    let dir = Scratch::new("y1564-perf");
    let shape = dir.join("shape.toml");
    std::fs::write(
        &shape,
        "[[class]]\nname = \"ef\"\ndscp = 46\nrate = \"20M\"\n\n\
         [[class]]\nname = \"af11\"\ndscp = 10\nrate = \"10M\"\n",
    )
    .unwrap();
    let lab = LabGuard::up_with("shaper", "y1p", &["--shape", shape.to_str().unwrap()]);
    let service = |name: &str, dscp: u8, sizes: &str, cir: &str| {
        format!(
            "[[service]]\nname = \"{name}\"\nsource = \"talker:eth0\"\n\
             destination = \"listener:eth0\"\ndscp = {dscp}\n{sizes}\n\
             cir = \"{cir}\"\n[service.sac]\nflr = \"0.1%\"\nftd = \"50ms\"\n\
             fdv = \"20ms\"\n"
        )
    };
    let list = service("voice", 46, "size = 1518", "15M")
        + &service("video", 10, "emix = \"abceg\"", "8M");
    let (code, v) = y1564(&lab, &list, &["--tests", "performance", "--duration", "30"]);
    let rows = v["y1564"]["performance"]["services"]
        .as_array()
        .expect("performance rows");
    assert_eq!(rows.len(), 2, "{v}");
    for (row, cir) in rows.iter().zip([15e6, 8e6]) {
        let ir = row["ir_bps"].as_f64().unwrap_or(0.0);
        assert!(
            (ir - cir).abs() <= cir * 0.02,
            "IR {ir} against CIR {cir}: {row}"
        );
        assert_eq!(row["lost"], 0, "{row}");
        assert_eq!(row["flr"], 0.0, "{row}");
        for k in ["min_us", "mean_us", "max_us", "fdv_us"] {
            assert!(row["delay"][k].as_f64().is_some(), "{k}: {row}");
        }
        assert_eq!(row["availability_pct"], 100.0, "{row}");
        assert!(row["seconds"].as_u64().unwrap_or(0) >= 27, "{row}");
        assert_eq!(row["pass"], true, "{row}");
    }
    // The time series: a row per second per service and one for their sum.
    assert!(
        v["intervals"].as_array().is_some_and(|r| r.len() >= 3 * 27),
        "{v}"
    );
    assert_eq!(code, Some(0), "{v}");
}

/// `wirebench client ADDR ARGS -J` from `from` to a server on `to` at `addr`, in `lab`.
pub(crate) fn client_between(
    lab: &LabGuard,
    from: &str,
    to: &str,
    addr: &str,
    args: &[&str],
) -> serde_json::Value {
    let mut server = server_on(lab, to, addr);
    let mut argv = vec![
        "lab",
        "exec",
        "--name",
        &lab.0,
        from,
        "--",
        bin(),
        "client",
        addr,
    ];
    argv.extend(args);
    argv.push("-J");
    let v = run_json(&argv);
    let _ = server.kill();
    let _ = server.wait();
    v
}

/// A lab from a topology file: a switch of four ports (a Linux bridge, its FDB ageing
/// time from the file) with a host on each, every host reaching every other in the one
/// subnet the switch makes; and a chain of two routers between two hosts, its middle link
/// policed at the file's 50 Mbit/s, the routes worked out from the file.
fn a_topology_file_builds_a_switch_and_a_chain_of_routers() {
    let dir = Scratch::new("topofile");
    let file = |name: &str, nodes: &[(&str, &str)], links: &[(&str, &str, &str)]| {
        let mut text = String::new();
        for (n, role) in nodes {
            text += &format!("[[node]]\nname = \"{n}\"\nrole = \"{role}\"\n");
            if *role == "switch" {
                text += "ageing_s = 60\n";
            }
        }
        for (a, b, extra) in links {
            text += &format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\n{extra}\n");
        }
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let switch = file(
        "switch.toml",
        &[
            ("sw", "switch"),
            ("h1", "host"),
            ("h2", "host"),
            ("h3", "host"),
            ("h4", "host"),
        ],
        &[
            ("h1:eth0", "sw:p1", ""),
            ("h2:eth0", "sw:p2", ""),
            ("h3:eth0", "sw:p3", ""),
            ("h4:eth0", "sw:p4", ""),
        ],
    );
    let lab = LabGuard::up_with(&switch, "tf", &[]);
    assert_eq!(lab.namespaces().len(), 5);
    let ns = format!("wb-{}-sw", lab.0);
    let out = Command::new("ip")
        .args(["-n", &ns, "-d", "-j", "link", "show", "br0"])
        .output()
        .unwrap();
    let br: serde_json::Value = serde_json::from_slice(&out.stdout).expect("br0 as JSON");
    assert_eq!(br[0]["linkinfo"]["info_data"]["ageing_time"], 6000, "{br}");
    let out = Command::new("ip")
        .args(["-n", &ns, "-j", "link", "show", "master", "br0"])
        .output()
        .unwrap();
    let ports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ports.as_array().map(Vec::len), Some(4), "{ports}");
    // Each host's address in file order, and h1 and h3 reach h4 through the bridge.
    for (from, to, addr) in [("h1", "h4", "198.18.1.4"), ("h3", "h2", "198.18.1.2")] {
        let v = client_between(
            &lab,
            from,
            to,
            addr,
            &["-u", "-b", "20M", "-l", "1000", "-t", "1"],
        );
        let sent = u64_at(&v, "/summary/sent_packets");
        assert!(sent > 2000, "{v}");
        assert!(u64_at(&v, "/summary/lost_packets") * 1000 <= sent, "{v}");
    }
    drop(lab);

    let chain = file(
        "chain.toml",
        &[
            ("a", "host"),
            ("r1", "router"),
            ("r2", "router"),
            ("b", "host"),
        ],
        &[
            ("a:eth0", "r1:eth0", ""),
            ("r1:eth1", "r2:eth0", "rate = \"50M\""),
            ("r2:eth1", "b:eth0", ""),
        ],
    );
    let lab = LabGuard::up_with(&chain, "tc", &[]);
    // 80 Mbit/s offered across two routed hops: the middle link carries at most its 50
    // Mbit/s of L2 (a busy machine only carries less), so about 30 are lost.
    let v = client_between(
        &lab,
        "a",
        "b",
        "198.18.3.2",
        &["-u", "-b", "80M", "-l", "1472", "-t", "2"],
    );
    let got = f64_at(&v, "/summary/received_bps");
    assert!(
        (10e6..=50e6 * 1472.0 / 1514.0 * 1.02).contains(&got),
        "{got} bit/s: {v}"
    );
    assert!(u64_at(&v, "/summary/lost_packets") > 0, "{v}");
}

/// A topology file with a mistake is refused before anything is built, naming the file,
/// the line and the field.
fn a_bad_topology_file_names_file_line_and_field_and_builds_nothing() {
    let dir = Scratch::new("topofile-bad");
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[[node]]\nname = \"a\"\nrole = \"host\"\n[[node]]\nname = \"r\"\nrole = \"hub\"\n",
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let out = run(&["lab", "up", p, "--name", "tfbad"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{p}:6: node[2].role: unknown role 'hub'")),
        "{err}"
    );
    assert!(namespaces_of("tfbad").is_empty());
}

fn lab_down_leaves_no_namespace_process_or_state() {
    let lab = LabGuard::up_with("impair", "k", &["--impair", "loss=1%"]);
    let pid = stage_state(&lab, "dut")["pid"].as_u64().unwrap();
    assert!(running(pid));
    let out = run(&["lab", "down", &lab.0]);
    assert!(out.status.success());
    assert!(lab.namespaces().is_empty());
    assert!(!running(pid), "stage {pid} still runs");
    assert!(!std::path::Path::new(&format!("/run/wirebench/labs/{}", lab.0)).exists());

    // A namespace removed by hand takes its stage with it.
    let lab = LabGuard::up_with("impair", "m", &[]);
    let pid = stage_state(&lab, "dut")["pid"].as_u64().unwrap();
    let ns = format!("wb-{}-dut", lab.0);
    assert!(Command::new("ip")
        .args(["netns", "del", &ns])
        .status()
        .unwrap()
        .success());
    let gone = (0..50).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        !running(pid)
    });
    assert!(gone, "the stage outlived its namespace");
}

fn impairment_settings_are_checked_before_anything_is_built() {
    for (args, needle) in [
        (
            vec!["impair", "--impair", "loss=200%"],
            "loss must be between 0 and 100",
        ),
        (vec!["impair", "--impair", "delay=5"], "delay needs a unit"),
        (
            vec!["impair", "--impair", "lose=1%"],
            "unknown field `lose`",
        ),
        (vec!["router", "--impair", "loss=1%"], "--impair belongs to"),
        (
            vec!["impair", "--path-a", "loss=1%"],
            "--path-a/--path-b belongs to",
        ),
    ] {
        let mut argv = vec!["lab", "up"];
        argv.extend(args);
        argv.extend(["--name", "bad", "--dry-run"]);
        assert_fails(&run(&argv), 2, needle);
    }
    // A topology file names the line of an unknown key.
    let dir = std::env::temp_dir().join(format!("wb-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("t.toml");
    std::fs::write(
        &f,
        "topology = \"impair\"\n[impair]\nloss = \"1%\"\nlatency = \"1ms\"\n",
    )
    .unwrap();
    let f = f.to_string_lossy().into_owned();
    assert_fails(&run(&["lab", "up", &f, "--dry-run"]), 2, "line 4");
    // The dry run shows the stage it would start, ready to paste.
    let out = run(&[
        "lab",
        "up",
        "impair",
        "--name",
        "dry",
        "--impair",
        "loss=1%",
        "--dry-run",
    ]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{s}");
    assert!(s.contains("ethtool -K eth0 tx off"), "{s}");
    assert!(
        s.contains("lab stage --netns-file /run/netns/wb-dry-dut"),
        "{s}"
    );
    assert!(
        !s.contains("net.ipv4.ip_forward=1"),
        "the dut kernel does not forward: {s}"
    );
    let _ = std::fs::remove_dir_all(dir);
    // The example topology files are valid.
    for example in ["lab-impair.toml", "lab-twopath.toml"] {
        let path = format!("{}/examples/{example}", env!("CARGO_MANIFEST_DIR"));
        let out = run(&["lab", "up", &path, "--name", "ex", "--dry-run"]);
        assert!(
            out.status.success(),
            "{example}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The RTX2000 report's matrix on the shaper lab, cut to its corners and middle (4 of its 15
/// frame sizes, 100..1500, x 8 of its 14 bandwidths, 100m..64k; the whole matrix is the
/// same command with `--sizes 100..1500/100` and took 5 minutes of CI), 100 % of a
/// 100 Mbit/s port offered. Every cell the generator could offer above its bandwidth passes
/// within 3 % of bandwidth / offered for frames of 500 bytes and more (a cell read low is
/// measured twice more; the shaper's queue is emptied between cells, so 1m and below do
/// not read 0 %), and the class has its rate back afterwards.
fn shaper_matrix_of_the_rtx2000_report() {
    let shape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/shaper-two-classes.toml"
    );
    let lab = LabGuard::up_with("shaper", "m", &["--shape", shape]);
    let argv = [
        "shaping",
        "--lab",
        &lab.0,
        "--line-rate",
        "100M",
        "--sizes",
        "100,500,1000,1500",
        "--bandwidths",
        "100m,50m,20m,10m,5m,1m,512k,64k",
        "-t",
        "0.2",
        "-J",
    ];
    let before = shaper_classes(&lab);
    let out = run_within(&argv, std::time::Duration::from_secs(900));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cells = v["shaping"]["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 4 * 8);
    // Every frame received went through class 1:10; the class passed no more than that
    // and what was still in its queue (1000 frames at most) when a cell's receiver stopped.
    let received: u64 = cells.iter().map(|c| u64_at(c, "/received")).sum();
    let class = class_passed(&before, &shaper_classes(&lab), "1:10");
    assert!(
        received <= class && class - received <= 1000 * cells.len() as u64,
        "cells received {received} frames, the class passed {class}"
    );
    let mut checked = 0;
    let mut outliers = Vec::new();
    for c in cells {
        let (len, bw) = (u64_at(c, "/frame_len"), f64_at(c, "/bandwidth_bps"));
        let expected = bw / (f64_at(c, "/offered_fps") * 8.0 * len as f64);
        let got = f64_at(c, "/passed_of_offered");
        eprintln!(
            "{len:>5} {bw:>10} {:>7.2} % (expected {:>6.2} %)",
            got * 100.0,
            expected * 100.0
        );
        if len >= 500 && c["generator_limited"] == false {
            // `shaped_rate_holds`: each cell is one 0.2 s trial, where the class's bucket
            // is a few percent of what passes, so one of 24 may read up to 6 % over (three
            // of 110 in the whole matrix); every other cell holds 3 %. A cell of few
            // frames (38 at 64 kbit/s of 500-byte frames) is also off by the frame its span
            // starts or ends with: two frames more either way. Below, 50 Mbit/s of
            // 500-byte frames read 78 % beside two busy loops and a build, 68 % in a CI run.
            let ratio = got / expected;
            let frames = 2.0 / u64_at(c, "/received").max(1) as f64;
            assert!(
                shaped_rate_holds(ratio + frames, 1.0, 0.06 + 2.0 * frames),
                "{c}"
            );
            if ratio > 1.03 + frames {
                outliers.push(c.clone());
            }
            checked += 1;
        }
    }
    assert!(outliers.len() <= 1, "{outliers:#?}");
    // Cells whose generator fell short measure the machine, not the shaper (four of 24
    // on a crowded machine): at least half the cells are checked.
    assert!(checked >= 12, "{checked} cells checked");
    let ns = format!("wb-{}-dut", lab.0);
    let tc = Command::new("tc")
        .args(["-n", &ns, "class", "show", "dev", "eth1", "classid", "1:10"])
        .output()
        .expect("tc");
    let class = String::from_utf8_lossy(&tc.stdout);
    assert!(
        class.contains("rate 10Mbit ceil 10Mbit"),
        "restored: {class}"
    );
}

/// Waits (up to 10 s) until lab `name` has a namespace.
fn wait_for_a_namespace(name: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while namespaces_of(name).is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "lab {name} never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn kill9(child: &mut std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// `lab up` killed half-way leaves a stale lab: `lab down --stale` removes all of it (no
/// namespace, no process, no run directory), and leaves a finished lab alone.
fn a_lab_up_killed_half_way_is_removed_by_down_stale() {
    let kept = LabGuard::up("direct", "k");
    let name = format!("s{:x}", std::process::id() & 0xfff);
    let _guard = LabGuard(name.clone());
    let mut up = Command::new(bin())
        .args(["lab", "up", "frer", "--name", &name])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_a_namespace(&name);
    kill9(&mut up);
    assert!(
        !namespaces_of(&name).is_empty(),
        "killed before it built anything"
    );
    let out = run(&["lab", "down", "--stale"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&name),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(namespaces_of(&name).is_empty(), "namespaces left");
    assert!(
        !std::path::Path::new("/run/wirebench/labs")
            .join(&name)
            .exists(),
        "run directory left"
    );
    let ps = Command::new("sh")
        // ([w]b: the pattern does not match this command line itself.)
        .args(["-c", &format!("pgrep -af '[w]b-{name}-' || true")])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ps.stdout).trim().is_empty(),
        "processes left: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
    // The finished lab is not stale.
    assert_eq!(kept.namespaces().len(), 2);
}

/// Two `lab up` of one name at once: one builds the lab, the other is refused, and the
/// lab works.
fn two_concurrent_lab_ups_of_one_name_leave_one_working_lab() {
    let name = format!("c{:x}", std::process::id() & 0xfff);
    let lab = LabGuard(name.clone());
    let spawn = || {
        Command::new(bin())
            .args(["lab", "up", "router", "--name", &name])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let ok = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(
        ok,
        1,
        "{:?}",
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
    );
    let loser = outs.iter().find(|o| !o.status.success()).unwrap();
    assert!(String::from_utf8_lossy(&loser.stderr).contains("exists already"));
    assert_eq!(lab.namespaces().len(), 3);
    let v = udp_across(&lab, "198.18.2.1");
    assert!(u64_at(&v, "/summary/received_packets") > 0);
}

/// A `run` killed with SIGKILL after it built its lab: the same run again removes the
/// stale lab and completes, and leaves nothing behind.
fn a_killed_run_is_run_again() {
    let name = format!("r{:x}", std::process::id() & 0xfff);
    let _guard = LabGuard(name.clone());
    let dir = std::env::temp_dir().join(format!("wb-killed-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "[plan]\ntitle = \"killed\"\n[target]\nlab = \"direct\"\n[[test]]\nname = \"udp\"\nkind = \"client\"\nargs = \"-u -b 10M -t 3\"\n",
    )
    .unwrap();
    let args = |out: &str| {
        vec![
            "run".to_owned(),
            plan.display().to_string(),
            "--out".into(),
            dir.join(out).display().to_string(),
            "--name".into(),
            name.clone(),
        ]
    };
    let mut first = Command::new(bin())
        .args(args("a"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_a_namespace(&name);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    kill9(&mut first);
    assert!(
        !namespaces_of(&name).is_empty(),
        "the killed run's lab is left"
    );
    let again = Command::new(bin()).args(args("b")).output().unwrap();
    assert!(
        again.status.success(),
        "{}{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(namespaces_of(&name).is_empty(), "the run removes its lab");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `server --rx-backend xdp`: a UDP test's datagrams are counted through AF_XDP (the result
/// says so, and nothing is lost at a rate the lab carries), GSO batches too; the program's,
/// the kernel's and the receiver's frame counts agree; a test of two receiving
/// streams uses sockets and says why; the program leaves the interface after each test.
fn server_rx_backend_xdp_counts_udp_past_the_stack() {
    let lab = LabGuard::up("direct", "sx");
    let mut server = server_on_with(&lab, "listener", "198.18.0.2", &["--rx-backend", "xdp"]);
    let client = |extra: &[&str]| {
        let mut argv = vec![
            "lab",
            "exec",
            "--name",
            &lab.0,
            "talker",
            "--",
            bin(),
            "client",
            "198.18.0.2",
            "-u",
            "-t",
            "2",
            "-J",
        ];
        argv.extend(extra);
        run_json(&argv)
    };
    let v = client(&["--pps", "50000", "-l", "200"]);
    assert_eq!(v["receive_mode"], "af_xdp", "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("through AF_XDP"), "{notes}");
    // 100,000 datagrams, all but 1 % unless the sender says it fell behind on a busy
    // machine (89,593 were seen); every one sent was received.
    let sent = crate::frer::sent_of(&v, 100_000);
    assert_eq!(u64_at(&v, "/summary/lost_packets"), 0, "{v}");
    assert_eq!(u64_at(&v, "/summary/received_packets"), sent, "{v}");
    // The XDP program's count of frames it redirected, the kernel's drops and the
    // receiver's reads agree; with one datagram per send (sendmmsg), one frame each.
    let frames = |v: &serde_json::Value| {
        (
            u64_at(v, "/af_xdp_frames/redirected"),
            u64_at(v, "/af_xdp_frames/read"),
            u64_at(v, "/af_xdp_frames/dropped"),
        )
    };
    let (redirected, read, dropped) = frames(&v);
    assert_eq!(redirected, read + dropped, "{v}");
    if v["backend"] == "udp-sendmmsg" {
        assert_eq!(read, sent, "{v}");
    } else {
        assert!(
            read > 0 && read <= sent,
            "{read} frames for {sent} datagrams: {v}"
        );
    }
    // As fast as the sender goes, in GSO batches: veth passes a batch on whole, so the
    // receiver sees one frame of many datagrams. The server tells the client how much a
    // frame holds and cuts each into its datagrams (before: a batch longer than a frame
    // was dropped by the kernel, a shorter one counted as one datagram; 0 and 1/64 of
    // those sent were counted). Here the receiver may fall behind, so at least half.
    let v = client(&["-b", "0", "-l", "100", "--udp-backend", "gso"]);
    assert_eq!(v["receive_mode"], "af_xdp", "{v}");
    let sent = u64_at(&v, "/summary/sent_packets");
    let received = u64_at(&v, "/summary/received_packets");
    assert!(
        sent > 10_000 && received * 2 >= sent,
        "{received} of {sent}: {v}"
    );
    // Batches: fewer frames than datagrams, and still every frame read or dropped.
    let (redirected, read, dropped) = frames(&v);
    assert_eq!(redirected, read + dropped, "{v}");
    assert!(
        read > 0 && read < received,
        "{read} frames for {received} datagrams: {v}"
    );
    let listener = format!("wb-{}-listener", lab.0);
    assert!(!xdp_attached(&listener, "eth0"), "the program left eth0");
    // Two receiving streams: sockets, with the reason.
    let v = client(&["--pps", "5000", "-l", "200", "-P", "2"]);
    let mode = v["receive_mode"].as_str().unwrap_or_default();
    assert!(
        mode.contains("af_xdp not used: it serves one receiving stream"),
        "{mode}"
    );
    assert!(v["notes"].to_string().contains("not AF_XDP"), "{v}");
    let _ = server.kill();
    let _ = server.wait();
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Root;
    vec![
        crate::harness::case!(direct_lab_carries_traffic_and_leaves_nothing_behind, Root),
        crate::harness::case!(router_lab_forwards_between_two_subnets, Root),
        crate::harness::case!(
            a_second_lab_of_the_same_name_is_refused_and_status_lists_it,
            Root
        ),
        crate::harness::case!(every_port_is_up_when_lab_up_returns, Root),
        crate::harness::case!(dry_run_prints_the_commands_without_root),
        crate::harness::case!(shaper_holds_the_udp_class_to_its_rate, Root),
        crate::harness::case!(shaper_queue_length_sets_the_latency_rrul_measures, Root),
        crate::harness::case!(shaper_class_lists_are_checked_before_anything_is_built),
        crate::harness::case!(impair_fast_path_loses_and_duplicates_in_the_kernel, Root),
        crate::harness::case!(impair_fast_path_rate_limits, Root),
        crate::harness::case!(
            impair_stage_loss_duplicate_and_reorder_match_the_configuration,
            Root
        ),
        crate::harness::case!(impair_stage_delays_and_rate_limits, Root),
        crate::harness::case!(
            rfc6349_finds_the_path_and_tests_tcp_in_the_window_it_needs,
            Root
        ),
        crate::harness::case!(rfc6349_buffer_delay_is_small_over_a_short_queue, Root),
        crate::harness::case!(
            y1564_configuration_test_through_a_shaper_class_and_a_port_policer,
            Root
        ),
        crate::harness::case!(y1564_performance_test_runs_two_services_at_once, Root),
        crate::harness::case!(a_topology_file_builds_a_switch_and_a_chain_of_routers, Root),
        crate::harness::case!(
            a_bad_topology_file_names_file_line_and_field_and_builds_nothing,
            Root
        ),
        crate::harness::case!(twopath_lab_has_two_independently_impaired_paths, Root),
        crate::harness::case!(
            tcp_efficiency_counts_the_retransmissions_a_lossy_path_causes,
            Root
        ),
        crate::harness::case!(lab_down_leaves_no_namespace_process_or_state, Root),
        crate::harness::case!(impairment_settings_are_checked_before_anything_is_built),
        crate::harness::case!(shaper_matrix_of_the_rtx2000_report, Root),
        crate::harness::case!(a_lab_up_killed_half_way_is_removed_by_down_stale, Root),
        crate::harness::case!(
            two_concurrent_lab_ups_of_one_name_leave_one_working_lab,
            Root
        ),
        crate::harness::case!(a_killed_run_is_run_again, Root),
        crate::harness::case!(server_rx_backend_xdp_counts_udp_past_the_stack, Root),
    ]
}
