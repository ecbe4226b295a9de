//! Latency: ping-pong round trips per message size on a terminal, and the report's table
//! of RFC 2544 latency (one-way, per frame size) and ping-pong round trips together.

use model::results::campaign::Campaign;
use model::results::{LatencyRow, RunResult};
use model::stats::LatencySummary;
use model::units::us;

use super::sections::LATENCY;
use super::{done, sourced};
use crate::table::{opt, Table};

/// Ping-pong round trips per message size, as a terminal shows them.
pub fn round_trips(rows: &[LatencyRow]) -> Table {
    let cells = rows
        .iter()
        .map(|r| {
            let l = &r.rtt_us;
            let mut row = vec![
                r.size.to_string(),
                r.samples.to_string(),
                r.lost.to_string(),
            ];
            row.extend(
                [
                    l.min,
                    l.avg,
                    l.p50,
                    l.p90,
                    l.p99,
                    l.p999,
                    l.p9999,
                    l.max,
                    r.half_rtt_p50_us,
                ]
                .map(us),
            );
            row
        })
        .collect();
    Table::plain(
        "size>|samples>|lost>|min>|avg>|p50>|p90>|p99>|p99.9>|p99.99>|max>|half-rtt p50>",
        cells,
    )
}

/// The verdicts of the plan's `latency_*` thresholds of test `id` and of the test's own
/// latency limits at `frame_len`, as `pass`/`MARGINAL`/`FAIL` joined, or `-`.
fn frame_verdict(c: &Campaign, id: &str, r: &RunResult, frame_len: u64) -> String {
    let v = c
        .verdicts
        .iter()
        .chain(&r.verdicts)
        .filter(|v| v.name.starts_with("latency"))
        .filter(|v| {
            v.name.contains(&format!("at {frame_len} B"))
                || v.name.contains(&format!("at {frame_len} bytes"))
        })
        .filter(|v| v.name.contains(&format!("({id})")) || r.verdicts.contains(v))
        .map(|v| v.word())
        .collect::<Vec<_>>()
        .join(", ");
    if v.is_empty() {
        "-".into()
    } else {
        v
    }
}

/// The report's latency table: RFC 2544 latency per frame size at the throughput rate,
/// then ping-pong round trips; figures with one decimal.
pub fn report(c: &Campaign) -> Option<Table> {
    let one = |v: Option<f64>| opt(v, |v| format!("{v:.1}"));
    let frames = done(c).flat_map(|(t, r)| {
        let rows = r.rfc2544.iter().flat_map(|x| &x.latency);
        rows.map(move |row| {
            let s = row.summary.as_ref();
            let mut cells = vec![t.id.clone(), "RFC 2544, one-way".into()];
            cells.extend([row.frame_len.to_string(), format!("{:.0}", row.fps)]);
            let stats: [fn(&LatencySummary) -> f64; 5] = [
                |s| s.avg_us,
                |s| s.p50_us,
                |s| s.p99_us,
                |s| s.p999_us,
                |s| s.max_us,
            ];
            cells.extend(stats.map(|f| one(s.map(f))));
            cells.push(frame_verdict(c, &t.id, r, row.frame_len));
            cells
        })
    });
    let pingpong = sourced(c, |r| {
        let rows = r.latency.iter().flatten();
        rows.map(|row| {
            let s = &row.rtt_us;
            let mut cells = vec![
                "ping-pong, round trip".into(),
                row.size.to_string(),
                "-".into(),
            ];
            cells.extend([s.avg, s.p50, s.p99, s.p999, s.max].map(|v| one(Some(v))));
            cells.push("-".into());
            cells
        })
        .collect()
    });
    LATENCY.table(frames.chain(pingpong).collect())
}
