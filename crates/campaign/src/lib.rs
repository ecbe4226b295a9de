//! Campaigns: every test wirebench runs, as a typed request and the job that runs it in
//! this process, and plans of many tests with their thresholds.
//!
//! - [`request`]: what each test asks for (a throughput test, a sweep, RFC 2544, a
//!   multi-stream profile, the shaper matrix, the FRER comparison, frames, ...), typed; the
//!   binary builds them from its command line, a plan from each test's `args` through the
//!   same clap definitions ([`plan::Commands`]);
//! - [`methods`]: every test method, one module each, registered in one list: what a
//!   plan, the runner, thresholds, `compare` and the binary know of it;
//! - [`jobs`]: running a request: sockets through `control` and `engine`, methods from
//!   `method` over the runners of [`trials`], labs through `lab`; a result document back;
//! - [`frames`]: the frames of the raw-frame jobs from what the interfaces say;
//! - [`plan`]: plans (TOML) checked as a whole before anything runs;
//! - [`error`]: [`Error`], what a job or a run ends with (its class gives the binary's
//!   exit code), and the errors of a plan and of a plan's command lines;
//! - [`limits`]: a test's own latency limits as verdicts;
//! - [`verdicts`]: thresholds against the one figure extractor of the results model;
//! - [`target`]: what a plan runs against: a server of its own on loopback, a host, or a
//!   lab it builds (with a server in the listener's namespace) and removes;
//! - [`runner`]: a whole run, `results.json` after every test, the reports at the end;
//! - [`demo`]: the built-in campaign;
//! - [`exporter`]: tests on demand for Prometheus (`wirebench exporter`).
//!
//! What it does not do: parse command lines (the binary does, with clap) or print (the
//! binary prints what `report` lays out). Nothing here re-executes the program: every test
//! runs in this process, on threads in the lab's namespaces where it needs them.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod demo;
pub mod error;
pub mod exporter;
pub mod frames;
pub mod hosts;
pub mod jobs;
pub mod limits;
pub mod methods;
pub mod plan;
pub mod request;
pub mod runner;
pub mod target;
pub mod trials;
pub mod verdicts;

pub use error::Error;
use model::results::IntervalRow;

/// A usage error.
pub(crate) fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// What a job tells while it runs: interval rows of a throughput test and progress lines
/// (a sweep's steps, a search's results). A plan run ignores them; a command prints them.
pub trait Watch: Send {
    /// One interval of a throughput test, per direction.
    fn interval(&mut self, _row: &IntervalRow) {}
    /// A line of progress.
    fn progress(&mut self, _line: &str) {}
}

/// A [`Watch`] that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Watch for Quiet {}

/// Whether this process may build labs and open raw sockets (effective uid 0).
pub fn is_root() -> bool {
    engine::sys::is_root()
}

/// Refuses with `why` (a usage error) unless this process is root.
pub fn need_root(why: &str) -> Result<(), Error> {
    if is_root() {
        Ok(())
    } else {
        Err(usage(why))
    }
}
