//! Crash recovery with the device crate's `FaultDevice` over simulated raw
//! NAND and an FTL SSD: power lost at a random write, unflushed writes
//! surviving, lost or torn as its seeded plan decides, the write in flight
//! torn inside a sector too: the harness on the simulators' own geometry and
//! cost models rather than the untimed `MemDevice` of `crash.rs`. Odd seeds
//! of a store that has a memtable (in place, not on raw NAND) run with one,
//! of a budget small enough to drain now and then, and count whether it
//! held pairs when power failed.

use flashkv_device::{presets, BlockDevice, DeviceError, FaultDevice, FaultPlan, PairDevice, Tier};
use flashkv_engine::{Db, Error, IplGeometry, Options, Placement, StoreKind};
use flashkv_testing::{cases, Shared, Tally};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

// `common::workload_big` serves the crash tests, not this one.
#[allow(dead_code)]
mod common;
use common::{run, workload, Model};

type Dev = Shared<FaultDevice<Box<dyn BlockDevice>>>;

/// A preset, or "FAST+SLOW": a pair of two, the fast one first.
fn device(preset: &str, plan: FaultPlan) -> Dev {
    let open = |p: &str| Box::new(presets::open(p).unwrap());
    let dev: Box<dyn BlockDevice> = match preset.split_once('+') {
        Some((fast, slow)) => {
            Box::new(PairDevice::new(open(fast), open(slow), Tier::Fast).unwrap())
        }
        None => open(preset),
    };
    Shared::new(FaultDevice::new(dev, plan))
}

fn opts(kind: StoreKind, frames: usize, sync: bool, memtable: usize) -> Options {
    Options::builder()
        .store(kind)
        .buffer_pages(frames)
        .sync(sync)
        .wal_size(1 << 20)
        .max_size(12 << 20)
        .memtable(memtable)
        .build()
        .unwrap()
}

/// Whether a store of `kind` on `preset` takes writes into a memtable: in
/// place with a log it may leave at a close (not on raw NAND).
fn has_memtable(preset: &str, kind: StoreKind) -> bool {
    kind == StoreKind::InPlace && !preset.starts_with("nand")
}

fn case(seed: u64, preset: &str, kind: StoreKind) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let frames = [1, 4, 32][rng.gen_range(0..3)];
    let sync = rng.gen_bool(0.3);
    let n = rng.gen_range(10..50);
    let keys = 150;
    let ops = workload(&mut rng, n, keys);
    let memtable = match seed % 2 == 1 && has_memtable(preset, kind) {
        true => [4 << 10, 64 << 10, 1 << 20][rng.gen_range(0..3)],
        false => 0,
    };
    let o = opts(kind, frames, sync, memtable);
    let dry = device(preset, FaultPlan::default());
    run(
        &Db::open(Box::new(dry.clone()), o.clone()).unwrap(),
        &ops,
        sync,
    );
    let writes = dry.with(|d| d.counts().1);
    let plan = FaultPlan {
        tear_bytes: true,
        ..FaultPlan::crash_after_writes(rng.gen_range(0..=writes), seed)
    };
    let dev = device(preset, plan);
    let (states, durable, crashed, held) = match Db::open(Box::new(dev.clone()), o.clone()) {
        Ok(db) => {
            let (states, durable, crashed) = run(&db, &ops, sync);
            (states, durable, crashed, db.stats().memtable_keys > 0)
        }
        Err(Error::Device(DeviceError::Crashed)) => (vec![Model::new()], 0, true, false),
        Err(e) => panic!("open: {e}"),
    };
    let dev = dev.take().restart(FaultPlan::default()).unwrap();
    let db = Db::open(Box::new(dev), o.clone())
        .unwrap_or_else(|e| panic!("seed {seed} {preset} {kind:?}: reopen failed: {e}"));
    let got: Model = db.scan(..).unwrap().into_iter().collect();
    assert!(
        states[durable..].contains(&got),
        "seed {seed} {preset} {kind:?} frames={frames} sync={sync} memtable={memtable}: recovered state matches no allowed state"
    );
    db.put(b"after", b"crash").unwrap();
    db.flush().unwrap();
    match memtable {
        0 => crashed.into(),
        _ => Tally::memtable(crashed, held),
    }
}

fn many(test: &str, preset: &str, kind: StoreKind, seeds: std::ops::Range<u64>) {
    let t = cases(test, seeds, |s| case(s, preset, kind));
    t.assert_hits(test, 70);
    // Of the memtable cases, at least a quarter crash while it holds pairs.
    t.assert_held(test, 25);
}

#[test]
fn fault_device_ipl_on_raw_nand() {
    let kind = StoreKind::InPageLogging(IplGeometry::seed());
    many("fault_device_ipl_on_raw_nand", "nand-ipl", kind, 0..400);
}

#[test]
fn fault_device_in_place_on_raw_nand() {
    many(
        "fault_device_in_place_on_raw_nand",
        "nand-ipl",
        StoreKind::InPlace,
        1000..1400,
    );
}

#[test]
fn fault_device_both_on_an_ftl_ssd() {
    let test = "fault_device_both_on_an_ftl_ssd";
    let kind = StoreKind::InPageLogging(IplGeometry::shared());
    many(test, "nvme", kind, 2000..2300);
    many(test, "nvme", StoreKind::InPlace, 3000..3300);
}

#[test]
fn fault_device_two_device_on_an_ssd_and_a_disk() {
    let test = "fault_device_two_device_on_an_ssd_and_a_disk";
    let pair = "ssd-x25m+hdd-7200";
    many(
        test,
        pair,
        StoreKind::TwoDevice(Placement::IndexOnFast),
        4000..4200,
    );
    many(
        test,
        pair,
        StoreKind::TwoDevice(Placement::HotCold),
        5000..5200,
    );
}
