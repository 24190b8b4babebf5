//! Randomized crash recovery on the device crate's fault harness: run a
//! workload on a device that loses power at a random write (tearing it
//! sector by sector and byte within a sector, and losing or tearing a
//! random part of the writes since the last flush; raw NAND loses
//! unflushed programs too), reopen, and check the store holds exactly the
//! state after some prefix of the acknowledged operations no shorter than
//! the last flush. Half of the cases lose power a second time while
//! recovering. A failing case prints its seed; `FLASHKV_SEED=<n>` reruns it.

use flashkv_device::{
    BlockDevice, DeviceError, FaultDevice, FaultPlan, Geometry, MemDevice, PairDevice, Strike, Tier,
};
use flashkv_engine::{Db, Error, IplGeometry, Options, Placement, StoreKind};
use flashkv_testing::{cases, soak, Shared, Tally};

mod common;
use common::{run, workload, workload_big, Model};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Dev = Shared<FaultDevice<Box<dyn BlockDevice>>>;

fn geometry(nand: bool) -> Geometry {
    Geometry {
        sector_size: 512,
        erase_unit: nand.then_some(128 << 10),
        capacity: 64 << 20,
        program_once: nand,
    }
}

/// Power lost during write `crash + 1` (never with `None`); unflushed
/// writes kept, lost or torn; rare latency spikes.
fn plan(rng: &mut SmallRng, crash: Option<u64>) -> FaultPlan {
    FaultPlan {
        crash_after_writes: crash,
        seed: rng.gen(),
        tear: true,
        tear_bytes: true,
        lose_programs: true,
        spikes: Strike::chance(0.01),
        spike_ns: 2_000_000,
        ..FaultPlan::default()
    }
}

/// `grouped`: the device offers a syncer, as a file does, so durable
/// commits are flushed outside the store's lock (group commit).
fn fresh(nand: bool, plan: FaultPlan, grouped: bool) -> Dev {
    on(Box::new(MemDevice::new(geometry(nand))), plan, grouped)
}

/// A pair for a two-device store: a fast device of a few page slots (so
/// pages are turned away and, with hot/cold, sent back), the first device
/// holding the checkpoints and the log.
fn two(first: Tier, slots: u64, plan: FaultPlan, grouped: bool) -> Dev {
    let slots = slots * 4096;
    let fast = match first {
        Tier::Fast => (2 << 20) + (1 << 20) + slots,
        Tier::Slow => slots,
    };
    let mem = |capacity| {
        Box::new(MemDevice::new(Geometry {
            capacity,
            ..geometry(false)
        }))
    };
    let pair = PairDevice::new(mem(fast), mem(64 << 20), first).expect("a pair of memory devices");
    on(Box::new(pair), plan, grouped)
}

/// `base` under the fault harness.
fn on(base: Box<dyn BlockDevice>, plan: FaultPlan, grouped: bool) -> Dev {
    let dev = FaultDevice::new(base, plan);
    match grouped {
        true => Shared::grouped(dev),
        false => Shared::new(dev),
    }
}

/// Loses power (if the device has not) and powers it up under `plan`.
fn restart(dev: Dev, plan: FaultPlan) -> Dev {
    Shared::new(dev.take().restart(plan).expect("restart"))
}

fn opts(kind: StoreKind, frames: usize, sync: bool, wal: u64, writer: bool) -> Options {
    opts_with(kind, frames, sync, wal, writer, 0)
}

/// [`opts`] with a memtable of `memtable` bytes (0: none).
fn opts_with(
    kind: StoreKind,
    frames: usize,
    sync: bool,
    wal: u64,
    writer: bool,
    memtable: usize,
) -> Options {
    Options::builder()
        .store(kind)
        .buffer_pages(frames)
        .writer(writer)
        .sync(sync)
        .wal_size(wal)
        .max_size(64 << 20)
        .memtable(memtable)
        .build()
        .unwrap()
}

/// The share (percent) of memtable cases whose crash must come while the
/// memtable holds pairs, or the case tests the tree, not the memtable.
const HELD: u64 = 50;

/// A memtable budget for seed `seed`: small ones drain often (a value
/// of up to 9 KB may take a budget's whole room).
fn memtable_for(seed: u64) -> usize {
    [2 << 10, 16 << 10, 64 << 10, 1 << 20][(seed >> 2) as usize % 4]
}

/// One crash case; returns whether the crash hit the workload (not only its aftermath).
fn case(seed: u64, kind: StoreKind, nand: bool) -> bool {
    case_sized(seed, kind, nand, 10..60, 150)
}

/// A crash case whose batches may be larger than the log's home half
/// (64 KiB of log): the log moves to a larger region and back.
fn big_case(seed: u64) -> bool {
    let two = StoreKind::TwoDevice(Placement::HotCold);
    let kind = [StoreKind::InPlace, SEED, two][(seed % 3) as usize];
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = rng.gen_range(10..40);
    let ops = workload_big(&mut rng, n, 8000, 3000);
    crash_case(seed, kind, false, ops, Some(64 << 10))
}

/// [`big_case`] in place with a memtable large enough to take the big
/// batches: their pairs go to the log alone, which moves above the pages.
fn big_memtable_case(seed: u64) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = rng.gen_range(10..40);
    let ops = workload_big(&mut rng, n, 8000, 3000);
    let memtable = [1 << 20, 2 << 20][(seed % 2) as usize];
    crash_tally(
        seed,
        StoreKind::InPlace,
        false,
        ops,
        Some(64 << 10),
        memtable,
    )
}

/// What a run to a crash leaves: the states, the last durable one,
/// whether power failed, and whether the memtable then held pairs.
type Crashed = (Vec<Model>, usize, bool, bool);

/// Runs `ops` on a store opened on `open()`; a crash while opening leaves the empty state.
fn run_on(db: Result<Db, Error>, ops: &[common::Op], sync: bool) -> Crashed {
    match db {
        Ok(db) => {
            let (states, durable, crashed) = run(&db, ops, sync);
            (states, durable, crashed, db.stats().memtable_keys > 0)
        }
        Err(Error::Device(DeviceError::Crashed)) => (vec![Model::new()], 0, true, false),
        Err(e) => panic!("open: {e}"),
    }
}

/// A recovery that may itself lose power: only a crash may stop it.
fn recover_once(what: &str, db: Result<Db, Error>) {
    match db {
        Ok(_) | Err(Error::Device(DeviceError::Crashed)) => {}
        Err(e) => panic!("{what}: recovery failed: {e}"),
    }
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
    let n = rng.gen_range(ops);
    let ops = workload(&mut rng, n, keys);
    crash_case(seed, kind, nand, ops, None)
}

/// [`crash_tally`] of a case without a memtable: whether power failed inside the workload.
fn crash_case(
    seed: u64,
    kind: StoreKind,
    nand: bool,
    ops: Vec<common::Op>,
    wal: Option<u64>,
) -> bool {
    crash_tally(seed, kind, nand, ops, wal, 0).struck > 0
}

/// Runs `ops` on a device that loses power at a random write, recovers
/// (maybe losing power again), and checks the state; `wal`: the log's
/// size (else a small one at random); `memtable`: its budget (0: none).
fn crash_tally(
    seed: u64,
    kind: StoreKind,
    nand: bool,
    ops: Vec<common::Op>,
    wal: Option<u64>,
    memtable: usize,
) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
    let frames = [1, 2, 8, 64][rng.gen_range(0..4)];
    let sync = rng.gen_bool(0.3);
    // Small logs make checkpoints (and recoveries that fill a log half) frequent.
    let small = [256 << 10, 512 << 10, 1 << 20][rng.gen_range(usize::from(nand)..3)];
    // Half the cases without the background writer: the log then fills to
    // full checkpoints, as in the seed experiments.
    let writer = (seed >> 1) % 2 == 0;
    let o = opts_with(kind, frames, sync, wal.unwrap_or(small), writer, memtable);
    let grouped = seed % 2 == 1;
    // A dry run counts the writes; then crash at one of them.
    let device = |plan| match kind {
        StoreKind::TwoDevice(_) => {
            // A log that must grow past its home (`wal` given) needs room
            // above the pages: above the homes, with the log on the fast
            // device (a small fast device on top of the disk has none
            // above its slots, and such a batch is refused).
            let first = match wal {
                Some(_) => Tier::Fast,
                None => [Tier::Fast, Tier::Slow][(seed >> 2) as usize % 2],
            };
            two(first, [4, 24][(seed >> 3) as usize % 2], plan, grouped)
        }
        _ => fresh(nand, plan, grouped),
    };
    let dry = device(plan(&mut rng, None));
    run(
        &Db::open(Box::new(dry.clone()), o.clone()).unwrap(),
        &ops,
        sync,
    );
    let crash = rng.gen_range(0..=dry.with(|d| d.counts().1));
    let dev = device(plan(&mut rng, Some(crash)));
    let (states, durable, crashed, held) =
        run_on(Db::open(Box::new(dev.clone()), o.clone()), &ops, sync);
    let what = format!(
        "{kind:?} nand={nand} frames={frames} sync={sync} grouped={grouped} memtable={memtable} crash after write {crash}"
    );
    check_recovery(&what, dev, &o, (&states, durable), &mut rng);
    match memtable {
        0 => crashed.into(),
        _ => Tally::memtable(crashed, held),
    }
}

/// Recovers `dev` after its crash (losing power again while recovering
/// half the time) and checks that the store holds one of `states` from
/// index `durable` on, keeps working, and survives another reopen.
fn check_recovery(
    what: &str,
    dev: Dev,
    o: &Options,
    (states, durable): (&[Model], usize),
    rng: &mut SmallRng,
) {
    let mut dev = dev;
    if rng.gen_bool(0.5) {
        // Lose power again while recovering.
        let again = rng.gen_range(0..39);
        dev = restart(dev, plan(rng, Some(again)));
        recover_once(what, Db::open(Box::new(dev.clone()), o.clone()));
    }
    let dev = restart(dev, plan(rng, None));
    let db =
        Db::open(Box::new(dev), o.clone()).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let got: Model = db
        .scan(..)
        .unwrap_or_else(|e| panic!("{what}: scan: {e}"))
        .into_iter()
        .collect();
    assert!(
        states[durable..].contains(&got),
        "{what}: recovered state matches no allowed state (durable index {durable} of {})",
        states.len()
    );
    // The recovered store keeps working and survives another reopen.
    db.put(b"after", b"crash").unwrap();
    db.flush().unwrap();
    let db = Db::open(db.into_device(), o.clone())
        .unwrap_or_else(|e| panic!("{what}: reopen after recovery failed: {e}"));
    assert_eq!(
        db.get(b"after").unwrap(),
        Some(b"crash".to_vec()),
        "{what}: write after recovery lost"
    );
}

/// A crash case across a close: the workload's first part, a close (an
/// in-place store's leaves its log to the next open), an open that
/// resumes that log, the rest; power fails at a random write anywhere in
/// that, the close and the open included. Returns whether the crash hit
/// (and the memtable held pairs then), and whether the second open
/// resumed the log (a dry run says).
fn resume_case(seed: u64, memtable: usize) -> (Tally, bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = rng.gen_range(10..60);
    let ops = workload(&mut rng, n, 150);
    let cut = rng.gen_range(0..=ops.len());
    let frames = [8, 64, 256][rng.gen_range(0..3)];
    let sync = rng.gen_bool(0.3);
    let wal = [256 << 10, 512 << 10, 1 << 20][rng.gen_range(0..3)];
    let writer = (seed >> 1) % 2 == 0;
    let o = opts_with(StoreKind::InPlace, frames, sync, wal, writer, memtable);
    let grouped = seed % 2 == 1;
    let dry = fresh(false, plan(&mut rng, None), grouped);
    let (_, resumed) = two_sessions(&dry, &o, &ops, cut, sync);
    let crash = rng.gen_range(0..=dry.with(|d| d.counts().1));
    let dev = fresh(false, plan(&mut rng, Some(crash)), grouped);
    let ((states, durable, crashed, held), _) = two_sessions(&dev, &o, &ops, cut, sync);
    let what = format!(
        "resume frames={frames} sync={sync} grouped={grouped} memtable={memtable} cut at op {cut} crash after write {crash}"
    );
    check_recovery(&what, dev, &o, (&states, durable), &mut rng);
    let t = match memtable {
        0 => crashed.into(),
        _ => Tally::memtable(crashed, held),
    };
    (t, resumed)
}

/// Runs `ops[..cut]`, closes, reopens, runs the rest, until a crash.
/// Returns what the run left ([`Crashed`]) and whether the second open
/// resumed the log (wrote no checkpoint).
fn two_sessions(
    dev: &Dev,
    o: &Options,
    ops: &[common::Op],
    cut: usize,
    sync: bool,
) -> (Crashed, bool) {
    let crashed = |e: &Error| matches!(e, Error::Device(DeviceError::Crashed) | Error::Poisoned);
    let held = |db: &Db| db.stats().memtable_keys > 0;
    let db = match Db::open(Box::new(dev.clone()), o.clone()) {
        Ok(db) => db,
        Err(e) if crashed(&e) => return ((vec![Model::new()], 0, true, false), false),
        Err(e) => panic!("open: {e}"),
    };
    let (mut states, durable, hit) = run(&db, &ops[..cut], sync);
    if hit {
        return ((states, durable, true, held(&db)), false);
    }
    // A crash inside the close: it was draining or logging what the memtable held.
    let held_at_close = held(&db);
    match db.close() {
        Ok(_) => {}
        Err(e) if crashed(&e) => return ((states, durable, true, held_at_close), false),
        Err(e) => panic!("close: {e}"),
    }
    // The close made every acknowledged write durable.
    let base = states.len() - 1;
    let db = match Db::open(Box::new(dev.clone()), o.clone()) {
        Ok(db) => db,
        Err(e) if crashed(&e) => return ((states, base, true, false), false),
        Err(e) => panic!("reopen: {e}"),
    };
    let resumed = db.stats().checkpoints == 0;
    let (more, d, hit) = common::run_from(&db, &ops[cut..], sync, states[base].clone());
    states.extend(more.into_iter().skip(1));
    ((states, base + d, hit, held(&db)), resumed)
}

#[test]
fn crash_across_a_close_that_leaves_the_log() {
    across_a_close("crash_across_a_close_that_leaves_the_log", 0..1000, |_| 0);
}

/// The same with a memtable: a close leaves its pairs in the log too.
#[test]
fn crash_across_a_close_with_a_memtable() {
    across_a_close(
        "crash_across_a_close_with_a_memtable",
        110_000..110_600,
        memtable_for,
    );
}

fn across_a_close(test: &str, seeds: std::ops::Range<u64>, memtable: fn(u64) -> usize) {
    let resumed = std::cell::Cell::new(0u64);
    let hits = cases(test, seeds, |s| {
        let (hit, r) = resume_case(s, memtable(s));
        resumed.set(resumed.get() + u64::from(r));
        hit
    });
    hits.assert_hits(test, 80);
    hits.assert_held(test, HELD);
    eprintln!(
        "{test}: the second open resumed the log in {} of {} cases",
        resumed.get(),
        hits.cases
    );
    // Most second opens must resume the log, or the test proves little.
    assert!(
        hits.cases < 2 || 2 * resumed.get() >= hits.cases,
        "{test}: {} of {} second opens resumed the log",
        resumed.get(),
        hits.cases
    );
}

fn many(test: &str, kind: StoreKind, nand: bool, seeds: std::ops::Range<u64>) {
    // Almost every case must crash inside the workload, or the test proves little.
    cases(test, seeds, |s| case(s, kind, nand)).assert_hits(test, 80);
}

const SEED: StoreKind = StoreKind::InPageLogging(IplGeometry::seed());

#[test]
fn crash_in_place_ftl() {
    many("crash_in_place_ftl", StoreKind::InPlace, false, 0..1500);
}

/// In place with a memtable: batches' pairs logged and held in memory,
/// drained into the tree when the (small) budget is full, carried by
/// checkpoints.
#[test]
fn crash_in_place_memtable() {
    let test = "crash_in_place_memtable";
    let case = |s: u64| {
        let mut rng = SmallRng::seed_from_u64(s);
        let n = rng.gen_range(10..80);
        let ops = workload(&mut rng, n, 150);
        crash_tally(s, StoreKind::InPlace, false, ops, None, memtable_for(s))
    };
    let t = cases(test, 100_000..101_000, case);
    t.assert_hits(test, 80);
    t.assert_held(test, HELD);
}

#[test]
fn crash_ipl_seed_ftl() {
    many("crash_ipl_seed_ftl", SEED, false, 10_000..11_500);
}

#[test]
fn crash_ipl_custom_ftl() {
    let kind = StoreKind::InPageLogging(IplGeometry::custom(4096, 8, 3));
    many("crash_ipl_custom_ftl", kind, false, 20_000..20_800);
}

#[test]
fn crash_ipl_seed_nand() {
    many("crash_ipl_seed_nand", SEED, true, 30_000..31_500);
}

#[test]
fn crash_in_place_nand() {
    many(
        "crash_in_place_nand",
        StoreKind::InPlace,
        true,
        40_000..41_100,
    );
}

/// The two-device store with either placement, its log on either device.
#[test]
fn crash_two_device() {
    let test = "crash_two_device";
    let case = |s: u64| {
        let kind =
            StoreKind::TwoDevice([Placement::IndexOnFast, Placement::HotCold][(s % 2) as usize]);
        match s % 5 {
            // Deeper trees: more pages than slots, pages sent back.
            4 => case_sized(s, kind, false, 200..500, 3000),
            _ => case(s, kind, false),
        }
    };
    cases(test, 90_000..91_000, case).assert_hits(test, 80);
}

#[test]
fn crash_ipl_shared_nand() {
    let kind = StoreKind::InPageLogging(IplGeometry::shared());
    many("crash_ipl_shared_nand", kind, true, 50_000..51_000);
}

/// Longer workloads: deeper trees, several checkpoints and merges before the crash.
fn long_case(seed: u64) -> bool {
    let a = case_sized(seed, StoreKind::InPlace, seed % 2 == 0, 200..500, 3000);
    let b = case_sized(seed, SEED, seed % 2 == 1, 200..500, 3000);
    a || b
}

#[test]
fn crash_batches_larger_than_the_log() {
    let test = "crash_batches_larger_than_the_log";
    cases(test, 80_000..80_250, big_case).assert_hits(test, 80);
}

#[test]
fn crash_batches_larger_than_the_log_with_a_memtable() {
    let test = "crash_batches_larger_than_the_log_with_a_memtable";
    let t = cases(test, 85_000..85_120, big_memtable_case);
    t.assert_hits(test, 80);
    t.assert_held(test, HELD);
}

#[test]
fn crash_long_workloads() {
    cases("crash_long_workloads", 60_000..60_060, long_case);
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
    let o = opts(kind, frames, sync, wal, true);
    let open = |data: &Dev, log: &Dev| {
        Db::open_with_log(Box::new(data.clone()), Box::new(log.clone()), o.clone())
    };
    // Odd seeds flush the log outside the lock (group commit).
    let g = seed % 2 == 1;
    let (dry, dry_log) = (
        fresh(nand, plan(&mut rng, None), false),
        fresh(log_nand, plan(&mut rng, None), g),
    );
    run(&open(&dry, &dry_log).unwrap(), &ops, sync);
    let on_log = rng.gen_bool(0.5);
    let writes = if on_log { &dry_log } else { &dry }.with(|d| d.counts().1);
    let crash = rng.gen_range(0..=writes);
    let (p, q) = (plan(&mut rng, Some(crash)), plan(&mut rng, None));
    let (data, log) = match on_log {
        true => (fresh(nand, q, false), fresh(log_nand, p, g)),
        false => (fresh(nand, p, false), fresh(log_nand, q, g)),
    };
    let (states, durable, crashed, _) = run_on(open(&data, &log), &ops, sync);
    let what = format!(
        "{kind:?} nand={nand} log_nand={log_nand} grouped={g} crash after write {crash} of the {}",
        if on_log { "log" } else { "store" }
    );
    let (mut data, mut log) = (data, log);
    if rng.gen_bool(0.5) {
        let (again, on_log) = (rng.gen_range(0..39), rng.gen_bool(0.5));
        let (p, q) = (plan(&mut rng, Some(again)), plan(&mut rng, None));
        let (pd, pl) = if on_log { (q, p) } else { (p, q) };
        (data, log) = (restart(data, pd), restart(log, pl));
        recover_once(&what, open(&data, &log));
    }
    let (pd, pl) = (plan(&mut rng, None), plan(&mut rng, None));
    let (data, log) = (restart(data, pd), restart(log, pl));
    let db = open(&data, &log).unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let got: Model = db
        .scan(..)
        .unwrap_or_else(|e| panic!("{what}: scan: {e}"))
        .into_iter()
        .collect();
    assert!(
        states[durable..].contains(&got),
        "{what}: recovered state matches no allowed state (durable index {durable} of {})",
        states.len()
    );
    crashed
}

const LOG_KINDS: [(StoreKind, bool); 4] = [
    (StoreKind::InPlace, false),
    (StoreKind::InPlace, true),
    (SEED, true),
    (SEED, false),
];

fn log_case(seed: u64) -> bool {
    let (kind, nand) = LOG_KINDS[(seed % 4) as usize];
    case_with_log(seed, kind, nand, seed % 3 == 0)
}

#[test]
fn crash_with_a_log_device() {
    let test = "crash_with_a_log_device";
    cases(test, 70_000..71_200, log_case).assert_hits(test, 75);
}

/// Random cases of every kind above until `FLASHKV_SOAK_SECS` (default 60).
#[test]
#[ignore = "soak: runs until its time budget"]
fn soak_crash() {
    const KINDS: [(StoreKind, bool); 6] = [
        (StoreKind::InPlace, false),
        (SEED, false),
        (
            StoreKind::InPageLogging(IplGeometry::custom(4096, 8, 3)),
            false,
        ),
        (SEED, true),
        (StoreKind::InPlace, true),
        (StoreKind::InPageLogging(IplGeometry::shared()), true),
    ];
    let t = soak("soak_crash", |seed| match seed % 8 {
        6 => long_case(seed),
        7 => log_case(seed / 8),
        k => {
            let (kind, nand) = KINDS[k as usize];
            case(seed, kind, nand)
        }
    });
    t.assert_hits("soak_crash", 75);
}
