//! `flashkv lab placement`: seed 002's conclusions ("Clever data
//! distribution needed (e.g. Index on SSD)", "Replace all HDDs with SSDs?
//! — Expensive!", "Exploit efficient Standby-Mode of SSDs") put to the
//! test. The TPC-C-like workload and a read-mostly one run on an HDD
//! alone, an SSD alone, the hybrid drive (seed 003's HeteroDrive), and the
//! engine's two-device store with each placement policy:
//!
//! * **at a glance**: throughput (closed loop), then energy per
//!   transaction and latency with transactions arriving at
//!   [`RATE`] a second and each drive sleeping after its break-even idle
//!   time ([`run::break_even`]);
//! * **capacity**: the SSD sized to a share of the database, and the share
//!   of the all-SSD throughput each design gets from it;
//! * **standby**: each drive's standby timeout swept, energy saved against
//!   latency added.
//!
//! Drives: `hdd-7200` and `ssd-x25m` (seed 002's Intel X25-M). Every
//! store has a 4 MiB log on the device its data (or, on a pair, its first
//! device) is on, 4 KiB pages, and a buffer of 5 % of the database.

use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions};
use crate::oltp::{Kind, Scale};
use crate::points::{self, Output, Params, Point};

mod report;
mod run;

pub use report::report;
pub use run::{break_even, measure, Measured, Timers, OVERHEAD};

/// The drives.
pub const HDD: &str = "hdd-7200";
pub const SSD: &str = "ssd-x25m";
/// Page size of every store (the engine's default).
pub const PAGE: u64 = 4096;
/// Transactions per second in the arrival phases: a lightly loaded server,
/// whose drives idle between transactions (5 s on average).
pub const RATE: f64 = 0.2;
/// The SSD's share of the database in the capacity sweep, in percent.
pub const CAPACITY_PCT: [u32; 4] = [2, 5, 10, 25];
/// Standby timeouts of the sweep, as multiples of the drive's break-even
/// idle time (0: never sleeps).
pub const TIMEOUT_X: [f64; 5] = [0.0, 0.25, 1.0, 4.0, 16.0];

/// Where the data lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Config {
    Hdd,
    Ssd,
    Hybrid,
    /// Two-device store, internal pages on the SSD (log on the SSD).
    IndexOnFast,
    /// Two-device store, pages placed by their reads and writes.
    HotCold,
    /// Index on the SSD with the log and checkpoints on the HDD.
    IndexOnFastLogOnHdd,
}

impl Config {
    pub const ALL: [Config; 6] = [
        Config::Hdd,
        Config::Ssd,
        Config::Hybrid,
        Config::IndexOnFast,
        Config::HotCold,
        Config::IndexOnFastLogOnHdd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Config::Hdd => "hdd",
            Config::Ssd => "ssd",
            Config::Hybrid => "hybrid",
            Config::IndexOnFast => "index-on-fast",
            Config::HotCold => "hot-cold",
            Config::IndexOnFastLogOnHdd => "index-on-fast, log on hdd",
        }
    }
}

/// What the transactions do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Seed 003's TPC-C mix (45/43/4/4/4).
    Oltp,
    /// 95 % read-only transactions (order-status, stock-level), 5 % payment.
    ReadMostly,
}

impl Workload {
    pub const ALL: [Workload; 2] = [Workload::Oltp, Workload::ReadMostly];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Oltp => "oltp",
            Workload::ReadMostly => "read-mostly",
        }
    }

    pub fn pick(self, rng: &mut rand::rngs::SmallRng) -> Kind {
        use rand::Rng;
        match self {
            Workload::Oltp => Kind::pick(rng),
            Workload::ReadMostly => match rng.gen_range(0..100) {
                0..=47 => Kind::OrderStatus,
                48..=94 => Kind::StockLevel,
                _ => Kind::Payment,
            },
        }
    }
}

/// Database size and run lengths.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub scale: Scale,
    pub buffer_fraction: f64,
    pub warmup: u64,
    /// Closed-loop transactions (throughput).
    pub transactions: u64,
    /// Transactions of the arrival phase (energy, latency).
    pub arrivals: u64,
    /// Their rate, per second.
    pub rate: f64,
}

impl Size {
    pub fn of(quick: bool) -> Size {
        let (customers, items, n) = if quick {
            (100, 2_000, 300)
        } else {
            (600, 20_000, 2_000)
        };
        Size {
            scale: Scale {
                warehouses: 1,
                customers,
                items,
            },
            buffer_fraction: 0.05,
            warmup: n / 2,
            transactions: n,
            arrivals: n / 4,
            rate: RATE,
        }
    }
}

/// Seeds the at-a-glance rows are measured over.
pub fn seeds(quick: bool) -> u64 {
    if quick {
        1
    } else {
        3
    }
}

/// Which part of the experiment a point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    Glance,
    Capacity,
    Standby,
}

/// A point: a configuration, its workload, and the part's knob.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    part: Part,
    workload: Workload,
    config: Config,
    run: u64,
    /// Capacity: the SSD's share of the database, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ssd_pct: Option<u32>,
    /// Standby: the drive whose timeout is swept ("hdd", "ssd"), and the
    /// timeout as a multiple of its break-even time (0: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    drive: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_x: Option<f64>,
}

impl PointParams {
    fn id(&self) -> String {
        let mut id = format!(
            "{}/{}/{}",
            self.workload.name(),
            self.config.name().replace(", ", "/"),
            self.run
        );
        if let Some(p) = self.ssd_pct {
            id += &format!("/ssd-{p}%");
        }
        if let (Some(d), Some(x)) = (&self.drive, self.timeout_x) {
            id += &format!("/{d}-standby-{x}x");
        }
        id
    }
}

/// The grid: at a glance (every workload and configuration, over
/// [`seeds`]), the capacity sweep (the designs that use part of an SSD),
/// the standby sweep (read-mostly, per drive: the drive alone and the
/// hot-cold store).
pub fn points(quick: bool) -> Vec<Point> {
    let base = |part, workload, config, run| PointParams {
        part,
        workload,
        config,
        run,
        ssd_pct: None,
        drive: None,
        timeout_x: None,
    };
    let mut ps = Vec::new();
    for w in Workload::ALL {
        for run in 0..seeds(quick) {
            ps.extend(Config::ALL.map(|c| base(Part::Glance, w, c, run)));
        }
    }
    let pcts: &[u32] = if quick { &[10] } else { &CAPACITY_PCT };
    for w in Workload::ALL {
        for c in [Config::Hybrid, Config::IndexOnFast, Config::HotCold] {
            ps.extend(pcts.iter().map(|&p| PointParams {
                ssd_pct: Some(p),
                ..base(Part::Capacity, w, c, 0)
            }));
        }
    }
    let xs: &[f64] = if quick { &[0.0, 1.0] } else { &TIMEOUT_X };
    for (drive, alone) in [("hdd", Config::Hdd), ("ssd", Config::Ssd)] {
        for c in [alone, Config::HotCold] {
            ps.extend(xs.iter().map(|&x| PointParams {
                drive: Some(drive.into()),
                timeout_x: Some(x),
                ..base(Part::Standby, Workload::ReadMostly, c, 0)
            }));
        }
    }
    points::grid(ps.into_iter().map(|p| (p.id(), p)))
}

/// One row of `results/placement/rows.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub part: Part,
    pub workload: Workload,
    pub config: Config,
    pub seed: u64,
    /// The SSD's capacity as a share of the database (capacity part).
    pub ssd_pct: Option<u32>,
    /// The drive whose standby timeout was set (standby part) and the
    /// timeout in seconds (`None`: never).
    pub drive: Option<String>,
    pub timeout_s: Option<f64>,
    pub db_bytes: u64,
    pub tps: f64,
    pub fast_read_share: f64,
    pub ssd_bytes: u64,
    pub joules_per_txn: f64,
    pub latency_mean_ms: f64,
    pub latency_max_ms: f64,
    pub hdd_standby_s: f64,
    pub ssd_standby_s: f64,
    pub hdd_wakeups: u64,
    pub ssd_wakeups: u64,
}

/// The drives' standby timers for a point: the glance and capacity parts
/// sleep each drive after its break-even time; the standby part sets the
/// swept drive's and keeps the other awake.
fn timers(p: &PointParams) -> Result<(Timers, Option<f64>), LabError> {
    let hdd = break_even(&flashkv_device::presets::get(HDD)?);
    let ssd = break_even(&flashkv_device::presets::get(SSD)?);
    let scaled = |t: Option<u64>, x: f64| t.filter(|_| x > 0.0).map(|t| (t as f64 * x) as u64);
    Ok(match (p.drive.as_deref(), p.timeout_x) {
        (None, _) => (Timers { hdd, ssd }, None),
        (Some("hdd"), Some(x)) => {
            let t = scaled(hdd, x);
            (Timers { hdd: t, ssd: None }, t.map(|t| t as f64 / 1e9))
        }
        (Some("ssd"), Some(x)) => {
            let t = scaled(ssd, x);
            (Timers { hdd: None, ssd: t }, t.map(|t| t as f64 / 1e9))
        }
        (Some(d), _) => return Err(points::unknown("placement", "drive", d, &["hdd", "ssd"])),
    })
}

/// Bytes a point's scratch file may fill: the hybrid's SSD, whole (a
/// point that sizes it smaller fills less).
pub(crate) fn scratch_bytes() -> Result<u64, LabError> {
    Ok(flashkv_device::presets::get(SSD)?.capacity)
}

/// Runs one point.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("placement", params)?;
    opts.progress(&format!("placement {}", p.id()));
    let size = Size::of(opts.quick);
    let seed = opts.seed + p.run;
    let ssd_bytes = match p.ssd_pct {
        Some(pct) => Some(run::OVERHEAD + db_bytes(size, seed)? * u64::from(pct) / 100),
        None => None,
    };
    let (timers, timeout_s) = timers(&p)?;
    let scratch = opts.dir("placement")?;
    let m = measure(
        p.config,
        p.workload,
        size,
        ssd_bytes,
        timers,
        seed,
        Some(&scratch),
    )?;
    Output::of(&[Row {
        part: p.part,
        workload: p.workload,
        config: p.config,
        seed,
        ssd_pct: p.ssd_pct,
        drive: p.drive,
        timeout_s,
        db_bytes: m.db_bytes,
        tps: m.tps,
        fast_read_share: m.fast_read_share,
        ssd_bytes: m.ssd_bytes,
        joules_per_txn: m.joules_per_txn,
        latency_mean_ms: m.latency_mean_ms,
        latency_max_ms: m.latency_max_ms,
        hdd_standby_s: m.hdd_standby_s,
        ssd_standby_s: m.ssd_standby_s,
        hdd_wakeups: m.hdd_wakeups,
        ssd_wakeups: m.ssd_wakeups,
    }])
}

/// Bytes of pages the database of `size` takes (the SSD-only store's).
fn db_bytes(size: Size, seed: u64) -> Result<u64, LabError> {
    let dev = flashkv_device::MemDevice::new(flashkv_device::Geometry {
        sector_size: 512,
        erase_unit: None,
        capacity: 16 << 30,
        program_once: false,
    });
    let db = flashkv_engine::Db::open(
        Box::new(dev),
        flashkv_engine::Options::builder()
            .policy(crate::seeds_lru())
            .wal_size(run::WAL)
            .buffer_pages(1 << 16)
            .build()?,
    )?;
    crate::oltp::load(&db, size.scale, &mut rand::SeedableRng::seed_from_u64(seed))?;
    Ok(db.stats().pages_allocated * PAGE)
}
