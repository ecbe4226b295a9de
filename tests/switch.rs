//! `wirebench rfc2889` against a Linux bridge built from a topology file (needs root): four
//! hosts on 10 Mbit/s ports of one switch whose bridge learns at most 512 addresses. The
//! bounds come from the lab itself: each link's rate (a token bucket counting the wire's
//! 24 bytes per frame, so 10M carries 812.7 frames/s of 1518 bytes) and the bridge's limit.

use crate::lab::LabGuard;
use crate::util::*;

/// Ports' rate: each switch port carries at most this.
const LINE: f64 = 10e6;

/// The lab: `sw` with `learning_limit = 512` and h1..h4 on 10 Mbit/s ports.
fn switch_lab(tag: &str) -> (LabGuard, Scratch) {
    let dir = Scratch::new(tag);
    let mut text = String::from(
        "[[node]]\nname = \"sw\"\nrole = \"switch\"\nageing_s = 60\nlearning_limit = 512\n",
    );
    for i in 1..=4 {
        text += &format!("[[node]]\nname = \"h{i}\"\nrole = \"host\"\n");
    }
    for i in 1..=4 {
        text += &format!("[[link]]\na = \"h{i}:eth0\"\nb = \"sw:p{i}\"\nrate = \"10M\"\n");
    }
    let path = dir.join("switch.toml");
    std::fs::write(&path, text).unwrap();
    (LabGuard::up_with(path.to_str().unwrap(), tag, &[]), dir)
}

/// `wirebench rfc2889 TEST PORTS --lab LAB ARGS -J`.
fn rfc2889(lab: &LabGuard, test: &str, hosts: &[&str], args: &[&str]) -> serde_json::Value {
    let ports: Vec<String> = hosts.iter().map(|h| format!("{h}:eth0")).collect();
    let mut all = vec!["rfc2889", test];
    all.extend(ports.iter().map(String::as_str));
    all.extend(["--lab", &lab.0, "-J"]);
    all.extend(args);
    let v = run_json(&all);
    v["rfc2889"].clone()
}

fn max_fps(len: f64) -> f64 {
    LINE / ((len + 20.0) * 8.0)
}

/// Fully meshed at 64 and 1518 bytes: every port sends to every other at the line rate and
/// every port's frames are counted where they arrive; many-to-one into one port offered
/// twice its rate loses about half (the rest its queue delivers); broadcasts reach every
/// other port once each.
fn rfc2889_traffic_tests_on_a_four_port_switch_from_a_file() {
    let (lab, _dir) = switch_lab("r89t");
    let all = ["h1", "h2", "h3", "h4"];
    let v = rfc2889(
        &lab,
        "fully-meshed",
        &all,
        &[
            "--line-rate",
            "10M",
            "--sizes",
            "64,1518",
            "-t",
            "2",
            "--no-search",
        ],
    );
    let sizes = v["sizes"].as_array().expect("sizes");
    assert_eq!(sizes.len(), 2, "{v}");
    for s in sizes {
        let len = s["frame_len"].as_f64().unwrap();
        let ports = s["at_load"]["ports"].as_array().expect("ports");
        assert_eq!(ports.len(), 4, "{s}");
        // Whether this host's senders kept the line rate is the tester's, not the
        // switch's: a busy machine's senders fall behind and then catch up in bursts,
        // which the switch's 64 KB port buffers may drop. The rate and loss of a
        // non-blocking switch are held only where the senders kept their schedule (the
        // result says when they did not); the counting holds always.
        let kept_up = s["at_load"]["generator_limited"] == false;
        let mut sent_total = 0;
        for p in ports {
            // Each port meant to receive a line rate's worth (3 flows of a third each).
            let intended = p["intended_rx_fps"].as_f64().unwrap();
            assert!((intended - max_fps(len)).abs() < 1.0, "{p}");
            let sent = p["sent"].as_u64().unwrap();
            sent_total += sent;
            assert!(
                sent as f64 <= 2.0 * max_fps(len) * 1.01,
                "above its schedule: {p}"
            );
            assert_eq!(p["flood"], 0, "learned ports flood nothing: {p}");
            let fr = p["forwarding_fps"].as_f64().unwrap();
            assert!(fr <= max_fps(len) * 1.02, "more than the port carries: {p}");
            if kept_up {
                assert!(sent as f64 >= 2.0 * max_fps(len) * 0.95, "{p}");
                let lost = p["lost"].as_u64().unwrap();
                assert!(
                    lost * 1000 <= sent,
                    "a non-blocking switch at its line rate: {p}"
                );
                assert!(fr >= max_fps(len) * 0.95, "{p}");
            }
        }
        let t = &s["at_load"]["totals"];
        assert_eq!(t["sent"].as_u64(), Some(sent_total), "{t}");
        // Every frame counted: what arrived and what was lost add up to what was sent
        // (a fully meshed port's frames go to one port each).
        let received: u64 = ports.iter().map(|p| p["received"].as_u64().unwrap()).sum();
        assert_eq!(
            sent_total - t["lost"].as_u64().unwrap(),
            received,
            "every sent frame is received or lost: {s}"
        );
    }

    // Many-to-one: h2 and h3 at the line rate into h1, whose port carries one line rate.
    let v = rfc2889(
        &lab,
        "many-to-one",
        &all[..3],
        &[
            "--line-rate",
            "10M",
            "--sizes",
            "1518",
            "-t",
            "2",
            "--no-search",
        ],
    );
    let at = &v["sizes"][0]["at_load"];
    let loss = at["totals"]["loss_ratio"].as_f64().unwrap();
    assert!(
        (0.40..=0.52).contains(&loss),
        "2x overload loses about half: {at}"
    );
    let fr = at["ports"][0]["forwarding_fps"].as_f64().unwrap();
    assert!(
        fr <= max_fps(1518.0) * 1.03 && fr >= max_fps(1518.0) * 0.9,
        "the egress forwards its line rate: {fr} of {}: {at}",
        max_fps(1518.0)
    );

    // Broadcast from h1: each frame reaches h2, h3 and h4 once; 100 % passes at once.
    let v = rfc2889(
        &lab,
        "broadcast",
        &all,
        &["--line-rate", "10M", "--sizes", "1518", "-t", "1"],
    );
    let s = &v["sizes"][0];
    let ports = s["at_load"]["ports"].as_array().expect("ports");
    let sent = ports[0]["sent"].as_u64().unwrap();
    assert!(sent > 700, "{s}");
    for p in &ports[1..] {
        assert_eq!(p["received"].as_u64(), Some(sent), "once each: {p}");
        assert!(p["latency"]["mean_us"].as_f64().is_some(), "{p}");
    }
    assert_eq!(ports[0]["received"], 0, "the source hears not its own: {s}");
    let fps = s["throughput"]["fps"].as_f64().expect("a throughput");
    assert!((fps - max_fps(1518.0)).abs() < 1.0, "{s}");

    // Maximum forwarding rate: a non-blocking switch passes 100 % fully meshed, so its
    // throughput is the maximum offered load and one trial there gives the rate: four
    // ports' line rates.
    let v = rfc2889(
        &lab,
        "max-forwarding-rate",
        &all,
        &["--line-rate", "10M", "--sizes", "1518", "-t", "1"],
    );
    let s = &v["sizes"][0];
    let (mfr, load) = (
        s["max_forwarding"][0].as_f64(),
        s["max_forwarding"][1].as_f64(),
    );
    let (mfr, load) = (mfr.expect("a rate"), load.expect("a load"));
    assert!(
        (mfr - 4.0 * max_fps(1518.0)).abs() < 4.0 * max_fps(1518.0) * 0.02,
        "{s}"
    );
    assert_eq!(load, 100.0, "{s}");

    // Errored frames: the Linux bridge forwards runts and 1522-byte untagged frames (it
    // checks neither), so they are reported forwarded and the verdict fails (exit 3); the
    // kinds veth cannot carry are said to be not possible.
    let out = run(&[
        "rfc2889",
        "errored-frames",
        "h1:eth0",
        "h2:eth0",
        "--lab",
        &lab.0,
        "--line-rate",
        "10M",
        "--sizes",
        "512",
        "-t",
        "1",
        "-J",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let e = &v["rfc2889"]["errored"];
    assert_eq!(e["valid_lost"], 0, "{e}");
    assert!(e["valid_sent"].as_u64().unwrap_or(0) > 500, "{e}");
    let row = |kind: &str| {
        e["rows"]
            .as_array()
            .and_then(|r| r.iter().find(|x| x["kind"] == kind))
            .cloned()
            .unwrap_or_else(|| panic!("no row {kind}: {e}"))
    };
    for kind in ["undersized", "oversized"] {
        let r = row(kind);
        assert!(r["sent"].as_u64().unwrap_or(0) > 100, "{r}");
        assert_eq!(r["forwarded"], r["sent"], "{r}");
        assert_eq!(r["verdict"], "forwarded", "{r}");
    }
    let fcs = row("bad FCS");
    assert!(fcs["sent"].is_null(), "{fcs}");
    assert!(fcs["verdict"]
        .as_str()
        .unwrap_or("")
        .starts_with("not possible on these ports"));
}

/// Address caching capacity finds the bridge's learning limit exactly (searched from 400
/// to 600 in steps of 1), the monitor seeing one flooded frame per address over it; the
/// learning rate search gives a figure within its bounds.
fn rfc2889_address_tests_find_the_bridges_learning_limit() {
    let (lab, _dir) = switch_lab("r89a");
    let ports = ["h1", "h2", "h3"];
    let v = rfc2889(
        &lab,
        "address-caching",
        &ports,
        &[
            "--switch",
            "sw",
            "--min-addresses",
            "400",
            "--max-addresses",
            "600",
            "--learning-fps",
            "5000",
        ],
    );
    let a = &v["addresses"];
    assert_eq!(a["result"].as_f64(), Some(512.0), "{a}");
    // The test's addresses do not stay in the bridge after it (a test next would flood):
    // at most the hosts' own are learned again.
    let fdb = std::process::Command::new("bridge")
        .args([
            "-n",
            &format!("wb-{}-sw", lab.0),
            "fdb",
            "show",
            "br",
            "br0",
        ])
        .output()
        .expect("bridge");
    let fdb = String::from_utf8_lossy(&fdb.stdout);
    let learned = fdb.lines().filter(|l| !l.contains("permanent")).count();
    assert!(
        learned <= 4,
        "flushed after the test: {learned} learned\n{fdb}"
    );
    assert_eq!(a["failed"].as_f64(), Some(513.0), "{a}");
    assert_eq!(a["bridge"][1], 512, "the limit the bridge reports: {a}");
    for t in a["trials"].as_array().expect("trials") {
        let n = t["addresses"].as_u64().unwrap();
        assert_eq!(t["sent"].as_u64(), Some(n), "{t}");
        assert_eq!(t["at_learning_port"].as_u64(), Some(n), "{t}");
        assert_eq!(
            t["at_monitor"].as_u64(),
            Some(n.saturating_sub(512)),
            "what is not learned floods: {t}"
        );
    }

    let v = rfc2889(
        &lab,
        "learning-rate",
        &ports,
        &[
            "--switch",
            "sw",
            "--addresses",
            "256",
            "--max-rate",
            "20000",
        ],
    );
    let a = &v["addresses"];
    let (min, max) = (a["min"].as_f64().unwrap(), a["max"].as_f64().unwrap());
    assert_eq!((min, max), (1000.0, 20000.0), "{a}");
    let r = a["result"].as_f64().expect("a learning rate");
    assert!((min..=max).contains(&r), "{a}");
    for t in a["trials"].as_array().expect("trials") {
        assert_eq!(t["addresses"], 256, "{t}");
    }
}

/// The lab of [`switch_lab`] with three hosts, each with a second port on a management
/// switch `mg` (198.18.200.N), over which a controller on h1 reaches the servers on h2
/// and h3 that lend their test ports.
fn lent_switch_lab(tag: &str) -> (LabGuard, Scratch) {
    let dir = Scratch::new(tag);
    let mut text = String::from(
        "[[node]]\nname = \"sw\"\nrole = \"switch\"\nageing_s = 60\n\
         [[node]]\nname = \"mg\"\nrole = \"switch\"\n",
    );
    for i in 1..=3 {
        text += &format!("[[node]]\nname = \"h{i}\"\nrole = \"host\"\n");
    }
    for i in 1..=3 {
        text += &format!(
            "[[link]]\na = \"h{i}:eth0\"\nb = \"sw:p{i}\"\nrate = \"10M\"\n\
             [[link]]\na = \"h{i}:eth1\"\nb = \"mg:m{i}\"\nsubnet = \"198.18.200.0/24\"\n\
             a_addr = \"198.18.200.{i}\"\n"
        );
    }
    let path = dir.join("lent.toml");
    std::fs::write(&path, text).unwrap();
    (LabGuard::up_with(path.to_str().unwrap(), tag, &[]), dir)
}

/// RFC 2889 over a server's lent ports: the controller on h1 drives its own eth0 and the
/// eth0 that servers on h2 and h3 lend. Fully meshed, every frame is counted where it
/// arrives and nothing floods (the learning frames are unicast, which a lent port sends
/// under its default policy); with learning off at h2's switch port, every frame to h2
/// floods to the other two ports and each counts it, the lent h3 as h1 here does (its
/// reception reports the strays); a broadcast from h1 reaches both lent ports once each;
/// a broadcast from a lent port is refused by its server's default policy.
fn rfc2889_runs_over_a_servers_lent_ports_and_counts_their_floods() {
    let (lab, dir) = lent_switch_lab("r89l");
    let key = dir.join("key");
    key_file(&key, "0123456789abcdef0123456789abcdef");
    let h2 = crate::agents::agent_with(&lab, "h2", "198.18.200.2", &key, &[]);
    let h3 = crate::agents::agent_with(&lab, "h3", "198.18.200.3", &key, &[]);
    let ports = [
        "eth0".to_owned(),
        format!("198.18.200.2:{}/eth0", h2.port),
        format!("198.18.200.3:{}/eth0", h3.port),
    ];
    let key_s = key.to_string_lossy().to_string();
    let rfc2889 = |test: &str, ports: &[&str], args: &[&str]| {
        let mut all = vec!["rfc2889", test];
        all.extend(ports);
        all.extend(["--auth-key-file", &key_s, "--line-rate", "10M", "-J"]);
        all.extend(args);
        crate::agents::on_node(&lab, "h1", &all)
    };
    let json = |out: std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        v["rfc2889"].clone()
    };
    let all: Vec<&str> = ports.iter().map(String::as_str).collect();

    // Fully meshed at the line rate: as on ports of one host.
    let v = json(rfc2889(
        "fully-meshed",
        &all,
        &["--sizes", "64,1518", "-t", "2", "--no-search"],
    ));
    for s in v["sizes"].as_array().expect("sizes") {
        let len = s["frame_len"].as_f64().unwrap();
        let rows = s["at_load"]["ports"].as_array().expect("ports");
        assert_eq!(rows.len(), 3, "{s}");
        let mut sent_total = 0;
        for p in rows {
            let sent = p["sent"].as_u64().unwrap();
            sent_total += sent;
            assert!(sent as f64 <= 2.0 * max_fps(len) * 1.01, "{p}");
            assert!(sent as f64 >= 2.0 * max_fps(len) * 0.5, "it sent: {p}");
            assert_eq!(p["flood"], 0, "learned ports flood nothing: {p}");
            assert!(p["received"].as_u64().unwrap() > 0, "{p}");
            assert!(
                p["latency"]["mean_us"].as_f64().is_some(),
                "one host's clock: {p}"
            );
        }
        let received: u64 = rows.iter().map(|p| p["received"].as_u64().unwrap()).sum();
        let lost = s["at_load"]["totals"]["lost"].as_u64().unwrap();
        assert_eq!(sent_total - lost, received, "every frame counted: {s}");
    }

    // Learning off at h2's port (its address forgotten): frames to h2 flood.
    let sw = format!("wb-{}-sw", lab.0);
    let out = std::process::Command::new("ip")
        .args([
            "-n",
            &sw,
            "link",
            "set",
            "dev",
            "p2",
            "type",
            "bridge_slave",
        ])
        .args(["learning", "off", "fdb_flush"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v = json(rfc2889(
        "fully-meshed",
        &all,
        &["--sizes", "512", "-t", "2", "--no-search", "--load", "30%"],
    ));
    let rows = v["sizes"][0]["at_load"]["ports"]
        .as_array()
        .expect("ports")
        .clone();
    let sent = |i: usize| rows[i]["sent"].as_u64().unwrap();
    let flood = |i: usize| rows[i]["flood"].as_u64().unwrap();
    // Each port sends half its frames to h2; at 30 % nothing is lost, so each of those
    // arrives at the third port too. h2's own frames go to learned addresses.
    assert_eq!(flood(1), 0, "{rows:?}");
    for (at, from) in [(0, 2), (2, 0)] {
        let half = sent(from) as f64 / 2.0;
        assert!(
            flood(at) as f64 >= half * 0.98 && flood(at) as f64 <= half + 1.0,
            "port {at} sees port {from}'s frames to h2: {} of {half}: {rows:?}",
            flood(at)
        );
    }

    // A broadcast from h1: counted once at each lent port.
    let v = json(rfc2889(
        "broadcast",
        &all,
        &["--sizes", "1518", "-t", "1", "--no-search"],
    ));
    let rows = v["sizes"][0]["at_load"]["ports"]
        .as_array()
        .expect("ports")
        .clone();
    let sent = rows[0]["sent"].as_u64().unwrap();
    assert!(sent > 700, "{rows:?}");
    for p in &rows[1..] {
        assert_eq!(p["received"].as_u64(), Some(sent), "once each: {p}");
    }

    // From a lent port, a broadcast is the server's to allow.
    let out = rfc2889(
        "broadcast",
        &[all[1], all[0], all[2]],
        &["--sizes", "1518", "-t", "1", "--no-search"],
    );
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--raw-allow-broadcast"), "{err}");
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Root;
    vec![
        crate::harness::case!(
            rfc2889_traffic_tests_on_a_four_port_switch_from_a_file,
            Root
        ),
        crate::harness::case!(rfc2889_address_tests_find_the_bridges_learning_limit, Root),
        crate::harness::case!(
            rfc2889_runs_over_a_servers_lent_ports_and_counts_their_floods,
            Root
        ),
    ]
}
