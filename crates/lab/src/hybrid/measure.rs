//! One measured run: load the database, set up the configuration, warm
//! up, measure, and charge the hybrid's remaining write-back to the run.

use std::path::Path;

use flashkv_device::{presets, BlockDevice, DataStore, DeviceError, DeviceSpec, Nanos, SimDevice};
use flashkv_engine::{Db, Devices, Options};
use flashkv_hybrid::{HybridDevice, HybridStats};
use rand::{rngs::SmallRng, SeedableRng};

use super::{Config, Recorder, Row, Run, Shared, SharedTrace, Size, WriteBack};
use crate::lab::LabError;
use crate::oltp::{self, Kind};

/// Page size: Oracle's default 8 KB block, the seed's typical request.
const PAGE: u32 = 8192;

/// Loads the database onto `dev` (with a buffer that holds it, and its log
/// on `log` if given) and checkpoints.
fn load(
    dev: Box<dyn BlockDevice>,
    log: Option<Box<dyn BlockDevice>>,
    size: Size,
    seed: u64,
) -> Result<(Devices, u64), LabError> {
    let opts = Options::builder()
        .policy(crate::seeds_lru())
        .page_size(PAGE)
        .buffer_pages(1 << 16)
        .writer(false)
        // The runs start from a checkpointed store, as the seed's did.
        .close_checkpoint(true)
        .build()?;
    let db = match log {
        Some(log) => Db::open_with_log(dev, log, opts)?,
        None => Db::open(dev, opts)?,
    };
    oltp::load(&db, size.scale, &mut SmallRng::seed_from_u64(seed))?;
    let pages = db.stats().pages_allocated;
    Ok((db.close_with_log()?, pages))
}

/// How a configuration is set up besides its data device.
#[derive(Clone, Copy)]
pub struct Setup<'a> {
    /// The SSD (of the SSD configuration and the hybrid).
    pub ssd: &'a DeviceSpec,
    /// The hybrid's policy.
    pub policy: &'a flashkv_hybrid::Options,
    /// The database's log on a disk of its own (an `hdd-7200`), as in the
    /// seed's set-up; otherwise on the device under test.
    pub log_disk: bool,
    /// Where the hybrid's SSD keeps its data: an unlinked file there
    /// instead of memory (its circular log fills the whole SSD, 2 GiB for
    /// `ssd-lowend`, before it reclaims anything).
    pub scratch: Option<&'a Path>,
    /// The engine's background writer (its default): dirty pages cleaned
    /// ahead of eviction, as Oracle's database writer did; off, a dirty
    /// page is written when the buffer evicts it.
    pub writer: bool,
}

/// The seed's HeteroDrive: the hybrid crate's default flush policy (see
/// [`flashkv_hybrid::IDLE_THRESHOLD_NS`] and [`flashkv_hybrid::WHOLE_CACHE`]
/// for why), without read promotion (the seed caches what was written and
/// never pulls read data in).
pub fn seed_policy() -> flashkv_hybrid::Options {
    flashkv_hybrid::Options {
        promote: false,
        ..flashkv_hybrid::Options::default()
    }
}

/// Runs the workload on one configuration as the seed set it up:
/// `ssd-lowend` as the SSD, the log on a disk of its own, no promotion,
/// and the engine's defaults (its background writer on) but for LRU.
pub fn measure(config: Config, size: Size, seed: u64) -> Result<Run, LabError> {
    let (ssd, policy) = (presets::get(super::SSD)?, seed_policy());
    let setup = Setup {
        ssd: &ssd,
        policy: &policy,
        log_disk: true,
        scratch: None,
        writer: true,
    };
    measure_on(config, size, seed, setup)
}

/// A loaded database over its configuration's devices, ready to run.
struct Bench {
    db: Db,
    /// (device name, its trace) for every device underneath.
    traces: Vec<(&'static str, SharedTrace)>,
    hybrid: Option<Shared<HybridDevice>>,
    pages: u64,
}

/// Loads the database and opens it over the configuration's devices, each
/// wrapped in a recorder.
fn open(config: Config, size: Size, seed: u64, setup: Setup) -> Result<Bench, LabError> {
    let home = match config {
        Config::Ssd => SimDevice::new(setup.ssd)?,
        _ => presets::open("hdd-7200")?,
    };
    let log: Option<Box<dyn BlockDevice>> = match setup.log_disk {
        true => Some(Box::new(presets::open("hdd-7200")?)),
        false => None,
    };
    let ((home, log), pages) = load(Box::new(home), log, size, seed)?;
    let (home, home_trace) = Recorder::new(home);
    let name = if config == Config::Ssd { "ssd" } else { "hdd" };
    let mut traces = vec![(name, home_trace)];
    let log = log.map(|l| {
        let (l, t) = Recorder::new(l);
        traces.push(("log", t));
        Box::new(l) as Box<dyn BlockDevice>
    });
    let (top, hybrid): (Box<dyn BlockDevice>, _) = match config {
        Config::Hybrid => {
            let store = match setup.scratch {
                Some(dir) => DataStore::scratch_file(dir, setup.ssd.capacity)?,
                None => DataStore::default(),
            };
            let ssd = SimDevice::with_store(setup.ssd, store)?;
            let (ssd, ssd_trace) = Recorder::new(Box::new(ssd));
            traces.insert(0, ("ssd", ssd_trace));
            let h = HybridDevice::create(Box::new(ssd), Box::new(home), setup.policy.clone())
                .map_err(DeviceError::from)?;
            let h = Shared::new(h);
            (Box::new(h.clone()), Some(h))
        }
        _ => (Box::new(home), None),
    };
    let buffer = ((pages as f64 * size.buffer_fraction) as usize).max(16);
    let opts = Options::builder()
        .policy(crate::seeds_lru())
        .buffer_pages(buffer)
        .writer(setup.writer)
        .sync(true)
        .build()?;
    let db = match log {
        Some(log) => Db::open_with_log(top, log, opts)?,
        None => Db::open(top, opts)?,
    };
    Ok(Bench {
        db,
        traces,
        hybrid,
        pages,
    })
}

/// A device's trace; a panic elsewhere while it was held leaves it whole
/// (every update is a single push or flag).
fn lock(t: &SharedTrace) -> std::sync::MutexGuard<'_, super::record::Trace> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// Requests the devices served since their traces were switched on, as
/// (reads, writes).
fn counts(traces: &[(&'static str, SharedTrace)]) -> (u64, u64) {
    let count = |w: bool| {
        let served = |t: &SharedTrace| {
            let t = lock(t);
            t.ios.iter().filter(|io| io.write == w).count() as u64
        };
        traces.iter().map(|(_, t)| served(t)).sum::<u64>()
    };
    (count(false), count(true))
}

/// Share of the read bytes the hybrid's SSD served since `a`.
fn hit_ratio(a: &HybridStats, b: &HybridStats) -> f64 {
    let hit = (b.read_hit_bytes - a.read_hit_bytes) as f64;
    hit / (hit + (b.read_miss_bytes - a.read_miss_bytes) as f64).max(1.0)
}

/// The host never idles long (it waits only for its own requests), so the
/// flush worker runs mostly under pressure; what it still owes at `end` is
/// written back from there, timed, and charged to the run.
fn write_back(
    h: &Shared<HybridDevice>,
    a: &HybridStats,
    end: Nanos,
) -> Result<WriteBack, LabError> {
    let mut h = h.lock();
    let b = h.hybrid_stats();
    let c = h.drain(end)?;
    Ok(WriteBack {
        during_bytes: b.flush_bytes - a.flush_bytes,
        bytes: b.dirty_bytes,
        seconds: (c.end - end) as f64 / 1e9,
    })
}

/// Runs the workload on one configuration set up as `setup` says. The
/// hybrid's TPS counts the time to write back what is still dirty at the
/// end: until then its transactions are not on the HDD.
pub fn measure_on(config: Config, size: Size, seed: u64, setup: Setup) -> Result<Run, LabError> {
    let bench = open(config, size, seed, setup)?;
    let (db, traces) = (&bench.db, &bench.traces);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x7c);
    for _ in 0..size.warmup {
        Kind::pick(&mut rng).run(db, size.scale, &mut rng)?;
    }
    // What the warm-up left dirty is written back before the measurement,
    // so the charge at the end is for the measured transactions' writes.
    let at = db.stats().device_clock_ns;
    let hits0 = match &bench.hybrid {
        Some(h) => {
            let mut h = h.lock();
            h.drain(at)?;
            Some(h.hybrid_stats())
        }
        None => None,
    };
    for (_, t) in traces {
        lock(t).on = true;
    }
    // The host's clock: with a log disk, the later of it and the data device.
    let t0 = db.stats().device_clock_ns;
    for _ in 0..size.transactions {
        Kind::pick(&mut rng).run(db, size.scale, &mut rng)?;
    }
    let t1 = db.stats().device_clock_ns;
    let (write_back, ssd_read_hit_ratio) = match (&bench.hybrid, &hits0) {
        (Some(h), Some(a)) => {
            // Read before the drain, whose SSD reads are no host's.
            let hits = hit_ratio(a, &h.lock().hybrid_stats());
            (Some(write_back(h, a, t1)?), hits)
        }
        _ => (None, if config == Config::Ssd { 1.0 } else { 0.0 }),
    };
    let seconds = (t1 - t0) as f64 / 1e9 + write_back.map_or(0.0, |w| w.seconds);
    let (reads, writes) = counts(traces);
    let devices = bench
        .traces
        .iter()
        .map(|(n, t)| (*n, std::mem::take(&mut lock(t).ios)))
        .collect();
    Ok(Run {
        row: Row {
            config,
            promote: config == Config::Hybrid && setup.policy.promote,
            log_disk: setup.log_disk,
            writer: setup.writer,
            seed,
            idle_threshold_ns: setup.policy.idle_threshold_ns,
            round_bytes: setup.policy.round_bytes,
            tps: size.transactions as f64 / seconds.max(1e-9),
            transactions: size.transactions,
            reads,
            writes,
            ssd_read_hit_ratio,
        },
        devices,
        seconds,
        end: t1,
        write_back,
        db_bytes: bench.pages * u64::from(PAGE),
    })
}
