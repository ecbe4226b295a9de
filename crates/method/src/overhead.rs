//! What FRER costs: the same three measurements (TCP throughput, unlimited UDP throughput
//! and its loss, 64-byte UDP ping-pong latency) through a network whose relays run IEEE
//! 802.1CB replication and elimination, and through the same network whose relays forward
//! plainly over one path (the control group). The overhead is what FRER costs in % of the
//! control: less throughput, more latency. Each row says why, from what was measured
//! alongside: the merge relay's frames in per frame delivered, and the R-TAG's 6 bytes.
//!
//! Measured more than once (`repeat`), the groups alternate (control, FRER, FRER,
//! control, ...), each figure is the median of its group's repetitions with its interval
//! (`model::stats::spread`), and FRER's cost is a finding only when the two groups'
//! intervals do not overlap.
//!
//! It measures nothing itself: a [`Groups`] runner builds each group and runs the tests.

use model::results::frer::{FrerReport, OverheadRow};
use model::results::{LatencyUs, RunResult};
use model::stats::spread::{self, Better, Spread};

/// One group's measurements: the result documents of its three tests, and the merge
/// relay's frames received on its path ports per frame delivered during each.
#[derive(Debug, Clone)]
pub struct Group {
    /// TCP throughput (`client`).
    pub tcp: RunResult,
    /// Unlimited UDP throughput (`client -u -b 0`).
    pub udp: RunResult,
    /// Ping-pong latency (`latency -l 64`).
    pub latency: RunResult,
    /// Frames in per frame delivered, during the TCP, UDP and latency test.
    pub per_delivered: [Option<f64>; 3],
}

/// The UDP load of a group's throughput test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UdpLoad {
    /// As fast as the sender goes: loss shows where the relays saturate.
    #[default]
    Unlimited,
    /// At the group's own zero-loss rate, found by a search first (a received rate at
    /// unlimited load mostly measures the relays' CPU).
    ZeroLoss,
}

/// Something that builds a group and measures it.
pub trait Groups {
    /// Why a group could not be measured.
    type Error;
    /// Measures the FRER group (`frer`) or the control group.
    fn measure(&mut self, frer: bool) -> Result<Group, Self::Error>;
}

/// What the comparison gives: the table and both groups' documents (the control's three
/// per repetition first, then the FRER group's).
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The rows.
    pub report: FrerReport,
    /// TCP, UDP, latency of each control repetition, then of each FRER repetition.
    pub runs: Vec<RunResult>,
}

/// The order of `repeat` pairs of measurements, `true` for the FRER group: the pairs
/// alternate which group goes first (control, FRER, FRER, control, ...), so a drift of the
/// machine over the run hits both groups alike.
#[must_use]
pub fn order(repeat: u32) -> Vec<bool> {
    (0..repeat.max(1))
        .flat_map(|i| {
            let frer_first = i % 2 == 1;
            [frer_first, !frer_first]
        })
        .collect()
}

/// Measures the control group and the FRER group `repeat` times each, interleaved (see
/// [`order`]), and compares them. `udp_len` is the UDP payload of the throughput test (it
/// sets the R-TAG's share of a frame); the throughputs are also stated against
/// `line_bps`, when given.
///
/// # Errors
/// The runner's, when a group could not be built or measured.
pub fn compare<G: Groups>(
    groups: &mut G,
    udp_len: u32,
    line_bps: Option<f64>,
    load: UdpLoad,
    repeat: u32,
) -> Result<Comparison, G::Error> {
    let mut control = Vec::new();
    let mut frer = Vec::new();
    let sequence = order(repeat);
    for &is_frer in &sequence {
        let g = groups.measure(is_frer)?;
        if is_frer {
            frer.push(g);
        } else {
            control.push(g);
        }
    }
    let mut rows = rows(&control, &frer, udp_len, load);
    for r in rows.iter_mut().filter(|r| r.unit == "Mbit/s") {
        r.theoretical = line_bps.map(|b| b / 1e6);
    }
    let repeats = repeat.max(1);
    let report = FrerReport {
        control: "frer lab, relays forwarding over path A without FRER".into(),
        treatment: "frer lab, 802.1CB replication onto both paths and elimination".into(),
        rows,
        repeats: (repeats > 1).then_some(repeats),
        order: if repeats > 1 {
            let names: Vec<&str> = sequence
                .iter()
                .map(|f| if *f { "FRER" } else { "control" })
                .collect();
            names.join(", ")
        } else {
            String::new()
        },
        control_data_path: None,
        frer_data_path: None,
    };
    let runs = control
        .into_iter()
        .chain(frer)
        .flat_map(|g| [g.tcp, g.udp, g.latency])
        .collect();
    Ok(Comparison { report, runs })
}

fn received_mbps(r: &RunResult) -> Option<f64> {
    r.summary.as_ref()?.received_bps.map(|b| b / 1e6)
}

fn loss_pct(r: &RunResult) -> Option<f64> {
    r.summary.as_ref()?.loss_ratio.map(|l| l * 100.0)
}

fn round_trip(r: &RunResult, q: fn(&LatencyUs) -> f64) -> Option<f64> {
    r.latency.as_ref()?.first().map(|row| q(&row.rtt_us))
}

/// One group's samples of a figure (the repetitions that produced it): the figure (the
/// median, or the one sample) and, from two samples on, its spread.
fn summarise(samples: &[f64]) -> (Option<f64>, Option<Spread>) {
    let spread = Spread::of(samples);
    let value = match samples {
        [one] => Some(*one),
        _ => spread.as_ref().map(|s| s.median),
    };
    (value, spread)
}

/// The median of the groups' per-frame-delivered figures of test `i`.
fn per_delivered(groups: &[Group], i: usize) -> Option<f64> {
    let samples: Vec<f64> = groups.iter().filter_map(|g| g.per_delivered[i]).collect();
    summarise(&samples).0
}

/// The table of one comparison, from each group's repetitions.
#[must_use]
pub fn rows(control: &[Group], frer: &[Group], udp_len: u32, load: UdpLoad) -> Vec<OverheadRow> {
    // The tagged frame: payload, IPv4 and UDP headers, Ethernet header, FCS, the R-TAG.
    let tag_pct = 6.0 / (f64::from(udp_len) + 28.0 + 14.0 + 4.0 + 6.0) * 100.0;
    let work = |i: usize| {
        let show = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        format!(
            "merge relay: {} frames in per frame delivered (control {}): every frame crosses both paths",
            show(per_delivered(frer, i)),
            show(per_delivered(control, i))
        )
    };
    let row = |metric: String, unit: &str, figure: &dyn Fn(&Group) -> Option<f64>, better| {
        let samples = |groups: &[Group]| groups.iter().filter_map(figure).collect::<Vec<_>>();
        let (c, c_spread) = summarise(&samples(control));
        let (f, f_spread) = summarise(&samples(frer));
        let difference = match (&c_spread, &f_spread) {
            (Some(a), Some(b)) => Some(spread::compare(a, b, better)),
            _ => None,
        };
        OverheadRow {
            metric,
            unit: unit.into(),
            control: c,
            frer: f,
            overhead_percent: c
                .zip(f)
                .and_then(|(c, f)| spread::cost_percent(c, f, better)),
            control_spread: c_spread,
            frer_spread: f_spread,
            difference,
            reason: String::new(),
            theoretical: None,
        }
    };
    let mut out = vec![
        OverheadRow {
            reason: format!("{}; R-TAG +6 B per 1514-B frame (0.39 %)", work(0)),
            ..row(
                "TCP throughput".into(),
                "Mbit/s",
                &|g| received_mbps(&g.tcp),
                Better::Higher,
            )
        },
        OverheadRow {
            reason: format!("{}; R-TAG +6 B per frame ({tag_pct:.2} %)", work(1)),
            ..row(
                match load {
                    UdpLoad::Unlimited => {
                        format!("UDP throughput ({udp_len} B payload, unlimited)")
                    }
                    UdpLoad::ZeroLoss => format!("UDP zero-loss rate ({udp_len} B payload)"),
                },
                "Mbit/s",
                &|g| received_mbps(&g.udp),
                Better::Higher,
            )
        },
        OverheadRow {
            overhead_percent: None,
            reason: match load {
                UdpLoad::Unlimited => {
                    "the offered load is unlimited: loss shows where the relays saturate"
                }
                UdpLoad::ZeroLoss => "each group measured again at its own zero-loss rate",
            }
            .into(),
            ..row(
                "UDP loss at that load".into(),
                "%",
                &|g| loss_pct(&g.udp),
                Better::Lower,
            )
        },
    ];
    type Quantile = fn(&LatencyUs) -> f64;
    let quantiles: [(&str, Quantile); 3] = [
        ("p50", |l| l.p50),
        ("p99", |l| l.p99),
        ("p99.9", |l| l.p999),
    ];
    for (name, q) in quantiles {
        out.push(OverheadRow {
            reason: format!("{}; the first copy wins", work(2)),
            ..row(
                format!("UDP round-trip latency {name} (64 B ping-pong)"),
                "us",
                &|g| round_trip(&g.latency, q),
                Better::Lower,
            )
        });
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::{LatencyKind, LatencyRow, Summary};

    fn doc(received_bps: Option<f64>, loss: Option<f64>, rtt_p50_us: Option<f64>) -> RunResult {
        let mut r = RunResult::new(
            "t",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        r.summary = Some(Summary {
            received_bps,
            loss_ratio: loss,
            ..Summary::default()
        });
        r.latency = rtt_p50_us.map(|p50| {
            vec![LatencyRow {
                size: 64,
                samples: 1000,
                lost: 0,
                rtt_us: LatencyUs {
                    kind: LatencyKind::RoundTrip,
                    count: 1000,
                    min: p50 / 2.0,
                    avg: p50,
                    p50,
                    p90: p50 * 1.5,
                    p99: p50 * 2.0,
                    p999: p50 * 3.0,
                    p9999: p50 * 4.0,
                    max: p50 * 5.0,
                },
                half_rtt_p50_us: p50 / 2.0,
                mode: "blocking".into(),
                histogram: None,
            }]
        });
        r
    }

    /// A network whose relays cost `frer_cost` of throughput and add `extra_us` of round
    /// trip when FRER runs; the control group forwards 900 Mbit/s at a 40 µs round trip.
    struct Network {
        frer_cost: f64,
        extra_us: f64,
        order: Vec<bool>,
    }

    impl Groups for Network {
        type Error = String;
        fn measure(&mut self, frer: bool) -> Result<Group, String> {
            self.order.push(frer);
            let (rate, rtt, per) = if frer {
                (900e6 * (1.0 - self.frer_cost), 40.0 + self.extra_us, 2.0)
            } else {
                (900e6, 40.0, 1.0)
            };
            Ok(Group {
                tcp: doc(Some(rate), None, None),
                udp: doc(Some(rate), Some(if frer { 0.02 } else { 0.0 }), None),
                // The FRER group's latency test produced no figure at all.
                latency: doc(None, None, (!frer || self.extra_us >= 0.0).then_some(rtt)),
                per_delivered: [Some(per), Some(per), None],
            })
        }
    }

    #[test]
    fn overhead_is_what_frer_costs_in_percent_of_the_control() {
        let mut net = Network {
            frer_cost: 0.25,
            extra_us: 10.0,
            order: vec![],
        };
        let c = compare(&mut net, 1472, Some(1e9), UdpLoad::Unlimited, 1).unwrap();
        assert_eq!(net.order, [false, true], "control first");
        // One run each: no spread, no difference, no order to report.
        assert!(c.report.rows.iter().all(|r| r.control_spread.is_none()
            && r.frer_spread.is_none()
            && r.difference.is_none()));
        assert_eq!((c.report.repeats, c.report.order.as_str()), (None, ""));
        assert_eq!(c.runs.len(), 6);
        let by = |m: &str| {
            c.report
                .rows
                .iter()
                .find(|r| r.metric.starts_with(m))
                .unwrap()
        };
        let tcp = by("TCP throughput");
        assert_eq!((tcp.control, tcp.frer), (Some(900.0), Some(675.0)));
        // Throughputs are stated against the line rate, latencies are not.
        assert_eq!(tcp.theoretical, Some(1000.0));
        assert_eq!(by("UDP round-trip latency p50").theoretical, None);
        assert!((tcp.overhead_percent.unwrap() - 25.0).abs() < 1e-9);
        assert!(tcp
            .reason
            .contains("2.00 frames in per frame delivered (control 1.00)"));
        let p50 = by("UDP round-trip latency p50");
        assert!(
            (p50.overhead_percent.unwrap() - 25.0).abs() < 1e-9,
            "{p50:?}"
        );
        assert!(p50
            .reason
            .contains("- frames in per frame delivered (control -)"));
        let loss = by("UDP loss");
        assert_eq!((loss.control, loss.frer), (Some(0.0), Some(2.0)));
        assert_eq!(loss.overhead_percent, None, "loss has no overhead figure");
        assert!(by("UDP throughput (1472 B").reason.contains("(0.39 %)"));
    }

    #[test]
    fn a_figure_one_group_lacks_gives_no_overhead() {
        let mut net = Network {
            frer_cost: -0.1,
            extra_us: -1.0,
            order: vec![],
        };
        let c = compare(&mut net, 64, None, UdpLoad::ZeroLoss, 1).unwrap();
        let p99 = c
            .report
            .rows
            .iter()
            .find(|r| r.metric.contains("p99 "))
            .unwrap();
        assert_eq!((p99.control, p99.frer), (Some(80.0), None));
        assert_eq!(p99.overhead_percent, None);
        // FRER doing better is a negative overhead, not hidden.
        assert!(c.report.rows[0].overhead_percent.unwrap() < 0.0);
    }

    /// A machine whose throughput drifts down by 20 Mbit/s per measurement, and a FRER
    /// group that costs `frer_cost` of it.
    struct Drifting {
        frer_cost: f64,
        calls: u32,
        order: Vec<bool>,
    }

    impl Groups for Drifting {
        type Error = String;
        fn measure(&mut self, frer: bool) -> Result<Group, String> {
            self.order.push(frer);
            let machine = 1000e6 - f64::from(self.calls) * 20e6;
            self.calls += 1;
            let rate = if frer {
                machine * (1.0 - self.frer_cost)
            } else {
                machine
            };
            Ok(Group {
                tcp: doc(Some(rate), None, None),
                udp: doc(Some(rate), Some(0.0), None),
                latency: doc(None, None, Some(40.0)),
                per_delivered: [Some(if frer { 2.0 } else { 1.0 }); 3],
            })
        }
    }

    #[test]
    fn repetitions_alternate_which_group_goes_first() {
        assert_eq!(order(1), [false, true]);
        assert_eq!(
            order(3),
            [false, true, true, false, false, true],
            "control, FRER, FRER, control, ..."
        );
        assert_eq!(order(0), [false, true], "at least once");
    }

    #[test]
    fn a_drift_of_the_machine_is_no_significant_difference_when_interleaved() {
        let mut net = Drifting {
            frer_cost: 0.0,
            calls: 0,
            order: vec![],
        };
        let c = compare(&mut net, 1472, None, UdpLoad::Unlimited, 4).unwrap();
        assert_eq!(net.order, order(4));
        assert_eq!(c.report.repeats, Some(4));
        assert_eq!(
            c.report.order,
            "control, FRER, FRER, control, control, FRER, FRER, control"
        );
        assert_eq!(c.runs.len(), 24);
        let tcp = &c.report.rows[0];
        let (cs, fs) = (
            tcp.control_spread.as_ref().unwrap(),
            tcp.frer_spread.as_ref().unwrap(),
        );
        assert_eq!((cs.n, fs.n), (4, 4));
        // Both groups saw the same drift: equal medians, and no finding.
        assert!((cs.median - fs.median).abs() < 1e-6, "{cs:?} {fs:?}");
        let d = tcp.difference.as_ref().unwrap();
        assert!(!d.significant, "{d:?}");
        let [lo, hi] = d.cost_interval_percent.unwrap();
        assert!(lo < 0.0 && hi > 0.0, "{d:?}");
        // The same latency in every run ties: a zero-width interval that was measured.
        let p50 = &c.report.rows[3];
        assert_eq!(p50.control_spread.as_ref().unwrap().ci95, [40.0, 40.0]);
        assert!(!p50.difference.as_ref().unwrap().significant);
    }

    #[test]
    fn a_cost_larger_than_the_noise_is_a_difference_with_its_interval() {
        let mut net = Drifting {
            frer_cost: 0.25,
            calls: 0,
            order: vec![],
        };
        let c = compare(&mut net, 1472, None, UdpLoad::Unlimited, 4).unwrap();
        let tcp = &c.report.rows[0];
        let d = tcp.difference.as_ref().unwrap();
        assert!(d.significant, "{d:?}");
        let [lo, hi] = d.cost_interval_percent.unwrap();
        let o = tcp.overhead_percent.unwrap();
        assert!(lo > 0.0 && lo <= o && o <= hi, "{lo} {o} {hi}");
        assert!((o - 25.0).abs() < 1.0, "{o}");
        // The reason's frames per delivered frame are the repetitions' medians.
        assert!(tcp
            .reason
            .contains("2.00 frames in per frame delivered (control 1.00)"));
    }
}
