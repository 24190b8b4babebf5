//! Output for people and programs: aligned text tables, Markdown, JSON, CSV
//! and SVG line plots.

use std::fs;
use std::io;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

/// A table with a title, printed aligned for a terminal or as Markdown.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Table {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// Columns padded to their widest cell; numbers right-aligned.
    pub fn text(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .chain([self.headers[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        // A column whose cells are all numbers is right-aligned, header included.
        let numeric: Vec<bool> = (0..self.headers.len())
            .map(|c| {
                !self.rows.is_empty()
                    && self
                        .rows
                        .iter()
                        .all(|r| r.get(c).is_some_and(|s| looks_numeric(s)))
            })
            .collect();
        let line = |cells: &[String]| {
            cells
                .iter()
                .zip(widths.iter().zip(&numeric))
                .map(|(s, (&w, &right))| {
                    if right {
                        format!("{s:>w$}")
                    } else {
                        format!("{s:<w$}")
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let mut out = format!("{}\n{}\n", self.title, line(&self.headers));
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }

    pub fn markdown(&self) -> String {
        let mut out = format!("### {}\n\n| {} |\n|", self.title, self.headers.join(" | "));
        for h in &self.headers {
            out.push_str(if h.is_empty() { "---|" } else { "---:|" });
        }
        out.push('\n');
        for r in &self.rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        out
    }
}

fn looks_numeric(s: &str) -> bool {
    let t = s.trim_start_matches(['+', '-']).trim_end_matches('%');
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
}

/// Writes `rows` as a pretty JSON array.
pub fn write_json<T: Serialize>(path: &Path, rows: &T) -> io::Result<()> {
    let text = serde_json::to_string_pretty(rows).map_err(io::Error::other)?;
    fs::write(path, text + "\n")
}

/// Writes `rows` as CSV with a header line taken from the field names.
pub fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> io::Result<()> {
    let mut w = csv::Writer::from_path(path).map_err(io::Error::other)?;
    for r in rows {
        w.serialize(r).map_err(io::Error::other)?;
    }
    w.flush()
}

/// One line of a plot.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed-looking (points only) rather than as a line: published figures.
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
}

impl Plot<'_> {
    pub fn write_svg(&self, path: &Path) -> io::Result<()> {
        self.draw(path).map_err(|e| io::Error::other(e.to_string()))
    }

    fn draw(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let pts = || self.series.iter().flat_map(|s| s.points.iter().copied());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in pts() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1, y0, y1) = (1.0, 2.0, 1.0, 2.0);
        }
        // Log axes need positive bounds; linear y axes start at zero.
        let (x0, x1) = if self.log_x {
            (x0.max(1e-9) / 1.2, x1 * 1.2)
        } else {
            (x0, x1.max(x0 + 1e-9))
        };
        let (y0, y1) = if self.log_y {
            (y0.max(1e-9) / 1.5, y1.max(1e-9) * 1.5)
        } else {
            (0.0, y1.max(1e-9) * 1.1)
        };

        let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut b = ChartBuilder::on(&root);
        b.caption(self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70);
        macro_rules! finish {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(self.x_label)
                    .y_desc(self.y_label)
                    .draw()?;
                for (i, s) in self.series.iter().enumerate() {
                    let color = Palette99::pick(i).to_rgba();
                    if s.markers_only {
                        chart
                            .draw_series(
                                s.points
                                    .iter()
                                    .map(|&p| Cross::new(p, 5, color.stroke_width(2))),
                            )?
                            .label(s.name.as_str())
                            .legend(move |(x, y)| {
                                Cross::new((x + 10, y), 5, color.stroke_width(2))
                            });
                    } else {
                        chart
                            .draw_series(LineSeries::new(
                                s.points.iter().copied(),
                                color.stroke_width(2),
                            ))?
                            .label(s.name.as_str())
                            .legend(move |(x, y)| {
                                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                            });
                    }
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()?;
            }};
        }
        match (self.log_x, self.log_y) {
            (true, true) => {
                finish!(b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?)
            }
            (true, false) => finish!(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?),
            (false, true) => finish!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?),
            (false, false) => finish!(b.build_cartesian_2d(x0..x1, y0..y1)?),
        }
        root.present()?;
        Ok(())
    }
}

/// Formats a float with `d` decimals.
pub fn f(v: f64, d: usize) -> String {
    format!("{v:.d$}")
}

/// Formats a byte count the way the seeds label block sizes: 512B, 4K, 1M.
pub fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 50 && b % (1 << 50) == 0 => format!("{}P", b >> 50),
        b if b >= 1 << 40 && b % (1 << 40) == 0 => format!("{}T", b >> 40),
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => format!("{b}B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_table_aligns_columns() {
        let mut t = Table::new("T", &["name", "iops"]);
        t.push(vec!["a".into(), "5".into()]);
        t.push(vec!["long".into(), "12345".into()]);
        let s = t.text();
        assert_eq!(s, "T\nname   iops\na         5\nlong  12345\n");
        assert!(t.markdown().contains("| long | 12345 |"));
    }

    #[test]
    fn plots_and_files_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = [Series {
            name: "x".into(),
            points: vec![(512.0, 1.0), (4096.0, 3.0)],
            markers_only: false,
        }];
        let p = Plot {
            title: "t",
            x_label: "x",
            y_label: "y",
            log_x: true,
            log_y: false,
            series: &s,
        };
        p.write_svg(&dir.path().join("p.svg")).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("polyline"), "{svg}");
        #[derive(Serialize)]
        struct R {
            a: u32,
            b: &'static str,
        }
        write_csv(&dir.path().join("r.csv"), &[R { a: 1, b: "x" }]).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("r.csv")).unwrap(),
            "a,b\n1,x\n"
        );
    }

    #[test]
    fn sizes_are_labelled_like_the_seeds() {
        assert_eq!(size_label(512), "512B");
        assert_eq!(size_label(4096), "4K");
        assert_eq!(size_label(1 << 20), "1M");
    }
}
