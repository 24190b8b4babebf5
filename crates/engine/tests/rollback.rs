//! A batch that fails, or must run again in a larger log, after changing
//! more dirty pages than it keeps copies of (4 MiB) leaves the store as it
//! was: its rollback rebuilds those pages from the log.

use std::collections::BTreeMap;

use flashkv_device::{Geometry, MemDevice};
use flashkv_engine::{Db, Error, Options, WriteBatch};

fn device(capacity: u64) -> Box<MemDevice> {
    Box::new(MemDevice::new(Geometry {
        sector_size: 512,
        erase_unit: None,
        capacity,
        program_once: false,
    }))
}

/// Key `i`, `len` bytes long.
fn key(i: u32, len: usize) -> Vec<u8> {
    let mut k = i.to_be_bytes().to_vec();
    k.resize(len, b'k');
    k
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// `n` pairs of `key_len`-byte keys and `value_len`-byte values, in
/// batches of 100, and what the store then holds.
fn loaded(db: &Db, n: u32, key_len: usize, value_len: usize) -> Model {
    let mut want = BTreeMap::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut b = WriteBatch::default();
        for &i in chunk {
            let v = vec![(i % 251) as u8; value_len];
            b.put(&key(i, key_len), &v);
            want.insert(key(i, key_len), v);
        }
        db.write(b).unwrap();
    }
    // More dirty pages than a batch copies for its rollback (4 MiB).
    let dirty = db.stats().resident_pages;
    assert!(dirty > 1_100, "{dirty} pages resident");
    want
}

fn contents(db: &Db) -> Model {
    db.scan(..).unwrap().into_iter().collect()
}

#[test]
fn a_failed_batch_over_many_dirty_pages_leaves_them_as_they_were() {
    // 14 MiB of pages: rewriting every value, then adding 20 MB of keys,
    // runs out of pages midway. Its values are short: the log has room for
    // the record they call for, so nothing is written back beforehand.
    let opts = Options::builder()
        .max_size(48 << 20)
        .wal_size(32 << 20)
        .build()
        .unwrap();
    let db = Db::open(device(48 << 20), opts.clone()).unwrap();
    let want = loaded(&db, 6_000, 4, 1000);
    let mut b = WriteBatch::default();
    for i in 0..6_000 {
        b.put(&key(i, 4), &[9; 10]);
    }
    for i in 6_000..26_000 {
        b.put(&key(i, 1000), b"");
    }
    let e = db.write(b).unwrap_err();
    assert!(matches!(e, Error::Full(_)), "{e}");
    assert!(
        db.stats().buffer.rebuilt_pages > 0,
        "the rollback rebuilt pages from the log"
    );
    assert_eq!(contents(&db), want, "the store as before the batch");
    // It goes on working, and a crash keeps what was committed.
    db.put(&key(1, 4), b"after").unwrap();
    db.flush().unwrap();
    let db = Db::open(db.into_device(), opts).unwrap();
    let mut want = want;
    want.insert(key(1, 4), b"after".to_vec());
    assert_eq!(contents(&db), want);
}

#[test]
fn a_batch_run_again_in_a_larger_log_rebuilds_what_it_changed_first() {
    // Long keys with short values: the batch's record (its keys) outgrows
    // the half of the log its values said it needed, and the batch runs
    // again after the log moves to a larger region.
    let opts = Options::builder().wal_size(16 << 20).build().unwrap();
    let db = Db::open(device(256 << 20), opts.clone()).unwrap();
    let mut want = loaded(&db, 10_000, 1000, 0);
    let mut b = WriteBatch::default();
    for i in 0..10_000 {
        b.put(&key(i, 1000), b"x");
        want.insert(key(i, 1000), b"x".to_vec());
    }
    db.write(b).unwrap();
    assert!(db.stats().buffer.rebuilt_pages > 0, "the batch ran again");
    assert_eq!(contents(&db), want);
    let db = Db::open(db.into_device(), opts).unwrap();
    assert_eq!(contents(&db), want, "after a crash");
}
