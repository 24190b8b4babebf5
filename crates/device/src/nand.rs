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
//! [`NandArray`] (timelines and per-operation costs) is shared with the FTL
//! models in `ftl.rs`.

use serde::{Deserialize, Serialize};

use crate::sim::{transfer_ns, us};
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

/// A shared resource (a channel bus, a host link) as the intervals it is
/// busy. A transfer takes the first gap long enough for it, so a request
/// whose data is ready early is not held behind one submitted before it
/// whose data is ready later.
#[derive(Default)]
pub(crate) struct Timeline {
    busy: std::collections::VecDeque<(Nanos, Nanos)>,
}

impl Timeline {
    /// Books `dur` at the earliest time at or after `t`; returns its start.
    pub fn book(&mut self, t: Nanos, dur: Nanos) -> Nanos {
        if dur == 0 {
            return t;
        }
        let mut start = t;
        let mut i = 0;
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if e <= start {
                i += 1;
                continue;
            }
            if s >= start + dur {
                break;
            }
            start = e;
            i += 1;
        }
        let end = start + dur;
        debug_assert!(start >= t, "a booking never starts before it was asked for");
        // Merge with touching neighbours to keep the list short.
        let joins_prev = i > 0 && self.busy[i - 1].1 == start;
        let joins_next = i < self.busy.len() && self.busy[i].0 == end;
        match (joins_prev, joins_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = end,
            (false, true) => self.busy[i].0 = start,
            (false, false) => self.busy.insert(i, (start, end)),
        }
        debug_assert!(self.ordered(), "busy intervals stay sorted and apart");
        start
    }

    /// Whether the busy intervals are non-empty, sorted and disjoint.
    fn ordered(&self) -> bool {
        self.busy.iter().all(|&(s, e)| s < e)
            && self
                .busy
                .iter()
                .zip(self.busy.iter().skip(1))
                .all(|(a, b)| a.1 < b.0)
    }

    /// Forgets intervals that end by `t`: nothing is booked before the
    /// time of the command being served.
    pub fn forget_before(&mut self, t: Nanos) {
        while self.busy.front().is_some_and(|&(_, e)| e <= t) {
            self.busy.pop_front();
        }
    }
}

/// The timing and energy side of a NAND array: dies with their own busy
/// timelines, sharing channel buses. Used by the raw NAND and FTL models.
pub(crate) struct NandArray {
    channels: usize,
    unit_free: Vec<Nanos>,
    chans: Vec<Timeline>,
    page_size: u64,
    read_ns: Nanos,
    program_ns: Nanos,
    erase_ns: Nanos,
    bus_mb_per_s: f64,
    page_xfer_ns: Nanos,
    read_nj: u64,
    program_nj: u64,
    erase_nj: u64,
}

/// The NAND side of a model's parameters, validated into a [`NandArray`].
pub(crate) struct ArraySpec<'a> {
    pub kind: &'a str,
    pub page_size: u64,
    pub pages_per_block: u64,
    pub sector_size: u64,
    pub read_us: f64,
    pub program_us: f64,
    pub erase_us: f64,
    pub bus_mb_per_s: f64,
    pub channels: u32,
    pub dies_per_channel: u32,
    pub read_uj: f64,
    pub program_uj: f64,
    pub erase_uj: f64,
}

fn non_negative(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

fn nj(uj: f64) -> u64 {
    (uj * 1000.0).round() as u64
}

impl ArraySpec<'_> {
    pub fn build(&self) -> Result<NandArray> {
        let k = self.kind;
        require(
            self.sector_size.is_power_of_two() && self.sector_size <= u64::from(u32::MAX / 2 + 1),
            &format!("{k}: sector_size must be a power of two of at most 2 GiB"),
        )?;
        require(
            self.page_size > 0 && self.page_size % self.sector_size == 0,
            &format!("{k}: page_size must be a positive multiple of sector_size"),
        )?;
        require(
            self.pages_per_block > 0,
            &format!("{k}: pages_per_block must be at least 1"),
        )?;
        require(
            self.channels > 0
                && self.dies_per_channel > 0
                && u64::from(self.channels) * u64::from(self.dies_per_channel) <= 1 << 16,
            &format!("{k}: channels and dies_per_channel must be at least 1, with at most 65536 dies in all"),
        )?;
        require(
            [self.read_us, self.program_us, self.erase_us]
                .into_iter()
                .all(non_negative),
            &format!("{k}: read_us, program_us and erase_us must be finite and not negative"),
        )?;
        require(
            non_negative(self.bus_mb_per_s),
            &format!(
                "{k}: bus_mb_per_s must be finite and not negative (0 = included in the op times)"
            ),
        )?;
        require(
            [self.read_uj, self.program_uj, self.erase_uj]
                .into_iter()
                .all(non_negative),
            &format!("{k}: read_uj, program_uj and erase_uj must be finite and not negative"),
        )?;
        let units = self.channels as usize * self.dies_per_channel as usize;
        let mut a = NandArray {
            channels: self.channels as usize,
            unit_free: vec![0; units],
            chans: (0..self.channels).map(|_| Timeline::default()).collect(),
            page_size: self.page_size,
            read_ns: us(self.read_us),
            program_ns: us(self.program_us),
            erase_ns: us(self.erase_us),
            bus_mb_per_s: self.bus_mb_per_s,
            page_xfer_ns: 0,
            read_nj: nj(self.read_uj),
            program_nj: nj(self.program_uj),
            erase_nj: nj(self.erase_uj),
        };
        a.page_xfer_ns = a.xfer(self.page_size);
        Ok(a)
    }
}

/// What an operation has cost so far: the span it kept resources busy and
/// the NAND energy it used.
pub(crate) struct Cost {
    start: Nanos,
    end: Nanos,
    energy_nj: u64,
}

impl Cost {
    pub fn new(at: Nanos) -> Self {
        Cost {
            start: Nanos::MAX,
            end: at,
            energy_nj: 0,
        }
    }

    /// Records that a resource worked on the operation from `s` to `e`.
    pub fn busy(&mut self, s: Nanos, e: Nanos) {
        debug_assert!(s <= e, "busy from {s} to {e}: ends before it starts");
        self.start = self.start.min(s);
        self.end = self.end.max(e);
    }

    pub fn end(&self) -> Nanos {
        self.end
    }

    pub fn completion(self) -> Completion {
        debug_assert!(self.start == Nanos::MAX || self.start <= self.end);
        Completion {
            start: self.start.min(self.end),
            end: self.end,
            energy_nj: self.energy_nj,
        }
    }
}

impl NandArray {
    pub fn units(&self) -> usize {
        self.unit_free.len()
    }

    /// Called with the issue time of each command (issue times do not go back).
    pub fn forget_before(&mut self, t: Nanos) {
        for c in &mut self.chans {
            c.forget_before(t);
        }
    }

    fn xfer(&self, bytes: u64) -> Nanos {
        if self.bus_mb_per_s == 0.0 {
            0
        } else if bytes == self.page_size && self.page_xfer_ns != 0 {
            self.page_xfer_ns
        } else {
            transfer_ns(bytes, self.bus_mb_per_s)
        }
    }

    /// Reads a page on `unit` no earlier than `t` and moves `bytes` of it
    /// over the channel; returns when they are out.
    pub fn read(
        &mut self,
        unit: usize,
        t: Nanos,
        bytes: u64,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        debug_assert!(
            bytes > 0 && bytes <= self.page_size,
            "a read moves part of one page"
        );
        let c = unit % self.channels;
        let s = t.max(self.unit_free[unit]);
        let dur = self.xfer(bytes);
        let e = self.chans[c].book(s + self.read_ns, dur) + dur;
        debug_assert!(e >= s + self.read_ns);
        self.unit_free[unit] = e;
        st.nand_page_reads += 1;
        cost.energy_nj += self.read_nj;
        cost.busy(s, e);
        e
    }

    /// Moves `bytes` over the channel to `unit` once they are available at
    /// `t`, then programs the page; returns when the program is done.
    pub fn program(
        &mut self,
        unit: usize,
        t: Nanos,
        bytes: u64,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        debug_assert!(
            bytes > 0 && bytes <= self.page_size,
            "a program writes part of one page"
        );
        let c = unit % self.channels;
        let dur = self.xfer(bytes);
        let s = self.chans[c].book(t.max(self.unit_free[unit]), dur);
        debug_assert!(s >= t, "a program starts once its data is there");
        let e = s + dur + self.program_ns;
        self.unit_free[unit] = e;
        st.nand_page_programs += 1;
        st.nand_program_bytes += bytes;
        cost.energy_nj += self.program_nj;
        cost.busy(s, e);
        e
    }

    /// Copies a page within `unit` (copy-back: read then program, no bus).
    pub fn copy(&mut self, unit: usize, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Nanos {
        debug_assert!(unit < self.units(), "die {unit} of {}", self.units());
        let s = t.max(self.unit_free[unit]);
        let e = s + self.read_ns + self.program_ns;
        self.unit_free[unit] = e;
        st.nand_page_reads += 1;
        st.nand_page_programs += 1;
        st.nand_program_bytes += self.page_size;
        cost.energy_nj += self.read_nj + self.program_nj;
        cost.busy(s, e);
        e
    }

    /// Erases a block on `unit` (counted by the caller, which knows the block).
    pub fn erase(&mut self, unit: usize, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Nanos {
        debug_assert!(unit < self.units(), "die {unit} of {}", self.units());
        let s = t.max(self.unit_free[unit]);
        let e = s + self.erase_ns;
        self.unit_free[unit] = e;
        st.block_erases += 1;
        cost.energy_nj += self.erase_nj;
        cost.busy(s, e);
        e
    }
}

/// Sizes the per-block erase counters; the stats start empty and only a
/// model knows how many blocks it has.
pub(crate) fn size_erase_counts(st: &mut DeviceStats, blocks: usize) {
    st.erase_counts.set_units(blocks as u64);
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

/// The pieces `[offset, offset+len)` falls into, one per page of
/// `page_size` bytes: `(piece offset, piece length)`.
pub(crate) fn page_pieces(
    offset: u64,
    len: u64,
    page_size: u64,
) -> impl Iterator<Item = (u64, u64)> {
    assert!(page_size > 0, "pages have a size");
    let end = offset + len;
    let mut pos = offset;
    std::iter::from_fn(move || {
        (pos < end).then(|| {
            let n = ((pos / page_size + 1) * page_size).min(end) - pos;
            debug_assert!(n > 0 && n <= page_size);
            let piece = (pos, n);
            pos += n;
            piece
        })
    })
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
