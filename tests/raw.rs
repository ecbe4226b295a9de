//! Raw frames (`gen`, `rfc2544`) across lab topologies (root: namespaces and AF_PACKET).

use crate::lab::{
    assert_loss_is_the_shapers, class_dropped, class_passed, shaper_classes, xdp_attached, LabGuard,
};
use crate::util::*;

/// `wirebench gen talker:eth0 --rx listener:eth0 ARGS` in `lab`.
pub(crate) fn gen_across(lab: &LabGuard, args: &[&str]) -> Vec<String> {
    let mut argv: Vec<String> = [
        "gen",
        "talker:eth0",
        "--lab",
        &lab.0,
        "--rx",
        "listener:eth0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend(args.iter().map(|s| s.to_string()));
    argv
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The `sent` frames of a `gen` result crossed a path that loses nothing: every one arrived,
/// but for what the receiving socket had no room for on a busy machine, which the kernel
/// counts (`rx_kernel_drops`: PACKET_STATISTICS, or the XDP socket's drop counter), and
/// that only a little (5 %). Returns how many were received.
fn all_arrived(g: &serde_json::Value, sent: u64) -> u64 {
    assert_eq!(u64_at(g, "/sent"), sent, "{g}");
    let (received, dropped) = (u64_at(g, "/received"), u64_at(g, "/rx_kernel_drops"));
    assert_eq!(received + dropped, sent, "{g}");
    assert!(dropped <= sent / 20, "{g}");
    received
}

fn every_frame_size_and_protocol_crosses_the_direct_lab_without_loss() {
    let lab = LabGuard::up("direct", "r");
    for size in ["64", "128", "256", "512", "1024", "1280", "1518"] {
        for proto in ["udp", "tcp", "icmp"] {
            if proto == "tcp" && size == "64" {
                // 14 + 20 + 20 + 18 (test header) + 4 (FCS) = 76 bytes at least.
                let argv = gen_across(&lab, &["-s", size, "--proto", proto, "-n", "1"]);
                assert_fails(&run(&strs(&argv)), 2, "at least 76");
                continue;
            }
            let argv = gen_across(
                &lab,
                &[
                    "-s", size, "--proto", proto, "-r", "20kpps", "-n", "2000", "-J",
                ],
            );
            let v = run_json(&strs(&argv));
            let g = &v["gen"];
            assert_eq!(g["sent"].as_u64(), Some(2000), "{size} {proto}: {g}");
            let received = all_arrived(g, 2000);
            assert_eq!(g["duplicates"].as_u64(), Some(0));
            // Every frame carries its transmit time; the kernel stamps (nearly) every arrival
            // (it turns stamping on from a work queue), and the rest are counted.
            let lat = g["latency_us"]["count"].as_u64().unwrap_or(0);
            let unstamped = g["unstamped"].as_u64().unwrap_or(u64::MAX);
            assert_eq!(lat + unstamped, received, "{g}");
            assert!(lat + 100 >= received, "{g}");
        }
    }
    // The ring and AF_XDP backends carry the same frames, and say which they were.
    for backend in ["ring", "xdp"] {
        for size in ["64", "1518"] {
            let argv = gen_across(
                &lab,
                &[
                    "-s",
                    size,
                    "--backend",
                    backend,
                    "-r",
                    "20kpps",
                    "-n",
                    "2000",
                    "-J",
                ],
            );
            let v = run_json(&strs(&argv));
            let g = &v["gen"];
            all_arrived(g, 2000);
            let name = str_at(&v, "/backend");
            assert!(
                name.contains(if backend == "xdp" {
                    "af_xdp"
                } else {
                    "tx_ring"
                }),
                "{name}"
            );
        }
    }
    // IPv6 frames (RFC 5180's benchmarking prefix 2001:2::/48), every transport.
    for proto in ["udp", "tcp", "icmp"] {
        let argv = gen_across(
            &lab,
            &[
                "-s",
                "128",
                "--proto",
                proto,
                "--src-ip",
                "2001:2::1",
                "--dst-ip",
                "2001:2::2",
                "--dst-mac",
                "02:77:62:00:00:02",
                "-r",
                "10kpps",
                "-n",
                "500",
                "-J",
            ],
        );
        let v = run_json(&strs(&argv));
        all_arrived(&v["gen"], 500);
    }
    // A VLAN-tagged frame and a non-default DSCP still arrive and count.
    let argv = gen_across(
        &lab,
        &[
            "-s", "128", "--vlan", "100", "--pcp", "5", "--dscp", "46", "-r", "10kpps", "-n",
            "500", "-J",
        ],
    );
    let v = run_json(&strs(&argv));
    all_arrived(&v["gen"], 500);
    // With -i: 20,000 frames in 2 s at 0.5 s intervals are four rows that add up, each
    // with its latency and its loss placed where the frames were due.
    let argv = gen_across(
        &lab,
        &["-s", "128", "-r", "10kpps", "-t", "2", "-i", "0.5", "-J"],
    );
    let v = run_json(&strs(&argv));
    let rows = v["intervals"].as_array().expect("intervals");
    let sum = |k: &str| rows.iter().map(|r| u64_at(r, k)).sum::<u64>();
    // 10,000 frames/s for 2 s, all but 1 % of them unless the generator says it fell
    // behind (a run is bounded by its time: 19,997 were seen on a busy machine).
    let sent = u64_at(&v, "/gen/sent");
    assert!(
        sent <= 20_000 && (sent >= 19_800 || v["gen"]["generator_limited"] == true),
        "{}",
        v["gen"]
    );
    assert_eq!(sum("/sent_packets"), sent);
    assert_eq!(sum("/lost_packets"), u64_at(&v, "/gen/lost"));
    // Rows of 0.5 s from the start, each ending when its totals were read (a receive loop
    // held up reads a little late, and the row ends then); a generator held back on a busy
    // machine sends the rest of its frames late, in a last, shorter row after the 2 s
    // (1,971 frames in 0.198 s were seen after a first row of 2,995).
    assert!((4..=5).contains(&rows.len()), "{rows:#?}");
    let mut start = 0.0;
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(f64_at(r, "/start_s"), start, "{rows:#?}");
        start = f64_at(r, "/end_s");
        if i < 4 {
            assert!(start >= (i + 1) as f64 * 0.5, "{rows:#?}");
        }
        assert_eq!(r["loss_attributed"], true, "{r}");
        // A row with latency samples has its percentiles in order (a last, short row of a
        // generator held back may have too few for a p99).
        let at = |p: &str| r.pointer(p).and_then(serde_json::Value::as_f64);
        if let (Some(p99), Some(p50)) = (at("/latency/p99_us"), at("/latency/p50_us")) {
            assert!(p99 >= p50, "{r}");
        }
    }
    // On schedule a row holds 10,000 frames a second of its own length. A pacer the machine
    // held back sends late and catches up later (3,760 in one row, the rest after it,
    // without falling behind by the end: not `generator_limited`), so a row is off by at
    // most the frames of the pacer's own latest lateness (`pacing_error_us.max_us` at
    // 10,000 frames/s), and 100. (Rows were read on a fixed grid once, and a receive loop
    // read 16 ms late put 5,166 frames in a "0.5 s" row.)
    if rows.len() == 4 && v["gen"]["generator_limited"] != true {
        let late_s = f64_at(&v, "/gen/pacing_error_us/max_us") / 1e6;
        let slack = (10_000.0 * late_s).ceil() as u64 + 100;
        // The last row ends when the receiver saw the generators done, which may be a
        // little after their last frame; the rows add up to what was sent (above).
        for r in &rows[..3] {
            let due = (10_000.0 * (f64_at(r, "/end_s") - f64_at(r, "/start_s"))).round() as u64;
            assert!(
                u64_at(r, "/sent_packets").abs_diff(due) <= slack,
                "{r} (due {due}, slack {slack})"
            );
        }
    } else if let Some(last) = rows.get(4) {
        assert!(f64_at(last, "/end_s") < 2.5, "{rows:#?}");
    }
}

/// A `shaper` lab with one UDP class of 100 Mbit/s and a 100-packet queue.
fn shaper_lab_100m(tag: &str) -> LabGuard {
    let dir = std::env::temp_dir().join(format!("wb-{tag}-shape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shape = dir.join("s.toml");
    std::fs::write(
        &shape,
        "[[class]]\nname = \"udp\"\nprotocol = \"udp\"\nrate = \"100M\"\nlimit = 100\n",
    )
    .unwrap();
    let lab = LabGuard::up_with("shaper", tag, &["--shape", &shape.to_string_lossy()]);
    let _ = std::fs::remove_dir_all(dir);
    lab
}

fn rfc2544_throughput_on_the_shaper_lab_finds_the_class_rate() {
    // One UDP class of 100 Mbit/s with a 100-packet queue: HTB counts 1514 bytes of each
    // 1518-byte frame, so the class passes 100e6 / (1514 x 8) = 8,256 frames/s.
    let lab = shaper_lab_100m("s");
    let before = shaper_classes(&lab);
    let v = run_json(&[
        "rfc2544",
        "--tx",
        "talker:eth0",
        "--rx",
        "listener:eth0",
        "--lab",
        &lab.0,
        "--sizes",
        "1518",
        "-t",
        "1",
        "--tests",
        "throughput",
        "-J",
    ]);
    let after = shaper_classes(&lab);
    let t = &v["rfc2544"]["throughput"][0];
    let fps = t["fps"].as_f64().unwrap_or_else(|| panic!("{t}"));
    let want = 100e6 / (1514.0 * 8.0);
    // The loss the search saw is the shaper's (its class has a 100-frame queue).
    let dropped = class_dropped(&before, &after, "1:10");
    assert_loss_is_the_shapers("rfc2544", &v, dropped, 100);
    let trials = v["rfc2544"]["trials"].as_array().unwrap();
    // So the zero-loss rate found is the shaper's. Above the class rate by more than the
    // queue's 100 frames in a 1-s trial and the search's width would be the shaper's or
    // the search's fault: 3 %. Below it is the busy machine's: HTB loses tokens whenever
    // the dut's softirq runs late and then drops at rates below its own (7,847 of 8,256
    // frames/s were seen in CI beside other tests, 6,492 with four tests and two busy
    // loops on the two cores), which the counts above confirm. The lower bound only tells
    // the class from the 1 Gbit/s line's 81,274 frames/s or a generator limit: a half.
    // (How exactly the search finds a device's capacity is unit-tested over a simulated
    // device: jobs::rfc2544.)
    assert!(
        fps <= want * 1.03 && fps >= want * 0.5,
        "throughput {fps} frames/s, class rate {want}: {t}"
    );
    // The headline is the conditional throughput, at or below the relevant lower bound,
    // with the upper bound, the trials and their time beside it; no verification trial
    // unless asked for.
    let (lower, upper) = (t["lower_fps"].as_f64(), t["upper_fps"].as_f64());
    assert!(lower.is_some_and(|l| fps <= l + 1.0), "{t}");
    assert!(upper.is_some_and(|u| u > lower.unwrap_or(0.0)), "{t}");
    assert_eq!(t["trials"].as_u64(), Some(trials.len() as u64), "{t}");
    let time: f64 = trials.iter().filter_map(|x| x["duration_s"].as_f64()).sum();
    assert!(
        (t["trial_time_s"].as_f64().unwrap_or(0.0) - time).abs() < 0.01,
        "{t}"
    );
    assert!(!trials.iter().any(|x| x["purpose"] == "verify"), "{t}");
    assert!(
        trials.iter().all(|x| x["sent"].as_u64().unwrap() > 0),
        "every trial sent frames"
    );
    assert_eq!(v["command"], "rfc2544");
    // The sender's and the receiver's backends, both named.
    let backends: Vec<&str> = str_at(&v, "/backend").split(" / ").collect();
    assert!(
        backends.len() == 2 && backends.iter().all(|b| b.starts_with("af_")),
        "{backends:?}"
    );
}

fn raw_commands_refuse_bad_input() {
    for (args, needle) in [
        (vec!["gen", "lo", "-r", "150%"], "(0, 100]"),
        (vec!["gen", "lo", "-s", "63"], "63"),
        (
            vec!["gen", "nosuch:eth0", "--lab", "zz9"],
            "has no node 'nosuch'",
        ),
        (
            vec!["gen", "wb-no-such-if0", "--dst-ip", "198.18.0.1"],
            "wb-no-such-if0",
        ),
        (
            vec!["rfc2544", "--tx", "lo", "--rx", "lo", "--sizes", "63"],
            "64..=9018",
        ),
        (
            vec!["rfc2544", "--tx", "lo", "--rx", "lo", "--tests", "fast"],
            "invalid value",
        ),
        (
            vec![
                "rfc2544",
                "--tx",
                "lo",
                "--rx",
                "lo",
                "--loss-tolerance",
                "x",
            ],
            "percentage",
        ),
        (
            vec![
                "rfc2544",
                "--tx",
                "lo",
                "--rx",
                "lo",
                "--latency-limit",
                "p99=fast",
            ],
            "latency limit",
        ),
    ] {
        assert_fails(&run(&args), 2, needle);
    }
}

fn tshark_finds_every_checksum_of_generated_frames_correct() {
    if std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED tshark_finds_every_checksum_of_generated_frames_correct: tshark is not installed (apt install tshark)");
        return;
    }
    let lab = LabGuard::up("direct", "t");
    let pcap = std::env::temp_dir().join(format!("wb-tshark-{}.pcap", std::process::id()));
    let pcap_s = pcap.to_string_lossy().into_owned();
    let ns = format!("wb-{}-listener", lab.0);
    let mut cap = std::process::Command::new("ip")
        .args([
            "netns", "exec", &ns, "tshark", "-i", "eth0", "-f", "ip", "-w", &pcap_s,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tshark");
    // Wait until dumpcap says it captures.
    let mut err = std::io::BufReader::new(cap.stderr.take().unwrap());
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut err, &mut line).unwrap_or(0) > 0 {
        if line.contains("Capturing on") {
            break;
        }
        line.clear();
    }
    let sizes = [
        ("udp", "100"),
        ("tcp", "128"),
        ("icmp", "64"),
        ("udp", "1518"),
    ];
    for (proto, size) in sizes {
        let argv = gen_across(
            &lab,
            &[
                "-s",
                size,
                "--proto",
                proto,
                "-n",
                "5",
                "-r",
                "1kpps",
                "--dst-mac",
                "02:77:62:00:00:02",
                // A copying receiver, whatever auto picks: an AF_XDP one would take
                // the frames from tshark too.
                "--rx-backend",
                "ring",
            ],
        );
        let out = run(&strs(&argv));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = std::process::Command::new("kill")
        .args(["-INT", &cap.id().to_string()])
        .status();
    let _ = cap.wait();
    let out = std::process::Command::new("tshark")
        .args([
            "-r",
            &pcap_s,
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-Y",
            "ip.src==198.18.0.1 && !icmp.type==3",
            "-T",
            "fields",
            "-e",
            "frame.len",
            "-e",
            "ip.proto",
            "-e",
            "ip.checksum.status",
            "-e",
            "udp.checksum.status",
            "-e",
            "tcp.checksum.status",
            "-e",
            "icmp.checksum.status",
        ])
        .output()
        .expect("tshark -r");
    let _ = std::fs::remove_file(&pcap);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split('\t').filter(|f| !f.is_empty()).collect())
        .collect();
    // Frame sizes without FCS: 96 (UDP), 124 (TCP), 60 (ICMP), 1514 (UDP).
    for (len, proto) in [("96", "17"), ("124", "6"), ("60", "1"), ("1514", "17")] {
        let mine: Vec<&Vec<&str>> = rows
            .iter()
            .filter(|r| r[0] == len && r[1] == proto)
            .collect();
        assert_eq!(
            mine.len(),
            5,
            "{len}-byte protocol {proto} frames in:\n{text}"
        );
        for r in mine {
            // Wireshark checksum status: 1 = good (0 bad, 2 unverified).
            assert!(
                r[2..].iter().all(|s| *s == "1"),
                "a checksum tshark does not accept: {r:?}"
            );
            assert_eq!(r.len(), 4, "IP and L4 checksums both verified: {r:?}");
        }
    }
}

/// Runs `examples/streams-NAME.toml` on a shaper lab built from
/// `examples/shaper-NAME.toml`; returns the JSON and how many frames each of the dut's
/// classes toward the listener passed meanwhile (its own counters, by class id).
fn rtx2000(name: &str, tag: &str, ingress: &str) -> (serde_json::Value, Passed) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let shape = format!("{dir}/examples/shaper-{name}.toml");
    let profile = format!("{dir}/examples/streams-{name}.toml");
    // Each stream on a 100 Mbit/s port of its own, as the SmartBits ports of the reference.
    let args = [
        "--shape",
        &shape,
        "--ingress",
        ingress,
        "--port-rate",
        "100M",
    ];
    let lab = LabGuard::up_with("shaper", tag, &args);
    let before = shaper_classes(&lab);
    let out = run(&["streams", &profile, "--lab", &lab.0, "-J"]);
    let passed = Passed(before, shaper_classes(&lab));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    // The profile's verdicts hold its example's tolerance (2 %), which a busy machine's
    // shaper can miss below the rate (`shaped_rate_holds`); then, and only then, the exit
    // code is 3. The rows are checked against the shaper's counters either way.
    let rows = v.pointer("/profile/rows").and_then(|r| r.as_array());
    let failed = rows.is_some_and(|r| r.iter().any(|r| r["passed"] == false));
    assert_eq!(
        out.status.code(),
        Some(if failed { 3 } else { 0 }),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (v, passed)
}

/// The README's multi-stream example, run as written (its lab's name made unique): the
/// lab it builds is the one its profile needs (it once built no second ingress port, and
/// the profile failed with "no node talker2"), and the profile's expectations hold but on
/// a machine so busy that its shaper passes less than the class (exit 3, rows below).
fn the_readmes_streams_example_runs_as_written() {
    let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    // Its shell commands as the docs test reads them (`sudo ` taken off).
    let cmds: Vec<String> = crate::docs::blocks(&readme)
        .0
        .iter()
        .flat_map(|b| crate::docs::commands(&b.text))
        .collect();
    let up = cmds
        .iter()
        .find(|c| c.starts_with("wirebench lab up shaper") && c.contains("shaper-two-classes"))
        .expect("the README builds the two-class shaper lab");
    let streams = cmds
        .iter()
        .find(|c| c.starts_with("wirebench streams examples/streams-two-classes.toml"))
        .expect("the README runs the two-class profile");
    let words: Vec<&str> = up.split_whitespace().skip(4).collect();
    let name = words
        .iter()
        .position(|w| *w == "--name")
        .map(|i| words[i + 1])
        .expect("the README names its lab");
    let args: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| *w != "--name" && *w != name)
        .collect();
    let lab = LabGuard::up_with("shaper", "rd", &args);
    let mut argv: Vec<String> = streams
        .split_whitespace()
        .skip(1)
        .map(|w| {
            if w == name {
                lab.0.clone()
            } else {
                w.to_owned()
            }
        })
        .collect();
    argv.push("-J".into());
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run(&argv);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{argv:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let rows = v["profile"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{v}");
    let mut below = false;
    for r in rows {
        assert!(u64_at(r, "/received") > 0, "{r}");
        if r["passed"] == false {
            let (got, want) = (f64_at(r, "/received_l2_bps"), f64_at(r, "/expected_l2_bps"));
            assert!(got < want, "a class passed more than it may: {r}");
            below = true;
        }
    }
    assert_eq!(out.status.code(), Some(if below { 3 } else { 0 }), "{v}");
}

/// Two readings of the dut's class counters, before and after a run.
struct Passed(Vec<lab::shaper::ClassStats>, Vec<lab::shaper::ClassStats>);

impl Passed {
    fn frames(&self, class: &str) -> u64 {
        class_passed(&self.0, &self.1, class)
    }
}

/// Each row of a shaped profile (name, class rate in Mbit/s, class id) against the
/// shaper's own counters.
fn check_classes(v: &serde_json::Value, passed: &Passed, want: &[(&str, f64, &str)]) {
    let rows = v
        .pointer("/profile/rows")
        .and_then(|r| r.as_array())
        .expect("rows");
    assert_eq!(rows.len(), want.len());
    for (row, (name, mbit, class)) in rows.iter().zip(want) {
        assert_eq!(row["name"], *name);
        // The stream received nothing the class did not pass, and missed only what the
        // receiver's ring dropped and what was still on its way when the receiver stopped
        // (37 were seen of the 5 Mbit/s class's 2.4 s queue).
        let (received, class_passed) = (u64_at(row, "/received"), passed.frames(class));
        let dropped = u64_at(v, "/profile/receiver_drops");
        assert!(
            received <= class_passed
                && class_passed - received <= dropped + crate::lab::in_flight_after_stop(),
            "{name}: received {received}, class {class} passed {class_passed}: {row}"
        );
        let got = f64_at(row, "/received_l2_bps");
        assert!(
            crate::lab::shaped_rate_holds(got, mbit * 1e6, 0.02),
            "{name}: {got} bit/s, class {mbit} Mbit/s: {row}"
        );
        // The profile's own verdict is its expectation within its tolerance.
        let (expect, tolerance) = (f64_at(row, "/expected_l2_bps"), f64_at(row, "/tolerance"));
        assert_eq!(
            row["passed"].as_bool(),
            Some((got - expect).abs() <= expect * tolerance),
            "{row}"
        );
        assert!(
            u64_at(row, "/lost") > 0,
            "offered at 100 %, the shaper drops: {row}"
        );
    }
    let total = f64_at(v, "/profile/total_received_l2_bps");
    let sum: f64 = want.iter().map(|w| w.1 * 1e6).sum();
    assert!(
        crate::lab::shaped_rate_holds(total, sum, 0.02),
        "total {total} vs {sum}"
    );
}

fn streams_reproduce_the_rtx2000_two_class_scenario() {
    let (v, passed) = rtx2000("two-classes", "x", "2");
    check_classes(&v, &passed, &[("udp", 10.0, "1:10"), ("tcp", 40.0, "1:11")]);
}

fn streams_reproduce_the_rtx2000_three_class_scenario() {
    let (v, passed) = rtx2000("three-classes", "y", "3");
    check_classes(
        &v,
        &passed,
        &[
            ("udp", 5.0, "1:10"),
            ("icmp", 30.0, "1:11"),
            ("tcp", 15.0, "1:12"),
        ],
    );
}

/// The RTX2000 baseline without shaping: each stream on its own 100 Mbit/s ingress port,
/// one 100 Mbit/s egress with one FIFO: the egress carries its rate, both streams lose a
/// large share and neither is protected (the reference: both lose about equally). An
/// ingress port carries no more than its rate.
fn streams_reproduce_the_rtx2000_baseline() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let profile = format!("{dir}/examples/streams-baseline.toml");
    let ports = ["--egress", "100M", "--ingress", "2", "--port-rate", "100M"];
    let lab = LabGuard::up_with("shaper", "b", &ports);
    let before = shaper_classes(&lab);
    let backlog = crate::lab::backlog_drops();
    let v = run_json(&["streams", &profile, "--lab", &lab.0, "-J"]);
    let passed = Passed(before, shaper_classes(&lab));
    // The egress FIFO (class 1:999) dropped what the two ports sent beyond its rate, and
    // the account of the lost frames adds up.
    let account = drop_account(&v, crate::lab::backlog_drops() - backlog);
    assert!(account["1:999"] > 0, "{account:?}");
    let rows = v
        .pointer("/profile/rows")
        .and_then(|r| r.as_array())
        .expect("rows");
    for row in rows {
        let lost = f64_at(row, "/lost") / f64_at(row, "/sent");
        assert!((0.3..0.7).contains(&lost), "{row}");
    }
    // The egress (one class, the lab's default 1:999) passed what both streams received,
    // the few frames of the lab's own that share it (ARP and the like), what the receiver's
    // ring dropped, and what was still on its way when the receiver stopped (67 were seen;
    // 1,070 beside two busy loops and a build).
    let received: u64 = rows.iter().map(|r| u64_at(r, "/received")).sum();
    let dropped = u64_at(&v, "/profile/receiver_drops");
    let egress = passed.frames("1:999");
    assert!(
        received <= egress && egress - received <= dropped + crate::lab::in_flight_after_stop(),
        "received {received} (the receiver dropped {dropped}), the egress passed {egress}: {rows:#?}"
    );
    let total = f64_at(&v, "/profile/total_received_l2_bps");
    assert!(
        crate::lab::shaped_rate_holds(total, 100e6, 0.02),
        "egress carried {total}"
    );
    // 150 % of the port from one talker for 2 s: the port (a token bucket on the dut's
    // ingress) passes at most its rate and drops the rest.
    let over = "duration = 2\nline_rate = \"150M\"\n[[stream]]\nname = \"a\"\nsource = \"talker2:eth0\"\ndestination = \"listener:eth0\"\nsize = 1024\nload = \"100%\"\n";
    let path = std::env::temp_dir().join(format!("wb-port-{}.toml", std::process::id()));
    std::fs::write(&path, over).unwrap();
    let before = port_counters(&lab.0);
    let backlog = crate::lab::backlog_drops();
    let v = run_json(&["streams", path.to_str().unwrap(), "--lab", &lab.0, "-J"]);
    let _ = std::fs::remove_file(&path);
    let after = port_counters(&lab.0);
    let (sent, dropped) = (after.0 - before.0, after.1 - before.1);
    // The lost frames are the port limiter's, by its own counter (read by the run itself,
    // inside the span read here), and the account adds up.
    let account = drop_account(&v, crate::lab::backlog_drops() - backlog);
    let limiter = account["ingress limiter dut eth2"];
    assert!(
        limiter <= dropped && limiter + 50 >= dropped,
        "the run counted {limiter} at the limiter, the test {dropped}: {account:?}"
    );
    // 2 s of 100 Mbit/s is 25 MB (plus the bucket and its queue); 150 % offered.
    assert!(
        sent <= 25_000_000 + 200_000,
        "the port passed {sent} bytes in 2 s"
    );
    assert!(
        dropped > 5_000,
        "the port dropped only {dropped} frames of 150 %"
    );
}

/// The account of a streams run's lost frames (`profile.drops`), checked: every site and
/// what no counter saw add up to the lost frames, and what no counter saw is at most what
/// was still on its way when the receivers stopped (a class's queue, the veth's and the
/// backlog queue) plus what the host's backlog queues dropped meanwhile (`backlog`), and
/// at least minus a few frames of others (ARP) that a site dropped. Returns each site's
/// drops, keyed by its name and by a class's id alone (`1:999`).
fn drop_account(v: &serde_json::Value, backlog: u64) -> std::collections::HashMap<String, u64> {
    let p = &v["profile"];
    let a = &p["drops"];
    let lost = u64_at(a, "/lost");
    assert_eq!(
        lost,
        u64_at(p, "/total_sent") - u64_at(p, "/total_received"),
        "{a}"
    );
    let mut out = std::collections::HashMap::new();
    let mut sum = 0i64;
    for s in a["sites"].as_array().expect("sites") {
        let (name, n) = (
            s["site"].as_str().unwrap().to_owned(),
            u64_at(s, "/dropped"),
        );
        sum += n as i64;
        if let Some(class) = name.strip_prefix("shaper class ") {
            out.insert(class.split(' ').next().unwrap().to_owned(), n);
        }
        out.insert(name, n);
    }
    assert!(out.contains_key("receivers (rings and sockets)"), "{a}");
    let unattributed = a["unattributed"].as_i64().expect("unattributed");
    assert_eq!(sum + unattributed, lost as i64, "{a}");
    let queued = crate::lab::in_flight_after_stop() + 1000;
    assert!(
        (-50..=(queued + backlog) as i64).contains(&unattributed),
        "{unattributed} of {lost} lost frames not counted anywhere (backlog drops {backlog}): {a}"
    );
    out
}

/// Bytes sent and frames dropped by the port limiter of talker2's link (dut eth2).
fn port_counters(lab: &str) -> (u64, u64) {
    let out = std::process::Command::new("tc")
        .args([
            "-n",
            &format!("wb-{lab}-dut"),
            "-s",
            "qdisc",
            "show",
            "dev",
            "ifbeth2",
        ])
        .output()
        .expect("tc");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Sent"))
        .unwrap_or("");
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| {
        f.get(i)
            .and_then(|w| w.trim_end_matches(',').parse().ok())
            .unwrap_or(0)
    };
    (num(1), num(6))
}

fn streams_refuse_bad_profiles_before_sending() {
    let dir = std::env::temp_dir().join(format!("wb-prof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let base = "[[stream]]\nname = \"a\"\nsource = \"talker:eth0\"\ndestination = \"listener:eth0\"\nsize = 64\n";
    let bad_load = write("load.toml", &format!("{base}load = \"fast\"\n"));
    assert_fails(
        &run(&["streams", &bad_load]),
        2,
        "stream 'a', line 6: load 'fast'",
    );
    let unknown = write("unknown.toml", &format!("{base}load = \"1%\"\nspeed = 3\n"));
    assert_fails(&run(&["streams", &unknown]), 2, "unknown field `speed`");
    assert_fails(&run(&["streams", "/nonexistent/p.toml"]), 2, "cannot read");
    if lab::cmd::is_root() {
        // A destination in a lab that does not exist: refused before anything is sent.
        let ok = write("ok.toml", &format!("{base}load = \"1%\"\n"));
        assert_fails(&run(&["streams", &ok, "--lab", "nolab9"]), 2, "has no node");
    }
    let _ = std::fs::remove_dir_all(dir);
}

fn shaping_matrix_is_monotone_and_accurate_for_large_frames() {
    let lab = shaper_lab_100m("m");
    // The bandwidth is set through --dut-cmd, as for any device, with the template's
    // placeholder replaced. Line rate is a 200 Mbit/s port (5x the largest bandwidth):
    // at 1 Gbit/s of small frames the generator and the dut would share a saturated CPU.
    // The class's buckets are 2 ms at the rate (at least 1600 bytes), as the lab's own
    // classes have (`lab::shaper::default_burst`): `tc class change` without them would
    // shrink both to one frame, which passes less than the rate whenever the dut's softirq
    // runs late on a busy machine.
    let ns = format!("wb-{}-dut", lab.0);
    let dut_cmd = format!(
        "b=$(( {{bandwidth}} / 4000 )); [ $b -ge 1600 ] || b=1600; tc -n {ns} class change dev eth1 parent 1: classid 1:10 htb rate {{bandwidth}}bit ceil {{bandwidth}}bit burst \"$b\"b cburst \"$b\"b quantum 1514"
    );
    let before = shaper_classes(&lab);
    let v = run_json(&[
        "shaping",
        "--lab",
        &lab.0,
        "--sizes",
        "128,512,1518",
        "--bandwidths",
        "40m,10m,2m",
        "--dut-cmd",
        &dut_cmd,
        "-t",
        "1",
        "--line-rate",
        "200M",
        "-J",
    ]);
    let cells = v
        .pointer("/shaping/cells")
        .and_then(|c| c.as_array())
        .expect("cells");
    assert_eq!(cells.len(), 9);
    let rate = |len: u64, bw: f64| {
        cells
            .iter()
            .find(|c| c["frame_len"] == len && c["bandwidth_bps"].as_f64() == Some(bw))
            .and_then(|c| c["received_l2_bps"].as_f64())
            .unwrap()
    };
    for len in [128, 512, 1518] {
        assert!(
            rate(len, 2e6) < rate(len, 10e6) && rate(len, 10e6) < rate(len, 40e6),
            "received rate not monotone in bandwidth at {len} bytes: {cells:?}"
        );
    }
    // Above the bandwidth is the shaper's fault (3 %: HTB counts 1514 of 1518 bytes); below
    // it the busy machine's (see `shaped_rate_holds`).
    for bw in [40e6, 10e6, 2e6] {
        let r = rate(1518, bw);
        assert!(
            crate::lab::shaped_rate_holds(r, bw, 0.03),
            "1518 bytes at {bw}: {r}"
        );
    }
    // Every frame received went through the class; the class passed no more than that and
    // what was still in its 100-frame queue when a cell's receiver stopped.
    let received: u64 = cells.iter().map(|c| u64_at(c, "/received")).sum();
    let class = class_passed(&before, &shaper_classes(&lab), "1:10");
    assert!(
        received <= class && class - received <= 100 * cells.len() as u64,
        "cells received {received} frames, the class passed {class}"
    );
    // A device command that fails stops the run with its exit status, before traffic.
    assert_fails(
        &run(&[
            "shaping",
            "--lab",
            &lab.0,
            "--bandwidths",
            "10m",
            "--dut-cmd",
            "exit 3",
            "-t",
            "1",
        ]),
        2,
        "exited with exit status: 3",
    );
}

fn streams_of_every_kind_interleave_on_one_port() {
    let lab = LabGuard::up("direct", "q");
    let dir = std::env::temp_dir().join(format!("wb-mix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("mix.toml");
    let stream = |name: &str, extra: &str| {
        format!("[[stream]]\nname = \"{name}\"\nsource = \"talker:eth0\"\ndestination = \"listener:eth0\"\n{extra}\n")
    };
    let text = [
        "duration = 2\n".to_owned(),
        stream("cycled", "size = [64, 512, 1518]\nload = \"3kpps\""),
        stream("imix", "size = \"imix\"\nload = \"4kpps\"\ndscp = 46"),
        stream(
            "raw",
            "protocol = \"0x88b5\"\nsize = 128\nload = \"2kpps\"\nvlan = 7\npcp = 3",
        ),
        stream(
            "late",
            "protocol = \"icmp\"\nsize = 64\nload = \"1kpps\"\nstart = 0.5\nstop = 1.5",
        ),
    ]
    .concat();
    std::fs::write(&p, text).unwrap();
    let v = run_json(&["streams", &p.to_string_lossy(), "--lab", &lab.0, "-J"]);
    let rows = v["profile"]["rows"].as_array().expect("rows");
    for (row, (frames, name)) in rows.iter().zip([
        (6000u64, "cycled"),
        (8000, "imix"),
        (4000, "raw"),
        (1000, "late"),
    ]) {
        assert_eq!(row["name"], name);
        let sent = row["sent"].as_u64().unwrap();
        // What was asked, or a generator that fell behind and says so (its pacer's own
        // count: more than 1 % of the due frames unsent), never more than asked; a busy
        // machine held the 1 kpps stream back by 26 of its 1,000 frames once.
        let behind = row["generator_limited"] == true;
        assert!(
            sent.abs_diff(frames) <= frames / 50 || (behind && sent < frames),
            "{name}: sent {sent}, want ~{frames}: {row}"
        );
        assert_eq!(row["received"].as_u64(), Some(sent), "{row}");
        assert_eq!(row["duplicates"].as_u64(), Some(0), "{row}");
    }
    assert_eq!(rows[1]["frame"], "imix");
    assert_eq!(rows[2]["protocol"], "0x88b5");
    // Interval rows (every second by default): each stream, then the sum; the stream that
    // runs from 0.5 s to 1.5 s sends half its frames in each second.
    let iv = v["intervals"].as_array().expect("intervals");
    let ids: Vec<_> = iv.iter().map(|r| r["stream"].as_u64()).collect();
    let one = [Some(1), Some(2), Some(3), Some(4), None];
    assert_eq!(&ids[..5], one, "{iv:#?}");
    // (What the generators sent in their last moments after 2 s is in the last interval.)
    // How the stream's frames split between the two seconds is the machine's: a pacer
    // held back catches up later (645 of the 1,000 in the second second was seen without
    // `generator_limited`, which counts only what stayed unsent), and the rows' clock
    // starts a moment after the schedule's (541 in the first second was seen). What holds:
    // the stream sent in both seconds, and the two rows hold all it sent.
    let late: Vec<_> = iv.iter().filter(|r| r["stream"] == 4).collect();
    assert_eq!(late.len(), 2, "{iv:#?}");
    let [first, second] = [0, 1].map(|i| u64_at(late[i], "/sent_packets"));
    assert!(first > 0 && second > 0, "{late:#?}");
    assert_eq!(first + second, u64_at(&rows[3], "/sent"), "{late:#?}");
    let sent: u64 = iv
        .iter()
        .filter(|r| r.get("stream").is_none())
        .map(|r| u64_at(r, "/sent_packets"))
        .sum();
    let total: u64 = rows.iter().map(|r| r["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, total, "{iv:#?}");
    assert!(iv.iter().all(|r| r["loss_attributed"] == true), "{iv:#?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The AF_XDP receiver (`--rx-backend xdp`): every frame counted and stamped on arrival
/// (one-way latency present and plausible), the program gone from the port afterwards;
/// a port whose MTU a receive chunk cannot hold is refused when xdp is asked for, and
/// `auto` falls back to the ring there, saying so in the backend it records.
fn xdp_receiver_counts_and_stamps_every_frame_and_detaches() {
    let lab = LabGuard::up("direct", "x");
    for size in ["64", "1518"] {
        let argv = gen_across(
            &lab,
            &[
                "-s",
                size,
                "--backend",
                "xdp",
                "--rx-backend",
                "xdp",
                "-r",
                "20kpps",
                "-n",
                "2000",
                "-J",
            ],
        );
        let v = run_json(&strs(&argv));
        let g = &v["gen"];
        assert_eq!(str_at(&v, "/backend"), "af_xdp / af_xdp", "{v}");
        assert_eq!(g["received"].as_u64(), Some(2000), "{size}: {g}");
        assert_eq!(g["rx_kernel_drops"].as_u64(), Some(0), "{g}");
        assert_eq!(u64_at(g, "/latency_us/count"), 2000, "{g}");
        let (min, p50) = (
            f64_at(g, "/latency_us/min_us"),
            f64_at(g, "/latency_us/p50_us"),
        );
        // Stamps on one clock: the fastest frame shows veth's own latency (microseconds),
        // and the median what a busy machine adds (1.8 ms was seen with four tests at a
        // time); a wrong clock or stamp would read seconds, or nothing.
        assert!(
            min > 0.0 && min < 1_000.0 && p50 < 100_000.0,
            "one-way latency on veth: {g}"
        );
    }
    let listener = format!("wb-{}-listener", lab.0);
    assert!(!xdp_attached(&listener, "eth0"), "the program left eth0");
    // A 3000-byte MTU: no receive chunk holds such a frame.
    let big = LabGuard::up_with("direct", "xm", &["--mtu", "3000"]);
    let mut argv: Vec<String> = gen_across(&big, &["-s", "128", "-n", "100", "-r", "10kpps", "-J"]);
    let auto = run_json(&strs(&argv));
    assert_eq!(auto["gen"]["received"].as_u64(), Some(100), "{auto}");
    assert!(
        str_at(&auto, "/backend").ends_with("af_packet_rx_ring"),
        "{auto}"
    );
    argv.extend(["--rx-backend".to_owned(), "xdp".to_owned()]);
    let out = run(&strs(&argv));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("MTU 3000"), "{err}");
}

/// `gen --threads N`: N generator threads, each with its own sender and stream and its share
/// of the rate and count (an odd count too); the receiver counts every stream, and the
/// totals add up with nothing lost or reordered. AF_XDP binds one transmit queue per
/// thread: more threads than the lab's veths have queues is refused, naming the queue.
fn gen_threads_share_the_load_and_the_totals_add_up() {
    let lab = LabGuard::up("direct", "g");
    for backend in ["packet", "auto"] {
        let argv = gen_across(
            &lab,
            &[
                "-s",
                "64",
                "--threads",
                "2",
                "--backend",
                backend,
                "-r",
                "40kpps",
                "-n",
                "4001",
                "-J",
            ],
        );
        let v = run_json(&strs(&argv));
        let g = &v["gen"];
        assert_eq!(v["params"]["threads"], 2, "{v}");
        assert_eq!(g["sent"].as_u64(), Some(4001), "{backend}: {g}");
        assert_eq!(g["received"].as_u64(), Some(4001), "{backend}: {g}");
        assert_eq!(g["reordered"].as_u64(), Some(0), "{backend}: {g}");
        assert_eq!(g["duplicates"].as_u64(), Some(0), "{backend}: {g}");
        assert_eq!(u64_at(g, "/latency_us/count"), 4001, "{g}");
    }
    let queues = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let too_many = (queues + 1).to_string();
    let argv = gen_across(
        &lab,
        &["--threads", &too_many, "--backend", "xdp", "-n", "10"],
    );
    let out = run(&strs(&argv));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("queue {queues}")), "{err}");
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::{Root, Tshark};
    vec![
        crate::harness::case!(
            every_frame_size_and_protocol_crosses_the_direct_lab_without_loss,
            Root
        ),
        crate::harness::case!(
            rfc2544_throughput_on_the_shaper_lab_finds_the_class_rate,
            Root
        ),
        crate::harness::case!(raw_commands_refuse_bad_input, Root),
        crate::harness::case!(
            tshark_finds_every_checksum_of_generated_frames_correct,
            Root,
            Tshark
        ),
        crate::harness::case!(streams_reproduce_the_rtx2000_two_class_scenario, Root),
        crate::harness::case!(streams_reproduce_the_rtx2000_three_class_scenario, Root),
        crate::harness::case!(streams_reproduce_the_rtx2000_baseline, Root),
        crate::harness::case!(the_readmes_streams_example_runs_as_written, Root),
        crate::harness::case!(streams_refuse_bad_profiles_before_sending),
        crate::harness::case!(
            shaping_matrix_is_monotone_and_accurate_for_large_frames,
            Root
        ),
        crate::harness::case!(streams_of_every_kind_interleave_on_one_port, Root),
        crate::harness::case!(
            xdp_receiver_counts_and_stamps_every_frame_and_detaches,
            Root
        ),
        crate::harness::case!(gen_threads_share_the_load_and_the_totals_add_up, Root),
    ]
}
