//! LRU-WSR, LRU with write sequence reordering (Jung, Shin, Park, Noh:
//! "LRU-WSR: integration of LRU and writes sequence reordering for flash
//! memory", IEEE Trans. Consumer Electronics 54(3), 2008). One LRU list and
//! a cold flag per page. The LRU page is evicted if it is clean or a cold
//! dirty page; a dirty page without the flag gets it and a second chance at
//! the MRU end. A hit clears the flag. Hot dirty pages therefore stay, cold
//! dirty pages leave on their second trip to the tail.

use std::collections::HashSet;

use super::Recency;
use crate::page::PageId;
use crate::policy::{FrameView, Policy};

/// LRU-WSR over the pool's frames (see the module documentation).
#[derive(Debug, Default)]
pub struct LruWsr {
    lru: Recency,
    cold: HashSet<PageId>,
}

impl Policy for LruWsr {
    fn name(&self) -> &'static str {
        "lru-wsr"
    }
    fn admit(&mut self, page: PageId) {
        self.lru.touch(page);
    }
    fn access(&mut self, page: PageId) {
        self.lru.touch(page);
        self.cold.remove(&page);
    }
    fn forget(&mut self, page: PageId) {
        let was = self.lru.remove(page);
        debug_assert!(was, "page {page} was admitted");
        self.cold.remove(&page);
        debug_assert!(
            self.cold.len() <= self.lru.len(),
            "only resident pages are cold"
        );
    }
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
        // Two passes at most: the first flags every hot dirty page it passes.
        for _ in 0..2 {
            let mut passed = Vec::new();
            let found = self.lru.iter().filter(|&p| frames.evictable(p)).find(|p| {
                let hot_dirty = frames.info(*p).is_some_and(|i| i.dirty) && !self.cold.contains(p);
                if hot_dirty {
                    passed.push(*p);
                }
                !hot_dirty
            });
            for p in passed {
                let flagged = self.cold.insert(p);
                debug_assert!(flagged, "a page passed was hot");
                self.lru.touch(p);
            }
            if found.is_some() {
                debug_assert!(
                    found.is_some_and(|p| frames.evictable(p)),
                    "LRU-WSR picks an evictable page"
                );
                return found;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::{refs, run};
    use super::*;

    #[test]
    fn lru_wsr_gives_hot_dirty_pages_a_second_chance() {
        // LRU order 1(d) 2(c) 3(d): 1 is flagged cold and moved to MRU, 2 goes.
        // Then LRU order 3(d) 1(d, cold) 4: 3 is flagged and moved, 1 goes, written.
        let mut w = LruWsr::default();
        let (victims, written) = run(&mut w, 3, 100, &refs("w1 r2 w3 r4 r5"));
        assert_eq!(victims, vec![2, 1]);
        assert_eq!(written, vec![1]);
    }

    #[test]
    fn lru_wsr_hit_clears_the_cold_flag() {
        // 1 is flagged when 2 is evicted, then hit: back at the tail it is hot
        // again, so it gets another second chance and the clean 3 goes.
        let mut w = LruWsr::default();
        let (victims, _) = run(&mut w, 3, 100, &refs("w1 r2 r3 r4 w1 r3 r4 r5"));
        assert_eq!(victims, vec![2, 3]);
    }
}
