//! Experiment 2 (seed 000 section 3.4.2): the best block size for each file
//! size. The seed ran HD Tune Pro's file benchmark, which writes a file of
//! the given size and reads it back, sequentially, at each block size; the
//! seed could not define the access pattern beyond that and names this its
//! limitation (section 5.2). Here the file is written and read whole at
//! each block size (sw, sr, as HD Tune) and, the seed's future direction,
//! also read and written at random within the file (rr, rw: a fixed number
//! of requests). The file lies at the start of the drive, which is written
//! once beforehand (a used drive).
//!
//! The drives are the seed's four (its SSD was not in Experiment 2), the
//! disk through its 41 MB partition holding only the 32 MB file, plus the
//! same disk whole ([`super::WHOLE_DISK`]), beyond the seed, for the
//! larger files.

use flashkv_device::{BlockDevice, ModelSpec, SimDevice};
use serde::{Deserialize, Serialize};

use crate::advisor::{BLOCK_SIZES, GOOD_ENOUGH, PATTERNS};
use crate::lab::{LabError, LabOptions};
use crate::points;
use crate::profile::{self, Pattern, ProfileSpec};
use crate::report::size_label;

/// The seed's file sizes: 32 MB to 2 GB.
pub const FILE_SIZES: [u64; 7] = [
    32 << 20,
    64 << 20,
    128 << 20,
    256 << 20,
    512 << 20,
    1 << 30,
    2 << 30,
];
/// File sizes of a quick run.
const QUICK_SIZES: [u64; 2] = [32 << 20, 128 << 20];

/// The patterns Experiment 2 measures, in order.
pub const EXP2_PATTERNS: [Pattern; 4] = PATTERNS;

/// The drives of Experiment 2, in the order reported.
pub fn devices() -> [&'static str; 5] {
    [
        super::DRIVES[0].preset,
        super::WHOLE_DISK,
        super::DRIVES[1].preset,
        super::DRIVES[2].preset,
        super::DRIVES[3].preset,
    ]
}

/// Every (drive, file size) where the drive holds the file.
pub fn grid(quick: bool) -> Vec<(String, u64)> {
    let sizes: &[u64] = if quick { &QUICK_SIZES } else { &FILE_SIZES };
    devices()
        .iter()
        .flat_map(|d| {
            let cap = super::spec(d).map_or(0, |s| s.capacity);
            sizes
                .iter()
                .filter(move |&&s| s <= cap)
                .map(move |&s| (d.to_string(), s))
        })
        .collect()
}

/// One drive, file size, pattern and block size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exp2Row {
    pub device: String,
    pub file_size: u64,
    pub pattern: String,
    pub block_size: u64,
    pub ops: u64,
    pub mb_per_s: f64,
}

/// Random requests per block size within the file.
fn random_ops(quick: bool) -> u64 {
    if quick {
        100
    } else {
        500
    }
}

/// Runs every pattern and block size on a file of `size` on one drive.
pub fn run(device: &str, size: u64, opts: &LabOptions) -> Result<Vec<Exp2Row>, LabError> {
    if !devices().contains(&device) {
        return Err(points::unknown("seed000", "device", device, &devices()));
    }
    let spec = super::spec(device)?;
    let mut dev = SimDevice::new(&spec)?;
    let cap = dev.geometry().capacity;
    if size > cap || size % (1 << 20) != 0 {
        return Err(LabError::Params(format!(
            "seed000: a {} file on {device} ({})",
            size_label(size),
            size_label(cap)
        )));
    }
    // Disks keep no write history; flash is written once first.
    if !matches!(spec.model, ModelSpec::Hdd(_)) {
        profile::precondition(&mut dev, cap)?;
    }
    let mut rows = Vec::new();
    for pattern in EXP2_PATTERNS {
        for bs in BLOCK_SIZES {
            opts.progress(&format!(
                "seed000 exp2 {device} {} {pattern} {}",
                size_label(size),
                size_label(bs)
            ));
            // Sequential patterns go through the whole file once, as HD Tune.
            let ops = match pattern {
                Pattern::SeqRead | Pattern::SeqWrite => size / bs,
                _ => random_ops(opts.quick),
            };
            let s = ProfileSpec {
                pattern,
                block_size: bs,
                ops,
                span: size,
                iodepth: 1,
                seed: opts.seed,
            };
            let r = profile::run_prepared(&mut dev, device, &s)?;
            rows.push(Exp2Row {
                device: device.to_string(),
                file_size: size,
                pattern: pattern.code().to_string(),
                block_size: bs,
                ops,
                mb_per_s: r.mb_per_s,
            });
        }
    }
    Ok(rows)
}

/// The best block for one drive, file size and pattern.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileSizeBest {
    pub device: String,
    pub file_size: u64,
    pub pattern: String,
    /// Smallest block within [`GOOD_ENOUGH`] of the top MB/s (the advisor's rule).
    pub best_block: u64,
    /// Block of the top MB/s.
    pub top_block: u64,
}

/// The best blocks of every drive, file size and pattern, in row order.
pub fn best(rows: &[Exp2Row]) -> Vec<FileSizeBest> {
    let mut out: Vec<FileSizeBest> = Vec::new();
    for r in rows {
        let seen = out
            .iter()
            .any(|b| b.device == r.device && b.file_size == r.file_size && b.pattern == r.pattern);
        if seen {
            continue;
        }
        let curve: Vec<&Exp2Row> = rows
            .iter()
            .filter(|x| {
                x.device == r.device && x.file_size == r.file_size && x.pattern == r.pattern
            })
            .collect();
        let top = curve
            .iter()
            .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))
            .map_or(r, |t| t);
        let good = curve
            .iter()
            .find(|x| x.mb_per_s >= GOOD_ENOUGH * top.mb_per_s)
            .map_or(top, |g| g);
        out.push(FileSizeBest {
            device: r.device.clone(),
            file_size: r.file_size,
            pattern: r.pattern.clone(),
            best_block: good.block_size,
            top_block: top.block_size,
        });
    }
    out
}

/// The distinct best blocks a drive has for a pattern across file sizes:
/// one means the file size does not change the answer.
pub fn distinct(best: &[FileSizeBest], device: &str, pattern: &str) -> Vec<u64> {
    let mut v: Vec<u64> = best
        .iter()
        .filter(|b| b.device == device && b.pattern == pattern)
        .map(|b| b.best_block)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Figure 3.14: per file size, the mean best block (KB) over the seed's
/// drives that hold the file (the whole disk is not one of them).
pub fn average(best: &[FileSizeBest], pattern: &str) -> Vec<(u64, f64, usize)> {
    let seed_drives: Vec<&str> = super::DRIVES[..4].iter().map(|d| d.preset).collect();
    FILE_SIZES
        .iter()
        .filter_map(|&size| {
            let kb: Vec<f64> = best
                .iter()
                .filter(|b| b.file_size == size && b.pattern == pattern)
                .filter(|b| seed_drives.contains(&b.device.as_str()))
                .map(|b| (b.best_block >> 10) as f64)
                .collect();
            (!kb.is_empty()).then(|| (size, kb.iter().sum::<f64>() / kb.len() as f64, kb.len()))
        })
        .collect()
}
