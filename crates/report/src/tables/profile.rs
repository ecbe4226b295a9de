//! Multi-stream profiles (`streams`, the SmartBits analyzer's view): per stream and in
//! total on a terminal, with latency per stream; one row per stream in the report.

use model::results::campaign::Campaign;
use model::results::profile::{ProfileReport, StreamRow};
use model::units::us;

use super::counts;
use super::sections::STREAMS;
use crate::table::{mbps, Table};

fn verdict(x: &StreamRow) -> String {
    match (x.passed, x.generator_limited) {
        (Some(true), _) => "pass".into(),
        (Some(false), _) => "FAIL".into(),
        (None, true) => "generator limited".into(),
        (None, false) => "-".into(),
    }
}

fn stream_row(x: &StreamRow) -> Vec<String> {
    let mut row = vec![x.name.clone(), x.protocol.clone(), x.frame.clone()];
    row.push(format!("{:.1} %", x.load_percent));
    row.extend(counts([x.sent, x.received, x.lost]));
    row.push(format!("{:.3} %", x.loss_ratio * 100.0));
    row.extend([x.duplicates.to_string(), mbps(x.received_l2_bps)]);
    let tolerance = x.tolerance.unwrap_or(0.0) * 100.0;
    let expected = x
        .expected_l2_bps
        .map(|e| format!("{:.2} ± {tolerance:.0} %", e / 1e6));
    row.extend([expected.unwrap_or_else(|| "-".into()), verdict(x)]);
    row
}

/// Every stream and the total, as a terminal shows them.
pub fn streams(p: &ProfileReport) -> Table {
    let mut rows: Vec<Vec<String>> = p.rows.iter().map(stream_row).collect();
    let lost = p.total_sent.saturating_sub(p.total_received);
    let mut total = vec![String::new(); 12];
    total[0] = "total".into();
    total[4] = p.total_sent.to_string();
    total[5] = p.total_received.to_string();
    total[6] = lost.to_string();
    total[7] = if p.total_sent == 0 {
        "-".into()
    } else {
        format!("{:.3} %", lost as f64 / p.total_sent as f64 * 100.0)
    };
    total[8] = p.rows.iter().map(|x| x.duplicates).sum::<u64>().to_string();
    total[9] = mbps(p.total_received_l2_bps);
    rows.push(total);
    Table::plain(
        "stream|proto|frame>|load>|sent>|received>|lost>|loss>|dup>|Mbit/s>|expected Mbit/s>|verdict",
        rows,
    )
}

/// Latency per stream (`None` when no stream has samples).
pub fn latency(p: &ProfileReport) -> Option<Table> {
    let rows: Vec<Vec<String>> = p
        .rows
        .iter()
        .filter_map(|x| {
            let s = x.latency.as_ref()?;
            let mut row = vec![x.name.clone(), s.count.to_string()];
            row.extend([s.min_us, s.avg_us, s.p50_us, s.p99_us, s.p999_us, s.max_us].map(us));
            Some(row)
        })
        .collect();
    (!rows.is_empty())
        .then(|| Table::plain("stream|samples>|min>|avg>|p50>|p99>|p99.9>|max>", rows))
}

fn report_row(row: &StreamRow) -> Vec<String> {
    let mut cells = vec![row.name.clone(), row.frame.clone()];
    cells.push(format!("{:.1}", row.load_percent));
    cells.extend(counts([row.sent, row.received, row.lost]));
    cells.push(format!("{:.4}", row.loss_ratio * 100.0));
    cells.extend([
        row.duplicates.to_string(),
        mbps(row.received_l2_bps),
        verdict(row),
    ]);
    cells
}

/// The report's table: every stream of every profile.
pub fn report(c: &Campaign) -> Option<Table> {
    STREAMS.per_test(c, |r| r.profile.iter().flat_map(|p| &p.rows), report_row)
}
