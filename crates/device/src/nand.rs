//! Raw NAND flash (no FTL): the device in-page logging is designed for.
//!
//! The host sees erase units (blocks) and must erase a block before it can
//! program any of its sectors again. Program-once is tracked per sector
//! (default 512 B), so a page can be programmed in pieces (partial page
//! programming), as the in-page-logging engine does with its log sectors.
//!
//! Costs are per NAND page an operation touches: a 512 B read of a page
//! costs a whole page read. Dies work in parallel, each with its own
//! timeline; the dies of a channel share its bus. Block `b` lives on die
//! `b % (channels * dies_per_channel)`.
//!
//! [`crate::array::NandArray`] (timelines and per-operation costs) is
//! shared with the FTL models in `ftl.rs`.

use serde::{Deserialize, Serialize};

use crate::array::{page_pieces, size_erase_counts, ArraySpec, Cost, NandArray};
use crate::spec::{de_size, require, require_multiple};
use crate::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Model, Nanos, Result};

/// Parameters of raw NAND flash.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandParams {
    /// Bytes per NAND page (the read and program unit).
    #[serde(deserialize_with = "de_size")]
    pub page_size: u64,
    /// Pages per block; a block (page_size × pages_per_block) is the erase unit.
    pub pages_per_block: u64,
    /// Program granularity and host sector: each sector can be programmed
    /// once between erases of its block.
    #[serde(default = "default_sector", deserialize_with = "de_size")]
    pub sector_size: u64,
    /// Array read of one page (into the die's page register), µs.
    pub read_us: f64,
    /// Program of one page, µs.
    pub program_us: f64,
    /// Erase of one block, µs.
    pub erase_us: f64,
    /// Channel bus rate, MB/s; 0 means the transfer is included in the times above.
    #[serde(default)]
    pub bus_mb_per_s: f64,
    /// Channels, each a bus shared by its dies.
    #[serde(default = "one")]
    pub channels: u32,
    /// Dies on each channel; each works on its own.
    #[serde(default = "one")]
    pub dies_per_channel: u32,
    /// Energy per page read, µJ.
    #[serde(default)]
    pub read_uj: f64,
    /// Energy per page program, µJ.
    #[serde(default)]
    pub program_uj: f64,
    /// Energy per block erase, µJ.
    #[serde(default)]
    pub erase_uj: f64,
}

pub(crate) fn default_sector() -> u64 {
    512
}

pub(crate) fn one() -> u32 {
    1
}

pub(crate) fn model(p: &NandParams, capacity: u64) -> Result<Box<dyn Model>> {
    let array = ArraySpec {
        kind: "nand",
        page_size: p.page_size,
        pages_per_block: p.pages_per_block,
        sector_size: p.sector_size,
        read_us: p.read_us,
        program_us: p.program_us,
        erase_us: p.erase_us,
        bus_mb_per_s: p.bus_mb_per_s,
        channels: p.channels,
        dies_per_channel: p.dies_per_channel,
        read_uj: p.read_uj,
        program_uj: p.program_uj,
        erase_uj: p.erase_uj,
    }
    .build()?;
    let block_bytes = p.page_size.saturating_mul(p.pages_per_block);
    require_multiple(
        "nand",
        capacity,
        block_bytes,
        "the block size (page_size × pages_per_block)",
    )?;
    let sectors = capacity / p.sector_size;
    require(
        sectors <= usize::MAX as u64 / 2,
        "nand: capacity is too large to track",
    )?;
    let blocks = capacity / block_bytes;
    debug_assert_eq!(blocks * block_bytes, capacity);
    Ok(Box::new(RawNand {
        geometry: Geometry {
            sector_size: p.sector_size as u32,
            erase_unit: Some(block_bytes),
            capacity,
            program_once: true,
        },
        array,
        page_size: p.page_size,
        block_bytes,
        blocks,
        programmed: vec![0; sectors.div_ceil(64) as usize],
    }))
}

struct RawNand {
    geometry: Geometry,
    array: NandArray,
    page_size: u64,
    block_bytes: u64,
    blocks: u64,
    /// One bit per sector: programmed since its block's last erase.
    programmed: Vec<u64>,
}

impl RawNand {
    fn sector(&self, offset: u64) -> usize {
        debug_assert_eq!(offset % u64::from(self.geometry.sector_size), 0);
        (offset / u64::from(self.geometry.sector_size)) as usize
    }

    fn bit(&self, s: usize) -> bool {
        self.programmed[s / 64] & (1 << (s % 64)) != 0
    }

    fn set_bits(&mut self, from: usize, to: usize, on: bool) {
        debug_assert!(from <= to && to <= self.programmed.len() * 64);
        for s in from..to {
            if on {
                self.programmed[s / 64] |= 1 << (s % 64);
            } else {
                self.programmed[s / 64] &= !(1 << (s % 64));
            }
        }
    }

    fn unit_of(&self, offset: u64) -> usize {
        ((offset / self.block_bytes) % self.array.units() as u64) as usize
    }
}

impl Model for RawNand {
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        size_erase_counts(st, self.blocks as usize);
        self.array.forget_before(at);
        let mut cost = Cost::new(at);
        for (pos, n) in page_pieces(offset, len, self.page_size) {
            let u = self.unit_of(pos);
            self.array.read(u, at, n, st, &mut cost);
        }
        Ok(cost.completion())
    }

    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        size_erase_counts(st, self.blocks as usize);
        let (from, to) = (self.sector(offset), self.sector(offset + len));
        if let Some(s) = (from..to).find(|&s| self.bit(s)) {
            return Err(DeviceError::AlreadyProgrammed {
                offset: s as u64 * u64::from(self.geometry.sector_size),
            });
        }
        self.set_bits(from, to, true);
        debug_assert!(len == 0 || self.is_programmed(offset, len));
        self.array.forget_before(at);
        let mut cost = Cost::new(at);
        for (pos, n) in page_pieces(offset, len, self.page_size) {
            let u = self.unit_of(pos);
            self.array.program(u, at, n, st, &mut cost);
        }
        Ok(cost.completion())
    }

    fn flush(&mut self, at: Nanos, _st: &mut DeviceStats) -> Result<Completion> {
        // Nothing is cached: every completed program is already on the array.
        Ok(Completion {
            start: at,
            end: at,
            energy_nj: 0,
        })
    }

    fn erase(&mut self, at: Nanos, unit: u64, st: &mut DeviceStats) -> Result<Completion> {
        if unit >= self.blocks {
            return Err(DeviceError::NoSuchUnit {
                unit,
                units: self.blocks,
            });
        }
        size_erase_counts(st, self.blocks as usize);
        let base = unit * self.block_bytes;
        let (from, to) = (self.sector(base), self.sector(base + self.block_bytes));
        self.set_bits(from, to, false);
        debug_assert!(
            !self.is_programmed(base, self.block_bytes),
            "an erased unit reads as erased"
        );
        let mut cost = Cost::new(at);
        self.array.erase(self.unit_of(base), at, st, &mut cost);
        st.erase_counts.add(unit);
        Ok(cost.completion())
    }

    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        let (from, to) = (self.sector(offset), self.sector(offset + len));
        (from..to.min(self.programmed.len() * 64)).any(|s| self.bit(s))
    }
}

/// Writes `buf` at `offset` on a program-once device as the conventional
/// in-place update: for each erase unit whose part of the range is already
/// programmed, read the whole unit, erase it, and rewrite all of it with the
/// new bytes merged in. Elsewhere (and on other devices) it is a plain
/// write. The completion spans the whole sequence.
pub fn update_in_place(dev: &mut dyn BlockDevice, offset: u64, buf: &[u8]) -> Result<Completion> {
    let g = dev.geometry();
    let len = buf.len() as u64;
    g.check(offset, len)?;
    let eu = match g.erase_unit {
        Some(eu) if g.program_once && len > 0 && dev.is_programmed(offset, len) => eu,
        _ => return dev.write(offset, buf),
    };
    let mut total: Option<Completion> = None;
    let mut add = |c: Completion| {
        total = Some(match total {
            None => c,
            Some(t) => Completion {
                start: t.start.min(c.start),
                end: t.end.max(c.end),
                energy_nj: t.energy_nj + c.energy_nj,
            },
        })
    };
    let mut unit_buf = Vec::new();
    let end = offset + len;
    for unit in offset / eu..end.div_ceil(eu) {
        let base = unit * eu;
        let unit_end = (base + eu).min(g.capacity);
        let (lo, hi) = (offset.max(base), end.min(unit_end));
        let piece = &buf[(lo - offset) as usize..(hi - offset) as usize];
        if !dev.is_programmed(lo, hi - lo) {
            add(dev.write(lo, piece)?);
            continue;
        }
        unit_buf.resize((unit_end - base) as usize, 0);
        add(dev.read(base, &mut unit_buf)?);
        unit_buf[(lo - base) as usize..(hi - base) as usize].copy_from_slice(piece);
        add(dev.erase(unit)?);
        add(dev.write(base, &unit_buf)?);
        debug_assert!(
            dev.is_programmed(lo, hi - lo),
            "the new bytes are programmed"
        );
    }
    // `len > 0`, so the loop covered at least one unit.
    total.ok_or_else(|| DeviceError::internal("nand", "update_in_place covered no erase unit"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceSpec, SimDevice};

    fn spec(extra: &str) -> DeviceSpec {
        DeviceSpec::from_toml(
            &format!(
                "capacity = \"1m\"\n[model]\nkind = \"nand\"\npage_size = \"4k\"\npages_per_block = 4\n\
                 read_us = 10\nprogram_us = 100\nerase_us = 1000\n{extra}"
            ),
            "t",
        )
        .unwrap()
    }

    #[test]
    fn partial_page_programs_are_tracked_per_sector() {
        let mut d = SimDevice::new(&spec("")).unwrap();
        d.write(0, &[1; 512]).unwrap();
        d.write(512, &[2; 512]).unwrap();
        assert!(d.is_programmed(0, 4096));
        assert!(!d.is_programmed(1024, 3072));
        // Two sector programs of one page each cost a page program.
        let s = d.stats();
        assert_eq!(s.nand_page_programs, 2);
        assert_eq!(s.nand_program_bytes, 1024);
        assert_eq!(d.clock(), 200_000);
    }

    #[test]
    fn dies_work_in_parallel_and_share_their_channel_bus() {
        // Two channels of one die: blocks 0 and 1 are on different dies.
        let mut d = SimDevice::new(&spec("channels = 2\nbus_mb_per_s = 40.96")).unwrap();
        let a = d.write_at(0, 0, &[1; 4096]).unwrap();
        let b = d.write_at(0, 16384, &[1; 4096]).unwrap();
        // 4096 B at 40.96 MB/s = 100 us, then 100 us program, both at once.
        assert_eq!((a.end, b.end), (200_000, 200_000));
        // One channel of two dies: the second transfer waits for the bus.
        let mut d = SimDevice::new(&spec("dies_per_channel = 2\nbus_mb_per_s = 40.96")).unwrap();
        d.write_at(0, 0, &[1; 4096]).unwrap();
        let b = d.write_at(0, 16384, &[1; 4096]).unwrap();
        assert_eq!(b.end, 300_000);
    }

    #[test]
    fn bad_params_are_spec_errors() {
        let bad = |extra: &str, cap: &str| {
            let text = format!(
                "capacity = \"{cap}\"\n[model]\nkind = \"nand\"\npage_size = \"4k\"\npages_per_block = 4\n\
                 read_us = 10\nprogram_us = 100\nerase_us = 1000\n{extra}"
            );
            DeviceSpec::from_toml(&text, "t").unwrap_err().to_string()
        };
        assert!(bad("", "1000k").contains("multiple of the block size"));
        assert!(bad("channels = 0", "1m").contains("channels"));
        assert!(bad("sector_size = 3", "1m").contains("power of two"));
        assert!(bad("bus_mb_per_s = -1", "1m").contains("bus_mb_per_s"));
        assert!(bad("wat = 1", "1m").contains("wat"));
    }

    #[test]
    fn erasing_a_unit_that_does_not_exist_is_an_error() {
        let mut d = SimDevice::new(&spec("")).unwrap();
        let e = d.erase(64).unwrap_err();
        assert!(
            matches!(
                e,
                DeviceError::NoSuchUnit {
                    unit: 64,
                    units: 64
                }
            ),
            "{e}"
        );
    }
}
