//! The campaign report laid out as Markdown, as one self-contained HTML file (inline style
//! and SVG, no scripts, nothing fetched) through the built-in templates of [`super::template`],
//! and as one CSV per table.

use model::results::campaign::Campaign;

use super::tables;
use super::template::{TemplateError, Templates};

/// The report as Markdown (the built-in template).
pub fn markdown(c: &Campaign) -> String {
    rendered(Templates::builtin().markdown(c))
}

/// A built-in template's output; it renders every campaign (tested), so an error here is
/// this program's bug, shown in the report rather than lost.
fn rendered(r: Result<String, TemplateError>) -> String {
    r.unwrap_or_else(|e| format!("report template error: {e}\n"))
}

/// One CSV per table, as (file stem, text).
pub fn csv_tables(c: &Campaign) -> Vec<(String, String)> {
    tables(c)
        .into_iter()
        .map(|t| (t.name.to_owned(), t.csv()))
        .collect()
}

pub(super) const STYLE: &str =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 6px}th{background:#f3f3f3}\
td.r,th.r{text-align:right}td.l,th.l{text-align:left}.fail{color:#b00}\
figure{margin:1em 0}code{font-size:12px}\
.verdict{border:2px solid;border-radius:4px;padding:.2em 1em;margin:1em 0}\
.pass-box{border-color:#2a7;background:#effaf3}.fail-box{border-color:#b00;background:#fdf0f0}\
.incomplete-box{border-color:#c80;background:#fdf7ea}";

/// The report as one self-contained HTML file (inline style and SVG, no scripts, nothing
/// fetched; the built-in template).
pub fn html(c: &Campaign) -> String {
    rendered(Templates::builtin().html(c))
}
