//! `rrul`: latency under load against a wirebench server. Pings at a steady rate run for
//! the whole test on one connection; after an idle baseline a second connection runs TCP
//! streams each way at once (a bidirectional test); a second idle phase follows. The pure
//! split into idle and loaded pings is [`method::rrul`].

use std::time::Duration;

use control::client::{IntervalSample, Session};
use engine::udp::PacedPings;
use model::clock::{wait_until, Clock, UnixNanos};
use model::results::rrul::RrulResult;
use model::results::{IntervalRow, LatencyKind, LatencyUs, RunResult};
use model::spec::{Direction, Protocol, TestSpec};
use model::stop::Stop;

use crate::request::RrulRequest;
use crate::trials::{base_spec, client_config};
use crate::{usage, Error, Watch};

/// Ping payload bytes (the test header and a little more, as a VoIP packet).
const PING_LEN: usize = 64;
/// How long the pings wait for the last answers after the second idle phase.
const LAST_ANSWERS: Duration = Duration::from_secs(2);
/// What the pings allow for the load's setup and results on top of the phases.
const SETUP_SLACK: Duration = Duration::from_secs(30);
/// The longest load (the pings of every phase are kept in memory).
const MAX_LOAD: Duration = Duration::from_secs(3600);
/// Most pings a result keeps for its plot (every k-th beyond; the figures use them all).
const MAX_STORED_PINGS: usize = 10_000;

/// Sleeps `d`, or less when `stop` is raised.
fn idle(d: Duration, stop: &Stop) {
    let clock = engine::clock::RealClock::new();
    wait_until(&clock, d, stop);
}

/// Runs the test; interval rows of the load go to `watch`.
///
/// # Errors
/// Bad parameters, a server that cannot be reached or refuses, or `stop` raised before the
/// load ended.
pub fn rrul(req: &RrulRequest, watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
    if req.time > MAX_LOAD || req.idle > MAX_LOAD {
        return Err(usage(format!(
            "-t / --idle: at most {} s each",
            MAX_LOAD.as_secs()
        )));
    }
    if !(1.0..=1000.0).contains(&req.ping_hz) {
        return Err(usage(format!(
            "--ping-rate {} Hz: give 1 to 1000 pings per second",
            req.ping_hz
        )));
    }
    let streams = u8::try_from(req.streams)
        .ok()
        .filter(|n| (1..=64).contains(n))
        .ok_or_else(|| usage(format!("--streams {}: give 1 to 64", req.streams)))?;
    let spec = TestSpec {
        duration: req.time,
        streams,
        direction: Direction::Bidir,
        len: TestSpec::DEFAULT_TCP_LEN,
        ..base_spec(Protocol::Tcp)
    };
    spec.check()?;
    let mut cfg = client_config(&req.server)?;
    cfg.stop = Some(stop.clone());
    let server = cfg.server;
    let clock = engine::clock::RealClock::new();
    let connect = |what: &str| {
        Session::connect(&cfg)
            .map_err(|e| Error::from(e).context(format!("cannot start the {what} with {server}")))
    };

    let pinger = connect("pings")?;
    let every = Duration::from_secs_f64(1.0 / req.ping_hz);
    // The pings run until the second idle phase is over (`end`), at most this long.
    let ping_time = req.idle * 2 + req.time + SETUP_SLACK;
    let end = Stop::new();
    let origin = clock.wall();
    let ping_end = end.clone();
    let pings = std::thread::Builder::new()
        .name("rrul-ping".into())
        .spawn(move || pinger.run_paced_echo(PING_LEN, every, ping_time, LAST_ANSWERS, &ping_end))
        .map_err(|e| Error::Failed(format!("cannot start the pings: {e}")))?;
    watch.progress(&format!(
        "idle for {:.1} s, then {streams} TCP streams each way for {:.1} s, then idle again",
        req.idle.as_secs_f64(),
        req.time.as_secs_f64()
    ));

    idle(req.idle, stop);
    let load = connect("load").and_then(|session| {
        let before = clock.wall();
        let mut prev: Option<IntervalSample> = None;
        let outcome = session
            .run_test(&spec, Some(req.interval), |s| {
                for row in control::assemble::interval_rows(&spec, prev.as_ref(), s) {
                    watch.interval(&row);
                }
                prev = Some(s.clone());
            })
            .map_err(|e| {
                Error::from(e).context(format!(
                    "the load against {server} failed (rrul runs two tests at once, the pings and the load: the server must allow both)"
                ))
            })?;
        // The load runs from when its senders were let go until the receivers have read
        // its tail: a queue it filled drains after the senders stop, and pings stuck
        // behind that are not idle ones.
        let from = outcome.started.unwrap_or(before);
        let to = clock.wall().max(from.saturating_add(outcome.ran_for));
        Ok((from, to, outcome))
    });
    if load.is_ok() {
        idle(req.idle, stop);
    }
    // The pings end after the second idle phase, or with the load's failure.
    end.raise();
    let pings = pings
        .join()
        .map_err(|_| Error::Failed("the ping thread failed".into()))?
        .map_err(|e| Error::from(e).context(format!("the pings to {server} failed")));
    let (load_from, load_to, outcome) = load?;
    let pings = pings?;

    let params = serde_json::json!({
        "server": server.to_string(), "streams": streams, "duration_s": req.time.as_secs_f64(),
        "idle_s": req.idle.as_secs_f64(), "ping_hz": req.ping_hz,
        "interval_s": req.interval.as_secs_f64(),
    });
    let mut r = control::assemble::throughput_result(&outcome, "rrul", params);
    r.backend = Some("tcp + udp-ping".into());
    r.timestamp_source = Some(
        if pings.kernel_timestamps {
            "kernel-software"
        } else {
            "user"
        }
        .into(),
    );
    r.rrul = Some(result(
        req,
        streams,
        &r,
        &pings,
        origin,
        (load_from, load_to),
    ));
    if stop.is_raised() {
        r.interrupted = true;
    }
    if let Some(note) = note(r.rrul.as_ref()) {
        r.notes.push(note);
    }
    Ok(r)
}

/// Seconds from `origin` to `t`.
fn secs(origin: UnixNanos, t: UnixNanos) -> f64 {
    (t.0 as f64 - origin.0 as f64) / 1e9
}

fn result(
    req: &RrulRequest,
    streams: u8,
    r: &RunResult,
    pings: &PacedPings,
    origin: UnixNanos,
    load: (UnixNanos, UnixNanos),
) -> RrulResult {
    // Each way: what its receivers got while the load ran, from the interval sums (what
    // still sat in send buffers and queues when the senders stopped arrives later, at the
    // bottleneck's pace, and is not the load's rate; nor is one stream's rate over its own
    // shorter time).
    let rate = |dir: &str| {
        let rows = r
            .intervals
            .iter()
            .filter(|x| x.direction == dir && x.stream.is_none());
        let (bytes, secs) = rows.fold((0u64, 0f64), |(b, t), x| {
            (b + x.received_bytes.unwrap_or(0), t + (x.end_s - x.start_s))
        });
        (secs > 0.0).then(|| bytes as f64 * 8.0 / secs)
    };
    let phases = method::rrul::phases(pings.samples.iter().map(|p| (p.tx, p.rtt_ns)), load);
    let summary = |h: &model::stats::LatencyHistogram| {
        h.summary()
            .map(|s| LatencyUs::from_summary(LatencyKind::RoundTrip, &s))
    };
    let (idle, loaded) = (summary(&phases.idle), summary(&phases.loaded));
    let (added_us, loaded_over_idle) = match (&idle, &loaded) {
        (Some(i), Some(l)) => {
            let (a, ratio) = method::rrul::added(i, l);
            (Some(a), ratio)
        }
        _ => (None, None),
    };
    let load_from_s = secs(origin, load.0);
    // Throughput over time from the sum rows of each direction.
    let sums = |dir: &str| -> Vec<&IntervalRow> {
        r.intervals
            .iter()
            .filter(|x| x.direction == dir && x.stream.is_none())
            .collect()
    };
    let (up, down) = (sums("tx"), sums("rx"));
    let throughput = up
        .iter()
        .zip(&down)
        .map(|(u, d)| {
            (
                load_from_s + u.end_s,
                u.received_bps.or(u.sent_bps).unwrap_or(0.0),
                d.received_bps.or(d.sent_bps).unwrap_or(0.0),
            )
        })
        .collect();
    let rtts: Vec<f64> = r
        .intervals
        .iter()
        .filter(|x| x.stream.is_some() || streams == 1)
        .filter_map(|x| x.tcp.as_ref().map(|t| t.rtt_us as f64))
        .filter(|v| *v > 0.0)
        .collect();
    RrulResult {
        streams: u16::from(streams),
        load_s: req.time.as_secs_f64(),
        idle_s: req.idle.as_secs_f64(),
        ping_hz: req.ping_hz,
        up_bps: rate("tx"),
        down_bps: rate("rx"),
        idle,
        loaded,
        added_us,
        loaded_over_idle,
        tcp_rtt_us: (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64),
        pings_sent: pings.sent,
        pings_lost: pings.sent.saturating_sub(pings.samples.len() as u64),
        load_from_s,
        load_to_s: secs(origin, load.1),
        throughput,
        pings: pings
            .samples
            .iter()
            .step_by(pings.samples.len().div_ceil(MAX_STORED_PINGS).max(1))
            .map(|p| (secs(origin, p.tx), p.rtt_ns as f64 / 1e3))
            .collect(),
        idle_histogram: (!phases.idle.is_empty()).then(|| phases.idle.to_base64()),
        loaded_histogram: (!phases.loaded.is_empty()).then(|| phases.loaded.to_base64()),
    }
}

/// What a reader must know to trust the figures.
fn note(r: Option<&RrulResult>) -> Option<String> {
    let r = r?;
    match (&r.idle, &r.loaded) {
        (None, _) | (_, None) => Some(format!(
            "{} of {} pings were answered: no {} latency to compare",
            r.pings_sent - r.pings_lost,
            r.pings_sent,
            if r.idle.is_none() { "idle" } else { "loaded" }
        )),
        _ if r.pings_lost > 0 => Some(format!(
            "{} of {} pings got no answer (lost, or answered more than {} s after the end)",
            r.pings_lost,
            r.pings_sent,
            LAST_ANSWERS.as_secs()
        )),
        _ => None,
    }
}

#[cfg(test)]
#[path = "rrul_tests.rs"]
mod test;
