//! Crash recovery with the device crate's `FaultDevice` over simulated raw
//! NAND and an FTL SSD: power lost at a random write, unflushed writes
//! surviving, lost or torn as its seeded plan decides.

use std::sync::{Arc, Mutex};

use flashkv_device::{
    presets, BlockDevice, Completion, DeviceError, DeviceStats, FaultDevice, FaultPlan, Geometry,
    Nanos, SimDevice,
};
use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

mod common;
use common::{run, workload, Model};

/// A `FaultDevice` the test can take back after the store that owns it crashed.
#[derive(Clone)]
struct Shared(Arc<Mutex<Option<FaultDevice<SimDevice>>>>);

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut FaultDevice<SimDevice>) -> T) -> T {
        f(self.0.lock().unwrap().as_mut().expect("device present"))
    }
    fn take(&self) -> FaultDevice<SimDevice> {
        self.0.lock().unwrap().take().expect("device present")
    }
}

impl BlockDevice for Shared {
    fn geometry(&self) -> Geometry {
        self.with(|d| d.geometry())
    }
    fn read_at(&mut self, at: Nanos, o: u64, b: &mut [u8]) -> flashkv_device::Result<Completion> {
        self.with(|d| d.read_at(at, o, b))
    }
    fn write_at(&mut self, at: Nanos, o: u64, b: &[u8]) -> flashkv_device::Result<Completion> {
        self.with(|d| d.write_at(at, o, b))
    }
    fn flush_at(&mut self, at: Nanos) -> flashkv_device::Result<Completion> {
        self.with(|d| d.flush_at(at))
    }
    fn trim_at(&mut self, at: Nanos, o: u64, l: u64) -> flashkv_device::Result<Completion> {
        self.with(|d| d.trim_at(at, o, l))
    }
    fn erase_at(&mut self, at: Nanos, u: u64) -> flashkv_device::Result<Completion> {
        self.with(|d| d.erase_at(at, u))
    }
    fn is_programmed(&self, o: u64, l: u64) -> bool {
        self.with(|d| d.is_programmed(o, l))
    }
    fn clock(&self) -> Nanos {
        self.with(|d| d.clock())
    }
    fn stats(&self) -> DeviceStats {
        self.with(|d| d.stats())
    }
}

fn opts(kind: StoreKind, frames: usize, sync: bool) -> Options {
    Options::default()
        .store(kind)
        .buffer_pages(frames)
        .sync(sync)
        .wal_size(1 << 20)
        .max_size(12 << 20)
}

fn case(seed: u64, preset: &str, kind: StoreKind) -> bool {
    let mut rng = SmallRng::seed_from_u64(seed);
    let frames = [1, 4, 32][rng.gen_range(0..3)];
    let sync = rng.gen_bool(0.3);
    let n = rng.gen_range(10..50);
    let keys = 150;
    let ops = workload(&mut rng, n, keys);
    let o = opts(kind, frames, sync);
    let dry = Shared(Arc::new(Mutex::new(Some(FaultDevice::new(
        presets::open(preset).unwrap(),
        FaultPlan::default(),
    )))));
    run(
        &Db::open(Box::new(dry.clone()), o.clone()).unwrap(),
        &ops,
        sync,
    );
    let writes = dry.with(|d| d.counts().1);
    let plan = FaultPlan::crash_after_writes(rng.gen_range(0..=writes), seed);
    let dev = Shared(Arc::new(Mutex::new(Some(FaultDevice::new(
        presets::open(preset).unwrap(),
        plan,
    )))));
    let (states, durable, crashed) = match Db::open(Box::new(dev.clone()), o.clone()) {
        Ok(db) => run(&db, &ops, sync),
        Err(Error::Device(DeviceError::Crashed)) => (vec![Model::new()], 0, true),
        Err(e) => panic!("open: {e}"),
    };
    let inner = dev.take().recover().unwrap();
    let db = Db::open(Box::new(inner), o.clone())
        .unwrap_or_else(|e| panic!("seed {seed} {preset} {kind:?}: reopen failed: {e}"));
    let got: Model = db.scan(..).unwrap().into_iter().collect();
    assert!(
        states[durable..].contains(&got),
        "seed {seed} {preset} {kind:?} frames={frames} sync={sync}: recovered state matches no allowed state"
    );
    db.put(b"after", b"crash").unwrap();
    db.flush().unwrap();
    crashed
}

fn many(preset: &str, kind: StoreKind, seeds: std::ops::Range<u64>) {
    let total = seeds.end - seeds.start;
    let crashed = seeds.filter(|&s| case(s, preset, kind)).count() as u64;
    assert!(
        crashed * 10 >= total * 7,
        "{crashed} of {total} cases crashed"
    );
}

#[test]
fn fault_device_ipl_on_raw_nand() {
    many(
        "nand-ipl",
        StoreKind::InPageLogging(IplGeometry::seed()),
        0..400,
    );
}

#[test]
fn fault_device_in_place_on_raw_nand() {
    many("nand-ipl", StoreKind::InPlace, 1000..1400);
}

#[test]
fn fault_device_both_on_an_ftl_ssd() {
    many(
        "nvme",
        StoreKind::InPageLogging(IplGeometry::shared()),
        2000..2300,
    );
    many("nvme", StoreKind::InPlace, 3000..3300);
}
