//! Zero-loss sweeps: the steps on a terminal, and the report's table of every sweep with
//! its highest zero-loss rate.

use model::results::campaign::Campaign;
use model::results::{SweepStatus, SweepTable};
use model::units::bps;

use super::sections::SWEEP;
use super::{counts, sourced};
use crate::table::{mbps, opt, Table};

fn flagged(label: &str, generator_limited: bool) -> String {
    if generator_limited {
        format!("{label} (generator limited)")
    } else {
        label.to_owned()
    }
}

/// `lo–hi` of a repeated step, or the one value.
fn range(one: f64, range: Option<[f64; 2]>, show: impl Fn(f64) -> String) -> String {
    match range {
        Some([lo, hi]) => format!("{}–{}", show(lo), show(hi)),
        None => show(one),
    }
}

/// The steps of one sweep, as a terminal shows them (min–max of repeated steps).
pub fn steps(t: &SweepTable) -> Table {
    let rows = t
        .rows
        .iter()
        .map(|r| {
            let mbit = |v: f64| format!("{:.2}", v / 1e6);
            let achieved = match r.achieved_range_bps {
                Some(_) => range(r.achieved_bps, r.achieved_range_bps, mbit) + " Mbit/s",
                None => bps(r.achieved_bps),
            };
            vec![
                bps(r.target_bps),
                achieved,
                range(r.loss_pct, r.loss_range_pct, |v| format!("{v:.3}")) + " %",
                format!("{:.1}", r.duration_s),
                flagged(r.status.label(), r.generator_limited),
            ]
        })
        .collect();
    Table::plain("target>|achieved>|loss>|secs>|status", rows)
}

/// The lines under the steps: the highest rate without loss, the recommended operating
/// rate, and the loss limits of the levels.
pub fn conclusion(t: &SweepTable) -> String {
    let mut out = match t.max_zero_loss_bps {
        Some(v) if t.max_zero_loss_is_lower_bound => format!(
            "maximum sustained zero-loss rate: ≥ {} (generator-limited above: the network lost nothing the generator could offer)\n",
            bps(v)
        ),
        Some(v) => format!("maximum sustained zero-loss rate: {}\n", bps(v)),
        None => "maximum sustained zero-loss rate: none (the lowest target already lost packets)\n"
            .into(),
    };
    if let (Some(op), Some(m)) = (t.operating_bps, t.safety_margin) {
        out.push_str(&format!(
            "recommended operating rate: {} ({} of the zero-loss rate)\n",
            bps(op),
            model::units::pct(m)
        ));
    }
    if let (Some(m), Some(h)) = (t.marginal_pct, t.high_pct) {
        out.push_str(&format!(
            "levels: marginal up to {} loss, high loss from {}\n",
            model::units::pct(m / 100.0),
            model::units::pct(h / 100.0)
        ));
    }
    out
}

/// The report's table: every step of every sweep, then its highest zero-loss rate.
pub fn report(c: &Campaign) -> Option<Table> {
    SWEEP.table(sourced(c, |r| {
        let Some(s) = &r.sweep else { return vec![] };
        let mut rows: Vec<Vec<String>> = s
            .rows
            .iter()
            .map(|row| {
                let status = match row.status {
                    SweepStatus::ZeroLoss => "zero loss",
                    SweepStatus::Marginal => "marginal",
                    SweepStatus::Loss => "loss detected",
                    SweepStatus::HighLoss => "high loss",
                };
                let mut cells = [row.target_bps, row.offered_bps].map(mbps).to_vec();
                cells.push(range(row.achieved_bps, row.achieved_range_bps, mbps));
                cells.push(range(row.loss_pct, row.loss_range_pct, |v| {
                    format!("{v:.4}")
                }));
                cells.extend(counts([row.sent_packets, row.lost_packets]));
                cells.push(flagged(status, row.generator_limited));
                cells
            })
            .collect();
        let mut last = vec![String::new(); 7];
        last[2] = opt(s.max_zero_loss_bps, |v| {
            let at_least = if s.max_zero_loss_is_lower_bound {
                "≥ "
            } else {
                ""
            };
            format!("{at_least}{}", mbps(v))
        });
        last[6] = "highest zero-loss rate".into();
        rows.push(last);
        if let (Some(op), Some(m)) = (s.operating_bps, s.safety_margin) {
            let mut row = vec![String::new(); 7];
            row[2] = mbps(op);
            row[6] = format!(
                "recommended operating rate ({} margin)",
                model::units::pct(m)
            );
            rows.push(row);
        }
        rows
    }))
}
