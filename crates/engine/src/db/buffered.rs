//! Writes through the memtable ([`crate::memtable`]): a batch's pairs
//! logged and held in memory, the drain that moves them into the tree, and
//! the carry that takes them into a new log epoch.

use super::*;
use crate::btree::Pair;
use crate::memtable::{Change, Memtable};

type Bounds<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

/// `bounds` with the near end moved past `near`, the last key a scan
/// step read.
fn after<'a>((lo, hi): Bounds<'a>, reverse: bool, near: Option<&'a [u8]>) -> Bounds<'a> {
    match (near, reverse) {
        (None, _) => (lo, hi),
        (Some(k), false) => (Bound::Excluded(k), hi),
        (Some(k), true) => (lo, Bound::Excluded(k)),
    }
}

/// Bytes of pairs a carry record holds at most (a larger memtable takes
/// several).
const CARRY_PAIRS: usize = 1 << 20;

impl Core {
    /// The memtable, to change: shared only with a drain that is running.
    pub(super) fn memtable_mut(&mut self) -> &mut Memtable {
        Arc::get_mut(&mut self.memtable).expect("the memtable is shared only while it drains")
    }

    /// Whether a batch of changes costing `cost` memtable bytes goes to the
    /// memtable, after a drain if it holds too much to take them: where it
    /// has a budget and the batch fits an empty one.
    pub(super) fn buffers(&self, cost: usize) -> bool {
        self.memtable_cap > 0 && cost <= self.memtable_cap
    }

    /// Commits `changes` (in order: a later change of a key wins) to the
    /// memtable: one record of their pairs, then the memtable. Drains it
    /// first if they would take it past its budget, or the log's half has
    /// no room for the record. Returns the record to wait for, as
    /// [`Core::write_with`] does.
    pub(super) fn buffer(&mut self, changes: &[Change<'_>], cost: usize) -> Result<Option<u64>> {
        // A budget is set only for a store that writes.
        debug_assert!(self.buffers(cost), "the memtable takes the batch");
        if self.memtable.bytes() + cost > self.memtable_cap {
            self.drain()?;
        }
        self.guard(|c| {
            let len = redo::Writer::pairs_len(changes.iter().copied());
            let size = redo::META_BYTES + len;
            // A log short of room drains the memtable rather than carry it
            // into a new epoch: carried at every switch, the pairs would be
            // written again and again while the memtable grows.
            let mut short = c.log_short(size);
            if short.is_some() && !c.memtable.is_empty() {
                c.drain()?;
                short = c.log_short(size);
            }
            if let Some(want) = short {
                c.make_room(want)?;
            }
            // Made after the drain: the record carries the tree's state,
            // which recovery takes from the last record it replays.
            let mut rec = redo::Writer::new(&c.meta, len);
            rec.pairs(changes.iter().copied(), len);
            let payload = rec.finish();
            assert_eq!(payload.len(), size, "a pairs record as sized");
            c.disk.append(redo::REDO_RECORD, &payload)?;
            c.wal_seq = c.disk.journal.as_ref().map_or(c.wal_seq, |w| w.next_seq);
            let m = c.memtable_mut();
            for &(k, v) in changes {
                m.apply(k, v);
            }
            c.commits += 1;
            c.committed_record()
        })
    }

    /// The log bytes a record of `payload` bytes needs free, with the room
    /// kept for write-backs, if the log's half has fewer.
    fn log_short(&self, payload: usize) -> Option<u64> {
        let w = self
            .disk
            .journal
            .as_ref()
            .expect("a memtable's store has a log");
        let want = w.record_len(payload)
            + w.capacity() / 16
            + self.log_reserve(w, self.pool.dirty_len(), self.pool.unimaged());
        (w.remaining() < want).then_some(want)
    }

    /// After a record is appended: a durable commit flushes here, or
    /// returns its record to wait for where the log can be flushed outside
    /// the lock.
    pub(super) fn committed_record(&mut self) -> Result<Option<u64>> {
        if !self.sync {
            return Ok(None);
        }
        if self.disk.sync.outside() {
            return Ok(Some(self.disk.logged));
        }
        self.disk.flush()?;
        Ok(None)
    }

    /// Moves every pair of the memtable into the tree, in key order, as one
    /// batch whose record says the memtable was drained. The memtable stays
    /// as it is until that batch commits: a switch meanwhile carries it. A
    /// reader's stays as the log it replayed holds it (it writes nothing).
    pub(super) fn drain(&mut self) -> Result<Option<u64>> {
        if self.memtable.is_empty() || self.read_only {
            return Ok(None);
        }
        let held = Arc::clone(&self.memtable);
        let bytes = held.bytes();
        self.draining = true;
        let r = self.write_with(bytes, held.len(), |t| {
            for (k, v) in held.iter() {
                match v {
                    Some(v) => t.put(k, v).map(drop)?,
                    None => t.delete(k).map(drop)?,
                }
            }
            Ok(())
        });
        self.draining = false;
        drop(held);
        let wait = r?;
        self.memtable_mut().clear();
        self.drains += 1;
        Ok(wait)
    }

    /// Puts in `out` (empty) at most `limit` pairs in `bounds` (descending
    /// if `reverse`), lent from the pool and the memtable, when every page
    /// the scan takes is resident (see [`btree::scan_resident`]); `false`
    /// (`out` then holds no telling what) sends it down the exclusive path
    /// ([`Core::scan`]).
    pub(super) fn scan_resident<'a>(
        &'a self,
        bounds: Bounds<'a>,
        reverse: bool,
        limit: usize,
        out: &mut btree::Pairs<'a>,
    ) -> Result<bool> {
        if self.memtable.is_empty() {
            return btree::scan_resident(&self.pool, &self.meta, bounds, reverse, limit, out);
        }
        let mut tree = btree::Pairs::new();
        let mut near = None;
        loop {
            let b = after(bounds, reverse, near);
            tree.clear();
            if !btree::scan_resident(&self.pool, &self.meta, b, reverse, limit, &mut tree)? {
                return Ok(false);
            }
            let ended = tree.len() < limit;
            let left = limit - out.len();
            near = self
                .memtable
                .overlay(&tree, ended, b, reverse, left, |p| out.push(p));
            if near.is_none() {
                return Ok(true);
            }
        }
    }

    /// At most `limit` pairs in `bounds` (descending if `reverse`), the
    /// tree's merged with the memtable's, copied.
    pub(super) fn scan(
        &mut self,
        bounds: Bounds<'_>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        if self.memtable.is_empty() {
            return self.read(|t| t.scan(bounds.0, bounds.1, reverse, limit));
        }
        let mut out = Vec::new();
        let mut near: Option<Vec<u8>> = None;
        loop {
            let b = after(bounds, reverse, near.as_deref());
            let pairs = self.read(|t| t.scan(b.0, b.1, reverse, limit))?;
            let ended = pairs.len() < limit;
            let (buf, spans) = btree::pack(&pairs);
            let lent: Vec<Pair<'_>> = spans.iter().map(|&span| Pair { buf: &buf, span }).collect();
            let left = limit - out.len();
            let next = self.memtable.overlay(&lent, ended, b, reverse, left, |p| {
                out.push((p.key().to_vec(), p.value().to_vec()))
            });
            match next {
                Some(k) => near = Some(k.to_vec()),
                None => return Ok(out),
            }
        }
    }

    /// Log bytes the carry records of the memtable's pairs take at most.
    pub(super) fn pairs_carry_bytes(&self, w: &Wal) -> u64 {
        if self.memtable.is_empty() {
            return 0;
        }
        let len = redo::Writer::pairs_len(self.memtable.iter());
        // Each record's header, tree state, entry header and rounding.
        let records = len.div_ceil(CARRY_PAIRS) as u64 + 1;
        w.record_len(redo::META_BYTES + len) + records * 2 * w.record_len(redo::META_BYTES + 16)
    }

    /// Appends the memtable's pairs to a new epoch, in carry records of
    /// about [`CARRY_PAIRS`] bytes: the epoch then holds them as the one it
    /// follows did.
    pub(super) fn carry_pairs(&mut self, w: &mut Wal) -> Result<()> {
        let held: Vec<Change<'_>> = self.memtable.iter().collect();
        let mut from = 0;
        while from < held.len() {
            let mut to = from;
            let mut len = 0;
            while to < held.len() && (to == from || len < CARRY_PAIRS) {
                len += redo::Writer::pairs_len(std::iter::once(held[to]));
                to += 1;
            }
            let chunk = held[from..to].iter().copied();
            let len = redo::Writer::pairs_len(chunk.clone());
            let mut rec = redo::Writer::new(&self.meta, len);
            rec.pairs(chunk, len);
            w.append(&mut self.disk, redo::CARRY_RECORD, &rec.finish())?;
            from = to;
        }
        Ok(())
    }
}
