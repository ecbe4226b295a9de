//! `wirebench client` against a live server on loopback.

use crate::util::*;

#[test]
fn udp_counts_every_packet_and_reports_one_way_latency() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-u -b 20M -t 2 -l 1000");
    assert_eq!(str_at(&v, "/schema"), "wirebench.result/1");
    assert_eq!(str_at(&v, "/command"), "client");
    let sent = u64_at(&v, "/summary/sent_packets");
    let recv = u64_at(&v, "/summary/received_packets");
    let lost = u64_at(&v, "/summary/lost_packets");
    // 20 Mbit/s of 1000-byte payloads is 2500 packets/s for the time the sender sent.
    let expected = 2500.0 * f64_at(&v, "/summary/duration_s");
    assert!(
        (sent as f64 - expected).abs() <= expected * 0.02 + 2.0,
        "sent {sent}, expected {expected}"
    );
    // At 2500 packets/s on loopback (4 MiB socket buffers as root) nothing should be lost:
    // every packet the sender's kernel took is counted once by the receiver, the tail
    // included. 0.1 % leaves room for a starved receiver on a loaded machine.
    assert!(lost * 1000 <= sent, "lost {lost} of {sent}");
    assert_eq!(recv + lost, sent);
    assert_eq!(u64_at(&v, "/summary/duplicate_packets"), 0);
    assert_eq!(u64_at(&v, "/summary/reordered_packets"), 0);
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
    assert!(v
        .pointer("/summary/generator_limited")
        .is_some_and(|g| g.is_boolean()));
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
    let v = srv.json("client", "-u -b 5M -t 1 -P 3 -R");
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
    let v = srv.json("client", "-u -b 2M -t 1 --bidir");
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
    let out = srv.run("client", "-u -b 10M -t 2");
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
    let v = srv.json("client", "-u -b 16M -l 100 -t 1 --udp-backend gso");
    assert_eq!(str_at(&v, "/backend"), "udp-gso");
    let sent = u64_at(&v, "/summary/sent_packets");
    assert!(
        sent > 18_000,
        "16 Mbit/s of 100-byte payloads for 1 s is 20,000 packets: {sent}"
    );
    assert!(
        u64_at(&v, "/summary/received_packets") > sent / 2,
        "most GSO datagrams arrive on loopback"
    );
}

#[test]
fn reverse_interval_rows_carry_the_servers_send_counts() {
    // Regression: in reverse mode the client finished at once and the server sent every
    // interval sample at t = 0, so "sent" was about 0 in every row.
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-u -b 10M -t 3 -R");
    let rows = v
        .pointer("/intervals")
        .and_then(|x| x.as_array())
        .expect("intervals");
    assert_eq!(rows.len(), 3, "{rows:?}");
    // Each row saw traffic (before the fix every "sent" was about 0), and over the three
    // rows the server sent about 30 Mbit; a stall may shift data between neighbours.
    let mut sent_total = 0.0;
    for r in rows {
        assert_eq!(r["direction"], "rx");
        let sent = r["sent_bps"].as_f64().unwrap();
        let received = r["received_bps"].as_f64().unwrap();
        assert!(sent > 2e6 && received > 2e6, "{r}");
        sent_total += sent;
    }
    assert!(
        (sent_total - 30e6).abs() < 3e6,
        "sent {sent_total} bit over 3 s"
    );
}

#[test]
fn round_trip_probes_are_echoed_and_timed() {
    // --round-trip forces the path used between hosts without a shared clock: the sender
    // flags probes, the receiver echoes their headers, the sender times the answers.
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    for reverse in [false, true] {
        let mut args = vec![
            "client",
            "127.0.0.1",
            "-p",
            &p,
            "-u",
            "-b",
            "8M",
            "-l",
            "1000",
            "-t",
            "2",
            "--round-trip",
            "-J",
        ];
        if reverse {
            args.push("-R");
        }
        let v = run_json(&args);
        assert_eq!(
            str_at(&v, "/summary/latency_us/kind"),
            "round-trip",
            "reverse {reverse}"
        );
        // 1000 packets/s, every packet a probe: about 2000 answers.
        let n = u64_at(&v, "/summary/latency_us/count");
        assert!(n > 1500 && n <= 2000, "{n} round trips");
        let p50 = f64_at(&v, "/summary/latency_us/p50");
        assert!(
            p50 > 0.0 && p50 < 5000.0,
            "loopback round trip p50 {p50} us"
        );
        assert_eq!(
            u64_at(&v, "/summary/lost_packets"),
            0,
            "echoes are not counted as data"
        );
    }
}

#[test]
fn a_low_rate_sender_still_stops_on_time() {
    // Regression: at 500 bit/s the first gap (23 s) outlasted the test, and the sender
    // slept through it.
    let srv = ServerProc::start(&[]);
    let start = std::time::Instant::now();
    let v = srv.json("client", "-u -b 500 -t 1 -R");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(8),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(
        u64_at(&v, "/summary/sent_packets"),
        1,
        "only packet 0 was due in 1 s"
    );
}

#[test]
fn json_carries_the_contract_of_the_design() {
    // The names DESIGN.md promises to scripts; they change only with the schema version.
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-u -b 5M -t 1");
    for key in [
        "schema",
        "command",
        "started_at",
        "params",
        "environment",
        "backend",
        "timestamp_source",
        "intervals",
        "streams",
        "summary",
    ] {
        assert!(v.get(key).is_some(), "top-level '{key}' missing: {v:#}");
    }
    for key in [
        "duration_s",
        "target_bps",
        "offered_bps",
        "received_bps",
        "sent_packets",
        "received_packets",
        "lost_packets",
        "duplicate_packets",
        "reordered_packets",
        "loss_ratio",
        "jitter_us",
        "latency_us",
        "sent_bytes",
        "received_bytes",
        "generator_limited",
        "sender_cpu",
        "receiver_cpu",
    ] {
        assert!(
            v["summary"].get(key).is_some(),
            "summary '{key}' missing: {:#}",
            v["summary"]
        );
    }
    for key in ["kind", "min", "avg", "p50", "p90", "p99", "p999", "max"] {
        assert!(
            v["summary"]["latency_us"].get(key).is_some(),
            "latency_us '{key}' missing"
        );
    }
    let s = &v["streams"][0];
    for key in ["id", "protocol", "direction", "sent_packets", "loss_ratio"] {
        assert!(s.get(key).is_some(), "stream '{key}' missing: {s:#}");
    }
    // Not measured for UDP, so absent rather than zero.
    assert!(v["summary"].get("retransmits").is_none());
    let ratio = v["summary"]["loss_ratio"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&ratio), "ratios are 0..1: {ratio}");
}
