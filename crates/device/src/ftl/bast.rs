//! BAST (block-associative sector translation; Kim et al., "A space-efficient
//! flash translation layer for CompactFlash systems", 2002): each log block
//! belongs to one logical block and takes its writes in the order they come.
//! A log block written in order and in full becomes the data block (switch
//! merge); one that fills otherwise, or that is the oldest when a logical
//! block without one needs a log block, is merged with its data block into
//! a fresh block (full merge). With partial merges on, an evicted log block
//! written in order from the block's first page but not to its end gets the
//! rest copied in from the data block and becomes the data block (partial
//! merge, as Lee et al.'s FAST paper and Gupta et al.'s DFTL paper describe
//! it for log-block FTLs).

use std::collections::VecDeque;

use super::logblock::{Core, Scheme};
use super::map::NONE;
use crate::array::Cost;
use crate::{DeviceStats, Nanos, Result};

/// A log block and the logical block it belongs to.
struct Log {
    lb: u32,
    pb: u32,
    /// Pages written so far.
    used: u32,
    /// Offset in `lb` -> index of the log page holding its latest copy.
    latest: Vec<u32>,
    /// Every page so far went to the offset it was written at.
    in_order: bool,
}

pub(super) struct Bast {
    /// Pages of a block.
    bp: u32,
    max: usize,
    /// Oldest first. Few (the spec's `log_blocks`), so looked up linearly.
    logs: VecDeque<Log>,
    /// Whether an in-order log block that is not full merges partially.
    partial: bool,
}

impl Bast {
    pub fn new(log_blocks: u32, bp: u32, partial: bool) -> Self {
        assert!(log_blocks >= 1 && bp >= 1, "a log block of at least a page");
        Bast {
            bp,
            max: log_blocks as usize,
            logs: VecDeque::new(),
            partial,
        }
    }

    fn find(&self, lb: u32) -> Option<usize> {
        self.logs.iter().position(|l| l.lb == lb)
    }

    /// Merges log `log` with its data block and erases it.
    fn merge(
        &mut self,
        core: &mut Core,
        log: Log,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        if log.in_order && log.used == core.bp {
            core.switch(log.lb, log.pb, t, st, cost);
        } else if log.in_order && self.partial {
            // Out of the log already: the rest of the block is found in
            // its data block.
            core.partial_merge(log.lb, log.pb, log.used, &*self, t, st, cost);
        } else {
            // The log still lists `log` while the merge gathers its pages.
            self.logs.push_front(log);
            core.full_merge(self.logs[0].lb, &*self, t, st, cost)?;
            let log = self.logs.pop_front().expect("pushed above");
            core.retire(log.pb, t, st, cost);
        }
        debug_assert_eq!(core.check(&*self), Ok(()));
        Ok(())
    }

    /// The log block of `lb`, evicting the oldest if all are taken.
    fn log_for(
        &mut self,
        core: &mut Core,
        lb: u32,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<usize> {
        if let Some(i) = self.find(lb) {
            return Ok(i);
        }
        if self.logs.len() == self.max {
            let victim = self.logs.pop_front().expect("max >= 1");
            self.merge(core, victim, t, st, cost)?;
        }
        debug_assert!(self.logs.len() < self.max, "a log block is free");
        let pb = core.take()?;
        self.logs.push_back(Log {
            lb,
            pb,
            used: 0,
            latest: vec![NONE; core.bp as usize],
            in_order: true,
        });
        Ok(self.logs.len() - 1)
    }
}

impl Scheme for Bast {
    fn log_copy(&self, lpn: u32) -> Option<u32> {
        let bp = self.bp;
        let l = &self.logs[self.find(lpn / bp)?];
        let k = l.latest[(lpn % bp) as usize];
        (k != NONE).then(|| l.pb * bp + k)
    }

    fn write(
        &mut self,
        core: &mut Core,
        lpn: u32,
        partial: bool,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        let (lb, off) = (lpn / core.bp, lpn % core.bp);
        let i = self.log_for(core, lb, t, st, cost)?;
        // Looked up after any eviction above (of another block).
        let old = core.current(lpn, &*self);
        let l = &mut self.logs[i];
        debug_assert_eq!(l.lb, lb, "the log block belongs to the page's block");
        assert!(l.used < core.bp, "a full log block is merged at once");
        let k = l.used;
        let dst = l.pb * core.bp + k;
        l.used += 1;
        l.latest[off as usize] = k;
        l.in_order &= off == k;
        core.program_host(dst, old, partial, t, st, cost);
        if self.logs[i].used == core.bp {
            let full = self.logs.remove(i).expect("found above");
            self.merge(core, full, t, st, cost)?;
        }
        Ok(())
    }

    fn log_blocks(&self) -> Vec<u32> {
        self.logs.iter().map(|l| l.pb).collect()
    }

    fn check(&self, core: &Core) -> std::result::Result<(), String> {
        if self.logs.len() > self.max {
            return Err(format!("{} log blocks of {}", self.logs.len(), self.max));
        }
        for l in &self.logs {
            if self.logs.iter().filter(|m| m.lb == l.lb).count() != 1 {
                return Err(format!("logical block {} has two log blocks", l.lb));
            }
            if l.used >= core.bp {
                return Err(format!("log block {} is full but not merged", l.pb));
            }
            let mut written: Vec<u32> = l.latest.iter().copied().filter(|&k| k != NONE).collect();
            written.sort_unstable();
            written.dedup();
            if written.iter().any(|&k| k >= l.used) {
                return Err(format!("log block {} maps a page it has not written", l.pb));
            }
            let ordered = (0..l.used).all(|k| l.latest[k as usize] == k);
            if l.in_order && !ordered {
                return Err(format!("log block {} is not in order", l.pb));
            }
        }
        Ok(())
    }
}
