//! Throughput tests (`client`): per stream and summed on a terminal, one row per test in
//! the report.

use model::results::campaign::Campaign;
use model::results::{LatencyUs, RunResult, StreamResult, Summary};
use model::units::{pct, us, Fixed};

use crate::text::Show;

use super::sections::THROUGHPUT;
use super::{done, limited};
use crate::table::{mbps, opt, Table};

fn udp_row(label: String, x: &Summary, unit: Option<Fixed>) -> Vec<String> {
    let count = |v: Option<u64>| opt(v, |v| v.to_string());
    let mut row = vec![label, format!("{:.2}", x.duration_s)];
    let show = Show(unit);
    row.extend([x.target_bps, x.offered_bps, x.received_bps].map(|v| opt(v, |v| show.rate(v))));
    row.extend([x.sent_packets, x.received_packets, x.lost_packets].map(count));
    row.push(opt(x.loss_ratio, pct));
    row.extend([x.duplicate_packets, x.reordered_packets, x.late_packets].map(count));
    row.push(opt(x.jitter_us, us));
    row
}

fn tcp_row(label: String, x: &Summary, unit: Option<Fixed>) -> Vec<String> {
    let mut row = vec![label, format!("{:.2}", x.duration_s)];
    let show = Show(unit);
    row.extend([x.offered_bps, x.received_bps].map(|v| opt(v, |v| show.rate(v))));
    row.extend([x.sent_bytes, x.received_bytes].map(|v| opt(v, |b| show.amount(b))));
    row.extend([opt(x.retransmits, |v| v.to_string()), opt(x.tcp_rtt_us, us)]);
    row
}

fn latency_row(label: String, l: &LatencyUs) -> Vec<String> {
    let mut row = vec![label, l.kind.as_str().to_owned(), l.count.to_string()];
    row.extend([l.min, l.avg, l.p50, l.p90, l.p99, l.p999, l.max].map(us));
    row
}

/// A client run on a terminal: the streams table (UDP or TCP columns, a sum row per
/// direction when there are several streams) and, for UDP, the latency table (`None` when
/// no stream has latency samples).
pub fn streams(r: &RunResult) -> (Table, Option<Table>) {
    streams_in(r, None)
}

/// [`streams`] with rates and amounts in one unit (`-f`), or scaled when `None`.
pub fn streams_in(r: &RunResult, unit: Option<Fixed>) -> (Table, Option<Table>) {
    let udp = r.streams.first().is_some_and(|s| s.protocol == "udp");
    let sums: Vec<(&str, &Summary)> = [
        ("SUM tx", r.summary.as_ref()),
        ("SUM rx", r.reverse_summary.as_ref()),
    ]
    .into_iter()
    .filter_map(|(l, s)| s.map(|s| (l, s)))
    .collect();
    // With one direction, the first sum is that direction's.
    let dir = r
        .streams
        .first()
        .map(|s| s.direction.as_str())
        .unwrap_or("tx");
    let sum_label = |i: usize| -> String {
        if sums.len() == 1 {
            format!("SUM {dir}")
        } else {
            sums[i].0.to_owned()
        }
    };
    let label = |s: &StreamResult| format!("{} {}", s.id, s.direction);
    let several = r.streams.len() > 1;
    let labelled: Vec<(String, &Summary)> = r
        .streams
        .iter()
        .map(|s| (label(s), &s.summary))
        .chain(
            sums.iter()
                .enumerate()
                .filter(|_| several)
                .map(|(i, (_, s))| (sum_label(i), *s)),
        )
        .collect();
    if !udp {
        let rows = labelled
            .into_iter()
            .map(|(l, s)| tcp_row(l, s, unit))
            .collect();
        return (
            Table::plain(
                "stream|secs>|Tx rate>|Rx rate>|sent>|received>|retr>|rtt us>",
                rows,
            ),
            None,
        );
    }
    let lat: Vec<Vec<String>> = labelled
        .iter()
        .filter_map(|(l, s)| s.latency_us.as_ref().map(|x| latency_row(l.clone(), x)))
        .collect();
    let rows = labelled
        .into_iter()
        .map(|(l, s)| udp_row(l, s, unit))
        .collect();
    (
        Table::plain(
            "stream|secs>|target>|offered>|received>|sent>|recv>|lost>|loss>|dup>|reord>|late>|jitter us>",
            rows,
        ),
        (!lat.is_empty()).then(|| {
            Table::plain(
                "stream|kind|samples>|min>|avg>|p50>|p90>|p99>|p99.9>|max>",
                lat,
            )
        }),
    )
}

/// The report's throughput table: one row per test with a summary.
pub fn report(c: &Campaign) -> Option<Table> {
    // An rrul test's load is in its own table.
    let rows = done(c)
        .filter(|(_, r)| r.rrul.is_none())
        .filter_map(|(t, r)| {
            let s = r.summary.as_ref()?;
            let proto = r.params["test"]["protocol"]
                .as_str()
                .or_else(|| r.params["protocol"].as_str())
                .unwrap_or("-");
            let count = |v: Option<u64>| opt(v, |d| d.to_string());
            Some(vec![
                t.id.clone(),
                t.name.clone(),
                proto.to_owned(),
                format!("{:.1}", s.duration_s),
                opt(s.offered_bps, mbps),
                opt(s.received_bps, mbps),
                opt(s.loss_ratio, |l| format!("{:.4}", l * 100.0)),
                count(s.duplicate_packets),
                count(s.reordered_packets),
                opt(s.latency_us.as_ref(), |l| format!("{:.1}", l.p99)),
                limited(s.generator_limited),
            ])
        });
    THROUGHPUT.table(rows.collect())
}
