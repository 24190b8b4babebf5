//! CLOCK (second chance; Corbató 1968): pages sit on a circle in load order
//! with a reference bit that a hit sets. The hand passes pages whose bit is
//! set, clearing it, and evicts the first page whose bit is clear. An LRU
//! approximation without list moves on hits, as buffer managers use it.
//! A request for the page requested just before is the same use (the
//! B+-tree asks for a page again right after fetching it): otherwise every
//! page would have its bit set on loading and CLOCK would be FIFO.

use std::collections::HashSet;

use super::Recency;
use crate::page::PageId;
use crate::policy::{FrameView, Policy};

/// CLOCK over the pool's frames (see the module documentation).
#[derive(Debug, Default)]
pub struct Clock {
    /// The circle, starting at the hand: a page given a second chance goes
    /// behind the hand, i.e. to the end.
    ring: Recency,
    referenced: HashSet<PageId>,
    /// The page requested last.
    last: Option<PageId>,
}

impl Policy for Clock {
    fn name(&self) -> &'static str {
        "clock"
    }
    fn admit(&mut self, page: PageId) {
        self.ring.touch(page);
        self.last = Some(page);
    }
    fn access(&mut self, page: PageId) {
        if self.last.replace(page) != Some(page) {
            self.referenced.insert(page);
        }
    }
    fn forget(&mut self, page: PageId) {
        let was = self.ring.remove(page);
        debug_assert!(was, "page {page} was on the circle");
        self.referenced.remove(&page);
    }
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
        // Two turns at most: the first clears every bit it passes.
        for _ in 0..2 {
            let mut passed = Vec::new();
            let found = self.ring.iter().filter(|&p| frames.evictable(p)).find(|p| {
                let second_chance = self.referenced.contains(p);
                if second_chance {
                    passed.push(*p);
                }
                !second_chance
            });
            for p in passed {
                self.referenced.remove(&p);
                self.ring.touch(p);
            }
            if found.is_some() {
                debug_assert!(
                    found.is_some_and(|p| frames.evictable(p)),
                    "CLOCK picks an evictable page"
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
    fn clock_gives_referenced_pages_a_second_chance() {
        // 1 and 2 are hit while resident: loading 4 passes them and evicts 3;
        // loading 5 evicts 1 (its bit was cleared by the first pass).
        let mut c = Clock::default();
        let (victims, _) = run(&mut c, 3, 4, &refs("r1 r2 r3 r1 r2 r4 r5"));
        assert_eq!(victims, vec![3, 1]);
    }

    #[test]
    fn clock_is_fifo_without_hits() {
        // Immediate repeats are not hits: 1 goes first, as it came first.
        let mut c = Clock::default();
        let (victims, _) = run(&mut c, 2, 4, &refs("r1 r1 r2 r3 r4"));
        assert_eq!(victims, vec![1, 2]);
    }
}
