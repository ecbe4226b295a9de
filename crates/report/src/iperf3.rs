//! A client test's result as iperf3 writes it (`-J --json-format iperf3`): the document of
//! `iperf3 -c -J` (`start`, `intervals[].streams[]` and `sum`, `end.streams`,
//! `end.sum_sent`, `end.sum_received`, `cpu_utilization_percent`, with iperf3's keys and
//! units), and the events of `--json-stream` (iperf3 3.17: one `{"event", "data"}` object
//! per line).
//!
//! Every figure comes from wirebench's own result; a figure the test did not measure is
//! left out rather than written as 0. Streams are numbered by wirebench's stream ids where
//! iperf3 writes socket numbers. Pure: it reads a [`RunResult`], nothing else.

use model::results::{IntervalRow, RunResult, StreamResult, Summary};
use model::spec::{Direction, Protocol, TestSpec};
use serde_json::{json, Map, Value};

/// The whole document, as `iperf3 -c … -J` prints it.
pub fn document(r: &RunResult) -> Value {
    let mut doc = json!({
        "start": start(r),
        "intervals": intervals(r),
        "end": end(r),
    });
    if r.interrupted {
        doc["interrupted"] = true.into();
    }
    if let Some(t) = r.params.get("title").and_then(Value::as_str) {
        doc["title"] = t.into();
    }
    if let Some(t) = r
        .connection
        .as_ref()
        .and_then(|c| c.server_output.as_deref())
    {
        doc["server_output_text"] = t.into();
    }
    doc
}

/// The events of `--json-stream` for a finished test: `start`, one `interval` per
/// interval, `end`.
pub fn events(r: &RunResult) -> Vec<Value> {
    let mut out = vec![event("start", start(r))];
    out.extend(intervals(r).into_iter().map(|i| event("interval", i)));
    out.push(event("end", end(r)));
    out
}

/// One `--json-stream` line's object.
pub fn event(name: &str, data: Value) -> Value {
    json!({ "event": name, "data": data })
}

fn spec(r: &RunResult) -> Option<TestSpec> {
    serde_json::from_value(r.params.get("test")?.clone()).ok()
}

fn udp(r: &RunResult) -> bool {
    spec(r).is_some_and(|s| s.protocol == Protocol::Udp)
}

fn direction(r: &RunResult) -> Direction {
    spec(r).map_or(Direction::Forward, |s| s.direction)
}

/// (host, port) of an address as `SocketAddr` prints it.
fn host_port(a: &str) -> (String, u16) {
    match a.parse::<std::net::SocketAddr>() {
        Ok(s) => (s.ip().to_string(), s.port()),
        Err(_) => (a.to_owned(), 0),
    }
}

/// The document `iperf3 -J` prints when a test could not run: its `start` with no
/// connection, no intervals, an empty `end` and the `error`, so that a script's
/// `d["end"]["sum_received"]` fails on it as it fails on iperf3's.
pub fn error_document(env: &model::results::Environment, message: &str) -> Value {
    json!({
        "start": {
            "connected": [],
            "version": format!("wirebench {}", env.wirebench_version),
            "system_info": format!("Linux {} {}", env.hostname, env.kernel),
        },
        "intervals": [],
        "end": {},
        "error": message,
    })
}

/// `start`: what was connected and asked.
pub fn start(r: &RunResult) -> Value {
    let spec = spec(r);
    let mut s = Map::new();
    if let Some(c) = &r.connection {
        let connected: Vec<Value> = c
            .streams
            .iter()
            .map(|a| {
                let (lh, lp) = host_port(&a.local);
                let (rh, rp) = host_port(&a.remote);
                json!({ "socket": a.id, "local_host": lh, "local_port": lp,
                    "remote_host": rh, "remote_port": rp })
            })
            .collect();
        s.insert("connected".into(), connected.into());
    }
    s.insert(
        "version".into(),
        format!("wirebench {}", r.environment.wirebench_version).into(),
    );
    s.insert(
        "system_info".into(),
        format!("Linux {} {}", r.environment.hostname, r.environment.kernel).into(),
    );
    if let Some(secs) = model::time::parse_rfc3339(&r.started_at) {
        s.insert(
            "timestamp".into(),
            json!({ "time": model::time::rfc1123(secs), "timesecs": secs }),
        );
    }
    if let Some(server) = r.params.get("server").and_then(Value::as_str) {
        let (host, port) = host_port(server);
        s.insert(
            "connecting_to".into(),
            json!({ "host": host, "port": port }),
        );
    }
    if let Some(c) = &r.connection {
        s.insert("cookie".into(), c.cookie.clone().into());
        if let (Some(mss), false) = (c.tcp_mss, udp(r)) {
            s.insert("tcp_mss_default".into(), mss.into());
        }
    }
    let Some(spec) = spec else {
        return s.into();
    };
    let bitrate = spec
        .rate
        .bits_per_sec(spec.len)
        .map_or(0, |b| b.round() as u64);
    let amount = spec
        .bytes_per_stream
        .map_or(0, |b| b.saturating_mul(u64::from(spec.streams)));
    s.insert("target_bitrate".into(), bitrate.into());
    s.insert("sock_bufsize".into(), spec.window.unwrap_or(0).into());
    if let Some(c) = &r.connection {
        if let (Some(snd), Some(rcv)) = (c.sndbuf, c.rcvbuf) {
            s.insert("sndbuf_actual".into(), snd.into());
            s.insert("rcvbuf_actual".into(), rcv.into());
        }
    }
    let mut test = json!({
        "protocol": if spec.protocol == Protocol::Udp { "UDP" } else { "TCP" },
        "num_streams": spec.streams,
        "blksize": spec.len,
        "omit": spec.omit.map_or(0, |o| o.as_secs_f64().round() as u64),
        // With -n/-k iperf3 writes a duration of 0 and the amount in bytes.
        "duration": if amount > 0 { 0 } else { spec.duration.as_secs_f64().round() as u64 },
        "bytes": amount,
        "blocks": 0,
        "reverse": u8::from(spec.direction == Direction::Reverse),
        "tos": u32::from(spec.dscp.unwrap_or(0)) << 2,
        "target_bitrate": bitrate,
    });
    if spec.direction == Direction::Bidir {
        test["bidir"] = 1.into();
    }
    s.insert("test_start".into(), test);
    s.into()
}

/// Whether this (the client) side sent the rows of `dir` (`tx` or `rx`).
fn client_sends(dir: &str) -> bool {
    dir == "tx"
}

/// One interval row as iperf3's per-stream (or sum) interval object, from the client's
/// view: what it sent in `tx` rows, what it received in `rx` rows.
fn interval_object(row: &IntervalRow, socket: Option<u8>, udp: bool) -> Value {
    let sender = client_sends(&row.direction);
    let seconds = row.end_s - row.start_s;
    let bytes = if sender {
        row.sent_bytes
    } else {
        row.received_bytes
    };
    let mut o = Map::new();
    if let Some(id) = socket {
        o.insert("socket".into(), id.into());
    }
    o.insert("start".into(), row.start_s.into());
    o.insert("end".into(), row.end_s.into());
    o.insert("seconds".into(), seconds.into());
    if let Some(b) = bytes {
        o.insert("bytes".into(), b.into());
        let bps = if seconds > 0.0 {
            b as f64 * 8.0 / seconds
        } else {
            0.0
        };
        o.insert("bits_per_second".into(), bps.into());
    }
    if udp {
        if sender {
            if let Some(p) = row.sent_packets {
                o.insert("packets".into(), p.into());
            }
        } else if let (Some(p), Some(lost)) = (row.received_packets, row.lost_packets) {
            o.insert(
                "jitter_ms".into(),
                (row.jitter_us.unwrap_or(0.0) / 1e3).into(),
            );
            o.insert("lost_packets".into(), lost.into());
            o.insert("packets".into(), (p + lost).into());
            o.insert("lost_percent".into(), percent(lost, p + lost).into());
        }
    } else if sender {
        if let Some(rt) = row.retransmits {
            o.insert("retransmits".into(), rt.into());
        }
        if let Some(t) = row.tcp {
            o.insert("snd_cwnd".into(), t.cwnd_bytes.into());
            o.insert("snd_wnd".into(), t.snd_wnd.into());
            o.insert("rtt".into(), t.rtt_us.into());
            o.insert("rttvar".into(), t.rttvar_us.into());
            o.insert("pmtu".into(), t.pmtu.into());
        }
    }
    o.insert("omitted".into(), false.into());
    o.insert("sender".into(), sender.into());
    o.into()
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The direction whose sum row closes an interval's rows (`rx` when the server sends).
pub fn last_direction(r: &RunResult) -> &'static str {
    if direction(r) == Direction::Forward {
        "tx"
    } else {
        "rx"
    }
}

/// The main direction's label (`tx`, or `rx` with `-R`).
fn main_dir(r: &RunResult) -> &'static str {
    if direction(r) == Direction::Reverse {
        "rx"
    } else {
        "tx"
    }
}

/// `intervals`: per interval the streams (both directions with `--bidir`), `sum` of the
/// main direction and, with `--bidir`, `sum_bidir_reverse`.
pub fn intervals(r: &RunResult) -> Vec<Value> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < r.intervals.len() {
        let start = r.intervals[i].start_s;
        let group: Vec<&IntervalRow> = r.intervals[i..]
            .iter()
            .take_while(|x| x.start_s == start)
            .collect();
        i += group.len();
        out.push(interval_group(r, &group));
    }
    out
}

/// One interval's object from its rows (per-stream rows, then each direction's sum); `r`
/// gives the test's parameters.
pub fn interval_group(r: &RunResult, rows: &[&IntervalRow]) -> Value {
    let udp = udp(r);
    let mut streams = Vec::new();
    let mut sum = Value::Null;
    let mut reverse = Value::Null;
    for dir in ["tx", "rx"] {
        let of_dir: Vec<&&IntervalRow> = rows.iter().filter(|x| x.direction == dir).collect();
        let Some(total) = of_dir.iter().find(|x| x.stream.is_none()) else {
            continue;
        };
        let per_stream: Vec<_> = of_dir.iter().filter(|x| x.stream.is_some()).collect();
        if per_stream.is_empty() {
            // One stream: the sum is its row.
            let id = stream_ids(r, dir).first().copied();
            streams.push(interval_object(total, id, udp));
        } else {
            for x in per_stream {
                streams.push(interval_object(x, x.stream, udp));
            }
        }
        let mut s = interval_object(total, None, udp);
        if let Some(o) = s.as_object_mut() {
            // iperf3's sums carry no TCP state.
            for k in ["snd_cwnd", "snd_wnd", "rtt", "rttvar", "pmtu"] {
                o.remove(k);
            }
        }
        if dir == main_dir(r) {
            sum = s;
        } else {
            reverse = s;
        }
    }
    let mut o = json!({ "streams": streams, "sum": sum });
    if !reverse.is_null() {
        o["sum_bidir_reverse"] = reverse;
    }
    o
}

/// The ids of the streams of one direction, as wirebench numbers them: the client's
/// senders first, then the server's.
fn stream_ids(r: &RunResult, dir: &str) -> Vec<u8> {
    let Some(spec) = spec(r) else {
        return Vec::new();
    };
    let p = spec.streams;
    match (spec.direction, dir) {
        (Direction::Forward, "tx") | (Direction::Reverse, "rx") | (Direction::Bidir, "tx") => {
            (1..=p).collect()
        }
        (Direction::Bidir, "rx") => (1..=p).map(|i| p.saturating_add(i)).collect(),
        _ => Vec::new(),
    }
}

/// A side's figures over the whole test: `sender` (what was sent) or receiver.
fn totals(s: &Summary, sender: bool, client_sent: bool, udp: bool, id: Option<u8>) -> Value {
    let bytes = if sender {
        s.sent_bytes
    } else {
        s.received_bytes
    };
    let bps = if sender {
        s.offered_bps
    } else {
        s.received_bps
    };
    let mut o = Map::new();
    if let Some(id) = id {
        o.insert("socket".into(), id.into());
    }
    o.insert("start".into(), 0.into());
    o.insert("end".into(), s.duration_s.into());
    o.insert("seconds".into(), s.duration_s.into());
    if let Some(b) = bytes {
        o.insert("bytes".into(), b.into());
    }
    if let Some(b) = bps {
        o.insert("bits_per_second".into(), b.into());
    }
    if udp {
        // The stream's loss and jitter are what its receiver measured; both sums show them.
        if let Some(j) = s.jitter_us {
            o.insert("jitter_ms".into(), (j / 1e3).into());
        }
        if let (Some(lost), Some(sent)) = (s.lost_packets, s.sent_packets) {
            o.insert("lost_packets".into(), lost.into());
            o.insert("packets".into(), sent.into());
            o.insert("lost_percent".into(), percent(lost, sent).into());
        }
        if let Some(x) = s.reordered_packets {
            o.insert("out_of_order".into(), x.into());
        }
    } else if sender {
        if let Some(rt) = s.retransmits {
            o.insert("retransmits".into(), rt.into());
        }
    }
    o.insert("sender".into(), client_sent.into());
    o.into()
}

/// TCP sender state over the test from the stream's interval rows, as iperf3 computes it:
/// the largest window, the smallest, largest and mean RTT.
fn tcp_extremes(r: &RunResult, id: u8, single: bool, dir: &str) -> Map<String, Value> {
    let states: Vec<_> = r
        .intervals
        .iter()
        .filter(|x| x.direction == dir && (x.stream == Some(id) || (single && x.stream.is_none())))
        .filter_map(|x| x.tcp)
        .collect();
    let mut o = Map::new();
    if states.is_empty() {
        return o;
    }
    let max = |f: fn(&model::results::TcpState) -> u64| states.iter().map(f).max().unwrap_or(0);
    let min_rtt = states.iter().map(|t| t.rtt_us).min().unwrap_or(0);
    let mean_rtt = states.iter().map(|t| t.rtt_us).sum::<u64>() / states.len() as u64;
    o.insert("max_snd_cwnd".into(), max(|t| t.cwnd_bytes).into());
    o.insert("max_snd_wnd".into(), max(|t| t.snd_wnd).into());
    o.insert("max_rtt".into(), max(|t| t.rtt_us).into());
    o.insert("min_rtt".into(), min_rtt.into());
    o.insert("mean_rtt".into(), mean_rtt.into());
    o
}

fn stream_end(r: &RunResult, s: &StreamResult, udp: bool) -> Value {
    let client_sent = client_sends(&s.direction);
    let id = Some(s.id);
    if udp {
        return json!({ "udp": totals(&s.summary, client_sent, client_sent, true, id) });
    }
    let mut sender = totals(&s.summary, true, client_sent, false, id);
    let single = stream_ids(r, &s.direction).len() == 1;
    if let Some(o) = sender.as_object_mut() {
        let sender_flag = o.remove("sender");
        o.extend(tcp_extremes(r, s.id, single, &s.direction));
        if let Some(f) = sender_flag {
            o.insert("sender".into(), f);
        }
    }
    json!({
        "sender": sender,
        "receiver": totals(&s.summary, false, client_sent, false, id),
    })
}

/// `end`: per-stream totals, the sums of both sides, CPU and congestion control.
pub fn end(r: &RunResult) -> Value {
    let udp = udp(r);
    let mut e = Map::new();
    let streams: Vec<Value> = r.streams.iter().map(|s| stream_end(r, s, udp)).collect();
    e.insert("streams".into(), streams.into());
    let main_sent = main_dir(r) == "tx";
    if let Some(s) = &r.summary {
        if udp {
            e.insert("sum".into(), totals(s, false, main_sent, true, None));
        }
        e.insert("sum_sent".into(), totals(s, true, main_sent, udp, None));
        e.insert(
            "sum_received".into(),
            totals(s, false, main_sent, udp, None),
        );
    }
    if let Some(s) = &r.reverse_summary {
        if udp {
            e.insert(
                "sum_bidir_reverse".into(),
                totals(s, false, false, true, None),
            );
        }
        e.insert(
            "sum_sent_bidir_reverse".into(),
            totals(s, true, false, udp, None),
        );
        e.insert(
            "sum_received_bidir_reverse".into(),
            totals(s, false, false, udp, None),
        );
    }
    if let Some(c) = &r.connection {
        if let (Some(h), Some(rm)) = (c.cpu, c.remote_cpu) {
            e.insert(
                "cpu_utilization_percent".into(),
                json!({
                    "host_total": h.total, "host_user": h.user, "host_system": h.system,
                    "remote_total": rm.total, "remote_user": rm.user, "remote_system": rm.system,
                }),
            );
        }
        if !udp {
            // The sender's and the receiver's algorithm: ours sends unless -R.
            let (snd, rcv) = if main_sent {
                (&c.congestion, &c.remote_congestion)
            } else {
                (&c.remote_congestion, &c.congestion)
            };
            if let Some(x) = snd {
                e.insert("sender_tcp_congestion".into(), x.clone().into());
            }
            if let Some(x) = rcv {
                e.insert("receiver_tcp_congestion".into(), x.clone().into());
            }
        }
    }
    e.into()
}
