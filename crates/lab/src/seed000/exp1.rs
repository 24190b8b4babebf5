//! Experiment 1 (seed 000 section 3.4.1): each drive, each pattern, block
//! sizes 4 KB … 1 MB, one request outstanding over the whole drive, as
//! IOmeter ran it (one outstanding I/O is its default; its test file fills
//! the drive when no size is given).

use flashkv_device::BlockDevice;
use serde::{Deserialize, Serialize};

use crate::advisor::BLOCK_SIZES;
use crate::lab::{LabError, LabOptions};
use crate::points;
use crate::profile::{self, Pattern, ProfileSpec};
use crate::report::size_label;

/// One drive, pattern and block size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exp1Row {
    pub device: String,
    pub pattern: String,
    pub block_size: u64,
    pub ops: u64,
    pub iops: f64,
    pub mb_per_s: f64,
    /// Mean response time, ms (IOmeter's "average I/O response time").
    pub mean_response_ms: f64,
}

/// Requests per block size (the disk's first positioning is spread over
/// them: a few per cent of a 4 KB sequential run at 2000).
pub fn ops(quick: bool) -> u64 {
    if quick {
        200
    } else {
        2000
    }
}

/// Profiles `pattern` at every block size on one fresh `device`; write
/// patterns first write the whole drive once (a used drive, as the seed's
/// drives were).
pub fn run(device: &str, pattern: &str, opts: &LabOptions) -> Result<Vec<Exp1Row>, LabError> {
    if super::drive(device).is_none() {
        let known = super::DRIVES.map(|d| d.preset);
        return Err(points::unknown("seed000", "device", device, &known));
    }
    let pattern = Pattern::parse(pattern)
        .filter(|p| *p != Pattern::Mix)
        .ok_or_else(|| points::unknown("seed000", "pattern", pattern, &["sr", "rr", "sw", "rw"]))?;
    let spec = super::spec(device)?;
    let mut dev = flashkv_device::SimDevice::new(&spec)?;
    let capacity = dev.geometry().capacity;
    if pattern.writes() {
        opts.progress(&format!("seed000 exp1 {device} {pattern} preconditioning"));
        profile::precondition(&mut dev, capacity)?;
    }
    let mut rows = Vec::new();
    for bs in BLOCK_SIZES {
        opts.progress(&format!(
            "seed000 exp1 {device} {pattern} {}",
            size_label(bs)
        ));
        let s = ProfileSpec {
            pattern,
            block_size: bs,
            ops: ops(opts.quick),
            span: capacity / bs * bs,
            iodepth: 1,
            seed: opts.seed,
        };
        let r = profile::run_prepared(&mut dev, device, &s)?;
        rows.push(Exp1Row {
            device: device.to_string(),
            pattern: pattern.code().to_string(),
            block_size: bs,
            ops: r.ops,
            iops: r.iops,
            mb_per_s: r.mb_per_s,
            mean_response_ms: r.mean_latency_us / 1e3,
        });
    }
    Ok(rows)
}
