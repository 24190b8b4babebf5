//! Opening is safe: a store is created only where asked, foreign files are
//! never written, one `Db` at a time holds a store, and files grow with
//! the store instead of being sized up front.

use std::path::Path;

use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind, Structure};
use rand::{RngCore, SeedableRng};

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::rngs::SmallRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// Foreign contents a user may point a store at by mistake.
fn foreign_files() -> Vec<(&'static str, Vec<u8>)> {
    let mut text = b"meeting notes\n".to_vec();
    text.resize(18, b' ');
    // A file-system image: zeros up to its superblock at 1 KiB, as ext4 has.
    let mut fs_image = vec![0u8; 4 << 20];
    fs_image[1024 + 56..1024 + 58].copy_from_slice(&0xEF53u16.to_le_bytes());
    // Zeros at the start, data further on (beyond where a checkpoint looks).
    let mut late_data = vec![0u8; 20 << 20];
    late_data[(18 << 20)..(18 << 20) + 5].copy_from_slice(b"hello");
    vec![
        ("text", text),
        ("1 KB random", random_bytes(1 << 10, 1)),
        ("1 MiB random", random_bytes(1 << 20, 2)),
        ("64 MiB random", random_bytes(64 << 20, 3)),
        ("fs image", fs_image),
        ("late data", late_data),
    ]
}

fn assert_untouched(path: &Path, want: &[u8], what: &str) {
    let got = std::fs::read(path).unwrap();
    assert!(got == want, "{what}: the file was modified");
}

#[test]
fn foreign_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    for (what, bytes) in foreign_files() {
        let path = dir.path().join(what.replace(' ', "_"));
        std::fs::write(&path, &bytes).unwrap();
        for kind in [
            StoreKind::InPlace,
            StoreKind::InPageLogging(IplGeometry::seed()),
        ] {
            let opts = Options::builder().store(kind).build().unwrap();
            let e = Db::open_path(&path, opts.clone()).err().expect(what);
            if what == "late data" {
                // Zeros where a store keeps its superblocks: not a store either.
                assert!(matches!(e, Error::NotAStoreFile { .. }), "{what}: {e}");
            }
            assert!(matches!(e, Error::NotAStoreFile { .. }), "{what}: {e}");
            assert!(e.to_string().contains("nothing was written"), "{e}");
            let e = Db::open_or_create(&path, opts.clone()).err().expect(what);
            assert!(matches!(e, Error::NotAStoreFile { .. }), "{what}: {e}");
            let e = Db::create(&path, opts).err().expect(what);
            assert!(matches!(e, Error::Exists { .. }), "{what}: {e}");
            assert_untouched(&path, &bytes, what);
        }
    }
}

#[test]
fn a_missing_store_is_not_created_by_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.db");
    let e = Db::open_path(&path, Options::default()).err().unwrap();
    assert!(matches!(e, Error::NoStore { .. }), "{e}");
    assert!(!path.exists(), "open created a file");
    // A directory is not a store either.
    let e = Db::open_path(dir.path(), Options::default()).err().unwrap();
    assert!(matches!(e, Error::NotAStoreFile { .. }), "{e}");
}

#[test]
fn create_takes_missing_or_empty_files_and_they_grow_with_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    std::fs::write(&path, b"").unwrap();
    let db = Db::create(&path, Options::default()).unwrap();
    let small = std::fs::metadata(&path).unwrap().len();
    // The default limit is 64 GiB; a new store is a sparse file of its
    // slots and log region (64 MiB), of which a few KiB are written.
    assert!(small < 80 << 20, "new store is {small} bytes");
    let held = std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(&path).unwrap()) * 512;
    assert!(held < 4 << 20, "new store takes {held} bytes of disk");
    for i in 0..20_000u32 {
        db.put(&i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    db.checkpoint().unwrap();
    let big = std::fs::metadata(&path).unwrap().len();
    assert!(big > small, "file did not grow: {small} -> {big}");
    drop(db);
    let db = Db::open_or_create(&path, Options::default()).unwrap();
    assert_eq!(db.get(&77u32.to_be_bytes()).unwrap(), Some(vec![7u8; 100]));
}

#[test]
fn a_second_open_of_a_store_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let db = Db::create(&path, Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    let e = Db::open_path(&path, Options::default()).err().unwrap();
    match &e {
        Error::Locked { holder, .. } => {
            assert_eq!(*holder, Some(std::process::id()), "{e}")
        }
        e => panic!("expected Locked, got {e}"),
    }
    assert!(e.to_string().contains("elsewhere in this process"), "{e}");
    drop(db);
    let db = Db::open_path(&path, Options::default()).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_failed_create_removes_the_file_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.db");
    // Too small for the layout: creation fails after the file exists.
    let e = Db::create(
        &path,
        Options::builder().max_size(64 << 10).build().unwrap(),
    )
    .err()
    .unwrap();
    assert!(matches!(e, Error::InvalidOption { .. }), "{e}");
    assert!(!path.exists(), "failed create left {}", path.display());
}

#[test]
fn a_truncated_store_is_reported_not_read() {
    let dir = tempfile::tempdir().unwrap();
    for kind in [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
    ] {
        let path = dir.path().join(format!("{}.db", kind.name()));
        let db = Db::create(&path, Options::builder().store(kind).build().unwrap()).unwrap();
        for i in 0..5000u32 {
            db.put(&i.to_be_bytes(), &[1u8; 200]).unwrap();
        }
        db.close().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len / 2).unwrap();
        drop(f);
        let e = Db::open_path(&path, Options::default()).err().unwrap();
        assert!(
            matches!(&e, Error::Corrupt { what: Structure::File, why, .. } if why.contains("truncated")),
            "{}: {e}",
            kind.name()
        );
    }
}

#[test]
fn read_only_opens_share_a_store_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.db");
    let db = Db::create(&path, Options::default()).unwrap();
    for i in 0..500u32 {
        db.put(&i.to_be_bytes(), &[7; 100]).unwrap();
    }
    db.close().unwrap();
    let before = std::fs::read(&path).unwrap();
    let a = Db::open_read_only(&path, Options::default()).unwrap();
    let b = Db::open_read_only(&path, Options::builder().buffer_pages(2).build().unwrap()).unwrap();
    // Readers share; a writer is refused while they hold the store.
    let e = Db::open_path(&path, Options::default()).err().unwrap();
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    assert_eq!(a.get(&7u32.to_be_bytes()).unwrap(), Some(vec![7; 100]));
    // A pool of two frames reads the whole tree, evicting clean pages only.
    assert_eq!(b.scan(..).unwrap().len(), 500);
    assert_eq!(b.scan_with(.., true, 3, |_, _| {}).unwrap(), 3);
    assert!(matches!(a.put(b"k", b"v"), Err(Error::ReadOnly)));
    assert!(matches!(
        a.delete(&7u32.to_be_bytes()),
        Err(Error::ReadOnly)
    ));
    a.flush().unwrap();
    a.checkpoint().unwrap();
    a.close().unwrap();
    drop(b);
    assert_untouched(&path, &before, "read-only open");
    // With no reader left, a writer gets it, and then readers are refused.
    let w = Db::open_path(&path, Options::default()).unwrap();
    let e = Db::open_read_only(&path, Options::default()).err().unwrap();
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    drop(w);
}

#[test]
fn a_read_only_open_leaves_recovery_to_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crashed.db");
    let db = Db::create(&path, Options::default()).unwrap();
    db.put(b"kept", b"yes").unwrap();
    db.flush().unwrap();
    // A crash: the process ends without closing (no checkpoint).
    drop(db.into_device());
    let before = std::fs::read(&path).unwrap();
    let e = Db::open_read_only(&path, Options::default()).err().unwrap();
    assert!(matches!(e, Error::NeedsRecovery), "{e}");
    assert_untouched(&path, &before, "refused read-only open");
    Db::open_path(&path, Options::default())
        .unwrap()
        .close()
        .unwrap();
    let r = Db::open_read_only(&path, Options::default()).unwrap();
    assert_eq!(r.get(b"kept").unwrap().as_deref(), Some(&b"yes"[..]));
    // Missing and foreign files are refused as by a writer.
    let e = Db::open_read_only(dir.path().join("none"), Options::default())
        .err()
        .unwrap();
    assert!(matches!(e, Error::NoStore { .. }), "{e}");
    let foreign = dir.path().join("notes.txt");
    std::fs::write(&foreign, b"meeting notes\n").unwrap();
    let e = Db::open_read_only(&foreign, Options::default())
        .err()
        .unwrap();
    assert!(matches!(e, Error::NotAStoreFile { .. }), "{e}");
    assert_untouched(&foreign, b"meeting notes\n", "foreign read-only open");
}

#[test]
fn a_close_leaves_the_log_to_the_next_open_which_resumes_it() {
    let o = Options::builder()
        .buffer_pages(4096)
        .sync(true)
        .build()
        .unwrap();
    let dev = flashkv_device::presets::open("dram-ssd").unwrap();
    let db = Db::open(Box::new(dev), o.clone()).unwrap();
    let put = |db: &Db, keys: &mut dyn Iterator<Item = u32>| {
        for i in keys {
            db.put(&i.to_be_bytes(), &[i as u8; 100]).unwrap();
        }
    };
    let mut b = flashkv_engine::WriteBatch::default();
    for i in 0..30_000u32 {
        b.put(&i.to_be_bytes(), &[i as u8; 100]);
    }
    db.write(b).unwrap();
    // The load's pages are home already: its close checkpoints, which
    // writes less than the next open would replay (and read back).
    let before = db.stats().device.host_write_bytes;
    let dev = db.close().unwrap();
    assert!(dev.stats().host_write_bytes - before < 64 << 10);
    let db = Db::open(dev, o.clone()).unwrap();
    assert_eq!(db.stats().resident_pages, 0, "nothing to replay");
    // Puts all over the tree: a checkpoint would write each leaf they
    // changed, twice, far more than their log records.
    put(&db, &mut (0..30_000).step_by(100));
    let before = db.stats().device.host_write_bytes;
    let dev = db.close().unwrap();
    // The log was durable already (sync): the close wrote its end mark only.
    let wrote = dev.stats().host_write_bytes - before;
    assert!(wrote <= 4096, "the close wrote {wrote} bytes");
    let db = Db::open(dev, o.clone()).unwrap();
    let s = db.stats();
    assert_eq!(
        (s.checkpoints, s.data_io.write_bytes),
        (0, 0),
        "the open resumed the log"
    );
    assert!(s.resident_pages > 0, "the replayed pages are in the pool");
    assert_eq!(db.get(&7u32.to_be_bytes()).unwrap(), Some(vec![7; 100]));
    // Writes go on in the same log; a crash then loses none of them.
    put(&db, &mut (30_000..30_100));
    let db = Db::open(db.into_device(), o.clone()).unwrap();
    let got = db.scan(..).unwrap();
    assert_eq!(got.len(), 30_100);
    assert!(
        got.iter().all(|(k, v)| v[0] == k[3]),
        "every value as written"
    );
    // Asked for, the close checkpoints, and the next open replays nothing.
    let oc = o.to_builder().close_checkpoint(true).build().unwrap();
    let dev = Db::open(db.close().unwrap(), oc.clone())
        .unwrap()
        .close()
        .unwrap();
    let db = Db::open(dev, oc).unwrap();
    assert_eq!(db.stats().resident_pages, 0, "the open replayed nothing");
    assert_eq!(db.scan(..).unwrap().len(), 30_100);
}

#[test]
fn a_read_only_open_replays_the_log_a_close_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kept.db");
    // The tree's pages, not a memtable (tests/memtable.rs has that case).
    let tree = Options::builder().memtable(0).build().unwrap();
    let db = Db::create(&path, tree.clone()).unwrap();
    let mut b = flashkv_engine::WriteBatch::default();
    for i in 0..20_000u32 {
        b.put(&i.to_be_bytes(), &[3; 50]);
    }
    db.write(b).unwrap();
    db.close().unwrap();
    // Puts all over the tree: the close leaves them to the log.
    let db = Db::open_path(&path, tree).unwrap();
    for i in (0..20_000u32).step_by(100) {
        db.put(&i.to_be_bytes(), &[4; 50]).unwrap();
    }
    db.close().unwrap();
    let before = std::fs::read(&path).unwrap();
    // Two frames: the replayed pages stay resident beside them.
    let o = Options::builder().buffer_pages(2).build().unwrap();
    let r = Db::open_read_only(&path, o).unwrap();
    let replayed = r.stats().resident_pages;
    assert!(replayed > 100, "{replayed} pages replayed");
    let got = r.scan(..).unwrap();
    assert_eq!(got.len(), 20_000);
    let put_after = |k: &[u8]| u32::from_be_bytes(k.try_into().unwrap()) % 100 == 0;
    assert!(got
        .iter()
        .all(|(k, v)| v[0] == if put_after(k) { 4 } else { 3 }));
    assert_eq!(r.get(&100u32.to_be_bytes()).unwrap(), Some(vec![4; 50]));
    // A reader's own close option does not change what it can replay.
    let oc = Options::builder().close_checkpoint(true).build().unwrap();
    let r2 = Db::open_read_only(&path, oc).unwrap();
    assert_eq!(r2.get(&100u32.to_be_bytes()).unwrap(), Some(vec![4; 50]));
    r2.close().unwrap();
    r.close().unwrap();
    assert_untouched(&path, &before, "read-only open of a store with a log");
}
