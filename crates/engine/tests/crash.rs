//! Randomized crash recovery: run a workload on a device that loses power at
//! a random write (tearing it sector by sector and byte within a sector,
//! and dropping a random subset of the writes since the last flush), reopen,
//! and check the store holds exactly the state after some prefix of the
//! acknowledged operations no shorter than the last flush. Half of the
//! cases lose power a second time while recovering.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use flashkv_device::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos};
use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind};

mod common;
use common::{run, workload, Model};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SECTOR: usize = 512;
type Sectors = HashMap<u64, Box<[u8; SECTOR]>>;

/// A device with a volatile write cache that can lose power. Clones share
/// the device, so the test keeps a handle while the store owns a box.
#[derive(Clone)]
struct CrashDev(Arc<Mutex<State>>);

struct State {
    geo: Geometry,
    durable: Sectors,
    /// Writes since the last flush, in order.
    pending: Vec<(u64, Vec<u8>)>,
    programmed: HashSet<u64>,
    writes: u64,
    crash_at: u64,
    crashed: bool,
    /// The write that was in flight at the crash.
    torn: Option<(u64, Vec<u8>)>,
}

fn put(map: &mut Sectors, off: u64, data: &[u8]) {
    for (i, s) in data.chunks(SECTOR).enumerate() {
        let mut b = Box::new([0u8; SECTOR]);
        b.copy_from_slice(s);
        map.insert(off / SECTOR as u64 + i as u64, b);
    }
}

impl CrashDev {
    fn new(nand: bool, crash_at: u64) -> CrashDev {
        CrashDev(Arc::new(Mutex::new(State {
            geo: Geometry {
                sector_size: SECTOR as u32,
                erase_unit: nand.then_some(128 << 10),
                capacity: 24 << 20,
                program_once: nand,
            },
            durable: HashMap::new(),
            pending: Vec::new(),
            programmed: HashSet::new(),
            writes: 0,
            crash_at,
            crashed: false,
            torn: None,
        })))
    }

    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap()
    }

    fn writes(&self) -> u64 {
        self.st().writes
    }

    /// The device after power returns: each write since the last flush
    /// survived or not, the one in flight torn sector by sector.
    fn recover(&self, rng: &mut SmallRng) -> CrashDev {
        let mut st = self.st();
        let mut durable = std::mem::take(&mut st.durable);
        for (off, data) in std::mem::take(&mut st.pending) {
            if rng.gen_bool(0.5) {
                put(&mut durable, off, &data);
            }
        }
        let mut programmed = std::mem::take(&mut st.programmed);
        if let Some((off, data)) = st.torn.take() {
            for (i, s) in data.chunks(SECTOR).enumerate() {
                let sec = off / SECTOR as u64 + i as u64;
                match rng.gen_range(0..3) {
                    0 => {}
                    1 => put(&mut durable, sec * SECTOR as u64, s),
                    _ => {
                        let cut = rng.gen_range(1..SECTOR);
                        let mut b = durable.get(&sec).map_or([0u8; SECTOR], |b| **b);
                        b[..cut].copy_from_slice(&s[..cut]);
                        durable.insert(sec, Box::new(b));
                    }
                }
                if st.geo.program_once {
                    programmed.insert(sec);
                }
            }
        }
        // Sectors programmed only by lost writes stay "programmed" though
        // they read as erased: the engine must erase before reusing them.
        CrashDev(Arc::new(Mutex::new(State {
            geo: st.geo,
            durable,
            pending: Vec::new(),
            programmed,
            writes: 0,
            crash_at: u64::MAX,
            crashed: false,
            torn: None,
        })))
    }
}

impl State {
    fn alive(&self) -> Result<(), DeviceError> {
        if self.crashed {
            Err(DeviceError::Crashed)
        } else {
            Ok(())
        }
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        self.alive()?;
        for (off, data) in std::mem::take(&mut self.pending) {
            put(&mut self.durable, off, &data);
        }
        Ok(())
    }
}

fn done() -> Completion {
    Completion::default()
}

impl BlockDevice for CrashDev {
    fn geometry(&self) -> Geometry {
        self.st().geo
    }
    fn read_at(
        &mut self,
        _: Nanos,
        offset: u64,
        buf: &mut [u8],
    ) -> flashkv_device::Result<Completion> {
        let st = self.st();
        st.alive()?;
        st.geo.check(offset, buf.len() as u64)?;
        for (i, s) in buf.chunks_mut(SECTOR).enumerate() {
            let sec = offset / SECTOR as u64 + i as u64;
            match st.durable.get(&sec) {
                Some(b) => s.copy_from_slice(&b[..]),
                None => s.fill(0),
            }
        }
        for (off, data) in &st.pending {
            let (a, b) = (*off, off + data.len() as u64);
            let (c, d) = (offset, offset + buf.len() as u64);
            let (lo, hi) = (a.max(c), b.min(d));
            if lo < hi {
                buf[(lo - c) as usize..(hi - c) as usize]
                    .copy_from_slice(&data[(lo - a) as usize..(hi - a) as usize]);
            }
        }
        Ok(done())
    }
    fn write_at(
        &mut self,
        _: Nanos,
        offset: u64,
        buf: &[u8],
    ) -> flashkv_device::Result<Completion> {
        let mut st = self.st();
        st.alive()?;
        st.geo.check(offset, buf.len() as u64)?;
        let first = offset / SECTOR as u64;
        let n = (buf.len() / SECTOR) as u64;
        if st.geo.program_once && (first..first + n).any(|s| st.programmed.contains(&s)) {
            return Err(DeviceError::AlreadyProgrammed { offset });
        }
        st.writes += 1;
        if st.writes >= st.crash_at {
            st.crashed = true;
            st.torn = Some((offset, buf.to_vec()));
            return Err(DeviceError::Crashed);
        }
        if st.geo.program_once {
            st.programmed.extend(first..first + n);
        }
        st.pending.push((offset, buf.to_vec()));
        Ok(done())
    }
    fn flush_at(&mut self, _: Nanos) -> flashkv_device::Result<Completion> {
        self.st().flush()?;
        Ok(done())
    }
    fn trim_at(&mut self, _: Nanos, _: u64, _: u64) -> flashkv_device::Result<Completion> {
        self.st().alive()?;
        Ok(done())
    }
    fn erase_at(&mut self, _: Nanos, unit: u64) -> flashkv_device::Result<Completion> {
        let mut st = self.st();
        let eu = st.geo.erase_unit.ok_or(DeviceError::Unsupported("erase"))?;
        // An erase is a barrier here: earlier writes become durable first.
        st.flush()?;
        let (a, b) = (unit * eu / SECTOR as u64, (unit + 1) * eu / SECTOR as u64);
        for s in a..b {
            st.durable.remove(&s);
            st.programmed.remove(&s);
        }
        Ok(done())
    }
    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        let st = self.st();
        let a = offset / SECTOR as u64;
        (a..a + len / SECTOR as u64).any(|s| st.programmed.contains(&s))
    }
    fn clock(&self) -> Nanos {
        0
    }
    fn stats(&self) -> DeviceStats {
        DeviceStats::default()
    }
}

fn opts(kind: StoreKind, frames: usize, sync: bool, wal: u64) -> Options {
    Options::default()
        .store(kind)
        .buffer_pages(frames)
        .sync(sync)
        .wal_size(wal)
        .max_size(24 << 20)
}

/// One crash case; returns whether the crash hit the workload (not only its aftermath).
fn case(seed: u64, kind: StoreKind, nand: bool) -> bool {
    case_sized(seed, kind, nand, 10..60, 150)
}

/// A crash case of a workload of `ops` operations on `keys` keys.
fn case_sized(
    seed: u64,
    kind: StoreKind,
    nand: bool,
    ops: std::ops::Range<usize>,
    keys: u32,
) -> bool {
    let mut rng = SmallRng::seed_from_u64(seed);
    let frames = [1, 2, 8, 64][rng.gen_range(0..4)];
    let sync = rng.gen_bool(0.3);
    let n = rng.gen_range(ops);
    let ops = workload(&mut rng, n, keys);
    // Small logs make checkpoints (and recoveries that fill a log half) frequent.
    let wal = [256 << 10, 512 << 10, 1 << 20][rng.gen_range(usize::from(nand)..3)];
    let o = opts(kind, frames, sync, wal);
    // A dry run counts the writes; then crash at one of them.
    let dry = CrashDev::new(nand, u64::MAX);
    run(
        &Db::open(Box::new(dry.clone()), o.clone()).unwrap(),
        &ops,
        sync,
    );
    let crash_at = rng.gen_range(1..=dry.writes() + 1);
    let dev = CrashDev::new(nand, crash_at);
    let (states, durable, crashed) = match Db::open(Box::new(dev.clone()), o.clone()) {
        Ok(db) => run(&db, &ops, sync),
        Err(Error::Device(DeviceError::Crashed)) => (vec![Model::new()], 0, true),
        Err(e) => panic!("open: {e}"),
    };
    let mut dev = dev.recover(&mut rng);
    if rng.gen_bool(0.5) {
        // Lose power again while recovering.
        dev.st().crash_at = rng.gen_range(1..40);
        match Db::open(Box::new(dev.clone()), o.clone()) {
            Ok(_) | Err(Error::Device(DeviceError::Crashed)) => {}
            Err(e) => panic!("seed {seed} {kind:?} nand={nand}: recovery failed: {e}"),
        }
        dev = dev.recover(&mut rng);
    }
    let db = Db::open(Box::new(dev), o.clone())
        .unwrap_or_else(|e| panic!("seed {seed} {kind:?} nand={nand}: reopen failed: {e}"));
    let got: Model = db.scan(..).unwrap().into_iter().collect();
    assert!(
        states[durable..].contains(&got),
        "seed {seed} {kind:?} nand={nand} frames={frames} sync={sync} crash_at={crash_at}: recovered state matches no allowed state (durable index {durable} of {})",
        states.len()
    );
    // The recovered store keeps working and survives another reopen.
    db.put(b"after", b"crash").unwrap();
    db.flush().unwrap();
    let db = Db::open(db.into_device(), o).unwrap();
    assert_eq!(
        db.get(b"after").unwrap(),
        Some(b"crash".to_vec()),
        "seed {seed}: write after recovery lost"
    );
    crashed
}

fn many(kind: StoreKind, nand: bool, seeds: std::ops::Range<u64>) {
    let total = seeds.end - seeds.start;
    let crashed = seeds.filter(|&s| case(s, kind, nand)).count();
    // Almost every case must crash inside the workload, or the test proves little.
    assert!(
        crashed as u64 * 10 >= total * 8,
        "{crashed} of {total} cases crashed"
    );
}

#[test]
fn crash_in_place_ftl() {
    many(StoreKind::InPlace, false, 0..1000);
}

#[test]
fn crash_ipl_seed_ftl() {
    many(
        StoreKind::InPageLogging(IplGeometry::seed()),
        false,
        1000..2000,
    );
}

#[test]
fn crash_ipl_custom_ftl() {
    many(
        StoreKind::InPageLogging(IplGeometry::custom(4096, 8, 3)),
        false,
        2000..2500,
    );
}

#[test]
fn crash_ipl_seed_nand() {
    many(
        StoreKind::InPageLogging(IplGeometry::seed()),
        true,
        3000..4000,
    );
}

#[test]
fn crash_in_place_nand() {
    many(StoreKind::InPlace, true, 4000..4700);
}

#[test]
fn crash_ipl_shared_nand() {
    many(
        StoreKind::InPageLogging(IplGeometry::shared()),
        true,
        5000..5600,
    );
}

/// Longer workloads: deeper trees, several checkpoints and merges before the crash.
#[test]
fn crash_long_workloads() {
    for seed in 6000..6040 {
        case_sized(seed, StoreKind::InPlace, seed % 2 == 0, 200..500, 3000);
        case_sized(
            seed,
            StoreKind::InPageLogging(IplGeometry::seed()),
            seed % 2 == 1,
            200..500,
            3000,
        );
    }
}

/// A crash case with the write-ahead log on a device of its own: power is
/// lost at a random write of either device, and each device keeps a random
/// part of what it had not flushed; half the cases lose power again, on
/// either device, while recovering.
fn case_with_log(seed: u64, kind: StoreKind, nand: bool, log_nand: bool) -> bool {
    let mut rng = SmallRng::seed_from_u64(seed);
    let frames = [1, 2, 8, 64][rng.gen_range(0..4)];
    let sync = rng.gen_bool(0.3);
    let n = rng.gen_range(10..60);
    let ops = workload(&mut rng, n, 150);
    let wal = [256 << 10, 512 << 10, 1 << 20][rng.gen_range(usize::from(log_nand)..3)];
    let o = opts(kind, frames, sync, wal);
    let open = |data: &CrashDev, log: &CrashDev| {
        Db::open_with_log(Box::new(data.clone()), Box::new(log.clone()), o.clone())
    };
    let (dry, dry_log) = (
        CrashDev::new(nand, u64::MAX),
        CrashDev::new(log_nand, u64::MAX),
    );
    run(&open(&dry, &dry_log).unwrap(), &ops, sync);
    let on_log = rng.gen_bool(0.5);
    let writes = if on_log {
        dry_log.writes()
    } else {
        dry.writes()
    };
    let crash_at = rng.gen_range(1..=writes + 1);
    let (data, log) = match on_log {
        true => (
            CrashDev::new(nand, u64::MAX),
            CrashDev::new(log_nand, crash_at),
        ),
        false => (
            CrashDev::new(nand, crash_at),
            CrashDev::new(log_nand, u64::MAX),
        ),
    };
    let (states, durable, crashed) = match open(&data, &log) {
        Ok(db) => run(&db, &ops, sync),
        Err(Error::Device(DeviceError::Crashed)) => (vec![Model::new()], 0, true),
        Err(e) => panic!("open: {e}"),
    };
    let what = format!(
        "seed {seed} {kind:?} nand={nand} log_nand={log_nand} crash at write {crash_at} of the {}",
        if on_log { "log" } else { "store" }
    );
    let (mut data, mut log) = (data.recover(&mut rng), log.recover(&mut rng));
    if rng.gen_bool(0.5) {
        let again = if rng.gen_bool(0.5) { &log } else { &data };
        again.st().crash_at = rng.gen_range(1..40);
        match open(&data, &log) {
            Ok(_) | Err(Error::Device(DeviceError::Crashed)) => {}
            Err(e) => panic!("{what}: recovery failed: {e}"),
        }
        (data, log) = (data.recover(&mut rng), log.recover(&mut rng));
    }
    let db = open(&data, &log).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let got: Model = db.scan(..).unwrap().into_iter().collect();
    assert!(
        states[durable..].contains(&got),
        "{what}: recovered state matches no allowed state (durable index {durable} of {})",
        states.len()
    );
    crashed
}

#[test]
fn crash_with_a_log_device() {
    let kinds = [
        (StoreKind::InPlace, false),
        (StoreKind::InPlace, true),
        (StoreKind::InPageLogging(IplGeometry::seed()), true),
        (StoreKind::InPageLogging(IplGeometry::seed()), false),
    ];
    let mut crashed = 0;
    for seed in 7000..7800u64 {
        let (kind, nand) = kinds[(seed % 4) as usize];
        crashed += usize::from(case_with_log(seed, kind, nand, seed % 3 == 0));
    }
    assert!(
        crashed >= 600,
        "only {crashed} of 800 cases crashed inside the workload"
    );
}
