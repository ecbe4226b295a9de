//! The one table model, and its four layouts: a terminal table (right-aligned numbers,
//! columns as wide as their widest cell), Markdown, HTML and CSV. Every table of every
//! output is a [`Table`] built once by its method's module (`crate::tables`); the layouts
//! only arrange it.
//!
//! In the report layouts a column named `source` holds test ids (`t3`), shown as links to
//! the test's entry; a cell `FAIL` (or `FAILED: ...`) is marked in HTML.

use std::fmt::Write as _;

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// One table: its name (CSV file stem and HTML anchor), title, a sentence under the title,
/// column headers with their alignment, and the cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// File stem of its CSV and anchor of its section.
    pub name: &'static str,
    /// Section title.
    pub title: &'static str,
    /// A sentence under the title (what and how it was measured).
    pub intro: String,
    /// Column headers.
    pub headers: Vec<(String, Align)>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
}

/// Column headers from one line: names separated by `|`, a trailing `>` right-aligns a
/// column (numbers): `"source|frame>|loss %>|note"`.
pub fn columns(spec: &str) -> Vec<(String, Align)> {
    spec.split('|')
        .map(|c| match c.strip_suffix('>') {
            Some(h) => (h.to_owned(), Align::Right),
            None => (c.to_owned(), Align::Left),
        })
        .collect()
}

impl Table {
    /// A table without title (a terminal table) with these columns (see [`columns`]).
    pub fn plain(spec: &str, rows: Vec<Vec<String>>) -> Self {
        Self {
            name: "",
            title: "",
            intro: String::new(),
            headers: columns(spec),
            rows,
        }
    }

    /// The terminal layout: a header line, a rule, then the rows; right-aligned columns are
    /// padded on the left, trailing spaces cut.
    pub fn text(&self) -> String {
        let mut widths: Vec<usize> = self
            .headers
            .iter()
            .map(|(h, _)| h.chars().count())
            .collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(widths.len()) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let line = |cells: Vec<&str>| -> String {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = " ".repeat(widths[i].saturating_sub(c.chars().count()));
                if i > 0 {
                    s.push_str("  ");
                }
                match self.headers[i].1 {
                    Align::Left if i + 1 < cells.len() => {
                        s.push_str(c);
                        s.push_str(&pad);
                    }
                    Align::Left => s.push_str(c),
                    Align::Right => {
                        s.push_str(&pad);
                        s.push_str(c);
                    }
                }
            }
            s.trim_end().to_owned() + "\n"
        };
        let mut out = line(self.headers.iter().map(|(h, _)| h.as_str()).collect());
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&line(rule.iter().map(String::as_str).collect()));
        for r in &self.rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        out
    }

    fn is_source(&self, column: usize, cell: &str) -> bool {
        self.headers.get(column).is_some_and(|h| h.0 == "source") && cell.starts_with('t')
    }

    /// The Markdown layout: a pipe table; test ids link to their entry.
    pub fn markdown(&self) -> String {
        let mut s = String::from("|");
        for (h, _) in &self.headers {
            let _ = write!(s, " {h} |");
        }
        s.push_str("\n|");
        for (_, a) in &self.headers {
            s.push_str(match a {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        s.push('\n');
        for row in &self.rows {
            s.push('|');
            for (i, cell) in row.iter().enumerate() {
                if self.is_source(i, cell) {
                    // One test, or several that share the row (`t1, t2`).
                    let links: Vec<String> = cell
                        .split(", ")
                        .map(|id| format!("[{id}](#{id})"))
                        .collect();
                    let _ = write!(s, " {} |", links.join(", "));
                } else {
                    let _ = write!(s, " {} |", md_escape(cell));
                }
            }
            s.push('\n');
        }
        s
    }

    /// The HTML layout: one `<table>`; test ids link to their entry, failures are marked.
    pub fn html(&self) -> String {
        let class = |a: Align| if a == Align::Right { "r" } else { "l" };
        let mut s = String::from("<table><thead><tr>");
        for (h, a) in &self.headers {
            let _ = write!(s, "<th class=\"{}\">{}</th>", class(*a), html_escape(h));
        }
        s.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            s.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let a = self.headers.get(i).map_or(Align::Left, |h| h.1);
                let body = if self.is_source(i, cell) {
                    let links: Vec<String> = cell
                        .split(", ")
                        .map(|id| format!("<a href=\"#{c}\">{c}</a>", c = html_escape(id)))
                        .collect();
                    links.join(", ")
                } else if cell == "FAIL" || cell.starts_with("FAILED") {
                    format!("<b class=\"fail\">{}</b>", html_escape(cell))
                } else {
                    html_escape(cell.trim_matches('`'))
                };
                let _ = write!(s, "<td class=\"{}\">{body}</td>", class(a));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        s
    }

    /// The CSV layout: a header line, then the rows; fields quoted where needed.
    pub fn csv(&self) -> String {
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            cells.map(csv_cell).collect::<Vec<_>>().join(",") + "\n"
        };
        let mut s = line(&mut self.headers.iter().map(|(h, _)| h.as_str()));
        for row in &self.rows {
            s.push_str(&line(&mut row.iter().map(|c| c.trim_matches('`'))));
        }
        s
    }
}

/// `|` and line breaks would break a Markdown table cell.
pub fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The five characters HTML gives a meaning.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A value or `-` when it was not measured.
pub fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// Bits/s as Mbit/s with two decimals, for a column whose header names the unit.
pub fn mbps(v: f64) -> String {
    format!("{:.2}", v / 1e6)
}

#[cfg(test)]
mod test {
    use super::*;

    fn two() -> Table {
        Table {
            name: "t",
            title: "T",
            intro: String::new(),
            headers: columns("source|name|value>"),
            rows: vec![
                vec!["t1".into(), "a|b".into(), "1".into()],
                vec!["plan".into(), "longer, \"quoted\"".into(), "12345".into()],
            ],
        }
    }

    #[test]
    fn the_four_layouts_of_one_table() {
        let t = Table::plain(
            "name|value>",
            vec![
                vec!["a".into(), "1".into()],
                vec!["longer".into(), "12345".into()],
            ],
        );
        assert_eq!(
            t.text(),
            "name    value\n------  -----\na           1\nlonger  12345\n"
        );
        let t = two();
        assert_eq!(
            t.markdown(),
            "| source | name | value |\n|---|---|---:|\n| [t1](#t1) | a\\|b | 1 |\n| plan | longer, \"quoted\" | 12345 |\n"
        );
        assert!(t
            .html()
            .contains("<td class=\"l\"><a href=\"#t1\">t1</a></td>"));
        assert!(t.html().contains("<th class=\"r\">value</th>"));
        assert_eq!(
            t.csv(),
            "source,name,value\nt1,a|b,1\nplan,\"longer, \"\"quoted\"\"\",12345\n"
        );
    }
}
