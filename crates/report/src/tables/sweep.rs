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

/// The steps of one sweep, as a terminal shows them.
pub fn steps(t: &SweepTable) -> Table {
    let rows = t
        .rows
        .iter()
        .map(|r| {
            vec![
                bps(r.target_bps),
                bps(r.achieved_bps),
                format!("{:.3} %", r.loss_pct),
                format!("{:.1}", r.duration_s),
                flagged(r.status.label(), r.generator_limited),
            ]
        })
        .collect();
    Table::plain("target>|achieved>|loss>|secs>|status", rows)
}

/// The line under the steps: the highest rate without loss.
pub fn conclusion(t: &SweepTable) -> String {
    match t.max_zero_loss_bps {
        Some(v) => format!("maximum sustained zero-loss rate: {}\n", bps(v)),
        None => "maximum sustained zero-loss rate: none (the lowest target already lost packets)\n"
            .into(),
    }
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
                    SweepStatus::Loss => "loss",
                };
                let mut cells = [row.target_bps, row.offered_bps, row.achieved_bps]
                    .map(mbps)
                    .to_vec();
                cells.push(format!("{:.4}", row.loss_pct));
                cells.extend(counts([row.sent_packets, row.lost_packets]));
                cells.push(flagged(status, row.generator_limited));
                cells
            })
            .collect();
        let mut last = vec![String::new(); 7];
        last[2] = opt(s.max_zero_loss_bps, mbps);
        last[6] = "highest zero-loss rate".into();
        rows.push(last);
        rows
    }))
}
