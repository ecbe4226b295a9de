//! Latency under load (flent's RRUL, the Realtime Response Under Load test): pings before,
//! during and after a load of TCP streams each way; the latency the load adds is the loaded
//! round trips against the idle ones.
//!
//! What this module does: [`phases`] splits the answered pings by their send time into idle
//! (before the load starts or after it ends) and loaded (while it runs), and [`added`]
//! compares the two. What it does not do: run the load or the pings (the campaign's `rrul`
//! job does), or judge a figure.

use model::clock::UnixNanos;
use model::results::rrul::AddedLatency;
use model::results::LatencyUs;
use model::stats::LatencyHistogram;
use std::time::Duration;

/// The answered pings of each phase.
#[derive(Debug, Clone, Default)]
pub struct Phases {
    /// Sent before the load started or after it ended.
    pub idle: LatencyHistogram,
    /// Sent while the load ran.
    pub loaded: LatencyHistogram,
}

/// Splits pings `(send time, round trip ns)` by whether they were sent during `load`
/// (start inclusive, end exclusive).
pub fn phases(
    pings: impl IntoIterator<Item = (UnixNanos, u64)>,
    load: (UnixNanos, UnixNanos),
) -> Phases {
    let mut p = Phases::default();
    for (tx, rtt) in pings {
        let h = if tx >= load.0 && tx < load.1 {
            &mut p.loaded
        } else {
            &mut p.idle
        };
        h.record(Duration::from_nanos(rtt));
    }
    p
}

/// Loaded minus idle at the median, 90th and 99th percentile, and the loaded median over
/// the idle one.
pub fn added(idle: &LatencyUs, loaded: &LatencyUs) -> (AddedLatency, Option<f64>) {
    let a = AddedLatency {
        p50: loaded.p50 - idle.p50,
        p90: loaded.p90 - idle.p90,
        p99: loaded.p99 - idle.p99,
    };
    (a, (idle.p50 > 0.0).then(|| loaded.p50 / idle.p50))
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::results::LatencyKind;

    #[test]
    fn pings_sent_during_the_load_are_the_loaded_ones() {
        let s = |ms: u64| UnixNanos(ms * 1_000_000);
        // 100 Hz for 3 s: idle 0.2 ms until 1 s, 50 ms while loaded until 2 s, idle again.
        let pings = (0..300u64).map(|k| {
            let t = k * 10;
            let rtt = if (1_000..2_000).contains(&t) {
                50_000_000
            } else {
                200_000
            };
            (s(t), rtt)
        });
        let p = phases(pings, (s(1_000), s(2_000)));
        assert_eq!((p.idle.len(), p.loaded.len()), (200, 100));
        let kind = LatencyKind::RoundTrip;
        let idle = LatencyUs::from_summary(kind, &p.idle.summary().unwrap());
        let loaded = LatencyUs::from_summary(kind, &p.loaded.summary().unwrap());
        let (a, ratio) = added(&idle, &loaded);
        assert!((a.p50 - 49_800.0).abs() < 50.0, "{a:?}");
        assert!((ratio.unwrap() - 250.0).abs() < 1.0, "{ratio:?}");
    }
}
