//! RFC 2544 per frame size, over two raw ports of this host or as UDP through a wirebench
//! server, with the latency limits as verdicts.

use std::time::Duration;

use method::rfc2544 as m;
use method::Trial;
use model::results::rfc2544::Rfc2544Report;
use model::results::{RunResult, Verdict};
use model::spec::Protocol;
use model::stats::LatencyHistogram;
use model::stop::Stop;

use crate::frames;
use crate::request::{Rfc2544Path, Rfc2544Request, Rfc2544Test};
use crate::trials::client_config;
use crate::trials::{base_spec, RawTrial, ServerTrial, TestServer, UDP_FRAME_OVERHEAD};
use crate::{usage, Error, Watch};

/// A trial runner that says each trial as it ends: its number of the rehearsed count, the
/// load and what it lost (a progress line per trial).
struct Narrated<'w, T> {
    inner: &'w mut T,
    watch: &'w mut dyn Watch,
    done: u32,
    about: u32,
    /// Loss a load may have and still pass.
    tolerated: f64,
    /// Per frame size: the highest load that passed and the lowest that did not, so far.
    bounds: std::collections::BTreeMap<u64, (Option<f64>, Option<f64>)>,
}

impl<T: Trial<Error = Error>> Trial for Narrated<'_, T> {
    type Error = Error;

    fn run(&mut self, req: &method::TrialRequest) -> Result<method::TrialData, Error> {
        let d = self.inner.run(req)?;
        self.done += 1;
        let len = req
            .frame_len()
            .map_or_else(String::new, |l| format!("{l} B "));
        let fps = |rate: model::spec::Rate| rate.packets_per_sec(1).unwrap_or(d.offered_pps);
        let load = match req.load {
            method::Load::Rate(rate, time) => format!(
                "{len}at {:.0} frames/s for {} s",
                fps(rate),
                model::units::secs(time.as_secs_f64())
            ),
            method::Load::Burst(n) => format!("{len}burst of {n} frames"),
        };
        let c = &d.counters;
        // The bounds so far: of the loads of this size, the highest that lost no more than
        // the goal and the lowest that lost more.
        let mut bounds = String::new();
        if let (method::Load::Rate(rate, _), Some(len)) = (req.load, req.frame_len()) {
            let fps = fps(rate);
            let b = self.bounds.entry(len).or_default();
            if d.loss_ratio() <= self.tolerated {
                b.0 = Some(b.0.map_or(fps, |x| x.max(fps)));
            } else {
                b.1 = Some(b.1.map_or(fps, |x| x.min(fps)));
            }
            let words: Vec<String> = [("passed up to", b.0), ("lost from", b.1)]
                .into_iter()
                .filter_map(|(w, v)| Some(format!("{w} {:.0}", v?)))
                .collect();
            bounds = format!("; so far {} frames/s", words.join(", "));
        }
        // The count of trials is the rehearsal's; a search may take more or fewer.
        let total = self.about.max(self.done);
        self.watch.progress(&format!(
            "[{}/{total}] trial {load}: lost {} of {} ({}){bounds}",
            self.done,
            c.sent.saturating_sub(c.received),
            c.sent,
            model::units::pct(d.loss_ratio())
        ));
        Ok(d)
    }
}

/// Runs the asked benchmarks per frame size over `trial`, saying each trial to `watch`.
fn benchmarks<T: Trial<Error = Error>>(
    trial: &mut T,
    a: &Rfc2544Request,
    watch: &mut dyn Watch,
) -> Result<Rfc2544Report, Error> {
    let about = rehearse(a, Duration::ZERO).1;
    let mut narrated = Narrated {
        inner: trial,
        watch,
        done: 0,
        about,
        tolerated: a.config.loss_ratio,
        bounds: Default::default(),
    };
    search(&mut narrated, a)
}

/// The benchmarks of `a` over `trial`, per frame size.
fn search<T: Trial<Error = Error>>(
    trial: &mut T,
    a: &Rfc2544Request,
) -> Result<Rfc2544Report, Error> {
    let cfg = &a.config;
    let line = cfg.line_rate;
    let mut rep = Rfc2544Report {
        line_rate_bps: line.0,
        ..Default::default()
    };
    for &len in &a.sizes {
        let mut tput = None;
        for t in &a.tests {
            match t {
                Rfc2544Test::Throughput => {
                    let r = m::throughput(trial, len, a.search, cfg, &mut rep.trials)?;
                    tput = r.fps;
                    rep.throughput.push(r);
                }
                // §26.2: at the throughput rate; without a throughput figure there is no
                // rate to measure at.
                Rfc2544Test::Latency => {
                    let Some(fps) = tput else { continue };
                    let trials = a.latency_trials;
                    let r =
                        m::latency(trial, len, fps, trials, cfg.final_duration, &mut rep.trials)?;
                    rep.latency.push(r);
                }
                Rfc2544Test::Loss => {
                    let step = a.loss_step;
                    let rows =
                        m::frame_loss_rate(trial, len, line, step, cfg.duration, &mut rep.trials)?;
                    rep.loss.extend(rows);
                }
                Rfc2544Test::B2b => {
                    let max = a
                        .b2b_max_burst
                        .unwrap_or_else(|| (line.max_fps(len) * 2.0).ceil() as u64);
                    let trials = a.b2b_trials;
                    let r = m::back_to_back(trial, len, line, tput, max, trials, &mut rep.trials)?;
                    rep.b2b.push(r);
                }
            }
        }
    }
    Ok(rep)
}

/// How long `a` will take: its benchmarks rehearsed on a device that forwards half the
/// line rate and bursts of half the longest, each trial with `setup`.
pub(crate) fn estimate(a: &Rfc2544Request, setup: Duration) -> Duration {
    rehearse(a, setup).0
}

/// `a` rehearsed (see [`estimate`]): its time and its number of trials.
fn rehearse(a: &Rfc2544Request, setup: Duration) -> (Duration, u32) {
    let line = a.config.line_rate;
    let longest = a.b2b_max_burst.unwrap_or_else(|| {
        let smallest = a.sizes.iter().copied().min().unwrap_or(64);
        (line.max_fps(smallest) * 2.0).ceil() as u64
    });
    let mut r = method::rehearsal::Rehearsal::<Error>::new(line, 0.5, longest / 2, setup);
    let _ = search(&mut r, a);
    (r.time, r.trials)
}

/// The latency limits as verdicts, one per limit and frame size.
fn latency_verdicts(
    rep: &Rfc2544Report,
    limits: &[(f64, f64)],
    band: Option<crate::limits::Band>,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    for l in &rep.latency {
        let Some(s) = &l.summary else { continue };
        let h = l
            .histogram
            .as_deref()
            .and_then(|b| LatencyHistogram::from_base64(b).ok());
        let value = |q: f64| match q {
            q if q < 0.0 => Some(s.avg_us),
            q if q >= 100.0 => Some(s.max_us),
            q if q <= 0.0 => Some(s.min_us),
            q => h.as_ref().and_then(|h| h.percentile_us(q)),
        };
        let at = format!("{} bytes", l.frame_len);
        out.extend(crate::limits::latency_limits(&at, limits, band, value));
    }
    out
}

/// RFC 2544 throughput, latency, frame loss rate and back-to-back, as asked; progress goes
/// to `watch`, the latency limits become the document's verdicts.
///
/// # Errors
/// A combination that cannot run (latency without throughput, bursts through a socket),
/// ports or a server that cannot be used, a trial that fails.
pub fn rfc2544(a: &Rfc2544Request, watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
    if a.tests.contains(&Rfc2544Test::Latency) && !a.tests.contains(&Rfc2544Test::Throughput) {
        return Err(usage(
            "the latency test runs at the throughput rate: include throughput in --tests",
        ));
    }
    let over_udp = matches!(a.path, Rfc2544Path::Server(_));
    if over_udp && a.tests.contains(&Rfc2544Test::B2b) {
        return Err(usage(
            "back-to-back bursts need raw ports (--tx/--rx): a socket cannot send at line rate; drop b2b from --tests",
        ));
    }
    let (mut absent, mut reflected, mut reflector_lost) = (None, None, None);
    let (rep, backend, endpoints) = match &a.path {
        Rfc2544Path::Server(server) => {
            let mut cfg = client_config(server)?;
            cfg.stop = Some(stop.clone());
            return over_server(a, cfg, watch);
        }
        Rfc2544Path::Ports {
            tx,
            rx,
            agents,
            reflect,
        } => {
            let tx_port = frames::any_port(tx, &a.frame.lab)?;
            let rx_port = frames::any_port(rx, &a.frame.lab)?;
            if [&tx_port, &rx_port]
                .iter()
                .any(|p| matches!(p, frames::Port::Local(_)))
            {
                frames::need_root()?;
            }
            let max_len = a.sizes.iter().copied().max().unwrap_or(64);
            let ports = (&tx_port, &rx_port);
            let (mut trial, spec) =
                RawTrial::open_ports(&a.frame, ports, agents, *reflect, max_len, stop.clone())?;
            if let Some(far) = trial.reflected_at() {
                reflected = Some(far.to_owned());
            }
            frames::check_sizes(&spec, &a.sizes)?;
            let rep = benchmarks(&mut trial, a, watch)?;
            if let (Some(far), n @ 1..) = (trial.reflected_at(), trial.reflector_lost()) {
                reflector_lost = Some(format!(
                    "the reflector at {far} lost {n} frames itself (its receive buffer or its sender): trials with loss may describe the reflector, not the path"
                ));
            }
            if let Some(why) = trial.latency_absent() {
                absent = Some(why.to_owned());
            }
            (
                rep,
                trial.backend(),
                serde_json::json!({ "tx": tx, "rx": rx }),
            )
        }
    };
    let notes = [absent, reflector_lost, reflected.map(|far| format!(
        "frames turned around at {far} and counted back at the sending port: latency is round-trip (both ways through the path, on one clock)"
    ))];
    Ok(document(
        a,
        rep,
        backend,
        endpoints,
        notes.into_iter().flatten().collect(),
    ))
}

/// The benchmarks of `a` as UDP through the wirebench server `server` reaches (its
/// session, or a fake in tests), and their document.
fn over_server<S: TestServer>(
    a: &Rfc2544Request,
    server: S,
    watch: &mut dyn Watch,
) -> Result<RunResult, Error> {
    let addr = server.server().to_string();
    let mut trial = ServerTrial {
        cfg: server,
        base: base_spec(Protocol::Udp),
    };
    let rep = benchmarks(&mut trial, a, watch)?;
    let backend = "udp (frames as UDP datagrams through the host's stack)".to_owned();
    let endpoints = serde_json::json!({ "server": addr });
    Ok(document(a, rep, backend, endpoints, Vec::new()))
}

/// The document of report `rep`: the request's parameters, what the figures mean (the
/// path's own `path_notes` after the general ones), the latency limits as verdicts.
fn document(
    a: &Rfc2544Request,
    rep: Rfc2544Report,
    backend: String,
    endpoints: serde_json::Value,
    path_notes: Vec<String>,
) -> RunResult {
    let over_udp = matches!(a.path, Rfc2544Path::Server(_));
    let cfg = &a.config;
    let tests: Vec<String> = a
        .tests
        .iter()
        .map(|t| format!("{t:?}").to_lowercase())
        .collect();
    let mut params = serde_json::json!({
        "sizes": a.sizes, "tests": tests,
        "trial_duration_s": cfg.duration.as_secs_f64(), "preceding_targets": cfg.preceding,
        "verify_duration_s": cfg.verify.then_some(cfg.final_duration.as_secs_f64()),
        "max_search_time_s": cfg.search_time().as_secs_f64(), "exceed_ratio": cfg.exceed_ratio,
        "loss_tolerance_ratio": cfg.loss_ratio, "search": a.search, "width_ratio": cfg.width,
        "line_rate_bps": cfg.line_rate.0, "latency_trials": a.latency_trials, "b2b_trials": a.b2b_trials,
        "protocol": format!("{:?}", a.frame.proto).to_lowercase(),
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), endpoints.as_object()) {
        p.extend(e.clone());
    }
    let mut doc = engine::env::result("rfc2544", params);
    doc.backend = Some(backend);
    doc.timestamp_source = Some("kernel-software".into());
    if over_udp {
        doc.notes.push(format!(
            "over UDP: a frame of L bytes is a datagram of L - {UDP_FRAME_OVERHEAD} bytes; the path's own framing (loopback, tunnels) may differ, so % of line rate is nominal"
        ));
    }
    if cfg.duration < Duration::from_secs(60) {
        doc.notes.push(format!(
            "trials of {} s: RFC 2544 §24 asks for 60 s full-length trials; results are indicative",
            model::units::secs(cfg.duration.as_secs_f64())
        ));
    }
    doc.notes.extend(path_notes);
    if a.search == m::Search::Mlr && rep.throughput.iter().any(|t| t.fps.is_some()) {
        doc.notes.push("throughput is RFC 9971's conditional throughput: the forwarding rate at the relevant lower bound (both bounds in the table)".into());
    }
    if cfg.loss_ratio > 0.0 {
        doc.notes.push(format!(
            "loss-tolerant throughput at {} % loss: not RFC 2544 (zero-loss) throughput",
            cfg.loss_ratio * 100.0
        ));
    }
    if rep.throughput.iter().any(|t| t.generator_cap_fps.is_some()) {
        doc.notes.push("the generator could not reach line rate at some sizes: the search was capped at what it offered (marked in the table)".into());
    }
    doc.verdicts = latency_verdicts(&rep, &a.latency_limits, a.marginal_band);
    doc.rfc2544 = Some(rep);
    doc
}

#[cfg(test)]
#[path = "rfc2544_tests.rs"]
mod test;
