//! The buffer experiment's claims, at a small, fast size.

use flashkv_engine::{Db, Options, StoreKind};
use flashkv_lab::buffer::{self, Point, Size};
use flashkv_lab::lab::LabOptions;
use flashkv_lab::workload::Mix;

const SMALL: Size = Size {
    records: 3_000,
    warmup: 300,
    ops: 1_500,
};

/// On YCSB A (50 % updates, zipfian 0.99) with the in-place store on raw
/// NAND, the best flash-aware policy writes and runs at least 20 % less than
/// LRU with the same buffer, and hits within 5 points of it.
#[test]
fn flash_aware_policy_beats_lru_on_write_heavy_zipfian() {
    let pages = buffer::relation_pages("nand-ipl", StoreKind::InPlace, SMALL.records).unwrap();
    let buffer_pages = pages / 10;
    let row = |policy| {
        let p = Point {
            device: "nand-ipl",
            store: StoreKind::InPlace,
            mix: Mix::YcsbA,
            policy,
            buffer_pages,
        };
        buffer::measure(&p, SMALL, 1).unwrap()
    };
    let lru = row("lru");
    let best = ["cflru", "cfdc", "lru-wsr", "fab"]
        .map(row)
        .into_iter()
        .min_by(|a, b| a.est_ms.total_cmp(&b.est_ms))
        .unwrap();
    assert!(lru.writes > 0 && lru.dirty_evictions > 0, "{lru:?}");
    assert!(
        best.writes as f64 <= 0.8 * lru.writes as f64,
        "{best:?} vs {lru:?}"
    );
    assert!(best.est_ms <= 0.8 * lru.est_ms, "{best:?} vs {lru:?}");
    assert!(
        (best.hit_ratio - lru.hit_ratio).abs() <= 0.05,
        "{best:?} vs {lru:?}"
    );
}

/// Dirty pages of one erase unit written together cost the in-place store
/// one read-erase-rewrite, not one each: what FAB and CFDC's grouping buys.
#[test]
fn pages_of_one_unit_written_together_share_one_erase() {
    let dev = flashkv_device::presets::open("nand-ipl").unwrap();
    let opts = Options::builder()
        .store(StoreKind::InPlace)
        .buffer_pages(10_000)
        .lab(flashkv_engine::LabOptions {
            wal: false,
            index_in_memory: true,
        })
        .max_size(64 << 20)
        .build()
        .unwrap();
    let db = Db::open(Box::new(dev), opts).unwrap();
    for k in 0u64..3_000 {
        db.put(&k.to_be_bytes(), &[1; 100]).unwrap();
    }
    db.checkpoint().unwrap();
    let before = db.stats().store;
    for k in 0u64..3_000 {
        db.put(&k.to_be_bytes(), &[2; 100]).unwrap();
    }
    db.checkpoint().unwrap();
    let after = db.stats().store;
    let (pages, erases) = (
        after.page_writes - before.page_writes,
        after.erases - before.erases,
    );
    // About 32 pages an erase unit; at least 10 pages per erase.
    assert!(
        pages >= 10 * erases && erases > 0,
        "{pages} pages, {erases} erases"
    );
}

/// `flashkv lab buffer --quick`: every point, the JSON fields the issue
/// names, one plot per device, store and workload, a winner per device and store.
#[test]
fn quick_lab_writes_every_point_and_names_winners() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LabOptions {
        quick: true,
        out: dir.path().to_path_buf(),
        seed: 1,
        on_progress: Box::new(|_| {}),
        on_point: Box::new(|| {}),
    };
    let s = buffer::run(&opts).unwrap();
    let rows = s.json.as_array().unwrap();
    assert_eq!(rows.len(), 7 * 4 * 4 * 2 * 2);
    let fields: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut want = [
        "policy",
        "store",
        "device",
        "workload",
        "buffer_pages",
        "hit_ratio",
        "dirty_evictions",
        "writes",
        "erases",
        "est_ms",
        "energy_mj",
    ];
    want.sort_unstable();
    let mut got = fields.clone();
    got.sort_unstable();
    assert_eq!(got, want);
    let out = dir.path().join("buffer");
    assert!(out.join("rows.json").exists() && out.join("rows.csv").exists());
    assert_eq!(
        std::fs::read_dir(&out)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "svg")
            })
            .count(),
        2 * 2 * 4
    );
    for ds in [
        "nand-ipl / in-place",
        "nand-ipl / ipl",
        "nvme / in-place",
        "nvme / ipl",
    ] {
        assert!(
            s.markdown.contains(&format!("- {ds}: **")),
            "{ds}: {}",
            s.markdown
        );
    }
}
