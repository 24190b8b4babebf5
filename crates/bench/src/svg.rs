//! The figures, drawn by the lab's plot code: throughput and p99 latency
//! per workload (or phase), one series of markers per engine.

use std::path::{Path, PathBuf};

use flashkv_lab::plot::{Plot, Series};

use crate::report::Row;

/// One figure's rows: those of one suite, scale and thread count.
pub struct Figure<'a> {
    /// File name stem, e.g. "ycsb-memory-1t".
    pub stem: String,
    pub title: String,
    /// The categories on the x axis (phases or workload letters) and the
    /// phase name each stands for.
    pub categories: Vec<(&'a str, String)>,
    pub rows: Vec<&'a Row>,
}

/// What a figure plots of a row.
type Getter = fn(&Row) -> Option<f64>;

/// Writes `<stem>-throughput.svg` and `<stem>-p99.svg` into `dir`.
pub fn write(dir: &Path, fig: &Figure<'_>, engines: &[&str]) -> std::io::Result<Vec<PathBuf>> {
    let names: Vec<&str> = fig.categories.iter().map(|(n, _)| *n).collect();
    let series = |get: Getter| -> Vec<Series> {
        engines
            .iter()
            .map(|e| Series {
                name: (*e).to_string(),
                points: fig
                    .categories
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (_, phase))| {
                        let r = fig
                            .rows
                            .iter()
                            .find(|r| r.engine == *e && &r.phase == phase && r.op == "all")?;
                        Some((i as f64, get(r)?))
                    })
                    .collect(),
                markers_only: true,
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let mut written = Vec::new();
    let plots: [(&str, &str, Getter); 2] = [
        ("throughput", "operations per second", |r| r.ops_per_s),
        ("p99", "p99 latency (µs)", |r| r.p99_us),
    ];
    for (what, y_label, get) in plots {
        let s = series(get);
        let title = format!("{} — {what}", fig.title);
        let path = dir.join(format!("{}-{what}.svg", fig.stem));
        Plot {
            title: &title,
            x_label: "workload",
            y_label,
            log_x: false,
            log_y: true,
            series: &s,
            x_names: &names,
        }
        .write_svg(&path)?;
        written.push(path);
    }
    Ok(written)
}
