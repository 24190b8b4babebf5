//! Replacement policies beyond the seed's [`crate::Lru`], most of them
//! flash-aware (seed 000, §2.2): on flash a dirty eviction costs a write
//! (on raw NAND an erase-unit rewrite) while a clean one costs nothing, so
//! these trade a little hit ratio for fewer, or grouped, dirty evictions.
//!
//! | name | policy |
//! |---|---|
//! | `lru` | [`crate::Lru`]: seed 001's clock-counter LRU |
//! | `clock` | [`Clock`]: second chance (Corbató 1968), the engine's default |
//! | `cflru` | [`Cflru`]: clean-first LRU (Park et al. 2006) |
//! | `cfdc` | [`Cfdc`]: clean-first, dirty-clustered (Ou, Härder, Jin 2009) |
//! | `lru-wsr` | [`LruWsr`]: LRU with write sequence reordering (Jung et al. 2008) |
//! | `fab` | [`Fab`]: flash-aware buffer, block-level LRU (Jo et al. 2006) |
//! | `arc` | [`ArcPolicy`]: adaptive replacement cache (Megiddo & Modha 2003) |

mod arc;
mod cfdc;
mod cflru;
mod clock;
mod fab;
mod lru_wsr;

pub use arc::ArcPolicy;
pub use cfdc::Cfdc;
pub use cflru::Cflru;
pub use clock::Clock;
pub use fab::Fab;
pub use lru_wsr::LruWsr;

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::options::PolicyFactory;
use crate::page::PageId;
use crate::policy::{Lru, Policy};

/// Names [`policy_by_name`] knows, in the order the lab reports them.
pub const POLICY_NAMES: [&str; 7] = ["lru", "clock", "cflru", "cfdc", "lru-wsr", "fab", "arc"];

/// The policy called `name` with its default parameters, `None` if unknown.
pub fn policy_by_name(name: &str) -> Option<PolicyFactory> {
    let f: PolicyFactory = match name {
        "lru" => Arc::new(|_| Box::new(Lru::default()) as Box<dyn Policy>),
        "clock" => Arc::new(|_| Box::new(Clock::default()) as Box<dyn Policy>),
        "cflru" => Arc::new(|n| Box::new(Cflru::new(n, Cflru::WINDOW)) as Box<dyn Policy>),
        "cfdc" => Arc::new(|n| Box::new(Cfdc::new(n, Cfdc::WINDOW)) as Box<dyn Policy>),
        "lru-wsr" => Arc::new(|_| Box::new(LruWsr::default()) as Box<dyn Policy>),
        "fab" => Arc::new(|_| Box::new(Fab::default()) as Box<dyn Policy>),
        "arc" => Arc::new(|n| Box::new(ArcPolicy::new(n)) as Box<dyn Policy>),
        _ => return None,
    };
    Some(f)
}

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    page: PageId,
    /// Toward the LRU end.
    prev: u32,
    /// Toward the MRU end.
    next: u32,
}

/// Pages in recency order: a doubly linked list over a slab, so a use
/// (move to the MRU end), an insertion and a removal are O(1).
#[derive(Debug)]
pub(crate) struct Recency {
    slot: FxHashMap<PageId, u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    /// LRU end.
    head: u32,
    /// MRU end.
    tail: u32,
}

impl Default for Recency {
    fn default() -> Self {
        Recency {
            slot: FxHashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

impl Recency {
    fn unlink(&mut self, i: u32) {
        debug_assert!((i as usize) < self.nodes.len(), "node {i} exists");
        let Node { prev, next, .. } = self.nodes[i as usize];
        match prev {
            NIL => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    fn push_mru(&mut self, i: u32) {
        self.nodes[i as usize].prev = self.tail;
        self.nodes[i as usize].next = NIL;
        match self.tail {
            NIL => self.head = i,
            t => self.nodes[t as usize].next = i,
        }
        self.tail = i;
    }

    /// Moves `page` to the MRU end (inserting it if absent).
    pub fn touch(&mut self, page: PageId) {
        // A page used twice in a row (a scan's first leaf) is already at
        // the MRU end: no lookup.
        if self.tail != NIL && self.nodes[self.tail as usize].page == page {
            return;
        }
        let i = match self.slot.get(&page) {
            Some(&i) => {
                self.unlink(i);
                i
            }
            None => {
                let node = Node {
                    page,
                    prev: NIL,
                    next: NIL,
                };
                let i = match self.free.pop() {
                    Some(i) => {
                        self.nodes[i as usize] = node;
                        i
                    }
                    None => {
                        self.nodes.push(node);
                        u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 frames")
                    }
                };
                self.slot.insert(page, i);
                i
            }
        };
        self.push_mru(i);
        debug_assert_eq!(self.tail, i, "a touched page is the most recent");
        debug_assert_eq!(
            self.slot.len() + self.free.len(),
            self.nodes.len(),
            "every node is used or free"
        );
    }
    /// True if `page` was there.
    pub fn remove(&mut self, page: PageId) -> bool {
        match self.slot.remove(&page) {
            Some(i) => {
                self.unlink(i);
                self.free.push(i);
                debug_assert!(
                    self.slot.is_empty() == (self.head == NIL),
                    "an empty list has no head"
                );
                true
            }
            None => false,
        }
    }
    pub fn contains(&self, page: PageId) -> bool {
        self.slot.contains_key(&page)
    }
    pub fn len(&self) -> usize {
        self.slot.len()
    }
    /// LRU end first.
    pub fn iter(&self) -> impl Iterator<Item = PageId> + '_ {
        let mut at = self.head;
        std::iter::from_fn(move || {
            let n = self.nodes.get(at as usize)?;
            at = n.next;
            Some(n.page)
        })
    }
    pub fn lru(&self) -> Option<PageId> {
        debug_assert!(
            (self.head == NIL) == self.slot.is_empty(),
            "a list has a head iff it has pages"
        );
        self.nodes.get(self.head as usize).map(|n| n.page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_its_policy() {
        for name in POLICY_NAMES {
            let p = policy_by_name(name).expect(name)(16);
            assert_eq!(p.name(), name);
        }
        assert!(policy_by_name("mru").is_none());
    }

    #[test]
    fn every_policy_skips_pinned_pages() {
        use super::sim::Fake;
        for name in POLICY_NAMES {
            let mut p = policy_by_name(name).unwrap()(4);
            let mut f = Fake {
                resident: (0..4).collect(),
                dirty: [0, 1].into(),
                pinned: [0, 1, 3].into(),
                per_unit: 2,
                referenced: Default::default(),
            };
            for page in 0..4 {
                p.admit(page);
            }
            assert_eq!(p.victim(&f), Some(2), "{name}");
            f.pinned.insert(2);
            assert_eq!(p.victim(&f), None, "{name}");
        }
    }
}

#[cfg(test)]
pub(crate) mod sim {
    //! A tiny buffer pool for pinning policies' choices on reference strings.

    use std::cell::RefCell;
    use std::collections::{BTreeSet, HashSet};

    use crate::page::PageId;
    use crate::policy::{FrameInfo, FrameView, Policy};

    /// Resident pages; page `p` lives in erase unit `p / per_unit`.
    pub struct Fake {
        pub resident: BTreeSet<PageId>,
        pub dirty: HashSet<PageId>,
        pub pinned: HashSet<PageId>,
        pub per_unit: u64,
        /// Reference bits, as the pool's frames keep them.
        pub referenced: RefCell<HashSet<PageId>>,
    }

    impl FrameView for Fake {
        fn info(&self, page: PageId) -> Option<FrameInfo> {
            self.resident.contains(&page).then(|| FrameInfo {
                page,
                dirty: self.dirty.contains(&page),
                unit: page / self.per_unit,
            })
        }
        fn evictable(&self, page: PageId) -> bool {
            self.resident.contains(&page) && !self.pinned.contains(&page)
        }
        fn dirty_in_unit(&self, unit: u64) -> Vec<PageId> {
            let mut v: Vec<PageId> = self
                .resident
                .iter()
                .copied()
                .filter(|p| p / self.per_unit == unit && self.dirty.contains(p))
                .filter(|p| !self.pinned.contains(p))
                .collect();
            v.sort_unstable();
            v
        }
        fn referenced(&self, page: PageId) -> bool {
            self.referenced.borrow().contains(&page)
        }
        fn clear_reference(&self, page: PageId) {
            self.referenced.borrow_mut().remove(&page);
        }
    }

    /// Runs references (`'r'`/`'w'`, page) through a pool of `cap` frames;
    /// returns the victims in order and every page a dirty eviction wrote.
    pub fn run(
        p: &mut dyn Policy,
        cap: usize,
        per_unit: u64,
        refs: &[(char, PageId)],
    ) -> (Vec<PageId>, Vec<PageId>) {
        let mut f = Fake {
            resident: BTreeSet::new(),
            dirty: HashSet::new(),
            pinned: HashSet::new(),
            per_unit,
            referenced: RefCell::default(),
        };
        let (mut victims, mut written) = (Vec::new(), Vec::new());
        // The page used last: using it again is the same use, as the pool
        // has it for policies that read its bits.
        let mut last = None;
        for &(op, page) in refs {
            if f.resident.contains(&page) {
                match p.reads_bits() {
                    true if last != Some(page) => {
                        f.referenced.get_mut().insert(page);
                    }
                    true => {}
                    false => p.access(page),
                }
            } else {
                if f.resident.len() == cap {
                    let v = p.victim(&f).expect("a victim");
                    if f.dirty.contains(&v) {
                        let info = f.info(v).unwrap();
                        let mut g = p.write_group(info, &f);
                        g.retain(|q| {
                            *q != v && f.dirty.contains(q) && q / per_unit == v / per_unit
                        });
                        g.push(v);
                        g.sort_unstable();
                        for q in &g {
                            f.dirty.remove(q);
                        }
                        written.extend(g);
                    }
                    f.resident.remove(&v);
                    f.referenced.get_mut().remove(&v);
                    p.forget(v);
                    victims.push(v);
                }
                f.resident.insert(page);
                p.admit(page);
            }
            last = Some(page);
            if op == 'w' {
                f.dirty.insert(page);
            }
        }
        (victims, written)
    }

    /// `"r1 w2 r3"` as references.
    pub fn refs(s: &str) -> Vec<(char, PageId)> {
        s.split_whitespace()
            .map(|t| (t.chars().next().unwrap(), t[1..].parse().unwrap()))
            .collect()
    }
}
