//! sweep, blocksize, latency and demo end to end on loopback.

use crate::util::*;

fn sweep_classifies_each_step() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("sweep", "--from 10M --to 30M --step 10M -t 1");
    let rows = v
        .pointer("/sweep/rows")
        .and_then(|r| r.as_array())
        .expect("rows");
    assert_eq!(rows.len(), 3);
    for (row, target) in rows.iter().zip([10e6, 20e6, 30e6]) {
        assert_eq!(row["target_bps"].as_f64().unwrap(), target);
        let status = row["status"].as_str().unwrap();
        let loss = row["loss_pct"].as_f64().unwrap();
        let expect = if loss == 0.0 {
            "zero-loss"
        } else if loss < 0.5 {
            "marginal"
        } else {
            "loss"
        };
        assert_eq!(status, expect, "{row}");
        let achieved = row["achieved_bps"].as_f64().unwrap();
        assert!(achieved > 0.0 && achieved <= target * 1.01, "{row}");
    }
}

fn blocksize_measures_both_directions() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("blocksize", "--sizes 1k,32k -t 1");
    let rows = v
        .pointer("/blocksize")
        .and_then(|r| r.as_array())
        .expect("rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["block_bytes"], 1024);
    for r in rows {
        assert!(r["tx_mbyte_s"].as_f64().unwrap() > 1.0, "{r}");
        assert!(r["rx_mbyte_s"].as_f64().unwrap() > 1.0, "{r}");
    }
}

fn latency_gives_percentiles_per_size() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("latency", "-l 64,1024 -t 1");
    let rows = v
        .pointer("/latency")
        .and_then(|r| r.as_array())
        .expect("rows");
    assert_eq!(rows.len(), 2);
    for (r, size) in rows.iter().zip([64, 1024]) {
        assert_eq!(r["size"], size);
        assert!(r["samples"].as_u64().unwrap() > 100, "{r}");
        let rtt = &r["rtt_us"];
        let (min, p50, p9999, max) = (
            rtt["min"].as_f64().unwrap(),
            rtt["p50"].as_f64().unwrap(),
            rtt["p9999"].as_f64().unwrap(),
            rtt["max"].as_f64().unwrap(),
        );
        assert!(
            0.0 < min && min <= p50 && p50 <= p9999 && p9999 <= max,
            "{rtt}"
        );
        assert_eq!(rtt["kind"], "round-trip");
    }
}

/// Latency limits per message size with a marginal band: a limit far above the
/// measurement passes, one whose band starts below it reads MARGINAL (still exit 0), one
/// below it fails with exit code 3.
fn latency_limits_pass_read_marginal_or_fail() {
    let srv = ServerProc::start(&[]);
    let v = srv.json(
        "latency",
        "-l 64 -t 0.5 --latency-limit p50=1s --latency-limit max=2s --marginal-band 0.0001%",
    );
    let words: Vec<(&str, bool, bool)> = v["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .map(|x| {
            let m = x["marginal"].as_bool().unwrap_or(false);
            (
                x["name"].as_str().unwrap(),
                x["passed"].as_bool().unwrap(),
                m,
            )
        })
        .collect();
    // 0.0001 % of 1 s is 1 us: any loopback round trip is above it.
    assert_eq!(
        words,
        [
            ("latency p50 at 64 bytes", true, true),
            ("latency max at 64 bytes", true, true)
        ]
    );
    let port = srv.port_arg();
    let out = run(&[
        "latency",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.5",
        "--latency-limit",
        "p50=1ns",
    ]);
    assert_fails(&out, 3, "a latency verdict failed");
    assert!(String::from_utf8_lossy(&out.stdout).contains("latency p50 at 64 bytes: FAIL"));
    // The default band lies over the limit (15 %: 1.15 ns here), so this still fails; the
    // two bands are one or the other.
    assert!(String::from_utf8_lossy(&out.stdout).contains("over the limit"));
    assert_fails(
        &srv.run(
            "latency",
            "-t 0.5 --latency-limit p50=1s --marginal-above 10% --marginal-band 90%",
        ),
        2,
        "cannot be used with",
    );
}

fn rfc2544_over_udp_through_a_server() {
    // At a nominal 10 Mbit/s line rate loopback forwards everything: each size's
    // throughput is the line rate, found by the first trial; latency comes from the
    // frames of that rate, every one of them tagged.
    let srv = ServerProc::start(&[]);
    let v = srv.json(
        "rfc2544",
        "--sizes 64,512 -t 1 --tests throughput,latency --line-rate 10M --latency-trials 1",
    );
    let t = v
        .pointer("/rfc2544/throughput")
        .and_then(|x| x.as_array())
        .expect("throughput");
    assert_eq!(t.len(), 2);
    for (row, len) in t.iter().zip([64.0, 512.0]) {
        let max = 10e6 / (8.0 * (len + 20.0));
        assert!(
            (row["max_fps"].as_f64().unwrap() - max).abs() < 1e-6,
            "{row}"
        );
        // The line rate; or, when a busy machine kept the generator a little below it,
        // the generator's own rate, flagged as a lower bound (never a number above
        // what was sent).
        let fps = row["fps"].as_f64().unwrap();
        match row["generator_cap_fps"].as_f64() {
            Some(cap) if cap < max => {
                assert_eq!(fps, cap, "{row}");
                assert!(cap >= 0.9 * max, "{row}");
                assert!(row["irregular"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("lower bound"));
            }
            _ => assert_eq!(fps, max, "{row}"),
        }
    }
    let l = v
        .pointer("/rfc2544/latency/1/summary/count")
        .and_then(|x| x.as_u64())
        .unwrap();
    assert!(l > 2000, "{l} latency samples at 512 bytes");
    assert!(str_at(&v, "/backend").starts_with("udp"));
    // Progress: a counted line per trial on stderr (a log here, not a terminal), each
    // with its load and its loss; the same run with -J says nothing there.
    let out = srv.run(
        "rfc2544",
        "--sizes 64 -t 0.5 --tests throughput --line-rate 10M",
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let trials: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("] trial 64 B at "))
        .collect();
    assert!(!trials.is_empty(), "{err}");
    assert!(
        trials[0].starts_with("[1/") && trials[0].contains(": lost "),
        "{err}"
    );
    assert!(trials.iter().all(|t| t.contains("; so far ")), "{err}");
    let quiet = srv.run(
        "rfc2544",
        "--sizes 64 -t 0.5 --tests throughput --line-rate 10M -J",
    );
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("trial"));
    // Bursts at line rate need raw ports.
    assert_fails(
        &srv.run("rfc2544", "--tests throughput,b2b"),
        2,
        "raw ports",
    );
    assert_fails(
        &srv.run("rfc2544", "--tests latency"),
        2,
        "include throughput",
    );
}

fn a_profile_stream_can_go_through_a_wirebench_server() {
    // No root needed: the stream is a UDP test of the control protocol. 2,000 frames/s of
    // 512 bytes are 8.192 Mbit/s of L2 frames.
    let srv = ServerProc::start(&[]);
    let dir = std::env::temp_dir().join(format!("wb-srvprof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        format!(
            "duration = 2\n[[stream]]\nname = \"via-server\"\nsource = \"wirebench://127.0.0.1:{}\"\ndestination = \"server\"\nsize = 512\nload = \"2kpps\"\nexpect = \"8.192M\"\ntolerance = \"3%\"\n",
            srv.port
        ),
    )
    .unwrap();
    let v = run_json(&["streams", &p.to_string_lossy(), "-J"]);
    let row = &v["profile"]["rows"][0];
    let sent = row["sent"].as_u64().unwrap();
    assert!((3_900..=4_100).contains(&sent), "{row}");
    assert_eq!(row["received"].as_u64(), Some(sent), "{row}");
    assert_eq!(row["passed"].as_bool(), Some(true), "{row}");
    // A server stream is UDP of one size.
    std::fs::write(
        &p,
        format!(
            "[[stream]]\nname = \"x\"\nsource = \"wirebench://127.0.0.1:{}\"\ndestination = \"server\"\nprotocol = \"tcp\"\nsize = 512\nload = \"1kpps\"\n",
            srv.port
        ),
    )
    .unwrap();
    assert_fails(&run(&["streams", &p.to_string_lossy()]), 2, "is UDP");
    let _ = std::fs::remove_dir_all(dir);
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    vec![
        crate::harness::case!(sweep_classifies_each_step),
        crate::harness::case!(blocksize_measures_both_directions),
        crate::harness::case!(latency_gives_percentiles_per_size),
        crate::harness::case!(latency_limits_pass_read_marginal_or_fail),
        crate::harness::case!(rfc2544_over_udp_through_a_server),
        crate::harness::case!(a_profile_stream_can_go_through_a_wirebench_server),
    ]
}
