//! One run of `lab placement`: a database loaded onto a configuration's
//! devices, a closed-loop measurement (throughput), then transactions
//! arriving at a fixed rate with the drives' standby timers set (energy per
//! transaction, latency).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flashkv_device::{
    presets, BlockDevice, Completion, DataStore, DeviceSpec, DeviceStats, Geometry, Nanos,
    PairDevice, Result as DevResult, SimDevice, Tier, Tiers,
};
use flashkv_engine::{Db, Options, Placement, StoreKind};
use flashkv_hybrid::HybridDevice;
use rand::{rngs::SmallRng, Rng, SeedableRng};

use super::{Config, Size, Workload, HDD, PAGE, SSD};
use crate::hybrid::{seed_policy, Shared};
use crate::lab::LabError;

/// Bytes of the write-ahead log, the same in every configuration (on the
/// store's device; on a pair, the first device's).
pub const WAL: u64 = 4 << 20;
/// Bytes a store keeps before its pages on the device holding its log:
/// two checkpoint slots and the log.
pub const OVERHEAD: u64 = 2 * (1 << 20) + WAL;

/// How the drives sleep during the arrival phase: each drive's idle time
/// before standby, `None` for never.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timers {
    pub hdd: Option<Nanos>,
    pub ssd: Option<Nanos>,
}

/// What one run measured.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub db_bytes: u64,
    /// Closed loop: transactions per second of virtual time.
    pub tps: f64,
    /// Share of page reads the fast device served (two-device stores).
    pub fast_read_share: f64,
    /// Bytes of the SSD the store uses at the end (pages on it, and the
    /// log and checkpoints where they are on it).
    pub ssd_bytes: u64,
    /// Arrival phase: joules per transaction (every data device, idle and
    /// standby power included), and latency from arrival to commit.
    pub joules_per_txn: f64,
    pub latency_mean_ms: f64,
    pub latency_max_ms: f64,
    /// Arrival phase: seconds in standby and wake-ups, per drive.
    pub hdd_standby_s: f64,
    pub ssd_standby_s: f64,
    pub hdd_wakeups: u64,
    pub ssd_wakeups: u64,
}

/// The standby timeout at which a drive's idle power over the timeout
/// equals the energy of one wake-up: sleeping at it costs at most twice
/// what the best choice in hindsight would (the ski-rental rule). `None`
/// where the drive has no standby state or spends nothing idle.
pub fn break_even(spec: &DeviceSpec) -> Option<Nanos> {
    let p = &spec.power;
    let standby = p.standby_mw?;
    let saved_mw = p.idle_mw - standby;
    (saved_mw > 0.0).then(|| (p.wake_mj / saved_mw * 1e9).round() as Nanos)
}

/// The first `len` bytes of a drive, as a partition of it: how much SSD
/// a design is given (an FTL model of a few megabytes would have no room
/// for its spare blocks; a partition of the whole drive is what a smaller
/// SSD of the same class does).
struct Partition {
    inner: Shared<SimDevice>,
    len: u64,
}

impl Partition {
    fn check(&self, offset: u64, len: u64) -> DevResult<()> {
        self.geometry().check(offset, len)
    }
}

impl BlockDevice for Partition {
    fn geometry(&self) -> Geometry {
        Geometry {
            capacity: self.len,
            ..self.inner.geometry()
        }
    }
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> DevResult<Completion> {
        self.check(offset, buf.len() as u64)?;
        self.inner.read_at(at, offset, buf)
    }
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> DevResult<Completion> {
        self.check(offset, buf.len() as u64)?;
        self.inner.write_at(at, offset, buf)
    }
    fn flush_at(&mut self, at: Nanos) -> DevResult<Completion> {
        self.inner.flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> DevResult<Completion> {
        self.check(offset, len)?;
        self.inner.trim_at(at, offset, len)
    }
    fn clock(&self) -> Nanos {
        self.inner.clock()
    }
    fn busy_until(&self) -> Nanos {
        self.inner.busy_until()
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.inner.energy_nj_until(t)
    }
}

/// The SSD a design gets: the whole drive, or its first `bytes` (rounded
/// up to whole sectors).
fn ssd_of(ssd: &Shared<SimDevice>, bytes: Option<u64>) -> Box<dyn BlockDevice> {
    match bytes {
        None => Box::new(ssd.clone()),
        Some(b) => {
            let sector = u64::from(ssd.geometry().sector_size);
            Box::new(Partition {
                inner: ssd.clone(),
                len: b.div_ceil(sector) * sector,
            })
        }
    }
}

/// The host's clock for an arrival phase: a store's device whose requests
/// are issued no earlier than the arrival of the transaction they serve,
/// so the drives (and the hybrid's flush worker) see the idle time between
/// transactions.
struct Paced {
    inner: Box<dyn BlockDevice>,
    floor: Arc<AtomicU64>,
}

impl Paced {
    fn at(&self, at: Nanos) -> Nanos {
        at.max(self.floor.load(Ordering::Relaxed))
    }
}

impl BlockDevice for Paced {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> DevResult<Completion> {
        let at = self.at(at);
        self.inner.read_at(at, offset, buf)
    }
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> DevResult<Completion> {
        let at = self.at(at);
        self.inner.write_at(at, offset, buf)
    }
    fn flush_at(&mut self, at: Nanos) -> DevResult<Completion> {
        let at = self.at(at);
        self.inner.flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> DevResult<Completion> {
        let at = self.at(at);
        self.inner.trim_at(at, offset, len)
    }
    fn clock(&self) -> Nanos {
        self.at(self.inner.clock())
    }
    fn busy_until(&self) -> Nanos {
        self.at(self.inner.busy_until())
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
    fn tiers(&self) -> Option<Tiers> {
        self.inner.tiers()
    }
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.inner.energy_nj_until(t)
    }
}

/// A configuration's devices, and handles to query them while the store
/// holds them.
struct Rig {
    dev: Box<dyn BlockDevice>,
    handles: Vec<(Tier, Shared<SimDevice>)>,
}

/// The drives of a rig whose device a store holds.
struct Handles(Vec<(Tier, Shared<SimDevice>)>);

/// The devices of `config`; `ssd_bytes` sizes the SSD (else the preset's).
/// The hybrid's SSD keeps its data in a scratch file in `scratch`, where
/// given: its log, hundreds of MB, need not be held in memory.
fn rig(
    config: Config,
    ssd_bytes: Option<u64>,
    timers: Timers,
    scratch: Option<&Path>,
) -> Result<Rig, LabError> {
    let mut hdd = presets::open(HDD)?;
    let spec = presets::get(SSD)?;
    let store = match scratch.filter(|_| config == Config::Hybrid) {
        Some(dir) => DataStore::scratch_file(dir, ssd_bytes.unwrap_or(spec.capacity))?,
        None => DataStore::default(),
    };
    let mut ssd = SimDevice::with_store(&spec, store)?;
    hdd.set_standby_after(timers.hdd)?;
    ssd.set_standby_after(timers.ssd)?;
    let (hdd, ssd) = (Shared::new(hdd), Shared::new(ssd));
    let both = vec![(Tier::Slow, hdd.clone()), (Tier::Fast, ssd.clone())];
    let pair = |first| -> Result<Box<dyn BlockDevice>, LabError> {
        Ok(Box::new(PairDevice::new(
            ssd_of(&ssd, ssd_bytes),
            Box::new(hdd.clone()),
            first,
        )?))
    };
    Ok(match config {
        Config::Hdd => Rig {
            dev: Box::new(hdd.clone()),
            handles: vec![(Tier::Slow, hdd)],
        },
        Config::Ssd => Rig {
            dev: ssd_of(&ssd, ssd_bytes),
            handles: vec![(Tier::Fast, ssd)],
        },
        Config::Hybrid => {
            let h = HybridDevice::create(
                ssd_of(&ssd, ssd_bytes),
                Box::new(hdd.clone()),
                seed_policy(),
            )
            .map_err(flashkv_device::DeviceError::from)?;
            Rig {
                dev: Box::new(h),
                handles: both,
            }
        }
        Config::IndexOnFast | Config::HotCold => Rig {
            dev: pair(Tier::Fast)?,
            handles: both,
        },
        Config::IndexOnFastLogOnHdd => Rig {
            dev: pair(Tier::Slow)?,
            handles: both,
        },
    })
}

fn store(config: Config) -> StoreKind {
    match config {
        Config::IndexOnFast | Config::IndexOnFastLogOnHdd => {
            StoreKind::TwoDevice(Placement::IndexOnFast)
        }
        Config::HotCold => StoreKind::TwoDevice(Placement::HotCold),
        _ => StoreKind::InPlace,
    }
}

/// Energy of every drive until `t`, in joules.
fn energy_j(handles: &Handles, t: Nanos) -> f64 {
    handles
        .0
        .iter()
        .map(|(_, h)| h.lock().energy_nj_until(t) as f64 / 1e9)
        .sum()
}

/// Loads the database with a buffer that holds it, closes it (a full
/// checkpoint), and opens it again with the run's buffer; returns it and
/// the bytes of its pages.
fn load(
    dev: Box<dyn BlockDevice>,
    floor: &Arc<AtomicU64>,
    config: Config,
    size: Size,
    seed: u64,
) -> Result<(Db, u64), LabError> {
    let dev = Box::new(Paced {
        inner: dev,
        floor: floor.clone(),
    });
    let opts = |frames: usize| {
        Options::builder()
            .policy(crate::seeds_lru())
            .store(store(config))
            .wal_size(WAL)
            .buffer_pages(frames)
            .sync(true)
            // The runs start from a checkpointed store.
            .close_checkpoint(true)
            .build()
    };
    let db = Db::open(dev, opts(1 << 16)?)?;
    crate::oltp::load(&db, size.scale, &mut SmallRng::seed_from_u64(seed))?;
    let pages = db.stats().pages_allocated;
    let dev = db.close()?;
    let frames = ((pages as f64 * size.buffer_fraction) as usize).max(16);
    Ok((Db::open(dev, opts(frames)?)?, pages * PAGE))
}

/// Runs one configuration: warm-up, closed loop, then arrivals. `scratch`:
/// a folder for the hybrid SSD's data (else it is held in memory).
pub fn measure(
    config: Config,
    workload: Workload,
    size: Size,
    ssd_bytes: Option<u64>,
    timers: Timers,
    seed: u64,
    scratch: Option<&Path>,
) -> Result<Measured, LabError> {
    let rig = rig(config, ssd_bytes, Timers::default(), scratch)?;
    let floor = Arc::new(AtomicU64::new(0));
    let (db, db_bytes) = load(rig.dev, &floor, config, size, seed)?;
    let rig = Handles(rig.handles);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x51ac);
    for _ in 0..size.warmup {
        workload.pick(&mut rng).run(&db, size.scale, &mut rng)?;
    }
    let s0 = db.stats();
    let t0 = s0.device_clock_ns;
    for _ in 0..size.transactions {
        workload.pick(&mut rng).run(&db, size.scale, &mut rng)?;
    }
    let s1 = db.stats();
    let tps = size.transactions as f64 / ((s1.device_clock_ns - t0) as f64 / 1e9).max(1e-9);
    let reads = (s1.store.page_reads - s0.store.page_reads).max(1);
    let fast_read_share = (s1.store.fast_reads - s0.store.fast_reads) as f64 / reads as f64;
    for (tier, h) in &rig.0 {
        let t = match tier {
            Tier::Slow => timers.hdd,
            Tier::Fast => timers.ssd,
        };
        h.lock().set_standby_after(t)?;
    }
    let mut m = arrivals(&db, &rig, &floor, workload, size, &mut rng)?;
    m.db_bytes = db_bytes;
    m.tps = tps;
    m.fast_read_share = fast_read_share;
    m.ssd_bytes = ssd_used(config, &db, &rig, db_bytes, ssd_bytes);
    Ok(m)
}

/// Bytes of SSD the configuration uses: the hybrid's circular log, as far
/// as it has been written; a two-device store's pages there, and its log
/// and checkpoints where they are there.
fn ssd_used(config: Config, db: &Db, rig: &Handles, db_bytes: u64, given: Option<u64>) -> u64 {
    let fast_pages = db.stats().store.fast_pages * PAGE;
    match config {
        Config::Hdd => 0,
        Config::Ssd => db_bytes + OVERHEAD,
        Config::Hybrid => rig
            .0
            .iter()
            .filter(|(t, _)| *t == Tier::Fast)
            .map(|(_, h)| {
                let h = h.lock();
                let capacity = given.unwrap_or(h.geometry().capacity);
                h.stats().host_write_bytes.min(capacity)
            })
            .sum(),
        Config::IndexOnFast | Config::HotCold => fast_pages + OVERHEAD,
        Config::IndexOnFastLogOnHdd => fast_pages,
    }
}

/// Transactions arriving at `size.rate` per second (exponential gaps from
/// `rng`): energy per transaction and latency from arrival to commit.
fn arrivals(
    db: &Db,
    rig: &Handles,
    floor: &AtomicU64,
    workload: Workload,
    size: Size,
    rng: &mut SmallRng,
) -> Result<Measured, LabError> {
    let start = db.stats().device_clock_ns;
    let e0 = energy_j(rig, start);
    let standby0: Vec<(u64, u64)> = rig
        .0
        .iter()
        .map(|(_, h)| {
            let h = h.lock();
            (h.standby_ns_until(start), h.stats().wakeups)
        })
        .collect();
    let (mut arrival, mut sum, mut max) = (start, 0u64, 0u64);
    for _ in 0..size.arrivals {
        let gap = -(1.0 - rng.gen::<f64>()).ln() / size.rate;
        arrival += (gap * 1e9) as Nanos;
        floor.store(arrival, Ordering::Relaxed);
        // A transaction waits for the one before it (one client).
        let begin = db.stats().device_clock_ns;
        debug_assert!(
            begin >= arrival,
            "the host clock is at the arrival or later"
        );
        workload.pick(rng).run(db, size.scale, rng)?;
        let latency = db.stats().device_clock_ns - arrival;
        sum += latency;
        max = max.max(latency);
    }
    let end = db.stats().device_clock_ns.max(arrival);
    let mut m = Measured {
        joules_per_txn: (energy_j(rig, end) - e0) / size.arrivals as f64,
        latency_mean_ms: sum as f64 / size.arrivals as f64 / 1e6,
        latency_max_ms: max as f64 / 1e6,
        ..Measured::default()
    };
    for ((tier, h), (sb0, w0)) in rig.0.iter().zip(standby0) {
        let h = h.lock();
        let secs = (h.standby_ns_until(end) - sb0) as f64 / 1e9;
        let wakes = h.stats().wakeups - w0;
        match tier {
            Tier::Slow => (m.hdd_standby_s, m.hdd_wakeups) = (secs, wakes),
            Tier::Fast => (m.ssd_standby_s, m.ssd_wakeups) = (secs, wakes),
        }
    }
    Ok(m)
}
