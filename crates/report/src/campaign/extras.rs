//! What test methods add to a campaign report beyond its built-in sections ([`Extras`]):
//! a method whose results have a part of their own (`RunResult::parts`) brings its tables,
//! charts and findings with it, and the report lays them out as it lays out its own. The
//! report knows no such method; the caller passes them in (`campaign::methods::Methods`).

use model::results::campaign::{Campaign, TestEntry};
use model::results::RunResult;

use crate::table::Table;

/// A chart a method draws of one test's result.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The table (its `name`) it sits beside; `None`: after the tables.
    pub section: Option<&'static str>,
    /// Its caption, `tN: what` as the built-in charts are captioned.
    pub caption: String,
    /// The SVG (see [`crate::svg`]).
    pub svg: String,
}

/// The tables, charts and findings of methods the report does not know itself.
pub trait Extras {
    /// Their tables, after the built-in methods' sections and before the compliance
    /// table; each led by a `source` column naming the test (see `Table`).
    fn tables(&self, c: &Campaign) -> Vec<Table>;

    /// The charts of one test's result.
    fn charts(&self, test: &TestEntry, r: &RunResult) -> Vec<Chart>;

    /// What one test found, as phrases of its line in the findings (measured figures
    /// only).
    fn findings(&self, test: &TestEntry, r: &RunResult) -> Vec<String>;
}

/// No methods beyond the built-in ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExtras;

impl Extras for NoExtras {
    fn tables(&self, _: &Campaign) -> Vec<Table> {
        Vec::new()
    }
    fn charts(&self, _: &TestEntry, _: &RunResult) -> Vec<Chart> {
        Vec::new()
    }
    fn findings(&self, _: &TestEntry, _: &RunResult) -> Vec<String> {
        Vec::new()
    }
}
