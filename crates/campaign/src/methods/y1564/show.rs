//! A `y1564` result shown as a Y.1564 tester prints it: per service the configuration
//! test's steps, then the performance test's rows, each with PASS/FAIL and what it
//! missed; in the campaign report the same tables, the step chart (IR and FLR per step)
//! and the performance test over time.

use model::results::RunResult;
use model::units::bps;
use report::table::{columns, Table};

use super::result::{part, Delay, PerformanceRow, ServiceConfiguration, StepResult};
use super::run::step_label;

/// The report's sections: (name, title, columns).
#[rustfmt::skip]
const CONFIGURATION: (&str, &str, &str) = (
    "y1564_configuration",
    "Service configuration test (Y.1564)",
    "source|service|step|offered Mbit/s>|IR Mbit/s>|green IR Mbit/s>|green FLR %>|FTD min/mean/max ms>|FDV ms>|result|missed",
);
#[rustfmt::skip]
const PERFORMANCE: (&str, &str, &str) = (
    "y1564_performance",
    "Service performance test (Y.1564)",
    "source|service|CIR Mbit/s>|IR Mbit/s>|IR per s min-max>|FLR %>|FTD min/mean/max ms>|FDV ms>|availability %>|result|missed",
);

fn mbit(v: f64) -> String {
    format!("{:.3}", v / 1e6)
}

fn ftd(d: Option<&Delay>) -> String {
    d.map_or_else(
        || "-".into(),
        |d| {
            format!(
                "{:.3}/{:.3}/{:.3}",
                d.min_us / 1e3,
                d.mean_us / 1e3,
                d.max_us / 1e3
            )
        },
    )
}

fn fdv(d: Option<&Delay>) -> String {
    d.map_or_else(|| "-".into(), |d| format!("{:.3}", d.fdv_us / 1e3))
}

fn result(pass: bool) -> String {
    if pass { "PASS" } else { "FAIL" }.into()
}

fn step_row(c: &ServiceConfiguration, s: &StepResult) -> Vec<String> {
    let mut flr = format!("{:.4}", s.green_flr * 100.0);
    if s.generator_limited {
        flr.push_str(" (generator-limited)");
    }
    vec![
        c.service.clone(),
        step_label(&s.step),
        mbit(s.step.offered_bps()),
        mbit(s.ir_bps),
        mbit(s.green_ir_bps),
        flr,
        ftd(s.delay.as_ref()),
        fdv(s.delay.as_ref()),
        result(s.pass),
        s.missed.join("; "),
    ]
}

fn performance_row(p: &PerformanceRow) -> Vec<String> {
    vec![
        p.service.clone(),
        mbit(p.cir_bps),
        mbit(p.ir_bps),
        p.ir_range_bps.map_or_else(
            || "-".into(),
            |(lo, hi)| format!("{}-{}", mbit(lo), mbit(hi)),
        ),
        format!("{:.4}", p.flr * 100.0),
        ftd(p.delay.as_ref()),
        fdv(p.delay.as_ref()),
        p.availability_pct
            .map_or_else(|| "-".into(), |a| format!("{a:.3}")),
        result(p.pass),
        p.missed.join("; "),
    ]
}

/// Drops the leading `source` column of a report table's spec for the terminal.
fn terminal(spec: &str) -> &str {
    spec.split_once('|').map_or(spec, |(_, rest)| rest)
}

/// The terminal's page.
pub(super) fn text(r: &RunResult) -> String {
    let Some(p) = part(r) else {
        return String::new();
    };
    let mut out = String::new();
    for c in &p.configuration {
        let colour = if c.profile.colour_aware {
            "colour-aware"
        } else {
            "colour-blind"
        };
        out.push_str(&format!(
            "service configuration test: {} (CIR {}, EIR {}, {colour}; frames {}; SAC: FLR <= \
             {:.4} %, FTD <= {:.3} ms, FDV <= {:.3} ms)\n",
            c.service,
            bps(c.profile.cir_bps),
            bps(c.profile.eir_bps),
            c.frame,
            c.sac.flr_max * 100.0,
            c.sac.ftd_max_us / 1e3,
            c.sac.fdv_max_us / 1e3,
        ));
        let rows = c.steps.iter().map(|s| step_row(c, s)).collect();
        out.push_str(&Table::plain(terminal(CONFIGURATION.2), rows).text());
        out.push('\n');
    }
    if let Some(perf) = &p.performance {
        out.push_str(&format!(
            "service performance test: every service at its CIR for {} s\n",
            model::units::secs(perf.duration_s)
        ));
        let rows = perf.services.iter().map(performance_row).collect();
        out.push_str(&Table::plain(terminal(PERFORMANCE.2), rows).text());
        out.push('\n');
    }
    let failed = r.verdicts.iter().filter(|v| !v.passed).count();
    out.push_str(&format!(
        "{} of {} verdicts passed\n",
        r.verdicts.len() - failed,
        r.verdicts.len()
    ));
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The report's sections over `tests`.
pub(super) fn tables(tests: &[(&str, &RunResult)]) -> Vec<Table> {
    let mut config = Vec::new();
    let mut perf = Vec::new();
    for (id, r) in tests {
        let Some(p) = part(r) else { continue };
        for c in &p.configuration {
            for s in &c.steps {
                let mut row = vec![(*id).to_owned()];
                row.extend(step_row(c, s));
                config.push(row);
            }
        }
        for s in p.performance.iter().flat_map(|p| &p.services) {
            let mut row = vec![(*id).to_owned()];
            row.extend(performance_row(s));
            perf.push(row);
        }
    }
    let mut out = Vec::new();
    if !config.is_empty() {
        let (name, title, spec) = CONFIGURATION;
        out.push(Table {
            name,
            title,
            intro: "Each service alone: the CIR steps, CIR + EIR (the excess marked yellow), \
                    and traffic policing above CIR + EIR; IR in L2 bit/s of frames with FCS, \
                    FLR, FTD (one-way) and FDV (99th percentile less the least) of the green \
                    frames, each step judged against the service's acceptance criteria."
                .into(),
            headers: columns(spec),
            rows: config,
        });
    }
    if !perf.is_empty() {
        let (name, title, spec) = PERFORMANCE;
        out.push(Table {
            name,
            title,
            intro: "Every service at its CIR at once: IR over the test and per second, FLR, \
                    FTD, FDV, and availability over runs of severely errored seconds."
                .into(),
            headers: columns(spec),
            rows: perf,
        });
    }
    out
}

/// The step chart (IR offered and received, and FLR, per step of each service) and the
/// performance test's IR per second.
pub(super) fn charts(id: &str, r: &RunResult) -> Vec<report::campaign::Chart> {
    let Some(p) = part(r) else { return Vec::new() };
    let mut out = Vec::new();
    for c in &p.configuration {
        let steps: Vec<String> = c.steps.iter().map(|s| step_label(&s.step)).collect();
        let offered = c
            .steps
            .iter()
            .map(|s| Some(s.step.offered_bps() / 1e6))
            .collect();
        let ir = c.steps.iter().map(|s| Some(s.ir_bps / 1e6)).collect();
        let flr = c.steps.iter().map(|s| Some(s.green_flr * 100.0)).collect();
        out.push(report::campaign::Chart {
            section: Some(CONFIGURATION.0),
            caption: format!("{id}: {} per step, IR", c.service),
            svg: report::svg::bars(
                &format!("{}: information rate per step", c.service),
                "Mbit/s",
                &steps,
                &[("offered".into(), offered), ("received".into(), ir)],
            ),
        });
        out.push(report::campaign::Chart {
            section: Some(CONFIGURATION.0),
            caption: format!("{id}: {} per step, FLR", c.service),
            svg: report::svg::bars(
                &format!("{}: green frame loss per step", c.service),
                "%",
                &steps,
                &[("FLR".into(), flr)],
            ),
        });
    }
    if let Some(perf) = &p.performance {
        let series: Vec<(String, Vec<(f64, f64)>)> = perf
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let id = u8::try_from(i + 1).ok();
                let points = r
                    .intervals
                    .iter()
                    .filter(|x| x.stream.is_some() && x.stream == id)
                    .filter_map(|x| Some((x.end_s, x.received_bps? / 1e6)))
                    .collect();
                (s.service.clone(), points)
            })
            .collect();
        if series.iter().any(|s| !s.1.is_empty()) {
            out.push(report::campaign::Chart {
                section: Some(PERFORMANCE.0),
                caption: format!("{id}: each service's received rate over the performance test"),
                svg: report::svg::lines(
                    "Performance test: received rate per second",
                    "s",
                    ("Mbit/s", report::svg::Scale::Linear),
                    &series,
                ),
            });
        }
    }
    out
}

/// The report's findings of one test.
pub(super) fn findings(r: &RunResult) -> Vec<String> {
    let Some(p) = part(r) else { return Vec::new() };
    let mut out = Vec::new();
    for c in &p.configuration {
        let passed = c.steps.iter().filter(|s| s.pass).count();
        out.push(format!(
            "{}: {passed} of {} configuration steps passed",
            c.service,
            c.steps.len()
        ));
    }
    for s in p.performance.iter().flat_map(|p| &p.services) {
        out.push(format!(
            "{}: performance {} ({} of CIR {}, FLR {:.4} %)",
            s.service,
            result(s.pass),
            bps(s.ir_bps),
            bps(s.cir_bps),
            s.flr * 100.0
        ));
    }
    out
}
