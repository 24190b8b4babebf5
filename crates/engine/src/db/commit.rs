//! Committing a batch: room in the log, the record, and its durability.

use super::*;
use crate::btree::NO_FREE_PAGES;
use crate::le::u32_at;

/// New pages from which a batch writes them before its record
/// ([`Core::store_fresh`]): 1 MiB of 4 KiB pages.
const STORE_FRESH: usize = 256;

impl Core {
    /// Applies a batch of `ops` operations with `f`, logs it and commits.
    /// `hint` is about the bytes it writes, to make room in the log
    /// beforehand. Returns the record to wait for, outside the lock, where
    /// the commit is durable once a flush covers it ([`LogSync::wait`]).
    pub(super) fn write_with(
        &mut self,
        hint: usize,
        ops: usize,
        mut f: impl FnMut(&mut Tree<'_>) -> Result<()>,
    ) -> Result<Option<u64>> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        // A batch for the tree goes after the memtable's pairs.
        if !self.draining {
            self.drain()?;
        }
        self.guard(|c| {
            if let Some(w) = &c.disk.journal {
                // Each operation may dirty one more page.
                let fresh = (c.meta.next_page as usize).saturating_sub(c.pool.dirty_len());
                let dirty = c.pool.dirty_len() + ops.min(fresh);
                let unimaged = c.pool.unimaged() + ops.min(fresh);
                let want = 2 * hint as u64 + w.capacity() / 16 + c.log_reserve(w, dirty, unimaged);
                if w.remaining() < want {
                    c.make_room(want)?;
                }
            }
            // A batch that does not fit the log's half runs again after a
            // switch to a new epoch that has room for it (moving the log
            // to a larger region if need be).
            for attempt in 0..3 {
                assert!(c.pool.idle(), "a batch starts with nothing pinned");
                let before = c.meta;
                c.batch_from = before.next_page;
                if let Err(e) = f(&mut c.tree()) {
                    c.undo_batch(before)?;
                    match e {
                        // The page store grew up to a log that moved above
                        // it: a full checkpoint brings the log home.
                        Error::Full(NO_FREE_PAGES) if attempt < 2 && !c.layout.at_home() => {
                            c.checkpoint()?;
                            continue;
                        }
                        e => return Err(e),
                    }
                }
                match c.log_batch() {
                    Err(Error::Full(_)) if attempt < 2 && c.disk.journal.is_some() => {
                        let need = c.log_need;
                        c.undo_batch(before)?;
                        c.make_room(need)?;
                    }
                    Err(e) => {
                        c.undo_batch(before)?;
                        return Err(e);
                    }
                    Ok(wait) => {
                        c.commits += 1;
                        c.store.release(&mut c.disk)?;
                        c.pool.unpin(&mut *c.store, &mut c.disk)?;
                        c.settle()?;
                        if c.writer_inline {
                            c.write_behind()?;
                        }
                        return Ok(wait);
                    }
                }
            }
            unreachable!("the third attempt returns")
        })
    }

    /// Undoes the running batch: the pool as it was (pages it kept no copy
    /// of rebuilt from the log) and the tree state `before` it.
    fn undo_batch(&mut self, before: Meta) -> Result<()> {
        let lost = self.pool.rollback();
        self.meta = before;
        self.rebuild(lost)
    }

    /// Log bytes a batch keeps free beyond its record, for `dirty` dirty
    /// pages, `unimaged` of them without an image in the log: a record of
    /// the store's own per dirty page where it journals its writes; and,
    /// without the background writer, an image of each unimaged page where
    /// the store logs one before a write back, so evictions never wait and
    /// the log fills up to a full checkpoint (the seed experiments'
    /// engine). With the writer, an eviction that finds no room for the
    /// images it must log waits for the next switch, which carries them.
    pub(super) fn log_reserve(&self, wal: &Wal, dirty: usize, unimaged: usize) -> u64 {
        let mut r = 0;
        if self.store.journals_writes() {
            r += dirty as u64 * wal.record_len(64);
        }
        if !self.writer && self.store.overwrites() {
            r += unimaged as u64 * self.image_record_len(wal);
        }
        r
    }

    /// After an operation: evictions that waited for room in the log (the
    /// pool is over its size) run after a switch, which carries their
    /// pages' images into the new epoch.
    pub(super) fn settle(&mut self) -> Result<()> {
        if self.pool.over() && self.disk.journal.is_some() {
            self.make_room(0)?;
            self.pool.shrink(&mut *self.store, &mut self.disk)?;
        }
        Ok(())
    }

    /// Appends the running batch to the log (durably if `sync`): images of
    /// the pages it rewrote whole, the operations it applied to the others,
    /// and an image of each page it changed for the first time since the
    /// checkpoint where that is cheaper than logging the image later:
    ///
    /// - a store that does not overwrite pages logs such images always (it
    ///   never logs one before a write back);
    /// - a store that does logs them while the pool is full (the page will
    ///   likely be written back before the checkpoint, and an image logged
    ///   then costs a log flush of its own).
    ///
    /// A record that does not fit is [`Error::Full`], and nothing is written.
    /// A durable commit is flushed here, or returns its record to wait for
    /// where the log can be flushed outside the lock.
    pub(super) fn log_batch(&mut self) -> Result<Option<u64>> {
        if self.disk.journal.is_none() {
            return Ok(None);
        }
        // What the batch's evictions changed in the store goes first.
        self.store.log_switches(&mut self.disk)?;
        let stored = self.store_fresh()?;
        let mut wal = self.disk.journal.take().expect("the log is open");
        let ops_first = self.store.overwrites() && self.pool.has_room();
        let built = self.batch_record(ops_first, &stored);
        let newly = built
            .1
            .iter()
            .filter(|id| !self.pool.is_imaged(**id))
            .count();
        let unimaged = self.pool.unimaged() - newly;
        self.log_need =
            wal.record_len(built.0.len()) + self.log_reserve(&wal, self.pool.dirty_len(), unimaged);
        let r = match self.log_need > wal.remaining() {
            true => Err(Error::Full("write-ahead log")),
            false => wal.append(&mut self.disk, redo::REDO_RECORD, &built.0.finish()),
        };
        self.wal_seq = wal.next_seq;
        self.disk.journal = Some(wal);
        r?;
        for id in built.1 {
            self.pool.mark_imaged(id);
        }
        self.pool.mark_stored(&stored);
        self.committed_record()
    }

    /// Writes the pages the running batch created where they live, before
    /// its record, when they are many (a bulk load, a batch that splits
    /// much): they need no image in the log, and the commit costs one flush
    /// more. Returns them (they are then clean once the record is written),
    /// or none.
    fn store_fresh(&mut self) -> Result<Vec<PageId>> {
        if !self.store.overwrites() {
            return Ok(Vec::new());
        }
        let fresh = self.pool.fresh(self.batch_from);
        if fresh.len() < STORE_FRESH {
            return Ok(Vec::new());
        }
        let ids: Vec<PageId> = fresh.iter().map(|(id, _)| *id).collect();
        if !self.store.write_fresh(&mut self.disk, &fresh)? {
            return Ok(Vec::new());
        }
        // Durable before the record that names them.
        self.disk.flush()?;
        Ok(ids)
    }

    /// The running batch's record and the pages it holds images of;
    /// `ops_first`: operations for every page the batch did not rewrite
    /// whole, else only for pages the log holds an image of; `stored`:
    /// pages written where they live before the record (by id).
    pub(super) fn batch_record(
        &self,
        ops_first: bool,
        stored: &[PageId],
    ) -> (redo::Writer, Vec<PageId>) {
        let ps = self.store.page_size();
        let batch = self.pool.batch();
        let is_stored = |id: PageId| stored.binary_search(&id).is_ok();
        let as_ops = |page: &crate::page::Page, change: &Change| match change {
            Change::Ops { bytes, .. } => {
                (ops_first || self.pool.is_imaged(page.id())) && bytes.len() + 2 < ps
            }
            Change::Whole => false,
        };
        // Sized first: a large batch's record is not grown by doubling.
        let drained = match self.draining {
            true => redo::Writer::DRAINED_LEN,
            false => 0,
        };
        let size = drained
            + batch
                .iter()
                .map(|&(page, change)| match (change, as_ops(page, change)) {
                    _ if is_stored(page.id()) => redo::Writer::STORED_LEN,
                    (Change::Ops { bytes, .. }, true) => redo::Writer::ops_len(bytes),
                    _ => redo::Writer::image_len(page),
                })
                .sum::<usize>();
        let mut rec = redo::Writer::new(&self.meta, size);
        if self.draining {
            rec.drained();
        }
        let mut imaged = Vec::new();
        for (page, change) in batch {
            match (change, as_ops(page, change)) {
                _ if is_stored(page.id()) => rec.stored(page.id(), u32_at(page.bytes(), 0)),
                (Change::Ops { count, bytes }, true) => rec.ops(page.id(), *count, bytes),
                _ => {
                    rec.image(page);
                    imaged.push(page.id());
                }
            }
        }
        debug_assert_eq!(rec.len(), redo::META_BYTES + size, "the record as sized");
        (rec, imaged)
    }
}
