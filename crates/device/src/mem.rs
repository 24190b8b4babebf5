//! [`MemDevice`]: an untimed device in memory with any geometry, for
//! fault tests that run thousands of cases and need no cost model. Every
//! operation completes at the time it is issued.

use rustc_hash::FxHashSet;

use crate::{
    BlockDevice, Completion, DataStore, DeviceError, DeviceStats, Geometry, Nanos, Result,
};

/// A sparse in-memory device. Where the geometry is `program_once` it
/// refuses to program a sector twice between erases of its unit, like raw
/// NAND; trims change nothing there (raw NAND has no trim).
pub struct MemDevice {
    geo: Geometry,
    data: DataStore,
    programmed: FxHashSet<u64>,
    clock: Nanos,
    stats: DeviceStats,
}

impl MemDevice {
    /// An empty (all zeros) device of geometry `geo`.
    pub fn new(geo: Geometry) -> Self {
        assert!(geo.sector_size > 0 && geo.capacity % u64::from(geo.sector_size) == 0);
        assert_eq!(
            geo.program_once,
            geo.erase_unit.is_some(),
            "program-once needs erase units"
        );
        MemDevice {
            geo,
            data: DataStore::default(),
            programmed: FxHashSet::default(),
            clock: 0,
            stats: DeviceStats::default(),
        }
    }

    /// Sectors `[offset, offset + len)` as sector numbers.
    fn sectors(&self, offset: u64, len: u64) -> std::ops::Range<u64> {
        let s = u64::from(self.geo.sector_size);
        debug_assert!(offset % s == 0 && len % s == 0, "whole sectors");
        offset / s..(offset + len) / s
    }

    fn done(&mut self, at: Nanos) -> Completion {
        self.clock = self.clock.max(at);
        Completion {
            start: at,
            end: at,
            energy_nj: 0,
        }
    }
}

impl BlockDevice for MemDevice {
    fn geometry(&self) -> Geometry {
        self.geo
    }

    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        self.geo.check(offset, buf.len() as u64)?;
        self.data.read(offset, buf)?;
        self.stats.host_reads += 1;
        self.stats.host_read_bytes += buf.len() as u64;
        Ok(self.done(at))
    }

    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.geo.check(offset, buf.len() as u64)?;
        if self.geo.program_once {
            let range = self.sectors(offset, buf.len() as u64);
            if range.clone().any(|s| self.programmed.contains(&s)) {
                return Err(DeviceError::AlreadyProgrammed { offset });
            }
            self.programmed.extend(range);
        }
        self.data.write(offset, buf)?;
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += buf.len() as u64;
        Ok(self.done(at))
    }

    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.stats.flushes += 1;
        Ok(self.done(at))
    }

    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.geo.check(offset, len)?;
        if !self.geo.program_once {
            self.data.zero(offset, len)?;
        }
        self.stats.trims += 1;
        Ok(self.done(at))
    }

    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        let Some(eu) = self.geo.erase_unit else {
            return Err(DeviceError::Unsupported("erase: no erase units"));
        };
        let units = self.geo.capacity / eu;
        if unit >= units {
            return Err(DeviceError::NoSuchUnit { unit, units });
        }
        self.data.zero(unit * eu, eu)?;
        for s in self.sectors(unit * eu, eu) {
            self.programmed.remove(&s);
        }
        debug_assert!(
            !self.is_programmed(unit * eu, eu),
            "an erased unit reads as erased"
        );
        self.stats.block_erases += 1;
        Ok(self.done(at))
    }

    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        self.sectors(offset, len)
            .any(|s| self.programmed.contains(&s))
    }

    fn clock(&self) -> Nanos {
        self.clock
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nand() -> MemDevice {
        MemDevice::new(Geometry {
            sector_size: 512,
            erase_unit: Some(4096),
            capacity: 1 << 16,
            program_once: true,
        })
    }

    #[test]
    fn program_once_refuses_a_second_program_until_erased() {
        let mut d = nand();
        d.write(512, &[1u8; 1024]).unwrap();
        assert!(d.is_programmed(1024, 512) && !d.is_programmed(0, 512));
        assert!(matches!(
            d.write(1024, &[2u8; 512]),
            Err(DeviceError::AlreadyProgrammed { offset: 1024 })
        ));
        d.erase(0).unwrap();
        let mut b = [9u8; 1024];
        d.read(512, &mut b).unwrap();
        assert_eq!(b, [0u8; 1024]);
        d.write(1024, &[2u8; 512]).unwrap();
        assert!(matches!(d.erase(16), Err(DeviceError::NoSuchUnit { .. })));
    }
}
