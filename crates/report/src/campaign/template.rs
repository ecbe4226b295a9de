//! The campaign report's Markdown and HTML through minijinja templates: the built-in ones
//! (`crates/report/templates/report.md` and `report.html`, shipped in the binary) or a
//! user's own from a directory (`--template DIR`: a lab's logo, a customer's layout; a file
//! the directory lacks stays built in).
//!
//! The context a template gets (what `report.md` and `report.html` use):
//! - `title`, `description` (or none), `started_at`, `finished_at`, `plan_file`, `target`,
//!   `stopped` (why the run stopped early, or none), `style` (the built-in CSS);
//! - `banner_md`, `banner_html`: the verdict banner, laid out;
//! - `metadata`: a list of `{key, value}`;
//! - `findings` (Markdown, linking tests as `[tN](#tN)`) and `findings_html`;
//! - `sections`: the tables in report order, each `{name, title, intro, empty, markdown,
//!   html, charts}`, `charts` being the `{caption, svg}` that illustrate it;
//! - `other_charts`: the charts no table claims;
//! - `tests`: each `{id, name, command, node, status, error, ran, backend, timestamps,
//!   notes}`.
//!
//! HTML templates escape text as the built-in layout does (`& < > "`); tables, charts and
//! the banner arrive as HTML. Markdown templates have the `md` filter (escapes `|`, joins
//! lines). What it does not do: compute anything (the tables, charts and findings are built
//! before), or read files (the caller reads a user's templates and gives their text).

use std::path::{Path, PathBuf};

use minijinja::{AutoEscape, Environment, Value};
use serde::Serialize;

use model::results::campaign::Campaign;

use super::banner::banner;
use super::charts::{charts, section};
use super::findings::findings;
use super::{tables_with, Extras, NoExtras};
use crate::table::{html_escape, md_escape};
use crate::tables::campaign::status;
use crate::tables::done;

/// The templates a report is rendered with, by file name.
pub(crate) const MARKDOWN: &str = "report.md";
/// See [`MARKDOWN`].
pub(crate) const HTML: &str = "report.html";

const BUILTIN_MARKDOWN: &str = include_str!("../../templates/report.md");
const BUILTIN_HTML: &str = include_str!("../../templates/report.html");

/// A template that does not load or render, with where.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The directory or a file in it cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A template's syntax, or an error while rendering it.
    #[error("{}", describe(.0))]
    Template(#[from] minijinja::Error),
}

/// "template report.html line 12: …", naming the file and line minijinja points at.
fn describe(e: &minijinja::Error) -> String {
    let at = match (e.name(), e.line()) {
        (Some(n), Some(l)) => format!("template {n} line {l}: "),
        (Some(n), None) => format!("template {n}: "),
        _ => String::new(),
    };
    let what = e
        .detail()
        .map_or_else(|| e.kind().to_string(), |d| format!("{}: {d}", e.kind()));
    format!("{at}{what}")
}

/// The report templates.
pub struct Templates {
    env: Environment<'static>,
    /// Where the user's templates came from (none: all built in).
    dir: Option<PathBuf>,
}

impl Templates {
    /// The built-in templates.
    pub fn builtin() -> Templates {
        let mut env = environment();
        // The built-in templates are part of this program and tested; they always load.
        for (name, source) in [(MARKDOWN, BUILTIN_MARKDOWN), (HTML, BUILTIN_HTML)] {
            if let Err(e) = env.add_template(name, source) {
                unreachable!("built-in template {name}: {e}");
            }
        }
        Templates { env, dir: None }
    }

    /// A user's templates as read from `dir` (`--template DIR`): the sources of
    /// `report.md` and `report.html` it holds, each one it lacks built in. Every template
    /// is checked here: a syntax error names its file and line. The caller reads the
    /// files; this reads none.
    ///
    /// # Errors
    /// `dir` held neither template, or a template does not compile.
    pub fn from_sources(
        dir: &Path,
        markdown: Option<String>,
        html: Option<String>,
    ) -> Result<Templates, TemplateError> {
        if markdown.is_none() && html.is_none() {
            return Err(TemplateError::Read {
                path: dir.to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("holds neither {MARKDOWN} nor {HTML}"),
                ),
            });
        }
        let mut env = environment();
        for (name, given, builtin) in [
            (MARKDOWN, markdown, BUILTIN_MARKDOWN),
            (HTML, html, BUILTIN_HTML),
        ] {
            env.add_template_owned(name, given.unwrap_or_else(|| builtin.to_owned()))?;
        }
        Ok(Templates {
            env,
            dir: Some(dir.to_owned()),
        })
    }

    /// The file names a user's template directory may hold: `report.md`, `report.html`.
    pub const FILES: [&'static str; 2] = [MARKDOWN, HTML];

    /// Where the user's templates came from (none: all built in).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The report as Markdown.
    ///
    /// # Errors
    /// The template fails while rendering (e.g. a filter given the wrong value).
    pub fn markdown(&self, c: &Campaign) -> Result<String, TemplateError> {
        self.render(MARKDOWN, c, &NoExtras)
    }

    /// The report as Markdown, with the sections of `extras`.
    ///
    /// # Errors
    /// See [`Templates::markdown`].
    pub fn markdown_with(
        &self,
        c: &Campaign,
        extras: &dyn Extras,
    ) -> Result<String, TemplateError> {
        self.render(MARKDOWN, c, extras)
    }

    /// The report as one HTML file.
    ///
    /// # Errors
    /// See [`Templates::markdown`].
    pub fn html(&self, c: &Campaign) -> Result<String, TemplateError> {
        self.render(HTML, c, &NoExtras)
    }

    /// The report as one HTML file, with the sections and charts of `extras`.
    ///
    /// # Errors
    /// See [`Templates::markdown`].
    pub fn html_with(&self, c: &Campaign, extras: &dyn Extras) -> Result<String, TemplateError> {
        self.render(HTML, c, extras)
    }

    fn render(
        &self,
        name: &str,
        c: &Campaign,
        extras: &dyn Extras,
    ) -> Result<String, TemplateError> {
        let t = self.env.get_template(name)?;
        Ok(t.render(minijinja::value::Serde(context(c, extras)))?)
    }
}

/// Jinja's block whitespace rules (a tag alone on its line leaves no line behind), text
/// escaped in `.html` templates as the built-in layout escapes it, and the `md` filter.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build();
    if let Ok(s) = syntax {
        env.set_syntax(s);
    }
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_formatter(|out, state, value| {
        if matches!(state.auto_escape(), AutoEscape::Html) && !value.is_safe() && !value.is_none() {
            out.write_str(&html_escape(&value.to_string()))
                .map_err(minijinja::Error::from)
        } else {
            minijinja::escape_formatter(out, state, value)
        }
    });
    env.add_filter("md", |s: String| md_escape(&s));
    env
}

#[derive(Serialize)]
struct Entry {
    key: String,
    value: String,
}

#[derive(Serialize)]
struct Chart {
    caption: String,
    svg: Value,
}

#[derive(Serialize)]
struct Section {
    name: &'static str,
    title: &'static str,
    intro: String,
    empty: bool,
    markdown: Value,
    html: Value,
    charts: Vec<Chart>,
}

#[derive(Serialize)]
struct Test {
    id: String,
    name: String,
    command: String,
    node: String,
    status: &'static str,
    error: Option<String>,
    ran: bool,
    backend: String,
    timestamps: String,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct Context {
    title: String,
    description: Option<String>,
    started_at: String,
    finished_at: String,
    plan_file: String,
    target: String,
    stopped: Option<String>,
    style: Value,
    banner_md: Value,
    banner_html: Value,
    metadata: Vec<Entry>,
    findings: Vec<String>,
    findings_html: Vec<Value>,
    sections: Vec<Section>,
    other_charts: Vec<Chart>,
    tests: Vec<Test>,
}

/// `s` without its last line break: the template puts one after it.
fn line(s: &str) -> Value {
    Value::from_safe_string(s.strip_suffix('\n').unwrap_or(s).to_owned())
}

fn context(c: &Campaign, extras: &dyn Extras) -> Context {
    let b = banner(c);
    let found = findings(c, extras);
    // Findings link tests as [tN](#tN); in HTML as anchors.
    let findings_html = found
        .iter()
        .map(|f| {
            let mut item = html_escape(f);
            for t in &c.tests {
                item = item.replace(
                    &format!("[{id}](#{id})", id = t.id),
                    &format!("<a href=\"#{id}\">{id}</a>", id = t.id),
                );
            }
            Value::from_safe_string(item)
        })
        .collect();
    // Each chart sits right after the table it illustrates; the others after the tables.
    let mut all: Vec<Option<(Option<&str>, String, String)>> = charts(c)
        .into_iter()
        .map(|(caption, svg)| Some((section(&caption), caption, svg)))
        .chain(
            done(c)
                .flat_map(|(t, r)| extras.charts(t, r))
                .map(|x| Some((x.section, x.caption, x.svg))),
        )
        .collect();
    let chart = |(_, caption, svg): (Option<&str>, String, String)| Chart {
        caption,
        svg: Value::from_safe_string(svg),
    };
    let sections = tables_with(c, extras)
        .into_iter()
        .map(|t| {
            let empty = t.rows.is_empty();
            let mut mine = Vec::new();
            if !empty {
                for slot in all.iter_mut() {
                    if slot.as_ref().and_then(|(section, _, _)| *section) == Some(t.name) {
                        mine.extend(slot.take().map(chart));
                    }
                }
            }
            Section {
                name: t.name,
                title: t.title,
                markdown: line(&t.markdown()),
                html: Value::from_safe_string(t.html()),
                intro: t.intro,
                empty,
                charts: mine,
            }
        })
        .collect();
    let tests = c
        .tests
        .iter()
        .map(|t| {
            let r = t.result.as_ref();
            Test {
                id: t.id.clone(),
                name: t.name.clone(),
                command: t.command.clone(),
                node: t.node.clone(),
                status: status(t.status),
                error: t.error.clone(),
                ran: r.is_some(),
                backend: r
                    .and_then(|r| r.backend.clone())
                    .unwrap_or_else(|| "-".into()),
                timestamps: r
                    .and_then(|r| r.timestamp_source.clone())
                    .unwrap_or_else(|| "-".into()),
                notes: r.map(|r| r.notes.clone()).unwrap_or_default(),
            }
        })
        .collect();
    Context {
        title: c.title.clone(),
        description: c.description.clone(),
        started_at: c.started_at.clone(),
        finished_at: c
            .finished_at
            .clone()
            .unwrap_or_else(|| "(unfinished)".into()),
        plan_file: c.plan_file.clone(),
        target: c.target.clone(),
        stopped: c.stopped.clone(),
        style: Value::from_safe_string(super::layout::STYLE.to_owned()),
        banner_md: line(&b.markdown(c.tests.len())),
        banner_html: line(&b.html(c.tests.len())),
        metadata: c
            .metadata
            .iter()
            .map(|(k, v)| Entry {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
        findings: found,
        findings_html,
        sections,
        other_charts: all.into_iter().flatten().map(chart).collect(),
        tests,
    }
}
