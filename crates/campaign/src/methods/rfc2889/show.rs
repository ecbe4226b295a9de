//! An `rfc2889` result shown as RFC 2889's reporting asks: per frame size the throughput,
//! then each port's intended and offered load, forwarding rate, loss and flood count at
//! the load (congestion control adds its verdicts); for the address tests every trial of
//! the search and its result. The campaign report has the same tables and a chart of the
//! forwarding rate per frame size against what the ports were meant to receive.

use model::results::RunResult;
use model::units::bps;
use report::table::{columns, Table};

use super::request::Test;
use super::result::{part, AddressResult, Errored, Rfc2889Result, SizeResult, TrialRows};

#[rustfmt::skip]
const PORTS: (&str, &str, &str) = (
    "rfc2889_ports",
    "Switch forwarding per port (RFC 2889)",
    "source|test|frame B>|port|Iload fps>|Oload fps>|FR fps>|intended rx fps>|lost>|loss %>|flood>|latency min/mean/max us>",
);
#[rustfmt::skip]
const ADDRESSES: (&str, &str, &str) = (
    "rfc2889_addresses",
    "Address caching and learning (RFC 2889 §5.7, §5.8)",
    "source|test|trial>|addresses>|rate fps>|sent>|at learning port>|flooded to monitor>|result",
);

#[rustfmt::skip]
const ERRORED: (&str, &str, &str) = (
    "rfc2889_errored",
    "Errored frames filtering (RFC 2889 §5.9)",
    "source|kind|frame B>|sent>|forwarded>|verdict",
);
#[rustfmt::skip]
const STEPS: &str = "load %>|Iload fps>|Oload fps>|FR fps>|lost>|loss %>";

/// The rows of §5.9's table.
fn errored_rows(e: &Errored) -> Vec<Vec<String>> {
    let n = |v: Option<u64>| v.map_or_else(|| "-".into(), |x| x.to_string());
    e.rows
        .iter()
        .map(|r| {
            vec![
                r.kind.clone(),
                n(r.frame_len),
                n(r.sent),
                n(r.forwarded),
                r.verdict.clone(),
            ]
        })
        .collect()
}

/// §5.9's verdict in a line: what was forwarded of each kind sent, and the valid frames.
pub(super) fn errored_detail(e: &Errored) -> String {
    let mut parts: Vec<String> = e
        .rows
        .iter()
        .filter_map(|r| {
            let (len, sent, fwd) = (r.frame_len?, r.sent?, r.forwarded?);
            Some(format!("{} {len} B: {fwd} of {sent} forwarded", r.kind))
        })
        .collect();
    parts.push(format!(
        "valid {} B: {} of {} lost",
        e.valid_len, e.valid_lost, e.valid_sent
    ));
    parts.join("; ")
}

/// One row per load step of §5.6.
fn step_rows(steps: &[TrialRows]) -> Vec<Vec<String>> {
    steps
        .iter()
        .map(|t| {
            vec![
                format!("{:.1}", t.load_pct),
                fps(t.totals.iload_fps),
                fps(t.totals.oload_fps),
                fps(t.totals.forwarding_fps),
                t.totals.lost.to_string(),
                format!("{:.3}", t.totals.loss_ratio * 100.0),
            ]
        })
        .collect()
}

/// A report table's spec without its first `skip` columns (what the terminal's page says
/// once above the table).
fn terminal(spec: &str, skip: usize) -> &str {
    spec.splitn(skip + 1, '|').nth(skip).unwrap_or(spec)
}

fn fps(v: f64) -> String {
    format!("{v:.0}")
}

/// One row per port, then the totals, of size `s`.
fn port_rows(s: &SizeResult) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = s
        .at_load
        .ports
        .iter()
        .map(|p| {
            vec![
                p.port.clone(),
                fps(p.iload_fps),
                fps(p.oload_fps),
                fps(p.forwarding_fps),
                fps(p.intended_rx_fps),
                p.lost.to_string(),
                format!("{:.3}", p.loss_ratio * 100.0),
                p.flood.to_string(),
                p.latency.map_or_else(
                    || "-".into(),
                    |l| format!("{:.1}/{:.1}/{:.1}", l.min_us, l.mean_us, l.max_us),
                ),
            ]
        })
        .collect();
    let t = &s.at_load.totals;
    rows.push(vec![
        "all ports".into(),
        fps(t.iload_fps),
        fps(t.oload_fps),
        fps(t.forwarding_fps),
        fps(s.at_load.ports.iter().map(|p| p.intended_rx_fps).sum()),
        t.lost.to_string(),
        format!("{:.3}", t.loss_ratio * 100.0),
        t.flood.to_string(),
        "-".into(),
    ]);
    rows
}

fn address_rows(a: &AddressResult) -> Vec<Vec<String>> {
    a.trials
        .iter()
        .enumerate()
        .map(|(i, t)| {
            vec![
                (i + 1).to_string(),
                t.addresses.to_string(),
                if t.generator_limited {
                    format!("{} (fell behind)", fps(t.rate_fps))
                } else {
                    fps(t.rate_fps)
                },
                t.sent.to_string(),
                t.at_learning_port.to_string(),
                t.at_monitor.to_string(),
                if t.passed { "pass" } else { "fail" }.into(),
            ]
        })
        .collect()
}

/// The throughput line of size `s`.
fn throughput_line(p: &Rfc2889Result, s: &SizeResult) -> Option<String> {
    let t = s.throughput.as_ref()?;
    let max = t.max_fps;
    Some(match t.fps {
        Some(v) => format!(
            "throughput {:.3} % of line rate ({} frames/s per sending port){}, {} trials",
            v / max * 100.0,
            fps(v),
            if t.is_lower_bound() {
                " or more (the generator's limit)"
            } else {
                ""
            },
            t.trials
        ),
        None => format!(
            "throughput not found: {}",
            t.irregular
                .clone()
                .unwrap_or_else(|| format!("no load met the goal on {}", p.test))
        ),
    })
}

/// The address search's result line.
fn address_line(test: &str, a: &AddressResult) -> String {
    let (what, unit, resolution) = if test == Test::Caching.name() {
        (
            "address caching capacity",
            "addresses",
            format!("step {}", fps(a.resolution)),
        )
    } else {
        (
            "address learning rate",
            "addresses/s",
            format!("width {} %", a.resolution * 100.0),
        )
    };
    let range = format!("searched {}..{}, {resolution}", fps(a.min), fps(a.max));
    match (a.result, a.failed) {
        (Some(v), Some(f)) => format!("{what}: {} {unit} ({} failed; {range})", fps(v), fps(f)),
        (Some(v), None) => format!(
            "{what}: at least {} {unit} (the most searched; {range})",
            fps(v)
        ),
        (None, _) => format!(
            "{what}: below {} {unit} (even the least failed; {range})",
            fps(a.min)
        ),
    }
}

/// The terminal's page.
pub(super) fn text(r: &RunResult) -> String {
    let Some(p) = part(r) else {
        return String::new();
    };
    let mut out = format!(
        "RFC 2889 §{} {} over {}",
        p.section,
        p.test,
        p.ports.join(", ")
    );
    if p.addresses.is_none() {
        out.push_str(&format!(" ({} per port)", bps(p.line_rate_bps)));
    }
    out.push('\n');
    for s in &p.sizes {
        out.push_str(&format!("\n{}-byte frames", s.frame_len));
        if let Some(line) = throughput_line(&p, s) {
            out.push_str(&format!(": {line}"));
        }
        if !s.steps.is_empty() {
            out.push_str("\nload steps, over all ports:\n");
            out.push_str(&Table::plain(STEPS, step_rows(&s.steps)).text());
            if let Some((f, load)) = s.max_forwarding {
                out.push_str(&format!(
                    "maximum forwarding rate: {} frames/s over all ports, at {load:.1} % load\n",
                    fps(f)
                ));
            }
        }
        out.push_str(&format!(
            "\nat {} % load for {} s{}:\n",
            model::units::secs(s.at_load.load_pct),
            model::units::secs(s.at_load.duration_s),
            if s.at_load.generator_limited {
                " (a sender fell behind: Oload below Iload)"
            } else {
                ""
            }
        ));
        out.push_str(&Table::plain(terminal(PORTS.2, 3), port_rows(s)).text());
        if let Some(c) = &s.congestion {
            out.push_str(&format!(
                "congestion: the congested port lost {:.3} % (its overload share {:.3} %), the \
                 uncongested {:.3} %: {}; back pressure: {}\n",
                c.congested_loss * 100.0,
                c.overload_share * 100.0,
                c.uncongested_loss * 100.0,
                if c.head_of_line_blocking {
                    "head-of-line blocking"
                } else {
                    "no head-of-line blocking"
                },
                c.back_pressure
            ));
        }
    }
    if let Some(a) = &p.addresses {
        let [l, t, m] = p.ports.as_slice() else {
            return out;
        };
        out.push_str(&format!(
            "learning port {l}, test port {t}, monitor port {m}; {}-byte frames; {}\n",
            a.frame_len, a.forgetting
        ));
        out.push_str(&Table::plain(terminal(ADDRESSES.2, 2), address_rows(a)).text());
        out.push_str(&address_line(&p.test, a));
        out.push('\n');
        if let Some((n, limit)) = a.bridge {
            out.push_str(&format!(
                "the lab switch's bridge held {n} learned addresses after the last trial{}\n",
                if limit > 0 {
                    format!(" (limit {limit})")
                } else {
                    String::new()
                }
            ));
        }
    }
    if let Some(e) = &p.errored {
        out.push_str(&format!(
            "valid {}-byte frames: {} sent, {} lost\n",
            e.valid_len, e.valid_sent, e.valid_lost
        ));
        out.push_str(&Table::plain(terminal(ERRORED.2, 1), errored_rows(e)).text());
        out.push_str(&format!(
            "errored frames {}\n",
            if e.passed {
                "filtered, no valid frame lost: PASS"
            } else {
                "not all filtered, or valid frames lost: FAIL"
            }
        ));
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The report's sections over `tests`.
pub(super) fn tables(tests: &[(&str, &RunResult)]) -> Vec<Table> {
    let mut ports = Vec::new();
    let mut addresses = Vec::new();
    let mut errored = Vec::new();
    for (id, r) in tests {
        let Some(p) = part(r) else { continue };
        if let Some(e) = &p.errored {
            for row in errored_rows(e) {
                let mut full = vec![(*id).to_owned()];
                full.extend(row);
                errored.push(full);
            }
        }
        for s in &p.sizes {
            for row in port_rows(s) {
                let mut full = vec![(*id).to_owned(), p.test.clone(), s.frame_len.to_string()];
                full.extend(row);
                ports.push(full);
            }
        }
        if let Some(a) = &p.addresses {
            for row in address_rows(a) {
                let mut full = vec![(*id).to_owned(), p.test.clone()];
                full.extend(row);
                addresses.push(full);
            }
        }
    }
    let mut out = Vec::new();
    if !ports.is_empty() {
        let (name, title, spec) = PORTS;
        out.push(Table {
            name,
            title,
            intro: "Each port at the asked load: intended and offered load, forwarding rate \
                    (frames meant for the port that arrived there, per second) against what a \
                    switch that forwards everything delivers, deliveries lost, and the flood \
                    count (frames meant for other ports that arrived here)."
                .into(),
            headers: columns(spec),
            rows: ports,
        });
    }
    if !errored.is_empty() {
        let (name, title, spec) = ERRORED;
        out.push(Table {
            name,
            title,
            intro: "Errored frames sent among valid ones below congestion: a switch should \
                    drop each kind it can tell is wrong and lose no valid frame. Kinds these \
                    ports cannot send say why."
                .into(),
            headers: columns(spec),
            rows: errored,
        });
    }
    if !addresses.is_empty() {
        let (name, title, spec) = ADDRESSES;
        out.push(Table {
            name,
            title,
            intro: "Each trial of the search: addresses learned at a rate from the learning \
                    port, then one test frame to each from the test port; it passes when every \
                    test frame reached the learning port and none was flooded to the monitor."
                .into(),
            headers: columns(spec),
            rows: addresses,
        });
    }
    out
}

/// The forwarding rate per frame size against what was meant to arrive.
pub(super) fn charts(id: &str, r: &RunResult) -> Vec<report::campaign::Chart> {
    let Some(p) = part(r) else { return Vec::new() };
    if p.sizes.is_empty() {
        return Vec::new();
    }
    let labels: Vec<String> = p
        .sizes
        .iter()
        .map(|s| format!("{} B", s.frame_len))
        .collect();
    let intended = p
        .sizes
        .iter()
        .map(|s| Some(s.at_load.ports.iter().map(|x| x.intended_rx_fps).sum()))
        .collect();
    let forwarded = p
        .sizes
        .iter()
        .map(|s| Some(s.at_load.totals.forwarding_fps))
        .collect();
    vec![report::campaign::Chart {
        section: Some(PORTS.0),
        caption: format!("{id}: {} forwarding rate per frame size", p.test),
        svg: report::svg::bars(
            &format!("RFC 2889 {}: forwarding rate over all ports", p.test),
            "frames/s",
            &labels,
            &[
                ("meant to arrive".into(), intended),
                ("arrived".into(), forwarded),
            ],
        ),
    }]
}

/// The report's findings of one test.
pub(super) fn findings(r: &RunResult) -> Vec<String> {
    let Some(p) = part(r) else { return Vec::new() };
    let mut out = Vec::new();
    for s in &p.sizes {
        let t = &s.at_load.totals;
        let mut line = format!(
            "{} {} B: {} frames/s forwarded at {} % load, {:.3} % lost, {} flooded",
            p.test,
            s.frame_len,
            fps(t.forwarding_fps),
            model::units::secs(s.at_load.load_pct),
            t.loss_ratio * 100.0,
            t.flood
        );
        if let Some(th) = throughput_line(&p, s) {
            line.push_str(&format!("; {th}"));
        }
        out.push(line);
        if let Some(c) = s.congestion.as_ref().filter(|c| c.head_of_line_blocking) {
            out.push(format!(
                "{} B: head-of-line blocking, the uncongested port lost {:.3} %",
                s.frame_len,
                c.uncongested_loss * 100.0
            ));
        }
    }
    if let Some(a) = &p.addresses {
        out.push(address_line(&p.test, a));
    }
    for s in &p.sizes {
        if let Some((f, load)) = s.max_forwarding {
            out.push(format!(
                "{} B: maximum forwarding rate {} frames/s at {load:.1} % load",
                s.frame_len,
                fps(f)
            ));
        }
    }
    if let Some(e) = &p.errored {
        out.push(format!(
            "errored frames {}: {}",
            if e.passed { "filtered" } else { "not filtered" },
            errored_detail(e)
        ));
    }
    out
}
