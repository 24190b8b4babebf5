//! `flashkv lab hybrid`: seed 003's TPC-C evaluation of HeteroDrive. The
//! TPC-C-like workload ([`crate::oltp`]) runs on `hdd-7200`, `ssd-lowend`
//! and a hybrid of the two (`ssd-lowend` in front of `hdd-7200`), with a
//! buffer of a few percent of the database as the seed's 312 MB buffer was
//! of its 64 warehouses. Transactions per second are counted in virtual
//! time (the device clock) over the measured transactions, after a warm-up.
//!
//! The headline rows are the seed's configuration: the database's log on a
//! disk of its own, the hybrid without read promotion, and the hybrid's
//! write-back still owed at the end charged to its time. What-if rows vary
//! one choice each: the hybrid with promotion, and the log on the device
//! under test.

use flashkv_device::{presets, Nanos};
use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions, Section};
use crate::oltp::Scale;
use crate::points::{self, Output, Params, Point};

mod measure;
mod record;
mod report;

pub use measure::{measure, measure_on, seed_policy, Setup};
pub use record::{Io, Recorder, Shared, SharedTrace};
pub use report::Digest;
pub use report::Spread;

/// The seed's Table 1, transactions per second.
pub const SEED_TPS: [(Config, f64); 3] = [
    (Config::Hdd, 18.14),
    (Config::Ssd, 41.55),
    (Config::Hybrid, 54.44),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Config {
    Hdd,
    Ssd,
    Hybrid,
}

impl Config {
    pub fn name(self) -> &'static str {
        match self {
            Config::Hdd => "hdd",
            Config::Ssd => "ssd",
            Config::Hybrid => "hybrid",
        }
    }
}

/// Database size and run length.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub scale: Scale,
    /// Buffer frames as a fraction of the loaded database's pages.
    pub buffer_fraction: f64,
    pub warmup: u64,
    pub transactions: u64,
}

impl Size {
    /// TPC-C's own per-warehouse sizes (3000 customers per district, 100,000
    /// items), two warehouses instead of 64; a warm-up half as long as the
    /// measurement, as the seed's 10 minutes of pre-sampling were of its 20
    /// measured. The hybrid's read hit ratio, and so its TPS, still rise
    /// with run length here: the cache starts cold.
    pub fn full() -> Self {
        Size {
            scale: Scale {
                warehouses: 2,
                customers: 3000,
                items: 100_000,
            },
            buffer_fraction: 0.05,
            warmup: 4500,
            transactions: 9000,
        }
    }
    /// The size `flashkv lab hybrid` runs with (`--quick` or not).
    pub fn of(quick: bool) -> Self {
        if quick {
            Size::quick()
        } else {
            Size::full()
        }
    }
    /// One warehouse and a third of the transactions.
    pub fn quick() -> Self {
        Size {
            scale: Scale {
                warehouses: 1,
                customers: 3000,
                items: 100_000,
            },
            buffer_fraction: 0.05,
            warmup: 500,
            transactions: 1000,
        }
    }
}

/// One configuration's result (the JSON row).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub config: Config,
    /// The hybrid promoted re-read HDD data into its SSD (the seed's did not).
    pub promote: bool,
    /// The database's log was on a disk of its own (the seed's set-up).
    pub log_disk: bool,
    /// The engine's background writer was on (its default).
    pub writer: bool,
    /// The workload's seed.
    pub seed: u64,
    /// The hybrid's flush policy (the crate's defaults in the headline):
    /// idle time before the flush worker starts, and log bytes per round.
    pub idle_threshold_ns: u64,
    pub round_bytes: u64,
    pub tps: f64,
    pub transactions: u64,
    /// Requests the underlying devices served (both, for the hybrid).
    pub reads: u64,
    pub writes: u64,
    /// Share of read bytes served by the SSD (hdd 0, ssd 1).
    pub ssd_read_hit_ratio: f64,
}

/// A run: its row and what each device served.
pub struct Run {
    pub row: Row,
    /// (device name, requests) for each underlying device.
    pub devices: Vec<(&'static str, Vec<Io>)>,
    /// Seconds of virtual time the TPS counts: the transactions and, for
    /// the hybrid, the write-back owed at their end.
    pub seconds: f64,
    /// When the transactions ended (requests after it are the hybrid's
    /// write-back).
    pub end: Nanos,
    pub write_back: Option<WriteBack>,
    /// Bytes of pages the loaded database takes.
    pub db_bytes: u64,
}

/// What the hybrid's flush worker wrote back during the measurement, the
/// dirty data left when it ended, and the time from the end until all of it
/// was on the HDD (charged to the run).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct WriteBack {
    pub during_bytes: u64,
    pub bytes: u64,
    pub seconds: f64,
}

/// Seeds the headline and the run without the writer are measured over:
/// ten (the floor for a randomized claim), two at `--quick`.
pub fn seeds(quick: bool) -> u64 {
    if quick {
        2
    } else {
        10
    }
}

/// Seeds each cell of the flush-policy sensitivity grid is measured over
/// (the first of [`seeds`]): each cell is a hybrid run per seed.
fn sensitivity_seeds(quick: bool) -> u64 {
    if quick {
        1
    } else {
        3
    }
}

/// The sensitivity grid's idle thresholds: a tenth of a disk access, the
/// default (one access), four accesses.
pub const IDLE_GRID_NS: [u64; 3] = [2_000_000, flashkv_hybrid::IDLE_THRESHOLD_NS, 50_000_000];
/// The grid's round sizes: 32 MiB (the crate's former default), 256 MiB,
/// and the whole cache (the default).
pub const ROUND_GRID: [u64; 3] = [32 << 20, 256 << 20, flashkv_hybrid::WHOLE_CACHE];

/// A point: a configuration and its set-up, the seed's offset from the
/// lab's seed, and the hybrid's flush policy.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    config: Config,
    promote: bool,
    log_disk: bool,
    writer: bool,
    run: u64,
    idle_threshold_ns: u64,
    round_bytes: u64,
}

impl PointParams {
    fn id(&self) -> String {
        let mut id = format!("{}/seed+{}", self.config.name(), self.run);
        let d = flashkv_hybrid::Options::default();
        if (self.idle_threshold_ns, self.round_bytes) != (d.idle_threshold_ns, d.round_bytes) {
            id += &format!(
                "/idle-{}us/round-{}",
                self.idle_threshold_ns / 1000,
                self.round_bytes
            );
        }
        if !self.writer {
            id += "/no-writer";
        }
        if self.promote {
            id += "/promote";
        }
        if !self.log_disk {
            id += "/log-on-device";
        }
        id
    }
}

/// The seed's configuration over [`seeds`] (the headline), the same
/// without the engine's writer, the what-ifs on the first seed (the hybrid
/// with promotion, the log on the device under test), then the hybrid over
/// the flush-policy grid.
pub fn points(quick: bool) -> Vec<Point> {
    let d = flashkv_hybrid::Options::default();
    let base = |config, run| PointParams {
        config,
        promote: false,
        log_disk: true,
        writer: true,
        run,
        idle_threshold_ns: d.idle_threshold_ns,
        round_bytes: d.round_bytes,
    };
    let all = [Config::Hdd, Config::Ssd, Config::Hybrid];
    let mut ps = Vec::new();
    for writer in [true, false] {
        for run in 0..seeds(quick) {
            ps.extend(all.map(|c| PointParams {
                writer,
                ..base(c, run)
            }));
        }
    }
    ps.push(PointParams {
        promote: true,
        ..base(Config::Hybrid, 0)
    });
    ps.extend(all.map(|c| PointParams {
        log_disk: false,
        ..base(c, 0)
    }));
    for idle_threshold_ns in IDLE_GRID_NS {
        for round_bytes in ROUND_GRID {
            if (idle_threshold_ns, round_bytes) == (d.idle_threshold_ns, d.round_bytes) {
                continue; // the headline's hybrid rows
            }
            ps.extend((0..sensitivity_seeds(quick)).map(|run| PointParams {
                idle_threshold_ns,
                round_bytes,
                ..base(Config::Hybrid, run)
            }));
        }
    }
    points::grid(ps.into_iter().map(|p| (p.id(), p)))
}

/// The SSD every hybrid point runs on: the low-end drive of seed 003.
const SSD: &str = "ssd-lowend";

/// Bytes a point's scratch file may fill: the hybrid's SSD, whole.
pub(crate) fn scratch_bytes() -> Result<u64, LabError> {
    Ok(presets::get(SSD)?.capacity)
}

/// Runs one configuration; the hybrid's SSD keeps its data in an unlinked
/// scratch file in the experiment's folder.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("hybrid", params)?;
    if p.promote && p.config != Config::Hybrid {
        return Err(LabError::Params(format!(
            "hybrid: promote applies to the hybrid, not {}",
            p.config.name()
        )));
    }
    let size = Size::of(opts.quick);
    let seed = opts.seed.wrapping_add(p.run);
    opts.progress(&format!(
        "hybrid: TPC-C-like on {}, seed {seed}",
        p.config.name()
    ));
    let lowend = presets::get(SSD)?;
    let policy = flashkv_hybrid::Options {
        promote: p.promote,
        idle_threshold_ns: p.idle_threshold_ns,
        round_bytes: p.round_bytes,
        ..seed_policy()
    };
    // One at a time, and the hybrid's SSD data in a scratch file: each run
    // holds its database in memory (and, while loading, a second copy in the
    // engine's buffer), and the hybrid's SSD up to 2 GiB more, so side by
    // side in memory five runs peaked at 5.3 GB.
    let scratch = opts.dir("hybrid")?;
    let setup = Setup {
        ssd: &lowend,
        policy: &policy,
        log_disk: p.log_disk,
        scratch: Some(&scratch),
        writer: p.writer,
    };
    let run = measure_on(p.config, size, seed, setup)?;
    let d = flashkv_hybrid::Options::default();
    let headline =
        p.writer && (p.idle_threshold_ns, p.round_bytes) == (d.idle_threshold_ns, d.round_bytes);
    Ok(Output {
        rows: vec![points::raw(&run.row)?],
        detail: Some(points::raw(&Digest::of(&run, p.run == 0 && headline))?),
    })
}

/// The tables, plots and summary from every configuration's row and digest.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    let rows: Vec<Row> = points::rows(outputs)?;
    let digests: Vec<Digest> = points::details(outputs)?;
    if rows.len() != digests.len() {
        return Err(LabError::Data(format!(
            "hybrid: {} rows but {} digests",
            rows.len(),
            digests.len()
        )));
    }
    report::write(
        opts,
        Size::of(opts.quick),
        rows.into_iter().zip(digests).collect(),
    )
}
