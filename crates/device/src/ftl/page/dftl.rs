//! The cached mapping table (DFTL: Gupta, Kim and Urgaonkar, "DFTL: a
//! flash translation layer employing demand-based selective caching of
//! page-level address mappings", ASPLOS 2009). The map lives on flash in
//! translation pages, one flash page of 4-byte entries each; DRAM holds
//! `mapping_cache` bytes of them, least recently used out first. A lookup
//! whose page is not in DRAM reads it from flash (a page never written is
//! read too, as on a preconditioned drive, as unwritten data pages are);
//! evicting a page changed since it was read programs it (its old copy
//! becomes garbage). Garbage collection
//! updates the entries of the data pages it moves: in DRAM where their
//! translation page is, else by reading the page and writing it back, once
//! per page per collected block (DFTL's batch update).
//!
//! Translation pages are logical pages numbered after the data, placed and
//! collected like data pages; where each is (DFTL's global translation
//! directory) is kept in DRAM. Unlike DFTL, which caches single entries,
//! whole translation pages are cached: under uniform random access the hit
//! ratio is the same (the cached fraction of the map), under sequential
//! access a page-sized cache line hits more often.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::{PageFtl, TRANSLATION};
use crate::array::Cost;
use crate::{DeviceStats, Nanos, Result};

/// Which translation pages are in DRAM, in LRU order, and which are dirty.
pub(super) struct Cmt {
    /// Map entries per translation page.
    pub per_page: u32,
    /// Translation pages DRAM holds.
    capacity: usize,
    /// Translation page -> (its LRU stamp, dirty).
    pages: FxHashMap<u32, (u64, bool)>,
    /// LRU stamp -> translation page, oldest first.
    lru: BTreeMap<u64, u32>,
    stamp: u64,
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    Hit,
    /// Not in DRAM; loading it evicted this page, if it was dirty.
    Miss(Option<u32>),
}

impl Cmt {
    pub fn new(per_page: u32, capacity: usize) -> Self {
        assert!(per_page > 0 && capacity > 0, "a cache of translation pages");
        Cmt {
            per_page,
            capacity,
            pages: FxHashMap::default(),
            lru: BTreeMap::new(),
            stamp: 0,
        }
    }

    /// Looks up translation page `tp`, marking it dirty if the caller
    /// changes an entry; loads it on a miss, evicting the least recently
    /// used page if DRAM is full.
    pub fn lookup(&mut self, tp: u32, dirty: bool) -> Lookup {
        self.stamp += 1;
        if let Some((stamp, d)) = self.pages.get_mut(&tp) {
            self.lru.remove(stamp);
            *stamp = self.stamp;
            *d |= dirty;
            self.lru.insert(self.stamp, tp);
            return Lookup::Hit;
        }
        let mut evicted = None;
        if self.pages.len() == self.capacity {
            let (_, old) = self.lru.pop_first().expect("a full cache has pages");
            let (_, was_dirty) = self.pages.remove(&old).expect("listed pages are cached");
            evicted = was_dirty.then_some(old);
        }
        self.pages.insert(tp, (self.stamp, dirty));
        self.lru.insert(self.stamp, tp);
        debug_assert!(self.pages.len() <= self.capacity && self.pages.len() == self.lru.len());
        Lookup::Miss(evicted)
    }

    /// Marks `tp` dirty if DRAM holds it (an update that is no access:
    /// its place in the LRU order stays); whether it does.
    pub fn update(&mut self, tp: u32) -> bool {
        match self.pages.get_mut(&tp) {
            Some((_, d)) => {
                *d = true;
                true
            }
            None => false,
        }
    }

    /// The LRU list and the table agree.
    pub fn check(&self) -> std::result::Result<(), String> {
        let listed = self
            .lru
            .iter()
            .all(|(s, tp)| self.pages.get(tp).is_some_and(|p| p.0 == *s));
        if !listed || self.lru.len() != self.pages.len() || self.pages.len() > self.capacity {
            return Err("the mapping cache's LRU list and table disagree".into());
        }
        Ok(())
    }
}

impl PageFtl {
    /// The logical page number of translation page `tp`.
    fn tlpn(&self, tp: u32) -> u32 {
        self.logical + tp
    }

    /// Looks up the map entry of data page `lpn` from `t` (`dirty`: to
    /// change it); returns when it is known. A miss reads the translation
    /// page; a dirty page it evicts is queued for writing back.
    pub(super) fn translate(
        &mut self,
        lpn: u32,
        dirty: bool,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        let Some(cmt) = self.cmt.as_mut() else {
            return t;
        };
        debug_assert!(lpn < self.logical, "translation pages map data pages");
        let tp = lpn / cmt.per_page;
        let evicted = match cmt.lookup(tp, dirty) {
            Lookup::Hit => {
                st.ftl.map_cache_hits += 1;
                return t;
            }
            Lookup::Miss(evicted) => evicted,
        };
        if self.write_backs.contains(&tp) {
            // Evicted, not yet written back: DRAM still holds it.
            st.ftl.map_cache_hits += 1;
        } else {
            st.ftl.map_cache_misses += 1;
        }
        let ready = self.load(tp, t, st, cost);
        if let Some(old) = evicted {
            self.write_back(old);
        }
        ready
    }

    /// Reads translation page `tp` from flash unless a copy waits in DRAM
    /// to be written back; returns when it is in.
    fn load(&mut self, tp: u32, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Nanos {
        let tl = self.tlpn(tp);
        if self.write_backs.contains(&tp) {
            return t;
        }
        st.ftl.translation_reads += 1;
        let u = self.unit(tl);
        self.read_page(u, t, st, cost)
    }

    /// Queues translation page `tp` to be programmed.
    fn write_back(&mut self, tp: u32) {
        if !self.write_backs.contains(&tp) {
            self.write_backs.push(tp);
        }
    }

    /// Garbage collection moved logical page `lpn`: its map entry changes
    /// in DRAM, or its translation page joins `tps` (read and rewritten
    /// once the block is collected).
    pub(super) fn moved(&mut self, lpn: u32, tps: &mut Vec<u32>, st: &mut DeviceStats) {
        let Some(cmt) = self.cmt.as_mut() else {
            return;
        };
        if lpn >= self.logical {
            return; // a translation page: the directory in DRAM follows it
        }
        let tp = lpn / cmt.per_page;
        if cmt.update(tp) || self.write_backs.contains(&tp) {
            st.ftl.map_cache_hits += 1;
        } else if !tps.contains(&tp) {
            st.ftl.map_cache_misses += 1;
            tps.push(tp);
        }
    }

    /// DFTL's batch update after collecting a block: each translation page
    /// not in DRAM whose entries moved is read, changed and written back.
    pub(super) fn update_moved(
        &mut self,
        tps: Vec<u32>,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        for tp in tps {
            self.load(tp, t, st, cost);
            self.write_back(tp);
        }
    }

    /// Programs the translation pages queued for writing back, at `t`
    /// (garbage collection they cause may queue more).
    pub(super) fn write_back_all(
        &mut self,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        while let Some(tp) = self.write_backs.pop() {
            st.ftl.translation_writes += 1;
            let tl = self.tlpn(tp);
            self.program_page(tl, t, None, st, cost)?;
        }
        Ok(())
    }

    /// After a fill of `[0, pages)`, the translation pages of that range
    /// are written, in order, behind the data (no cost: the fill is set up,
    /// not simulated).
    pub(super) fn fill_translation_pages(&mut self, pages: u32) -> Result<()> {
        let Some(cmt) = self.cmt.as_ref() else {
            return Ok(());
        };
        for tp in 0..pages.div_ceil(cmt.per_page) {
            let tl = self.tlpn(tp);
            let u = self.unit(tl);
            if self.dies[u].wp[TRANSLATION] == self.layout.ppb {
                self.open_next(u, TRANSLATION)?;
            }
            self.place(u, tl);
        }
        Ok(())
    }
}
