//! Writes `seed000/`: Experiment 1's tables and plots, the comparison with
//! the seed's Tables 3.2 and 3.3 and stated best block sizes, Experiment 2's
//! best block per file size (Figures 3.12-3.14), and the cold and hot
//! cache curves.

use std::path::Path;

use serde_json::json;

use super::compare::{self, Comparison};
use super::exp1::Exp1Row;
use super::exp2::{self, FileSizeBest};
use super::{Row, DRIVES};
use crate::advisor::{BLOCK_SIZES, PATTERNS};
use crate::cache::{Cache, CacheRow};
use crate::lab::{LabError, LabOptions, Section};
use crate::report::{f, size_label, write_csv, write_json, Plot, Series, Table};

/// The comparisons counted in the headline (the top-MB/s rule is the
/// sensitivity, reported beside it).
const COUNTED: [&str; 3] = ["table_3_2", "table_3_3", "best_block"];

pub fn write(opts: &LabOptions, rows: Vec<Row>) -> Result<Section, LabError> {
    let (mut e1, mut e2, mut cache) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        match r {
            Row::Exp1(r) => e1.push(r),
            Row::Exp2(r) => e2.push(r),
            Row::Cache(r) => cache.push(r),
        }
    }
    let dir = opts.dir("seed000")?;
    write_csv(&dir.join("exp1.csv"), &e1)?;
    write_csv(&dir.join("exp2.csv"), &e2)?;
    write_csv(&dir.join("cache.csv"), &cache)?;
    let comparisons = compare::all(&e1)?;
    let best = exp2::best(&e2);
    exp1_plots(&dir, &e1)?;
    exp2_plots(&dir, &best)?;
    if !cache.is_empty() {
        crate::cache::plot(
            &cache,
            "Seed 002's cold and hot buffers on simulated drives: random 4 KB reads within the file",
            &dir.join("cache.svg"),
        )?;
    }
    let (agree, total, fitted) = headline(&comparisons);
    let json = json!({
        "agreement": { "agree": agree, "total": total, "agree_fitted": fitted, "counted": COUNTED },
        "comparisons": comparisons,
        "exp1": e1,
        "exp2": { "rows": e2, "best": best,
                  "average_sr": exp2::average(&best, "sr"), "average_sw": exp2::average(&best, "sw") },
        "cache": cache,
    });
    write_json(&dir.join("seed000.json"), &json)?;
    let text = sections(&e1, &comparisons, &best, &cache, (agree, total, fitted));
    Ok(Section {
        name: "seed000",
        text: text.iter().map(|(t, _)| t.as_str()).collect(),
        markdown: format!(
            "## Seed 000: its drives, Tables 3.2 and 3.3, Experiment 2; seed 002's cold and hot buffers\n\n{}",
            text.iter().map(|(_, m)| m.as_str()).collect::<String>()
        ),
        json,
        claims: super::claims::claims(&comparisons),
    })
}

/// Agreeing cells, cells, and agreeing cells a parameter was fitted to,
/// over the counted comparisons.
pub fn headline(c: &[Comparison]) -> (usize, usize, usize) {
    c.iter()
        .filter(|c| COUNTED.contains(&c.name.as_str()))
        .fold((0, 0, 0), |(a, t, f), c| {
            (a + c.agree, t + c.total, f + c.agree_fitted)
        })
}

/// Each part as (text, markdown).
fn sections(
    e1: &[Exp1Row],
    comparisons: &[Comparison],
    best: &[FileSizeBest],
    cache: &[CacheRow],
    (agree, total, fitted): (usize, usize, usize),
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let intro = format!(
        "Experiment 1 on the presets of seed 000's five drives (section 3.3), one request outstanding over the whole drive: \
         cells are MB/s / IOPS / mean response ms. **{agree} of {total} cells agree** with the seed's Tables 3.2 and 3.3 and \
         its stated best block sizes ({fitted} of the agreeing cells had a parameter fitted to them).\n\n"
    );
    out.push((intro.replace("**", ""), intro));
    for t in exp1_tables(e1) {
        out.push((t.text() + "\n", t.markdown() + "\n"));
    }
    for c in comparisons {
        let (t, notes) = comparison_table(c);
        out.push((
            format!("{}\n{notes}\n", t.text()),
            format!("{}\n{notes}\n", t.markdown()),
        ));
    }
    for t in exp2_tables(best) {
        out.push((t.text() + "\n", t.markdown() + "\n"));
    }
    let v = exp2_verdict(best);
    out.push((v.clone(), v));
    if !cache.is_empty() {
        let t = cache_table(cache);
        let v = cache_verdict(cache);
        out.push((
            format!("{}\n{v}\n", t.text()),
            format!("{}\n{v}\n", t.markdown()),
        ));
    }
    out
}

/// Up to which file size each drive's cache serves a hot file (hot in
/// under half the cold time), and how far apart the two are from 32 MB.
fn cache_verdict(cache: &[CacheRow]) -> String {
    let mean = |d: &str, size: u64, c: Cache| {
        cache
            .iter()
            .find(|r| r.device == d && r.file_size == size && r.cache == c)
            .map(|r| r.mean_latency_us)
    };
    let mut devices: Vec<&str> = cache.iter().map(|r| r.device.as_str()).collect();
    devices.dedup();
    let mut lines = Vec::new();
    let mut widest: f64 = 0.0;
    for d in devices {
        let mut sizes: Vec<u64> = cache
            .iter()
            .filter(|r| r.device == d)
            .map(|r| r.file_size)
            .collect();
        sizes.dedup();
        let served = sizes.iter().copied().filter(|&s| {
            matches!((mean(d, s, Cache::Hot), mean(d, s, Cache::Cold)), (Some(h), Some(c)) if h < c / 2.0)
        });
        lines.push(match served.max() {
            Some(s) => format!("{d} up to {}", size_label(s)),
            None => format!("{d} none"),
        });
        for s in sizes.into_iter().filter(|&s| s >= 32 << 20) {
            if let (Some(h), Some(c)) = (mean(d, s, Cache::Hot), mean(d, s, Cache::Cold)) {
                widest = widest.max((1.0 - h / c).abs());
            }
        }
    }
    format!(
        "Files a hot drive cache serves (hot under half the cold time): {}. From seed 002's 32 MB up, hot and cold differ by at most {:.1} %: \
         the drives' caches hold a few MiB (the FTL models have no read cache), so the gap seed 002 warns about is the host's page cache, \
         which `flashkv profile --path FILE --cache cold,hot` measures on a real file.\n",
        lines.join(", "),
        widest * 100.0
    )
}

/// Experiment 1: one table per pattern, block sizes down, drives across.
fn exp1_tables(e1: &[Exp1Row]) -> Vec<Table> {
    let mut headers = vec!["block"];
    headers.extend(DRIVES.iter().map(|d| d.preset));
    PATTERNS
        .iter()
        .map(|p| {
            let mut t = Table::new(
                format!("Experiment 1, {}: MB/s / IOPS / mean response ms", p.code()),
                &headers,
            );
            for bs in BLOCK_SIZES {
                let mut row = vec![size_label(bs)];
                for d in DRIVES {
                    let cell = e1
                        .iter()
                        .find(|r| {
                            r.device == d.preset && r.pattern == p.code() && r.block_size == bs
                        })
                        .map_or("-".to_string(), |r| {
                            format!(
                                "{} / {} / {}",
                                f(r.mb_per_s, 2),
                                f(r.iops, 0),
                                f(r.mean_response_ms, 2)
                            )
                        });
                    row.push(cell);
                }
                t.push(row);
            }
            t
        })
        .collect()
}

/// A comparison as a table (rows down, patterns across; "seed | model")
/// and its disagreements with their reasons.
fn comparison_table(c: &Comparison) -> (Table, String) {
    let mut t = Table::new(
        format!(
            "{} — seed | model; {} of {} cells agree",
            c.title, c.agree, c.total
        ),
        &[rows_are(c), "sr", "rr", "sw", "rw"],
    );
    let mut rows: Vec<&str> = Vec::new();
    for x in &c.cells {
        if !rows.contains(&x.row.as_str()) {
            rows.push(&x.row);
        }
    }
    for r in rows {
        let mut line = vec![r.to_string()];
        for p in PATTERNS {
            let cell = c.cells.iter().find(|x| x.row == r && x.pattern == p.code());
            line.push(cell.map_or(String::new(), |x| {
                let mark = match (x.agrees, x.fitted) {
                    (true, true) => " = (fitted)",
                    (true, false) => " =",
                    (false, _) => " ≠",
                };
                format!("{} | {}{mark}", x.seed, x.model)
            }));
        }
        t.push(line);
    }
    let mut notes = String::new();
    for x in c.cells.iter().filter(|x| !x.agrees) {
        let why = x.reason.as_deref().unwrap_or("no reason known");
        notes.push_str(&format!(
            "- {} {} {}: seed {}, model {}: {why}.\n",
            c.name, x.row, x.pattern, x.seed, x.model
        ));
    }
    (t, notes)
}

/// What a comparison's rows are: block sizes (Tables 3.2 and 3.3) or the
/// seed's drives (its stated best block sizes).
fn rows_are(c: &Comparison) -> &'static str {
    if c.name.starts_with("table") {
        "block"
    } else {
        "drive"
    }
}

/// Experiment 2: one table per drive, file sizes down, patterns across.
fn exp2_tables(best: &[FileSizeBest]) -> Vec<Table> {
    exp2::devices()
        .iter()
        .filter(|d| best.iter().any(|b| b.device == **d))
        .map(|d| {
            let mut t = Table::new(
                format!("Experiment 2, {d}: best block per file size (top MB/s in brackets); sr, sw whole-file passes, rr, rw random within the file"),
                &["file", "sr", "sw", "rr", "rw"],
            );
            let mut sizes: Vec<u64> = best.iter().filter(|b| b.device == *d).map(|b| b.file_size).collect();
            sizes.dedup();
            for s in sizes {
                let mut row = vec![size_label(s)];
                for p in ["sr", "sw", "rr", "rw"] {
                    row.push(best.iter().find(|b| b.device == *d && b.file_size == s && b.pattern == p).map_or("-".into(), |b| {
                        format!("{} ({})", size_label(b.best_block), size_label(b.top_block))
                    }));
                }
                t.push(row);
            }
            t
        })
        .collect()
}

/// Whether the file size changes each drive's answer, pattern by pattern,
/// beside the seed's finding (a pattern for reads, none for writes).
fn exp2_verdict(best: &[FileSizeBest]) -> String {
    let mut s = String::from(
        "Seed 000 found a pattern in the best block size against the file size for reads (Figure 3.12) and none for writes (Figure 3.13). In the models:\n",
    );
    for d in exp2::devices() {
        let mut parts = Vec::new();
        for p in ["sr", "sw", "rr", "rw"] {
            let v = exp2::distinct(best, d, p);
            if v.is_empty() {
                continue;
            }
            let sizes: Vec<String> = v.iter().map(|&b| size_label(b)).collect();
            parts.push(if v.len() == 1 {
                format!("{p} {} at every file size", sizes[0])
            } else {
                format!("{p} varies ({})", sizes.join(", "))
            });
        }
        if !parts.is_empty() {
            s.push_str(&format!("- {d}: {}.\n", parts.join("; ")));
        }
    }
    for p in ["sr", "sw"] {
        let avg: Vec<String> = exp2::average(best, p)
            .iter()
            .map(|(size, kb, n)| format!("{} {} KB ({n})", size_label(*size), f(*kb, 0)))
            .collect();
        let steady = DRIVES[..4]
            .iter()
            .all(|d| exp2::distinct(best, d.preset, p).len() <= 1);
        let note = if steady {
            " Every drive keeps one block at every file size: the average moves only as drives too small for the file drop out (their count in brackets)."
        } else {
            ""
        };
        s.push_str(&format!(
            "- Figure 3.14's average over the seed's drives holding the file ({p}): {}.{note}\n",
            avg.join(", ")
        ));
    }
    s.push('\n');
    s
}

fn cache_table(cache: &[CacheRow]) -> Table {
    let mut devices: Vec<&str> = cache.iter().map(|r| r.device.as_str()).collect();
    devices.dedup();
    let mut headers = vec!["file".to_string()];
    for d in &devices {
        headers.push(format!("{d} cold µs"));
        headers.push(format!("{d} hot µs"));
    }
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(
        "Seed 002's cold and hot buffers: mean time of a random 4 KB read within the file, the drive's cache empty (cold) or after one pass over the file in 1 MiB reads (hot); seed 002 plots 32M to 2G",
        &h,
    );
    let mut sizes: Vec<u64> = cache.iter().map(|r| r.file_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let mut row = vec![size_label(size)];
        for d in &devices {
            for c in Cache::BOTH {
                row.push(
                    cache
                        .iter()
                        .find(|r| r.device == *d && r.file_size == size && r.cache == c)
                        .map_or("-".into(), |r| f(r.mean_latency_us, 0)),
                );
            }
        }
        t.push(row);
    }
    t
}

/// Figures 3.1-3.9's kind: MB/s and IOPS against the block size, per pattern.
fn exp1_plots(dir: &Path, e1: &[Exp1Row]) -> Result<(), LabError> {
    for p in PATTERNS {
        for (unit, value) in [("MB/s", true), ("IOPS", false)] {
            let series: Vec<Series> = DRIVES
                .iter()
                .map(|d| Series {
                    name: d.preset.to_string(),
                    points: e1
                        .iter()
                        .filter(|r| r.device == d.preset && r.pattern == p.code())
                        .map(|r| (r.block_size as f64, if value { r.mb_per_s } else { r.iops }))
                        .collect(),
                    markers_only: false,
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            let title = format!("Experiment 1: {unit} by block size, {} (QD1)", p.code());
            let file = format!(
                "exp1-{}-{}.svg",
                p.code(),
                if value { "mbps" } else { "iops" }
            );
            Plot {
                title: &title,
                x_label: "block size (bytes)",
                y_label: unit,
                log_x: true,
                log_y: true,
                series: &series,
                x_names: &[],
            }
            .write_svg(&dir.join(file))?;
        }
    }
    Ok(())
}

/// Figures 3.12-3.14: best block against file size.
fn exp2_plots(dir: &Path, best: &[FileSizeBest]) -> Result<(), LabError> {
    if best.is_empty() {
        return Ok(());
    }
    let per_drive = |patterns: &[&str]| -> Vec<Series> {
        exp2::devices()
            .iter()
            .flat_map(|d| patterns.iter().map(move |p| (d, p)))
            .map(|(d, p)| Series {
                name: format!("{d} {p}"),
                points: best
                    .iter()
                    .filter(|b| b.device == *d && b.pattern == *p)
                    .map(|b| (b.file_size as f64, b.best_block as f64))
                    .collect(),
                markers_only: false,
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let average: Vec<Series> = ["sr", "sw", "rr", "rw"]
        .iter()
        .map(|p| Series {
            name: format!("average {p}"),
            points: exp2::average(best, p)
                .iter()
                .map(|(s, kb, _)| (*s as f64, kb * 1024.0))
                .collect(),
            markers_only: false,
        })
        .collect();
    for (file, title, series) in [
        ("exp2-reads.svg", "Experiment 2 (Figure 3.12): best block for sequential reads of the whole file", per_drive(&["sr"])),
        ("exp2-writes.svg", "Experiment 2 (Figure 3.13): best block for sequential writes of the whole file", per_drive(&["sw"])),
        ("exp2-random.svg", "Experiment 2 with the access pattern defined: best block for random reads and writes within the file", per_drive(&["rr", "rw"])),
        ("exp2-average.svg", "Experiment 2 (Figure 3.14): best block averaged over the seed's drives holding the file", average),
    ] {
        Plot {
            title,
            x_label: "file size (bytes)",
            y_label: "best block size (bytes)",
            log_x: true,
            log_y: true,
            series: &series,
            x_names: &[],
        }
        .write_svg(&dir.join(file))?;
    }
    Ok(())
}
