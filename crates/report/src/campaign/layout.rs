//! The campaign report laid out as Markdown, as one self-contained HTML file (inline style
//! and SVG, no scripts, nothing fetched), and as one CSV per table.

use std::fmt::Write as _;

use model::results::campaign::Campaign;

use super::banner::banner;
use super::charts::{charts, section};
use super::findings::findings;
use super::tables;
use crate::table::{html_escape, md_escape};
use crate::tables::campaign::status;

/// The report as Markdown.
pub fn markdown(c: &Campaign) -> String {
    let mut s = format!("# {}\n\n", c.title);
    if let Some(d) = &c.description {
        let _ = writeln!(s, "{d}\n");
    }
    let _ = writeln!(
        s,
        "Run of {} to {}, plan `{}`, target: {}.\n",
        c.started_at,
        c.finished_at.as_deref().unwrap_or("(unfinished)"),
        c.plan_file,
        c.target
    );
    s.push_str(&banner(c).markdown(c.tests.len()));
    if !c.metadata.is_empty() {
        s.push_str("| | |\n|---|---|\n");
        for (k, v) in &c.metadata {
            let _ = writeln!(s, "| {} | {} |", md_escape(k), md_escape(v));
        }
        s.push('\n');
    }
    if let Some(why) = &c.stopped {
        let _ = writeln!(
            s,
            "**The run stopped early: {why}.** Tests after it did not run.\n"
        );
    }
    s.push_str("## Summary of key findings\n\n");
    for f in findings(c) {
        let _ = writeln!(s, "- {f}");
    }
    s.push('\n');
    for t in tables(c) {
        let _ = writeln!(s, "## {}\n\n{}\n", t.title, t.intro);
        if t.rows.is_empty() {
            s.push_str("(none)\n\n");
        } else {
            s.push_str(&t.markdown());
            s.push('\n');
        }
    }
    s.push_str("## Test details\n\n");
    for t in &c.tests {
        let _ = writeln!(s, "<a id=\"{}\"></a>\n### {}: {}\n", t.id, t.id, t.name);
        let _ = writeln!(s, "- command: `{}` ({})", t.command, t.node);
        let error = t.error.as_deref().map(|e| format!(" ({})", md_escape(e)));
        let _ = writeln!(
            s,
            "- status: {}{}",
            status(t.status),
            error.unwrap_or_default()
        );
        if let Some(r) = &t.result {
            let _ = writeln!(
                s,
                "- backend: {}, timestamps: {}",
                r.backend.as_deref().unwrap_or("-"),
                r.timestamp_source.as_deref().unwrap_or("-")
            );
            for n in &r.notes {
                let _ = writeln!(s, "- note: {}", md_escape(n));
            }
        }
        let _ = writeln!(s, "- result: results.json, the test with id {}\n", t.id);
    }
    s
}

/// One CSV per table, as (file stem, text).
pub fn csv_tables(c: &Campaign) -> Vec<(String, String)> {
    tables(c)
        .into_iter()
        .map(|t| (t.name.to_owned(), t.csv()))
        .collect()
}

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 6px}th{background:#f3f3f3}\
td.r,th.r{text-align:right}td.l,th.l{text-align:left}.fail{color:#b00}\
figure{margin:1em 0}code{font-size:12px}\
.verdict{border:2px solid;border-radius:4px;padding:.2em 1em;margin:1em 0}\
.pass-box{border-color:#2a7;background:#effaf3}.fail-box{border-color:#b00;background:#fdf0f0}\
.incomplete-box{border-color:#c80;background:#fdf7ea}";

/// The report as one self-contained HTML file (inline style and SVG, no scripts, nothing
/// fetched).
pub fn html(c: &Campaign) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = html_escape(&c.title)
    );
    if let Some(d) = &c.description {
        let _ = writeln!(s, "<p>{}</p>", html_escape(d));
    }
    let _ = writeln!(
        s,
        "<p>Run of {} to {}, plan <code>{}</code>, target: {}.</p>",
        html_escape(&c.started_at),
        html_escape(c.finished_at.as_deref().unwrap_or("(unfinished)")),
        html_escape(&c.plan_file),
        html_escape(&c.target)
    );
    s.push_str(&banner(c).html(c.tests.len()));
    if !c.metadata.is_empty() {
        s.push_str("<table><tbody>");
        for (k, v) in &c.metadata {
            let _ = write!(
                s,
                "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
                html_escape(k),
                html_escape(v)
            );
        }
        s.push_str("</tbody></table>\n");
    }
    if let Some(why) = &c.stopped {
        let _ = writeln!(
            s,
            "<p class=\"fail\"><b>The run stopped early: {}.</b></p>",
            html_escape(why)
        );
    }
    s.push_str("<h2>Summary of key findings</h2>\n<ul>");
    for f in findings(c) {
        // Findings link tests as [tN](#tN).
        let mut item = html_escape(&f);
        for t in &c.tests {
            item = item.replace(
                &format!("[{id}](#{id})", id = t.id),
                &format!("<a href=\"#{id}\">{id}</a>", id = t.id),
            );
        }
        let _ = write!(s, "<li>{item}</li>");
    }
    s.push_str("</ul>\n");
    // Each chart sits right after the table it illustrates; the others after the tables.
    let mut charts: Vec<Option<(String, String)>> = charts(c).into_iter().map(Some).collect();
    let figure = |s: &mut String, (title, svg): (String, String)| {
        let _ = writeln!(
            s,
            "<figure>{svg}<figcaption>{}</figcaption></figure>",
            html_escape(&title)
        );
    };
    for t in tables(c) {
        let _ = writeln!(
            s,
            "<h2 id=\"{}\">{}</h2>\n<p>{}</p>",
            t.name,
            html_escape(t.title),
            html_escape(&t.intro)
        );
        if t.rows.is_empty() {
            s.push_str("<p>(none)</p>\n");
        } else {
            s.push_str(&t.html());
            s.push('\n');
            for slot in charts.iter_mut() {
                if slot.as_ref().and_then(|(title, _)| section(title)) == Some(t.name) {
                    if let Some(ch) = slot.take() {
                        figure(&mut s, ch);
                    }
                }
            }
        }
    }
    let rest: Vec<(String, String)> = charts.into_iter().flatten().collect();
    if !rest.is_empty() {
        s.push_str("<h2>Charts</h2>\n");
        for ch in rest {
            figure(&mut s, ch);
        }
    }
    s.push_str("<h2>Test details</h2>\n");
    for t in &c.tests {
        let _ = write!(
            s,
            "<h3 id=\"{id}\">{id}: {}</h3><p><code>{}</code> ({})<br>status: {}{}</p>",
            html_escape(&t.name),
            html_escape(&t.command),
            html_escape(&t.node),
            status(t.status),
            t.error
                .as_deref()
                .map(|e| format!(" ({})", html_escape(e)))
                .unwrap_or_default(),
            id = t.id,
        );
        if let Some(r) = &t.result {
            if !r.notes.is_empty() {
                s.push_str("<ul>");
                for n in &r.notes {
                    let _ = write!(s, "<li>{}</li>", html_escape(n));
                }
                s.push_str("</ul>");
            }
        }
        s.push('\n');
    }
    s.push_str("</body></html>\n");
    s
}
