//! Buffer replacement policies.
//!
//! A policy sees the resident pages through [`FrameView`] (dirty or clean,
//! erase unit, whether it may be evicted now) and picks victims. Flash-aware
//! policies (CFLRU, CFDC, LRU-WSR, FAB, ...) can prefer clean pages, and can
//! ask for other dirty pages of the victim's erase unit to be written with it
//! ([`Policy::write_group`]).

use crate::page::PageId;

/// What a policy may know about a resident page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// The page.
    pub page: PageId,
    /// Whether it differs from the page store's copy.
    pub dirty: bool,
    /// Erase unit (in the page store's numbering) the page lives in.
    pub unit: u64,
}

/// The buffer pool as a policy sees it.
pub trait FrameView {
    /// State of a resident page, `None` if not resident.
    fn info(&self, page: PageId) -> Option<FrameInfo>;
    /// False for pages a running write batch pins.
    fn evictable(&self, page: PageId) -> bool;
    /// Resident dirty, evictable pages of `unit`.
    fn dirty_in_unit(&self, unit: u64) -> Vec<PageId>;
    /// Whether `page`'s reference bit is set: it was used since the bit
    /// was last cleared (for a policy that [`Policy::reads_bits`]).
    fn referenced(&self, page: PageId) -> bool;
    /// Clears `page`'s reference bit.
    fn clear_reference(&self, page: PageId);
}

/// A buffer replacement policy.
pub trait Policy: Send + Sync {
    /// The name [`crate::policy_by_name`] knows it by.
    fn name(&self) -> &'static str;
    /// `page` entered the pool.
    fn admit(&mut self, page: PageId);
    /// `page` was used (read or written) while resident. Not called for
    /// a policy that [`Policy::reads_bits`].
    fn access(&mut self, page: PageId);
    /// Whether the policy learns of uses from the frames' reference bits
    /// ([`FrameView::referenced`]) instead of [`Policy::access`]: a use then
    /// sets a bit in the page's frame, taking no lock and touching no list,
    /// so readers on any number of threads record uses for free. A page
    /// used twice in a row by one thread (fetched, then read) is used once.
    fn reads_bits(&self) -> bool {
        false
    }
    /// `page` left the pool.
    fn forget(&mut self, page: PageId);
    /// A clean resident `page` was modified (write-aware policies such as
    /// LRU-WSR or CFLRU track this). Default: nothing.
    fn dirtied(&mut self, page: PageId) {
        let _ = page;
    }
    /// The page to evict next, among evictable ones; `None` if none is.
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId>;
    /// Other dirty pages to write together with `victim` (they stay resident,
    /// clean). Default: none.
    fn write_group(&mut self, victim: FrameInfo, frames: &dyn FrameView) -> Vec<PageId> {
        let _ = (victim, frames);
        Vec::new()
    }
}

/// Least recently used, as seed 001 implements it (§5.1.3): every use
/// makes the page the most recent; the victim is the least recent page
/// that may be evicted. Kept as a linked list, so a use is O(1).
#[derive(Debug, Default)]
pub struct Lru {
    order: crate::policies::Recency,
}

impl Policy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }
    fn admit(&mut self, page: PageId) {
        self.order.touch(page)
    }
    fn access(&mut self, page: PageId) {
        self.order.touch(page)
    }
    fn forget(&mut self, page: PageId) {
        let was = self.order.remove(page);
        debug_assert!(was, "page {page} was admitted");
    }
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
        self.order.iter().find(|&p| frames.evictable(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct All;
    impl FrameView for All {
        fn info(&self, page: PageId) -> Option<FrameInfo> {
            Some(FrameInfo {
                page,
                dirty: false,
                unit: 0,
            })
        }
        fn evictable(&self, page: PageId) -> bool {
            page != 2
        }
        fn dirty_in_unit(&self, _: u64) -> Vec<PageId> {
            Vec::new()
        }
        fn referenced(&self, _: PageId) -> bool {
            false
        }
        fn clear_reference(&self, _: PageId) {}
    }

    #[test]
    fn lru_evicts_least_recent_evictable() {
        let mut l = Lru::default();
        for p in [1, 2, 3] {
            l.admit(p);
        }
        l.access(1);
        assert_eq!(l.victim(&All), Some(3));
        l.forget(3);
        assert_eq!(l.victim(&All), Some(1));
    }
}
