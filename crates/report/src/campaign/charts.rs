//! The charts of the HTML report, as (caption, SVG): round-trip and latency percentile
//! plots (HDR style, the x axis in nines) from the stored histograms, FRER per-path loss, block-size sweeps, throughput and loss against
//! offered load, latency percentiles by frame size, the passed-rate matrix and the FRER
//! overhead.

use model::results::campaign::{Campaign, TestEntry};
use model::results::{BlocksizeRow, RunResult};
use model::stats::histogram::{LatencyHistogram, LatencySummary};
use model::units::bps;

use crate::svg;
use crate::tables::blocksize::{Units, WAYS};
use crate::tables::done;

/// A line series: a label and its (x, y) points.
type Series = (String, Vec<(f64, f64)>);

// Line charts of one test, as "caption|title|x axis|y axis": captioned `tN: caption`,
// titled `title (tN)`.
const SWEEP_RATE: &str = "throughput against offered load|Throughput against offered load|offered Mbit/s|achieved Mbit/s";
const SWEEP_LOSS: &str =
    "loss against offered load|Loss against offered load|offered Mbit/s|loss %";
const FRAME_LOSS: &str =
    "frame loss rate|Frame loss against offered load|offered load, % of line rate|loss %";
const OVER_TIME: &str = "throughput over time|Throughput per stream over time|seconds|Mbit/s";
const LATENCY_OVER_TIME: &str =
    "latency over time|Latency percentiles per interval|seconds|latency, us";
const ROUND_TRIPS_OVER_TIME: &str =
    "round trips over time|Round trips per interval (ping-pong)|seconds|round trip, us";
const LOSS_OVER_TIME: &str = "loss over time|Loss per interval|seconds|loss %";
/// Most ping points an RRUL plot draws (every k-th ping beyond).
const MAX_PING_POINTS: usize = 600;

/// The line chart `kind` (see the constants above) of test `id`.
fn lines(id: &str, kind: &str, series: &[Series]) -> (String, String) {
    let mut f = kind.split('|');
    let mut next = || f.next().unwrap_or_default();
    let (caption, title, x, y) = (next(), next(), next(), next());
    // Latency and round trips by decades: a spike does not flatten the rest.
    let scale = if y.starts_with("latency") || y.starts_with("round trip") {
        svg::Scale::Log
    } else {
        svg::Scale::Linear
    };
    let svg = svg::lines(&format!("{title} ({id})"), x, (y, scale), series);
    (format!("{id}: {caption}"), svg)
}

/// Percentile series, one per (label, stored histogram): (percentile, latency µs) at
/// every eighth of a nine from 0 % to 99.999 %, and the maximum, read from the histogram
/// itself. A label without a histogram, or one that does not decode, has no series.
fn percentile_series<'a>(
    histograms: impl Iterator<Item = (String, Option<&'a str>)>,
) -> Vec<Series> {
    let steps = (svg::PERCENTILE_NINES * 8.0) as i32;
    histograms
        .filter_map(|(label, text)| {
            let h = LatencyHistogram::from_base64(text?).ok()?;
            let pts = (0..steps)
                .map(|k| 100.0 * (1.0 - 10f64.powf(-f64::from(k) / 8.0)))
                .chain([100.0])
                .filter_map(|p| Some((p, h.percentile_us(p)?)))
                .collect();
            Some((label, pts))
        })
        .collect()
}

/// A percentile plot of test `id` (`what`: "Round-trip latency", "Latency").
fn percentile_plot(id: &str, what: &str, series: &[Series]) -> (String, String) {
    let svg = svg::percentiles(
        &format!("{what} by percentile ({id})"),
        "latency, us",
        "us",
        series,
    );
    (format!("{id}: {} by percentile", what.to_lowercase()), svg)
}

/// Which report section (table name) each kind of chart illustrates, by its caption
/// (`tN: kind`, or the kind alone for charts over several tests).
const SECTIONS: [(&str, &str); 17] = [
    ("mesh heat map", "mesh"),
    ("round trips over time", "latency"),
    ("throughput over time", "throughput"),
    ("latency over time", "throughput"),
    ("loss over time", "throughput"),
    ("latency under load", "rrul"),
    ("round trips idle and loaded by percentile", "rrul"),
    ("throughput against offered load", "sweep"),
    ("loss against offered load", "sweep"),
    ("frame loss rate", "loss"),
    ("latency by frame size", "latency"),
    ("latency by percentile", "latency"),
    ("round-trip latency by percentile", "latency"),
    ("passed-rate matrix", "shaping"),
    ("FRER overhead", "overhead"),
    ("FRER per-path loss", "frer_paths"),
    ("block-size sweep", "blocksize"),
];

/// The section (table name) a chart of this caption sits beside; `None` for none.
pub(super) fn section(caption: &str) -> Option<&'static str> {
    let kind = caption.split_once(": ").map_or(caption, |(_, k)| k);
    SECTIONS
        .iter()
        .find(|(k, _)| *k == kind || *k == caption)
        .map(|(_, s)| *s)
}

/// The charts the results allow, as (caption, SVG).
pub fn charts(c: &Campaign) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // Round-trip latency of ping-pong tests by percentile, from their stored histograms.
    for (t, r) in done(c) {
        let rows = r.latency.iter().flatten();
        let series = percentile_series(
            rows.map(|row| (format!("{} B", row.size), row.histogram.as_deref())),
        );
        if !series.is_empty() {
            out.push(percentile_plot(&t.id, "Round-trip latency", &series));
        }
    }
    out.extend(path_loss(c));
    out.extend(block_sizes(c));
    for (t, r) in done(c) {
        out.extend(of_test(&t.id, r));
    }
    out
}

/// FRER per-path loss, per test that ran through the relays.
fn path_loss(c: &Campaign) -> Option<(String, String)> {
    let with_paths: Vec<&TestEntry> = c
        .tests
        .iter()
        .filter(|t| !t.frer_paths.is_empty())
        .collect();
    if with_paths.is_empty() {
        return None;
    }
    let name = |stream: &str, path: &str| format!("{stream} {path}");
    let mut names: Vec<String> = Vec::new();
    for p in with_paths.iter().flat_map(|t| &t.frer_paths) {
        let n = name(&p.stream, &p.path);
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let cats: Vec<String> = with_paths.iter().map(|t| t.id.clone()).collect();
    let series: Vec<(String, Vec<Option<f64>>)> = names
        .iter()
        .map(|n| {
            let loss = |t: &&TestEntry| {
                let p = t
                    .frer_paths
                    .iter()
                    .find(|p| name(&p.stream, &p.path) == *n)?;
                (p.sent > 0)
                    .then(|| p.sent.saturating_sub(p.received) as f64 / p.sent as f64 * 100.0)
            };
            (n.clone(), with_paths.iter().map(loss).collect())
        })
        .collect();
    let svg = svg::bars("FRER per-path loss by test, %", "%", &cats, &series);
    Some(("FRER per-path loss".into(), svg))
}

/// Block-size sweeps: Tx and Rx Gbit/s (10^9 bit/s, whatever units a sweep printed in) by
/// block size, one line per test and direction. Block sizes are the categories, labelled
/// as their sweep labels them, in ascending size.
fn block_sizes(c: &Campaign) -> Option<(String, String)> {
    let sweeps: Vec<(&str, Units, &[BlocksizeRow])> = done(c)
        .filter_map(|(t, r)| Some((t.id.as_str(), Units::of(r), r.blocksize.as_deref()?)))
        .filter(|(_, _, rows)| !rows.is_empty())
        .collect();
    if sweeps.is_empty() {
        return None;
    }
    // (bytes, label), by size; one category per label (netio's 32k of 32,767 bytes and
    // 32k of 32,768 bytes are one).
    let mut sizes: Vec<(usize, String)> = sweeps
        .iter()
        .flat_map(|(_, u, rows)| rows.iter().map(|r| (r.block_bytes, u.size(r.block_bytes))))
        .collect();
    sizes.sort();
    let mut cats: Vec<String> = Vec::new();
    for (_, label) in sizes {
        if !cats.contains(&label) {
            cats.push(label);
        }
    }
    let gbit = |mbyte_s: f64| mbyte_s * 8e6 / 1e9;
    let mut series: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for (id, units, rows) in &sweeps {
        for (way, pick) in WAYS {
            let at = |cat: &String| {
                let r = rows.iter().find(|r| units.size(r.block_bytes) == *cat)?;
                Some(gbit(pick(r)))
            };
            series.push((format!("{id} {way}"), cats.iter().map(at).collect()));
        }
    }
    let svg = svg::category_lines(
        "Block-size sweep: Tx and Rx by block size",
        ("block size, bytes", "Gbit/s"),
        svg::Scale::Linear,
        &cats,
        &series,
    );
    Some(("block-size sweep".into(), svg))
}

/// The charts of one test: sweep rate and loss, RFC 2544 loss, latency by frame size and
/// by percentile, the passed-rate matrix, the FRER overhead.
fn of_test(id: &str, r: &RunResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(m) = &r.mesh {
        out.push(mesh(id, m));
    }
    if let Some(s) = &r.sweep {
        let points = |y: fn(f64, f64) -> f64| -> Vec<(f64, f64)> {
            s.rows
                .iter()
                .map(|x| (x.offered_bps / 1e6, y(x.achieved_bps, x.loss_pct)))
                .collect()
        };
        out.push(lines(
            id,
            SWEEP_RATE,
            &[("achieved".into(), points(|a, _| a / 1e6))],
        ));
        out.push(lines(id, SWEEP_LOSS, &[("loss".into(), points(|_, l| l))]));
    }
    if let Some(x) = &r.rfc2544 {
        let mut sizes: Vec<u64> = x.loss.iter().map(|l| l.frame_len).collect();
        sizes.dedup();
        if !sizes.is_empty() {
            let series: Vec<Series> = sizes
                .iter()
                .map(|len| {
                    let steps = x.loss.iter().filter(|l| l.frame_len == *len);
                    (
                        format!("{len} B"),
                        steps.map(|l| (l.percent, l.loss_percent)).collect(),
                    )
                })
                .collect();
            out.push(lines(id, FRAME_LOSS, &series));
        }
        let with: Vec<_> = x.latency.iter().filter(|l| l.summary.is_some()).collect();
        if !with.is_empty() {
            let cats: Vec<String> = with.iter().map(|l| format!("{} B", l.frame_len)).collect();
            let pick = |f: fn(&LatencySummary) -> f64| -> Vec<Option<f64>> {
                with.iter().map(|l| l.summary.as_ref().map(f)).collect()
            };
            let lines = [
                ("p50".into(), pick(|s| s.p50_us)),
                ("p99".into(), pick(|s| s.p99_us)),
                ("p99.9".into(), pick(|s| s.p999_us)),
                ("max".into(), pick(|s| s.max_us)),
            ];
            let title = format!("Latency percentiles by frame size ({id})");
            out.push((
                format!("{id}: latency by frame size"),
                svg::category_lines(
                    &title,
                    ("frame size, bytes", "latency, us"),
                    svg::Scale::Log,
                    &cats,
                    &lines,
                ),
            ));
            // Latency by percentile, from the stored histograms.
            let stored = x
                .latency
                .iter()
                .map(|l| (format!("{} B", l.frame_len), l.histogram.as_deref()));
            let series = percentile_series(stored);
            if !series.is_empty() {
                out.push(percentile_plot(id, "Latency", &series));
            }
        }
    }
    if let Some(s) = &r.shaping {
        let rows: Vec<String> = s.sizes.iter().map(|l| format!("{l} B")).collect();
        let cols: Vec<String> = s.bandwidths_bps.iter().map(|b| bps(*b)).collect();
        let cell = |len: u64, bw: f64| {
            let c = s
                .cells
                .iter()
                .find(|c| c.frame_len == len && c.bandwidth_bps == bw)?;
            Some(c.passed_ratio * 100.0)
        };
        let values: Vec<Vec<Option<f64>>> = s
            .sizes
            .iter()
            .map(|len| s.bandwidths_bps.iter().map(|bw| cell(*len, *bw)).collect())
            .collect();
        let title = format!("Passed rate, % of the configured bandwidth ({id})");
        out.push((
            format!("{id}: passed-rate matrix"),
            svg::heatmap(&title, &rows, &cols, &values),
        ));
    }
    if let Some(x) = &r.rrul {
        out.extend(rrul(id, x));
    } else {
        out.extend(over_time(id, r));
    }
    if let Some(f) = &r.frer {
        let cats: Vec<String> = f
            .rows
            .iter()
            .map(|r| r.metric.split(" (").next().unwrap_or(&r.metric).to_owned())
            .collect();
        // Bars show costs; a negative overhead (FRER did better) has no bar, and the table
        // has its value. Measured more than once, a bar carries the cost's interval.
        let over: Vec<Option<svg::Bar>> = f
            .rows
            .iter()
            .map(|r| {
                let value = r.overhead_percent.filter(|o| *o > 0.0)?;
                let interval = r.difference.as_ref().and_then(|d| d.cost_interval_percent);
                Some(svg::Bar { value, interval })
            })
            .collect();
        let title =
            format!("FRER overhead against the control group, % ({id}; gains: see the table)");
        let svg = svg::bars_with(&title, "%", &cats, &[("overhead".into(), over)]);
        out.push((format!("{id}: FRER overhead"), svg));
    }
    out.extend(repeated(id, r));
    out
}

/// The figures of a repeated test run by run (at most [`REPEATED_CHARTS`]), each with its
/// median and the median's interval.
fn repeated(id: &str, r: &RunResult) -> Vec<(String, String)> {
    let figures = r.repeated.iter().flat_map(|x| &x.figures);
    let with = figures.filter_map(|f| Some((f, f.spread.as_ref()?)));
    with.take(REPEATED_CHARTS)
        .map(|(f, s)| {
            let (unit, k) = crate::tables::repeats::shown_unit(&f.unit);
            let name = crate::tables::repeats::named(f);
            let samples: Vec<f64> = f.samples.iter().map(|v| v * k).collect();
            let what = format!("{name} over {} runs", samples.len());
            let interval = format!("{} interval", s.coverage_label());
            let ci = [s.ci95[0] * k, s.ci95[1] * k];
            let svg = svg::runs(
                &format!("{what} ({id})"),
                unit,
                &samples,
                s.median * k,
                ci,
                &interval,
            );
            (format!("{id}: {what}"), svg)
        })
        .collect()
}

/// How many figures of a repeated test get a chart of their runs (the rest are in the
/// "Repeated measurements" table).
const REPEATED_CHARTS: usize = 2;

/// A mesh's heat map: received Mbit/s from each row's host to each column's, green at the
/// mesh's best pair and red at half of it or less; failed pairs marked.
fn mesh(id: &str, m: &model::results::mesh::MeshReport) -> (String, String) {
    let names: Vec<String> = m.hosts.iter().map(|h| h.name.clone()).collect();
    let best = m
        .cells
        .iter()
        .filter_map(model::results::mesh::MeshCell::received_bps)
        .fold(0.0_f64, f64::max);
    let cells: Vec<Vec<svg::Heat>> = names
        .iter()
        .map(|from| {
            names
                .iter()
                .map(|to| match m.cell(from, to) {
                    None => svg::Heat::Empty,
                    Some(c) if c.error.is_some() => svg::Heat::Failed,
                    Some(c) => match c.received_bps() {
                        Some(b) if best > 0.0 => svg::Heat::Value {
                            text: format!("{:.1}", b / 1e6),
                            off: 2.0 * (best - b) / best,
                        },
                        _ => svg::Heat::Empty,
                    },
                })
                .collect()
        })
        .collect();
    let title = format!("Mesh: received Mbit/s, from (row) to (column) ({id})");
    (
        format!("{id}: mesh heat map"),
        svg::heatmap_of(&title, &names, &names, &cells),
    )
}

/// A test's interval rows over time: throughput per stream and direction (and their sum
/// with several streams), and for UDP the latency percentiles and the loss per interval of
/// each direction. Points sit at the interval's end.
fn over_time(id: &str, r: &RunResult) -> Vec<(String, String)> {
    if r.intervals.is_empty() {
        return Vec::new();
    }
    if r.latency.is_some() {
        // Ping-pong: one message at a time, so its throughput says nothing; its round trips
        // over time do.
        let pick = |f: fn(&model::results::IntervalLatency) -> f64| -> Vec<(f64, f64)> {
            r.intervals
                .iter()
                .filter_map(|x| x.latency.as_ref().map(|l| (x.end_s, f(l))))
                .collect()
        };
        let series = [
            ("p50".to_owned(), pick(|l| l.p50_us)),
            ("p99".to_owned(), pick(|l| l.p99_us)),
            ("max".to_owned(), pick(|l| l.max_us)),
        ];
        if series[0].1.is_empty() {
            return Vec::new();
        }
        return vec![lines(id, ROUND_TRIPS_OVER_TIME, &series)];
    }
    let mut names: Vec<String> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for row in &r.intervals {
        let name = match row.stream {
            Some(n) => format!("{n} {}", row.direction),
            None => format!("SUM {}", row.direction),
        };
        let y = row.received_bps.or(row.sent_bps).unwrap_or(0.0) / 1e6;
        match names.iter().position(|n| *n == name) {
            Some(i) => series[i].1.push((row.end_s, y)),
            None => {
                names.push(name.clone());
                series.push((name, vec![(row.end_s, y)]));
            }
        }
    }
    let mut out = vec![lines(id, OVER_TIME, &series)];
    let sums: Vec<&model::results::IntervalRow> =
        r.intervals.iter().filter(|x| x.stream.is_none()).collect();
    let dirs: Vec<&str> = {
        let mut d: Vec<&str> = sums.iter().map(|x| x.direction.as_str()).collect();
        d.dedup();
        d.sort_unstable();
        d.dedup();
        d
    };
    let mut lat: Vec<Series> = Vec::new();
    let mut loss: Vec<Series> = Vec::new();
    for dir in dirs {
        let rows: Vec<_> = sums.iter().filter(|x| x.direction == dir).collect();
        let pick = |f: fn(&model::results::IntervalLatency) -> f64| -> Vec<(f64, f64)> {
            rows.iter()
                .filter_map(|x| x.latency.as_ref().map(|l| (x.end_s, f(l))))
                .collect()
        };
        if rows.iter().any(|x| x.latency.is_some()) {
            lat.push((format!("p50 {dir}"), pick(|l| l.p50_us)));
            lat.push((format!("p99 {dir}"), pick(|l| l.p99_us)));
            lat.push((format!("max {dir}"), pick(|l| l.max_us)));
        }
        let lost: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|x| match (x.lost_packets, x.sent_packets) {
                (Some(l), Some(n)) if n > 0 => Some((x.end_s, l as f64 * 100.0 / n as f64)),
                _ => None,
            })
            .collect();
        if !lost.is_empty() {
            // Where the loss was placed: in the interval its packets were due (a finished
            // wirebench test), or where the gaps were noticed (an iperf3 peer, older results).
            let how = if rows.iter().all(|x| x.loss_attributed) {
                "packets due"
            } else {
                "gaps noticed"
            };
            loss.push((format!("{dir}, {how}"), lost));
        }
    }
    if !lat.is_empty() {
        out.push(lines(id, LATENCY_OVER_TIME, &lat));
    }
    if !loss.is_empty() {
        out.push(lines(id, LOSS_OVER_TIME, &loss));
    }
    out
}

/// An RRUL test: throughput up and down above the pings' round trips, on one time axis
/// (flent's plot), with the load's start and end; and the idle and loaded round trips by
/// percentile.
fn rrul(id: &str, x: &model::results::rrul::RrulResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let up = x.throughput.iter().map(|p| (p.0, p.1 / 1e6)).collect();
    let down = x.throughput.iter().map(|p| (p.0, p.2 / 1e6)).collect();
    let every = x.pings.len().div_ceil(MAX_PING_POINTS).max(1);
    let pings = x
        .pings
        .iter()
        .step_by(every)
        .map(|p| (p.0, p.1 / 1e3))
        .collect();
    let title = format!(
        "Latency under load ({id}): load from {:.1} s to {:.1} s",
        x.load_from_s, x.load_to_s
    );
    let svg = svg::panels(
        &title,
        "seconds",
        &[
            (
                "Mbit/s",
                svg::Scale::Linear,
                vec![("upload".into(), up), ("download".into(), down)],
            ),
            (
                "ping round trip, ms",
                svg::Scale::Log,
                vec![("ping".into(), pings)],
            ),
        ],
    );
    out.push((format!("{id}: latency under load"), svg));
    let series = percentile_series(
        [
            ("idle".to_owned(), x.idle_histogram.as_deref()),
            ("loaded".to_owned(), x.loaded_histogram.as_deref()),
        ]
        .into_iter(),
    );
    if !series.is_empty() {
        out.push(percentile_plot(id, "Round trips idle and loaded", &series));
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn percentiles_come_from_the_stored_histogram() {
        let mut h = LatencyHistogram::new();
        for us in 1..=10_000u64 {
            h.record_ns(us * 1000);
        }
        let text = h.to_base64();
        let series = percentile_series([("a".to_owned(), Some(text.as_str()))].into_iter());
        let (_, pts) = &series[0];
        // Every eighth of a nine up to 99.999 %, then the maximum.
        assert_eq!(pts.len(), 41);
        assert_eq!(pts[0].0, 0.0);
        let at = |p: f64| pts.iter().find(|(q, _)| (q - p).abs() < 1e-6).map(|x| x.1);
        assert_eq!(at(99.0), h.percentile_us(99.0));
        assert_eq!(at(99.9), h.percentile_us(99.9));
        assert_eq!(pts.last().map(|x| x.0), Some(100.0));
        assert!(pts.windows(2).all(|w| w[0].1 <= w[1].1), "rising: {pts:?}");
        // A label without a histogram, or one that does not decode, has no series.
        let none =
            percentile_series([("b".to_owned(), None), ("c".to_owned(), Some("x"))].into_iter());
        assert!(none.is_empty());
    }
}
