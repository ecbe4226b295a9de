//! A probe's result as OpenMetrics text (`wirebench exporter`'s `/probe`), in the
//! convention of Prometheus' blackbox exporter: `probe_success` and
//! `probe_duration_seconds`, then the test's figures as gauges named
//! `wirebench_probe_*` in Prometheus' base units (bytes per second, seconds, ratios 0..1).
//!
//! Only what the test measured is written: a figure absent from the result is absent
//! here, never 0 (a TCP test has no loss ratio; a failed probe, also one cut short, has
//! nothing but `probe_success 0` and its duration).
//!
//! What it does not do: run the probe or serve HTTP.

use model::results::{LatencyUs, RunResult, Summary};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

type Value = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Quantile {
    kind: String,
    stat: String,
}

/// What one probe measured, and how it went.
#[derive(Debug, Clone, Copy)]
pub struct Probe<'a> {
    /// The test's result, when it gave one.
    pub result: Option<&'a RunResult>,
    /// Whether the probe succeeded (a result, run to its end).
    pub success: bool,
    /// Seconds the probe took, start to finish.
    pub duration_s: f64,
}

/// A registry of gauges, each registered only when it has a value.
struct Gauges(Registry);

impl Gauges {
    fn set(&mut self, name: &str, help: &str, unit: Option<Unit>, v: Option<f64>) {
        let Some(v) = v.filter(|v| v.is_finite()) else {
            return;
        };
        let g = Value::default();
        g.set(v);
        let name = format!("wirebench_probe_{name}");
        match unit {
            Some(u) => self.0.register_with_unit(name, help, u, g),
            None => self.0.register(name, help, g),
        }
    }

    fn count(&mut self, name: &str, help: &str, v: Option<u64>) {
        self.set(name, help, None, v.map(|v| v as f64));
    }
}

/// The latency statistics of `l` in seconds, labelled by `kind` and `stat` (`min`,
/// `p50`, ..., `max`; a gauge may not carry the label `quantile`, which belongs to
/// summaries).
fn latency(l: &LatencyUs) -> Family<Quantile, Value> {
    let f = Family::<Quantile, Value>::default();
    for (q, us) in [
        ("min", l.min),
        ("p50", l.p50),
        ("p90", l.p90),
        ("p99", l.p99),
        ("p999", l.p999),
        ("max", l.max),
    ] {
        f.get_or_create(&Quantile {
            kind: l.kind.as_str().into(),
            stat: q.into(),
        })
        .set(us / 1e6);
    }
    f
}

fn summary(g: &mut Gauges, s: &Summary) {
    // Prometheus' base unit is the byte: a dashboard shows bit/s as 8 x these.
    let bytes = |bps: Option<f64>| bps.map(|b| b / 8.0);
    g.set(
        "target_bytes_per_second",
        "Rate asked for, payload bytes per second",
        None,
        bytes(s.target_bps),
    );
    g.set(
        "sent_bytes_per_second",
        "Rate the sender offered, payload bytes per second",
        None,
        bytes(s.offered_bps),
    );
    g.set(
        "received_bytes_per_second",
        "Rate the receiver got, payload bytes per second",
        None,
        bytes(s.received_bps),
    );
    g.count("sent_packets", "Datagrams sent", s.sent_packets);
    g.count(
        "received_packets",
        "Unique datagrams received",
        s.received_packets,
    );
    g.count(
        "lost_packets",
        "Datagrams sent and never received",
        s.lost_packets,
    );
    g.count(
        "duplicate_packets",
        "Extra copies received (RFC 5560)",
        s.duplicate_packets,
    );
    g.count(
        "reordered_packets",
        "Datagrams received out of order (RFC 4737)",
        s.reordered_packets,
    );
    g.set(
        "loss",
        "Lost over sent",
        Some(Unit::Other("ratio".into())),
        s.loss_ratio,
    );
    g.set(
        "jitter",
        "Interarrival jitter (RFC 3550)",
        Some(Unit::Seconds),
        s.jitter_us.map(|us| us / 1e6),
    );
    g.count(
        "tcp_retransmits",
        "TCP segments retransmitted (TCP_INFO)",
        s.retransmits,
    );
    g.set(
        "tcp_rtt",
        "TCP smoothed round-trip time at the end (TCP_INFO)",
        Some(Unit::Seconds),
        s.tcp_rtt_us.map(|us| us / 1e6),
    );
    g.set(
        "generator_limited",
        "1 when the sender fell behind its schedule: the figures show the tool",
        None,
        Some(f64::from(u8::from(s.generator_limited))),
    );
}

/// The probe as OpenMetrics text (ending in `# EOF`).
pub fn probe(p: &Probe<'_>) -> String {
    let mut g = Gauges(Registry::default());
    let ok = Value::default();
    ok.set(f64::from(u8::from(p.success)));
    g.0.register("probe_success", "1 when the probe ran to its end", ok);
    let took = Value::default();
    took.set(p.duration_s);
    g.0.register_with_unit(
        "probe_duration",
        "How long the probe took",
        Unit::Seconds,
        took,
    );
    let mut lat = None;
    if let Some(r) = p.result {
        if let Some(s) = &r.summary {
            summary(&mut g, s);
            lat = s.latency_us.as_ref().map(latency);
        }
        if let Some(row) = r.latency.as_deref().and_then(<[_]>::first) {
            g.count("received_packets", "Messages answered", Some(row.samples));
            g.count(
                "lost_packets",
                "Messages without an answer in time",
                Some(row.lost),
            );
            let sent = row.samples + row.lost;
            g.set(
                "loss",
                "Unanswered over sent",
                Some(Unit::Other("ratio".into())),
                (sent > 0).then(|| row.lost as f64 / sent as f64),
            );
            lat = Some(latency(&row.rtt_us));
        }
    }
    if let Some(f) = lat {
        g.0.register_with_unit(
            "wirebench_probe_latency",
            "Latency (kind: one-way or round-trip; stat: min, p50, p90, p99, p999, max)",
            Unit::Seconds,
            f,
        );
    }
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &g.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::results::{Environment, LatencyKind, LatencyRow};

    fn lat(kind: LatencyKind) -> LatencyUs {
        LatencyUs {
            kind,
            count: 100,
            min: 10.0,
            avg: 20.0,
            p50: 18.0,
            p90: 30.0,
            p99: 45.0,
            p999: 60.0,
            p9999: 70.0,
            max: 80.0,
        }
    }

    fn udp() -> RunResult {
        let mut r = RunResult::new(
            "client",
            serde_json::json!({}),
            "t".into(),
            Environment::default(),
        );
        r.summary = Some(Summary {
            duration_s: 1.0,
            target_bps: Some(10e6),
            offered_bps: Some(10e6),
            received_bps: Some(9.9e6),
            sent_packets: Some(1000),
            received_packets: Some(990),
            lost_packets: Some(10),
            duplicate_packets: Some(3),
            reordered_packets: Some(2),
            loss_ratio: Some(0.01),
            jitter_us: Some(12.5),
            latency_us: Some(lat(LatencyKind::OneWay)),
            ..Summary::default()
        });
        r
    }

    fn probe_of(r: Option<&RunResult>, success: bool) -> String {
        probe(&Probe {
            result: r,
            success,
            duration_s: 1.25,
        })
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn a_udp_probe_has_its_figures_in_base_units() {
        let r = udp();
        let t = probe_of(Some(&r), true);
        assert!(t.ends_with("# EOF\n"), "{t}");
        for (series, want) in [
            ("probe_success", 1.0),
            ("probe_duration_seconds", 1.25),
            ("wirebench_probe_target_bytes_per_second", 10e6 / 8.0),
            ("wirebench_probe_received_bytes_per_second", 9.9e6 / 8.0),
            ("wirebench_probe_lost_packets", 10.0),
            ("wirebench_probe_duplicate_packets", 3.0),
            ("wirebench_probe_reordered_packets", 2.0),
            ("wirebench_probe_loss_ratio", 0.01),
            ("wirebench_probe_jitter_seconds", 12.5e-6),
            ("wirebench_probe_generator_limited", 0.0),
            (
                r#"wirebench_probe_latency_seconds{kind="one-way",stat="p99"}"#,
                45e-6,
            ),
            (
                r#"wirebench_probe_latency_seconds{kind="one-way",stat="max"}"#,
                80e-6,
            ),
        ] {
            let got = value(&t, series).unwrap_or_else(|| panic!("{series} missing:\n{t}"));
            assert!((got - want).abs() <= want.abs() * 1e-9, "{series}: {got}");
        }
        // Not measured by a UDP test: not written.
        assert!(
            !t.contains("tcp_retransmits") && !t.contains("tcp_rtt"),
            "{t}"
        );
    }

    #[test]
    fn a_failed_probe_says_only_that() {
        let t = probe_of(None, false);
        assert_eq!(value(&t, "probe_success"), Some(0.0));
        assert!(!t.contains("wirebench_probe_"), "{t}");
    }

    #[test]
    fn a_latency_probe_has_round_trips_and_unanswered_messages() {
        let mut r = RunResult::new(
            "latency",
            serde_json::json!({}),
            "t".into(),
            Environment::default(),
        );
        r.latency = Some(vec![LatencyRow {
            size: 64,
            samples: 990,
            lost: 10,
            rtt_us: lat(LatencyKind::RoundTrip),
            half_rtt_p50_us: 9.0,
            mode: "blocking".into(),
            histogram: None,
        }]);
        let t = probe_of(Some(&r), true);
        assert_eq!(value(&t, "wirebench_probe_loss_ratio"), Some(0.01));
        assert_eq!(value(&t, "wirebench_probe_received_packets"), Some(990.0));
        let p50 = r#"wirebench_probe_latency_seconds{kind="round-trip",stat="p50"}"#;
        assert_eq!(value(&t, p50), Some(18e-6));
    }

    /// Every probe series the Grafana dashboard asks for is written.
    #[test]
    fn the_dashboard_asks_only_for_what_a_probe_writes() {
        let dashboard = include_str!("../../../deploy/grafana/wirebench.json");
        let r = udp();
        let t = probe_of(Some(&r), true);
        let mut asked: Vec<&str> = dashboard
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("wirebench_probe_") || w.starts_with("probe_"))
            // The dashboard's variable, not a series.
            .filter(|w| *w != "probe_job")
            .collect();
        asked.sort_unstable();
        asked.dedup();
        assert!(asked.len() >= 7, "{asked:?}");
        for name in asked {
            assert!(
                t.contains(&format!("\n{name}{{")) || t.contains(&format!("\n{name} ")),
                "{name} is not written:\n{t}"
            );
        }
    }
}
