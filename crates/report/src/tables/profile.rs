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

/// A stream's received rate; `≥` before one that the generator held below its load and
/// the network carried whole: the network carries at least this, how much more is unknown.
fn rate(x: &StreamRow) -> String {
    if x.generator_limited && x.lost == 0 {
        format!("≥ {}", mbps(x.received_l2_bps))
    } else {
        mbps(x.received_l2_bps)
    }
}

fn stream_row(x: &StreamRow) -> Vec<String> {
    let mut row = vec![x.name.clone(), x.protocol.clone(), x.frame.clone()];
    row.push(format!("{:.1} %", x.load_percent));
    row.extend(counts([x.sent, x.received, x.lost]));
    row.push(format!("{:.3} %", x.loss_ratio * 100.0));
    row.extend([x.duplicates.to_string(), rate(x)]);
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

/// Where the lost frames went (`None` without an account): each place that dropped
/// frames while the streams ran, by its own counter, its share of the lost frames, and
/// what no counter accounts for.
pub fn drops(p: &ProfileReport) -> Option<Table> {
    let a = p.drops.as_ref()?;
    let share = |n: i64| {
        if a.lost == 0 {
            "-".to_owned()
        } else {
            // A share that rounds to zero reads 0.0 %, whatever its sign.
            let v = n as f64 * 100.0 / a.lost as f64;
            format!("{:.1} %", if v.abs() < 0.05 { 0.0 } else { v })
        }
    };
    let mut rows: Vec<Vec<String>> = a
        .sites
        .iter()
        .map(|s| {
            let n = i64::try_from(s.dropped).unwrap_or(i64::MAX);
            vec![s.site.clone(), s.dropped.to_string(), share(n)]
        })
        .collect();
    rows.push(vec![
        "not counted by any of these (still queued at the end, or dropped elsewhere)".into(),
        a.unattributed.to_string(),
        share(a.unattributed),
    ]);
    rows.push(vec![
        "lost (sent − received)".into(),
        a.lost.to_string(),
        share(i64::try_from(a.lost).unwrap_or(i64::MAX)),
    ]);
    Some(Table::plain("dropped at|frames>|of lost>", rows))
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
    cells.extend([row.duplicates.to_string(), rate(row), verdict(row)]);
    cells
}

/// The report's table: every stream of every profile.
pub fn report(c: &Campaign) -> Option<Table> {
    STREAMS.per_test(c, |r| r.profile.iter().flat_map(|p| &p.rows), report_row)
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::profile::{DropAccount, DropSite};

    fn row(name: &str, sent: u64, received: u64, limited: bool) -> StreamRow {
        StreamRow {
            name: name.into(),
            source: "talker:eth0".into(),
            destination: "listener:eth0".into(),
            protocol: "udp".into(),
            frame: "1024".into(),
            mean_frame_len: 1024.0,
            load_percent: 50.0,
            target_fps: 1000.0,
            sent,
            received,
            lost: sent - received,
            loss_ratio: (sent - received) as f64 / sent as f64,
            duplicates: 0,
            reordered: 0,
            received_l2_bps: 8e6,
            active_s: 1.0,
            generator_limited: limited,
            latency: None,
            expected_l2_bps: None,
            tolerance: None,
            passed: None,
        }
    }

    #[test]
    fn a_held_back_stream_the_network_carried_whole_is_a_lower_bound() {
        assert_eq!(rate(&row("a", 900, 900, true)), "≥ 8.00");
        // Lost frames despite the generator: the loss is the network's, the rate measured.
        assert_eq!(rate(&row("b", 900, 800, true)), "8.00");
        assert_eq!(rate(&row("c", 1000, 1000, false)), "8.00");
    }

    #[test]
    fn the_drop_account_names_each_site_and_what_no_counter_saw() {
        let mut p = ProfileReport {
            rows: vec![row("a", 1000, 400, false)],
            total_sent: 1000,
            total_received: 400,
            ..ProfileReport::default()
        };
        assert!(drops(&p).is_none());
        let site = |s: &str, d| DropSite {
            site: s.into(),
            dropped: d,
        };
        p.drops = Some(DropAccount::of(
            600,
            vec![
                site("ingress limiter dut eth2", 450),
                site("shaper class 1:10 (10Mbit)", 140),
            ],
        ));
        let t = drops(&p).expect("a table").text();
        assert!(
            t.contains("ingress limiter dut eth2") && t.contains("75.0 %"),
            "{t}"
        );
        assert!(t.contains("not counted") && t.contains("1.7 %"), "{t}");
    }
}
