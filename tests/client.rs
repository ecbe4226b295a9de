//! `wirebench client` against a live server on loopback.

use crate::util::*;

#[test]
fn udp_counts_every_packet_and_reports_one_way_latency() {
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    let v = run_json(&[
        "client",
        "127.0.0.1",
        "-p",
        &p,
        "-u",
        "-b",
        "20M",
        "-t",
        "2",
        "-l",
        "1000",
        "-J",
    ]);
    assert_eq!(str_at(&v, "/schema"), "wirebench.result/1");
    assert_eq!(str_at(&v, "/command"), "client");
    let sent = u64_at(&v, "/summary/sent_packets");
    let recv = u64_at(&v, "/summary/received_packets");
    let lost = u64_at(&v, "/summary/lost_packets");
    // 20 Mbit/s of 1000-byte payloads for 2 s is 5000 packets.
    assert!((4900..=5000).contains(&sent), "sent {sent}");
    assert_eq!(recv + lost, sent, "every packet is received or lost");
    assert_eq!(u64_at(&v, "/summary/duplicate_packets"), 0);
    // Same host: the clock is shared, latency is one-way from kernel timestamps.
    assert_eq!(str_at(&v, "/summary/latency_us/kind"), "one-way");
    assert_eq!(str_at(&v, "/timestamp_source"), "kernel-software");
    assert_eq!(str_at(&v, "/backend"), "udp-sendmmsg");
    let p50 = f64_at(&v, "/summary/latency_us/p50");
    let p999 = f64_at(&v, "/summary/latency_us/p999");
    assert!(p50 > 0.0 && p50 <= p999, "p50 {p50} p99.9 {p999}");
    assert!(v.pointer("/summary/jitter_us").is_some());
    assert!(
        v.pointer("/summary/rx_gap_us/nominal_us").is_some(),
        "pacing judged where it lands"
    );
    assert!(
        v.pointer("/summary/sender_cpu").is_some() && v.pointer("/summary/receiver_cpu").is_some()
    );
    assert_eq!(
        v.pointer("/summary/generator_limited"),
        Some(&serde_json::Value::Bool(false))
    );
    let hist = str_at(&v, "/streams/0/latency_histogram");
    assert!(!hist.is_empty(), "raw histogram kept");
    // -i 1 gives two interval rows in the tx direction.
    let intervals = v
        .pointer("/intervals")
        .and_then(|x| x.as_array())
        .expect("intervals");
    assert_eq!(intervals.len(), 2, "{intervals:?}");
}

#[test]
fn udp_reverse_and_parallel_streams() {
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    let v = run_json(&[
        "client",
        "127.0.0.1",
        "-p",
        &p,
        "-u",
        "-b",
        "5M",
        "-t",
        "1",
        "-P",
        "3",
        "-R",
        "-J",
    ]);
    let streams = v
        .pointer("/streams")
        .and_then(|s| s.as_array())
        .expect("streams");
    assert_eq!(streams.len(), 3);
    for s in streams {
        assert_eq!(s["direction"], "rx");
        assert!(s["sent_packets"].as_u64().unwrap() > 0);
    }
    let total: u64 = streams
        .iter()
        .map(|s| s["sent_packets"].as_u64().unwrap())
        .sum();
    assert_eq!(
        u64_at(&v, "/summary/sent_packets"),
        total,
        "the sum row adds the streams"
    );
}

#[test]
fn tcp_gives_tx_and_rx_separately_with_tcp_info() {
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    let v = run_json(&["client", "127.0.0.1", "-p", &p, "-t", "1", "-J"]);
    assert_eq!(str_at(&v, "/backend"), "tcp");
    let tx = f64_at(&v, "/summary/offered_bps");
    let rx = f64_at(&v, "/summary/received_bps");
    assert!(
        tx > 1e8 && rx > 1e8,
        "loopback TCP moves more than 100 Mbit/s: tx {tx} rx {rx}"
    );
    let sent = u64_at(&v, "/summary/sent_bytes");
    let received = u64_at(&v, "/summary/received_bytes");
    assert_eq!(
        sent, received,
        "TCP delivers every byte the kernel accepted"
    );
    assert!(v.pointer("/summary/retransmits").is_some());
    assert!(f64_at(&v, "/summary/tcp_rtt_us") > 0.0);
    assert!(
        v.pointer("/summary/loss_ratio").is_none(),
        "not measured for TCP, so absent"
    );
}

#[test]
fn bidir_reports_both_directions() {
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    let v = run_json(&[
        "client",
        "127.0.0.1",
        "-p",
        &p,
        "-u",
        "-b",
        "2M",
        "-t",
        "1",
        "--bidir",
        "-J",
    ]);
    let dirs: Vec<&str> = v["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["direction"].as_str().unwrap())
        .collect();
    assert_eq!(dirs, ["tx", "rx"]);
    assert!(u64_at(&v, "/summary/sent_packets") > 0);
    assert!(u64_at(&v, "/reverse_summary/sent_packets") > 0);
}

#[test]
fn human_output_has_intervals_summary_and_latency() {
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    let out = run(&[
        "client",
        "127.0.0.1",
        "-p",
        &p,
        "-u",
        "-b",
        "10M",
        "-t",
        "2",
    ]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.contains("[SUM tx]   0.00-1.00"), "{s}");
    assert!(s.contains("jitter us") && s.contains("lost"), "{s}");
    assert!(
        s.contains("latency (us)") && s.contains("one-way") && s.contains("p99.9"),
        "{s}"
    );
    assert!(
        s.contains("backend: udp-sendmmsg, timestamps: kernel-software, receiver: blocking"),
        "{s}"
    );
}

#[test]
fn gso_backend_is_recorded() {
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    let v = run_json(&[
        "client",
        "127.0.0.1",
        "-p",
        &p,
        "-u",
        "-b",
        "50M",
        "-l",
        "100",
        "-t",
        "1",
        "--udp-backend",
        "gso",
        "-J",
    ]);
    assert_eq!(str_at(&v, "/backend"), "udp-gso");
    let sent = u64_at(&v, "/summary/sent_packets");
    assert_eq!(
        u64_at(&v, "/summary/received_packets") + u64_at(&v, "/summary/lost_packets"),
        sent
    );
}
