//! The memtable: the pairs of small batches, held in memory until they are
//! drained into the tree.
//!
//! A batch of 1,000 random puts into the B-tree finds, reads, changes and
//! often splits a thousand scattered leaves, about 10 µs a put, and logs
//! each leaf's operations and each split's new page. An in-place store with
//! a log instead logs the batch's pairs (a pairs entry in its record) and
//! keeps them here, where reads look first. Once the memtable holds more
//! than its budget, or before a write that goes to the tree directly, the
//! whole of it is drained into the tree in key order as one batch, whose
//! record says so (a drained entry): replay empties the memtable there.
//! Checkpoints carry its pairs into the new epoch as they carry dirty pages,
//! so the log always holds what the memtable holds.
//!
//! A point read that misses here (most, while the memtable is small next to
//! the tree) is answered by a Bloom filter without searching the map.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::hash::Hasher;
use std::ops::Bound;
use std::sync::atomic::{self, AtomicUsize};
use std::sync::{Arc, OnceLock};

use crate::btree::{Pair, Span};

/// Bytes a pair costs beyond its key and value: the set's share of a node
/// (24 bytes an entry, nodes part full), the allocation's header and its
/// reference counts.
pub(crate) const ENTRY_COST: usize = 72;
/// Bytes of budget per bit of the Bloom filter: a full memtable of pairs
/// of 100 bytes or more then has 10 bits a key or more (two probes: under
/// 4 % false positives), and the filter takes 1/64 of the budget.
const BUDGET_PER_FILTER_BIT: usize = 8;

/// A key's first 8 bytes (zeros past its end) as a big-endian integer:
/// keys whose heads differ are in the order of their heads.
pub(crate) fn head(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

/// A key and its change, in one allocation: `[key len u16][key][tag][value]`
/// (tag 1 put, 0 delete), beside the key's head. Ordered by its key: the
/// head first, so a search through the set's nodes seldom loads a key.
/// Shared with the [`Frozen`] copy.
#[derive(Debug)]
struct Slot {
    head: u64,
    bytes: Arc<[u8]>,
}

const PUT: u8 = 1;
const DELETE: u8 = 0;

/// The change a slot's bytes hold.
fn change(b: &[u8]) -> Change<'_> {
    let kl = usize::from(u16::from_le_bytes([b[0], b[1]]));
    let key = &b[2..2 + kl];
    (key, (b[2 + kl] == PUT).then(|| &b[3 + kl..]))
}

/// The pair a put's slot holds, lent from it (the key at 2, the value
/// past the tag, as [`change`] reads them).
fn lent(b: &Arc<[u8]>) -> Pair<'_> {
    let (key, value) = change(b);
    let value = value.expect("a put's slot");
    let span = Span::new(b, 2, key.len(), value.len());
    debug_assert_eq!(span.value(b), value, "the span reads the slot's value");
    Pair { buf: b, span }
}

/// Bytes of a slot for a change of `key` to `value`.
fn slot_len(key: &[u8], value: Option<&[u8]>) -> usize {
    3 + key.len() + value.map_or(0, <[u8]>::len)
}

impl Slot {
    fn new(key: &[u8], value: Option<&[u8]>) -> Slot {
        let kl = u16::try_from(key.len()).expect("a key fits a page");
        let mut b = Vec::with_capacity(slot_len(key, value));
        b.extend_from_slice(&kl.to_le_bytes());
        b.extend_from_slice(key);
        b.push(if value.is_some() { PUT } else { DELETE });
        b.extend_from_slice(value.unwrap_or_default());
        Slot {
            head: head(key),
            bytes: b.into(),
        }
    }

    /// A slot to search for `key` with.
    fn probe(key: &[u8]) -> Slot {
        Slot::new(key, None)
    }

    fn key(&self) -> &[u8] {
        change(&self.bytes).0
    }

    fn value(&self) -> Option<&[u8]> {
        change(&self.bytes).1
    }

    fn cost(&self) -> usize {
        self.bytes.len() + ENTRY_COST
    }
}

/// A sorted copy of the memtable's heads and slots, made for reads once
/// it has stopped changing: a binary search over one array of 8-byte heads
/// loads a few cache lines, where a search of the set misses the cache at
/// about every level of its nodes (about 1 µs a range at 50,000 keys).
#[derive(Debug)]
pub(crate) struct Frozen {
    heads: Vec<u64>,
    slots: Vec<Arc<[u8]>>,
}

impl Frozen {
    /// How many slots hold keys before `key` (with `at_too`: or at it).
    fn seek(&self, key: &[u8], at_too: bool) -> usize {
        let h = head(key);
        // The heads alone place a key but among slots of its head (seldom
        // more than none): whole keys are compared only there.
        let lo = self.heads.partition_point(|&x| x < h);
        let hi = match self.heads.get(lo) == Some(&h) {
            true => lo + self.heads[lo..].partition_point(|&x| x == h),
            false => lo,
        };
        lo + self.slots[lo..hi].partition_point(|b| {
            let o = change(b).0.cmp(key);
            o == Ordering::Less || (at_too && o == Ordering::Equal)
        })
    }
}

impl PartialEq for Slot {
    fn eq(&self, o: &Slot) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Slot {}

impl PartialOrd for Slot {
    fn partial_cmp(&self, o: &Slot) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Slot {
    fn cmp(&self, o: &Slot) -> Ordering {
        self.head.cmp(&o.head).then_with(|| self.key().cmp(o.key()))
    }
}

/// Pairs not yet in the tree, the newest change of each key.
#[derive(Debug)]
pub(crate) struct Memtable {
    slots: BTreeSet<Slot>,
    /// Bytes of the slots and their [`ENTRY_COST`].
    bytes: usize,
    /// Two bits a key ever put here since the last clear (empty: none).
    filter: Vec<u64>,
    /// Bits of the filter, a power of two.
    filter_bits: usize,
    /// Reads since the last change, until it is frozen.
    reads: AtomicUsize,
    /// The sorted copy reads use, made once enough of them came since the
    /// last change (each change drops it).
    frozen: OnceLock<Frozen>,
}

/// A change the memtable holds: the value, or `None` for a delete.
pub(crate) type Change<'a> = (&'a [u8], Option<&'a [u8]>);

impl Memtable {
    /// An empty memtable for a budget of `budget` bytes.
    pub fn new(budget: usize) -> Memtable {
        let bits = (budget / BUDGET_PER_FILTER_BIT).clamp(1 << 9, 1 << 30);
        Memtable {
            slots: BTreeSet::new(),
            bytes: 0,
            filter: Vec::new(),
            filter_bits: bits.next_power_of_two(),
            reads: AtomicUsize::new(0),
            frozen: OnceLock::new(),
        }
    }

    /// The sorted copy, made now if the memtable has served reads as many
    /// as an eighth of its keys since its last change (making it costs
    /// about that many searches of the set).
    fn frozen(&self) -> Option<&Frozen> {
        if let Some(f) = self.frozen.get() {
            return Some(f);
        }
        if self.reads.fetch_add(1, atomic::Ordering::Relaxed) < self.slots.len() / 8 {
            return None;
        }
        Some(self.freeze())
    }

    /// Makes the sorted copy now (if not made): for a memtable built in
    /// one go, as recovery builds it, whose next change may be far off.
    pub fn freeze(&self) -> &Frozen {
        self.frozen.get_or_init(|| Frozen {
            heads: self.slots.iter().map(|s| s.head).collect(),
            slots: self.slots.iter().map(|s| Arc::clone(&s.bytes)).collect(),
        })
    }

    /// The filter's two bits for `key`.
    fn probes(&self, key: &[u8]) -> [usize; 2] {
        let mut h = rustc_hash::FxHasher::default();
        h.write(key);
        let h = h.finish();
        // The high bits are the well-mixed ones.
        let shift = 64 - self.filter_bits.trailing_zeros();
        [
            (h >> shift) as usize,
            (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize,
        ]
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Bytes of its pairs, as its budget counts them.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// What the memtable takes in memory, about: its pairs, its filter and
    /// its sorted copy, if made.
    pub fn memory(&self) -> usize {
        let copy = self.frozen.get().map_or(0, |f| f.heads.len() * 24);
        self.bytes + self.filter.len() * 8 + copy
    }

    /// What adding a change of `key` to `value` costs at most.
    pub fn cost(key: &[u8], value: Option<&[u8]>) -> usize {
        slot_len(key, value) + ENTRY_COST
    }

    /// `key`'s newest change here: `Some(None)` a delete, `None` nothing.
    pub fn get(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        if self.slots.is_empty() {
            return None;
        }
        let bits = &self.filter;
        if !self
            .probes(key)
            .iter()
            .all(|&b| bits[b / 64] & (1 << (b % 64)) != 0)
        {
            return None;
        }
        if let Some(f) = self.frozen() {
            let i = f.seek(key, false);
            return f
                .slots
                .get(i)
                .map(|b| change(b))
                .filter(|(k, _)| *k == key)
                .map(|(_, v)| v);
        }
        self.slots.get(&Slot::probe(key)).map(Slot::value)
    }

    /// Records a put (`Some`) or a delete (`None`) of `key`.
    pub fn apply(&mut self, key: &[u8], value: Option<&[u8]>) {
        if self.filter.is_empty() {
            self.filter = vec![0; self.filter_bits / 64];
        }
        for b in self.probes(key) {
            self.filter[b / 64] |= 1 << (b % 64);
        }
        // A change ends the copy reads used.
        if self.frozen.get().is_some() || *self.reads.get_mut() > 0 {
            self.frozen = OnceLock::new();
            *self.reads.get_mut() = 0;
        }
        let slot = Slot::new(key, value);
        self.bytes += slot.cost();
        if let Some(old) = self.slots.replace(slot) {
            self.bytes -= old.cost();
        }
        debug_assert!(
            self.slots.get(&Slot::probe(key)).map(Slot::value) == Some(value),
            "a change reads back"
        );
    }

    /// Forgets every change (they are in the tree now).
    pub fn clear(&mut self) {
        *self = Memtable {
            filter_bits: self.filter_bits,
            ..Memtable::new(0)
        };
    }

    /// Changes in key order.
    pub fn iter(&self) -> impl Iterator<Item = Change<'_>> + '_ {
        self.slots.iter().map(|s| change(&s.bytes))
    }

    /// The slots of keys in `(lo, hi)`, in key order (descending if
    /// `reverse`). One search, from the near bound: the far one ends the
    /// walk.
    fn range<'a>(
        &'a self,
        (lo, hi): (Bound<&'a [u8]>, Bound<&'a [u8]>),
        reverse: bool,
    ) -> impl Iterator<Item = (u64, &'a Arc<[u8]>)> + 'a {
        let mut walk = match self.frozen() {
            Some(f) => {
                // The first slot inside the near bound, counting from it.
                let at = match (reverse, lo, hi) {
                    (false, Bound::Included(k), _) => f.seek(k, false),
                    (false, Bound::Excluded(k), _) => f.seek(k, true),
                    (true, _, Bound::Included(k)) => f.seek(k, true),
                    (true, _, Bound::Excluded(k)) => f.seek(k, false),
                    (false, Bound::Unbounded, _) => 0,
                    (true, _, Bound::Unbounded) => f.slots.len(),
                };
                Walk::Frozen(f, at)
            }
            None => {
                let probe = |b: Bound<&[u8]>| match b {
                    Bound::Included(k) => Bound::Included(Slot::probe(k)),
                    Bound::Excluded(k) => Bound::Excluded(Slot::probe(k)),
                    Bound::Unbounded => Bound::Unbounded,
                };
                Walk::Set(match reverse {
                    false => self.slots.range((probe(lo), Bound::Unbounded)),
                    true => self.slots.range((Bound::Unbounded, probe(hi))),
                })
            }
        };
        let far = if reverse { lo } else { hi };
        let far_head = match far {
            Bound::Included(k) | Bound::Excluded(k) => head(k),
            Bound::Unbounded => 0,
        };
        std::iter::from_fn(move || walk.next(reverse)).take_while(move |&(h, b)| {
            // A head short of the far bound's puts its key inside, one
            // past it outside, both unread: the walk ends there without
            // loading the slot.
            let o = h.cmp(&far_head);
            match (far, reverse) {
                (Bound::Unbounded, _) => true,
                _ if o != Ordering::Equal => (o == Ordering::Less) != reverse,
                (_, false) => crate::btree::below(change(b).0, hi),
                (_, true) => crate::btree::above(change(b).0, lo),
            }
        })
    }

    /// One step of a scan through the memtable. `pairs` are the tree's
    /// next pairs in scan order from the near bound of `(lo, hi)`, the
    /// last ones of the range if `ended`; they are merged with the changes
    /// held here over the keys they span (to the far bound once `ended`),
    /// and `emit` gets the result in scan order until `left` pairs are
    /// out, lent from the pages and slots holding them. Returns the key
    /// the next step starts after (the last tree key), or `None` when the
    /// scan is done.
    #[allow(clippy::too_many_arguments)]
    pub fn overlay<'b>(
        &'b self,
        pairs: &[Pair<'b>],
        ended: bool,
        (lo, hi): (Bound<&'b [u8]>, Bound<&'b [u8]>),
        reverse: bool,
        mut left: usize,
        mut emit: impl FnMut(Pair<'b>),
    ) -> Option<&'b [u8]> {
        let last = pairs.last().map(Pair::key).filter(|_| !ended);
        let span = match (reverse, last) {
            (_, None) => (lo, hi),
            (false, Some(k)) => (lo, Bound::Included(k)),
            (true, Some(k)) => (Bound::Included(k), hi),
        };
        let mut held = self.range(span, reverse);
        let mut m = held.next();
        let mut tree = pairs.iter().copied();
        let mut t = tree.next();
        while left > 0 {
            // Which is first in scan order: the tree's pair (`Less`), the
            // held change (`Greater`), or both (one key: the change wins).
            // Heads decide without loading the change's key but for a tie.
            let first = match (m, t) {
                (None, None) => break,
                (Some(_), None) => Ordering::Greater,
                (None, Some(_)) => Ordering::Less,
                (Some((h, b)), Some(tp)) => {
                    let k = tp.key();
                    let o = head(k).cmp(&h).then_with(|| k.cmp(change(b).0));
                    if reverse {
                        o.reverse()
                    } else {
                        o
                    }
                }
            };
            let p = match (first, m, t) {
                (Ordering::Less, _, Some(tp)) => {
                    t = tree.next();
                    tp
                }
                (_, Some((_, b)), _) => {
                    if first == Ordering::Equal {
                        t = tree.next();
                    }
                    m = held.next();
                    match change(b).1 {
                        Some(_) => lent(b),
                        None => continue, // deleted
                    }
                }
                _ => unreachable!("the side first holds a pair"),
            };
            emit(p);
            left -= 1;
        }
        last.filter(|_| left > 0)
    }
}

/// Where a walk through the memtable is: in the set, or at a slot of the
/// frozen copy (forward: the next one; reverse: the one after the next).
enum Walk<'a> {
    Set(std::collections::btree_set::Range<'a, Slot>),
    /// The copy and the slot (the walk's caller ends it at the far bound).
    Frozen(&'a Frozen, usize),
}

impl<'a> Walk<'a> {
    fn next(&mut self, reverse: bool) -> Option<(u64, &'a Arc<[u8]>)> {
        match self {
            Walk::Set(r) => match reverse {
                false => r.next(),
                true => r.next_back(),
            }
            .map(|s| (s.head, &s.bytes)),
            Walk::Frozen(f, at) => {
                let i = match reverse {
                    false => *at,
                    true => at.checked_sub(1)?,
                };
                let h = *f.heads.get(i)?;
                *at = if reverse { i } else { i + 1 };
                Some((h, &f.slots[i]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_newest_change_of_a_key_wins_and_reads_back() {
        let mut m = Memtable::new(1 << 20);
        assert_eq!(m.get(b"a"), None);
        m.apply(b"a", Some(b"1"));
        m.apply(b"b", None);
        m.apply(b"a", Some(b"22"));
        assert_eq!(m.get(b"a"), Some(Some(&b"22"[..])));
        assert_eq!(m.get(b"b"), Some(None));
        assert_eq!(m.get(b"c"), None);
        assert_eq!(m.len(), 2);
        let held: Vec<Change> = m.iter().collect();
        assert_eq!(held, [(&b"a"[..], Some(&b"22"[..])), (&b"b"[..], None)]);
        let pairs = Memtable::cost(b"a", Some(b"22")) + Memtable::cost(b"b", None);
        // The reads above froze it (two keys: the first read does).
        let copy = 2 * 24;
        assert_eq!(
            (m.bytes(), m.memory()),
            (pairs, pairs + (1 << 20) / 64 + copy)
        );
        m.clear();
        assert!(m.is_empty() && m.memory() == 0 && m.get(b"a").is_none());
    }

    proptest::proptest! {
        #[test]
        fn reads_and_ranges_agree_with_a_map_before_and_once_frozen(
            ops in proptest::collection::vec((0u8..40, proptest::option::of(0u8..4)), 0..120),
            lo in 0u8..45, hi in 0u8..45, inc in proptest::bool::ANY,
            shared in 0usize..12,
        ) {
            // Keys share their first `shared` bytes: from 8 on, every key
            // has the same head and only whole keys order them.
            let key = |k: u8| [vec![b'p'; shared], vec![k]].concat();
            let mut m = Memtable::new(0);
            let mut model = BTreeMap::new();
            for (k, v) in &ops {
                let val = v.map(|v| vec![v; usize::from(v)]);
                m.apply(&key(*k), val.as_deref());
                model.insert(key(*k), val);
            }
            // The first pass ranges over the set (but for a few keys),
            // then its reads freeze it (an eighth of at most 40 keys is
            // fewer reads than 45); the second reads the frozen copy.
            for pass in 0..2 {
                let (l, h) = (key(lo), key(hi));
                let (lb, hb) = match inc {
                    true => (Bound::Included(&l[..]), Bound::Included(&h[..])),
                    false => (Bound::Excluded(&l[..]), Bound::Excluded(&h[..])),
                };
                for reverse in [false, true] {
                    let got: Vec<(Vec<u8>, Option<Vec<u8>>)> = m
                        .range((lb, hb), reverse)
                        .map(|(_, b)| change(b))
                        .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                        .collect();
                    let mut want: Vec<(Vec<u8>, Option<Vec<u8>>)> = model
                        .iter()
                        .filter(|(k, _)| crate::btree::above(k, lb) && crate::btree::below(k, hb))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if reverse {
                        want.reverse();
                    }
                    proptest::prop_assert_eq!(got, want, "pass {} reverse {}", pass, reverse);
                }
                for k in 0u8..45 {
                    let want = model.get(&key(k)).map(|v| v.as_deref());
                    proptest::prop_assert_eq!(m.get(&key(k)), want, "pass {}", pass);
                }
                proptest::prop_assert!(m.is_empty() || m.frozen.get().is_some(), "frozen after a pass");
            }
        }
    }
}
