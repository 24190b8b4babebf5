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

/// Bytes a pair costs beyond its key and value: the map's share of a node
/// and the allocation's header (measured: about 50 bytes an entry).
pub(crate) const ENTRY_COST: usize = 56;
/// Bits of the Bloom filter per byte of budget: an eighth of a bit, so a
/// full memtable of pairs of 100 bytes or more has 10 bits a key or more
/// (two probes: under 4 % false positives), at 1/64 of its budget.
const FILTER_BITS_PER_BYTE: usize = 8;

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
#[derive(Debug)]
struct Slot {
    head: u64,
    bytes: Box<[u8]>,
}

const PUT: u8 = 1;
const DELETE: u8 = 0;

impl Slot {
    fn new(key: &[u8], value: Option<&[u8]>) -> Slot {
        let kl = u16::try_from(key.len()).expect("a key fits a page");
        let mut b = Vec::with_capacity(3 + key.len() + value.map_or(0, <[u8]>::len));
        b.extend_from_slice(&kl.to_le_bytes());
        b.extend_from_slice(key);
        b.push(if value.is_some() { PUT } else { DELETE });
        b.extend_from_slice(value.unwrap_or_default());
        Slot {
            head: head(key),
            bytes: b.into_boxed_slice(),
        }
    }

    /// A slot to search for `key` with.
    fn probe(key: &[u8]) -> Slot {
        Slot::new(key, None)
    }

    fn key(&self) -> &[u8] {
        let kl = usize::from(u16::from_le_bytes([self.bytes[0], self.bytes[1]]));
        &self.bytes[2..2 + kl]
    }

    /// The value, `None` for a delete.
    fn value(&self) -> Option<&[u8]> {
        let at = 2 + self.key().len();
        (self.bytes[at] == PUT).then(|| &self.bytes[at + 1..])
    }

    fn cost(&self) -> usize {
        self.bytes.len() + ENTRY_COST
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
}

/// A change the memtable holds: the value, or `None` for a delete.
pub(crate) type Change<'a> = (&'a [u8], Option<&'a [u8]>);

impl Memtable {
    /// An empty memtable for a budget of `budget` bytes.
    pub fn new(budget: usize) -> Memtable {
        let bits = (budget / FILTER_BITS_PER_BYTE).clamp(1 << 9, 1 << 30);
        Memtable {
            slots: BTreeSet::new(),
            bytes: 0,
            filter: Vec::new(),
            filter_bits: bits.next_power_of_two(),
        }
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

    /// What the memtable takes in memory, about: its pairs and its filter.
    pub fn memory(&self) -> usize {
        self.bytes + self.filter.len() * 8
    }

    /// What adding a change of `key` to `value` costs at most.
    pub fn cost(key: &[u8], value: Option<&[u8]>) -> usize {
        3 + key.len() + value.map_or(0, <[u8]>::len) + ENTRY_COST
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
        let slot = Slot::new(key, value);
        self.bytes += slot.cost();
        if let Some(old) = self.slots.replace(slot) {
            self.bytes -= old.cost();
        }
        debug_assert!(self.get(key) == Some(value), "a change reads back");
    }

    /// Forgets every change (they are in the tree now).
    pub fn clear(&mut self) {
        *self = Memtable {
            filter_bits: self.filter_bits,
            ..Memtable::new(0)
        };
    }

    /// Changes in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Change<'_>> + '_ {
        self.slots.iter().map(|s| (s.key(), s.value()))
    }

    /// Changes with keys in `(lo, hi)`, in key order (reversible).
    pub fn range<'a>(
        &'a self,
        lo: Bound<&'a [u8]>,
        hi: Bound<&'a [u8]>,
    ) -> impl DoubleEndedIterator<Item = Change<'a>> + 'a {
        let empty = match (lo, hi) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b || (a == b && !matches!((lo, hi), (Bound::Included(_), Bound::Included(_))))
            }
            _ => false,
        };
        // BTreeSet::range panics on an empty or inverted range.
        let probe = |b: Bound<&[u8]>| match b {
            Bound::Included(k) => Bound::Included(Slot::probe(k)),
            Bound::Excluded(k) => Bound::Excluded(Slot::probe(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let bounds = match empty || self.slots.is_empty() {
            true => None,
            false => Some((probe(lo), probe(hi))),
        };
        bounds
            .into_iter()
            .flat_map(move |b| self.slots.range(b))
            .map(|s| (s.key(), s.value()))
    }

    /// One step of a scan through the memtable. `pairs` are the tree's
    /// next pairs in scan order from the near bound of `(lo, hi)`, the
    /// last ones of the range if `ended`; they are merged with the changes
    /// held here over the keys they span (to the far bound once `ended`),
    /// and `emit` gets the result in scan order until `left` pairs are
    /// out. Returns the key the next step starts after (the last tree
    /// key), or `None` when the scan is done.
    #[allow(clippy::too_many_arguments)]
    pub fn overlay<'b>(
        &'b self,
        pairs: &[Pair<'b>],
        ended: bool,
        (lo, hi): (Bound<&'b [u8]>, Bound<&'b [u8]>),
        reverse: bool,
        mut left: usize,
        mut emit: impl FnMut(&'b [u8], &'b [u8]),
    ) -> Option<&'b [u8]> {
        let last = pairs.last().map(|p| p.0).filter(|_| !ended);
        let span = match (reverse, last) {
            (_, None) => (lo, hi),
            (false, Some(k)) => (lo, Bound::Included(k)),
            (true, Some(k)) => (Bound::Included(k), hi),
        };
        let mut held = self.range(span.0, span.1);
        let mut next_held = move || {
            if reverse {
                held.next_back()
            } else {
                held.next()
            }
        };
        let mut m = next_held();
        // Whether `a` comes before `b` in scan order.
        let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
        let mut tree = pairs.iter().copied();
        let mut t = tree.next();
        while left > 0 {
            let (k, v) = match (m, t) {
                (None, None) => break,
                (Some((mk, mv)), Some((tk, _))) if !before(tk, mk) => {
                    if mk == tk {
                        t = tree.next();
                    }
                    m = next_held();
                    match mv {
                        Some(v) => (mk, v),
                        None => continue, // deleted
                    }
                }
                (Some((mk, Some(v))), None) => {
                    m = next_held();
                    (mk, v)
                }
                (Some((_, None)), None) => {
                    m = next_held();
                    continue;
                }
                (_, Some(p)) => {
                    t = tree.next();
                    p
                }
            };
            emit(k, v);
            left -= 1;
        }
        last.filter(|_| left > 0)
    }
}

/// A pair lent from the pool or the memtable.
type Pair<'p> = crate::btree::Pair<'p>;

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
        assert_eq!((m.bytes(), m.memory()), (pairs, pairs + (1 << 20) / 64));
        m.clear();
        assert!(m.is_empty() && m.memory() == 0 && m.get(b"a").is_none());
    }

    proptest::proptest! {
        #[test]
        fn ranges_and_reads_agree_with_a_map(
            ops in proptest::collection::vec((0u8..40, proptest::option::of(0u8..4)), 0..120),
            lo in 0u8..45, hi in 0u8..45, inc in proptest::bool::ANY,
        ) {
            let mut m = Memtable::new(0);
            let mut model = BTreeMap::new();
            for (k, v) in &ops {
                let val = v.map(|v| vec![v; usize::from(v)]);
                m.apply(&[*k], val.as_deref());
                model.insert(vec![*k], val);
            }
            for k in 0u8..45 {
                let want = model.get(&vec![k]).map(|v| v.as_deref());
                proptest::prop_assert_eq!(m.get(&[k]), want);
            }
            let (l, h) = ([lo], [hi]);
            let (lb, hb) = match inc {
                true => (Bound::Included(&l[..]), Bound::Included(&h[..])),
                false => (Bound::Excluded(&l[..]), Bound::Excluded(&h[..])),
            };
            let got: Vec<(Vec<u8>, Option<Vec<u8>>)> = m
                .range(lb, hb)
                .rev()
                .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                .collect();
            let want: Vec<(Vec<u8>, Option<Vec<u8>>)> = model
                .iter()
                .filter(|(k, _)| crate::btree::above(k, lb) && crate::btree::below(k, hb))
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
