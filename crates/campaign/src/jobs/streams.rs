//! Raw frames on the engine's multi-stream path: a multi-stream profile (`streams`) and the
//! shaper accuracy matrix (`shaping`).

use method::shaping::ShapingPlan;
use model::results::RunResult;
use model::stop::Stop;
use wire::linerate::LineRate;

use crate::frames;
use crate::request::{ShapingRequest, StreamsRequest};
use crate::trials::{server_of, RawTrial, ShaperDut, StreamsRun};
use crate::{usage, Error, Watch};

/// Every stream of the profile at once; the expectations become the document's verdicts.
/// It says to `watch` when the streams start.
///
/// # Errors
/// Raw streams without root, a port or interface that cannot be used, a stream that fails.
pub fn streams(
    req: &StreamsRequest,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    let profile = &req.profile;
    // Root for a raw port of this host; a profile whose ends are all servers' ports (or
    // wirebench:// streams) needs none.
    let here = |p: &str| matches!(frames::any_port(p, &req.lab), Ok(frames::Port::Local(_)));
    if profile
        .streams
        .iter()
        .any(|s| server_of(&s.source).is_none() && (here(&s.source) || here(&s.destination)))
    {
        frames::need_root()?;
    }
    let mut run = StreamsRun {
        lab: req.lab.clone(),
        backend: req.backend,
        stop: stop.clone(),
        interval: req.interval,
        agents: req.agents.clone(),
        listen: Vec::new(),
    };
    watch.progress(&format!(
        "running {} stream(s) for {:.1} s ...",
        profile.streams.len(),
        profile.duration
    ));
    let lab_drops = || lab::shaper::drop_counters(&mut lab::SystemRunner, &req.lab);
    let before = (!req.lab.is_empty()).then(lab_drops);
    let mut out = method::streams::run(profile, &mut run)?;
    if let Some(before) = before {
        out.report.drops = Some(drop_account(&out.report, &before, &lab_drops()));
    }
    let params = serde_json::json!({ "profile": req.file, "lab": req.lab,
        "duration_s": profile.duration, "line_rate_bps": profile.line_rate.0 });
    let mut doc = engine::env::result("streams", params);
    doc.backend = Some(out.backend);
    doc.timestamp_source = Some("kernel-software".into());
    doc.verdicts = out.verdicts;
    doc.notes = out.notes;
    doc.profile = Some(out.report);
    doc.intervals = out.intervals;
    Ok(doc)
}

/// The lost frames of `report` by where they were dropped: each of the lab's drop sites
/// (counters `before` and `after` the run; a site that appeared in between counts from
/// zero) and the receivers.
fn drop_account(
    report: &model::results::profile::ProfileReport,
    before: &[(String, u64)],
    after: &[(String, u64)],
) -> model::results::profile::DropAccount {
    use model::results::profile::{DropAccount, DropSite};
    let mut sites: Vec<DropSite> = after
        .iter()
        .map(|(site, n)| {
            let was = before
                .iter()
                .find(|(s, _)| s == site)
                .map_or(0, |(_, b)| *b);
            DropSite {
                site: site.clone(),
                dropped: n.saturating_sub(was),
            }
        })
        .collect();
    sites.push(DropSite {
        site: "receivers (rings and sockets)".into(),
        dropped: report.receiver_drops,
    });
    let lost = report.total_sent.saturating_sub(report.total_received);
    DropAccount::of(lost, sites)
}

/// The shaper accuracy matrix: each bandwidth set on the device, line rate offered at each
/// frame size; each cell goes to `watch`.
///
/// # Errors
/// No root, no device to shape, ports that cannot be used, a rate that cannot be set.
pub fn shaping(a: &ShapingRequest, watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
    let lab = &a.frame.lab;
    let tx = frames::any_port(&a.tx, lab)?;
    let rx = frames::any_port(&a.rx, lab)?;
    if [&tx, &rx]
        .iter()
        .any(|p| matches!(p, frames::Port::Local(_)))
        || a.dut_cmd.is_none()
    {
        frames::need_root()?;
    }
    let dut_ns = lab::naming::namespace(lab, "dut");
    if a.dut_cmd.is_none() && !std::path::Path::new(&format!("/run/netns/{dut_ns}")).exists() {
        return Err(usage(format!(
            "lab '{lab}' has no dut to shape: build a shaper lab (`wirebench lab up shaper --shape ...`) or give --dut-cmd"
        )));
    }
    let line = LineRate(a.frame.line_rate as u64);
    let plan = ShapingPlan::new(a.sizes.clone(), a.bandwidths.clone(), a.duration, line)?;
    let max_len = a.sizes.iter().copied().max().unwrap_or(64);
    // Ports here or servers' (HOST/IFACE): the trial runs in halves through a server.
    let (mut trial, spec) = RawTrial::open_ports(
        &a.frame,
        (&tx, &rx),
        &a.agents,
        false,
        max_len,
        stop.clone(),
    )?;
    frames::check_sizes(&spec, &a.sizes)?;
    let mut dut = match &a.dut_cmd {
        Some(t) => ShaperDut::Command(t.clone()),
        None => ShaperDut::lab(lab)?,
    };
    let cells = a.sizes.len() * a.bandwidths.len();
    let mut done = 0;
    let out = plan.run(&mut trial, &mut dut, |c| {
        let drained = c
            .drain_s
            .filter(|d| *d > 0.0)
            .map(|d| format!(" (queue of the cell before emptied in {d:.2} s)"))
            .unwrap_or_default();
        done += 1;
        watch.progress(&format!(
            "[{done}/{cells}] {} at {} bytes: {:.2} % of offered, {:.2} % of the bandwidth passed{drained}",
            model::units::bps(c.bandwidth_bps),
            c.frame_len,
            c.passed_of_offered.unwrap_or(0.0) * 100.0,
            c.passed_ratio * 100.0
        ))
    })?;
    let params = serde_json::json!({ "tx": a.tx, "rx": a.rx, "sizes": a.sizes, "bandwidths_bps": a.bandwidths,
        "duration_s": a.duration.as_secs_f64(), "line_rate_bps": line.0, "dut_cmd": a.dut_cmd });
    let mut doc = engine::env::result("shaping", params);
    doc.backend = Some(trial.backend());
    doc.notes = out.notes;
    doc.shaping = Some(out.report);
    Ok(doc)
}
