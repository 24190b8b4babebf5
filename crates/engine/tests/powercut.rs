//! Power cuts on a real file: the crash workloads run on a store in a file
//! on the power-cut layer (`flashkv_testing::powercut`, a FUSE file system
//! that loses whatever no `fsync` covered), with the memtable on as a file
//! store ships it. Power fails at a random request (creating the store,
//! growing it, moving the log above the pages, cutting the file back after
//! a checkpoint), the layer drops all, some, or some torn unsynced writes,
//! names included; then the store reopens and must hold exactly the state
//! after a prefix of the operations that keeps every acknowledged durable
//! one. Needs FUSE (root or fusermount3); skips, saying so, without it.

use std::path::Path;

use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind};
use flashkv_testing::powercut::{Loss, PowerCut};
use flashkv_testing::{cases, Tally};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[allow(dead_code)]
mod common;
use common::{run_until, workload, workload_big, Model, Op};

/// The layer, or `None` (the test then skips, saying why).
fn layer(test: &str) -> Option<PowerCut> {
    match PowerCut::mount() {
        Ok(pc) => Some(pc),
        Err(why) => {
            eprintln!("{test}: skipped: {why}");
            None
        }
    }
}

const LOSSES: [Loss; 3] = [Loss::All, Loss::Some, Loss::Torn];

/// A store's options for a case: durable commits or not, a small log
/// (checkpoints, and the log moving above the pages for big batches),
/// the memtable as shipped or small enough to drain.
fn options(rng: &mut SmallRng, kind: StoreKind, wal: u64) -> (Options, bool) {
    let sync = rng.gen_bool(0.7);
    let mut b = Options::builder()
        .store(kind)
        .buffer_pages([2, 16, 256][rng.gen_range(0..3)])
        .writer(rng.gen_bool(0.5))
        .sync(sync)
        .wal_size(wal)
        .max_size(64 << 20);
    if rng.gen_bool(0.3) {
        // Small enough to drain into the tree during the workload.
        b = b.memtable([4 << 10, 32 << 10][rng.gen_range(0..2)]);
    }
    (b.build().expect("valid options"), sync)
}

/// What one run of a case left: the states a reopen may find, and facts
/// about the crash.
struct Run {
    /// `None`: the store was never created (power failed in `Db::create`).
    states: Option<(Vec<Model>, usize)>,
    /// Whether the armed cut struck before the workload ended.
    struck: bool,
    /// Whether the memtable held pairs when power failed.
    memtable_held: bool,
}

/// Creates the store at `path` and runs `ops`; power fails at request
/// `cut` from the start (or, not reached, after the last op).
fn run(
    pc: &PowerCut,
    path: &Path,
    o: &Options,
    ops: &[Op],
    sync: bool,
    cut: Option<(u64, Loss, u64)>,
) -> Run {
    if let Some((n, loss, seed)) = cut {
        pc.arm(n, loss, seed);
    }
    let db = match Db::create(path, o.clone()) {
        Ok(db) => db,
        Err(e) if pc.is_cut() => {
            let _ = e;
            return Run {
                states: None,
                struck: true,
                memtable_held: false,
            };
        }
        Err(e) => panic!("create {}: {e}", path.display()),
    };
    let (states, durable, struck) = run_until(&db, ops, sync, Model::new(), |_| pc.is_cut());
    let memtable_held = db.stats().memtable_keys > 0;
    if !pc.is_cut() {
        // Not reached: power fails after the workload, the store still open.
        let (_, loss, seed) = cut.unwrap_or((0, Loss::Some, 0));
        pc.cut(loss, seed);
    }
    // Dropped without power: nothing it writes now lands.
    drop(db);
    Run {
        states: Some((states, durable)),
        struck,
        memtable_held,
    }
}

/// Reopens the store after the cut and checks it against `r`.
fn check(what: &str, path: &Path, o: &Options, r: &Run) {
    let Some((states, durable)) = &r.states else {
        // Never acknowledged: no store, or an empty one, is allowed.
        match Db::open_path(path, o.clone()) {
            Ok(db) => {
                let pairs = db.scan(..).unwrap_or_else(|e| panic!("{what}: scan: {e}"));
                assert!(
                    pairs.is_empty(),
                    "{what}: an unacknowledged create holds pairs"
                );
            }
            Err(Error::NoStore { .. } | Error::NotAStoreFile { .. }) => {}
            Err(e) => panic!("{what}: open after a cut in create: {e}"),
        }
        return;
    };
    let db =
        Db::open_path(path, o.clone()).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let got: Model = db
        .scan(..)
        .unwrap_or_else(|e| panic!("{what}: scan: {e}"))
        .into_iter()
        .collect();
    assert!(
        states[*durable..].contains(&got),
        "{what}: recovered state matches no allowed state (durable index {durable} of {})",
        states.len()
    );
    db.put(b"after", b"cut")
        .unwrap_or_else(|e| panic!("{what}: put: {e}"));
    drop(db);
    let db = Db::open_path(path, o.clone())
        .unwrap_or_else(|e| panic!("{what}: second reopen failed: {e}"));
    assert_eq!(
        db.get(b"after").unwrap(),
        Some(b"cut".to_vec()),
        "{what}: write after recovery lost"
    );
}

/// One seed: a dry run counts the requests the workload makes, then
/// `cuts` runs each lose power at one of them. Every run has a memtable
/// (a file store's default); the tally says at how many cuts it held pairs.
fn case(pc: &PowerCut, seed: u64, kind: StoreKind, big: bool, cuts: u64) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = rng.gen_range(10..if big { 30 } else { 60 });
    let ops = match big {
        true => workload_big(&mut rng, n, 4000, 2000),
        false => workload(&mut rng, n, 150),
    };
    let wal = if big {
        64 << 10
    } else {
        [256 << 10, 1 << 20][rng.gen_range(0..2)]
    };
    let (o, sync) = options(&mut rng, kind, wal);
    let path = pc.path().join(format!("store-{seed}"));
    let before = pc.ops();
    let dry = run(pc, &path, &o, &ops, sync, None);
    assert!(dry.states.is_some(), "seed {seed}: the dry run was cut");
    pc.restart();
    let requests = pc.ops() - before;
    remove(&path);
    let mut t = Tally::default();
    for i in 0..cuts {
        let path = pc.path().join(format!("store-{seed}-{i}"));
        let loss = LOSSES[rng.gen_range(0..3)];
        let at = rng.gen_range(1..=requests);
        let r = run(pc, &path, &o, &ops, sync, Some((at, loss, rng.gen())));
        assert!(pc.restart(), "power is off after every run");
        let what = format!(
            "seed {seed} cut {i}: {kind:?} {o:?} cut at request {at} of about {requests}, {loss:?}"
        );
        check(&what, &path, &o, &r);
        // Only an in-place store has a memtable.
        t += match kind {
            StoreKind::InPlace => Tally::memtable(r.struck, r.memtable_held),
            _ => r.struck.into(),
        };
        remove(&path);
    }
    t
}

/// Removes a case's store for good: the removal is synced, or the next
/// cut would bring the file back (as it would on a disk).
fn remove(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("remove {}: {e}", path.display()),
    }
    flashkv_device::sync_parent(path).expect("sync the removal");
}

/// Runs `seeds` through [`case`], four cuts each; requires the memtable
/// to have held pairs at `held` percent of the cuts.
fn suite(test: &str, seeds: std::ops::Range<u64>, kind: StoreKind, big: bool, held: u64) {
    let Some(pc) = layer(test) else { return };
    let t = cases(test, seeds, |seed| case(&pc, seed, kind, big, 4));
    t.assert_hits(test, 80);
    t.assert_held(test, held);
}

#[test]
fn power_cut_in_place() {
    suite("power_cut_in_place", 0..200, StoreKind::InPlace, false, 50);
}

#[test]
fn power_cut_in_page_logging() {
    let ipl = StoreKind::InPageLogging(IplGeometry::seed());
    suite("power_cut_in_page_logging", 0..150, ipl, false, 50);
}

/// Batches larger than half of a 64 KiB log: the log moves above the
/// pages and the file is cut back after the checkpoint that moves it home.
#[test]
fn power_cut_with_the_log_above_the_pages() {
    suite(
        "power_cut_with_the_log_above_the_pages",
        0..60,
        StoreKind::InPlace,
        true,
        40,
    );
}

/// The first durable commit of a new store survives a cut that drops
/// every unsynced change: its file's name was synced with its directory.
#[test]
fn power_cut_after_the_first_commit_keeps_it() {
    let test = "power_cut_after_the_first_commit_keeps_it";
    let Some(pc) = layer(test) else { return };
    let path = pc.path().join("new");
    let o = Options::builder().sync(true).build().unwrap();
    let db = Db::create(&path, o.clone()).unwrap();
    db.put(b"first", b"commit").unwrap();
    pc.cut(Loss::All, 0);
    drop(db);
    assert!(pc.restart());
    let db = Db::open_path(&path, o)
        .unwrap_or_else(|e| panic!("the new store is gone after a power cut: {e}"));
    assert_eq!(db.get(b"first").unwrap(), Some(b"commit".to_vec()));
}
