//! CFDC, clean-first dirty-clustered (Ou, Härder, Jin: "CFDC: a flash-aware
//! replacement policy for database buffer management", DaMoN 2009). The
//! pool is a working region (LRU, hot pages) and a priority region of
//! `pw` × pool frames fed by the working region's LRU end. The priority
//! region has a clean queue, evicted first in LRU order, and a dirty queue
//! of clusters (pages of one erase unit). With no clean page left, the
//! victim is the oldest page of the cluster of lowest priority
//!
//! `P(c) = IPD(c) / (n(c)² × (now − t(c)))`
//!
//! (`IPD`: sum of distances between the cluster's sorted page numbers, 1
//! for a lone page; `n`: its pages; `t`: when its last page joined), so
//! large, dense, old clusters go first, written together. A hit in the
//! priority region moves the page back to the working region.

use std::collections::{BTreeMap, HashMap};

use super::Recency;
use crate::page::PageId;
use crate::policy::{FrameInfo, FrameView, Policy};

/// CFDC over the pool's frames (see the module documentation).
#[derive(Debug)]
pub struct Cfdc {
    working: Recency,
    /// Priority region in the order pages joined it.
    priority: Recency,
    /// When each priority-region page joined (in `time` units).
    joined: HashMap<PageId, u64>,
    /// Priority region size in frames.
    window: usize,
    /// Page uses so far.
    time: u64,
}

impl Cfdc {
    /// Default priority window: the paper's experiments use half the pool.
    pub const WINDOW: f64 = 0.5;

    /// CFDC for a pool of `frames` frames, `pw` of them the priority region.
    pub fn new(frames: usize, pw: f64) -> Cfdc {
        Cfdc {
            working: Recency::default(),
            priority: Recency::default(),
            joined: HashMap::new(),
            window: ((frames as f64 * pw.clamp(0.0, 1.0)).round() as usize).max(1),
            time: 0,
        }
    }

    /// Moves LRU pages of the working region down until the priority region is full.
    fn refill(&mut self) {
        while self.priority.len() < self.window {
            let Some(p) = self.working.lru() else { break };
            self.working.remove(p);
            self.priority.touch(p);
            self.joined.insert(p, self.time);
        }
        debug_assert_eq!(
            self.joined.len(),
            self.priority.len(),
            "every priority page has its join time"
        );
        debug_assert!(self.priority.len() <= self.window || self.working.len() == 0);
    }

    /// The oldest page of the lowest-priority dirty cluster.
    fn cluster_victim(&self, frames: &dyn FrameView) -> Option<PageId> {
        // unit -> (pages in joining order, latest join)
        let mut clusters: BTreeMap<u64, (Vec<PageId>, u64)> = BTreeMap::new();
        for p in self.priority.iter().filter(|&p| frames.evictable(p)) {
            if let Some(i) = frames.info(p).filter(|i| i.dirty) {
                let c = clusters.entry(i.unit).or_default();
                c.0.push(p);
                c.1 = c.1.max(self.joined[&p]);
            }
        }
        let priority = |(pages, t): &(Vec<PageId>, u64)| {
            let mut sorted = pages.clone();
            sorted.sort_unstable();
            let ipd: u64 = sorted.windows(2).map(|w| w[1] - w[0]).sum::<u64>().max(1);
            let n = pages.len() as f64;
            ipd as f64 / (n * n * (self.time - t + 1) as f64)
        };
        clusters
            .values()
            .min_by(|a, b| priority(a).total_cmp(&priority(b)))
            .map(|(pages, _)| pages[0])
    }
}

impl Policy for Cfdc {
    fn name(&self) -> &'static str {
        "cfdc"
    }
    fn admit(&mut self, page: PageId) {
        self.time += 1;
        self.working.touch(page);
    }
    fn access(&mut self, page: PageId) {
        self.time += 1;
        if self.priority.remove(page) {
            self.joined.remove(&page);
        }
        self.working.touch(page);
    }
    fn forget(&mut self, page: PageId) {
        let was = self.working.remove(page) as u8 + self.priority.remove(page) as u8;
        debug_assert!(was <= 1, "page {page} sat in one region");
        self.joined.remove(&page);
    }
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
        self.refill();
        let clean = self
            .priority
            .iter()
            .find(|&p| frames.evictable(p) && frames.info(p).is_some_and(|i| !i.dirty));
        clean
            .or_else(|| self.cluster_victim(frames))
            .or_else(|| self.working.iter().find(|&p| frames.evictable(p)))
    }
    fn write_group(&mut self, victim: FrameInfo, frames: &dyn FrameView) -> Vec<PageId> {
        let mut g = frames.dirty_in_unit(victim.unit);
        g.retain(|&p| self.priority.contains(p));
        g
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::{refs, run};
    use super::*;

    #[test]
    fn cfdc_evicts_clean_pages_of_the_priority_region_first() {
        // Priority region = LRU half {0 (dirty), 1}: the clean 1 goes, not 0.
        let mut c = Cfdc::new(4, 0.5);
        let (victims, written) = run(&mut c, 4, 4, &refs("w0 r1 r2 r3 r4"));
        assert_eq!(victims, vec![1]);
        assert!(written.is_empty());
    }

    #[test]
    fn cfdc_writes_the_densest_cluster_together() {
        // Priority region {8 | 0, 1}, all dirty, 4 pages a unit: cluster
        // {0, 1} (IPD 1, two pages) ranks below the lone 8, so 0 is evicted
        // and 1 written with it; the now-clean 1 is the next victim.
        let mut c = Cfdc::new(6, 0.5);
        let r = refs("w8 w0 w1 r12 r13 r14 r20 r21");
        let (victims, written) = run(&mut c, 6, 4, &r);
        assert_eq!(victims, vec![0, 1]);
        assert_eq!(written, vec![0, 1]);
    }

    #[test]
    fn cfdc_hit_in_priority_region_returns_page_to_working_region() {
        // 0 and 1 drop to the priority region and 0 goes. The hit on 1 takes
        // it back up, so the next refill brings 2 and 3 down and 2 goes, not 1.
        let mut c = Cfdc::new(4, 0.5);
        let (victims, _) = run(&mut c, 4, 100, &refs("r0 r1 r2 r3 r4 r1 r5"));
        assert_eq!(victims, vec![0, 2]);
    }
}
