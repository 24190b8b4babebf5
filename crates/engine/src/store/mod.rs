//! Page stores: how pages reach the device.

mod inplace;
mod ipl;
mod placement;
mod sealed;
mod tiered;

pub(crate) use inplace::InPlace;
pub(crate) use ipl::Ipl;
pub(crate) use tiered::{Span, Tiered};

use crate::buffer::Frame;
use crate::error::Result;
use crate::io::{Disk, ReadAt};
use crate::options::StoreKind;
use crate::page::{Page, PageId};

/// Page-store counters (device operations are counted per region in [`crate::io::RegionStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreStats {
    /// Data pages read.
    pub page_reads: u64,
    /// Data pages written whole.
    pub page_writes: u64,
    /// In-page log sectors read while reading pages.
    pub log_reads: u64,
    /// In-page log sectors written on eviction.
    pub log_writes: u64,
    /// Log records applied to pages read from flash.
    pub records_applied: u64,
    /// Erase-unit merges (in-page logging, seed Algorithm 1).
    pub merges: u64,
    /// Erase units erased (or trimmed where the device has no erase units).
    pub erases: u64,
    /// Read-erase-rewrites of an erase unit by in-place updates on raw NAND.
    pub unit_rewrites: u64,
    /// Two-device store: pages read from the fast device (of `page_reads`).
    #[serde(skip_serializing_if = "is_zero")]
    pub fast_reads: u64,
    /// Two-device store: pages written to the fast device (of `page_writes`).
    #[serde(skip_serializing_if = "is_zero")]
    pub fast_writes: u64,
    /// Two-device store: pages moved to the fast device.
    #[serde(skip_serializing_if = "is_zero")]
    pub promotions: u64,
    /// Two-device store: pages moved off the fast device.
    #[serde(skip_serializing_if = "is_zero")]
    pub demotions: u64,
    /// Two-device store: pages the placement wanted on the fast device
    /// that found it full.
    #[serde(skip_serializing_if = "is_zero")]
    pub fast_full: u64,
    /// Two-device store: pages on the fast device now (not a counter).
    #[serde(skip_serializing_if = "is_zero")]
    pub fast_pages: u64,
    /// Large sequential reads of page runs by scans ([`crate::IoProfile`]).
    pub run_reads: u64,
    /// Pages decoded from those runs (not counted in `page_reads`).
    pub run_pages: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Writes `pages` (offset, image) with `write`, sorted by offset here
/// and consecutive images joined into requests of at most `max` bytes (a
/// longer image alone). One request's buffer at a time: a checkpoint or a
/// bulk load does not copy every page it writes.
pub(crate) fn write_runs(
    pages: &mut [(u64, &[u8])],
    max: u64,
    mut write: impl FnMut(u64, &[u8]) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    pages.sort_unstable_by_key(|(off, _)| *off);
    debug_assert!(
        pages
            .windows(2)
            .all(|w| w[0].0 + w[0].1.len() as u64 <= w[1].0),
        "pages apart"
    );
    let mut buf = Vec::new();
    let mut rest = &pages[..];
    while let Some(&(at, first)) = rest.first() {
        let (mut end, mut n) = (at + first.len() as u64, 1);
        while let Some(&(off, img)) = rest.get(n) {
            if off != end || end - at + img.len() as u64 > max {
                break;
            }
            end += img.len() as u64;
            n += 1;
        }
        let (run, tail) = rest.split_at(n);
        if let [(_, one)] = run {
            write(at, one)?;
        } else {
            buf.clear();
            run.iter().for_each(|(_, img)| buf.extend_from_slice(img));
            write(at, &buf)?;
        }
        rest = tail;
    }
    Ok(())
}

/// A page store: reads and writes pages of one size in its region of the device.
pub(crate) trait PageStore: Send + Sync {
    fn kind(&self) -> StoreKind;
    fn page_size(&self) -> usize;
    /// Pages the region can hold.
    fn max_pages(&self) -> u64;
    /// Erase unit of a page (for policies grouping writes by unit).
    fn unit_of(&self, id: PageId) -> u64;
    /// Bytes of the device (from 0) that hold pages once pages
    /// `0..next_page` have all been written: a file shorter than that was
    /// truncated.
    fn extent(&self, next_page: PageId) -> u64;
    /// Bytes of the device (from 0) through the last byte the store may
    /// hold data in, pages `0..next_page` allocated: where the region above
    /// it is free (for the log to move to, or to give back).
    fn used(&self, next_page: PageId) -> u64;
    /// The pages of erase unit `unit`: consecutive ids.
    fn unit_pages(&self, unit: u64) -> std::ops::Range<PageId>;
    /// Bytes of log records one in-page log write holds; 0: the store does not log.
    fn log_capacity(&self) -> usize;
    /// Whether writing a page overwrites the store's copy, so that a torn
    /// write destroys it. Such a store's pages are imaged in the
    /// write-ahead log just before they are written back; the others' on
    /// their first change after a checkpoint.
    fn overwrites(&self) -> bool;
    /// Whether writing pages may append records of the store's own to the
    /// write-ahead log (unit rewrites, map switches): the log keeps room
    /// for one per dirty page.
    fn journals_writes(&self) -> bool;
    fn read(&mut self, disk: &mut Disk, id: PageId) -> Result<Page>;
    /// Page `id` read through `read` by a reader sharing the store, with
    /// the checks [`PageStore::read`] makes; `None` where the store cannot
    /// read that way or the page does not pass (the exclusive path then
    /// reads it, and reports why). Counted by [`PageStore::note_shared_reads`].
    fn read_shared(&self, _read: &ReadAt, _id: PageId) -> Option<Page> {
        None
    }
    /// `n` pages were read by [`PageStore::read_shared`].
    fn note_shared_reads(&mut self, _n: u64) {}
    /// Pages per run when runs are read in requests of about `bytes` (at least 1).
    fn run_pages(&self, bytes: u64) -> u64;
    /// Reads pages `first..first+n` (a run of [`PageStore::run_pages`], or
    /// its allocated part) in as few device requests as the layout allows
    /// and returns the pages that decode. A page left out is read alone when
    /// it is wanted, which reports why it would not decode.
    fn read_run(&mut self, disk: &mut Disk, first: PageId, n: u64) -> Result<Vec<Page>>;
    /// Largest device write for consecutive new pages; by default every
    /// page is written on its own.
    fn set_write_size(&mut self, _bytes: u64) {}
    /// Whether writing this frame would rewrite its whole erase unit.
    fn needs_merge(&self, disk: &Disk, id: PageId, frame: &Frame) -> bool;
    /// Whether a dirty frame of a unit being rewritten should be written
    /// with it. Default: when it would need a rewrite of its own.
    fn joins_rewrite(&self, disk: &Disk, id: PageId, frame: &Frame) -> bool {
        self.needs_merge(disk, id, frame)
    }
    /// Writes dirty frames, all of one erase unit, and marks them clean.
    fn write(&mut self, disk: &mut Disk, frames: &mut [(PageId, Frame)]) -> Result<()>;
    /// Before a checkpoint: checks that the pages written since the last
    /// one read back as written, where a write the device lost would leave
    /// an older page that passes its own checks ([`Error::Corrupt`]
    /// otherwise). By default there is nothing to check.
    ///
    /// [`Error::Corrupt`]: crate::Error::Corrupt
    fn verify(&mut self, _disk: &mut Disk) -> Result<()> {
        Ok(())
    }
    /// Writes pages a batch created, never written before, where they live
    /// (sealed images, by page id), in runs of consecutive pages; not
    /// durable until the device is flushed. Only a store that overwrites
    /// pages in place writes them so ([`PageStore::overwrites`]); by
    /// default nothing is written and `false` returned.
    fn write_fresh(&mut self, _disk: &mut Disk, _pages: &[(PageId, &[u8])]) -> Result<bool> {
        Ok(false)
    }
    /// Logs what the store's writes since the last call must make durable
    /// (the in-page-logging store's map switches), after making the pages
    /// they name durable: called before a batch's record is appended and
    /// before a checkpoint, so a batch's writes share its flushes. By
    /// default there is nothing to log.
    fn log_switches(&mut self, _disk: &mut Disk) -> Result<()> {
        Ok(())
    }
    /// Frees what records [`PageStore::log_switches`] appended allow to,
    /// now that the log is durable up to some point. By default nothing.
    fn release(&mut self, _disk: &mut Disk) -> Result<()> {
        Ok(())
    }
    /// Limits the store to the first `bytes` of its region, where the log
    /// lies above them, or lifts the limit (`bytes`: the whole region).
    /// [`crate::Error::Full`] if pages in use (`next_page` allocated) lie
    /// above.
    fn set_ceiling(&mut self, bytes: u64, next_page: PageId) -> Result<()>;
    /// State to persist in a checkpoint.
    fn encode_state(&self, out: &mut Vec<u8>);
    /// The checkpoint holding what [`PageStore::encode_state`] last gave
    /// is durable. By default nothing.
    fn checkpointed(&mut self) {}
    fn stats(&self) -> StoreStats;
    /// Replays record `seq`, one the store logged through [`Disk::journal`].
    fn replay(&mut self, disk: &mut Disk, seq: u64, kind: u8, b: &[u8]) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::write_runs;

    /// The requests (offset, bytes) `write_runs` makes of `pages`
    /// (offset, image) with requests of at most `max` bytes.
    fn requests(pages: &[(u64, Vec<u8>)], max: u64) -> Vec<(u64, Vec<u8>)> {
        let mut refs: Vec<(u64, &[u8])> = pages.iter().map(|(o, i)| (*o, &i[..])).collect();
        let mut out = Vec::new();
        write_runs(&mut refs, max, |at, run| {
            out.push((at, run.to_vec()));
            Ok(())
        })
        .expect("the writes succeed");
        out
    }

    #[test]
    fn consecutive_images_join_up_to_the_request_size_in_offset_order() {
        let page = |b: u8| vec![b; 4];
        // Out of order, with a gap between 8 and 16.
        let pages = [(4, page(2)), (0, page(1)), (16, page(4)), (8, page(3))];
        let got = requests(&pages, 8);
        let want = [
            (0, [page(1), page(2)].concat()),
            (8, page(3)),
            (16, page(4)),
        ];
        assert_eq!(got, want);
        // A larger request joins the first three; the gap still splits.
        let got = requests(&pages, 64);
        assert_eq!(
            got,
            [(0, [page(1), page(2), page(3)].concat()), (16, page(4))]
        );
    }

    #[test]
    fn an_image_longer_than_a_request_goes_alone_and_an_error_stops_the_writes() {
        let pages = [(0, vec![1; 8]), (8, vec![2; 2]), (10, vec![3; 2])];
        assert_eq!(
            requests(&pages, 4),
            [(0, vec![1; 8]), (8, [vec![2; 2], vec![3; 2]].concat())]
        );
        let mut refs: Vec<(u64, &[u8])> = pages.iter().map(|(o, i)| (*o, &i[..])).collect();
        let mut calls = 0;
        let r = write_runs(&mut refs, 4, |_, _| {
            calls += 1;
            Err(crate::Error::Full("test"))
        });
        assert!(matches!(r, Err(crate::Error::Full("test"))) && calls == 1);
    }
}
