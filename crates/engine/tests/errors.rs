//! Typed errors, never panics or wrong answers: oversized input, wrong
//! format versions, corrupted and truncated stores; and threads sharing a Db.

use std::sync::Arc;

use flashkv_device::BlockDevice;
use flashkv_engine::{
    Db, Error, IplGeometry, Location, Options, OptionsBuilder, StoreKind, Structure,
    FORMAT_VERSION, MAX_KEY, MAX_VALUE,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn small() -> OptionsBuilder {
    Options::builder()
        .max_size(16 << 20)
        .wal_size(1 << 20)
        .buffer_pages(8)
}

fn dram() -> Box<dyn BlockDevice> {
    Box::new(flashkv_device::presets::open("dram-ssd").unwrap())
}

#[test]
fn oversized_input_and_missing_keys() {
    let db = Db::open(dram(), small().wal_size(4 << 20).build().unwrap()).unwrap();
    assert!(matches!(
        db.put(&vec![1; MAX_KEY + 1], b"v"),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(matches!(
        db.get(&vec![1; MAX_KEY + 1]),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(matches!(
        db.put(b"k", &vec![0; MAX_VALUE + 1]),
        Err(Error::ValueTooLarge { .. })
    ));
    // A missing key is an answer, not an error: nothing is written.
    assert!(!db.update(b"absent", b"v").unwrap());
    assert_eq!(db.get(b"absent").unwrap(), None);
    db.put(b"present", b"1").unwrap();
    assert!(db.update(b"present", b"2").unwrap());
    assert_eq!(db.get(b"present").unwrap().as_deref(), Some(&b"2"[..]));
    db.put(&vec![9; MAX_KEY], &vec![3; MAX_VALUE]).unwrap();
    assert_eq!(db.get(&vec![9; MAX_KEY]).unwrap().unwrap().len(), MAX_VALUE);
    // A failed batch changes nothing.
    let mut b = flashkv_engine::WriteBatch::default();
    b.put(b"a", b"1").put(&vec![1; MAX_KEY + 1], b"x");
    assert!(db.write(b).is_err());
    assert_eq!(db.get(b"a").unwrap(), None);
}

#[test]
fn wrong_format_version_is_reported() {
    let db = Db::open(dram(), small().build().unwrap()).unwrap();
    db.put(b"k", b"v").unwrap();
    let mut dev = db.close().unwrap();
    for slot in [0u64, 1 << 20] {
        let mut s = [0u8; 512];
        dev.read(slot, &mut s).unwrap();
        s[8] = FORMAT_VERSION + 1;
        dev.write(slot, &s).unwrap();
    }
    match Db::open(dev, small().build().unwrap()) {
        Err(Error::Version { found, .. }) => assert_eq!(found, FORMAT_VERSION + 1),
        Err(e) => panic!("expected a version error, got {e}"),
        Ok(_) => panic!("expected a version error"),
    }
}

#[test]
fn reopening_with_another_store_is_refused() {
    let db = Db::open(
        dram(),
        small()
            .store(StoreKind::InPageLogging(IplGeometry::seed()))
            .build()
            .unwrap(),
    )
    .unwrap();
    let dev = db.close().unwrap();
    assert!(matches!(
        Db::open(dev, small().store(StoreKind::InPlace).build().unwrap()),
        Err(Error::StoreMismatch { .. })
    ));
}

/// Random bits flipped in a store: every read either returns data that was
/// written or fails with a typed error. (A damaged log record ends the log
/// there, so later writes may be missing: the log cannot tell damage from a
/// torn tail.)
#[test]
fn corruption_is_detected_never_misread() {
    let kinds = [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
    ];
    for seed in 0..120u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let kind = kinds[seed as usize % 2];
        let db = Db::open(dram(), small().store(kind).build().unwrap()).unwrap();
        let mut written = std::collections::HashSet::new();
        for i in 0..300u32 {
            let (k, v) = (
                (i % 150).to_be_bytes().to_vec(),
                vec![i as u8; (i % 97) as usize],
            );
            db.put(&k, &v).unwrap();
            written.insert((k, v));
        }
        // Leave some work in the log too, half of the time.
        let mut dev = if seed % 4 < 2 {
            db.close().unwrap()
        } else {
            db.into_device()
        };
        for _ in 0..rng.gen_range(1..6) {
            // Scribble over the checkpoints, the log or the first pages.
            let region = [0u64, 2 << 20, 3 << 20][rng.gen_range(0..3)];
            let off = (region + rng.gen_range(0..(1u64 << 20))) / 512 * 512;
            let mut s = [0u8; 512];
            dev.read(off, &mut s).unwrap();
            let i = rng.gen_range(0..512);
            s[i] ^= 1 << rng.gen_range(0..8);
            dev.write(off, &s).unwrap();
        }
        match Db::open(dev, small().build().unwrap()) {
            Err(_) => {}
            Ok(db) => match db.scan(..) {
                Ok(got) => assert!(
                    got.iter().all(|p| written.contains(p)),
                    "seed {seed}: wrong data"
                ),
                Err(e) => assert!(
                    matches!(e, Error::Corrupt { .. } | Error::Version { .. }),
                    "seed {seed}: {e}"
                ),
            },
        }
    }
}

#[test]
fn truncated_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let db = Db::create(&path, small().build().unwrap()).unwrap();
    for i in 0..500u32 {
        db.put(&i.to_be_bytes(), b"some value").unwrap();
    }
    db.close().unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(3 << 20).unwrap();
    drop(f);
    let r = Db::open_path(&path, small().build().unwrap());
    assert!(
        matches!(
            r,
            Err(Error::Corrupt {
                what: Structure::File,
                ..
            })
        ),
        "{:?}",
        r.err()
    );
    std::fs::write(&path, vec![0xA5u8; 8192]).unwrap();
    assert!(matches!(
        Db::open_path(&path, small().build().unwrap()),
        Err(Error::NotAStoreFile { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), vec![0xA5u8; 8192]);
}

#[test]
fn readers_run_alongside_a_writer() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Db>();
    let db = Arc::new(
        Db::open(
            dram(),
            small()
                .store(StoreKind::InPageLogging(IplGeometry::seed()))
                .build()
                .unwrap(),
        )
        .unwrap(),
    );
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..2000u32 {
                db.put(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t);
                for _ in 0..2000 {
                    let i = rng.gen_range(0..2000u32);
                    if let Some(v) = db.get(&i.to_be_bytes()).unwrap() {
                        assert_eq!(v, i.to_le_bytes());
                    }
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(db.scan(..).unwrap().len(), 2000);
}

#[test]
fn overflow_pages_are_reused() {
    for kind in [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
    ] {
        let db = Db::open(dram(), small().store(kind).build().unwrap()).unwrap();
        for i in 0..100u8 {
            db.put(b"big", &vec![i; 50_000]).unwrap();
            if i % 10 == 0 {
                db.delete(b"big").unwrap();
            }
        }
        assert_eq!(db.get(b"big").unwrap(), Some(vec![99; 50_000]));
        let pages = db.stats().pages_allocated;
        assert!(pages < 40, "{kind:?}: {pages} pages for one 50 KB value");
        let db = Db::open(db.into_device(), small().build().unwrap()).unwrap();
        db.put(b"big", &[1; 60_000]).unwrap();
        assert!(db.stats().pages_allocated < 40);
    }
}

/// Offsets of the write-ahead log records of epoch `epoch` on `dev`, in
/// sequence order (each starts a sector with the log's magic).
fn log_records(dev: &mut dyn BlockDevice, epoch: u64) -> Vec<(u64, u64)> {
    let mut found = Vec::new();
    let mut sector = [0u8; 512];
    for off in (0..8u64 << 20).step_by(512) {
        dev.read_at(0, off, &mut sector).unwrap();
        if &sector[0..4] == b"FKWL" && sector[24..32] == epoch.to_le_bytes() {
            found.push((u64::from_le_bytes(sector[8..16].try_into().unwrap()), off));
        }
    }
    found.sort_unstable();
    found
}

#[test]
fn a_damaged_durable_log_record_is_reported_not_taken_for_the_end() {
    // Each commit flushed: every record says the one before it was durable.
    let opts = small().wal_size(4 << 20).sync(true).build().unwrap();
    let db = Db::open(dram(), opts.clone()).unwrap();
    for i in 0..20u32 {
        db.put(&i.to_be_bytes(), &[i as u8; 300]).unwrap();
    }
    let mut dev = db.into_device(); // a crash: no checkpoint
                                    // The records of the newest epoch: the creation's checkpoint started it.
    let epoch = (1..8)
        .rev()
        .find(|e| log_records(&mut *dev, *e).len() >= 20)
        .unwrap();
    let records = log_records(&mut *dev, epoch);
    let (_, middle) = records[records.len() / 2];
    let mut sector = [0u8; 512];
    dev.read_at(0, middle, &mut sector).unwrap();
    sector[100] ^= 0x40; // a bit of the record's payload rots
    dev.write_at(0, middle, &sector).unwrap();
    match Db::open_existing(dev, opts.clone()) {
        Err(Error::Corrupt {
            what: Structure::LogRecord,
            location: Location::Record(_),
            why,
        }) => assert!(why.contains("says it was durable"), "{why}"),
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("a damaged durable record was taken for the end of the log"),
    }
}

#[test]
fn a_torn_last_record_is_the_end_of_the_log() {
    let opts = small().wal_size(4 << 20).sync(true).build().unwrap();
    let db = Db::open(dram(), opts.clone()).unwrap();
    for i in 0..20u32 {
        db.put(&i.to_be_bytes(), &[i as u8; 300]).unwrap();
    }
    let mut dev = db.into_device();
    let epoch = (1..8)
        .rev()
        .find(|e| log_records(&mut *dev, *e).len() >= 20)
        .unwrap();
    let (_, last) = *log_records(&mut *dev, epoch).last().unwrap();
    let mut sector = [0u8; 512];
    dev.read_at(0, last, &mut sector).unwrap();
    sector[100] ^= 0x40;
    dev.write_at(0, last, &sector).unwrap();
    // Nothing after it vouches for it: the put it held is lost, the rest kept.
    let db = Db::open_existing(dev, opts).unwrap();
    assert_eq!(db.scan(..).unwrap().len(), 19);
}
