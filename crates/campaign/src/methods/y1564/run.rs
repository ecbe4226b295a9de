//! A `y1564` run: each configuration step and the performance test as a multi-stream
//! profile over the services' ports (`jobs::streams`), their rows turned into Y.1564's
//! figures and judged by `method::y1564`.

use std::time::Duration;

use method::streams::{Profile, StreamSpec};
use method::y1564::services::Service;
use method::y1564::{self as y, Measured, Step, StepKind};
use model::results::profile::StreamRow;
use model::results::{RunResult, Verdict};
use model::stop::Stop;
use model::units::{bps, FrameRate};

use super::request::Y1564Request;
use super::result::{
    Criteria, Delay, Performance, PerformanceRow, ServiceConfiguration, StepResult, Y1564Result,
    PART,
};
use crate::request::StreamsRequest;
use crate::{Error, Quiet, Watch};

/// Runs `req`.
pub(super) fn run(
    req: &Y1564Request,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    let mut out = Y1564Result {
        configuration: Vec::new(),
        performance: None,
    };
    let mut notes: Vec<String> = Vec::new();
    let mut verdicts: Vec<Verdict> = Vec::new();
    let mut intervals = Vec::new();
    let mut interrupted = false;
    if req.configuration {
        'services: for svc in &req.list.services {
            let steps = y::configuration_steps(&svc.profile, &req.percents, req.overshoot);
            let mut rows = Vec::new();
            for (i, step) in steps.iter().enumerate() {
                if stop.is_raised() {
                    interrupted = true;
                    break 'services;
                }
                watch.progress(&format!(
                    "{}: configuration step {} of {}: {} at {}",
                    svc.name(),
                    i + 1,
                    steps.len(),
                    step_label(step),
                    bps(step.offered_bps())
                ));
                let profile = step_profile(req, svc, step);
                let r = streams(req, profile, false, stop)?;
                keep_notes(&mut notes, &r);
                let row = step_result(svc, step, &r);
                verdicts.push(verdict(
                    format!("{} {}", svc.name(), step_label(step)),
                    &row.missed,
                ));
                rows.push(row);
                interrupted |= r.interrupted;
            }
            out.configuration.push(ServiceConfiguration {
                service: svc.name().to_owned(),
                frame: svc.flow.frame_label.clone(),
                profile: svc.profile,
                sac: Criteria::from(&svc.sac),
                steps: rows,
            });
        }
    }
    if req.performance && !interrupted && !stop.is_raised() {
        watch.progress(&format!(
            "performance test: {} service(s) at their CIR for {} s",
            req.list.services.len(),
            model::units::secs(req.duration.as_secs_f64())
        ));
        let mut profile = Profile {
            streams: Vec::new(),
            line_rate: req.list.line_rate,
            lab: None,
            duration: req.duration.as_secs_f64(),
        };
        for svc in &req.list.services {
            profile.streams.push(stream(
                &svc.flow,
                svc.name(),
                svc.profile.cir_bps,
                None,
                req.duration,
            ));
        }
        let r = streams(req, profile, true, stop)?;
        keep_notes(&mut notes, &r);
        interrupted |= r.interrupted;
        let p = performance_of(req, &r);
        for row in &p.services {
            verdicts.push(verdict(format!("{} performance", row.service), &row.missed));
        }
        out.performance = Some(p);
        intervals = r.intervals;
    }
    let params = serde_json::json!({
        "services": req.file,
        "lab": req.lab,
        "configuration": req.configuration,
        "performance": req.performance,
        "step_s": req.step_time.as_secs_f64(),
        "steps_pct": req.percents,
        "overshoot": req.overshoot,
        "duration_s": req.duration.as_secs_f64(),
        "availability": { "flr_threshold": req.availability.flr_threshold,
                          "window_s": req.availability.window },
    });
    let mut doc = engine::env::result("y1564", params);
    doc.timestamp_source = Some("kernel-software".into());
    doc.intervals = intervals;
    doc.verdicts = verdicts;
    doc.notes = notes;
    doc.interrupted = interrupted;
    doc.set_part(PART, &out)
        .map_err(|e| Error::Failed(e.to_string()))?;
    Ok(doc)
}

/// A step's name: `25 % CIR`, `CIR + EIR`, `policing`.
pub(super) fn step_label(s: &Step) -> String {
    match s.kind {
        StepKind::Cir { percent } => format!("{} CIR", model::units::pct(percent / 100.0)),
        StepKind::CirEir => "CIR + EIR".into(),
        StepKind::Policing => "policing".into(),
    }
}

/// The document's verdict `name`: passed when nothing was `missed`, which its detail
/// lists.
fn verdict(name: String, missed: &[String]) -> Verdict {
    Verdict {
        name,
        passed: missed.is_empty(),
        detail: if missed.is_empty() {
            "every criterion met".into()
        } else {
            missed.join("; ")
        },
        marginal: false,
    }
}

/// A note of a run once, however many steps said it.
fn keep_notes(notes: &mut Vec<String>, r: &RunResult) {
    for n in &r.notes {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
}

/// `flow` as a stream named `name` at `rate` L2 bit/s for `time`, marked as `marking`
/// (DSCP, PCP) when given.
fn stream(
    flow: &StreamSpec,
    name: &str,
    rate: f64,
    marking: Option<(u8, u8)>,
    time: Duration,
) -> StreamSpec {
    let mut s = flow.clone();
    s.name = name.to_owned();
    s.load = FrameRate::L2Bps(rate);
    s.start = 0.0;
    s.stop = time.as_secs_f64();
    s.expect_bps = None;
    if let Some((dscp, pcp)) = marking {
        s.dscp = dscp;
        s.pcp = pcp;
    }
    s
}

/// One configuration step of `svc` as a profile: its green frames, and its yellow ones
/// marked as the service says when the step offers any.
fn step_profile(req: &Y1564Request, svc: &Service, step: &Step) -> Profile {
    let time = req.step_time;
    let mut streams = vec![stream(&svc.flow, svc.name(), step.green_bps, None, time)];
    if step.yellow_bps > 0.0 {
        let yellow = format!("{} yellow", svc.name());
        let marking = (svc.yellow.dscp, svc.yellow.pcp);
        streams.push(stream(
            &svc.flow,
            &yellow,
            step.yellow_bps,
            Some(marking),
            time,
        ));
    }
    Profile {
        streams,
        line_rate: req.list.line_rate,
        lab: None,
        duration: time.as_secs_f64(),
    }
}

/// Runs a profile over the services' ports (interval rows every second when `seconds`).
fn streams(
    req: &Y1564Request,
    profile: Profile,
    seconds: bool,
    stop: &Stop,
) -> Result<RunResult, Error> {
    let sreq = StreamsRequest {
        file: req.file.clone(),
        profile,
        lab: req.lab.clone(),
        backend: req.backend,
        interval: seconds.then_some(Duration::from_secs(1)),
        agents: req.agents.clone(),
    };
    crate::jobs::streams(&sreq, &mut Quiet, stop)
}

/// A stream row's delay figures, when its ends share a clock.
fn delay(row: &StreamRow) -> Option<Delay> {
    let l = row.latency.as_ref().filter(|l| l.count > 0)?;
    Some(Delay {
        min_us: l.min_us,
        mean_us: l.avg_us,
        max_us: l.max_us,
        fdv_us: (l.p99_us - l.min_us).max(0.0),
    })
}

/// What a verdict judges; without delay figures (ends that share no clock, between which
/// one-way delay cannot be measured) the verdict says FTD and FDV were not measured.
fn measured(ir: f64, green_ir: f64, flr: f64, d: Option<&Delay>) -> Measured {
    let us = |v: f64| Duration::from_secs_f64(v.max(0.0) / 1e6);
    Measured {
        ir_bps: ir,
        green_ir_bps: green_ir,
        green_flr: flr,
        ftd_mean: d.map(|d| us(d.mean_us)),
        fdv: d.map(|d| us(d.fdv_us)),
    }
}

/// One step's figures and verdict from its run.
pub(super) fn step_result(svc: &Service, step: &Step, r: &RunResult) -> StepResult {
    let rows = r.profile.as_ref().map_or(&[][..], |p| p.rows.as_slice());
    let green = rows.first();
    let ir: f64 = rows.iter().map(|x| x.received_l2_bps).sum();
    let green_ir = green.map_or(0.0, |g| g.received_l2_bps);
    let green_flr = green.map_or(1.0, |g| g.loss_ratio);
    let d = green.and_then(delay);
    let m = measured(ir, green_ir, green_flr, d.as_ref());
    let v = y::verdict(step, &svc.profile, &svc.sac, &m);
    StepResult {
        step: *step,
        ir_bps: ir,
        green_ir_bps: green_ir,
        sent: rows.iter().map(|x| x.sent).sum(),
        lost: rows.iter().map(|x| x.lost).sum(),
        green_flr,
        delay: d,
        generator_limited: rows.iter().any(|x| x.generator_limited),
        pass: v.pass(),
        missed: v.missed,
    }
}

/// The performance test's rows: per service its figures over the test, its IR and FLR
/// per second (the interval rows of its stream), availability over those seconds.
pub(super) fn performance_of(req: &Y1564Request, r: &RunResult) -> Performance {
    let rows = r.profile.as_ref().map_or(&[][..], |p| p.rows.as_slice());
    let mut services = Vec::new();
    for (i, svc) in req.list.services.iter().enumerate() {
        let Some(row) = rows.get(i) else { continue };
        let id = u8::try_from(i + 1).ok();
        // Each second of this stream: its FLR and its IR (frames x the mean frame).
        let seconds: Vec<(f64, f64)> = r
            .intervals
            .iter()
            .filter(|x| x.stream.is_some() && x.stream == id)
            .filter_map(|x| {
                let sent = x.sent_packets?;
                let lost = x.lost_packets.unwrap_or(0);
                let got = x.received_packets.unwrap_or(0);
                let span = x.end_s - x.start_s;
                let flr = if sent > 0 {
                    lost as f64 / sent as f64
                } else {
                    0.0
                };
                let ir = (span > 0.0).then(|| got as f64 * row.mean_frame_len * 8.0 / span)?;
                Some((flr, ir))
            })
            .collect();
        let flrs: Vec<f64> = seconds.iter().map(|s| s.0).collect();
        let availability = y::availability_percent(&flrs, &req.availability);
        let ir_range = seconds
            .iter()
            .map(|s| s.1)
            .fold(None, |acc: Option<(f64, f64)>, v| {
                Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
            });
        let d = delay(row);
        let m = measured(
            row.received_l2_bps,
            row.received_l2_bps,
            row.loss_ratio,
            d.as_ref(),
        );
        let v = y::performance_verdict(&svc.profile, &svc.sac, &m, availability);
        services.push(PerformanceRow {
            service: svc.name().to_owned(),
            cir_bps: svc.profile.cir_bps,
            ir_bps: row.received_l2_bps,
            ir_range_bps: ir_range,
            sent: row.sent,
            lost: row.lost,
            flr: row.loss_ratio,
            delay: d,
            availability_pct: availability,
            seconds: seconds.len(),
            sac: Criteria::from(&svc.sac),
            pass: v.pass(),
            missed: v.missed,
        });
    }
    Performance {
        duration_s: req.duration.as_secs_f64(),
        services,
    }
}
