//! Test plans (`wirebench run PLAN.toml`): what to test, the tests in order, the
//! thresholds that make verdicts, and metadata. A plan is checked as a whole before
//! anything runs: every test's flags are parsed by the command's own parser (the binary's
//! clap definitions, through [`Commands`]) into its typed request, every threshold's unit
//! is read, and an error names the test or threshold and its line.
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
//! kind = "client"           # client, sweep, blocksize, latency, rfc2544, streams, shaping, frer-compare, nicmatrix
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

use serde::Deserialize;
use toml::Spanned;

use crate::request::TestRequest;
use crate::target::{Context, Target};
use crate::verdicts::{Metric, Threshold, METRICS};

/// The command lines of tests and labs, parsed by the program's own definitions: a plan's
/// `args` are the command's flags, read exactly as on the command line.
pub trait Commands {
    /// A test's whole command line (`wirebench client HOST -p N -t 2 -J`) as its request.
    ///
    /// # Errors
    /// The first line of what the parser says about it.
    fn test(&self, argv: &[String]) -> Result<TestRequest, String>;

    /// `lab up TOPOLOGY ARGS` as what it builds.
    ///
    /// # Errors
    /// The first line of what the parser says about it.
    fn lab(&self, topology: &str, args: &[String]) -> Result<lab::topology::Request, String>;
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
    /// `wirebench rrul`.
    Rrul,
    /// `wirebench rfc2544`.
    Rfc2544,
    /// `wirebench streams`.
    Streams,
    /// `wirebench shaping`.
    Shaping,
    /// `wirebench frer compare`.
    FrerCompare,
    /// `wirebench nicmatrix`.
    NicMatrix,
}

const KINDS: &str =
    "client, sweep, blocksize, latency, rrul, rfc2544, streams, shaping, frer-compare, nicmatrix";

impl Kind {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "client" => Self::Client,
            "sweep" => Self::Sweep,
            "blocksize" => Self::Blocksize,
            "latency" => Self::Latency,
            "rrul" => Self::Rrul,
            "rfc2544" => Self::Rfc2544,
            "streams" => Self::Streams,
            "shaping" => Self::Shaping,
            "frer-compare" => Self::FrerCompare,
            "nicmatrix" => Self::NicMatrix,
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
            Self::Rrul => "rrul",
            Self::Rfc2544 => "rfc2544",
            Self::Streams => "streams",
            Self::Shaping => "shaping",
            Self::FrerCompare => "frer-compare",
            Self::NicMatrix => "nicmatrix",
        }
    }

    /// Whether it talks to a `wirebench server` (so in a lab it runs on the talker).
    pub fn needs_server(self, args: &[String]) -> bool {
        match self {
            Self::Client | Self::Sweep | Self::Blocksize | Self::Latency | Self::Rrul => true,
            Self::Rfc2544 => !has_raw_ports(args),
            _ => false,
        }
    }

    /// Whether it needs root (raw frames or a lab of its own).
    pub fn needs_root(self, args: &[String]) -> bool {
        match self {
            Self::Streams | Self::Shaping | Self::FrerCompare | Self::NicMatrix => true,
            Self::Rfc2544 => has_raw_ports(args),
            _ => false,
        }
    }
}

fn has_raw_ports(args: &[String]) -> bool {
    args.iter().any(|a| a == "--tx" || a.starts_with("--tx="))
}

/// A lab of a test's own, built before it and removed after.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnLab {
    /// What `lab up` builds.
    pub request: lab::topology::Request,
    /// Its flags as written.
    pub args: Vec<String>,
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
    /// A lab of its own, instead of the plan's target.
    pub lab: Option<OwnLab>,
    /// Line of its `kind` in the plan.
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

#[derive(Deserialize, Default)]
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

/// `lab up` flags, checked by the lab command's own parser.
fn own_lab(topology: &str, text: Option<&str>, cmds: &dyn Commands) -> Result<OwnLab, String> {
    let args = shlex::split(text.unwrap_or("")).ok_or("lab_args has an unclosed quote")?;
    let request = cmds
        .lab(topology, &args)
        .map_err(|e| format!("lab_args: {e}"))?;
    Ok(OwnLab { request, args })
}

fn target(t: TargetToml, tline: usize, cmds: &dyn Commands) -> Result<Target, String> {
    let given = [t.lab.is_some(), t.host.is_some(), t.loopback == Some(true)];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(format!(
            "line {tline}: [target] needs exactly one of lab, host or loopback = true"
        ));
    }
    if let Some(topology) = t.lab {
        if t.tx.is_some() || t.rx.is_some() || t.port.is_some() {
            return Err(format!(
                "line {tline}: [target] tx, rx and port belong to a host target; a lab has its own"
            ));
        }
        let own = own_lab(&topology, t.lab_args.as_deref(), cmds)
            .map_err(|e| format!("line {tline}: {e}"))?;
        return Ok(Target::Lab {
            request: own.request,
            args: own.args,
        });
    }
    if let Some(host) = t.host {
        if t.lab_args.is_some() {
            return Err(format!("line {tline}: lab_args belongs to a lab target"));
        }
        if t.tx.is_some() != t.rx.is_some() {
            return Err(format!("line {tline}: give both tx and rx, or neither"));
        }
        return Ok(Target::Host {
            host,
            port: t.port.unwrap_or(control::DEFAULT_PORT),
            tx: t.tx,
            rx: t.rx,
        });
    }
    if t.lab_args.is_some() || t.tx.is_some() || t.rx.is_some() {
        return Err(format!(
            "line {tline}: a loopback target takes no lab_args, tx or rx"
        ));
    }
    Ok(Target::Loopback)
}

impl Plan {
    /// Parses and checks a plan; `cmds` reads each test's flags and each `lab_args`.
    ///
    /// # Errors
    /// The first problem, with its line: TOML syntax, an unknown key, an unknown test kind
    /// or metric, a flag the command refuses, a value in the wrong unit, a missing target.
    pub fn parse(text: &str, cmds: &dyn Commands) -> Result<Self, String> {
        let p: PlanToml = toml::from_str(text).map_err(|e| e.to_string().trim().to_owned())?;
        let at = |span: Range<usize>| line_of(text, span);
        let header = p.plan.unwrap_or_default();
        let Some(t) = p.target else {
            return Err(
                "the plan has no [target]: give lab = \"TOPOLOGY\", host = \"ADDRESS\" or loopback = true"
                    .into(),
            );
        };
        let tline = at(t.span());
        let target = target(t.into_inner(), tline, cmds)?;
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
                Some(a) => {
                    let aline = at(a.span());
                    let args = shlex::split(a.get_ref()).ok_or_else(|| {
                        format!("line {aline}: test '{name}': args has an unclosed quote")
                    })?;
                    (args, aline)
                }
                None => (vec![], line),
            };
            if tt.lab_args.is_some() && tt.lab.is_none() {
                return Err(format!("line {line}: test '{name}': lab_args without lab"));
            }
            let lab = tt
                .lab
                .map(|topology| own_lab(&topology, tt.lab_args.as_deref(), cmds))
                .transpose()
                .map_err(|e| format!("line {line}: test '{name}': {e}"))?;
            let test = PlanTest {
                name,
                kind,
                args,
                lab,
                line,
            };
            // The command's own parser checks the flags, with a stand-in target.
            let stand_in = test.target(&target);
            cmds.test(&test.argv(&Context::stand_in(&stand_in)))
                .map_err(|e| format!("line {aline}: test '{}': {e}", test.name))?;
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

impl PlanTest {
    /// The target this test runs against: its own lab, or the plan's.
    pub fn target(&self, plan: &Target) -> Target {
        match &self.lab {
            Some(own) => Target::Lab {
                request: own.request.clone(),
                args: own.args.clone(),
            },
            None => plan.clone(),
        }
    }

    /// The full command line (`wirebench KIND ... -J`) for `ctx`.
    pub fn argv(&self, ctx: &Context) -> Vec<String> {
        let mut v: Vec<String> = vec!["wirebench".into()];
        let has = |flag: &str| {
            self.args
                .iter()
                .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
        };
        let port = ["-p".to_owned(), ctx.port.to_string()];
        let lab = |v: &mut Vec<String>| {
            if let Some(l) = ctx.lab.as_ref().filter(|_| !has("--lab")) {
                v.extend(["--lab".into(), l.clone()]);
            }
        };
        match self.kind {
            Kind::Client | Kind::Sweep | Kind::Blocksize | Kind::Latency | Kind::Rrul => {
                v.push(self.kind.name().into());
                v.push(ctx.host.clone());
                if !has("-p") && !has("--port") {
                    v.extend(port);
                }
            }
            Kind::Rfc2544 => {
                v.push("rfc2544".into());
                match (&ctx.raw, has("--tx")) {
                    (_, true) => {}
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
                lab(&mut v);
            }
            Kind::Streams | Kind::Shaping => {
                v.push(self.kind.name().into());
                lab(&mut v);
            }
            Kind::FrerCompare => {
                v.extend(["frer".into(), "compare".into()]);
            }
            // In a lab: its own server on the listener, both lab ports set unless named;
            // otherwise against the target's server.
            Kind::NicMatrix => {
                v.push("nicmatrix".into());
                if ctx.lab.is_some() {
                    lab(&mut v);
                    if let Some((tx, rx)) = ctx.raw.as_ref().filter(|_| !has("--end")) {
                        v.extend(["--end".into(), format!("{tx},{rx}")]);
                    }
                } else {
                    v.push(ctx.host.clone());
                    if !has("-p") && !has("--port") {
                        v.extend(port);
                    }
                }
            }
        }
        v.extend(self.args.iter().cloned());
        if !has("-J") && !has("--json") {
            v.push("-J".into());
        }
        v
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::request::{ClientRequest, Server};
    use crate::verdicts::{evaluate, Outcome};
    use model::results::{RunResult, Summary};

    /// A stand-in for the binary's parser: every command is a client test, a flag value
    /// `fast` is refused as clap would, and `lab up` takes only `--path-a VALUE`.
    struct Fake;

    impl Commands for Fake {
        fn test(&self, argv: &[String]) -> Result<TestRequest, String> {
            if let Some(bad) = argv.iter().find(|a| a.as_str() == "fast") {
                return Err(format!("invalid value '{bad}'"));
            }
            Ok(TestRequest::Client(ClientRequest {
                server: Server {
                    host: argv.get(2).cloned().unwrap_or_default(),
                    port: 5301,
                    key_file: None,
                    allow_unauthenticated: false,
                },
                spec: crate::trials::base_spec(model::spec::Protocol::Tcp),
                interval: None,
                cpu: None,
                round_trip: false,
                iperf3: false,
                connect: Default::default(),
                get_server_output: false,
                title: None,
            }))
        }

        fn lab(&self, topology: &str, args: &[String]) -> Result<lab::topology::Request, String> {
            match args {
                [] => {}
                [flag, _] if flag == "--path-a" => {}
                _ => return Err(format!("unexpected {args:?}")),
            }
            Ok(lab::topology::Request {
                topology: topology.into(),
                path_a: args.get(1).cloned(),
                ..Default::default()
            })
        }
    }

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
        let p = Plan::parse(PLAN, &Fake).unwrap();
        assert_eq!(p.title, "FRER");
        assert_eq!(p.metadata["device"], "relay");
        assert_eq!(p.tests[1].name, "rfc2544 2");
        assert!(p.needs_root());
        let Target::Lab { request, args } = &p.target else {
            panic!("{:?}", p.target)
        };
        assert_eq!(request.path_a.as_deref(), Some("loss=1%"));
        assert_eq!(args, &["--path-a", "loss=1%"]);
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
        // A loopback plan runs rfc2544 over UDP through the server, with its port.
        let lo = Plan::parse(
            "[target]\nloopback = true\n[[test]]\nkind = \"rfc2544\"\nargs = \"-p 9\"\n",
            &Fake,
        )
        .unwrap();
        assert!(!lo.needs_root());
        let ctx = Context::stand_in(&lo.target);
        assert_eq!(
            lo.tests[0].argv(&ctx).join(" "),
            "wirebench rfc2544 127.0.0.1 -p 9 -J"
        );
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
                "[target]\nlab = \"frer\"\nlab_args = \"--path-b x y\"\n[[test]]\nkind = \"client\"\n",
                "line 1: lab_args",
            ),
            ("[target]\nloopback = true\n", "no [[test]]"),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\ntest = \"nope\"\nmetric = \"loss\"\nmax = \"1%\"\n",
                "names no test 'nope'",
            ),
            (
                "[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-t '2\"\n",
                "line 5: test 'client 1': args has an unclosed quote",
            ),
        ];
        for (text, want) in cases {
            let e = Plan::parse(text, &Fake).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    fn result(command: &str) -> RunResult {
        RunResult::new(
            command,
            serde_json::json!({}),
            String::new(),
            Default::default(),
        )
    }

    #[test]
    fn thresholds_become_verdicts_and_missing_figures_fail() {
        let p = Plan::parse(PLAN, &Fake).unwrap();
        let mut tcp = result("client");
        tcp.summary = Some(Summary {
            received_bps: Some(400e6),
            ..Default::default()
        });
        let outcome = |id, name, kind, result| Outcome {
            id,
            name,
            kind,
            result,
        };
        let v = evaluate(
            &p.thresholds,
            &[
                outcome("t1", "tcp", "client", Some(&tcp)),
                outcome("t2", "rfc2544 2", "rfc2544", None),
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
        // A threshold no test can measure fails by its line.
        let v = evaluate(
            &p.thresholds[1..],
            &[outcome("t1", "tcp", "client", Some(&tcp))],
        );
        assert_eq!(v[0].name, "latency_p999 (line 25)");
        assert!(!v[0].passed && v[0].detail.starts_with("no test measured it"));
    }
}
