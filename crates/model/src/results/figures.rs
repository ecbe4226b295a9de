//! The figures of a result document: every headline figure, with what it measures and
//! where in the document it sits. [`figures`] reads the parts of the results model that
//! several methods share (a summary, a sweep, RFC 2544 rows, ...); a method with figures of
//! its own names them with [`Metric::Named`] (its module says what they are). Plan
//! thresholds pick the figures of their metric; `wirebench compare` puts the figures of
//! two runs side by side.

use super::{BlocksizeRow, LatencyUs, RunResult};
use crate::stats::histogram::LatencySummary;
use crate::units::{block, UnitError};

/// A latency statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Median.
    P50,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Largest.
    Max,
}

impl Stat {
    /// Its name in labels (`p50`, `p99.9`, `max`).
    pub fn label(self) -> &'static str {
        match self {
            Stat::P50 => "p50",
            Stat::P99 => "p99",
            Stat::P999 => "p99.9",
            Stat::Max => "max",
        }
    }

    fn of(self, l: &LatencyUs) -> f64 {
        match self {
            Stat::P50 => l.p50,
            Stat::P99 => l.p99,
            Stat::P999 => l.p999,
            Stat::Max => l.max,
        }
    }

    fn of_summary(self, s: &LatencySummary) -> f64 {
        match self {
            Stat::P50 => s.p50_us,
            Stat::P99 => s.p99_us,
            Stat::P999 => s.p999_us,
            Stat::Max => s.max_us,
        }
    }
}

const STATS: [Stat; 4] = [Stat::P50, Stat::P99, Stat::P999, Stat::Max];

/// What a figure measures, and its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A throughput test's received rate, bit/s of payload.
    ReceivedBps,
    /// A throughput test's loss ratio (0..1).
    Loss,
    /// A throughput test's latency, µs.
    Latency(Stat),
    /// A sweep's highest zero-loss rate, bit/s.
    ZeroLossBps,
    /// A ping-pong round trip per message size, µs.
    RoundTrip(Stat),
    /// RFC 2544 throughput per frame size, frames/s.
    ThroughputFps,
    /// RFC 2544 one-way latency per frame size, µs.
    FrameLatency(Stat),
    /// A profile stream's received rate, L2 bit/s.
    StreamReceivedBps,
    /// A measurement through the FRER network of an overhead comparison, in the row's unit.
    FrerValue,
    /// What FRER cost in a measurement, % of the control.
    FrerOverhead,
    /// A block-size sweep's client-to-server rate per block size, MByte/s (10^6 bytes/s),
    /// as its receiver measured it.
    BlockTx,
    /// A block-size sweep's server-to-client rate per block size, MByte/s (10^6 bytes/s).
    BlockRx,
    /// A NIC matrix combination's client-to-server rate per block size, MByte/s (10^6
    /// bytes/s).
    NicTx,
    /// A NIC matrix combination's server-to-client rate per block size, MByte/s (10^6
    /// bytes/s).
    NicRx,
    /// A figure that one method defines: its threshold name, label and unit come with it.
    Named(Named),
}

impl Metric {
    /// The name of the plan threshold that checks figures of this metric, if any
    /// (`received_bps`, `latency_p99`: a throughput test's, a ping-pong's and an RFC 2544
    /// latency are all checked by `latency_p99`).
    pub fn threshold(self) -> Option<&'static str> {
        let latency = |q: Stat| match q {
            Stat::P50 => "latency_p50",
            Stat::P99 => "latency_p99",
            Stat::P999 => "latency_p999",
            Stat::Max => "latency_max",
        };
        Some(match self {
            Metric::ReceivedBps => "received_bps",
            Metric::Loss => "loss",
            Metric::Latency(q) | Metric::RoundTrip(q) | Metric::FrameLatency(q) => latency(q),
            Metric::ZeroLossBps => "zero_loss_bps",
            Metric::ThroughputFps => "rfc2544_throughput_bps",
            Metric::StreamReceivedBps => "stream_received_bps",
            Metric::FrerValue => return None,
            Metric::FrerOverhead => "frer_overhead",
            Metric::BlockTx => "block_tx_mbyte_s",
            Metric::BlockRx => "block_rx_mbyte_s",
            Metric::NicTx => "nic_tx_mbyte_s",
            Metric::NicRx => "nic_rx_mbyte_s",
            Metric::Named(n) => n.name,
        })
    }
}

impl Figure {
    /// Its value as its threshold reads it: RFC 2544 throughput in L2 bit/s of the frames
    /// incl. FCS (frames/s × size × 8), every other figure as it is.
    pub fn threshold_value(&self) -> f64 {
        match self.metric {
            Metric::ThroughputFps => self.value * self.size.unwrap_or(0) as f64 * 8.0,
            _ => self.value,
        }
    }
}

/// The unit of a figure and of the bounds a threshold puts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bits per second; bounds as rates (`500M`).
    BitsPerSec,
    /// A ratio 0..1; bounds as percentages (`0.1%`).
    Ratio,
    /// Microseconds; bounds as times (`300us`).
    Micros,
    /// A signed percentage; bounds as percentages (`25%`).
    Percent,
    /// Megabytes (10^6 bytes) per second; bounds as plain numbers.
    MBytePerSec,
    /// A plain number at or above zero (a ratio of times: RFC 6349's transfer time ratio);
    /// bounds as plain numbers.
    Number,
}

impl Unit {
    /// Reads a bound written in this unit.
    ///
    /// # Errors
    /// A value not in the unit (`300` for a time, which needs `300us`).
    pub fn parse(self, s: &str) -> Result<f64, UnitError> {
        match self {
            Unit::BitsPerSec => crate::units::rate_bps(s),
            Unit::Ratio => crate::units::percent_ratio(s),
            Unit::Micros => crate::units::time_us(s),
            Unit::Percent => crate::units::percent(s)
                .ok_or_else(|| UnitError::NotASignedPercentage(s.to_owned())),
            Unit::MBytePerSec => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| UnitError::NotMBytesPerSec(s.to_owned())),
            Unit::Number => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| UnitError::NotANumber(s.to_owned())),
        }
    }

    /// A value in this unit as a verdict writes it.
    pub fn show(self, v: f64) -> String {
        match self {
            Unit::BitsPerSec => crate::units::bps(v),
            Unit::Ratio => format!("{:.4} %", v * 100.0),
            Unit::Micros => format!("{v:.1} us"),
            Unit::Percent => format!("{v:+.1} %"),
            Unit::MBytePerSec => format!("{v:.2} MByte/s"),
            Unit::Number => format!("{v:.3}"),
        }
    }

    /// A value in this unit as `wirebench compare` shows it: (unit label, value).
    pub fn compared(self, v: f64) -> (&'static str, f64) {
        match self {
            Unit::BitsPerSec => ("Mbit/s", v / 1e6),
            Unit::Ratio => ("%", v * 100.0),
            Unit::Micros => ("us", v),
            Unit::Percent => ("%", v),
            Unit::MBytePerSec => ("MByte/s", v),
            Unit::Number => ("", v),
        }
    }
}

/// A figure of one method's own: the method's module defines it as a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named {
    /// Its name as a plan's threshold metric (`rrul_up_bps`).
    pub name: &'static str,
    /// What `wirebench compare` calls it, after the figure's row (`up`).
    pub label: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Whether more is better (throughput) or worse (loss, latency).
    pub higher_is_better: bool,
}

impl Named {
    /// A figure of this metric at row `at`.
    pub fn at(self, at: impl Into<String>, value: f64) -> Figure {
        fig(Metric::Named(self), at.into(), None, value)
    }
}

/// One figure of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// What it measures.
    pub metric: Metric,
    /// Its row: `64 B` (a frame or message size), a stream's or a measurement's name, a
    /// block size (`32k`, as [`block`] labels it), a NIC matrix combination and block size
    /// (`mtu 9000: 32k`); empty for a test's summary.
    pub at: String,
    /// The frame, message or block size of its row, bytes.
    pub size: Option<u64>,
    /// The value, in the metric's unit.
    pub value: f64,
    /// The row's own unit (`Mbit/s`, `us`, `%`), for metrics that take it from the row.
    pub unit: Option<String>,
    /// Its spread when it was measured more than once (`--repeat`): `value` is then the
    /// median ([`crate::results::repeats`]).
    pub spread: Option<crate::stats::spread::Spread>,
}

fn fig(metric: Metric, at: String, size: Option<u64>, value: f64) -> Figure {
    Figure {
        metric,
        at,
        size,
        value,
        unit: None,
        spread: None,
    }
}

/// Tx and Rx of each block-size row, at `prefix` + the block's label.
fn block_rows<'a>(
    rows: &'a [BlocksizeRow],
    prefix: &'a str,
    [tx, rx]: [Metric; 2],
) -> impl Iterator<Item = Figure> + 'a {
    rows.iter().flat_map(move |row| {
        let at = format!("{prefix}{}", block(row.block_bytes));
        let size = Some(row.block_bytes as u64);
        [
            fig(tx, at.clone(), size, row.tx_mbyte_s),
            fig(rx, at, size, row.rx_mbyte_s),
        ]
    })
}

/// The figures of the shared parts of `r`, in document order: the summary, the sweep,
/// ping-pong rows, RFC 2544 throughput and latency rows, profile streams, FRER
/// measurements, block-size rows, NIC matrix rows. A figure that was not measured is not there (a NIC matrix combination that
/// could not be set has no rows, so no figures).
pub fn figures(r: &RunResult) -> Vec<Figure> {
    let mut out = Vec::new();
    let summary = |m, v: Option<f64>| v.map(|v| fig(m, String::new(), None, v));
    if let Some(s) = &r.summary {
        out.extend(summary(Metric::ReceivedBps, s.received_bps));
        out.extend(summary(Metric::Loss, s.loss_ratio));
        if let Some(l) = &s.latency_us {
            out.extend(STATS.map(|q| fig(Metric::Latency(q), String::new(), None, q.of(l))));
        }
    }
    out.extend(summary(
        Metric::ZeroLossBps,
        r.sweep.as_ref().and_then(|s| s.max_zero_loss_bps),
    ));
    for row in r.latency.iter().flatten() {
        let size = row.size as u64;
        out.extend(STATS.map(|q| {
            fig(
                Metric::RoundTrip(q),
                format!("{size} B"),
                Some(size),
                q.of(&row.rtt_us),
            )
        }));
    }
    if let Some(x) = &r.rfc2544 {
        for row in &x.throughput {
            out.extend(row.fps.map(|f| {
                fig(
                    Metric::ThroughputFps,
                    format!("{} B", row.frame_len),
                    Some(row.frame_len),
                    f,
                )
            }));
        }
        for row in &x.latency {
            let Some(s) = &row.summary else { continue };
            out.extend(STATS.map(|q| {
                fig(
                    Metric::FrameLatency(q),
                    format!("{} B", row.frame_len),
                    Some(row.frame_len),
                    q.of_summary(s),
                )
            }));
        }
    }
    for row in r.profile.iter().flat_map(|p| &p.rows) {
        out.push(fig(
            Metric::StreamReceivedBps,
            row.name.clone(),
            None,
            row.received_l2_bps,
        ));
    }
    for row in r.frer.iter().flat_map(|f| &f.rows) {
        let measured = |metric, v: Option<f64>| {
            v.map(|value| Figure {
                unit: Some(row.unit.clone()),
                ..fig(metric, row.metric.clone(), None, value)
            })
        };
        out.extend(measured(Metric::FrerValue, row.frer));
        out.extend(measured(Metric::FrerOverhead, row.overhead_percent));
    }
    let rows = r.blocksize.as_deref().unwrap_or_default();
    out.extend(block_rows(rows, "", [Metric::BlockTx, Metric::BlockRx]));
    for cell in r.nic_matrix.iter().flat_map(|m| &m.cells) {
        let prefix = format!("{}: ", cell.label);
        let metrics = [Metric::NicTx, Metric::NicRx];
        out.extend(block_rows(&cell.rows, &prefix, metrics));
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::results::nic::{NicCell, NicMatrix};

    fn row(block_bytes: usize, tx: f64, rx: f64) -> BlocksizeRow {
        BlocksizeRow {
            block_bytes,
            tx_mbyte_s: tx,
            rx_mbyte_s: rx,
            duration_s: 2.0,
            client_cpu: None,
            server_cpu: None,
        }
    }

    fn find<'a>(f: &'a [Figure], metric: Metric, at: &str) -> Option<&'a Figure> {
        f.iter().find(|x| x.metric == metric && x.at == at)
    }

    #[test]
    fn block_sizes_and_nic_cells_are_figures() {
        let mut r = RunResult::new(
            "nicmatrix",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        r.blocksize = Some(vec![row(1024, 418.5, 445.25), row(32767, 900.0, 880.0)]);
        r.nic_matrix = Some(NicMatrix {
            units: "netio".into(),
            cells: vec![
                NicCell {
                    label: "mtu 9000".into(),
                    mtu: Some(9000),
                    rows: vec![row(4096, 1100.0, 1050.0)],
                    ..Default::default()
                },
                NicCell {
                    label: "mtu 9000, rx-lro on".into(),
                    error: Some("driver refused rx-lro".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
        let f = figures(&r);
        let tx = find(&f, Metric::BlockTx, "1k").expect("1k Tx");
        assert_eq!((tx.value, tx.size), (418.5, Some(1024)));
        assert_eq!(
            find(&f, Metric::BlockRx, "1k").map(|x| x.value),
            Some(445.25)
        );
        // 32,767 bytes (netio's "32k") keeps its exact size.
        let odd = find(&f, Metric::BlockRx, "32767").expect("32767 Rx");
        assert_eq!((odd.value, odd.size), (880.0, Some(32767)));
        let nic = find(&f, Metric::NicTx, "mtu 9000: 4k").expect("cell Tx");
        assert_eq!((nic.value, nic.size), (1100.0, Some(4096)));
        assert_eq!(
            find(&f, Metric::NicRx, "mtu 9000: 4k").map(|x| x.value),
            Some(1050.0)
        );
        // The combination that could not be set measured nothing.
        assert!(
            !f.iter().any(|x| x.at.starts_with("mtu 9000, rx-lro on")),
            "{f:?}"
        );
        assert_eq!(f.len(), 6);
    }

    #[test]
    fn bounds_read_in_their_unit_with_the_same_messages() {
        assert_eq!(Unit::Micros.parse("300us"), Ok(300.0));
        assert_eq!(Unit::Percent.parse("-25%"), Ok(-25.0));
        let cases = [
            (Unit::Percent, "x", "'x' is not a percentage (e.g. 25%)"),
            (
                Unit::MBytePerSec,
                "-1",
                "'-1' is not a number of MByte/s (e.g. 110)",
            ),
            (
                Unit::Number,
                "1.2x",
                "'1.2x' is not a plain number at or above 0 (e.g. 1.2)",
            ),
            (
                Unit::Micros,
                "300",
                "'300' is not a time: give a unit, e.g. 300us, 1.5ms, 2s",
            ),
        ];
        for (unit, typed, text) in cases {
            assert_eq!(unit.parse(typed).unwrap_err().to_string(), text);
        }
    }
}
