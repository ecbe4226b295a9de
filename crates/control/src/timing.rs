//! The times both sides of a test derive from its request: when each interval ends
//! ([`tick_end`], so that their samples pair by index) and how long receivers wait for
//! the tail of a test ([`grace`], [`sent_counts`]).
//!
//! Pure: offsets from the test's start, no clock; the loops that act on them read time.

use std::time::Duration;

use model::spec::{Protocol, TestSpec};

use crate::messages::StreamReport;

/// Interval ticks up to this much past the test's end still count (timer rounding), and a
/// remainder this short makes no last partial interval.
const TICK_SLACK: Duration = Duration::from_millis(1);

/// When interval `k` of a test ends, as an offset from its start; `None` past the last.
/// Both sides use it, so their samples pair by index. Every interval is `interval` long
/// except the last, which ends with the test (`-t 1.5 -i 1` gives 0-1 s and 1-1.5 s).
pub(crate) fn tick_end(interval: Option<Duration>, duration: Duration, k: u32) -> Option<Duration> {
    let i = interval.filter(|i| !i.is_zero())?;
    let start = i.checked_mul(k)?;
    if start + TICK_SLACK >= duration {
        return None;
    }
    let end = start + i;
    Some(if end <= duration + TICK_SLACK {
        end
    } else {
        duration
    })
}

/// Packets each UDP sender reported sending: what its receiver waits for at the end.
pub(crate) fn sent_counts(reports: &[StreamReport]) -> Vec<(u8, u64)> {
    reports
        .iter()
        .filter_map(|r| match r {
            StreamReport::UdpTx(t) => Some((t.stream_id, t.packets)),
            _ => None,
        })
        .collect()
}

/// How long receivers wait for the tail of a test: (quiet period, cap). UDP stops early
/// once every sent packet is counted, or when nothing arrived for the quiet period: 100 ms,
/// or three packet gaps for slow streams. TCP stops once every stream reached its end.
pub(crate) fn grace(spec: &TestSpec) -> (Duration, Duration) {
    match spec.protocol {
        Protocol::Udp => {
            let cap = Duration::from_secs(2);
            let gaps = spec
                .rate
                .packets_per_sec(spec.len)
                .map(|p| Duration::from_secs_f64((3.0 / p).min(2.0)));
            (
                gaps.unwrap_or_default()
                    .max(Duration::from_millis(100))
                    .min(cap),
                cap,
            )
        }
        Protocol::Tcp => (Duration::from_millis(500), Duration::from_secs(3)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(interval_ms: u64, duration_ms: u64) -> Vec<u128> {
        let i = Some(Duration::from_millis(interval_ms));
        let d = Duration::from_millis(duration_ms);
        (0..)
            .map_while(|k| tick_end(i, d, k))
            .map(|t| t.as_millis())
            .collect()
    }

    #[test]
    fn the_last_partial_interval_is_kept() {
        assert_eq!(ends(1000, 1500), [1000, 1500]);
        assert_eq!(ends(1000, 3000), [1000, 2000, 3000]);
        assert_eq!(ends(500, 1200), [500, 1000, 1200]);
        // A remainder within the slack is timer rounding, not an interval.
        assert_eq!(ends(1000, 2001), [1000, 2000]);
        assert!(tick_end(None, Duration::from_secs(5), 0).is_none());
        assert!(tick_end(Some(Duration::ZERO), Duration::from_secs(5), 0).is_none());
        // Longer than the test: one interval, the test's length.
        assert_eq!(ends(5000, 1500), [1500]);
    }
}
