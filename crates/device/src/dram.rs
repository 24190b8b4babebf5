//! DRAM SSD: no mechanics, no erase; a command overhead plus the transfer
//! over the host interface, served one command at a time.

use serde::{Deserialize, Serialize};

use crate::sim::{transfer_ns, us};
use crate::spec::{de_size, require, require_multiple};
use crate::{Completion, DeviceStats, Geometry, Model, Nanos, Result};

/// Parameters of a DRAM SSD.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramParams {
    /// Host sector size (default 512).
    #[serde(default = "default_sector", deserialize_with = "de_size")]
    pub sector_size: u64,
    /// Fixed cost of a read command (controller and host stack), µs.
    pub read_overhead_us: f64,
    /// Fixed cost of a write command, µs.
    pub write_overhead_us: f64,
    /// Interface transfer rate of reads, MB/s.
    pub read_mb_per_s: f64,
    /// Interface transfer rate of writes, MB/s.
    pub write_mb_per_s: f64,
}

fn default_sector() -> u64 {
    512
}

struct Dram {
    p: DramParams,
    capacity: u64,
    busy_until: Nanos,
}

pub(crate) fn model(p: &DramParams, capacity: u64) -> Result<Box<dyn Model>> {
    require(
        p.sector_size.is_power_of_two() && p.sector_size <= 1 << 31,
        "dram: sector_size must be a power of two of at most 2 GiB",
    )?;
    require_multiple("dram", capacity, p.sector_size, "sector_size")?;
    require(
        [p.read_mb_per_s, p.write_mb_per_s]
            .iter()
            .all(|r| r.is_finite() && *r > 0.0),
        "dram: transfer rates must be positive",
    )?;
    require(
        [p.read_overhead_us, p.write_overhead_us]
            .iter()
            .all(|o| o.is_finite() && *o >= 0.0),
        "dram: overheads must not be negative",
    )?;
    Ok(Box::new(Dram {
        p: p.clone(),
        capacity,
        busy_until: 0,
    }))
}

impl Dram {
    fn serve(&mut self, at: Nanos, service: Nanos) -> Completion {
        let start = at.max(self.busy_until);
        self.busy_until = start + service;
        debug_assert!(start >= at && self.busy_until >= start);
        Completion {
            start,
            end: self.busy_until,
            energy_nj: 0,
        }
    }
}

impl Model for Dram {
    fn geometry(&self) -> Geometry {
        Geometry {
            sector_size: self.p.sector_size as u32,
            erase_unit: None,
            capacity: self.capacity,
            program_once: false,
        }
    }

    fn read(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        _st: &mut DeviceStats,
    ) -> Result<Completion> {
        debug_assert!(offset + len <= self.capacity, "SimDevice checked the range");
        let t = us(self.p.read_overhead_us) + transfer_ns(len, self.p.read_mb_per_s);
        Ok(self.serve(at, t))
    }

    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        _st: &mut DeviceStats,
    ) -> Result<Completion> {
        debug_assert!(offset + len <= self.capacity, "SimDevice checked the range");
        let t = us(self.p.write_overhead_us) + transfer_ns(len, self.p.write_mb_per_s);
        Ok(self.serve(at, t))
    }

    fn flush(&mut self, at: Nanos, _st: &mut DeviceStats) -> Result<Completion> {
        Ok(self.serve(at, 0))
    }

    fn busy_until(&self) -> Option<Nanos> {
        Some(self.busy_until)
    }
}
