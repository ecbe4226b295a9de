//! The summary of key findings: one line per test, in words and measured figures only,
//! and the verdict count.

use model::results::campaign::{Campaign, TestStatus};
use model::units::bps;
use wire::linerate::LineRate;

/// One line per test: what it found, in words and measured figures only.
pub(super) fn findings(c: &Campaign) -> Vec<String> {
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
    out.push(thresholds(c.verdicts.len(), failed));
    out
}

/// The thresholds' outcome in a sentence.
fn thresholds(total: usize, failed: usize) -> String {
    match (total, failed) {
        (0, _) => "The plan set no thresholds.".into(),
        (1, 0) => "The plan's one threshold passed.".into(),
        (1, _) => "The plan's one threshold FAILED (see compliance).".into(),
        (n, 0) => format!("All {n} thresholds passed."),
        (n, f) => format!("{f} of {n} thresholds FAILED (see compliance)."),
    }
}

#[cfg(test)]
mod test {
    #[test]
    fn one_threshold_is_not_all_of_them() {
        assert_eq!(super::thresholds(1, 0), "The plan's one threshold passed.");
        assert_eq!(super::thresholds(3, 0), "All 3 thresholds passed.");
        assert!(super::thresholds(1, 1).contains("one threshold FAILED"));
        assert!(super::thresholds(8, 1).starts_with("1 of 8 thresholds FAILED"));
    }
}
