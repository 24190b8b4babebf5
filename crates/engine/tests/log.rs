//! The write-ahead log as a user meets it: no batch is too large for it
//! (it moves to a larger region and back), it needs no sizing, and the
//! in-page-logging store commits a batch with at most two flushes.

use flashkv_device::{Geometry, MemDevice};
use flashkv_engine::{Db, IplGeometry, Options, StoreKind, WriteBatch};

fn key(i: u32) -> [u8; 8] {
    u64::from(i.wrapping_mul(2_654_435_761)).to_be_bytes()
}

/// A batch whose record is many times a 64 KiB log's half commits, the
/// log moves back home at the next full checkpoint, the file is cut back
/// to about its data, and everything reads back after a reopen.
#[test]
fn a_batch_larger_than_the_log_moves_it_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.db");
    let opts = Options::builder().wal_size(64 << 10).build().unwrap();
    let db = Db::create(&path, opts.clone()).unwrap();
    assert_eq!(db.stats().log_bytes, 64 << 10);
    let mut b = WriteBatch::default();
    for i in 0..20_000 {
        b.put(&key(i), &[i as u8; 100]);
    }
    db.write(b).unwrap();
    let away = db.stats().log_bytes;
    assert!(
        away >= 4 << 20,
        "the log grew to hold the batch: {away} bytes"
    );
    let grown = std::fs::metadata(&path).unwrap().len();
    db.checkpoint().unwrap();
    assert_eq!(db.stats().log_bytes, 64 << 10, "back home");
    let home = std::fs::metadata(&path).unwrap().len();
    assert!(home < grown, "the file is cut back: {grown} -> {home}");
    assert!(home < 8 << 20, "about its data: {home} bytes");
    drop(db);
    let db = Db::open_path(&path, opts).unwrap();
    assert_eq!(db.scan(..).unwrap().len(), 20_000);
    assert_eq!(db.get(&key(777)).unwrap(), Some(vec![777u32 as u8; 100]));
}

/// A million pairs in one batch, with the default options.
#[test]
fn a_million_pair_batch_commits_with_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("million.db");
    let db = Db::create(&path, Options::builder().sync(true).build().unwrap()).unwrap();
    let mut b = WriteBatch::with_capacity(1_000_000, 16_000_000);
    for i in 0..1_000_000u32 {
        b.put(&key(i), &i.to_le_bytes());
    }
    db.write(b).unwrap();
    drop(db);
    let db = Db::open_path(&path, Options::default()).unwrap();
    assert_eq!(
        db.get(&key(999_999)).unwrap(),
        Some(999_999u32.to_le_bytes().to_vec())
    );
    let n = db.scan_with(.., false, usize::MAX, |_, _| {}).unwrap();
    assert_eq!(n, 1_000_000);
}

/// In-page logging with a pool far smaller than the data: merges during a
/// batch share its flushes (their map switches are logged with it), so a
/// durable commit takes at most two (the merged pages', the commit's).
#[test]
fn in_page_logging_commits_with_at_most_two_flushes() {
    let geo = Geometry {
        sector_size: 512,
        erase_unit: None,
        capacity: 256 << 20,
        program_once: false,
    };
    let opts = Options::builder()
        .store(StoreKind::InPageLogging(IplGeometry::seed()))
        .buffer_pages(32)
        .writer(false)
        .sync(true)
        .build()
        .unwrap();
    let db = Db::open(Box::new(MemDevice::new(geo)), opts).unwrap();
    let mut b = WriteBatch::default();
    for i in 0..20_000 {
        b.put(&key(i), &[1; 100]);
    }
    db.write(b).unwrap();
    let before = db.stats();
    for round in 0..40u32 {
        let mut b = WriteBatch::default();
        for i in (round..20_000).step_by(53) {
            b.put(&key(i), &[2; 100]);
        }
        db.write(b).unwrap();
    }
    let after = db.stats();
    let merges = after.store.merges - before.store.merges;
    let flushes = after.device_flushes - before.device_flushes;
    let commits = after.commits - before.commits;
    assert!(
        merges > 100,
        "the small pool made batches merge units: {merges}"
    );
    assert!(
        flushes <= 2 * commits + 4 * (after.checkpoints - before.checkpoints),
        "{flushes} flushes for {commits} commits and {merges} merges"
    );
}
