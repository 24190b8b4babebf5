//! FAB, flash-aware buffer management (Jo, Kang, Park, Kim, Lee: "FAB:
//! flash-aware buffer management policy for portable media players", IEEE
//! Trans. Consumer Electronics 52(2), 2006). Pages are grouped by erase
//! unit ("block") and blocks kept in LRU order of their latest page use.
//! The victim block is the one holding the most buffered pages (the least
//! recently used among equals); all its pages leave the buffer and its
//! dirty pages are written together, so one unit write carries many pages.
//!
//! The pool asks for one victim at a time, so the chosen block is kept and
//! its pages (LRU first) are the next victims until none is left; its dirty
//! pages are all written with the first one ([`Policy::write_group`]).

use std::collections::HashMap;

use super::Recency;
use crate::page::PageId;
use crate::policy::{FrameInfo, FrameView, Policy};

/// FAB over the pool's frames (see the module documentation).
#[derive(Debug, Default)]
pub struct Fab {
    lru: Recency,
    /// The block being emptied.
    block: Option<u64>,
}

impl Fab {
    /// The LRU evictable page of `unit`.
    fn page_of(&self, unit: u64, frames: &dyn FrameView) -> Option<PageId> {
        self.lru
            .iter()
            .find(|&p| frames.evictable(p) && frames.info(p).is_some_and(|i| i.unit == unit))
    }

    /// The unit with the most evictable pages; among equals the one whose
    /// latest use is oldest.
    fn pick_block(&self, frames: &dyn FrameView) -> Option<u64> {
        // unit -> (pages, position of its latest use)
        let mut blocks: HashMap<u64, (usize, usize)> = HashMap::new();
        for (pos, p) in self.lru.iter().enumerate() {
            if let Some(i) = frames.info(p).filter(|_| frames.evictable(p)) {
                let b = blocks.entry(i.unit).or_default();
                b.0 += 1;
                b.1 = pos;
            }
        }
        blocks
            .into_iter()
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
            .map(|(unit, _)| unit)
    }
}

impl Policy for Fab {
    fn name(&self) -> &'static str {
        "fab"
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
        if let Some(p) = self.block.and_then(|u| self.page_of(u, frames)) {
            return Some(p);
        }
        self.block = self.pick_block(frames);
        let p = self.page_of(self.block?, frames);
        debug_assert!(p.is_some(), "the block picked holds an evictable page");
        p
    }
    fn write_group(&mut self, victim: FrameInfo, frames: &dyn FrameView) -> Vec<PageId> {
        debug_assert!(
            self.block == Some(victim.unit),
            "FAB empties the block it picked"
        );
        frames.dirty_in_unit(victim.unit)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::{refs, run};
    use super::*;

    #[test]
    fn fab_empties_the_fullest_block_and_writes_it_at_once() {
        // 4 pages a unit. Unit 0 holds 0, 1, 2 (0 and 2 dirty), unit 2 holds
        // 8 (dirty) and 9: unit 0 goes first, whole, its two dirty pages in
        // one write; then unit 2, the fullest left.
        let mut f = Fab::default();
        let r = refs("w0 r1 w2 r4 w8 r9 r12 r16 r20 r24");
        let (victims, written) = run(&mut f, 6, 4, &r);
        assert_eq!(victims, vec![0, 1, 2, 8]);
        assert_eq!(written, vec![0, 2, 8]);
    }

    #[test]
    fn fab_breaks_ties_by_block_recency() {
        // Units {0,1} and {2,3} hold two pages each; the hit on 0 makes unit
        // 0 the most recent, so unit 1 is emptied, LRU page first.
        let mut f = Fab::default();
        let (victims, _) = run(&mut f, 4, 2, &refs("r0 r2 r1 r3 r0 r5 r7"));
        assert_eq!(victims, vec![2, 3]);
    }
}
