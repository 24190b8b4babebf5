//! SVG line plots people can read: ticks in the axis's unit (4K / 64K / 1M
//! for sizes, whole numbers for counts, µs / ms / s for times), few enough
//! that labels never touch, log axes labelled across the whole range the
//! curves cover, and the legend beside the data rather than over it.
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

const WIDTH: u32 = 960;
const HEIGHT: u32 = 540;
const FONT: f64 = 13.0;
const TITLE_FONT: f64 = 16.0;
/// Average advance of a DejaVu Sans glyph, in ems (digits are 0.64).
const EM_ADVANCE: f64 = 0.62;
const MAX_TICKS: usize = 9;

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
    // Decades get 2× and 5× ticks while there are few of them.
    let mults: &[f64] = match (base == 10.0, khi - klo) {
        (true, 0..=1) => &[1.0, 2.0, 5.0],
        (true, 2) => &[1.0, 3.0],
        _ => &[1.0],
    };
    let mut cand: Vec<f64> = (klo..=khi)
        .flat_map(|k| mults.iter().map(move |m| m * base.powi(k)))
        .collect();
    // The labelled range runs from the last tick at or below the data to
    // the first at or above it, so every curve lies between labels.
    let first = cand
        .iter()
        .rposition(|&c| c <= lo * (1.0 + 1e-9))
        .unwrap_or(0);
    let last = cand
        .iter()
        .position(|&c| c >= hi * (1.0 - 1e-9))
        .unwrap_or(cand.len() - 1);
    cand = cand[first..=last].to_vec();
    let stride = cand.len().div_ceil(MAX_TICKS);
    let ticks: Vec<f64> = cand.iter().step_by(stride).map(|c| c.log(base)).collect();
    let (tlo, thi) = (cand[0].log(base), cand[cand.len() - 1].log(base));
    Axis {
        unit,
        log: Some(base),
        lo: tlo,
        hi: thi.max(tlo + 1e-9),
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
    pub fn write_svg(&self, path: &Path) -> io::Result<()> {
        let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
        self.draw(&root)
            .and_then(|()| root.present().map_err(|e| e.to_string().into()))
            .map_err(|e| io::Error::other(e.to_string()))
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

    fn axes(&self) -> (Axis, Axis) {
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        let x = match self.x_names {
            [] => Axis::new(&xs, Unit::of(self.x_label), self.log_x, false),
            names => Axis::categories(names),
        };
        (x, Axis::new(&ys, Unit::of(self.y_label), self.log_y, true))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let longest = self
            .series
            .iter()
            .map(|s| text_width(&s.name, FONT))
            .fold(0.0, f64::max);
        let legend_w = (longest + 44.0).clamp(120.0, 380.0);
        let (area, legend) = root.split_horizontally(WIDTH as i32 - legend_w as i32);
        let (mut xa, mut ya) = self.axes();
        let y_label_w = ya
            .ticks
            .iter()
            .map(|&t| text_width(&ya.label(t), FONT))
            .fold(0.0, f64::max);
        let y_area = (y_label_w + 14.0 + FONT * 2.0) as u32;
        let plot_w = WIDTH as f64 - legend_w - y_area as f64 - 30.0;
        xa.thin(plot_w, FONT);
        ya.thin(HEIGHT as f64 - 140.0, FONT * 1.4);
        let title_font = TITLE_FONT
            .min((WIDTH as f64 - 20.0) / (self.title.chars().count() as f64 * EM_ADVANCE));
        let mut chart = ChartBuilder::on(&area)
            .caption(self.title, ("sans-serif", title_font))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(y_area)
            .build_cartesian_2d(Ticked::from(&xa), Ticked::from(&ya))?;
        let (xf, yf) = (|t: &f64| xa.label(*t), |t: &f64| ya.label(*t));
        chart
            .configure_mesh()
            .x_desc(self.x_label)
            .y_desc(self.y_label)
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .label_style(("sans-serif", FONT))
            .axis_desc_style(("sans-serif", FONT))
            .max_light_lines(0)
            .draw()?;
        for (i, s) in self.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter_map(|&(x, y)| Some((xa.to_plot(x)?, ya.to_plot(y)?)))
                .collect();
            if s.markers_only {
                chart.draw_series(pts.iter().map(|&p| Cross::new(p, 5, color.stroke_width(2))))?;
            } else {
                chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 2, color.filled())))?;
            }
        }
        self.draw_legend(&legend, legend_w)
    }

    /// The legend in its own column right of the chart, one row per series.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        width: f64,
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        let n = self.series.len().max(1) as f64;
        let row = ((HEIGHT as f64 - 80.0) / n).min(FONT * 1.7);
        let font = FONT.min(row / 1.3);
        let max_chars = ((width - 40.0) / (font * EM_ADVANCE)) as usize;
        for (i, s) in self.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let y = (50.0 + i as f64 * row) as i32;
            if s.markers_only {
                area.draw(&Cross::new((14, y), 5, color.stroke_width(2)))?;
            } else {
                area.draw(&PathElement::new(
                    vec![(4, y), (24, y)],
                    color.stroke_width(2),
                ))?;
            }
            let name = shorten(&s.name, max_chars);
            let style = TextStyle::from(("sans-serif", font).into_font()).pos(
                text_anchor::Pos::new(text_anchor::HPos::Left, text_anchor::VPos::Center),
            );
            area.draw(&Text::new(name, (30, y), style))?;
        }
        Ok(())
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
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
        assert_eq!(labels, ["1k", "10k", "100k", "1M"]);
        assert!(a.lo <= 3000f64.log10() && a.hi >= 180000f64.log10());
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
