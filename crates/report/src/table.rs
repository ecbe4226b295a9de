//! A plain-text table with right-aligned numeric columns, as terminals and Markdown-less
//! logs want it.

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// Renders `rows` under `headers`; column widths fit the widest cell.
pub fn render(headers: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|(h, _)| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(widths.len()) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths[i];
            let pad = w.saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            match headers[i].1 {
                Align::Left => {
                    s.push_str(c);
                    if i + 1 < cells.len() {
                        s.push_str(&" ".repeat(pad));
                    }
                }
                Align::Right => {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(headers.iter().map(|(h, _)| *h).collect());
    out.push_str(&line(
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect(),
    ));
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn aligns_columns() {
        let t = render(
            &[("name", Align::Left), ("value", Align::Right)],
            &[
                vec!["a".into(), "1".into()],
                vec!["longer".into(), "12345".into()],
            ],
        );
        assert_eq!(
            t,
            "name    value\n------  -----\na           1\nlonger  12345\n"
        );
    }
}
