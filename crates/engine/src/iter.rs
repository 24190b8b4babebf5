//! Streaming range reads: [`Range`] walks a key range a chunk at a time
//! (16 pairs, doubling up to 64), so a scan of any size holds at most one
//! chunk of pairs in memory. A chunk is copied into one buffer the
//! iterator keeps; a pair becomes two vectors only when it is returned,
//! so `range(..).take(10)` allocates for ten pairs, not sixteen.

use std::collections::VecDeque;
use std::ops::Bound;

use crate::db::Db;
use crate::error::Result;

/// Pairs fetched by the first chunk: short ranges read little ahead. Not
/// fitted to the peer benchmark's `take(10)` (10 measured faster there:
/// docs/benchmarks.md, "Read path, 2026-11-27"); a take of up to 16 pairs
/// reads one chunk.
const FIRST_CHUNK: usize = 16;
/// Pairs fetched per chunk at most (chunks double up to it).
const MAX_CHUNK: usize = 64;

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
    /// The chunk's keys and values, back to back.
    bytes: Vec<u8>,
    /// Per pair not yet returned: where its key starts, the key's and the
    /// value's lengths (the value follows the key).
    pairs: VecDeque<(usize, usize, usize)>,
    chunk: usize,
    done: bool,
}

impl<'a> Range<'a> {
    pub(crate) fn new(db: &'a Db, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>, reverse: bool) -> Self {
        Range {
            db,
            lo,
            hi,
            reverse,
            bytes: Vec::new(),
            pairs: VecDeque::new(),
            chunk: FIRST_CHUNK,
            done: false,
        }
    }

    /// Reads the next chunk and moves the range's near end past it.
    fn refill(&mut self) -> Result<()> {
        debug_assert!(
            self.pairs.is_empty(),
            "a chunk is read once the last is used"
        );
        self.bytes.clear();
        let range = (as_ref(&self.lo), as_ref(&self.hi));
        let (bytes, pairs) = (&mut self.bytes, &mut self.pairs);
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
        self.chunk = (self.chunk * 2).min(MAX_CHUNK);
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
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pairs.is_empty() && !self.done {
            if let Err(e) = self.refill() {
                self.done = true;
                return Some(Err(e));
            }
        }
        let (at, kl, vl) = self.pairs.pop_front()?;
        let (k, v) = self.bytes[at..at + kl + vl].split_at(kl);
        Some(Ok((k.to_vec(), v.to_vec())))
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

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(b"ab"), Bound::Excluded(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Bound::Excluded(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), Bound::Unbounded);
        assert_eq!(prefix_end(b""), Bound::Unbounded);
    }
}
