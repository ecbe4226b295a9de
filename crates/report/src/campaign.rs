//! The campaign report (`wirebench run`, `wirebench report`): the sections of a benchmark
//! report built from a [`Campaign`] alone, as Markdown, as one self-contained HTML file
//! with inline SVG charts, and as one CSV per table.
//!
//! Every table row names its source test (`t3`, linked to the test's entry with its command
//! line), a value that was not measured is shown as `-`, never estimated, and a result the
//! generator limited is marked so. The tables are built once ([`tables`]) and rendered
//! three ways, so the formats cannot disagree.

use std::fmt::Write as _;

use model::results::campaign::{Campaign, TestEntry, TestStatus, SCHEMA};
use model::results::{RunResult, SweepStatus};
use wire::linerate::LineRate;

use crate::svg;
pub use crate::table::Align;
use crate::units::bps;

/// Reads a campaign document, checking its schema.
///
/// # Errors
/// Not JSON, not a campaign, or a schema this version does not read.
pub fn load(text: &str) -> Result<Campaign, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "schema '{other}' is not one this version reads ({SCHEMA})"
            ))
        }
        None => {
            return Err(
                "no schema: not a wirebench campaign (results.json of `wirebench run`)".into(),
            )
        }
    }
    let c: Campaign =
        serde_json::from_value(v).map_err(|e| format!("not a campaign document: {e}"))?;
    // Ids become anchors and links in the reports: only `t` and digits.
    if let Some(t) = c.tests.iter().find(|t| {
        !(t.id.len() > 1 && t.id.starts_with('t') && t.id[1..].bytes().all(|b| b.is_ascii_digit()))
    }) {
        return Err(format!("test id '{}' is not t1, t2, ...", t.id));
    }
    Ok(c)
}

/// One table of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// File stem of its CSV and anchor of its section.
    pub name: &'static str,
    /// Section title.
    pub title: &'static str,
    /// A sentence under the title (what and how it was measured).
    pub intro: String,
    /// Column headers; a column named `source` holds test ids.
    pub headers: Vec<(&'static str, Align)>,
    /// Cells.
    pub rows: Vec<Vec<String>>,
}

fn done(c: &Campaign) -> impl Iterator<Item = (&TestEntry, &RunResult)> {
    c.tests
        .iter()
        .filter_map(|t| t.result.as_ref().map(|r| (t, r)))
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn mbps(v: f64) -> String {
    format!("{:.2}", v / 1e6)
}

/// Every table the campaign's results fill, in report order.
pub fn tables(c: &Campaign) -> Vec<Table> {
    use Align::{Left as L, Right as R};
    let mut out = Vec::new();

    let tests: Vec<Vec<String>> = c
        .tests
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                t.name.clone(),
                t.kind.clone(),
                t.node.clone(),
                match t.status {
                    TestStatus::Done => "done".into(),
                    TestStatus::Failed => format!("FAILED: {}", t.error.as_deref().unwrap_or("")),
                    TestStatus::NotRun => "not run".into(),
                },
                format!("{:.1}", t.duration_s),
                opt(t.result.as_ref().and_then(|r| r.backend.clone()), |b| b),
                format!("`{}`", t.command),
            ]
        })
        .collect();
    out.push(Table {
        name: "tests",
        title: "Tests and methods",
        intro: "Each test is one wirebench command with -J; its full result is in results.json under tests[].result.".into(),
        headers: vec![
            ("source", L),
            ("test", L),
            ("method", L),
            ("where", L),
            ("status", L),
            ("secs", R),
            ("backend", L),
            ("command", L),
        ],
        rows: tests,
    });

    let mut thr = Vec::new();
    for (t, r) in done(c) {
        let Some(s) = &r.summary else { continue };
        let proto = r.params["test"]["protocol"]
            .as_str()
            .or_else(|| r.params["protocol"].as_str())
            .unwrap_or("-");
        thr.push(vec![
            t.id.clone(),
            t.name.clone(),
            proto.to_owned(),
            format!("{:.1}", s.duration_s),
            opt(s.offered_bps, mbps),
            opt(s.received_bps, mbps),
            opt(s.loss_ratio, |l| format!("{:.4}", l * 100.0)),
            opt(s.duplicate_packets, |d| d.to_string()),
            opt(s.reordered_packets, |d| d.to_string()),
            opt(s.latency_us.as_ref(), |l| format!("{:.1}", l.p99)),
            if s.generator_limited {
                "generator limited".into()
            } else {
                String::new()
            },
        ]);
    }
    if !thr.is_empty() {
        out.push(Table {
            name: "throughput",
            title: "Throughput",
            intro: "TCP and UDP tests (client); rates are payload bit/s as iperf3 counts them."
                .into(),
            headers: vec![
                ("source", L),
                ("test", L),
                ("protocol", L),
                ("secs", R),
                ("offered Mbit/s", R),
                ("received Mbit/s", R),
                ("loss %", R),
                ("duplicates", R),
                ("reordered", R),
                ("latency p99 us", R),
                ("note", L),
            ],
            rows: thr,
        });
    }

    let mut sweep = Vec::new();
    for (t, r) in done(c) {
        let Some(s) = &r.sweep else { continue };
        for row in &s.rows {
            sweep.push(vec![
                t.id.clone(),
                mbps(row.target_bps),
                mbps(row.offered_bps),
                mbps(row.achieved_bps),
                format!("{:.4}", row.loss_pct),
                row.sent_packets.to_string(),
                row.lost_packets.to_string(),
                match row.status {
                    SweepStatus::ZeroLoss => "zero loss",
                    SweepStatus::Marginal => "marginal",
                    SweepStatus::Loss => "loss",
                }
                .to_owned()
                    + if row.generator_limited {
                        " (generator limited)"
                    } else {
                        ""
                    },
            ]);
        }
        sweep.push(vec![
            t.id.clone(),
            String::new(),
            String::new(),
            opt(s.max_zero_loss_bps, mbps),
            String::new(),
            String::new(),
            String::new(),
            "highest zero-loss rate".into(),
        ]);
    }
    if !sweep.is_empty() {
        out.push(Table {
            name: "sweep",
            title: "Zero-loss sweep",
            intro: "UDP rate staircase (sweep): loss per target rate and the highest rate without loss.".into(),
            headers: vec![
                ("source", L),
                ("target Mbit/s", R),
                ("offered Mbit/s", R),
                ("achieved Mbit/s", R),
                ("loss %", R),
                ("sent", R),
                ("lost", R),
                ("status", L),
            ],
            rows: sweep,
        });
    }

    let mut tp = Vec::new();
    let mut lat = Vec::new();
    let mut loss = Vec::new();
    for (t, r) in done(c) {
        let Some(x) = &r.rfc2544 else { continue };
        let line = LineRate(x.line_rate_bps);
        for row in &x.throughput {
            let theo = LineRate::rates_at(row.frame_len, row.max_fps);
            let mut note = Vec::new();
            if let Some(cap) = row.generator_cap_fps {
                note.push(format!("generator limited at {cap:.0} fps"));
            }
            if let Some(i) = &row.irregular {
                note.push(i.clone());
            }
            tp.push(vec![
                t.id.clone(),
                row.frame_len.to_string(),
                mbps(theo.l2_bps),
                opt(row.fps, |f| {
                    mbps(LineRate::rates_at(row.frame_len, f).l2_bps)
                }),
                opt(row.fps, |f| {
                    format!("{:.2}", line.percent_of(row.frame_len, f))
                }),
                opt(row.fps, |f| format!("{f:.0}")),
                format!("{:?}", row.search).to_lowercase(),
                note.join("; "),
            ]);
        }
        for row in &x.latency {
            let s = row.summary.as_ref();
            let verdict = c
                .verdicts
                .iter()
                .chain(&r.verdicts)
                // Latency checks only: the plan's `latency_*` thresholds of this test, and
                // the test's own `latency ...` limits.
                .filter(|v| v.name.starts_with("latency"))
                .filter(|v| {
                    v.name.contains(&format!("at {} B", row.frame_len))
                        || v.name.contains(&format!("at {} bytes", row.frame_len))
                })
                .filter(|v| v.name.contains(&format!("({})", t.id)) || r.verdicts.contains(v))
                .map(|v| if v.passed { "pass" } else { "FAIL" })
                .collect::<Vec<_>>()
                .join(", ");
            lat.push(vec![
                t.id.clone(),
                "RFC 2544, one-way".into(),
                row.frame_len.to_string(),
                format!("{:.0}", row.fps),
                opt(s, |s| format!("{:.1}", s.avg_us)),
                opt(s, |s| format!("{:.1}", s.p50_us)),
                opt(s, |s| format!("{:.1}", s.p99_us)),
                opt(s, |s| format!("{:.1}", s.p999_us)),
                opt(s, |s| format!("{:.1}", s.max_us)),
                if verdict.is_empty() {
                    "-".into()
                } else {
                    verdict
                },
            ]);
        }
        for row in &x.loss {
            loss.push(vec![
                t.id.clone(),
                row.frame_len.to_string(),
                format!("{:.0}", row.percent),
                format!("{:.0}", row.fps),
                row.sent.to_string(),
                row.received.to_string(),
                format!("{:.4}", row.loss_percent),
                if row.generator_limited {
                    "generator limited".into()
                } else {
                    String::new()
                },
            ]);
        }
    }
    if !tp.is_empty() {
        out.push(Table {
            name: "rfc2544_throughput",
            title: "Throughput by frame size (RFC 2544)",
            intro: "Highest rate without loss per frame size (RFC 2544 §26.1); Mbit/s of frames incl. FCS; efficiency = measured / theoretical at line rate.".into(),
            headers: vec![
                ("source", L),
                ("frame", R),
                ("theoretical Mbit/s", R),
                ("measured Mbit/s", R),
                ("efficiency %", R),
                ("frames/s", R),
                ("search", L),
                ("note", L),
            ],
            rows: tp,
        });
    }
    for (t, r) in done(c) {
        for row in r.latency.iter().flatten() {
            let s = &row.rtt_us;
            lat.push(vec![
                t.id.clone(),
                "ping-pong, round trip".into(),
                row.size.to_string(),
                "-".into(),
                format!("{:.1}", s.avg),
                format!("{:.1}", s.p50),
                format!("{:.1}", s.p99),
                format!("{:.1}", s.p999),
                format!("{:.1}", s.max),
                "-".into(),
            ]);
        }
    }
    if !lat.is_empty() {
        out.push(Table {
            name: "latency",
            title: "Latency by frame size",
            intro: "RFC 2544 §26.2 latency at the throughput rate (one-way, from kernel stamps), and ping-pong round trips (latency tests); microseconds.".into(),
            headers: vec![
                ("source", L),
                ("method", L),
                ("frame / message B", R),
                ("load fps", R),
                ("avg", R),
                ("p50", R),
                ("p99", R),
                ("p99.9", R),
                ("max", R),
                ("verdict", L),
            ],
            rows: lat,
        });
    }
    if !loss.is_empty() {
        out.push(Table {
            name: "loss",
            title: "Loss against offered load",
            intro: "RFC 2544 §26.3 frame loss rate, from 100 % of line rate down in steps.".into(),
            headers: vec![
                ("source", L),
                ("frame", R),
                ("load %", R),
                ("offered fps", R),
                ("sent", R),
                ("received", R),
                ("loss %", R),
                ("note", L),
            ],
            rows: loss,
        });
    }

    let mut prof = Vec::new();
    for (t, r) in done(c) {
        let Some(p) = &r.profile else { continue };
        for row in &p.rows {
            prof.push(vec![
                t.id.clone(),
                row.name.clone(),
                row.frame.clone(),
                format!("{:.1}", row.load_percent),
                row.sent.to_string(),
                row.received.to_string(),
                row.lost.to_string(),
                format!("{:.4}", row.loss_ratio * 100.0),
                row.duplicates.to_string(),
                mbps(row.received_l2_bps),
                match row.passed {
                    Some(true) => "pass".into(),
                    Some(false) => "FAIL".into(),
                    None if row.generator_limited => "generator limited".into(),
                    None => "-".into(),
                },
            ]);
        }
    }
    if !prof.is_empty() {
        out.push(Table {
            name: "streams",
            title: "Multi-stream profile",
            intro: "Every stream at once on its own schedule (streams); Mbit/s of received frames incl. FCS.".into(),
            headers: vec![
                ("source", L),
                ("stream", L),
                ("frame", L),
                ("load %", R),
                ("sent", R),
                ("received", R),
                ("lost", R),
                ("loss %", R),
                ("duplicates", R),
                ("Mbit/s", R),
                ("verdict", L),
            ],
            rows: prof,
        });
    }

    let mut shaping = Vec::new();
    for (t, r) in done(c) {
        let Some(s) = &r.shaping else { continue };
        for cell in &s.cells {
            shaping.push(vec![
                t.id.clone(),
                cell.frame_len.to_string(),
                mbps(cell.bandwidth_bps),
                mbps(cell.received_l2_bps),
                format!("{:.2}", cell.passed_ratio * 100.0),
                if cell.generator_limited {
                    "generator limited".into()
                } else {
                    String::new()
                },
            ]);
        }
    }
    if !shaping.is_empty() {
        out.push(Table {
            name: "shaping",
            title: "Shaper accuracy (passed rate)",
            intro: "Line-rate traffic per frame size through each configured bandwidth; passed rate in % of the bandwidth.".into(),
            headers: vec![
                ("source", L),
                ("frame", R),
                ("bandwidth Mbit/s", R),
                ("received Mbit/s", R),
                ("passed %", R),
                ("note", L),
            ],
            rows: shaping,
        });
    }

    let mut over = Vec::new();
    for (t, r) in done(c) {
        let Some(f) = &r.frer else { continue };
        for row in &f.rows {
            over.push(vec![
                t.id.clone(),
                row.metric.clone(),
                row.unit.clone(),
                opt(row.control, |v| format!("{v:.2}")),
                opt(row.frer, |v| format!("{v:.2}")),
                opt(row.overhead_percent, |o| format!("{o:+.1}")),
                row.reason.clone(),
            ]);
        }
    }
    if !over.is_empty() {
        out.push(Table {
            name: "overhead",
            title: "Overhead against a control group (FRER)",
            intro: "The same measurements through the FRER network and through the same network forwarding plainly; overhead = what FRER costs in % of the control.".into(),
            headers: vec![
                ("source", L),
                ("measurement", L),
                ("unit", L),
                ("control", R),
                ("FRER", R),
                ("overhead %", R),
                ("reason", L),
            ],
            rows: over,
        });
    }

    let mut paths = Vec::new();
    for t in &c.tests {
        for p in &t.frer_paths {
            paths.push(vec![
                t.id.clone(),
                p.stream.clone(),
                p.path.clone(),
                p.sent.to_string(),
                p.received.to_string(),
                format!(
                    "{:.3}",
                    (p.sent.saturating_sub(p.received)) as f64 / p.sent.max(1) as f64 * 100.0
                ),
                p.first.to_string(),
                opt((p.passed > 0).then_some(()), |()| {
                    format!("{:.1}", p.first as f64 / p.passed as f64 * 100.0)
                }),
            ]);
        }
    }
    if !paths.is_empty() {
        out.push(Table {
            name: "frer_paths",
            title: "FRER per path",
            intro: "What each path carried during each test, from the FRER relays' own counters: frames replicated onto it, frames that arrived over it, and how often its copy was the one passed.".into(),
            headers: vec![
                ("source", L),
                ("stream", L),
                ("path port", L),
                ("sent", R),
                ("received", R),
                ("path loss %", R),
                ("first", R),
                ("first %", R),
            ],
            rows: paths,
        });
    }

    let mut comp: Vec<Vec<String>> = c
        .verdicts
        .iter()
        .map(|v| {
            vec![
                "plan".into(),
                v.name.clone(),
                if v.passed { "pass" } else { "FAIL" }.into(),
                v.detail.clone(),
            ]
        })
        .collect();
    for (t, r) in done(c) {
        for v in &r.verdicts {
            comp.push(vec![
                t.id.clone(),
                v.name.clone(),
                if v.passed { "pass" } else { "FAIL" }.into(),
                v.detail.clone(),
            ]);
        }
    }
    out.push(Table {
        name: "compliance",
        title: "Standards and threshold compliance",
        intro: if comp.is_empty() {
            "The plan set no thresholds and no test checked a limit.".into()
        } else {
            "The plan's thresholds (source: plan) and the limits tests checked themselves.".into()
        },
        headers: vec![("source", L), ("check", L), ("result", L), ("detail", L)],
        rows: comp,
    });

    let ifaces: Vec<Vec<String>> = c
        .interfaces
        .iter()
        .map(|i| {
            vec![
                i.node.clone(),
                i.name.clone(),
                opt(i.driver.clone(), |d| d),
                opt(i.speed_mbps, |s| s.to_string()),
                opt(i.mtu, |m| m.to_string()),
                opt(i.mac.clone(), |m| m),
                i.addresses.join(" "),
                i.offloads_on.join(" "),
            ]
        })
        .collect();
    out.push(Table {
        name: "interfaces",
        title: "Test environment",
        intro: format!(
            "Controller {} (Linux {}, {} CPUs{}), wirebench {}. Target: {}. The backend of each test is in the tests table.",
            c.environment.hostname,
            c.environment.kernel,
            c.environment.cpus,
            c.environment
                .cpu_model
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default(),
            c.environment.wirebench_version,
            c.target
        ),
        headers: vec![
            ("node", L),
            ("interface", L),
            ("driver", L),
            ("speed Mbit/s", R),
            ("MTU", R),
            ("MAC", L),
            ("addresses", L),
            ("offloads on", L),
        ],
        rows: ifaces,
    });
    out
}

/// One line per test: what it found, in words and measured figures only.
fn findings(c: &Campaign) -> Vec<String> {
    let mut out = Vec::new();
    for t in &c.tests {
        let link = format!("[{}](#{})", t.id, t.id);
        let Some(r) = &t.result else {
            out.push(match t.status {
                TestStatus::Failed => format!(
                    "{} {link}: could not run ({})",
                    t.name,
                    t.error.as_deref().unwrap_or("no reason given")
                ),
                _ => format!("{} {link}: not run", t.name),
            });
            continue;
        };
        let mut parts: Vec<String> = Vec::new();
        if let Some(s) = &r.summary {
            if let Some(b) = s.received_bps {
                parts.push(format!("{} received", bps(b)));
            }
            if let Some(l) = s.loss_ratio {
                parts.push(format!("loss {:.4} %", l * 100.0));
            }
            if let Some(d) = s.duplicate_packets.filter(|d| *d > 0) {
                parts.push(format!("{d} duplicates"));
            }
            if let Some(l) = &s.latency_us {
                parts.push(format!("latency p99 {:.1} us", l.p99));
            }
        }
        if let Some(s) = &r.sweep {
            parts.push(match s.max_zero_loss_bps {
                Some(z) => format!("highest zero-loss rate {}", bps(z)),
                None => "no step was free of loss".into(),
            });
        }
        if let Some(x) = &r.rfc2544 {
            for row in &x.throughput {
                if let Some(f) = row.fps {
                    parts.push(format!(
                        "{} B: {:.2} % of line rate",
                        row.frame_len,
                        LineRate(x.line_rate_bps).percent_of(row.frame_len, f)
                    ));
                }
            }
            for row in &x.latency {
                if let Some(s) = &row.summary {
                    parts.push(format!(
                        "{} B latency p99.9 {:.1} us",
                        row.frame_len, s.p999_us
                    ));
                }
            }
        }
        for row in r.latency.iter().flatten() {
            parts.push(format!(
                "{} B round trip p50 {:.1} us",
                row.size, row.rtt_us.p50
            ));
        }
        if let Some(p) = &r.profile {
            let lost = p.total_sent.saturating_sub(p.total_received);
            let judged: Vec<bool> = p.rows.iter().filter_map(|x| x.passed).collect();
            parts.push(format!(
                "{} streams, {} of {} frames lost{}",
                p.rows.len(),
                lost,
                p.total_sent,
                if judged.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {} of {} streams met their expected rate",
                        judged.iter().filter(|x| **x).count(),
                        judged.len()
                    )
                }
            ));
        }
        if let Some(f) = &r.frer {
            for row in &f.rows {
                if let Some(o) = row.overhead_percent {
                    parts.push(format!("{} overhead {o:+.1} %", row.metric));
                }
            }
        }
        let limited = r.summary.as_ref().is_some_and(|s| s.generator_limited)
            || r.notes.iter().any(|n| n.contains("generator"));
        if limited {
            parts.push("bounded by the generator (see notes)".into());
        }
        out.push(format!("{} {link}: {}", t.name, parts.join("; ")));
    }
    let failed = c.verdicts.iter().filter(|v| !v.passed).count();
    out.push(if c.verdicts.is_empty() {
        "The plan set no thresholds.".into()
    } else if failed == 0 {
        format!("All {} thresholds passed.", c.verdicts.len())
    } else {
        format!(
            "{failed} of {} thresholds FAILED (see compliance).",
            c.verdicts.len()
        )
    });
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn md_table(t: &Table) -> String {
    let mut s = String::new();
    s.push('|');
    for (h, _) in &t.headers {
        let _ = write!(s, " {h} |");
    }
    s.push_str("\n|");
    for (_, a) in &t.headers {
        s.push_str(match a {
            Align::Left => "---|",
            Align::Right => "---:|",
        });
    }
    s.push('\n');
    for row in &t.rows {
        s.push('|');
        for (i, cell) in row.iter().enumerate() {
            let is_source = t.headers.get(i).is_some_and(|h| h.0 == "source");
            if is_source && cell.starts_with('t') {
                let _ = write!(s, " [{cell}](#{cell}) |");
            } else {
                let _ = write!(s, " {} |", md_escape(cell));
            }
        }
        s.push('\n');
    }
    s
}

/// The report as Markdown.
pub fn markdown(c: &Campaign) -> String {
    let mut s = format!("# {}\n\n", c.title);
    if let Some(d) = &c.description {
        let _ = writeln!(s, "{d}\n");
    }
    let _ = writeln!(
        s,
        "Run of {} to {}, plan `{}`, target: {}.\n",
        c.started_at,
        c.finished_at.as_deref().unwrap_or("(unfinished)"),
        c.plan_file,
        c.target
    );
    if !c.metadata.is_empty() {
        s.push_str("| | |\n|---|---|\n");
        for (k, v) in &c.metadata {
            let _ = writeln!(s, "| {} | {} |", md_escape(k), md_escape(v));
        }
        s.push('\n');
    }
    if let Some(why) = &c.stopped {
        let _ = writeln!(
            s,
            "**The run stopped early: {why}.** Tests after it did not run.\n"
        );
    }
    s.push_str("## Summary of key findings\n\n");
    for f in findings(c) {
        let _ = writeln!(s, "- {f}");
    }
    s.push('\n');
    for t in tables(c) {
        let _ = writeln!(s, "## {}\n\n{}\n", t.title, t.intro);
        if t.rows.is_empty() {
            s.push_str("(none)\n\n");
        } else {
            s.push_str(&md_table(&t));
            s.push('\n');
        }
    }
    s.push_str("## Test details\n\n");
    for t in &c.tests {
        let _ = writeln!(s, "<a id=\"{}\"></a>\n### {}: {}\n", t.id, t.id, t.name);
        let _ = writeln!(s, "- command: `{}` ({})", t.command, t.node);
        let _ = writeln!(
            s,
            "- status: {}{}",
            match t.status {
                TestStatus::Done => "done",
                TestStatus::Failed => "FAILED",
                TestStatus::NotRun => "not run",
            },
            t.error
                .as_deref()
                .map(|e| format!(" ({})", md_escape(e)))
                .unwrap_or_default()
        );
        if let Some(r) = &t.result {
            let _ = writeln!(
                s,
                "- backend: {}, timestamps: {}",
                r.backend.as_deref().unwrap_or("-"),
                r.timestamp_source.as_deref().unwrap_or("-")
            );
            for n in &r.notes {
                let _ = writeln!(s, "- note: {}", md_escape(n));
            }
        }
        let _ = writeln!(s, "- result: results.json, the test with id {}\n", t.id);
    }
    s
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// One CSV per table, as (file stem, text).
pub fn csv_tables(c: &Campaign) -> Vec<(String, String)> {
    tables(c)
        .into_iter()
        .map(|t| {
            let mut s = t
                .headers
                .iter()
                .map(|(h, _)| csv_cell(h))
                .collect::<Vec<_>>()
                .join(",");
            s.push('\n');
            for row in &t.rows {
                s.push_str(
                    &row.iter()
                        .map(|c| csv_cell(c.trim_matches('`')))
                        .collect::<Vec<_>>()
                        .join(","),
                );
                s.push('\n');
            }
            (t.name.to_owned(), s)
        })
        .collect()
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn html_table(t: &Table) -> String {
    let mut s = String::from("<table><thead><tr>");
    for (h, a) in &t.headers {
        let _ = write!(
            s,
            "<th class=\"{}\">{}</th>",
            if *a == Align::Right { "r" } else { "l" },
            html_escape(h)
        );
    }
    s.push_str("</tr></thead><tbody>");
    for row in &t.rows {
        s.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let (h, a) = t.headers.get(i).copied().unwrap_or(("", Align::Left));
            let class = if a == Align::Right { "r" } else { "l" };
            let body = if h == "source" && cell.starts_with('t') {
                format!("<a href=\"#{c}\">{c}</a>", c = html_escape(cell))
            } else if cell == "FAIL" || cell.starts_with("FAILED") {
                format!("<b class=\"fail\">{}</b>", html_escape(cell))
            } else {
                html_escape(cell.trim_matches('`'))
            };
            let _ = write!(s, "<td class=\"{class}\">{body}</td>");
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

/// CDF series, one per (label, stored histogram): (latency µs, % of samples at or below
/// it) at fixed percentiles. A label without a histogram, or one that does not decode,
/// has no series.
fn cdf_series<'a>(
    histograms: impl Iterator<Item = (String, Option<&'a str>)>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    const AT: [f64; 12] = [
        0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0,
    ];
    histograms
        .filter_map(|(label, text)| {
            let h = model::stats::histogram::LatencyHistogram::from_base64(text?).ok()?;
            let pts = AT
                .iter()
                .filter_map(|p| Some((h.percentile_us(*p)?, *p)))
                .collect();
            Some((label, pts))
        })
        .collect()
}

/// The charts the results allow, as (title, SVG).
pub fn charts(c: &Campaign) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // Round-trip CDF of ping-pong latency tests, from their stored histograms.
    for (t, r) in done(c) {
        let series = cdf_series(
            r.latency
                .iter()
                .flatten()
                .map(|row| (format!("{} B", row.size), row.histogram.as_deref())),
        );
        if !series.is_empty() {
            out.push((
                format!("{}: round-trip CDF", t.id),
                svg::lines(
                    &format!("Round-trip latency CDF ({})", t.id),
                    "round trip us",
                    "% of messages",
                    &series,
                ),
            ));
        }
    }
    // FRER per-path loss, per test that ran through the relays.
    let with_paths: Vec<&TestEntry> = c
        .tests
        .iter()
        .filter(|t| !t.frer_paths.is_empty())
        .collect();
    if !with_paths.is_empty() {
        let mut names: Vec<String> = Vec::new();
        for t in &with_paths {
            for p in &t.frer_paths {
                let n = format!("{} {}", p.stream, p.path);
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let cats: Vec<String> = with_paths.iter().map(|t| t.id.clone()).collect();
        let series: Vec<(String, Vec<Option<f64>>)> = names
            .iter()
            .map(|n| {
                let vals = with_paths
                    .iter()
                    .map(|t| {
                        t.frer_paths
                            .iter()
                            .find(|p| &format!("{} {}", p.stream, p.path) == n)
                            .filter(|p| p.sent > 0)
                            .map(|p| {
                                p.sent.saturating_sub(p.received) as f64 / p.sent as f64 * 100.0
                            })
                    })
                    .collect();
                (n.clone(), vals)
            })
            .collect();
        out.push((
            "FRER per-path loss".into(),
            svg::bars("FRER per-path loss by test, %", "%", &cats, &series),
        ));
    }
    // Throughput and loss against offered load: sweeps and RFC 2544 loss steps.
    for (t, r) in done(c) {
        if let Some(s) = &r.sweep {
            let achieved: Vec<(f64, f64)> = s
                .rows
                .iter()
                .map(|x| (x.offered_bps / 1e6, x.achieved_bps / 1e6))
                .collect();
            let loss: Vec<(f64, f64)> = s
                .rows
                .iter()
                .map(|x| (x.offered_bps / 1e6, x.loss_pct))
                .collect();
            out.push((
                format!("{}: throughput against offered load", t.id),
                svg::lines(
                    &format!("Throughput against offered load ({})", t.id),
                    "offered Mbit/s",
                    "achieved Mbit/s",
                    &[("achieved".into(), achieved)],
                ),
            ));
            out.push((
                format!("{}: loss against offered load", t.id),
                svg::lines(
                    &format!("Loss against offered load ({})", t.id),
                    "offered Mbit/s",
                    "loss %",
                    &[("loss".into(), loss)],
                ),
            ));
        }
        if let Some(x) = &r.rfc2544 {
            let mut sizes: Vec<u64> = x.loss.iter().map(|l| l.frame_len).collect();
            sizes.dedup();
            if !sizes.is_empty() {
                let series: Vec<(String, Vec<(f64, f64)>)> = sizes
                    .iter()
                    .map(|len| {
                        (
                            format!("{len} B"),
                            x.loss
                                .iter()
                                .filter(|l| l.frame_len == *len)
                                .map(|l| (l.percent, l.loss_percent))
                                .collect(),
                        )
                    })
                    .collect();
                out.push((
                    format!("{}: frame loss rate", t.id),
                    svg::lines(
                        &format!("Frame loss against offered load ({})", t.id),
                        "offered load, % of line rate",
                        "loss %",
                        &series,
                    ),
                ));
            }
            let with: Vec<_> = x.latency.iter().filter(|l| l.summary.is_some()).collect();
            if !with.is_empty() {
                let cats: Vec<String> = with.iter().map(|l| format!("{} B", l.frame_len)).collect();
                let pick = |f: fn(&model::stats::histogram::LatencySummary) -> f64| {
                    with.iter()
                        .map(|l| l.summary.as_ref().map(f))
                        .collect::<Vec<_>>()
                };
                out.push((
                    format!("{}: latency by frame size", t.id),
                    svg::bars(
                        &format!("Latency percentiles by frame size ({})", t.id),
                        "us",
                        &cats,
                        &[
                            ("p50".into(), pick(|s| s.p50_us)),
                            ("p99".into(), pick(|s| s.p99_us)),
                            ("p99.9".into(), pick(|s| s.p999_us)),
                        ],
                    ),
                ));
                // Latency CDF from the stored histograms.
                let series = cdf_series(
                    x.latency
                        .iter()
                        .map(|l| (format!("{} B", l.frame_len), l.histogram.as_deref())),
                );
                if !series.is_empty() {
                    out.push((
                        format!("{}: latency CDF", t.id),
                        svg::lines(
                            &format!("Latency CDF ({})", t.id),
                            "latency us",
                            "% of frames",
                            &series,
                        ),
                    ));
                }
            }
        }
        if let Some(s) = &r.shaping {
            let rows: Vec<String> = s.sizes.iter().map(|l| format!("{l} B")).collect();
            let cols: Vec<String> = s.bandwidths_bps.iter().map(|b| bps(*b)).collect();
            let values: Vec<Vec<Option<f64>>> = s
                .sizes
                .iter()
                .map(|len| {
                    s.bandwidths_bps
                        .iter()
                        .map(|bw| {
                            s.cells
                                .iter()
                                .find(|c| c.frame_len == *len && c.bandwidth_bps == *bw)
                                .map(|c| c.passed_ratio * 100.0)
                        })
                        .collect()
                })
                .collect();
            out.push((
                format!("{}: passed-rate matrix", t.id),
                svg::heatmap(
                    &format!("Passed rate, % of the configured bandwidth ({})", t.id),
                    &rows,
                    &cols,
                    &values,
                ),
            ));
        }
        if let Some(f) = &r.frer {
            let cats: Vec<String> = f.rows.iter().map(|r| r.metric.clone()).collect();
            let over: Vec<Option<f64>> = f
                .rows
                .iter()
                // Bars show costs; a negative overhead (FRER did better) has no bar, and
                // the table has its value.
                .map(|r| r.overhead_percent.filter(|o| *o > 0.0))
                .collect();
            out.push((
                format!("{}: FRER overhead", t.id),
                svg::bars(
                    &format!(
                        "FRER overhead against the control group, % ({}; gains: see the table)",
                        t.id
                    ),
                    "%",
                    &cats
                        .iter()
                        .map(|c| c.split(" (").next().unwrap_or(c).to_owned())
                        .collect::<Vec<_>>(),
                    &[("overhead".into(), over)],
                ),
            ));
        }
    }
    out
}

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 6px}th{background:#f3f3f3}\
td.r,th.r{text-align:right}td.l,th.l{text-align:left}.fail{color:#b00}\
figure{margin:1em 0}code{font-size:12px}";

/// The report as one self-contained HTML file (inline style and SVG, no scripts, nothing
/// fetched).
pub fn html(c: &Campaign) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = html_escape(&c.title)
    );
    if let Some(d) = &c.description {
        let _ = writeln!(s, "<p>{}</p>", html_escape(d));
    }
    let _ = writeln!(
        s,
        "<p>Run of {} to {}, plan <code>{}</code>, target: {}.</p>",
        html_escape(&c.started_at),
        html_escape(c.finished_at.as_deref().unwrap_or("(unfinished)")),
        html_escape(&c.plan_file),
        html_escape(&c.target)
    );
    if !c.metadata.is_empty() {
        s.push_str("<table><tbody>");
        for (k, v) in &c.metadata {
            let _ = write!(
                s,
                "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
                html_escape(k),
                html_escape(v)
            );
        }
        s.push_str("</tbody></table>\n");
    }
    if let Some(why) = &c.stopped {
        let _ = writeln!(
            s,
            "<p class=\"fail\"><b>The run stopped early: {}.</b></p>",
            html_escape(why)
        );
    }
    s.push_str("<h2>Summary of key findings</h2>\n<ul>");
    for f in findings(c) {
        // Findings link tests as [tN](#tN).
        let mut item = html_escape(&f);
        for t in &c.tests {
            item = item.replace(
                &format!("[{id}](#{id})", id = t.id),
                &format!("<a href=\"#{id}\">{id}</a>", id = t.id),
            );
        }
        let _ = write!(s, "<li>{item}</li>");
    }
    s.push_str("</ul>\n");
    for t in tables(c) {
        let _ = writeln!(
            s,
            "<h2 id=\"{}\">{}</h2>\n<p>{}</p>",
            t.name,
            html_escape(t.title),
            html_escape(&t.intro)
        );
        if t.rows.is_empty() {
            s.push_str("<p>(none)</p>\n");
        } else {
            s.push_str(&html_table(&t));
            s.push('\n');
        }
    }
    let charts = charts(c);
    if !charts.is_empty() {
        s.push_str("<h2>Charts</h2>\n");
        for (title, svg) in charts {
            let _ = writeln!(
                s,
                "<figure>{svg}<figcaption>{}</figcaption></figure>",
                html_escape(&title)
            );
        }
    }
    s.push_str("<h2>Test details</h2>\n");
    for t in &c.tests {
        let _ = write!(
            s,
            "<h3 id=\"{id}\">{id}: {}</h3><p><code>{}</code> ({})<br>status: {}{}</p>",
            html_escape(&t.name),
            html_escape(&t.command),
            html_escape(&t.node),
            match t.status {
                TestStatus::Done => "done",
                TestStatus::Failed => "FAILED",
                TestStatus::NotRun => "not run",
            },
            t.error
                .as_deref()
                .map(|e| format!(" ({})", html_escape(e)))
                .unwrap_or_default(),
            id = t.id,
        );
        if let Some(r) = &t.result {
            if !r.notes.is_empty() {
                s.push_str("<ul>");
                for n in &r.notes {
                    let _ = write!(s, "<li>{}</li>", html_escape(n));
                }
                s.push_str("</ul>");
            }
        }
        s.push('\n');
    }
    s.push_str("</body></html>\n");
    s
}

/// Reads a campaign, or a single command's result document (`wirebench client -J`), which
/// becomes a campaign of one test.
///
/// # Errors
/// Neither kind of document.
pub fn load_any(text: &str) -> Result<Campaign, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if v.get("schema").and_then(|s| s.as_str()) == Some(model::results::SCHEMA) {
        let r: RunResult =
            serde_json::from_value(v).map_err(|e| format!("not a result document: {e}"))?;
        return Ok(Campaign {
            schema: SCHEMA.into(),
            title: r.command.clone(),
            description: None,
            metadata: Default::default(),
            target: String::new(),
            plan_file: String::new(),
            started_at: r.started_at.clone(),
            finished_at: None,
            environment: r.environment.clone(),
            interfaces: vec![],
            tests: vec![TestEntry {
                id: "t1".into(),
                name: r.command.clone(),
                kind: r.command.clone(),
                command: format!("wirebench {}", r.command),
                node: String::new(),
                status: TestStatus::Done,
                error: None,
                duration_s: 0.0,
                result: Some(r),
                frer_paths: vec![],
            }],
            verdicts: vec![],
            stopped: None,
        });
    }
    load(text)
}

/// One figure of a test, for comparisons: (label, unit, value, higher is better).
pub fn key_figures(r: &RunResult) -> Vec<(String, &'static str, f64, bool)> {
    let mut out = Vec::new();
    if let Some(s) = &r.summary {
        if let Some(b) = s.received_bps {
            out.push(("received".into(), "Mbit/s", b / 1e6, true));
        }
        if let Some(l) = s.loss_ratio {
            out.push(("loss".into(), "%", l * 100.0, false));
        }
        if let Some(l) = &s.latency_us {
            out.push(("latency p50".into(), "us", l.p50, false));
            out.push(("latency p99".into(), "us", l.p99, false));
            out.push(("latency p99.9".into(), "us", l.p999, false));
        }
    }
    if let Some(z) = r.sweep.as_ref().and_then(|s| s.max_zero_loss_bps) {
        out.push(("highest zero-loss rate".into(), "Mbit/s", z / 1e6, true));
    }
    for row in r.latency.iter().flatten() {
        out.push((
            format!("{} B round trip p50", row.size),
            "us",
            row.rtt_us.p50,
            false,
        ));
        out.push((
            format!("{} B round trip p99", row.size),
            "us",
            row.rtt_us.p99,
            false,
        ));
    }
    if let Some(x) = &r.rfc2544 {
        for row in &x.throughput {
            if let Some(f) = row.fps {
                out.push((format!("{} B throughput", row.frame_len), "fps", f, true));
            }
        }
        for row in &x.latency {
            if let Some(s) = &row.summary {
                out.push((
                    format!("{} B latency p50", row.frame_len),
                    "us",
                    s.p50_us,
                    false,
                ));
                out.push((
                    format!("{} B latency p99.9", row.frame_len),
                    "us",
                    s.p999_us,
                    false,
                ));
            }
        }
    }
    if let Some(p) = &r.profile {
        for row in &p.rows {
            out.push((
                format!("stream {} received", row.name),
                "Mbit/s",
                row.received_l2_bps / 1e6,
                true,
            ));
        }
    }
    if let Some(f) = &r.frer {
        for row in &f.rows {
            if let Some(v) = row.frer {
                out.push((
                    format!("{} (FRER)", row.metric),
                    "",
                    v,
                    row.unit == "Mbit/s",
                ));
            }
        }
    }
    out
}

/// Two runs side by side: every figure both measured, in the same test (by name, else by
/// position and kind), with the difference and the overhead of B against A (positive: B is
/// worse: less throughput, more loss or latency). Rows: test, figure, unit, A, B, B − A,
/// overhead %.
pub fn compare_rows(a: &Campaign, b: &Campaign) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (i, ta) in a.tests.iter().enumerate() {
        let tb = b
            .tests
            .iter()
            .find(|t| t.name == ta.name)
            .or_else(|| b.tests.get(i).filter(|t| t.kind == ta.kind));
        let (Some(ra), Some(rb)) = (ta.result.as_ref(), tb.and_then(|t| t.result.as_ref())) else {
            continue;
        };
        let fb = key_figures(rb);
        for (label, unit, va, higher) in key_figures(ra) {
            let Some((_, _, vb, _)) = fb.iter().find(|f| f.0 == label) else {
                continue;
            };
            let over = (va != 0.0).then(|| {
                let d = if higher { va - vb } else { vb - va };
                d / va.abs() * 100.0
            });
            rows.push(vec![
                ta.name.clone(),
                label,
                unit.to_owned(),
                format!("{va:.2}"),
                format!("{vb:.2}"),
                format!("{:+.2}", vb - va),
                opt(over, |o| format!("{o:+.1}")),
            ]);
        }
    }
    rows
}

/// [`compare_rows`] as a Markdown report.
pub fn compare_markdown(a: &Campaign, b: &Campaign, a_name: &str, b_name: &str) -> String {
    let t = Table {
        name: "compare",
        title: "Comparison",
        intro: String::new(),
        headers: vec![
            ("test", Align::Left),
            ("figure", Align::Left),
            ("unit", Align::Left),
            ("A", Align::Right),
            ("B", Align::Right),
            ("B - A", Align::Right),
            ("overhead of B %", Align::Right),
        ],
        rows: compare_rows(a, b),
    };
    let mut s = format!(
        "# {} (A) against {} (B)\n\nA: {a_name}, {} ({})\nB: {b_name}, {} ({})\n\nOverhead of B: what B costs against A in % of A (less throughput, more loss or latency is positive).\n\n",
        a.title, b.title, a.started_at, a.target, b.started_at, b.target
    );
    if t.rows.is_empty() {
        s.push_str("No figure was measured in both runs.\n");
    } else {
        s.push_str(&md_table(&t));
    }
    s
}
