//! CLOCK (second chance; Corbató 1968): pages sit on a circle in load order
//! with a reference bit that a hit sets. The hand passes pages whose bit is
//! set, clearing it, and evicts the first page whose bit is clear. An LRU
//! approximation without list moves on hits, as buffer managers use it.
//! The bits live in the pool's frames ([`Policy::reads_bits`]): a hit sets
//! its frame's bit and never reaches the policy, so readers on several
//! threads record hits without a lock. A request for the page requested
//! just before is the same use (the B+-tree asks for a page again right
//! after fetching it): otherwise every page would have its bit set on
//! loading and CLOCK would be FIFO.
//!
//! Wrapped in a policy that does not read bits (the lab's, which counts
//! the uses it passes on), CLOCK gets its uses through [`Policy::access`]
//! instead and keeps their bits itself, with the same rule; the hand reads
//! both.

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
    /// Bits of the uses that came through [`Policy::access`].
    referenced: HashSet<PageId>,
    /// The page requested last, of those.
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
    fn reads_bits(&self) -> bool {
        true
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
            let found = self
                .ring
                .iter()
                .filter(|&p| frames.evictable(p))
                .find(|&p| {
                    let second_chance = frames.referenced(p) || self.referenced.contains(&p);
                    if second_chance {
                        passed.push(p);
                    }
                    !second_chance
                });
            for p in passed {
                frames.clear_reference(p);
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

    /// CLOCK inside a policy that does not read bits (the lab's counting
    /// wrapper): its uses come through `access`.
    struct Wrapped(Clock);

    impl Policy for Wrapped {
        fn name(&self) -> &'static str {
            self.0.name()
        }
        fn admit(&mut self, page: PageId) {
            self.0.admit(page)
        }
        fn access(&mut self, page: PageId) {
            self.0.access(page)
        }
        fn forget(&mut self, page: PageId) {
            self.0.forget(page)
        }
        fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
            self.0.victim(frames)
        }
    }

    #[test]
    fn uses_through_access_choose_the_victims_bits_do() {
        for s in [
            "r1 r2 r3 r1 r2 r4 r5",
            "r1 r1 r2 r3 r4",
            "r1 r2 r1 r3 r2 r4 r1 r5 r6 r2 r7 r1 r1 r8 r3 r9",
        ] {
            let (bits, _) = run(&mut Clock::default(), 3, 4, &refs(s));
            let (through, _) = run(&mut Wrapped(Clock::default()), 3, 4, &refs(s));
            assert!(!bits.is_empty(), "{s}: pages were evicted");
            assert_eq!(bits, through, "{s}");
        }
    }

    #[test]
    fn clock_is_fifo_without_hits() {
        // Immediate repeats are not hits: 1 goes first, as it came first.
        let mut c = Clock::default();
        let (victims, _) = run(&mut c, 2, 4, &refs("r1 r1 r2 r3 r4"));
        assert_eq!(victims, vec![1, 2]);
    }
}
