//! Fail-stop: a panic or an I/O error at any device operation of a commit
//! leaves the `Db` answering `Error::Poisoned` to every later call (never a
//! stale or partial answer), and reopening recovers the last durable state
//! or that state plus the whole batch. Each store runs with the memtable
//! off and on (holding the base and the batch when the fault strikes).

use flashkv_device::{presets, FaultDevice, FaultPlan, SimDevice};
use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind, WriteBatch};
use flashkv_testing::Shared;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    Panic,
    IoError,
}

type Dev = Shared<FaultDevice<SimDevice>>;

/// A device that panics or fails at operation `at` (numbered over every call).
fn device(preset: &str, fault: Fault, at: Option<u64>) -> Dev {
    let at: Vec<u64> = at.into_iter().collect();
    let plan = match fault {
        Fault::Panic => FaultPlan {
            panic_ops: at,
            ..FaultPlan::default()
        },
        Fault::IoError => FaultPlan {
            fail_ops: at,
            ..FaultPlan::default()
        },
    };
    Shared::new(FaultDevice::new(presets::open(preset).unwrap(), plan))
}

fn ops(dev: &Dev) -> u64 {
    dev.with(|d| d.counts().0)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A durable base of 300 keys, then the batch under test: 40 updates and
/// 10 deletes, made durable.
fn base(db: &Db) -> Model {
    let mut m = Model::new();
    for i in 0..300 {
        db.put(&key(i), &[i as u8; 90]).unwrap();
        m.insert(key(i), vec![i as u8; 90]);
    }
    db.flush().unwrap();
    m
}

fn batch(m: &Model) -> (WriteBatch, Model) {
    let (mut b, mut after) = (WriteBatch::default(), m.clone());
    for i in (0..300).step_by(6) {
        if i % 5 == 0 {
            b.delete(&key(i));
            after.remove(&key(i));
        } else {
            b.put(&key(i), &[0xEE; 120]);
            after.insert(key(i), vec![0xEE; 120]);
        }
    }
    (b, after)
}

fn commit(db: &Db, b: WriteBatch) -> flashkv_engine::Result<()> {
    db.write(b)?;
    db.flush()
}

/// The commit's cases without a memtable, and with one where the store
/// has one (in place, not on raw NAND).
fn check(kind: StoreKind, preset: &str, fault: Fault) -> u64 {
    let memtable = kind == StoreKind::InPlace && !preset.starts_with("nand");
    let with = if memtable {
        check_with(kind, preset, fault, 1 << 20)
    } else {
        0
    };
    check_with(kind, preset, fault, 0) + with
}

/// [`check`] with a memtable of `memtable` bytes (0: none).
fn check_with(kind: StoreKind, preset: &str, fault: Fault, memtable: usize) -> u64 {
    let opts = Options::builder()
        .store(kind)
        .buffer_pages(4)
        .wal_size(1 << 20)
        .memtable(memtable)
        .build()
        .unwrap();
    // A dry run finds the device operations of the commit.
    let dry = device(preset, fault, None);
    let db = Db::open(Box::new(dry.clone()), opts.clone()).unwrap();
    let (b, _) = batch(&base(&db));
    let first = ops(&dry);
    commit(&db, b).unwrap();
    let end = ops(&dry);
    // Without a memtable the batch's pages and log; with one, its log
    // record and the flush.
    let least = if memtable > 0 { 2 } else { 3 };
    assert!(
        end - first >= least,
        "the commit did {} device operations",
        end - first
    );
    for n in first..end {
        let dev = device(preset, fault, Some(n));
        let db = Db::open(Box::new(dev.clone()), opts.clone()).unwrap();
        let before = base(&db);
        let (b, after) = batch(&before);
        assert_eq!(ops(&dev), first, "the run before the commit changed");
        let what = format!(
            "{kind:?} on {preset}, memtable {memtable}, {fault:?} at op {n} of {first}..{end}"
        );
        let held = db.stats().memtable_keys;
        assert_eq!(
            held > 0,
            memtable > 0,
            "{what}: the memtable holds {held} keys"
        );
        let r = catch_unwind(AssertUnwindSafe(|| commit(&db, b)));
        match r {
            Ok(Ok(())) => panic!("{what}: the fault did not surface"),
            Ok(Err(e)) => assert!(matches!(e, Error::Device(_)), "{what}: {e}"),
            Err(_) => {} // the panic reached the caller
        }
        // Fail-stop: every later call is refused, never answered stale.
        assert!(
            matches!(db.get(&key(1)), Err(Error::Poisoned)),
            "{what}: get"
        );
        assert!(
            matches!(db.put(b"x", b"y"), Err(Error::Poisoned)),
            "{what}: put"
        );
        assert!(matches!(db.scan(..), Err(Error::Poisoned)), "{what}: scan");
        assert!(matches!(db.flush(), Err(Error::Poisoned)), "{what}: flush");
        drop(db);
        let db = Db::open(Box::new(dev.take().into_inner()), opts.clone()).unwrap();
        let got: Model = db.scan(..).unwrap().into_iter().collect();
        assert!(
            got == before || got == after,
            "{what}: recovered neither the state before nor after the batch"
        );
    }
    end - first
}

#[test]
fn a_panic_at_any_step_of_a_commit_stops_the_store() {
    let mut cases = 0;
    for (kind, preset) in [
        (StoreKind::InPlace, "dram-ssd"),
        (StoreKind::InPlace, "nand-ipl"),
        (StoreKind::InPageLogging(IplGeometry::seed()), "nand-ipl"),
    ] {
        cases += check(kind, preset, Fault::Panic);
    }
    assert!(cases > 20, "only {cases} cases");
}

#[test]
fn an_io_error_at_any_step_of_a_commit_stops_the_store() {
    let mut cases = 0;
    for (kind, preset) in [
        (StoreKind::InPlace, "dram-ssd"),
        (StoreKind::InPlace, "nand-ipl"),
        (StoreKind::InPageLogging(IplGeometry::seed()), "nand-ipl"),
        (StoreKind::InPageLogging(IplGeometry::shared()), "dram-ssd"),
    ] {
        cases += check(kind, preset, Fault::IoError);
    }
    assert!(cases > 20, "only {cases} cases");
}
