//! The campaign's errors: [`Error`], what a job or a run ends with, and the errors of
//! reading a plan ([`PlanError`]) and a command line ([`CommandError`]).
//!
//! Each error's message is the whole text a user reads: one that carries another's
//! (a plan error a host error, a context its cause) prints it in its own message, so none
//! of them gives it again as its `source()` (a chain printer would say it twice).
//! [`Error::is_usage`] is the class the binary's exit code comes from.

use crate::hosts::HostError;
use model::spec::SpecError;
use model::units::UnitError;

/// Why a job or a run did not give a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// What was asked cannot be done as asked: a bad value, a missing interface or lab,
    /// no root where root is needed (the binary's exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The test could not run: a connection, the server, a socket, a lab command (exit
    /// code 1).
    #[error("{0}")]
    Failed(String),
    /// It was asked to stop (Ctrl-C) before it ended.
    #[error("interrupted")]
    Interrupted,
    /// A plan that does not read or check (usage).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A command line (a plan test's `args`) that does not read (usage).
    #[error(transparent)]
    Command(#[from] CommandError),
    /// A plan's hosts that do not read (usage), or do not resolve when the run starts
    /// (failed): [`HostError::is_usage`].
    #[error(transparent)]
    Hosts(#[from] HostError),
    /// A test request that cannot run: the spec's own check (usage).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A method's parameters that make no plan of trials (usage).
    #[error(transparent)]
    Method(#[from] method::PlanError),
    /// A value not in its unit (usage).
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// A lab that cannot be built, found or entered (usage), or a command of it that
    /// failed ([`lab::LabError::Command`], failed).
    #[error(transparent)]
    Lab(#[from] lab::LabError),
    /// The control protocol: the connection, the peer, the server's refusal (failed).
    /// [`control::ProtoError::Interrupted`] becomes [`Error::Interrupted`].
    #[error(transparent)]
    Proto(control::ProtoError),
    /// A socket, a file or a thread (failed).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// What was being done when `error` happened; its class is `error`'s.
    #[error("{what}: {error}")]
    Context {
        /// What was being done (`test with HOST failed`).
        what: String,
        /// What happened.
        error: Box<Error>,
    },
}

impl Error {
    /// The same error with `what` in front of its message (an interruption stays one).
    pub fn context(self, what: impl std::fmt::Display) -> Self {
        match self {
            Error::Usage(m) => Error::Usage(format!("{what}: {m}")),
            Error::Failed(m) => Error::Failed(format!("{what}: {m}")),
            Error::Interrupted => Error::Interrupted,
            error => Error::Context {
                what: what.to_string(),
                error: Box::new(error),
            },
        }
    }

    /// Whether what was asked cannot be done as asked (the binary's exit code 2) rather
    /// than the test could not run or was stopped (exit code 1).
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_)
            | Error::Plan(_)
            | Error::Command(_)
            | Error::Spec(_)
            | Error::Method(_)
            | Error::Unit(_) => true,
            Error::Hosts(e) => e.is_usage(),
            Error::Lab(e) => !matches!(e, lab::LabError::Command { .. }),
            Error::Context { error, .. } => error.is_usage(),
            Error::Failed(_) | Error::Interrupted | Error::Proto(_) | Error::Io(_) => false,
        }
    }
}

impl From<control::ProtoError> for Error {
    fn from(e: control::ProtoError) -> Self {
        match e {
            control::ProtoError::Interrupted => Error::Interrupted,
            e => Error::Proto(e),
        }
    }
}

/// Why a command line, a plan test's or `lab up`'s, does not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The parser refused it: the first line of what it says.
    #[error("{0}")]
    Refused(String),
    /// Its flags read, but not into a request that can run.
    #[error(transparent)]
    Request(Box<Error>),
    /// A command that is not a test (the whole command line).
    #[error("`{0}` is not a test")]
    NotATest(String),
    /// A command that is not `lab up`.
    #[error("not `lab up`")]
    NotLabUp,
}

impl From<Error> for CommandError {
    fn from(e: Error) -> Self {
        CommandError::Request(Box::new(e))
    }
}

/// Why a plan does not read or check: the first problem, with the plan line and the test
/// it is at when it has them. Its message is `line N: test 'NAME': PROBLEM`.
#[derive(Debug)]
pub struct PlanError {
    line: Option<usize>,
    test: Option<String>,
    // Boxed: a result of a plan or of a job stays small.
    kind: Box<PlanErrorKind>,
}

impl PlanError {
    /// A problem of the plan as a whole.
    pub fn new(kind: PlanErrorKind) -> Self {
        Self {
            line: None,
            test: None,
            kind: Box::new(kind),
        }
    }

    /// A problem at a line of the plan.
    pub fn at(line: usize, kind: PlanErrorKind) -> Self {
        Self {
            line: Some(line),
            ..Self::new(kind)
        }
    }

    /// A problem of the test named `test`, at a line of the plan.
    pub fn in_test(line: usize, test: impl Into<String>, kind: PlanErrorKind) -> Self {
        Self {
            test: Some(test.into()),
            ..Self::at(line, kind)
        }
    }

    /// The plan's line, when the problem is at one.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The test's name, when the problem is in one.
    pub fn test(&self) -> Option<&str> {
        self.test.as_deref()
    }

    /// What is wrong.
    pub fn kind(&self) -> &PlanErrorKind {
        &self.kind
    }
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if let Some(test) = &self.test {
            write!(f, "test '{test}': ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for PlanError {}

impl From<PlanErrorKind> for PlanError {
    fn from(kind: PlanErrorKind) -> Self {
        Self::new(kind)
    }
}

/// What is wrong with a plan (the part of [`PlanError`]'s message after its line and test).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanErrorKind {
    /// Not TOML, or a key a plan does not have (the parser's message, with its line).
    #[error("{}", .0.to_string().trim())]
    Toml(toml::de::Error),
    /// No `[target]`, and no hosts that tests could name instead.
    #[error("the plan has no [target]: give lab = \"TOPOLOGY\", host = \"ADDRESS\" or loopback = true (or [[host]] entries that every test names)")]
    NoTarget,
    /// No `[[test]]`.
    #[error("the plan has no [[test]]")]
    NoTests,
    /// A `[target]` with none or more than one of lab, host and loopback.
    #[error("[target] needs exactly one of lab, host or loopback = true")]
    TargetNotOne,
    /// A lab `[target]` with a host's tx, rx or port.
    #[error("[target] tx, rx and port belong to a host target; a lab has its own")]
    HostFieldsOnLab,
    /// `lab_args` on a host target.
    #[error("lab_args belongs to a lab target")]
    LabArgsOnHost,
    /// tx without rx, or rx without tx.
    #[error("give both tx and rx, or neither")]
    TxWithoutRx,
    /// A loopback target with lab_args, tx or rx.
    #[error("a loopback target takes no lab_args, tx or rx")]
    LoopbackFields,
    /// `lab_args` that do not split into words.
    #[error("lab_args has an unclosed quote")]
    LabArgsUnclosed,
    /// `lab_args` that `lab up` refuses.
    #[error("lab_args: {0}")]
    LabArgs(CommandError),
    /// Both `hosts_from` and `[[host]]` entries.
    #[error("give hosts_from or [[host]] entries, not both")]
    HostsTwice,
    /// `hosts_key_file` without `hosts_from`.
    #[error("hosts_key_file belongs to hosts_from; a [[host]] has its own key_file")]
    KeyFileWithoutHostsFrom,
    /// A bad `hosts_from` or host name.
    #[error("{0}")]
    Host(HostError),
    /// Two hosts of one name.
    #[error("two hosts are named '{0}'")]
    DuplicateHost(String),
    /// A host's address that does not read.
    #[error("host '{host}': address {error}")]
    HostAddress {
        /// The host's name.
        host: String,
        /// What is wrong with its address.
        error: HostError,
    },
    /// Two hosts of one address.
    #[error("hosts '{first}' and '{second}' have one address")]
    SharedAddress {
        /// The host listed first.
        first: String,
        /// The other.
        second: String,
    },
    /// A test kind no method has.
    #[error("test {number}: unknown kind '{kind}' (kinds: {kinds})")]
    UnknownKind {
        /// The test's number in the plan, from 1.
        number: usize,
        /// The kind as written.
        kind: String,
        /// The kinds there are.
        kinds: String,
    },
    /// Two tests of one name.
    #[error("two tests are named '{0}'")]
    DuplicateTest(String),
    /// A test's `args` that do not split into words.
    #[error("args has an unclosed quote")]
    ArgsUnclosed,
    /// A test's `lab_args` without its `lab`.
    #[error("lab_args without lab")]
    LabArgsWithoutLab,
    /// A test's `repeat = N` beside `--repeat` in its `args`.
    #[error("repeat = N and --repeat in args: give it once")]
    RepeatTwice,
    /// A test's command line that the command refuses.
    #[error("{0}")]
    Command(CommandError),
    /// A raw-frame test against a loopback target.
    #[error("{kind} needs raw ports or a lab, not a loopback target")]
    NeedsRawPorts {
        /// The test's kind.
        kind: &'static str,
    },
    /// `parallel` on a test that is not a mesh.
    #[error("parallel belongs to a mesh")]
    ParallelNotMesh,
    /// `parallel = 0`.
    #[error("parallel = 0: a mesh runs at least one pair at a time")]
    ParallelZero,
    /// `hosts` on a test with a lab of its own.
    #[error("a test with a lab of its own names no hosts")]
    HostsWithOwnLab,
    /// `hosts` in a plan without hosts.
    #[error("hosts: the plan has no [[host]]")]
    NoPlanHosts,
    /// `hosts` names in a plan whose hosts come from DNS.
    #[error(
        "hosts: hosts from DNS have no names before the run; a mesh takes them all (give no hosts)"
    )]
    NamedDnsHosts,
    /// A host name the plan does not list.
    #[error("hosts: the plan has no host '{0}'")]
    UnknownHost(String),
    /// A host named twice in one test.
    #[error("hosts: '{0}' twice")]
    HostNamedTwice(String),
    /// A mesh in a plan without hosts.
    #[error("a mesh needs the plan's hosts ([[host]] entries or hosts_from)")]
    MeshWithoutPlanHosts,
    /// A server test that names no host in a plan without a target.
    #[error("the plan has no [target]: name the host it runs against (hosts = [\"NAME\"])")]
    NoHostNamed,
    /// A mesh with a lab of its own.
    #[error("a mesh runs between the plan's hosts: it has no lab of its own")]
    MeshWithOwnLab,
    /// A mesh of fewer than two hosts.
    #[error("a mesh needs at least two hosts")]
    MeshTooFewHosts,
    /// A mesh of hosts without a key.
    #[error("a mesh needs the hosts' key (key_file, or hosts_key_file with hosts_from): servers run tests toward each other only with --auth-key-file")]
    MeshKeyless,
    /// A mesh of hosts with different keys.
    #[error("the hosts of a mesh need one key_file: each source authenticates to its destination with its own key")]
    MeshKeysDiffer,
    /// `hosts` on a test of a kind that names none.
    #[error("a {kind} test names no hosts")]
    NamesNoHosts {
        /// The test's kind.
        kind: &'static str,
    },
    /// A server test that names other than one host.
    #[error("hosts: a {kind} test runs against one host, not {count}")]
    NotOneHost {
        /// The test's kind.
        kind: &'static str,
        /// How many it names.
        count: usize,
    },
    /// A threshold metric no method declares.
    #[error("unknown metric '{metric}' (metrics: {metrics})")]
    UnknownMetric {
        /// The metric as written.
        metric: String,
        /// The metrics there are.
        metrics: String,
    },
    /// A threshold naming a test the plan does not have.
    #[error("threshold names no test '{0}'")]
    NoSuchTest(String),
    /// A threshold bound not in its metric's unit.
    #[error("threshold {key}: {error}")]
    Bound {
        /// `min` or `max`.
        key: &'static str,
        /// What is wrong with the value.
        error: UnitError,
    },
    /// A threshold without min and max.
    #[error("a threshold needs min or max")]
    NoBound,
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_exit_code_class_comes_from_the_type() {
        let usage = [
            Error::Usage("x".into()),
            PlanError::new(PlanErrorKind::NoTests).into(),
            CommandError::Refused("x".into()).into(),
            HostError::BadName("a b".into()).into(),
            SpecError::ZeroDuration.into(),
            UnitError::NotATime("300".into()).into(),
            lab::LabError::NotFound("l".into()).into(),
        ];
        for e in usage {
            assert!(e.is_usage(), "{e:?}");
        }
        let failed = [
            Error::Failed("x".into()),
            Error::Interrupted,
            HostError::NoAddress("agents".into()).into(),
            control::ProtoError::Timeout.into(),
            std::io::Error::other("x").into(),
            lab::LabError::Command {
                cmd: "ip link".into(),
                detail: "busy".into(),
            }
            .into(),
        ];
        for e in failed {
            assert!(!e.is_usage(), "{e:?}");
        }
        // A stop through the control protocol is the campaign's own interruption.
        assert!(matches!(
            Error::from(control::ProtoError::Interrupted),
            Error::Interrupted
        ));
    }

    #[test]
    fn a_context_keeps_the_class_and_the_text_of_its_cause() {
        let e = Error::from(control::ProtoError::Timeout).context("test with h failed");
        assert_eq!(
            e.to_string(),
            "test with h failed: timed out waiting for the peer"
        );
        assert!(!e.is_usage());
        assert!(matches!(&e, Error::Context { error, .. } if matches!(**error, Error::Proto(_))));
        let e = Error::from(PlanError::at(3, PlanErrorKind::NoBound)).context("p.toml");
        assert_eq!(
            e.to_string(),
            "p.toml: line 3: a threshold needs min or max"
        );
        assert!(e.is_usage());
        // The message says it all: no cause given again as a source.
        assert!(std::error::Error::source(&e).is_none());
        // Text errors keep their variant; an interruption stays one.
        assert!(matches!(Error::Usage("m".into()).context("w"), Error::Usage(m) if m == "w: m"));
        assert!(matches!(
            Error::Interrupted.context("w"),
            Error::Interrupted
        ));
    }
}
