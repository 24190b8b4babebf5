//! Randomized power loss on the device crate's fault harness: the SSD and
//! the HDD each sit behind a `FaultDevice`; power fails during a random
//! operation of either device, or between two host requests, and each
//! device keeps, loses or tears (sector by sector) what it had not flushed,
//! as the case's seed decides; a third of the recoveries lose power again.
//! After recovery every write acknowledged by a completed flush is readable,
//! and every sector holds either its acknowledged value or one written
//! after that flush. One mix writes whole 4 KiB sectors; the other mostly
//! unaligned 1 KiB writes (sector-exact caching of units covered in part).
//! A failing case prints its seed; `FLASHKV_SEED=<n>` reruns it.

mod common;

use common::Machine;
use flashkv_device::{BlockDevice, DeviceError, FaultPlan, Nanos};
use flashkv_hybrid::{HybridDevice, HybridError, Options};
use flashkv_testing::{cases, soak};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SECTOR: u64 = 4096;
const SECTORS: u64 = 512; // 2 MiB HDD

fn options() -> Options {
    common::small_options()
}

/// Every sector carries one tag: (write id, sector) repeated; 0 = zeros.
fn sector_bytes(tag: u64) -> Vec<u8> {
    tag.to_le_bytes().repeat(SECTOR as usize / 8)
}

/// The devices underneath have 512-byte sectors, so an unacknowledged write
/// may be torn inside a 4 KiB hybrid sector: the oracle works per piece.
const PIECE: usize = 512;
const PIECES: usize = SECTOR as usize / PIECE;

fn tag_of(bytes: &[u8]) -> Option<u64> {
    let t = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    (bytes.chunks(8).all(|c| c == t.to_le_bytes())).then_some(t)
}

struct Oracle {
    latest: Vec<u64>,
    acked: Vec<u64>,
    /// Values written since the last completed flush, per piece.
    since: Vec<Vec<u64>>,
}

impl Oracle {
    fn new() -> Self {
        let n = SECTORS as usize * PIECES;
        Oracle {
            latest: vec![0; n],
            acked: vec![0; n],
            since: vec![Vec::new(); n],
        }
    }
    fn write(&mut self, s: u64, tag: u64) {
        for p in s as usize * PIECES..(s as usize + 1) * PIECES {
            self.write_piece(p, tag);
        }
    }
    fn write_piece(&mut self, p: usize, tag: u64) {
        self.latest[p] = tag;
        self.since[p].push(tag);
    }
    fn flushed(&mut self) {
        self.acked.clone_from(&self.latest);
        self.since.iter_mut().for_each(Vec::clear);
    }
}

/// An SSD (2 MiB, 20 µs a command, 500 MB/s) and an HDD (2 MiB, 5 ms a
/// command, 100 MB/s), fresh, under these plans.
fn machine(ssd_plan: FaultPlan, hdd_plan: FaultPlan) -> Machine {
    Machine::new(
        common::timed("2 MiB", 20.0, 500.0),
        common::timed(&format!("{}", SECTORS * SECTOR), 5000.0, 100.0),
        ssd_plan,
        hdd_plan,
    )
}

/// Unflushed writes kept, lost or torn sector by sector as `seed` decides;
/// power lost during operation `crash + 1` (never with `None`).
fn plan(seed: u64, crash: Option<u64>) -> FaultPlan {
    FaultPlan {
        crash_after_ops: crash,
        seed,
        tear: true,
        ..FaultPlan::default()
    }
}

/// Plans for a run of the workload: power lost at a random operation of
/// one device, or (a quarter of the runs) only after the run.
fn workload_plans(rng: &mut SmallRng) -> (FaultPlan, FaultPlan) {
    let crash = match rng.gen_range(0..4) {
        0 => None,
        _ => Some(rng.gen_range(0..600)),
    };
    if rng.gen_bool(0.7) {
        (plan(rng.gen(), crash), plan(rng.gen(), None))
    } else {
        (plan(rng.gen(), None), plan(rng.gen(), crash.map(|c| c / 8)))
    }
}

/// An unaligned write of whole 512-byte pieces, mostly 1 KiB two pieces off
/// a 4 KiB boundary; every piece tagged with the write and its index.
fn unaligned_write(
    dev: &mut HybridDevice,
    o: &mut Oracle,
    rng: &mut SmallRng,
    now: Nanos,
    id: u64,
) -> flashkv_device::Result<Nanos> {
    let total = SECTORS as usize * PIECES;
    let (first, n) = match rng.gen_range(0..4) {
        0..=1 => (rng.gen_range(0..SECTORS as usize - 1) * PIECES + 2, 2),
        2 => (rng.gen_range(0..total - 2), 2),
        _ => (rng.gen_range(0..total - 24), rng.gen_range(1..24)),
    };
    let mut data = Vec::with_capacity(n * PIECE);
    for p in first..first + n {
        data.extend((id << 16 | p as u64).to_le_bytes().repeat(PIECE / 8));
    }
    let r = dev.write_at(now, (first * PIECE) as u64, &data);
    // Issued: the write may or may not survive, acknowledged or not.
    for p in first..first + n {
        o.write_piece(p, id << 16 | p as u64);
    }
    r.map(|c| c.end)
}

/// A write of 1, 2 or 5 whole sectors.
fn aligned_write(
    dev: &mut HybridDevice,
    o: &mut Oracle,
    rng: &mut SmallRng,
    now: Nanos,
    id: u64,
) -> flashkv_device::Result<Nanos> {
    let sector = rng.gen_range(0..SECTORS - 8);
    let len = if rng.gen_bool(0.15) {
        5
    } else {
        rng.gen_range(1..3)
    };
    let mut data = Vec::new();
    for i in 0..len {
        data.extend(sector_bytes(id << 16 | (sector + i)));
    }
    let r = dev.write_at(now, sector * SECTOR, &data);
    for i in 0..len {
        o.write(sector + i, id << 16 | (sector + i));
    }
    r.map(|c| c.end)
}

/// Reads two sectors; what a read returns is always the latest write.
fn read_check(
    dev: &mut HybridDevice,
    o: &Oracle,
    rng: &mut SmallRng,
    now: Nanos,
) -> flashkv_device::Result<Nanos> {
    let sector = rng.gen_range(0..SECTORS - 2);
    let mut buf = vec![0u8; 2 * SECTOR as usize];
    let c = dev.read_at(now, sector * SECTOR, &mut buf)?;
    for (k, piece) in buf.chunks(PIECE).enumerate() {
        let p = sector as usize * PIECES + k;
        assert_eq!(tag_of(piece), Some(o.latest[p]), "piece {p}");
    }
    Ok(c.end)
}

/// One host request of the mix; `Err` once the power has gone.
fn step(
    dev: &mut HybridDevice,
    o: &mut Oracle,
    rng: &mut SmallRng,
    now: Nanos,
    id: &mut u64,
    unaligned: bool,
) -> flashkv_device::Result<Nanos> {
    *id += 1;
    match rng.gen_range(0..10) {
        0..=5 if unaligned && rng.gen_bool(0.8) => unaligned_write(dev, o, rng, now, *id),
        0..=5 => aligned_write(dev, o, rng, now, *id),
        6 => {
            let r = dev.flush_at(now);
            if r.is_ok() {
                o.flushed();
            }
            r.map(|c| c.end)
        }
        7 => {
            let sector = rng.gen_range(0..SECTORS - 4);
            let r = dev.trim_at(now, sector * SECTOR, 4 * SECTOR);
            for i in 0..4 {
                o.write(sector + i, 0);
            }
            r.map(|c| c.end)
        }
        8 => read_check(dev, o, rng, now),
        _ => Ok(now + rng.gen_range(0..30_000_000)),
    }
}

/// Opens the hybrid after a power cut. A third of the recoveries lose
/// power again, which only a crash may stop; the machine then loses power
/// once more and recovers for good.
fn recover(m: Machine, rng: &mut SmallRng) -> (HybridDevice, Machine) {
    let again = rng.gen_bool(0.33).then(|| rng.gen_range(0..12));
    let m = m.power_cut(plan(rng.gen(), again), plan(rng.gen(), None));
    match m.open(options()) {
        Ok(dev) => (dev, m),
        Err(HybridError::Device(DeviceError::Crashed)) => {
            let m = m.power_cut(plan(rng.gen(), None), plan(rng.gen(), None));
            (m.open(options()).unwrap(), m)
        }
        Err(e) => panic!("recovery failed: {e}"),
    }
}

/// After recovery, with the power on: the maps agree with the log, and
/// every piece holds its acknowledged value or one written since.
fn check_recovered(dev: &mut HybridDevice, o: &mut Oracle) {
    dev.check_invariants().unwrap();
    let mut all = vec![0u8; (SECTORS * SECTOR) as usize];
    dev.read_at(dev.clock(), 0, &mut all).unwrap();
    for (p, piece) in all.chunks(PIECE).enumerate() {
        let tag = tag_of(piece);
        let ok = tag.is_some_and(|t| t == o.acked[p] || o.since[p].contains(&t));
        assert!(
            ok,
            "sector {} piece {}: found {:?}, acknowledged {:x}, since {:x?}",
            p / PIECES,
            p % PIECES,
            tag,
            o.acked[p],
            o.since[p]
        );
        o.latest[p] = tag.unwrap_or(0);
    }
    // What recovery shows is now the baseline.
    o.flushed();
}

/// What a case saw: power cuts that struck inside the workload, log
/// records recovery replayed, units logged in part.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    struck: u64,
    records: u64,
    partial: u64,
}

/// Four power cuts on one machine; returns what they struck.
fn run(seed: u64, unaligned: bool) -> Seen {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut m = machine(FaultPlan::default(), FaultPlan::default());
    let mut dev = m.create(options()).unwrap();
    let (ps, ph) = workload_plans(&mut rng);
    m.arm(ps, ph);
    let mut o = Oracle::new();
    let (mut id, mut seen) = (0u64, Seen::default());
    for _cycle in 0..4 {
        let mut now = dev.clock();
        for _ in 0..rng.gen_range(5..400) {
            match step(&mut dev, &mut o, &mut rng, now, &mut id, unaligned) {
                Ok(end) => now = now.max(end),
                Err(DeviceError::Crashed) => {
                    seen.struck += 1;
                    break;
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        seen.partial += dev.hybrid_stats().partial_units;
        drop(dev);
        let recovered;
        (recovered, m) = recover(m, &mut rng);
        seen.records += recovered.hybrid_stats().recovery.unwrap().records;
        drop(recovered);
        // Check with the power on, then run the next cycle under new plans.
        m = m.power_on(FaultPlan::default(), FaultPlan::default());
        dev = m.open(options()).unwrap();
        check_recovered(&mut dev, &mut o);
        let (ps, ph) = workload_plans(&mut rng);
        m.arm(ps, ph);
    }
    seen
}

/// Runs `seeds` of one mix; most cases must lose power inside the workload.
fn many(test: &str, seeds: std::ops::Range<u64>, unaligned: bool) {
    let t = cases(test, seeds, |seed| run(seed, unaligned).struck > 0);
    t.assert_hits(test, 60);
}

#[test]
fn power_loss_loses_no_acknowledged_write() {
    many("power_loss_loses_no_acknowledged_write", 0..1000, false);
}

#[test]
fn power_loss_with_unaligned_writes_loses_no_acknowledged_write() {
    let test = "power_loss_with_unaligned_writes_loses_no_acknowledged_write";
    many(test, 100_000..101_000, true);
}

/// Random cases of both mixes until `FLASHKV_SOAK_SECS` (default 60).
#[test]
#[ignore = "soak: runs until its time budget"]
fn soak_hybrid_power_loss() {
    let t = soak("soak_hybrid_power_loss", |seed| {
        run(seed, seed % 2 == 1).struck > 0
    });
    t.assert_hits("soak_hybrid_power_loss", 60);
}

/// Rewrites both superblock slots on an SSD in the version 1 format (no
/// sequence floor), as the previous release wrote them.
fn to_v1_superblocks(ssd: &mut dyn BlockDevice) {
    const V1_FIELDS: usize = 8 + 12 * 8;
    for slot in [0u64, 4096] {
        let mut sb = vec![0u8; 4096];
        ssd.read(slot, &mut sb).unwrap();
        if &sb[..8] == b"FKVHYB02" {
            sb[..8].copy_from_slice(b"FKVHYB01");
            let crc = crc32c::crc32c(&sb[..V1_FIELDS]);
            sb[V1_FIELDS..V1_FIELDS + 4].copy_from_slice(&crc.to_le_bytes());
            sb[V1_FIELDS + 4..].fill(0);
            ssd.write(slot, &sb).unwrap();
        }
    }
}

/// Writes whole sectors tagged `tag` at each of `sectors`, all at once (no
/// idle time, so no write-back), each one record in the log.
fn write_sectors(dev: &mut HybridDevice, sectors: &[u64], tag: u64) {
    let now = dev.clock();
    for &s in sectors {
        dev.write_at(now, s * SECTOR, &sector_bytes(tag << 16 | s))
            .unwrap();
    }
}

/// A session's records lost in a crash must never continue a later
/// session's chain. Session B logs three records and loses all but the
/// last; session C, opened on what is left, logs two records of the same
/// size, which land where B's first two were. Had C numbered its records as
/// B did, B's third record would follow C's second in the chain and come
/// back at the next recovery. Also for a version 1 superblock, which has no
/// sequence floor.
#[test]
fn records_lost_in_a_crash_never_come_back() {
    let none = FaultPlan::default;
    for v1 in [false, true] {
        let m = machine(none(), none());
        let mut a = m.create(options()).unwrap();
        write_sectors(&mut a, &[3], 1);
        a.flush_at(a.clock()).unwrap();
        drop(a);
        let m = m.power_on(none(), none());
        let mut b = m.open(options()).unwrap();
        write_sectors(&mut b, &[10, 20, 30], 2);
        drop(b);
        // Power lost: the SSD keeps only B's last record, the HDD nothing unflushed.
        let (mut ssd, mut hdd) = (m.ssd.take(), m.hdd.take());
        assert_eq!(ssd.unflushed(), 3, "one SSD write per record");
        let last = ssd.unflushed() - 1;
        ssd.crash_keeping(|i| i == last).unwrap();
        hdd.crash_keeping(|_| false).unwrap();
        let (mut ssd, hdd) = (ssd.recover().unwrap(), hdd.recover().unwrap());
        if v1 {
            to_v1_superblocks(&mut ssd);
        }
        let m = Machine::new(ssd, hdd, none(), none());
        let mut c = m.open(options()).unwrap();
        let records = c.hybrid_stats().recovery.unwrap().records;
        assert_eq!(records, 1, "A's record only");
        write_sectors(&mut c, &[11, 21], 3);
        c.flush_at(c.clock()).unwrap();
        drop(c);
        let m = m.power_on(none(), none());
        let mut d = m.open(options()).unwrap();
        let mut buf = vec![0u8; SECTOR as usize];
        for (s, tag) in [
            (3, 1 << 16 | 3),
            (11, 3 << 16 | 11),
            (21, 3 << 16 | 21),
            (30, 0),
        ] {
            d.read_at(d.clock(), s * SECTOR, &mut buf).unwrap();
            assert_eq!(tag_of(&buf), Some(tag), "sector {s} (v1 superblock: {v1})");
        }
    }
}

#[test]
fn recovery_replays_records() {
    let runs: Vec<_> = (0..8).map(|s| run(s, s % 2 == 1)).collect();
    let total: u64 = runs.iter().map(|r| r.records).sum();
    assert!(
        runs.iter().skip(1).step_by(2).all(|r| r.partial > 0),
        "each unaligned run logs units in part: {runs:?}"
    );
    assert!(
        total > 0,
        "the crash tests reach states with a log to replay"
    );
}
