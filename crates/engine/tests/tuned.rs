//! Scans with an [`IoProfile`]: the same answers as page-at-a-time
//! scans (buffered dirty pages, deletes and overflow values included), and
//! large sequential reads where a scan covers most of a store.

use std::ops::Bound;

use flashkv_device::presets;
use flashkv_engine::{
    Db, IoProfile, IplGeometry, LabOptions, Options, OptionsBuilder, StoreKind, WriteBatch,
};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// A disk-like profile: 1 MiB requests, scans above 2 % read sequentially.
const DISK: IoProfile = IoProfile {
    scan_read_bytes: 1 << 20,
    seq_write_bytes: 1 << 20,
    breakeven_fraction: 0.02,
};

#[derive(Debug, Clone)]
enum Step {
    Put(u16, usize),
    Delete(u16),
    Flush,
    Scan(u16, u16, bool, bool),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (0u16..2000, prop_oneof![8 => 0usize..150, 1 => 3000usize..9000])
            .prop_map(|(k, n)| Step::Put(k, n)),
        4 => (0u16..2000).prop_map(Step::Delete),
        1 => Just(Step::Flush),
        2 => (0u16..2000, 0u16..2000, any::<bool>(), any::<bool>())
            .prop_map(|(a, b, r, u)| Step::Scan(a, b, r, u)),
    ]
}

fn key(k: u16) -> [u8; 2] {
    k.to_be_bytes()
}

/// Keys, value lengths and a checksum of the values of a scan (short to print).
fn scan(db: &Db, a: u16, b: u16, reverse: bool, unbounded: bool) -> Vec<(Vec<u8>, usize, u32)> {
    let (lo, hi) = (key(a.min(b)), key(a.max(b)));
    let range = if unbounded {
        (Bound::Unbounded, Bound::Unbounded)
    } else {
        (Bound::Included(&lo[..]), Bound::Excluded(&hi[..]))
    };
    db.scan_dir(range, reverse, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.len(), v.iter().map(|&b| u32::from(b)).sum()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Both stores, a small pool (so some pages are dirty in the pool and
    /// some on the device only), runs of a few pages and a breakeven of 0
    /// (every unlimited scan reads runs), keys filled in random order.
    #[test]
    fn tuned_scans_return_what_untuned_scans_return(
        ipl in any::<bool>(),
        frames in 2usize..24,
        steps in proptest::collection::vec(step(), 1..400),
    ) {
        let kind = if ipl {
            StoreKind::InPageLogging(IplGeometry::seed())
        } else {
            StoreKind::InPlace
        };
        let base = Options::builder().store(kind).buffer_pages(frames);
        let io = IoProfile { scan_read_bytes: 16 << 10, seq_write_bytes: 16 << 10, breakeven_fraction: 0.0 };
        let open = |o: OptionsBuilder| Db::open(Box::new(presets::open("dram-ssd").unwrap()), o.build().unwrap()).unwrap();
        // The tuned store checkpoints at close, so that reopened it holds
        // nothing in its pool (a close may otherwise leave pages to the log).
        let (plain, tuned) = (open(base.clone()), open(base.clone().io_profile(io).close_checkpoint(true)));
        for s in &steps {
            match *s {
                Step::Put(k, n) => {
                    let v = vec![k as u8; n];
                    plain.put(&key(k), &v).unwrap();
                    tuned.put(&key(k), &v).unwrap();
                }
                Step::Delete(k) => {
                    prop_assert_eq!(plain.delete(&key(k)).unwrap(), tuned.delete(&key(k)).unwrap());
                }
                Step::Flush => {
                    plain.checkpoint().unwrap();
                    tuned.checkpoint().unwrap();
                }
                Step::Scan(a, b, r, u) => {
                    prop_assert_eq!(scan(&plain, a, b, r, u), scan(&tuned, a, b, r, u));
                }
            }
        }
        prop_assert_eq!(scan(&plain, 0, 0, false, true), scan(&tuned, 0, 0, false, true));
        prop_assert_eq!(scan(&plain, 0, 0, true, true), scan(&tuned, 0, 0, true, true));
        // Reopened, nothing is buffered: the scan reads every leaf from runs.
        let tuned = Db::open(tuned.close().unwrap(), base.io_profile(io).build().unwrap()).unwrap();
        let all = scan(&plain, 0, 0, false, true);
        prop_assert_eq!(&all, &scan(&tuned, 0, 0, false, true));
        // More than a page of cells: leaves past the first, which the
        // descent left in the pool, came from runs.
        let cells: usize = all.iter().map(|(k, n, _)| k.len() + if *n < 1000 { *n } else { 13 }).sum();
        if cells > 4096 {
            prop_assert!(tuned.stats().store.run_pages > 0);
        }
    }
}

/// A store of `rows` 8-byte keys with 100-byte values filled in random key
/// order (its leaves lie about the device out of key order), on `device`.
fn shuffled_store(
    device: &str,
    kind: StoreKind,
    rows: u64,
) -> Box<dyn flashkv_device::BlockDevice> {
    let mut keys: Vec<u64> = (0..rows).collect();
    keys.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(7));
    let dev = presets::open(device).unwrap();
    // Built in memory, written once at the end.
    let opts = Options::builder()
        .store(kind)
        .lab(LabOptions {
            wal: false,
            ..LabOptions::default()
        })
        .buffer_pages(1 << 16)
        .build()
        .unwrap();
    let db = Db::open(Box::new(dev), opts).unwrap();
    for chunk in keys.chunks(20_000) {
        let mut b = WriteBatch::default();
        for &i in chunk {
            b.put(&i.to_be_bytes(), &[i as u8; 100]);
        }
        db.write(b).unwrap();
    }
    db.close().unwrap()
}

/// Virtual time of a full scan on `dev` reopened with `opts` (and no
/// log), the rows it returned and the device back.
fn full_scan(
    dev: Box<dyn flashkv_device::BlockDevice>,
    opts: OptionsBuilder,
) -> (u64, usize, u64, Box<dyn flashkv_device::BlockDevice>) {
    let opts = opts.lab(LabOptions {
        wal: false,
        ..LabOptions::default()
    });
    let db = Db::open(dev, opts.build().unwrap()).unwrap();
    let before = db.stats().device_clock_ns;
    let rows = db.scan(..).unwrap().len();
    let s = db.stats();
    (
        s.device_clock_ns - before,
        rows,
        s.pages_allocated,
        db.into_device(),
    )
}

#[test]
fn run_reads_cut_a_full_scan_on_a_disk_and_never_slow_it_on_nvme() {
    let rows = 450_000;
    for (device, at_least) in [("hdd-15k", 3.0), ("nvme", 1.0)] {
        for kind in [
            StoreKind::InPlace,
            StoreKind::InPageLogging(IplGeometry::seed()),
        ] {
            let dev = shuffled_store(device, kind, rows);
            let (plain, n, pages, dev) = full_scan(dev, Options::builder());
            let (tuned, m, _, _) = full_scan(dev, Options::builder().io_profile(DISK));
            assert_eq!((n, m), (rows as usize, rows as usize));
            let bytes = pages * 4096;
            assert!(bytes >= 64 << 20, "store of {bytes} bytes");
            assert!(
                plain as f64 >= at_least * tuned as f64,
                "{device} {}: page at a time {plain} ns, tuned {tuned} ns",
                kind.name()
            );
        }
    }
}

#[test]
fn consecutive_new_pages_are_written_together() {
    let load = |opts: OptionsBuilder| {
        let db = Db::open(
            Box::new(presets::open("hdd-15k").unwrap()),
            opts.buffer_pages(1 << 12).build().unwrap(),
        )
        .unwrap();
        let mut b = WriteBatch::default();
        for i in 0..20_000u64 {
            b.put(&i.to_be_bytes(), &[i as u8; 100]);
        }
        db.write(b).unwrap();
        db.checkpoint().unwrap();
        let s = db.stats();
        assert_eq!(db.scan(..).unwrap().len(), 20_000);
        (s.data_io.writes, s.store.page_writes)
    };
    let (plain, pages) = load(Options::builder());
    assert_eq!(plain, pages);
    // 64 KiB writes: 16 pages each where a run of new pages allows.
    let (tuned, _) = load(Options::builder().io_profile(IoProfile {
        seq_write_bytes: 64 << 10,
        ..DISK
    }));
    assert!(tuned * 8 <= pages, "{tuned} writes for {pages} pages");
}
