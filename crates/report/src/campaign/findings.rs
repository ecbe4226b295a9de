//! The summary of key findings: one line per test, in words and measured figures only,
//! and the verdict count.

use model::results::campaign::{Campaign, TestStatus};
use model::results::nic::{NicCell, NicMatrix};
use model::results::RunResult;
use model::units::bps;
use wire::linerate::LineRate;

use super::Extras;
use crate::tables::blocksize::{Units, WAYS};

/// A mesh in words: pairs measured, and its lowest and highest pair.
fn mesh(m: &model::results::mesh::MeshReport) -> String {
    let measured: Vec<(&str, &str, f64)> = m
        .cells
        .iter()
        .filter_map(|c| Some((c.from.as_str(), c.to.as_str(), c.received_bps()?)))
        .collect();
    let mut line = format!(
        "{} hosts, {} of {} pairs measured",
        m.hosts.len(),
        measured.len(),
        m.cells.len()
    );
    let by_rate = |a: &&(&str, &str, f64), b: &&(&str, &str, f64)| a.2.total_cmp(&b.2);
    if let (Some(lo), Some(hi)) = (
        measured.iter().min_by(by_rate),
        measured.iter().max_by(by_rate),
    ) {
        line.push_str(&format!(
            "; lowest {} -> {} {}, highest {} -> {} {}",
            lo.0,
            lo.1,
            bps(lo.2),
            hi.0,
            hi.1,
            bps(hi.2)
        ));
    }
    line
}

/// One line per test: what it found, in words and measured figures only.
pub(super) fn findings(c: &Campaign, extras: &dyn Extras) -> Vec<String> {
    let mut out = Vec::new();
    // Facts of the set-up (a PCIe link, the relays' data path) are said once, at the first
    // test they hold for; a later test says one only where it differs.
    let mut facts: Vec<String> = Vec::new();
    let mut once = |parts: &mut Vec<String>, fact: String| {
        if !facts.contains(&fact) {
            facts.push(fact.clone());
            parts.push(fact);
        }
    };
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
        if let Some(x) = &r.rrul {
            let rate = |v: Option<f64>| v.map_or("-".to_owned(), bps);
            parts.push(format!("up {}, down {}", rate(x.up_bps), rate(x.down_bps)));
            if let (Some(i), Some(l)) = (&x.idle, &x.loaded) {
                parts.push(format!(
                    "round trip p50 {:.1} us idle, {:.1} us under load",
                    i.p50, l.p50
                ));
            }
        } else if let Some(s) = &r.summary {
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
        if let Some(m) = &r.mesh {
            parts.push(mesh(m));
        }
        if let Some(s) = &r.sweep {
            parts.push(match s.max_zero_loss_bps {
                Some(z) if s.max_zero_loss_is_lower_bound => {
                    format!(
                        "highest zero-loss rate ≥ {} (generator-limited above)",
                        bps(z)
                    )
                }
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
        parts.extend(crate::tables::repeats::finding(r));
        if let Some(f) = &r.frer {
            if let (Some(c), Some(x)) = (&f.control_data_path, &f.frer_data_path) {
                parts.push(format!("relays' data path: control {c}, FRER {x}"));
            }
            for row in f.rows.iter().filter(|r| r.overhead_percent.is_some()) {
                let said = crate::tables::frer::finding(row);
                let tied = row.difference.as_ref().is_some_and(|d| !d.significant);
                parts.push(if tied {
                    format!("{}: {said}", row.metric)
                } else {
                    format!("{} overhead {said}", row.metric)
                });
            }
        }
        parts.extend(blocksize(r));
        parts.extend(r.nic_matrix.iter().flat_map(nic_matrix));
        for i in &r.interfaces {
            if let Some(p) = i.pcie.as_ref().filter(|p| p.degraded()) {
                let fact = format!(
                    "{} {} PCIe link {}: trained below what the device can do",
                    i.role,
                    i.name,
                    p.words()
                );
                once(&mut parts, fact);
            }
        }
        if let Some(cost) = &r.lab_cost {
            let paths = cost.relay_data_paths();
            if !paths.is_empty() {
                once(
                    &mut parts,
                    format!("relays' data path: {}", paths.join(" and ")),
                );
            }
        }
        parts.extend(extras.findings(t, r));
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

/// A block-size sweep's highest Tx and Rx, with their block sizes, in the sweep's units.
fn blocksize(r: &RunResult) -> Option<String> {
    let rows = r.blocksize.as_deref()?;
    let units = Units::of(r);
    let highest = WAYS.map(|(way, pick)| {
        let best = rows.iter().max_by(|a, b| pick(a).total_cmp(&pick(b)))?;
        Some(format!(
            "highest {way} {} at block {}",
            units.words(pick(best)),
            units.size(best.block_bytes)
        ))
    });
    let [Some(tx), Some(rx)] = highest else {
        return None;
    };
    let netio = if units == Units::Netio {
        " (netio units: powers of 2)"
    } else {
        ""
    };
    Some(format!("{tx}, {rx}{netio}"))
}

/// The NIC matrix: its best MTU with the mean of Tx and Rx over that MTU's sweeps, and the
/// combinations that could not be set.
fn nic_matrix(m: &NicMatrix) -> Vec<String> {
    let units = Units::named(Some(&m.units));
    let mut out = Vec::new();
    if let Some(mtu) = m.best_mtu {
        let means: Vec<f64> = m
            .cells
            .iter()
            .filter(|c| c.mtu == Some(mtu))
            .filter_map(NicCell::mean_mbyte_s)
            .collect();
        let mean = (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64);
        let basis = m.basis_words();
        out.push(match mean {
            Some(v) => format!(
                "best MTU {mtu}: mean of Tx and Rx {}{basis}",
                units.words(v)
            ),
            None => format!("best MTU {mtu}{basis}"),
        });
    } else if m.best_mtu_basis.is_some() {
        out.push(format!("best MTU: none{}", m.basis_words()));
    }
    let failed: Vec<String> = m
        .cells
        .iter()
        .filter_map(|c| Some(format!("{}: {}", c.label, c.error.as_deref()?)))
        .collect();
    if !failed.is_empty() {
        out.push(format!(
            "{} of {} combinations could not be set ({})",
            failed.len(),
            m.cells.len(),
            failed.join("; ")
        ));
    }
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
