//! `wirebench streams` (a multi-stream profile, all streams at once) and `wirebench
//! shaping` (the shaper accuracy matrix), on the raw-frame engine.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use wire::linerate::LineRate;

use crate::cli::{FrameArgs, FrameProto};
use crate::rawcmd::{
    endpoint, frame_spec, iface_facts, need_root, open_rx, open_tx, test_id, usage,
};
use crate::rfc2544cmd::UDP_FRAME_OVERHEAD;

/// `wirebench streams PROFILE.toml`.
pub fn streams(a: &crate::cli::StreamsArgs) -> Result<()> {
    use engine::multi::{Patch, StreamTx};
    use method::streams::{Measured, Profile, StreamProto};
    use model::stats::table::StreamTable;
    let text = std::fs::read_to_string(&a.profile)
        .map_err(|e| usage(format!("cannot read {}: {e}", a.profile.display())))?;
    let profile =
        Profile::parse(&text).map_err(|e| usage(format!("{}: {e}", a.profile.display())))?;
    if profile
        .streams
        .iter()
        .any(|s| server_of(&s.source).is_none())
    {
        need_root()?;
    }
    let lab = a
        .lab
        .clone()
        .or(profile.lab.clone())
        .unwrap_or_else(|| "lab".into());
    let id = test_id();
    // Senders by source, receivers by destination, in first-use order.
    let mut sources: Vec<String> = Vec::new();
    let mut dests: Vec<String> = Vec::new();
    for s in &profile.streams {
        if let Some(server) = server_of(&s.source) {
            check_server_stream(s, server)?;
            continue;
        }
        if !sources.contains(&s.source) {
            sources.push(s.source.clone());
        }
        if !dests.contains(&s.destination) {
            dests.push(s.destination.clone());
        }
    }
    let mut groups: Vec<Vec<StreamTx>> = sources.iter().map(|_| Vec::new()).collect();
    for (i, s) in profile.streams.iter().enumerate() {
        if server_of(&s.source).is_some() {
            continue;
        }
        let stream_id = (i + 1) as u8;
        let tx_ep = endpoint(&s.source, &lab)?;
        let rx_ep = endpoint(&s.destination, &lab)?;
        let hdr = wire::testhdr::TestHeaderRepr::template(id, stream_id);
        let mut sizes = s.pattern.clone();
        sizes.sort_unstable();
        sizes.dedup();
        let mut built: Vec<(u64, Vec<u8>, Patch)> = Vec::new();
        let in_stream = |e: String| usage(format!("stream '{}': {e}", s.name));
        match s.protocol {
            StreamProto::EtherType(t) => {
                let src = iface_facts(&tx_ep)?;
                let dst = match s.dst_mac {
                    Some(m) => m,
                    None => iface_facts(&rx_ep)?.mac,
                };
                let eth = wire::ethernet::EthernetRepr {
                    src_addr: wire::EthernetAddress(src.mac),
                    dst_addr: wire::EthernetAddress(dst),
                    ethertype: wire::EtherType::from(t),
                };
                let vlan = s.vlan.map(|vid| wire::vlan::VlanRepr {
                    pcp: s.pcp,
                    dei: false,
                    vid,
                    inner_ethertype: wire::EtherType::from(t),
                });
                let off = 14 + if vlan.is_some() { 4 } else { 0 };
                for &len in &sizes {
                    let mut buf = vec![0u8; len as usize];
                    let n =
                        wire::frame::build_l2(&eth, vlan.as_ref(), len as usize, &hdr, &mut buf)
                            .map_err(|e| in_stream(format!("{len}-byte frame: {e}")))?;
                    buf.truncate(n);
                    built.push((len, buf, Patch::L2(off)));
                }
            }
            proto => {
                let fa = FrameArgs {
                    proto: match proto {
                        StreamProto::Tcp => FrameProto::Tcp,
                        StreamProto::Icmp => FrameProto::Icmp,
                        _ => FrameProto::Udp,
                    },
                    dst_mac: s.dst_mac,
                    src_mac: None,
                    dst_ip: s.dst_ip,
                    src_ip: None,
                    src_port: s.src_port,
                    dst_port: s.dst_port,
                    vlan: s.vlan,
                    pcp: s.pcp,
                    dscp: s.dscp,
                    lab: lab.clone(),
                    line_rate: profile.line_rate.0 as f64,
                    backend: a.backend,
                };
                let spec =
                    frame_spec(&fa, &tx_ep, Some(&rx_ep)).map_err(|e| in_stream(e.to_string()))?;
                for &len in &sizes {
                    let mut buf = vec![0u8; len as usize];
                    let n = spec.build(len as usize, &hdr, &mut buf).map_err(|e| {
                        in_stream(format!(
                            "{len}-byte frame: {e} (at least {} bytes)",
                            spec.min_frame_len()
                        ))
                    })?;
                    buf.truncate(n);
                    let layout = spec
                        .layout(len as usize)
                        .map_err(|e| in_stream(e.to_string()))?;
                    built.push((len, buf, Patch::L4(layout)));
                }
            }
        }
        let pattern = s
            .pattern
            .iter()
            .map(|l| built.iter().position(|b| b.0 == *l).unwrap_or(0))
            .collect();
        let g = sources.iter().position(|x| *x == s.source).unwrap_or(0);
        groups[g].push(StreamTx {
            stream_id,
            templates: built.into_iter().map(|(_, b, p)| (b, p)).collect(),
            pattern,
            pps: s.fps(profile.line_rate),
            start: Duration::from_secs_f64(s.start),
            stop: Duration::from_secs_f64(s.stop),
        });
    }
    let fa_backend = FrameArgs {
        proto: FrameProto::Udp,
        dst_mac: None,
        src_mac: None,
        dst_ip: None,
        src_ip: None,
        src_port: 0,
        dst_port: 0,
        vlan: None,
        pcp: 0,
        dscp: 0,
        lab: lab.clone(),
        line_rate: profile.line_rate.0 as f64,
        backend: a.backend,
    };
    let max_len = profile
        .streams
        .iter()
        .flat_map(|s| s.pattern.iter().copied())
        .max()
        .unwrap_or(64);
    let mut senders = Vec::new();
    let mut backends = Vec::new();
    for (src, streams) in sources.iter().zip(groups) {
        let tx = open_tx(&fa_backend, &endpoint(src, &lab)?, max_len)?;
        backends.push(format!("{src}: {}", tx.name()));
        senders.push((tx, streams));
    }
    let mut receivers = Vec::new();
    for d in &dests {
        let ids = profile
            .streams
            .iter()
            .enumerate()
            .filter(|(_, s)| s.destination == *d)
            .map(|(i, _)| (i + 1) as u8);
        let rx = open_rx(&fa_backend, &endpoint(d, &lab)?)?;
        backends.push(format!("{d}: {}", rx.name()));
        receivers.push((rx, StreamTable::new(id, ids)));
    }
    if !a.json {
        eprintln!(
            "running {} stream(s) for {:.1} s ...",
            profile.streams.len(),
            profile.duration
        );
    }
    // Streams through a wirebench server run as UDP tests of the control protocol, at the
    // same time as the raw streams.
    let server_runs: Vec<_> = profile
        .streams
        .iter()
        .enumerate()
        .filter_map(|(i, s)| server_of(&s.source).map(|srv| (i, s.clone(), srv.to_owned())))
        .map(|(i, s, srv)| {
            let line = profile.line_rate;
            (i, std::thread::spawn(move || server_stream(&s, &srv, line)))
        })
        .collect();
    let stop = AtomicBool::new(false);
    let r = engine::multi::run(
        senders
            .iter_mut()
            .map(|(tx, streams)| {
                (
                    tx.as_mut() as &mut dyn engine::frameio::FrameTx,
                    std::mem::take(streams),
                )
            })
            .collect(),
        receivers
            .iter_mut()
            .map(|(rx, table)| {
                (
                    rx.as_mut() as &mut dyn engine::frameio::FrameRx,
                    table.clone(),
                )
            })
            .collect(),
        Duration::from_millis(300),
        &stop,
    )?;
    let mut by_server = std::collections::BTreeMap::new();
    for (i, h) in server_runs {
        let m = h
            .join()
            .map_err(|_| anyhow::anyhow!("a server stream's thread panicked"))??;
        by_server.insert(i, m);
    }
    if !by_server.is_empty() {
        backends.push("wirebench servers: udp".into());
    }
    let mut measured = Vec::new();
    let mut rx_drops = 0;
    for (i, s) in profile.streams.iter().enumerate() {
        if let Some(m) = by_server.remove(&i) {
            measured.push(m);
            continue;
        }
        let stream_id = (i + 1) as u8;
        let g = sources.iter().position(|x| *x == s.source).unwrap_or(0);
        let sent = r.sent[g]
            .iter()
            .find(|x| x.stream_id == stream_id)
            .cloned()
            .unwrap_or_default();
        let d = dests.iter().position(|x| *x == s.destination).unwrap_or(0);
        let (table, drops) = &r.received[d];
        rx_drops += drops;
        let rx = table.stream(stream_id);
        let c = rx.map(|x| x.counters()).unwrap_or_default();
        measured.push(Measured {
            sent: sent.sent,
            received: c.received,
            received_bytes: rx.map_or(0, |x| x.bytes),
            duplicates: c.duplicates,
            reordered: c.reordered,
            active_s: sent.active.as_secs_f64(),
            rx_span_s: rx
                .and_then(|x| x.span)
                .map(|(a, b)| b.0.saturating_sub(a.0) as f64 / 1e9),
            generator_limited: sent.generator_limited,
            latency: rx.and_then(|x| x.latency.summary()),
        });
    }
    let rep = method::streams::report(&profile, &measured);
    let mut doc = engine::env::result(
        "streams",
        serde_json::json!({ "profile": a.profile.display().to_string(), "lab": lab,
            "duration_s": profile.duration, "line_rate_bps": profile.line_rate.0 }),
    );
    doc.backend = Some(backends.join(", "));
    doc.timestamp_source = Some("kernel-software".into());
    for row in &rep.rows {
        if let (Some(e), Some(p), Some(t)) = (row.expected_l2_bps, row.passed, row.tolerance) {
            doc.verdicts.push(model::results::Verdict {
                name: format!("stream {} received rate", row.name),
                passed: p,
                detail: format!(
                    "{} of L2 frames, expected {} ± {:.1} %",
                    model::units::bps(row.received_l2_bps),
                    model::units::bps(e),
                    t * 100.0
                ),
            });
        }
        if row.generator_limited {
            doc.notes.push(format!(
                "stream {}: the generator fell behind its schedule; its figures measure the tool",
                row.name
            ));
        }
    }
    if rx_drops > 0 {
        doc.notes.push(format!(
            "{rx_drops} frames were dropped by a receiving socket before they were counted: losses include the tool's"
        ));
    }
    doc.profile = Some(rep);
    if a.json {
        print!("{}", report::json::to_string(&doc));
    } else {
        print!("{}", report::text::profile(&doc));
    }
    if doc.verdicts.iter().any(|v| !v.passed) {
        return Err(
            crate::commands::VerdictFailed("a stream missed its expected rate".into()).into(),
        );
    }
    Ok(())
}

/// Sets `bandwidth` on the device: the --dut-cmd template through `sh -c`, or the lab
/// shaper's first class.
fn set_bandwidth(a: &crate::cli::ShapingArgs, bandwidth: f64) -> Result<()> {
    let bits = bandwidth.round() as u64;
    let (program, args): (String, Vec<String>) = match &a.dut_cmd {
        Some(t) => {
            let cmd = t
                .replace("{bandwidth}", &bits.to_string())
                .replace("{bandwidth_k}", &format!("{}", bandwidth / 1e3))
                .replace("{bandwidth_m}", &format!("{}", bandwidth / 1e6));
            ("sh".into(), vec!["-c".into(), cmd])
        }
        None => {
            let ns = lab::naming::namespace(&a.frame.lab, "dut");
            (
                "tc".into(),
                [
                    "-n", &ns, "class", "change", "dev", "eth1", "parent", "1:", "classid", "1:10",
                    "htb", "rate",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("{bits}bit"), "ceil".into(), format!("{bits}bit")])
                .chain(["quantum".into(), "1514".into()])
                .collect(),
            )
        }
    };
    let out = std::process::Command::new(&program)
        .args(&args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        return Err(usage(format!(
            "setting the bandwidth to {} failed: `{} {}` exited with {}: {}",
            model::units::bps(bandwidth),
            program,
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// `wirebench shaping`.
pub fn shaping(a: &crate::cli::ShapingArgs) -> Result<()> {
    use engine::multi::{Patch, StreamTx};
    use model::results::shaping::{Cell, ShapingReport};
    use model::stats::table::StreamTable;
    need_root()?;
    let tx_ep = endpoint(&a.tx, &a.frame.lab)?;
    let rx_ep = endpoint(&a.rx, &a.frame.lab)?;
    if a.dut_cmd.is_none()
        && !std::path::Path::new(&format!(
            "/run/netns/{}",
            lab::naming::namespace(&a.frame.lab, "dut")
        ))
        .exists()
    {
        return Err(usage(format!(
            "lab '{}' has no dut to shape: build a shaper lab (`wirebench lab up shaper --shape ...`) or give --dut-cmd",
            a.frame.lab
        )));
    }
    let spec = frame_spec(&a.frame, &tx_ep, Some(&rx_ep))?;
    if let Some(s) = a
        .sizes
        .iter()
        .find(|s| (**s as usize) < spec.min_frame_len())
    {
        return Err(usage(format!(
            "frame size {s} is too small for these headers: at least {}",
            spec.min_frame_len()
        )));
    }
    let line = LineRate(a.frame.line_rate as u64);
    let max_len = a.sizes.iter().copied().max().unwrap_or(64);
    let mut tx = open_tx(&a.frame, &tx_ep, max_len)?;
    let mut rx = open_rx(&a.frame, &rx_ep)?;
    let id = test_id();
    let mut rep = ShapingReport {
        sizes: a.sizes.clone(),
        bandwidths_bps: a.bandwidths.clone(),
        configured_by: a
            .dut_cmd
            .clone()
            .unwrap_or_else(|| format!("lab {} shaper class 1:10 (tc class change)", a.frame.lab)),
        cells: vec![],
    };
    let backend = format!("{} / {}", tx.name(), rx.name());
    let mut stream_id: u8 = 0;
    for &bw in &a.bandwidths {
        set_bandwidth(a, bw)?;
        for &len in &a.sizes {
            stream_id = stream_id.wrapping_add(1).max(1);
            let hdr = wire::testhdr::TestHeaderRepr::template(id, stream_id);
            let mut buf = vec![0u8; len as usize];
            let n = spec.build(len as usize, &hdr, &mut buf)?;
            buf.truncate(n);
            let layout = spec.layout(len as usize)?;
            let fps = line.max_fps(len);
            let stream = StreamTx {
                stream_id,
                templates: vec![(buf, Patch::L4(layout))],
                pattern: vec![0],
                pps: fps,
                start: Duration::ZERO,
                stop: a.duration,
            };
            let stop = AtomicBool::new(false);
            let mut res = engine::multi::run(
                vec![(tx.as_mut(), vec![stream])],
                vec![(rx.as_mut(), StreamTable::new(id, [stream_id]))],
                Duration::from_millis(300),
                &stop,
            )?;
            let (sent, (table, _)) = (res.sent.remove(0).remove(0), res.received.remove(0));
            let s = table.stream(stream_id);
            let received = s.map_or(0, |x| x.counters().received);
            let m = method::streams::Measured {
                sent: sent.sent,
                received,
                received_bytes: s.map_or(0, |x| x.bytes),
                active_s: sent.active.as_secs_f64(),
                rx_span_s: s
                    .and_then(|x| x.span)
                    .map(|(p, q)| q.0.saturating_sub(p.0) as f64 / 1e9),
                ..Default::default()
            };
            let rx_bps = method::streams::received_l2_bps(&m);
            let offered_fps = sent.sent as f64 / sent.active.as_secs_f64().max(1e-9);
            let cell = Cell {
                frame_len: len,
                bandwidth_bps: bw,
                offered_fps,
                sent: sent.sent,
                received,
                received_l2_bps: rx_bps,
                passed_ratio: rx_bps / bw,
                generator_limited: offered_fps * 8.0 * len as f64 <= bw * 1.05,
            };
            if !a.json {
                eprintln!(
                    "  {} at {} bytes: {:.2} % passed",
                    model::units::bps(bw),
                    len,
                    cell.passed_ratio * 100.0
                );
            }
            rep.cells.push(cell);
        }
    }
    let mut doc = engine::env::result(
        "shaping",
        serde_json::json!({ "tx": a.tx, "rx": a.rx, "sizes": a.sizes, "bandwidths_bps": a.bandwidths,
            "duration_s": a.duration.as_secs_f64(), "line_rate_bps": line.0, "dut_cmd": a.dut_cmd }),
    );
    doc.backend = Some(backend);
    if rep.cells.iter().any(|c| c.generator_limited) {
        doc.notes.push("some cells could not be offered above their bandwidth (generator limited): they measure the tool, not the shaper".into());
    }
    doc.notes.push("passed rate = received L2 bit/s (frames with FCS, over the receive span) / configured bandwidth; a shaper that counts frames without FCS passes 4 bytes per frame more".into());
    doc.shaping = Some(rep);
    if a.json {
        print!("{}", report::json::to_string(&doc));
    } else {
        print!("{}", report::text::shaping(&doc));
    }
    Ok(())
}

/// The server of a stream whose source is `wirebench://HOST[:PORT]`.
fn server_of(source: &str) -> Option<&str> {
    source.strip_prefix("wirebench://")
}

/// A stream through a wirebench server carries UDP datagrams of one size.
fn check_server_stream(s: &method::streams::StreamSpec, server: &str) -> Result<()> {
    use method::streams::StreamProto;
    if server.is_empty() {
        return Err(usage(format!(
            "stream '{}': wirebench://HOST[:PORT] needs a host",
            s.name
        )));
    }
    if s.protocol != StreamProto::Udp {
        return Err(usage(format!(
            "stream '{}': a stream through a wirebench server is UDP",
            s.name
        )));
    }
    if s.pattern.iter().any(|l| *l != s.pattern[0]) {
        return Err(usage(format!(
            "stream '{}': a stream through a wirebench server has one frame size",
            s.name
        )));
    }
    Ok(())
}

/// Runs a server stream: after its start offset, a UDP test of datagrams of L − 46 bytes
/// at the stream's frame rate until its stop offset.
fn server_stream(
    s: &method::streams::StreamSpec,
    server: &str,
    line: LineRate,
) -> Result<method::streams::Measured> {
    use model::spec::{Protocol, Rate, TestSpec};
    let (host, port) = match server.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h.to_owned(), p.parse().unwrap_or(0)),
        _ => (server.to_owned(), control::DEFAULT_PORT),
    };
    let cfg = crate::commands::client_config(&crate::cli::Target {
        host,
        port,
        auth_key_file: None,
        json: true,
    })?;
    let len = s.pattern[0];
    let payload = (len - UDP_FRAME_OVERHEAD) as usize;
    std::thread::sleep(Duration::from_secs_f64(s.start));
    let duration = Duration::from_secs_f64(s.stop - s.start);
    let spec = TestSpec {
        rate: Rate::PacketsPerSec(s.fps(line)),
        duration,
        len: payload,
        dscp: (s.dscp > 0).then_some(s.dscp),
        ..crate::commands::base_spec(Protocol::Udp)
    };
    let outcome = crate::commands::run_one(&cfg, &spec, None, true)
        .with_context(|| format!("stream '{}'", s.name))?;
    let r = control::assemble::throughput_result(&outcome, "stream", serde_json::Value::Null);
    let sum = r.summary.context("the server stream produced no result")?;
    let sent = sum.sent_packets.unwrap_or(0);
    let received = sent.saturating_sub(sum.lost_packets.unwrap_or(sent));
    Ok(method::streams::Measured {
        sent,
        received,
        // As frames on an Ethernet: L − 4 bytes each (the FCS is added in the report).
        received_bytes: received * (len - 4),
        duplicates: sum.duplicate_packets.unwrap_or(0),
        reordered: sum.reordered_packets.unwrap_or(0),
        active_s: sum.duration_s,
        rx_span_s: None,
        generator_limited: sum.generator_limited,
        latency: sum
            .latency_us
            .map(|l| model::stats::histogram::LatencySummary {
                count: l.count,
                min_us: l.min,
                avg_us: l.avg,
                p50_us: l.p50,
                p90_us: l.p90,
                p99_us: l.p99,
                p999_us: l.p999,
                p9999_us: l.p9999,
                max_us: l.max,
            }),
    })
}
