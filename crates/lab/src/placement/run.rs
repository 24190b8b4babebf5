//! One run of `lab placement`: a database loaded onto a configuration's
//! devices, a closed-loop measurement (throughput), then transactions
//! arriving at a fixed rate with the drives' standby timers set (energy per
//! transaction, latency).

use flashkv_device::{presets, BlockDevice, DeviceSpec, Nanos, PairDevice, SimDevice, Tier};
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

/// A drive of `spec` with `bytes` of capacity (the preset's where `None`).
fn drive(spec: &DeviceSpec, bytes: Option<u64>) -> Result<SimDevice, LabError> {
    let mut spec = spec.clone();
    if let Some(b) = bytes {
        spec.capacity = b;
    }
    Ok(SimDevice::new(&spec)?)
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
fn rig(config: Config, ssd_bytes: Option<u64>, timers: Timers) -> Result<Rig, LabError> {
    let (hdd_spec, ssd_spec) = (presets::get(HDD)?, presets::get(SSD)?);
    let mut hdd = drive(&hdd_spec, None)?;
    let mut ssd = drive(&ssd_spec, ssd_bytes)?;
    hdd.set_standby_after(timers.hdd)?;
    ssd.set_standby_after(timers.ssd)?;
    let (hdd, ssd) = (Shared::new(hdd), Shared::new(ssd));
    let both = vec![(Tier::Slow, hdd.clone()), (Tier::Fast, ssd.clone())];
    let pair = |first| -> Result<Box<dyn BlockDevice>, LabError> {
        Ok(Box::new(PairDevice::new(
            Box::new(ssd.clone()),
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
            dev: Box::new(ssd.clone()),
            handles: vec![(Tier::Fast, ssd)],
        },
        Config::Hybrid => {
            let h = HybridDevice::create(Box::new(ssd.clone()), Box::new(hdd.clone()), seed_policy())
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
    config: Config,
    size: Size,
    seed: u64,
) -> Result<(Db, u64), LabError> {
    let opts = |frames: usize| {
        Options::builder()
            .store(store(config))
            .wal_size(WAL)
            .buffer_pages(frames)
            .sync(true)
            .build()
    };
    let db = Db::open(dev, opts(1 << 16)?)?;
    crate::oltp::load(&db, size.scale, &mut SmallRng::seed_from_u64(seed))?;
    let pages = db.stats().pages_allocated;
    let dev = db.close()?;
    let frames = ((pages as f64 * size.buffer_fraction) as usize).max(16);
    Ok((Db::open(dev, opts(frames)?)?, pages * PAGE))
}

/// Runs one configuration: warm-up, closed loop, then arrivals.
pub fn measure(
    config: Config,
    workload: Workload,
    size: Size,
    ssd_bytes: Option<u64>,
    timers: Timers,
    seed: u64,
) -> Result<Measured, LabError> {
    let rig = rig(config, ssd_bytes, Timers::default())?;
    let (db, db_bytes) = load(rig.dev, config, size, seed)?;
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
    let mut m = arrivals(&db, &rig, workload, size, &mut rng)?;
    m.db_bytes = db_bytes;
    m.tps = tps;
    m.fast_read_share = fast_read_share;
    m.ssd_bytes = ssd_used(config, &db, &rig, db_bytes);
    Ok(m)
}

/// Bytes of SSD the configuration uses: the hybrid's circular log, as far
/// as it has been written; a two-device store's pages there, and its log
/// and checkpoints where they are there.
fn ssd_used(config: Config, db: &Db, rig: &Handles, db_bytes: u64) -> u64 {
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
                h.stats().host_write_bytes.min(h.geometry().capacity)
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
            let s = h.lock().stats();
            (s.standby_ns, s.wakeups)
        })
        .collect();
    let (mut arrival, mut sum, mut max) = (start, 0u64, 0u64);
    for _ in 0..size.arrivals {
        let gap = -(1.0 - rng.gen::<f64>()).ln() / size.rate;
        arrival += (gap * 1e9) as Nanos;
        for (_, h) in &rig.0 {
            h.lock().advance_to(arrival);
        }
        let begin = db.stats().device_clock_ns.max(arrival);
        workload.pick(rng).run(db, size.scale, rng)?;
        let latency = db.stats().device_clock_ns - begin.min(arrival);
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
        let s = h.lock().stats();
        let (secs, wakes) = ((s.standby_ns - sb0) as f64 / 1e9, s.wakeups - w0);
        match tier {
            Tier::Slow => (m.hdd_standby_s, m.hdd_wakeups) = (secs, wakes),
            Tier::Fast => (m.ssd_standby_s, m.ssd_wakeups) = (secs, wakes),
        }
    }
    Ok(m)
}
