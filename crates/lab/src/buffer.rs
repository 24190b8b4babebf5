//! `flashkv lab buffer`: buffer replacement policies compared on flash
//! (seed 000 §2.2's survey; seed 002's "SSD-aware buffer manager"). Every
//! policy × buffer size (a share of the relation's pages) × workload × page
//! store, on raw NAND (`nand-ipl`) and an FTL SSD (`nvme`).
//!
//! Each run loads the relation with a buffer that holds it all, writes it
//! out, reopens the store with the policy and buffer under test, runs a
//! warm-up, then the measured operations and a final checkpoint (dirty
//! pages a policy kept are still owed to the device). The B+-tree's
//! internal pages compete for frames like any page, as in a database
//! buffer. The write-ahead log is off: every commit would append to it the
//! same way under every policy and drown the page-store traffic the
//! policies differ in (with it on, each update also costs a log write).

use std::ops::Bound;

use flashkv_engine::{
    policy_by_name, Db, IplGeometry, Options, OptionsBuilder, StoreKind, POLICY_NAMES,
};
use rand::{rngs::SmallRng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output, Params};
use crate::workload::{Gen, Mix, Op};

mod count;
mod summary;

/// Devices compared: raw NAND with seed 001's costs, and a current SSD.
pub const DEVICES: [&str; 2] = ["nand-ipl", "nvme"];
/// Buffer sizes, in percent of the relation's pages.
pub const PERCENTS: [f64; 4] = [1.0, 5.0, 10.0, 25.0];
/// Bytes of every value (seed 001's tuple size is not given; as in `lab ipl`).
const VALUE_BYTES: usize = 100;
/// Bytes of the device the store may use.
const REGION: u64 = 64 << 20;

/// One measured point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub policy: String,
    /// `in-place` or `ipl`.
    pub store: String,
    pub device: String,
    pub workload: String,
    pub buffer_pages: usize,
    /// Page references served from the buffer (see [`count`]).
    pub hit_ratio: f64,
    pub dirty_evictions: u64,
    /// Device write operations (host writes).
    pub writes: u64,
    /// Erase-unit erases (on `nvme`: its GC's).
    pub erases: u64,
    /// Device busy time: the modelled cost of every operation.
    pub est_ms: f64,
    pub energy_mj: f64,
}

/// A relation and how long to run on it.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    /// Keys loaded (`0..records`).
    pub records: u64,
    pub warmup: u64,
    pub ops: u64,
}

impl Size {
    pub fn full() -> Size {
        Size {
            records: 20_000,
            warmup: 2_000,
            ops: 10_000,
        }
    }
    pub fn quick() -> Size {
        Size {
            records: 4_000,
            warmup: 400,
            ops: 1_500,
        }
    }
    /// The size `flashkv lab buffer` runs with (`--quick` or not).
    pub fn of(quick: bool) -> Size {
        if quick {
            Size::quick()
        } else {
            Size::full()
        }
    }
}

/// One run's setting.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub device: &'static str,
    pub store: StoreKind,
    pub mix: Mix,
    pub policy: &'static str,
    pub buffer_pages: usize,
}

fn key(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// A value that differs per key and per write.
fn value(k: u64, version: u64) -> Vec<u8> {
    let b = (k ^ version << 24).to_le_bytes();
    (0..VALUE_BYTES).map(|i| b[i % 8] ^ i as u8).collect()
}

/// The options of a point: the page store's I/O alone is counted, so
/// no write-ahead log.
fn options(store: StoreKind, buffer_pages: usize) -> OptionsBuilder {
    Options::builder()
        .policy(crate::seeds_lru())
        .store(store)
        .buffer_pages(buffer_pages)
        .lab(flashkv_engine::LabOptions {
            wal: false,
            index_in_memory: false,
        })
        .max_size(REGION)
}

/// Loads keys `0..records` on a fresh device; returns the store closed and
/// the relation's pages.
fn loaded(device: &str, store: StoreKind, records: u64) -> Result<(Db, usize), LabError> {
    let dev = flashkv_device::presets::open(device)?;
    let db = Db::open(Box::new(dev), options(store, records as usize).build()?)?;
    for k in 0..records {
        db.put(&key(k), &value(k, 0))?;
    }
    db.checkpoint()?;
    let pages = db.stats().resident_pages;
    Ok((db, pages))
}

/// The relation's pages once loaded (with the store's page size).
pub fn relation_pages(device: &str, store: StoreKind, records: u64) -> Result<usize, LabError> {
    Ok(loaded(device, store, records)?.1)
}

/// Runs one point.
pub fn measure(p: &Point, size: Size, seed: u64) -> Result<Row, LabError> {
    let (db, _) = loaded(p.device, p.store, size.records)?;
    measure_loaded(db, p, size, seed)
}

/// Runs one point on the relation [`loaded`] left in `db`.
fn measure_loaded(db: Db, p: &Point, size: Size, seed: u64) -> Result<Row, LabError> {
    let policy = policy_by_name(p.policy)
        .ok_or_else(|| points::unknown("buffer", "policy", p.policy, &POLICY_NAMES))?;
    let (policy, refs) = count::counted(policy);
    let opts = options(p.store, p.buffer_pages).policy(policy).build()?;
    let db = Db::open(db.close()?, opts)?;
    let gen = Gen::new(p.mix, size.records);
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in 0..size.warmup {
        apply(&db, gen.next(&mut rng), i)?;
    }
    let before = db.stats();
    let (refs0, hits0) = refs.get();
    for i in size.warmup..size.warmup + size.ops {
        apply(&db, gen.next(&mut rng), i)?;
    }
    db.checkpoint()?;
    let s = db.stats();
    let (refs1, hits1) = refs.get();
    Ok(Row {
        policy: p.policy.to_string(),
        store: p.store.name().to_string(),
        device: p.device.to_string(),
        workload: p.mix.name().to_string(),
        buffer_pages: p.buffer_pages,
        hit_ratio: (hits1 - hits0) as f64 / (refs1 - refs0).max(1) as f64,
        dirty_evictions: s.buffer.dirty_evictions - before.buffer.dirty_evictions,
        writes: s.device.host_writes - before.device.host_writes,
        erases: s.device.block_erases - before.device.block_erases,
        est_ms: (s.device.busy_ns - before.device.busy_ns) as f64 / 1e6,
        energy_mj: (s.device.energy_nj - before.device.energy_nj) as f64 / 1e6,
    })
}

fn apply(db: &Db, op: Op, i: u64) -> Result<(), LabError> {
    match op {
        Op::Read(k) => {
            db.get(&key(k))?;
        }
        Op::Write(k) => db.put(&key(k), &value(k, i + 1))?,
        Op::Scan { start, len } => {
            let (a, b) = (key(start), key(start + len));
            db.scan((Bound::Included(&a[..]), Bound::Excluded(&b[..])))?;
        }
    }
    Ok(())
}

/// The page stores compared: in place, and in-page logging with seed 001's layout.
pub const STORES: [StoreKind; 2] = [
    StoreKind::InPlace,
    StoreKind::InPageLogging(IplGeometry::seed()),
];

/// A point's parameters: the buffer is a share of the relation's pages,
/// so it is sized on the relation the point loads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    device: String,
    store: String,
    workload: String,
    /// Buffer size, percent of the relation's pages (at least 2 pages).
    percent: f64,
    policy: String,
}

/// Device × store × workload × buffer size × policy.
pub fn points() -> Vec<points::Point> {
    let mut v = Vec::new();
    for device in DEVICES {
        for store in STORES.map(|s| s.name()) {
            for mix in Mix::ALL.map(|m| m.name()) {
                for percent in PERCENTS {
                    for policy in POLICY_NAMES {
                        let p = PointParams {
                            device: device.into(),
                            store: store.into(),
                            workload: mix.into(),
                            percent,
                            policy: policy.into(),
                        };
                        v.push((format!("{device}/{store}/{mix}/{percent}%/{policy}"), p));
                    }
                }
            }
        }
    }
    points::grid(v)
}

/// The store named `name` (`in-place` or `ipl`, seed 001's layout).
fn store(name: &str) -> Result<StoreKind, LabError> {
    STORES
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| points::unknown("buffer", "store", name, &STORES.map(|s| s.name())))
}

/// The point's setting, its names checked; the buffer is sized later.
fn setting(p: &PointParams) -> Result<Point, LabError> {
    let device = flashkv_device::presets::names()
        .into_iter()
        .find(|&d| d == p.device)
        .ok_or_else(|| {
            points::unknown(
                "buffer",
                "device",
                &p.device,
                &flashkv_device::presets::names(),
            )
        })?;
    let mix = Mix::parse(&p.workload).ok_or_else(|| {
        points::unknown(
            "buffer",
            "workload",
            &p.workload,
            &Mix::ALL.map(|m| m.name()),
        )
    })?;
    let policy = POLICY_NAMES
        .into_iter()
        .find(|&n| n == p.policy)
        .ok_or_else(|| points::unknown("buffer", "policy", &p.policy, &POLICY_NAMES))?;
    if !(p.percent > 0.0 && p.percent <= 100.0) {
        return Err(LabError::Params(format!(
            "buffer: percent {} is not in (0, 100]",
            p.percent
        )));
    }
    Ok(Point {
        device,
        store: store(&p.store)?,
        mix,
        policy,
        buffer_pages: 0,
    })
}

/// Loads the relation, sizes the buffer on it, and measures.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("buffer", params)?;
    let mut point = setting(&p)?;
    let size = Size::of(opts.quick);
    opts.progress(&format!(
        "buffer {} {} {} {}% {}",
        p.device, p.store, p.workload, p.percent, p.policy
    ));
    let (db, pages) = loaded(point.device, point.store, size.records)?;
    point.buffer_pages = ((pages as f64 * p.percent / 100.0).round() as usize).max(2);
    Output::of(&[measure_loaded(db, &point, size, opts.seed)?])
}

/// Tables, files and plots from every point's row.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    let rows: Vec<Row> = points::rows(outputs)?;
    summary::write(opts, Size::of(opts.quick), &rows)
}

/// `flashkv lab buffer`: every point, then the report.
pub fn run(opts: &LabOptions) -> Result<Section, LabError> {
    crate::lab::Experiment::Buffer.run(opts)
}
