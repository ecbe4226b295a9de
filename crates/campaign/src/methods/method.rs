//! What a test method is ([`Method`]), how the registry holds one ([`Registered`]), and
//! what it speaks in: its request travelling as a [`TestRequest`], its command line
//! against a plan's target ([`Argv`]), the hosts it names, what Ctrl-C does, its
//! threshold metrics. It lists no method; `registry.rs` does.

use std::any::Any;
use std::fmt;
use std::time::Duration;

use engine::frameio::Endpoint;
use model::results::figures::Figure;
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;
use report::campaign::Chart as ReportChart;
use report::table::Table;

use crate::target::Context;
use crate::{Error, Watch};

/// What one trial through a server costs besides its load, for [`Method::estimate`]:
/// connecting, settling and the results exchange. Measured in the demo on this machine:
/// 2.16 s and 2.13 s for 2-s client tests, 1.86 s for a sweep of three 0.5-s steps.
pub(crate) const TRIAL_SETUP: Duration = Duration::from_millis(150);

/// The same for a trial over raw ports: opening and binding them, the receiver's drain.
/// Measured in the demo: 3.5 s for four RFC 2544 trials of 0.5 s.
pub(crate) const RAW_TRIAL_SETUP: Duration = Duration::from_millis(400);

/// The time of a plan that runs every trial it asks for whatever they measure (a sweep's
/// steps, a block-size sweep's sizes): `plan` run on a stand-in device that answers at
/// once, its trials' durations added up, each with [`TRIAL_SETUP`].
pub(crate) fn rehearsed(
    plan: impl FnOnce(&mut method::rehearsal::Rehearsal<std::convert::Infallible>),
) -> Duration {
    let line = wire::linerate::LineRate(1_000_000_000);
    let mut r = method::rehearsal::Rehearsal::new(line, 1.0, 0, TRIAL_SETUP);
    plan(&mut r);
    r.time
}

/// Which hosts of a plan a test may name (`hosts = [...]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosts {
    /// None: it uses its own ports or labs.
    None,
    /// The one server it runs against.
    One,
    /// Two or more, or all of them (a mesh).
    Many,
}

/// What Ctrl-C does to a running test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// Nothing: the test is short and ends by itself.
    Ignore,
    /// It stops the test, which then puts back what it changed (labs, shaper rates,
    /// interface settings); a second signal waits for that too.
    Stop,
    /// It stops the test with the figures so far; a second signal ends the program.
    StopTwiceExits,
}

/// A threshold metric a method's figures can be checked against in a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThresholdMetric {
    /// Its name in a plan's `[[threshold]] metric = "..."`.
    pub name: &'static str,
    /// The unit its bounds are written in.
    pub unit: model::results::figures::Unit,
}

/// One test method, implemented once by its module and registered in `methods::ALL`.
pub trait Method: Sync + Send + 'static {
    /// What it is asked to do, typed.
    type Request: fmt::Debug + Clone + PartialEq + Send + Sync + 'static;

    /// Its command-line arguments (clap's derive): syntax and per-value checks only. A
    /// plan's test `args` are parsed by the same definition.
    type Args: clap::Args + clap::FromArgMatches;

    /// Its name: a plan's `kind` and the command (`frer-compare` for `frer compare`).
    fn kind(&self) -> &'static str;

    /// Its command's words on the command line: [`Method::kind`] unless it is a
    /// subcommand of another (`frer compare`).
    fn command(&self) -> &'static str {
        self.kind()
    }

    /// The request its arguments ask for: defaults applied, values checked against each
    /// other, files read.
    ///
    /// # Errors
    /// A usage error naming what is wrong.
    fn request(&self, args: &Self::Args) -> Result<Self::Request, Error>;

    /// Whether its arguments ask for one JSON document (`-J`) instead of text.
    fn json(&self, args: &Self::Args) -> bool;

    /// Whether its own `--repeat` repeats inside the method (`sweep`'s steps, `frer
    /// compare`'s alternating groups); otherwise its Args flatten [`super::args::Repeat`]
    /// and the registry repeats the whole measurement.
    fn repeats_itself(&self) -> bool {
        false
    }

    /// Whether it talks to a `wirebench server` (in a lab it then runs on the talker),
    /// given its flags as a plan writes them.
    fn needs_server(&self, _args: &[String]) -> bool {
        false
    }

    /// Whether it needs root (raw frames, a lab of its own, interface settings).
    fn needs_root(&self, _args: &[String]) -> bool {
        false
    }

    /// Which of the plan's hosts a test of it may name.
    fn hosts(&self, args: &[String]) -> Hosts {
        if self.needs_server(args) {
            Hosts::One
        } else {
            Hosts::None
        }
    }

    /// Its command line against the plan's target, up to (not including) the test's own
    /// flags: `client HOST -p N`, `rfc2544 --tx P --rx P --lab L`, `frer compare`. By
    /// default its kind, then the target's server when it talks to one, else the target's
    /// lab.
    fn argv(&self, a: &mut Argv<'_>) {
        a.push(&[self.kind()]);
        if self.needs_server(a.args) {
            a.server();
        } else {
            a.lab();
        }
    }

    /// Runs a request in this process.
    ///
    /// # Errors
    /// The request cannot be run as asked (a usage error), the test failed, or it was
    /// interrupted before it had figures.
    fn run(
        &self,
        req: &Self::Request,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error>;

    /// How long one run of `req` will take, from its own plan: its trials' intended
    /// durations added up (a search rehearsed on a simulated device, a matrix's cells),
    /// each with the setup a trial costs ([`TRIAL_SETUP`]). `None`: it cannot tell (a
    /// run until stopped). A progress bar's time left comes from it.
    fn estimate(&self, _req: &Self::Request) -> Option<Duration> {
        None
    }

    /// What it decides over repeated runs (`--repeat`) beyond each figure's spread, given
    /// the combined result (every run in `runs`): `nicmatrix`'s best MTU. By default
    /// nothing.
    fn repeated(&self, _r: &mut RunResult) {}

    /// The interfaces it uses, as (role, port), whose state and activity the result
    /// records: toward its server (`local`), or its raw ports.
    fn sides(&self, _req: &Self::Request) -> Vec<(String, Endpoint)> {
        Vec::new()
    }

    /// Its result laid out for a terminal; rates in `unit` where the method honours `-f`.
    fn text(&self, req: &Self::Request, r: &RunResult, unit: Option<Fixed>) -> String;

    /// What Ctrl-C does while it runs.
    fn on_signal(&self) -> OnSignal {
        OnSignal::Ignore
    }

    /// The message of a failed run when one of its own verdicts failed (exit code 3);
    /// `None`: its verdicts do not decide the exit code.
    fn failed_verdict(&self) -> Option<&'static str> {
        None
    }

    /// The metrics a plan's thresholds can check on its results.
    fn thresholds(&self) -> &'static [ThresholdMetric];

    /// Its headline figures in a result, in document order: what thresholds check and
    /// `wirebench compare` puts side by side.
    fn figures(&self, r: &RunResult) -> Vec<Figure>;

    /// Its own tables in the campaign report, over its tests' results as (test id,
    /// result), each row led by the test id (`source`). The built-in methods' sections
    /// are the report's own (`report::tables`); a method with a part of its own
    /// (`RunResult::parts`) brings its tables here.
    fn report_tables(&self, _tests: &[(&str, &RunResult)]) -> Vec<Table> {
        Vec::new()
    }

    /// Its charts of one test's result in the campaign report (see
    /// [`Method::report_tables`]).
    fn report_charts(&self, _test_id: &str, _r: &RunResult) -> Vec<ReportChart> {
        Vec::new()
    }

    /// What one test of it found, as phrases of its line in the report's findings
    /// (measured figures only; see [`Method::report_tables`]).
    fn findings(&self, _r: &RunResult) -> Vec<String> {
        Vec::new()
    }
}

/// A [`Method`] as the registry holds it: the same, with its request erased into a
/// [`TestRequest`]. Implemented for every [`Method`]; nothing implements it by hand.
pub trait Registered: Sync + Send + 'static {
    /// [`Method::kind`].
    fn kind(&self) -> &'static str;
    /// [`Method::command`].
    fn command(&self) -> &'static str;
    /// [`Method::request`] from the arguments of its command as clap matched them.
    ///
    /// # Errors
    /// The method's usage errors.
    fn request_from(&'static self, matches: &clap::ArgMatches) -> Result<TestRequest, Error>;
    /// [`Method::json`] from the arguments of its command as clap matched them.
    fn json_from(&self, matches: &clap::ArgMatches) -> bool;
    /// [`Method::needs_server`].
    fn needs_server(&self, args: &[String]) -> bool;
    /// [`Method::needs_root`].
    fn needs_root(&self, args: &[String]) -> bool;
    /// [`Method::hosts`].
    fn hosts(&self, args: &[String]) -> Hosts;
    /// [`Method::argv`].
    fn argv(&self, a: &mut Argv<'_>);
    /// [`Method::run`].
    ///
    /// # Errors
    /// The method's, or a request of another method (a failure).
    fn run(
        &self,
        req: &TestRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error>;
    /// [`Method::estimate`], times its `--repeat`.
    fn estimate(&self, req: &TestRequest) -> Option<Duration>;
    /// [`Method::repeated`].
    fn repeated(&self, r: &mut RunResult);
    /// [`Method::sides`].
    fn sides(&self, req: &TestRequest) -> Vec<(String, Endpoint)>;
    /// [`Method::text`].
    fn text(&self, req: &TestRequest, r: &RunResult, unit: Option<Fixed>) -> String;
    /// [`Method::on_signal`].
    fn on_signal(&self) -> OnSignal;
    /// [`Method::failed_verdict`].
    fn failed_verdict(&self) -> Option<&'static str>;
    /// [`Method::thresholds`].
    fn thresholds(&self) -> &'static [ThresholdMetric];
    /// [`Method::figures`].
    fn figures(&self, r: &RunResult) -> Vec<Figure>;
    /// [`Method::report_tables`].
    fn report_tables(&self, tests: &[(&str, &RunResult)]) -> Vec<Table>;
    /// [`Method::report_charts`].
    fn report_charts(&self, test_id: &str, r: &RunResult) -> Vec<ReportChart>;
    /// [`Method::findings`].
    fn findings(&self, r: &RunResult) -> Vec<String>;
}

impl<M: Method> Registered for M {
    fn kind(&self) -> &'static str {
        Method::kind(self)
    }
    fn command(&self) -> &'static str {
        Method::command(self)
    }
    fn request_from(&'static self, matches: &clap::ArgMatches) -> Result<TestRequest, Error> {
        let args = <M::Args as clap::FromArgMatches>::from_arg_matches(matches)
            .map_err(|e| Error::Usage(e.to_string()))?;
        let req = Method::request(self, &args)?;
        // `--repeat` (args::Repeat) when the method has it and does not repeat itself.
        let repeat = match matches.try_get_one::<u32>("repeat") {
            Ok(Some(n)) if !Method::repeats_itself(self) => *n,
            _ => 1,
        };
        Ok(TestRequest {
            method: self,
            request: Box::new(req),
            repeat,
        })
    }
    fn json_from(&self, matches: &clap::ArgMatches) -> bool {
        <M::Args as clap::FromArgMatches>::from_arg_matches(matches)
            .is_ok_and(|a| Method::json(self, &a))
    }
    fn needs_server(&self, args: &[String]) -> bool {
        Method::needs_server(self, args)
    }
    fn needs_root(&self, args: &[String]) -> bool {
        Method::needs_root(self, args)
    }
    fn hosts(&self, args: &[String]) -> Hosts {
        Method::hosts(self, args)
    }
    fn argv(&self, a: &mut Argv<'_>) {
        Method::argv(self, a)
    }
    fn run(
        &self,
        req: &TestRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        let req = req.get::<M::Request>().ok_or_else(|| {
            Error::Failed(format!(
                "a {} request was given to {}",
                req.kind(),
                Method::kind(self)
            ))
        })?;
        Method::run(self, req, watch, stop)
    }
    fn estimate(&self, req: &TestRequest) -> Option<Duration> {
        let one = Method::estimate(self, req.get::<M::Request>()?)?;
        Some(one * req.repeat())
    }
    fn repeated(&self, r: &mut RunResult) {
        Method::repeated(self, r);
    }
    fn sides(&self, req: &TestRequest) -> Vec<(String, Endpoint)> {
        req.get::<M::Request>()
            .map(|r| Method::sides(self, r))
            .unwrap_or_default()
    }
    fn text(&self, req: &TestRequest, r: &RunResult, unit: Option<Fixed>) -> String {
        match req.get::<M::Request>() {
            Some(q) => Method::text(self, q, r, unit),
            None => String::new(),
        }
    }
    fn on_signal(&self) -> OnSignal {
        Method::on_signal(self)
    }
    fn failed_verdict(&self) -> Option<&'static str> {
        Method::failed_verdict(self)
    }
    fn thresholds(&self) -> &'static [ThresholdMetric] {
        Method::thresholds(self)
    }
    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        Method::figures(self, r)
    }
    fn report_tables(&self, tests: &[(&str, &RunResult)]) -> Vec<Table> {
        Method::report_tables(self, tests)
    }
    fn report_charts(&self, test_id: &str, r: &RunResult) -> Vec<ReportChart> {
        Method::report_charts(self, test_id, r)
    }
    fn findings(&self, r: &RunResult) -> Vec<String> {
        Method::findings(self, r)
    }
}

impl fmt::Debug for dyn Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// A request of any method, with its method: what the binary builds from a command line
/// and a plan from a test's `args`.
pub struct TestRequest {
    method: &'static dyn Registered,
    request: Box<dyn AnyRequest>,
    /// How many times the registry runs it (`--repeat`).
    repeat: u32,
}

impl TestRequest {
    /// `request` for `method`, run once.
    pub fn new<M: Method>(method: &'static M, request: M::Request) -> Self {
        Self {
            method,
            request: Box::new(request),
            repeat: 1,
        }
    }

    /// How many times it runs (`--repeat`; 1 for a method that repeats itself).
    pub fn repeat(&self) -> u32 {
        self.repeat
    }

    /// Its method.
    pub fn method(&self) -> &'static dyn Registered {
        self.method
    }

    /// Its method's name (a plan's `kind`).
    pub fn kind(&self) -> &'static str {
        self.method.kind()
    }

    /// The typed request, when it is a `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.request.as_any().downcast_ref()
    }
}

impl Clone for TestRequest {
    fn clone(&self) -> Self {
        Self {
            method: self.method,
            request: self.request.clone_box(),
            repeat: self.repeat,
        }
    }
}

impl PartialEq for TestRequest {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind()
            && self.repeat == other.repeat
            && self.request.eq_dyn(other.request.as_ref())
    }
}

impl fmt::Debug for TestRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut t = f.debug_tuple(self.kind());
        t.field(&self.request);
        if self.repeat > 1 {
            t.field(&format_args!("repeat {}", self.repeat));
        }
        t.finish()
    }
}

/// A typed request behind [`TestRequest`]: compared, cloned and printed without its type.
trait AnyRequest: fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn clone_box(&self) -> Box<dyn AnyRequest>;
    fn eq_dyn(&self, other: &dyn AnyRequest) -> bool;
}

impl<T: fmt::Debug + Clone + PartialEq + Send + Sync + 'static> AnyRequest for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn clone_box(&self) -> Box<dyn AnyRequest> {
        Box::new(self.clone())
    }
    fn eq_dyn(&self, other: &dyn AnyRequest) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

/// A test's command line against a plan's target, as its method builds it: the method
/// pushes its command and what addresses the target; the test's own flags follow.
pub struct Argv<'a> {
    /// What the plan runs against (the named host's, when the test names one).
    pub ctx: &'a Context,
    /// The test's own flags as written.
    pub args: &'a [String],
    /// The plan's hosts the test names (`hosts = [...]`), if any.
    pub hosts: Option<&'a [String]>,
    /// A mesh's most pairs at once (`parallel`).
    pub parallel: Option<usize>,
    /// The command line so far.
    pub out: Vec<String>,
}

impl Argv<'_> {
    /// Whether the test's own flags give `flag` (`-p`, `--lab=x`).
    pub fn has(&self, flag: &str) -> bool {
        self.args
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    }

    /// Appends `words`.
    pub fn push(&mut self, words: &[&str]) {
        self.out.extend(words.iter().map(|w| (*w).to_owned()));
    }

    /// The target's server: its host, its port unless the test gives one, and its key
    /// unless the test gives one.
    pub fn server(&mut self) {
        self.out.push(self.ctx.host.clone());
        if !self.has("-p") && !self.has("--port") {
            self.out.extend(["-p".into(), self.ctx.port.to_string()]);
        }
        if let Some(k) = self
            .ctx
            .key_file
            .as_ref()
            .filter(|_| !self.has("--auth-key-file"))
        {
            self.out
                .extend(["--auth-key-file".into(), k.display().to_string()]);
        }
    }

    /// The target's lab (`--lab NAME`), unless the test names one.
    pub fn lab(&mut self) {
        if let Some(l) = self.ctx.lab.as_ref().filter(|_| !self.has("--lab")) {
            self.out.extend(["--lab".into(), l.clone()]);
        }
    }
}
