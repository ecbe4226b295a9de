//! `wirebench client` against a live server on loopback.

use crate::util::*;

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

fn human_output_has_intervals_summary_and_latency() {
    let srv = ServerProc::start(&[]);
    let out = srv.run("client", "-u -b 10M -t 2");
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One stream: its rows are labelled by its id, and no [SUM] row repeats them (as
    // iperf3 prints one stream).
    assert!(s.contains("[  1 tx]   0.00-1.00"), "{s}");
    assert!(!s.contains("[SUM"), "{s}");
    assert!(s.starts_with("wirebench UDP test to 127.0.0.1:"), "{s}");
    assert!(
        s.lines().next().is_some_and(|l| l.contains(": 1 stream, ")),
        "{s}"
    );
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
        // The fastest round trip is loopback's own (microseconds); the median includes
        // what a busy machine adds (the suite runs four tests at a time); a wrong clock
        // or stamp would read seconds, or nothing.
        let (min, p50) = (
            f64_at(&v, "/summary/latency_us/min"),
            f64_at(&v, "/summary/latency_us/p50"),
        );
        assert!(
            min > 0.0 && min < 5_000.0 && p50 < 100_000.0,
            "loopback round trip min {min} us, p50 {p50} us"
        );
        assert_eq!(
            u64_at(&v, "/summary/lost_packets"),
            0,
            "echoes are not counted as data"
        );
    }
}

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

fn intervals_show_each_stream_then_the_sum_and_keep_the_last_partial_one() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-u -b 4M -l 1000 -t 1.5 -i 1 -P 2");
    let rows = v
        .pointer("/intervals")
        .and_then(|x| x.as_array())
        .expect("intervals");
    // Per interval: stream 1, stream 2, then their sum; the last interval is 1.0-1.5 s.
    assert_eq!(rows.len(), 6, "{rows:#?}");
    let ids: Vec<_> = rows.iter().map(|r| r.get("stream").cloned()).collect();
    let one = Some(serde_json::json!(1));
    let two = Some(serde_json::json!(2));
    assert_eq!(ids, [one.clone(), two.clone(), None, one, two, None]);
    assert_eq!(rows[5]["start_s"], 1.0);
    assert_eq!(rows[5]["end_s"], 1.5);
    for chunk in rows.chunks(3) {
        let sum = |k: &str| chunk[0][k].as_u64().unwrap() + chunk[1][k].as_u64().unwrap();
        assert_eq!(sum("sent_bytes"), chunk[2]["sent_bytes"].as_u64().unwrap());
        assert_eq!(
            sum("received_packets"),
            chunk[2]["received_packets"].as_u64().unwrap()
        );
        // Every row has its latency (one-way on one host) and its loss placed by due time;
        // the sum's latency holds both streams' samples.
        for r in chunk {
            assert_eq!(r["loss_attributed"], true, "{r}");
            assert_eq!(r["latency"]["kind"], "one-way", "{r}");
            assert!(
                f64_at(r, "/latency/p99_us") >= f64_at(r, "/latency/p50_us"),
                "{r}"
            );
        }
        let count = |r: &serde_json::Value| u64_at(r, "/latency/count");
        assert_eq!(count(&chunk[0]) + count(&chunk[1]), count(&chunk[2]));
    }
    // The intervals add up to what was sent: the tick at the end waits for the senders.
    // What arrives after it (a queue's tail) is in the totals only, as in iperf3.
    let total = |k: &str| {
        rows.iter()
            .filter(|r| r.get("stream").is_none())
            .map(|r| r[k].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(total("sent_packets"), u64_at(&v, "/summary/sent_packets"));
    let received = u64_at(&v, "/summary/received_packets");
    assert!(
        total("received_packets") <= received && total("received_packets") * 100 >= received * 99,
        "{} in the intervals, {received} in all",
        total("received_packets")
    );
    // The text form labels each stream and the sum.
    let out = srv.run("client", "-t 1.5 -i 1 -P 2 -b 20M");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for needle in ["[  1 tx]   1.00-1.50", "[  2 tx]", "[SUM tx]   1.00-1.50"] {
        assert!(text.contains(needle), "{needle} missing in:\n{text}");
    }
    // iperf3's closing lines: sender and receiver.
    assert!(
        text.lines()
            .any(|l| l.starts_with("[SUM tx]   0.00-") && l.ends_with("sender"))
            && text.lines().any(|l| l.ends_with("receiver")),
        "{text}"
    );
}

fn ctrl_c_ends_a_test_with_the_figures_so_far() {
    use std::io::Read as _;
    let srv = ServerProc::start(&[]);
    let port = srv.port_arg();
    // Reverse: the server's sender has to stop too.
    let mut child = std::process::Command::new(bin())
        .args(["client", "127.0.0.1", "-p", &port, "-u", "-b", "10M", "-R"])
        .args(["-t", "30", "-i", "0.5", "-J"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start client");
    std::thread::sleep(std::time::Duration::from_millis(1700));
    let started = std::time::Instant::now();
    // SAFETY: kill(2) on our own child's pid; no memory is involved.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read");
    let status = child.wait().expect("wait");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "the stop took {:?}",
        started.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one complete document");
    assert_eq!(v["interrupted"], true);
    let secs = f64_at(&v, "/summary/duration_s");
    assert!((1.0..5.0).contains(&secs), "ran {secs} s");
    // What the server sent before the stop was all counted: nothing is lost on loopback.
    let sent = u64_at(&v, "/summary/sent_packets");
    assert!(sent > 1000, "sent {sent}");
    assert!(
        u64_at(&v, "/summary/lost_packets") * 100 <= sent,
        "{}",
        v["summary"]
    );
    // The intervals stop where the test did.
    let rows = v["intervals"].as_array().expect("intervals");
    assert!(!rows.is_empty() && rows.len() <= 8, "{rows:?}");
    // The server is free for the next test.
    let again = srv.json("client", "-u -b 1M -t 0.5");
    assert_eq!(again["interrupted"], serde_json::Value::Null);
}

fn a_failure_with_json_is_an_error_object_on_stdout() {
    let port = free_port().to_string();
    let out = run(&["client", "127.0.0.1", "-p", &port, "-t", "1", "-J"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let e = v["error"].as_str().expect("error string");
    assert!(e.contains("127.0.0.1"), "{e}");
}

fn json_stream_writes_one_event_per_line_as_iperf3_does() {
    let srv = ServerProc::start(&[]);
    let out = srv.run("client", "-t 2 -i 1 -P 2 -b 50M --json-stream");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(names, ["start", "interval", "interval", "end"], "{text}");
    assert_eq!(events[0]["data"]["test_start"]["num_streams"], 2);
    for i in &events[1..3] {
        assert_eq!(
            i["data"]["streams"].as_array().map(Vec::len),
            Some(2),
            "{i}"
        );
        let sum = i["data"]["sum"]["bytes"].as_u64().unwrap();
        let parts: u64 = (0..2)
            .map(|k| i["data"]["streams"][k]["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, parts);
    }
    assert!(events[3]["data"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
    // iperf3 3.17 takes --json-stream with -J, as scripts write it.
    let out = srv.run("client", "-t 0.5 -J --json-stream");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"))
        })
        .map(|e| e["event"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert!(
        names.first().is_some_and(|n| n == "start")
            && names.last().is_some_and(|n| n == "end")
            && names[1..names.len() - 1].iter().all(|n| n == "interval"),
        "{text}"
    );
    // A failure is an event too.
    let port = free_port().to_string();
    let out = run(&["client", "127.0.0.1", "-p", &port, "--json-stream"]);
    assert_eq!(out.status.code(), Some(1));
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::to_owned)
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&last).expect("an error event");
    assert_eq!(v["event"], "error", "{v}");
}

// iperf3's flags (issue: "each flag has a test").

fn f_shows_rates_and_amounts_in_one_unit() {
    let srv = ServerProc::start(&[]);
    let out = srv.run("client", "-t 1 -i 0.5 -b 100M -f m");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("[  1 tx]   0.00-0.50"))
        .expect(&text);
    assert!(
        line.contains(" MBytes") && line.contains(" Mbits/sec"),
        "{line}"
    );
    // Every figure of the text in that unit, named as iperf3 names it: the header, the
    // rows, the stream table and the closing lines; none scaled to another.
    assert!(text.starts_with("wirebench TCP test"), "{text}");
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.contains("100.00 Mbits/sec")),
        "{text}"
    );
    for unit in [
        "Gbit", "kbit", "Mbit/s", " GB", " MB ", " kB", "GBytes", "KBytes",
    ] {
        assert!(!text.contains(unit), "{unit} in {text}");
    }
    let table = text.lines().find(|l| l.starts_with("1 tx ")).expect(&text);
    assert!(
        table.matches(" Mbits/sec").count() == 2 && table.contains(" MBytes"),
        "{table}"
    );
    let out = srv.run("client", "-t 0.5 -b 100M -f K");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.ends_with("sender") && l.contains("KBytes/sec")),
        "{text}"
    );
    assert_fails(&srv.run("client", "-t 0.5 -f x"), 2, "not a format");
}

fn n_and_k_send_an_amount_instead_of_a_time() {
    let srv = ServerProc::start(&[]);
    // -n is the total over the streams; the test ends when it is sent.
    let v = srv.json("client", "-n 40M -P 2 -b 400M");
    assert_eq!(u64_at(&v, "/summary/sent_bytes"), 40 << 20);
    assert_eq!(u64_at(&v, "/summary/received_bytes"), 40 << 20);
    assert!(f64_at(&v, "/summary/duration_s") < 3.0, "{}", v["summary"]);
    let v = srv.json("client", "-k 100 -l 64k");
    assert_eq!(u64_at(&v, "/summary/sent_bytes"), 100 * 65536);
    let v = srv.json("client", "-u -n 1000000 -l 1000 -b 100M");
    assert_eq!(u64_at(&v, "/summary/sent_packets"), 1000);
    assert_fails(&srv.run("client", "-n 1M -R"), 2, "give -t instead");
    // The header says the amount, and the time only as its bound.
    let out = srv.run("client", "-n 40M -P 2 -b 400M");
    let text = String::from_utf8_lossy(&out.stdout);
    let head = text.lines().next().unwrap_or_default();
    assert!(
        head.ends_with(
            ": 2 streams, 400.00 Mbit/s per stream, 20.00 MBytes per stream (at most 3600 s)"
        ),
        "{text}"
    );
}

fn address_family_bind_address_and_client_ports() {
    // The server listens on IPv6 and IPv4 by default.
    let srv = ServerProc::start_on(None, &["--no-iperf3"]);
    let port = srv.port_arg();
    let v = run_json(&["client", "::1", "-p", &port, "-t", "0.3", "-6", "-J"]);
    assert!(str_at(&v, "/connection/remote").starts_with("[::1]"), "{v}");
    let cport = free_port();
    let c = cport.to_string();
    let args = [
        "-t",
        "0.3",
        "-P",
        "2",
        "-4",
        "-B",
        "127.0.0.1",
        "--cport",
        &c,
        "-J",
    ];
    let v = run_json(&[&["client", "127.0.0.1", "-p", &port][..], &args].concat());
    assert_eq!(
        str_at(&v, "/connection/streams/0/local"),
        format!("127.0.0.1:{cport}")
    );
    assert_eq!(
        str_at(&v, "/connection/streams/1/local"),
        format!("127.0.0.1:{}", cport + 1)
    );
    assert_fails(
        &run(&["client", "127.0.0.1", "-p", &port, "-6"]),
        2,
        "no IPv6 address",
    );
}

fn congestion_control_mss_and_no_delay_reach_the_sockets() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-t 0.5 -C reno -M 1000 -N");
    assert_eq!(str_at(&v, "/connection/congestion"), "reno");
    assert_eq!(str_at(&v, "/connection/remote_congestion"), "reno");
    let mss = u64_at(&v, "/connection/tcp_mss");
    assert!(mss <= 1000 && mss > 500, "MSS {mss}");
    assert_eq!(v["connection"]["nodelay"], true);
    let v = srv.json("client", "-t 0.3");
    assert_eq!(v["connection"]["nodelay"], false);
    assert_fails(
        &srv.run("client", "-t 0.3 -C no-such-algo"),
        1,
        "congestion control",
    );
    assert_fails(&srv.run("client", "-t 0.3 -M 20"), 2, "MSS 20");
}

/// `-A`: the unpaced senders of a side pinned to one CPU share one thread there (as
/// iperf3's one thread does); every stream still counts its own bytes, both ways, and its
/// share of the amount (`-n`, split between the streams) is exact. Receivers over loopback
/// keep a thread each; the shared receiver thread is tested in `engine::tcp`.
fn pinned_parallel_streams_share_a_sender_thread_and_count_their_own_bytes() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-P 3 -A 0,0 -n 30M");
    let streams = v["streams"].as_array().cloned().unwrap_or_default();
    assert_eq!(streams.len(), 3, "{v}");
    for s in &streams {
        assert_eq!(s["sent_bytes"], 10 << 20, "{s}");
        assert_eq!(s["received_bytes"], 10 << 20, "{s}");
    }
    // The server's senders (-R; -n counts the client's): each stream's bytes arrive.
    let v = srv.json("client", "-P 3 -A 0,0 -t 0.5 -R");
    let streams = v["streams"].as_array().cloned().unwrap_or_default();
    assert_eq!(streams.len(), 3, "{v}");
    for s in &streams {
        assert!(s["received_bytes"].as_u64().unwrap_or(0) > 1 << 20, "{s}");
        assert_eq!(s["sent_bytes"], s["received_bytes"], "{s}");
    }
}

fn zerocopy_sends_with_sendfile_both_ways() {
    let srv = ServerProc::start(&[]);
    for dir in ["", "-R"] {
        let v = srv.json("client", &format!("-t 0.5 -Z {dir}"));
        assert_eq!(str_at(&v, "/backend"), "tcp-sendfile", "{dir}");
        assert!(u64_at(&v, "/summary/received_bytes") > 1 << 20);
        assert_eq!(
            u64_at(&v, "/summary/received_bytes"),
            u64_at(&v, "/summary/sent_bytes")
        );
    }
    assert_fails(
        &srv.run("client", "-u -Z -t 0.3"),
        2,
        "do not apply to a UDP test",
    );
}

fn title_timestamps_logfile_and_forceflush() {
    let srv = ServerProc::start(&[]);
    let out = srv.run("client", "-t 0.5 -i 0.25 -T lab7 --timestamps --forceflush");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for l in text.lines() {
        // 2026-12-01T19:48:14.700Z lab7:  ...
        let (stamp, rest) = l.split_once(' ').expect(l);
        assert!(
            stamp.len() == 24 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
            "{l}"
        );
        assert!(rest.starts_with("lab7:  "), "{l}");
    }
    assert!(text.contains("[  1 tx]   0.25-0.50"), "{text}");
    // In JSON the title is a key, and no line is decorated.
    let v = srv.json("client", "-t 0.3 -T lab7 --timestamps --json-format iperf3");
    assert_eq!(v["title"], "lab7");
    let v = srv.json("client", "-t 0.3 -T lab7");
    assert_eq!(v["params"]["title"], "lab7");
    // --logfile: nothing on stdout, everything in the file (appended).
    let scratch = crate::util::Scratch::new("logfile");
    let log = scratch.join("out.log");
    for _ in 0..2 {
        let out = srv.run("client", &format!("-t 0.3 --logfile {}", log.display()));
        assert!(out.status.success() && out.stdout.is_empty());
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        logged.matches("wirebench TCP test to").count(),
        2,
        "{logged}"
    );
    assert!(logged.contains("receiver"), "{logged}");
}

fn connect_timeout_gives_up_on_a_server_that_does_not_answer() {
    // A listener whose accept queue is full (std listens with a backlog of 128) drops new
    // SYNs: connecting hangs.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut held = Vec::new();
    let mut hangs = false;
    for _ in 0..1000 {
        match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200)) {
            Ok(s) => held.push(s),
            Err(_) => {
                hangs = true;
                break;
            }
        }
    }
    // Linux drops a SYN once the accept queue is full: a connect then waits.
    assert!(
        hangs,
        "1,000 connections were all accepted: the accept queue never filled"
    );
    let port = addr.port().to_string();
    let t0 = std::time::Instant::now();
    let out = run(&[
        "client",
        "127.0.0.1",
        "-p",
        &port,
        "--connect-timeout",
        "300",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        t0.elapsed()
    );
    drop(held);
}

fn one_off_server_exits_after_one_test() {
    let mut srv = ServerProc::start(&["-1", "--no-iperf3"]);
    let v = srv.json("client", "-t 0.3");
    assert!(u64_at(&v, "/summary/sent_bytes") > 0);
    let t0 = std::time::Instant::now();
    while srv.alive() && t0.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!srv.alive(), "the server still runs after its one test");
}

fn iperf3_options_wirebench_does_not_take_are_named() {
    let out = run(&["-c", "127.0.0.1", "--udp-counters-64bit"]);
    assert_fails(&out, 2, "--udp-counters-64bit (iperf3's) is not taken");
    assert_fails(&run(&["-s", "-D"]), 2, "systemd");
}

fn omit_leaves_a_tcp_warm_up_out_of_the_figures() {
    let srv = ServerProc::start(&[]);
    for dir in ["", "-R"] {
        let t0 = std::time::Instant::now();
        let v = srv.json("client", &format!("-t 1 -O 1 -b 80M -i 0.5 {dir}"));
        assert!(
            t0.elapsed() >= std::time::Duration::from_secs(2),
            "the warm-up ran"
        );
        let s = &v["summary"];
        // 80 Mbit/s for the measured second: 10 MB, not the 20 MB sent in all.
        let sent = u64_at(&v, "/summary/sent_bytes") as f64;
        assert!((sent - 10e6).abs() < 0.05 * 10e6, "{dir}: {s}");
        assert_eq!(
            u64_at(&v, "/summary/received_bytes") as f64,
            sent,
            "{dir}: {s}"
        );
        assert!(
            (f64_at(&v, "/summary/duration_s") - 1.0).abs() < 0.05,
            "{s}"
        );
        let rows = v["intervals"].as_array().expect("intervals");
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[1]["end_s"], 1.0);
    }
    assert_fails(&srv.run("client", "-u -O 1 -t 1"), 2, "-O is for TCP");
}

/// `--repeat 3`: three whole tests against the server, every one kept in `runs`; the
/// document is the median run's, and each headline figure has its samples and spread.
/// The terminal shows the spread under the median run's tables; iperf3's JSON, which has
/// no place for it, is refused.
fn repeat_keeps_every_run_and_gives_each_figure_its_spread() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-u -b 5M -t 1 -l 1000 --repeat 3");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3);
    let received: Vec<f64> = runs
        .iter()
        .map(|r| f64_at(r, "/summary/received_bps"))
        .collect();
    assert!(received.iter().all(|x| *x > 0.0), "{received:?}");
    // Each run records the host's load, and says so when the host was saturated.
    for r in runs {
        let busy = f64_at(r, "/host_load/cpu_busy_percent");
        assert!(
            u64_at(r, "/host_load/cpus") >= 1 && (0.0..=100.0).contains(&busy),
            "{r}"
        );
        let noted = r["notes"].as_array().is_some_and(|n| {
            n.iter()
                .any(|x| x.as_str().is_some_and(|x| x.contains("% busy")))
        });
        assert_eq!(noted, busy >= 90.0, "{busy} % busy: {r}");
    }
    assert_eq!(u64_at(&v, "/repeated/n"), 3);
    let shown = u64_at(&v, "/repeated/shown") as usize;
    let fig = &v["repeated"]["figures"][0];
    assert_eq!(
        (str_at(fig, "/figure"), str_at(fig, "/unit")),
        ("received_bps", "bit/s")
    );
    let samples: Vec<f64> = fig["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(samples, received);
    let mut sorted = received.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(f64_at(fig, "/spread/median"), sorted[1]);
    assert_eq!(
        [f64_at(fig, "/spread/ci95/0"), f64_at(fig, "/spread/ci95/1")],
        [sorted[0], sorted[2]]
    );
    assert_eq!(f64_at(fig, "/spread/coverage"), 0.75);
    // The document is the median run's.
    assert_eq!(f64_at(&v, "/summary/received_bps"), sorted[1]);
    assert_eq!(received[shown - 1], sorted[1]);
    let out = srv.run("client", "-u -b 5M -t 1 --repeat 2");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Repeated 2 times") && text.contains("received_bps"),
        "{text}"
    );
    assert_fails(
        &srv.run("client", "-t 1 --repeat 2 -J --json-format iperf3"),
        2,
        "no place for",
    );
    assert_fails(&srv.run("client", "-t 1 --repeat 0"), 2, "--repeat");
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    vec![
        crate::harness::case!(udp_counts_every_packet_and_reports_one_way_latency),
        crate::harness::case!(
            pinned_parallel_streams_share_a_sender_thread_and_count_their_own_bytes
        ),
        crate::harness::case!(repeat_keeps_every_run_and_gives_each_figure_its_spread),
        crate::harness::case!(udp_reverse_and_parallel_streams),
        crate::harness::case!(tcp_gives_tx_and_rx_separately_with_tcp_info),
        crate::harness::case!(bidir_reports_both_directions),
        crate::harness::case!(human_output_has_intervals_summary_and_latency),
        crate::harness::case!(gso_backend_is_recorded),
        crate::harness::case!(reverse_interval_rows_carry_the_servers_send_counts),
        crate::harness::case!(round_trip_probes_are_echoed_and_timed),
        crate::harness::case!(a_low_rate_sender_still_stops_on_time),
        crate::harness::case!(json_carries_the_contract_of_the_design),
        crate::harness::case!(
            intervals_show_each_stream_then_the_sum_and_keep_the_last_partial_one
        ),
        crate::harness::case!(ctrl_c_ends_a_test_with_the_figures_so_far),
        crate::harness::case!(a_failure_with_json_is_an_error_object_on_stdout),
        crate::harness::case!(json_stream_writes_one_event_per_line_as_iperf3_does),
        crate::harness::case!(f_shows_rates_and_amounts_in_one_unit),
        crate::harness::case!(n_and_k_send_an_amount_instead_of_a_time),
        crate::harness::case!(address_family_bind_address_and_client_ports),
        crate::harness::case!(congestion_control_mss_and_no_delay_reach_the_sockets),
        crate::harness::case!(zerocopy_sends_with_sendfile_both_ways),
        crate::harness::case!(title_timestamps_logfile_and_forceflush),
        crate::harness::case!(connect_timeout_gives_up_on_a_server_that_does_not_answer),
        crate::harness::case!(one_off_server_exits_after_one_test),
        crate::harness::case!(iperf3_options_wirebench_does_not_take_are_named),
        crate::harness::case!(omit_leaves_a_tcp_warm_up_out_of_the_figures),
    ]
}
