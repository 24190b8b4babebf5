//! FAST (fully-associative sector translation; Lee et al., "A log
//! buffer-based flash translation layer using fully-associative sector
//! translation", ACM TECS 2007): one sequential log block takes a run that
//! starts at a logical block's first page; every other write goes to a
//! shared pool of random log blocks, filled one after another. The
//! sequential block switches when the run fills it and is fully merged when
//! another run starts (partially, with partial merges on: the rest of the
//! block is copied in after the run and the sequential block becomes the
//! data block); when the pool is full, its oldest block is reclaimed by a
//! full merge of every logical block it holds a live page of.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::logblock::{Core, Scheme};
use crate::array::Cost;
use crate::{DeviceStats, Nanos, Result};

/// A random log block: the logical page each of its pages was written for.
struct Random {
    pb: u32,
    lpns: Vec<u32>,
}

/// The sequential log block: pages `0..next` of logical block `lb`, in order.
#[derive(Clone, Copy)]
struct Sequential {
    lb: u32,
    pb: u32,
    next: u32,
}

pub(super) struct Fast {
    /// Random log blocks at most (the spec's `log_blocks` less the sequential one).
    max: usize,
    /// Oldest first; only the newest has room.
    random: VecDeque<Random>,
    seq: Option<Sequential>,
    /// Logical page -> the log page holding its latest copy.
    copies: FxHashMap<u32, u32>,
    /// Whether a sequential block cut short merges partially.
    partial: bool,
}

impl Fast {
    pub fn new(log_blocks: u32, partial: bool) -> Self {
        assert!(
            log_blocks >= 2,
            "one sequential log block and at least one random"
        );
        Fast {
            max: log_blocks as usize - 1,
            random: VecDeque::new(),
            seq: None,
            copies: FxHashMap::default(),
            partial,
        }
    }

    /// Ends the sequential block of `s.lb` before its run is complete:
    /// partially merged (the rest copied in from wherever its latest copy
    /// is) when partial merges are on, else merged in full.
    fn close_run(
        &mut self,
        core: &mut Core,
        s: Sequential,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        if !self.partial {
            return self.merge(core, s.lb, t, st, cost);
        }
        self.seq = None;
        core.partial_merge(s.lb, s.pb, s.next, &*self, t, st, cost);
        // The block's pages are the data block's now: copies in it, and
        // the log copies of the pages copied after the run, are no longer
        // in a log. Newer copies of the run's pages stay.
        let (base, bp) = (s.pb * core.bp, core.bp);
        let rest = s.lb * bp + s.next..(s.lb + 1) * bp;
        self.copies
            .retain(|lpn, p| !(base..base + bp).contains(p) && !rest.contains(lpn));
        Ok(())
    }

    /// Full merge of `lb`: its log copies are gathered, so they die, and a
    /// sequential block of `lb` is emptied with them.
    fn merge(
        &mut self,
        core: &mut Core,
        lb: u32,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        core.full_merge(lb, &*self, t, st, cost)?;
        for lpn in lb * core.bp..(lb + 1) * core.bp {
            self.copies.remove(&lpn);
        }
        if let Some(s) = self.seq.filter(|s| s.lb == lb) {
            self.seq = None;
            core.retire(s.pb, t, st, cost);
        }
        Ok(())
    }

    /// Reclaims the oldest random log block: merges each logical block with
    /// a live page in it, then erases it.
    fn reclaim(
        &mut self,
        core: &mut Core,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        let victim = &self.random[0];
        let base = victim.pb * core.bp;
        let mut lbs: Vec<u32> = Vec::new();
        for (k, &lpn) in victim.lpns.iter().enumerate() {
            let live = self.copies.get(&lpn) == Some(&(base + k as u32));
            if live && !lbs.contains(&(lpn / core.bp)) {
                lbs.push(lpn / core.bp);
            }
        }
        for lb in lbs {
            self.merge(core, lb, t, st, cost)?;
        }
        let victim = self.random.pop_front().expect("the pool is full");
        core.retire(victim.pb, t, st, cost);
        debug_assert_eq!(core.check(&*self), Ok(()));
        Ok(())
    }

    /// The page the next random write goes to.
    fn random_page(
        &mut self,
        core: &mut Core,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<u32> {
        if self
            .random
            .back()
            .is_none_or(|r| r.lpns.len() == core.bp as usize)
        {
            if self.random.len() == self.max {
                self.reclaim(core, t, st, cost)?;
            }
            let pb = core.take()?;
            self.random.push_back(Random {
                pb,
                lpns: Vec::new(),
            });
        }
        let r = self.random.back().expect("made above");
        debug_assert!(
            r.lpns.len() < core.bp as usize,
            "the newest random log block has room"
        );
        debug_assert!(self.random.len() <= self.max);
        Ok(r.pb * core.bp + r.lpns.len() as u32)
    }

    /// The page a write of `lpn` goes to in the sequential block, if it
    /// starts or continues its run. Starting a run merges the one before.
    fn sequential_page(
        &mut self,
        core: &mut Core,
        lpn: u32,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<Option<u32>> {
        let (lb, off) = (lpn / core.bp, lpn % core.bp);
        if let Some(s) = self.seq.filter(|s| s.lb == lb && s.next == off) {
            return Ok(Some(s.pb * core.bp + off));
        }
        if off != 0 {
            return Ok(None);
        }
        if let Some(s) = self.seq {
            self.close_run(core, s, t, st, cost)?;
            debug_assert_eq!(core.check(&*self), Ok(()));
        }
        debug_assert!(self.seq.is_none(), "one sequential log block at a time");
        let pb = core.take()?;
        self.seq = Some(Sequential { lb, pb, next: 0 });
        Ok(Some(pb * core.bp))
    }
}

impl Scheme for Fast {
    fn log_copy(&self, lpn: u32) -> Option<u32> {
        self.copies.get(&lpn).copied()
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
        let dst = match self.sequential_page(core, lpn, t, st, cost)? {
            Some(dst) => dst,
            None => {
                let dst = self.random_page(core, t, st, cost)?;
                self.random.back_mut().expect("has room").lpns.push(lpn);
                dst
            }
        };
        // Looked up after any merge above, which may have moved it.
        let old = core.current(lpn, self);
        core.program_host(dst, old, partial, t, st, cost);
        self.copies.insert(lpn, dst);
        if let Some(s) = self.seq.as_mut().filter(|s| dst / core.bp == s.pb) {
            s.next += 1;
            if s.next == core.bp {
                let s = self.seq.take().expect("just advanced");
                // Its pages are the data block's now; newer copies stay.
                let base = s.pb * core.bp;
                self.copies
                    .retain(|_, p| !(base..base + core.bp).contains(p));
                core.switch(s.lb, s.pb, t, st, cost);
                debug_assert_eq!(core.check(&*self), Ok(()));
            }
        }
        Ok(())
    }

    fn log_blocks(&self) -> Vec<u32> {
        let random = self.random.iter().map(|r| r.pb);
        random.chain(self.seq.map(|s| s.pb)).collect()
    }

    fn check(&self, core: &Core) -> std::result::Result<(), String> {
        if self.random.len() > self.max {
            return Err(format!(
                "{} random log blocks of {}",
                self.random.len(),
                self.max
            ));
        }
        let n = self.random.len();
        if self
            .random
            .iter()
            .take(n.saturating_sub(1))
            .any(|r| r.lpns.len() != core.bp as usize)
        {
            return Err("a random log block other than the newest has room".into());
        }
        if self.seq.is_some_and(|s| s.next >= core.bp) {
            return Err("the sequential log block is full but not switched".into());
        }
        for (&lpn, &ppn) in &self.copies {
            let (pb, k) = (ppn / core.bp, ppn % core.bp);
            let random = self.random.iter().find(|r| r.pb == pb);
            let holds = match (random, self.seq.filter(|s| s.pb == pb)) {
                (Some(r), _) => r.lpns.get(k as usize) == Some(&lpn),
                (None, Some(s)) => lpn == s.lb * core.bp + k && k < s.next,
                (None, None) => false,
            };
            if !holds {
                return Err(format!("lpn {lpn}'s log copy {ppn} does not hold it"));
            }
        }
        Ok(())
    }
}
