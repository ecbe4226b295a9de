//! What a server watches a running test for, decided without I/O: a client that fell
//! silent (no message and no data for the idle timeout), one that sends more than
//! `--max-rate` allows (10 % over, beyond a paced sender's first burst), and a test that
//! did not finish in time. The test's loop tells it what it heard and counted, with `now`,
//! and asks what is due. A lent raw port's send is watched the same way
//! ([`Watch::raw_send`]): its controller's heartbeats, and the port's own frames against
//! `--raw-max-rate`.
//!
//! It does not read sockets, counters or clocks; the server's test loop does (`now` is on
//! the monotonic axis of the server's clock), and ends the test with the refusal these
//! checks name.

use std::time::Duration;

use model::spec::{Protocol, TestSpec};

/// Extra time past the test's duration before the server gives up on a silent client.
pub(crate) const FINISH_SLACK: Duration = Duration::from_secs(10);
/// A test may exceed `--max-rate` by this share over a second before it is ended.
const RATE_TOLERANCE: f64 = 0.10;
/// How often a running test's received bytes are looked at.
pub(crate) const METER_EVERY: Duration = Duration::from_millis(250);

/// The watch over one running test.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    /// Longest the client may say nothing (and send nothing) before it has finished.
    idle: Duration,
    /// `--max-rate`, bits/s.
    max_rate: Option<f64>,
    /// The client sends streams (they are metered).
    metered_streams: bool,
    /// More bytes metered are a sign of the client's life (they are its own data, not a
    /// lent port's frames sent for it).
    traffic_is_life: bool,
    /// What a client at the limit may be ahead of it: a first block per stream sent at
    /// once (pacers start with one), and a quarter second at the limit, bits.
    burst_bits: f64,
    /// The most the test may take, from its start: its duration and [`FINISH_SLACK`].
    limit: Duration,
    start: Duration,
    /// When the client last said something or sent more.
    heard: Duration,
    /// The client's bytes when last looked at, and when that was.
    metered: (u64, Duration),
}

impl Watch {
    /// The watch over `spec` started at `start`, whose client sends `client_streams`
    /// streams, on a server that allows `max_rate` bits/s and `idle` of silence.
    pub(crate) fn new(
        spec: &TestSpec,
        client_streams: usize,
        max_rate: Option<f64>,
        idle: Duration,
        start: Duration,
    ) -> Watch {
        // A UDP sender's first batch may hold 64 datagrams (GSO).
        let block = if spec.protocol == Protocol::Udp {
            64
        } else {
            1
        };
        let burst_bits = client_streams as f64 * (block * spec.len) as f64 * 8.0
            + max_rate.unwrap_or(0.0) * 0.25;
        Watch {
            idle,
            max_rate,
            metered_streams: client_streams > 0,
            traffic_is_life: true,
            burst_bits,
            limit: spec.total_duration() + FINISH_SLACK,
            start,
            heard: start,
            metered: (0, start),
        }
    }

    /// The watch over a lent raw port's send started at `start` that may take `limit`: its
    /// controller, which says it is there every second, may be silent for `idle`; the
    /// port's frames (metered as sent, FCS included) may come to `max_rate` bits/s, 10 %
    /// over beyond `burst_bits` (a sender's first batch) and a quarter second at the rate.
    pub(crate) fn raw_send(
        max_rate: f64,
        burst_bits: f64,
        idle: Duration,
        limit: Duration,
        start: Duration,
    ) -> Watch {
        Watch {
            idle,
            max_rate: Some(max_rate),
            metered_streams: true,
            traffic_is_life: false,
            burst_bits: burst_bits + max_rate * 0.25,
            limit,
            start,
            heard: start,
            metered: (0, start),
        }
    }

    /// Whether the test ran out of time at `now`: the client did not finish it.
    pub(crate) fn overdue(&self, now: Duration) -> bool {
        now.saturating_sub(self.start) >= self.limit
    }

    /// The client said something at `now`.
    pub(crate) fn heard(&mut self, now: Duration) {
        self.heard = now;
    }

    /// Whether the client's received bytes are to be looked at `now`.
    pub(crate) fn meter_due(&self, now: Duration) -> bool {
        self.metered_streams && now.saturating_sub(self.metered.1) >= METER_EVERY
    }

    /// The client's streams had brought `bytes` by `now` (a warm-up's too): more than
    /// before is a sign of life (its `Alive` messages may wait behind the data on a
    /// saturated path), but not a lent port's own frames. `Err((average bits/s, the
    /// limit))` when it sends above the limit.
    pub(crate) fn metered(&mut self, now: Duration, bytes: u64) -> Result<(), (f64, f64)> {
        if self.traffic_is_life && bytes > self.metered.0 {
            self.heard = now;
        }
        self.metered = (bytes, now);
        let elapsed = now.saturating_sub(self.start);
        match self.max_rate {
            Some(max) if self.over(max, bytes, elapsed) => {
                Err((bytes as f64 * 8.0 / elapsed.as_secs_f64().max(1e-3), max))
            }
            _ => Ok(()),
        }
    }

    /// Whether the client, not yet finished, has been silent too long at `now`.
    pub(crate) fn silent(&self, now: Duration) -> bool {
        now.saturating_sub(self.heard) > self.idle
    }

    /// The idle timeout.
    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    /// Whether `bytes` received in `elapsed` are more than 10 % above `max` (bits/s),
    /// beyond the burst a paced client may be ahead (a token bucket since the start).
    fn over(&self, max: f64, bytes: u64, elapsed: Duration) -> bool {
        bytes as f64 * 8.0 > max * (1.0 + RATE_TOLERANCE) * elapsed.as_secs_f64() + self.burst_bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::spec::Rate;

    fn spec(protocol: Protocol) -> TestSpec {
        TestSpec {
            duration: Duration::from_secs(10),
            rate: Rate::BitsPerSec(1e6),
            len: 1000,
            ..TestSpec::base(protocol)
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A client that says nothing for the idle timeout is silent; a message, or more data
    /// on its streams, is a sign of life; data that does not grow is not.
    #[test]
    fn a_silent_client_is_noticed_after_the_idle_timeout() {
        let t0 = Duration::from_secs(1_000);
        let mut w = Watch::new(&spec(Protocol::Udp), 1, None, ms(5000), t0);
        assert!(!w.silent(t0 + ms(5000)));
        assert!(w.silent(t0 + ms(5001)));
        w.heard(t0 + ms(4000));
        assert!(!w.silent(t0 + ms(9000)));
        assert!(w.silent(t0 + ms(9001)));
        assert!(w.metered(t0 + ms(8000), 1000).is_ok());
        assert!(!w.silent(t0 + ms(13_000)));
        assert!(w.metered(t0 + ms(12_000), 1000).is_ok());
        assert!(
            w.silent(t0 + ms(13_001)),
            "the same count is no sign of life"
        );
    }

    /// The meter looks every 250 ms, and only at a test whose client sends.
    #[test]
    fn the_meter_looks_every_quarter_second() {
        let t0 = Duration::from_secs(1_000);
        let mut w = Watch::new(&spec(Protocol::Tcp), 2, Some(1e6), ms(5000), t0);
        assert!(!w.meter_due(t0 + ms(249)));
        assert!(w.meter_due(t0 + ms(250)));
        assert!(w.metered(t0 + ms(300), 10).is_ok());
        assert!(!w.meter_due(t0 + ms(549)));
        assert!(w.meter_due(t0 + ms(550)));
        let reverse = Watch::new(&spec(Protocol::Tcp), 0, Some(1e6), ms(5000), t0);
        assert!(!reverse.meter_due(t0 + ms(10_000)));
    }

    /// Against a 1 Mbit/s limit: a client at the limit runs; one at 5 Mbit/s is ended
    /// within its first second, with its average rate.
    #[test]
    fn a_client_above_the_rate_limit_is_ended() {
        let t0 = Duration::from_secs(1_000);
        let bytes_at = |bps: f64, t: Duration| (bps / 8.0 * t.as_secs_f64()) as u64;
        let mut honest = Watch::new(&spec(Protocol::Udp), 1, Some(1e6), ms(5000), t0);
        let mut liar = honest.clone();
        let mut ended = None;
        for k in 1..=40 {
            let t = ms(250 * k);
            assert!(honest.metered(t0 + t, bytes_at(1e6, t)).is_ok(), "at {t:?}");
            if let (None, Err((bps, max))) = (ended, liar.metered(t0 + t, bytes_at(5e6, t))) {
                assert_eq!(max, 1e6);
                assert!((bps - 5e6).abs() < 1e3, "{bps}");
                ended = Some(t);
            }
        }
        let ended = ended.expect("ended");
        assert!(ended <= ms(1000), "ended after {ended:?}");
        // 10 % over the limit is tolerated; 20 % is not, once the first burst is spent.
        let mut w = Watch::new(&spec(Protocol::Udp), 1, Some(1e6), ms(5000), t0);
        assert!(w
            .metered(t0 + ms(10_000), bytes_at(1.09e6, ms(10_000)))
            .is_ok());
        assert!(w
            .metered(t0 + ms(10_000), bytes_at(1.2e6, ms(10_000)))
            .is_err());
    }

    #[test]
    fn a_test_is_overdue_at_its_duration_and_the_slack() {
        let t0 = Duration::from_secs(1_000);
        let w = Watch::new(&spec(Protocol::Udp), 1, None, ms(5000), t0);
        assert!(!w.overdue(t0 + ms(19_999)));
        assert!(w.overdue(t0 + ms(20_000)));
    }

    /// A lent port's send: its frames are no sign of the controller's life (a frozen
    /// controller is silent after the idle timeout however much the port sends), and a
    /// port above its cap is noticed within a second.
    #[test]
    fn a_raw_send_is_watched_for_its_controller_and_its_rate() {
        let t0 = Duration::from_secs(1_000);
        let batch = 64.0 * 1518.0 * 8.0;
        let mut w = Watch::raw_send(10e6, batch, ms(2000), ms(60_000), t0);
        let bytes_at = |bps: f64, t: Duration| (bps / 8.0 * t.as_secs_f64()) as u64;
        for k in 1..=12 {
            let t = ms(250 * k);
            assert!(w.metered(t0 + t, bytes_at(10e6, t)).is_ok(), "at {t:?}");
        }
        assert!(w.silent(t0 + ms(3000)), "the port's frames kept it alive");
        w.heard(t0 + ms(2500));
        assert!(!w.silent(t0 + ms(4000)));
        let mut fast = Watch::raw_send(10e6, batch, ms(2000), ms(60_000), t0);
        let over = (1..=4).find(|k| {
            let t = ms(250 * k);
            fast.metered(t0 + t, bytes_at(30e6, t)).is_err()
        });
        assert!(over.is_some(), "3 times the cap ran a second");
        assert!(!fast.overdue(t0 + ms(59_999)));
        assert!(fast.overdue(t0 + ms(60_000)));
    }
}
