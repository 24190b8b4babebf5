//! Seed 001's test bed (§6): two relations in one store with a buffer of
//! one page, and its access patterns.
//!
//! Relation 1 holds fixed-size tuples under keys `[1] ++ n` (8 bytes big
//! endian, so key order is insert order); relation 2 under `[0] ++ n`, on a
//! leaf of its own. Reading relation 2's tuple after each access to
//! relation 1 forces the one buffered page out, as the seed does. The
//! B+-tree's internal pages stay in memory (the seed's index is in memory)
//! and the write-ahead log is off: what is counted is page-store I/O.

use flashkv_engine::{Db, Options, StoreKind};
use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::lab::LabError;

/// Bytes of every tuple's value (the seed does not give its tuple size).
pub const VALUE_BYTES: usize = 100;
/// Bytes of the device the store uses: room for every relation here.
const REGION: u64 = 32 << 20;

/// What is counted for one run: page-store reads and writes, physical
/// erases, and the device's busy time (Table 3.1 costs summed per operation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub reads: u64,
    pub writes: u64,
    pub erases: u64,
    pub busy_ns: u64,
}

impl Counts {
    fn of(db: &Db) -> Counts {
        let s = db.stats();
        Counts {
            reads: s.data_io.reads,
            writes: s.data_io.writes,
            // The device's own count: on an FTL SSD these are its GC erases.
            erases: s.device.block_erases,
            busy_ns: s.device.busy_ns,
        }
    }

    fn since(self, base: Counts) -> Counts {
        Counts {
            reads: self.reads - base.reads,
            writes: self.writes - base.writes,
            erases: self.erases - base.erases,
            busy_ns: self.busy_ns - base.busy_ns,
        }
    }
}

/// A store to run on.
#[derive(Debug, Clone, Copy)]
pub struct Bed {
    pub device: &'static str,
    pub store: StoreKind,
    /// Page size (in-place); in-page logging takes its geometry's.
    pub page_size: u32,
    pub buffer_pages: usize,
}

impl Bed {
    pub fn open(&self) -> Result<Db, LabError> {
        let dev = flashkv_device::presets::open(self.device)?;
        // Seed 001's setting: the index in memory, no write-ahead log.
        let mut o = Options::builder()
            .policy(crate::seeds_lru())
            .store(self.store)
            .buffer_pages(self.buffer_pages)
            .lab(flashkv_engine::LabOptions {
                wal: false,
                index_in_memory: true,
            })
            .max_size(REGION);
        if self.store == StoreKind::InPlace {
            o = o.page_size(self.page_size);
        }
        Ok(Db::open(Box::new(dev), o.build()?)?)
    }
}

pub fn rel1(n: u64) -> [u8; 9] {
    let mut k = [1u8; 9];
    k[1..].copy_from_slice(&n.to_be_bytes());
    k
}

fn rel2(n: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[1..].copy_from_slice(&n.to_be_bytes());
    k
}

/// A fixed-size value that differs from tuple to tuple and write to write.
fn value(n: u64) -> Vec<u8> {
    let b = n.to_le_bytes();
    (0..VALUE_BYTES).map(|i| b[i % 8] ^ i as u8).collect()
}

/// Fills relation 2's leaf until the tree splits: relation 2 keeps a leaf
/// of its own and relation 1 starts on the new one, which holds the one
/// tuple of relation 2 that spilled over (deleting it would empty the leaf,
/// and an empty leaf leaves the tree). Needs a buffer of one page (the
/// split shows as a second resident page: the new root).
pub fn isolate_rel2(db: &Db) -> Result<(), LabError> {
    for n in 0..10_000 {
        db.put(&rel2(n), &value(n))?;
        if db.stats().resident_pages > 1 {
            return Ok(());
        }
    }
    Err(LabError::Data("relation 2 never filled its leaf".into()))
}

/// Reads relation 2's tuple: the page of relation 1 leaves the buffer.
fn evict(db: &Db) -> Result<(), LabError> {
    db.get(&rel2(0))?;
    Ok(())
}

/// Runs `ops` operations, calling `op(i)` for each, and returns the counts
/// at every multiple of `step`. A run of n operations is the first n of a
/// longer one (same seed, same start), so this is the seed's ten runs.
fn series(
    db: &Db,
    ops: u64,
    step: u64,
    mut op: impl FnMut(u64) -> Result<(), LabError>,
) -> Result<Vec<(u64, Counts)>, LabError> {
    let base = Counts::of(db);
    let mut out = Vec::new();
    for i in 0..ops {
        op(i)?;
        if (i + 1) % step == 0 {
            out.push((i + 1, Counts::of(db).since(base)));
        }
    }
    Ok(out)
}

/// H1.1: insert a tuple, then read relation 2 (the page is never buffered).
pub fn seq_insert(db: &Db, ops: u64, step: u64) -> Result<Vec<(u64, Counts)>, LabError> {
    series(db, ops, step, |i| {
        db.put(&rel1(i), &value(i))?;
        evict(db)
    })
}

/// H1.2: insert tuples one after another (the page stays buffered until full).
pub fn bulk_insert(db: &Db, ops: u64, step: u64) -> Result<Vec<(u64, Counts)>, LabError> {
    series(db, ops, step, |i| Ok(db.put(&rel1(i), &value(i))?))
}

/// H2.1: read a random tuple of the `rel` tuples, then relation 2.
pub fn random_read(
    db: &Db,
    rel: u64,
    ops: u64,
    step: u64,
    seed: u64,
) -> Result<Vec<(u64, Counts)>, LabError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    series(db, ops, step, |_| {
        db.get(&rel1(rng.gen_range(0..rel)))?;
        evict(db)
    })
}

/// H2.2: read tuples in key order (the page stays buffered).
pub fn seq_scan(db: &Db, rel: u64, ops: u64, step: u64) -> Result<Vec<(u64, Counts)>, LabError> {
    series(db, ops, step, |i| {
        db.get(&rel1(i % rel))?;
        Ok(())
    })
}

/// H3 (and the buffer sweep): starting from the `rel` tuples present,
/// read a random present tuple or insert the next one, with equal odds;
/// with `force_evict`, then read relation 2. The seed's inserts take the
/// next key from its key manager and land on the relation's last page
/// (§6.3: "only every second insert on an existing page triggers an erase").
pub fn read_insert(
    db: &Db,
    rel: u64,
    ops: u64,
    step: u64,
    seed: u64,
    force_evict: bool,
) -> Result<Vec<(u64, Counts)>, LabError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut next = rel;
    series(db, ops, step, |_| {
        if rng.gen_bool(0.5) {
            db.get(&rel1(rng.gen_range(0..next)))?;
        } else {
            db.put(&rel1(next), &value(next))?;
            next += 1;
        }
        if force_evict {
            evict(db)?;
        }
        Ok(())
    })
}

/// A contrast to H3 the seed did not run: read or update (same size) a
/// random tuple of the `rel` present, then read relation 2.
pub fn read_update(db: &Db, rel: u64, ops: u64, seed: u64) -> Result<Vec<(u64, Counts)>, LabError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    series(db, ops, ops, |i| {
        let k = rng.gen_range(0..rel);
        if rng.gen_bool(0.5) {
            db.get(&rel1(k))?;
        } else {
            db.put(&rel1(k), &value(k ^ (i << 20)))?;
        }
        evict(db)
    })
}

/// Loads `rel` tuples with the buffer kept (no forced evictions) and writes
/// everything to the device: the buffer sweep's starting relation.
pub fn load(db: &Db, rel: u64) -> Result<(), LabError> {
    for i in 0..rel {
        db.put(&rel1(i), &value(i))?;
    }
    db.checkpoint()?;
    Ok(())
}
