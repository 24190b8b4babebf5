//! The memtable as a user meets it: small batches land there (a store in a
//! file has one by default), reads and ranges see it merged with the tree,
//! it drains into the tree at its budget, before a batch larger than the
//! budget and at a checkpoint, and a close leaves it in the log for the
//! next open (read-only ones too).

use std::ops::Bound;

use flashkv_engine::{Db, Options, WriteBatch};

fn key(i: u32) -> Vec<u8> {
    // A bijection of u32: distinct keys, in no order.
    format!("key{:08x}", i.wrapping_mul(2_654_435_761)).into_bytes()
}

fn batch(from: u32, n: u32, value: u8) -> WriteBatch {
    let mut b = WriteBatch::default();
    for i in from..from + n {
        b.put(&key(i), &[value; 40]);
    }
    b
}

#[test]
fn small_batches_go_to_the_memtable_of_a_store_in_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.db"), Options::default()).unwrap();
    db.write(batch(0, 1000, 1)).unwrap();
    db.put(b"one", b"1").unwrap();
    let s = db.stats();
    assert_eq!((s.memtable_keys, s.drains), (1001, 0));
    assert!(s.memtable_bytes > 1001 * 40, "{} bytes", s.memtable_bytes);
    assert_eq!(db.get(&key(7)).unwrap(), Some(vec![1; 40]));
    assert!(db.delete(b"one").unwrap());
    assert!(!db.delete(b"one").unwrap(), "deleted in the memtable");
    assert!(db.update(&key(8), b"new").unwrap());
    assert!(!db.update(b"absent", b"x").unwrap());
    assert_eq!(db.get(&key(8)).unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(b"one").unwrap(), None);
    assert_eq!(db.scan(..).unwrap().len(), 1000);
    // Emulated devices keep every write in the tree unless asked.
    let dev = flashkv_device::presets::open("dram-ssd").unwrap();
    let sim = Db::open(Box::new(dev), Options::default()).unwrap();
    sim.write(batch(0, 10, 1)).unwrap();
    assert_eq!(sim.stats().memtable_keys, 0);
}

#[test]
fn ranges_merge_the_memtable_with_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::builder().memtable(1 << 20).build().unwrap();
    let db = Db::create(dir.path().join("r.db"), opts).unwrap();
    // Larger than the budget: straight into the tree.
    db.write(batch(0, 20_000, 1)).unwrap();
    assert_eq!(db.stats().memtable_keys, 0);
    // Then every third key changed, every fifth removed, in the memtable.
    let mut b = WriteBatch::default();
    for i in 0..20_000 {
        match i % 15 {
            0 | 5 | 10 => b.delete(&key(i)),
            3 | 6 | 9 | 12 => b.put(&key(i), &[2; 40]),
            _ => continue,
        };
    }
    db.write(b).unwrap();
    let changed = (0..20_000).filter(|i| [0, 3, 5, 6, 9, 10, 12].contains(&(i % 15)));
    assert_eq!(db.stats().memtable_keys, changed.count());
    let mut want: Vec<(Vec<u8>, Vec<u8>)> = (0..20_000)
        .filter(|i| i % 5 != 0)
        .map(|i| (key(i), vec![if i % 3 == 0 { 2 } else { 1 }; 40]))
        .collect();
    want.sort();
    assert_eq!(db.scan(..).unwrap(), want);
    // Ten pairs from any key, both ways, as the tree-only store gives them.
    for i in (0..20_000).step_by(97) {
        let k = key(i);
        let from = want.partition_point(|(w, _)| *w < k);
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .range::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Included(&k), Bound::Unbounded))
            .take(10)
            .map(|p| p.unwrap().into_parts())
            .collect();
        assert_eq!(got, want[from..(from + 10).min(want.len())]);
        let to = want.partition_point(|(w, _)| *w <= k);
        let back: Vec<(Vec<u8>, Vec<u8>)> = db
            .range_rev::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Unbounded, Bound::Included(&k)))
            .take(10)
            .map(|p| p.unwrap().into_parts())
            .collect();
        let mut expect = want[to.saturating_sub(10)..to].to_vec();
        expect.reverse();
        assert_eq!(back, expect);
    }
}

#[test]
fn the_memtable_drains_at_its_budget_and_before_a_larger_batch() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 256 << 10;
    let opts = Options::builder().memtable(budget).build().unwrap();
    let db = Db::create(dir.path().join("d.db"), opts).unwrap();
    for round in 0..20 {
        db.write(batch(round * 500, 500, round as u8)).unwrap();
        assert!(db.stats().memtable_bytes <= budget, "within its budget");
    }
    // Each round costs 500 × (54 bytes and about 50 of overhead): four or
    // five fit, so 20 rounds drain three or four times.
    let drained = db.stats().drains;
    assert!((3..=4).contains(&drained), "{drained} drains");
    db.write(batch(50_000, 5_000, 9)).unwrap();
    let s = db.stats();
    assert_eq!(
        (s.drains, s.memtable_keys),
        (drained + 1, 0),
        "drained first"
    );
    for i in (0..10_000).step_by(7) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![(i / 500) as u8; 40]));
    }
    assert_eq!(db.scan(..).unwrap().len(), 15_000);
    // A key counter lives in the tree: the memtable drains first.
    db.put(b"x", b"y").unwrap();
    db.insert_auto(b"auto").unwrap();
    assert_eq!(db.stats().memtable_keys, 0);
    assert_eq!(db.get(b"x").unwrap(), Some(b"y".to_vec()));
}

#[test]
fn a_close_leaves_the_memtable_to_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let db = Db::create(&path, Options::default()).unwrap();
    db.write(batch(0, 3000, 5)).unwrap();
    db.delete(&key(10)).unwrap();
    db.close().unwrap();
    let db = Db::open_path(&path, Options::default()).unwrap();
    assert_eq!(db.stats().memtable_keys, 3000, "read back from the log");
    assert_eq!(db.get(&key(11)).unwrap(), Some(vec![5; 40]));
    assert_eq!(db.get(&key(10)).unwrap(), None);
    // Read back whole, it has its sorted copy for reads (24 bytes a key)
    // from the open on; the next change drops the copy.
    let frozen = db.stats().memtable_bytes;
    db.put(b"late", b"1").unwrap();
    let changed = db.stats().memtable_bytes;
    assert!(frozen > changed + 3000 * 20, "{frozen} vs {changed}");
    db.close().unwrap();
    let r = Db::open_read_only(&path, Options::default()).unwrap();
    assert_eq!(r.get(b"late").unwrap(), Some(b"1".to_vec()));
    assert_eq!(r.scan(..).unwrap().len(), 3000);
    r.close().unwrap();
    // A checkpoint moves it into the tree; nothing is left to replay.
    let db = Db::open_path(&path, Options::default()).unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.stats().memtable_keys, 0);
    db.close().unwrap();
    let db = Db::open_path(&path, Options::default()).unwrap();
    let s = db.stats();
    assert_eq!(
        (s.memtable_keys, s.resident_pages),
        (0, 0),
        "nothing replayed"
    );
    assert_eq!(db.scan(..).unwrap().len(), 3000);
    // Opened without a memtable, the store drains the one it found first.
    drop(db);
    let o = Options::builder().memtable(0).build().unwrap();
    let db = Db::open_path(&path, Options::default()).unwrap();
    db.put(b"again", b"2").unwrap();
    drop(db);
    let db = Db::open_path(&path, o).unwrap();
    assert_eq!(db.stats().memtable_keys, 1);
    db.put(b"tree", b"3").unwrap();
    let s = db.stats();
    assert_eq!((s.memtable_keys, s.drains), (0, 1));
    assert_eq!(db.get(b"again").unwrap(), Some(b"2".to_vec()));
}
