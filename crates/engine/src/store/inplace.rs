//! In-place page store: page `i` lives at `start + i * page_size` and is
//! rewritten there whole. On a program-once device a page already written is
//! updated by reading its erase unit, erasing it and writing it back
//! (seed 001, §4: "32 write-, 32 read- and one erase operation"). This is
//! `flashkv_device::update_in_place` done page by page, leaving empty pages
//! unprogrammed.
//!
//! Erasing a unit destroys its other pages until the rewrite lands, so with
//! a write-ahead log the new unit image is first written to one of two
//! scratch units at the end of the region and a record naming it is logged
//! (durably); recovery rewrites units whose image is still in its scratch
//! unit. Scratch I/O is counted in the meta region, apart from the pages.
//!
//! A write the device lost or sent elsewhere leaves the page's previous
//! image in place, valid by its own checks. The store remembers the
//! checksum of every image it wrote since open ([`Sealed`]): a page read
//! back with another one is [`crate::Error::Corrupt`]. Across a reopen the
//! log rebuilds the pages written since the last checkpoint; the pages a
//! checkpoint covers are read back before it is written (on devices other
//! than raw NAND, where a lost write leaves the page erased, which fails
//! its checksum anyway). That I/O is counted in the meta region too.

use std::collections::BTreeMap;

use super::sealed::{Sealed, READS};
use super::{PageStore, StoreStats};
use crate::buffer::Frame;
use crate::error::{bad_page, corrupt, Location, Result, Structure};
use crate::io::{Disk, ReadAt, Region};
use crate::le::{u32_at, u64_at};
use crate::options::StoreKind;
use crate::page::{Page, PageId};

/// Write-ahead log record kind of a unit rewrite staged in a scratch unit.
pub(crate) const UNIT_RECORD: u8 = 3;
/// Largest read of consecutive pages when reading pages back.
const VERIFY_BYTES: usize = 1 << 20;

pub(crate) struct InPlace {
    start: u64,
    /// Bytes of the region pages may use (less than `region` while the
    /// log lies at its top).
    len: u64,
    region: u64,
    page_size: usize,
    unit: u64,
    /// Offsets of the two scratch units (program-once devices only).
    scratch: Option<[u64; 2]>,
    next_scratch: usize,
    /// Largest write of consecutive new pages (at least one page).
    write_size: u64,
    /// Checksums of the images written since open.
    sealed: Sealed,
    stats: StoreStats,
}

impl InPlace {
    /// A store over `[start, start+len)`; on program-once devices the last
    /// two erase units of `unit` bytes are scratch.
    pub fn new(start: u64, len: u64, page_size: usize, unit: u64, program_once: bool) -> InPlace {
        assert!(
            page_size > 0 && unit >= page_size as u64,
            "a unit holds a page"
        );
        let (len, scratch) = if program_once && len >= 3 * unit {
            let s = start + len - 2 * unit;
            (len - 2 * unit, Some([s, s + unit]))
        } else {
            (len, None)
        };
        InPlace {
            start,
            len,
            region: len,
            page_size,
            unit,
            scratch,
            next_scratch: 0,
            write_size: page_size as u64,
            sealed: Sealed::default(),
            stats: StoreStats::default(),
        }
    }

    fn offset(&self, id: PageId) -> u64 {
        debug_assert!(id < self.max_pages(), "page {id} lies in the region");
        self.start + id * self.page_size as u64
    }

    /// The conventional in-place update on a program-once device: read the
    /// unit's written pages, erase the unit, write them back with the new
    /// ones (`pages`: offset and image, all in the unit at `base`). Page by
    /// page, as seed 001 counts it, and empty pages stay empty (so later new
    /// pages there need no erase). Pages of one unit written together share
    /// one rewrite, which is what grouping policies (FAB, CFDC) count on.
    /// With a log, the new unit image is first staged in a scratch unit.
    fn rewrite(&mut self, disk: &mut Disk, base: u64, pages: &[(u64, &[u8])]) -> Result<()> {
        let ps = self.page_size as u64;
        assert_eq!(
            (base - self.start) % self.unit,
            0,
            "a rewrite is of a whole unit"
        );
        assert!(
            pages
                .iter()
                .all(|(off, img)| *off >= base && off + img.len() as u64 <= base + self.unit),
            "every page rewritten lies in the unit at {base}"
        );
        let mut unit = vec![0u8; self.unit as usize];
        for (i, page) in unit.chunks_mut(self.page_size).enumerate() {
            let at = base + i as u64 * ps;
            if let Some((_, img)) = pages.iter().find(|(off, _)| *off == at) {
                page.copy_from_slice(img);
            } else if disk.programmed(at, ps) {
                disk.read(Region::Data, at, page)?;
            }
        }
        if let Some(scratch) = self.scratch.filter(|_| disk.journal.is_some()) {
            let s = scratch[self.next_scratch];
            self.next_scratch ^= 1;
            if disk.programmed(s, self.unit) {
                disk.erase(Region::Meta, s, self.unit)?;
            }
            disk.write(Region::Meta, s, &unit)?;
            let mut rec = Vec::with_capacity(20);
            rec.extend_from_slice(&base.to_le_bytes());
            rec.extend_from_slice(&s.to_le_bytes());
            rec.extend_from_slice(&crc32c::crc32c(&unit).to_le_bytes());
            disk.journal(UNIT_RECORD, &rec)?;
        }
        disk.erase(Region::Data, base, self.unit)?;
        self.write_live(disk, base, &unit)?;
        disk.data.unit_rewrites += 1;
        self.stats.erases += 1;
        self.stats.unit_rewrites += 1;
        Ok(())
    }
}

impl InPlace {
    /// Writes new pages, consecutive ones together in requests of at most
    /// `write_size` bytes.
    fn write_runs(&mut self, disk: &mut Disk, pages: &mut [(u64, &[u8])]) -> Result<()> {
        super::write_runs(pages, self.write_size, |at, run| {
            disk.write(Region::Data, at, run)?;
            self.remember(at, run);
            Ok(())
        })
    }

    /// Writes the pages of a unit image that hold anything.
    fn write_live(&mut self, disk: &mut Disk, base: u64, unit: &[u8]) -> Result<()> {
        for (i, page) in unit.chunks(self.page_size).enumerate() {
            if page.iter().any(|&b| b != 0) {
                let at = base + (i * self.page_size) as u64;
                disk.write(Region::Data, at, page)?;
                self.remember(at, page);
            }
        }
        Ok(())
    }

    /// The pages of `images`, written at `at`, were written.
    fn remember(&mut self, at: u64, images: &[u8]) {
        let ps = self.page_size;
        debug_assert!(
            (at - self.start) % ps as u64 == 0 && images.len() % ps == 0,
            "whole pages written at {at}"
        );
        let first = (at - self.start) / ps as u64;
        for (id, img) in (first..).zip(images.chunks(ps)) {
            self.sealed.wrote(id, u32_at(img, 0));
        }
    }
}

impl PageStore for InPlace {
    fn kind(&self) -> StoreKind {
        StoreKind::InPlace
    }
    fn page_size(&self) -> usize {
        self.page_size
    }
    fn max_pages(&self) -> u64 {
        self.len / self.page_size as u64
    }
    fn unit_of(&self, id: PageId) -> u64 {
        (self.offset(id) - self.start) / self.unit
    }
    fn extent(&self, next_page: PageId) -> u64 {
        match next_page {
            0 => 0,
            n => self.offset(n),
        }
    }
    fn used(&self, next_page: PageId) -> u64 {
        self.start + next_page * self.page_size as u64
    }
    fn unit_pages(&self, unit: u64) -> std::ops::Range<PageId> {
        // The pages whose first byte lies in the unit.
        let ps = self.page_size as u64;
        (unit * self.unit).div_ceil(ps)..((unit + 1) * self.unit).div_ceil(ps)
    }
    fn log_capacity(&self) -> usize {
        0
    }
    fn overwrites(&self) -> bool {
        true
    }
    fn journals_writes(&self) -> bool {
        self.scratch.is_some()
    }

    fn read(&mut self, disk: &mut Disk, id: PageId) -> Result<Page> {
        debug_assert!(id < self.max_pages(), "page {id} lies in the region");
        let buf = Page::filled(self.page_size, |b| {
            disk.read(Region::Data, self.offset(id), b)
        })?;
        self.stats.page_reads += 1;
        let page = Page::from_bytes(buf, id)?;
        if !self.sealed.as_written(id, page.bytes()) {
            return Err(bad_page(
                id,
                "an older image than the one last written: a write was lost or went astray",
            ));
        }
        Ok(page)
    }

    fn read_shared(&self, read: &ReadAt, id: PageId) -> Option<Page> {
        if id >= self.max_pages() {
            return None;
        }
        let buf = Page::filled(self.page_size, |b| read(self.offset(id), b)).ok()?;
        let page = Page::from_bytes(buf, id).ok()?;
        self.sealed.as_written(id, page.bytes()).then_some(page)
    }

    fn note_shared_reads(&mut self, n: u64) {
        self.stats.page_reads += n;
    }

    fn run_pages(&self, bytes: u64) -> u64 {
        (bytes / self.page_size as u64).max(1)
    }

    fn read_run(&mut self, disk: &mut Disk, first: PageId, n: u64) -> Result<Vec<Page>> {
        let n = n.min(self.max_pages().saturating_sub(first));
        debug_assert!(n > 0, "a run holds a page of the region");
        let mut buf = vec![0u8; n as usize * self.page_size];
        disk.read(Region::Data, self.offset(first), &mut buf)?;
        self.stats.run_reads += 1;
        let pages: Vec<Page> = buf
            .chunks(self.page_size)
            .zip(first..)
            .filter(|(b, id)| self.sealed.as_written(*id, b))
            .filter_map(|(b, id)| Page::from_bytes(b.into(), id).ok())
            .collect();
        self.stats.run_pages += pages.len() as u64;
        Ok(pages)
    }

    fn set_write_size(&mut self, bytes: u64) {
        self.write_size = bytes.max(self.page_size as u64);
    }

    fn needs_merge(&self, disk: &Disk, id: PageId, _: &Frame) -> bool {
        disk.programmed(self.offset(id), self.page_size as u64)
    }

    fn write(&mut self, disk: &mut Disk, frames: &mut [(PageId, Frame)]) -> Result<()> {
        for (id, f) in frames.iter_mut() {
            debug_assert!(f.dirty, "page {id}: only changed pages are written");
            f.page.seal();
        }
        // The sealed images are written from the frames, not copied.
        let mut units: BTreeMap<u64, Vec<(u64, &[u8])>> = BTreeMap::new();
        for (id, f) in frames.iter() {
            let off = self.offset(*id);
            units
                .entry(off - off % self.unit)
                .or_default()
                .push((off, f.page.bytes()));
        }
        for (base, mut pages) in units {
            self.stats.page_writes += pages.len() as u64;
            if pages
                .iter()
                .any(|(off, img)| disk.programmed(*off, img.len() as u64))
            {
                self.rewrite(disk, base, &pages)?;
            } else {
                self.write_runs(disk, &mut pages)?;
            }
        }
        for (_, f) in frames.iter_mut() {
            f.clean();
        }
        Ok(())
    }

    /// Reads back the pages written since the last checkpoint, runs of
    /// consecutive pages together, except on raw NAND, where a lost write
    /// leaves an erased page that fails its checksum.
    fn verify(&mut self, disk: &mut Disk) -> Result<()> {
        let ids = self.sealed.take_unverified();
        if disk.geo.program_once {
            return Ok(());
        }
        let (ps, per) = (self.page_size, (VERIFY_BYTES / self.page_size).max(1));
        let mut buf = Vec::new();
        for run in ids.chunk_by(|a, b| *b == a + 1) {
            for part in run.chunks(per) {
                buf.resize(part.len() * ps, 0);
                disk.read(Region::Meta, self.offset(part[0]), &mut buf)?;
                for (&id, img) in part.iter().zip(buf.chunks(ps)) {
                    if !self.sealed.reads_back(id, img) {
                        // Read again, as often as a run's read makes READS.
                        let page = (id, self.offset(id), ps);
                        self.sealed.read_back(disk, page, READS - 1)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn write_fresh(&mut self, disk: &mut Disk, pages: &[(PageId, &[u8])]) -> Result<bool> {
        if self.scratch.is_some() || disk.geo.program_once {
            return Ok(false);
        }
        let mut runs: Vec<(u64, &[u8])> = pages
            .iter()
            .map(|&(id, img)| {
                assert_eq!(img.len(), self.page_size, "page {id}: a whole page");
                (self.offset(id), img)
            })
            .collect();
        // In requests of up to the write size, as every write back.
        self.write_runs(disk, &mut runs)?;
        self.stats.page_writes += pages.len() as u64;
        Ok(true)
    }

    fn set_ceiling(&mut self, bytes: u64, next_page: PageId) -> Result<()> {
        let len = bytes.min(self.region);
        if self.start + len < self.used(next_page) {
            return Err(crate::Error::Full("page store (the log lies above it)"));
        }
        self.len = len;
        Ok(())
    }

    fn encode_state(&self, _: &mut Vec<u8>) {}

    fn replay(&mut self, disk: &mut Disk, seq: u64, kind: u8, b: &[u8]) -> Result<()> {
        let bad = |why| corrupt(Structure::LogRecord, Location::Record(seq), why);
        if kind != UNIT_RECORD || b.len() != 20 {
            return Err(bad("not a record of the in-place store"));
        }
        let base = u64_at(b, 0);
        let s = u64_at(b, 8);
        let crc = u32_at(b, 16);
        if !self.scratch.is_some_and(|sc| sc.contains(&s))
            || base % self.unit != 0
            || base < self.start
            || base + self.unit > self.start + self.len
        {
            return Err(bad("a unit rewrite out of range"));
        }
        let mut unit = vec![0u8; self.unit as usize];
        disk.read(Region::Meta, s, &mut unit)?;
        if crc32c::crc32c(&unit) != crc {
            // The scratch unit was reused: this rewrite had completed.
            return Ok(());
        }
        if disk.programmed(base, self.unit) {
            disk.erase(Region::Data, base, self.unit)?;
        }
        self.write_live(disk, base, &unit)
    }
    fn stats(&self) -> StoreStats {
        self.stats
    }
}
