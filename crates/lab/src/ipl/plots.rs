//! The plots of seed 001's figures 6.1–6.11 (seed layout, nand-ipl).

use std::path::Path;

use super::Row;
use crate::lab::LabError;
use crate::report::{Plot, Series};

/// Hypotheses in the seed's order, with their figures (counts, runtime).
const FIGURES: [(&str, &str, u32); 5] = [
    ("h1.1", "Sequential Insert", 1),
    ("h1.2", "Bulk Insert", 3),
    ("h2.1", "Random Read", 5),
    ("h2.2", "Sequential Scan", 7),
    ("h3", "Random Read and Write", 9),
];

/// What a count plot shows of a row.
type Measure = fn(&Row) -> f64;

/// The seed layout's rows of experiment `e` for `store` on `nand-ipl`.
fn pick<'a>(rows: &'a [Row], e: &str, store: &str) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| {
            r.experiment == e && r.store == store && r.layout == "seed" && r.device == "nand-ipl"
        })
        .collect()
}

/// A line through `rs` at (`x`, `y`).
fn line(name: String, rs: &[&Row], y: &dyn Fn(&Row) -> f64, x: &dyn Fn(&Row) -> f64) -> Series {
    Series {
        name,
        points: rs.iter().map(|r| (x(r), y(r))).collect(),
        markers_only: false,
    }
}

fn ops(r: &Row) -> f64 {
    r.ops as f64
}

/// Every figure: two per workload of [`FIGURES`], then the buffer sweep.
pub fn write(dir: &Path, rows: &[Row]) -> Result<(), LabError> {
    for (e, title, fig) in FIGURES {
        figure_pair(dir, rows, e, title, fig)?;
    }
    let pages = |r: &Row| r.buffer_pages as f64;
    let io = |r: &Row| (r.reads + r.writes) as f64;
    let (a, b) = (
        pick(rows, "buffer-sweep", "in-place"),
        pick(rows, "buffer-sweep", "ipl"),
    );
    let sweep = [
        line("in-place".into(), &a, &io, &pages),
        line("ipl".into(), &b, &io, &pages),
    ];
    Plot {
        title: "Figure 6.11: Random Block IO by Varying Buffer Size",
        x_label: "buffer (pages)",
        y_label: "block I/O (reads + writes)",
        log_x: true,
        log_y: false,
        series: &sweep,
        x_names: &[],
    }
    .write_svg(&dir.join("fig6_11-buffer-sweep.svg"))?;
    Ok(())
}

/// Figures 6.`fig` (reads, writes and erases) and 6.`fig + 1` (estimated
/// runtime) of workload `e`, both stores against the operations run.
fn figure_pair(dir: &Path, rows: &[Row], e: &str, title: &str, fig: u32) -> Result<(), LabError> {
    let (a, b) = (pick(rows, e, "in-place"), pick(rows, e, "ipl"));
    let mut counts = Vec::new();
    let measures: [(&str, Measure); 3] = [
        ("reads", |r: &Row| r.reads as f64),
        ("writes", |r: &Row| r.writes as f64),
        ("erases", |r: &Row| r.erases as f64),
    ];
    for (m, y) in measures {
        counts.push(line(format!("in-place {m}"), &a, &y, &ops));
        counts.push(line(format!("ipl {m}"), &b, &y, &ops));
    }
    let t1 = format!("Figure 6.{fig}: {title}: Read, Write and Erase Count");
    Plot {
        title: &t1,
        x_label: "operations",
        y_label: "count",
        log_x: false,
        log_y: false,
        series: &counts,
        x_names: &[],
    }
    .write_svg(&dir.join(format!("fig6_{fig}-{e}-counts.svg")))?;
    let est = [
        line("in-place".into(), &a, &|r| r.est_ms, &ops),
        line("ipl".into(), &b, &|r| r.est_ms, &ops),
    ];
    let t2 = format!("Figure 6.{}: {title}: Estimated Runtime", fig + 1);
    Plot {
        title: &t2,
        x_label: "operations",
        y_label: "estimated runtime (ms)",
        log_x: false,
        log_y: false,
        series: &est,
        x_names: &[],
    }
    .write_svg(&dir.join(format!("fig6_{}-{e}-runtime.svg", fig + 1)))?;
    Ok(())
}
