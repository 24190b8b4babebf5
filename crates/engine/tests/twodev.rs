//! The two-device store: pages placed across the fast and the slow device
//! of a pair (seed 002: "Clever data distribution needed (e.g. Index on
//! SSD)"), exactly counted on simulated drives.

use flashkv_device::{presets, BlockDevice, PairDevice, SimDevice, Tier};
use flashkv_engine::{Db, Error, Options, Placement, StoreKind};
use flashkv_testing::Shared;
use rand::{rngs::SmallRng, Rng, SeedableRng};

type Drive = Shared<SimDevice>;

fn drive(preset: &str) -> Drive {
    Shared::new(presets::open(preset).unwrap())
}

/// A pair of the two drives (handles kept to read each one's counters).
fn pair(fast: &Drive, slow: &Drive, first: Tier) -> Box<dyn BlockDevice> {
    Box::new(PairDevice::new(Box::new(fast.clone()), Box::new(slow.clone()), first).unwrap())
}

fn busy(d: &Drive) -> u64 {
    d.with(|d| d.stats().busy_ns)
}

fn opts(kind: StoreKind, frames: usize) -> Options {
    Options::builder()
        .store(kind)
        .buffer_pages(frames)
        .wal_size(4 << 20)
        .build()
        .unwrap()
}

fn key(i: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&i.wrapping_mul(2_654_435_761).to_be_bytes());
    k[4..8].copy_from_slice(&i.to_be_bytes());
    k
}

/// `n` keys with 100-byte values, in batches, then closed (every page
/// written back where the placement puts it).
fn load(dev: Box<dyn BlockDevice>, kind: StoreKind, n: u32) -> Box<dyn BlockDevice> {
    let db = Db::open(dev, opts(kind, 1 << 14)).unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut b = flashkv_engine::WriteBatch::default();
        for &i in chunk {
            b.put(&key(i), &[i as u8; 100]);
        }
        db.write(b).unwrap();
    }
    db.close().unwrap()
}

/// (device time, page reads, of them from the fast device) of `reads`
/// random point reads with a buffer of `frames` pages.
fn point_reads(dev: Box<dyn BlockDevice>, kind: StoreKind, n: u32, reads: u32) -> (u64, u64, u64) {
    let db = Db::open(dev, opts(kind, 4)).unwrap();
    let mut rng = SmallRng::seed_from_u64(7);
    let s0 = db.stats();
    for _ in 0..reads {
        let i = rng.gen_range(0..n);
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![i as u8; 100]));
    }
    let s1 = db.stats();
    (
        s1.device_clock_ns - s0.device_clock_ns,
        s1.store.page_reads - s0.store.page_reads,
        s1.store.fast_reads - s0.store.fast_reads,
    )
}

/// Index on the SSD against data and index on the HDD: the same tree and
/// buffer make the same page reads; the internal ones come from the SSD.
/// The host waits for each read, so each run's time is its drives' busy
/// time, exactly; and the run on the pair is faster by at least the ratio
/// the internal levels' reads give, (I + L) t_hdd / (I t_ssd + L t_hdd),
/// with I and L the internal and leaf reads as counted and t_hdd, t_ssd
/// the drives' mean read times as timed (the HDD's from the HDD-only run).
#[test]
fn index_on_ssd_beats_the_hdd_on_point_reads_by_the_internal_levels_ratio() {
    let n = 20_000;
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    let (ssd, hdd, alone) = (drive("ssd-x25m"), drive("hdd-7200"), drive("hdd-7200"));
    let a = load(pair(&ssd, &hdd, Tier::Fast), index, n);
    let b = load(Box::new(alone.clone()), StoreKind::InPlace, n);
    let busy0 = [busy(&ssd), busy(&hdd), busy(&alone)];
    let (ta, reads_a, internal) = point_reads(a, index, n, 500);
    let (tb, reads_b, fast_b) = point_reads(b, StoreKind::InPlace, n, 500);
    let [ssd_ns, hdd_ns, alone_ns] = [busy(&ssd), busy(&hdd), busy(&alone)]
        .iter()
        .zip(busy0)
        .map(|(b, b0)| b - b0)
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    assert_eq!(reads_a, reads_b, "the same tree and buffer read the same pages");
    assert_eq!(fast_b, 0);
    assert_eq!((ta, tb), (ssd_ns + hdd_ns, alone_ns), "time is the drives' busy time");
    let leaves = reads_a - internal;
    // Every lookup misses its leaf (4 frames for 20,000 keys) and some
    // internal pages: both levels are counted.
    assert!(leaves >= 490 && internal > 0, "{leaves} leaves, {internal} internal");
    let t_hdd = tb as f64 / reads_b as f64;
    let t_ssd = ssd_ns as f64 / internal as f64;
    let bound = reads_a as f64 * t_hdd / (internal as f64 * t_ssd + leaves as f64 * t_hdd);
    let speedup = tb as f64 / ta as f64;
    eprintln!("I {internal} L {leaves} t_ssd {t_ssd:.0} t_hdd {t_hdd:.0} (pair's hdd {:.0}) speedup {speedup:.4} bound {bound:.4}", hdd_ns as f64 / leaves as f64);
    assert!(
        speedup >= bound,
        "index on the SSD {speedup:.3}x faster; the internal levels' reads alone give {bound:.3}x"
    );
}

/// Index on the fast device: after a close, exactly the internal pages
/// are there (a free page stays where it was, and none is free here), the
/// data reads back after a reopen, with the log on either device.
#[test]
fn index_on_fast_puts_exactly_the_internal_pages_on_the_fast_device() {
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    for first in [Tier::Fast, Tier::Slow] {
        let (ssd, hdd) = (drive("ssd-x25m"), drive("hdd-7200"));
        let dev = load(pair(&ssd, &hdd, first), index, 20_000);
        let db = Db::open(dev, opts(index, 64)).unwrap();
        let shape = db.shape().unwrap();
        assert!(shape.height >= 3 && shape.free_pages == 0, "{shape:?}");
        assert_eq!(db.stats().store.fast_pages, shape.internal_pages, "{first:?}");
        for i in (0..20_000).step_by(997) {
            assert_eq!(db.get(&key(i)).unwrap(), Some(vec![i as u8; 100]));
        }
        // The log is on the first device: commits write there.
        let w0 = [ssd.with(|d| d.stats().host_writes), hdd.with(|d| d.stats().host_writes)];
        db.put(b"one more", b"commit").unwrap();
        db.flush().unwrap();
        let w1 = [ssd.with(|d| d.stats().host_writes), hdd.with(|d| d.stats().host_writes)];
        let on = |i: usize| w1[i] > w0[i];
        assert_eq!((on(0), on(1)), (first == Tier::Fast, first == Tier::Slow), "{first:?}");
    }
}

/// A fast device too small for the index: internal pages that find it full
/// stay on the slow device, counted; nothing is lost.
#[test]
fn a_full_fast_device_leaves_the_rest_of_the_index_on_the_slow_one() {
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    let mut spec = presets::get("nvme").unwrap();
    spec.capacity = (2 << 20) + (4 << 20) + 3 * 4096; // slots, log: three pages left
    let ssd = Shared::new(SimDevice::new(&spec).unwrap());
    let hdd = drive("hdd-7200");
    let dev = load(pair(&ssd, &hdd, Tier::Fast), index, 20_000);
    let db = Db::open(dev, opts(index, 64)).unwrap();
    let s = db.stats().store;
    assert_eq!(s.fast_pages, 3);
    assert!(db.shape().unwrap().internal_pages > 3);
    assert!(s.fast_full == 0, "counted when pages were written, before this open");
    for i in (0..20_000).step_by(101) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![i as u8; 100]));
    }
}

/// Hot/cold: pages read again and again move to a fast device that reads
/// fast; pages rewritten again and again move off one that writes slowly
/// (`ssd-lowend`, whose random writes cost a block merge).
#[test]
fn hot_cold_moves_read_pages_to_the_fast_device_and_rewritten_ones_off_a_slow_writer() {
    let hot = StoreKind::TwoDevice(Placement::HotCold);
    for (fast, writes) in [("ssd-x25m", false), ("ssd-lowend", true)] {
        let (ssd, hdd) = (drive(fast), drive("hdd-7200"));
        let dev = load(pair(&ssd, &hdd, Tier::Slow), hot, 5_000);
        let db = Db::open(dev, opts(hot, 8).clone()).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        let s0 = db.stats().store;
        for r in 0..3_000u32 {
            let i = rng.gen_range(0..5_000);
            if writes {
                db.put(&key(i % 500), &[r as u8; 100]).unwrap();
            } else {
                assert!(db.get(&key(i)).unwrap().is_some());
            }
        }
        db.flush().unwrap();
        let s1 = db.stats().store;
        let share = (s1.fast_reads - s0.fast_reads) as f64 / (s1.page_reads - s0.page_reads).max(1) as f64;
        eprintln!("{fast}: {s1:?} share {share:.3}");
        if writes {
            assert!(s1.demotions > s0.demotions, "{fast}: rewritten pages left the SSD");
        } else {
            assert!(share > 0.5, "{fast}: most reads come from the SSD ({share:.2})");
        }
        let db = Db::open(db.close().unwrap(), opts(hot, 8)).unwrap();
        assert_eq!(db.scan(..).unwrap().len(), 5_000);
    }
}

/// A two-device store lives on a pair, and opens only on one laid out as
/// the one it was made on.
#[test]
fn a_two_device_store_needs_its_pair() {
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    let alone = Box::new(presets::open("hdd-7200").unwrap());
    match Db::open(alone, opts(index, 64)) {
        Err(Error::InvalidOption { option: "store", why }) => {
            assert!(why.contains("PairDevice"), "{why}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let (ssd, hdd) = (drive("ssd-x25m"), drive("hdd-7200"));
    drop(load(pair(&ssd, &hdd, Tier::Fast), index, 100));
    let db = Db::open(pair(&ssd, &hdd, Tier::Fast), opts(index, 64)).unwrap();
    assert_eq!(db.scan(..).unwrap().len(), 100);
    db.close().unwrap();
    // Another slow drive, of another size: the map's layout is not this pair's.
    match Db::open_existing(pair(&ssd, &drive("hdd-15k"), Tier::Fast), opts(index, 64)) {
        Err(Error::InvalidOption { option: "store", why }) => {
            assert!(why.contains("laid out"), "{why}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}
