//! Labs from topology files beyond switches (needs root): a chain of three hops, host –
//! router – shaper – router – host, whose shaper holds 20 Mbit/s on its way out, with
//! RFC 2544 and a multi-stream profile across it; and an impair node between two hosts
//! whose stage delays each direction; a link with an impairment of its own. The bounds come
//! from the file (the shaper's rate, the stage's delay and loss).

use crate::lab::{client_between, LabGuard};
use crate::util::*;

/// The chain's file in `dir`: its shaper a plain 20 Mbit/s egress on its second port.
fn chain(dir: &Scratch) -> String {
    let mut text = String::new();
    for (n, role) in [
        ("a", "host"),
        ("r1", "router"),
        ("sh", "shaper"),
        ("r2", "router"),
        ("b", "host"),
    ] {
        text += &format!("[[node]]\nname = \"{n}\"\nrole = \"{role}\"\n");
        if role == "shaper" {
            text += "egress = \"20M\"\n";
        }
    }
    for (a, b) in [
        ("a:eth0", "r1:eth0"),
        ("r1:eth1", "sh:eth0"),
        ("sh:eth1", "r2:eth0"),
        ("r2:eth1", "b:eth0"),
    ] {
        text += &format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\n");
    }
    let path = dir.join("chain.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// RFC 2544 between the chain's ends finds the shaper: 20 Mbit/s of 1514-byte frames as
/// the qdisc counts them (1651 frames/s), plus what its queue (1000 frames, the port's
/// txqueuelen) delivers after a 1-s trial ends; and a stream offered 30 Mbit/s across it
/// is received at the shaper's rate.
fn a_chain_with_a_shaper_from_a_file_carries_rfc2544_and_streams() {
    let dir = Scratch::new("chain");
    let lab = LabGuard::up_with(&chain(&dir), "ch", &[]);
    let v = run_json(&[
        "rfc2544",
        "--lab",
        &lab.0,
        "--tx",
        "a:eth0",
        "--rx",
        "b:eth0",
        "--sizes",
        "1518",
        "-t",
        "1",
        "--line-rate",
        "100M",
        "--tests",
        "throughput",
        "--search",
        "binary",
        "-J",
    ]);
    let fps = v
        .pointer("/rfc2544/throughput/0/fps")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("a throughput: {v}"));
    let shaped = 20e6 / (1514.0 * 8.0);
    assert!(
        (shaped * 0.9..=(shaped + 1000.0) * 1.02).contains(&fps),
        "{fps} frames/s against the shaper's {shaped} and its queue: {v}"
    );

    let profile = dir.join("p.toml");
    std::fs::write(
        &profile,
        "duration = 2\nline_rate = \"100M\"\n[[stream]]\nname = \"s\"\nsource = \"a:eth0\"\n\
         destination = \"b:eth0\"\nprotocol = \"udp\"\nsize = 1518\nload = \"30M\"\n",
    )
    .unwrap();
    let v = run_json(&["streams", profile.to_str().unwrap(), "--lab", &lab.0, "-J"]);
    let row = &v["profile"]["rows"][0];
    assert!(row["lost"].as_u64().unwrap_or(0) > 0, "{row}");
    // Received over the arrivals' span, frames with their FCS: 20 Mbit/s of 1514 bytes.
    let (got, want) = (
        row["received_l2_bps"].as_f64().unwrap_or(0.0),
        20e6 * 1518.0 / 1514.0,
    );
    assert!(
        (got - want).abs() < want * 0.03,
        "{got} against {want}: {row}"
    );
}

/// An impair node forwards between its two ports through its stage: a UDP test across
/// it sees the file's 10 ms each way, and the lab's status names the stage.
fn an_impair_node_from_a_file_delays_what_it_forwards() {
    let dir = Scratch::new("impairnode");
    let text = "[[node]]\nname = \"a\"\nrole = \"host\"\n\
                [[node]]\nname = \"wan\"\nrole = \"impair\"\nimpair = \"delay=10ms\"\n\
                [[node]]\nname = \"b\"\nrole = \"host\"\n\
                [[link]]\na = \"a:eth0\"\nb = \"wan:eth0\"\n\
                [[link]]\na = \"wan:eth1\"\nb = \"b:eth0\"\n";
    let path = dir.join("wan.toml");
    std::fs::write(&path, text).unwrap();
    let lab = LabGuard::up_with(path.to_str().unwrap(), "wi", &[]);
    let status = run(&["lab", "status"]);
    let s = String::from_utf8_lossy(&status.stdout);
    let stage = |dir: &str| {
        s.lines().any(|l| {
            l.starts_with(&format!("{} ", lab.0))
                && l.contains(" wan ")
                && l.contains(dir)
                && l.contains("running")
        })
    };
    assert!(stage("forward") && stage("reverse"), "the stage runs: {s}");
    // b is 198.18.2.2 (the second link's second end).
    let v = client_between(&lab, "a", "b", "198.18.2.2", &["-u", "-b", "1M", "-t", "1"]);
    assert_eq!(u64_at(&v, "/summary/lost_packets"), 0, "{v}");
    assert_one_way_10ms(&v);
}

/// A link's own impairment runs on a stage node of its own (`link1`), first end to second
/// being forward: a UDP test from a to b sees its 10 ms and loses its 10 %, counted by the
/// stage as by the receiver, and the addresses are the link's as without it.
fn a_link_s_impairment_delays_and_drops_what_crosses_it() {
    let dir = Scratch::new("linkimpair");
    let text = "[[node]]\nname = \"a\"\nrole = \"host\"\n\
                [[node]]\nname = \"b\"\nrole = \"host\"\n\
                [[link]]\na = \"a:eth0\"\nb = \"b:eth0\"\n\
                impair = \"delay=10ms,loss=10%,seed=5\"\n";
    let path = dir.join("link.toml");
    std::fs::write(&path, text).unwrap();
    let lab = LabGuard::up_with(path.to_str().unwrap(), "wl", &[]);
    let status = run(&["lab", "status"]);
    let s = String::from_utf8_lossy(&status.stdout);
    assert!(
        s.lines()
            .any(|l| l.starts_with(&format!("{} ", lab.0)) && l.contains(" link1 ")),
        "the link's stage is listed: {s}"
    );
    // b is 198.18.1.2, the link's second end, as it would be without the stage.
    let v = client_between(
        &lab,
        "a",
        "b",
        "198.18.1.2",
        &["-u", "--pps", "2000", "-l", "64", "-t", "2"],
    );
    let sent = u64_at(&v, "/summary/sent_packets");
    let lost = u64_at(&v, "/summary/lost_packets");
    assert!(sent >= 3000, "{v}");
    assert!(
        crate::lab::within_binomial(lost, sent, 0.10),
        "lost {lost} of {sent}"
    );
    let st = crate::lab::stage_state(&lab, "link1");
    let dropped = u64_at(&st, "/forward/dropped_loss");
    // Within a few: the stage also drops the test's handshake and ARP frames, and the
    // receiver also misses what its socket dropped (381 missed, 377 dropped was seen).
    assert!(
        dropped.abs_diff(lost) <= 10,
        "the stage dropped {dropped}, the receiver missed {lost}: {st}"
    );
    assert_one_way_10ms(&v);
}

/// A client result's median one-way delay is that of a 10-ms stage (plus up to 5 ms of a
/// busy machine's own).
fn assert_one_way_10ms(v: &serde_json::Value) {
    let p50 = v
        .pointer("/summary/latency_us/p50")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("a latency: {v}"));
    assert!(
        (10_000.0..15_000.0).contains(&p50),
        "one way through a 10 ms stage: {v}"
    );
}

/// A plan on a lab from a file runs its server-based tests on the node the file marks
/// `talker = true` (host `a`, not a node named talker) toward the server on the one marked
/// `listener = true`: TCP across a 20 Mbit/s link gets at most that. A file without a
/// talker fails such a test with the reason, and the run goes on.
fn a_plans_client_runs_on_the_node_a_file_marks_talker() {
    let dir = Scratch::new("talker");
    let file = |talker: bool| {
        let mut text = String::new();
        for (n, role) in [("a", "host"), ("r1", "router"), ("b", "host")] {
            text += &format!("[[node]]\nname = \"{n}\"\nrole = \"{role}\"\n");
            if n == "a" && talker {
                text += "talker = true\n";
            }
            if n == "b" {
                text += "listener = true\n";
            }
        }
        text += "[[link]]\na = \"a:eth0\"\nb = \"r1:eth0\"\n\
                 [[link]]\na = \"r1:eth1\"\nb = \"b:eth0\"\nrate = \"20M\"\n";
        let path = dir.join(if talker {
            "marked.toml"
        } else {
            "unmarked.toml"
        });
        std::fs::write(&path, text).unwrap();
        path
    };
    let plan_on = |lab: &std::path::Path, name: &str| {
        let plan = dir.join(format!("{name}.toml"));
        std::fs::write(
            &plan,
            format!(
                "[plan]\ntitle = \"talker\"\n[target]\nlab = \"{}\"\n[[test]]\nname = \"tcp\"\n\
                 kind = \"client\"\nargs = \"-t 2\"\n",
                lab.display()
            ),
        )
        .unwrap();
        let lab_name = format!("{name}{:x}", std::process::id() & 0xfff);
        let _guard = LabGuard(lab_name.clone());
        let out_dir = dir.join(format!("{name}-out"));
        let out = run(&[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "--name",
            &lab_name,
        ]);
        let results: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out_dir.join("results.json")).unwrap_or_default(),
        )
        .unwrap_or_else(|e| panic!("results.json ({e}): {out:?}"));
        (lab_name, results["tests"][0].clone())
    };
    let (lab_name, t) = plan_on(&file(true), "tk");
    assert_eq!(t["status"], "done", "{t}");
    assert_eq!(t["node"], format!("a (talker) of lab {lab_name}"), "{t}");
    let bps = t["result"]["summary"]["received_bps"]
        .as_f64()
        .unwrap_or_else(|| panic!("a received rate: {t}"));
    assert!(
        (2e6..=20e6 * 1.02).contains(&bps),
        "TCP across the 20 Mbit/s link: {bps} bit/s"
    );
    let (_, t) = plan_on(&file(false), "tn");
    assert_eq!(t["status"], "failed", "{t}");
    let e = t["error"].as_str().unwrap_or_default();
    assert!(e.contains("has no talker node"), "{e}");
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Root;
    vec![
        crate::harness::case!(
            a_chain_with_a_shaper_from_a_file_carries_rfc2544_and_streams,
            Root
        ),
        crate::harness::case!(an_impair_node_from_a_file_delays_what_it_forwards, Root),
        crate::harness::case!(a_link_s_impairment_delays_and_drops_what_crosses_it, Root),
        crate::harness::case!(a_plans_client_runs_on_the_node_a_file_marks_talker, Root),
    ]
}
