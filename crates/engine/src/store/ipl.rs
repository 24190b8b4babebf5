//! In-page logging (seed 001 §4–5, after Lee & Moon, SIGMOD 2007).
//!
//! The region is cut into erase units of `pages_per_unit` data pages followed
//! by `log_sectors` 512-byte log sectors. Logical unit `l` holds pages
//! `l*ppu .. (l+1)*ppu`; an erase-unit map gives the physical unit it lives
//! in now. Evicting a page whose flash copy plus its new log records is
//! current writes one log sector; reading a page applies its log sectors in
//! order; a page that must be written whole ("bomb") or has no free log
//! sector left makes the unit merge out of place (Algorithm 1): every page is
//! merged with its log and written to a fresh unit, the map switches (logged
//! in the write-ahead log and made durable first), then the old unit is erased.
//!
//! Log sector: crc32c of bytes 4.., version, kind, record count, unit
//! generation, page slot, record bytes, records ([`Op`] encoding). A sector
//! whose generation is not its unit's belongs to an earlier use of the unit.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{PageStore, StoreStats};
use crate::buffer::Frame;
use crate::error::{bad_page, corrupt, invalid, Error, Location, Result, Structure};
use crate::io::{Disk, Region};
use crate::le::{u16_at, u32_at, u64_at};
use crate::options::{IplGeometry, StoreKind, LOG_SECTOR};
use crate::page::{Op, Page, PageId};

const LOG_VERSION: u8 = 1;
const LOG_KIND: u8 = 0xA5;
const LOG_HDR: usize = 20;
/// Write-ahead log record kind of an erase-unit map switch.
pub(crate) const SWITCH_RECORD: u8 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Unit {
    phys: u64,
    gen: u64,
    /// Bit `s`: page slot `s` holds a page.
    written: u64,
    /// Per log sector: 0 free, else 1 + the slot of the page it logs.
    owners: Vec<u8>,
}

pub(crate) struct Ipl {
    g: IplGeometry,
    ps: usize,
    ppu: u64,
    start: u64,
    unit_size: u64,
    phys_units: u64,
    /// Units of the whole region (`phys_units` is fewer while the log lies
    /// at its top).
    region_units: u64,
    map: Vec<Option<Unit>>,
    /// Physical units given back by merges; every unit at or above
    /// `fresh` has never been used. The lowest free unit is taken first.
    free: BTreeSet<u64>,
    fresh: u64,
    next_gen: u64,
    /// Merges whose map switch is not logged yet: the switch record, and
    /// the unit it retires (kept, neither mapped nor free, until then).
    unlogged: Vec<(Vec<u8>, u64)>,
    /// Units retired by switches logged as record count `.0`, erased and
    /// freed once that record is durable.
    retiring: Vec<(u64, u64)>,
    stats: StoreStats,
}

impl Ipl {
    /// A store over `[start, start+len)`, restoring `state` from a checkpoint
    /// (empty for a new store).
    pub fn new(g: IplGeometry, start: u64, len: u64, state: &[u8]) -> Result<Ipl> {
        if let Some(why) = g.problem() {
            return Err(invalid("store", why));
        }
        let unit_size = g.unit_size();
        let mut s = Ipl {
            g,
            ps: g.page_size as usize,
            ppu: u64::from(g.pages_per_unit),
            start,
            unit_size,
            phys_units: len / unit_size,
            region_units: len / unit_size,
            map: Vec::new(),
            free: BTreeSet::new(),
            fresh: 0,
            next_gen: 1,
            unlogged: Vec::new(),
            retiring: Vec::new(),
            stats: StoreStats::default(),
        };
        if s.phys_units < 2 {
            return Err(invalid(
                "max_size",
                "the in-page-logging region is smaller than two erase units",
            ));
        }
        s.decode_state(state)?;
        Ok(s)
    }

    fn decode_state(&mut self, b: &[u8]) -> Result<()> {
        let nlog = self.g.log_sectors as usize;
        let bad = |at: usize| corrupt(Structure::UnitMap, Location::Unit(at as u64), "malformed");
        if b.is_empty() {
            return Ok(());
        }
        if b.len() < 16 {
            return Err(bad(0));
        }
        self.next_gen = u64_at(b, 0);
        let n = u64_at(b, 8);
        let mut pos = 16;
        let mut used = BTreeSet::new();
        for _ in 0..n {
            let present = *b.get(pos).ok_or_else(|| bad(self.map.len()))?;
            pos += 1;
            if present == 0 {
                self.map.push(None);
                continue;
            }
            if b.len() < pos + 24 + nlog {
                return Err(bad(self.map.len()));
            }
            let u = Unit {
                phys: u64_at(b, pos),
                gen: u64_at(b, pos + 8),
                written: u64_at(b, pos + 16),
                owners: b[pos + 24..pos + 24 + nlog].to_vec(),
            };
            pos += 24 + nlog;
            if u.phys >= self.phys_units
                || !used.insert(u.phys)
                || u.gen >= self.next_gen
                || u.written.checked_shr(self.ppu as u32).unwrap_or(0) != 0
                || u.owners.iter().any(|&o| u64::from(o) > self.ppu)
            {
                return Err(bad(self.map.len()));
            }
            self.map.push(Some(u));
        }
        if pos != b.len() || self.map.len() as u64 > self.phys_units {
            return Err(bad(self.map.len()));
        }
        self.fresh = used.last().map_or(0, |u| u + 1);
        self.free = (0..self.fresh).filter(|p| !used.contains(p)).collect();
        if !self.consistent() {
            return Err(bad(self.map.len()));
        }
        Ok(())
    }

    /// Whether the erase-unit map holds together: every mapped unit a
    /// distinct physical unit below `fresh` that is not free, of an issued
    /// generation, its bits and log sectors naming pages of the unit that
    /// were written; the free units and the mapped ones together exactly
    /// the units below `fresh`.
    fn consistent(&self) -> bool {
        let mut seen = BTreeSet::new();
        let units_ok = self.map.iter().flatten().all(|u| {
            let slots = u.written.checked_shr(self.ppu as u32).unwrap_or(0) == 0;
            let owners = u
                .owners
                .iter()
                .all(|&o| o == 0 || u64::from(o) <= self.ppu && u.written & (1 << (o - 1)) != 0);
            u.phys < self.fresh
                && seen.insert(u.phys)
                && !self.free.contains(&u.phys)
                && u.gen < self.next_gen
                && slots
                && owners
                && u.owners.len() == self.g.log_sectors as usize
        });
        let free_ok = self.free.iter().all(|&p| p < self.fresh);
        let retired = self.unlogged.iter().map(|(_, p)| *p);
        let retired_ok = retired
            .chain(self.retiring.iter().map(|(_, p)| *p))
            .all(|p| p < self.fresh && !self.free.contains(&p) && seen.insert(p));
        units_ok
            && free_ok
            && retired_ok
            && seen.len() + self.free.len() == self.fresh as usize
            && self.fresh <= self.phys_units
    }

    /// Replays map switch record `seq`.
    fn replay_switch_record(&mut self, b: &[u8], seq: u64) -> Result<()> {
        let bad = |why| corrupt(Structure::LogRecord, Location::Record(seq), why);
        if b.len() != 32 {
            return Err(bad("a map switch of the wrong length"));
        }
        let (l, phys, gen, written) = (u64_at(b, 0), u64_at(b, 8), u64_at(b, 16), u64_at(b, 24));
        if l >= self.phys_units || phys >= self.phys_units {
            return Err(bad("a map switch out of range"));
        }
        if self.map.len() <= l as usize {
            self.map.resize(l as usize + 1, None);
        }
        let unit = Unit {
            phys,
            gen,
            written,
            owners: vec![0; self.g.log_sectors as usize],
        };
        if let Some(old) = self.map[l as usize].replace(unit) {
            self.free.insert(old.phys);
        }
        self.take(phys);
        self.next_gen = self.next_gen.max(gen + 1);
        if !self.consistent() {
            return Err(bad("a map switch that breaks the map"));
        }
        Ok(())
    }

    fn unit_off(&self, phys: u64) -> u64 {
        debug_assert!(phys < self.phys_units, "unit {phys} of {}", self.phys_units);
        self.start + phys * self.unit_size
    }
    fn page_off(&self, phys: u64, slot: u64) -> u64 {
        self.unit_off(phys) + slot * self.ps as u64
    }
    fn log_off(&self, phys: u64, sector: usize) -> u64 {
        debug_assert!(
            sector < self.g.log_sectors as usize,
            "log sector {sector} of the unit"
        );
        self.unit_off(phys) + self.ppu * self.ps as u64 + sector as u64 * u64::from(LOG_SECTOR)
    }
    fn split(&self, id: PageId) -> (usize, u64) {
        ((id / self.ppu) as usize, id % self.ppu)
    }
    fn unit(&self, l: usize) -> Option<&Unit> {
        self.map.get(l).and_then(Option::as_ref)
    }

    /// Log sectors page `slot` may use, in order.
    fn sectors_of(&self, slot: u64) -> std::ops::Range<usize> {
        match self.g.sectors_per_page {
            Some(k) => (slot as usize * k as usize)..((slot as usize + 1) * k as usize),
            None => 0..self.g.log_sectors as usize,
        }
    }

    fn free_sector(&self, disk: &Disk, u: &Unit, slot: u64) -> Option<usize> {
        debug_assert!(u.written & (1 << slot) != 0, "only a written page logs");
        self.sectors_of(slot).find(|&i| {
            u.owners[i] == 0 && !disk.programmed(self.log_off(u.phys, i), u64::from(LOG_SECTOR))
        })
    }

    /// Reads page `slot` of `u` and applies its log sectors.
    fn read_merged(&mut self, disk: &mut Disk, u: &Unit, id: PageId, slot: u64) -> Result<Page> {
        debug_assert!(
            slot < self.ppu && id % self.ppu == slot,
            "page {id} is slot {slot}"
        );
        if u.written & (1 << slot) == 0 {
            return Err(bad_page(id, "never written, yet reached"));
        }
        let buf = Page::filled(self.ps, |b| {
            disk.read(Region::Data, self.page_off(u.phys, slot), b)
        })?;
        self.stats.page_reads += 1;
        let mut logs = Vec::new();
        for i in self.owned_sectors(u, slot) {
            let mut sec = vec![0u8; LOG_SECTOR as usize];
            disk.read(Region::Data, self.log_off(u.phys, i), &mut sec)?;
            self.stats.log_reads += 1;
            logs.push(sec);
        }
        self.decode(u, id, slot, buf, logs.iter().map(Vec::as_slice))
    }

    /// Log sectors holding records of page `slot`, in the order they were written.
    fn owned_sectors(&self, u: &Unit, slot: u64) -> Vec<usize> {
        (0..u.owners.len())
            .filter(|&i| u64::from(u.owners[i]) == slot + 1)
            .collect()
    }

    /// Page `id` from its flash image and its log sectors, in order.
    fn decode<'b>(
        &mut self,
        u: &Unit,
        id: PageId,
        slot: u64,
        image: Arc<[u8]>,
        logs: impl Iterator<Item = &'b [u8]>,
    ) -> Result<Page> {
        let mut page = Page::from_bytes(image, id)?;
        if page.gen() != u.gen {
            return Err(bad_page(id, "a stale copy from an earlier use of its unit"));
        }
        for sec in logs {
            let ops = parse_log_sector(sec, u.gen, slot, id)?;
            for op in &ops {
                page.apply(op)?;
            }
            self.stats.records_applied += ops.len() as u64;
        }
        Ok(page)
    }

    /// Pages of logical unit `l` decoded from `bytes`, the whole physical unit.
    fn decode_unit(&mut self, l: usize, u: &Unit, bytes: &[u8]) -> Vec<Page> {
        let log_base = self.ppu as usize * self.ps;
        let log_at = |i: usize| {
            let o = log_base + i * LOG_SECTOR as usize;
            &bytes[o..o + LOG_SECTOR as usize]
        };
        let mut pages = Vec::new();
        for slot in (0..self.ppu).filter(|s| u.written & (1 << s) != 0) {
            let at = slot as usize * self.ps;
            let image: Arc<[u8]> = bytes[at..at + self.ps].into();
            let logs: Vec<&[u8]> = self
                .owned_sectors(u, slot)
                .into_iter()
                .map(log_at)
                .collect();
            let id = l as u64 * self.ppu + slot;
            if let Ok(p) = self.decode(u, id, slot, image, logs.into_iter()) {
                pages.push(p);
            }
        }
        pages
    }

    /// Marks physical unit `phys` used.
    fn take(&mut self, phys: u64) {
        assert!(phys < self.phys_units, "unit {phys} of {}", self.phys_units);
        if phys >= self.fresh {
            self.free.extend(self.fresh..phys);
            self.fresh = phys + 1;
        } else {
            self.free.remove(&phys);
        }
        debug_assert!(
            !self.free.contains(&phys) && phys < self.fresh,
            "unit {phys} in use"
        );
    }

    fn alloc(&mut self, disk: &mut Disk) -> Result<u64> {
        if self.free.is_empty() && self.fresh >= self.phys_units {
            // Units wait for their switches to be durable: make them so.
            self.log_switches(disk)?;
            disk.flush()?;
            self.release(disk)?;
        }
        let phys = match self.free.first() {
            Some(&p) => p,
            None if self.fresh < self.phys_units => self.fresh,
            None => return Err(Error::Full("no free erase unit")),
        };
        self.take(phys);
        let off = self.unit_off(phys);
        if disk.programmed(off, self.unit_size) {
            // Left over from a merge a crash interrupted.
            disk.erase(Region::Data, off, self.unit_size)?;
            self.stats.erases += 1;
        }
        Ok(phys)
    }

    fn write_page(
        &mut self,
        disk: &mut Disk,
        phys: u64,
        gen: u64,
        slot: u64,
        page: &mut Page,
    ) -> Result<()> {
        assert!(slot < self.ppu, "slot {slot} of {}", self.ppu);
        assert_eq!(
            page.id() % self.ppu,
            slot,
            "page {} belongs in slot {slot}",
            page.id()
        );
        page.set_gen(gen);
        let off = self.page_off(phys, slot);
        disk.write(Region::Data, off, page.seal())?;
        self.stats.page_writes += 1;
        Ok(())
    }

    /// Algorithm 1: writes every page of logical unit `l`, merged with its
    /// log (or taken from `frames`), to a fresh unit, then retires the old one.
    fn merge(&mut self, disk: &mut Disk, l: usize, frames: &mut [(PageId, Frame)]) -> Result<()> {
        let old = self.unit(l).cloned().expect("merge of a mapped unit");
        let phys = self.alloc(disk)?;
        assert_ne!(phys, old.phys, "a merge moves the unit out of place");
        let gen = self.next_gen;
        self.next_gen += 1;
        let mut written = 0u64;
        for slot in 0..self.ppu {
            let id = l as u64 * self.ppu + slot;
            if let Some((_, f)) = frames.iter_mut().find(|(p, _)| *p == id) {
                self.write_page(disk, phys, gen, slot, &mut f.page)?;
            } else if old.written & (1 << slot) != 0 {
                let mut p = self.read_merged(disk, &old, id, slot)?;
                self.write_page(disk, phys, gen, slot, &mut p)?;
            } else {
                continue;
            }
            written |= 1 << slot;
        }
        self.map[l] = Some(Unit {
            phys,
            gen,
            written,
            owners: vec![0; self.g.log_sectors as usize],
        });
        let mut rec = Vec::with_capacity(32);
        for v in [l as u64, phys, gen, written] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        // The old unit may be erased only once the switch survives a crash:
        // it is logged with the next commit (or before the next checkpoint)
        // and erased once durable, so a batch's merges share its flushes.
        match disk.journal.is_some() {
            true => self.unlogged.push((rec, old.phys)),
            false => self.erase_unit(disk, old.phys)?,
        }
        self.stats.merges += 1;
        for (_, f) in frames.iter_mut() {
            f.clean();
        }
        debug_assert_eq!(
            written & old.written,
            old.written,
            "a merge keeps every page of unit {l}"
        );
        debug_assert!(self.consistent(), "the unit map after merging unit {l}");
        Ok(())
    }
}

impl Ipl {
    /// Erases a unit no map entry names any more and frees it.
    fn erase_unit(&mut self, disk: &mut Disk, phys: u64) -> Result<()> {
        disk.erase(Region::Data, self.unit_off(phys), self.unit_size)?;
        self.free.insert(phys);
        self.stats.erases += 1;
        Ok(())
    }

    /// Whether writing `frames` (all of logical unit `l`) needs a merge:
    /// one of them does on its own, or, where the unit's pages share their
    /// log sectors, more of them log than there are free sectors left.
    fn group_needs_merge(&self, disk: &Disk, l: usize, frames: &[(PageId, Frame)]) -> bool {
        if frames.iter().any(|(id, f)| self.needs_merge(disk, *id, f)) {
            return true;
        }
        let (Some(u), None) = (self.unit(l), self.g.sectors_per_page) else {
            return false;
        };
        let logging = frames
            .iter()
            .filter(|(id, _)| u.written & (1 << (id % self.ppu)) != 0)
            .count();
        let free = (0..u.owners.len())
            .filter(|&i| {
                u.owners[i] == 0 && !disk.programmed(self.log_off(u.phys, i), u64::from(LOG_SECTOR))
            })
            .count();
        logging > free
    }
}

/// Decodes a log sector of page `id`, slot `slot` in a unit of generation `gen`.
pub(crate) fn parse_log_sector(sec: &[u8], gen: u64, slot: u64, id: PageId) -> Result<Vec<Op>> {
    let bad = |why| corrupt(Structure::LogSector, Location::Page(id), why);
    if sec.len() < LOG_HDR {
        return Err(bad("shorter than its header"));
    }
    if u32_at(sec, 0) != crc32c::crc32c(&sec[4..]) {
        return Err(bad("checksum mismatch"));
    }
    if sec[5] != LOG_KIND {
        return Err(bad("not a log sector"));
    }
    if sec[4] != LOG_VERSION {
        return Err(Error::Version {
            what: "log sector",
            found: sec[4],
            expected: LOG_VERSION,
        });
    }
    let n = usize::from(u16_at(sec, 6));
    let len = usize::from(u16_at(sec, 18));
    if u64_at(sec, 8) != gen || u64::from(u16_at(sec, 16)) != slot {
        return Err(bad("it belongs to another page"));
    }
    if LOG_HDR + len > sec.len() {
        return Err(bad("length out of range"));
    }
    Op::decode_all(&sec[LOG_HDR..LOG_HDR + len], n).map_err(bad)
}

fn build_log_sector(gen: u64, slot: u64, f: &Frame) -> Vec<u8> {
    assert!(
        !f.log.is_empty() && f.log.len() <= LOG_SECTOR as usize - LOG_HDR,
        "page {}: a log of {} bytes fills one sector",
        f.page.id(),
        f.log.len()
    );
    let mut sec = vec![0u8; LOG_SECTOR as usize];
    sec[4] = LOG_VERSION;
    sec[5] = LOG_KIND;
    sec[6..8].copy_from_slice(&f.records.to_le_bytes());
    sec[8..16].copy_from_slice(&gen.to_le_bytes());
    sec[16..18].copy_from_slice(&(slot as u16).to_le_bytes());
    sec[18..20].copy_from_slice(&(f.log.len() as u16).to_le_bytes());
    sec[LOG_HDR..LOG_HDR + f.log.len()].copy_from_slice(&f.log);
    let c = crc32c::crc32c(&sec[4..]);
    sec[0..4].copy_from_slice(&c.to_le_bytes());
    debug_assert!(
        parse_log_sector(&sec, gen, slot, f.page.id())
            .is_ok_and(|ops| ops.len() == usize::from(f.records)),
        "a log sector reads back as its {} records",
        f.records
    );
    sec
}

impl PageStore for Ipl {
    fn kind(&self) -> StoreKind {
        StoreKind::InPageLogging(self.g)
    }
    fn page_size(&self) -> usize {
        self.ps
    }
    fn max_pages(&self) -> u64 {
        // One unit stays free for merges.
        (self.phys_units - 1) * self.ppu
    }
    fn unit_of(&self, id: PageId) -> u64 {
        id / self.ppu
    }
    fn extent(&self, _: PageId) -> u64 {
        // Into the last unit in use: at least its first sector was written.
        self.fresh
            .checked_sub(1)
            .map_or(0, |u| self.unit_off(u) + u64::from(LOG_SECTOR))
    }
    fn used(&self, _: PageId) -> u64 {
        // Units are taken lowest first; none at or above `fresh` holds data.
        self.start + self.fresh * self.unit_size
    }
    fn unit_pages(&self, unit: u64) -> std::ops::Range<PageId> {
        unit * self.ppu..(unit + 1) * self.ppu
    }
    fn log_capacity(&self) -> usize {
        LOG_SECTOR as usize - LOG_HDR
    }
    fn overwrites(&self) -> bool {
        // Pages are appended to (log sectors) or merged out of place.
        false
    }
    fn journals_writes(&self) -> bool {
        true
    }

    fn read(&mut self, disk: &mut Disk, id: PageId) -> Result<Page> {
        let (l, slot) = self.split(id);
        let u = self
            .unit(l)
            .cloned()
            .ok_or_else(|| bad_page(id, "its erase unit was never written"))?;
        self.read_merged(disk, &u, id, slot)
    }

    fn run_pages(&self, bytes: u64) -> u64 {
        // Whole erase units: a page's log sectors sit at the end of its unit.
        (bytes / self.unit_size).max(1) * self.ppu
    }

    fn read_run(&mut self, disk: &mut Disk, first: PageId, n: u64) -> Result<Vec<Page>> {
        let (lo, _) = self.split(first);
        let (hi, _) = self.split(first + n.max(1) - 1);
        let units: Vec<(usize, Unit)> = (lo..=hi)
            .filter_map(|l| self.unit(l).map(|u| (l, u.clone())))
            .collect();
        let mut pages = Vec::new();
        // Units consecutive on the device are read in one request.
        for group in units.chunk_by(|a, b| b.1.phys == a.1.phys + 1) {
            let mut buf = vec![0u8; group.len() * self.unit_size as usize];
            disk.read(Region::Data, self.unit_off(group[0].1.phys), &mut buf)?;
            self.stats.run_reads += 1;
            for ((l, u), bytes) in group.iter().zip(buf.chunks(self.unit_size as usize)) {
                pages.extend(self.decode_unit(*l, u, bytes));
            }
        }
        pages.retain(|p| (first..first + n).contains(&p.id()));
        debug_assert!(
            pages.windows(2).all(|w| w[0].id() != w[1].id()),
            "each page once"
        );
        self.stats.run_pages += pages.len() as u64;
        Ok(pages)
    }

    fn needs_merge(&self, disk: &Disk, id: PageId, f: &Frame) -> bool {
        let (l, slot) = self.split(id);
        let Some(u) = self.unit(l) else {
            return false;
        };
        if u.written & (1 << slot) == 0 {
            return disk.programmed(self.page_off(u.phys, slot), self.ps as u64);
        }
        f.bomb || f.log.is_empty() || self.free_sector(disk, u, slot).is_none()
    }

    /// Seed 001 §5.2.3: a merge swaps out the unit's buffered pages. Pages
    /// not on flash yet stay out: they are still being filled, and a later
    /// write of theirs into an empty slot needs no merge.
    fn joins_rewrite(&self, _: &Disk, id: PageId, _: &Frame) -> bool {
        let (l, slot) = self.split(id);
        self.unit(l).is_some_and(|u| u.written & (1 << slot) != 0)
    }

    fn write(&mut self, disk: &mut Disk, frames: &mut [(PageId, Frame)]) -> Result<()> {
        let Some(&(first, _)) = frames.first() else {
            return Ok(());
        };
        let (l, _) = self.split(first);
        if self.group_needs_merge(disk, l, frames) {
            return self.merge(disk, l, frames);
        }
        if self.unit(l).is_none() {
            let phys = self.alloc(disk)?;
            debug_assert!(
                self.map.iter().flatten().all(|u| u.phys != phys),
                "unit {phys} is free"
            );
            if self.map.len() <= l {
                self.map.resize(l + 1, None);
            }
            self.map[l] = Some(Unit {
                phys,
                gen: self.next_gen,
                written: 0,
                owners: vec![0; self.g.log_sectors as usize],
            });
            self.next_gen += 1;
        }
        for (id, f) in frames.iter_mut() {
            let slot = *id % self.ppu;
            assert_eq!(self.split(*id).0, l, "a write group is of one erase unit");
            let u = self.unit(l).cloned().expect("mapped");
            if u.written & (1 << slot) == 0 {
                self.write_page(disk, u.phys, u.gen, slot, &mut f.page)?;
                self.map[l].as_mut().expect("mapped").written |= 1 << slot;
            } else {
                let Some(i) = self.free_sector(disk, &u, slot) else {
                    unreachable!(
                        "group_needs_merge counted a free log sector for every logging page"
                    );
                };
                disk.write(
                    Region::Data,
                    self.log_off(u.phys, i),
                    &build_log_sector(u.gen, slot, f),
                )?;
                self.stats.log_writes += 1;
                self.map[l].as_mut().expect("mapped").owners[i] = slot as u8 + 1;
            }
            f.clean();
        }
        Ok(())
    }

    fn log_switches(&mut self, disk: &mut Disk) -> Result<()> {
        if self.unlogged.is_empty() {
            return Ok(());
        }
        // The new units' pages are durable before the records naming them.
        disk.flush()?;
        for (rec, old) in std::mem::take(&mut self.unlogged) {
            disk.append(SWITCH_RECORD, &rec)?;
            self.retiring.push((disk.logged, old));
        }
        Ok(())
    }

    fn release(&mut self, disk: &mut Disk) -> Result<()> {
        let ready: Vec<u64> = self
            .retiring
            .iter()
            .filter(|(lsn, _)| disk.is_durable(*lsn))
            .map(|(_, p)| *p)
            .collect();
        self.retiring.retain(|(lsn, _)| !disk.is_durable(*lsn));
        for p in ready {
            self.erase_unit(disk, p)?;
        }
        debug_assert!(self.consistent(), "the unit map after releasing units");
        Ok(())
    }

    fn set_ceiling(&mut self, bytes: u64, next_page: PageId) -> Result<()> {
        let units = (bytes / self.unit_size).min(self.region_units);
        if units < self.fresh.max(2) || (units - 1) * self.ppu < next_page {
            return Err(Error::Full("page store (the log lies above it)"));
        }
        self.phys_units = units;
        Ok(())
    }

    fn encode_state(&self, out: &mut Vec<u8>) {
        let from = out.len();
        out.extend_from_slice(&self.next_gen.to_le_bytes());
        out.extend_from_slice(&(self.map.len() as u64).to_le_bytes());
        for u in &self.map {
            match u {
                None => out.push(0),
                Some(u) => {
                    out.push(1);
                    for v in [u.phys, u.gen, u.written] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                    out.extend_from_slice(&u.owners);
                }
            }
        }
        debug_assert!(
            Ipl::new(
                self.g,
                self.start,
                self.phys_units * self.unit_size,
                &out[from..]
            )
            .is_ok_and(|back| back.map == self.map && back.next_gen == self.next_gen),
            "the erase-unit map decodes to itself"
        );
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }

    fn replay(&mut self, _: &mut Disk, seq: u64, kind: u8, b: &[u8]) -> Result<()> {
        if kind != SWITCH_RECORD {
            return Err(corrupt(
                Structure::LogRecord,
                Location::Record(seq),
                "not a record of the in-page-logging store",
            ));
        }
        self.replay_switch_record(b, seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn log_sector_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600), fix in any::<bool>()) {
            let mut b = bytes;
            if fix && b.len() >= LOG_HDR {
                b[4] = LOG_VERSION;
                b[5] = LOG_KIND;
                b[8..16].copy_from_slice(&9u64.to_le_bytes());
                b[16..18].copy_from_slice(&1u16.to_le_bytes());
                let c = crc32c::crc32c(&b[4..]);
                b[0..4].copy_from_slice(&c.to_le_bytes());
            }
            let _ = parse_log_sector(&b, 9, 1, 1);
        }

        #[test]
        fn state_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Ipl::new(IplGeometry::seed(), 0, 64 * IplGeometry::seed().unit_size(), &bytes);
        }
    }
}
