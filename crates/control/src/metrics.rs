//! The server's metrics in OpenMetrics text (`server --metrics ADDR`, for Prometheus).
//!
//! What it counts: wirebench tests running, ended (completed, aborted, failed), refused
//! before they started by reason (echo and iperf3 sessions are not tests here); connections; failed
//! authentications; bytes and packets per direction (the server's view: `rx` received,
//! `tx` sent); and for each running test its rate since the previous scrape, its bytes and
//! its loss so far (labels: test id, protocol, direction, client address). Byte and packet
//! totals include running tests: each scrape adds what their streams moved since the last.
//!
//! What it does not do: touch the data path. Streams publish their totals to
//! [`LiveCounters`] as they always do; a scrape reads those snapshots. The HTTP side
//! ([`serve_http`], over [`crate::http`]) answers `GET /metrics` and nothing else:
//! OpenMetrics when the scraper accepts it (Prometheus does), else Prometheus' text format
//! 0.0.4 ([`exposition`]). A test's rate is taken over the time between scrapes on the
//! metrics' clock (the real one, or one given to [`ServerMetrics::with_clock`]).

use std::collections::BTreeMap;
use std::net::{IpAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use engine::clock::RealClock;
use engine::live::LiveCounters;
use model::clock::Clock;
use model::stop::Stop;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::http::{self, Handler, Request, Response};
use crate::messages::ErrorCode;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Direction {
    direction: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TestLabels {
    test_id: String,
    protocol: String,
    direction: String,
    client: String,
}

/// One stream of a running test, as the server sees it.
struct Stream {
    /// The server sends it (`tx`), or receives it (`rx`).
    sends: bool,
    live: Arc<LiveCounters>,
    /// Bytes and packets already added to the totals.
    counted: (u64, u64),
}

struct Running {
    test_id: u16,
    protocol: String,
    client: String,
    streams: Vec<Stream>,
    /// When the rates were last taken, with the bytes per direction (`rx`, `tx`) then.
    last: (Duration, u64, u64),
    /// A rate was taken (the first scrape takes one over whatever time has passed).
    rated: bool,
}

/// The shortest window a test's rate is taken over: scrapes closer together (a second
/// scraper, a `curl`) read the last rate rather than a noisy one.
const MIN_RATE_WINDOW: Duration = Duration::from_secs(1);

/// The metrics of one server.
pub struct ServerMetrics {
    /// Where the rates' time comes from.
    clock: Arc<dyn Clock>,
    registry: Registry,
    running_tests: Gauge,
    ended: Family<Outcome, Counter>,
    refused: Family<Reason, Counter>,
    connections: Counter,
    auth_failures: Counter,
    bytes: Family<Direction, Counter>,
    packets: Family<Direction, Counter>,
    test_rate: Family<TestLabels, Gauge<f64, AtomicU64>>,
    test_bytes: Family<TestLabels, Counter>,
    test_loss: Family<TestLabels, Gauge<f64, AtomicU64>>,
    /// Running tests by registration number (test ids wrap; these do not).
    running: Mutex<BTreeMap<u64, Running>>,
    next: AtomicU64,
}

impl std::fmt::Debug for ServerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerMetrics").finish_non_exhaustive()
    }
}

impl Default for ServerMetrics {
    fn default() -> Self {
        ServerMetrics::new()
    }
}

fn reason(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::Version => "version",
        ErrorCode::Auth => "auth",
        ErrorCode::Limit => "limit",
        ErrorCode::Busy => "busy",
        ErrorCode::BadRequest => "bad_request",
        ErrorCode::Protocol => "protocol",
        ErrorCode::Timeout => "timeout",
        ErrorCode::Internal => "internal",
    }
}

impl ServerMetrics {
    /// Every metric at zero.
    pub fn new() -> ServerMetrics {
        ServerMetrics::with_clock(Arc::new(RealClock::new()))
    }

    /// Every metric at zero; rates are taken over time on `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> ServerMetrics {
        let mut registry = Registry::with_prefix("wirebench_server");
        let m = ServerMetrics {
            clock,
            running_tests: Gauge::default(),
            ended: Family::default(),
            refused: Family::default(),
            connections: Counter::default(),
            auth_failures: Counter::default(),
            bytes: Family::default(),
            packets: Family::default(),
            test_rate: Family::default(),
            test_bytes: Family::default(),
            test_loss: Family::default(),
            running: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            registry: Registry::default(),
        };
        registry.register(
            "tests_running",
            "Tests running now",
            m.running_tests.clone(),
        );
        registry.register(
            "tests_ended",
            "Tests that started and ended, by outcome (completed, aborted by the client, failed)",
            m.ended.clone(),
        );
        registry.register(
            "tests_refused",
            "Requests refused before a test started, by reason",
            m.refused.clone(),
        );
        registry.register(
            "connections",
            "Control connections accepted",
            m.connections.clone(),
        );
        registry.register(
            "auth_failures",
            "Clients that failed to authenticate",
            m.auth_failures.clone(),
        );
        registry.register(
            "payload_bytes",
            "Payload bytes of test streams after any warm-up (-O), by direction (rx received, tx sent)",
            m.bytes.clone(),
        );
        registry.register(
            "packets",
            "Datagrams of UDP test streams, by direction (rx unique received, tx sent)",
            m.packets.clone(),
        );
        registry.register(
            "test_rate_bps",
            "A running test's rate over the last second or more (between scrapes), bits/s",
            m.test_rate.clone(),
        );
        registry.register(
            "test_payload_bytes",
            "A running test's payload bytes so far (after any warm-up)",
            m.test_bytes.clone(),
        );
        registry.register(
            "test_loss_ratio",
            "A running UDP test's loss so far, 0..1 (numbers missing below the highest seen)",
            m.test_loss.clone(),
        );
        ServerMetrics { registry, ..m }
    }

    /// A control connection was accepted.
    pub fn connection(&self) {
        self.connections.inc();
    }

    /// A request was refused with `code` (an authentication failure counts twice: as a
    /// refusal and as a failure).
    pub fn refused(&self, code: ErrorCode) {
        let labels = Reason {
            reason: reason(code).into(),
        };
        self.refused.get_or_create(&labels).inc();
        if code == ErrorCode::Auth {
            self.auth_failures.inc();
        }
    }

    /// A started test ended: `completed`, `aborted` (by its client) or `failed`.
    pub fn ended(&self, outcome: &str) {
        let labels = Outcome {
            outcome: outcome.to_owned(),
        };
        self.ended.get_or_create(&labels).inc();
    }

    /// Test `id` started: its streams, each with whether the server sends it. Until the
    /// returned guard drops, scrapes read its streams' live counters.
    pub fn start_test(
        self: &Arc<Self>,
        id: u16,
        protocol: &str,
        client: IpAddr,
        streams: Vec<(bool, Arc<LiveCounters>)>,
    ) -> RunningTest {
        self.running_tests.inc();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let running = Running {
            test_id: id,
            protocol: protocol.to_owned(),
            client: client.to_string(),
            streams: streams
                .into_iter()
                .map(|(sends, live)| Stream {
                    sends,
                    live,
                    counted: (0, 0),
                })
                .collect(),
            last: (self.clock.mono(), 0, 0),
            rated: false,
        };
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, running);
        RunningTest {
            metrics: Arc::clone(self),
            key,
        }
    }

    /// Adds what `t`'s streams moved since the last time to the totals; returns the test's
    /// bytes per direction (`rx`, `tx`) and its receivers' (received, lost so far).
    fn account(&self, t: &mut Running) -> (u64, u64, u64, u64) {
        let (mut rx, mut tx, mut got, mut lost) = (0, 0, 0, 0);
        for s in &mut t.streams {
            let now = s.live.snapshot();
            let packets = if s.sends {
                now.counters.sent
            } else {
                now.counters.received
            };
            let dir = Direction {
                direction: if s.sends { "tx" } else { "rx" }.into(),
            };
            self.bytes
                .get_or_create(&dir)
                .inc_by(now.bytes.saturating_sub(s.counted.0));
            self.packets
                .get_or_create(&dir)
                .inc_by(packets.saturating_sub(s.counted.1));
            s.counted = (s.counted.0.max(now.bytes), s.counted.1.max(packets));
            if s.sends {
                tx += now.bytes;
            } else {
                rx += now.bytes;
                got += now.counters.received;
                lost += now.counters.lost;
            }
        }
        (rx, tx, got, lost)
    }

    /// The metrics in OpenMetrics text, running tests read now.
    pub fn render(&self) -> String {
        {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            for t in running.values_mut() {
                let (rx, tx, got, lost) = self.account(t);
                let now = self.clock.mono();
                let fresh = !t.rated || now.saturating_sub(t.last.0) >= MIN_RATE_WINDOW;
                let secs = now.saturating_sub(t.last.0).as_secs_f64();
                let rate = |b: u64, before: u64| {
                    if secs > 0.0 {
                        b.saturating_sub(before) as f64 * 8.0 / secs
                    } else {
                        0.0
                    }
                };
                for (dir, bytes, before) in [("rx", rx, t.last.1), ("tx", tx, t.last.2)] {
                    if !t.streams.iter().any(|s| s.sends == (dir == "tx")) {
                        continue;
                    }
                    let labels = TestLabels {
                        test_id: t.test_id.to_string(),
                        protocol: t.protocol.clone(),
                        direction: dir.into(),
                        client: t.client.clone(),
                    };
                    if fresh {
                        self.test_rate
                            .get_or_create(&labels)
                            .set(rate(bytes, before));
                    }
                    let counted = self.test_bytes.get_or_create(&labels);
                    counted.inc_by(bytes.saturating_sub(counted.get()));
                    drop(counted);
                    if dir == "rx" && t.protocol == "udp" && got + lost > 0 {
                        self.test_loss
                            .get_or_create(&labels)
                            .set(lost as f64 / (got + lost) as f64);
                    }
                }
                if fresh {
                    t.last = (now, rx, tx);
                    t.rated = true;
                }
            }
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    fn end_test(&self, key: u64) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(mut t) = running.remove(&key) {
            self.account(&mut t);
            for dir in ["rx", "tx"] {
                let labels = TestLabels {
                    test_id: t.test_id.to_string(),
                    protocol: t.protocol.clone(),
                    direction: dir.into(),
                    client: t.client.clone(),
                };
                self.test_rate.remove(&labels);
                self.test_bytes.remove(&labels);
                self.test_loss.remove(&labels);
            }
            self.running_tests.dec();
        }
    }
}

/// A running test's registration: ends it in the metrics when dropped, however the test
/// ended (its last bytes are counted then).
pub struct RunningTest {
    metrics: Arc<ServerMetrics>,
    key: u64,
}

impl Drop for RunningTest {
    fn drop(&mut self) {
        self.metrics.end_test(self.key);
    }
}

/// Connections the metrics endpoint serves at once.
const MAX_OPEN: usize = 8;

/// Answers `GET /metrics` on `listener` until `stop` is raised: 200 with the metrics, 404 for
/// another path, 405 for another method, 400 for what is not a request ([`http::serve`]).
///
/// # Errors
/// The listener cannot be made non-blocking.
pub fn serve_http(
    listener: TcpListener,
    metrics: Arc<ServerMetrics>,
    stop: &Stop,
) -> std::io::Result<()> {
    let handler: Arc<Handler> =
        Arc::new(
            move |req: &Request| match (req.method.as_str(), req.path.as_str()) {
                ("GET", "/metrics") => exposition(req, metrics.render()),
                ("GET", _) => Response::text(404, "only /metrics here\n"),
                _ => Response::text(405, "only GET /metrics\n"),
            },
        );
    http::serve(listener, stop, MAX_OPEN, handler)
}

/// Metrics as the scraper asked for them: OpenMetrics when its `Accept` names it
/// (Prometheus does), else Prometheus' text format 0.0.4.
pub fn exposition(req: &Request, openmetrics: String) -> Response {
    let wants_openmetrics = req
        .header("accept")
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    if wants_openmetrics {
        Response {
            status: 200,
            content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8".into(),
            body: openmetrics,
        }
    } else {
        Response {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8".into(),
            body: prometheus_text(&openmetrics),
        }
    }
}

/// The metric names starting with `prefix` that a text mentions (a dashboard's queries,
/// an alert's expression), sorted, each once: what a check of that text against the
/// series an endpoint serves needs.
pub fn names_in<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut names: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(prefix))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// OpenMetrics text as Prometheus' own text format (version 0.0.4), for scrapers that do
/// not ask for OpenMetrics (and `promtool check metrics`): a counter's HELP and TYPE name
/// its `_total` samples, and there is no `# EOF`.
pub fn prometheus_text(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|tag| {
            let rest = line.strip_prefix(tag)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{tag}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::live::LiveSnapshot;
    use model::stats::Counters;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn a_running_test_is_read_at_each_scrape_and_counted_once_at_its_end() {
        let m = Arc::new(ServerMetrics::new());
        m.connection();
        m.refused(ErrorCode::Busy);
        m.refused(ErrorCode::Auth);
        let rx = Arc::new(LiveCounters::default());
        let client: IpAddr = "127.0.0.1".parse().unwrap();
        let test = m.start_test(7, "udp", client, vec![(false, Arc::clone(&rx))]);
        rx.publish(&LiveSnapshot {
            counters: Counters {
                received: 90,
                lost: 10,
                ..Counters::default()
            },
            bytes: 9_000,
            ..LiveSnapshot::default()
        });
        let text = m.render();
        for line in [
            "wirebench_server_tests_running 1",
            "wirebench_server_connections_total 1",
            "wirebench_server_auth_failures_total 1",
            "wirebench_server_tests_refused_total{reason=\"busy\"} 1",
            "wirebench_server_payload_bytes_total{direction=\"rx\"} 9000",
            "wirebench_server_packets_total{direction=\"rx\"} 90",
            "wirebench_server_test_payload_bytes_total{test_id=\"7\",protocol=\"udp\",direction=\"rx\",client=\"127.0.0.1\"} 9000",
            "wirebench_server_test_loss_ratio{test_id=\"7\",protocol=\"udp\",direction=\"rx\",client=\"127.0.0.1\"} 0.1",
        ] {
            assert!(text.contains(line), "{line} missing in:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        let running = text;
        // More arrives, then the test ends: the totals take the rest once, the test's own
        // series go.
        rx.publish(&LiveSnapshot {
            counters: Counters {
                received: 100,
                ..Counters::default()
            },
            bytes: 10_000,
            ..LiveSnapshot::default()
        });
        drop(test);
        m.ended("completed");
        let text = m.render();
        assert!(
            text.contains("wirebench_server_payload_bytes_total{direction=\"rx\"} 10000"),
            "{text}"
        );
        assert!(text.contains("wirebench_server_tests_running 0"), "{text}");
        assert!(
            text.contains("wirebench_server_tests_ended_total{outcome=\"completed\"} 1"),
            "{text}"
        );
        assert!(!text.contains("test_id=\"7\""), "{text}");
        // Every series the Grafana dashboard queries is one the server serves (while a
        // test runs, or once one ended).
        let both = format!("{running}{text}");
        let dashboard = include_str!("../../../deploy/grafana/wirebench.json");
        let asked = names_in(dashboard, "wirebench_server_");
        assert!(asked.len() >= 7, "{asked:?}");
        for name in asked {
            assert!(
                both.contains(&format!("{name}{{")) || both.contains(&format!("{name} ")),
                "{name} is not served:\n{both}"
            );
        }
    }

    /// A running test's rate is taken over a second or more of the metrics' clock: a scrape
    /// sooner keeps the last rate.
    #[test]
    fn a_tests_rate_is_taken_over_the_time_between_scrapes() {
        let clock = Arc::new(model::clock::VirtualClock::default());
        let m = Arc::new(ServerMetrics::with_clock(clock.clone()));
        let rx = Arc::new(LiveCounters::default());
        let client: IpAddr = "127.0.0.1".parse().unwrap();
        let _test = m.start_test(3, "tcp", client, vec![(false, Arc::clone(&rx))]);
        let at = |bytes: u64| {
            rx.publish(&LiveSnapshot {
                bytes,
                ..LiveSnapshot::default()
            });
            let text = m.render();
            let series = "wirebench_server_test_rate_bps{test_id=\"3\",protocol=\"tcp\",direction=\"rx\",client=\"127.0.0.1\"} ";
            let line = text.lines().find_map(|l| l.strip_prefix(series));
            line.and_then(|v| v.parse::<f64>().ok())
        };
        clock.advance(Duration::from_secs(2));
        assert_eq!(at(250_000), Some(1e6), "2 Mbit over 2 s");
        clock.advance(Duration::from_millis(500));
        assert_eq!(at(500_000), Some(1e6), "half a second later: the last rate");
        clock.advance(Duration::from_millis(500));
        assert_eq!(at(500_000), Some(2e6), "2 Mbit over the last second");
    }

    #[test]
    fn only_get_metrics_is_answered() {
        let m = Arc::new(ServerMetrics::new());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Stop::new();
        let (m2, s2) = (Arc::clone(&m), stop.clone());
        let t = std::thread::spawn(move || serve_http(listener, m2, &s2));
        let ask = |req: &str| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            let _ = c.read_to_string(&mut out);
            out
        };
        let om = ask(
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
        );
        assert!(
            om.starts_with("HTTP/1.1 200 OK") && om.contains("# EOF"),
            "{om}"
        );
        let text = ask("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            text.starts_with("HTTP/1.1 200 OK") && !text.contains("# EOF"),
            "{text}"
        );
        assert!(text.contains("version=0.0.4"), "{text}");
        // A counter's HELP and TYPE name its samples.
        for l in [
            "# HELP wirebench_server_connections_total Control connections accepted.",
            "# TYPE wirebench_server_connections_total counter",
            "wirebench_server_connections_total 0",
            "# TYPE wirebench_server_tests_running gauge",
        ] {
            assert!(text.contains(l), "{l} missing in:\n{text}");
        }
        assert!(ask("GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(ask("POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(ask("\u{0}\u{1}garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
        stop.raise();
        t.join().unwrap().unwrap();
    }
}
