//! `results/pgbench/`: the TPS table beside the seed's Table 1, the drives'
//! counters, rows.json / rows.csv, and TPS second by second as a plot.

use super::{Detail, Row, Size, SEED_TPS};
use crate::lab::{LabError, LabOptions, Section};
use crate::report::{f, write_csv, write_json, Plot, Series, Table};

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
Seed 003 ran TPC-C on Oracle (64 warehouses, 32 users); its ratios are beside ours, not targets.\n";

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
        let skip = Detail {
            skipped: Some("missing fuse2fs".into()),
            per_second: Vec::new(),
        };
        let s = write(&opts, Size::quick(), &[], &[skip]).unwrap();
        assert_eq!(s.json["skipped"], "missing fuse2fs");
        assert!(s.markdown.contains("_Skipped: missing fuse2fs._"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
