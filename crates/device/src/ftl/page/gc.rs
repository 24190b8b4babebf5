//! Where the page FTL puts pages: each die appends to its open block and,
//! when its free blocks run low, collects greedily (the full block with the
//! fewest valid pages), moving those pages within the die.
//!
//! With planes, a die's block stands for one block on each plane, used,
//! collected and erased together: page `i` of a block is on plane
//! `i % planes`, row `i / planes`, so pages placed one after another fill
//! a row of the planes before the next.

use super::{PageFtl, Slot, DATA};
use crate::array::Cost;
use crate::ftl::map::{BlockState, NONE};
use crate::ftl::{assert_consistent, internal};
use crate::{DeviceStats, Nanos, Result};

impl PageFtl {
    /// Free blocks of die `u`.
    pub(super) fn free_blocks(&self, u: usize) -> usize {
        debug_assert!(self.dies[u].fresh <= self.per_die);
        (self.per_die - self.dies[u].fresh) as usize + self.dies[u].free.len()
    }

    /// Makes the next free block of die `u` the open block of stream `s`.
    pub(super) fn open_next(&mut self, u: usize, s: usize) -> Result<()> {
        let units = self.layout.units;
        let d = &mut self.dies[u];
        let b = if d.fresh < self.per_die {
            d.fresh += 1;
            (d.fresh - 1) * units + u as u32
        } else {
            d.free
                .pop_front()
                .ok_or_else(|| internal("a die ran out of free blocks"))?
        };
        debug_assert_eq!(b % units, u as u32, "a die opens its own blocks");
        debug_assert_eq!(self.blocks.state(b), BlockState::Free);
        debug_assert_eq!(self.blocks.valid(b), 0, "a free block holds no valid page");
        let old = std::mem::replace(&mut d.open[s], b);
        d.wp[s] = 0;
        if old != NONE {
            self.blocks.set_state(old, BlockState::Full);
        }
        self.blocks.set_state(b, BlockState::Open);
        Ok(())
    }

    /// Drops the physical page holding `lpn`, if any.
    pub(super) fn invalidate(&mut self, lpn: u32) {
        let old = self.l2p.get(lpn);
        if old != NONE {
            self.blocks.sub_valid(old / self.layout.ppb);
            self.l2p.set(lpn, NONE);
        }
        debug_assert_eq!(self.l2p.get(lpn), NONE);
    }

    /// Places `lpn` at the next page of the open block of its stream on
    /// die `u` (which has room); returns that page.
    pub(super) fn place(&mut self, u: usize, lpn: u32) -> u32 {
        let s = self.stream(lpn);
        let d = &mut self.dies[u];
        assert!(d.wp[s] < self.layout.ppb, "die {u}: the open block is full");
        let ppn = d.open[s] * self.layout.ppb + d.wp[s];
        d.wp[s] += 1;
        let open = d.open[s];
        debug_assert_eq!(self.blocks.state(open), BlockState::Open);
        debug_assert_eq!(
            self.l2p.get(lpn),
            NONE,
            "a page is placed once it is invalidated"
        );
        self.l2p.set(lpn, ppn);
        self.blocks.set_rev(ppn, lpn);
        self.blocks.add_valid(open);
        ppn
    }

    /// Places logical page `lpn` (data, or a translation page) on its die,
    /// collecting first where the die runs low, and queues its program
    /// with data available at `t`. Whose map entry it is, is the caller's
    /// to have looked up.
    pub(super) fn program_page(
        &mut self,
        lpn: u32,
        t: Nanos,
        slot: Option<Slot>,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        let (u, s) = (self.unit(lpn), self.stream(lpn));
        self.invalidate(lpn);
        if self.dies[u].wp[s] == self.layout.ppb {
            self.open_next(u, s)?;
            while self.free_blocks(u) < self.gc_free {
                self.collect(u, t, st, cost)?;
            }
        }
        let ppn = self.place(u, lpn);
        debug_assert_eq!(self.blocks.rev(ppn), lpn, "the maps agree");
        self.queue_program(u, ppn, t, slot, st, cost);
        Ok(())
    }

    /// Greedy garbage collection on die `u`: the full block with the fewest
    /// valid pages has them moved to the open block, then is erased (on
    /// every plane at once). Moved data pages update their map entries.
    fn collect(&mut self, u: usize, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Result<()> {
        self.flush_die(u, st, cost);
        let n = self.layout.ppb;
        let victim = (u as u32..self.blocks.len() as u32)
            .step_by(self.layout.units as usize)
            .filter(|&b| self.blocks.state(b) == BlockState::Full)
            .min_by_key(|&b| self.blocks.valid(b))
            .filter(|&b| self.blocks.valid(b) < n)
            .ok_or_else(|| internal("no block to garbage-collect"))?;
        let mut moved_tps = Vec::new();
        // Stops once every valid page is found: the rest are garbage.
        let mut left = self.blocks.valid(victim);
        for ppn in victim * n..(victim + 1) * n {
            if left == 0 {
                break;
            }
            let lpn = self.blocks.rev(ppn);
            if lpn == NONE || self.l2p.get(lpn) != ppn {
                continue;
            }
            left -= 1;
            let s = self.stream(lpn);
            if self.dies[u].wp[s] == n {
                self.open_next(u, s)?;
            }
            self.invalidate(lpn);
            let dst = self.place(u, lpn);
            self.move_page(u, ppn, dst, t, st, cost);
            self.moved(lpn, &mut moved_tps, st);
        }
        debug_assert_eq!(self.blocks.valid(victim), 0, "every valid page moved");
        debug_assert_eq!(self.blocks.state(victim), BlockState::Full);
        self.array.erase_planes(u, self.planes, t, st, cost);
        for p in 0..self.planes {
            st.erase_counts
                .add(u64::from(victim) * u64::from(self.planes) + u64::from(p));
        }
        self.blocks.set_state(victim, BlockState::Free);
        self.dies[u].free.push_back(victim);
        self.update_moved(moved_tps, t, st, cost);
        if self.audit.due() {
            assert_consistent("ftl (page)", self.audit.rounds, self.check_invariants());
        }
        Ok(())
    }

    /// Moves a page within die `u`: copy-back where both are on one plane,
    /// else out over the channel and back to the other plane.
    fn move_page(
        &mut self,
        u: usize,
        src: u32,
        dst: u32,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        if self.plane(src) == self.plane(dst) {
            self.array.copy(u, t, st, cost);
        } else {
            let ps = self.front.page_size;
            let ready = self.array.read(u, t, ps, st, cost);
            self.array.program(u, ready, ps, st, cost);
        }
        st.gc_page_moves += 1;
    }

    /// The plane page `ppn` is on.
    pub(super) fn plane(&self, ppn: u32) -> u32 {
        ppn % self.planes
    }

    /// Maps logical pages `[0, pages)` where a sequential fill of this fresh
    /// device would put them, without simulating the writes; with a cached
    /// mapping table, the translation pages of the filled range follow, as
    /// a drive writes its map out after the data.
    pub(super) fn fill(&mut self, pages: u32) -> Result<()> {
        self.l2p.set_filled(pages);
        let (units, ppb) = (self.layout.units, self.layout.ppb);
        for u in 0..units {
            let count = pages.saturating_sub(u).div_ceil(units);
            if count == 0 {
                continue;
            }
            let used = count.div_ceil(ppb);
            for k in 0..used {
                let b = k * units + u;
                let (state, valid) = if k + 1 < used {
                    (BlockState::Full, ppb)
                } else {
                    (BlockState::Open, count - k * ppb)
                };
                self.blocks.set_filled(b, state, valid, pages);
            }
            let d = &mut self.dies[u as usize];
            d.open[DATA] = (used - 1) * units + u;
            d.wp[DATA] = count - (used - 1) * ppb;
            d.fresh = used;
            debug_assert!(d.wp[DATA] >= 1 && d.wp[DATA] <= ppb && d.fresh <= self.per_die);
        }
        debug_assert!(
            pages == 0 || self.blocks.rev(self.l2p.get(pages - 1)) == pages - 1,
            "the fill's last page maps both ways"
        );
        self.fill_translation_pages(pages)
    }

    /// The maps against each other and the blocks: every mapped page maps
    /// back, lives in a used block on its own die, the valid counts match,
    /// each die's open block is open and its free blocks are free and empty.
    pub(super) fn check_invariants(&self) -> std::result::Result<(), String> {
        let (n, units) = (self.layout.ppb, self.layout.units);
        let mut valid = vec![0u32; self.blocks.len()];
        for (lpn, ppn) in (0..self.mapped).map(|l| (l, self.l2p.get(l))) {
            if ppn == NONE {
                continue;
            }
            if self.blocks.rev(ppn) != lpn {
                return Err(format!(
                    "lpn {lpn} -> ppn {ppn}, which holds {}",
                    self.blocks.rev(ppn)
                ));
            }
            if self.blocks.state(ppn / n) == BlockState::Free {
                return Err(format!("lpn {lpn} lives in free block {}", ppn / n));
            }
            if (ppn / n) % units != lpn % units {
                return Err(format!("lpn {lpn} is on the wrong die"));
            }
            valid[(ppn / n) as usize] += 1;
        }
        if (0..valid.len() as u32).any(|b| valid[b as usize] != self.blocks.valid(b)) {
            return Err("valid counts do not match the mapping".into());
        }
        for (u, d) in self.dies.iter().enumerate() {
            for &open in d.open.iter().filter(|&&b| b != NONE) {
                if self.blocks.state(open) != BlockState::Open || open % units != u as u32 {
                    return Err(format!("die {u}: bad open block"));
                }
            }
            let fresh = (d.fresh..self.per_die).map(|k| k * units + u as u32);
            if d.free
                .iter()
                .copied()
                .chain(fresh)
                .any(|b| self.blocks.state(b) != BlockState::Free || self.blocks.valid(b) != 0)
            {
                return Err(format!("die {u}: a free block is in use"));
            }
        }
        self.check_caches()
    }
}
