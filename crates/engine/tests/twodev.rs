//! The two-device store: pages placed across the fast and the slow device
//! of a pair (seed 002: "Clever data distribution needed (e.g. Index on
//! SSD)"), exactly counted on simulated drives.

use flashkv_device::{
    presets, BlockDevice, DramParams, Geometry, MemDevice, ModelSpec, PairDevice, SimDevice, Tier,
};
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

/// `hdd-7200` without read-ahead: the database here spans a few tracks,
/// which a disk's read-ahead segments would hold, where a database of a
/// real size spans thousands; so every page read is a random read.
fn disk() -> Drive {
    let mut spec = presets::get("hdd-7200").unwrap();
    match &mut spec.model {
        ModelSpec::Hdd(p) => p.read_ahead_segments = 0,
        other => panic!("hdd-7200 is a disk, not {other:?}"),
    }
    Shared::new(SimDevice::new(&spec).unwrap())
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
/// The run on the pair is faster by the ratio the internal levels' reads
/// give, (I + L) t_hdd / (I t_ssd + L t_hdd), with I and L the internal
/// and leaf reads as counted, t_hdd the HDD-only run's time per read and
/// t_ssd the SSD's busy time per read: to within 2 %, the difference
/// between the disk's seeks from leaf to leaf on the pair and from
/// internal page to leaf alone (measured: 1.812x against 1.821x).
#[test]
fn index_on_ssd_beats_the_hdd_on_point_reads_by_the_internal_levels_ratio() {
    let n = 20_000;
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    let (ssd, hdd, alone) = (drive("ssd-x25m"), disk(), disk());
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
    assert_eq!(
        reads_a, reads_b,
        "the same tree and buffer read the same pages"
    );
    assert_eq!(fast_b, 0);
    assert!(alone_ns > 0 && hdd_ns > 0, "both disks read");
    let leaves = reads_a - internal;
    // Every lookup misses its leaf (4 frames for 20,000 keys) and some
    // internal pages: both levels are counted.
    assert!(
        leaves >= 490 && internal > 0,
        "{leaves} leaves, {internal} internal"
    );
    let t_hdd = tb as f64 / reads_b as f64;
    let t_ssd = ssd_ns as f64 / internal as f64;
    let bound = reads_a as f64 * t_hdd / (internal as f64 * t_ssd + leaves as f64 * t_hdd);
    let speedup = tb as f64 / ta as f64;
    assert!(
        t_hdd / t_ssd > 20.0,
        "a random read: {t_hdd} ns on the disk, {t_ssd} on the SSD"
    );
    assert!(
        speedup >= 0.98 * bound,
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
        let s = db.stats();
        assert_eq!(s.store.fast_pages, shape.internal_pages, "{first:?} {s:?}");
        for i in (0..20_000).step_by(997) {
            assert_eq!(db.get(&key(i)).unwrap(), Some(vec![i as u8; 100]));
        }
        // The log is on the first device: commits write there.
        let w0 = [
            ssd.with(|d| d.stats().host_writes),
            hdd.with(|d| d.stats().host_writes),
        ];
        db.put(b"one more", b"commit").unwrap();
        db.flush().unwrap();
        let w1 = [
            ssd.with(|d| d.stats().host_writes),
            hdd.with(|d| d.stats().host_writes),
        ];
        let on = |i: usize| w1[i] > w0[i];
        assert_eq!(
            (on(0), on(1)),
            (first == Tier::Fast, first == Tier::Slow),
            "{first:?}"
        );
    }
}

/// A fast device too small for the index: internal pages that find it full
/// stay on the slow device, counted; nothing is lost.
#[test]
fn a_full_fast_device_leaves_the_rest_of_the_index_on_the_slow_one() {
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    // Checkpoint slots and the log, then room for three pages.
    let ssd = Shared::new(MemDevice::new(Geometry {
        sector_size: 512,
        erase_unit: None,
        capacity: (2 << 20) + (4 << 20) + 3 * 4096,
        program_once: false,
    }));
    let hdd = drive("hdd-7200");
    let fast: Box<dyn BlockDevice> = Box::new(ssd.clone());
    let dev = Box::new(PairDevice::new(fast, Box::new(hdd.clone()), Tier::Fast).unwrap());
    let dev = load(dev, index, 20_000);
    let db = Db::open(dev, opts(index, 64)).unwrap();
    let s = db.stats().store;
    assert_eq!(s.fast_pages, 3);
    assert!(db.shape().unwrap().internal_pages > 3);
    assert!(
        s.fast_full == 0,
        "counted when pages were written, before this open"
    );
    for i in (0..20_000).step_by(101) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![i as u8; 100]));
    }
}

/// A fast device that reads in 0.1 ms and writes 4 KiB in `write_ms`.
fn flash(write_ms: f64) -> Drive {
    let mut spec = presets::get("dram-ssd").unwrap();
    spec.model = ModelSpec::Dram(DramParams {
        sector_size: 512,
        read_overhead_us: 50.0,
        write_overhead_us: write_ms * 1000.0,
        read_mb_per_s: 80.0,
        write_mb_per_s: 80.0,
    });
    Shared::new(SimDevice::new(&spec).unwrap())
}

/// Hot/cold: on a fast device that writes fast, pages read and written
/// move there and stay; on one that writes more slowly than the disk,
/// pages rewritten again and again move back off it, while pages only
/// read stay on it.
#[test]
fn hot_cold_keeps_read_pages_on_the_fast_device_and_rewritten_ones_off_a_slow_writer() {
    let hot = StoreKind::TwoDevice(Placement::HotCold);
    for write_ms in [0.2, 50.0] {
        let (ssd, hdd) = (flash(write_ms), disk());
        let dev = load(pair(&ssd, &hdd, Tier::Slow), hot, 5_000);
        let db = Db::open(dev, opts(hot, 8)).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        // Updates go to keys of their own, after every loaded key: their
        // pages are written, the others' only read. A page moves to the
        // slow writer after reads worth a 50 ms write: the first half of
        // the run settles, the second is measured.
        let hot_key = |i: u32| [&[0xFFu8; 4][..], &i.to_be_bytes()].concat();
        let mut s0 = db.stats().store;
        for r in 0..12_000u32 {
            if r == 6_000 {
                s0 = db.stats().store;
            }
            match r % 2 {
                0 => db.put(&hot_key(r / 2 % 300), &[r as u8; 100]).unwrap(),
                _ => assert!(db.get(&key(rng.gen_range(0..5_000))).unwrap().is_some()),
            }
        }
        db.flush().unwrap();
        let s1 = db.stats().store;
        let delta = |f: fn(&flashkv_engine::StoreStats) -> u64| f(&s1) - f(&s0);
        let read_share = delta(|s| s.fast_reads) as f64 / delta(|s| s.page_reads).max(1) as f64;
        let write_share = delta(|s| s.fast_writes) as f64 / delta(|s| s.page_writes).max(1) as f64;
        assert!(
            read_share > 0.5,
            "{write_ms} ms: reads from the fast device {read_share:.2}"
        );
        match write_ms < 1.0 {
            true => assert!(
                write_share > 0.9,
                "{write_ms} ms: writes there {write_share:.2}"
            ),
            // The fast writes left are copies of pages read (promotions).
            false => assert!(
                write_share < 0.5,
                "{write_ms} ms: writes there {write_share:.2}"
            ),
        }
        let db = Db::open(db.close().unwrap(), opts(hot, 8)).unwrap();
        assert_eq!(db.scan(..).unwrap().len(), 5_300);
    }
}

/// A two-device store lives on a pair, and opens only on one laid out as
/// the one it was made on.
#[test]
fn a_two_device_store_needs_its_pair() {
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    let alone = Box::new(presets::open("hdd-7200").unwrap());
    match Db::open(alone, opts(index, 64)) {
        Err(Error::InvalidOption {
            option: "store",
            why,
        }) => {
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
    match Db::open_existing(
        pair(&ssd, &drive("hdd-desktop"), Tier::Fast),
        opts(index, 64),
    ) {
        Err(Error::InvalidOption {
            option: "store",
            why,
        }) => {
            assert!(why.contains("laid out"), "{why}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// A batch larger than half the log commits: the log moves to a larger
/// region above the pages in use (above the homes on the slow device, or
/// above the slots on the fast one) and comes back; the pair's pages are
/// intact after a reopen.
#[test]
fn a_batch_larger_than_the_log_commits() {
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    let small_log = |frames| {
        Options::builder()
            .store(index)
            .buffer_pages(frames)
            .wal_size(256 << 10)
            .build()
            .unwrap()
    };
    for first in [Tier::Fast, Tier::Slow] {
        let dev = pair(&drive("ssd-x25m"), &drive("hdd-7200"), first);
        let db = Db::open(dev, small_log(1 << 12)).unwrap();
        let mut b = flashkv_engine::WriteBatch::default();
        for i in 0..5_000u32 {
            b.put(&key(i), &[1u8; 100]);
        }
        db.write(b).unwrap();
        db.put(b"after", b"it").unwrap();
        let db = Db::open(db.close().unwrap(), small_log(64)).unwrap();
        assert_eq!(db.scan(..).unwrap().len(), 5_001, "{first:?}");
        let s = db.stats().store;
        assert!(s.fast_pages > 0, "{first:?}: the index is on the SSD");
    }
}

/// With the log on the disk and a fast device that is all slots, nothing
/// lies above the pages for the log to grow into: a batch larger than half
/// the log is refused, nothing applied, as on raw NAND.
#[test]
fn a_batch_larger_than_the_log_is_refused_where_the_log_cannot_grow() {
    let index = StoreKind::TwoDevice(Placement::IndexOnFast);
    let fast = Shared::new(MemDevice::new(Geometry {
        sector_size: 512,
        erase_unit: None,
        capacity: 16 * 4096,
        program_once: false,
    }));
    let slow = Shared::new(MemDevice::new(Geometry {
        sector_size: 512,
        erase_unit: None,
        capacity: 64 << 20,
        program_once: false,
    }));
    let dev = Box::new(PairDevice::new(Box::new(fast), Box::new(slow), Tier::Slow).unwrap());
    let o = Options::builder()
        .store(index)
        .wal_size(256 << 10)
        .build()
        .unwrap();
    let db = Db::open(dev, o).unwrap();
    db.put(b"before", b"it").unwrap();
    let mut b = flashkv_engine::WriteBatch::default();
    for i in 0..5_000u32 {
        b.put(&key(i), &[1u8; 100]);
    }
    assert!(matches!(db.write(b), Err(Error::Full(_))));
    assert_eq!(db.scan(..).unwrap().len(), 1, "nothing applied");
    db.put(b"after", b"it").unwrap();
    assert_eq!(db.scan(..).unwrap().len(), 2);
}
