//! `wirebench exporter`: tests on demand for Prometheus, in the pattern of Prometheus'
//! blackbox exporter and iperf3_exporter. A scrape of
//! `/probe?target=HOST&kind=tcp|udp|latency&secs=5&rate=100M` runs that test against the
//! wirebench (or iperf3) server at HOST and answers with its figures
//! ([`report::openmetrics`]); `/metrics` has the exporter's own counters.
//!
//! What it checks before a probe runs: only known parameters, each once; `secs` within
//! `--max-secs` and, with the set-up, within the scrape timeout Prometheus sends
//! (`X-Prometheus-Scrape-Timeout-Seconds`); the rate within `--max-rate`; the rest through
//! the command's own clap definitions ([`Commands`]). A bad request gets 400 with the
//! reason, one probe too many 503; a probe that runs but fails answers 200 with
//! `probe_success 0` (Prometheus records the failure as a value, not a failed scrape).
//!
//! What it does not do: listen (the binary hands [`Exporter::handle`] to
//! [`control::http::serve`]) or keep results between scrapes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use control::http::{Request, Response};
use model::clock::Clock;
use model::stop::Stop;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::methods::TestRequest;
use crate::plan::Commands;
use crate::request::ClientRequest;

/// Seconds a probe needs beyond its test time (connecting, negotiating, results), in
/// the scrape timeout's budget.
const SET_UP_S: f64 = 1.0;
/// A probe still running this long after its test time is stopped (and fails).
const GRACE: Duration = Duration::from_secs(5);

/// The exporter's limits and what every probe shares.
#[derive(Debug, Clone)]
pub struct Config {
    /// Probes running at once; one more gets 503.
    pub max_concurrent: usize,
    /// Longest test a probe may ask for, seconds.
    pub max_secs: f64,
    /// Largest total rate a probe may ask for, bits/s (none: unlimited).
    pub max_rate: Option<f64>,
    /// The servers' pre-shared key.
    pub auth_key_file: Option<PathBuf>,
    /// The only targets probes may name (host as written, with or without its port);
    /// any target when empty.
    pub allow_targets: Vec<String>,
}

/// Most streams a probe may ask for.
pub const MAX_STREAMS: u32 = 16;
/// Largest datagram, write or message a probe may ask for, bytes.
pub const MAX_LEN: u32 = 65_507;

/// The kinds of probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A TCP throughput test (`client`).
    Tcp,
    /// A UDP test (`client -u`): rate, loss, jitter, latency, duplicates, reordering.
    Udp,
    /// UDP ping-pong round trips (`latency`).
    Latency,
}

impl Kind {
    /// The spelling in the query.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tcp => "tcp",
            Kind::Udp => "udp",
            Kind::Latency => "latency",
        }
    }
}

/// A probe's query, checked, as the command line it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// What kind of test.
    pub kind: Kind,
    /// Its test time, seconds.
    pub secs: f64,
    /// `wirebench client ...` or `wirebench latency ...`.
    pub argv: Vec<String>,
}

/// The parameters `/probe` takes, with what each means (the help page and the errors
/// list them).
pub const PARAMETERS: &[(&str, &str)] = &[
    (
        "target",
        "HOST or HOST:PORT of a wirebench or iperf3 server (required)",
    ),
    ("kind", "tcp (default), udp or latency"),
    ("secs", "test time in seconds (default 5)"),
    (
        "rate",
        "rate per stream, bits/s with k/M/G (udp default 1M; tcp unlimited)",
    ),
    ("streams", "parallel streams, 1-16 (tcp, udp)"),
    (
        "len",
        "bytes per datagram or write, or the latency message size (at most 65507)",
    ),
    ("reverse", "1: the server sends (tcp, udp)"),
    (
        "peer",
        "iperf3: the server is a stock iperf3 (found out anyway; this skips the check)",
    ),
];

/// `HOST` and its port from `HOST`, `HOST:PORT`, `[V6]`, `[V6]:PORT` or a bare IPv6
/// address.
fn split_target(t: &str) -> Result<(String, Option<String>), String> {
    if t.is_empty() {
        return Err("target is empty".into());
    }
    if let Some(rest) = t.strip_prefix('[') {
        let (host, tail) = rest
            .split_once(']')
            .ok_or_else(|| format!("target {t}: '[' without ']'"))?;
        return match tail {
            "" => Ok((host.into(), None)),
            _ => match tail.strip_prefix(':') {
                Some(p) => Ok((host.into(), Some(p.into()))),
                None => Err(format!("target {t}: after ']' only :PORT")),
            },
        };
    }
    match t.matches(':').count() {
        1 => {
            let (h, p) = t.split_once(':').unwrap_or((t, ""));
            Ok((h.into(), Some(p.into())))
        }
        _ => Ok((t.into(), None)),
    }
}

/// A probe's query that cannot be run (answered with HTTP 400): what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadQuery(pub String);

/// Reads a probe's query: every parameter known and given once, `secs` within the limit
/// and (with [`SET_UP_S`]) within `scrape_timeout`.
///
/// # Errors
/// What is wrong, for a 400.
pub fn ask(
    query: &[(String, String)],
    cfg: &Config,
    scrape_timeout: Option<f64>,
) -> Result<Ask, BadQuery> {
    read_query(query, cfg, scrape_timeout).map_err(BadQuery)
}

fn read_query(
    query: &[(String, String)],
    cfg: &Config,
    scrape_timeout: Option<f64>,
) -> Result<Ask, String> {
    let mut seen: Vec<&str> = Vec::new();
    for (k, _) in query {
        if !PARAMETERS.iter().any(|(p, _)| p == k) {
            let known: Vec<&str> = PARAMETERS.iter().map(|(p, _)| *p).collect();
            return Err(format!(
                "unknown parameter {k:?} (known: {})",
                known.join(", ")
            ));
        }
        if seen.contains(&k.as_str()) {
            return Err(format!("{k} given twice"));
        }
        seen.push(k);
    }
    let get = |k: &str| query.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
    let kind = match get("kind").unwrap_or("tcp") {
        "tcp" => Kind::Tcp,
        "udp" => Kind::Udp,
        "latency" => Kind::Latency,
        other => return Err(format!("kind={other}: tcp, udp or latency")),
    };
    let secs = match get("secs") {
        None => 5.0,
        Some(s) => s
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0)
            .ok_or_else(|| format!("secs={s}: a number of seconds above 0"))?,
    };
    if secs > cfg.max_secs {
        return Err(format!(
            "secs={secs} is above this exporter's --max-secs {}",
            cfg.max_secs
        ));
    }
    if let Some(timeout) = scrape_timeout {
        if secs + SET_UP_S > timeout {
            return Err(format!(
                "secs={secs} and about {SET_UP_S} s of set-up do not fit the scrape timeout of {timeout} s: lower secs or raise scrape_timeout"
            ));
        }
    }
    let target = get("target").ok_or("target is required (HOST or HOST:PORT)")?;
    let (host, port) = split_target(target)?;
    if !cfg.allow_targets.is_empty() && !cfg.allow_targets.iter().any(|t| t == target || *t == host)
    {
        return Err(format!(
            "target {target} is not one this exporter probes (--allow-target)"
        ));
    }
    // One size, within bounds: a list of latency sizes would run `secs` per size.
    if let Some(len) = get("len") {
        match len.parse::<u32>() {
            Ok(n) if (1..=MAX_LEN).contains(&n) => {}
            _ => return Err(format!("len={len}: one size in bytes, 1 to {MAX_LEN}")),
        }
    }
    if let Some(n) = get("streams") {
        match n.parse::<u32>() {
            Ok(k) if (1..=MAX_STREAMS).contains(&k) => {}
            _ => return Err(format!("streams={n}: 1 to {MAX_STREAMS}")),
        }
    }
    let mut argv: Vec<String> = vec!["wirebench".into()];
    argv.push(
        if kind == Kind::Latency {
            "latency"
        } else {
            "client"
        }
        .into(),
    );
    argv.push(format!("--time={secs}"));
    let mut flag = |name: &str, value: Option<&str>| {
        if let Some(v) = value {
            // One word: clap then names the flag in what it says about a bad value.
            argv.push(format!("{name}={v}"));
        }
    };
    flag("--port", port.as_deref());
    flag("--length", get("len"));
    if kind == Kind::Latency {
        for k in ["rate", "streams", "reverse", "peer"] {
            if get(k).is_some() {
                return Err(format!("{k} is not taken by kind=latency"));
            }
        }
    } else {
        flag("--bitrate", get("rate"));
        flag("--parallel", get("streams"));
        argv.push("--interval=0".into());
        if kind == Kind::Udp {
            argv.push("--udp".into());
        }
        match get("reverse") {
            None | Some("0" | "false") => {}
            Some("1" | "true") => argv.push("--reverse".into()),
            Some(v) => return Err(format!("reverse={v}: 1 or 0")),
        }
        match get("peer") {
            None | Some("wirebench") => {}
            Some("iperf3") => argv.push("--iperf3".into()),
            Some(v) => return Err(format!("peer={v}: iperf3 or wirebench")),
        }
    }
    if let Some(key) = &cfg.auth_key_file {
        argv.push(format!("--auth-key-file={}", key.display()));
    }
    argv.push("--".into());
    argv.push(host);
    Ok(Ask { kind, secs, argv })
}

/// A request parsed from an [`Ask`], its rate checked against `max_rate`.
fn request(ask: &Ask, cmds: &dyn Commands, max_rate: Option<f64>) -> Result<TestRequest, String> {
    let req = cmds.test(&ask.argv).map_err(|e| e.to_string())?;
    if let (Some(max), Some(c)) = (max_rate, req.get::<ClientRequest>()) {
        let total = c
            .spec
            .rate
            .bits_per_sec(c.spec.len)
            .map(|per| per * f64::from(c.spec.streams));
        match total {
            None => {
                return Err(format!(
                    "an unlimited rate is above this exporter's --max-rate {}: give rate",
                    model::units::bps(max)
                ))
            }
            Some(t) if t > max => {
                return Err(format!(
                    "{} in all is above this exporter's --max-rate {}",
                    model::units::bps(t),
                    model::units::bps(max)
                ))
            }
            Some(_) => {}
        }
    }
    Ok(req)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Ended {
    kind: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refusal {
    reason: String,
}

/// The exporter: its limits, the command parser, and its own counters.
pub struct Exporter {
    cfg: Config,
    cmds: Box<dyn Commands + Send + Sync>,
    running: AtomicUsize,
    registry: Registry,
    probes: Family<Ended, Counter>,
    refused: Family<Refusal, Counter>,
    running_gauge: Gauge,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// Counts a running probe while it lives.
struct Slot<'a>(&'a Exporter);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
        self.0.running_gauge.dec();
    }
}

impl Exporter {
    /// An exporter with these limits, parsing probes with `cmds`.
    pub fn new(cfg: Config, cmds: Box<dyn Commands + Send + Sync>) -> Exporter {
        let mut registry = Registry::with_prefix("wirebench_exporter");
        let probes = Family::<Ended, Counter>::default();
        let refused = Family::<Refusal, Counter>::default();
        let running_gauge = Gauge::default();
        registry.register("probes", "Probes run, by kind and outcome", probes.clone());
        registry.register(
            "probes_refused",
            "Probes refused before they ran, by reason",
            refused.clone(),
        );
        registry.register(
            "probes_running",
            "Probes running now",
            running_gauge.clone(),
        );
        // Every series exists from the start at 0 (a rate over the first probe is right).
        for kind in [Kind::Tcp, Kind::Udp, Kind::Latency] {
            for outcome in ["success", "failure"] {
                let _ = probes.get_or_create(&Ended {
                    kind: kind.as_str().into(),
                    outcome: outcome.into(),
                });
            }
        }
        for reason in ["bad_request", "busy"] {
            let _ = refused.get_or_create(&Refusal {
                reason: reason.into(),
            });
        }
        Exporter {
            cfg,
            cmds,
            running: AtomicUsize::new(0),
            registry,
            probes,
            refused,
            running_gauge,
        }
    }

    fn refuse(&self, status: u16, reason: &str, why: &str) -> Response {
        self.refused
            .get_or_create(&Refusal {
                reason: reason.into(),
            })
            .inc();
        Response::text(status, format!("{why}\n"))
    }

    /// Answers one HTTP request: `/probe`, `/metrics`, or the help page at `/`.
    pub fn handle(&self, req: &Request) -> Response {
        if req.method != "GET" {
            return Response::text(405, "only GET\n");
        }
        match req.path.as_str() {
            "/probe" => self.probe(req),
            "/metrics" => {
                let mut out = String::new();
                let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
                control::metrics::exposition(req, out)
            }
            "/" => Response::text(200, help(&self.cfg)),
            _ => Response::text(404, "/probe, /metrics or /\n"),
        }
    }

    fn probe(&self, req: &Request) -> Response {
        let timeout = req
            .header("x-prometheus-scrape-timeout-seconds")
            .and_then(|t| t.parse::<f64>().ok());
        let ask = match ask(&req.query, &self.cfg, timeout) {
            Ok(a) => a,
            Err(why) => return self.refuse(400, "bad_request", &why.0),
        };
        let test = match request(&ask, self.cmds.as_ref(), self.cfg.max_rate) {
            Ok(t) => t,
            Err(why) => return self.refuse(400, "bad_request", &why),
        };
        if self.running.fetch_add(1, Ordering::Relaxed) >= self.cfg.max_concurrent {
            self.running.fetch_sub(1, Ordering::Relaxed);
            return self.refuse(
                503,
                "busy",
                &format!(
                    "{} probes are running (--max-concurrent): try again later",
                    self.cfg.max_concurrent
                ),
            );
        }
        self.running_gauge.inc();
        let _slot = Slot(self);
        let started = engine::clock::RealClock::new();
        let (result, success) = run_bounded(&test, ask.secs);
        let outcome = if success { "success" } else { "failure" };
        self.probes
            .get_or_create(&Ended {
                kind: ask.kind.as_str().into(),
                outcome: outcome.into(),
            })
            .inc();
        let body = report::openmetrics::probe(&report::openmetrics::Probe {
            result: result.as_ref(),
            success,
            duration_s: started.mono().as_secs_f64(),
        });
        control::metrics::exposition(req, body)
    }
}

/// Runs `test`, stopping it [`GRACE`] after its `secs` (and the set-up): the result and
/// `true` when it ran to its end, else nothing and `false`, with the reason logged.
fn run_bounded(test: &TestRequest, secs: f64) -> (Option<model::results::RunResult>, bool) {
    let stop = Stop::new();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = {
        let stop = stop.clone();
        let limit = Duration::from_secs_f64(secs + SET_UP_S) + GRACE;
        std::thread::Builder::new()
            .name("wb-probe-limit".into())
            .spawn(move || {
                if done_rx.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                    stop.raise();
                }
            })
    };
    let out = crate::methods::run(test, &mut crate::Quiet, &stop);
    let _ = done_tx.send(());
    if let Ok(w) = watchdog {
        let _ = w.join();
    }
    if stop.is_raised() {
        // A test cut short: its partial figures are not the probe's.
        tracing::warn!("probe: stopped {GRACE:?} after its {secs} s");
        return (None, false);
    }
    match out {
        Ok(r) => (Some(r), true),
        Err(e) => {
            tracing::warn!("probe: {e}");
            (None, false)
        }
    }
}

/// The page at `/`.
fn help(cfg: &Config) -> String {
    let mut s = String::from(
        "wirebench exporter\n\nGET /probe?target=HOST[:PORT]&kind=tcp|udp|latency&secs=5&rate=100M\n    runs that test and answers with its figures as metrics\nGET /metrics\n    the exporter's own counters\n\nParameters of /probe:\n",
    );
    for (p, what) in PARAMETERS {
        s.push_str(&format!("  {p:<8} {what}\n"));
    }
    s.push_str(&format!(
        "\nLimits: {} probes at once, {} s per probe{}.\n",
        cfg.max_concurrent,
        cfg.max_secs,
        cfg.max_rate
            .map(|r| format!(", {} per probe", model::units::bps(r)))
            .unwrap_or_default()
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::CommandError;

    fn cfg() -> Config {
        Config {
            max_concurrent: 2,
            max_secs: 30.0,
            max_rate: None,
            auth_key_file: None,
            allow_targets: Vec::new(),
        }
    }

    fn q(s: &str) -> Vec<(String, String)> {
        s.split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect()
    }

    #[test]
    fn a_query_becomes_the_command_line_of_its_test() {
        let a = ask(
            &q("target=198.18.0.2:5301&kind=udp&secs=2&rate=100M&streams=2&reverse=1"),
            &cfg(),
            Some(10.0),
        )
        .unwrap();
        assert_eq!(a.kind, Kind::Udp);
        assert_eq!(a.secs, 2.0);
        assert_eq!(
            a.argv.join(" "),
            "wirebench client --time=2 --port=5301 --bitrate=100M --parallel=2 --interval=0 --udp --reverse -- 198.18.0.2"
        );
        let l = ask(
            &q("target=[2001:db8::1]:7&kind=latency&len=200"),
            &cfg(),
            None,
        )
        .unwrap();
        assert_eq!(
            l.argv.join(" "),
            "wirebench latency --time=5 --port=7 --length=200 -- 2001:db8::1"
        );
        let bare = ask(&q("target=::1"), &cfg(), None).unwrap();
        assert_eq!(bare.argv.last().map(String::as_str), Some("::1"));
        assert_eq!(bare.kind, Kind::Tcp);
        // A host that looks like a flag stays a host.
        let odd = ask(&q("target=-h"), &cfg(), None).unwrap();
        assert_eq!(&odd.argv[odd.argv.len() - 2..], ["--", "-h"]);
        let keyed = ask(
            &q("target=h"),
            &Config {
                auth_key_file: Some("/etc/wirebench/key".into()),
                ..cfg()
            },
            None,
        )
        .unwrap();
        assert!(keyed
            .argv
            .join(" ")
            .contains("--auth-key-file=/etc/wirebench/key -- h"));
    }

    #[test]
    fn bad_queries_say_what_is_wrong() {
        for (query, timeout, needle) in [
            ("kind=udp", None, "target is required"),
            ("target=h&kind=icmp", None, "kind=icmp"),
            ("target=h&secs=0", None, "secs=0"),
            ("target=h&secs=nan", None, "secs=nan"),
            ("target=h&secs=31", None, "--max-secs 30"),
            ("target=h&secs=5", Some(5.0), "scrape timeout of 5 s"),
            ("target=h&command=rm", None, "unknown parameter \"command\""),
            ("target=h&target=g", None, "target given twice"),
            (
                "target=h&kind=latency&rate=1M",
                None,
                "rate is not taken by kind=latency",
            ),
            ("target=h&reverse=yes", None, "reverse=yes"),
            ("target=h&peer=netperf", None, "peer=netperf"),
            ("target=[::1", None, "without ']'"),
            ("target=[::1]x", None, "only :PORT"),
            ("target=", None, "target is empty"),
            (
                "target=h&kind=latency&len=64,128",
                None,
                "len=64,128: one size",
            ),
            ("target=h&len=", None, "len=: one size"),
            ("target=h&len=70000", None, "len=70000"),
            ("target=h&streams=17", None, "streams=17: 1 to 16"),
        ] {
            let e = ask(&q(query), &cfg(), timeout).unwrap_err();
            assert!(e.0.contains(needle), "{query}: {e}");
        }
        // Within the scrape timeout with the set-up.
        assert!(ask(&q("target=h&secs=4"), &cfg(), Some(5.0)).is_ok());
        // Only the allowed targets, by host or by host and port.
        let only = Config {
            allow_targets: vec!["198.18.0.2".into(), "lab-b:5301".into()],
            ..cfg()
        };
        assert!(ask(&q("target=198.18.0.2:5301"), &only, None).is_ok());
        assert!(ask(&q("target=lab-b:5301"), &only, None).is_ok());
        let e = ask(&q("target=lab-b:7"), &only, None).unwrap_err();
        assert!(e.0.contains("--allow-target"), "{e}");
    }

    /// Parses nothing: these tests never run a probe.
    struct NoCommands;

    impl Commands for NoCommands {
        fn test(&self, argv: &[String]) -> Result<TestRequest, CommandError> {
            Err(CommandError::Refused(format!(
                "not parsed here: {}",
                argv.join(" ")
            )))
        }
        fn lab(&self, _: &str, _: &[String]) -> Result<lab::topology::Request, CommandError> {
            Err(CommandError::Refused("no labs".into()))
        }
    }

    fn get(e: &Exporter, target: &str) -> Response {
        let req = format!("GET {target} HTTP/1.1\r\n\r\n");
        e.handle(&Request::parse(req.as_bytes()).unwrap())
    }

    #[test]
    fn the_exporter_counts_refusals_and_serves_what_the_dashboard_asks_for() {
        let e = Exporter::new(cfg(), Box::new(NoCommands));
        assert_eq!(get(&e, "/probe?kind=udp").status, 400);
        // What the parser refuses is a bad request too, with its words.
        let r = get(&e, "/probe?target=h");
        assert_eq!(r.status, 400);
        assert!(r.body.contains("not parsed here"), "{}", r.body);
        assert_eq!(get(&e, "/nothing").status, 404);
        assert!(get(&e, "/").body.contains("GET /probe?target=HOST"));
        let post = Request::parse(b"POST /probe HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(e.handle(&post).status, 405);
        let own = get(&e, "/metrics").body;
        assert!(
            own.contains("wirebench_exporter_probes_refused_total{reason=\"bad_request\"} 2"),
            "{own}"
        );
        let dashboard = include_str!("../../../deploy/grafana/wirebench.json");
        let asked = control::metrics::names_in(dashboard, "wirebench_exporter_");
        assert!(asked.len() >= 2, "{asked:?}");
        for name in asked {
            // A family appears by its HELP line before it has a sample.
            assert!(
                own.contains(&format!("# HELP {name} ")),
                "{name} is not served:\n{own}"
            );
        }
    }
}
