//! `flashkv lab ssd-internals`: each mechanism of the page-mapped FTL that
//! MQSim models beside its closed form, on a small one-die FTL whose
//! program is slow enough that nothing is destaged during a burst:
//!
//! * the DRAM data cache absorbs a burst of exactly its size at DRAM speed
//!   (command + link + DRAM per page), the next write waits for the first
//!   destage, and a FLUSH waits for all of them;
//! * the cached mapping table (DFTL) hits as often as the share of the map
//!   it holds, for uniform random reads over working sets of 1 to 4 times
//!   that share (within 4 standard deviations: the workload is random);
//! * a second plane doubles a die's program bandwidth.
//!
//! Every other check is exact: simulated times and counts are deterministic.

use flashkv_device::{BlockDevice, DeviceSpec, SimDevice};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output, Params, Point};
use crate::report::{f, write_csv, write_json, Plot, Series, Table};
use crate::scorecard::Claim;

/// The closed forms' inputs, in ns (the spec's times).
const CMD: f64 = 2_000.0;
const HOST: f64 = 4_096.0; // 4 KiB at 1000 MB/s
const DRAM: f64 = 1_280.0; // 4 KiB at 3200 MB/s
const READ: f64 = 50_000.0;
const PROGRAM: f64 = 100_000_000.0;
/// Data cache: 256 pages; mapping cache: 4 of the map's 16 translation pages.
const CACHE_PAGES: u64 = 256;
const CACHED_TPAGES: u64 = 4;
const PAGE: u64 = 4096;
/// DFTL's working sets, in translation pages (1, 2 and 4 times the cached ones).
const WORKING_SETS: [u64; 3] = [4, 8, 16];

/// 64 MiB of 4 KiB pages on one die, both caches on.
fn spec(extra: &str) -> Result<DeviceSpec, LabError> {
    let text = format!(
        "capacity = \"64 MiB\"\n[model]\nkind = \"ftl\"\nmapping = \"page\"\npage_size = \"4k\"\n\
         pages_per_block = 64\nread_us = 50\nprogram_us = 100000\nerase_us = 3000\n\
         host_mb_per_s = 1000\nread_command_us = 2\nwrite_command_us = 2\n\
         write_cache = \"1 MiB\"\nmapping_cache = \"16 KiB\"\n{extra}"
    );
    Ok(DeviceSpec::from_toml(&text, "ssd-internals")?)
}

/// One check: the model's figure beside its closed form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub mechanism: String,
    pub check: String,
    pub unit: String,
    pub closed_form: f64,
    pub model: f64,
    /// Exact, or for the random workload within 4 standard deviations.
    pub holds: bool,
}

fn row(mechanism: &str, check: &str, unit: &str, closed_form: f64, model: f64) -> Row {
    Row {
        mechanism: mechanism.into(),
        check: check.into(),
        unit: unit.into(),
        closed_form,
        model,
        holds: closed_form == model,
    }
}

/// The data cache: a burst of its size, one page more, a FLUSH.
fn cache() -> Result<Vec<Row>, LabError> {
    let mut d = SimDevice::new(&spec("")?)?;
    let buf = vec![7u8; PAGE as usize];
    let mut worst = 0;
    for k in 0..CACHE_PAGES {
        let at = d.clock();
        worst = worst.max(d.write_at(at, k * PAGE, &buf)?.end - at);
    }
    let at = d.clock();
    let next = d.write_at(at, CACHE_PAGES * PAGE, &buf)?.end - at;
    let flush = d.flush()?.end;
    // The first destage starts once its page is in DRAM and its
    // translation page is read, and the die programs one page at a time.
    let first = CMD + HOST + DRAM + READ;
    let m = "data cache (write-back)";
    Ok(vec![
        row(
            m,
            "slowest write of a 256-page burst (its size)",
            "µs",
            (CMD + HOST + DRAM) / 1e3,
            worst as f64 / 1e3,
        ),
        row(
            m,
            "write 257: waits for the first destage",
            "µs",
            (first + PROGRAM + DRAM - at as f64) / 1e3,
            next as f64 / 1e3,
        ),
        row(
            m,
            "FLUSH ends when 257 destages are programmed",
            "s",
            (first + 257.0 * PROGRAM) / 1e9,
            flush as f64 / 1e9,
        ),
    ])
}

/// DFTL: uniform random reads over `tpages` translation pages' worth of a
/// filled device; the share of lookups that hit.
fn dftl(tpages: u64, n: u64, seed: u64) -> Result<Row, LabError> {
    let mut d = SimDevice::new(&spec("")?)?;
    d.fill_sequential(64 << 20)?;
    let mut buf = vec![0u8; PAGE as usize];
    for tp in 0..CACHED_TPAGES.min(tpages) {
        d.read(tp * 1024 * PAGE, &mut buf)?; // warm: DRAM holds 4 pages
    }
    let before = d.stats().ftl;
    let mut rng = SmallRng::seed_from_u64(seed);
    for _ in 0..n {
        let p = rng.gen_range(0..tpages * 1024);
        d.read(p * PAGE, &mut buf)?;
    }
    let m = d.stats().ftl.since(&before);
    let p = (CACHED_TPAGES as f64 / tpages as f64).min(1.0);
    let hit = m.map_hit_ratio();
    let sigma = (p * (1.0 - p) / n as f64).sqrt();
    Ok(Row {
        holds: (hit - p).abs() <= 4.0 * sigma + 1e-12,
        ..row(
            "mapping cache (DFTL)",
            &format!("hit ratio, {n} reads over {tpages} translation pages, 4 in DRAM"),
            "",
            p,
            hit,
        )
    })
}

/// Planes: a 1 MiB write (256 pages) on one die without the data cache.
fn planes() -> Result<Vec<Row>, LabError> {
    let end = |planes: u32| -> Result<f64, LabError> {
        let mut s = spec(&format!("planes_per_die = {planes}"))?;
        if let flashkv_device::ModelSpec::Ftl(p) = &mut s.model {
            // Neither cache: the die's own programs, nothing in between.
            (p.write_cache, p.mapping_cache) = (0, 0);
        }
        let mut d = SimDevice::new(&s)?;
        Ok(d.write(0, &vec![3u8; 1 << 20])?.end as f64)
    };
    let (one, two) = (end(1)?, end(2)?);
    let m = "planes";
    // The die programs from the first page's arrival, one page (or, with
    // two planes, from the second page's, two pages) a program time.
    let closed = [
        CMD + HOST + 256.0 * PROGRAM,
        CMD + 2.0 * HOST + 128.0 * PROGRAM,
    ];
    Ok(vec![
        row(m, "1 MiB write, one plane", "s", closed[0] / 1e9, one / 1e9),
        row(
            m,
            "1 MiB write, two planes",
            "s",
            closed[1] / 1e9,
            two / 1e9,
        ),
        row(
            m,
            "program bandwidth, two planes over one",
            "x",
            closed[0] / closed[1],
            one / two,
        ),
    ])
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    mechanism: String,
}

/// A point per mechanism.
pub fn points() -> Vec<Point> {
    points::grid(["cache", "dftl", "planes"].map(|m| {
        (
            m.to_string(),
            PointParams {
                mechanism: m.into(),
            },
        )
    }))
}

/// Runs one mechanism's checks.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("ssd-internals", params)?;
    opts.progress(&format!("ssd-internals {}", p.mechanism));
    let rows = match p.mechanism.as_str() {
        "cache" => cache()?,
        "planes" => planes()?,
        "dftl" => {
            let n = if opts.quick { 4_000 } else { 40_000 };
            WORKING_SETS
                .into_iter()
                .map(|t| dftl(t, n, opts.seed))
                .collect::<Result<_, _>>()?
        }
        other => {
            return Err(points::unknown(
                "ssd-internals",
                "mechanism",
                other,
                &["cache", "dftl", "planes"],
            ))
        }
    };
    Output::of(&rows)
}

/// `results/ssd-internals/` from every mechanism's rows.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    let rows: Vec<Row> = points::rows(outputs)?;
    let dir = opts.dir("ssd-internals")?;
    write_json(&dir.join("rows.json"), &rows)?;
    write_csv(&dir.join("rows.csv"), &rows)?;
    dftl_plot(&dir.join("dftl.svg"), &rows)?;
    let mut t = Table::new(
        "SSD internals against their closed forms (64 MiB, one die, 100 ms programs; data cache 256 pages, mapping cache 4 of 16 translation pages)".to_string(),
        &["mechanism", "check", "unit", "closed form", "model", "holds"],
    );
    for r in &rows {
        t.push(vec![
            r.mechanism.clone(),
            r.check.clone(),
            r.unit.clone(),
            f(r.closed_form, 3),
            f(r.model, 3),
            if r.holds { "yes" } else { "NO" }.into(),
        ]);
    }
    let held = rows.iter().filter(|r| r.holds).count();
    let note = format!(
        "{held} of {} checks hold (exactly; the DFTL hit ratios within 4 standard deviations of the cached share of the map). See docs/devices.md.\n",
        rows.len()
    );
    Ok(Section {
        name: "ssd-internals",
        text: format!("{}\n{note}", t.text()),
        markdown: format!("## SSD internals\n\n{}\n{note}", t.markdown()),
        json: serde_json::to_value(&rows).map_err(|e| LabError::Data(e.to_string()))?,
        claims: rows.iter().map(claim).collect(),
    })
}

/// DFTL's hit ratio against the working set: the model beside the cached
/// share of the map.
fn dftl_plot(svg: &std::path::Path, rows: &[Row]) -> Result<(), LabError> {
    let dftl: Vec<&Row> = rows
        .iter()
        .filter(|r| r.mechanism.starts_with("mapping cache"))
        .collect();
    assert_eq!(dftl.len(), WORKING_SETS.len(), "a DFTL row per working set");
    let names: Vec<String> = WORKING_SETS.iter().map(u64::to_string).collect();
    let series = |name: &str, v: fn(&Row) -> f64, markers_only| Series {
        name: name.into(),
        points: WORKING_SETS
            .iter()
            .zip(&dftl)
            .enumerate()
            .map(|(i, (_, r))| (i as f64, v(r)))
            .collect(),
        markers_only,
    };
    let plot = Plot {
        title: "DFTL: map hit ratio, uniform random reads, 4 translation pages in DRAM",
        x_label: "working set (translation pages)",
        y_label: "map hit ratio",
        log_x: false,
        log_y: false,
        series: &[
            series("closed form", |r| r.closed_form, true),
            series("model", |r| r.model, false),
        ],
        x_names: &names.iter().map(String::as_str).collect::<Vec<_>>(),
    };
    plot.write_svg(svg)
        .map_err(|e| LabError::Output(svg.to_path_buf(), e))
}

/// A check as a scorecard row: the mechanism's source, the closed form as
/// the published figure.
fn claim(r: &Row) -> Claim {
    let dftl = r.mechanism.starts_with("mapping cache");
    // The device crate's tests (crates/device/tests/ssd_internals.rs) hold
    // the same checks with exact counts; the scorecard names the lab's.
    let source = match r.mechanism.as_str() {
        m if m.starts_with("data cache") => "MQSim's data cache (write-back)",
        _ if dftl => "DFTL (Gupta et al., ASPLOS 2009)",
        _ => "MQSim's multi-plane programs",
    };
    let value = |v: f64| format!("{} {}", f(v, 3), r.unit).trim_end().to_string();
    Claim {
        source: source.into(),
        claim: r.check.clone(),
        published: format!("closed form: {}", value(r.closed_form)),
        ours: value(r.model),
        tolerance: if dftl {
            "4 standard deviations"
        } else {
            "exact"
        }
        .into(),
        reproduced: r.holds,
        checked: true,
        why: match (r.holds, dftl) {
            (true, true) => {
                "the hit ratio is the cached share of the map, as uniform random reads give".into()
            }
            (true, false) => "simulated time equals the closed form to the nanosecond".into(),
            (false, _) => format!(
                "the model differs from its closed form by {}",
                value(r.model - r.closed_form)
            ),
        },
        test: "internals.rs: every_check_holds".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_holds() {
        let mut rows = cache().unwrap();
        rows.extend(planes().unwrap());
        for t in [4, 8, 16] {
            rows.push(dftl(t, 4_000, 1).unwrap());
        }
        for r in &rows {
            assert!(r.holds, "{r:?}");
        }
        assert_eq!(rows.len(), 9);
        let claims: Vec<Claim> = rows.iter().map(claim).collect();
        assert!(claims.iter().all(|c| c.reproduced && c.checked));
        assert_eq!(claims[0].tolerance, "exact");
        assert_eq!(claims[6].source, "DFTL (Gupta et al., ASPLOS 2009)");
        assert_eq!(claims[6].published, "closed form: 1.000");
        assert_eq!(
            rows[5].model,
            2.0 * (CMD + HOST + 256.0 * PROGRAM) / (2.0 * (CMD + 2.0 * HOST + 128.0 * PROGRAM))
        );
    }
}
