//! Power loss with the device layer's `FaultDevice` around both the SSD
//! (a 4 MiB DRAM-model SSD, so the log wraps and commits) and the HDD
//! (`hdd-7200`): power fails during a random write
//! of either; after recovery every write acknowledged by a completed flush
//! reads back, and every 512-byte piece holds its acknowledged value or one
//! written after that flush.

mod common;

use common::{Dev, Machine};
use flashkv_device::{presets, BlockDevice, DeviceSpec, FaultPlan, SimDevice};
use flashkv_hybrid::{HybridDevice, Options};
use flashkv_testing::cases;
use rand::{Rng, SeedableRng};

const SECTOR: usize = 4096;
const PIECE: usize = 512;
const SECTORS: u64 = 256; // the first 1 MiB of the HDD
const BASE: u64 = 7 << 30; // somewhere inside the disk

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

/// A hybrid on fault-wrapped devices (the SSD's with `ssd_plan`).
fn machine(ssd_plan: FaultPlan, opts: Options) -> (HybridDevice, Machine) {
    let hdd = presets::open("hdd-7200").unwrap();
    let m = Machine::new(small_ssd(), hdd, ssd_plan, FaultPlan::default());
    (m.create(opts).unwrap(), m)
}

/// Both devices lose power; the hybrid reopened on what survived.
fn reopen(m: Machine, opts: Options) -> HybridDevice {
    let m = m.power_cut(FaultPlan::default(), FaultPlan::default());
    m.open(opts).unwrap()
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
    let script = |dev: &mut HybridDevice, fs: &Dev| -> (u64, flashkv_device::Result<()>) {
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
            start = fs.with(|d| d.counts().0);
            dev.drain(dev.clock())?;
            Ok(())
        })();
        (start, r)
    };
    let (mut dev, m) = machine(FaultPlan::default(), opts.clone());
    let (start, r) = script(&mut dev, &m.ssd);
    r.unwrap();
    assert!(
        dev.hybrid_stats().commits >= 2,
        "the drain committed more than once"
    );
    let total = m.ssd.with(|d| d.counts().0);
    drop(dev);
    let mut n = 0;
    for crash in start..total {
        for seed in 0..10 {
            let plan = FaultPlan {
                crash_after_ops: Some(crash),
                seed,
                tear: true,
                ..FaultPlan::default()
            };
            let (mut dev, m) = machine(plan, opts.clone());
            assert!(
                script(&mut dev, &m.ssd).1.is_err(),
                "power fails in the drain"
            );
            drop(dev);
            let mut dev = reopen(m, opts.clone());
            n += 1;
            let mut buf = [0u8; 4096];
            dev.read_at(dev.clock(), x, &mut buf).unwrap();
            assert!(
                buf == [0xA1; 4096] || buf == [0xB2; 4096],
                "crash at op {crash} seed {seed}: {:x}",
                buf[0]
            );
        }
    }
    // Every case's power loss struck in the drain (asserted above).
    let test = "a_commit_never_releases_a_record_whose_successor_is_volatile";
    flashkv_testing::report(&format!("{test}: {n} fault cases run, {n} struck\n"));
}

/// What the host wrote, per 512-byte piece: the latest value, the value
/// the last completed flush acknowledged, and every value since.
struct Oracle {
    latest: Vec<u64>,
    acked: Vec<u64>,
    since: Vec<Vec<u64>>,
}

/// One host request; `None` for idle time, `Some(Err)` once power is lost.
fn step(
    dev: &mut HybridDevice,
    o: &mut Oracle,
    rng: &mut rand::rngs::SmallRng,
    now: &mut u64,
    id: u64,
) -> Option<flashkv_device::Result<flashkv_device::Completion>> {
    Some(match rng.gen_range(0..10) {
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
                o.latest[p] = id << 16 | (p as u64 / 8);
                o.since[p].push(o.latest[p]);
            }
            dev.write_at(*now, BASE + s * SECTOR as u64, &data)
        }
        7 => {
            let r = dev.flush_at(*now);
            if r.is_ok() {
                o.acked.clone_from(&o.latest);
                o.since.iter_mut().for_each(Vec::clear);
            }
            r
        }
        8 => {
            *now += rng.gen_range(0..50_000_000);
            return None;
        }
        _ => {
            let s = rng.gen_range(0..SECTORS - 4);
            let mut buf = vec![0u8; 4 * SECTOR];
            let r = dev.read_at(*now, BASE + s * SECTOR as u64, &mut buf);
            if r.is_ok() {
                for (k, piece) in buf.chunks(PIECE).enumerate() {
                    assert_eq!(tag_of(piece), Some(o.latest[s as usize * 8 + k]));
                }
            }
            r
        }
    })
}

/// Power fails during a random write or operation of the SSD or the HDD;
/// returns whether it struck before the workload's end.
fn run(seed: u64) -> bool {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
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
    let hdd = presets::open("hdd-7200").unwrap();
    let m = Machine::new(small_ssd(), hdd, plan(on_ssd), plan(!on_ssd));
    let mut dev = m.create(options()).unwrap();
    let pieces = SECTORS as usize * SECTOR / PIECE;
    let mut o = Oracle {
        latest: vec![0; pieces],
        acked: vec![0; pieces],
        since: vec![Vec::new(); pieces],
    };
    let mut now = dev.clock();
    let mut struck = false;
    for id in 1..=5000u64 {
        match step(&mut dev, &mut o, &mut rng, &mut now, id) {
            None => {}
            Some(Ok(c)) => now = now.max(c.end),
            Some(Err(_)) => {
                struck = true;
                break;
            }
        }
        if id % 64 == 0 {
            dev.check_invariants().unwrap();
        }
    }
    drop(dev);
    // Both lose power at the same instant.
    let mut dev = reopen(m, options());
    dev.check_invariants().unwrap();
    let mut all = vec![0u8; SECTORS as usize * SECTOR];
    dev.read_at(dev.clock(), BASE, &mut all).unwrap();
    for (p, piece) in all.chunks(PIECE).enumerate() {
        let t = tag_of(piece);
        assert!(
            t.is_some_and(|t| t == o.acked[p] || o.since[p].contains(&t)),
            "piece {p}: found {t:?}, acknowledged {:x}, since {:x?}",
            o.acked[p],
            o.since[p]
        );
    }
    struck
}

#[test]
fn fault_device_power_loss_loses_no_acknowledged_write() {
    let test = "fault_device_power_loss_loses_no_acknowledged_write";
    let t = cases(test, 0..160, run);
    // Almost every case loses power inside its workload.
    t.assert_hits(test, 90);
}
