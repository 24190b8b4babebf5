//! Recovery: replaying the write-ahead log of the last checkpoint's epoch,
//! then copying what it rebuilt into a new epoch.
//!
//! A page's state is rebuilt from its first image in the epoch and every
//! operation logged after it. A page with operations but no image was not
//! written back since the checkpoint (a store that overwrites pages logs
//! an image before every write back), so its copy in the page store is the
//! state its first operation was applied to. Operations logged before a
//! page's first image are already in that image and are skipped.

use rustc_hash::{FxHashMap, FxHashSet};

use super::Core;
use crate::btree::Meta;
use crate::error::{bad_page, corrupt, Location, Result, Structure};
use crate::le::{u32_at, u64_at};
use crate::page::{Op, Page, PageId};
use crate::redo::{self, Entry};
use crate::wal::{Logged, Next, Wal};

/// Write-ahead log record kind of a committed batch as whole page images
/// (written by earlier versions; read still).
const BATCH_RECORD: u8 = 1;

/// A page record of the log, decoded: the tree state it carries (batches)
/// and its entries.
type Decoded = (Option<Meta>, Vec<Entry>);

impl Core {
    /// Replays `records` (kind, payload), in log order. The page store's
    /// own records go first: they finish interrupted rewrites of the
    /// device, which the pages read here must see.
    pub(super) fn recover(&mut self, records: Vec<Logged>) -> Result<()> {
        self.replay(records, None)
    }

    /// Rebuilds pages `ids`, dirty before a batch whose rollback kept no
    /// copy of them, from the current epoch's records, as recovery would:
    /// the log holds every change committed since the checkpoint.
    pub(super) fn rebuild(&mut self, ids: Vec<PageId>) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let Some(w) = self.disk.journal.take() else {
            unreachable!("a rollback leaves pages to the log only where there is one");
        };
        let records = w.read_back(&mut self.disk);
        self.disk.journal = Some(w);
        let only: FxHashSet<PageId> = ids.iter().copied().collect();
        self.replay(records?, Some(&only))?;
        for id in ids {
            if !self.pool.contains(id) {
                return Err(bad_page(
                    id,
                    "dirty before a batch, the log does not rebuild it",
                ));
            }
            self.pool.rebuilt(id, self.disk.logged);
        }
        Ok(())
    }

    /// Replays `records`: every page, the tree state and the page store's
    /// own records (recovery), or `only` these pages (a rebuild).
    fn replay(&mut self, records: Vec<Logged>, only: Option<&FxHashSet<PageId>>) -> Result<()> {
        if records.is_empty() {
            // Nothing to replay, nor memory to give back (every open).
            return Ok(());
        }
        let ps = self.store.page_size();
        let mut decoded: Vec<Decoded> = Vec::new();
        let mut seqs = Vec::new();
        for Logged { seq, kind, payload } in records {
            decoded.push(match kind {
                BATCH_RECORD => decode_batch_images(&payload, ps, seq)?,
                redo::REDO_RECORD | redo::CARRY_RECORD => {
                    let (meta, entries) = redo::decode(&payload, ps, seq)?;
                    (Some(meta), entries)
                }
                redo::IMAGES_RECORD => (None, images(redo::decode_images(&payload, ps, seq)?)),
                _ if only.is_some() => continue,
                kind => {
                    self.store.replay(&mut self.disk, seq, kind, &payload)?;
                    continue;
                }
            });
            seqs.push(seq);
        }
        let first_image = first_images(&decoded);
        debug_assert!(
            first_image.values().all(|&i| i < decoded.len()),
            "first images index records"
        );
        // Pages whose latest entry says the store holds them as they are.
        let mut stored = FxHashSet::default();
        // A rebuild wants its pages only, never the memtable's changes.
        let wanted = |e: &Entry| match (e.page(), only) {
            (_, None) => true,
            (Some(id), Some(o)) => o.contains(&id),
            (None, Some(_)) => false,
        };
        for (i, (meta, entries)) in decoded.into_iter().enumerate() {
            match meta {
                Some(m) if only.is_none() => self.meta = m,
                _ => {}
            }
            for e in entries.into_iter().filter(wanted) {
                match e {
                    Entry::Image(p) => {
                        let id = p.id();
                        self.pool.install(p);
                        self.pool.mark_imaged(id);
                        stored.remove(&id);
                    }
                    // The page's first image, later in the log, holds these.
                    Entry::Ops(id, _) | Entry::Stored(id, _)
                        if first_image.get(&id).is_some_and(|&f| f > i) => {}
                    Entry::Ops(id, ops) => {
                        self.replay_ops(id, &ops)?;
                        stored.remove(&id);
                    }
                    Entry::Stored(id, crc) => {
                        self.replay_stored(id, crc, seqs[i])?;
                        stored.insert(id);
                    }
                    Entry::Pairs(data) => {
                        let m = self.memtable_mut();
                        for (k, v) in redo::pairs(&data) {
                            m.apply(k, v);
                        }
                    }
                    Entry::Drained => self.memtable_mut().clear(),
                }
            }
        }
        // Read back and checked: they need no write (nor a carry), nor room.
        for id in stored {
            self.pool.forget_installed(id);
        }
        // Read back whole, the memtable gets its reads' sorted copy now,
        // not after the first reads have searched the set (a change drops it).
        if only.is_none() && !self.memtable.is_empty() {
            self.memtable.freeze();
        }
        super::give_back();
        Ok(())
    }

    /// A page batch record `seq` created and wrote to the page store before
    /// it: read back from there, it must be the image written (else the
    /// write was lost or went astray). No later image of it is in the log
    /// (that one would hold it): the store still holds this one.
    fn replay_stored(&mut self, id: PageId, crc: u32, seq: u64) -> Result<()> {
        let page = self.store.read(&mut self.disk, id)?;
        if u32_at(page.bytes(), 0) != crc {
            return Err(corrupt(
                Structure::LogRecord,
                Location::Record(seq),
                "a page it wrote before it does not read back: the write was lost or went astray",
            ));
        }
        self.pool.install(page);
        Ok(())
    }

    /// Applies logged operations to page `id`: to the page recovery
    /// rebuilt so far, else to the page store's copy.
    fn replay_ops(&mut self, id: PageId, ops: &[Op]) -> Result<()> {
        if !self.pool.contains(id) {
            if !self.store.overwrites() {
                // Its first change after the checkpoint was logged as an image.
                return Err(bad_page(
                    id,
                    "the log changes it, but holds no image of it since the checkpoint",
                ));
            }
            // Installed without making room: nothing is written back while
            // the log is replayed.
            let page = self.store.read(&mut self.disk, id)?;
            self.pool.install(page);
        }
        debug_assert!(
            self.pool.contains(id),
            "page {id} is resident to replay onto"
        );
        self.pool.replay_ops(id, ops)
    }

    /// Carries what recovery found into a new epoch (in the other half of
    /// the log) and writes its checkpoint, so the checkpoint that writes
    /// the pages out has a whole half to log in.
    pub(super) fn relog(&mut self, wal: &mut Wal) -> Result<()> {
        let epoch = self.ckpt_seq + 1;
        wal.reset(epoch);
        self.pool.new_epoch();
        let first = wal.next_seq;
        self.carry(wal)?;
        self.write_checkpoint(epoch, first)
    }

    /// Fails if a checkpoint after the one opened was lost (a write the
    /// device dropped or sent elsewhere leaves the older one newest):
    /// records of the next epoch (`next`) say checkpoint `ckpt_seq + 1`
    /// was durable, unless they only carry pages forward (that checkpoint
    /// was cut short by a crash before its slot was written).
    pub(super) fn check_next_epoch(&self, next: &Next) -> Result<()> {
        match next {
            Next::Nothing | Next::Carry => Ok(()),
            Next::More => Err(corrupt(
                Structure::Checkpoint,
                Location::Offset(((self.ckpt_seq + 1) % 2) * self.layout.slot_len),
                "missing, and the log holds records written after it",
            )),
        }
    }
}

fn images(pages: Vec<Page>) -> Vec<Entry> {
    pages.into_iter().map(Entry::Image).collect()
}

/// Index of the first record holding an image of each page (a page a
/// batch stored before its record is not counted: a later image of it is
/// the newer state, and the store's copy is that one's).
fn first_images(decoded: &[Decoded]) -> FxHashMap<PageId, usize> {
    let mut first = FxHashMap::default();
    for (i, (_, entries)) in decoded.iter().enumerate() {
        for e in entries {
            if let Entry::Image(p) = e {
                first.entry(p.id()).or_insert(i);
            }
        }
    }
    first
}

/// Batch record `seq` of whole page images (format of earlier builds).
fn decode_batch_images(b: &[u8], ps: usize, seq: u64) -> Result<Decoded> {
    let meta = redo::decode_meta(b, seq)?;
    let n = u32_at(b, 32) as usize;
    if Some(b.len()) != n.checked_mul(ps).map(|n| n + redo::META_BYTES) {
        return Err(corrupt(
            Structure::LogRecord,
            Location::Record(seq),
            "a batch of images whose length is not its pages'",
        ));
    }
    let pages = b[redo::META_BYTES..]
        .chunks(ps)
        .map(|img| {
            let id: PageId = u64_at(img, 16);
            Page::from_bytes(img.into(), id)
        })
        .collect::<Result<Vec<_>>>()?;
    debug_assert!(pages.len() == n, "a batch of {n} images holds {n} pages");
    Ok((Some(meta), images(pages)))
}
