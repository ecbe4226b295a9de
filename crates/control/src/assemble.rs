//! Turns both sides' stream reports into the results model.
//!
//! Loss is computed here, where both counts meet: lost = packets the sender's kernel
//! accepted − unique packets the receiver counted. Received rates use the sender's duration
//! (as iperf3 does for UDP) so that a short tail of in-flight packets does not inflate them.

use engine::live::LiveSnapshot;
use model::results::{
    GapStats, IntervalLatency, IntervalRow, LatencyKind, LatencyUs, RunResult, StreamResult,
    Summary, TcpState,
};
use model::spec::{Protocol, TestSpec};
use model::stats::histogram::LatencyHistogram;

use crate::messages::report::{TcpRxReport, TcpTxReport, UdpRxReport, UdpTxReport};
use crate::messages::StreamReport;
use crate::outcome::{IntervalSample, TestOutcome};
use crate::streams::{self, Sender};

fn pct_of_core(cpu: std::time::Duration, wall: f64) -> Option<f64> {
    (wall > 0.0).then(|| cpu.as_secs_f64() / wall * 100.0)
}

fn udp_summary(
    spec: &TestSpec,
    one_way: bool,
    tx: &UdpTxReport,
    rx: &UdpRxReport,
) -> (Summary, Option<LatencyHistogram>) {
    let dur = tx.elapsed.as_secs_f64();
    let per_s = |bytes: u64| (dur > 0.0).then(|| bytes as f64 * 8.0 / dur);
    let c = rx.counters.settle(tx.packets);
    let (latency_us, hist) = if one_way {
        (
            rx.latency
                .as_ref()
                .map(|s| LatencyUs::from_summary(LatencyKind::OneWay, s)),
            rx.latency_histogram.clone(),
        )
    } else {
        (
            tx.rtt
                .as_ref()
                .map(|s| LatencyUs::from_summary(LatencyKind::RoundTrip, s)),
            tx.rtt_histogram.clone(),
        )
    };
    let s = Summary {
        duration_s: dur,
        target_bps: spec.rate.bits_per_sec(spec.len),
        offered_bps: per_s(tx.bytes),
        received_bps: per_s(rx.bytes),
        sent_packets: Some(c.sent),
        received_packets: Some(c.received),
        lost_packets: Some(c.lost),
        duplicate_packets: Some(c.duplicates),
        reordered_packets: Some(c.reordered),
        late_packets: Some(c.late),
        loss_ratio: c.loss_ratio(),
        jitter_us: (c.received > 1).then_some(rx.jitter_us),
        latency_us,
        rx_gap_us: rx.gaps.as_ref().map(|g| GapStats {
            nominal_us: tx.target_pps.map(|p| 1e6 / p),
            p50_us: g.p50_us,
            p99_us: g.p99_us,
            count: g.count,
        }),
        pacing_error_us: tx.pacing_error,
        sent_bytes: Some(tx.bytes),
        received_bytes: Some(rx.bytes),
        retransmits: None,
        tcp_rtt_us: None,
        tcp_bytes: None,
        tcp_efficiency_pct: None,
        generator_limited: tx.generator_limited,
        sender_cpu: pct_of_core(tx.cpu_time, dur),
        receiver_cpu: pct_of_core(rx.cpu_time, rx.wall_time.as_secs_f64()),
    };
    (s, hist)
}

fn tcp_summary(spec: &TestSpec, tx: &TcpTxReport, rx: &TcpRxReport) -> Summary {
    let tdur = tx.elapsed.as_secs_f64();
    let rdur = rx.elapsed.as_secs_f64();
    // The receiver read the warm-up (-O) too: the measured part is what came after the
    // bytes the sender sent in it.
    let received = rx.bytes.saturating_sub(tx.omitted_bytes);
    let mut s = Summary {
        duration_s: tdur,
        target_bps: spec.rate.bits_per_sec(spec.len),
        offered_bps: (tdur > 0.0).then(|| tx.bytes as f64 * 8.0 / tdur),
        received_bps: (rdur > 0.0)
            .then(|| rx.bytes.saturating_sub(rx.first_read_bytes) as f64 * 8.0 / rdur),
        sent_bytes: Some(tx.bytes),
        received_bytes: Some(received),
        retransmits: tx.retransmits,
        tcp_rtt_us: tx.rtt_us.map(f64::from),
        generator_limited: tx.generator_limited,
        sender_cpu: pct_of_core(tx.cpu_time, tdur),
        receiver_cpu: pct_of_core(rx.cpu_time, rdur.max(tdur)),
        ..Summary::default()
    };
    s.set_tcp_bytes(tx.tcp_bytes);
    s
}

fn find(o: &TestOutcome, id: u8, want_tx: bool) -> Option<&StreamReport> {
    o.local.iter().chain(&o.remote).find(|r| {
        r.stream_id() == id
            && matches!(r, StreamReport::UdpTx(_) | StreamReport::TcpTx(_)) == want_tx
    })
}

/// One stream's result with its latency histogram, kept typed until the totals are made.
struct Assembled {
    result: StreamResult,
    histogram: Option<LatencyHistogram>,
}

/// Every stream whose reports both sides sent, assembled, and the ids of streams whose
/// reports are missing (a data thread failed).
fn assembled(o: &TestOutcome) -> (Vec<Assembled>, Vec<u8>) {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for (id, who) in streams::plan(&o.spec) {
        let (Some(tx), Some(rx)) = (find(o, id, true), find(o, id, false)) else {
            missing.push(id);
            continue;
        };
        let (summary, histogram) = match (tx, rx) {
            (StreamReport::UdpTx(t), StreamReport::UdpRx(r)) => {
                udp_summary(&o.spec, o.one_way, t, r)
            }
            (StreamReport::TcpTx(t), StreamReport::TcpRx(r)) => (tcp_summary(&o.spec, t, r), None),
            _ => continue,
        };
        out.push(Assembled {
            result: StreamResult {
                id,
                protocol: o.spec.protocol.as_str().to_owned(),
                direction: if who == Sender::Client { "tx" } else { "rx" }.to_owned(),
                summary,
                latency_histogram: histogram.as_ref().map(LatencyHistogram::to_base64),
            },
            histogram,
        });
    }
    (out, missing)
}

/// Per-stream results and totals of one test, and the ids of streams whose reports are
/// missing (a data thread failed): those are left out of the totals, and say so.
pub fn streams_and_summaries(
    o: &TestOutcome,
) -> (Vec<StreamResult>, Option<Summary>, Option<Summary>, Vec<u8>) {
    let (out, missing) = assembled(o);
    let of = |dir: &str| -> Vec<&Assembled> {
        out.iter().filter(|s| s.result.direction == dir).collect()
    };
    let (sum_tx, sum_rx) = (sum(&of("tx")), sum(&of("rx")));
    let streams = out.into_iter().map(|s| s.result).collect();
    (streams, sum_tx, sum_rx, missing)
}

/// The totals of the test's main direction (client to server, or back with `-R`) and its
/// streams' latency histograms merged: what a method running the test as one trial reads.
pub fn main_direction(o: &TestOutcome) -> Option<(Summary, Option<LatencyHistogram>)> {
    let dir = match o.spec.direction {
        model::spec::Direction::Reverse => "rx",
        _ => "tx",
    };
    let (out, _) = assembled(o);
    let mine: Vec<&Assembled> = out.iter().filter(|s| s.result.direction == dir).collect();
    let total = sum(&mine)?;
    let mut merged: Option<LatencyHistogram> = None;
    for h in mine.iter().filter_map(|s| s.histogram.as_ref()) {
        merged.get_or_insert_with(LatencyHistogram::new).merge(h);
    }
    Some((total, merged))
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, None) | (None, x) => x,
    }
}

fn addf(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, None) | (None, x) => x,
    }
}

/// Totals over streams: counts and rates add up, jitter is the mean of the streams'
/// jitter, latency percentiles come from the merged histograms.
fn sum(streams: &[&Assembled]) -> Option<Summary> {
    let first = streams.first()?;
    if streams.len() == 1 {
        return Some(first.result.summary.clone());
    }
    let mut s = Summary {
        duration_s: 0.0,
        generator_limited: false,
        ..Summary::default()
    };
    // Bytes on the wire: the sum when every stream has them, else none (a part would
    // read as the whole).
    s.set_tcp_bytes(
        streams
            .iter()
            .map(|st| st.result.summary.tcp_bytes)
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().reduce(model::results::TcpBytes::plus)),
    );
    let mut merged = LatencyHistogram::new();
    let mut kind = None;
    let mut jitters = Vec::new();
    for st in streams {
        let x = &st.result.summary;
        s.duration_s = s.duration_s.max(x.duration_s);
        s.target_bps = addf(s.target_bps, x.target_bps);
        s.offered_bps = addf(s.offered_bps, x.offered_bps);
        s.received_bps = addf(s.received_bps, x.received_bps);
        s.sent_packets = add(s.sent_packets, x.sent_packets);
        s.received_packets = add(s.received_packets, x.received_packets);
        s.lost_packets = add(s.lost_packets, x.lost_packets);
        s.duplicate_packets = add(s.duplicate_packets, x.duplicate_packets);
        s.reordered_packets = add(s.reordered_packets, x.reordered_packets);
        s.late_packets = add(s.late_packets, x.late_packets);
        s.sent_bytes = add(s.sent_bytes, x.sent_bytes);
        s.received_bytes = add(s.received_bytes, x.received_bytes);
        s.retransmits = add(s.retransmits, x.retransmits);
        s.sender_cpu = addf(s.sender_cpu, x.sender_cpu);
        s.receiver_cpu = addf(s.receiver_cpu, x.receiver_cpu);
        s.generator_limited |= x.generator_limited;
        if let Some(j) = x.jitter_us {
            jitters.push(j);
        }
        if let Some(h) = &st.histogram {
            merged.merge(h);
            kind = x.latency_us.map(|l| l.kind);
        }
    }
    s.loss_ratio = match (s.lost_packets, s.sent_packets) {
        (Some(l), Some(n)) if n > 0 => Some(l as f64 / n as f64),
        _ => None,
    };
    s.jitter_us = (!jitters.is_empty()).then(|| jitters.iter().sum::<f64>() / jitters.len() as f64);
    s.latency_us = kind.and_then(|k| merged.summary().map(|m| LatencyUs::from_summary(k, &m)));
    Some(s)
}

/// Interval rows for sample `cur`, as differences from `prev`: per direction, one row per
/// stream when the direction has several (`stream` set), then their sum (`stream` absent).
/// A side whose samples are absent (`remote` empty: an iperf3 server sends none) leaves the
/// receiver's figures of the streams it receives out.
pub fn interval_rows(
    spec: &TestSpec,
    prev: Option<&IntervalSample>,
    cur: &IntervalSample,
) -> Vec<IntervalRow> {
    let plan = streams::plan(spec);
    let len = cur.length.as_secs_f64();
    let start = cur.start.as_secs_f64();
    let udp = spec.protocol == Protocol::Udp;
    let bps = |b: u64| if len > 0.0 { b as f64 * 8.0 / len } else { 0.0 };
    let remote_known = !cur.remote.is_empty();
    let mut rows = Vec::new();
    for (dir, sender) in [("tx", Sender::Client), ("rx", Sender::Server)] {
        let ids: Vec<u8> = plan
            .iter()
            .filter(|(_, w)| *w == sender)
            .map(|(i, _)| *i)
            .collect();
        if ids.is_empty() {
            continue;
        }
        // The sender's totals live on its side, the receiver's on the other.
        let (snd_now, rcv_now) = if sender == Sender::Client {
            (&cur.local, &cur.remote)
        } else {
            (&cur.remote, &cur.local)
        };
        let (snd_prev, rcv_prev) = match prev {
            Some(p) if sender == Sender::Client => (Some(&p.local), Some(&p.remote)),
            Some(p) => (Some(&p.remote), Some(&p.local)),
            None => (None, None),
        };
        let rcv_known = remote_known || sender == Sender::Server;
        let snd_known = remote_known || sender == Sender::Client;
        let pick = |set: Option<&Vec<(u8, LiveSnapshot)>>, id: u8| -> LiveSnapshot {
            set.and_then(|v| v.iter().find(|(i, _)| *i == id).map(|(_, s)| s.clone()))
                .unwrap_or_default()
        };
        let one = ids.len() == 1;
        let row = |stream: Option<u8>, sent: &LiveSnapshot, recv: &LiveSnapshot, jitter_us: f64| {
            // One-way delays are the receiver's, round trips the sender's echo probes.
            let latency = if !recv.latency.is_empty() {
                Some((LatencyKind::OneWay, &recv.latency))
            } else if !sent.latency.is_empty() {
                Some((LatencyKind::RoundTrip, &sent.latency))
            } else {
                None
            };
            IntervalRow {
                start_s: start,
                end_s: start + len,
                direction: dir.to_owned(),
                stream,
                sent_bytes: snd_known.then_some(sent.bytes),
                received_bytes: rcv_known.then_some(recv.bytes),
                sent_bps: snd_known.then(|| bps(sent.bytes)),
                received_bps: rcv_known.then(|| bps(recv.bytes)),
                sent_packets: (udp && snd_known).then_some(sent.counters.sent),
                received_packets: (udp && rcv_known).then_some(recv.counters.received),
                lost_packets: (udp && rcv_known).then_some(recv.counters.lost),
                loss_attributed: false,
                duplicate_packets: (udp && rcv_known).then_some(recv.counters.duplicates),
                reordered_packets: (udp && rcv_known).then_some(recv.counters.reordered),
                latency: latency.and_then(|(kind, b)| {
                    b.summary().map(|s| IntervalLatency::from_buckets(kind, &s))
                }),
                jitter_us: (udp && rcv_known).then_some(jitter_us),
                retransmits: (!udp && snd_known).then_some(sent.retransmits),
                tcp: (!udp && snd_known && !sent.tcp.is_empty() && (stream.is_some() || one))
                    .then_some(TcpState {
                        cwnd_bytes: sent.tcp.cwnd_bytes,
                        snd_wnd: sent.tcp.snd_wnd,
                        rtt_us: sent.tcp.rtt_us,
                        rttvar_us: sent.tcp.rttvar_us,
                        pmtu: sent.tcp.pmtu,
                    }),
            }
        };
        let mut sent = LiveSnapshot::default();
        let mut recv = LiveSnapshot::default();
        let mut jitter_sum = 0u64;
        for &id in &ids {
            let ds = pick(Some(snd_now), id).since(&pick(snd_prev, id));
            let dr = pick(Some(rcv_now), id).since(&pick(rcv_prev, id));
            if ids.len() > 1 {
                rows.push(row(Some(id), &ds, &dr, dr.jitter_ns as f64 / 1000.0));
            }
            sent.counters = sent.counters.plus(&ds.counters);
            sent.latency = sent.latency.plus(&ds.latency);
            recv.latency = recv.latency.plus(&dr.latency);
            sent.bytes += ds.bytes;
            sent.retransmits += ds.retransmits;
            // A direction's TCP state is one stream's (the row is that stream's only then).
            sent.tcp = ds.tcp;
            recv.counters = recv.counters.plus(&dr.counters);
            recv.bytes += dr.bytes;
            jitter_sum += dr.jitter_ns;
        }
        // The mean over streams, as in the summary.
        rows.push(row(
            None,
            &sent,
            &recv,
            jitter_sum as f64 / 1000.0 / ids.len() as f64,
        ));
    }
    rows
}

/// Replaces the noticed loss of finished UDP interval rows by the packets that were due in
/// each interval and never arrived, from both sides' per-slot counts
/// ([`model::stats::slots`]). A stream whose counts cannot be matched (an iperf3 peer, no
/// intervals) keeps the noticed loss; a sum row is replaced only when all its streams are.
pub fn attribute_loss(rows: &mut [IntervalRow], o: &TestOutcome) {
    use model::stats::intervals::{self, SlotCounts};
    if o.spec.protocol != Protocol::Udp {
        return;
    }
    for (dir, sender) in [("tx", Sender::Client), ("rx", Sender::Server)] {
        let mut counts = std::collections::BTreeMap::new();
        for (id, _) in streams::plan(&o.spec)
            .into_iter()
            .filter(|(_, w)| *w == sender)
        {
            if let (Some(StreamReport::UdpTx(tx)), Some(StreamReport::UdpRx(rx))) =
                (find(o, id, true), find(o, id, false))
            {
                if let Some(origin) = tx.first_tx {
                    let c = SlotCounts {
                        sent: &tx.slots,
                        received: &rx.slots,
                        origin,
                    };
                    counts.insert(id, c);
                }
            }
        }
        // This direction's rows, placed and written back.
        let at: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].direction == dir)
            .collect();
        let mut mine: Vec<IntervalRow> = at.iter().map(|&i| rows[i].clone()).collect();
        if !mine.is_empty() && intervals::attribute_loss(&mut mine, &counts) {
            for (i, r) in at.into_iter().zip(mine) {
                rows[i] = r;
            }
        }
    }
}

/// How long a sender's stream ran, seconds (0 for receivers).
fn sender_elapsed(r: &StreamReport) -> f64 {
    match r {
        StreamReport::UdpTx(t) => t.elapsed.as_secs_f64(),
        StreamReport::TcpTx(t) => t.elapsed.as_secs_f64(),
        _ => 0.0,
    }
}

/// The whole result document of a throughput test.
pub fn throughput_result(o: &TestOutcome, command: &str, params: serde_json::Value) -> RunResult {
    let mut r = engine::env::result(command, params);
    let (streams, sum_tx, sum_rx, missing) = streams_and_summaries(o);
    r.backend = Some(backend_name(o));
    r.timestamp_source = Some(timestamp_source(o));
    r.receive_mode = o.local.iter().chain(&o.remote).find_map(|x| match x {
        StreamReport::UdpRx(rx) => Some(rx.mode.clone()),
        _ => None,
    });
    r.af_xdp_frames = o
        .local
        .iter()
        .chain(&o.remote)
        .filter_map(|x| match x {
            StreamReport::UdpRx(rx) => rx.af_xdp_frames,
            _ => None,
        })
        .reduce(model::results::XdpFrameCheck::plus);
    let mut prev = None;
    for s in &o.intervals {
        r.intervals.extend(interval_rows(&o.spec, prev, s));
        prev = Some(s);
    }
    attribute_loss(&mut r.intervals, o);
    let (main, other) = match o.spec.direction {
        model::spec::Direction::Reverse => (sum_rx, None),
        model::spec::Direction::Forward => (sum_tx, None),
        model::spec::Direction::Bidir => (sum_tx, sum_rx),
    };
    r.summary = main;
    r.reverse_summary = other;
    r.connection = (!o.connection.local.is_empty()).then(|| o.connection.clone());
    if o.interrupted {
        r.interrupted = true;
        r.notes.push(format!(
            "interrupted: the test was stopped after {:.2} s of its {} s; the figures cover the time it ran",
            o.local.iter().chain(&o.remote).map(sender_elapsed).fold(0.0, f64::max),
            o.spec.duration.as_secs_f64()
        ));
    }
    for s in &streams {
        if s.summary.generator_limited {
            r.notes.push(format!(
                "stream {} ({}): the sender fell behind its schedule by more than 1 %; its figures show the tool's limit, not the network's",
                s.id, s.direction
            ));
        }
    }
    if o.spec.protocol == Protocol::Udp && !o.one_way {
        r.notes.push(if o.same_host {
            "latency is round-trip, from echoed probes (--round-trip)".into()
        } else {
            "client and server clocks are not shared: latency is round-trip, from echoed probes (pass --synced-clocks if the hosts run PTP)".into()
        });
    }
    if !missing.is_empty() {
        r.notes.push(format!(
            "no report for stream(s) {missing:?} (a data thread failed): the totals leave them out"
        ));
    }
    for x in o.local.iter().chain(&o.remote) {
        if let StreamReport::UdpRx(rx) = x {
            if o.one_way && rx.clock_skew_samples > 0 {
                r.notes.push(format!(
                    "stream {}: {} packets arrived before they were sent by the receiver's clock; the clocks are not synchronised well enough and those samples are left out of the one-way latency",
                    rx.stream_id, rx.clock_skew_samples
                ));
            }
            if rx.mode == "af_xdp" {
                r.notes.push(format!(
                    "stream {}: the receiver counted the datagrams through AF_XDP (an XDP program took them before the kernel's UDP stack, stamping each on arrival): the kernel's UDP counters (netstat -su) do not see them",
                    rx.stream_id
                ));
            } else if let Some(why) = rx.mode.split("(af_xdp not used: ").nth(1) {
                r.notes.push(format!(
                    "stream {}: the receiver used its socket, not AF_XDP: {}",
                    rx.stream_id,
                    why.trim_end_matches(')')
                ));
            }
            if rx.foreign > 0 {
                r.notes.push(format!(
                    "stream {}: {} datagrams of other tests or not wirebench were ignored",
                    rx.stream_id, rx.foreign
                ));
            }
        }
    }
    r.streams = streams;
    r
}

/// The send path that produced the figures (`udp-sendmmsg`, `udp-gso`, `tcp`).
pub fn backend_name(o: &TestOutcome) -> String {
    o.local
        .iter()
        .chain(&o.remote)
        .find_map(|r| match r {
            StreamReport::UdpTx(t) => Some(t.backend.clone()),
            StreamReport::TcpTx(t) if t.sendfile => Some("tcp-sendfile".to_owned()),
            StreamReport::TcpTx(_) => Some("tcp".to_owned()),
            _ => None,
        })
        .unwrap_or_else(|| o.spec.protocol.as_str().to_owned())
}

/// Where the latency figures' timestamps came from: the receivers' (one-way) or the
/// senders' echo readers (round-trip).
pub fn timestamp_source(o: &TestOutcome) -> String {
    if o.spec.protocol == Protocol::Tcp {
        return "none".into();
    }
    let kernel = o.local.iter().chain(&o.remote).any(|r| match r {
        StreamReport::UdpRx(x) => o.one_way && x.kernel_timestamps,
        StreamReport::UdpTx(x) => !o.one_way && x.kernel_timestamps,
        _ => false,
    });
    if kernel { "kernel-software" } else { "user" }.into()
}
