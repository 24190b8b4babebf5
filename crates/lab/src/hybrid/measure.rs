//! One measured run: load the database, set up the configuration, warm
//! up, measure, and time the hybrid's remaining write-back.

use std::path::Path;

use flashkv_device::{
    presets, BlockDevice, DataStore, DeviceError, DeviceSpec, ModelSpec, SimDevice,
};
use flashkv_engine::{Db, Devices, Options};
use flashkv_hybrid::HybridDevice;
use rand::{rngs::SmallRng, SeedableRng};

use super::{Config, Recorder, Row, Run, Shared, Size, WriteBack};
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
    let opts = Options {
        page_size: PAGE,
        ..Options::default()
    }
    .buffer_pages(1 << 16);
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
}

/// Runs the workload on one configuration with `ssd-lowend` as the SSD and
/// the log on the device under test.
pub fn measure(config: Config, size: Size, seed: u64) -> Result<Run, LabError> {
    let (ssd, policy) = (
        presets::get("ssd-lowend")?,
        flashkv_hybrid::Options::default(),
    );
    let setup = Setup {
        ssd: &ssd,
        policy: &policy,
        log_disk: false,
        scratch: None,
    };
    measure_on(config, size, seed, setup)
}

/// `ssd-lowend` merging 512 KiB blocks instead of 2 MiB: random 4 KB writes
/// about 95/s instead of 29/s, faster than `hdd-7200`'s 72, which the seed's
/// Fig. 1 low-end SSDs are not. A what-if for the summary, not a preset.
pub fn smaller_blocks() -> Result<DeviceSpec, LabError> {
    let mut spec = presets::get("ssd-lowend")?;
    if let ModelSpec::Ftl(p) = &mut spec.model {
        p.pages_per_block /= 4;
    }
    spec.name = "ssd-lowend, 512 KiB blocks".into();
    Ok(spec)
}

/// Runs the workload on one configuration set up as `setup` says.
pub fn measure_on(config: Config, size: Size, seed: u64, setup: Setup) -> Result<Run, LabError> {
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
    let mut traces = vec![(
        if config == Config::Ssd { "ssd" } else { "hdd" },
        home_trace,
    )];
    let log = log.map(|l| {
        let (l, t) = Recorder::new(l);
        traces.push(("log", t));
        Box::new(l) as Box<dyn BlockDevice>
    });
    let (top, hybrid): (Shared<Box<dyn BlockDevice>>, _) = match config {
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
            (
                Shared::new(Box::new(h.clone()) as Box<dyn BlockDevice>),
                Some(h),
            )
        }
        _ => (Shared::new(Box::new(home) as Box<dyn BlockDevice>), None),
    };
    let buffer = ((pages as f64 * size.buffer_fraction) as usize).max(16);
    let opts = Options::default().buffer_pages(buffer).sync(true);
    let db = match log {
        Some(log) => Db::open_with_log(Box::new(top.clone()), log, opts)?,
        None => Db::open(Box::new(top.clone()), opts)?,
    };
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x7c);
    for _ in 0..size.warmup {
        Kind::pick(&mut rng).run(&db, size.scale, &mut rng)?;
    }
    let hits0 = hybrid.as_ref().map(|h| h.lock().hybrid_stats());
    for (_, t) in &traces {
        t.lock().unwrap().on = true;
    }
    // The host's clock: with a log disk, the later of it and the data device.
    let t0 = db.stats().device_clock_ns;
    for _ in 0..size.transactions {
        Kind::pick(&mut rng).run(&db, size.scale, &mut rng)?;
    }
    let t1 = db.stats().device_clock_ns;
    let seconds = (t1 - t0) as f64 / 1e9;
    let count = |w: bool| {
        traces
            .iter()
            .map(|(_, t)| {
                t.lock()
                    .unwrap()
                    .ios
                    .iter()
                    .filter(|io| io.write == w)
                    .count() as u64
            })
            .sum::<u64>()
    };
    let (reads, writes) = (count(false), count(true));
    let ssd_read_hit_ratio = match (config, &hits0, &hybrid) {
        (Config::Hybrid, Some(a), Some(h)) => {
            let b = h.lock().hybrid_stats();
            let hit = (b.read_hit_bytes - a.read_hit_bytes) as f64;
            hit / (hit + (b.read_miss_bytes - a.read_miss_bytes) as f64).max(1.0)
        }
        (Config::Ssd, ..) => 1.0,
        _ => 0.0,
    };
    // The host never idles, so the flush worker runs only under pressure;
    // what it still owes at the end is written back and timed here.
    let write_back = match (&hybrid, hits0) {
        (Some(h), Some(a)) => {
            let mut h = h.lock();
            let b = h.hybrid_stats();
            let c = h.drain(t1)?;
            Some(WriteBack {
                during_bytes: b.flush_bytes - a.flush_bytes,
                bytes: b.dirty_bytes,
                seconds: (c.end - t1) as f64 / 1e9,
            })
        }
        _ => None,
    };
    let devices = traces
        .into_iter()
        .map(|(n, t)| (n, std::mem::take(&mut t.lock().unwrap().ios)))
        .collect();
    Ok(Run {
        row: Row {
            config,
            tps: size.transactions as f64 / seconds.max(1e-9),
            transactions: size.transactions,
            reads,
            writes,
            ssd_read_hit_ratio,
        },
        devices,
        log_disk: setup.log_disk,
        seconds,
        end: t1,
        write_back,
        db_bytes: pages * u64::from(PAGE),
    })
}
