//! Small, dependency-free SVG charts for the HTML report: line charts (one or more series
//! of points), grouped bar charts and a heat map. Deterministic bytes for given data
//! (fixed number formatting, no random ids), so snapshot tests can pin them.

use std::fmt::Write as _;

const W: f64 = 640.0;
const H: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" upper bound and step for an axis from 0 to `max`.
fn nice(max: f64) -> (f64, f64) {
    if !(max.is_finite() && max > 0.0 && max < 1e300) {
        return (1.0, 0.25);
    }
    let raw = max / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let top = (max / step).ceil() * step;
    if top.is_finite() && step > 0.0 {
        (top, step)
    } else {
        (1.0, 0.25)
    }
}

/// The tick values 0, step, ... up to `max` (at most 20, whatever the data).
fn ticks(max: f64, step: f64) -> impl Iterator<Item = f64> {
    let n = (max / step).round().clamp(0.0, 20.0) as usize;
    (0..=n).map(move |k| k as f64 * step)
}

/// How a chart's y axis maps values: evenly, or by decades (latency, whose maximum would
/// otherwise flatten its median and p99 to the floor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// From 0, evenly.
    Linear,
    /// Decades from the one below the smallest positive value to the one above the largest.
    Log,
}

/// A y axis over some values.
struct YAxis {
    scale: Scale,
    /// Linear: the top and the step; log: the lowest and highest decade.
    lo: f64,
    hi: f64,
    step: f64,
}

impl YAxis {
    fn new(scale: Scale, values: impl Iterator<Item = f64>) -> Self {
        let values: Vec<f64> = values.filter(|v| v.is_finite()).collect();
        let max = values.iter().copied().fold(0f64, f64::max);
        match scale {
            Scale::Linear => {
                let (hi, step) = nice(max);
                Self {
                    scale,
                    lo: 0.0,
                    hi,
                    step,
                }
            }
            Scale::Log => {
                let min = values
                    .iter()
                    .copied()
                    .filter(|v| *v > 0.0)
                    .fold(f64::INFINITY, f64::min);
                if !min.is_finite() || max <= 0.0 {
                    return Self::new(Scale::Linear, values.into_iter());
                }
                let lo = 10f64.powf(min.log10().floor());
                let mut hi = 10f64.powf(max.log10().ceil());
                if hi <= lo {
                    hi = lo * 10.0;
                }
                Self {
                    scale,
                    lo,
                    hi,
                    step: 0.0,
                }
            }
        }
    }

    /// Where `v` sits, from 0 (bottom) to 1 (top).
    fn frac(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v / self.hi,
            Scale::Log => {
                let v = v.max(self.lo);
                (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
            }
        }
    }

    /// Its grid values: every step, or every decade (with 2 and 5 between them when there
    /// are at most two decades).
    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => ticks(self.hi, self.step).collect(),
            Scale::Log => {
                let decades = (self.hi.log10() - self.lo.log10()).round() as i32;
                let mut out = Vec::new();
                for k in 0..=decades.clamp(0, 20) {
                    let d = self.lo * 10f64.powi(k);
                    out.push(d);
                    if decades <= 2 && k < decades {
                        out.extend([2.0 * d, 5.0 * d]);
                    }
                }
                out
            }
        }
    }
}

/// Dash patterns of a chart's series, so that lines that lie on each other are still told
/// apart (the first solid).
const DASHES: [&str; 4] = ["", "7 3", "2 3", "10 3 2 3"];

fn dash(i: usize) -> String {
    match DASHES[i % DASHES.len()] {
        "" => String::new(),
        d => format!(" stroke-dasharray=\"{d}\""),
    }
}

fn label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        // 0.5, not 0.500.
        let t = format!("{v:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn frame(title: &str, x_label: &str, y_label: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{t}\">\
<rect width=\"{W}\" height=\"{H}\" fill=\"#fff\"/>\
<text x=\"{cx}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-family=\"sans-serif\">{t}</text>\
<text x=\"{cx}\" y=\"{xl}\" text-anchor=\"middle\" font-size=\"12\" font-family=\"sans-serif\">{x}</text>\
<text transform=\"translate(14 {cy}) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\" font-family=\"sans-serif\">{y}</text>",
        t = esc(title),
        cx = LEFT + (W - LEFT - RIGHT) / 2.0,
        cy = TOP + (H - TOP - BOTTOM) / 2.0,
        xl = H - 8.0,
        x = esc(x_label),
        y = esc(y_label),
    );
    s
}

/// Horizontal grid lines with their values, for a plot `height` tall from `top`.
fn y_grid(s: &mut String, top: f64, height: f64, axis: &YAxis) {
    for v in axis.ticks() {
        let y = top + height - axis.frac(v) * height;
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{x2}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
<text x=\"{lx}\" y=\"{ty:.1}\" text-anchor=\"end\" font-size=\"10\" font-family=\"sans-serif\">{l}</text>",
            x2 = W - RIGHT,
            lx = LEFT - 4.0,
            ty = y + 3.0,
            l = label(v),
        );
    }
}

/// The width a text of `chars` characters takes at `size` px (0.6 em per character, which
/// sans-serif letters and digits stay within).
fn text_width(chars: usize, size: f64) -> f64 {
    chars as f64 * size * 0.6
}

/// `text` in lines of at most `width` px at `size` px, broken between words, at most `max`
/// lines (the last one ends in `…` when words are left over).
fn wrap(text: &str, width: f64, size: f64, max: usize) -> Vec<String> {
    let fits = |line: &str| text_width(line.chars().count(), size) <= width;
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if fits(&format!("{l} {word}")) => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    if lines.len() > max {
        lines.truncate(max);
        if let Some(l) = lines.last_mut() {
            l.push('…');
        }
    }
    lines
}

/// Where each legend entry goes: left to right, each as wide as its sample and name, onto
/// the next row when the picture's width is used up; rows from just under the title.
fn legend_places(names: &[&str]) -> Vec<(f64, f64)> {
    let (mut x, mut y) = (LEFT + 10.0, TOP + 8.0);
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        let w = 22.0 + text_width(n.chars().count(), 10.0) + 16.0;
        if x > LEFT + 10.0 && x + w > W - RIGHT {
            x = LEFT + 10.0;
            y += 14.0;
        }
        out.push((x, y));
        x += w;
    }
    out
}

/// The top of a plot under the legend of `names`: the legend has a band of its own, so it
/// hides no data.
fn top_under(names: &[&str]) -> f64 {
    legend_places(names).last().map_or(TOP, |&(_, y)| y + 10.0)
}

/// Legend entries (a square of the series' colour and its name), see [`legend_places`].
fn legend(s: &mut String, names: &[&str]) {
    for (i, (n, (x, y))) in names.iter().zip(legend_places(names)).enumerate() {
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{ry:.1}\" width=\"10\" height=\"10\" fill=\"{c}\"/>\
<text x=\"{tx:.1}\" y=\"{ty:.1}\" font-size=\"10\" font-family=\"sans-serif\">{n}</text>",
            ry = y - 8.0,
            c = COLOURS[i % COLOURS.len()],
            tx = x + 14.0,
            ty = y + 1.0,
            n = esc(n),
        );
    }
}

/// A line chart's legend: a stretch of each series' line (its colour and dash) and its
/// name, see [`legend_places`].
fn line_legend(s: &mut String, names: &[&str]) {
    for (i, (n, (x, y))) in names.iter().zip(legend_places(names)).enumerate() {
        line_entry(s, (x, y), COLOURS[i % COLOURS.len()], i, n);
    }
}

/// One legend entry of series `i`: a stretch of its line (`colour`, its dash) and its
/// name, the text's baseline at `y`.
fn line_entry(s: &mut String, (x, y): (f64, f64), colour: &str, i: usize, name: &str) {
    let _ = write!(
        s,
        "<line x1=\"{x:.1}\" y1=\"{ly:.1}\" x2=\"{x2:.1}\" y2=\"{ly:.1}\" stroke=\"{colour}\" stroke-width=\"2\"{d}/>\
<text x=\"{tx:.1}\" y=\"{ty:.1}\" font-size=\"10\" font-family=\"sans-serif\">{n}</text>",
        ly = y - 3.0,
        x2 = x + 18.0,
        d = dash(i),
        tx = x + 22.0,
        ty = y + 1.0,
        n = esc(name),
    );
}

/// How one series of a line chart is drawn: its line, and a dot per point that tells its
/// value on hover (SVG `<title>`, no script).
struct Line<'a> {
    name: &'a str,
    colour: &'a str,
    /// Its dash pattern attribute ([`dash`]).
    dash: String,
    width: f64,
    radius: f64,
    x_label: &'a str,
    y_label: &'a str,
}

impl Line<'_> {
    fn draw(
        &self,
        s: &mut String,
        pts: &[(f64, f64)],
        px: &dyn Fn(f64) -> f64,
        py: &dyn Fn(f64) -> f64,
    ) {
        let c = self.colour;
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"{}\"{} points=\"{}\"/>",
            self.width,
            self.dash,
            path.join(" ")
        );
        for &(x, y) in pts {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{}\" fill=\"{c}\"><title>{}: {} {}, {} {}</title></circle>",
                px(x),
                py(y),
                self.radius,
                esc(self.name),
                esc(self.x_label),
                label(x),
                esc(self.y_label),
                label(y)
            );
        }
    }
}

/// A line chart of `series` (name, points (x, y)); the x axis starts at 0, the y axis at 0
/// or by decades (`scale`). Points are marked, so a series of one point still shows; each
/// series has its own dash, so lines that lie on each other are told apart.
pub fn lines(
    title: &str,
    x_label: &str,
    (y_label, scale): (&str, Scale),
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let xmax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .fold(0f64, f64::max);
    let axis = YAxis::new(
        scale,
        series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)),
    );
    let (x_max, x_step) = nice(xmax);
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    let top = top_under(&names);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - top - BOTTOM;
    let px = |x: f64| LEFT + x / x_max * plot_w;
    let py = |y: f64| top + plot_h - axis.frac(y) * plot_h;
    let mut s = frame(title, x_label, y_label);
    y_grid(&mut s, top, plot_h, &axis);
    for v in ticks(x_max, x_step) {
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" font-size=\"10\" font-family=\"sans-serif\">{l}</text>",
            x = px(v),
            y = H - BOTTOM + 14.0,
            l = label(v),
        );
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let line = Line {
            name,
            colour: c,
            dash: dash(i),
            width: 2.0,
            radius: 3.0,
            x_label,
            y_label,
        };
        line.draw(&mut s, pts, &px, &py);
    }
    line_legend(&mut s, &names);
    s.push_str("</svg>");
    s
}

/// One panel of [`panels`]: its y axis label, its scale and series (name, points (x, y)).
pub type Panel<'a> = (&'a str, Scale, Vec<(String, Vec<(f64, f64)>)>);

/// Line charts stacked on one x axis (flent's style: throughput above, latency below), each
/// panel with its own y axis (from 0, or by decades); every point shows its value on hover.
pub fn panels(title: &str, x_label: &str, panels: &[Panel<'_>]) -> String {
    const PANEL_H: f64 = 170.0;
    const GAP: f64 = 34.0;
    let n = panels.len().max(1) as f64;
    let height = TOP + n * PANEL_H + (n - 1.0) * GAP + BOTTOM;
    let xmax = panels
        .iter()
        .flat_map(|(_, _, ss)| ss.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)))
        .fold(0f64, f64::max);
    let (x_max, x_step) = nice(xmax);
    let plot_w = W - LEFT - RIGHT;
    let px = |x: f64| LEFT + x / x_max * plot_w;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {height}\" width=\"{W}\" height=\"{height}\" role=\"img\" aria-label=\"{t}\">\
<rect width=\"{W}\" height=\"{height}\" fill=\"#fff\"/>\
<text x=\"{cx}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-family=\"sans-serif\">{t}</text>\
<text x=\"{cx}\" y=\"{xl}\" text-anchor=\"middle\" font-size=\"12\" font-family=\"sans-serif\">{x}</text>",
        t = esc(title),
        cx = LEFT + plot_w / 2.0,
        xl = height - 8.0,
        x = esc(x_label),
    );
    let mut colour = 0;
    for (k, (y_label, scale, series)) in panels.iter().enumerate() {
        let top = TOP + k as f64 * (PANEL_H + GAP);
        let axis = YAxis::new(
            *scale,
            series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)),
        );
        // The panel's legend has a band of its own at its top: it hides no data.
        let band = 14.0 * series.len() as f64;
        let (ptop, ph) = (top + band, PANEL_H - band);
        let py = |y: f64| ptop + ph - axis.frac(y) * ph;
        y_grid(&mut s, ptop, ph, &axis);
        let _ = write!(
            s,
            "<text transform=\"translate(14 {cy:.1}) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\" font-family=\"sans-serif\">{y}</text>",
            cy = top + PANEL_H / 2.0,
            y = esc(y_label),
        );
        for v in ticks(x_max, x_step) {
            let _ = write!(
                s,
                "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" font-size=\"10\" font-family=\"sans-serif\">{l}</text>",
                x = px(v),
                y = top + PANEL_H + 14.0,
                l = label(v),
            );
        }
        // The legend of this panel, at its top right, one entry per line.
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = COLOURS[(colour + i) % COLOURS.len()];
            let line = Line {
                name,
                colour: c,
                dash: dash(i),
                width: 1.5,
                radius: 2.0,
                x_label,
                y_label,
            };
            line.draw(&mut s, pts, &px, &py);
            let w = 22.0 + text_width(name.chars().count(), 10.0);
            let at = (W - RIGHT - w - 4.0, top + 10.0 + i as f64 * 14.0);
            line_entry(&mut s, at, c, i, name);
        }
        colour += series.len();
    }
    s.push_str("</svg>");
    s
}

/// Where percentile `p` (0..=100) sits on a percentile plot's x axis: the number of nines,
/// log10(1 / (1 − p/100)), so 90 %, 99 %, 99.9 % and 99.99 % are evenly spaced; 100 % (the
/// maximum) sits at [`PERCENTILE_NINES`].
pub fn percentile_x(p: f64) -> f64 {
    let rest = 1.0 - p / 100.0;
    if rest <= 10f64.powf(-PERCENTILE_NINES) {
        PERCENTILE_NINES
    } else {
        (1.0 / rest).log10()
    }
}

/// The nines a percentile plot shows: up to 99.999 %.
pub const PERCENTILE_NINES: f64 = 5.0;

/// An HDR-style percentile plot: one line per series (name, points (percentile 0..=100,
/// value)), the x axis in nines (0 %, 90 %, 99 %, ... 99.999 %) so the tail gets the room
/// the bulk gets, the y axis by decades so the maximum does not flatten the median. Every
/// point tells its percentile and value on hover
/// (SVG `<title>`).
pub fn percentiles(
    title: &str,
    y_label: &str,
    unit: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let axis = YAxis::new(
        Scale::Log,
        series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)),
    );
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    let top = top_under(&names);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - top - BOTTOM;
    let px = |p: f64| LEFT + percentile_x(p) / PERCENTILE_NINES * plot_w;
    let py = |y: f64| top + plot_h - axis.frac(y) * plot_h;
    let mut s = frame(title, "percentile", y_label);
    y_grid(&mut s, top, plot_h, &axis);
    for (nines, l) in ["0 %", "90 %", "99 %", "99.9 %", "99.99 %", "99.999 %"]
        .iter()
        .enumerate()
    {
        let x = LEFT + nines as f64 / PERCENTILE_NINES * plot_w;
        // The last label ends at its tick, inside the picture.
        let anchor = if nines == 5 { "end" } else { "middle" };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{yb}\" stroke=\"#eee\"/>\
<text x=\"{x:.1}\" y=\"{ty:.1}\" text-anchor=\"{anchor}\" font-size=\"10\" font-family=\"sans-serif\">{l}</text>",
            yb = top + plot_h,
            ty = H - BOTTOM + 14.0,
        );
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|&(p, y)| format!("{:.1},{:.1}", px(p), py(y)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{} points=\"{}\"/>",
            dash(i),
            path.join(" ")
        );
        for &(p, y) in pts {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{c}\"><title>{}: p{} {} {}</title></circle>",
                px(p),
                py(y),
                esc(name),
                label_percent(p),
                label(y),
                esc(unit)
            );
        }
    }
    line_legend(&mut s, &names);
    s.push_str("</svg>");
    s
}

/// A percentile as people write it: `50`, `99.9`, `99.999`.
fn label_percent(p: f64) -> String {
    let s = format!("{p:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A line chart over categories (block sizes, frame sizes) spaced evenly along x: one line
/// per series (name, a value per category); `None` is not measured, and the line joins the
/// values on either side of it. The y axis starts at 0, or goes by decades (`scale`).
pub fn category_lines(
    title: &str,
    (x_label, y_label): (&str, &str),
    scale: Scale,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let axis = YAxis::new(
        scale,
        series.iter().flat_map(|(_, v)| v.iter().flatten().copied()),
    );
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    let top = top_under(&names);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - top - BOTTOM;
    let slot = plot_w / categories.len().max(1) as f64;
    let px = |i: usize| LEFT + slot * (i as f64 + 0.5);
    let py = |y: f64| top + plot_h - axis.frac(y) * plot_h;
    let mut s = frame(title, x_label, y_label);
    y_grid(&mut s, top, plot_h, &axis);
    for (i, cat) in categories.iter().enumerate() {
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" font-size=\"10\" font-family=\"sans-serif\">{c}</text>",
            x = px(i),
            y = H - BOTTOM + 14.0,
            c = esc(cat),
        );
    }
    for (n, (_, vals)) in series.iter().enumerate() {
        let c = COLOURS[n % COLOURS.len()];
        let pts: Vec<(f64, f64)> = vals
            .iter()
            .take(categories.len())
            .enumerate()
            .filter_map(|(i, v)| Some((px(i), py((*v)?))))
            .collect();
        let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{} points=\"{}\"/>",
            dash(n),
            path.join(" ")
        );
        for (x, y) in pts {
            let _ = write!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{c}\"/>"
            );
        }
    }
    line_legend(&mut s, &names);
    s.push_str("</svg>");
    s
}

/// A grouped bar chart: one group per category, one bar per series; `None` draws no bar
/// (not measured).
pub fn bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let plain: Vec<(String, Vec<Option<Bar>>)> = series
        .iter()
        .map(|(n, v)| {
            let bars = v.iter().map(|x| {
                x.map(|value| Bar {
                    value,
                    interval: None,
                })
            });
            (n.clone(), bars.collect())
        })
        .collect();
    bars_with(title, y_label, categories, &plain)
}

/// A bar of [`bars_with`]: its value and, for a repeated figure, the interval drawn as a
/// whisker over it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// The bar's height (a median, for a repeated figure).
    pub value: f64,
    /// `[low, high]`: a whisker from low to high (clipped to the axis' 0).
    pub interval: Option<[f64; 2]>,
}

/// A grouped bar chart whose bars may carry an interval, drawn as a whisker with caps
/// (its value and interval on hover); `None` draws no bar (not measured).
pub fn bars_with(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<Bar>>)],
) -> String {
    let axis = YAxis::new(
        Scale::Linear,
        series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten())
            .map(|b| b.interval.map_or(b.value, |[_, hi]| hi.max(b.value))),
    );
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    let top = top_under(&names);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - top - BOTTOM;
    let mut s = frame(title, "", y_label);
    y_grid(&mut s, top, plot_h, &axis);
    let group = plot_w / categories.len().max(1) as f64;
    let bar = (group * 0.8) / series.len().max(1) as f64;
    for (g, cat) in categories.iter().enumerate() {
        let gx = LEFT + group * g as f64 + group * 0.1;
        // A label wider than its group goes on up to three lines under it.
        for (k, line) in wrap(cat, group * 0.95, 10.0, 3).iter().enumerate() {
            let _ = write!(
                s,
                "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" font-size=\"10\" font-family=\"sans-serif\">{c}</text>",
                x = gx + group * 0.4,
                y = H - BOTTOM + 14.0 + 12.0 * k as f64,
                c = esc(line),
            );
        }
        for (i, (_, vals)) in series.iter().enumerate() {
            let Some(b) = vals.get(g).copied().flatten() else {
                continue;
            };
            let v = b.value.max(0.0);
            let h = axis.frac(v) * plot_h;
            let x = gx + bar * i as f64;
            let t = match b.interval {
                Some([lo, hi]) => format!("{} [{}, {}]", label(b.value), label(lo), label(hi)),
                None => label(b.value),
            };
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{c}\"><title>{t}</title></rect>",
                y = top + plot_h - h,
                w = bar * 0.95,
                c = COLOURS[i % COLOURS.len()],
                t = esc(&t),
            );
            if let Some([lo, hi]) = b.interval {
                let py = |v: f64| top + plot_h - axis.frac(v.clamp(0.0, axis.hi)) * plot_h;
                let cx = x + bar * 0.475;
                let cap = (bar * 0.2).min(8.0);
                let _ = write!(
                    s,
                    "<path d=\"M{cx:.1} {y1:.1}V{y2:.1}M{l:.1} {y1:.1}H{r:.1}M{l:.1} {y2:.1}H{r:.1}\" stroke=\"#000\" stroke-width=\"1.5\" fill=\"none\"><title>{t}</title></path>",
                    y1 = py(lo),
                    y2 = py(hi),
                    l = cx - cap,
                    r = cx + cap,
                    t = esc(&t),
                );
            }
        }
    }
    legend(&mut s, &names);
    s.push_str("</svg>");
    s
}

/// A repeated figure run by run: each run's value as a dot (in the order run), the
/// median as a line and its confidence interval as a shaded band, labelled `interval`
/// (e.g. `94 % interval`). The y axis starts at 0.
pub fn runs(
    title: &str,
    y_label: &str,
    samples: &[f64],
    median: f64,
    ci: [f64; 2],
    interval: &str,
) -> String {
    let axis = YAxis::new(
        Scale::Linear,
        samples.iter().copied().chain([median, ci[1]]),
    );
    let names = ["median", interval, "each run"];
    let top = top_under(&names);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - top - BOTTOM;
    let n = samples.len().max(1) as f64;
    let px = |i: usize| LEFT + (i as f64 + 0.5) / n * plot_w;
    // A value that is not a number sits on the axis (a spread never holds one).
    let py = |v: f64| {
        let v = if v.is_finite() { v } else { 0.0 };
        top + plot_h - axis.frac(v.clamp(0.0, axis.hi)) * plot_h
    };
    let mut s = frame(title, "run", y_label);
    y_grid(&mut s, top, plot_h, &axis);
    let _ = write!(
        s,
        "<rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{plot_w:.1}\" height=\"{h:.1}\" fill=\"{c}\" fill-opacity=\"0.18\"><title>{t}</title></rect>\
<line x1=\"{LEFT}\" y1=\"{m:.1}\" x2=\"{x2:.1}\" y2=\"{m:.1}\" stroke=\"{c}\" stroke-width=\"2\"><title>median {ml}</title></line>",
        y = py(ci[1]),
        h = (py(ci[0]) - py(ci[1])).max(0.5),
        c = COLOURS[0],
        t = esc(&format!("{interval}: [{}, {}]", label(ci[0]), label(ci[1]))),
        m = py(median),
        x2 = W - RIGHT,
        ml = label(median),
    );
    for (i, v) in samples.iter().enumerate() {
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" font-size=\"10\" font-family=\"sans-serif\">{k}</text>\
<circle cx=\"{x:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"{c}\"><title>run {k}: {l}</title></circle>",
            x = px(i),
            y = H - BOTTOM + 14.0,
            k = i + 1,
            cy = py(*v),
            c = COLOURS[1],
            l = label(*v),
        );
    }
    let styles = [(COLOURS[0], 1.0), (COLOURS[0], 0.18), (COLOURS[1], 1.0)];
    for ((name, (colour, opacity)), (x, y)) in names.iter().zip(styles).zip(legend_places(&names)) {
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{ry:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\" fill-opacity=\"{opacity}\"/>\
<text x=\"{tx:.1}\" y=\"{ty:.1}\" font-size=\"10\" font-family=\"sans-serif\">{n}</text>",
            ry = y - 8.0,
            tx = x + 14.0,
            ty = y + 1.0,
            n = esc(name),
        );
    }
    s.push_str("</svg>");
    s
}

/// A cell of a heat map.
#[derive(Debug, Clone, PartialEq)]
pub enum Heat {
    /// A value, labelled `text`, `off` from the best (0 = best, green; 1 and beyond = red).
    Value {
        /// Its label.
        text: String,
        /// How far from the best, 0..=1.
        off: f64,
    },
    /// Measured nothing: it failed.
    Failed,
    /// Nothing to measure (`-`).
    Empty,
}

/// A heat map of `values[row][col]` (percent, 0..=100+), cells labelled with their value:
/// green at 100 %, red 20 points off.
pub fn heatmap(
    title: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
) -> String {
    let cells: Vec<Vec<Heat>> = values
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| match v {
                    Some(p) => Heat::Value {
                        text: format!("{p:.1} %"),
                        off: (p - 100.0).abs() / 20.0,
                    },
                    None => Heat::Empty,
                })
                .collect()
        })
        .collect();
    heatmap_of(title, rows, cols, &cells)
}

/// A heat map of `cells[row][col]`.
pub fn heatmap_of(title: &str, rows: &[String], cols: &[String], cells: &[Vec<Heat>]) -> String {
    let mut s = frame(title, "", "");
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let cw = plot_w / cols.len().max(1) as f64;
    let rh = plot_h / rows.len().max(1) as f64;
    for (c, name) in cols.iter().enumerate() {
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" font-size=\"10\" font-family=\"sans-serif\">{n}</text>",
            x = LEFT + cw * (c as f64 + 0.5),
            y = H - BOTTOM + 14.0,
            n = esc(name),
        );
    }
    for (r, name) in rows.iter().enumerate() {
        let y = TOP + rh * r as f64;
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{ty:.1}\" text-anchor=\"end\" font-size=\"10\" font-family=\"sans-serif\">{n}</text>",
            x = LEFT - 4.0,
            ty = y + rh / 2.0 + 3.0,
            n = esc(name),
        );
        for c in 0..cols.len() {
            let (fill, text) = match cells.get(r).and_then(|row| row.get(c)) {
                // Green at the best, towards red the further off.
                Some(Heat::Value { text, off }) => {
                    let off = off.clamp(0.0, 1.0);
                    let red = (80.0 + 175.0 * off) as u8;
                    let green = (200.0 - 120.0 * off) as u8;
                    (format!("rgb({red},{green},90)"), esc(text))
                }
                Some(Heat::Failed) => ("#d46a6a".to_owned(), "failed".to_owned()),
                Some(Heat::Empty) | None => ("#eee".to_owned(), "-".to_owned()),
            };
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\" stroke=\"#fff\"/>\
<text x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\" font-size=\"11\" font-family=\"sans-serif\">{text}</text>",
                x = LEFT + cw * c as f64,
                w = cw,
                h = rh,
                tx = LEFT + cw * (c as f64 + 0.5),
                ty = y + rh / 2.0 + 4.0,
            );
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn percentile_plot_spaces_the_nines_evenly_and_titles_every_point() {
        assert_eq!(percentile_x(0.0), 0.0);
        assert!((percentile_x(90.0) - 1.0).abs() < 1e-9);
        assert!((percentile_x(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(percentile_x(100.0), PERCENTILE_NINES);
        let pts = vec![(50.0, 10.0), (99.0, 20.0), (100.0, 30.0)];
        let svg = percentiles("t", "us", "us", &[("64 B".into(), pts)]);
        for l in ["90 %", "99.99 %", "99.999 %"] {
            assert!(svg.contains(&format!(">{l}</text>")), "{l}");
        }
        assert!(svg.contains("<title>64 B: p99 20 us</title>"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3);
    }

    #[test]
    fn absurd_values_still_draw_a_bounded_chart() {
        for v in [f64::MAX, f64::INFINITY, f64::NAN, 1e305, -5.0] {
            let s = lines(
                "x",
                "x",
                ("y", Scale::Linear),
                &[("s".into(), vec![(v, v)])],
            );
            assert!(s.len() < 20_000, "{v}: {} bytes", s.len());
            let b = bars("b", "y", &["c".into()], &[("s".into(), vec![Some(v)])]);
            assert!(b.len() < 20_000);
        }
    }

    #[test]
    fn a_repeated_figure_draws_each_run_its_median_and_the_interval() {
        let s = runs(
            "t",
            "Mbit/s",
            &[900.0, 940.0, 910.0],
            910.0,
            [900.0, 940.0],
            "75 % interval",
        );
        assert_eq!(s.matches("<circle").count(), 3);
        assert!(s.contains("<title>run 2: 940</title>"), "{s}");
        assert!(
            s.contains("<title>75 % interval: [900, 940]</title>"),
            "{s}"
        );
        assert!(s.contains("<title>median 910</title>"), "{s}");
        // The band spans 900..940 on an axis to 1000: 4 % of the plot's height (the
        // plot under the legend's row).
        let plot_h = H - top_under(&["median", "75 % interval", "each run"]) - BOTTOM;
        assert!(
            s.contains(&format!("height=\"{:.1}\"", plot_h * 0.04)),
            "{s}"
        );
        let odd = runs(
            "t",
            "u",
            &[f64::NAN, f64::MAX],
            f64::INFINITY,
            [-1.0, 1e305],
            "i",
        );
        assert!(!odd.contains("=\"NaN") && !odd.contains("=\"inf") && odd.len() < 20_000);
    }

    #[test]
    fn a_bar_with_an_interval_carries_a_whisker_titled_with_it() {
        let cats = ["TCP".to_owned(), "UDP".to_owned()];
        let s = bars_with(
            "t",
            "%",
            &cats,
            &[(
                "overhead".into(),
                vec![
                    Some(Bar {
                        value: 39.5,
                        interval: Some([36.2, 42.6]),
                    }),
                    Some(Bar {
                        value: 10.0,
                        interval: None,
                    }),
                ],
            )],
        );
        assert_eq!(s.matches("<path").count(), 1, "one whisker: {s}");
        assert!(s.contains("<title>39.5 [36.2, 42.6]</title></path>"), "{s}");
        assert_eq!(
            bars("t", "%", &cats, &[("o".into(), vec![Some(1.0), None])])
                .matches("<path")
                .count(),
            0
        );
    }

    #[test]
    fn a_log_axis_goes_by_decades_and_keeps_the_median_off_the_floor() {
        // p50 12 us, max 4,000 us: on a linear axis the median sits at 0.3 % of the height.
        let axis = YAxis::new(Scale::Log, [12.0, 35.0, 4_000.0].into_iter());
        assert_eq!((axis.lo, axis.hi), (10.0, 10_000.0));
        assert_eq!(axis.ticks(), [10.0, 100.0, 1_000.0, 10_000.0]);
        assert!(axis.frac(12.0) > 0.02 && axis.frac(4_000.0) < 1.0);
        assert!((axis.frac(100.0) - 1.0 / 3.0).abs() < 1e-9);
        // Within two decades the grid has 2 and 5 between them.
        let near = YAxis::new(Scale::Log, [3.0, 40.0].into_iter());
        assert_eq!(near.ticks(), [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        // Nothing positive: a linear axis instead.
        assert_eq!(
            YAxis::new(Scale::Log, [0.0].into_iter()).scale,
            Scale::Linear
        );
        let svg = percentiles(
            "p",
            "latency, us",
            "us",
            &[("a".into(), vec![(50.0, 12.0), (100.0, 4_000.0)])],
        );
        assert!(svg.contains(">1000<") && svg.contains(">10<"), "{svg}");
    }

    #[test]
    fn lines_that_lie_on_each_other_are_told_apart_by_their_dashes() {
        let same = vec![(0.0, 1.0), (1.0, 2.0)];
        let svg = lines(
            "t",
            "s",
            ("Mbit/s", Scale::Linear),
            &[
                ("a".into(), same.clone()),
                ("b".into(), same.clone()),
                ("c".into(), same),
            ],
        );
        for d in ["stroke-dasharray=\"7 3\"", "stroke-dasharray=\"2 3\""] {
            // The line and its legend entry.
            assert_eq!(svg.matches(d).count(), 2, "{d}: {svg}");
        }
    }

    #[test]
    fn axes_are_nice() {
        assert_eq!(nice(0.0), (1.0, 0.25));
        assert_eq!(nice(9.3), (10.0, 2.5));
        assert_eq!(nice(987.0), (1000.0, 250.0));
        let (m, s) = nice(0.042);
        assert!(
            (m - 0.06).abs() < 1e-12 && (s - 0.02).abs() < 1e-12,
            "{m} {s}"
        );
    }

    #[test]
    fn a_line_chart_is_deterministic_and_well_formed() {
        let series = vec![
            ("offered".to_owned(), vec![(100.0, 99.0), (200.0, 198.0)]),
            ("lost <x>".to_owned(), vec![(100.0, 0.0), (200.0, 2.0)]),
        ];
        let a = lines("load", "offered Mbit/s", ("Mbit/s", Scale::Linear), &series);
        assert_eq!(
            a,
            lines("load", "offered Mbit/s", ("Mbit/s", Scale::Linear), &series)
        );
        assert!(a.starts_with("<svg") && a.ends_with("</svg>"));
        assert_eq!(a.matches("<polyline").count(), 2);
        assert_eq!(a.matches("<circle").count(), 4);
        assert!(a.contains("lost &lt;x&gt;"), "text is escaped");
    }

    #[test]
    fn category_lines_skip_what_was_not_measured() {
        let cats = ["1k".to_owned(), "2k".to_owned(), "4k".to_owned()];
        let series = [
            ("t1 Tx".to_owned(), vec![Some(1.0), None, Some(3.0)]),
            ("t1 Rx".to_owned(), vec![Some(2.0), Some(2.5), Some(4.0)]),
        ];
        let a = category_lines("sweep", ("block", "Gbit/s"), Scale::Linear, &cats, &series);
        assert_eq!(
            a,
            category_lines("sweep", ("block", "Gbit/s"), Scale::Linear, &cats, &series)
        );
        assert_eq!(a.matches("<polyline").count(), 2);
        assert_eq!(
            a.matches("<circle").count(),
            5,
            "no point where not measured"
        );
        // Categories are evenly spaced: 550 px of plot in three slots of 183.3.
        assert!(a.contains(">1k</text>") && a.contains("x=\"161.7\""), "{a}");
        for v in [f64::MAX, f64::INFINITY, f64::NAN, -5.0] {
            let s = category_lines(
                "x",
                ("x", "y"),
                Scale::Linear,
                &cats[..1],
                &[("s".into(), vec![Some(v)])],
            );
            assert!(s.len() < 20_000, "{v}: {} bytes", s.len());
        }
    }

    #[test]
    fn bars_skip_what_was_not_measured() {
        let b = bars(
            "latency",
            "us",
            &["64".into(), "1518".into()],
            &[("p50".into(), vec![Some(10.0), None])],
        );
        assert_eq!(
            b.matches("<rect x=").count(),
            1 + 1,
            "one bar and one legend swatch"
        );
    }
}
