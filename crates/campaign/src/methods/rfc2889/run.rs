//! An `rfc2889` traffic test: per frame size, learning frames from every port (RFC 2544
//! §23), the throughput search over the pattern (optional), then the trial at the asked
//! load. Each trial is one multi-stream profile over the ports (`trials::StreamsRun`), one
//! stream per flow of `method::rfc2889::flows`, with every port listening, so a frame that
//! arrives at the wrong port is counted there (the flood count). The address tests are in
//! `addresses.rs`.

use std::time::Duration;

use method::rfc2544::{self, Search, SearchConfig};
use method::rfc2889::{self as rfc, Flow, FlowCount, Pattern};
use method::streams::{Profile, StreamProto, StreamSpec};
use method::{StreamsData, StreamsTrial, Trial, TrialData, TrialRequest};
use model::results::RunResult;
use model::spec::Rate;
use model::stats::LatencyHistogram;
use model::stop::Stop;
use model::units::FrameRate;

use super::request::{Rfc2889Request, Test, ETHERTYPE};
use super::result::{Congestion, Latency, PortRow, Rfc2889Result, SizeResult, TrialRows, PART};
use crate::trials::StreamsRun;
use crate::{Error, Watch};

/// Runs `req`.
pub(super) fn run(
    req: &Rfc2889Request,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    crate::frames::need_root()?;
    let (out, notes, interrupted) = match (req.test, req.test.pattern()) {
        (_, Some(p)) => traffic(req, p, watch, stop)?,
        (Test::Errored, None) => super::errored::run(req, watch, stop)?,
        (_, None) => super::addresses::run(req, watch, stop)?,
    };
    let params = serde_json::json!({
        "test": req.test.name(),
        "ports": req.ports,
        "lab": req.lab,
        "sizes": req.sizes,
        "trial_s": req.trial.as_secs_f64(),
        "line_rate_bps": req.line_rate.0,
        "load_pct": req.load * 100.0,
        "search": req.search,
    });
    let mut doc = engine::env::result("rfc2889", params);
    doc.timestamp_source = Some("kernel-software".into());
    if let Some(e) = &out.errored {
        doc.verdicts.push(model::results::Verdict {
            name: "errored frames filtered".into(),
            passed: e.passed,
            detail: super::show::errored_detail(e),
            marginal: false,
        });
    }
    doc.notes = notes;
    doc.interrupted = interrupted;
    doc.set_part(PART, &out)
        .map_err(|e| Error::Failed(e.to_string()))?;
    Ok(doc)
}

/// A run over the ports with every port listening.
pub(super) fn streams_run(req: &Rfc2889Request, stop: &Stop) -> StreamsRun {
    StreamsRun {
        lab: req.lab.clone(),
        backend: req.backend,
        stop: stop.clone(),
        interval: None,
        agents: req.agents.clone(),
        listen: req.ports.clone(),
    }
}

/// A stream of test frames of `len` bytes from port `from` to `to` (or to every port, as
/// a broadcast) at `fps` for `seconds`.
pub(super) fn stream(
    name: String,
    (from, to): (&str, &str),
    broadcast: bool,
    len: u64,
    fps: f64,
    seconds: f64,
) -> StreamSpec {
    StreamSpec {
        name,
        source: from.to_owned(),
        destination: to.to_owned(),
        protocol: StreamProto::EtherType(ETHERTYPE),
        pattern: vec![len],
        frame_label: len.to_string(),
        load: FrameRate::Pps(fps),
        dscp: 0,
        vlan: None,
        pcp: 0,
        dst_ip: None,
        dst_mac: broadcast.then_some([0xff; 6]),
        src_port: 0,
        dst_port: 0,
        start: 0.0,
        stop: seconds,
        expect_bps: None,
        tolerance: 0.0,
    }
}

/// The profile of one trial: each flow at its share of `fps` per sending port.
fn profile(req: &Rfc2889Request, flows: &[Flow], len: u64, fps: f64, seconds: f64) -> Profile {
    let streams = flows
        .iter()
        .map(|f| {
            let (from, to) = (&req.ports[f.from], &req.ports[f.to]);
            let name = if f.broadcast {
                format!("{from} > broadcast")
            } else {
                format!("{from} > {to}")
            };
            stream(name, (from, to), f.broadcast, len, fps * f.share, seconds)
        })
        .collect();
    Profile {
        streams,
        line_rate: req.line_rate,
        lab: None,
        duration: seconds,
    }
}

/// RFC 2544 §23's learning frames: ten frames from every port to the next, so the switch
/// knows every port's address before a trial and does not flood its frames. Unicast, so
/// that a server's lent port sends them under its default policy (no broadcasts); the
/// first ones are flooded, which teaches the switch all the same.
fn learn(req: &Rfc2889Request, run: &mut StreamsRun, len: u64) -> Result<(), Error> {
    let n = req.ports.len();
    let streams = (0..n)
        .map(|i| {
            let (from, to) = (&req.ports[i], &req.ports[(i + 1) % n]);
            stream(
                format!("learning {from}"),
                (from, to),
                false,
                len,
                100.0,
                0.1,
            )
        })
        .collect();
    let p = Profile {
        streams,
        line_rate: req.line_rate,
        lab: None,
        duration: 0.1,
    };
    run.run(&p).map(drop)
}

/// What each flow's frames did, and each port's latency, from a profile's data.
fn counts(
    req: &Rfc2889Request,
    flows: &[Flow],
    d: &StreamsData,
) -> (Vec<FlowCount>, Vec<LatencyHistogram>) {
    let n = req.ports.len();
    let index = |port: &str| req.ports.iter().position(|p| p == port);
    let mut latency = vec![LatencyHistogram::new(); n];
    let mut out = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        let mut at = vec![0u64; n];
        let mut span_s = vec![0.0; n];
        let span = |x: &TrialData| x.rx_span.map_or(0.0, |s| s.as_secs_f64());
        let Some(own) = d.streams.get(i) else {
            out.push(FlowCount {
                sent: 0,
                at,
                span_s,
            });
            continue;
        };
        at[f.to] = own.counters.received;
        span_s[f.to] = span(own);
        if let Some(h) = &own.latency {
            latency[f.to].merge(h);
        }
        for (port, x) in d.strays.get(i).into_iter().flatten() {
            let Some(p) = index(port) else { continue };
            at[p] += x.counters.received;
            span_s[p] = span_s[p].max(span(x));
            if f.broadcast {
                if let Some(h) = &x.latency {
                    latency[p].merge(h);
                }
            }
        }
        out.push(FlowCount {
            sent: own.counters.sent,
            at,
            span_s,
        });
    }
    (out, latency)
}

/// One trial's rows from its counts.
fn rows(
    req: &Rfc2889Request,
    flows: &[Flow],
    (counts, latency): (&[FlowCount], &[LatencyHistogram]),
    (load, fps, seconds): (f64, f64, f64),
    d: &StreamsData,
) -> TrialRows {
    let figures = rfc::port_figures(flows, counts, req.ports.len(), fps, seconds);
    let t = rfc::aggregate(&figures);
    let us = |ns: Option<u64>| ns.map_or(0.0, |v| v as f64 / 1e3);
    let ports = figures
        .iter()
        .map(|f| PortRow {
            port: req.ports[f.port].clone(),
            iload_fps: f.iload_fps,
            oload_fps: f.oload_fps,
            sent: f.sent,
            lost: f.lost,
            loss_ratio: f.loss_ratio(),
            received: f.received,
            forwarding_fps: f.forwarding_fps,
            intended_rx_fps: f.intended_rx_fps,
            flood: f.flood,
            latency: latency
                .get(f.port)
                .filter(|h| !h.is_empty())
                .map(|h| Latency {
                    min_us: us(h.min_ns()),
                    mean_us: h.mean_ns().unwrap_or(0.0) / 1e3,
                    max_us: us(h.max_ns()),
                }),
        })
        .collect();
    TrialRows {
        load_pct: load * 100.0,
        duration_s: seconds,
        ports,
        totals: t,
        generator_limited: d.streams.iter().any(|s| s.generator_limited),
        receiver_drops: d.rx_drops,
    }
}

/// The pattern's trials as the RFC 2544 search asks for them: each a profile at the asked
/// frames/s per sending port; what the search reads is every delivery over every port.
struct PatternTrial<'a> {
    req: &'a Rfc2889Request,
    flows: &'a [Flow],
    run: StreamsRun,
}

impl Trial for PatternTrial<'_> {
    type Error = Error;

    fn run(&mut self, t: &TrialRequest) -> Result<TrialData, Error> {
        let len = t.frame_len().unwrap_or(64);
        let fps = match t.load {
            method::Load::Rate(Rate::PacketsPerSec(fps), _) => fps,
            _ => return Err(Error::Failed("an RFC 2889 trial is a frame rate".into())),
        };
        let seconds = t.duration().as_secs_f64();
        let p = profile(self.req, self.flows, len, fps, seconds);
        let d = self.run.run(&p)?;
        let (c, _) = counts(self.req, self.flows, &d);
        let figures = rfc::port_figures(self.flows, &c, self.req.ports.len(), fps, seconds);
        let deliveries: u64 = figures.iter().map(|f| f.deliveries).sum();
        let lost: u64 = figures.iter().map(|f| f.lost).sum();
        let senders = figures.iter().filter(|f| f.iload_fps > 0.0).count().max(1);
        let mut data = TrialData {
            offered_pps: figures.iter().map(|f| f.oload_fps).sum::<f64>() / senders as f64,
            duration: t.duration(),
            generator_limited: d.streams.iter().any(|s| s.generator_limited),
            ..TrialData::default()
        };
        data.counters.sent = deliveries;
        data.counters.received = deliveries - lost;
        Ok(data)
    }
}

/// A traffic test: per frame size, learning, the search, the trial at the load.
fn traffic(
    req: &Rfc2889Request,
    pattern: Pattern,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<(Rfc2889Result, Vec<String>, bool), Error> {
    let flows = rfc::flows(pattern, req.ports.len()).map_err(|e| crate::usage(e.to_string()))?;
    let mut out = Rfc2889Result::of(req);
    let mut notes = Vec::new();
    let mut run = streams_run(req, stop);
    let seconds = req.trial.as_secs_f64();
    for &len in &req.sizes {
        if stop.is_raised() {
            return Ok((out, notes, true));
        }
        watch.progress(&format!(
            "{len}-byte frames: learning frames from every port"
        ));
        learn(req, &mut run, len)?;
        let throughput = if req.search && pattern.searchable() {
            watch.progress(&format!(
                "{len}-byte frames: searching the zero-loss load ({} trials of {} s)",
                pattern.name(),
                model::units::secs(seconds)
            ));
            Some(search(req, &flows, len, stop)?)
        } else {
            None
        };
        // §5.6: from the throughput (or 100 % / steps) up to the load in even steps; the
        // other tests: the load alone.
        let loads = match req.test {
            Test::MaxForwardingRate => {
                let max = req.line_rate.max_fps(len);
                let from = throughput
                    .as_ref()
                    .and_then(|t| t.fps)
                    .map_or(req.load / f64::from(req.steps), |f| (f / max).min(req.load));
                steps(from, req.load, req.steps)
            }
            _ => vec![req.load],
        };
        let mut trials = Vec::new();
        let mut last = None;
        for load in loads {
            if stop.is_raised() {
                break;
            }
            let fps = load * req.line_rate.max_fps(len);
            watch.progress(&format!(
                "{len}-byte frames: {} at {} of line rate for {} s",
                pattern.name(),
                model::units::pct(load),
                model::units::secs(seconds)
            ));
            let d = run.run(&profile(req, &flows, len, fps, seconds))?;
            for n in &d.notes {
                if !notes.contains(n) {
                    notes.push(n.clone());
                }
            }
            let (c, latency) = counts(req, &flows, &d);
            let r = rows(req, &flows, (&c, &latency), (load, fps, seconds), &d);
            if d.rx_drops > 0 {
                notes.push(format!(
                    "{len}-byte frames at {:.1} % load: the receiving sockets (this host's and \
                     the servers') dropped {} frames before counting them; that much of the \
                     loss is the tester's",
                    r.load_pct, d.rx_drops
                ));
            }
            trials.push(r);
            last = Some(c);
        }
        if let Some(t) = trials.iter().find(|t| t.generator_limited) {
            let n = format!(
                "{len}-byte frames: the senders fell behind their schedule at {:.1} % load \
                 (offered {} of {} frames/s): forwarding rates there and above are this \
                 host's limit, not the switch's",
                t.load_pct,
                t.totals.oload_fps.round(),
                t.totals.iload_fps.round()
            );
            notes.push(n);
        }
        let (Some(at_load), Some(c)) = (trials.last().cloned(), last) else {
            return Ok((out, notes, true));
        };
        let congestion = (pattern == Pattern::Congestion)
            .then(|| rfc::congestion(&c, req.load))
            .flatten()
            .map(|v| Congestion {
                congested_loss: v.congested_loss,
                overload_share: v.overload_share,
                uncongested_loss: v.uncongested_loss,
                head_of_line_blocking: v.head_of_line_blocking,
                back_pressure: back_pressure(&at_load),
            });
        let (steps, max_forwarding) = if req.test == Test::MaxForwardingRate {
            let best = trials
                .iter()
                .max_by(|a, b| a.totals.forwarding_fps.total_cmp(&b.totals.forwarding_fps))
                .map(|t| (t.totals.forwarding_fps, t.load_pct));
            (trials, best)
        } else {
            (Vec::new(), None)
        };
        out.sizes.push(SizeResult {
            frame_len: len,
            throughput,
            at_load,
            congestion,
            steps,
            max_forwarding,
        });
    }
    Ok((out, notes, stop.is_raised()))
}

/// RFC 2544's binary search over the pattern: the zero-loss load of each sending port.
fn search(
    req: &Rfc2889Request,
    flows: &[Flow],
    len: u64,
    stop: &Stop,
) -> Result<model::results::rfc2544::ThroughputResult, Error> {
    let cfg = SearchConfig {
        line_rate: req.line_rate,
        duration: req.trial,
        final_duration: req.trial,
        width: req.width,
        ..SearchConfig::default()
    };
    let mut trial = PatternTrial {
        req,
        flows,
        run: streams_run(req, stop),
    };
    let mut log = Vec::new();
    rfc2544::throughput(&mut trial, len, Search::Binary, &cfg, &mut log)
}

/// `n` loads evenly from `from` to `to` (fractions of line rate), both included; one load
/// when they meet.
pub(super) fn steps(from: f64, to: f64, n: u32) -> Vec<f64> {
    if n <= 1 || from >= to {
        return vec![to];
    }
    (0..n)
        .map(|k| from + (to - from) * f64::from(k) / f64::from(n - 1))
        .collect()
}

/// Back pressure: a switch that holds its sources back makes them offer less than they
/// intend (802.3x PAUSE, or collisions on half duplex). These ports cannot receive PAUSE
/// (veth, or a port whose counters this host cannot read), so a source that fell short is
/// the tester's own limit, not the switch's doing: it is said, not judged.
fn back_pressure(t: &TrialRows) -> String {
    if t.generator_limited {
        "not judged: a source fell behind its own schedule (the tester's limit)".into()
    } else {
        "not detectable on these ports: no PAUSE is seen and every source offered its load".into()
    }
}

/// How long a size's learning frames take, with the profile's set-up.
pub(super) const LEARNING: Duration = Duration::from_millis(800);
