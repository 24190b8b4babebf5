//! Cold and hot caches (seed 002, "Flash versus Disk": "Cold Buffers vs.
//! Hot Buffers", 4 KB block reads against file sizes of 32 MB to 2 GB,
//! disk against flash; "caches, buffers and prefetching may disturb
//! results"). A cold run reads a file nothing has cached; a hot run reads
//! it after one pass over it.
//!
//! On a simulated drive the only cache is the drive's own: an HDD's read
//! segments and read-ahead (the FTL models have no read cache), so a cold
//! run starts on a fresh device and a hot one after one sequential pass in
//! 1 MiB reads. On a real file ([`crate::real::cache`]) the cache that
//! matters is the operating system's page cache: cold bypasses it with
//! O_DIRECT, hot warms it first.

use flashkv_device::{presets, DeviceSpec, SimDevice};
use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions};
use crate::points;
use crate::profile::{self, Pattern, ProfileError, ProfileRow, ProfileSpec};
use crate::report::{size_label, Plot, Series};
use crate::seed000::FILE_SIZES;

/// Whether the cache starts empty or warm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cache {
    Cold,
    Hot,
}

impl Cache {
    pub const BOTH: [Cache; 2] = [Cache::Cold, Cache::Hot];

    pub fn name(self) -> &'static str {
        match self {
            Cache::Cold => "cold",
            Cache::Hot => "hot",
        }
    }

    pub fn parse(s: &str) -> Option<Cache> {
        Cache::BOTH.into_iter().find(|c| c.name() == s)
    }
}

/// One run: a pattern at one block size over a file of `file_size`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CacheRow {
    pub device: String,
    pub cache: Cache,
    pub file_size: u64,
    pub pattern: String,
    pub block_size: u64,
    pub ops: u64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub mean_latency_us: f64,
    pub p99_latency_us: f64,
    /// Real files: bytes the operating system read from the storage device
    /// during the measured run (`read_bytes` of /proc/self/io); `None` on a
    /// simulated drive or where the counter is not available.
    pub device_read_bytes: Option<u64>,
    /// Real files: whether O_DIRECT bypassed the page cache.
    pub direct: Option<bool>,
}

impl CacheRow {
    /// A row from a profile run.
    pub fn of(r: &ProfileRow, cache: Cache, file_size: u64) -> CacheRow {
        CacheRow {
            device: r.device.clone(),
            cache,
            file_size,
            pattern: r.pattern.clone(),
            block_size: r.block_size,
            ops: r.ops,
            iops: r.iops,
            mb_per_s: r.mb_per_s,
            mean_latency_us: r.mean_latency_us,
            p99_latency_us: r.p99_latency_us,
            device_read_bytes: None,
            direct: None,
        }
    }
}

/// The simulated drives: seed 002's IDE disk and Intel SSD classes
/// (`hdd-7200`, `ssd-x25m`), and seed 000's disk and flash drive.
pub const SIM_DEVICES: [&str; 4] = ["hdd-7200", "ssd-x25m", "hdd-ide-41m", "kingston-dt-4g"];
/// Below seed 002's 32 MB: files a drive's cache can hold (an HDD's 8
/// read segments of a 1 MiB read each hold 8 MiB).
const SMALL_SIZES: [u64; 3] = [4 << 20, 8 << 20, 16 << 20];
const QUICK_SIZES: [u64; 3] = [8 << 20, 32 << 20, 512 << 20];

/// Every (drive, file size) where the drive holds the file: seed 002's
/// sizes and, below them, a few the drives' caches can hold.
pub fn sim_grid(quick: bool) -> Vec<(String, u64)> {
    let full: Vec<u64> = SMALL_SIZES.iter().chain(&FILE_SIZES).copied().collect();
    let sizes: &[u64] = if quick { &QUICK_SIZES } else { &full };
    SIM_DEVICES
        .iter()
        .flat_map(|d| {
            let cap = presets::get(d).map_or(0, |s| s.capacity);
            sizes
                .iter()
                .filter(move |&&s| s <= cap)
                .map(move |&s| (d.to_string(), s))
        })
        .collect()
}

/// Random 4 KB reads within a file of `size` at the start of `device`,
/// cold and hot.
pub fn run_sim(device: &str, size: u64, opts: &LabOptions) -> Result<Vec<CacheRow>, LabError> {
    if !SIM_DEVICES.contains(&device) {
        return Err(points::unknown("seed000", "device", device, &SIM_DEVICES));
    }
    opts.progress(&format!("seed000 cache {device} {}", size_label(size)));
    let run = SimRun {
        pattern: Pattern::RandRead,
        block_size: 4096,
        ops: if opts.quick { 200 } else { 1000 },
        file_size: size,
        iodepth: 1,
        seed: opts.seed,
    };
    Ok(run.rows(&presets::get(device)?, &Cache::BOTH)?)
}

/// A cold and hot run on a simulated drive.
#[derive(Debug, Clone)]
pub struct SimRun {
    pub pattern: Pattern,
    pub block_size: u64,
    pub ops: u64,
    /// Bytes at the start of the drive the requests fall in.
    pub file_size: u64,
    /// Requests outstanding in the measured run (the warm pass has one).
    pub iodepth: usize,
    pub seed: u64,
}

impl SimRun {
    /// One row per cache state, each on a fresh drive; hot after one
    /// sequential pass over the file in 1 MiB reads (the last piece
    /// smaller than that unread).
    pub fn rows(&self, spec: &DeviceSpec, caches: &[Cache]) -> Result<Vec<CacheRow>, ProfileError> {
        if self.pattern.writes() {
            return Err(ProfileError::Device(flashkv_device::DeviceError::BadInput(
                "the cache runs read: use sr or rr".into(),
            )));
        }
        let measured = ProfileSpec {
            iodepth: self.iodepth,
            ..self.spec(self.pattern, self.block_size, self.ops)
        };
        let mut rows = Vec::new();
        for &cache in caches {
            let mut dev = SimDevice::new(spec)?;
            profile::validate(&dev, &measured)?;
            let warm_block = (1u64 << 20).min(self.file_size);
            if cache == Cache::Hot && self.file_size >= warm_block {
                let warm = self.spec(Pattern::SeqRead, warm_block, self.file_size / warm_block);
                profile::run_prepared(&mut dev, &spec.name, &warm)?;
            }
            let r = profile::run_prepared(&mut dev, &spec.name, &measured)?;
            rows.push(CacheRow::of(&r, cache, self.file_size));
        }
        Ok(rows)
    }

    fn spec(&self, pattern: Pattern, block_size: u64, ops: u64) -> ProfileSpec {
        ProfileSpec {
            pattern,
            block_size,
            ops: ops.max(1),
            span: self.file_size,
            iodepth: 1,
            seed: self.seed,
        }
    }
}

/// Mean time per read against the file size, a cold and a hot line per
/// device and pattern, side by side in one plot: the SVG at `path` and a
/// PNG beside it, as the lab's plots are.
pub fn plot(rows: &[CacheRow], title: &str, path: &std::path::Path) -> std::io::Result<()> {
    chart(rows, title, |p| p.write_svg(path))
}

/// The same plot as SVG text alone (`profile --plot` writes only the file
/// it is given).
pub fn svg(rows: &[CacheRow], title: &str) -> std::io::Result<String> {
    chart(rows, title, |p| p.to_svg())
}

fn chart<T>(rows: &[CacheRow], title: &str, draw: impl FnOnce(&Plot) -> T) -> T {
    let mut series: Vec<Series> = Vec::new();
    for r in rows {
        let name = format!(
            "{} {} {} {}",
            r.device,
            r.pattern,
            size_label(r.block_size),
            r.cache.name()
        );
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((r.file_size as f64, r.mean_latency_us)),
            None => series.push(Series {
                name,
                points: vec![(r.file_size as f64, r.mean_latency_us)],
                markers_only: false,
            }),
        }
    }
    draw(&Plot {
        title,
        x_label: "file size (bytes)",
        y_label: "mean time per read (µs)",
        log_x: true,
        log_y: true,
        series: &series,
        x_names: &[],
    })
}
