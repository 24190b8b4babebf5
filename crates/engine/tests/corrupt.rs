//! Corruption must be detected, never returned as data: run a workload on
//! a device that flips bits in what reads return, sends writes astray or
//! hides sectors behind latent errors, read a key after every operation,
//! then flush, reopen and scan. Each answer is either right (the
//! reference model's) or an error: a wrong value fails the case. A failing
//! case prints its seed; `FLASHKV_SEED=<n>` reruns it.

use flashkv_device::{
    BlockDevice, FaultDevice, FaultPlan, Geometry, MemDevice, PairDevice, Strike, Tier,
};
use flashkv_engine::{Db, Error, IplGeometry, Options, Placement, StoreKind};
use flashkv_testing::{cases, soak, Shared, Tally};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

// `common::run` serves the crash tests, not this one.
#[allow(dead_code)]
mod common;
use common::{apply, workload, Model, Op};

type Dev = Shared<FaultDevice<Box<dyn BlockDevice>>>;

#[derive(Clone, Copy, Debug)]
enum Fault {
    FlipReads,
    Misdirect,
    Latent,
}

fn plan(fault: Fault, seed: u64) -> FaultPlan {
    let mut p = FaultPlan {
        seed,
        ..FaultPlan::default()
    };
    match fault {
        Fault::FlipReads => p.flip_reads = Strike::chance(0.002),
        Fault::Misdirect => p.misdirect = Strike::chance(0.02),
        Fault::Latent => p.latent = Strike::chance(0.003),
    }
    p
}

fn device(kind: StoreKind, nand: bool, plan: FaultPlan) -> Dev {
    let mem = |capacity| {
        Box::new(MemDevice::new(Geometry {
            sector_size: 512,
            erase_unit: nand.then_some(128 << 10),
            capacity,
            program_once: nand,
        }))
    };
    let dev: Box<dyn BlockDevice> = match kind {
        // Checkpoints and a log of up to 1 MiB on the fast device, then 16 slots.
        StoreKind::TwoDevice(_) => Box::new(
            PairDevice::new(mem((3 << 20) + (16 << 12)), mem(24 << 20), Tier::Fast)
                .expect("a pair of memory devices"),
        ),
        _ => mem(24 << 20),
    };
    Shared::new(FaultDevice::new(dev, plan))
}

/// An error that reports damage: what the engine owes a corrupted device.
fn detected(what: &str, e: Error) {
    assert!(
        matches!(
            e,
            Error::Corrupt { .. } | Error::Device(_) | Error::Version { .. } | Error::NotAStore
        ),
        "{what}: damage reported as {e:?}"
    );
}

/// A value in a failure message: its length and first byte.
fn show(v: Option<&Vec<u8>>) -> String {
    v.map_or("nothing".into(), |v| {
        format!("{} bytes of {:?}", v.len(), v.first())
    })
}

/// Checks one answer against the model; false once the engine reported damage.
fn answer(
    what: &str,
    got: flashkv_engine::Result<Option<Vec<u8>>>,
    want: Option<&Vec<u8>>,
) -> bool {
    match got {
        Ok(v) => {
            assert!(
                v.as_ref() == want,
                "{what}: returned {}, the store holds {}",
                show(v.as_ref()),
                show(want)
            );
            true
        }
        Err(e) => {
            detected(what, e);
            false
        }
    }
}

/// Runs `ops`, reading a random key after each; stops at the first error.
fn run(db: &Db, ops: &[Op], rng: &mut SmallRng, what: &str) -> Option<Model> {
    let mut m = Model::new();
    for (i, op) in ops.iter().enumerate() {
        if let Err(e) = apply(db, op, &mut m) {
            detected(&format!("{what} op {i}"), e);
            return None;
        }
        let k = format!("k{:05}", rng.gen_range(0..150)).into_bytes();
        if !answer(&format!("{what} get after op {i}"), db.get(&k), m.get(&k)) {
            return None;
        }
    }
    Some(m)
}

/// How `got` differs from `want`, for the failure message.
fn diff(got: &Model, want: &Model) -> String {
    let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    let wrong: Vec<_> = got
        .iter()
        .filter(|(k, v)| want.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| k)
        .collect();
    let show = |ks: &[&Vec<u8>]| {
        ks.iter()
            .take(4)
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "{} of {} keys missing ({}), {} extra ({}), {} with other values ({})",
        missing.len(),
        want.len(),
        show(&missing),
        extra.len(),
        show(&extra),
        wrong.len(),
        show(&wrong)
    )
}

/// Every pair of the store, or the damage reported.
fn scan_matches(what: &str, db: &Db, m: &Model) -> bool {
    match db.scan(..) {
        Ok(pairs) => {
            let got: Model = pairs.into_iter().collect();
            assert!(
                &got == m,
                "{what}: scan returned a state the store never held: {}",
                diff(&got, m)
            );
            true
        }
        Err(e) => {
            detected(what, e);
            false
        }
    }
}

/// One attempt at a case: the seed's workload and options, the fault plan's
/// seed moved by `attempt`; returns whether the fault struck (while the
/// workload ran, or while recovery read what it left).
fn case(seed: u64, attempt: u64, kind: StoreKind, nand: bool, fault: Fault, reopen: bool) -> bool {
    let mut rng = SmallRng::seed_from_u64(seed);
    let frames = [1, 2, 8][rng.gen_range(0..3)];
    let n = rng.gen_range(40..120);
    let ops = workload(&mut rng, n, 150);
    let memtable = memtable_for(seed, kind, nand);
    let o = Options::builder()
        .store(kind)
        .buffer_pages(frames)
        .sync(rng.gen_bool(0.3))
        .wal_size([512 << 10, 1 << 20][rng.gen_range(0..2)])
        .max_size(24 << 20)
        .memtable(memtable)
        .build()
        .unwrap();
    let what = format!("{kind:?} nand={nand} {fault:?} frames={frames} memtable={memtable}");
    let dev = device(
        kind,
        nand,
        plan(fault, rng.gen::<u64>().wrapping_add(attempt)),
    );
    let struck = |d: &Dev| d.with(|d| d.injected()) != Default::default();
    let db = match Db::open(Box::new(dev.clone()), o.clone()) {
        Ok(db) => db,
        Err(e) => {
            detected(&format!("{what} open"), e);
            return struck(&dev);
        }
    };
    let Some(m) = run(&db, &ops, &mut rng, &what) else {
        return struck(&dev);
    };
    if !scan_matches(&format!("{what} scan"), &db, &m) || db.flush().is_err() || !reopen {
        return struck(&dev);
    }
    drop(db);
    let before = struck(&dev);
    // Reopen, faults still striking: recovery reads what the workload left.
    let dev = Shared::new(FaultDevice::new(
        dev.take().into_inner(),
        plan(fault, rng.gen::<u64>().wrapping_add(attempt)),
    ));
    match Db::open(Box::new(dev.clone()), o) {
        Ok(db) => {
            scan_matches(&format!("{what} scan after reopen"), &db, &m);
        }
        Err(e) => detected(&format!("{what} reopen"), e),
    }
    before || struck(&dev)
}

const KINDS: [(StoreKind, bool); 6] = [
    (StoreKind::InPlace, false),
    (StoreKind::InPageLogging(IplGeometry::seed()), false),
    (StoreKind::InPlace, true),
    (StoreKind::InPageLogging(IplGeometry::shared()), true),
    (StoreKind::TwoDevice(Placement::IndexOnFast), false),
    (StoreKind::TwoDevice(Placement::HotCold), false),
];

/// The memtable of seed `seed`'s case: of the in-place store off raw NAND
/// (the one store with a memtable), a quarter of the cases have one, of
/// 64 KiB (drained within the workload) or 1 MiB; not the seeds named in
/// the tests below, which hold the cases they once failed.
fn memtable_for(seed: u64, kind: StoreKind, nand: bool) -> usize {
    let n = seed / KINDS.len() as u64;
    match kind == StoreKind::InPlace && !nand && n % 4 == 3 {
        true => [64 << 10, 1 << 20][(n / 4 % 2) as usize],
        false => 0,
    }
}

/// Fault plans a case tries before it gives up on its fault striking.
const ATTEMPTS: u64 = 64;

/// A case whose fault strikes: the seed's workload, tried under the plans
/// of attempt 0, 1, ... until the fault strikes (a run where it did not
/// tested nothing of it). At these chances the first plan struck in 68 %
/// of the bit-flip cases and 89 to 98 % of the others (measured over
/// these tests' seeds), where the workload read or wrote too little.
fn any_case(seed: u64, fault: Fault, reopen: bool) -> Tally {
    let (kind, nand) = KINDS[(seed % KINDS.len() as u64) as usize];
    let struck = (0..ATTEMPTS).any(|a| case(seed, a, kind, nand, fault, reopen));
    // When a corruption strikes against what the memtable held is not
    // told apart: the memtable cases are counted, not their held pairs.
    match memtable_for(seed, kind, nand) {
        0 => struck.into(),
        _ => Tally::memtable(struck, false),
    }
}

#[test]
fn flipped_bits_are_detected() {
    let t = "flipped_bits_are_detected";
    cases(t, 0..1500, |s| any_case(s, Fault::FlipReads, false)).assert_hits(t, 100);
}

#[test]
fn latent_sector_errors_are_reported() {
    let t = "latent_sector_errors_are_reported";
    cases(t, 10_000..11_500, |s| any_case(s, Fault::Latent, true)).assert_hits(t, 100);
}

#[test]
fn misdirected_writes_are_detected() {
    let t = "misdirected_writes_are_detected";
    cases(t, 20_000..21_500, |s| any_case(s, Fault::Misdirect, false)).assert_hits(t, 100);
}

/// A bit flipped while recovery reads a durable log record used to end the
/// log there, silently dropping it and every later record (seed 2: the
/// in-place store on NAND, 49 of 70 keys lost), as a torn tail would: in
/// these workloads no later record vouches for it. A record that fails its
/// checks is now read again, and a flip on the way from the medium does not
/// survive a second read. (Damage on the medium itself to the last durable
/// record stays indistinguishable from a torn tail: errors.rs tests both.)
#[test]
fn a_log_record_misread_during_recovery_is_read_again() {
    let t = "a_log_record_misread_during_recovery_is_read_again";
    for seed in [2, 95, 116, 177, 588, 1527] {
        any_case(seed, Fault::FlipReads, true);
    }
    cases(t, 30_000..30_500, |s| any_case(s, Fault::FlipReads, true)).assert_hits(t, 100);
}

/// A write that lands elsewhere leaves its target holding what it held
/// before, valid by its own checks; these cases once returned it as data:
///
/// - an in-place page kept its previous version (seed 20012: the in-place
///   store on an FTL, get after op 65 returned nothing for a key holding
///   6211 bytes): the store now remembers the checksum of each page it
///   wrote, and reads back the pages a checkpoint covers before writing
///   it (seed 107828: one lost at the checkpoint that ends a recovery);
/// - a log record's slot stayed blank, so recovery ended the log there and
///   dropped the acknowledged records after it (seeds 20005, 20015,
///   20118): the records after a blank end are searched too, and one that
///   says the missing record was durable, or one out of order (seeds
///   100880, 109055, 113328: a copy astray), is corruption; the end of the
///   log a drop marks vouches for the records of the last flush (20949);
/// - a lost checkpoint left the older one newest (seed 20085: checkpoint
///   1; 21843: and the next epoch's first record): records of the next
///   epoch in the other half of the log say it was written.
#[test]
fn misdirected_writes_are_detected_after_reopen() {
    let t = "misdirected_writes_are_detected_after_reopen";
    any_case(20_012, Fault::Misdirect, false);
    for seed in [
        20_005, 20_015, 20_085, 20_118, 20_949, 21_843, 100_880, 107_828, 109_055, 113_328,
    ] {
        any_case(seed, Fault::Misdirect, true);
    }
    cases(t, 40_000..41_500, |s| any_case(s, Fault::Misdirect, true)).assert_hits(t, 100);
}

#[test]
#[ignore = "soak: runs until its time budget"]
fn soak_corruption() {
    soak("soak_corruption", |s| match s % 3 {
        0 => any_case(s / 3, Fault::FlipReads, true),
        1 => any_case(s / 3, Fault::Latent, true),
        _ => any_case(s / 3, Fault::Misdirect, s % 2 == 0),
    });
}
