//! The campaign report laid out as Markdown, as one self-contained HTML file (inline style
//! and SVG, no scripts, nothing fetched) through the built-in templates of [`super::template`],
//! and as one CSV per table.

use model::results::campaign::Campaign;

use super::template::{TemplateError, Templates};
use super::{tables_with, Extras, NoExtras};

/// The report as Markdown (the built-in template).
pub fn markdown(c: &Campaign) -> String {
    markdown_with(c, &NoExtras)
}

/// The report as Markdown (the built-in template), with the sections of `extras`.
pub fn markdown_with(c: &Campaign, extras: &dyn Extras) -> String {
    rendered(Templates::builtin().markdown_with(c, extras))
}

/// A built-in template's output; it renders every campaign (tested), so an error here is
/// this program's bug, shown in the report rather than lost.
fn rendered(r: Result<String, TemplateError>) -> String {
    r.unwrap_or_else(|e| format!("report template error: {e}\n"))
}

/// One CSV per table, as (file stem, text).
pub fn csv_tables(c: &Campaign) -> Vec<(String, String)> {
    csv_tables_with(c, &NoExtras)
}

/// One CSV per table, as (file stem, text), with the tables of `extras`.
pub fn csv_tables_with(c: &Campaign, extras: &dyn Extras) -> Vec<(String, String)> {
    tables_with(c, extras)
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
.incomplete-box{border-color:#c80;background:#fdf7ea}.measured-box{border-color:#888;background:#f6f6f6}";

/// The report as one self-contained HTML file (inline style and SVG, no scripts, nothing
/// fetched; the built-in template).
pub fn html(c: &Campaign) -> String {
    html_with(c, &NoExtras)
}

/// The report as one self-contained HTML file, with the sections and charts of `extras`.
pub fn html_with(c: &Campaign, extras: &dyn Extras) -> String {
    rendered(Templates::builtin().html_with(c, extras))
}
