//! `wirebench frer`: run a software FRER relay (802.1CB) on this host's interfaces, and
//! show the counters of running relays. The relay itself is `lab::frer`.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use lab::frer::config::{
    AlgorithmName, Eliminate, Identification, Latent, RelayConfig, Replicate, StreamConfig,
};
use lab::frer::process::RelayState;
use report::table::{render, Align};

use crate::cli::{
    FrameBackend, FrerAnalyzeArgs, FrerArgs, FrerCommand, FrerCompareArgs, FrerRelayArgs,
    FrerStatsArgs, RecoveryAlgorithm,
};
use crate::rawcmd::{need_root, usage};

/// Where standalone relays publish their counters.
const STANDALONE_DIR: &str = "/run/wirebench/frer";

/// Runs a `frer` subcommand.
pub fn frer(a: &FrerArgs) -> Result<()> {
    match &a.command {
        FrerCommand::Relay(r) => relay(r),
        FrerCommand::Stats(s) => stats(s),
        FrerCommand::Analyze(a) => analyze(a),
        FrerCommand::Compare(c) => compare(c),
    }
}

/// Runs `argv` (this program's arguments) on `node` of lab `lab` and parses its `-J` output.
fn run_in(lab: &str, node: &str, argv: &[&str]) -> Result<model::results::RunResult> {
    let exe = std::env::current_exe()?.display().to_string();
    let mut full = vec![exe];
    full.extend(argv.iter().map(|s| (*s).to_owned()));
    let cmd = lab::Lab::exec(lab, node, &full, &mut lab::SystemRunner)?;
    let out = std::process::Command::new(&cmd.program)
        .args(&cmd.args)
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "`wirebench {}` on {node} failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout)
        .with_context(|| format!("reading the JSON of `wirebench {}`", argv.join(" ")))
}

/// Frames the merge relay received on its path ports, and delivered to the listener.
/// The merge relay's pid, frames received on its path ports and frames delivered to the
/// listener; `None` when its state cannot be read.
fn merge_frames(lab: &str) -> Option<(u32, u64, u64)> {
    let path = lab::managed::run_dir(lab).join("merge.relay.json");
    // The relay publishes every 200 ms.
    std::thread::sleep(Duration::from_millis(400));
    let s = RelayState::read(&path).ok()?;
    let port = |n: &str| s.counters.ports.iter().find(|p| p.name == n);
    let inbound = ["eth1", "eth2"]
        .iter()
        .filter_map(|n| port(n))
        .map(|p| p.received)
        .sum();
    Some((s.pid, inbound, port("eth0")?.sent))
}

/// Frames in per frame delivered between two snapshots of the same relay process; `None`
/// when a snapshot is missing, the relay restarted, or nothing was delivered.
fn per_delivered(before: Option<(u32, u64, u64)>, after: Option<(u32, u64, u64)>) -> Option<f64> {
    let ((p0, i0, o0), (p1, i1, o1)) = (before?, after?);
    if p0 != p1 {
        return None;
    }
    let (inb, out) = (i1.checked_sub(i0)?, o1.checked_sub(o0)?);
    (out > 0).then(|| inb as f64 / out as f64)
}

/// One group's measurements: TCP, UDP, latency, and the merge relay's frames per frame
/// delivered during each.
struct Group {
    tcp: model::results::RunResult,
    udp: model::results::RunResult,
    latency: model::results::RunResult,
    /// Frames in on the path ports per frame delivered, during (TCP, UDP, latency).
    per_delivered: [Option<f64>; 3],
}

fn measure(name: &str, plain: bool, a: &FrerCompareArgs) -> Result<Group> {
    // The same set-up as a plan's lab target: the lab, and a server on its listener, both
    // gone when `setup` is dropped.
    let mut args: Vec<String> = Vec::new();
    for (flag, spec) in [("--path-a", &a.path_a), ("--path-b", &a.path_b)] {
        if let Some(s) = spec {
            args.extend([flag.to_owned(), s.clone()]);
        }
    }
    args.extend([
        "--frer".to_owned(),
        if plain { "mode=plain" } else { "mode=frer" }.to_owned(),
    ]);
    let setup = crate::runcmd::set_up(
        &crate::plan::Target::Lab {
            topology: "frer".into(),
            args,
        },
        name,
    )?;
    let host = setup.ctx.host.clone();
    let t = format!("{}", a.time);
    let len = a.length.to_string();
    let mut per = [None; 3];
    let mut before = merge_frames(name);
    let mut step = |i: usize| {
        let now = merge_frames(name);
        per[i] = per_delivered(before, now);
        before = now;
    };
    let tcp = run_in(name, "talker", &["client", &host, "-t", &t, "-J"])?;
    step(0);
    let udp_args = ["client", &host, "-u", "-b", "0", "-l", &len, "-t", &t, "-J"];
    let udp = run_in(name, "talker", &udp_args)?;
    step(1);
    let latency = run_in(
        name,
        "talker",
        &["latency", &host, "-l", "64", "-t", &t, "-J"],
    )?;
    step(2);
    drop(setup);
    Ok(Group {
        tcp,
        udp,
        latency,
        per_delivered: per,
    })
}

fn compare(a: &FrerCompareArgs) -> Result<()> {
    use model::results::frer::{FrerReport, OverheadRow};
    if !(a.time.is_finite() && a.time >= 1.0 && a.time <= 600.0) {
        return Err(usage(format!("-t {}: give 1..=600 seconds", a.time)));
    }
    if !(18..=1472).contains(&a.length) {
        return Err(usage(format!("-l {}: give 18..=1472 bytes", a.length)));
    }
    lab::naming::check(&format!("{}c", a.name)).map_err(|e| usage(format!("--name: {e}")))?;
    for s in [&a.path_a, &a.path_b].into_iter().flatten() {
        lab::impair::spec::ImpairSpec::parse_inline(s)
            .map_err(|e| usage(format!("impairment '{s}': {e}")))?;
    }
    need_root()?;
    eprintln!("control group: relays forward over path A, no FRER ...");
    let control = measure(&format!("{}c", a.name), true, a)?;
    eprintln!("FRER: relays replicate onto both paths and eliminate ...");
    let frer = measure(&format!("{}f", a.name), false, a)?;
    // A figure a run did not produce stays absent: no overhead is computed from it.
    let rx = |r: &model::results::RunResult| {
        r.summary
            .as_ref()
            .and_then(|s| s.received_bps)
            .map(|b| b / 1e6)
    };
    let loss = |r: &model::results::RunResult| {
        r.summary
            .as_ref()
            .and_then(|s| s.loss_ratio)
            .map(|l| l * 100.0)
    };
    let lat = |r: &model::results::RunResult, q: fn(&model::results::LatencyUs) -> f64| {
        r.latency
            .as_ref()
            .and_then(|rows| rows.first())
            .map(|row| q(&row.rtt_us))
    };
    // Overhead: what FRER costs in % of the control (less throughput, more latency).
    let cost = |control: Option<f64>, frer: Option<f64>, higher_is_better: bool| {
        let (c, f) = (control?, frer?);
        (c != 0.0).then(|| {
            let d = if higher_is_better { c - f } else { f - c };
            d / c * 100.0
        })
    };
    let tag_pct = 6.0 / (f64::from(a.length) + 28.0 + 14.0 + 4.0 + 6.0) * 100.0;
    let work = |i: usize| {
        let show = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        format!(
            "merge relay: {} frames in per frame delivered (control {}): every frame crosses both paths",
            show(frer.per_delivered[i]),
            show(control.per_delivered[i])
        )
    };
    let mut rows = vec![
        OverheadRow {
            metric: "TCP throughput".into(),
            unit: "Mbit/s".into(),
            control: rx(&control.tcp),
            frer: rx(&frer.tcp),
            overhead_percent: cost(rx(&control.tcp), rx(&frer.tcp), true),
            reason: format!("{}; R-TAG +6 B per 1514-B frame (0.39 %)", work(0)),
        },
        OverheadRow {
            metric: format!("UDP throughput ({} B payload, unlimited)", a.length),
            unit: "Mbit/s".into(),
            control: rx(&control.udp),
            frer: rx(&frer.udp),
            overhead_percent: cost(rx(&control.udp), rx(&frer.udp), true),
            reason: format!("{}; R-TAG +6 B per frame ({tag_pct:.2} %)", work(1)),
        },
        OverheadRow {
            metric: "UDP loss at that load".into(),
            unit: "%".into(),
            control: loss(&control.udp),
            frer: loss(&frer.udp),
            overhead_percent: None,
            reason: "the offered load is unlimited: loss shows where the relays saturate".into(),
        },
    ];
    for (name, q) in [
        (
            "p50",
            (|l: &model::results::LatencyUs| l.p50) as fn(&model::results::LatencyUs) -> f64,
        ),
        ("p99", |l| l.p99),
        ("p99.9", |l| l.p999),
    ] {
        let (c, f) = (lat(&control.latency, q), lat(&frer.latency, q));
        rows.push(OverheadRow {
            metric: format!("UDP round-trip latency {name} (64 B ping-pong)"),
            unit: "us".into(),
            control: c,
            frer: f,
            overhead_percent: cost(c, f, false),
            reason: format!("{}; the first copy wins", work(2)),
        });
    }
    let mut doc = engine::env::result(
        "frer compare",
        serde_json::json!({
            "path_a": a.path_a, "path_b": a.path_b, "time_s": a.time, "udp_length": a.length,
        }),
    );
    doc.frer = Some(FrerReport {
        control: "frer lab, relays forwarding over path A without FRER".into(),
        treatment: "frer lab, 802.1CB replication onto both paths and elimination".into(),
        rows,
    });
    doc.runs = vec![
        control.tcp,
        control.udp,
        control.latency,
        frer.tcp,
        frer.udp,
        frer.latency,
    ];
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", report::text::frer_overhead(&doc));
    }
    Ok(())
}

/// Arrivals kept per path: 24 bytes each, so at most about 1 GB for eight paths.
const CAPTURE_LIMIT: usize = 5_000_000;

fn analyze(a: &FrerAnalyzeArgs) -> Result<()> {
    use engine::frameio::Backend;
    if !(a.time.is_finite() && a.time > 0.0 && a.time <= 3600.0) {
        return Err(usage(format!("-t {}: give 0 < seconds <= 3600", a.time)));
    }
    if a.rx.len() > 8 {
        return Err(usage("at most 8 paths (--rx)"));
    }
    need_root()?;
    let eps =
        a.rx.iter()
            .map(|s| crate::rawcmd::endpoint(s, &a.lab))
            .collect::<Result<Vec<_>>>()?;
    let mut rxs = Vec::new();
    for ep in &eps {
        let rx = match a.backend {
            FrameBackend::Packet => Backend::Packet.open_rx(ep),
            FrameBackend::Ring | FrameBackend::Xdp => Backend::Ring.open_rx(ep),
            FrameBackend::Auto => Backend::Ring
                .open_rx(ep)
                .or_else(|_| Backend::Packet.open_rx(ep)),
        }
        .with_context(|| format!("receiving on {ep}"))?;
        rxs.push(rx);
    }
    let stop = crate::labcmd::stop_on_signals()?;
    eprintln!(
        "capturing test frames on {} for {} s",
        a.rx.join(", "),
        a.time
    );
    let caps = engine::multi::capture(
        rxs.iter_mut()
            .map(|r| &mut **r as &mut dyn engine::frameio::FrameRx)
            .collect(),
        Duration::from_secs_f64(a.time),
        CAPTURE_LIMIT,
        &stop,
    )?;
    let mut arrivals = Vec::new();
    let mut notes = Vec::new();
    // A path that hit the limit stopped at its own point: per stream, every path is cut at
    // the lowest number a truncated path still kept, so no path looks as if it missed
    // what was only not kept.
    let mut cut: std::collections::BTreeMap<(u16, u8), u64> = Default::default();
    for c in caps.iter().filter(|c| c.truncated) {
        let mut last: std::collections::BTreeMap<(u16, u8), u64> = Default::default();
        for x in &c.arrivals {
            let e = last.entry((x.test_id, x.stream_id)).or_insert(x.seq);
            *e = (*e).max(x.seq);
        }
        for (k, v) in last {
            let e = cut.entry(k).or_insert(v);
            *e = (*e).min(v);
        }
    }
    for (label, c) in a.rx.iter().zip(&caps) {
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
    for c in caps.iter() {
        arrivals.extend(c.arrivals.iter().filter(|x| {
            cut.get(&(x.test_id, x.stream_id))
                .is_none_or(|&limit| x.seq <= limit)
        }));
    }
    let streams = model::stats::paths::analyze(&mut arrivals, &a.rx);
    if a.json {
        let doc = serde_json::json!({
            "paths": a.rx,
            "streams": streams,
            "foreign": caps.iter().map(|c| c.foreign).collect::<Vec<_>>(),
            "kernel_drops": caps.iter().map(|c| c.kernel_drops).collect::<Vec<_>>(),
            "notes": notes,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    if streams.is_empty() {
        println!("no test frames seen on {}", a.rx.join(", "));
    }
    for s in &streams {
        println!(
            "\ntest {:#06x} stream {}: numbers {}..={}, {} frames on all paths",
            s.test_id, s.stream_id, s.first_seq, s.last_seq, s.received
        );
        println!(
            "merged (what an eliminator passes): {} distinct, {} lost ({}), {} duplicates, {} out of order",
            s.unique,
            s.lost,
            pct(s.lost, s.unique + s.lost),
            s.duplicates,
            s.out_of_order
        );
        let rows: Vec<Vec<String>> = s
            .paths
            .iter()
            .map(|p| {
                vec![
                    p.path.clone(),
                    p.received.to_string(),
                    p.unique.to_string(),
                    p.missing.to_string(),
                    pct(p.missing, s.unique + s.lost),
                    p.duplicates.to_string(),
                    p.first.to_string(),
                    pct(p.first, s.unique),
                    p.rtagged.to_string(),
                ]
            })
            .collect();
        print!(
            "{}",
            render(
                &[
                    ("path", Align::Left),
                    ("received", Align::Right),
                    ("distinct", Align::Right),
                    ("missed", Align::Right),
                    ("missed %", Align::Right),
                    ("duplicates", Align::Right),
                    ("first", Align::Right),
                    ("first %", Align::Right),
                    ("R-tagged", Align::Right),
                ],
                &rows,
            )
        );
        if let Some(k) = &s.skew_us {
            println!(
                "skew between the copies of a number (last - first): p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                k.p50_us, k.p99_us, k.max_us
            );
        }
    }
    for n in notes {
        println!("note: {n}");
    }
    Ok(())
}

/// `dst_mac=02:..,vlan=10,proto=udp,dst_port=5201`.
fn identification(text: &str) -> Result<Identification, String> {
    let mut id = Identification::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("'{item}' is not key=value"))?;
        let (k, v) = (k.trim().replace('-', "_"), v.trim());
        let num = |what: &str| -> Result<u16, String> {
            v.parse()
                .map_err(|_| format!("{what} '{v}' is not a number 0..=65535"))
        };
        let ip = || -> Result<std::net::IpAddr, String> {
            v.parse()
                .map_err(|_| format!("{k} '{v}' is not an IP address"))
        };
        match k.as_str() {
            "dst_mac" => id.dst_mac = Some(v.to_owned()),
            "vlan" => id.vlan = Some(num("vlan")?),
            "src_ip" => id.src_ip = Some(ip()?),
            "dst_ip" => id.dst_ip = Some(ip()?),
            "proto" => id.proto = Some(v.to_owned()),
            "src_port" => id.src_port = Some(num("src_port")?),
            "dst_port" => id.dst_port = Some(num("dst_port")?),
            _ => {
                return Err(format!(
                    "unknown key '{k}' (dst_mac, vlan, src_ip, dst_ip, proto, src_port, dst_port)"
                ))
            }
        }
    }
    Ok(id)
}

fn ports(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The relay's configuration from the flags.
fn config_from_flags(a: &FrerRelayArgs) -> Result<RelayConfig, String> {
    let ident =
        identification(a.ident.as_deref().unwrap_or("")).map_err(|e| format!("--match: {e}"))?;
    let replicate = a
        .replicate
        .as_deref()
        .map(|r| {
            let (from, to) = r
                .split_once('=')
                .ok_or_else(|| format!("--replicate '{r}': write IN=OUT,OUT"))?;
            Ok::<_, String>(Replicate {
                from: from.trim().to_owned(),
                to: ports(to),
            })
        })
        .transpose()?;
    let eliminate = a
        .eliminate
        .as_deref()
        .map(|e| {
            let (from, to) = e
                .split_once('=')
                .ok_or_else(|| format!("--eliminate '{e}': write IN,IN=OUT"))?;
            Ok::<_, String>(Eliminate {
                from: ports(from),
                to: to.trim().to_owned(),
                algorithm: match a.algorithm {
                    RecoveryAlgorithm::Vector => AlgorithmName::Vector,
                    RecoveryAlgorithm::Match => AlgorithmName::Match,
                },
                history: a.history,
                reset_ms: a.reset_ms,
                keep_tag: a.keep_tag,
                take_no_sequence: a.take_no_sequence,
                individual: a.individual,
                off: a.no_elimination,
                latent: a.latent_difference.map(|d| Latent {
                    paths: None,
                    difference: d,
                    period_ms: 2000,
                    reset_period_ms: 30_000,
                }),
            })
        })
        .transpose()?;
    let mut pass = std::collections::BTreeMap::new();
    for p in &a.pass {
        let (i, o) = p
            .split_once('=')
            .ok_or_else(|| format!("--pass '{p}': write IN=OUT"))?;
        pass.insert(i.trim().to_owned(), o.trim().to_owned());
    }
    let streams = if replicate.is_some() || eliminate.is_some() {
        vec![StreamConfig {
            name: "stream".into(),
            ident,
            replicate,
            eliminate,
        }]
    } else {
        vec![]
    };
    let c = RelayConfig { streams, pass };
    c.check()?;
    Ok(c)
}

fn relay(a: &FrerRelayArgs) -> Result<()> {
    let cfg = if let Some(path) = &a.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
        RelayConfig::from_toml(&text).map_err(|e| usage(format!("{}: {e}", path.display())))?
    } else if let Some(json) = &a.config_json {
        let c: RelayConfig =
            serde_json::from_str(json).map_err(|e| usage(format!("--config-json: {e}")))?;
        c.check()
            .map_err(|e| usage(format!("--config-json: {e}")))?;
        c
    } else {
        config_from_flags(a).map_err(usage)?
    };
    if let Some(t) = a.time {
        if !(t.is_finite() && t > 0.0 && t <= 1e9) {
            return Err(usage(format!(
                "-t {t}: give a number of seconds above 0 (at most 1e9)"
            )));
        }
    }
    need_root()?;
    let state = match &a.state {
        Some(p) => p.clone(),
        None => {
            lab::naming::check(&a.name).map_err(|e| usage(format!("--name: {e}")))?;
            PathBuf::from(STANDALONE_DIR).join(format!("{}.json", a.name))
        }
    };
    let stop = crate::labcmd::stop_on_signals()?;
    if let Some(t) = a.time {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(t));
            stop.store(true, Ordering::Relaxed);
        });
    }
    if a.state.is_none() && a.netns_file.is_none() {
        eprintln!(
            "FRER relay on {}; counters: wirebench frer stats --state {}; Ctrl-C stops it",
            cfg.ports().join(", "),
            state.display()
        );
    }
    let end = lab::frer::process::run(&cfg, Some(&state), a.netns_file.as_deref(), &stop)
        .with_context(|| format!("FRER relay on {}", cfg.ports().join(", ")))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&end)?);
    } else {
        print!("{}", render_state("relay", &end));
    }
    Ok(())
}

/// Every relay state file: standalone relays, then those of labs, as (label, path).
pub(crate) fn state_files(lab: Option<&str>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let files = |dir: &Path, suffix: &str| -> Vec<(String, PathBuf)> {
        let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let stem = name.strip_suffix(suffix)?.to_owned();
                        Some((stem, e.path()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    if lab.is_none() {
        out.extend(files(Path::new(STANDALONE_DIR), ".json"));
    }
    let labs: Vec<String> = match lab {
        Some(l) => vec![l.to_owned()],
        None => {
            let mut v: Vec<String> = std::fs::read_dir(lab::managed::RUN_ROOT)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            v.sort();
            v
        }
    };
    for l in labs {
        for (node, path) in files(&lab::managed::run_dir(&l), ".relay.json") {
            out.push((format!("{l}/{node}"), path));
        }
    }
    out
}

fn stats(a: &FrerStatsArgs) -> Result<()> {
    let files = match &a.state {
        Some(p) => vec![(p.display().to_string(), p.clone())],
        None => state_files(a.lab.as_deref()),
    };
    let mut states = Vec::new();
    for (label, path) in files {
        match RelayState::read(&path) {
            Ok(s) => states.push((label, s)),
            Err(e) if a.state.is_some() => {
                return Err(usage(format!("{}: {e}", path.display())));
            }
            Err(_) => {}
        }
    }
    if states.is_empty() {
        return Err(usage(match &a.lab {
            Some(l) => format!("lab '{l}' runs no FRER relay (see `wirebench lab status`)"),
            None => "no FRER relay runs (start one with `wirebench frer relay` or `wirebench lab up frer`)".into(),
        }));
    }
    if a.json {
        let map: serde_json::Map<String, serde_json::Value> = states
            .iter()
            .map(|(l, s)| Ok((l.clone(), serde_json::to_value(s)?)))
            .collect::<Result<_>>()?;
        println!("{}", serde_json::to_string_pretty(&map)?);
    } else {
        for (label, s) in &states {
            print!("{}", render_state(label, s));
        }
    }
    Ok(())
}

/// Whether the relay still runs, as a word.
fn liveness(s: &RelayState) -> String {
    match (s.running && lab::topology::process_runs(s.pid), &s.stopped) {
        (true, _) => "running".into(),
        (false, Some(why)) => format!("stopped: {why}"),
        (false, None) => "gone".into(),
    }
}

/// A relay's counters as text: ports, streams (802.1CB counter names in the legend),
/// paths of each elimination, and what matched no stream.
pub fn render_state(label: &str, s: &RelayState) -> String {
    let c = &s.counters;
    let mut out = format!(
        "\nFRER relay {label} (pid {}, {}, {:.1} s)\n",
        s.pid,
        liveness(s),
        s.uptime_s
    );
    let ports: Vec<Vec<String>> = c
        .ports
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.received.to_string(),
                p.sent.to_string(),
                p.kernel_drops.to_string(),
                p.send_errors.to_string(),
                p.link_down_events.to_string(),
            ]
        })
        .collect();
    out.push_str(&render(
        &[
            ("port", Align::Left),
            ("received", Align::Right),
            ("sent", Align::Right),
            ("kernel drops", Align::Right),
            ("send errors", Align::Right),
            ("link down", Align::Right),
        ],
        &ports,
    ));
    let mut streams = Vec::new();
    let mut paths = Vec::new();
    for st in &c.streams {
        if let Some(r) = &st.replication {
            streams.push(vec![
                st.name.clone(),
                "replicate".into(),
                format!("{} -> {}", r.from, r.to.join(",")),
                r.frames.to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                r.seq_gen_resets.to_string(),
                "-".into(),
            ]);
        }
        if let Some(e) = &st.elimination {
            let from: Vec<&str> = e.paths.iter().map(|p| p.port.as_str()).collect();
            let r = &e.recovery;
            streams.push(vec![
                st.name.clone(),
                if e.off {
                    "eliminate (OFF)".into()
                } else {
                    "eliminate".into()
                },
                format!("{} -> {}", from.join(","), e.to),
                r.passed.to_string(),
                r.discarded.to_string(),
                r.out_of_order.to_string(),
                r.rogue.to_string(),
                r.lost.saturating_sub(r.lost_before_first).to_string(),
                r.tagless.to_string(),
                r.resets.to_string(),
                e.latent_errors
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "-".into()),
            ]);
            for p in &e.paths {
                paths.push(vec![
                    st.name.clone(),
                    p.port.clone(),
                    p.received.to_string(),
                    p.passed.to_string(),
                    pct(p.passed, r.passed),
                    p.individual_discarded.to_string(),
                ]);
            }
        }
    }
    if !streams.is_empty() {
        out.push('\n');
        out.push_str(&render(
            &[
                ("stream", Align::Left),
                ("function", Align::Left),
                ("ports", Align::Left),
                ("frames/passed", Align::Right),
                ("discarded", Align::Right),
                ("out of order", Align::Right),
                ("rogue", Align::Right),
                ("lost (net)", Align::Right),
                ("tagless", Align::Right),
                ("resets", Align::Right),
                ("latent errors", Align::Right),
            ],
            &streams,
        ));
    }
    if !paths.is_empty() {
        out.push_str("\nper path (eliminating): which path delivered each number first\n");
        out.push_str(&render(
            &[
                ("stream", Align::Left),
                ("path port", Align::Left),
                ("received", Align::Right),
                ("passed first", Align::Right),
                ("share", Align::Right),
                ("individual discards", Align::Right),
            ],
            &paths,
        ));
    }
    out.push_str(&format!(
        "frames of no stream: {} passed, {} dropped; malformed {}; too long {}\n",
        c.unmatched_passed, c.unmatched_dropped, c.malformed, c.too_long
    ));
    if !s.latent_alarms.is_empty() {
        out.push_str(&format!(
            "latent errors signalled: {} (last: stream {} at {:.1} s, drift {})\n",
            s.latent_alarms.len(),
            s.latent_alarms.last().map(|a| a.1.as_str()).unwrap_or(""),
            s.latent_alarms.last().map(|a| a.0).unwrap_or(0.0),
            s.latent_alarms.last().map(|a| a.2).unwrap_or(0)
        ));
    }
    out.push_str(
        "802.1CB 10.8 counters: frames/passed = frerCpsSeqRcvyPassedPackets (frames replicated on a replicating port);\n\
         discarded = duplicates; lost (net) = frerCpsSeqRcvyLostPackets minus the numbers before the first frame\n\
         accepted after each reset, which the literal algorithm counts too (both are in -J); numbers still inside\n\
         the history window are not yet counted.\n",
    );
    out
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> FrerRelayArgs {
        let mut argv = vec!["wirebench", "frer", "relay"];
        argv.extend(extra);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Frer(FrerArgs {
                command: FrerCommand::Relay(r),
            }) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn flags_make_one_stream() {
        let c = config_from_flags(&args(&[
            "--eliminate",
            "eth1,eth2=eth0",
            "--match",
            "dst-mac=02:77:62:00:23:02,proto=udp,dst_port=5201",
            "--history",
            "512",
            "--pass",
            "eth1=eth0",
        ]))
        .unwrap();
        let s = &c.streams[0];
        let e = s.eliminate.as_ref().unwrap();
        assert_eq!((e.from.len(), e.to.as_str(), e.history), (2, "eth0", 512));
        assert_eq!(s.ident.dst_port, Some(5201));
        assert_eq!(c.pass.get("eth1").map(String::as_str), Some("eth0"));
    }

    #[test]
    fn bad_flags_are_named() {
        for (extra, want) in [
            (&["--replicate", "eth0"][..], "IN=OUT,OUT"),
            (
                &["--eliminate", "eth1,eth2=eth0", "--history", "1"][..],
                "history 1",
            ),
            (
                &["--replicate", "eth0=eth1", "--match", "colour=red"][..],
                "unknown key 'colour'",
            ),
            (
                &["--replicate", "eth0=eth1", "--match", "vlan=x"][..],
                "vlan 'x'",
            ),
            (&[][..], "nothing to do"),
        ] {
            let e = config_from_flags(&args(extra)).unwrap_err();
            assert!(e.contains(want), "{extra:?}: {e}");
        }
    }
}
