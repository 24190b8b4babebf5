//! `results/pgbench/`: the TPS table beside the seed's Table 1, the drives'
//! counters, rows.json / rows.csv, and TPS second by second as a plot.

use super::{Detail, Row, Size, SEED_TPS};
use crate::lab::{LabError, LabOptions, Section};
use crate::report::{f, write_csv, write_json, Plot, Series, Table};
use crate::scorecard::{within, Claim};

fn mib(b: u64) -> String {
    f(b as f64 / (1 << 20) as f64, 1)
}

fn opt(v: Option<f64>, d: usize) -> String {
    v.map_or("–".into(), |v| f(v, d))
}

fn tps_of(rows: &[Row], drive: &str) -> Option<f64> {
    rows.iter().find(|r| r.drive == drive).map(|r| r.tps)
}

fn seed_of(drive: &str) -> Option<f64> {
    SEED_TPS.iter().find(|(d, _)| *d == drive).map(|(_, t)| *t)
}

/// TPS and latency per drive, with the ratios to the HDD beside the seed's.
fn tps_table(rows: &[Row], size: Size) -> Table {
    let mut t = Table::new(
        format!(
            "PostgreSQL pgbench (TPC-B-like), scale {}, {} clients, {} s after {} s of warm-up; WAL on a second served hdd-7200",
            size.scale, size.clients, size.run_s, size.warmup_s
        ),
        &["drive", "TPS", "/ HDD", "seed TPS", "seed / HDD", "lat avg ms", "lat p50 ms", "lat p99 ms", "checkpoint s"],
    );
    let hdd = tps_of(rows, "hdd-7200");
    let seed_hdd = seed_of("hdd-7200");
    for r in rows {
        let seed = seed_of(&r.drive);
        t.push(vec![
            r.drive.clone(),
            f(r.tps, 2),
            opt(hdd.map(|h| r.tps / h), 2),
            opt(seed, 2),
            opt(seed.zip(seed_hdd).map(|(s, h)| s / h), 2),
            f(r.latency_avg_ms, 1),
            f(r.latency_p50_ms, 1),
            f(r.latency_p99_ms, 1),
            opt(r.checkpoint_s, 1),
        ]);
    }
    t
}

/// What each drive served during the run, from its server.
fn drive_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "The drives over the measured run (flashkv serve's counters; service time is the model's)",
        &[
            "drive",
            "PG blks read",
            "reads",
            "read MiB",
            "writes",
            "write MiB",
            "flushes",
            "svc mean µs",
            "svc p99 µs",
            "late",
            "WAL writes",
            "WAL flushes",
            "errors",
        ],
    );
    for r in rows {
        t.push(vec![
            r.drive.clone(),
            r.pg_blocks_read.to_string(),
            r.reads.to_string(),
            mib(r.read_bytes),
            r.writes.to_string(),
            mib(r.write_bytes),
            r.flushes.to_string(),
            f(r.service_mean_us, 0),
            f(r.service_p99_us, 0),
            r.late_replies.to_string(),
            r.wal_writes.to_string(),
            r.wal_flushes.to_string(),
            r.errors.to_string(),
        ]);
    }
    t
}

/// The hybrid's cache over the run and the write-back it owed.
fn hybrid_table(rows: &[Row]) -> Option<Table> {
    let r = rows.iter().find(|r| r.hybrid_read_hit_ratio.is_some())?;
    let mut t = Table::new(
        "The hybrid (seed policy: no read promotion) over the run",
        &[
            "read hit ratio",
            "to SSD MiB",
            "to HDD MiB",
            "written back MiB",
            "owed at end MiB",
            "owed after checkpoint MiB",
            "its write-back s",
        ],
    );
    let m = |v: Option<u64>| v.map_or("–".into(), mib);
    t.push(vec![
        opt(r.hybrid_read_hit_ratio, 3),
        m(r.hybrid_ssd_write_bytes),
        m(r.hybrid_hdd_write_bytes),
        m(r.hybrid_written_back_bytes),
        m(r.hybrid_owed_bytes),
        m(r.hybrid_drain_bytes),
        opt(r.hybrid_drain_s, 2),
    ]);
    Some(t)
}

const NOTE: &str = "Unmodified PostgreSQL: tables and indexes in a tablespace on the drive (ext4 with 8 KiB \
blocks, mounted by fuse2fs with direct_io through nbdfuse; the page cache of nbdfuse's file is dropped \
every millisecond), WAL on a second served hdd-7200 with its write cache on as the drive ships, \
shared_buffers 16MB, autovacuum off. Wall-clock figures: they vary run to run and with the machine's load. \
Seed 003 ran TPC-C on Oracle (64 warehouses, 32 users); its ratios are beside ours, and the scorecard \
holds ours to them within ±30 %.\n";

/// How far a ratio may be from the seed's and count as reproduced: the
/// hybrid experiment's tolerance for the same ratios.
const TOLERANCE: f64 = 0.3;

/// The seed's Table 1 ratios against ours: hybrid / HDD and SSD / HDD,
/// each not checked where a drive did not run (`skipped` says why).
fn claims(rows: &[Row], skipped: Option<&str>) -> Vec<Claim> {
    let ratio = |d: &str| Some(tps_of(rows, d)? / tps_of(rows, "hdd-7200")?);
    let seed = |d: &str| Some(seed_of(d)? / seed_of("hdd-7200")?);
    [("hybrid / HDD", "hybrid"), ("SSD / HDD", "ssd-lowend")]
        .into_iter()
        .filter_map(|(name, drive)| {
            let published = seed(drive)?;
            let ours = ratio(drive).filter(|r| r.is_finite());
            let (ours_s, reproduced, why) = match ours {
                Some(r) => {
                    let off = format!("{:+.0} % from the seed", (r / published - 1.0) * 100.0);
                    let near = within(r, published, TOLERANCE);
                    let why = match near {
                        true => format!("{off}; PostgreSQL's TPC-B-like pgbench where the seed ran TPC-C on Oracle"),
                        false => format!("{off}: PostgreSQL's TPC-B-like pgbench where the seed ran TPC-C on Oracle (the section has the drives' counters)"),
                    };
                    (format!("{r:.2}x"), near, why)
                }
                None => (
                    "–".into(),
                    false,
                    format!(
                        "not run here: {}",
                        skipped.unwrap_or("a drive of the ratio did not run")
                    ),
                ),
            };
            Some(Claim {
                source: "seed 003, Table 1 (TPS)".into(),
                claim: format!("{name} TPS ratio with PostgreSQL (pgbench) on the served drives"),
                published: format!("{published:.2}x"),
                ours: ours_s,
                tolerance: format!("±{:.0} %", TOLERANCE * 100.0),
                reproduced,
                checked: ours.is_some(),
                why,
                test: "pgbench/report.rs: ratios_sit_beside_the_seeds_and_a_skip_says_why".into(),
            })
        })
        .collect()
}

/// Writes the folder; the section says why it skipped if every point did.
pub fn write(
    opts: &LabOptions,
    size: Size,
    rows: &[Row],
    details: &[Detail],
) -> Result<Section, LabError> {
    let dir = opts.dir("pgbench")?;
    let skipped: Vec<&str> = details
        .iter()
        .filter_map(|d| d.skipped.as_deref())
        .collect();
    if rows.is_empty() {
        let why = skipped.first().copied().unwrap_or("no drive ran");
        let text = format!("pgbench: skipped — {why}\n");
        return Ok(Section {
            name: "pgbench",
            text: text.clone(),
            markdown: format!(
                "## PostgreSQL on the emulated drives (pgbench)\n\n_Skipped: {why}._\n"
            ),
            json: serde_json::json!({ "skipped": why }),
            claims: claims(rows, Some(why)),
        });
    }
    write_json(&dir.join("rows.json"), &rows)?;
    write_csv(&dir.join("rows.csv"), rows)?;
    plot(&dir, rows, details)?;
    let mut tables = vec![tps_table(rows, size), drive_table(rows)];
    tables.extend(hybrid_table(rows));
    let text: String = tables.iter().map(|t| t.text() + "\n").collect();
    let md: String = tables.iter().map(|t| t.markdown() + "\n").collect();
    Ok(Section {
        name: "pgbench",
        text: format!("{text}{NOTE}"),
        markdown: format!("## PostgreSQL on the emulated drives (pgbench)\n\n{md}{NOTE}"),
        json: serde_json::to_value(rows).map_err(|e| LabError::Data(e.to_string()))?,
        claims: claims(rows, skipped.first().copied()),
    })
}

/// Transactions completed in each second of the measured run, per drive.
fn plot(dir: &std::path::Path, rows: &[Row], details: &[Detail]) -> Result<(), LabError> {
    let ran = details.iter().filter(|d| d.skipped.is_none());
    let series: Vec<Series> = rows
        .iter()
        .zip(ran)
        .map(|(r, d)| Series {
            name: r.drive.clone(),
            points: d
                .per_second
                .iter()
                .enumerate()
                .map(|(s, &n)| (s as f64, n as f64))
                .collect(),
            markers_only: false,
        })
        .collect();
    Plot {
        title: "pgbench on the emulated drives: transactions each second",
        x_label: "time (s)",
        y_label: "transactions per second",
        log_x: false,
        log_y: false,
        series: &series,
        x_names: &[],
    }
    .write_svg(&dir.join("tps.svg"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(drive: &str, tps: f64) -> Row {
        Row {
            drive: drive.into(),
            tps,
            ..Row::empty()
        }
    }

    #[test]
    fn ratios_sit_beside_the_seeds_and_a_skip_says_why() {
        let dir = std::env::temp_dir().join(format!("flashkv-pgreport-{}", std::process::id()));
        let opts = LabOptions {
            quick: true,
            out: dir.clone(),
            seed: 1,
            on_progress: Box::new(|_| {}),
            on_point: Box::new(|| {}),
        };
        let rows = [row("hdd-7200", 20.0), row("hybrid", 50.0)];
        let details = [
            Detail {
                skipped: None,
                per_second: vec![19, 21],
            },
            Detail {
                skipped: None,
                per_second: vec![48, 52],
            },
        ];
        let s = write(&opts, Size::quick(), &rows, &details).unwrap();
        let hybrid = s.text.lines().find(|l| l.starts_with("hybrid")).unwrap();
        let cells: Vec<&str> = hybrid.split_whitespace().collect();
        // TPS, / HDD, seed TPS, seed / HDD.
        assert_eq!(&cells[1..5], ["50.00", "2.50", "54.44", "3.00"]);
        for f in ["rows.json", "rows.csv", "tps.svg"] {
            assert!(dir.join("pgbench").join(f).exists(), "{f}");
        }
        // The scorecard: hybrid / HDD 2.50x against the seed's 3.00x is
        // within 30 %; the SSD did not run, so SSD / HDD is not checked.
        let [hybrid, ssd] = &s.claims[..] else {
            panic!("{:?}", s.claims)
        };
        assert_eq!(
            (hybrid.published.as_str(), hybrid.ours.as_str()),
            ("3.00x", "2.50x")
        );
        assert!(hybrid.checked && hybrid.reproduced, "{hybrid:?}");
        assert!(hybrid.why.starts_with("-17 % from the seed"), "{hybrid:?}");
        assert_eq!(ssd.published, "2.29x");
        assert!(!ssd.checked && !ssd.reproduced, "{ssd:?}");
        let far = write(
            &opts,
            Size::quick(),
            &[row("hdd-7200", 20.0), row("ssd-lowend", 20.0)],
            &details,
        )
        .unwrap();
        assert_eq!(far.claims[1].ours, "1.00x");
        assert!(
            far.claims[1].checked && !far.claims[1].reproduced,
            "{:?}",
            far.claims[1]
        );
        let skip = Detail {
            skipped: Some("missing fuse2fs".into()),
            per_second: Vec::new(),
        };
        let s = write(&opts, Size::quick(), &[], &[skip]).unwrap();
        assert_eq!(s.json["skipped"], "missing fuse2fs");
        assert!(s.markdown.contains("_Skipped: missing fuse2fs._"));
        assert_eq!(s.claims.len(), 2);
        for c in &s.claims {
            assert!(!c.checked && !c.reproduced, "{c:?}");
            assert_eq!(c.why, "not run here: missing fuse2fs");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
