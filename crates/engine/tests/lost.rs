//! Writes the device lost (or sent elsewhere), one mechanism at a time: a
//! page write-back, a log record, a checkpoint. Each leaves its target as
//! it was, valid by its own checks; the engine must report it, never
//! answer with what the target still holds. (`corrupt.rs` runs the same
//! faults at random.)

use flashkv_device::{BlockDevice, FaultDevice, FaultPlan, Geometry, MemDevice};
use flashkv_engine::{Db, Error, Options, OptionsBuilder, StoreKind, Structure};
use flashkv_testing::Shared;

type Dev = Shared<MemDevice>;

/// Two 1 MiB checkpoint slots, then the 1 MiB log: the page store follows.
const DATA_START: u64 = 3 << 20;
const CAPACITY: u64 = 16 << 20;

fn device() -> Dev {
    Shared::new(MemDevice::new(Geometry {
        sector_size: 512,
        erase_unit: None,
        capacity: CAPACITY,
        program_once: false,
    }))
}

fn opts() -> OptionsBuilder {
    Options::builder()
        .store(StoreKind::InPlace)
        .max_size(CAPACITY)
        .wal_size(1 << 20)
        .buffer_pages(2)
}

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

/// The bytes of `[off, off+len)`.
fn save(dev: &Dev, off: u64, len: u64) -> Vec<u8> {
    let mut b = vec![0u8; len as usize];
    dev.with(|d| d.read(off, &mut b)).unwrap();
    b
}

/// Puts `bytes` back at `off`: every write there since it was saved is lost.
fn lose(dev: &Dev, off: u64, bytes: &[u8]) {
    dev.with(|d| d.write(off, bytes)).unwrap();
}

/// Offsets of the write-ahead log records of epoch `epoch`, by sequence number.
fn log_records(dev: &Dev, epoch: u64) -> Vec<u64> {
    let mut found = Vec::new();
    let mut sector = [0u8; 512];
    for off in (1u64 << 21..DATA_START).step_by(512) {
        dev.with(|d| d.read(off, &mut sector)).unwrap();
        if &sector[0..4] == b"FKWL" && sector[24..32] == epoch.to_le_bytes() {
            found.push((u64::from_le_bytes(sector[8..16].try_into().unwrap()), off));
        }
    }
    found.sort_unstable();
    found.into_iter().map(|(_, off)| off).collect()
}

/// The record at `off` reads blank, as a write that went elsewhere leaves it.
fn lose_record(dev: &Dev, off: u64) {
    let head = save(dev, off, 512);
    let len = (32 + u64::from(u32::from_le_bytes(head[16..20].try_into().unwrap()))).div_ceil(512);
    lose(dev, off, &vec![0; len as usize * 512]);
}

/// The newest epoch with at least `n` records.
fn epoch_with(dev: &Dev, n: usize) -> u64 {
    (1..16)
        .rev()
        .find(|e| log_records(dev, *e).len() >= n)
        .expect("an epoch holds the records")
}

fn assert_corrupt<T>(r: Result<T, Error>, what: Structure, why: &str) {
    match r {
        Err(Error::Corrupt {
            what: w, why: y, ..
        }) => {
            assert_eq!(w, what, "{y}");
            assert!(y.contains(why), "{y}");
        }
        Err(e) => panic!("expected corrupt {what}, got {e}"),
        Ok(_) => panic!("a lost write went unnoticed: expected corrupt {what}"),
    }
}

/// A store of 300 keys, checkpointed, then every value rewritten through a
/// pool of two pages: the rewrites reach the page store as they are evicted.
fn rewritten(dev: &Dev) -> (Db, Vec<u8>) {
    let db = Db::open(Box::new(dev.clone()), opts().build().unwrap()).unwrap();
    for i in 0..300 {
        db.put(&key(i), &[1; 100]).unwrap();
    }
    db.checkpoint().unwrap();
    let pages = save(dev, DATA_START, 1 << 20);
    for i in 0..300 {
        db.put(&key(i), &[2; 100]).unwrap();
    }
    assert!(
        db.stats().buffer.dirty_evictions > 10,
        "pages were written back"
    );
    (db, pages)
}

#[test]
fn a_lost_page_write_is_reported_when_the_page_is_read() {
    let dev = device();
    let (db, pages) = rewritten(&dev);
    lose(&dev, DATA_START, &pages);
    // Each answer is the value written, until a read meets a stale page.
    let err = (0..300)
        .map(|i| db.get(&key(i)).map(|v| (i, v)))
        .find_map(|r| match r {
            Ok((i, v)) => {
                assert_eq!(v.as_deref(), Some(&[2u8; 100][..]), "key {i}: stale value");
                None
            }
            Err(e) => Some(e),
        });
    assert_corrupt(err.map_or(Ok(()), Err), Structure::Page, "older image");
}

#[test]
fn a_checkpoint_reads_back_what_it_covers_and_reopening_repairs_it() {
    let dev = device();
    let (db, pages) = rewritten(&dev);
    lose(&dev, DATA_START, &pages);
    // The checkpoint would retire the log that can rebuild those pages.
    assert_corrupt(db.checkpoint(), Structure::Page, "read back");
    drop(db);
    let db = Db::open(Box::new(dev.clone()), opts().build().unwrap()).unwrap();
    let all = db.scan(..).unwrap();
    assert_eq!(all.len(), 300);
    assert!(
        all.iter().all(|(_, v)| v == &[2; 100]),
        "the log rebuilt them"
    );
}

#[test]
fn a_lost_log_record_that_a_later_one_vouches_for_is_reported() {
    let dev = device();
    let o = opts().sync(true).build().unwrap();
    let db = Db::open(Box::new(dev.clone()), o.clone()).unwrap();
    for i in 0..20 {
        db.put(&key(i), &[i as u8; 300]).unwrap();
    }
    drop(db.into_device()); // a crash: the log holds the puts
    let records = log_records(&dev, epoch_with(&dev, 20));
    lose_record(&dev, records[records.len() / 2]);
    assert_corrupt(
        Db::open(Box::new(dev.clone()), o),
        Structure::LogRecord,
        "says it was durable",
    );
}

#[test]
fn the_last_flushed_record_is_vouched_for_by_the_mark_a_drop_leaves() {
    for clean in [true, false] {
        let dev = device();
        let o = opts().build().unwrap();
        let db = Db::open(Box::new(dev.clone()), o.clone()).unwrap();
        for i in 0..20 {
            db.put(&key(i), &[i as u8; 300]).unwrap();
        }
        db.flush().unwrap();
        // A drop marks the end of the log; a crash leaves no mark.
        if clean {
            drop(db);
        } else {
            drop(db.into_device());
        }
        let records = log_records(&dev, epoch_with(&dev, 20));
        assert_eq!(records.len(), 20 + usize::from(clean), "clean: {clean}");
        lose_record(&dev, records[19]);
        let r = Db::open(Box::new(dev.clone()), o);
        if clean {
            assert_corrupt(r, Structure::LogRecord, "says it was durable");
        } else {
            // Nothing after it says it was durable: a torn tail, as far as
            // the log can tell (the hole a crash right after a flush leaves).
            assert_eq!(r.unwrap().scan(..).unwrap().len(), 19);
        }
    }
}

#[test]
fn a_lost_checkpoint_is_reported() {
    let dev = device();
    let o = opts().build().unwrap();
    let db = Db::open(Box::new(dev.clone()), o.clone()).unwrap();
    db.put(b"a", b"1").unwrap();
    let slots = save(&dev, 0, 2 << 20);
    db.checkpoint().unwrap();
    db.put(b"b", b"2").unwrap();
    db.flush().unwrap();
    drop(db);
    // The checkpoint's slot keeps the one before: the older one looks newest.
    lose(&dev, 0, &slots);
    assert_corrupt(
        Db::open(Box::new(dev.clone()), o),
        Structure::Checkpoint,
        "log holds records written after it",
    );
}

#[test]
fn a_recovery_cut_short_before_its_checkpoint_is_not_a_lost_one() {
    let dev = device();
    let o = opts().build().unwrap();
    let db = Db::open(Box::new(dev.clone()), o.clone()).unwrap();
    for i in 0..50 {
        db.put(&key(i), &[3; 100]).unwrap();
    }
    db.flush().unwrap();
    drop(db.into_device());
    let epoch = epoch_with(&dev, 50);
    // Recovery copies what it found into the next epoch (write 0), then
    // loses power writing its checkpoint (write 1).
    let slots = save(&dev, 0, 2 << 20);
    let faulty = Shared::new(FaultDevice::new(
        dev.take(),
        FaultPlan::crash_after_writes(1, 7),
    ));
    assert!(Db::open(Box::new(faulty.clone()), o.clone()).is_err());
    let dev = Shared::new(faulty.take().recover().unwrap());
    lose(&dev, 0, &slots);
    assert_eq!(log_records(&dev, epoch + 1).len(), 1, "the copy alone");
    let db = Db::open(Box::new(dev.clone()), o).unwrap();
    assert_eq!(db.scan(..).unwrap().len(), 50);
}

#[test]
fn a_log_that_ends_with_the_mark_of_a_close_is_not_searched_past_it() {
    for clean in [true, false] {
        let dev = Shared::new(MemDevice::new(Geometry {
            sector_size: 512,
            erase_unit: None,
            capacity: 64 << 20,
            program_once: false,
        }));
        let o = opts()
            .max_size(64 << 20)
            .wal_size(16 << 20)
            .build()
            .unwrap();
        let db = Db::open(Box::new(dev.clone()), o.clone()).unwrap();
        db.put(b"k", b"v").unwrap();
        // A close marks where the log ends; a crash leaves no mark.
        drop(match clean {
            true => db.close().unwrap(),
            false => db.into_device(),
        });
        let db = Db::open(Box::new(dev.clone()), o).unwrap();
        let read = db.stats().wal_io.read_bytes;
        // The next epoch's first 1 MiB is read either way (a lost
        // checkpoint); after a crash, 4 MiB past the end as well.
        match clean {
            true => assert!(read < 2 << 20, "{read} bytes of log read"),
            false => assert!(read > 5 << 20, "{read} bytes of log read"),
        }
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}

/// Puts keys until one of them makes the log switch epochs (carrying the
/// dirty pages forward); returns the store, the slots as they were before
/// that put, and how many keys went in before it.
fn until_a_switch(dev: &Dev) -> (Db, Vec<u8>, u32) {
    let db = Db::open(
        Box::new(dev.clone()),
        opts().buffer_pages(64).build().unwrap(),
    )
    .unwrap();
    for i in 0..20_000 {
        let slots = save(dev, 0, 2 << 20);
        let before = db.stats().switches;
        db.put(&key(i), &[5; 100]).unwrap();
        if db.stats().switches > before {
            return (db, slots, i);
        }
    }
    panic!("20,000 puts filled no half of a 1 MiB log");
}

/// A switch carries the dirty pages into the next epoch before it writes
/// its slot. A crash between the two leaves carry records and nothing after
/// them: the older checkpoint is current and loses nothing.
#[test]
fn a_switch_cut_short_before_its_slot_is_not_a_lost_checkpoint() {
    let dev = device();
    let (db, slots, n) = until_a_switch(&dev);
    drop(db.into_device());
    // The put after the carry never happened, nor did the slot.
    let epoch = epoch_with(&dev, 1);
    let last = *log_records(&dev, epoch).last().unwrap();
    lose_record(&dev, last);
    lose(&dev, 0, &slots);
    let db = Db::open(Box::new(dev.clone()), opts().build().unwrap()).unwrap();
    let got = db.scan(..).unwrap();
    assert_eq!(got.len(), n as usize, "every put before the switch");
    assert!(got.iter().all(|(_, v)| v == &[5; 100]));
}

/// The same switch with a put after it, and its slot lost: the records
/// after the carry say the checkpoint was written.
#[test]
fn a_switch_whose_slot_was_lost_is_reported() {
    let dev = device();
    let (db, slots, _) = until_a_switch(&dev);
    db.flush().unwrap();
    drop(db.into_device());
    lose(&dev, 0, &slots);
    assert_corrupt(
        Db::open(Box::new(dev.clone()), opts().build().unwrap()),
        Structure::Checkpoint,
        "log holds records written after it",
    );
}

/// A batch that creates many pages writes them where they live before its
/// record; one of those writes lost is reported when the store is opened,
/// not read back as the page.
#[test]
fn a_lost_write_of_a_new_page_before_its_record_is_reported() {
    let dev = device();
    let db = Db::open(
        Box::new(dev.clone()),
        opts().buffer_pages(4096).build().unwrap(),
    )
    .unwrap();
    db.put(&key(0), &[1; 100]).unwrap();
    db.checkpoint().unwrap();
    let pages = save(&dev, DATA_START, 8 << 20);
    let mut b = flashkv_engine::WriteBatch::default();
    for i in 1..20_000 {
        b.put(&key(i), &[2; 100]);
    }
    db.write(b).unwrap();
    db.flush().unwrap();
    let s = db.stats();
    assert!(
        s.store.page_writes >= 256 && s.data_io.writes > 0,
        "the batch wrote its new pages before its record: {:?}",
        s.store
    );
    drop(db.into_device());
    // One new page's write is lost: its place reads as before (blank,
    // which fails the page's own checksum).
    let at = DATA_START + 100 * 4096;
    assert_ne!(
        save(&dev, at, 4096),
        pages[100 * 4096..101 * 4096],
        "page 100 was written"
    );
    lose(&dev, at, &pages[100 * 4096..101 * 4096]);
    assert_corrupt(
        Db::open(Box::new(dev.clone()), opts().build().unwrap()),
        Structure::Page,
        "checksum mismatch",
    );
}
