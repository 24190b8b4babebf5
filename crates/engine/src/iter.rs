//! Streaming range reads: [`Range`] walks a key range a chunk at a time,
//! so a scan of any size holds at most one chunk of pairs. A chunk copies
//! no key and no value: each [`Pair`] shares the buffer that holds it, a
//! page image of the buffer pool or a memtable slot (a chunk the store
//! read under its exclusive lock, from pages not all resident, is copied
//! into one buffer its pairs share). Reading a pair's value's length then
//! loads only its cell's first line, and a chunk costs an atomic increment
//! a pair. A kept pair keeps that buffer alive: a page's image stays in
//! memory while a pair from it is kept, and a writer changing the page
//! copies it first (copy on write), so the pair keeps the bytes it read.
//!
//! Chunks after the first are 16 pairs or twice the one before, up to 64.
//! The first reads ahead what callers have been taking ([`ReadAhead`]):
//! as many pairs as the last range left before its end had returned (16
//! until one was), the way an operating system sizes its read-ahead by the
//! reads it saw. Finding pairs nobody reads is much of a short range's
//! cost, so `range(..).take(10)` repeated reads ten pairs a range, not
//! sixteen; a range that takes more than the last one pays one chunk
//! more. Measured in docs/benchmarks.md, "ranges, a learnt first chunk".

use std::collections::VecDeque;
use std::fmt;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use smallvec::SmallVec;

use crate::btree::{self, Span};
use crate::db::Db;
use crate::error::Result;

/// A bound's key, held in the range itself when short (no allocation).
pub(crate) type Key = SmallVec<[u8; 32]>;

/// The bound owning `b`'s key.
pub(crate) fn owned(b: Bound<&[u8]>) -> Bound<Key> {
    match b {
        Bound::Included(k) => Bound::Included(Key::from_slice(k)),
        Bound::Excluded(k) => Bound::Excluded(Key::from_slice(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Pairs fetched by a first chunk before any range was left early, and
/// by the second chunk at least: short ranges read little ahead.
const FIRST_CHUNK: usize = 16;
/// Pairs fetched per chunk at most (chunks double up to it).
const MAX_CHUNK: usize = 64;

/// A store's read-ahead for the first chunk of its ranges: how many pairs
/// the last range dropped before its end had returned (1 to
/// [`MAX_CHUNK`]). Ranges that ran to their end leave it: their length
/// says where the range ended, not how much the caller wanted.
#[derive(Debug)]
pub(crate) struct ReadAhead(AtomicUsize);

impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead(AtomicUsize::new(FIRST_CHUNK))
    }
}

impl ReadAhead {
    /// Pairs the next range's first chunk reads.
    fn first_chunk(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Learns from a range left after `taken` pairs, before its end.
    fn learn(&self, taken: usize) {
        let n = taken.clamp(1, MAX_CHUNK);
        // Stored only when it changes: ranges on several threads taking
        // alike do not pass the cache line back and forth.
        if self.first_chunk() != n {
            self.0.store(n, Ordering::Relaxed);
        }
    }
}

/// Iterator over the pairs of a key range, ascending ([`Db::range`]) or
/// descending ([`Db::range_rev`]).
///
/// Each chunk is read under the store's lock; between chunks writers may
/// run. Keys come strictly in order and never twice; a pair changed
/// after the iterator passed it is not seen again, one changed ahead of it
/// is seen as it is when its chunk is read (read committed, per chunk).
/// An error is returned once and ends the iteration. The pairs of the
/// chunk read and not yet returned hold their pages' images (see
/// [`Pair`]) until they are returned or the range is dropped.
pub struct Range<'a> {
    db: &'a Db,
    lo: Bound<Key>,
    hi: Bound<Key>,
    reverse: bool,
    /// The chunk's pairs not yet returned.
    pairs: VecDeque<Pair>,
    chunk: usize,
    /// Pairs returned so far.
    taken: usize,
    done: bool,
}

impl<'a> Range<'a> {
    pub(crate) fn new(db: &'a Db, lo: Bound<Key>, hi: Bound<Key>, reverse: bool) -> Self {
        Range {
            db,
            lo,
            hi,
            reverse,
            pairs: VecDeque::new(),
            chunk: db.read_ahead().first_chunk(),
            taken: 0,
            done: false,
        }
    }

    /// Reads the next chunk and moves the range's near end past it.
    fn refill(&mut self) -> Result<()> {
        debug_assert!(
            self.pairs.is_empty(),
            "a chunk is read once the last is used"
        );
        let range = (as_ref(&self.lo), as_ref(&self.hi));
        let pairs = &mut self.pairs;
        let n = self
            .db
            .scan_chunk(range, self.reverse, self.chunk, |chunk| {
                // Each pair's buffer shared, not its bytes copied.
                pairs.extend(chunk.iter().map(Pair::kept));
                chunk.len()
            })?;
        debug_assert!(
            n <= self.chunk && n == self.pairs.len(),
            "a chunk stops at its size"
        );
        debug_assert!(
            self.pairs.front().is_none_or(|p| {
                let k = p.key();
                match self.reverse {
                    false => btree::above(k, range.0),
                    true => btree::below(k, range.1),
                }
            }),
            "a chunk starts past the pairs already returned"
        );
        self.done = n < self.chunk;
        self.chunk = (self.chunk * 2).clamp(FIRST_CHUNK, MAX_CHUNK);
        if let Some(last) = self.pairs.back() {
            let near = if self.reverse {
                &mut self.hi
            } else {
                &mut self.lo
            };
            // The bound's vector is reused: no allocation per chunk.
            let mut key = match std::mem::replace(near, Bound::Unbounded) {
                Bound::Included(k) | Bound::Excluded(k) => k,
                Bound::Unbounded => Key::new(),
            };
            key.clear();
            key.extend_from_slice(last.key());
            *near = Bound::Excluded(key);
        }
        Ok(())
    }
}

impl Iterator for Range<'_> {
    type Item = Result<Pair>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pairs.is_empty() && !self.done {
            if let Err(e) = self.refill() {
                self.done = true;
                return Some(Err(e));
            }
        }
        let pair = self.pairs.pop_front()?;
        self.taken += 1;
        Some(Ok(pair))
    }
}

/// A key and its value, as a [`Range`] returns them: lent from the buffer
/// that held them when the range read them, shared and not copied. That
/// is a page's image in the buffer pool, a memtable slot, or a chunk
/// (at most 64 pairs) the range copied when its pages were not all
/// resident. A pair kept keeps that buffer in memory, a whole page for a
/// pair of a few bytes, and the page's next change copies it first (the
/// pair reads what it read, the store the change); `into()` or
/// [`Pair::into_parts`] gives two vectors, which keep only their bytes.
///
/// ```
/// # use flashkv_engine::{Db, Options};
/// # let db = Db::open(Box::new(flashkv_device::presets::open("dram-ssd").unwrap()), Options::default()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// let pair = db.range(..).next().unwrap().unwrap();
/// assert_eq!((pair.key(), pair.value()), (&b"k"[..], &b"v"[..]));
/// let (k, v): (Vec<u8>, Vec<u8>) = pair.into();
/// assert_eq!((k, v), (b"k".to_vec(), b"v".to_vec()));
/// ```
#[derive(Clone)]
pub struct Pair {
    /// The page image, memtable slot or copied chunk holding the pair.
    buf: Arc<[u8]>,
    span: Span,
}

impl Pair {
    /// A pair lent by a scan, kept: its buffer shared, not copied.
    fn kept(p: &btree::Pair<'_>) -> Pair {
        Pair {
            buf: Arc::clone(p.buf),
            span: p.span,
        }
    }

    /// The key.
    pub fn key(&self) -> &[u8] {
        self.span.key(&self.buf)
    }

    /// The value.
    pub fn value(&self) -> &[u8] {
        self.span.value(&self.buf)
    }

    /// The key and the value, copied into vectors of their own.
    pub fn into_parts(self) -> (Vec<u8>, Vec<u8>) {
        (self.key().to_vec(), self.value().to_vec())
    }
}

impl From<Pair> for (Vec<u8>, Vec<u8>) {
    fn from(p: Pair) -> Self {
        p.into_parts()
    }
}

impl fmt::Debug for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pair")
            .field("key", &self.key())
            .field("value", &self.value())
            .finish()
    }
}

impl PartialEq for Pair {
    fn eq(&self, other: &Pair) -> bool {
        (self.key(), self.value()) == (other.key(), other.value())
    }
}

impl Eq for Pair {}

impl Drop for Range<'_> {
    fn drop(&mut self) {
        // Left before its end; an error ends it too (`done`, no pairs).
        let ended = self.done && self.pairs.is_empty();
        if !ended && self.taken > 0 {
            self.db.read_ahead().learn(self.taken);
        }
    }
}

pub(crate) fn as_ref(b: &Bound<Key>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The least key greater than every key starting with `prefix`, if any.
pub(crate) fn prefix_end(prefix: &[u8]) -> Bound<Key> {
    let mut end = Key::from_slice(prefix);
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Bound::Excluded(end);
        }
    }
    Bound::Unbounded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    fn db_of(keys: usize) -> Db {
        let dev = flashkv_device::presets::open("dram-ssd").expect("preset");
        let db = Db::open(Box::new(dev), Options::default()).expect("open");
        for i in 0..keys {
            db.put(format!("k{i:04}").as_bytes(), b"v").expect("put");
        }
        db
    }

    #[test]
    fn the_first_chunk_reads_what_the_last_range_left_early_took() {
        let db = db_of(200);
        assert_eq!(db.range(..).chunk, FIRST_CHUNK, "before any range");
        assert_eq!(db.range(..).take(3).count(), 3);
        assert_eq!(db.range(..).chunk, 3);
        // A range read to its end, or not read, teaches nothing.
        assert_eq!(
            db.range::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Included(b"k0190"), Bound::Unbounded))
                .count(),
            10
        );
        drop(db.range(..));
        assert_eq!(db.read_ahead().first_chunk(), 3);
        // Reverse ranges and prefixes share it; it stays within a chunk.
        assert_eq!(db.prefix(b"k01").take(1000).count(), 100);
        assert_eq!(db.read_ahead().first_chunk(), 3, "a prefix read to its end");
        assert_eq!(db.range_rev(..).take(150).count(), 150);
        assert_eq!(db.read_ahead().first_chunk(), MAX_CHUNK);
        assert_eq!(db.range(..).take(1).count(), 1);
        assert_eq!(db.read_ahead().first_chunk(), 1);
    }

    #[test]
    fn pairs_kept_across_chunks_keep_their_bytes() {
        let db = db_of(0);
        for i in 0..150u32 {
            db.put(&i.to_be_bytes(), &vec![i as u8; i as usize])
                .expect("put");
        }
        // Every pair kept: each chunk's buffer stays shared while the
        // range reads the next ones into new buffers.
        let kept: Vec<Pair> = db.range(..).map(|p| p.expect("pair")).collect();
        assert_eq!(kept.len(), 150);
        for (i, p) in (0..150u32).zip(&kept) {
            assert_eq!(p.key(), i.to_be_bytes());
            assert_eq!(p.value(), vec![i as u8; i as usize]);
        }
        let (k, v) = kept[7].clone().into_parts();
        assert_eq!((k, v.len()), (7u32.to_be_bytes().to_vec(), 7));
        // Pairs of one leaf share its image: nothing was copied.
        assert!(Arc::ptr_eq(&kept[0].buf, &kept[1].buf), "one page's image");
        // Every key overwritten, its page changed: kept pairs still read
        // what they read, the store the new values.
        for i in 0..150u32 {
            db.put(&i.to_be_bytes(), &[0xee; 3]).expect("put");
        }
        for (i, p) in (0..150u32).zip(&kept) {
            assert_eq!(p.value(), vec![i as u8; i as usize]);
            let now = db.get(&i.to_be_bytes()).expect("get");
            assert_eq!(now.as_deref(), Some(&[0xee; 3][..]));
        }
    }

    /// A pair kept across a write to its page (or a newer change of its
    /// memtable slot's key) keeps its bytes; the store reads the write's.
    #[test]
    fn a_pair_kept_across_a_write_to_its_page_keeps_the_old_bytes() {
        let tree = db_of(0);
        let dev = flashkv_device::presets::open("dram-ssd").expect("preset");
        let opts = Options::builder()
            .memtable(1 << 20)
            .build()
            .expect("options");
        let buffered = Db::open(Box::new(dev), opts).expect("open");
        for db in [tree, buffered] {
            for k in [b"a", b"b", b"c"] {
                db.put(k, b"old").expect("put");
            }
            let mut r = db.range(..);
            let a = r.next().expect("a pair").expect("pair");
            // `b` goes, `a` and a new key change the page `a` lies in.
            db.put(b"a", b"new!").expect("put");
            db.delete(b"b").expect("delete");
            db.put(b"ab", b"x").expect("put");
            assert_eq!((a.key(), a.value()), (&b"a"[..], &b"old"[..]));
            // The range read its chunk before the writes (per chunk).
            let rest: Vec<Vec<u8>> = r.map(|p| p.expect("pair").value().to_vec()).collect();
            assert_eq!(rest, [b"old".to_vec(), b"old".to_vec()]);
            assert_eq!(db.get(b"a").expect("get").as_deref(), Some(&b"new!"[..]));
            let now: Vec<Pair> = db.range(..).map(|p| p.expect("pair")).collect();
            let keys: Vec<&[u8]> = now.iter().map(Pair::key).collect();
            assert_eq!(keys, [&b"a"[..], b"ab", b"c"]);
            assert_eq!(now[0].value(), b"new!");
            assert_eq!(a.value(), b"old", "still the old bytes");
        }
    }

    #[test]
    fn chunks_after_a_small_first_grow_from_the_default() {
        let db = db_of(100);
        let _ = db.range(..).take(1).count();
        let mut r = db.range(..);
        let (mut sizes, mut n) = (Vec::new(), 0);
        loop {
            if r.pairs.is_empty() && !r.done {
                sizes.push(r.chunk);
            }
            let Some(pair) = r.next() else { break };
            assert_eq!(pair.expect("pair").key(), format!("k{n:04}").as_bytes());
            n += 1;
        }
        // The learnt 1, then 16, 32 and 64 (which reads the last 51).
        assert_eq!((sizes, n), (vec![1, 16, 32, 64], 100));
    }

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(b"ab"), Bound::Excluded(Key::from_slice(b"ac")));
        assert_eq!(prefix_end(b"a\xff"), Bound::Excluded(Key::from_slice(b"b")));
        assert_eq!(prefix_end(b"\xff\xff"), Bound::Unbounded);
        assert_eq!(prefix_end(b""), Bound::Unbounded);
    }
}
