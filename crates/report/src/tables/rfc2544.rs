//! RFC 2544: throughput (§26.1), latency (§26.2), frame loss rate (§26.3), back-to-back
//! (§26.4) and the trial log on a terminal; throughput and loss in the report (latency is
//! in [`super::latency`]). Figures derived from a measurement (Mbit/s, % of line rate)
//! are arithmetic on the measured frame rate and the frame size.

use model::results::campaign::Campaign;
use model::results::rfc2544::{
    BackToBack, LatencyResult, LossRow, Rfc2544Report, Search, ThroughputResult, TrialLog,
};
use model::results::RunResult;
use model::stats::LatencySummary;
use model::units::{bps, us};
use wire::linerate::LineRate;

use super::sections::{LOSS, RFC2544_THROUGHPUT};
use super::{counts, fixed, limited, sourced};
use crate::table::{mbps, opt, Table};

/// Where a throughput row is shown: a terminal gives the efficiency as `50.00 %`; the
/// report names the source test and puts `%` in the header.
#[derive(Clone, Copy, PartialEq)]
enum View {
    Terminal,
    Report,
}

fn throughput_row(x: &ThroughputResult, line: LineRate, view: View) -> Vec<String> {
    let theo = LineRate::rates_at(x.frame_len, x.max_fps);
    let mut note = Vec::new();
    if let Some(cap) = x.generator_cap_fps {
        note.push(format!("generator limited at {cap:.0} fps"));
    }
    // Capped by the generator with no load failing: the device's throughput is at least
    // the figure ("≥"), never the figure itself.
    let at_least = if x.is_lower_bound() {
        note.push("no load failed: the device's throughput is at least this".into());
        "≥ "
    } else {
        ""
    };
    if let Some(i) = &x.irregular {
        note.push(i.clone());
    }
    let efficiency = |f: f64| {
        let p = line.percent_of(x.frame_len, f);
        match view {
            View::Terminal => format!("{p:.2} %"),
            View::Report => format!("{p:.2}"),
        }
    };
    let mut row = vec![
        x.frame_len.to_string(),
        mbps(theo.l2_bps),
        opt(x.fps, |f| {
            format!(
                "{at_least}{}",
                mbps(LineRate::rates_at(x.frame_len, f).l2_bps)
            )
        }),
        opt(x.fps, |f| format!("{at_least}{}", efficiency(f))),
        opt(x.fps, |f| format!("{at_least}{f:.0}")),
        opt(x.lower_fps, |f| format!("{f:.0}")),
        opt(x.upper_fps, |f| format!("{f:.0}")),
        format!("{:?}", x.search).to_lowercase(),
        x.trials.to_string(),
        opt(x.trial_time_s, |t| format!("{t:.1}")),
    ];
    row.push(note.join("; "));
    row
}

/// The worst of the latency verdicts at `frame_len`: `FAIL`, `MARGINAL`, `pass`, or `-`.
fn latency_verdict(r: &RunResult, frame_len: u64) -> String {
    let words: Vec<&str> = r
        .verdicts
        .iter()
        .filter(|v| v.name.contains(&format!(" at {frame_len} bytes")))
        .map(|v| v.word())
        .collect();
    ["FAIL", "MARGINAL", "pass"]
        .into_iter()
        .find(|w| words.contains(w))
        .unwrap_or("-")
        .into()
}

/// Frames/s, marked when the generator could not offer them.
fn offered(fps: f64, generator_limited: bool) -> String {
    if generator_limited {
        format!("{fps:.0} (generator limited)")
    } else {
        format!("{fps:.0}")
    }
}

fn latency_row(r: &RunResult, l: &LatencyResult) -> Vec<String> {
    let s = l.summary.as_ref();
    let mut row = vec![l.frame_len.to_string(), format!("{:.0}", l.fps)];
    row.push(opt(s, |s| s.count.to_string()));
    let stats: [fn(&LatencySummary) -> f64; 6] = [
        |s| s.avg_us,
        |s| s.min_us,
        |s| s.p50_us,
        |s| s.p99_us,
        |s| s.p999_us,
        |s| s.max_us,
    ];
    row.extend(stats.map(|f| opt(s.map(f), us)));
    row.push(latency_verdict(r, l.frame_len));
    row
}

fn loss_row(l: &LossRow) -> Vec<String> {
    let load = format!("{:.0} %", l.percent);
    let mut row = vec![
        l.frame_len.to_string(),
        load,
        offered(l.fps, l.generator_limited),
    ];
    row.extend(counts([l.sent, l.received]));
    row.push(format!("{:.4} %", l.loss_percent));
    row
}

fn b2b_row(b: &BackToBack) -> Vec<String> {
    let mut row = vec![b.frame_len.to_string(), b.bursts.len().to_string()];
    row.push(opt(b.mean, |m| format!("{m:.0}")));
    row.push(opt(b.std_dev, |m| format!("{m:.1}")));
    row.extend([
        opt(b.buffer_time_us, us),
        b.note.clone().unwrap_or_default(),
    ]);
    row
}

/// The tables of one `rfc2544` run on a terminal, each with its title line: throughput,
/// latency, frame loss rate, back-to-back (those it has); the trial log is [`trials`].
pub fn terminal(r: &RunResult, t: &Rfc2544Report) -> Vec<(String, Table)> {
    let line = LineRate(t.line_rate_bps);
    let mlr = t.throughput.iter().any(|x| x.search == Search::Mlr);
    let title = format!(
        "throughput (RFC 2544 §26.1, {} line rate; Mbit/s of frames incl. FCS{})\n",
        bps(t.line_rate_bps as f64),
        if mlr {
            "; mlr: RFC 9971 conditional throughput, the forwarding rate at the lower bound"
        } else {
            ""
        }
    );
    let throughput = t
        .throughput
        .iter()
        .map(|x| throughput_row(x, line, View::Terminal));
    let tables = [
        (title, THROUGHPUT_COLUMNS, throughput.collect::<Vec<_>>()),
        (
            "\nlatency (RFC 2544 §26.2 at the throughput rate, every frame tagged; us)\n".into(),
            "frame>|frames/s>|samples>|average>|min>|p50>|p99>|p99.9>|max>|verdict",
            t.latency.iter().map(|l| latency_row(r, l)).collect(),
        ),
        (
            "\nframe loss rate (RFC 2544 §26.3)\n".into(),
            "frame>|load>|offered fps>|sent>|received>|loss>",
            t.loss.iter().map(loss_row).collect(),
        ),
        (
            "\nback-to-back (RFC 2544 §26.4, RFC 9004)\n".into(),
            "frame>|trials>|mean burst>|std dev>|buffer us>|note",
            t.b2b.iter().map(b2b_row).collect(),
        ),
    ];
    tables
        .into_iter()
        .filter(|(_, _, rows)| !rows.is_empty())
        .map(|(title, columns, rows)| (title, Table::plain(columns, rows)))
        .collect()
}

const THROUGHPUT_COLUMNS: &str = "frame>|theoretical Mbit/s>|measured Mbit/s>|efficiency>|frames/s>|lower fps>|upper fps>|search|trials>|trial s>|note";

fn trial_row(i: usize, x: &TrialLog) -> Vec<String> {
    let load = if x.kind == "burst" {
        format!("burst {:.0}", x.load)
    } else {
        format!("{:.0} fps", x.load)
    };
    let mut row = vec![
        (i + 1).to_string(),
        x.purpose.clone(),
        x.frame_len.to_string(),
        load,
    ];
    row.push(format!("{:.1}", x.duration_s));
    row.extend(counts([x.sent, x.received, x.duplicates]));
    row.push(format!("{:.4} %", x.loss_ratio * 100.0));
    row.push(offered(x.offered_fps, x.generator_limited));
    row
}

/// The trial log: every trial in order.
pub fn trials(t: &Rfc2544Report) -> Table {
    let rows = t.trials.iter().enumerate().map(|(i, x)| trial_row(i, x));
    Table::plain(
        "#>|purpose|frame>|load>|secs>|sent>|received>|dup>|loss>|offered fps>",
        rows.collect(),
    )
}

/// The report's RFC 2544 throughput table.
pub fn throughput_report(c: &Campaign) -> Option<Table> {
    RFC2544_THROUGHPUT.table(sourced(c, |r| {
        let Some(x) = &r.rfc2544 else { return vec![] };
        let line = LineRate(x.line_rate_bps);
        x.throughput
            .iter()
            .map(|row| throughput_row(row, line, View::Report))
            .collect()
    }))
}

fn loss_step(row: &LossRow) -> Vec<String> {
    let mut cells = vec![row.frame_len.to_string()];
    cells.extend(fixed([row.percent, row.fps], 0));
    cells.extend(counts([row.sent, row.received]));
    cells.push(format!("{:.4}", row.loss_percent));
    cells.push(limited(row.generator_limited));
    cells
}

/// The report's frame loss rate table.
pub fn loss_report(c: &Campaign) -> Option<Table> {
    LOSS.per_test(c, |r| r.rfc2544.iter().flat_map(|x| &x.loss), loss_step)
}

#[cfg(test)]
mod test {
    use super::*;

    fn result(upper: Option<f64>, cap: Option<f64>) -> ThroughputResult {
        ThroughputResult {
            frame_len: 64,
            search: Search::Binary,
            fps: Some(100_000.0),
            lower_fps: Some(100_000.0),
            upper_fps: upper,
            max_fps: 1_488_095.0,
            generator_cap_fps: cap,
            irregular: None,
            trials: 3,
            trial_time_s: Some(3.0),
            goal: None,
        }
    }

    /// A search the generator capped, where no load failed, found the tool's limit: the
    /// device's throughput is at least the figure, and the row says "≥".
    #[test]
    fn a_generator_capped_search_without_a_failing_load_is_a_lower_bound() {
        let line = LineRate(1_000_000_000);
        let capped = throughput_row(&result(None, Some(100_000.0)), line, View::Terminal);
        assert_eq!(capped[4], "≥ 100000", "{capped:?}");
        assert!(
            capped[2].starts_with("≥ ") && capped[3].starts_with("≥ "),
            "{capped:?}"
        );
        assert!(capped[10].contains("at least this"), "{capped:?}");
        // A load failed: the figure is the device's, capped or not.
        for (upper, cap) in [(Some(120_000.0), Some(150_000.0)), (None, None)] {
            let row = throughput_row(&result(upper, cap), line, View::Terminal);
            assert_eq!(row[4], "100000", "{row:?}");
        }
    }
}
