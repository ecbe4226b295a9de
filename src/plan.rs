//! Test plans (`wirebench run PLAN.toml`): what to test, the tests in order, the
//! thresholds that make verdicts, and metadata. A plan is checked as a whole before
//! anything runs: every test's flags are parsed by the command's own parser, every
//! threshold's unit is read, and an error names the test or threshold and its line.
//!
//! ```toml
//! [plan]
//! title = "FRER two-path benchmark"
//! description = "what and why"
//! metadata = { device = "software FRER relay", operator = "lab" }
//!
//! [target]                  # one of:
//! lab = "frer"              #   a built-in topology or a topology file, built and removed
//! lab_args = "--path-a loss=1%"   # flags of `lab up`
//! # host = "192.0.2.10"     #   a running `wirebench server` (port = 5301)
//! # tx = "eth1"; rx = "eth2"   # raw ports of this host for rfc2544 (with host)
//! # loopback = true         #   a server of our own on 127.0.0.1
//!
//! [[test]]
//! name = "TCP throughput"
//! kind = "client"           # client, sweep, blocksize, latency, rfc2544, streams, shaping, frer-compare
//! args = "-t 5"             # the command's own flags; the target is added by the runner
//!
//! [[threshold]]
//! test = "TCP throughput"   # a test's name; omitted: every test that has the metric
//! metric = "received_bps"   # received_bps, loss, latency_p50/p99/p999/max, zero_loss_bps,
//!                           # rfc2544_throughput_bps, frer_overhead
//! min = "500M"              # or max = "300us" / "0.1%"
//! ```

use std::collections::BTreeMap;
use std::ops::Range;

use clap::Parser;
use model::results::{RunResult, Verdict};
use serde::Deserialize;
use toml::Spanned;

use model::units;

/// What a plan's tests run against.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A server of our own on 127.0.0.1 (no root needed).
    Loopback,
    /// A running `wirebench server`; raw tests use `tx`/`rx` of this host.
    Host {
        /// Address.
        host: String,
        /// Control port.
        port: u16,
        /// Raw sending port of this host.
        tx: Option<String>,
        /// Raw receiving port of this host.
        rx: Option<String>,
    },
    /// A lab built before the tests and removed after.
    Lab {
        /// Built-in topology or topology file.
        topology: String,
        /// Flags of `lab up`.
        args: Vec<String>,
    },
}

/// The kinds of test a plan can hold: the commands that produce a result document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `wirebench client`.
    Client,
    /// `wirebench sweep`.
    Sweep,
    /// `wirebench blocksize`.
    Blocksize,
    /// `wirebench latency`.
    Latency,
    /// `wirebench rfc2544`.
    Rfc2544,
    /// `wirebench streams`.
    Streams,
    /// `wirebench shaping`.
    Shaping,
    /// `wirebench frer compare`.
    FrerCompare,
}

const KINDS: &str = "client, sweep, blocksize, latency, rfc2544, streams, shaping, frer-compare";

impl Kind {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "client" => Self::Client,
            "sweep" => Self::Sweep,
            "blocksize" => Self::Blocksize,
            "latency" => Self::Latency,
            "rfc2544" => Self::Rfc2544,
            "streams" => Self::Streams,
            "shaping" => Self::Shaping,
            "frer-compare" => Self::FrerCompare,
            _ => return None,
        })
    }

    /// The name in plans and results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Sweep => "sweep",
            Self::Blocksize => "blocksize",
            Self::Latency => "latency",
            Self::Rfc2544 => "rfc2544",
            Self::Streams => "streams",
            Self::Shaping => "shaping",
            Self::FrerCompare => "frer-compare",
        }
    }

    /// Whether it talks to a `wirebench server` (so the runner must start one).
    pub fn needs_server(self, args: &[String]) -> bool {
        match self {
            Self::Client | Self::Sweep | Self::Blocksize | Self::Latency => true,
            Self::Rfc2544 => !has_raw_ports(args),
            _ => false,
        }
    }

    /// Whether it needs root (raw frames or a lab of its own).
    pub fn needs_root(self, args: &[String]) -> bool {
        match self {
            Self::Streams | Self::Shaping | Self::FrerCompare => true,
            Self::Rfc2544 => has_raw_ports(args),
            _ => false,
        }
    }
}

fn has_raw_ports(args: &[String]) -> bool {
    args.iter().any(|a| a == "--tx" || a.starts_with("--tx="))
}

/// One test of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanTest {
    /// Its name (unique in the plan).
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// The command's flags as written (the runner adds the target).
    pub args: Vec<String>,
    /// A lab of its own (topology, `lab up` flags), built before it and removed after,
    /// instead of the plan's target.
    pub lab: Option<(String, Vec<String>)>,
    /// Line of its `kind` in the plan.
    pub line: usize,
}

/// What a threshold checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Received bit/s of a client test's summary.
    ReceivedBps,
    /// Loss ratio of a client test's summary.
    Loss,
    /// A latency percentile (or the maximum), µs: of a client test, of a latency test's
    /// sizes, or of an RFC 2544 latency table (one verdict per frame size).
    Latency(LatencyStat),
    /// The maximum zero-loss rate of a sweep.
    ZeroLossBps,
    /// RFC 2544 throughput (L2 bit/s incl. FCS), one verdict per frame size.
    Rfc2544ThroughputBps,
    /// FRER overhead %, one verdict per measurement.
    FrerOverhead,
}

/// Which latency figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyStat {
    /// Median.
    P50,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Largest.
    Max,
}

const METRICS: &str = "received_bps, loss, latency_p50, latency_p99, latency_p999, latency_max, zero_loss_bps, rfc2544_throughput_bps, frer_overhead";

impl Metric {
    /// Whether a test of `kind` produces this metric.
    pub fn produced_by(self, kind: &str) -> bool {
        match self {
            Self::ReceivedBps | Self::Loss => kind == "client",
            Self::Latency(_) => matches!(kind, "client" | "latency" | "rfc2544"),
            Self::ZeroLossBps => kind == "sweep",
            Self::Rfc2544ThroughputBps => kind == "rfc2544",
            Self::FrerOverhead => kind == "frer-compare",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "received_bps" => Self::ReceivedBps,
            "loss" => Self::Loss,
            "latency_p50" => Self::Latency(LatencyStat::P50),
            "latency_p99" => Self::Latency(LatencyStat::P99),
            "latency_p999" => Self::Latency(LatencyStat::P999),
            "latency_max" => Self::Latency(LatencyStat::Max),
            "zero_loss_bps" => Self::ZeroLossBps,
            "rfc2544_throughput_bps" => Self::Rfc2544ThroughputBps,
            "frer_overhead" => Self::FrerOverhead,
            _ => return None,
        })
    }

    /// Reads a limit in this metric's unit.
    fn value(self, s: &str) -> Result<f64, String> {
        match self {
            Self::ReceivedBps | Self::ZeroLossBps | Self::Rfc2544ThroughputBps => {
                units::rate_bps(s)
            }
            Self::Loss => units::percent_ratio(s),
            Self::Latency(_) => units::time_us(s),
            Self::FrerOverhead => s
                .trim()
                .trim_end_matches('%')
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("'{s}' is not a percentage (e.g. 25%)")),
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Self::ReceivedBps | Self::ZeroLossBps | Self::Rfc2544ThroughputBps => {
                model::units::bps(v)
            }
            Self::Loss => format!("{:.4} %", v * 100.0),
            Self::Latency(_) => format!("{v:.1} us"),
            Self::FrerOverhead => format!("{v:+.1} %"),
        }
    }
}

/// A threshold: a metric of one test (or of every test that has it) and its bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The test's name, or every test.
    pub test: Option<String>,
    /// What it checks.
    pub metric: Metric,
    /// The metric as written.
    pub metric_name: String,
    /// Lower bound.
    pub min: Option<f64>,
    /// Upper bound.
    pub max: Option<f64>,
    /// Line in the plan.
    pub line: usize,
}

/// A checked plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Title.
    pub title: String,
    /// Description.
    pub description: Option<String>,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
    /// What to test.
    pub target: Target,
    /// The tests, in order.
    pub tests: Vec<PlanTest>,
    /// The thresholds.
    pub thresholds: Vec<Threshold>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanToml {
    plan: Option<Header>,
    target: Option<Spanned<TargetToml>>,
    #[serde(default)]
    test: Vec<TestToml>,
    #[serde(default)]
    threshold: Vec<ThresholdToml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    title: Option<String>,
    description: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetToml {
    lab: Option<String>,
    lab_args: Option<String>,
    host: Option<String>,
    port: Option<u16>,
    tx: Option<String>,
    rx: Option<String>,
    loopback: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestToml {
    name: Option<String>,
    kind: Spanned<String>,
    #[serde(default)]
    args: Option<Spanned<String>>,
    lab: Option<String>,
    lab_args: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThresholdToml {
    test: Option<String>,
    metric: Spanned<String>,
    min: Option<Spanned<String>>,
    max: Option<Spanned<String>>,
}

fn line_of(text: &str, span: Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}

fn split_args(s: &str) -> Option<Vec<String>> {
    shlex::split(s)
}

impl Plan {
    /// Parses and checks a plan.
    ///
    /// # Errors
    /// The first problem, with its line: TOML syntax, an unknown key, an unknown test kind
    /// or metric, a flag the command refuses, a value in the wrong unit, a missing target.
    pub fn parse(text: &str) -> Result<Self, String> {
        let p: PlanToml = toml::from_str(text).map_err(|e| e.to_string().trim().to_owned())?;
        let at = |span: Range<usize>| line_of(text, span);
        let header = p.plan.unwrap_or(Header {
            title: None,
            description: None,
            metadata: BTreeMap::new(),
        });
        let Some(t) = p.target else {
            return Err(
                "the plan has no [target]: give lab = \"TOPOLOGY\", host = \"ADDRESS\" or loopback = true"
                    .into(),
            );
        };
        let tline = at(t.span());
        let t = t.into_inner();
        let given = [t.lab.is_some(), t.host.is_some(), t.loopback == Some(true)];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(format!(
                "line {tline}: [target] needs exactly one of lab, host or loopback = true"
            ));
        }
        let target = if let Some(topology) = t.lab {
            if t.tx.is_some() || t.rx.is_some() || t.port.is_some() {
                return Err(format!(
                    "line {tline}: [target] tx, rx and port belong to a host target; a lab has its own"
                ));
            }
            let args = lab_args(&topology, t.lab_args.as_deref())
                .map_err(|e| format!("line {tline}: {e}"))?;
            Target::Lab { topology, args }
        } else if let Some(host) = t.host {
            if t.lab_args.is_some() {
                return Err(format!("line {tline}: lab_args belongs to a lab target"));
            }
            if t.tx.is_some() != t.rx.is_some() {
                return Err(format!("line {tline}: give both tx and rx, or neither"));
            }
            Target::Host {
                host,
                port: t.port.unwrap_or(control::DEFAULT_PORT),
                tx: t.tx,
                rx: t.rx,
            }
        } else {
            if t.lab_args.is_some() || t.tx.is_some() || t.rx.is_some() {
                return Err(format!(
                    "line {tline}: a loopback target takes no lab_args, tx or rx"
                ));
            }
            Target::Loopback
        };
        if p.test.is_empty() {
            return Err("the plan has no [[test]]".into());
        }
        let mut tests: Vec<PlanTest> = Vec::new();
        for (i, tt) in p.test.into_iter().enumerate() {
            let line = at(tt.kind.span());
            let kind = Kind::parse(tt.kind.get_ref()).ok_or_else(|| {
                format!(
                    "line {line}: test {}: unknown kind '{}' (kinds: {KINDS})",
                    i + 1,
                    tt.kind.get_ref()
                )
            })?;
            let name = tt
                .name
                .unwrap_or_else(|| format!("{} {}", kind.name(), i + 1));
            if tests.iter().any(|o| o.name == name) {
                return Err(format!("line {line}: two tests are named '{name}'"));
            }
            let (args, aline) = match &tt.args {
                Some(a) => (
                    split_args(a.get_ref()).ok_or_else(|| {
                        format!(
                            "line {}: test '{name}': args has an unclosed quote",
                            at(a.span())
                        )
                    })?,
                    at(a.span()),
                ),
                None => (vec![], line),
            };
            if tt.lab_args.is_some() && tt.lab.is_none() {
                return Err(format!("line {line}: test '{name}': lab_args without lab"));
            }
            let lab = match tt.lab {
                Some(topology) => {
                    let args = lab_args(&topology, tt.lab_args.as_deref())
                        .map_err(|e| format!("line {line}: test '{name}': {e}"))?;
                    Some((topology, args))
                }
                None => None,
            };
            let test = PlanTest {
                name,
                kind,
                args,
                lab,
                line,
            };
            // The command's own parser checks the flags, with a stand-in target.
            let stand_in = match &test.lab {
                Some((topology, args)) => Target::Lab {
                    topology: topology.clone(),
                    args: args.clone(),
                },
                None => target.clone(),
            };
            let argv = test.argv(&Context::stand_in(&stand_in));
            crate::cli::Cli::try_parse_from(&argv).map_err(|e| {
                format!(
                    "line {aline}: test '{}': {}",
                    test.name,
                    first_line(&e.to_string())
                )
            })?;
            if matches!(stand_in, Target::Loopback) && test.kind.needs_root(&test.args) {
                return Err(format!(
                    "line {line}: test '{}': {} needs raw ports or a lab, not a loopback target",
                    test.name,
                    test.kind.name()
                ));
            }
            tests.push(test);
        }
        let mut thresholds = Vec::new();
        for th in p.threshold {
            let line = at(th.metric.span());
            let metric = Metric::parse(th.metric.get_ref()).ok_or_else(|| {
                format!(
                    "line {line}: unknown metric '{}' (metrics: {METRICS})",
                    th.metric.get_ref()
                )
            })?;
            if let Some(name) = &th.test {
                if !tests.iter().any(|t| &t.name == name) {
                    return Err(format!("line {line}: threshold names no test '{name}'"));
                }
            }
            let bound = |b: &Option<Spanned<String>>, key: &str| {
                b.as_ref()
                    .map(|v| {
                        metric
                            .value(v.get_ref())
                            .map_err(|e| format!("line {}: threshold {key}: {e}", at(v.span())))
                    })
                    .transpose()
            };
            let (min, max) = (bound(&th.min, "min")?, bound(&th.max, "max")?);
            if min.is_none() && max.is_none() {
                return Err(format!("line {line}: a threshold needs min or max"));
            }
            thresholds.push(Threshold {
                test: th.test,
                metric,
                metric_name: th.metric.into_inner(),
                min,
                max,
                line,
            });
        }
        Ok(Plan {
            title: header.title.unwrap_or_else(|| "wirebench run".into()),
            description: header.description,
            metadata: header.metadata,
            target,
            tests,
            thresholds,
        })
    }

    /// Whether any test needs root (raw frames, or the target is a lab). Judged on the
    /// command lines as they will run: a host target's raw ports make rfc2544 raw.
    pub fn needs_root(&self) -> bool {
        let ctx = Context::stand_in(&self.target);
        matches!(self.target, Target::Lab { .. })
            || self
                .tests
                .iter()
                .any(|t| t.lab.is_some() || t.kind.needs_root(&t.argv(&ctx)))
    }
}

/// `lab up` flags, checked by the lab command's own parser.
fn lab_args(topology: &str, text: Option<&str>) -> Result<Vec<String>, String> {
    let args = split_args(text.unwrap_or("")).ok_or("lab_args has an unclosed quote")?;
    let mut argv = vec!["wirebench", "lab", "up", topology, "--dry-run"];
    argv.extend(args.iter().map(String::as_str));
    crate::cli::Cli::try_parse_from(&argv)
        .map_err(|e| format!("lab_args: {}", first_line(&e.to_string())))?;
    Ok(args)
}

fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_owned()
}

/// Where the runner points a test.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// Server address for server-based tests.
    pub host: String,
    /// Its control port.
    pub port: u16,
    /// The lab's name, when the target is a lab.
    pub lab: Option<String>,
    /// Raw ports for rfc2544 (`talker:eth0` in a lab).
    pub raw: Option<(String, String)>,
}

impl Context {
    /// The context used to check a plan before anything exists.
    pub fn stand_in(target: &Target) -> Self {
        match target {
            Target::Loopback => Self {
                host: "127.0.0.1".into(),
                port: control::DEFAULT_PORT,
                lab: None,
                raw: None,
            },
            Target::Host { host, port, tx, rx } => Self {
                host: host.clone(),
                port: *port,
                lab: None,
                raw: tx.clone().zip(rx.clone()),
            },
            Target::Lab { .. } => Self {
                host: "198.18.0.2".into(),
                port: control::DEFAULT_PORT,
                lab: Some("plan".into()),
                raw: Some(("talker:eth0".into(), "listener:eth0".into())),
            },
        }
    }
}

impl PlanTest {
    /// The full command line (`wirebench KIND ... -J`) for `ctx`.
    pub fn argv(&self, ctx: &Context) -> Vec<String> {
        let mut v: Vec<String> = vec!["wirebench".into()];
        let has = |flag: &str| {
            self.args
                .iter()
                .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
        };
        let port = ["-p".to_owned(), ctx.port.to_string()];
        match self.kind {
            Kind::Client | Kind::Sweep | Kind::Blocksize | Kind::Latency => {
                v.push(self.kind.name().into());
                v.push(ctx.host.clone());
                if !has("-p") && !has("--port") {
                    v.extend(port);
                }
            }
            Kind::Rfc2544 => {
                v.push("rfc2544".into());
                let raw_given = has("--tx");
                match (&ctx.raw, raw_given) {
                    (_, true) => {}
                    (Some((tx, rx)), false) if ctx.lab.is_some() => {
                        v.extend(["--tx".into(), tx.clone(), "--rx".into(), rx.clone()]);
                    }
                    (Some((tx, rx)), false) => {
                        v.extend(["--tx".into(), tx.clone(), "--rx".into(), rx.clone()]);
                    }
                    (None, false) => {
                        v.push(ctx.host.clone());
                        if !has("-p") && !has("--port") {
                            v.extend(port);
                        }
                    }
                }
                if let Some(l) = &ctx.lab {
                    if !has("--lab") {
                        v.extend(["--lab".into(), l.clone()]);
                    }
                }
            }
            Kind::Streams | Kind::Shaping => {
                v.push(self.kind.name().into());
                if let Some(l) = &ctx.lab {
                    if !has("--lab") {
                        v.extend(["--lab".into(), l.clone()]);
                    }
                }
            }
            Kind::FrerCompare => {
                v.extend(["frer".into(), "compare".into()]);
            }
        }
        v.extend(self.args.iter().cloned());
        if !has("-J") && !has("--json") {
            v.push("-J".into());
        }
        v
    }
}

/// The figures of `metric` in one test's result, as (label, value): one for a summary,
/// one per frame size or measurement for a table. Empty when the result lacks it.
pub fn figures(metric: Metric, r: &RunResult) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    match metric {
        Metric::ReceivedBps => {
            if let Some(v) = r.summary.as_ref().and_then(|s| s.received_bps) {
                out.push((String::new(), v));
            }
        }
        Metric::Loss => {
            if let Some(v) = r.summary.as_ref().and_then(|s| s.loss_ratio) {
                out.push((String::new(), v));
            }
        }
        Metric::Latency(stat) => {
            let pick = |l: &model::results::LatencyUs| match stat {
                LatencyStat::P50 => l.p50,
                LatencyStat::P99 => l.p99,
                LatencyStat::P999 => l.p999,
                LatencyStat::Max => l.max,
            };
            if let Some(l) = r.summary.as_ref().and_then(|s| s.latency_us.as_ref()) {
                out.push((String::new(), pick(l)));
            }
            for row in r.latency.iter().flatten() {
                out.push((format!("{} B", row.size), pick(&row.rtt_us)));
            }
            if let Some(t) = &r.rfc2544 {
                for row in &t.latency {
                    let Some(s) = &row.summary else { continue };
                    let v = match stat {
                        LatencyStat::P50 => s.p50_us,
                        LatencyStat::P99 => s.p99_us,
                        LatencyStat::P999 => s.p999_us,
                        LatencyStat::Max => s.max_us,
                    };
                    out.push((format!("{} B", row.frame_len), v));
                }
            }
        }
        Metric::ZeroLossBps => {
            if let Some(v) = r.sweep.as_ref().and_then(|s| s.max_zero_loss_bps) {
                out.push((String::new(), v));
            }
        }
        Metric::Rfc2544ThroughputBps => {
            if let Some(t) = &r.rfc2544 {
                for row in &t.throughput {
                    if let Some(fps) = row.fps {
                        out.push((
                            format!("{} B", row.frame_len),
                            fps * row.frame_len as f64 * 8.0,
                        ));
                    }
                }
            }
        }
        Metric::FrerOverhead => {
            if let Some(f) = &r.frer {
                for row in &f.rows {
                    if let Some(o) = row.overhead_percent {
                        out.push((row.metric.clone(), o));
                    }
                }
            }
        }
    }
    out
}

/// Evaluates the thresholds against the finished tests, as verdicts naming the test (its
/// id), the figure, the measured value and the bound. A threshold whose test did not run
/// or has no such figure is a failed verdict ("not measured"), never a pass.
pub fn evaluate(
    thresholds: &[Threshold],
    tests: &[(String, String, String, Option<&RunResult>)],
) -> Vec<Verdict> {
    let mut out = Vec::new();
    for th in thresholds {
        let bound = match (th.min, th.max) {
            (Some(lo), Some(hi)) => format!("{} .. {}", th.metric.show(lo), th.metric.show(hi)),
            (Some(lo), None) => format!(">= {}", th.metric.show(lo)),
            (None, Some(hi)) => format!("<= {}", th.metric.show(hi)),
            (None, None) => String::new(),
        };
        let mut any = false;
        for (id, name, kind, result) in tests {
            if th.test.as_ref().is_some_and(|t| t != name) {
                continue;
            }
            let figs = result.map(|r| figures(th.metric, r)).unwrap_or_default();
            if figs.is_empty() {
                // Named, or a test of a kind that would have measured it but did not run.
                if th.test.is_some() || result.is_none() && th.metric.produced_by(kind) {
                    out.push(Verdict {
                        name: format!("{} of {name} ({id})", th.metric_name),
                        passed: false,
                        detail: format!("not measured (required {bound})"),
                    });
                    any = true;
                }
                continue;
            }
            for (label, v) in figs {
                any = true;
                let passed = th.min.is_none_or(|lo| v >= lo) && th.max.is_none_or(|hi| v <= hi);
                let at = if label.is_empty() {
                    String::new()
                } else {
                    format!(" at {label}")
                };
                out.push(Verdict {
                    name: format!("{}{at} of {name} ({id})", th.metric_name),
                    passed,
                    detail: format!("measured {}, required {bound}", th.metric.show(v)),
                });
            }
        }
        if !any {
            out.push(Verdict {
                name: format!("{} (line {})", th.metric_name, th.line),
                passed: false,
                detail: format!("no test measured it (required {bound})"),
            });
        }
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    const PLAN: &str = r#"
[plan]
title = "FRER"
metadata = { device = "relay" }

[target]
lab = "frer"
lab_args = "--path-a loss=1%"

[[test]]
name = "tcp"
kind = "client"
args = "-t 2"

[[test]]
kind = "rfc2544"
args = "--sizes 64,1518 -t 1 --tests throughput,latency"

[[threshold]]
test = "tcp"
metric = "received_bps"
min = "500M"

[[threshold]]
metric = "latency_p999"
max = "300us"
"#;

    #[test]
    fn a_plan_parses_and_each_test_gets_its_target() {
        let p = Plan::parse(PLAN).unwrap();
        assert_eq!(p.title, "FRER");
        assert_eq!(p.metadata["device"], "relay");
        assert_eq!(p.tests[1].name, "rfc2544 2");
        assert!(p.needs_root());
        let ctx = Context {
            host: "198.18.30.2".into(),
            port: 5301,
            lab: Some("r1".into()),
            raw: Some(("talker:eth0".into(), "listener:eth0".into())),
        };
        assert_eq!(
            p.tests[0].argv(&ctx).join(" "),
            "wirebench client 198.18.30.2 -p 5301 -t 2 -J"
        );
        assert_eq!(
            p.tests[1].argv(&ctx).join(" "),
            "wirebench rfc2544 --tx talker:eth0 --rx listener:eth0 --lab r1 --sizes 64,1518 -t 1 --tests throughput,latency -J"
        );
        assert_eq!(p.thresholds[0].min, Some(500e6));
        assert_eq!(p.thresholds[1].max, Some(300.0));
    }

    #[test]
    fn every_example_plan_parses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("plan-") && name.ends_with(".toml")) {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("{dir}", "/tmp");
            let p = Plan::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.tests.is_empty(), "{name}");
            n += 1;
        }
        assert!(n >= 8, "{n} example plans");
    }

    #[test]
    fn bad_plans_name_the_field_and_line() {
        let cases: &[(&str, &str)] = &[
            ("[[test]]\nkind = \"client\"\n", "no [target]"),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"iperf\"\n",
                "line 4: test 1: unknown kind 'iperf'",
            ),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-b fast\"\n",
                "line 5: test 'client 1': invalid value 'fast'",
            ),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\nmetric = \"latency_p999\"\nmax = \"300\"\n",
                "line 7: threshold max: '300' is not a time",
            ),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\nmetric = \"speed\"\nmin = \"1\"\n",
                "line 6: unknown metric 'speed'",
            ),
            (
                "[target]\nloopback = true\nhost = \"x\"\n[[test]]\nkind = \"client\"\n",
                "exactly one of",
            ),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"streams\"\nargs = \"p.toml\"\n",
                "needs raw ports or a lab",
            ),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"client\"\ncolour = 1\n",
                "unknown field `colour`",
            ),
            (
                "[target]\nlab = \"frer\"\nlab_args = \"--path-a\"\n[[test]]\nkind = \"client\"\n",
                "line 1: lab_args",
            ),
            ("[target]\nloopback = true\n", "no [[test]]"),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\ntest = \"nope\"\nmetric = \"loss\"\nmax = \"1%\"\n",
                "names no test 'nope'",
            ),
        ];
        for (text, want) in cases {
            let e = Plan::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn thresholds_become_verdicts_and_missing_figures_fail() {
        let p = Plan::parse(PLAN).unwrap();
        let mut tcp = RunResult::new(
            "client",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        tcp.summary = Some(model::results::Summary {
            received_bps: Some(400e6),
            ..Default::default()
        });
        let v = evaluate(
            &p.thresholds,
            &[
                ("t1".into(), "tcp".into(), "client".into(), Some(&tcp)),
                ("t2".into(), "rfc2544 2".into(), "rfc2544".into(), None),
            ],
        );
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(!v[0].passed);
        assert_eq!(v[0].name, "received_bps of tcp (t1)");
        assert_eq!(
            v[0].detail,
            "measured 400.00 Mbit/s, required >= 500.00 Mbit/s"
        );
        // The rfc2544 test that would have measured the latency did not run: a failed
        // verdict, not a silent pass.
        assert!(!v[1].passed);
        assert_eq!(v[1].name, "latency_p999 of rfc2544 2 (t2)");
        assert!(v[1].detail.starts_with("not measured"), "{v:?}");
    }
}
