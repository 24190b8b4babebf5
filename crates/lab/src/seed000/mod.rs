//! Seed 000's experiments on seed 000's own drives (Fernando, "Implications
//! on Database Management Systems with using Solid State Disks", chapter 3),
//! and seed 002's cold and hot buffers ("Flash versus Disk").
//!
//! * Experiment 1 ([`exp1`]): the five drives of the seed's section 3.3 as
//!   presets, each pattern (SR, RR, SW, RW) at 4 KB … 1 MB with one request
//!   outstanding (IOmeter's default) over the whole drive: IOPS, MB/s and
//!   mean response time; then the seed's Tables 3.2 and 3.3 and its stated
//!   best block sizes set beside the model's answers cell by cell
//!   ([`compare`]).
//! * Experiment 2 ([`exp2`]): the best block size for each file size from
//!   32 MB to 2 GB where the drive holds it, as HD Tune Pro's file
//!   benchmark measures it (the file written, then read, sequentially at
//!   each block size), and — the seed's future direction — with the access
//!   pattern defined: random reads and writes within the file.
//! * Cold and hot caches ([`cache`]): seed 002's 4 KB reads against the
//!   file size with the drive's own read cache empty, and warm after one
//!   pass over the file (the rows and the plot are [`crate::cache`]'s).

mod claims;
mod compare;
mod exp1;
pub mod exp2;
mod report;

use flashkv_device::{presets, DeviceSpec, ModelSpec};
use serde::{Deserialize, Serialize};

use crate::advisor::DeviceClass;
use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output, Params, Point};

pub use compare::{Cell, Comparison};
pub use exp2::{FileSizeBest, EXP2_PATTERNS, FILE_SIZES};

/// One of the seed's drives: its key in the seed's tables, its preset and
/// the name the seed gives it.
#[derive(Debug, Clone, Copy)]
pub struct Drive {
    pub key: &'static str,
    pub preset: &'static str,
    pub label: &'static str,
    /// The seed's Algorithm 1 class of the drive.
    pub class: DeviceClass,
}

/// The five drives of section 3.3, in the seed's order.
pub const DRIVES: [Drive; 5] = [
    Drive {
        key: "hdd",
        preset: "hdd-ide-41m",
        label: "Hard Drive",
        class: DeviceClass::Hdd,
    },
    Drive {
        key: "flash_drive",
        preset: "kingston-dt-4g",
        label: "Flash Drive",
        class: DeviceClass::FlashDrive,
    },
    Drive {
        key: "micro_sd",
        preset: "kingston-microsd-1g",
        label: "MicroSD",
        class: DeviceClass::FlashDrive,
    },
    Drive {
        key: "memory_stick",
        preset: "sony-mspro-1g",
        label: "Memory Stick",
        class: DeviceClass::FlashDrive,
    },
    Drive {
        key: "ssd",
        preset: "toshiba-62g",
        label: "SSD",
        class: DeviceClass::Ssd,
    },
];

/// The drive whose preset is `preset`.
pub fn drive(preset: &str) -> Option<&'static Drive> {
    DRIVES.iter().find(|d| d.preset == preset)
}

/// Beyond the seed: its disk through the whole disk rather than the 41 MB
/// partition, which holds no file above 32 MB (Experiment 2's file sizes).
pub const WHOLE_DISK: &str = "hdd-ide-41m-whole";

/// A preset, or [`WHOLE_DISK`]: `hdd-ide-41m` with its partition the whole disk.
pub fn spec(name: &str) -> Result<DeviceSpec, LabError> {
    if name != WHOLE_DISK {
        return Ok(presets::get(name)?);
    }
    let mut s = presets::get(DRIVES[0].preset)?;
    let ModelSpec::Hdd(p) = &mut s.model else {
        return Err(LabError::Data(format!("{} is not a disk", s.name)));
    };
    s.capacity = p
        .disk_capacity
        .take()
        .ok_or_else(|| LabError::Data(format!("{} has no disk_capacity", s.name)))?;
    s.name = WHOLE_DISK.to_string();
    Ok(s)
}

/// What a point does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Part {
    Exp1,
    Exp2,
    Cache,
}

/// A point: Experiment 1 for one drive and pattern, or Experiment 2 or the
/// cache curve for one drive and file size.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    part: Part,
    device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file_size: Option<u64>,
}

/// One row of any part (the report sorts them out by kind).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum Row {
    Exp1(exp1::Exp1Row),
    Exp2(exp2::Exp2Row),
    Cache(crate::cache::CacheRow),
}

/// Experiment 1's grid, then Experiment 2's, then the cache curves.
pub fn points(quick: bool) -> Vec<Point> {
    let mut v = Vec::new();
    for d in DRIVES {
        for p in crate::advisor::PATTERNS {
            let params = PointParams {
                part: Part::Exp1,
                device: d.preset.into(),
                pattern: Some(p.code().into()),
                file_size: None,
            };
            v.push((format!("exp1/{}/{}", d.preset, p.code()), params));
        }
    }
    for (device, size) in exp2::grid(quick) {
        v.push((
            exp2_id("exp2", &device, size),
            sized(Part::Exp2, device, size),
        ));
    }
    for (device, size) in crate::cache::sim_grid(quick) {
        v.push((
            exp2_id("cache", &device, size),
            sized(Part::Cache, device, size),
        ));
    }
    points::grid(v)
}

fn exp2_id(part: &str, device: &str, size: u64) -> String {
    format!("{part}/{device}/{}", crate::report::size_label(size))
}

fn sized(part: Part, device: String, size: u64) -> PointParams {
    PointParams {
        part,
        device,
        pattern: None,
        file_size: Some(size),
    }
}

/// Runs one point.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("seed000", params)?;
    let need = |what: &str| LabError::Params(format!("seed000: a {:?} point needs {what}", p.part));
    let rows: Vec<Row> = match p.part {
        Part::Exp1 => {
            let pattern = p.pattern.as_deref().ok_or_else(|| need("a pattern"))?;
            exp1::run(&p.device, pattern, opts)?
                .into_iter()
                .map(Row::Exp1)
                .collect()
        }
        Part::Exp2 => {
            let size = p.file_size.ok_or_else(|| need("a file_size"))?;
            exp2::run(&p.device, size, opts)?
                .into_iter()
                .map(Row::Exp2)
                .collect()
        }
        Part::Cache => {
            let size = p.file_size.ok_or_else(|| need("a file_size"))?;
            crate::cache::run_sim(&p.device, size, opts)?
                .into_iter()
                .map(Row::Cache)
                .collect()
        }
    };
    Output::of(&rows)
}

/// Writes `seed000/` from every point's rows.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    report::write(opts, points::rows(outputs)?)
}
