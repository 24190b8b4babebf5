//! CFLRU, clean-first LRU (Park, Jung, Kang, Kim, Lee: "CFLRU: a
//! replacement algorithm for flash memory", CASES 2006). The LRU list is
//! split into a working region at the MRU end and a clean-first region of
//! `w` × pool frames at the LRU end. The victim is the least recently used
//! clean page of the clean-first region; only when that region holds no
//! clean page is the LRU (dirty) page evicted. Dirty pages thus stay longer
//! and are often updated again before they are written, at the price of
//! evicting clean pages a little early.

use super::Recency;
use crate::page::PageId;
use crate::policy::{FrameView, Policy};

/// CFLRU over the pool's frames (see the module documentation).
#[derive(Debug)]
pub struct Cflru {
    lru: Recency,
    /// Frames in the clean-first region.
    window: usize,
}

impl Cflru {
    /// Default window, as a fraction of the pool. The paper finds the best
    /// window grows with the write ratio; half the pool did best on the
    /// lab's write-heavy mixes while keeping hits close to LRU's.
    pub const WINDOW: f64 = 0.5;

    /// A pool of `frames` frames with a clean-first window of `w` × frames.
    pub fn new(frames: usize, w: f64) -> Cflru {
        Cflru {
            lru: Recency::default(),
            window: ((frames as f64 * w.clamp(0.0, 1.0)).round() as usize).max(1),
        }
    }
}

impl Policy for Cflru {
    fn name(&self) -> &'static str {
        "cflru"
    }
    fn admit(&mut self, page: PageId) {
        self.lru.touch(page);
    }
    fn access(&mut self, page: PageId) {
        self.lru.touch(page);
    }
    fn forget(&mut self, page: PageId) {
        let was = self.lru.remove(page);
        debug_assert!(was, "page {page} was admitted");
    }
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
        let mut candidates = self.lru.iter().filter(|&p| frames.evictable(p));
        let mut first = None;
        debug_assert!(self.window >= 1, "the clean-first region holds a frame");
        for p in candidates.by_ref().take(self.window) {
            if frames.info(p).is_some_and(|i| !i.dirty) {
                return Some(p);
            }
            first = first.or(Some(p));
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::{refs, run};
    use super::*;

    #[test]
    fn cflru_evicts_clean_pages_of_the_window_first() {
        // Park et al.'s Figure 2 situation: LRU order P1(d) P2(c) P3(d) P4(c)
        // | P5 P6 ... with a 4-frame clean-first window: victims P2 then P4.
        let mut c = Cflru::new(8, 0.5);
        let r = refs("w1 r2 w3 r4 r5 r6 r7 r8 r9 r10");
        let (victims, written) = run(&mut c, 8, 100, &r);
        assert_eq!(victims, vec![2, 4]);
        assert!(written.is_empty());
    }

    #[test]
    fn cflru_falls_back_to_the_lru_dirty_page() {
        // Window holds only dirty pages: the LRU page goes, written.
        let mut c = Cflru::new(4, 0.5);
        let (victims, written) = run(&mut c, 4, 100, &refs("w1 w2 r3 r4 r5"));
        assert_eq!((victims, written), (vec![1], vec![1]));
    }

    #[test]
    fn cflru_with_no_window_is_lru_on_the_tail() {
        let mut c = Cflru::new(4, 0.0);
        // A window of at least one frame: the LRU page, dirty or not.
        let (victims, _) = run(&mut c, 4, 100, &refs("w1 r2 r3 r4 r5"));
        assert_eq!(victims, vec![1]);
    }
}
