//! Output for people and programs: aligned text tables, Markdown, JSON, CSV
//! and SVG line plots.

use std::fs;
use std::io;
use std::path::Path;

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

    /// The table in Markdown: number columns right-aligned, text left;
    /// every cell escaped ([`md_cell`]), so none can add a column.
    pub fn markdown(&self) -> String {
        let line = |cells: &[String]| {
            let cells: Vec<String> = cells.iter().map(|c| md_cell(c)).collect();
            format!("| {} |", cells.join(" | "))
        };
        let mut out = format!("### {}\n\n{}\n|", self.title, line(&self.headers));
        for c in 0..self.headers.len() {
            let numeric = !self.rows.is_empty()
                && self.rows.iter().all(|r| {
                    r.get(c)
                        .is_some_and(|s| looks_numeric(s) || s == "=" || s.is_empty())
                });
            out.push_str(if numeric { "---:|" } else { "---|" });
        }
        out.push('\n');
        for r in &self.rows {
            debug_assert_eq!(
                r.len(),
                self.headers.len(),
                "{}: a row of {} cells",
                self.title,
                r.len()
            );
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }
}

/// Text that stays one cell of a Markdown table: a `|` escaped (GitHub's
/// tables and pulldown-cmark's take `\|` as a pipe in the text, code
/// spans included), a line break a space.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The cells of a Markdown table row (`| a | b \| c |`): split at the
/// pipes a backslash does not escape.
pub fn md_cells(row: &str) -> Vec<&str> {
    let row = row.trim();
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner
        .strip_suffix('|')
        .filter(|r| !r.ends_with('\\'))
        .unwrap_or(inner);
    let mut cells = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, ch) in inner.char_indices() {
        match ch {
            '\\' => escaped = !escaped,
            '|' if !escaped => {
                cells.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => escaped = false,
        }
    }
    cells.push(inner[start..].trim());
    cells
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

pub use crate::plot::{Plot, Series};

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
    fn a_cell_with_a_pipe_stays_one_cell() {
        let mut t = Table::new("t", &["a", "b"]);
        t.push(vec!["seed | model".into(), "x\ny".into()]);
        let md = t.markdown();
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(rows.len(), 3, "{md}");
        for r in [rows[0], rows[2]] {
            assert_eq!(md_cells(r).len(), 2, "{r}");
        }
        assert_eq!(md_cells(rows[2]), vec!["seed \\| model", "x y"]);
        // Unescaped, the same row would have three cells.
        assert_eq!(md_cells("| seed | model | x |").len(), 3);
    }

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
            x_names: &[],
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
        assert_eq!(size_label(4 << 40), "4T");
    }
}
