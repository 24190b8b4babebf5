//! Corruption on the SSD must be detected, never returned as data nor
//! written back to the HDD: the SSD under the hybrid flips bits in what
//! its reads return, or turns sectors unreadable (latent sector errors),
//! from the hybrid's creation on, through flush rounds, power loss and
//! recovery. Every answer is either right (the reference model's) or an
//! error that reports damage; a wrong value fails the case, and so does
//! a piece of the HDD holding anything but data the host wrote. A failing
//! case prints its seed; `FLASHKV_SEED=<n>` reruns it.

mod common;

use common::Machine;
use flashkv_device::{BlockDevice, DeviceError, FaultPlan, Injected, Nanos, Strike};
use flashkv_hybrid::{HybridDevice, HybridError, Options};
use flashkv_testing::{cases, soak};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const UNIT: usize = 4096;
const UNITS: u64 = 512; // a 2 MiB HDD
const PIECE: usize = 512;
const PIECES: usize = UNITS as usize * UNIT / PIECE;

fn options() -> Options {
    common::small_options()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    FlipReads,
    Latent,
}

/// Faults on the SSD only: the hybrid checksums what it keeps there; the
/// HDD holds plain blocks, the home copy. A flip strikes one read of a
/// 512-byte sector in `rate`; a latent error one sector read in `rate`
/// (5,000 on a case's first try), and the sector stays unreadable until it
/// is written again.
fn plan(fault: Fault, seed: u64, rate: u64) -> FaultPlan {
    let mut p = FaultPlan {
        seed,
        tear: true,
        ..FaultPlan::default()
    };
    match fault {
        Fault::FlipReads => p.flip_reads = Strike::chance(1.0 / rate as f64),
        Fault::Latent => p.latent = Strike::chance(1.0 / rate as f64),
    }
    p
}

/// An SSD (2 MiB, 20 µs a command) and an HDD (2 MiB, 5 ms a command).
fn machine(ssd_plan: FaultPlan) -> Machine {
    Machine::new(
        common::timed("2 MiB", 20.0, 500.0),
        common::timed(&format!("{}", UNITS * UNIT as u64), 5000.0, 100.0),
        ssd_plan,
        FaultPlan::default(),
    )
}

/// Every 512-byte piece carries one tag, (write id << 16 | piece) repeated;
/// 0 is the zeros of a never-written or trimmed piece.
fn tag_of(bytes: &[u8]) -> Option<u64> {
    let t = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    bytes.chunks(8).all(|c| c == t.to_le_bytes()).then_some(t)
}

/// What each piece may read as: `now` after the requests so far (one value,
/// or several after a request that failed part way), `acked` after the
/// last completed flush, plus `since` (everything issued after it) once
/// power is lost.
struct Model {
    now: Vec<Vec<u64>>,
    acked: Vec<Vec<u64>>,
    since: Vec<Vec<u64>>,
    /// Pieces checked against a read.
    checked: u64,
}

impl Model {
    fn new() -> Self {
        Model {
            now: vec![vec![0]; PIECES],
            acked: vec![vec![0]; PIECES],
            since: vec![Vec::new(); PIECES],
            checked: 0,
        }
    }

    /// Piece `p` was written with `tag` by a request that succeeded or failed.
    fn write(&mut self, p: usize, tag: u64, ok: bool) {
        if ok {
            self.now[p] = vec![tag];
        } else {
            self.now[p].push(tag);
        }
        self.since[p].push(tag);
    }

    fn flushed(&mut self) {
        self.acked.clone_from(&self.now);
        self.since.iter_mut().for_each(Vec::clear);
    }

    /// After power loss, before anything is read.
    fn lost_power(&mut self) {
        for p in 0..PIECES {
            let mut may = std::mem::take(&mut self.acked[p]);
            may.append(&mut self.since[p]);
            self.now[p] = may;
        }
        self.flushed();
    }

    /// Checks what a read returned for piece `p`; then the piece is known.
    fn check(&mut self, what: &str, p: usize, piece: &[u8]) {
        let t = tag_of(piece);
        assert!(
            t.is_some_and(|t| self.now[p].contains(&t)),
            "{what}: piece {p} (unit {}) read as {}, the device holds one of {:x?}",
            p * PIECE / UNIT,
            t.map_or("damaged bytes".into(), |t| format!("{t:x}")),
            self.now[p]
        );
        self.now[p] = vec![t.unwrap_or(0)];
        self.checked += 1;
    }
}

/// An error that reports damage: what the hybrid owes a corrupted SSD.
fn detected(what: &str, fault: Fault, e: &DeviceError) {
    let ok = match fault {
        Fault::FlipReads => matches!(
            e.stacked::<HybridError>(),
            Some(HybridError::Corrupt { .. })
        ),
        Fault::Latent => matches!(e, DeviceError::Unreadable { .. }),
    };
    assert!(ok, "{what}: damage reported as {e:?}");
}

/// The same for the hybrid's own API (open, create, drain, checks).
fn detected_hybrid(what: &str, fault: Fault, e: HybridError) {
    match e {
        HybridError::Device(d) => detected(what, fault, &d),
        // Both superblock copies unreadable as one.
        HybridError::Corrupt { .. } | HybridError::NotFormatted if fault == Fault::FlipReads => {}
        e => panic!("{what}: damage reported as {e:?}"),
    }
}

/// A write of whole pieces: 1 to 3 units, or 1 to 12 pieces anywhere.
fn write(
    dev: &mut HybridDevice,
    m: &mut Model,
    rng: &mut SmallRng,
    now: Nanos,
    id: u64,
) -> Result<Nanos, DeviceError> {
    let per = UNIT / PIECE;
    let (first, n) = if rng.gen_bool(0.5) {
        let u = rng.gen_range(0..UNITS as usize - 3);
        (u * per, rng.gen_range(1..4) * per)
    } else {
        (rng.gen_range(0..PIECES - 12), rng.gen_range(1..13))
    };
    let mut data = Vec::with_capacity(n * PIECE);
    for p in first..first + n {
        data.extend((id << 16 | p as u64).to_le_bytes().repeat(PIECE / 8));
    }
    let r = dev.write_at(now, (first * PIECE) as u64, &data);
    for p in first..first + n {
        m.write(p, id << 16 | p as u64, r.is_ok());
    }
    r.map(|c| c.end)
}

/// Reads 1 to 24 pieces anywhere and checks each.
fn read(
    dev: &mut HybridDevice,
    m: &mut Model,
    rng: &mut SmallRng,
    now: Nanos,
    what: &str,
) -> Result<Nanos, DeviceError> {
    let first = rng.gen_range(0..PIECES - 24);
    let mut buf = vec![0u8; rng.gen_range(1..25) * PIECE];
    let c = dev.read_at(now, (first * PIECE) as u64, &mut buf)?;
    for (k, piece) in buf.chunks(PIECE).enumerate() {
        m.check(what, first + k, piece);
    }
    Ok(c.end)
}

/// One host request of the mix, or idle time for the flush worker.
fn step(
    dev: &mut HybridDevice,
    m: &mut Model,
    rng: &mut SmallRng,
    now: Nanos,
    id: u64,
    what: &str,
) -> Result<Nanos, DeviceError> {
    match rng.gen_range(0..20) {
        0..=8 => write(dev, m, rng, now, id),
        9..=13 => read(dev, m, rng, now, what),
        14 => {
            let r = dev.flush_at(now);
            if r.is_ok() {
                m.flushed();
            }
            r.map(|c| c.end)
        }
        15 => {
            let u = rng.gen_range(0..UNITS - 4);
            let r = dev.trim_at(now, u * UNIT as u64, 4 * UNIT as u64);
            let per = UNIT / PIECE;
            for p in u as usize * per..(u as usize + 4) * per {
                m.write(p, 0, r.is_ok());
            }
            r.map(|c| c.end)
        }
        _ => Ok(now + rng.gen_range(0..20_000_000)),
    }
}

/// Every piece of the HDD holds data the host wrote there (or zeros), so
/// nothing flipped was ever written back; after a completed drain, the
/// piece's current value.
fn check_hdd(m: &Machine, model: &Model, drained: bool, what: &str) {
    let mut all = vec![0u8; UNITS as usize * UNIT];
    m.hdd.with(|d| d.read(0, &mut all)).unwrap();
    for (p, piece) in all.chunks(PIECE).enumerate() {
        let t = tag_of(piece);
        let written = t.is_some_and(|t| t == 0 || t & 0xffff == p as u64);
        assert!(
            written,
            "{what}: HDD piece {p} holds {t:x?}: data nobody wrote there"
        );
        if drained {
            assert!(
                t.is_some_and(|t| model.now[p].contains(&t)),
                "{what}: after a drain HDD piece {p} holds {t:x?}, the device one of {:x?}",
                model.now[p]
            );
        }
    }
}

/// What the cases of a test saw, summed, so the test fails if its faults
/// never reach the paths it is about.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// Pieces a read returned and the model vouched for.
    pieces: u64,
    /// Errors that reported damage.
    errors: u64,
    /// SSD reads repeated after a checksum failed (and what came of them).
    rereads: u64,
    /// Drains that completed, the HDD then checked piece by piece.
    drains: u64,
    /// Recoveries that completed under faults.
    recoveries: u64,
}

impl std::ops::AddAssign for Seen {
    fn add_assign(&mut self, o: Seen) {
        self.pieces += o.pieces;
        self.errors += o.errors;
        self.rereads += o.rereads;
        self.drains += o.drains;
        self.recoveries += o.recoveries;
    }
}

/// One case's machine, reference model and random choices.
struct Run {
    m: Machine,
    model: Model,
    rng: SmallRng,
    fault: Fault,
    rate: u64,
    id: u64,
    seen: Seen,
}

impl Run {
    /// Notes an error, which must report damage.
    fn error(&mut self, what: &str, e: &DeviceError) {
        detected(what, self.fault, e);
        self.seen.errors += 1;
    }

    fn hybrid_error(&mut self, what: &str, e: HybridError) {
        detected_hybrid(what, self.fault, e);
        self.seen.errors += 1;
    }

    /// Runs `n` requests; checks the maps now and then.
    fn workload(&mut self, dev: &mut HybridDevice, n: u64, what: &str) {
        let mut now = dev.clock();
        for i in 0..n {
            let w = format!("{what} request {i}");
            self.id += 1;
            match step(dev, &mut self.model, &mut self.rng, now, self.id, &w) {
                Ok(end) => now = now.max(end),
                Err(e) => self.error(&w, &e),
            }
            if i % 32 == 31 {
                if let Err(e) = dev.check_invariants() {
                    self.hybrid_error(&format!("{w} check"), e);
                }
            }
        }
    }

    /// After recovery: every piece holds its acknowledged value or one
    /// written since; a unit whose read fails is skipped.
    fn check_recovered(&mut self, dev: &mut HybridDevice, what: &str) {
        let per = UNIT / PIECE;
        for u in 0..UNITS {
            let mut buf = vec![0u8; UNIT];
            match dev.read_at(dev.clock(), u * UNIT as u64, &mut buf) {
                Ok(_) => {
                    for (k, piece) in buf.chunks(PIECE).enumerate() {
                        self.model.check(what, u as usize * per + k, piece);
                    }
                }
                Err(e) => self.error(&format!("{what} unit {u}"), &e),
            }
        }
        self.model.flushed();
    }

    /// A drain (half the time), then the HDD's content checked.
    fn drain(&mut self, dev: &mut HybridDevice, what: &str) {
        let drained = self.rng.gen_bool(0.5)
            && match dev.drain(dev.clock()) {
                Ok(_) => true,
                Err(e) => {
                    self.error(&format!("{what} drain"), &e);
                    false
                }
            };
        self.seen.drains += u64::from(drained);
        check_hdd(&self.m, &self.model, drained, what);
    }

    /// Power lost (unflushed writes kept, lost or torn as the seed
    /// decides), then recovery with the faults still striking.
    fn power_cycle(&mut self, dev: HybridDevice, what: &str) -> Option<HybridDevice> {
        self.seen.rereads += dev.hybrid_stats().checksum_rereads;
        drop(dev);
        self.model.lost_power();
        let p = plan(self.fault, self.rng.gen(), self.rate);
        // Powering the machine off takes it apart: a blank one stands in.
        let m = std::mem::replace(&mut self.m, machine(FaultPlan::default()));
        self.m = m.power_cut(p, FaultPlan::default());
        match self.m.open(options()) {
            Ok(dev) => {
                self.seen.recoveries += 1;
                Some(dev)
            }
            Err(e) => {
                self.hybrid_error(&format!("{what} open"), e);
                None
            }
        }
    }
}

/// Fault plans a case tries, its workload the same, until one strikes.
const ATTEMPTS: u64 = 6;

/// One case: [`attempt`] with plans of the same kind until a fault
/// strikes (each try after the first with another seed and a fault four
/// times as likely). Returns what it saw, whether a fault struck, and
/// whether the first plan did.
fn case(seed: u64, fault: Fault) -> (Seen, bool, bool) {
    let mut seen = Seen::default();
    for k in 0..ATTEMPTS {
        let (one, hit) = attempt(seed, fault, k);
        seen += one;
        if hit {
            return (seen, true, k == 0);
        }
    }
    (seen, false, false)
}

/// One try of a case: twice a workload, a drain (half the time), power
/// loss and recovery under faults, and every piece checked. Returns what
/// it saw and whether a fault struck.
fn attempt(seed: u64, fault: Fault, k: u64) -> (Seen, bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let flip_rate = [300, 2000, 10_000][rng.gen_range(0..3)];
    let rate = match fault {
        Fault::FlipReads => flip_rate,
        Fault::Latent => 5000,
    };
    let rate = (rate >> (2 * k)).max(20);
    let plan_seed = rng.gen::<u64>() ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let m = machine(plan(fault, plan_seed, rate));
    let mut r = Run {
        m,
        model: Model::new(),
        rng,
        fault,
        rate,
        id: 0,
        seen: Seen::default(),
    };
    let what = format!("{fault:?} 1/{rate}");
    let mut dev = match r.m.create(options()) {
        Ok(dev) => Some(dev),
        Err(e) => {
            r.hybrid_error(&format!("{what} create"), e);
            None
        }
    };
    let mut hit = false;
    for round in 0..2 {
        let Some(mut d) = dev.take() else { break };
        let what = format!("{what} round {round}");
        let n = r.rng.gen_range(20..250);
        r.workload(&mut d, n, &what);
        r.drain(&mut d, &what);
        hit |= struck(&r.m);
        dev = r.power_cycle(d, &what);
        if let Some(d) = dev.as_mut() {
            if let Err(e) = d.check_invariants() {
                r.hybrid_error(&format!("{what} check after open"), e);
            }
            r.check_recovered(d, &format!("{what} after open"));
        }
    }
    if let Some(d) = dev {
        r.seen.rereads += d.hybrid_stats().checksum_rereads;
    }
    r.seen.pieces = r.model.checked;
    (r.seen, hit | struck(&r.m))
}

/// Faults struck on the SSD so far.
fn struck(m: &Machine) -> bool {
    m.ssd.with(|d| d.injected()) != Injected::default()
}

/// Runs `seeds` of `fault`; every case must be struck, and over all of
/// them answers must have been checked, damage reported, recoveries and
/// drains completed.
fn many(test: &str, seeds: std::ops::Range<u64>, fault: Fault) -> Seen {
    let (mut seen, mut first) = (Seen::default(), 0);
    let t = cases(test, seeds, |s| {
        let (one, hit, at_first) = case(s, fault);
        seen += one;
        first += u64::from(at_first);
        hit
    });
    t.assert_hits(test, 100);
    eprintln!(
        "{test}: the first plan struck in {first} of {} cases",
        t.cases
    );
    if t.cases > 1 {
        let s = seen;
        assert!(
            s.pieces > 1000 * t.cases && s.errors > 0 && s.recoveries >= t.cases && s.drains > 0,
            "{test}: {s:?}"
        );
    }
    eprintln!("{test}: {seen:?}");
    seen
}

#[test]
fn flipped_bits_on_the_ssd_are_detected_never_returned() {
    let t = "flipped_bits_on_the_ssd_are_detected_never_returned";
    let seen = many(t, 0..1500, Fault::FlipReads);
    // Most flips are cured by reading again, not reported.
    assert!(seen.rereads > 4 * seen.errors, "{t}: {seen:?}");
}

#[test]
fn latent_ssd_sector_errors_are_reported() {
    many(
        "latent_ssd_sector_errors_are_reported",
        10_000..10_600,
        Fault::Latent,
    );
}

/// The SSD byte offset of the cached copy holding `unit` (a cache slot's
/// whole content), found by reading the SSD's cache region.
fn slot_of(m: &Machine, dev: &HybridDevice, unit: &[u8]) -> u64 {
    let l = dev.layout();
    let mut region = vec![0u8; (l.cache_sectors * l.sector) as usize];
    m.ssd.with(|d| d.read(l.cache_start, &mut region)).unwrap();
    let k = region.chunks(UNIT).position(|c| c == unit);
    l.cache_start + k.expect("the unit is cached") as u64 * l.sector
}

/// A unit tagged as write `id` would tag it, from its first piece `p`.
fn unit_bytes(id: u64, p: usize) -> Vec<u8> {
    (p..p + UNIT / PIECE)
        .flat_map(|q| (id << 16 | q as u64).to_le_bytes().repeat(PIECE / 8))
        .collect()
}

/// Checks `e` is the hybrid's corruption error for the cached copy at `location`.
fn corrupt_copy(e: DeviceError, location: u64) {
    match e.stacked::<HybridError>() {
        Some(HybridError::Corrupt { what, location: l }) => {
            assert_eq!((*what, *l), ("cached data", location), "{e}");
        }
        _ => panic!("expected corrupt cached data at {location}, got {e:?}"),
    }
}

/// A cached copy that reads back damaged every time (damage on the medium,
/// as far as the hybrid can tell) is a typed error on every path that
/// reads it: a host read of the whole unit, a read of a unit cached in part
/// (laid over the HDD's), a write covering the unit in part (which merges
/// the copy), and write-back, which leaves the HDD as it was. Once reads
/// come back right, every path serves the data written.
#[test]
fn a_damaged_cached_copy_is_a_typed_error_on_every_path() {
    let m = machine(FaultPlan::default());
    let mut dev = m.create(options()).unwrap();
    let per = UNIT / PIECE;
    let (x, y) = (5usize, 9usize); // cached whole; cached in part
    let whole = unit_bytes(1, x * per);
    let mut part = vec![0u8; UNIT];
    part[..PIECE].copy_from_slice(&unit_bytes(2, y * per)[..PIECE]);
    let t = dev.clock();
    dev.write_at(t, (x * UNIT) as u64, &whole).unwrap();
    dev.write_at(t, (y * UNIT) as u64, &part[..PIECE]).unwrap();
    dev.flush_at(dev.clock()).unwrap();
    let (sx, sy) = (slot_of(&m, &dev, &whole), slot_of(&m, &dev, &part));
    let s = u64::from(m.ssd.with(|d| d.geometry().sector_size));
    let sectors = (sx / s..(sx + UNIT as u64) / s).chain(sy / s..(sy + UNIT as u64) / s);
    let flips = FaultPlan {
        flip_reads: Strike::at(sectors.collect()),
        ..FaultPlan::default()
    };
    m.arm(flips, FaultPlan::default());

    let mut buf = vec![0u8; UNIT];
    let t = dev.clock();
    corrupt_copy(dev.read_at(t, (x * UNIT) as u64, &mut buf).unwrap_err(), sx);
    corrupt_copy(dev.read_at(t, (y * UNIT) as u64, &mut buf).unwrap_err(), sy);
    let merge = dev.write_at(t, (x * UNIT + PIECE) as u64, &[0xEE; PIECE]);
    corrupt_copy(merge.unwrap_err(), sx);
    let e = dev.drain(dev.clock()).unwrap_err();
    assert!(e.stacked::<HybridError>().is_some(), "{e:?}");
    // Each check that failed was read again once.
    assert!(dev.hybrid_stats().checksum_rereads >= 4);
    let mut hdd = vec![0u8; UNITS as usize * UNIT];
    m.hdd.with(|d| d.read(0, &mut hdd)).unwrap();
    assert!(hdd.iter().all(|&b| b == 0), "nothing reached the HDD");

    m.arm(FaultPlan::default(), FaultPlan::default());
    dev.read_at(dev.clock(), (x * UNIT) as u64, &mut buf)
        .unwrap();
    assert_eq!(buf, whole, "the refused merge logged nothing");
    dev.read_at(dev.clock(), (y * UNIT) as u64, &mut buf)
        .unwrap();
    assert_eq!(buf, part);
    dev.drain(dev.clock()).unwrap();
    dev.check_invariants().unwrap();
    m.hdd.with(|d| d.read(0, &mut hdd)).unwrap();
    assert_eq!(&hdd[x * UNIT..(x + 1) * UNIT], &whole[..]);
    assert_eq!(&hdd[y * UNIT..(y + 1) * UNIT], &part[..]);
}

/// Write-back under heavy flips (one 512-byte sector read in 40): the
/// worker reads every dirty unit from the SSD, checks it, reads a failed
/// one again, and stops with an error rather than write what it cannot
/// verify. Drains are retried until one completes; the HDD then holds
/// exactly what the host wrote, piece by piece. Tries plans of flips, the
/// workload the same, until flips strike the drains (each try after the
/// first with another seed and flips four times as likely); returns
/// whether they did.
fn write_back_case(seed: u64) -> bool {
    (0..ATTEMPTS).any(|k| write_back_attempt(seed, k))
}

/// One try of [`write_back_case`]: whether flips struck the drains.
fn write_back_attempt(seed: u64, k: u64) -> bool {
    let mut rng = SmallRng::seed_from_u64(seed);
    let m = machine(FaultPlan::default());
    let mut dev = m.create(options()).unwrap();
    let mut model = Model::new();
    let mut now = dev.clock();
    for id in 1..=rng.gen_range(50..200) {
        // Back to back, so nothing is written back before the flips.
        now = write(&mut dev, &mut model, &mut rng, now, id).unwrap();
    }
    dev.flush_at(now).unwrap();
    let before = dev.hybrid_stats().checksum_rereads;
    let flips = FaultPlan {
        seed: rng.gen::<u64>() ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        flip_reads: Strike::chance((4f64.powi(k as i32) / 40.0).min(0.1)),
        ..FaultPlan::default()
    };
    m.arm(flips, FaultPlan::default());
    let mut failed = 0;
    while let Err(e) = dev.drain(dev.clock()) {
        detected("drain", Fault::FlipReads, &e);
        failed += 1;
        assert!(failed < 100, "seed {seed}: no drain completes");
    }
    check_hdd(
        &m,
        &model,
        true,
        &format!("seed {seed} after {failed} failed drains"),
    );
    let rereads = dev.hybrid_stats().checksum_rereads - before;
    rereads > 0 && struck(&m)
}

#[test]
fn write_back_never_sends_flipped_bits_to_the_hdd() {
    let t = "write_back_never_sends_flipped_bits_to_the_hdd";
    cases(t, 20_000..20_200, write_back_case).assert_hits(t, 100);
}

/// Flips and latent errors, from a fresh seed each, until `FLASHKV_SOAK_SECS`.
#[test]
#[ignore = "soak: runs until its time budget"]
fn soak_hybrid_corruption() {
    soak("soak_hybrid_corruption", |s| match s % 3 {
        0 => case(s / 3, Fault::FlipReads).1,
        1 => case(s / 3, Fault::Latent).1,
        _ => write_back_case(s / 3),
    });
}
