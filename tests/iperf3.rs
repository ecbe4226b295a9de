//! wirebench's client against a stock iperf3 server (Debian's `iperf3`, which CI installs):
//! the dialect end to end, both sides' byte counts equal, rates alike. Skipped, saying so,
//! where iperf3 is not installed.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::run_json;

/// `iperf3 -s -1 -J` on a port of its own; its JSON document comes on stdout at the end.
struct Iperf3Server {
    child: Child,
    port: u16,
}

impl Iperf3Server {
    fn start(test: &str) -> Option<Self> {
        if Command::new("iperf3").arg("--version").output().is_err() {
            eprintln!("SKIPPED {test}: iperf3 is not installed (apt install iperf3)");
            return None;
        }
        // A port per test and process: tests run in parallel.
        let h = test
            .bytes()
            .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
        let port = 20_000 + ((h ^ std::process::id()) % 20_000) as u16;
        let child = Command::new("timeout")
            .args(["40", "iperf3", "-s", "-1", "-J", "-p", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        // Listening? (asked of the kernel: a probe connection would be iperf3's one test)
        let t0 = Instant::now();
        loop {
            let ss = Command::new("ss")
                .args(["-Hltn", &format!("sport = :{port}")])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            if ss.contains("LISTEN") {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "iperf3 -s did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self { child, port })
    }

    /// The server's -J document, once its one test is over.
    fn document(self) -> serde_json::Value {
        let out = self.child.wait_with_output().unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("iperf3 -J: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}

fn ours(server: &Iperf3Server, args: &[&str]) -> serde_json::Value {
    let port = server.port.to_string();
    let mut a = vec!["client", "127.0.0.1", "--iperf3", "-p", &port, "-J"];
    a.extend(args);
    run_json(&a)
}

fn f(v: &serde_json::Value, p: &str) -> f64 {
    v.pointer(p)
        .and_then(|x| x.as_f64())
        .unwrap_or_else(|| panic!("no {p} in {v}"))
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs())
}

#[test]
fn tcp_both_ways_against_iperf3_counts_the_same_bytes() {
    let test = "tcp_both_ways_against_iperf3_counts_the_same_bytes";
    for (args, we_send) in [(vec!["-t", "2"], true), (vec!["-t", "2", "-R"], false)] {
        let Some(s) = Iperf3Server::start(test) else {
            return;
        };
        let v = ours(&s, &args);
        let d = s.document();
        // Forward: iperf3 received what we sent; reverse: we received what iperf3 sent.
        let (theirs, our) = if we_send {
            (
                f(&d, "/end/sum_received/bytes"),
                f(&v, "/summary/sent_bytes"),
            )
        } else {
            (
                f(&d, "/end/sum_sent/bytes"),
                f(&v, "/summary/received_bytes"),
            )
        };
        assert_eq!(theirs, our, "{args:?}: iperf3 {theirs}, wirebench {our}");
        let rate = f(&v, "/summary/received_bps");
        let their_rate = if we_send {
            f(&d, "/end/sum_received/bits_per_second")
        } else {
            f(&d, "/end/sum_sent/bits_per_second")
        };
        assert!(
            close(rate, their_rate, 0.02),
            "{args:?}: {rate} vs {their_rate}"
        );
        assert_eq!(v["params"]["peer"], "iperf3");
    }
}

#[test]
fn tcp_three_streams_and_bidir_against_iperf3() {
    let test = "tcp_three_streams_and_bidir_against_iperf3";
    let Some(s) = Iperf3Server::start(test) else {
        return;
    };
    let v = ours(&s, &["-t", "1", "-P", "3"]);
    let d = s.document();
    assert_eq!(d["end"]["streams"].as_array().unwrap().len(), 3);
    assert_eq!(
        f(&d, "/end/sum_received/bytes"),
        f(&v, "/summary/sent_bytes")
    );
    assert_eq!(
        v["streams"].as_array().unwrap().len(),
        3,
        "{}",
        v["streams"]
    );
    let Some(s) = Iperf3Server::start(test) else {
        return;
    };
    let v = ours(&s, &["-t", "1", "--bidir"]);
    let d = s.document();
    // The client's senders first (iperf3's order): our forward is its receive side.
    assert_eq!(
        f(&d, "/end/sum_received/bytes"),
        f(&v, "/summary/sent_bytes")
    );
    assert_eq!(
        f(&d, "/end/sum_sent_bidir_reverse/bytes"),
        f(&v, "/reverse_summary/received_bytes")
    );
}

#[test]
fn udp_at_100_mbits_against_iperf3_both_ways() {
    let test = "udp_at_100_mbits_against_iperf3_both_ways";
    for (args, we_send) in [
        (vec!["-u", "-b", "100M", "-t", "2"], true),
        (vec!["-u", "-b", "100M", "-t", "2", "-R"], false),
    ] {
        let Some(s) = Iperf3Server::start(test) else {
            return;
        };
        let v = ours(&s, &args);
        let d = s.document();
        // iperf3 files a UDP test's totals under the receiving side's sum.
        if we_send {
            // iperf3 counted exactly the datagrams and bytes we sent.
            let sum = &d["end"]["sum_received"];
            assert_eq!(f(sum, "/packets"), f(&v, "/summary/sent_packets"), "{sum}");
            assert_eq!(f(sum, "/bytes"), f(&v, "/summary/sent_bytes"), "{sum}");
            assert_eq!(f(sum, "/lost_packets"), 0.0, "{sum}");
            assert!(close(f(sum, "/bits_per_second"), 100e6, 0.01), "{sum}");
        } else {
            // Our own accounting of what iperf3 sent: every datagram, none lost.
            let sum = &d["end"]["sum_sent"];
            assert_eq!(
                f(sum, "/packets"),
                f(&v, "/summary/received_packets"),
                "{sum}"
            );
            assert_eq!(f(sum, "/bytes"), f(&v, "/summary/received_bytes"), "{sum}");
            assert_eq!(f(&v, "/summary/lost_packets"), 0.0, "{}", v["summary"]);
            assert!(close(f(sum, "/bits_per_second"), 100e6, 0.01), "{sum}");
        }
        let rate = f(&v, "/summary/offered_bps");
        assert!(close(rate, 100e6, 0.01), "{args:?}: offered {rate}");
    }
}

#[test]
fn a_busy_or_absent_iperf3_server_is_a_clear_error() {
    let out = crate::util::run(&["client", "127.0.0.1", "--iperf3", "-p", "1", "-t", "1"]);
    crate::util::assert_fails(&out, 1, "iperf3 test with 127.0.0.1:1 failed");
}
