//! ARC, adaptive replacement cache (Megiddo & Modha: "ARC: a self-tuning,
//! low overhead replacement cache", FAST 2003): the strongest classic,
//! flash-unaware baseline. `T1` holds pages seen once recently, `T2` pages
//! seen at least twice; the ghost lists `B1`, `B2` remember pages recently
//! evicted from each. A miss that hits `B1` grows the target size `p` of
//! `T1`, one that hits `B2` shrinks it; the victim is `T1`'s LRU page when
//! `T1` exceeds `p`, else `T2`'s.
//!
//! The pool asks for a victim before it names the missing page, so the
//! paper's tie rule (`|T1| = p` and the miss is in `B2`) cannot apply: `T1`
//! gives the victim when `|T1| > p` or `T2` is empty. The B+-tree asks for
//! a page again right after fetching it (once to find, once to change): a
//! request for the page requested just before is the same reference, or
//! every page would reach `T2` on its first use and ARC would be LRU.

use super::Recency;
use crate::page::PageId;
use crate::policy::{FrameView, Policy};

/// ARC over the pool's frames (see the module documentation).
#[derive(Debug)]
pub struct ArcPolicy {
    c: usize,
    /// Target size of `T1`.
    p: usize,
    t1: Recency,
    t2: Recency,
    b1: Recency,
    b2: Recency,
    /// The page requested last.
    last: Option<PageId>,
}

impl ArcPolicy {
    /// ARC for a pool of `frames` frames.
    pub fn new(frames: usize) -> ArcPolicy {
        ArcPolicy {
            c: frames.max(1),
            p: 0,
            t1: Recency::default(),
            t2: Recency::default(),
            b1: Recency::default(),
            b2: Recency::default(),
            last: None,
        }
    }

    /// Ghost lists within the paper's bounds: `|T1| + |B1| ≤ c`, all four ≤ 2c.
    fn trim_ghosts(&mut self) {
        debug_assert!(
            self.p <= self.c,
            "T1's target {} within {} frames",
            self.p,
            self.c
        );
        while self.t1.len() + self.b1.len() > self.c {
            let Some(g) = self.b1.lru() else { break };
            self.b1.remove(g);
        }
        while self.t1.len() + self.t2.len() + self.b1.len() + self.b2.len() > 2 * self.c {
            let Some(g) = self.b2.lru().or(self.b1.lru()) else {
                break;
            };
            self.b1.remove(g);
            self.b2.remove(g);
        }
        debug_assert!(
            self.t1.len() + self.b1.len() <= self.c.max(self.t1.len()),
            "|T1| + |B1| <= c"
        );
        debug_assert!(
            self.b1.len() + self.b2.len() <= 2 * self.c,
            "the ghosts stay within 2c"
        );
    }
}

fn first_evictable(list: &Recency, frames: &dyn FrameView) -> Option<PageId> {
    list.iter().find(|&p| frames.evictable(p))
}

impl Policy for ArcPolicy {
    fn name(&self) -> &'static str {
        "arc"
    }
    fn admit(&mut self, page: PageId) {
        let (b1, b2) = (self.b1.len().max(1), self.b2.len().max(1));
        if self.b1.remove(page) {
            self.p = (self.p + (b2 / b1).max(1)).min(self.c);
            self.t2.touch(page);
        } else if self.b2.remove(page) {
            self.p = self.p.saturating_sub((b1 / b2).max(1));
            self.t2.touch(page);
        } else {
            self.t1.touch(page);
        }
        self.last = Some(page);
        self.trim_ghosts();
    }
    fn access(&mut self, page: PageId) {
        if self.last.replace(page) == Some(page) {
            return;
        }
        self.t1.remove(page);
        self.t2.touch(page);
    }
    fn forget(&mut self, page: PageId) {
        if self.t1.remove(page) {
            self.b1.touch(page);
        } else if self.t2.remove(page) {
            self.b2.touch(page);
        }
        self.trim_ghosts();
    }
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
        let from_t1 = self.t1.len() > 0 && (self.t1.len() > self.p || self.t2.len() == 0);
        if from_t1 {
            first_evictable(&self.t1, frames).or_else(|| first_evictable(&self.t2, frames))
        } else {
            first_evictable(&self.t2, frames).or_else(|| first_evictable(&self.t1, frames))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::{refs, run};
    use super::*;

    #[test]
    fn arc_keeps_frequent_pages_through_a_scan() {
        // 1 and 2 are used twice (T2); the one-shot scan 3..6 only churns T1,
        // where LRU would have evicted 1 and 2.
        let mut a = ArcPolicy::new(3);
        let (victims, _) = run(&mut a, 3, 100, &refs("r1 r2 r1 r2 r3 r4 r5 r6 r1 r2"));
        assert_eq!(victims, vec![3, 4, 5]);
    }

    #[test]
    fn arc_takes_an_immediate_repeat_for_the_same_reference() {
        // 1 and 2 are each requested twice in a row on loading: still T1, so
        // the frequent 1 (used again later) survives the one-shot 3 and 4.
        let mut a = ArcPolicy::new(3);
        let (victims, _) = run(&mut a, 3, 100, &refs("r1 r1 r2 r2 r1 r3 r3 r4 r4"));
        assert_eq!(victims, vec![2]);
        assert!(a.t2.contains(1) && a.t1.contains(3) && a.t1.contains(4));
    }

    #[test]
    fn arc_ghost_hit_in_b1_grows_t1() {
        // 2 is evicted from T1 into B1; its return raises p to 1 and puts it
        // in T2 beside the frequent 1.
        let mut a = ArcPolicy::new(2);
        let (victims, _) = run(&mut a, 2, 100, &refs("r1 r2 r1 r3 r2"));
        assert_eq!(victims, vec![2, 3]);
        assert_eq!(a.p, 1);
        assert!(a.t2.contains(1) && a.t2.contains(2) && a.b1.contains(3));
    }
}
