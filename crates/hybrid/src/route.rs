//! Request routing (HeteroDrive §3.4) and the hot-read tracker for promotion.

use rustc_hash::FxHashMap;

/// Where a write goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Appended to the SSD's log.
    Ssd,
    /// Written in place on the HDD.
    Hdd,
}

/// Size threshold plus the sequential-run counter.
#[derive(Debug, Clone)]
pub struct Router {
    size_threshold: u64,
    seq_threshold: u64,
    /// Bytes written consecutively, halved by each non-consecutive write so the
    /// router turns to "random" quickly.
    run: u64,
    next: Option<u64>,
}

impl Router {
    /// A router with the options' thresholds and no run yet.
    pub fn new(size_threshold: u64, seq_threshold: u64) -> Self {
        Router {
            size_threshold,
            seq_threshold,
            run: 0,
            next: None,
        }
    }

    /// Routes a write of `len` bytes at `offset` and updates the counter.
    pub fn route(&mut self, offset: u64, len: u64) -> Route {
        if self.next == Some(offset) {
            self.run += len;
        } else {
            self.run /= 2;
        }
        self.next = Some(offset + len);
        debug_assert!(self.size_threshold > 0, "validated options");
        if len >= self.size_threshold || self.run >= self.seq_threshold {
            Route::Hdd
        } else {
            Route::Ssd
        }
    }

    /// The counter, in bytes.
    pub fn run(&self) -> u64 {
        self.run
    }
}

/// Counts small random HDD reads per 4 KiB block; a block read often enough
/// is worth a copy in the cache.
pub(crate) struct HotReads {
    counts: FxHashMap<u64, u32>,
    after: u32,
    limit: usize,
    next: Option<u64>,
}

impl HotReads {
    pub fn new(after: u32, limit: usize) -> Self {
        HotReads {
            counts: FxHashMap::default(),
            after,
            limit,
            next: None,
        }
    }

    /// Notes a read of `[offset, offset+len)`; `small` says it is below the
    /// size threshold. Returns whether HDD data it touches should be promoted.
    pub fn note(&mut self, offset: u64, len: u64, small: bool) -> bool {
        let random = self.next != Some(offset);
        self.next = Some(offset + len);
        if !(small && random) {
            return false;
        }
        if self.counts.len() >= self.limit {
            // Crude ageing: forget everything rather than keep an LRU of counters.
            self.counts.clear();
        }
        debug_assert!(
            self.counts.len() < self.limit.max(1),
            "the table is bounded"
        );
        let c = self.counts.entry(offset >> 12).or_insert(0);
        *c += 1;
        if *c >= self.after {
            self.counts.remove(&(offset >> 12));
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_writes_go_to_the_hdd() {
        let mut r = Router::new(64 << 10, 128 << 10);
        assert_eq!(r.route(1 << 30, 64 << 10), Route::Hdd);
        assert_eq!(r.route(0, 4096), Route::Ssd);
    }

    #[test]
    fn a_sequential_run_turns_to_the_hdd_and_random_writes_turn_it_back_fast() {
        let mut r = Router::new(64 << 10, 128 << 10);
        let mut off = 1 << 20;
        let mut routes = Vec::new();
        for _ in 0..40 {
            routes.push(r.route(off, 8192));
            off += 8192;
        }
        // 8 KiB consecutive writes: the counter reaches 128 KiB after 16 more.
        let first_hdd = routes.iter().position(|&x| x == Route::Hdd).unwrap();
        assert_eq!(first_hdd, 16);
        assert!(routes[first_hdd..].iter().all(|&x| x == Route::Hdd));
        assert_eq!(r.run(), 39 * 8192);
        // Non-consecutive writes halve it: 312 KiB -> 156 -> 78 (random again).
        assert_eq!(r.route(0, 8192), Route::Hdd);
        assert_eq!(r.run(), 39 * 8192 / 2);
        assert_eq!(r.route(1 << 25, 8192), Route::Ssd);
        assert_eq!(r.run(), 39 * 8192 / 4);
    }

    #[test]
    fn promotion_needs_repeated_small_random_reads() {
        let mut h = HotReads::new(2, 100);
        assert!(!h.note(8192, 4096, true));
        assert!(!h.note(1 << 20, 4096, true));
        assert!(h.note(8192, 4096, true), "second random read of the block");
        assert!(!h.note(8192, 4096, true), "count restarts after promotion");
        // Sequential or large reads never count.
        assert!(!h.note(12288, 4096, true));
        assert!(!h.note(1 << 24, 1 << 20, false));
        assert!(!h.note(1 << 24, 1 << 20, false));
    }
}
