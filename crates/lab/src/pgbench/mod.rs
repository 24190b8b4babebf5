//! `flashkv lab pgbench`: seed 003's claim checked with a database nobody
//! here wrote. For each drive (hdd-7200, ssd-lowend, the seed's hybrid of
//! the two, nvme) `flashkv serve --pace real` exports it over NBD; nbdfuse
//! and fuse2fs mount an ext4 on it in user space; an unmodified PostgreSQL
//! keeps its tables and indexes in a tablespace there and its WAL on a
//! second served disk; pgbench (TPC-B-like) runs several clients for a
//! fixed time after a warm-up. Wall-clock figures: they vary run to run
//! and with the machine's load.
//!
//! Not in `flashkv lab`'s default run: it needs root, the postgres user,
//! FUSE and PostgreSQL, and takes minutes of wall time. Where any is
//! missing the experiment says what and is skipped.

mod cluster;
mod drive;
mod host;
mod measure;
mod procs;
mod report;
mod txlog;

use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output, Params, Point};

pub use measure::Row;

/// The drives, in the order run and reported: (id, serve's arguments).
pub const DRIVES: [(&str, &[&str]); 4] = [
    ("hdd-7200", &["--device", "hdd-7200"]),
    ("ssd-lowend", &["--device", "ssd-lowend"]),
    (
        "hybrid",
        &["--hybrid", "ssd-lowend,hdd-7200", "--hybrid-policy", "seed"],
    ),
    ("nvme", &["--device", "nvme"]),
];

/// The seed's Table 1 (TPC-C on Oracle, transactions per second).
pub const SEED_TPS: [(&str, f64); 3] = [
    ("hdd-7200", 18.14),
    ("ssd-lowend", 41.55),
    ("hybrid", 54.44),
];

/// Database size, clients and run lengths.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Size {
    /// pgbench's scale: 100,000 accounts (about 15 MB) each.
    pub scale: u32,
    pub clients: u32,
    pub threads: u32,
    pub warmup_s: u64,
    pub run_s: u64,
    /// Time a CHECKPOINT after the run (the dirty buffers it owes).
    pub checkpoint: bool,
}

impl Size {
    /// Scale 20 (about 300 MB against 16 MB of shared_buffers, 5 % as the
    /// seed's buffer was of its database), 8 clients, 45 s of warm-up and
    /// 90 s measured per drive: 11 minutes for the four, as measured.
    pub fn full() -> Size {
        Size {
            scale: 20,
            clients: 8,
            threads: 2,
            warmup_s: 45,
            run_s: 90,
            checkpoint: true,
        }
    }

    /// Scale 4, 4 clients, 4 s + 8 s, no checkpoint timed: a smoke run.
    pub fn quick() -> Size {
        Size {
            scale: 4,
            clients: 4,
            threads: 2,
            warmup_s: 4,
            run_s: 8,
            checkpoint: false,
        }
    }

    pub fn of(quick: bool) -> Size {
        if quick {
            Size::quick()
        } else {
            Size::full()
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    drive: String,
}

/// One point per drive.
pub fn points() -> Vec<Point> {
    points::grid(DRIVES.map(|(d, _)| {
        (
            d.to_string(),
            PointParams {
                drive: d.to_string(),
            },
        )
    }))
}

/// What a point produced beyond its row: why it skipped, or the run's
/// transactions per second, second by second.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Detail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(default)]
    pub per_second: Vec<u64>,
}

/// Runs pgbench on one drive, or says what is missing.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("pgbench", params)?;
    let Some((_, target)) = DRIVES.iter().find(|(d, _)| *d == p.drive) else {
        let known: Vec<&str> = DRIVES.iter().map(|(d, _)| *d).collect();
        return Err(points::unknown("pgbench", "drive", &p.drive, &known));
    };
    let host = match host::Host::find() {
        Ok(h) => h,
        Err(missing) => {
            let why = format!("missing {}", missing.join("; "));
            opts.progress(&format!("pgbench: skipped ({why})"));
            let d = Detail {
                skipped: Some(why),
                ..Detail::default()
            };
            return Ok(Output {
                rows: Vec::new(),
                detail: Some(points::raw(&d)?),
            });
        }
    };
    let (row, per_second) = measure::drive(&host, &p.drive, target, Size::of(opts.quick), opts)?;
    let d = Detail {
        skipped: None,
        per_second,
    };
    Ok(Output {
        rows: vec![points::raw(&row)?],
        detail: Some(points::raw(&d)?),
    })
}

/// Tables, JSON, CSV and the plot from every drive's row.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    let rows: Vec<Row> = points::rows(outputs)?;
    let details: Vec<Detail> = points::details(outputs)?;
    report::write(opts, Size::of(opts.quick), &rows, &details)
}
