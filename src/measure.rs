//! The commands that measure once and print one result document: the tests a plan can
//! hold (`client`, `sweep`, `blocksize`, `latency`, `rrul`, `mesh`, `rfc2544`, `streams`,
//! `shaping`, `frer compare`, `nicmatrix`), and `gen`, `frer analyze` and `frer stats`. The campaign's jobs do the
//! work; this prints what they return.

use anyhow::Result;
use campaign::jobs;
use campaign::request::TestRequest;
use model::results::RunResult;

use crate::output::{
    never, outln, print, print_as, stop_on_signals, stop_on_signals_twice_exits, verdicts,
    EventStream, Interrupted, Layout, Printer,
};

/// The text layout of a test's document; a client's rates in `unit` when given (`-f`).
fn text(req: &TestRequest, r: &RunResult, unit: Option<model::units::Fixed>) -> String {
    use report::text;
    let with_facts = |table: Option<String>| table.unwrap_or_default() + &text::facts(r);
    match req {
        TestRequest::Client(_) => text::client_summary_in(r, unit),
        TestRequest::Sweep(_) => with_facts(r.sweep.as_ref().map(text::sweep)),
        TestRequest::Blocksize(b) => {
            let rows = r.blocksize.as_deref().unwrap_or_default();
            text::blocksize_in(rows, b.netio) + &text::interfaces(r)
        }
        TestRequest::NicMatrix(_) => {
            let m = r.nic_matrix.as_ref().map(text::nic_matrix);
            m.unwrap_or_default() + &text::interfaces(r) + &text::facts(r)
        }
        TestRequest::Latency(_) => {
            text::intervals(r)
                + &with_facts(r.latency.as_deref().map(text::latency))
                + &text::verdicts(r)
        }
        TestRequest::Rrul(_) => text::rrul(r),
        TestRequest::Rfc2544(_) => text::rfc2544(r),
        TestRequest::Streams(_) => text::profile(r),
        TestRequest::Shaping(_) => text::shaping(r),
        TestRequest::FrerCompare(_) => text::frer_overhead(r),
        TestRequest::Mesh(_) => text::mesh(r),
    }
}

/// Runs a test and prints its document in `layout`; exit code 3 when one of its verdicts
/// failed.
pub fn test(req: &TestRequest, layout: Layout, unit: Option<model::units::Fixed>) -> Result<()> {
    let json = layout.json();
    // The FRER comparison says which group it builds even with -J (on stderr).
    let mut watch = Printer {
        quiet: json && !matches!(req, TestRequest::FrerCompare(_)),
        events: None,
        unit,
    };
    if let TestRequest::Client(c) = req {
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
            let rate = match spec.rate.bits_per_sec(spec.len) {
                Some(b) => format!("{} per stream", model::units::bps(b)),
                None => "unlimited rate".into(),
            };
            outln!(
                "wirebench {} test to {addr}: {} stream(s), {rate}, {} s",
                spec.protocol.as_str().to_uppercase(),
                spec.streams,
                spec.duration.as_secs_f64()
            );
        }
    }
    // Ctrl-C stops these so that they remove their labs / put the shaper's rate and the
    // interfaces' settings back; a client test ends early with the figures so far.
    let stop = match req {
        TestRequest::FrerCompare(_) | TestRequest::Shaping(_) | TestRequest::NicMatrix(_) => {
            stop_on_signals()?
        }
        TestRequest::Client(_)
        | TestRequest::Rrul(_)
        | TestRequest::Mesh(_)
        | TestRequest::Streams(_) => stop_on_signals_twice_exits()?,
        _ => never(),
    };
    let r = jobs::run(req, &mut watch, &stop)?;
    if matches!(req, TestRequest::Client(_) | TestRequest::Rrul(_)) && !json {
        outln!();
    }
    print_as(&r, layout, |r| text(req, r, unit));
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        // What finished is printed above; the exit status says it is not all.
        return Err(Interrupted.into());
    }
    match req {
        TestRequest::Rfc2544(_) | TestRequest::Latency(_) => {
            verdicts(&r, "a latency verdict failed")
        }
        TestRequest::Streams(_) => verdicts(&r, "a stream missed its expected rate"),
        TestRequest::Mesh(_) => verdicts(&r, "a pair of the mesh has no figures"),
        _ => Ok(()),
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
