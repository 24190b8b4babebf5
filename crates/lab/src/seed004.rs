//! Reproduces seed 004's random-I/O tables (Tuma, "Comparison of Drive
//! Technologies for High Transaction Databases"): random read, random write
//! and 50/50 IOPS by block size for a Seagate 15K HDD, an M-Systems flash SSD
//! and a Solid Data DRAM SSD, profiled on the `hdd-15k`, `flash-ssd-2005` and
//! `dram-ssd` presets and set beside the published figures.

use std::collections::BTreeMap;

use flashkv_device::presets;
use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output, Params, Point};
use crate::profile::{self, Pattern, ProfileSpec};
use crate::report::{f, size_label, write_csv, write_json, Plot, Series, Table};
use crate::scorecard::Claim;

const PUBLISHED: &str = include_str!("../data/seed004.toml");

/// Rows whose IOPS must land within this fraction of the seed (issue 2).
pub const TOLERANCE: f64 = 0.15;
/// Block sizes the tolerance applies to; the other rows are reported.
pub const GATED_SIZES: [u64; 3] = [4096, 8192, 131072];

/// A published device: its tables and how we profile it.
struct Target {
    key: &'static str,
    preset: &'static str,
    /// Seed 004's IOPS × service time is about 2 for the HDD and flash SSD: the
    /// benchmark kept two requests outstanding. The DRAM SSD's product is
    /// below 1 for small blocks (host-bound), so one outstanding request.
    iodepth: usize,
}

const TARGETS: [Target; 3] = [
    Target {
        key: "hdd_15k",
        preset: "hdd-15k",
        iodepth: 2,
    },
    Target {
        key: "flash_ssd",
        preset: "flash-ssd-2005",
        iodepth: 2,
    },
    Target {
        key: "dram_ssd",
        preset: "dram-ssd",
        iodepth: 1,
    },
];

const TABLES: [(&str, Pattern); 3] = [
    ("random_read", Pattern::RandRead),
    ("random_write", Pattern::RandWrite),
    ("mixed_50_50", Pattern::Mix),
];

#[derive(Deserialize)]
struct Published {
    device: String,
    #[serde(flatten)]
    tables: BTreeMap<String, toml::Value>,
}

/// One row: published against modelled.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub device: String,
    pub table: String,
    pub block_size: u64,
    pub iodepth: usize,
    pub ops: u64,
    pub published_iops: f64,
    pub model_iops: f64,
    pub error_pct: f64,
    pub published_service_ms: f64,
    pub model_latency_ms: f64,
    /// Whether the 15 % tolerance applies to this row (4 KB, 8 KB, 128 KB).
    pub gated: bool,
    pub within_tolerance: bool,
    /// Whether a parameter of the preset was fitted to this row (so
    /// matching it shows nothing); otherwise the row is a prediction.
    #[serde(default)]
    pub fitted: bool,
}

/// Why rows that miss the tolerance miss it: only causes we can name from
/// the seed itself, never a tuning knob.
const EXPLANATIONS: [(&str, &str, &str); 1] = [(
    "flash-ssd-2005",
    "mixed_50_50",
    "Seed 004's 50/50 table (55 IOPS at 4 KB) is faster than its own read and write tables allow at one queue depth: \
     half the requests are writes at 21 IOPS (47.6 ms each), so a 50/50 mix cannot exceed about 2 / (1/21 + 1/1075) = 41 IOPS \
     unless the write stream changes character. The model keeps the device fixed and reports the gap.",
)];

/// A point: one published table of one device (its rows differ only in
/// block size and share one preconditioned device).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    device: String,
    table: String,
}

fn published() -> Result<BTreeMap<String, Published>, LabError> {
    toml::from_str(PUBLISHED).map_err(|e| LabError::Data(e.to_string()))
}

/// Every device × table the seed publishes.
pub fn points() -> Vec<Point> {
    let pubd = published().expect("the built-in seed 004 tables parse");
    let v = TARGETS.iter().flat_map(|t| {
        let tables = &pubd[t.key].tables;
        TABLES
            .iter()
            .filter(|(table, _)| tables.contains_key(*table))
            .map(|(table, _)| {
                let p = PointParams {
                    device: t.preset.into(),
                    table: (*table).into(),
                };
                (format!("{}/{table}", t.preset), p)
            })
            .collect::<Vec<_>>()
    });
    points::grid(v)
}

/// Profiles one table's block sizes on one preconditioned device.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("seed004", params)?;
    let t = TARGETS
        .iter()
        .find(|t| t.preset == p.device)
        .ok_or_else(|| {
            points::unknown("seed004", "device", &p.device, &TARGETS.map(|t| t.preset))
        })?;
    let (table, pattern) = TABLES
        .into_iter()
        .find(|(name, _)| *name == p.table)
        .ok_or_else(|| points::unknown("seed004", "table", &p.table, &TABLES.map(|t| t.0)))?;
    let published = published()?;
    let Some(entries) = published[t.key].tables.get(table) else {
        return Err(LabError::Params(format!(
            "seed004: the seed publishes no {table} table for {}",
            t.preset
        )));
    };
    let entries: Vec<[f64; 4]> = entries
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| LabError::Data(e.to_string()))?;
    let ops = if opts.quick { 600 } else { 4000 };
    // One device per table, preconditioned once: the rows differ only in block size.
    let calibration = presets::get(t.preset)?.calibration;
    let mut dev = presets::open(t.preset)?;
    let span = dev_span(&dev);
    if pattern != Pattern::RandRead {
        opts.progress(&format!("seed004 {} {} preconditioning", t.preset, table));
        profile::precondition(&mut dev, span)?;
    }
    let mut rows = Vec::new();
    for [bs, iops, _mbs, svc_ms] in entries {
        let bs = bs as u64;
        opts.progress(&format!(
            "seed004 {} {} {}",
            t.preset,
            table,
            size_label(bs)
        ));
        let spec = ProfileSpec {
            pattern,
            block_size: bs,
            ops,
            span,
            iodepth: t.iodepth,
            seed: opts.seed,
        };
        let m = profile::run_prepared(&mut dev, t.preset, &spec)?;
        let error = (m.iops - iops) / iops;
        let gated = GATED_SIZES.contains(&bs);
        rows.push(Row {
            device: t.preset.to_string(),
            table: table.to_string(),
            block_size: bs,
            iodepth: t.iodepth,
            ops,
            published_iops: iops,
            model_iops: m.iops,
            error_pct: error * 100.0,
            published_service_ms: svc_ms,
            model_latency_ms: m.mean_latency_us / 1e3,
            gated,
            within_tolerance: error.abs() <= TOLERANCE,
            fitted: calibration.fitted_row(table, &size_label(bs)),
        });
    }
    Output::of(&rows)
}

/// Writes `seed004/` under the output directory from every table's rows.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    write(opts, &published()?, points::rows(outputs)?)
}

/// The whole device: seed 004 gives no span, and an HDD's seek distances
/// depend on it. Capped so a preconditioning pass stays quick.
fn dev_span(dev: &dyn flashkv_device::BlockDevice) -> u64 {
    dev.geometry().capacity.min(64 << 30)
}

fn write(
    opts: &LabOptions,
    published: &BTreeMap<String, Published>,
    rows: Vec<Row>,
) -> Result<Section, LabError> {
    let dir = opts.dir("seed004")?;
    write_json(&dir.join("seed004.json"), &rows)?;
    write_csv(&dir.join("seed004.csv"), &rows)?;

    let mut md = String::from(
        "## Seed 004: random I/O by block size (published vs model)\n\n\
         IOPS of the `hdd-15k`, `flash-ssd-2005` and `dram-ssd` presets profiled with the seed's \
         access patterns, beside the published tables. Seed 004's IOPS × service time is about 2 \
         for the HDD and the flash SSD, so those run with two requests outstanding; the DRAM SSD with one. \
         Rows at 4 KB, 8 KB and 128 KB must land within 15 %. A row marked *fitted* is one the \
         preset's parameters were set from (`flashkv devices` says which), so matching it shows \
         nothing; the other rows are the model's predictions.\n\n",
    );
    let mut text = String::new();
    for t in &TARGETS {
        for (table, _) in TABLES {
            let rs: Vec<&Row> = rows
                .iter()
                .filter(|r| r.device == t.preset && r.table == table)
                .collect();
            if rs.is_empty() {
                continue;
            }
            let title = format!(
                "{} ({}) — {}, iodepth {}",
                t.preset, published[t.key].device, table, t.iodepth
            );
            let tab = table_of(&title, &rs);
            text.push_str(&tab.text());
            text.push('\n');
            md.push_str(&tab.markdown());
            md.push('\n');
            let svg = dir.join(format!("{}-{}.svg", t.preset, table));
            plot(&svg, &title, t.preset, &rs)?;
        }
    }
    let (verdict, misses) = verdict(&rows);
    md.push_str(&format!("**{verdict}**\n\n{misses}"));
    text.push_str(&format!("{verdict}\n{misses}"));
    let claims = claims(published, &rows);
    Ok(Section {
        name: "seed004",
        text,
        markdown: md,
        json: serde_json::to_value(&rows).map_err(|e| LabError::Data(e.to_string()))?,
        claims,
    })
}

/// One device's table: published and modelled IOPS and times by block size.
fn table_of(title: &str, rs: &[&Row]) -> Table {
    let mut tab = Table::new(
        title.to_string(),
        &[
            "block",
            "seed IOPS",
            "model IOPS",
            "error",
            "seed ms",
            "model ms",
            "role",
            "within 15 %",
        ],
    );
    for r in rs {
        let mark = match (r.gated, r.within_tolerance) {
            (true, true) => "ok",
            (true, false) => "MISS",
            (false, _) => "(not gated)",
        };
        tab.push(vec![
            size_label(r.block_size),
            f(r.published_iops, 0),
            f(r.model_iops, 0),
            format!("{:+.1}%", r.error_pct),
            f(r.published_service_ms, 3),
            f(r.model_latency_ms, 3),
            if r.fitted { "fitted" } else { "predicted" }.to_string(),
            mark.to_string(),
        ]);
    }
    tab
}

/// The seed's IOPS (markers) and the model's (a line) by block size.
fn plot(svg: &std::path::Path, title: &str, preset: &str, rs: &[&Row]) -> Result<(), LabError> {
    let series = [
        Series {
            name: "seed 004".into(),
            points: rs
                .iter()
                .map(|r| (r.block_size as f64, r.published_iops))
                .collect(),
            markers_only: true,
        },
        Series {
            name: format!("model ({preset})"),
            points: rs
                .iter()
                .map(|r| (r.block_size as f64, r.model_iops))
                .collect(),
            markers_only: false,
        },
    ];
    let plot = Plot {
        title,
        x_label: "block size (bytes)",
        y_label: "IOPS",
        log_x: true,
        log_y: false,
        series: &series,
        x_names: &[],
    };
    Ok(plot.write_svg(svg)?)
}

/// A claim per published table: its gated rows (4 KB, 8 KB, 128 KB) all
/// within 15 %.
fn claims(published: &BTreeMap<String, Published>, rows: &[Row]) -> Vec<Claim> {
    let mut out = Vec::new();
    for t in &TARGETS {
        for (table, _) in TABLES {
            let gated: Vec<&Row> = rows
                .iter()
                .filter(|r| r.device == t.preset && r.table == table && r.gated)
                .collect();
            if gated.is_empty() {
                continue;
            }
            let list = |f: fn(&Row) -> f64| {
                let v: Vec<String> = gated.iter().map(|r| format!("{:.0}", f(r))).collect();
                v.join(" / ")
            };
            let sizes: Vec<String> = gated.iter().map(|r| size_label(r.block_size)).collect();
            let worst = gated.iter().map(|r| r.error_pct).fold(0.0f64, |a, e| {
                if e.abs() > a.abs() {
                    e
                } else {
                    a
                }
            });
            let reproduced = gated.iter().all(|r| r.within_tolerance);
            let roles = roles(&gated);
            let why = match reproduced {
                true => format!("largest error {worst:+.1} %"),
                false => format!(
                    "error up to {worst:+.1} %: {}",
                    explanation(t.preset, table)
                        .split(':')
                        .next()
                        .unwrap_or_default()
                ),
            };
            out.push(Claim {
                source: format!(
                    "seed 004, {} {} table",
                    published[t.key].device,
                    table.replace('_', " ")
                ),
                claim: format!(
                    "`{}` IOPS at {} (iodepth {})",
                    t.preset,
                    sizes.join(" / "),
                    t.iodepth
                ),
                published: list(|r| r.published_iops),
                ours: list(|r| r.model_iops),
                tolerance: "±15 % each".into(),
                reproduced,
                checked: true,
                why: format!("{why}{roles}"),
                test: test_of(t.preset, table).into(),
            });
        }
    }
    out
}

/// Which of a claim's rows a preset parameter was fitted to (their
/// agreement shows nothing) and which are predictions, if any was fitted.
fn roles(gated: &[&Row]) -> String {
    let sizes = |fitted: bool| -> Vec<String> {
        gated
            .iter()
            .filter(|r| r.fitted == fitted)
            .map(|r| size_label(r.block_size))
            .collect()
    };
    let (fitted, predicted) = (sizes(true), sizes(false));
    match (fitted.is_empty(), predicted.is_empty()) {
        (true, _) => String::new(),
        (false, true) => format!("; every row fitted ({}): shows nothing", fitted.join(", ")),
        (false, false) => format!(
            "; {} fitted (shows nothing), {} predicted",
            fitted.join(", "),
            predicted.join(", ")
        ),
    }
}

/// The seed's explanation of a table's miss, or why there is none.
fn explanation(device: &str, table: &str) -> &'static str {
    EXPLANATIONS
        .iter()
        .find(|(d, t, _)| *d == device && *t == table)
        .map_or(
            "No explanation recorded: treat as a calibration defect.",
            |e| e.2,
        )
}

/// The test that holds a table to the seed.
fn test_of(device: &str, table: &str) -> &'static str {
    match (device, table) {
        ("hdd-15k", _) => "calibration_hdd.rs: hdd_15k_reproduces_seed_004_within_15_percent_at_iodepth_2",
        ("flash-ssd-2005", "mixed_50_50") => "calibration_flash.rs: flash_ssd_2005_mixed_table_is_reported_not_fitted",
        ("flash-ssd-2005", _) => {
            "calibration_flash.rs: flash_ssd_2005_reproduces_seed_004_within_15_percent_at_iodepth_2"
        }
        _ => "scorecard.rs: seed_004s_dram_ssd_tables_reproduce",
    }
}

/// How many gated rows are within the tolerance, and a line for each miss
/// with the seed's explanation, where there is one.
fn verdict(rows: &[Row]) -> (String, String) {
    let gated: Vec<&Row> = rows.iter().filter(|r| r.gated).collect();
    let ok = gated.iter().filter(|r| r.within_tolerance).count();
    let predicted: Vec<&&Row> = gated.iter().filter(|r| !r.fitted).collect();
    let ok_predicted = predicted.iter().filter(|r| r.within_tolerance).count();
    let verdict = format!(
        "{ok} of {} gated rows (4 KB, 8 KB, 128 KB) within 15 %; of the {} the presets were not fitted to (predictions), {ok_predicted}.",
        gated.len(),
        predicted.len()
    );
    let mut out = String::new();
    let mut last_why = "";
    for r in gated.iter().filter(|r| !r.within_tolerance) {
        let why = explanation(&r.device, &r.table);
        let mut line = format!(
            "- {} {} {}: model {:.0} vs seed {:.0} IOPS ({:+.1} %).",
            r.device,
            r.table,
            size_label(r.block_size),
            r.model_iops,
            r.published_iops,
            r.error_pct,
        );
        if why != last_why {
            line = format!("{line} {why}");
            last_why = why;
        }
        line.push('\n');
        out.push_str(&line);
    }
    (verdict, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(preset: &str, table: &str, bs: u64, err: f64) -> Row {
        let c = presets::get(preset).unwrap().calibration;
        Row {
            device: preset.into(),
            table: table.into(),
            block_size: bs,
            iodepth: 1,
            ops: 1,
            published_iops: 100.0,
            model_iops: 100.0 * (1.0 + err),
            error_pct: err * 100.0,
            published_service_ms: 1.0,
            model_latency_ms: 1.0,
            gated: GATED_SIZES.contains(&bs),
            within_tolerance: err.abs() <= TOLERANCE,
            fitted: c.fitted_row(table, &size_label(bs)),
        }
    }

    /// The rows the DRAM SSD and the 15K disk were fitted to (4 KB and 128
    /// KB; the disk's whole write table) are marked, and the verdict counts
    /// the predictions apart.
    #[test]
    fn fitted_rows_are_marked_and_predictions_counted_apart() {
        let rows = [
            row("dram-ssd", "random_read", 4096, 0.0),
            row("dram-ssd", "random_read", 8192, 0.2),
            row("dram-ssd", "random_read", 131072, 0.0),
            row("hdd-15k", "random_write", 8192, 0.0),
            row("hdd-15k", "random_read", 8192, 0.05),
            row("flash-ssd-2005", "random_write", 4096, 0.0),
        ];
        let fitted: Vec<bool> = rows.iter().map(|r| r.fitted).collect();
        assert_eq!(fitted, [true, false, true, true, false, false]);
        let (verdict, misses) = verdict(&rows);
        assert_eq!(
            verdict,
            "5 of 6 gated rows (4 KB, 8 KB, 128 KB) within 15 %; of the 3 the presets were not fitted to (predictions), 2."
        );
        assert!(misses.contains("dram-ssd random_read 8K"), "{misses}");
        let t = table_of("t", &rows.iter().collect::<Vec<_>>()).text();
        assert!(t.contains("fitted") && t.contains("predicted"), "{t}");
    }
}
