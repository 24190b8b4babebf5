//! Power loss with the device layer's `FaultDevice` around both the SSD
//! (a 4 MiB DRAM-model SSD, so the log wraps and commits) and the HDD
//! (`hdd-7200`): power fails during a random write
//! of either; after recovery every write acknowledged by a completed flush
//! reads back, and every 512-byte piece holds its acknowledged value or one
//! written after that flush.

use std::sync::{Arc, Mutex};

use flashkv_device::{
    presets, BlockDevice, Completion, DeviceSpec, DeviceStats, FaultDevice, FaultPlan, Geometry,
    Nanos, Result, SimDevice,
};
use flashkv_hybrid::{HybridDevice, Options};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const SECTOR: usize = 4096;
const PIECE: usize = 512;
const SECTORS: u64 = 256; // the first 1 MiB of the HDD
const BASE: u64 = 7 << 30; // somewhere inside the disk

/// A `FaultDevice` the test can take back after the hybrid is gone.
struct Shared(Arc<Mutex<FaultDevice<SimDevice>>>);

impl BlockDevice for Shared {
    fn geometry(&self) -> Geometry {
        self.0.lock().unwrap().geometry()
    }
    fn read_at(&mut self, at: Nanos, o: u64, b: &mut [u8]) -> Result<Completion> {
        self.0.lock().unwrap().read_at(at, o, b)
    }
    fn write_at(&mut self, at: Nanos, o: u64, b: &[u8]) -> Result<Completion> {
        self.0.lock().unwrap().write_at(at, o, b)
    }
    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.0.lock().unwrap().flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, o: u64, l: u64) -> Result<Completion> {
        self.0.lock().unwrap().trim_at(at, o, l)
    }
    fn clock(&self) -> Nanos {
        self.0.lock().unwrap().clock()
    }
    fn stats(&self) -> DeviceStats {
        self.0.lock().unwrap().stats()
    }
}

fn tag_of(piece: &[u8]) -> Option<u64> {
    let t = u64::from_le_bytes(piece[..8].try_into().unwrap());
    piece.chunks(8).all(|c| c == t.to_le_bytes()).then_some(t)
}

fn options() -> Options {
    Options {
        // Small rounds and early pressure, so crashes land mid-flush too.
        round_bytes: 64 << 10,
        max_flush_write: 16 << 10,
        promote_after: 1,
        ..Options::default()
    }
}

/// Returns (operations before the crash, pieces acknowledged non-zero).
fn run(seed: u64) -> std::result::Result<(u64, usize), TestCaseError> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let spec = DeviceSpec::from_toml(
        "capacity = \"4 MiB\"\n[model]\nkind = \"dram\"\nread_overhead_us = 20.0\nwrite_overhead_us = 20.0\nread_mb_per_s = 300.0\nwrite_mb_per_s = 300.0\n",
        "small-ssd",
    )
    .unwrap();
    let ssd = SimDevice::new(&spec).unwrap();
    let hdd = presets::open("hdd-7200").unwrap();
    let on_ssd = rng.gen_bool(0.6);
    let n = if on_ssd {
        rng.gen_range(3..1500)
    } else {
        rng.gen_range(3..300)
    };
    let plan = |crash: bool| FaultPlan {
        crash_after_writes: crash.then_some(n),
        seed,
        tear: true,
        ..FaultPlan::default()
    };
    let fs = Arc::new(Mutex::new(FaultDevice::new(ssd, plan(on_ssd))));
    let fh = Arc::new(Mutex::new(FaultDevice::new(hdd, plan(!on_ssd))));
    let mut dev = HybridDevice::create(
        Box::new(Shared(fs.clone())),
        Box::new(Shared(fh.clone())),
        options(),
    )
    .unwrap();
    let pieces = SECTORS as usize * SECTOR / PIECE;
    let (mut latest, mut acked) = (vec![0u64; pieces], vec![0u64; pieces]);
    let mut since: Vec<Vec<u64>> = vec![Vec::new(); pieces];
    let mut now = dev.clock();
    let mut ops = 0;
    for id in 1u64.. {
        ops = id;
        let r = match rng.gen_range(0..10) {
            0..=6 => {
                let s = rng.gen_range(0..SECTORS - 20);
                let len = if rng.gen_bool(0.1) {
                    20
                } else {
                    rng.gen_range(1..3)
                };
                let mut data = Vec::new();
                for i in 0..len {
                    data.extend((id << 16 | (s + i)).to_le_bytes().repeat(SECTOR / 8));
                }
                for p in s as usize * 8..(s + len) as usize * 8 {
                    latest[p] = id << 16 | (p as u64 / 8);
                    since[p].push(latest[p]);
                }
                dev.write_at(now, BASE + s * SECTOR as u64, &data)
            }
            7 => {
                let r = dev.flush_at(now);
                if r.is_ok() {
                    acked.clone_from(&latest);
                    since.iter_mut().for_each(Vec::clear);
                }
                r
            }
            8 => {
                now += rng.gen_range(0..50_000_000);
                continue;
            }
            _ => {
                let s = rng.gen_range(0..SECTORS - 4);
                let mut buf = vec![0u8; 4 * SECTOR];
                let r = dev.read_at(now, BASE + s * SECTOR as u64, &mut buf);
                if r.is_ok() {
                    for (k, piece) in buf.chunks(PIECE).enumerate() {
                        prop_assert_eq!(tag_of(piece), Some(latest[s as usize * 8 + k]));
                    }
                }
                r
            }
        };
        match r {
            Ok(c) => now = now.max(c.end),
            Err(_) => break, // power lost
        }
        if id > 5000 {
            break;
        }
    }
    drop(dev);
    // Both lose power at the same instant.
    let take = |a: Arc<Mutex<FaultDevice<SimDevice>>>| {
        Arc::try_unwrap(a)
            .ok()
            .unwrap()
            .into_inner()
            .unwrap()
            .recover()
            .unwrap()
    };
    let (ssd, hdd) = (take(fs), take(fh));
    let mut dev = HybridDevice::open(Box::new(ssd), Box::new(hdd), options()).unwrap();
    let mut all = vec![0u8; SECTORS as usize * SECTOR];
    dev.read_at(dev.clock(), BASE, &mut all).unwrap();
    for (p, piece) in all.chunks(PIECE).enumerate() {
        let t = tag_of(piece);
        prop_assert!(
            t.is_some_and(|t| t == acked[p] || since[p].contains(&t)),
            "seed {} piece {}: found {:?}, acknowledged {:x}, since {:x?}",
            seed,
            p,
            t,
            acked[p],
            since[p]
        );
    }
    Ok((ops, acked.iter().filter(|&&t| t != 0).count()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn fault_device_power_loss_loses_no_acknowledged_write(seed in any::<u64>()) {
        run(seed)?;
    }
}

#[test]
fn crashes_land_after_acknowledged_writes() {
    let runs: Vec<_> = (0..16).map(|s| run(s).unwrap()).collect();
    eprintln!("{runs:?}");
    assert!(
        runs.iter().all(|&(ops, _)| ops < 5000),
        "every run lost power"
    );
    assert!(runs.iter().filter(|&&(_, acked)| acked > 0).count() >= 8);
}
