//! A close that leaves the log to the next open, and the open that goes on
//! appending to it.
//!
//! A checkpoint at close writes every dirty page twice (its image to the
//! log, then home), and the next open replays nothing. An in-place store
//! need not: its log already holds every change since the checkpoint, so a
//! close makes the log durable and marks its end, and the next open
//! replays the log into the pool and resumes the same epoch after the
//! mark, writing no page. The dirty pages are then written when the
//! background writer or the next switch would have written them had the
//! store stayed open.

use super::{close, Core};
use crate::error::Result;
use crate::options::StoreKind;
use crate::redo;
use crate::wal::{Logged, Next};

impl Core {
    /// Whether a close leaves the dirty pages to the log ([`Core::resumable`]),
    /// unless the options ask for a checkpoint.
    pub(super) fn keeps_log(&self) -> bool {
        !self.close_checkpoint && self.resumable()
    }

    /// Whether the store's log can be left by a close and resumed: an
    /// in-place store's. Not on raw NAND, whose unit rewrites recovery
    /// finishes by writing; not for stores that keep state of their own in
    /// the checkpoint (in-page logging's unit map, two devices' placement).
    pub(super) fn resumable(&self) -> bool {
        self.store.kind() == StoreKind::InPlace
            && !self.disk.geo.program_once
            && !self.disk.log_geo.program_once
    }

    /// What a close writes: the log made durable ([`Core::keeps_log`]) or
    /// a checkpoint; then the end mark. A checkpoint that would write less
    /// than the log the next open would replay is taken anyway (a close
    /// after a bulk load, whose pages are home already): it costs less than
    /// that replay, which would also read back every page the load stored.
    /// Not while the memtable holds pairs: the next open reads them back
    /// either way, and a checkpoint would write them again (its carry).
    pub(super) fn close_out(&mut self) -> Result<()> {
        let ps = self.store.page_size() as u64;
        // Each dirty page home, and an image first of those without one.
        let writes = (self.pool.dirty_len() + self.pool.unimaged()) as u64 * ps;
        let logged = self.disk.journal.as_ref().map(|w| w.written().1);
        let pairs = !self.memtable.is_empty();
        match logged {
            Some(log) if self.keeps_log() && (pairs || writes > log) => self.disk.flush()?,
            _ => {
                // Asked for, a checkpoint leaves nothing to replay: the
                // memtable goes into the tree first (else it is carried).
                if self.close_checkpoint {
                    self.drain()?;
                }
                self.checkpoint()?
            }
        }
        self.mark_log_end();
        Ok(())
    }

    /// Whether an open may resume the epoch it is about to replay
    /// (`records`, with `marked`: the log ended with a close's mark)
    /// instead of carrying it into a new one and checkpointing: a close
    /// left it (no crash: nothing torn to write past), it holds only page
    /// records (nothing the page store must finish by writing), and no
    /// later epoch was begun. Once replayed, the dirty pages must also be
    /// no more than the writer lets stay dirty ([`Core::dirty_limit`]).
    pub(super) fn may_resume(&self, records: &[Logged], marked: bool, next: &Next) -> bool {
        let pages_only = records.iter().all(|r| {
            matches!(
                r.kind,
                redo::REDO_RECORD | redo::CARRY_RECORD | redo::IMAGES_RECORD
            )
        });
        marked && pages_only && matches!(next, Next::Nothing) && self.resumable()
    }

    /// Resumes the replayed epoch. The close's mark is replaced, in its
    /// place and under its sequence number, by an empty batch (which
    /// replays as the tree state it carries), made durable before anything
    /// is appended after it. Otherwise a crash that lost what this session
    /// appends would leave a log that still ends with the mark, and the
    /// next open would take it for a close and append over the torn
    /// records; without the mark it searches past the end, as after any
    /// crash, and starts a new epoch.
    pub(super) fn resume(&mut self) -> Result<()> {
        let mark = close::end_mark();
        let empty = redo::Writer::new(&self.meta, 0).finish();
        let Some(w) = self.disk.journal.as_mut() else {
            unreachable!("a resumed epoch appends to its log");
        };
        assert_eq!(
            w.record_len(empty.len()),
            w.record_len(mark.len()),
            "the empty batch fills the mark's place"
        );
        w.unappend(mark.len());
        self.disk.append(redo::REDO_RECORD, &empty)?;
        self.disk.flush_log()
    }

    /// A read-only open of a store a close left with its log: the log is
    /// replayed into the pool, whose dirty pages then never leave it (they
    /// cannot be written).
    pub(super) fn read_log(&mut self, records: Vec<Logged>, next: &Next) -> Result<()> {
        debug_assert!(
            self.read_only && self.disk.journal.is_none(),
            "a reader appends nothing"
        );
        self.check_next_epoch(next)?;
        self.pool.keep_dirty();
        self.recover(records)
    }
}
