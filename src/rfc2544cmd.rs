//! `wirebench rfc2544`: the RFC 2544 benchmarks of `method::rfc2544` over two raw ports of
//! this host (`--tx`/`--rx`) or over UDP through a wirebench server (`HOST`).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use engine::frameio::{FrameRx, FrameTx};
use engine::raw::{RawLoad, RawTrialReport, RawTrialSpec};
use method::rfc2544::{FrameLoad, FrameTrial, FrameTrialRequest, FrameTrialResult};
use wire::frame::FrameSpec;
use wire::linerate::LineRate;

use crate::cli::{Rfc2544Args, Rfc2544Test, SearchArg};
use crate::rawcmd::{endpoint, frame_spec, need_root, open_rx, open_tx, test_id, usage};

/// `method::rfc2544` trials over raw interfaces.
struct RawTrial {
    tx: Box<dyn FrameTx>,
    rx: Box<dyn FrameRx>,
    frame: FrameSpec,
    line: LineRate,
    test_id: u16,
    stream: u8,
    reports: Vec<RawTrialReport>,
}

impl FrameTrial for RawTrial {
    type Error = anyhow::Error;

    fn run(&mut self, req: &FrameTrialRequest) -> Result<FrameTrialResult> {
        // A fresh stream id per trial: late frames of the previous trial are not counted.
        self.stream = self.stream.wrapping_add(1);
        let load = match req.load {
            FrameLoad::Rate { fps, duration } => RawLoad::Rate {
                pps: fps,
                duration,
                count: None,
            },
            FrameLoad::Burst { frames } => RawLoad::Burst {
                frames,
                target_pps: self.line.max_fps(req.frame_len),
            },
        };
        let spec = RawTrialSpec {
            frame: self.frame,
            frame_len: req.frame_len as usize,
            test_id: self.test_id,
            stream_id: self.stream,
            load,
            // RFC 2544 §23 waits 2 s for residual frames; on one host 300 ms is plenty.
            drain: Duration::from_millis(300),
        };
        let stop = AtomicBool::new(false);
        let r = engine::raw::run_trial(self.tx.as_mut(), Some(self.rx.as_mut()), &spec, &stop)?;
        let out = FrameTrialResult {
            sent: r.counters.sent,
            received: r.counters.received,
            duplicates: r.counters.duplicates,
            reordered: r.counters.reordered,
            offered_fps: r.offered_pps,
            generator_limited: r.generator_limited,
            latency: req.latency.then(|| r.latency.clone()),
        };
        self.reports.push(r);
        Ok(out)
    }
}

/// `method::rfc2544` trials as UDP tests through a wirebench server: a frame of L bytes is
/// a datagram of L - 46 bytes of payload (14 Ethernet + 20 IPv4 + 8 UDP + 4 FCS), at
/// L's frame rate. Bursts at line rate are not possible through a socket.
struct UdpTrial {
    cfg: control::client::ClientConfig,
}

/// Ethernet + IPv4 + UDP headers and the FCS around a UDP payload.
pub(crate) const UDP_FRAME_OVERHEAD: u64 = 46;

impl FrameTrial for UdpTrial {
    type Error = anyhow::Error;

    fn run(&mut self, req: &FrameTrialRequest) -> Result<FrameTrialResult> {
        use model::spec::{Protocol, Rate, TestSpec};
        let FrameLoad::Rate { fps, duration } = req.load else {
            return Err(usage(
                "back-to-back bursts need raw ports (--tx/--rx): a socket cannot send at line rate",
            ));
        };
        let spec = TestSpec {
            rate: Rate::PacketsPerSec(fps),
            duration,
            len: (req.frame_len - UDP_FRAME_OVERHEAD) as usize,
            ..crate::commands::base_spec(Protocol::Udp)
        };
        let outcome = crate::commands::run_one(&self.cfg, &spec, None, true)?;
        let r = control::assemble::throughput_result(
            &outcome,
            "trial",
            crate::commands::spec_params(&spec, &self.cfg),
        );
        let s = r.summary.context("the trial produced no result")?;
        let sent = s.sent_packets.unwrap_or(0);
        let latency = if req.latency {
            r.streams
                .iter()
                .filter_map(|x| x.latency_histogram.as_deref())
                .filter_map(|b| model::stats::histogram::LatencyHistogram::from_base64(b).ok())
                .reduce(|mut a, b| {
                    a.merge(&b);
                    a
                })
        } else {
            None
        };
        Ok(FrameTrialResult {
            sent,
            received: sent.saturating_sub(s.lost_packets.unwrap_or(sent)),
            duplicates: s.duplicate_packets.unwrap_or(0),
            reordered: s.reordered_packets.unwrap_or(0),
            offered_fps: s.offered_bps.unwrap_or(0.0) / (8.0 * spec.len as f64),
            generator_limited: s.generator_limited,
            latency,
        })
    }
}

/// Runs the asked benchmarks per frame size over `trial`.
fn benchmarks<T: FrameTrial<Error = anyhow::Error>>(
    trial: &mut T,
    a: &Rfc2544Args,
    cfg: &method::rfc2544::SearchConfig,
    search: method::rfc2544::Search,
    progress: bool,
) -> Result<model::results::rfc2544::Rfc2544Report> {
    use method::rfc2544 as m;
    let line = cfg.line_rate;
    let mut rep = model::results::rfc2544::Rfc2544Report {
        line_rate_bps: line.0,
        ..Default::default()
    };
    for &len in &a.sizes {
        let mut tput = None;
        for t in &a.tests {
            match t {
                Rfc2544Test::Throughput => {
                    let r = m::throughput(trial, len, search, cfg, &mut rep.trials)?;
                    if progress {
                        eprintln!(
                            "  {len} bytes: throughput {} ({} trials)",
                            r.fps
                                .map(|f| format!("{f:.0} frames/s"))
                                .unwrap_or_else(|| "none".into()),
                            r.trials
                        );
                    }
                    tput = r.fps;
                    rep.throughput.push(r);
                }
                Rfc2544Test::Latency => {
                    // §26.2: at the throughput rate; without a throughput figure there is
                    // no rate to measure at.
                    let Some(fps) = tput else { continue };
                    let r = m::latency(
                        trial,
                        len,
                        fps,
                        a.latency_trials,
                        cfg.final_duration,
                        &mut rep.trials,
                    )?;
                    rep.latency.push(r);
                }
                Rfc2544Test::Loss => {
                    let rows = m::frame_loss_rate(
                        trial,
                        len,
                        line,
                        a.loss_step,
                        a.duration,
                        &mut rep.trials,
                    )?;
                    rep.loss.extend(rows);
                }
                Rfc2544Test::B2b => {
                    let max = a
                        .b2b_max_burst
                        .unwrap_or_else(|| (line.max_fps(len) * 2.0).ceil() as u64);
                    let r = m::back_to_back(
                        trial,
                        len,
                        line,
                        tput,
                        max,
                        a.b2b_trials,
                        &mut rep.trials,
                    )?;
                    rep.b2b.push(r);
                }
            }
        }
    }
    Ok(rep)
}

/// `wirebench rfc2544 --tx A --rx B` or `wirebench rfc2544 HOST`.
pub fn rfc2544(a: &Rfc2544Args) -> Result<()> {
    use method::rfc2544 as m;
    if a.tests.contains(&Rfc2544Test::Latency) && !a.tests.contains(&Rfc2544Test::Throughput) {
        return Err(usage(
            "the latency test runs at the throughput rate: include throughput in --tests",
        ));
    }
    if a.host.is_some() && a.tests.contains(&Rfc2544Test::B2b) {
        return Err(usage(
            "back-to-back bursts need raw ports (--tx/--rx): a socket cannot send at line rate; drop b2b from --tests",
        ));
    }
    let line = LineRate(a.frame.line_rate as u64);
    let cfg = m::SearchConfig {
        line_rate: line,
        duration: a.duration,
        final_duration: a.final_duration.unwrap_or(a.duration),
        loss_ratio: a.loss_tolerance,
        width: a.width.max(0.0001),
        ..m::SearchConfig::default()
    };
    let search = match a.search {
        SearchArg::Mlr => m::Search::Mlr,
        SearchArg::Binary => m::Search::Binary,
    };
    let progress = !a.json;
    let (rep, backend, timestamps, endpoints) = match (&a.host, &a.tx, &a.rx) {
        (Some(host), _, _) => {
            let target = crate::cli::Target {
                host: host.clone(),
                port: a.port,
                auth_key_file: a.auth_key_file.clone(),
                json: a.json,
            };
            let mut trial = UdpTrial {
                cfg: crate::commands::client_config(&target)?,
            };
            let server = trial.cfg.server.to_string();
            let rep = benchmarks(&mut trial, a, &cfg, search, progress)?;
            (
                rep,
                "udp (frames as UDP datagrams through the host's stack)".to_owned(),
                "kernel-software",
                serde_json::json!({ "server": server }),
            )
        }
        (None, Some(tx), Some(rx)) => {
            need_root()?;
            let tx_ep = endpoint(tx, &a.frame.lab)?;
            let rx_ep = endpoint(rx, &a.frame.lab)?;
            let frame = frame_spec(&a.frame, &tx_ep, Some(&rx_ep))?;
            if let Some(s) = a
                .sizes
                .iter()
                .find(|s| (**s as usize) < frame.min_frame_len())
            {
                return Err(usage(format!(
                    "frame size {s} is too small for these headers: at least {}",
                    frame.min_frame_len()
                )));
            }
            let mut trial = RawTrial {
                tx: open_tx(
                    &a.frame,
                    &tx_ep,
                    a.sizes.iter().copied().max().unwrap_or(64),
                )?,
                rx: open_rx(&a.frame, &rx_ep)?,
                frame,
                line,
                test_id: test_id(),
                stream: 0,
                reports: vec![],
            };
            let rep = benchmarks(&mut trial, a, &cfg, search, progress)?;
            (
                rep,
                format!("{} / {}", trial.tx.name(), trial.rx.name()),
                "kernel-software",
                serde_json::json!({ "tx": tx, "rx": rx }),
            )
        }
        _ => return Err(usage("give HOST, or both --tx and --rx")),
    };
    let mut params = serde_json::json!({
        "sizes": a.sizes, "tests": a.tests.iter().map(|t| format!("{t:?}").to_lowercase()).collect::<Vec<_>>(),
        "trial_duration_s": a.duration.as_secs_f64(), "final_duration_s": cfg.final_duration.as_secs_f64(),
        "loss_tolerance_ratio": a.loss_tolerance, "search": search, "width_ratio": cfg.width,
        "line_rate_bps": line.0, "latency_trials": a.latency_trials, "b2b_trials": a.b2b_trials,
        "protocol": format!("{:?}", a.frame.proto).to_lowercase(),
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), endpoints.as_object()) {
        p.extend(e.clone());
    }
    let mut doc = engine::env::result("rfc2544", params);
    doc.backend = Some(backend);
    doc.timestamp_source = Some(timestamps.into());
    if a.host.is_some() {
        doc.notes.push(format!(
            "over UDP: a frame of L bytes is a datagram of L - {UDP_FRAME_OVERHEAD} bytes; the path's own framing (loopback, tunnels) may differ, so % of line rate is nominal"
        ));
    }
    if cfg.final_duration < Duration::from_secs(60) {
        doc.notes.push(format!(
            "trials of {:.0} s: RFC 2544 §24 asks for 60 s full-length trials; results are indicative",
            cfg.final_duration.as_secs_f64()
        ));
    }
    if a.loss_tolerance > 0.0 {
        doc.notes.push(format!(
            "loss-tolerant throughput at {} % loss: not RFC 2544 (zero-loss) throughput",
            a.loss_tolerance * 100.0
        ));
    }
    if rep.throughput.iter().any(|t| t.generator_cap_fps.is_some()) {
        doc.notes.push("the generator could not reach line rate at some sizes: the search was capped at what it offered (marked in the table)".into());
    }
    for l in &rep.latency {
        for &(q, limit) in &a.latency_limit {
            let Some(s) = &l.summary else { continue };
            let (name, v) = match q {
                q if q < 0.0 => ("avg".to_owned(), s.avg_us),
                q if q >= 100.0 => ("max".to_owned(), s.max_us),
                q if q <= 0.0 => ("min".to_owned(), s.min_us),
                q => {
                    let h = l.histogram.as_deref().and_then(|b| {
                        model::stats::histogram::LatencyHistogram::from_base64(b).ok()
                    });
                    (
                        format!("p{q}"),
                        h.and_then(|h| h.percentile_us(q)).unwrap_or(f64::NAN),
                    )
                }
            };
            doc.verdicts.push(model::results::Verdict {
                name: format!("latency {name} at {} bytes", l.frame_len),
                passed: v <= limit,
                detail: format!("{v:.1} us (limit {limit} us)"),
            });
        }
    }
    doc.rfc2544 = Some(rep);
    if a.json {
        print!("{}", report::json::to_string(&doc));
    } else {
        print!("{}", report::text::rfc2544(&doc));
    }
    if doc.verdicts.iter().any(|v| !v.passed) {
        return Err(crate::commands::VerdictFailed("a latency verdict failed".into()).into());
    }
    Ok(())
}
