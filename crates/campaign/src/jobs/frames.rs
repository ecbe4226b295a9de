//! Frames of one size at a rate (`gen`), and capturing test frames on the paths of a
//! redundant network (`frer analyze`).

use std::collections::BTreeMap;
use std::time::Duration;

use engine::frameio::{Endpoint, FrameRx, FrameTx};
use engine::raw::{RawLoad, RawTrialSpec};
use model::results::frames::{FrerAnalysis, GenReceived, GenTable};
use model::results::RunResult;
use model::stop::Stop;
use wire::linerate::LineRate;

use crate::frames::{self, test_id, Port};
use crate::request::{AnalyzeRequest, FrameBackend, GenRequest};
use crate::trials::RawTrial;
use crate::{usage, Error, Watch};

/// Sends `req.size`-byte frames at its rate for its time or count; with a receiving port,
/// counts them back (loss, duplicates, reordering, latency from kernel stamps).
///
/// # Errors
/// No root, a port that cannot be used, a frame size too small for the headers.
pub fn gen(req: &GenRequest, stop: &Stop) -> Result<RunResult, Error> {
    let lab = &req.frame.lab;
    let tx_port = frames::any_port(&req.port, lab)?;
    let rx_port = req
        .rx
        .as_deref()
        .map(|r| frames::any_port(r, lab))
        .transpose()?;
    let local = |p: &Port| match p {
        Port::Local(ep) => Some(ep.clone()),
        Port::Agent { .. } => None,
    };
    let (Some(tx_ep), Some(rx_ep)) = (
        local(&tx_port),
        rx_port.as_ref().map_or(Some(None), |p| local(p).map(Some)),
    ) else {
        if [Some(&tx_port), rx_port.as_ref()]
            .into_iter()
            .flatten()
            .any(|p| matches!(p, Port::Local(_)))
        {
            frames::need_root()?;
        }
        return send_through_agents(req, stop, &tx_port, rx_port.as_ref());
    };
    frames::need_root()?;
    let sides = std::iter::once((req.port.clone(), tx_ep.clone()))
        .chain(req.rx.clone().zip(rx_ep.clone()))
        .collect();
    super::record::recorded(sides, || send(req, stop, &tx_ep, rx_ep.as_ref()))
}

/// `gen` with a port of a wirebench server (`HOST/IFACE`): one generator thread, counted
/// at the receiving port, totals only.
fn send_through_agents(
    req: &GenRequest,
    stop: &Stop,
    tx: &Port,
    rx: Option<&Port>,
) -> Result<RunResult, Error> {
    if req.threads > 1 {
        return Err(usage(
            "--threads with a server's port (HOST/IFACE): one generator thread there",
        ));
    }
    let Some(rx) = rx else {
        return Err(usage(
            "gen at a server's port (HOST/IFACE) counts what arrives: give --rx (a port here, of a lab, or HOST/IFACE)",
        ));
    };
    let (mut trial, frame) = RawTrial::open_ports(
        &req.frame,
        (tx, rx),
        &req.agents,
        false,
        req.size,
        stop.clone(),
    )?;
    frames::check_sizes(&frame, &[req.size])?;
    let line = LineRate(req.frame.line_rate as u64);
    let pps = req.rate.fps(req.size, line);
    let load = RawLoad::Rate {
        pps,
        duration: req.time,
        count: req.count,
    };
    let mut r = trial.run_load(req.size as usize, load, Duration::from_millis(200))?;
    let no_latency = trial.latency_absent().map(str::to_owned);
    if no_latency.is_some() {
        r.latency.clear();
    }
    let backend = trial.backend();
    let tx_backend = backend.split(" / ").next().unwrap_or_default();
    let params = serde_json::json!({
        "interface": req.port, "rx": req.rx, "frame_len": req.size, "target_pps": pps,
        "line_rate_bps": line.0, "count": req.count, "duration_s": req.time.as_secs_f64(),
        "port": req.port, "rx_port": req.rx, "tx_backend": tx_backend, "threads": 1,
    });
    let mut doc = gen_doc(req, params, &r, pps, line, backend.clone(), true);
    if let Some(why) = no_latency {
        doc.notes.push(why);
    }
    if req.interval.is_some() {
        doc.notes.push(
            "no interval rows with a server's port: the totals of the run (the port reports once, at the end)".into(),
        );
    }
    Ok(doc)
}

/// `gen` on its ports.
fn send(
    req: &GenRequest,
    stop: &Stop,
    tx_ep: &Endpoint,
    rx_ep: Option<&Endpoint>,
) -> Result<RunResult, Error> {
    let vlan = req.frame.vlan.is_some();
    for ep in std::iter::once(tx_ep).chain(rx_ep) {
        frames::fits_mtu(ep, req.size, vlan)?;
    }
    let frame = frames::spec(&req.frame, tx_ep, rx_ep)?;
    frames::check_sizes(&frame, &[req.size])?;
    let line = LineRate(req.frame.line_rate as u64);
    let pps = req.rate.fps(req.size, line);
    let mut txs = frames::open_txs(req.frame.backend, tx_ep, req.size, req.threads)?;
    let tx_name = txs.first().map_or("", |t| t.name());
    let mut rx = rx_ep
        .as_ref()
        .map(|ep| frames::open_rx(req.frame.rx_backend(), ep))
        .transpose()?;
    let spec = RawTrialSpec {
        frame,
        frame_len: req.size as usize,
        test_id: test_id(),
        stream_id: 1,
        load: RawLoad::Rate {
            pps,
            duration: req.time,
            count: req.count,
        },
        drain: Duration::from_millis(200),
        interval: req.interval,
    };
    let rx_ref = rx.as_mut().map(|b| b.as_mut() as &mut dyn FrameRx);
    let mut tx_refs: Vec<&mut dyn FrameTx> = txs
        .iter_mut()
        .map(|t| -> &mut dyn FrameTx { t.as_mut() })
        .collect();
    let r = engine::raw::run_trial_threads(&mut tx_refs, rx_ref, &spec, stop)?;
    let params = serde_json::json!({
        "interface": req.port, "rx": req.rx, "frame_len": req.size, "target_pps": pps,
        "line_rate_bps": line.0, "count": req.count, "duration_s": req.time.as_secs_f64(),
        "port": tx_ep.to_string(), "rx_port": rx_ep.as_ref().map(ToString::to_string),
        "tx_backend": tx_name, "threads": req.threads,
    });
    let backend = match &rx {
        Some(rx) => format!("{tx_name} / {}", rx.name()),
        None => tx_name.to_owned(),
    };
    Ok(gen_doc(req, params, &r, pps, line, backend, rx.is_some()))
}

/// The `gen` document of a run: its totals, what came back (`received`), the interval
/// rows when there are, and a note when the generator fell behind.
fn gen_doc(
    req: &GenRequest,
    params: serde_json::Value,
    r: &engine::raw::RawTrialReport,
    pps: f64,
    line: LineRate,
    backend: String,
    received: bool,
) -> RunResult {
    let rates = LineRate::rates_at(req.size, r.offered_pps);
    let mut doc = engine::env::result("gen", params);
    doc.backend = Some(backend);
    let c = r.counters;
    doc.gen = Some(GenTable {
        sent: c.sent,
        elapsed_s: r.elapsed.as_secs_f64(),
        target_pps: pps,
        achieved_pps: r.offered_pps,
        l2_bps: rates.l2_bps,
        l1_bps: rates.l1_bps,
        percent_of_line_rate: line.percent_of(req.size, r.offered_pps),
        generator_limited: r.generator_limited,
        behind_ratio: r.behind_ratio,
        pacing_error_us: r.pacing_error,
        send_errors: r.send_errors,
        tx_cpu_s: r.tx_cpu.as_secs_f64(),
        rx: received.then(|| GenReceived {
            received: c.received,
            lost: c.sent.saturating_sub(c.received),
            duplicates: c.duplicates,
            reordered: c.reordered,
            rx_kernel_drops: r.rx_drops,
            unstamped: r.unstamped,
            latency_us: r.latency.summary(),
        }),
    });
    if !r.ticks.is_empty() {
        use model::stats::intervals::{attribute_loss, rows, SlotCounts};
        let mut out = rows(&r.ticks, model::results::LatencyKind::OneWay);
        if !r.slots.is_empty() {
            let per_stream = r
                .slots
                .iter()
                .map(|(id, sent, received)| {
                    let c = SlotCounts {
                        sent,
                        received,
                        origin: r.t0_wall,
                    };
                    (*id, c)
                })
                .collect();
            attribute_loss(&mut out, &per_stream);
        }
        doc.intervals = out;
    }
    if r.generator_limited {
        doc.notes.push(format!(
            "generator limited: asked {pps:.0} frames/s, offered {:.0} ({:.1} % behind its schedule); the figures measure the tool, not the network",
            r.offered_pps,
            r.behind_ratio * 100.0
        ));
    }
    doc
}

/// Arrivals kept per path: 24 bytes each, so at most about 1 GB for eight paths.
const CAPTURE_LIMIT: usize = 5_000_000;

/// Captures test frames on every path for `req.time` (or until `stop`) and analyses each
/// stream: merged (what an eliminator passes) and per path. Once every path listens, it
/// says so to `watch` (`capturing ...`).
///
/// # Errors
/// More than 8 paths, a time out of range, no root, a port that cannot be opened.
pub fn analyze(
    req: &AnalyzeRequest,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    if !(req.time.is_finite() && req.time > 0.0 && req.time <= 3600.0) {
        return Err(usage(format!("-t {}: give 0 < seconds <= 3600", req.time)));
    }
    if req.ports.len() > 8 {
        return Err(usage("at most 8 paths (--rx)"));
    }
    frames::need_root()?;
    // A copying receiver: the analyzed ports usually belong to a relay or a host that
    // needs the frames too, and an AF_XDP receiver would take them away.
    let mut rxs = Vec::new();
    for p in &req.ports {
        let ep = frames::port(p, &req.lab)?;
        rxs.push(match req.backend {
            FrameBackend::Packet => frames::open_rx(FrameBackend::Packet, &ep)?,
            FrameBackend::Ring | FrameBackend::Xdp => frames::open_rx(FrameBackend::Ring, &ep)?,
            FrameBackend::Auto => frames::open_rx(FrameBackend::Ring, &ep)
                .or_else(|_| frames::open_rx(FrameBackend::Packet, &ep))?,
        });
    }
    watch.progress(&format!(
        "capturing test frames on {} for {} s",
        req.ports.join(", "),
        req.time
    ));
    let caps = engine::multi::capture(
        rxs.iter_mut()
            .map(|r| &mut **r as &mut dyn FrameRx)
            .collect(),
        Duration::from_secs_f64(req.time),
        CAPTURE_LIMIT,
        stop,
    )?;
    let mut notes = Vec::new();
    // A path that hit the limit stopped at its own point: per stream, every path is cut at
    // the lowest number a truncated path still kept, so no path looks as if it missed
    // what was only not kept.
    let mut cut: BTreeMap<(u16, u8), u64> = BTreeMap::new();
    for c in caps.iter().filter(|c| c.truncated) {
        let mut last: BTreeMap<(u16, u8), u64> = BTreeMap::new();
        for x in &c.arrivals {
            let e = last.entry((x.test_id, x.stream_id)).or_insert(x.seq);
            *e = (*e).max(x.seq);
        }
        for (k, v) in last {
            let e = cut.entry(k).or_insert(v);
            *e = (*e).min(v);
        }
    }
    for (label, c) in req.ports.iter().zip(&caps) {
        if c.truncated {
            notes.push(format!(
                "{label}: stopped keeping frames after {CAPTURE_LIMIT}: every path is analysed up to the last number all of them kept"
            ));
        }
        if c.kernel_drops > 0 {
            notes.push(format!(
                "{label}: the kernel dropped {} frames before the capture read them: the counts of this path are low",
                c.kernel_drops
            ));
        }
    }
    let mut arrivals = Vec::new();
    for c in &caps {
        arrivals.extend(c.arrivals.iter().filter(|x| {
            cut.get(&(x.test_id, x.stream_id))
                .is_none_or(|&limit| x.seq <= limit)
        }));
    }
    let streams = model::stats::paths::analyze(&mut arrivals, &req.ports);
    let params = serde_json::json!({ "paths": req.ports, "lab": req.lab, "duration_s": req.time });
    let mut doc = engine::env::result("frer analyze", params);
    doc.backend = rxs.first().map(|r| r.name().to_owned());
    doc.timestamp_source = Some("kernel-software".into());
    doc.notes = notes;
    doc.frer_analysis = Some(FrerAnalysis {
        paths: req.ports.clone(),
        streams,
        foreign: caps.iter().map(|c| c.foreign).collect(),
        kernel_drops: caps.iter().map(|c| c.kernel_drops).collect(),
    });
    Ok(doc)
}

#[cfg(test)]
#[path = "frames_tests.rs"]
mod test;
