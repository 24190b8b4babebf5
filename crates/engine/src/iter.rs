//! Streaming range reads: [`Range`] walks a key range a chunk at a time,
//! so a scan of any size holds at most one chunk of pairs in memory. A
//! chunk is copied into one buffer, and the [`Pair`]s returned lend their
//! key and value from it: returning a pair allocates nothing (two vectors
//! would cost two allocations and a second copy). The buffer is reused for
//! the next chunk unless a pair from it is still kept.
//!
//! Chunks after the first are 16 pairs or twice the one before, up to 64.
//! The first reads ahead what callers have been taking ([`ReadAhead`]):
//! as many pairs as the last range left before its end had returned (16
//! until one was), the way an operating system sizes its read-ahead by the
//! reads it saw. Copying pairs nobody reads is most of a short range's
//! cost (each pair is a few cache lines the copy must load), so
//! `range(..).take(10)` repeated reads ten pairs a range, not sixteen; a
//! range that takes more than the last one pays one chunk more. Measured
//! in docs/benchmarks.md, "ranges, a learnt first chunk".

use std::collections::VecDeque;
use std::fmt;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::db::Db;
use crate::error::Result;

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
/// An error is returned once and ends the iteration.
pub struct Range<'a> {
    db: &'a Db,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    reverse: bool,
    /// The chunk's keys and values, back to back, shared with the
    /// [`Pair`]s returned from it.
    bytes: Arc<Vec<u8>>,
    /// Per pair not yet returned: where its key starts, the key's and the
    /// value's lengths (the value follows the key).
    pairs: VecDeque<(usize, usize, usize)>,
    chunk: usize,
    /// Pairs returned so far.
    taken: usize,
    done: bool,
}

impl<'a> Range<'a> {
    pub(crate) fn new(db: &'a Db, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>, reverse: bool) -> Self {
        Range {
            db,
            lo,
            hi,
            reverse,
            bytes: Arc::default(),
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
        // The last chunk's buffer is reused unless a pair still holds it.
        if Arc::get_mut(&mut self.bytes).is_none() {
            self.bytes = Arc::default();
        }
        let bytes = Arc::make_mut(&mut self.bytes); // not shared: no copy
        bytes.clear();
        let range = (as_ref(&self.lo), as_ref(&self.hi));
        let pairs = &mut self.pairs;
        let n = self
            .db
            .scan_chunk(range, self.reverse, self.chunk, |chunk| {
                // One copy into a buffer of the chunk's size: no regrowth.
                bytes.reserve(chunk.iter().map(|(k, v)| k.len() + v.len()).sum());
                pairs.reserve(chunk.len());
                for &(k, v) in chunk {
                    pairs.push_back((bytes.len(), k.len(), v.len()));
                    bytes.extend_from_slice(k);
                    bytes.extend_from_slice(v);
                }
                chunk.len()
            })?;
        debug_assert!(
            n <= self.chunk && n == self.pairs.len(),
            "a chunk stops at its size"
        );
        debug_assert!(
            self.pairs.front().is_none_or(|&(at, kl, _)| {
                let k = &self.bytes[at..at + kl];
                match self.reverse {
                    false => crate::btree::above(k, range.0),
                    true => crate::btree::below(k, range.1),
                }
            }),
            "a chunk starts past the pairs already returned"
        );
        self.done = n < self.chunk;
        self.chunk = (self.chunk * 2).clamp(FIRST_CHUNK, MAX_CHUNK);
        if let Some(&(at, kl, _)) = self.pairs.back() {
            let near = if self.reverse {
                &mut self.hi
            } else {
                &mut self.lo
            };
            // The bound's vector is reused: no allocation per chunk.
            let mut key = match std::mem::replace(near, Bound::Unbounded) {
                Bound::Included(k) | Bound::Excluded(k) => k,
                Bound::Unbounded => Vec::new(),
            };
            key.clear();
            key.extend_from_slice(&self.bytes[at..at + kl]);
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
        let (at, key_len, value_len) = self.pairs.pop_front()?;
        self.taken += 1;
        Some(Ok(Pair {
            chunk: Arc::clone(&self.bytes),
            at,
            key_len,
            value_len,
        }))
    }
}

/// A key and its value, as a [`Range`] returns them: lent from the chunk
/// the range read them in (shared by that chunk's pairs, freed with the
/// last of them), so returning a pair copies nothing. `into()` or
/// [`Pair::into_parts`] gives them as two vectors; a pair kept keeps its
/// chunk (at most 64 pairs) in memory, two vectors only their bytes.
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
    chunk: Arc<Vec<u8>>,
    /// Where the key starts in `chunk`; the value follows it.
    at: usize,
    key_len: usize,
    value_len: usize,
}

impl Pair {
    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.chunk[self.at..self.at + self.key_len]
    }

    /// The value.
    pub fn value(&self) -> &[u8] {
        let from = self.at + self.key_len;
        &self.chunk[from..from + self.value_len]
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

pub(crate) fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The least key greater than every key starting with `prefix`, if any.
pub(crate) fn prefix_end(prefix: &[u8]) -> Bound<Vec<u8>> {
    let mut end = prefix.to_vec();
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
        // Pairs dropped as they come: one buffer serves every chunk.
        let mut r = db.range(..);
        let first = r.next().expect("a pair").expect("pair");
        let (buffer, n) = (Arc::as_ptr(&first.chunk), first.key().len());
        drop(first);
        let rest = r
            .by_ref()
            .map(|p| p.expect("pair").key().len())
            .sum::<usize>();
        assert_eq!(n + rest, 4 * 150);
        assert_eq!(Arc::as_ptr(&r.bytes), buffer, "the buffer was reused");
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
        assert_eq!(prefix_end(b"ab"), Bound::Excluded(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Bound::Excluded(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), Bound::Unbounded);
        assert_eq!(prefix_end(b""), Bound::Unbounded);
    }
}
