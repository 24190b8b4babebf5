//! In-place page store: page `i` lives at `start + i * page_size` and is
//! rewritten there whole. On a program-once device a page already written is
//! updated by reading its erase unit, erasing it and writing it back
//! (seed 001, §4: "32 write-, 32 read- and one erase operation").

use super::{PageStore, StoreStats};
use crate::buffer::Frame;
use crate::error::Result;
use crate::io::{Disk, Region};
use crate::options::StoreKind;
use crate::page::{Page, PageId};

pub(crate) struct InPlace {
    start: u64,
    len: u64,
    page_size: usize,
    unit: u64,
    stats: StoreStats,
}

impl InPlace {
    pub fn new(start: u64, len: u64, page_size: usize, unit: u64) -> InPlace {
        InPlace {
            start,
            len,
            page_size,
            unit,
            stats: StoreStats::default(),
        }
    }
    fn offset(&self, id: PageId) -> u64 {
        self.start + id * self.page_size as u64
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
    fn log_capacity(&self) -> usize {
        0
    }

    fn read(&mut self, disk: &mut Disk, id: PageId) -> Result<Page> {
        let mut buf = vec![0u8; self.page_size].into_boxed_slice();
        disk.read(Region::Data, self.offset(id), &mut buf)?;
        self.stats.page_reads += 1;
        Page::from_bytes(buf, id)
    }

    fn needs_merge(&self, disk: &Disk, id: PageId, _: &Frame) -> bool {
        disk.programmed(self.offset(id), self.page_size as u64)
    }

    fn write(&mut self, disk: &mut Disk, frames: &mut [(PageId, Frame)]) -> Result<()> {
        for (id, f) in frames.iter_mut() {
            let off = self.offset(*id);
            let img = f.page.seal();
            if disk.programmed(off, img.len() as u64) {
                let before = disk.data.erases;
                disk.rewrite_in_place(Region::Data, off, img)?;
                self.stats.unit_rewrites += 1;
                self.stats.erases += disk.data.erases - before;
            } else {
                disk.write(Region::Data, off, img)?;
            }
            self.stats.page_writes += 1;
            f.clean();
        }
        Ok(())
    }

    fn encode_state(&self, _: &mut Vec<u8>) {}
    fn stats(&self) -> StoreStats {
        self.stats
    }
}
