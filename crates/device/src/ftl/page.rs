//! Page mapping: any logical page anywhere, greedy garbage collection per die.

use std::collections::VecDeque;

use super::map::{BlockState, Blocks, L2p, Layout, NONE};
use super::{assert_consistent, internal, Audit, Front, FtlParams};
use crate::array::{page_pieces, size_erase_counts, Cost, NandArray, Timeline};
use crate::spec::{require, require_multiple};
use crate::{Completion, DeviceError, DeviceStats, Geometry, Model, Nanos, Result};

struct Die {
    open: u32,
    /// Next page to program in `open`.
    wp: u32,
    /// Blocks of this die never used yet: the die's `fresh`-th block onwards.
    fresh: u32,
    /// Erased blocks, in the order they were erased (used after the fresh ones).
    free: VecDeque<u32>,
}

pub(super) struct PageFtl {
    front: Front,
    array: NandArray,
    layout: Layout,
    gc_free: usize,
    /// Blocks per die.
    per_die: u32,
    l2p: L2p,
    /// State, valid pages and reverse entries of each physical block.
    /// Block `b` is on die `b % units`.
    blocks: Blocks,
    dies: Vec<Die>,
    ctrl_free: Nanos,
    host: Timeline,
    audit: Audit,
}

impl PageFtl {
    pub(super) fn new(p: &FtlParams, front: Front, array: NandArray) -> Result<Self> {
        require_multiple("ftl", front.capacity, p.page_size, "page_size")?;
        require(
            p.gc_free_blocks >= 1,
            "ftl: gc_free_blocks must be at least 1",
        )?;
        let units = array.units() as u64;
        let n = p.pages_per_block;
        let logical = front.capacity / p.page_size;
        let per_die = logical.div_ceil(units);
        let blocks_per_die =
            ((per_die as f64 * (1.0 + p.over_provisioning)) / n as f64).ceil() as u64;
        let needed = per_die.div_ceil(n) + u64::from(p.gc_free_blocks) + 1;
        if blocks_per_die < needed {
            return Err(DeviceError::Spec(format!(
                "ftl: over_provisioning leaves {} spare blocks per die, garbage collection needs at least {} (raise over_provisioning or capacity, or lower pages_per_block, dies or gc_free_blocks)",
                blocks_per_die.saturating_sub(per_die.div_ceil(n)),
                needed - per_die.div_ceil(n)
            )));
        }
        let blocks = blocks_per_die.saturating_mul(units);
        require(
            blocks.saturating_mul(n) < u64::from(NONE) - 1 && logical < u64::from(NONE),
            "ftl: too many pages to map (raise page_size)",
        )?;
        let layout = Layout {
            units: units as u32,
            ppb: n as u32,
        };
        let dies = (0..units as u32)
            .map(|u| Die {
                open: u,
                wp: 0,
                fresh: 1,
                free: VecDeque::new(),
            })
            .collect();
        let mut table = Blocks::new(blocks as usize, layout);
        for u in 0..units as u32 {
            table.set_state(u, BlockState::Open);
        }
        debug_assert_eq!(table.len() as u64, blocks);
        Ok(PageFtl {
            front,
            array,
            layout,
            gc_free: p.gc_free_blocks as usize,
            per_die: blocks_per_die as u32,
            l2p: L2p::new(logical, layout),
            blocks: table,
            dies,
            ctrl_free: 0,
            host: Timeline::default(),
            audit: Audit::new(logical + blocks),
        })
    }

    fn unit(&self, lpn: u64) -> usize {
        (lpn % u64::from(self.layout.units)) as usize
    }

    /// Free blocks of die `u`.
    fn free_blocks(&self, u: usize) -> usize {
        debug_assert!(self.dies[u].fresh <= self.per_die);
        (self.per_die - self.dies[u].fresh) as usize + self.dies[u].free.len()
    }

    /// Makes the next free block of die `u` its open block.
    fn open_next(&mut self, u: usize) -> Result<()> {
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
        let old = std::mem::replace(&mut d.open, b);
        d.wp = 0;
        self.blocks.set_state(old, BlockState::Full);
        self.blocks.set_state(b, BlockState::Open);
        Ok(())
    }

    /// Drops the physical page holding `lpn`, if any.
    fn invalidate(&mut self, lpn: u32) {
        let old = self.l2p.get(lpn);
        if old != NONE {
            self.blocks.sub_valid(old / self.layout.ppb);
            self.l2p.set(lpn, NONE);
        }
        debug_assert_eq!(self.l2p.get(lpn), NONE);
    }

    /// Places `lpn` at the next page of die `u`'s open block (which has room).
    fn place(&mut self, u: usize, lpn: u32) {
        let d = &mut self.dies[u];
        assert!(d.wp < self.layout.ppb, "die {u}: the open block is full");
        let ppn = d.open * self.layout.ppb + d.wp;
        d.wp += 1;
        let open = d.open;
        debug_assert_eq!(self.blocks.state(open), BlockState::Open);
        debug_assert_eq!(
            self.l2p.get(lpn),
            NONE,
            "a page is placed once it is invalidated"
        );
        self.l2p.set(lpn, ppn);
        self.blocks.set_rev(ppn, lpn);
        self.blocks.add_valid(open);
    }

    /// Programs logical page `lpn` (on its die) with data available at `t`.
    fn program_page(
        &mut self,
        lpn: u32,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<Nanos> {
        let u = self.unit(u64::from(lpn));
        self.invalidate(lpn);
        if self.dies[u].wp == self.layout.ppb {
            self.open_next(u)?;
            while self.free_blocks(u) < self.gc_free {
                self.collect(u, t, st, cost)?;
            }
        }
        self.place(u, lpn);
        debug_assert_eq!(self.blocks.rev(self.l2p.get(lpn)), lpn, "the maps agree");
        Ok(self.array.program(u, t, self.front.page_size, st, cost))
    }

    /// Greedy garbage collection on die `u`: the full block with the fewest
    /// valid pages has them copied to the open block, then is erased.
    fn collect(&mut self, u: usize, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Result<()> {
        let n = self.layout.ppb;
        let victim = (u as u32..self.blocks.len() as u32)
            .step_by(self.layout.units as usize)
            .filter(|&b| self.blocks.state(b) == BlockState::Full)
            .min_by_key(|&b| self.blocks.valid(b))
            .filter(|&b| self.blocks.valid(b) < n)
            .ok_or_else(|| internal("no block to garbage-collect"))?;
        for ppn in victim * n..(victim + 1) * n {
            let lpn = self.blocks.rev(ppn);
            if lpn == NONE || self.l2p.get(lpn) != ppn {
                continue;
            }
            if self.dies[u].wp == n {
                self.open_next(u)?;
            }
            self.invalidate(lpn);
            self.place(u, lpn);
            self.array.copy(u, t, st, cost);
            st.gc_page_moves += 1;
        }
        debug_assert_eq!(self.blocks.valid(victim), 0, "every valid page moved");
        debug_assert_eq!(self.blocks.state(victim), BlockState::Full);
        self.array.erase(u, t, st, cost);
        st.erase_counts.add(u64::from(victim));
        self.blocks.set_state(victim, BlockState::Free);
        self.dies[u].free.push_back(victim);
        if self.audit.due() {
            assert_consistent("ftl (page)", self.audit.rounds, self.check_invariants());
        }
        Ok(())
    }

    /// Maps logical pages `[0, pages)` where a sequential fill of this fresh
    /// device would put them, without simulating the writes.
    fn fill(&mut self, pages: u32) {
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
            d.open = (used - 1) * units + u;
            d.wp = count - (used - 1) * ppb;
            d.fresh = used;
            debug_assert!(d.wp >= 1 && d.wp <= ppb && d.fresh <= self.per_die);
        }
        debug_assert!(
            pages == 0 || self.blocks.rev(self.l2p.get(pages - 1)) == pages - 1,
            "the fill's last page maps both ways"
        );
    }

    /// Starts a command at the controller; returns when its NAND work may begin.
    fn command(&mut self, at: Nanos, cmd_ns: Nanos, cost: &mut Cost) -> Nanos {
        self.array.forget_before(at);
        self.host.forget_before(at);
        let s = at.max(self.ctrl_free);
        self.ctrl_free = s + cmd_ns;
        cost.busy(s, self.ctrl_free);
        self.ctrl_free
    }

    /// Every logical page's physical page.
    #[cfg(test)]
    fn mapping(&self) -> Vec<u32> {
        let logical = (self.front.capacity / self.front.page_size) as u32;
        (0..logical).map(|l| self.l2p.get(l)).collect()
    }

    /// The maps against each other and the blocks: every mapped page maps
    /// back, lives in a used block on its own die, the valid counts match,
    /// each die's open block is open and its free blocks are free and empty.
    fn check_invariants(&self) -> std::result::Result<(), String> {
        let (n, units) = (self.layout.ppb, self.layout.units);
        let logical = (self.front.capacity / self.front.page_size) as u32;
        let mut valid = vec![0u32; self.blocks.len()];
        for (lpn, ppn) in (0..logical).map(|l| (l, self.l2p.get(l))) {
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
            if self.blocks.state(d.open) != BlockState::Open || d.open % units != u as u32 {
                return Err(format!("die {u}: bad open block"));
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
        Ok(())
    }
}

impl Model for PageFtl {
    fn geometry(&self) -> Geometry {
        self.front.geometry()
    }

    fn read(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        size_erase_counts(st, self.blocks.len());
        let mut cost = Cost::new(at);
        let t = self.command(at, self.front.read_cmd_ns, &mut cost);
        // A page's die is fixed by its number, so reads need no map lookup;
        // unwritten pages cost a read too, as on a preconditioned drive.
        for (pos, bytes) in page_pieces(offset, len, self.front.page_size) {
            let u = self.unit(pos / self.front.page_size);
            let ready = self.array.read(u, t, bytes, st, &mut cost);
            let dur = self.front.host_ns(bytes);
            let hs = self.host.book(ready, dur);
            cost.busy(hs, hs + dur);
        }
        Ok(cost.completion())
    }

    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        size_erase_counts(st, self.blocks.len());
        let mut cost = Cost::new(at);
        let t = self.command(at, self.front.write_cmd_ns, &mut cost);
        let ps = self.front.page_size;
        for (pos, bytes) in page_pieces(offset, len, ps) {
            let dur = self.front.host_ns(bytes);
            let hs = self.host.book(t, dur);
            cost.busy(hs, hs + dur);
            let lpn = (pos / ps) as u32;
            let mut ready = hs + dur;
            if bytes < ps && self.l2p.get(lpn) != NONE {
                // Part of a page: read the rest of it to merge.
                let u = self.unit(u64::from(lpn));
                ready = ready.max(self.array.read(u, t, ps, st, &mut cost));
            }
            self.program_page(lpn, ready, st, &mut cost)?;
        }
        Ok(cost.completion())
    }

    fn flush(&mut self, at: Nanos, _st: &mut DeviceStats) -> Result<Completion> {
        // No write cache: completed writes are already programmed.
        Ok(Cost::new(at).completion())
    }

    fn trim(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        _st: &mut DeviceStats,
    ) -> Result<Completion> {
        let mut cost = Cost::new(at);
        self.command(at, self.front.write_cmd_ns, &mut cost);
        let ps = self.front.page_size;
        // Only whole pages can be dropped; a partly trimmed page keeps its data.
        for lpn in offset.div_ceil(ps)..(offset + len) / ps {
            self.invalidate(lpn as u32);
        }
        Ok(cost.completion())
    }

    fn busy_until(&self) -> Option<Nanos> {
        Some(self.ctrl_free)
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        PageFtl::check_invariants(self)
    }

    fn fill(&mut self, len: u64) -> bool {
        let ps = self.front.page_size;
        let fresh = self.l2p.is_empty() && self.dies.iter().all(|d| d.wp == 0 && d.fresh == 1);
        if !fresh || len % ps != 0 {
            return false;
        }
        self.fill((len / ps) as u32);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{array, front, ops, page_params};
    use super::*;
    use proptest::prelude::*;

    fn page_ftl(op: f64) -> PageFtl {
        PageFtl::new(&page_params(op), front(), array()).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn page_mapping_stays_consistent_and_loses_no_live_page(ops in ops()) {
            let mut f = page_ftl(0.25);
            let mut st = DeviceStats::default();
            let mut live = vec![false; 256];
            let mut at = 0;
            for (page, n, partial, trim) in ops {
                let n = n.min(256 - page);
                let (off, len) = if partial { (page * 4096 + 512, 512) } else { (page * 4096, n * 4096) };
                let c = if trim {
                    f.trim(at, off, len, &mut st).unwrap()
                } else {
                    f.write(at, off, len, &mut st).unwrap()
                };
                at = c.end;
                for p in off / 4096..(off + len).div_ceil(4096) {
                    if !trim {
                        live[p as usize] = true;
                    } else if !partial {
                        live[p as usize] = false;
                    }
                }
                if let Err(e) = f.check_invariants() {
                    return Err(TestCaseError::fail(e));
                }
            }
            for (lpn, &l) in live.iter().enumerate() {
                prop_assert_eq!(f.l2p.get(lpn as u32) != NONE, l, "lpn {}", lpn);
            }
            // 40 blocks of 8 pages hold 256 logical pages: every case collects.
            prop_assert!(st.gc_page_moves > 0 && st.block_erases > 0);
            prop_assert_eq!(st.erase_counts.total(), st.block_erases);
        }
    }

    #[test]
    fn greedy_gc_moves_nothing_when_overwrites_are_sequential() {
        let mut f = page_ftl(0.25);
        let mut st = DeviceStats::default();
        for round in 0..6 {
            for page in 0..256u64 {
                f.write(round, page * 4096, 4096, &mut st).unwrap();
            }
        }
        // Whole blocks become invalid together: victims have no valid page.
        assert!(st.block_erases > 0);
        assert_eq!(st.gc_page_moves, 0);
        assert_eq!(st.write_amplification(), 1.0);
        f.check_invariants().unwrap();
    }

    #[test]
    fn random_overwrites_amplify_writes_and_spread_wear() {
        let mut f = page_ftl(0.25);
        let mut st = DeviceStats::default();
        let mut x = 12345u64;
        for page in 0..256u64 {
            f.write(0, page * 4096, 4096, &mut st).unwrap();
        }
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            f.write(0, (x >> 33) % 256 * 4096, 4096, &mut st).unwrap();
        }
        st.host_write_bytes = (256 + 20_000) * 4096;
        let wa = st.write_amplification();
        assert!(wa > 1.2 && wa < 4.0, "write amplification {wa}");
        let wear = st.wear().unwrap();
        assert!(
            wear.min > 0 && f64::from(wear.max) < 2.0 * wear.mean,
            "{wear:?}"
        );
    }

    /// The fast fill leaves the state the simulated sequential fill does:
    /// same mapping, and the same costs and counts for what follows.
    #[test]
    fn fast_fill_matches_simulating_the_fill() {
        for pages in [256u64, 100, 17, 1] {
            let mut slow = page_ftl(0.25);
            let mut fast = page_ftl(0.25);
            let mut st_slow = DeviceStats::default();
            for p in 0..pages {
                slow.write(0, p * 4096, 4096, &mut st_slow).unwrap();
            }
            assert!(Model::fill(&mut fast, pages * 4096));
            assert!(!Model::fill(&mut fast, pages * 4096), "only a fresh device");
            assert_eq!(slow.mapping(), fast.mapping(), "{pages} pages");
            fast.check_invariants().unwrap();
            let before = st_slow.clone();
            let mut st_fast = DeviceStats::default();
            let mut x = 99u64;
            let mut at = 1 << 40; // after the slow fill's work is done
            for _ in 0..3000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let off = (x >> 33) % 256 * 4096;
                let a = slow.write(at, off, 4096, &mut st_slow).unwrap();
                let b = fast.write(at, off, 4096, &mut st_fast).unwrap();
                assert_eq!(a, b);
                at = a.end;
            }
            assert_eq!(slow.mapping(), fast.mapping());
            assert_eq!(
                st_slow.gc_page_moves - before.gc_page_moves,
                st_fast.gc_page_moves
            );
            assert_eq!(
                st_slow.block_erases - before.block_erases,
                st_fast.block_erases
            );
            assert!(st_fast.gc_page_moves > 0, "the comparison covers GC");
            fast.check_invariants().unwrap();
        }
    }

    #[test]
    fn trimmed_pages_are_not_moved_by_gc() {
        let mut f = page_ftl(0.25);
        let mut st = DeviceStats::default();
        for page in 0..256u64 {
            f.write(0, page * 4096, 4096, &mut st).unwrap();
        }
        f.trim(0, 0, 1 << 20, &mut st).unwrap();
        assert!((0..f.blocks.len() as u32).all(|b| f.blocks.valid(b) == 0));
        let mut x = 7u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            f.write(0, (x >> 33) % 32 * 4096, 4096, &mut st).unwrap();
        }
        // Only 32 pages are live, so victims are (nearly) empty.
        assert!(st.gc_page_moves < st.nand_page_programs / 10, "{st:?}");
        f.check_invariants().unwrap();
    }

    #[test]
    fn a_partial_page_write_reads_the_rest_of_the_page() {
        let mut f = page_ftl(0.25);
        let mut st = DeviceStats::default();
        f.write(0, 0, 512, &mut st).unwrap();
        assert_eq!(st.nand_page_reads, 0); // nothing there yet
        let c = f.write(1_000_000, 512, 512, &mut st).unwrap();
        assert_eq!(st.nand_page_reads, 1);
        assert_eq!(st.nand_program_bytes, 2 * 4096);
        // Host transfer of 512 B (125 ns) overlaps the 10 us read; then program.
        assert_eq!(c.end - 1_000_000, 10_000 + 100_000);
    }
}
