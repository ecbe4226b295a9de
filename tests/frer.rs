//! The `frer` lab end to end (needs root): two FRER relays in user space, both paths
//! impaired by their own stage; the client, the path analyzer and the relay's 802.1CB
//! counters must tell the same story. Each test has its own lab name.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::lab::{
    bpf_programs_of, client_across, loaded_programs, unloaded_within_5s, within_binomial, LabGuard,
};
use crate::util::*;
use engine::frameio::Backend;

/// Starts `wirebench frer analyze` on the merge node's two path ports and returns once it
/// captures (its stderr says so).
fn analyzer(lab: &LabGuard, secs: &str) -> Child {
    let mut child = Command::new(bin())
        .args([
            "frer",
            "analyze",
            "--lab",
            &lab.0,
            "--rx",
            "merge:eth1",
            "--rx",
            "merge:eth2",
            "-t",
            secs,
            "-J",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("frer analyze");
    let mut line = String::new();
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    err.read_line(&mut line).expect("analyzer stderr");
    assert!(line.starts_with("capturing"), "analyzer: {line}");
    // Keep reading, so a later message never meets a closed pipe.
    std::thread::spawn(move || {
        let mut rest = String::new();
        while err.read_line(&mut rest).is_ok_and(|n| n > 0) {
            eprint!("analyzer: {rest}");
            rest.clear();
        }
    });
    child
}

fn finish(child: Child) -> serde_json::Value {
    let out = child.wait_with_output().expect("analyzer");
    assert!(out.status.success(), "analyzer failed");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("analyzer JSON");
    assert_eq!(v["schema"], "wirebench.result/1", "{v}");
    v["frer_analysis"].clone()
}

/// The eliminating relay's counters of the stream toward the listener.
fn elimination(lab: &LabGuard) -> serde_json::Value {
    // Let the relay publish (every 200 ms) what it counted last.
    std::thread::sleep(Duration::from_millis(500));
    let v = run_json(&["frer", "stats", "--lab", &lab.0, "-J"]);
    let label = format!("{}/merge", lab.0);
    let relays = v["relays"].as_array().expect("relays");
    let merge = relays.iter().find(|r| r["label"] == label.as_str());
    merge.expect("the merge relay")["counters"]["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .find(|s| s["name"] == "to-listener")
        .expect("to-listener stream")["elimination"]
        .clone()
}

/// The relays' data path: `fast=on` (the lab's default) or `fast=off`.
fn frer_opts(fast: bool) -> &'static str {
    if fast {
        "fast=on"
    } else {
        "fast=off"
    }
}

/// Every relay of the lab forwards on the data path asked for (the kernel's where the
/// kernel allows: this machine's does).
fn assert_data_path(lab: &LabGuard, fast: bool) {
    let v = run_json(&["frer", "stats", "--lab", &lab.0, "-J"]);
    let relays = v["relays"].as_array().expect("relays");
    assert_eq!(relays.len(), 2, "{v}");
    for r in relays {
        let path = r["data_path"].as_str().unwrap_or_default();
        if fast {
            assert_eq!(path, "kernel", "{}", r["label"]);
        } else {
            assert_eq!(path, "userspace", "{}", r["label"]);
        }
    }
}

/// The client's result carries the lab's own cost: both relays on the data path asked for
/// and both impairment stages, each with the CPU it used while it forwarded the test's
/// `sent` frames: the fast path's programs by the kernel's count, the userspace relay by
/// its process's (a relay handles every frame, so neither can be zero).
fn assert_lab_cost(v: &serde_json::Value, lab: &LabGuard, fast: bool) {
    let cost = &v["lab_cost"];
    assert!(
        cost["labs"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x == lab.0.as_str())),
        "{cost}"
    );
    let devices = cost["devices"].as_array().expect("devices");
    let of = |node: &str| {
        devices
            .iter()
            .find(|d| d["node"] == node)
            .unwrap_or_else(|| panic!("no {node} in {cost}"))
    };
    for node in ["split", "merge"] {
        let d = of(node);
        assert_eq!(d["device"], "FRER relay", "{d}");
        if fast {
            assert_eq!(d["data_path"], "kernel", "{d}");
            let k = d["kernel_cpu_s"].as_f64().unwrap_or(0.0);
            assert!(k > 0.0, "the fast path's programs ran: {d}");
        } else {
            assert_eq!(d["data_path"], "userspace", "{d}");
            assert!(d.get("kernel_cpu_s").is_none(), "{d}");
            assert!(
                f64_at(d, "/process_cpu_s") > 0.0,
                "the relay read every frame: {d}"
            );
        }
    }
    for node in ["patha", "pathb"] {
        let d = of(node);
        assert_eq!(d["device"], "impairment stage", "{d}");
        let st = crate::lab::stage_state(lab, node);
        assert_eq!(d["data_path"], st["data_path"], "{d}");
    }
    assert!(f64_at(cost, "/seconds") >= 4.0, "{cost}");
}

/// The datagrams a client result sent, of `asked`: all but 1 %, unless the sender says it
/// fell behind its schedule (a busy machine), and in any case half (enough for the bounds
/// that are relative to what was sent).
pub(crate) fn sent_of(v: &serde_json::Value, asked: u64) -> u64 {
    let sent = u64_at(v, "/summary/sent_packets");
    assert!(
        sent >= asked / 100 * 99 || v["summary"]["generator_limited"] == true,
        "sent {sent} of {asked} and not generator-limited: {}",
        v["summary"]
    );
    assert!(sent >= asked / 2, "sent {sent} of {asked}");
    sent
}

fn five_percent_loss_per_path_leaves_a_quarter_percent_end_to_end() {
    five_percent_loss(true);
}

fn five_percent_loss_per_path_userspace_relays() {
    five_percent_loss(false);
}

fn five_percent_loss(fast: bool) {
    let lab = LabGuard::up_with(
        "frer",
        if fast { "fl" } else { "fu" },
        &[
            "--path-a",
            "loss=5%,seed=11",
            "--path-b",
            "loss=5%,seed=12",
            "--frer",
            // A history of 2048 covers 80 ms of skew between the paths: on a busy machine
            // one path's stage can fall that far behind the other for a moment.
            &format!("history=2048,{}", frer_opts(fast)),
        ],
    );
    five_percent_loss_in(&lab, fast);
}

/// The FRER lab built from `examples/lab-frer-network.toml` (its paths' seeds and the
/// relays' history set as above) counts as the built-in does.
fn the_frer_lab_from_a_network_file_leaves_a_quarter_percent_end_to_end() {
    let dir = Scratch::new("frerfile");
    let text = include_str!("../examples/lab-frer-network.toml")
        .replace("loss=5%,seed=1\"", "loss=5%,seed=11\"")
        .replace("loss=5%,delay=1ms,seed=2\"", "loss=5%,seed=12\"")
        .replace(
            "frer = \"history=1024,reset_ms=2000\"",
            "frer = \"history=2048\"",
        )
        .replace(
            "role = \"relay\"\n\n",
            "role = \"relay\"\nfrer = \"history=2048\"\n\n",
        );
    assert_eq!(text.matches("history=2048").count(), 2, "{text}");
    assert_eq!(text.matches("seed=11\"").count(), 1, "{text}");
    assert_eq!(text.matches("seed=12\"").count(), 1, "{text}");
    let path = dir.join("frer.toml");
    std::fs::write(&path, text).expect("write the file");
    let lab = LabGuard::up_with(path.to_str().expect("a UTF-8 path"), "ff", &[]);
    five_percent_loss_in(&lab, true);
}

fn five_percent_loss_in(lab: &LabGuard, fast: bool) {
    assert_data_path(lab, fast);
    let an = analyzer(lab, "7");
    let machine = || crate::lab::backlog_drops() + crate::iperf3::drops_in(lab, "listener") as u64;
    let machine_before = machine();
    // 25,000 frames/s for 4 s: 100,000 frames.
    let v = client_across(
        lab,
        "198.18.30.2",
        &["-u", "--pps", "25000", "-l", "64", "-t", "4"],
    );
    // Frames a busy machine dropped meanwhile, outside the lab's devices: a full CPU
    // backlog queue (veth) or the receiving socket's buffer (3,587 of 100,000 lost were
    // seen with four tests and two busy loops on the two cores).
    let machine_dropped = machine() - machine_before;
    // Every figure below is relative to what was sent.
    let sent = sent_of(&v, 100_000);
    assert_lab_cost(&v, lab, fast);
    let lost = u64_at(&v, "/summary/lost_packets");
    assert_eq!(u64_at(&v, "/summary/duplicate_packets"), 0);
    // Independent 5 % on each path: both copies lost with p = 0.0025, when the paths'
    // loss was all there was. Either way the loss figure is checked below against the
    // eliminator's and the analyzer's counts.
    if machine_dropped == 0 {
        assert!(
            within_binomial(lost, sent, 0.0025),
            "lost {lost} of {sent}, expected about {}",
            sent / 400
        );
    }
    // The eliminator's own count agrees (the last history window is not counted yet).
    let e = elimination(lab);
    let net = e["lost"].as_u64().unwrap() - e["lost_before_first"].as_u64().unwrap();
    assert!(
        net.abs_diff(lost) <= 10,
        "eliminator lost {net}, client lost {lost}"
    );
    assert_eq!(e["rogue"], 0, "history 2048 covers the skew");
    // Each path's stage dropped 5 % of what was sent, by its own count (bridge mode: its
    // forward direction carries the talker's frames).
    let stage_drops: Vec<u64> = ["patha", "pathb"]
        .iter()
        .map(|node| {
            let st = crate::lab::stage_state(lab, node);
            let dropped = u64_at(&st, "/forward/dropped_loss");
            assert!(within_binomial(dropped, sent, 0.05), "{node}: {st}");
            dropped
        })
        .collect();
    // The analyzer on the two path ports: each path misses its stage's drops, the merged
    // view misses what the client missed.
    let a = finish(an);
    let s = &a["streams"][0];
    for p in s["paths"].as_array().unwrap() {
        assert_eq!(p["duplicates"], 0, "no path duplicates: {p}");
        // A path misses every frame its stage dropped, and more when the capture or the
        // machine dropped some (5,583 of 100,000 were seen, with no backlog drops: the
        // analyzer's own capture on a busy machine); the 5 % is checked on the stages' own
        // counts below.
        let missing = p["missing"].as_u64().unwrap();
        assert!(
            missing + 50 >= stage_drops.iter().copied().min().unwrap_or(0),
            "{p}"
        );
        assert_eq!(
            p["rtagged"], p["received"],
            "frames on the paths carry the R-TAG"
        );
    }
    // The merged view misses what the client missed, plus what the capture missed on both
    // paths (at most the fewer of its two rings' drops: 354 against the client's 241 was
    // seen on a busy CI machine), less what the machine dropped after the paths.
    let merged_lost = s["lost"].as_u64().unwrap();
    let capture_drops: Vec<u64> = a["kernel_drops"]
        .as_array()
        .expect("kernel_drops")
        .iter()
        .map(|d| d.as_u64().expect("a count"))
        .collect();
    let missed_by_capture = capture_drops.iter().copied().min().unwrap_or(0);
    assert!(
        merged_lost <= lost + missed_by_capture + 2 && merged_lost + machine_dropped + 2 >= lost,
        "analyzer {merged_lost}, client {lost}, capture drops {capture_drops:?}, \
         machine drops {machine_dropped}"
    );
    let firsts: u64 = s["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["first"].as_u64().unwrap())
        .sum();
    assert_eq!(
        firsts,
        s["unique"].as_u64().unwrap(),
        "every number has one first path"
    );
}

fn a_cut_path_costs_nothing() {
    let lab = LabGuard::up_with("frer", "fc", &["--path-a", "loss=100%"]);
    // Half-way through, path A's link goes down as well (cut at the path node).
    let ns = format!("wb-{}-patha", lab.0);
    let cutter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2000));
        Command::new("ip")
            .args(["-n", &ns, "link", "set", "eth1", "down"])
            .status()
            .expect("ip link set down")
    });
    let v = client_across(
        &lab,
        "198.18.30.2",
        &["-u", "--pps", "20000", "-l", "64", "-t", "3"],
    );
    assert!(cutter.join().expect("cutter").success());
    let sent = sent_of(&v, 60_000);
    assert_eq!(u64_at(&v, "/summary/lost_packets"), 0);
    assert_eq!(u64_at(&v, "/summary/duplicate_packets"), 0);
    let e = elimination(&lab);
    assert_eq!(e["paths"][0]["received"], 0, "path A delivered nothing");
    assert!(e["paths"][1]["passed"].as_u64().unwrap() >= sent);
}

fn without_elimination_every_frame_arrives_twice() {
    without_elimination(true);
}

fn without_elimination_every_frame_arrives_twice_userspace_relays() {
    without_elimination(false);
}

fn without_elimination(fast: bool) {
    let opts = format!("elimination=off,{}", frer_opts(fast));
    let lab = LabGuard::up_with("frer", if fast { "fo" } else { "fp" }, &["--frer", &opts]);
    assert_data_path(&lab, fast);
    let v = client_across(
        &lab,
        "198.18.30.2",
        &["-u", "--pps", "10000", "-l", "64", "-t", "2"],
    );
    let sent = u64_at(&v, "/summary/sent_packets");
    let received = u64_at(&v, "/summary/received_packets");
    let dup = u64_at(&v, "/summary/duplicate_packets");
    assert_eq!(received, sent, "nothing lost");
    // About 100 % duplicates: every frame once per path.
    assert!(
        dup * 100 >= sent * 99 && dup <= sent,
        "{dup} duplicates of {sent}"
    );
    let e = elimination(&lab);
    assert_eq!(e["off"], true);
    assert_eq!(e["discarded"], 0);
}

/// The kernel fast path forwards a test's frames with the programs of the two relays,
/// and once the lab is down none of those programs exists any more (nothing attached to
/// anything: the kernel's program list).
fn the_fast_path_forwards_and_nothing_stays_attached() {
    let lab = LabGuard::up_with("frer", "fk", &[]);
    assert_data_path(&lab, true);
    let v = client_across(
        &lab,
        "198.18.30.2",
        &["-u", "--pps", "20000", "-l", "64", "-t", "2"],
    );
    let sent = sent_of(&v, 40_000);
    assert_eq!(u64_at(&v, "/summary/lost_packets"), 0);
    assert_eq!(u64_at(&v, "/summary/duplicate_packets"), 0);
    // Every number passed once; its second copy was discarded, or was rogue when one path
    // ran more than the history behind the other (a busy machine can hold a stage back
    // for 50 ms as the test starts).
    let e = elimination(&lab);
    let n = |k: &str| e[k].as_u64().unwrap();
    assert!(n("passed") >= sent, "{e}");
    assert_eq!(n("discarded") + n("rogue"), n("passed"), "{e}");
    // Each relay's programs, found through its process's descriptors.
    let stats = run_json(&["frer", "stats", "--lab", &lab.0, "-J"]);
    let mut relays = Vec::new();
    for r in stats["relays"].as_array().expect("relays") {
        let pid = r["pid"].as_u64().expect("pid");
        let ids = bpf_programs_of(pid);
        assert!(
            ids.len() >= 2,
            "a port program and a timer program: {ids:?}"
        );
        assert_eq!(loaded_programs(&ids).len(), ids.len());
        relays.push((pid, ids));
    }
    assert_eq!(relays.len(), 2);
    // A relay killed outright takes its programs with it while its ports still exist.
    let (pid, ids) = &relays[0];
    let killed = Command::new("sh")
        .args(["-c", &format!("kill -KILL {pid}")])
        .status()
        .expect("kill");
    assert!(killed.success());
    unloaded_within_5s(ids, "SIGKILL");
    assert!(
        std::path::Path::new(&format!("/run/netns/wb-{}-split", lab.0)).exists(),
        "the lab is still up"
    );
    // `lab down` takes the other's (named as `lab up` names it).
    let out = run(&["lab", "down", "--name", &lab.0]);
    assert!(out.status.success());
    unloaded_within_5s(&relays[1].1, "lab down");
}

/// For 4 s: the test's 128-byte frames (124 without FCS) with VLAN 100 PCP 5, and the
/// same frames without their tag (120 bytes).
fn count_tagged(rx: &mut dyn engine::frameio::FrameRx) -> (u64, u64) {
    let (mut tagged, mut untagged) = (0u64, 0u64);
    let end = std::time::Instant::now() + Duration::from_secs(4);
    while std::time::Instant::now() < end {
        let _ = rx.recv_frames(Duration::from_millis(100), &mut |f, _| match (
            f.len(),
            f.get(12..16),
        ) {
            (124, Some([0x81, 0x00, hi, lo]))
                if u16::from_be_bytes([*hi, *lo]) == (5 << 13) | 100 =>
            {
                tagged += 1
            }
            (120, _) => untagged += 1,
            _ => {}
        });
    }
    (tagged, untagged)
}

/// VLAN-tagged frames through both relays: the kernel takes the outer tag off on
/// arrival (skb->vlan_tci), so the fast path's replicator tags a frame whose VLAN tag is
/// out of band and its eliminator strips the R-TAG from one (keeping the tag); the
/// userspace relays get the tag back from the packet socket's auxiliary data. Every frame
/// arrives once, with its tag (captures on the listener's port with recvmmsg and with the
/// ring say so), and neither relay counts one as malformed.
fn vlan_tagged_frames_cross_both_data_paths() {
    for fast in [true, false] {
        let lab = LabGuard::up_with(
            "frer",
            if fast { "fv" } else { "fw" },
            &["--frer", frer_opts(fast)],
        );
        assert_data_path(&lab, fast);
        let ep = engine::frameio::Endpoint {
            netns: Some(format!("wb-{}-listener", lab.0)),
            iface: "eth0".into(),
        };
        // Both copying receivers: recvmmsg (PACKET_AUXDATA) and the V3 ring (its header).
        let captures: Vec<_> = [Backend::Packet, Backend::Ring]
            .into_iter()
            .map(|b| {
                let mut rx = b.open_rx(&ep).expect("capture");
                std::thread::spawn(move || (b, count_tagged(rx.as_mut())))
            })
            .collect();
        let argv = crate::raw::gen_across(
            &lab,
            &[
                "-s", "128", "--vlan", "100", "--pcp", "5", "-r", "10kpps", "-n", "2000", "-J",
            ],
        );
        let v = run_json(&argv.iter().map(String::as_str).collect::<Vec<_>>());
        let g = &v["gen"];
        assert_eq!(
            g["received"].as_u64(),
            Some(2000),
            "{}: {g}",
            frer_opts(fast)
        );
        assert_eq!(g["duplicates"].as_u64(), Some(0), "{g}");
        let e = elimination(&lab);
        assert!(e["passed"].as_u64().unwrap() >= 2000, "{e}");
        let stats = run_json(&["frer", "stats", "--lab", &lab.0, "-J"]);
        for r in stats["relays"].as_array().expect("relays") {
            assert_eq!(r["counters"]["malformed"], 0, "{}: {r}", frer_opts(fast));
        }
        for c in captures {
            let (backend, counts) = c.join().expect("capture thread");
            assert_eq!(
                counts,
                (2000, 0),
                "{} {backend:?}: frames with VLAN 100 PCP 5, frames without",
                frer_opts(fast)
            );
        }
    }
}

fn frer_lab_settings_are_checked_before_anything_is_built() {
    for (args, want) in [
        (&["lab", "up", "frer", "--frer", "history=1"][..], "history"),
        (
            &["lab", "up", "frer", "--frer", "colour=red"][..],
            "unknown key 'colour'",
        ),
        (
            &["lab", "up", "direct", "--frer", "history=8"][..],
            "--frer belongs to the frer",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // The dry run shows the relays' commands, the path MTUs and the static neighbours.
    let out = run(&["lab", "up", "frer", "--name", "fd", "--dry-run"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for want in [
        "frer relay --netns-file /run/netns/wb-fd-split",
        "frer relay --netns-file /run/netns/wb-fd-merge",
        "mtu 1510",
        "nud permanent",
    ] {
        assert!(text.contains(want), "dry run lacks {want}:\n{text}");
    }
}

fn compare_measures_both_groups_and_removes_its_labs() {
    let name = format!("k{:x}", std::process::id() & 0xfff);
    // Twice, five times each group, alternating: each run's TCP overhead has an interval,
    // and two runs of the same comparison agree within them (a single sample read
    // +23 %, +71 %, -614 %, +61 % over four runs).
    let mut tcp_costs = Vec::new();
    for run in ["a", "b"] {
        let lab = format!("{name}{run}");
        let v = run_json(&[
            "frer", "compare", "-t", "1", "--repeat", "5", "--name", &lab, "-J",
        ]);
        let f = &v["frer"];
        assert_eq!(f["repeats"], 5, "{f}");
        assert_eq!(
            f["order"].as_str().unwrap().split(", ").collect::<Vec<_>>()[..4],
            ["control", "FRER", "FRER", "control"]
        );
        let rows = f["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), 6, "{v}");
        for r in rows {
            assert!(r["control"].as_f64().unwrap() >= 0.0, "{r}");
            assert!(!r["reason"].as_str().unwrap().is_empty());
        }
        // Throughput and latency were measured in both groups, five times each, and the
        // overhead is the medians'.
        let tcp = &rows[0];
        let (c, f) = (
            tcp["control"].as_f64().unwrap(),
            tcp["frer"].as_f64().unwrap(),
        );
        assert!(c > 1.0 && f > 1.0, "{tcp}");
        for (group, median) in [("control_spread", c), ("frer_spread", f)] {
            let s = &tcp[group];
            assert_eq!(s["n"], 5, "{tcp}");
            assert_eq!(s["median"].as_f64().unwrap(), median, "{tcp}");
            let [lo, hi] = [0, 1].map(|i| s["ci95"][i].as_f64().unwrap());
            assert!(
                s["min"].as_f64().unwrap() <= lo && lo <= median && median <= hi,
                "{s}"
            );
            assert_eq!(s["coverage"], 0.9375, "five samples: [min, max]");
        }
        let o = tcp["overhead_percent"].as_f64().unwrap();
        assert!((o - (c - f) / c * 100.0).abs() < 1e-6, "{tcp}");
        // The finding is either no significant difference (an interval holding 0) or a
        // difference whose interval excludes 0, as the groups' intervals say.
        let d = &tcp["difference"];
        let cost = [0, 1].map(|i| d["cost_interval_percent"][i].as_f64().unwrap());
        let disjoint = {
            let cs = &tcp["control_spread"]["ci95"];
            let fs = &tcp["frer_spread"]["ci95"];
            let x = |v: &serde_json::Value, i: usize| v[i].as_f64().unwrap();
            x(fs, 0) > x(cs, 1) || x(cs, 0) > x(fs, 1)
        };
        assert_eq!(d["significant"], disjoint, "{tcp}");
        assert_eq!(cost[0] > 0.0 || cost[1] < 0.0, disjoint, "{tcp}");
        tcp_costs.push(cost);
        let p50 = &rows[3];
        assert!(p50["control"].as_f64().unwrap() > 0.0 && p50["frer"].as_f64().unwrap() > 0.0);
        // FRER doubles what the merge relay takes in; the control group does not.
        assert!(
            tcp["reason"].as_str().unwrap().contains("2.00 frames"),
            "{tcp}"
        );
        assert_eq!(v["runs"].as_array().unwrap().len(), 30);
        // Both groups' relays forwarded on the kernel's fast path (this kernel has it),
        // as each run's own lab cost read it from their state files.
        let paths = &v["frer"];
        assert_eq!(paths["control_data_path"], "kernel", "{paths}");
        assert_eq!(paths["frer_data_path"], "kernel", "{paths}");
        for r in v["runs"].as_array().unwrap() {
            let relays = r["lab_cost"]["devices"].as_array().expect("lab_cost");
            assert!(relays.iter().any(|d| d["device"] == "FRER relay"), "{r}");
        }
    }
    let [a, b] = [tcp_costs[0], tcp_costs[1]];
    assert!(
        a[0] <= b[1] && b[0] <= a[1],
        "two runs' TCP overhead intervals do not overlap: {a:?} {b:?}"
    );
    // UDP at each group's zero-loss rate, throughputs stated against a 1 Gbit/s line.
    let args = [
        "frer",
        "compare",
        "-t",
        "1",
        "--name",
        &name,
        "--udp",
        "zero-loss",
    ];
    let v = run_json(&[&args[..], &["--line-rate", "1G", "-J"]].concat());
    let rows = v["frer"]["rows"].as_array().expect("rows");
    // Measured once: figures without intervals, never an interval of zero width.
    assert!(v["frer"].get("repeats").is_none(), "{v}");
    assert!(rows
        .iter()
        .all(|r| r.get("control_spread").is_none() && r.get("difference").is_none()));
    let udp = &rows[1];
    assert_eq!(
        udp["metric"], "UDP zero-loss rate (1472 B payload)",
        "{udp}"
    );
    assert!(udp["control"].as_f64().unwrap() > 1.0 && udp["frer"].as_f64().unwrap() > 1.0);
    assert_eq!(
        (&udp["theoretical"], &rows[0]["theoretical"]),
        (&1000.0.into(), &1000.0.into())
    );
    assert!(
        rows[3].get("theoretical").is_none(),
        "latency has no line rate"
    );
    // Measured again at that rate, once: what this row tells is that each group was
    // measured at its own zero-loss rate and not at unlimited load, where user-space relays
    // lose most frames (they forward a few hundred Mbit/s against the sender's Gbit/s).
    // How much a zero-loss rate loses when measured again is the machine's: 0.39 % was
    // seen beside two busy loops, 14.3 % in CI beside another test's raw generator holding
    // a core. So the bound is the half that tells the two apart, not the machine's quiet.
    let loss = &rows[2];
    for g in ["control", "frer"] {
        assert!(loss[g].as_f64().unwrap() < 50.0, "{loss}");
    }
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&left.stdout).contains(&format!("wb-{name}")),
        "compare left its labs behind"
    );
}

fn stats_without_relays_and_bad_relay_flags_are_usage_errors() {
    let out = run(&["frer", "stats", "--lab", "nosuchlab"]);
    assert_fails(&out, 2, "runs no FRER relay");
    let out = run(&[
        "frer",
        "relay",
        "--eliminate",
        "eth1,eth2=eth0",
        "--history",
        "4000",
    ]);
    assert_fails(&out, 2, "history 4000");
    let out = run(&["frer", "analyze", "--rx", "eth0", "-t", "0"]);
    assert_fails(&out, 2, "-t 0");
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Root;
    vec![
        crate::harness::case!(
            five_percent_loss_per_path_leaves_a_quarter_percent_end_to_end,
            Root
        ),
        crate::harness::case!(five_percent_loss_per_path_userspace_relays, Root),
        crate::harness::case!(
            the_frer_lab_from_a_network_file_leaves_a_quarter_percent_end_to_end,
            Root
        ),
        crate::harness::case!(a_cut_path_costs_nothing, Root),
        crate::harness::case!(without_elimination_every_frame_arrives_twice, Root),
        crate::harness::case!(
            without_elimination_every_frame_arrives_twice_userspace_relays,
            Root
        ),
        crate::harness::case!(the_fast_path_forwards_and_nothing_stays_attached, Root),
        crate::harness::case!(vlan_tagged_frames_cross_both_data_paths, Root),
        crate::harness::case!(frer_lab_settings_are_checked_before_anything_is_built),
        crate::harness::case!(compare_measures_both_groups_and_removes_its_labs, Root),
        crate::harness::case!(stats_without_relays_and_bad_relay_flags_are_usage_errors),
    ]
}
