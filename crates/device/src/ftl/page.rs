//! Page mapping: any logical page anywhere, greedy garbage collection per
//! die ([`gc`]); optionally planes with multi-plane operations
//! ([`planes`]), a cached mapping table ([`dftl`]) and a DRAM data cache
//! ([`cache`], [`destage`]). Logical page `l` belongs to die `l % dies`.

mod cache;
mod destage;
mod dftl;
mod gc;
mod planes;
#[cfg(test)]
mod tests_internals;

use std::collections::VecDeque;

pub(in crate::ftl) use cache::Slot;
pub(in crate::ftl) use planes::MAX_PLANES;

use super::map::{BlockState, Blocks, L2p, Layout, NONE};
use super::{Audit, CachePolicy, Front, FtlParams};
use crate::array::{page_pieces, size_erase_counts, Cost, NandArray, Timeline};
use crate::sim::transfer_ns;
use crate::spec::{require, require_multiple};
use crate::{Completion, DeviceError, DeviceStats, Geometry, Model, Nanos, Result};
use cache::WriteCache;
use dftl::Cmt;
use planes::Groups;

/// Where a die appends: data, or (with a cached mapping table) translation
/// pages, each in blocks of its own as DFTL keeps them, so collecting a
/// data block never finds translation pages in it and translation blocks,
/// rewritten often, are cheap to collect.
const DATA: usize = 0;
const TRANSLATION: usize = 1;

struct Die {
    /// Open block of each stream (NONE: none yet).
    open: [u32; 2],
    /// Next page to program in each open block.
    wp: [u32; 2],
    /// Blocks of this die never used yet: the die's `fresh`-th block onwards.
    fresh: u32,
    /// Erased blocks, in the order they were erased (used after the fresh ones).
    free: VecDeque<u32>,
}

pub(super) struct PageFtl {
    front: Front,
    array: NandArray,
    /// `ppb` counts the pages of a block on every plane of its die.
    layout: Layout,
    planes: u32,
    gc_free: usize,
    /// Blocks per die.
    per_die: u32,
    /// Logical pages of data; translation pages are numbered after them.
    logical: u32,
    /// Logical pages the map holds: data and translation pages.
    mapped: u32,
    l2p: L2p,
    /// State, valid pages and reverse entries of each physical block.
    /// Block `b` is on die `b % units`.
    blocks: Blocks,
    dies: Vec<Die>,
    /// Per die: pages queued for a multi-plane operation.
    groups: Vec<Groups>,
    /// Dies that may have pages queued (each listed once).
    queued: Vec<usize>,
    ctrl_free: Nanos,
    host: Timeline,
    audit: Audit,
    /// The cached mapping table, when the map is not all in DRAM.
    cmt: Option<Cmt>,
    /// Translation pages waiting to be programmed.
    write_backs: Vec<u32>,
    /// The data cache, if any.
    cache: Option<WriteCache>,
    policy: CachePolicy,
    /// The controller's DRAM, for data going into and out of the cache.
    dram: Timeline,
    cache_mb_per_s: f64,
    dram_page_ns: Nanos,
    /// NAND energy of background work not yet charged to a command.
    background_nj: u64,
}

/// Map entries are 4 bytes.
const ENTRY_BYTES: u64 = 4;

impl PageFtl {
    pub(super) fn new(p: &FtlParams, front: Front, array: NandArray) -> Result<Self> {
        require_multiple("ftl", front.capacity, p.page_size, "page_size")?;
        require(
            p.gc_free_blocks >= 1,
            "ftl: gc_free_blocks must be at least 1",
        )?;
        let units = array.units() as u64;
        let planes = u64::from(p.planes_per_die);
        let n = p.pages_per_block.saturating_mul(planes);
        let logical = front.capacity / p.page_size;
        let per_tp = p.page_size / ENTRY_BYTES;
        let tpages = if p.mapping_cache == 0 {
            0
        } else {
            logical.div_ceil(per_tp)
        };
        let mapped = logical + tpages;
        let per_die = mapped.div_ceil(units);
        let blocks_per_die =
            ((per_die as f64 * (1.0 + p.over_provisioning)) / n as f64).ceil() as u64;
        // The open blocks, and the free blocks collection needs.
        let streams = 1 + u64::from(tpages > 0);
        let needed = per_die.div_ceil(n) + u64::from(p.gc_free_blocks) + streams;
        if blocks_per_die < needed {
            return Err(DeviceError::Spec(format!(
                "ftl: over_provisioning leaves {} spare blocks per die, garbage collection needs at least {} (raise over_provisioning or capacity, or lower pages_per_block, planes_per_die, dies or gc_free_blocks)",
                blocks_per_die.saturating_sub(per_die.div_ceil(n)),
                needed - per_die.div_ceil(n)
            )));
        }
        let blocks = blocks_per_die.saturating_mul(units);
        require(
            blocks.saturating_mul(n) < u64::from(NONE) - 1 && mapped < u64::from(NONE),
            "ftl: too many pages to map (raise page_size)",
        )?;
        let layout = Layout {
            units: units as u32,
            ppb: n as u32,
        };
        let dies = (0..units as u32)
            .map(|u| Die {
                open: [u, NONE],
                wp: [0, n as u32],
                fresh: 1,
                free: VecDeque::new(),
            })
            .collect();
        let mut table = Blocks::new(blocks as usize, layout);
        for u in 0..units as u32 {
            table.set_state(u, BlockState::Open);
        }
        debug_assert_eq!(table.len() as u64, blocks);
        let cmt = (tpages > 0).then(|| {
            let cached = (p.mapping_cache / p.page_size).max(1);
            Cmt::new(per_tp as u32, cached as usize)
        });
        let cache_pages = p.write_cache / p.page_size;
        Ok(PageFtl {
            array,
            layout,
            planes: p.planes_per_die,
            gc_free: p.gc_free_blocks as usize,
            per_die: blocks_per_die as u32,
            logical: logical as u32,
            mapped: mapped as u32,
            l2p: L2p::new(mapped, layout),
            blocks: table,
            dies,
            groups: (0..units).map(|_| Groups::default()).collect(),
            queued: Vec::new(),
            ctrl_free: 0,
            host: Timeline::default(),
            audit: Audit::new(mapped + blocks),
            cmt,
            write_backs: Vec::new(),
            cache: (cache_pages > 0).then(|| WriteCache::new(cache_pages as usize, units as usize)),
            policy: p.write_cache_policy,
            dram: Timeline::default(),
            cache_mb_per_s: p.cache_mb_per_s,
            dram_page_ns: transfer_ns(p.page_size, p.cache_mb_per_s),
            background_nj: 0,
            front,
        })
    }

    fn unit(&self, lpn: u32) -> usize {
        (lpn % self.layout.units) as usize
    }

    /// The stream logical page `lpn` is appended to.
    fn stream(&self, lpn: u32) -> usize {
        if lpn < self.logical {
            DATA
        } else {
            TRANSLATION
        }
    }

    /// Starts a command at the controller, after the background work due
    /// by `at`; returns when its NAND work may begin.
    fn command(
        &mut self,
        at: Nanos,
        cmd_ns: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<Nanos> {
        size_erase_counts(st, self.blocks.len() * self.planes as usize);
        self.destage(at, false, st)?;
        cost.add_energy(std::mem::take(&mut self.background_nj));
        self.array.forget_before(at);
        self.host.forget_before(at);
        self.dram.forget_before(at);
        let s = at.max(self.ctrl_free);
        self.ctrl_free = s + cmd_ns;
        cost.busy(s, self.ctrl_free);
        Ok(self.ctrl_free)
    }

    /// Ends a command: queued operations issued, translation pages written back.
    fn finish(&mut self, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Result<()> {
        self.flush_all(st, cost);
        self.write_back_all(t, st, cost)?;
        self.flush_all(st, cost);
        Ok(())
    }

    /// One page of a host write, its data at the controller at `ready`.
    fn write_page(
        &mut self,
        lpn: u32,
        bytes: u64,
        t: Nanos,
        ready: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        let ps = self.front.page_size;
        let mut ready = ready;
        let write_back = self.cache.is_some() && self.policy == CachePolicy::WriteBack;
        if bytes < ps && !self.cached(lpn) && self.l2p.get(lpn) != NONE {
            // Part of a page: read the rest of it to merge.
            let tr = self.translate(lpn, !write_back, t, st, cost);
            let u = self.unit(lpn);
            ready = ready.max(self.read_page(u, tr, st, cost));
        }
        if self.cache.is_some() {
            self.cached_write(lpn, ready, st, cost)?;
            return Ok(());
        }
        let tr = self.translate(lpn, true, ready, st, cost);
        self.program_page(lpn, tr, None, st, cost)
    }

    /// Every logical page's physical page.
    #[cfg(test)]
    fn mapping(&self) -> Vec<u32> {
        (0..self.logical).map(|l| self.l2p.get(l)).collect()
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
        let mut cost = Cost::new(at);
        let t = self.command(at, self.front.read_cmd_ns, st, &mut cost)?;
        // Unwritten pages cost a read too, as on a preconditioned drive.
        let ps = self.front.page_size;
        for (pos, bytes) in page_pieces(offset, len, ps) {
            let lpn = (pos / ps) as u32;
            if self.cached_read(lpn, t, bytes, st, &mut cost) {
                continue;
            }
            let tr = self.translate(lpn, false, t, st, &mut cost);
            let ppn = Some(self.l2p.get(lpn)).filter(|&p| p != NONE);
            let u = self.unit(lpn);
            self.queue_read(u, ppn, tr, bytes, st, &mut cost);
        }
        self.finish(t, st, &mut cost)?;
        Ok(cost.completion())
    }

    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        let mut cost = Cost::new(at);
        let t = self.command(at, self.front.write_cmd_ns, st, &mut cost)?;
        let ps = self.front.page_size;
        for (pos, bytes) in page_pieces(offset, len, ps) {
            let dur = self.front.host_ns(bytes);
            let hs = self.host.book(t, dur);
            cost.busy(hs, hs + dur);
            self.write_page((pos / ps) as u32, bytes, t, hs + dur, st, &mut cost)?;
        }
        self.finish(t, st, &mut cost)?;
        Ok(cost.completion())
    }

    fn flush(&mut self, at: Nanos, st: &mut DeviceStats) -> Result<Completion> {
        // Without a data cache completed writes are already programmed.
        let end = self.flush_cache(at, st)?;
        let mut cost = Cost::new(at);
        cost.busy(at, end);
        cost.add_energy(std::mem::take(&mut self.background_nj));
        Ok(cost.completion())
    }

    fn trim(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        let mut cost = Cost::new(at);
        let t = self.command(at, self.front.write_cmd_ns, st, &mut cost)?;
        let ps = self.front.page_size;
        // Only whole pages can be dropped; a partly trimmed page keeps its
        // data. A cached mapping table changes each translation page once.
        let mut last_tp = None;
        for lpn in offset.div_ceil(ps)..(offset + len) / ps {
            let lpn = lpn as u32;
            self.uncache(lpn);
            if self.l2p.get(lpn) == NONE {
                continue;
            }
            let tp = self.cmt.as_ref().map(|c| lpn / c.per_page);
            if tp.is_some() && tp != last_tp {
                self.translate(lpn, true, t, st, &mut cost);
                last_tp = tp;
            }
            self.invalidate(lpn);
        }
        self.finish(t, st, &mut cost)?;
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
        let fresh =
            self.l2p.is_empty() && self.dies.iter().all(|d| d.wp[DATA] == 0 && d.fresh == 1);
        if !fresh || len % ps != 0 {
            return false;
        }
        // A fresh device has room for a fill of its capacity and its map.
        let filled = self.fill((len / ps) as u32).is_ok();
        debug_assert!(filled, "a fresh device takes a fill");
        filled
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
