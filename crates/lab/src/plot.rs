//! Line plots fit for a paper, as SVG and PNG: ticks in the axis's unit
//! (4K / 64K / 1M for sizes, whole numbers for counts; a time axis in one
//! unit, µs, ms or s, named in its label), few enough that labels never
//! touch, axes fitted to the data, text of at least 12 px at the size the
//! plot is shown, series told apart by colour (the Okabe–Ito palette, safe
//! for colour-blind readers), marker and dash, and a legend beside the data
//! naming only the series drawn.
//!
//! An axis's unit comes from its label: "bytes" or "block size" is a size
//! (log axes step in powers of two), "(ms)", "(µs)", "(us)", "(s)" a time,
//! and counts ("IOPS", "count", "operations", "pages", "I/O", "sector") get
//! integer ticks. Log axes are drawn as linear axes over the logarithm, so
//! the ticks are exactly the ones chosen here.

use std::io;
use std::path::Path;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor;

use crate::report::size_label;

/// A series to draw: its index (which fixes its look), the series and its
/// points in plot space.
type Drawn<'a> = (usize, &'a Series, Vec<(f64, f64)>);

/// One line of a plot.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn as markers without a line: published figures.
    pub markers_only: bool,
}

/// A line plot written as SVG.
#[derive(Debug, Clone)]
pub struct Plot<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub log_x: bool,
    pub log_y: bool,
    pub series: &'a [Series],
    /// Names of the x axis's categories: when given, a point's x is the
    /// index of its category and the ticks are the names.
    pub x_names: &'a [&'a str],
}

/// The canvas, in pixels: shown at this size (not scaled down) in
/// `index.html`, so its text keeps the sizes below.
pub const WIDTH: u32 = 800;
pub const HEIGHT: u32 = 480;
/// Tick, axis and legend text, in pixels.
const FONT: f64 = 14.0;
const TITLE_FONT: f64 = 16.0;
/// The smallest text drawn, in pixels (a long title or a crowded legend
/// shrinks to it, no further).
pub const MIN_FONT: f64 = 12.0;
/// Plotters draws a font of size n as n / 1.24 pixels of SVG text.
const PLOTTERS_PX: f64 = 1.24;
/// Average advance of a DejaVu Sans glyph, in ems (digits are 0.64).
const EM_ADVANCE: f64 = 0.62;
const MAX_TICKS: usize = 9;
/// The Okabe–Ito palette (Okabe & Ito 2008), black first and yellow last
/// (it is the faintest on white).
const PALETTE: [(u8, u8, u8); 8] = [
    (0, 0, 0),
    (230, 159, 0),
    (86, 180, 233),
    (0, 158, 115),
    (0, 114, 178),
    (213, 94, 0),
    (204, 121, 167),
    (240, 228, 66),
];
/// Markers drawn along a line, at most this many per series.
const MARKS_PER_LINE: usize = 12;

/// A plotters font of `px` pixels.
fn font(px: f64) -> (&'static str, f64) {
    ("sans-serif", px * PLOTTERS_PX)
}

/// How series `i` is drawn: colour, marker and dash (the three cycle at
/// different lengths, so neighbours differ in all of them).
#[derive(Debug, Clone, Copy)]
struct Look {
    color: RGBColor,
    marker: Marker,
    /// Dash and gap lengths in pixels; `None` for a solid line.
    dash: Option<(u32, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
    Plus,
}

impl Look {
    fn of(i: usize) -> Look {
        const MARKERS: [Marker; 6] = [
            Marker::Circle,
            Marker::Square,
            Marker::Triangle,
            Marker::Diamond,
            Marker::Cross,
            Marker::Plus,
        ];
        const DASHES: [Option<(u32, u32)>; 4] = [None, Some((9, 4)), Some((3, 3)), Some((14, 4))];
        let (r, g, b) = PALETTE[i % PALETTE.len()];
        Look {
            color: RGBColor(r, g, b),
            marker: MARKERS[i % MARKERS.len()],
            dash: DASHES[i % DASHES.len()],
        }
    }

    /// The marker's strokes around (0, 0), radius `r` pixels: one closed
    /// path, or two open ones for the crosses.
    fn marker_paths(&self, r: i32) -> Vec<Vec<(i32, i32)>> {
        let closed = |p: &[(i32, i32)]| {
            let mut v = p.to_vec();
            v.push(p[0]);
            vec![v]
        };
        match self.marker {
            Marker::Circle => vec![(0..=16)
                .map(|k| {
                    let a = f64::from(k) * std::f64::consts::PI / 8.0;
                    let r = f64::from(r);
                    ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32)
                })
                .collect()],
            Marker::Square => closed(&[(-r, -r), (r, -r), (r, r), (-r, r)]),
            Marker::Triangle => closed(&[(0, -r - 1), (r + 1, r), (-r - 1, r)]),
            Marker::Diamond => closed(&[(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)]),
            Marker::Cross => vec![vec![(-r, -r), (r, r)], vec![(-r, r), (r, -r)]],
            Marker::Plus => vec![vec![(-r - 1, 0), (r + 1, 0)], vec![(0, -r - 1), (0, r + 1)]],
        }
    }
}

/// Width in pixels of `s` at `font` pixels (an estimate that errs wide).
pub fn text_width(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * EM_ADVANCE
}

/// What an axis measures, read from its label.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Bytes,
    /// Seconds per unit of the data (1e-3 for a label in ms).
    Time(f64),
    Count,
    Plain,
}

impl Unit {
    pub fn of(label: &str) -> Unit {
        let l = label.to_lowercase();
        let has = |w: &[&str]| w.iter().any(|w| l.contains(w));
        if has(&["bytes", "block size"]) {
            Unit::Bytes
        } else if has(&["(ms)"]) {
            Unit::Time(1e-3)
        } else if has(&["(µs)", "(us)"]) {
            Unit::Time(1e-6)
        } else if has(&["(s)"]) {
            Unit::Time(1.0)
        } else if has(&[
            "iops",
            "count",
            "operations",
            "pages",
            "i/o",
            "sector",
            "erases",
        ]) {
            Unit::Count
        } else {
            Unit::Plain
        }
    }

    /// The tick label of `v` (in data units).
    pub fn label(self, v: f64) -> String {
        match self {
            Unit::Bytes if v >= 1.0 && v.fract() == 0.0 && (v as u64).is_power_of_two() => {
                size_label(v as u64)
            }
            Unit::Bytes => scaled(v, &[(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")], "B"),
            Unit::Time(per) => time_label(v * per),
            Unit::Count => scaled(
                v,
                &[(1_000_000_000, "G"), (1_000_000, "M"), (1000, "k")],
                "",
            ),
            Unit::Plain => trim(v),
        }
    }
}

/// `v` with up to three significant digits and no trailing zeros.
fn trim(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn scaled(v: f64, steps: &[(u64, &str)], base: &str) -> String {
    for &(n, suffix) in steps {
        if v.abs() >= n as f64 {
            return format!("{}{suffix}", trim(v / n as f64));
        }
    }
    format!("{}{base}", trim(v))
}

fn time_label(secs: f64) -> String {
    match secs.abs() {
        0.0 => "0".into(),
        s if s < 1e-3 => format!("{}µs", trim(secs * 1e6)),
        s if s < 1.0 => format!("{}ms", trim(secs * 1e3)),
        _ => format!("{}s", trim(secs)),
    }
}

/// An axis: the drawn range and ticks, both in plot space (the logarithm
/// of the data on a log axis), and how to label them.
#[derive(Debug, Clone)]
pub struct Axis {
    pub unit: Unit,
    /// Logarithm base, or `None` for a linear axis.
    pub log: Option<f64>,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    /// Category names, one per integer tick from 0 (empty: a numeric axis).
    pub names: Vec<String>,
}

impl Axis {
    /// The axis for `values`; a linear axis starts at zero when `from_zero`.
    pub fn new(values: &[f64], unit: Unit, log: bool, from_zero: bool) -> Axis {
        if log {
            let base = if unit == Unit::Bytes { 2.0 } else { 10.0 };
            let pos: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
            log_axis(&pos, unit, base)
        } else {
            linear_axis(values, unit, from_zero)
        }
    }

    /// An axis of named categories at 0, 1, 2…, with half a step of room
    /// on either side.
    pub fn categories(names: &[&str]) -> Axis {
        let n = names.len().max(1) as f64;
        Axis {
            unit: Unit::Plain,
            log: None,
            lo: -0.5,
            hi: n - 0.5,
            ticks: (0..names.len()).map(|i| i as f64).collect(),
            names: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Plot-space coordinate of data value `v`.
    pub fn to_plot(&self, v: f64) -> Option<f64> {
        match self.log {
            Some(_) if v <= 0.0 => None,
            Some(b) => Some(v.log(b)),
            None => Some(v),
        }
    }

    /// The label of a plot-space tick.
    pub fn label(&self, t: f64) -> String {
        if !self.names.is_empty() {
            let i = t.round().max(0.0) as usize;
            return self.names.get(i).cloned().unwrap_or_default();
        }
        tick_label(self.unit, self.log, t)
    }

    /// Keeps every n-th tick until the labels fit `pixels` with a gap.
    pub fn thin(&mut self, pixels: f64, font: f64) {
        let labeller = Axis {
            ticks: Vec::new(),
            ..self.clone()
        };
        let widest = |t: &[f64]| {
            t.iter()
                .map(|&x| text_width(&labeller.label(x), font))
                .fold(0.0, f64::max)
        };
        let all = self.ticks.clone();
        let mut step = 1;
        while self.ticks.len() > 1
            && (widest(&self.ticks) + 12.0) * self.ticks.len() as f64 > pixels
        {
            step += 1;
            self.ticks = all.iter().copied().step_by(step).collect();
        }
    }
}

fn tick_label(unit: Unit, log: Option<f64>, t: f64) -> String {
    let v = match log {
        // Powers of two and ten come back from powf a hair off.
        Some(b) => {
            let v = b.powf(t);
            format!("{v:.9e}").parse().unwrap_or(v)
        }
        None => t,
    };
    unit.label(v)
}

/// A linear coordinate whose key points are the axis's ticks.
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

impl From<&Axis> for Ticked {
    fn from(a: &Axis) -> Self {
        Ticked {
            lo: a.lo,
            hi: a.hi,
            ticks: a.ticks.clone(),
        }
    }
}

fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn linear_axis(values: &[f64], unit: Unit, from_zero: bool) -> Axis {
    let (mut lo, mut hi) = bounds(values).unwrap_or((0.0, 1.0));
    if from_zero {
        lo = lo.min(0.0);
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    let mut step = nice_step((hi - lo) / 6.0);
    if unit == Unit::Count {
        step = step.max(1.0);
    }
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    let n = ((hi - lo) / step).round() as usize;
    let ticks = (0..=n).map(|i| lo + i as f64 * step).collect();
    Axis {
        unit,
        log: None,
        lo,
        hi,
        ticks,
        names: Vec::new(),
    }
}

fn log_axis(values: &[f64], unit: Unit, base: f64) -> Axis {
    let (lo, hi) = bounds(values).unwrap_or((1.0, base));
    let (klo, khi) = (
        lo.log(base).floor() as i32,
        hi.log(base).ceil().max(lo.log(base).floor() + 1.0) as i32,
    );
    let grid = |mults: &[f64]| -> Vec<f64> {
        (klo..=khi)
            .flat_map(|k| mults.iter().map(move |m| m * base.powi(k)))
            .collect()
    };
    // The axis runs from the last 1-2-5 step (a power of two on a size
    // axis) at or below the data to the first at or above it: fitted to
    // the data, with every curve between labels.
    let ends = grid(if base == 10.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    });
    let start = ends
        .iter()
        .copied()
        .rfind(|&c| c <= lo * (1.0 + 1e-9))
        .unwrap_or(ends[0]);
    let end = ends
        .iter()
        .copied()
        .find(|&c| c >= hi * (1.0 - 1e-9) && c > start)
        .unwrap_or(ends[ends.len() - 1]);
    // Decades get 2× and 5× ticks while there are few of them.
    let decades = (end / start).log(base);
    let mults: &[f64] = match (base == 10.0, decades) {
        (true, d) if d <= 1.0 + 1e-9 => &[1.0, 2.0, 5.0],
        (true, d) if d <= 2.0 + 1e-9 => &[1.0, 3.0],
        _ => &[1.0],
    };
    let inside = |c: &f64| *c >= start * (1.0 - 1e-9) && *c <= end * (1.0 + 1e-9);
    let mut cand: Vec<f64> = grid(mults).into_iter().filter(inside).collect();
    let near = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
    if !cand.first().is_some_and(|&c| near(c, start)) {
        cand.insert(0, start);
    }
    if !cand.last().is_some_and(|&c| near(c, end)) {
        cand.push(end);
    }
    let stride = cand.len().div_ceil(MAX_TICKS);
    let ticks: Vec<f64> = cand.iter().step_by(stride).map(|c| c.log(base)).collect();
    Axis {
        unit,
        log: Some(base),
        lo: start.log(base),
        hi: end.log(base).max(start.log(base) + 1e-9),
        ticks,
        names: Vec::new(),
    }
}

fn bounds(values: &[f64]) -> Option<(f64, f64)> {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    finite.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((a, b)) => Some((a.min(v), b.max(v))),
    })
}

impl Plot<'_> {
    /// Writes the plot as SVG at `path` and, where the system has fonts to
    /// draw its text with, as PNG beside it (twice the size, for papers).
    pub fn write_svg(&self, path: &Path) -> io::Result<()> {
        let svg = self.to_svg()?;
        std::fs::write(path, &svg)?;
        crate::png::write(&svg, &path.with_extension("png"))?;
        Ok(())
    }

    /// The SVG as a string (for tests and inline HTML).
    pub fn to_svg(&self) -> io::Result<String> {
        let mut s = String::new();
        {
            let root = SVGBackend::with_string(&mut s, (WIDTH, HEIGHT)).into_drawing_area();
            self.draw(&root)
                .and_then(|()| root.present().map_err(|e| e.to_string().into()))
                .map_err(|e| io::Error::other(e.to_string()))?;
        }
        Ok(s)
    }

    /// The axes, and the factors that bring each series' x and y into
    /// them: a time axis is drawn in one unit (µs, ms or s) for all its
    /// ticks, which its label then names.
    fn axes(&self) -> ((Axis, f64, String), (Axis, f64, String)) {
        let all = |f: fn(&(f64, f64)) -> f64| -> Vec<f64> {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(f))
                .collect()
        };
        let axis = |values: Vec<f64>, label: &str, log: bool, from_zero: bool| {
            let (unit, k, label) = time_unit(label, &values);
            let scaled: Vec<f64> = values.iter().map(|v| v * k).collect();
            (Axis::new(&scaled, unit, log, from_zero), k, label)
        };
        let x = match self.x_names {
            [] => axis(all(|p| p.0), self.x_label, self.log_x, false),
            names => (Axis::categories(names), 1.0, self.x_label.to_string()),
        };
        (x, axis(all(|p| p.1), self.y_label, self.log_y, true))
    }

    /// The series that have something to draw, with their index (which
    /// fixes their look) and their points in plot space.
    fn drawn(&self, x: &(Axis, f64, String), y: &(Axis, f64, String)) -> Vec<Drawn<'_>> {
        self.series
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .filter_map(|&(px, py)| Some((x.0.to_plot(px * x.1)?, y.0.to_plot(py * y.1)?)))
                    .collect();
                (!pts.is_empty()).then_some((i, s, pts))
            })
            .collect()
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let (mut x, mut y) = self.axes();
        let drawn = self.drawn(&x, &y);
        let longest = drawn
            .iter()
            .map(|(_, s, _)| text_width(&s.name, FONT))
            .fold(0.0, f64::max);
        let legend_w = (longest + 44.0).clamp(110.0, 230.0);
        // The title spans the canvas, over the chart and the legend.
        let title_px = TITLE_FONT
            .min((WIDTH as f64 - 20.0) / (self.title.chars().count() as f64 * EM_ADVANCE))
            .max(MIN_FONT);
        let below = root.titled(self.title, font(title_px))?;
        let (area, legend) = below.split_horizontally(WIDTH as i32 - legend_w as i32);
        let y_label_w =
            y.0.ticks
                .iter()
                .map(|&t| text_width(&y.0.label(t), FONT))
                .fold(0.0, f64::max);
        let y_area = (y_label_w + 14.0 + FONT * 2.0) as u32;
        let plot_w = WIDTH as f64 - legend_w - y_area as f64 - 30.0;
        x.0.thin(plot_w, FONT);
        y.0.thin(HEIGHT as f64 - 150.0, FONT * 1.4);
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(y_area)
            .build_cartesian_2d(Ticked::from(&x.0), Ticked::from(&y.0))?;
        let (xf, yf) = (|t: &f64| x.0.label(*t), |t: &f64| y.0.label(*t));
        chart
            .configure_mesh()
            .x_desc(x.2.as_str())
            .y_desc(y.2.as_str())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .label_style(font(FONT))
            .axis_desc_style(font(FONT))
            .max_light_lines(0)
            .draw()?;
        for (i, s, pts) in &drawn {
            let look = Look::of(*i);
            let line = look.color.stroke_width(2);
            if !s.markers_only {
                match look.dash {
                    None => chart.draw_series(LineSeries::new(pts.iter().copied(), line))?,
                    Some((d, g)) => {
                        chart.draw_series(DashedLineSeries::new(pts.iter().copied(), d, g, line))?
                    }
                };
            }
            // Published points carry a marker each; a line a dozen at most.
            let every = if s.markers_only {
                1
            } else {
                pts.len().div_ceil(MARKS_PER_LINE).max(1)
            };
            // Scatters of many points get small marks, so they stay apart.
            let r = if s.markers_only && pts.len() > 100 {
                2
            } else {
                4
            };
            for path in look.marker_paths(r) {
                chart.draw_series(pts.iter().step_by(every).map(|&p| {
                    EmptyElement::at(p) + PathElement::new(path.clone(), look.color.stroke_width(2))
                }))?;
            }
        }
        self.draw_legend(&legend, legend_w, &drawn)
    }

    /// The legend in its own column right of the chart: a row per series
    /// drawn, with its line, dash and marker.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        width: f64,
        drawn: &[Drawn],
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        let n = drawn.len().max(1) as f64;
        let row = ((HEIGHT as f64 - 100.0) / n).min(FONT * 1.8);
        let px = FONT.min(row / 1.3).max(MIN_FONT);
        let max_chars = ((width - 44.0) / (px * EM_ADVANCE)) as usize;
        for (k, (i, s, _)) in drawn.iter().enumerate() {
            let look = Look::of(*i);
            let y = (30.0 + k as f64 * row) as i32;
            let stroke = look.color.stroke_width(2);
            if !s.markers_only {
                let (d, g) = look.dash.unwrap_or((28, 0));
                let mut x0 = 2;
                while x0 < 30 {
                    let x1 = (x0 + d as i32).min(30);
                    area.draw(&PathElement::new(vec![(x0, y), (x1, y)], stroke))?;
                    x0 = x1 + g as i32;
                }
            }
            for path in look.marker_paths(4) {
                let abs: Vec<(i32, i32)> = path.iter().map(|(a, b)| (a + 16, b + y)).collect();
                area.draw(&PathElement::new(abs, stroke))?;
            }
            let name = shorten(&s.name, max_chars);
            let style = TextStyle::from(font(px).into_font()).pos(text_anchor::Pos::new(
                text_anchor::HPos::Left,
                text_anchor::VPos::Center,
            ));
            area.draw(&Text::new(name, (36, y), style))?;
        }
        Ok(())
    }
}

/// For a time label (`... (ms)`), the unit the axis shows `values` in: the
/// one its largest value reads best in (µs, ms, s). Returns the axis unit,
/// the factor from data to shown values and the label naming that unit.
fn time_unit(label: &str, values: &[f64]) -> (Unit, f64, String) {
    let Unit::Time(per) = Unit::of(label) else {
        return (Unit::of(label), 1.0, label.to_string());
    };
    let top = values.iter().fold(0.0f64, |m, v| m.max(v.abs())) * per;
    let (secs, name) = match top {
        t if t < 1e-3 => (1e-6, "µs"),
        t if t < 1.0 => (1e-3, "ms"),
        _ => (1.0, "s"),
    };
    let shown = ["(ms)", "(µs)", "(us)", "(s)"]
        .iter()
        .fold(label.to_string(), |l, u| l.replace(u, &format!("({name})")));
    (Unit::Plain, per / secs, shown)
}

/// `s` in at most `max` characters: the middle gives way to an ellipsis,
/// so names that differ at the end (`… rr`, `… rw`, `… cold`, `… hot`)
/// stay apart in a legend.
fn shorten(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1);
    let tail = keep / 3;
    let head = keep - tail;
    let mut t: String = chars[..head].iter().collect();
    t.push('…');
    t.extend(&chars[chars.len() - tail..]);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_from_labels_and_label_ticks_in_them() {
        assert_eq!(Unit::of("block size (bytes)"), Unit::Bytes);
        assert_eq!(Unit::of("estimated runtime (ms)"), Unit::Time(1e-3));
        assert_eq!(Unit::of("IOPS"), Unit::Count);
        assert_eq!(Unit::of("virtual time (s)"), Unit::Time(1.0));
        assert_eq!(Unit::Bytes.label(4096.0), "4K");
        assert_eq!(Unit::Bytes.label(1048576.0), "1M");
        assert_eq!(Unit::Bytes.label(512.0), "512B");
        assert_eq!(Unit::Count.label(180000.0), "180k");
        assert_eq!(Unit::Count.label(90.0), "90");
        assert_eq!(Unit::Count.label(2_500_000.0), "2.5M");
        assert_eq!(Unit::Time(1e-3).label(0.05), "50µs");
        assert_eq!(Unit::Time(1e-3).label(2.0), "2ms");
        assert_eq!(Unit::Time(1e-3).label(1500.0), "1.5s");
        assert_eq!(Unit::Plain.label(0.25), "0.25");
    }

    #[test]
    fn a_log_axis_is_labelled_below_the_lowest_and_above_the_highest_point() {
        let a = Axis::new(&[3000.0, 9000.0, 180000.0], Unit::Count, true, true);
        let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(
            labels,
            ["2k", "3k", "10k", "30k", "100k", "200k"],
            "fitted, not to 1M"
        );
        assert!(a.lo <= 3000f64.log10() && a.hi >= 180000f64.log10());
        // Data that stops at 2k ends the axis there, not at 10k.
        let c = Axis::new(&[150.0, 2000.0], Unit::Count, true, true);
        let labels: Vec<String> = c.ticks.iter().map(|&t| c.label(t)).collect();
        assert_eq!(labels, ["100", "300", "1k", "2k"]);
        let b = Axis::new(&[512.0, 131072.0], Unit::Bytes, true, false);
        let labels: Vec<String> = b.ticks.iter().map(|&t| b.label(t)).collect();
        assert_eq!(
            labels,
            ["512B", "1K", "2K", "4K", "8K", "16K", "32K", "64K", "128K"]
        );
    }

    #[test]
    fn a_category_axis_labels_its_ticks_by_name() {
        let a = Axis::categories(&["A", "B", "C"]);
        let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(labels, ["A", "B", "C"]);
        assert!(a.lo < 0.0 && a.hi > 2.0);
        let series = [Series {
            name: "engine".into(),
            points: vec![(0.0, 10.0), (2.0, 1000.0)],
            markers_only: true,
        }];
        let svg = Plot {
            title: "t",
            x_label: "workload",
            y_label: "operations per second",
            log_x: false,
            log_y: true,
            series: &series,
            x_names: &["A", "B", "C"],
        }
        .to_svg()
        .unwrap();
        for name in ["A", "B", "C"] {
            assert!(svg.contains(&format!(">\n{name}\n</text>")), "{svg}");
        }
    }

    #[test]
    fn a_time_axis_is_in_one_unit_named_by_its_label() {
        let (unit, k, label) = time_unit("estimated runtime (ms)", &[120.0, 3000.0, 30_000.0]);
        assert_eq!(
            (unit, k, label.as_str()),
            (Unit::Plain, 1e-3, "estimated runtime (s)")
        );
        let (_, k, label) = time_unit("latency (ms)", &[0.05, 4.0]);
        assert_eq!((k, label.as_str()), (1.0, "latency (ms)"));
        let (_, k, label) = time_unit("latency (ms)", &[0.0002, 0.0009]);
        assert_eq!(label, "latency (µs)");
        assert!((k - 1e3).abs() < 1e-9);
        let (unit, k, label) = time_unit("IOPS", &[1.0]);
        assert_eq!((unit, k, label.as_str()), (Unit::Count, 1.0, "IOPS"));
    }

    #[test]
    fn long_legend_names_keep_their_ends() {
        let (a, b) = (
            shorten("kingston-microsd-1g rr", 21),
            shorten("kingston-microsd-1g rw", 21),
        );
        assert_eq!(a, "kingston-micro…-1g rr");
        assert_ne!(a, b);
        assert_eq!(a.chars().count(), 21);
        assert_eq!(shorten("hdd-7200 rr", 21), "hdd-7200 rr");
        assert_eq!(shorten("abcdef", 4), "ab…f");
        assert_eq!(shorten("abcdef", 1), "…");
    }

    #[test]
    fn neighbouring_series_differ_in_colour_marker_and_dash() {
        for i in 0..7 {
            let (a, b) = (Look::of(i), Look::of(i + 1));
            assert_ne!(a.color, b.color);
            assert_ne!(a.marker, b.marker);
            assert_ne!(a.dash, b.dash);
        }
    }

    #[test]
    fn only_series_with_points_are_drawn_and_named() {
        let series = [
            Series {
                name: "reads".into(),
                points: vec![(1.0, 2.0), (2.0, 3.0)],
                markers_only: false,
            },
            Series {
                name: "write-back after the run".into(),
                points: vec![],
                markers_only: true,
            },
        ];
        let p = Plot {
            title: "t",
            x_label: "x",
            y_label: "y",
            log_x: false,
            log_y: false,
            series: &series,
            x_names: &[],
        };
        let svg = p.to_svg().unwrap();
        assert!(svg.contains("reads"), "{svg}");
        assert!(!svg.contains("write-back"), "no legend for an empty series");
        for size in svg.split("font-size=\"").skip(1) {
            let px: f64 = size[..size.find('"').unwrap()].parse().unwrap();
            assert!(px >= MIN_FONT - 1e-6, "text of {px} px");
        }
    }

    #[test]
    fn linear_count_ticks_are_whole_numbers_and_thinning_keeps_labels_apart() {
        let mut a = Axis::new(&[0.0, 3.0], Unit::Count, false, true);
        assert_eq!(a.ticks, [0.0, 1.0, 2.0, 3.0]);
        a = Axis::new(&[10.0, 100.0], Unit::Count, false, false);
        assert!(a.ticks.iter().all(|t| t.fract() == 0.0));
        let before = a.ticks.len();
        a.thin(60.0, FONT);
        assert!(a.ticks.len() < before && !a.ticks.is_empty());
    }
}
