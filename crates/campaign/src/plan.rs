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
//! [target]                  # one of (or none, when every test names its hosts):
//! lab = "frer"              #   a built-in topology or a topology file, built and removed
//! lab_args = "--path-a loss=1%"   # flags of `lab up`
//! # host = "192.0.2.10"     #   a running `wirebench server` (port = 5301)
//! # tx = "eth1"; rx = "eth2"   # raw ports of this host for rfc2544 (with host)
//! # loopback = true         #   a server of our own on 127.0.0.1
//!
//! [[host]]                  # wirebench servers a test can name (or, before any table:
//! name = "a"                #   hosts_from = "dns:NAME[:PORT]", every address of NAME
//! address = "198.18.40.1"   #   when the run starts, named by address, with
//! key_file = "/etc/wb.key"  #   hosts_key_file = "..." for all of them)
//!
//! [[test]]
//! name = "TCP throughput"
//! kind = "client"           # client, sweep, blocksize, latency, rrul, mesh, rfc2544, streams, shaping, frer-compare, nicmatrix
//! args = "-t 5"             # the command's own flags; the target is added by the runner
//! # hosts = ["a"]           # a server test against host a instead of the target; a
//!                           # mesh's hosts (all of them when not given)
//! # parallel = 2            # a mesh: most pairs at once
//! # repeat = 5              # run it 5 times: each figure the median with its interval
//!                           # (`--repeat 5`; thresholds check the medians)
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

pub use crate::error::{CommandError, PlanError, PlanErrorKind};
use crate::hosts::{HostSource, PlanHost};
use crate::methods::{Argv, Hosts, Methods, Registered, TestRequest};
use crate::target::{Context, Target};
use crate::verdicts::{Metric, Threshold};

/// The command lines of tests and labs, parsed by the program's own definitions: a plan's
/// `args` are the command's flags, read exactly as on the command line.
pub trait Commands {
    /// A test's whole command line (`wirebench client HOST -p N -t 2 -J`) as its request.
    ///
    /// # Errors
    /// [`CommandError::Refused`] with the first line of what the parser says about it, or
    /// why the request it makes cannot run.
    fn test(&self, argv: &[String]) -> Result<TestRequest, CommandError>;

    /// `lab up TOPOLOGY ARGS` as what it builds.
    ///
    /// # Errors
    /// [`CommandError::Refused`] with the first line of what the parser says about it.
    fn lab(&self, topology: &str, args: &[String]) -> Result<lab::topology::Request, CommandError>;

    /// The methods whose kinds tests may name: the standard ones.
    fn methods(&self) -> Methods {
        Methods::STANDARD
    }
}

/// The kind of a test: the method that runs it (one of [`crate::methods::ALL`]).
#[derive(Clone, Copy)]
pub struct Kind(&'static dyn Registered);

impl Kind {
    /// The kind a plan names, when one of `methods` has that name.
    pub fn parse(s: &str, methods: Methods) -> Option<Self> {
        methods.find(s).map(Self)
    }

    /// The method of `kind`.
    pub fn of(method: &'static dyn Registered) -> Self {
        Self(method)
    }

    /// Its method.
    pub fn method(self) -> &'static dyn Registered {
        self.0
    }

    /// The name in plans and results.
    pub fn name(self) -> &'static str {
        self.0.kind()
    }

    /// Whether it talks to a `wirebench server` (so in a lab it runs on the talker).
    pub fn needs_server(self, args: &[String]) -> bool {
        self.0.needs_server(args)
    }

    /// Whether it needs root (raw frames or a lab of its own).
    pub fn needs_root(self, args: &[String]) -> bool {
        self.0.needs_root(args)
    }

    /// Which of the plan's hosts a test of it may name.
    fn hosts(self, args: &[String]) -> Hosts {
        self.0.hosts(args)
    }
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Kind {}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
    /// The plan's hosts it uses (`hosts`): the one server it tests against, or a mesh's
    /// hosts; `None`: the target (a mesh: every host).
    pub hosts: Option<Vec<String>>,
    /// A mesh's most pairs at once.
    pub parallel: Option<usize>,
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
    /// The hosts tests can name.
    pub hosts: Option<HostSource>,
    /// The tests, in order.
    pub tests: Vec<PlanTest>,
    /// The thresholds.
    pub thresholds: Vec<Threshold>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanToml {
    hosts_from: Option<Spanned<String>>,
    hosts_key_file: Option<String>,
    plan: Option<Header>,
    #[serde(default)]
    host: Vec<Spanned<HostToml>>,
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
struct HostToml {
    name: String,
    address: String,
    key_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestToml {
    hosts: Option<Vec<String>>,
    parallel: Option<usize>,
    name: Option<String>,
    kind: Spanned<String>,
    #[serde(default)]
    args: Option<Spanned<String>>,
    lab: Option<String>,
    lab_args: Option<String>,
    /// `--repeat N` for the test's command (its parser checks N).
    repeat: Option<u32>,
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
fn own_lab(
    topology: &str,
    text: Option<&str>,
    cmds: &dyn Commands,
) -> Result<OwnLab, PlanErrorKind> {
    let args = shlex::split(text.unwrap_or("")).ok_or(PlanErrorKind::LabArgsUnclosed)?;
    let request = cmds.lab(topology, &args).map_err(PlanErrorKind::LabArgs)?;
    Ok(OwnLab { request, args })
}

/// The `[target]` table (the error without its line).
fn target(t: TargetToml, cmds: &dyn Commands) -> Result<Target, PlanErrorKind> {
    let given = [t.lab.is_some(), t.host.is_some(), t.loopback == Some(true)];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(PlanErrorKind::TargetNotOne);
    }
    if let Some(topology) = t.lab {
        if t.tx.is_some() || t.rx.is_some() || t.port.is_some() {
            return Err(PlanErrorKind::HostFieldsOnLab);
        }
        let own = own_lab(&topology, t.lab_args.as_deref(), cmds)?;
        return Ok(Target::Lab {
            request: own.request,
            args: own.args,
        });
    }
    if let Some(host) = t.host {
        if t.lab_args.is_some() {
            return Err(PlanErrorKind::LabArgsOnHost);
        }
        if t.tx.is_some() != t.rx.is_some() {
            return Err(PlanErrorKind::TxWithoutRx);
        }
        return Ok(Target::Host {
            host,
            port: t.port.unwrap_or(control::DEFAULT_PORT),
            tx: t.tx,
            rx: t.rx,
        });
    }
    if t.lab_args.is_some() || t.tx.is_some() || t.rx.is_some() {
        return Err(PlanErrorKind::LoopbackFields);
    }
    Ok(Target::Loopback)
}

/// The plan's hosts: `[[host]]` entries, or `hosts_from` (with `hosts_key_file`).
fn host_source(
    from: Option<Spanned<String>>,
    key_file: Option<String>,
    listed: Vec<Spanned<HostToml>>,
    at: &dyn Fn(Range<usize>) -> usize,
) -> Result<Option<HostSource>, PlanError> {
    if let Some(from) = from {
        let line = at(from.span());
        if !listed.is_empty() {
            return Err(PlanError::at(line, PlanErrorKind::HostsTwice));
        }
        return HostSource::parse_from(from.get_ref(), key_file.map(Into::into))
            .map(Some)
            .map_err(|e| PlanError::at(line, PlanErrorKind::Host(e)));
    }
    if key_file.is_some() {
        return Err(PlanErrorKind::KeyFileWithoutHostsFrom.into());
    }
    if listed.is_empty() {
        return Ok(None);
    }
    let mut hosts: Vec<PlanHost> = Vec::new();
    for h in listed {
        let line = at(h.span());
        let h = h.into_inner();
        let at_line = |kind| PlanError::at(line, kind);
        crate::hosts::check_name(&h.name).map_err(|e| at_line(PlanErrorKind::Host(e)))?;
        if hosts.iter().any(|o| o.name == h.name) {
            return Err(at_line(PlanErrorKind::DuplicateHost(h.name)));
        }
        let (host, port) = crate::hosts::split_address(&h.address).map_err(|error| {
            at_line(PlanErrorKind::HostAddress {
                host: h.name.clone(),
                error,
            })
        })?;
        if let Some(o) = hosts.iter().find(|o| o.host == host && o.port == port) {
            return Err(at_line(PlanErrorKind::SharedAddress {
                first: o.name.clone(),
                second: h.name,
            }));
        }
        hosts.push(PlanHost {
            name: h.name,
            host,
            port,
            key_file: h.key_file.map(Into::into),
        });
    }
    Ok(Some(HostSource::Listed(hosts)))
}

impl Plan {
    /// Parses and checks a plan; `cmds` reads each test's flags and each `lab_args`.
    ///
    /// # Errors
    /// The first problem, with its line ([`PlanError::line`]): TOML syntax, an unknown key,
    /// an unknown test kind or metric, a flag the command refuses, a value in the wrong
    /// unit, a missing target.
    pub fn parse(text: &str, cmds: &dyn Commands) -> Result<Self, PlanError> {
        let p: PlanToml = toml::from_str(text).map_err(PlanErrorKind::Toml)?;
        let at = |span: Range<usize>| line_of(text, span);
        let header = p.plan.unwrap_or_default();
        let hosts = host_source(p.hosts_from, p.hosts_key_file, p.host, &at)?;
        let target = match p.target {
            Some(t) => {
                let tline = at(t.span());
                target(t.into_inner(), cmds).map_err(|e| PlanError::at(tline, e))?
            }
            None if hosts.is_some() => Target::Hosts,
            None => return Err(PlanErrorKind::NoTarget.into()),
        };
        if p.test.is_empty() {
            return Err(PlanErrorKind::NoTests.into());
        }
        let stand_in_hosts = hosts.as_ref().map(HostSource::stand_in).unwrap_or_default();
        let mut tests: Vec<PlanTest> = Vec::new();
        for (i, tt) in p.test.into_iter().enumerate() {
            let line = at(tt.kind.span());
            let kind = Kind::parse(tt.kind.get_ref(), cmds.methods()).ok_or_else(|| {
                PlanError::at(
                    line,
                    PlanErrorKind::UnknownKind {
                        number: i + 1,
                        kind: tt.kind.get_ref().clone(),
                        kinds: cmds.methods().kinds(),
                    },
                )
            })?;
            let name = tt
                .name
                .unwrap_or_else(|| format!("{} {}", kind.name(), i + 1));
            if tests.iter().any(|o| o.name == name) {
                return Err(PlanError::at(line, PlanErrorKind::DuplicateTest(name)));
            }
            let (mut args, aline) = match &tt.args {
                Some(a) => {
                    let aline = at(a.span());
                    let args = shlex::split(a.get_ref()).ok_or_else(|| {
                        PlanError::in_test(aline, &name, PlanErrorKind::ArgsUnclosed)
                    })?;
                    (args, aline)
                }
                None => (vec![], line),
            };
            if let Some(n) = tt.repeat {
                if args
                    .iter()
                    .any(|a| a == "--repeat" || a.starts_with("--repeat="))
                {
                    return Err(PlanError::in_test(line, name, PlanErrorKind::RepeatTwice));
                }
                args.extend(["--repeat".to_owned(), n.to_string()]);
            }
            if tt.lab_args.is_some() && tt.lab.is_none() {
                return Err(PlanError::in_test(
                    line,
                    name,
                    PlanErrorKind::LabArgsWithoutLab,
                ));
            }
            let lab = tt
                .lab
                .map(|topology| own_lab(&topology, tt.lab_args.as_deref(), cmds))
                .transpose()
                .map_err(|e| PlanError::in_test(line, &name, e))?;
            let test = PlanTest {
                name,
                kind,
                args,
                lab,
                hosts: tt.hosts,
                parallel: tt.parallel,
                line,
            };
            test.check_hosts(hosts.as_ref(), &target)
                .map_err(|e| PlanError::in_test(line, &test.name, e))?;
            // The command's own parser checks the flags, with a stand-in target.
            let stand_in = test.target(&target);
            let mut ctx = Context::stand_in(&stand_in);
            ctx.hosts.clone_from(&stand_in_hosts);
            cmds.test(&test.argv(&ctx))
                .map_err(|e| PlanError::in_test(aline, &test.name, PlanErrorKind::Command(e)))?;
            let own_target = test.hosts.is_none() || test.kind.hosts(&test.args) == Hosts::Many;
            if own_target
                && matches!(stand_in, Target::Loopback)
                && test.kind.needs_root(&test.args)
            {
                return Err(PlanError::in_test(
                    line,
                    test.name,
                    PlanErrorKind::NeedsRawPorts {
                        kind: test.kind.name(),
                    },
                ));
            }
            tests.push(test);
        }
        let mut thresholds = Vec::new();
        for th in p.threshold {
            let line = at(th.metric.span());
            let metric = Metric::parse(th.metric.get_ref(), cmds.methods()).ok_or_else(|| {
                PlanError::at(
                    line,
                    PlanErrorKind::UnknownMetric {
                        metric: th.metric.get_ref().clone(),
                        metrics: cmds.methods().threshold_names(),
                    },
                )
            })?;
            if let Some(name) = &th.test {
                if !tests.iter().any(|t| &t.name == name) {
                    return Err(PlanError::at(line, PlanErrorKind::NoSuchTest(name.clone())));
                }
            }
            let bound = |b: &Option<Spanned<String>>, key: &'static str| {
                b.as_ref()
                    .map(|v| {
                        metric.value(v.get_ref()).map_err(|error| {
                            PlanError::at(at(v.span()), PlanErrorKind::Bound { key, error })
                        })
                    })
                    .transpose()
            };
            let (min, max) = (bound(&th.min, "min")?, bound(&th.max, "max")?);
            if min.is_none() && max.is_none() {
                return Err(PlanError::at(line, PlanErrorKind::NoBound));
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
            hosts,
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
    /// Checks the hosts the test names against the plan's (and `parallel`): a server test
    /// names one, a mesh two or more (or takes them all) that share one key file.
    fn check_hosts(&self, plan: Option<&HostSource>, target: &Target) -> Result<(), PlanErrorKind> {
        let mesh = self.kind.hosts(&self.args) == Hosts::Many;
        if self.parallel.is_some() && !mesh {
            return Err(PlanErrorKind::ParallelNotMesh);
        }
        if self.parallel == Some(0) {
            return Err(PlanErrorKind::ParallelZero);
        }
        let listed = match plan {
            Some(HostSource::Listed(h)) => Some(h.as_slice()),
            _ => None,
        };
        let chosen: Vec<&PlanHost> = match (&self.hosts, plan) {
            (Some(_), _) if self.lab.is_some() => return Err(PlanErrorKind::HostsWithOwnLab),
            (Some(_), None) => return Err(PlanErrorKind::NoPlanHosts),
            (Some(_), Some(HostSource::Dns { .. })) => return Err(PlanErrorKind::NamedDnsHosts),
            (Some(names), Some(_)) => {
                let all = listed.unwrap_or_default();
                let mut chosen = Vec::new();
                for n in names {
                    let h = all
                        .iter()
                        .find(|h| &h.name == n)
                        .ok_or_else(|| PlanErrorKind::UnknownHost(n.clone()))?;
                    if chosen.iter().any(|c: &&PlanHost| c.name == *n) {
                        return Err(PlanErrorKind::HostNamedTwice(n.clone()));
                    }
                    chosen.push(h);
                }
                chosen
            }
            (None, _) if mesh && plan.is_none() => return Err(PlanErrorKind::MeshWithoutPlanHosts),
            (None, _) if mesh => listed.unwrap_or_default().iter().collect(),
            // Without a target, a test that talks to a server names one; the others use
            // their own ports or labs.
            (None, _)
                if matches!(target, Target::Hosts)
                    && self.lab.is_none()
                    && self.kind.hosts(&self.args) == Hosts::One =>
            {
                return Err(PlanErrorKind::NoHostNamed)
            }
            (None, _) => return Ok(()),
        };
        if mesh {
            if self.lab.is_some() {
                return Err(PlanErrorKind::MeshWithOwnLab);
            }
            if listed.is_some() && chosen.len() < 2 {
                return Err(PlanErrorKind::MeshTooFewHosts);
            }
            // Servers that run third-party tests have a key, and prove it to each other.
            let keyless = match plan {
                Some(HostSource::Dns { key_file, .. }) => key_file.is_none(),
                _ => chosen.iter().any(|h| h.key_file.is_none()),
            };
            if keyless {
                return Err(PlanErrorKind::MeshKeyless);
            }
            if chosen.windows(2).any(|w| w[0].key_file != w[1].key_file) {
                return Err(PlanErrorKind::MeshKeysDiffer);
            }
            return Ok(());
        }
        if self.kind.hosts(&self.args) != Hosts::One {
            return Err(PlanErrorKind::NamesNoHosts {
                kind: self.kind.name(),
            });
        }
        if chosen.len() != 1 {
            return Err(PlanErrorKind::NotOneHost {
                kind: self.kind.name(),
                count: chosen.len(),
            });
        }
        Ok(())
    }

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

    /// The full command line (`wirebench KIND ... -J`) for `ctx`: against the host it
    /// names, when it names one.
    pub fn argv(&self, ctx: &Context) -> Vec<String> {
        let named;
        let ctx = match self.hosts.as_deref() {
            Some(names) if self.kind.hosts(&self.args) != Hosts::Many => {
                match names
                    .first()
                    .and_then(|n| ctx.hosts.iter().find(|h| &h.name == n))
                {
                    Some(h) => {
                        named = Context::on_host(h, &ctx.labs);
                        &named
                    }
                    None => ctx,
                }
            }
            _ => ctx,
        };
        let mut a = Argv {
            ctx,
            args: &self.args,
            hosts: self.hosts.as_deref(),
            parallel: self.parallel,
            out: vec!["wirebench".into()],
        };
        self.kind.method().argv(&mut a);
        let has = |flag: &str| a.has(flag);
        let (has_json, has_long_json) = (has("-J"), has("--json"));
        let mut v = a.out;
        v.extend(self.args.iter().cloned());
        if !has_json && !has_long_json {
            v.push("-J".into());
        }
        v
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod test;
