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

fn small_ssd() -> SimDevice {
    let spec = DeviceSpec::from_toml(
        "capacity = \"4 MiB\"\n[model]\nkind = \"dram\"\nread_overhead_us = 20.0\nwrite_overhead_us = 20.0\nread_mb_per_s = 300.0\nwrite_mb_per_s = 300.0\n",
        "small-ssd",
    )
    .unwrap();
    SimDevice::new(&spec).unwrap()
}

type Fault = Arc<Mutex<FaultDevice<SimDevice>>>;

/// A hybrid on fault-wrapped devices (the SSD's with `ssd_plan`).
fn machine(ssd_plan: FaultPlan, opts: Options) -> (HybridDevice, Fault, Fault) {
    let fs = Arc::new(Mutex::new(FaultDevice::new(small_ssd(), ssd_plan)));
    let hdd = presets::open("hdd-7200").unwrap();
    let fh = Arc::new(Mutex::new(FaultDevice::new(hdd, FaultPlan::default())));
    let dev = HybridDevice::create(
        Box::new(Shared(fs.clone())),
        Box::new(Shared(fh.clone())),
        opts,
    )
    .unwrap();
    (dev, fs, fh)
}

/// Both devices lose power; what survived.
fn power_cut(fs: Fault, fh: Fault) -> (SimDevice, SimDevice) {
    let take = |a: Fault| {
        Arc::try_unwrap(a)
            .ok()
            .unwrap()
            .into_inner()
            .unwrap()
            .recover()
            .unwrap()
    };
    (take(fs), take(fh))
}

/// The hazard of a commit: sector x is acknowledged as A, then rewritten as
/// B (not flushed), and a commit releases A's record while B's record is
/// still ahead of the worker. If power fails after the superblock write, B's
/// record must already be durable, or x would read the HDD's older data.
/// Power is cut at every SSD operation of the drain, under several seeds'
/// choices of which unflushed writes survive.
#[test]
fn a_commit_never_releases_a_record_whose_successor_is_volatile() {
    let x = 3 << 30;
    let opts = Options {
        round_bytes: 8 << 10, // one record a round: commits come mid-drain
        ..options()
    };
    let script = |dev: &mut HybridDevice, fs: &Fault| -> (u64, flashkv_device::Result<()>) {
        let mut start = 0;
        let r = (|| {
            let t = dev.clock();
            dev.write_at(t, x, &[0xAA; 4096])?; // flushed to the HDD below
            dev.drain(dev.clock())?;
            dev.write_at(dev.clock(), x, &[0xA1; 4096])?; // A
            dev.flush_at(dev.clock())?; // A acknowledged
            for i in 0..100u64 {
                // Others, so that a commit comes before the worker reaches B.
                dev.write_at(dev.clock(), (1 << 30) + i * 8192, &[i as u8; 4096])?;
            }
            dev.write_at(dev.clock(), x, &[0xB2; 4096])?; // B, volatile
            start = fs.lock().unwrap().counts().0;
            dev.drain(dev.clock())?;
            Ok(())
        })();
        (start, r)
    };
    let (mut dev, fs, _fh) = machine(FaultPlan::default(), opts.clone());
    let (start, r) = script(&mut dev, &fs);
    r.unwrap();
    assert!(
        dev.hybrid_stats().commits >= 2,
        "the drain committed more than once"
    );
    let total = fs.lock().unwrap().counts().0;
    drop(dev);
    for crash in start..total {
        for seed in 0..10 {
            let plan = FaultPlan {
                crash_after_ops: Some(crash),
                seed,
                tear: true,
                ..FaultPlan::default()
            };
            let (mut dev, fs, fh) = machine(plan, opts.clone());
            assert!(script(&mut dev, &fs).1.is_err(), "power fails in the drain");
            drop(dev);
            let (ssd, hdd) = power_cut(fs, fh);
            let mut dev = HybridDevice::open(Box::new(ssd), Box::new(hdd), opts.clone()).unwrap();
            let mut buf = [0u8; 4096];
            dev.read_at(dev.clock(), x, &mut buf).unwrap();
            assert!(
                buf == [0xA1; 4096] || buf == [0xB2; 4096],
                "crash at op {crash} seed {seed}: {:x}",
                buf[0]
            );
        }
    }
}

/// Returns (operations before the crash, pieces acknowledged non-zero).
fn run(seed: u64) -> std::result::Result<(u64, usize), TestCaseError> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let ssd = small_ssd();
    let hdd = presets::open("hdd-7200").unwrap();
    let on_ssd = rng.gen_bool(0.6);
    let n = if on_ssd {
        rng.gen_range(3..1500)
    } else {
        rng.gen_range(3..300)
    };
    // Counting every operation, power can also fail during a flush or read
    // (between a superblock write and the flush that follows it, say).
    let by_ops = rng.gen_bool(0.5);
    let plan = |crash: bool| FaultPlan {
        crash_after_writes: (crash && !by_ops).then_some(n),
        crash_after_ops: (crash && by_ops).then_some(2 * n),
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
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
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
