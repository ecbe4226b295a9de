//! The registry: every standard method on one line ([`ALL`]), a set of methods to look
//! kinds, threshold metrics and figures up in ([`Methods`]), and running any request
//! through its method ([`run`]).

use std::fmt;

use model::results::campaign::{Campaign, TestEntry};
use model::results::figures::Figure;
use model::results::repeats;
use model::results::RunResult;
use model::stop::Stop;
use report::table::Table;

use super::method::{Registered, TestRequest, ThresholdMetric};
use super::{
    blocksize, client, frer_compare, latency, mesh, nicmatrix, rfc2544, rfc2889, rfc6349, rrul,
    shaping, streams, sweep, y1564,
};
use crate::{Error, Watch};

/// Every method, in the order plans list their kinds and the figures of a result are
/// read. A new method is its module and one line here.
pub static ALL: &[&dyn Registered] = &[
    &client::Client,
    &sweep::Sweep,
    &blocksize::Blocksize,
    &latency::Latency,
    &rrul::Rrul,
    &mesh::Mesh,
    &rfc2544::Rfc2544,
    &rfc6349::Rfc6349,
    &streams::Streams,
    &shaping::Shaping,
    &frer_compare::FrerCompare,
    &nicmatrix::NicMatrix,
    &y1564::Y1564,
    &rfc2889::Rfc2889,
];

/// The method of a plan's `kind` (or a result's `command`), among the standard ones.
pub fn find(kind: &str) -> Option<&'static dyn Registered> {
    Methods::STANDARD.find(kind)
}

/// The figures of `r` by the standard methods: see [`Methods::figures`].
pub fn figures(r: &RunResult) -> Vec<Figure> {
    Methods::STANDARD.figures(r)
}

/// Runs any test a plan can hold through its method, and records the interfaces it used:
/// their state when it started, and what the host counted on them while it ran. A
/// request repeated (`--repeat N`) runs N times, one after another; the result is the
/// median repetition's document with every repetition kept and each figure's spread
/// ([`model::results::repeats::combine`]). A stop ends the repetitions after the one it
/// interrupted.
///
/// # Errors
/// The method's, in any repetition.
pub fn run(req: &TestRequest, watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
    let method = req.method();
    let n = req.repeat();
    if n <= 1 {
        return crate::jobs::recorded(method.sides(req), || method.run(req, watch, stop));
    }
    let mut runs = Vec::new();
    for i in 1..=n {
        watch.progress(&format!("{}: run {i} of {n}", method.kind()));
        let r = crate::jobs::recorded(method.sides(req), || method.run(req, watch, stop))?;
        let interrupted = r.interrupted || stop.is_raised();
        runs.push(r);
        if interrupted {
            break;
        }
    }
    let mut r = repeats::combine(runs, &|r| method.figures(r));
    method.repeated(&mut r);
    Ok(r)
}

/// A set of methods: the standard ones ([`ALL`]), or a list of one's own (a unit test's
/// toy method beside them). Plans, thresholds and comparisons look methods up here.
#[derive(Clone, Copy)]
pub struct Methods(&'static [&'static dyn Registered]);

impl Methods {
    /// The methods of [`ALL`].
    pub const STANDARD: Methods = Methods(ALL);

    /// The methods of `list`.
    pub fn new(list: &'static [&'static dyn Registered]) -> Self {
        Self(list)
    }

    /// Every method, in order.
    pub fn iter(self) -> impl Iterator<Item = &'static dyn Registered> {
        self.0.iter().copied()
    }

    /// The method of a plan's `kind` (or a result's `command`, `frer compare` as
    /// `frer-compare`).
    pub fn find(self, kind: &str) -> Option<&'static dyn Registered> {
        let kind = kind.replace(' ', "-");
        self.iter().find(|m| m.kind() == kind)
    }

    /// The method whose command clap matched in `matches` (a whole command line's), with
    /// the arguments of that command: `client ...`, or `frer compare ...` two levels down.
    /// `None` for a command that is not a method (`server`, `lab up`).
    pub fn matched(
        self,
        matches: &clap::ArgMatches,
    ) -> Option<(&'static dyn Registered, &clap::ArgMatches)> {
        self.iter().find_map(|m| {
            let mut at = matches;
            for word in m.command().split(' ') {
                match at.subcommand() {
                    Some((name, sub)) if name == word => at = sub,
                    _ => return None,
                }
            }
            Some((m, at))
        })
    }

    /// The request of the method whose command clap matched in `matches` (see
    /// [`Methods::matched`]); `None` for a command that is not a method.
    ///
    /// # Errors
    /// The method's usage errors.
    pub fn request(self, matches: &clap::ArgMatches) -> Option<Result<TestRequest, Error>> {
        self.matched(matches).map(|(m, args)| m.request_from(args))
    }

    /// The kinds a plan may name, for error messages: `client, sweep, ...`.
    pub fn kinds(self) -> String {
        let names: Vec<&str> = self.iter().map(|m| m.kind()).collect();
        names.join(", ")
    }

    /// The threshold metric of a plan's name, when a method declares it.
    pub fn threshold(self, name: &str) -> Option<ThresholdMetric> {
        self.iter()
            .flat_map(|m| m.thresholds())
            .find(|t| t.name == name)
            .copied()
    }

    /// The threshold metric names a plan may use, each once, in the methods' order.
    pub fn threshold_names(self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for t in self.iter().flat_map(|m| m.thresholds()) {
            if !names.contains(&t.name) {
                names.push(t.name);
            }
        }
        names.join(", ")
    }

    /// The figures of `r`: its method's (found by the result's `command`), or those of
    /// the results model's shared parts for a document no method makes (`gen`, `frer
    /// analyze`); of a repeated result, each the median with its spread.
    pub fn figures(self, r: &RunResult) -> Vec<Figure> {
        match self.find(&r.command) {
            Some(m) => repeats::figures_of(r, &|x| m.figures(x)),
            None => repeats::figures_of(r, &model::results::figures::figures),
        }
    }
}

impl PartialEq for Methods {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| a.kind() == b.kind())
    }
}

impl fmt::Debug for Methods {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|m| m.kind()))
            .finish()
    }
}

/// The campaign report's sections of methods it does not know itself: each method's
/// [`Method::report_tables`](super::Method::report_tables) over its tests, its charts
/// and findings per test.
impl report::campaign::Extras for Methods {
    fn tables(&self, c: &Campaign) -> Vec<Table> {
        let mut out = Vec::new();
        for m in self.iter() {
            let tests: Vec<(&str, &RunResult)> = c
                .tests
                .iter()
                .filter(|t| t.kind == m.kind())
                .filter_map(|t| t.result.as_ref().map(|r| (t.id.as_str(), r)))
                .collect();
            if !tests.is_empty() {
                out.extend(m.report_tables(&tests));
            }
        }
        out
    }

    fn charts(&self, test: &TestEntry, r: &RunResult) -> Vec<report::campaign::Chart> {
        self.find(&test.kind)
            .map(|m| m.report_charts(&test.id, r))
            .unwrap_or_default()
    }

    fn findings(&self, test: &TestEntry, r: &RunResult) -> Vec<String> {
        self.find(&test.kind)
            .map(|m| m.findings(r))
            .unwrap_or_default()
    }
}
