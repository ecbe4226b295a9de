//! The campaign report (`wirebench run`, `wirebench report`): the sections of a benchmark
//! report built from a [`Campaign`] alone, opened by a verdict banner (PASS, FAIL, MEASURED or
//! INCOMPLETE), laid out as Markdown ([`markdown`]), as one
//! self-contained HTML file with inline SVG charts ([`html`], [`charts`]), and as one CSV
//! per table ([`csv_tables`]); and two runs side by side ([`compare_rows`], with the
//! interface facts that differ: [`interface_differences`]).
//!
//! Every table row names its source test (`t3`, linked to the test's entry with its command
//! line), a value that was not measured is shown as `-`, never estimated, and a result the
//! generator limited is marked so. The tables are built once ([`tables`]) and laid out
//! three ways, so the formats cannot disagree.

mod banner;
mod charts;
mod compare;
mod extras;
mod findings;
mod layout;
mod template;

pub use charts::charts;
pub use compare::{
    compare_markdown, compare_markdown_with, compare_rows, compare_rows_with,
    interface_differences, Figures,
};
pub use extras::{Chart, Extras, NoExtras};
pub use layout::{csv_tables, csv_tables_with, html, html_with, markdown, markdown_with};
pub use template::{TemplateError, Templates};

use model::results::campaign::{Campaign, TestEntry, TestStatus, SCHEMA};
use model::results::RunResult;

use crate::table::Table;
use crate::tables;

/// A document that is not a campaign (or result) this version reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    /// A schema of another kind or version.
    #[error("schema '{0}' is not one this version reads ({SCHEMA})")]
    OtherSchema(String),
    /// No schema: not a wirebench document.
    #[error("no schema: not a wirebench campaign (results.json of `wirebench run`)")]
    NoSchema,
    /// The campaign schema, but not its fields.
    #[error("not a campaign document: {0}")]
    NotACampaign(serde_json::Error),
    /// The result schema, but not its fields.
    #[error("not a result document: {0}")]
    NotAResult(serde_json::Error),
    /// A test id the reports cannot link (not `t` and digits).
    #[error("test id '{0}' is not t1, t2, ...")]
    TestId(String),
}

/// Reads a campaign document, checking its schema.
///
/// # Errors
/// Not JSON, not a campaign, or a schema this version does not read.
pub fn load(text: &str) -> Result<Campaign, LoadError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(LoadError::NotJson)?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => return Err(LoadError::OtherSchema(other.to_owned())),
        None => return Err(LoadError::NoSchema),
    }
    let c: Campaign = serde_json::from_value(v).map_err(LoadError::NotACampaign)?;
    // Ids become anchors and links in the reports: only `t` and digits.
    if let Some(t) = c.tests.iter().find(|t| {
        !(t.id.len() > 1 && t.id.starts_with('t') && t.id[1..].bytes().all(|b| b.is_ascii_digit()))
    }) {
        return Err(LoadError::TestId(t.id.clone()));
    }
    Ok(c)
}

/// Reads a campaign, or a single command's result document (`wirebench client -J`), which
/// becomes a campaign of one test.
///
/// # Errors
/// Neither kind of document.
pub fn load_any(text: &str) -> Result<Campaign, LoadError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(LoadError::NotJson)?;
    if v.get("schema").and_then(|s| s.as_str()) == Some(model::results::SCHEMA) {
        let r: RunResult = serde_json::from_value(v).map_err(LoadError::NotAResult)?;
        return Ok(Campaign {
            schema: SCHEMA.into(),
            title: r.command.clone(),
            description: None,
            metadata: Default::default(),
            target: String::new(),
            plan_file: String::new(),
            started_at: r.started_at.clone(),
            finished_at: None,
            environment: r.environment.clone(),
            interfaces: vec![],
            tests: vec![TestEntry {
                id: "t1".into(),
                name: r.command.clone(),
                kind: r.command.clone(),
                command: format!("wirebench {}", r.command),
                node: String::new(),
                status: TestStatus::Done,
                error: None,
                duration_s: 0.0,
                result: Some(r),
                frer_paths: vec![],
            }],
            verdicts: vec![],
            stopped: None,
        });
    }
    load(text)
}

/// Every table the campaign's results fill, in report order.
pub fn tables(c: &Campaign) -> Vec<Table> {
    tables_with(c, &NoExtras)
}

/// Every table the campaign's results fill, in report order, with the tables of the
/// methods in `extras` after the built-in methods' sections.
pub fn tables_with(c: &Campaign, extras: &dyn Extras) -> Vec<Table> {
    let mut out = vec![tables::campaign::tests(c)];
    out.extend(
        [
            tables::client::report(c),
            tables::sweep::report(c),
            tables::rfc2544::throughput_report(c),
            tables::latency::report(c),
            tables::rrul::report(c),
            tables::mesh::report(c),
            tables::rfc2544::loss_report(c),
            tables::profile::report(c),
            tables::shaping::report(c),
            tables::frer::overhead_report(c),
            tables::frer::paths_report(c),
            tables::blocksize::report(c),
            tables::nic::matrix_report(c),
            tables::nic::activity_report(c),
            tables::repeats::report(c),
            tables::lab::report(c),
        ]
        .into_iter()
        .flatten(),
    );
    out.extend(extras.tables(c));
    out.push(tables::campaign::compliance(c));
    out.push(tables::campaign::interfaces(c));
    out.extend(tables::nic::interfaces_report(c));
    out
}
