//! Fail-stop: a panic or an I/O error at any device operation of a commit
//! leaves the `Db` answering `Error::Poisoned` to every later call (never a
//! stale or partial answer), and reopening recovers the last durable state
//! or that state plus the whole batch.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use flashkv_device::{
    presets, BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, SimDevice,
};
use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind, WriteBatch};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    Panic,
    IoError,
}

struct State {
    dev: SimDevice,
    /// Device operations (writes and flushes) until the fault; `None`: off.
    countdown: Option<u64>,
    fault: Fault,
    ops: u64,
}

/// A simulated device that panics or fails at its n-th write or flush.
#[derive(Clone)]
struct Trap(Arc<Mutex<State>>);

impl Trap {
    fn new(preset: &str) -> Trap {
        Trap(Arc::new(Mutex::new(State {
            dev: presets::open(preset).unwrap(),
            countdown: None,
            fault: Fault::IoError,
            ops: 0,
        })))
    }
    fn arm(&self, n: Option<u64>, fault: Fault) {
        let mut s = self.0.lock().unwrap();
        (s.countdown, s.fault, s.ops) = (n, fault, 0);
    }
    fn ops(&self) -> u64 {
        self.0.lock().unwrap().ops
    }
    /// Counts a write or flush; fails or panics when the countdown ends.
    fn tick(&self) -> flashkv_device::Result<()> {
        let fault = {
            let mut s = self.0.lock().unwrap();
            s.ops += 1;
            match s.countdown {
                Some(1) => {
                    s.countdown = None;
                    Some(s.fault)
                }
                Some(n) => {
                    s.countdown = Some(n - 1);
                    None
                }
                None => None,
            }
        };
        match fault {
            Some(Fault::Panic) => panic!("injected panic"),
            Some(Fault::IoError) => Err(DeviceError::Injected { offset: 0 }),
            None => Ok(()),
        }
    }
}

impl BlockDevice for Trap {
    fn geometry(&self) -> Geometry {
        self.0.lock().unwrap().dev.geometry()
    }
    fn read_at(&mut self, at: Nanos, o: u64, b: &mut [u8]) -> flashkv_device::Result<Completion> {
        self.0.lock().unwrap().dev.read_at(at, o, b)
    }
    fn write_at(&mut self, at: Nanos, o: u64, b: &[u8]) -> flashkv_device::Result<Completion> {
        self.tick()?;
        self.0.lock().unwrap().dev.write_at(at, o, b)
    }
    fn flush_at(&mut self, at: Nanos) -> flashkv_device::Result<Completion> {
        self.tick()?;
        self.0.lock().unwrap().dev.flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, o: u64, n: u64) -> flashkv_device::Result<Completion> {
        self.0.lock().unwrap().dev.trim_at(at, o, n)
    }
    fn erase_at(&mut self, at: Nanos, unit: u64) -> flashkv_device::Result<Completion> {
        self.tick()?;
        self.0.lock().unwrap().dev.erase_at(at, unit)
    }
    fn is_programmed(&self, o: u64, n: u64) -> bool {
        self.0.lock().unwrap().dev.is_programmed(o, n)
    }
    fn clock(&self) -> Nanos {
        self.0.lock().unwrap().dev.clock()
    }
    fn stats(&self) -> DeviceStats {
        self.0.lock().unwrap().dev.stats()
    }
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

fn check(kind: StoreKind, preset: &str, fault: Fault) -> u64 {
    let opts = Options::default()
        .store(kind)
        .buffer_pages(4)
        .wal_size(1 << 20);
    // A dry run counts the device operations of the commit.
    let trap = Trap::new(preset);
    let db = Db::open(Box::new(trap.clone()), opts.clone()).unwrap();
    let (b, _) = batch(&base(&db));
    trap.arm(None, fault);
    commit(&db, b).unwrap();
    let total = trap.ops();
    assert!(total > 2, "the commit did no I/O");
    for n in 1..=total {
        let trap = Trap::new(preset);
        let db = Db::open(Box::new(trap.clone()), opts.clone()).unwrap();
        let before = base(&db);
        let (b, after) = batch(&before);
        trap.arm(Some(n), fault);
        let r = catch_unwind(AssertUnwindSafe(|| commit(&db, b)));
        let what = format!("{kind:?} on {preset}, {fault:?} at op {n} of {total}");
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
        trap.arm(None, fault);
        let db = Db::open(Box::new(trap), opts.clone()).unwrap();
        let got: Model = db.scan(..).unwrap().into_iter().collect();
        assert!(
            got == before || got == after,
            "{what}: recovered neither the state before nor after the batch"
        );
    }
    total
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
