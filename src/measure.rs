//! The commands that measure once and print one result document: the tests a plan can
//! hold (`client`, `sweep`, `blocksize`, `latency`, `rrul`, `mesh`, `rfc2544`, `streams`,
//! `shaping`, `frer compare`, `nicmatrix`), and `gen`, `frer analyze` and `frer stats`. The campaign's jobs do the
//! work; this prints what they return.

use anyhow::Result;
use campaign::jobs;
use campaign::methods::{OnSignal, TestRequest};
use campaign::request::ClientRequest;

use crate::output::{
    never, outln, print, print_as, stop_on_signals, stop_on_signals_twice_exits, verdicts,
    EventStream, Interrupted, Layout, Printer,
};

/// Runs a test and prints its document in `layout`; exit code 3 when one of its verdicts
/// failed.
pub fn test(req: &TestRequest, layout: Layout, unit: Option<model::units::Fixed>) -> Result<()> {
    let json = layout.json();
    let method = req.method();
    if req.repeat() > 1 && matches!(layout, Layout::Iperf3Json | Layout::Iperf3Stream) {
        return Err(campaign::Error::Usage(
            "--repeat writes wirebench's own JSON (every run, each figure's spread), which iperf3's format has no place for: leave out --json-format iperf3 / --json-stream".into(),
        )
        .into());
    }
    let client = req.get::<ClientRequest>();
    // The FRER comparison says which group it builds even with -J (on stderr).
    let mut watch = Printer {
        quiet: json && method.kind() != "frer-compare",
        events: None,
        unit,
        labels: client
            .map(|c| report::text::RowLabels::of(c.spec.streams, c.spec.direction))
            .unwrap_or_default(),
        bar: None,
    };
    if let Some(c) = client {
        let addr = campaign::trials::client_config_with(&c.server, &c.connect)?.server;
        let spec = &c.spec;
        if layout == Layout::Iperf3Stream {
            let params = serde_json::json!({ "server": addr.to_string(), "test": spec });
            let test = engine::env::result("client", params);
            outln!(
                "{}",
                report::iperf3::event("start", report::iperf3::start(&test))
            );
            watch.events = Some(EventStream {
                test,
                rows: Vec::new(),
            });
        } else if !json {
            // A test of bytes (-n, -k) says how many, and the time only as its bound.
            let show = report::text::Show(unit);
            let length = match spec.bytes_per_stream {
                Some(b) => format!(
                    "{} per stream (at most {} s)",
                    show.amount(b),
                    spec.duration.as_secs_f64()
                ),
                None => format!("{} s", spec.duration.as_secs_f64()),
            };
            let rate = match spec.rate.bits_per_sec(spec.len) {
                Some(b) => format!("{} per stream", show.rate(b)),
                None => "unlimited rate".into(),
            };
            let streams = model::units::counted(spec.streams.into(), "stream");
            let each_way = if spec.direction == model::spec::Direction::Bidir {
                " each way"
            } else {
                ""
            };
            outln!(
                "wirebench {} test to {addr}: {streams}{each_way}, {rate}, {length}",
                spec.protocol.as_str().to_uppercase(),
            );
        }
    }
    // Ctrl-C stops these so that they remove their labs / put the shaper's rate and the
    // interfaces' settings back; a client test ends early with the figures so far.
    let stop = match method.on_signal() {
        OnSignal::Stop => stop_on_signals()?,
        OnSignal::StopTwiceExits => stop_on_signals_twice_exits()?,
        OnSignal::Ignore => never(),
    };
    let r = campaign::methods::run(req, &mut watch, &stop);
    // The progress bar goes before the result prints.
    if let Some(b) = watch.bar.take() {
        b.finish_and_clear();
    }
    let r = r?;
    // Interval rows came before: a blank line between them and the summary.
    if matches!(method.kind(), "client" | "rrul") && !json {
        outln!();
    }
    print_as(&r, layout, |r| {
        let mut text = method.text(req, r, unit);
        text.extend(report::tables::repeats::text(r));
        text
    });
    if stop.is_raised() {
        // What finished is printed above; the exit status says it is not all.
        return Err(Interrupted.into());
    }
    match method.failed_verdict() {
        Some(what) => verdicts(&r, what),
        None => Ok(()),
    }
}

/// `gen`.
pub fn gen(a: &crate::cli::GenArgs) -> Result<()> {
    let r = jobs::gen(&crate::requests::gen(a), &never())?;
    print(&r, a.json, report::text::gen);
    Ok(())
}

/// `frer analyze`: Ctrl-C ends the capture early; what it caught is analysed.
pub fn analyze(a: &crate::cli::FrerAnalyzeArgs) -> Result<()> {
    let stop = stop_on_signals()?;
    let mut watch = Printer {
        quiet: false,
        events: None,
        unit: None,
        labels: Default::default(),
        bar: None,
    };
    let r = jobs::analyze(&crate::requests::analyze(a), &mut watch, &stop)?;
    print(&r, a.json, report::text::frer_analysis);
    Ok(())
}

/// `frer stats`.
pub fn stats(a: &crate::cli::FrerStatsArgs) -> Result<()> {
    let r = jobs::relays(a.lab.as_deref(), a.state.as_deref())?;
    print(&r, a.json, report::text::relays);
    Ok(())
}
