//! Terminal output. Every function is a pure rendering of the results model: the same
//! result gives the same bytes.

use model::results::{
    BlocksizeRow, IntervalRow, LatencyRow, LatencyUs, RunResult, StreamResult, Summary, SweepTable,
};

use crate::table::{render, Align};
use crate::units::{block, bps, bytes, pct, us};

const L: Align = Align::Left;
const R: Align = Align::Right;

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// One interval line, iperf3-like.
pub fn interval_line(r: &IntervalRow) -> String {
    let mut s = format!(
        "[SUM {}] {:6.2}-{:<6.2} s  sent {:>10} {:>14}",
        r.direction,
        r.start_s,
        r.end_s,
        bytes(r.sent_bytes),
        bps(r.sent_bps)
    );
    if let Some(rb) = r.received_bps {
        s.push_str(&format!("  received {:>14}", bps(rb)));
    }
    if let (Some(lost), Some(sent)) = (r.lost_packets, r.sent_packets) {
        s.push_str(&format!("  lost {lost}/{sent}"));
    }
    if let Some(j) = r.jitter_us {
        s.push_str(&format!("  jitter {} us", us(j)));
    }
    if let Some(rt) = r.retransmits {
        s.push_str(&format!("  retr {rt}"));
    }
    s
}

fn stream_label(s: &StreamResult) -> String {
    format!("{} {}", s.id, s.direction)
}

fn udp_row(label: String, x: &Summary) -> Vec<String> {
    vec![
        label,
        format!("{:.2}", x.duration_s),
        opt(x.target_bps, bps),
        opt(x.offered_bps, bps),
        opt(x.received_bps, bps),
        opt(x.sent_packets, |v| v.to_string()),
        opt(x.received_packets, |v| v.to_string()),
        opt(x.lost_packets, |v| v.to_string()),
        opt(x.loss_ratio, pct),
        opt(x.duplicate_packets, |v| v.to_string()),
        opt(x.reordered_packets, |v| v.to_string()),
        opt(x.late_packets, |v| v.to_string()),
        opt(x.jitter_us, us),
    ]
}

fn tcp_row(label: String, x: &Summary) -> Vec<String> {
    vec![
        label,
        format!("{:.2}", x.duration_s),
        opt(x.offered_bps, bps),
        opt(x.received_bps, bps),
        opt(x.sent_bytes, bytes),
        opt(x.received_bytes, bytes),
        opt(x.retransmits, |v| v.to_string()),
        opt(x.tcp_rtt_us, us),
    ]
}

fn latency_cells(label: String, l: &LatencyUs) -> Vec<String> {
    vec![
        label,
        l.kind.as_str().to_owned(),
        l.count.to_string(),
        us(l.min),
        us(l.avg),
        us(l.p50),
        us(l.p90),
        us(l.p99),
        us(l.p999),
        us(l.max),
    ]
}

/// The summary of a client run: throughput table, latency table, and the facts a reader
/// needs to trust them (backend, timestamps, CPU, pacing, generator limits, notes).
pub fn client_summary(r: &RunResult) -> String {
    let mut out = String::new();
    let udp = r.streams.first().is_some_and(|s| s.protocol == "udp");
    let sums: Vec<(String, &Summary)> = [
        ("SUM tx", r.summary.as_ref()),
        ("SUM rx", r.reverse_summary.as_ref()),
    ]
    .into_iter()
    .filter_map(|(l, s)| s.map(|s| (l.to_owned(), s)))
    .collect();
    let sum_label = |i: usize| -> String {
        // With one direction, the first sum is that direction's.
        let dir = r
            .streams
            .first()
            .map(|s| s.direction.as_str())
            .unwrap_or("tx");
        if sums.len() == 1 {
            format!("SUM {dir}")
        } else {
            sums[i].0.clone()
        }
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for s in &r.streams {
        rows.push(if udp {
            udp_row(stream_label(s), &s.summary)
        } else {
            tcp_row(stream_label(s), &s.summary)
        });
    }
    if r.streams.len() > 1 {
        for (i, (_, s)) in sums.iter().enumerate() {
            rows.push(if udp {
                udp_row(sum_label(i), s)
            } else {
                tcp_row(sum_label(i), s)
            });
        }
    }
    if udp {
        out.push_str(&render(
            &[
                ("stream", L),
                ("secs", R),
                ("target", R),
                ("offered", R),
                ("received", R),
                ("sent", R),
                ("recv", R),
                ("lost", R),
                ("loss", R),
                ("dup", R),
                ("reord", R),
                ("late", R),
                ("jitter us", R),
            ],
            &rows,
        ));
        let mut lat_rows = Vec::new();
        for s in &r.streams {
            if let Some(l) = &s.summary.latency_us {
                lat_rows.push(latency_cells(stream_label(s), l));
            }
        }
        if r.streams.len() > 1 {
            for (i, (_, s)) in sums.iter().enumerate() {
                if let Some(l) = &s.latency_us {
                    lat_rows.push(latency_cells(sum_label(i), l));
                }
            }
        }
        if !lat_rows.is_empty() {
            out.push_str("\nlatency (us)\n");
            out.push_str(&render(
                &[
                    ("stream", L),
                    ("kind", L),
                    ("samples", R),
                    ("min", R),
                    ("avg", R),
                    ("p50", R),
                    ("p90", R),
                    ("p99", R),
                    ("p99.9", R),
                    ("max", R),
                ],
                &lat_rows,
            ));
        } else {
            out.push_str("\nlatency: no samples\n");
        }
    } else {
        out.push_str(&render(
            &[
                ("stream", L),
                ("secs", R),
                ("Tx rate", R),
                ("Rx rate", R),
                ("sent", R),
                ("received", R),
                ("retr", R),
                ("rtt us", R),
            ],
            &rows,
        ));
    }
    out.push('\n');
    out.push_str(&facts(r));
    out
}

/// Backend, timestamp source, CPU, pacing and notes.
pub fn facts(r: &RunResult) -> String {
    let mut out = String::new();
    if let Some(b) = &r.backend {
        out.push_str(&format!("backend: {b}"));
        if let Some(t) = &r.timestamp_source {
            out.push_str(&format!(", timestamps: {t}"));
        }
        if let Some(m) = &r.receive_mode {
            out.push_str(&format!(", receiver: {m}"));
        }
        out.push('\n');
    }
    for (label, s) in [
        ("", r.summary.as_ref()),
        ("reverse ", r.reverse_summary.as_ref()),
    ] {
        let Some(s) = s else { continue };
        let mut parts = Vec::new();
        if let Some(c) = s.sender_cpu {
            parts.push(format!("sender {c:.1} %"));
        }
        if let Some(c) = s.receiver_cpu {
            parts.push(format!("receiver {c:.1} %"));
        }
        if !parts.is_empty() {
            out.push_str(&format!("{label}cpu (of one core): {}\n", parts.join(", ")));
        }
        if let Some(g) = &s.rx_gap_us {
            out.push_str(&format!(
                "{label}pacing at the receiver: gap p50 {} us, p99 {} us{}\n",
                us(g.p50_us),
                us(g.p99_us),
                g.nominal_us
                    .map(|n| format!(" (nominal {} us)", us(n)))
                    .unwrap_or_default()
            ));
        }
        if let Some(p) = &s.pacing_error_us {
            out.push_str(&format!(
                "{label}sender lateness vs schedule: p50 {} us, p99 {} us\n",
                us(p.p50_us),
                us(p.p99_us)
            ));
        }
        if s.generator_limited {
            out.push_str(&format!(
                "{label}GENERATOR LIMITED: the sender could not keep the asked rate\n"
            ));
        }
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The zero-loss sweep table of the FRER report.
pub fn sweep(t: &SweepTable) -> String {
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            vec![
                bps(r.target_bps),
                bps(r.achieved_bps),
                format!("{:.3} %", r.loss_pct),
                format!("{:.1}", r.duration_s),
                if r.generator_limited {
                    format!("{} (generator limited)", r.status.label())
                } else {
                    r.status.label().to_owned()
                },
            ]
        })
        .collect();
    let mut out = render(
        &[
            ("target", R),
            ("achieved", R),
            ("loss", R),
            ("secs", R),
            ("status", L),
        ],
        &rows,
    );
    out.push_str(&match t.max_zero_loss_bps {
        Some(v) => format!("maximum sustained zero-loss rate: {}\n", bps(v)),
        None => "maximum sustained zero-loss rate: none (the lowest target already lost packets)\n"
            .into(),
    });
    out
}

/// The netio-style block-size table.
pub fn blocksize(rows: &[BlocksizeRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                block(r.block_bytes),
                format!("{:.2}", r.tx_mbyte_s),
                format!("{:.2}", r.rx_mbyte_s),
            ]
        })
        .collect();
    render(
        &[("block", R), ("Tx MByte/s", R), ("Rx MByte/s", R)],
        &cells,
    )
}

/// Ping-pong latency per message size.
pub fn latency(rows: &[LatencyRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.size.to_string(),
                r.samples.to_string(),
                r.lost.to_string(),
                us(r.rtt_us.min),
                us(r.rtt_us.avg),
                us(r.rtt_us.p50),
                us(r.rtt_us.p90),
                us(r.rtt_us.p99),
                us(r.rtt_us.p999),
                us(r.rtt_us.p9999),
                us(r.rtt_us.max),
                us(r.half_rtt_p50_us),
            ]
        })
        .collect();
    let mut out = String::from("round-trip time (us)\n");
    out.push_str(&render(
        &[
            ("size", R),
            ("samples", R),
            ("lost", R),
            ("min", R),
            ("avg", R),
            ("p50", R),
            ("p90", R),
            ("p99", R),
            ("p99.9", R),
            ("p99.99", R),
            ("max", R),
            ("half-rtt p50", R),
        ],
        &cells,
    ));
    if let Some(m) = rows.first().map(|r| &r.mode) {
        out.push_str(&format!("mode: {m}\n"));
    }
    out
}

/// One line per verdict: name, pass/FAIL, detail.
pub fn verdicts(r: &RunResult) -> String {
    r.verdicts
        .iter()
        .map(|v| {
            format!(
                "{}: {} ({})\n",
                v.name,
                if v.passed { "pass" } else { "FAIL" },
                v.detail
            )
        })
        .collect()
}

/// The shaper accuracy matrix: passed rate in % of the configured bandwidth, rows frame
/// size, columns bandwidth (the RTX2000 table), then the received rates.
pub fn shaping(r: &RunResult) -> String {
    let Some(m) = &r.shaping else {
        return facts(r);
    };
    let cell = |len: u64, bw: f64| {
        m.cells
            .iter()
            .find(|c| c.frame_len == len && c.bandwidth_bps == bw)
    };
    let mut headers: Vec<(String, Align)> = vec![("frame".into(), R)];
    headers.extend(m.bandwidths_bps.iter().map(|b| (bps(*b), R)));
    let h: Vec<(&str, Align)> = headers.iter().map(|(s, a)| (s.as_str(), *a)).collect();
    let table = |f: &dyn Fn(&model::results::shaping::Cell) -> String| -> String {
        let rows: Vec<Vec<String>> = m
            .sizes
            .iter()
            .map(|len| {
                let mut row = vec![len.to_string()];
                row.extend(
                    m.bandwidths_bps
                        .iter()
                        .map(|bw| cell(*len, *bw).map(f).unwrap_or_else(|| "-".into())),
                );
                row
            })
            .collect();
        render(&h, &rows)
    };
    let mut out = format!(
        "passed rate, % of the configured bandwidth (set by {})\n",
        m.configured_by
    );
    out.push_str(&table(&|c| {
        if c.generator_limited {
            format!("{:.2}*", c.passed_ratio * 100.0)
        } else {
            format!("{:.2}", c.passed_ratio * 100.0)
        }
    }));
    out.push_str("\nreceived, L2 bit/s of frames with FCS\n");
    out.push_str(&table(&|c| bps(c.received_l2_bps)));
    if m.cells.iter().any(|c| c.generator_limited) {
        out.push_str("* generator limited: offered less than the bandwidth\n");
    }
    out.push_str(&facts(r));
    out
}

/// The RFC 2544 tables of the FRER report: throughput (frame size, theoretical, measured,
/// efficiency, frames/s), latency (average, p99, p99.9, verdict), frame loss rate and
/// back-to-back, then the facts. Figures derived from a measurement (Mbit/s, % of line
/// rate) are arithmetic on the measured frame rate and the frame size.
pub fn rfc2544(r: &RunResult) -> String {
    use wire::linerate::LineRate;
    let Some(t) = &r.rfc2544 else {
        return facts(r);
    };
    let line = LineRate(t.line_rate_bps);
    let mut out = String::new();
    if !t.throughput.is_empty() {
        out.push_str(&format!(
            "throughput (RFC 2544 §26.1, {} line rate; Mbit/s of frames incl. FCS)\n",
            bps(t.line_rate_bps as f64)
        ));
        let rows: Vec<Vec<String>> = t
            .throughput
            .iter()
            .map(|x| {
                let theo = LineRate::rates_at(x.frame_len, x.max_fps);
                let meas = x.fps.map(|f| LineRate::rates_at(x.frame_len, f));
                let mut note = Vec::new();
                if let Some(c) = x.generator_cap_fps {
                    note.push(format!("generator limited at {c:.0} fps"));
                }
                if let Some(i) = &x.irregular {
                    note.push(i.clone());
                }
                vec![
                    x.frame_len.to_string(),
                    format!("{:.2}", theo.l2_bps / 1e6),
                    opt(meas, |m| format!("{:.2}", m.l2_bps / 1e6)),
                    opt(x.fps, |f| {
                        format!("{:.2} %", line.percent_of(x.frame_len, f))
                    }),
                    opt(x.fps, |f| format!("{f:.0}")),
                    format!("{:?}", x.search).to_lowercase(),
                    x.trials.to_string(),
                    note.join("; "),
                ]
            })
            .collect();
        out.push_str(&render(
            &[
                ("frame", R),
                ("theoretical Mbit/s", R),
                ("measured Mbit/s", R),
                ("efficiency", R),
                ("frames/s", R),
                ("search", L),
                ("trials", R),
                ("note", L),
            ],
            &rows,
        ));
    }
    if !t.latency.is_empty() {
        out.push_str("\nlatency (RFC 2544 §26.2 at the throughput rate, every frame tagged; us)\n");
        let rows: Vec<Vec<String>> = t
            .latency
            .iter()
            .map(|l| {
                let s = l.summary.as_ref();
                let verdicts: Vec<&str> = r
                    .verdicts
                    .iter()
                    .filter(|v| v.name.ends_with(&format!(" at {} bytes", l.frame_len)))
                    .map(|v| if v.passed { "pass" } else { "FAIL" })
                    .collect();
                vec![
                    l.frame_len.to_string(),
                    format!("{:.0}", l.fps),
                    opt(s, |s| s.count.to_string()),
                    opt(s, |s| us(s.avg_us)),
                    opt(s, |s| us(s.min_us)),
                    opt(s, |s| us(s.p50_us)),
                    opt(s, |s| us(s.p99_us)),
                    opt(s, |s| us(s.p999_us)),
                    opt(s, |s| us(s.max_us)),
                    if verdicts.is_empty() {
                        "-".into()
                    } else if verdicts.contains(&"FAIL") {
                        "FAIL".into()
                    } else {
                        "pass".into()
                    },
                ]
            })
            .collect();
        out.push_str(&render(
            &[
                ("frame", R),
                ("frames/s", R),
                ("samples", R),
                ("average", R),
                ("min", R),
                ("p50", R),
                ("p99", R),
                ("p99.9", R),
                ("max", R),
                ("verdict", L),
            ],
            &rows,
        ));
    }
    if !t.loss.is_empty() {
        out.push_str("\nframe loss rate (RFC 2544 §26.3)\n");
        let rows: Vec<Vec<String>> = t
            .loss
            .iter()
            .map(|l| {
                vec![
                    l.frame_len.to_string(),
                    format!("{:.0} %", l.percent),
                    if l.generator_limited {
                        format!("{:.0} (generator limited)", l.fps)
                    } else {
                        format!("{:.0}", l.fps)
                    },
                    l.sent.to_string(),
                    l.received.to_string(),
                    format!("{:.4} %", l.loss_percent),
                ]
            })
            .collect();
        out.push_str(&render(
            &[
                ("frame", R),
                ("load", R),
                ("offered fps", R),
                ("sent", R),
                ("received", R),
                ("loss", R),
            ],
            &rows,
        ));
    }
    if !t.b2b.is_empty() {
        out.push_str("\nback-to-back (RFC 2544 §26.4, RFC 9004)\n");
        let rows: Vec<Vec<String>> = t
            .b2b
            .iter()
            .map(|b| {
                vec![
                    b.frame_len.to_string(),
                    b.bursts.len().to_string(),
                    opt(b.mean, |m| format!("{m:.0}")),
                    opt(b.std_dev, |m| format!("{m:.1}")),
                    opt(b.buffer_time_us, us),
                    b.note.clone().unwrap_or_default(),
                ]
            })
            .collect();
        out.push_str(&render(
            &[
                ("frame", R),
                ("trials", R),
                ("mean burst", R),
                ("std dev", R),
                ("buffer us", R),
                ("note", L),
            ],
            &rows,
        ));
    }
    out.push_str(&verdicts(r));
    let duplicating = t.trials.iter().filter(|x| x.duplicates > 0).count();
    if duplicating > 0 {
        out.push_str(&format!(
            "\nnote: {duplicating} trial(s) received duplicate frames ({} in all): the device \
             duplicates (e.g. a FRER network whose elimination does not work); duplicates are \
             not counted as received\n",
            t.trials.iter().map(|x| x.duplicates).sum::<u64>()
        ));
    }
    if !t.trials.is_empty() {
        out.push_str(&format!("\ntrial log ({} trials)\n", t.trials.len()));
        let rows: Vec<Vec<String>> = t
            .trials
            .iter()
            .enumerate()
            .map(|(i, x)| {
                vec![
                    (i + 1).to_string(),
                    x.purpose.clone(),
                    x.frame_len.to_string(),
                    if x.kind == "burst" {
                        format!("burst {:.0}", x.load)
                    } else {
                        format!("{:.0} fps", x.load)
                    },
                    format!("{:.1}", x.duration_s),
                    x.sent.to_string(),
                    x.received.to_string(),
                    x.duplicates.to_string(),
                    format!("{:.4} %", x.loss_ratio * 100.0),
                    if x.generator_limited {
                        format!("{:.0} (generator limited)", x.offered_fps)
                    } else {
                        format!("{:.0}", x.offered_fps)
                    },
                ]
            })
            .collect();
        out.push_str(&render(
            &[
                ("#", R),
                ("purpose", L),
                ("frame", R),
                ("load", R),
                ("secs", R),
                ("sent", R),
                ("received", R),
                ("dup", R),
                ("loss", R),
                ("offered fps", R),
            ],
            &rows,
        ));
    }
    out.push_str(&facts(r));
    out
}

/// The FRER overhead table: each measurement in the control group and through FRER, the
/// overhead in % of the control, and the reason measured alongside.
pub fn frer_overhead(r: &RunResult) -> String {
    let Some(f) = &r.frer else {
        return facts(r);
    };
    let num = |v: Option<f64>, unit: &str| match (v, unit) {
        (None, _) => "-".to_owned(),
        (Some(v), "us") => format!("{v:.1} us"),
        (Some(v), "%") => format!("{v:.3} %"),
        (Some(v), _) => format!("{v:.2} {unit}"),
    };
    let rows: Vec<Vec<String>> = f
        .rows
        .iter()
        .map(|x| {
            vec![
                x.metric.clone(),
                num(x.control, &x.unit),
                num(x.frer, &x.unit),
                x.overhead_percent
                    .map(|o| format!("{o:+.1} %"))
                    .unwrap_or_else(|| "-".into()),
                x.reason.clone(),
            ]
        })
        .collect();
    let mut out = format!(
        "FRER overhead\ncontrol: {}\nFRER:    {}\n",
        f.control, f.treatment
    );
    out.push_str(&render(
        &[
            ("measurement", L),
            ("control", R),
            ("FRER", R),
            ("overhead", R),
            ("reason", L),
        ],
        &rows,
    ));
    out.push_str(&verdicts(r));
    out.push_str(&facts(r));
    out
}

/// The multi-stream table of the SmartBits analyzer: per stream and in total, frames sent,
/// received, lost, loss %, the received L2 rate and the expectation, then latency per
/// stream and the facts.
pub fn profile(r: &RunResult) -> String {
    let Some(p) = &r.profile else {
        return facts(r);
    };
    let mut rows: Vec<Vec<String>> = p
        .rows
        .iter()
        .map(|x| {
            vec![
                x.name.clone(),
                x.protocol.clone(),
                x.frame.clone(),
                format!("{:.1} %", x.load_percent),
                x.sent.to_string(),
                x.received.to_string(),
                x.lost.to_string(),
                format!("{:.3} %", x.loss_ratio * 100.0),
                x.duplicates.to_string(),
                format!("{:.2}", x.received_l2_bps / 1e6),
                x.expected_l2_bps
                    .map(|e| {
                        format!(
                            "{:.2} ± {:.0} %",
                            e / 1e6,
                            x.tolerance.unwrap_or(0.0) * 100.0
                        )
                    })
                    .unwrap_or_else(|| "-".into()),
                match (x.passed, x.generator_limited) {
                    (Some(true), _) => "pass".into(),
                    (Some(false), _) => "FAIL".into(),
                    (None, true) => "generator limited".into(),
                    (None, false) => "-".into(),
                },
            ]
        })
        .collect();
    let lost = p.total_sent.saturating_sub(p.total_received);
    rows.push(vec![
        "total".into(),
        String::new(),
        String::new(),
        String::new(),
        p.total_sent.to_string(),
        p.total_received.to_string(),
        lost.to_string(),
        if p.total_sent == 0 {
            "-".into()
        } else {
            format!("{:.3} %", lost as f64 / p.total_sent as f64 * 100.0)
        },
        p.rows.iter().map(|x| x.duplicates).sum::<u64>().to_string(),
        format!("{:.2}", p.total_received_l2_bps / 1e6),
        String::new(),
        String::new(),
    ]);
    let mut out = format!(
        "streams (load in % of {} line rate; Mbit/s of received frames incl. FCS)\n",
        bps(p.line_rate_bps as f64)
    );
    out.push_str(&render(
        &[
            ("stream", L),
            ("proto", L),
            ("frame", R),
            ("load", R),
            ("sent", R),
            ("received", R),
            ("lost", R),
            ("loss", R),
            ("dup", R),
            ("Mbit/s", R),
            ("expected Mbit/s", R),
            ("verdict", L),
        ],
        &rows,
    ));
    let lat: Vec<Vec<String>> = p
        .rows
        .iter()
        .filter_map(|x| {
            x.latency.as_ref().map(|s| {
                vec![
                    x.name.clone(),
                    s.count.to_string(),
                    us(s.min_us),
                    us(s.avg_us),
                    us(s.p50_us),
                    us(s.p99_us),
                    us(s.p999_us),
                    us(s.max_us),
                ]
            })
        })
        .collect();
    if !lat.is_empty() {
        out.push_str("\nlatency per stream (us)\n");
        out.push_str(&render(
            &[
                ("stream", L),
                ("samples", R),
                ("min", R),
                ("avg", R),
                ("p50", R),
                ("p99", R),
                ("p99.9", R),
                ("max", R),
            ],
            &lat,
        ));
    }
    out.push_str(&verdicts(r));
    out.push_str(&facts(r));
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::rfc2544::{BackToBack, LossRow, Rfc2544Report, Search, ThroughputResult};
    use model::results::{SweepRow, SweepStatus, Verdict};

    #[test]
    fn rfc2544_tables_show_theoretical_measured_and_efficiency() {
        let mut r = RunResult::new(
            "rfc2544",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        r.rfc2544 = Some(Rfc2544Report {
            line_rate_bps: 1_000_000_000,
            throughput: vec![ThroughputResult {
                frame_len: 1518,
                search: Search::Mlr,
                fps: Some(40_637.191),
                upper_fps: Some(40_800.0),
                conditional_fps: Some(40_637.191),
                max_fps: 81_274.382,
                generator_cap_fps: None,
                irregular: None,
                trials: 7,
            }],
            loss: vec![LossRow {
                frame_len: 1518,
                percent: 100.0,
                fps: 60_000.0,
                sent: 60_000,
                received: 40_000,
                loss_percent: 33.3333,
                generator_limited: true,
            }],
            b2b: vec![BackToBack {
                frame_len: 1518,
                bursts: vec![],
                mean: None,
                std_dev: None,
                buffer_time_us: None,
                note: Some("throughput is line rate".into()),
            }],
            ..Default::default()
        });
        r.verdicts.push(Verdict {
            name: "latency p99.9 at 1518 bytes".into(),
            passed: false,
            detail: "400 us".into(),
        });
        let t = rfc2544(&r);
        // Half of line rate: 493.50 of 987.00 Mbit/s of frames incl. FCS, 50.00 %.
        let row = t
            .lines()
            .find(|l| l.trim_start().starts_with("1518"))
            .unwrap();
        for cell in ["987.00", "493.50", "50.00 %", "40637", "mlr", "7"] {
            assert!(row.contains(cell), "{cell} in {row}");
        }
        assert!(t.contains("60000 (generator limited)"), "{t}");
        assert!(t.contains("throughput is line rate"), "{t}");
        assert!(t.contains("latency p99.9 at 1518 bytes: FAIL"), "{t}");
        assert!(!t.contains("duplicate frames"), "{t}");
        // A device that duplicates (a FRER network without elimination) is called out.
        let rep = r.rfc2544.as_mut().unwrap();
        rep.trials.push(model::results::rfc2544::TrialLog {
            purpose: "throughput".into(),
            frame_len: 64,
            load: 1000.0,
            kind: "rate".into(),
            duration_s: 1.0,
            sent: 1000,
            received: 1000,
            duplicates: 997,
            loss_ratio: 0.0,
            offered_fps: 1000.0,
            generator_limited: false,
        });
        let t = rfc2544(&r);
        assert!(
            t.contains("1 trial(s) received duplicate frames (997 in all)"),
            "{t}"
        );
        let row = t
            .lines()
            .find(|l| l.contains("throughput") && l.contains("997"))
            .unwrap();
        assert!(row.contains("1000"), "{row}");
    }

    #[test]
    fn sweep_table_is_stable() {
        let t = SweepTable {
            rows: vec![
                SweepRow {
                    target_bps: 400e6,
                    offered_bps: 400e6,
                    achieved_bps: 399.9e6,
                    loss_pct: 0.0,
                    sent_packets: 169_837,
                    lost_packets: 0,
                    duration_s: 5.0,
                    status: SweepStatus::ZeroLoss,
                    generator_limited: false,
                },
                SweepRow {
                    target_bps: 450e6,
                    offered_bps: 440e6,
                    achieved_bps: 438e6,
                    loss_pct: 0.45,
                    sent_packets: 186_820,
                    lost_packets: 841,
                    duration_s: 5.0,
                    status: SweepStatus::Marginal,
                    generator_limited: true,
                },
            ],
            max_zero_loss_bps: Some(400e6),
        };
        let expected = concat!(
            "       target       achieved     loss  secs  status\n",
            "-------------  -------------  -------  ----  ----------------------------\n",
            "400.00 Mbit/s  399.90 Mbit/s  0.000 %   5.0  zero-loss\n",
            "450.00 Mbit/s  438.00 Mbit/s  0.450 %   5.0  marginal (generator limited)\n",
            "maximum sustained zero-loss rate: 400.00 Mbit/s\n",
        );
        assert_eq!(sweep(&t), expected);
    }

    #[test]
    fn blocksize_table_is_stable() {
        let rows = vec![
            BlocksizeRow {
                block_bytes: 1024,
                tx_mbyte_s: 101.234,
                rx_mbyte_s: 99.5,
                duration_s: 2.0,
            },
            BlocksizeRow {
                block_bytes: 32768,
                tx_mbyte_s: 1101.2,
                rx_mbyte_s: 1099.0,
                duration_s: 2.0,
            },
        ];
        let expected = concat!(
            "block  Tx MByte/s  Rx MByte/s\n",
            "-----  ----------  ----------\n",
            "   1k      101.23       99.50\n",
            "  32k     1101.20     1099.00\n",
        );
        assert_eq!(blocksize(&rows), expected);
    }

    #[test]
    fn interval_line_shows_loss_and_jitter() {
        let r = IntervalRow {
            start_s: 0.0,
            end_s: 1.0,
            direction: "tx".into(),
            sent_bytes: 62_500_000,
            received_bytes: Some(62_400_000),
            sent_bps: 500e6,
            received_bps: Some(499.2e6),
            sent_packets: Some(42_459),
            received_packets: Some(42_391),
            lost_packets: Some(68),
            jitter_us: Some(3.125),
            retransmits: None,
        };
        let l = interval_line(&r);
        assert!(
            l.contains("sent   62.50 MB  500.00 Mbit/s") && l.contains("received  499.20 Mbit/s"),
            "{l}"
        );
        assert!(
            l.contains("lost 68/42459") && l.contains("jitter 3.12 us"),
            "{l}"
        );
    }
}
