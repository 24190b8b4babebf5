//! What the log-block (hybrid-mapped) FTLs share: ganged data blocks mapped
//! per logical block, a pool of free blocks, merges, and the host side of a
//! command. The schemes ([`super::bast`], [`super::fast`]) decide which log
//! block a write goes to and when a log block is merged.
//!
//! A block is ganged across all dies, as in block mapping: page `k` of a
//! physical block is on die `k % dies`. A data block holds page `k` of its
//! logical block at page `k`; a log block holds pages in the order they were
//! written, wherever they belong.

use std::collections::VecDeque;

use super::map::NONE;
use super::{internal, Front};
use crate::array::{page_pieces, size_erase_counts, Cost, NandArray};
use crate::{Completion, DeviceStats, Geometry, Model, Nanos, Result};

/// A scheme's bookkeeping of its log blocks.
pub(super) trait Scheme: Send + Sync {
    /// The log page holding the latest copy of logical page `lpn`, if any.
    fn log_copy(&self, lpn: u32) -> Option<u32>;
    /// Writes logical page `lpn` (its data at the controller at `t`) to a
    /// log block, merging first where it must make room.
    fn write(
        &mut self,
        core: &mut Core,
        lpn: u32,
        partial: bool,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()>;
    /// Physical blocks serving as log blocks.
    fn log_blocks(&self) -> Vec<u32>;
    /// The scheme's own consistency (its log pages and their map).
    fn check(&self, core: &Core) -> std::result::Result<(), String>;
}

/// Ganged blocks, the data-block map and the free pool.
pub(super) struct Core {
    pub front: Front,
    array: NandArray,
    units: u32,
    /// Pages of a ganged block (pages_per_block × dies).
    pub bp: u32,
    /// Physical blocks: logical ones plus spares.
    blocks: usize,
    /// Logical block -> data block (NONE: never merged, reads as zeros).
    data: Vec<u32>,
    free: VecDeque<u32>,
    dev_free: Nanos,
    /// Test shadow of the flash contents: physical page -> the host write
    /// (numbered from 1) whose data it holds.
    #[cfg(test)]
    pub stamps: rustc_hash::FxHashMap<u32, u64>,
    #[cfg(test)]
    pub host_pages: u64,
}

impl Core {
    pub fn new(front: Front, array: NandArray, bp: u32, logical: u32, spare: u32) -> Self {
        let blocks = logical as usize + spare as usize;
        let units = array.units() as u32;
        Core {
            front,
            array,
            units,
            bp,
            blocks,
            data: vec![NONE; logical as usize],
            free: (0..blocks as u32).collect(),
            dev_free: 0,
            #[cfg(test)]
            stamps: Default::default(),
            #[cfg(test)]
            host_pages: 0,
        }
    }

    fn die(&self, ppn: u32) -> usize {
        (ppn % self.bp % self.units) as usize
    }

    /// The page of logical page `lpn` in its data block, if it has one.
    pub fn data_page(&self, lpn: u32) -> Option<u32> {
        let pb = self.data[(lpn / self.bp) as usize];
        (pb != NONE).then(|| pb * self.bp + lpn % self.bp)
    }

    /// Where the latest copy of `lpn` is: the log, else its data block.
    pub fn current(&self, lpn: u32, s: &dyn Scheme) -> Option<u32> {
        s.log_copy(lpn).or_else(|| self.data_page(lpn))
    }

    /// A free block for a log block or a merge.
    pub fn take(&mut self) -> Result<u32> {
        let pb = self
            .free
            .pop_front()
            .ok_or_else(|| internal("no free block for a log block or merge"))?;
        debug_assert!((pb as usize) < self.blocks && !self.data.contains(&pb));
        Ok(pb)
    }

    /// Erases physical block `pb` (its block on every die) and frees it.
    pub fn retire(&mut self, pb: u32, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        debug_assert!(!self.free.contains(&pb), "block {pb} is freed twice");
        for u in 0..self.units as usize {
            self.array.erase(u, t, st, cost);
        }
        st.erase_counts.add(u64::from(pb));
        #[cfg(test)]
        for p in pb * self.bp..(pb + 1) * self.bp {
            self.stamps.remove(&p);
        }
        self.free.push_back(pb);
    }

    /// Programs `dst` with a host page available at `t`. A part of a page
    /// first reads the rest of it from `old`, where there is one.
    pub fn program_host(
        &mut self,
        dst: u32,
        old: Option<u32>,
        partial: bool,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        debug_assert!(
            ((dst / self.bp) as usize) < self.blocks,
            "page {dst} is on the device"
        );
        debug_assert_ne!(old, Some(dst), "a page is never programmed over itself");
        let ps = self.front.page_size;
        let ready = match old.filter(|_| partial) {
            Some(src) => t.max(self.array.read(self.die(src), t, ps, st, cost)),
            None => t,
        };
        self.array.program(self.die(dst), ready, ps, st, cost);
        #[cfg(test)]
        {
            self.host_pages += 1;
            self.stamps.insert(dst, self.host_pages);
        }
    }

    /// Copies page `src` to page `dst`: copy-back on one die, else read,
    /// cross the channel and program.
    fn copy(&mut self, src: u32, dst: u32, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        let (a, b) = (self.die(src), self.die(dst));
        if a == b {
            self.array.copy(a, t, st, cost);
        } else {
            let ps = self.front.page_size;
            let ready = self.array.read(a, t, ps, st, cost);
            self.array.program(b, ready, ps, st, cost);
        }
        st.gc_page_moves += 1;
        #[cfg(test)]
        if let Some(&s) = self.stamps.get(&src) {
            self.stamps.insert(dst, s);
        }
    }

    /// Full merge of logical block `lb`: every page that has a copy (in the
    /// log or the old data block) goes to its place in a fresh block, which
    /// becomes the data block; the old data block is erased. The caller
    /// erases the log blocks it emptied.
    pub fn full_merge(
        &mut self,
        lb: u32,
        s: &dyn Scheme,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        let fresh = self.take()?;
        for k in 0..self.bp {
            if let Some(src) = self.current(lb * self.bp + k, s) {
                self.copy(src, fresh * self.bp + k, t, st, cost);
            }
        }
        st.ftl.full_merges += 1;
        self.replace(lb, fresh, t, st, cost);
        Ok(())
    }

    /// Switch merge: log block `pb`, written in order in full, becomes the
    /// data block of `lb`; the old one is erased.
    pub fn switch(&mut self, lb: u32, pb: u32, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        st.ftl.switch_merges += 1;
        self.replace(lb, pb, t, st, cost);
    }

    /// Partial merge: log block `pb` holds pages `0..from` of `lb` in order;
    /// the pages after them that have a copy (as `s` finds it: the caller
    /// has taken `pb` out of its log) are copied into their places, and
    /// `pb` becomes the data block; the old one is erased.
    #[allow(clippy::too_many_arguments)]
    pub fn partial_merge(
        &mut self,
        lb: u32,
        pb: u32,
        from: u32,
        s: &dyn Scheme,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        debug_assert!(from < self.bp, "a full log block switches");
        for k in from..self.bp {
            if let Some(src) = self.current(lb * self.bp + k, s) {
                debug_assert_ne!(src / self.bp, pb, "the log block holds only 0..from");
                self.copy(src, pb * self.bp + k, t, st, cost);
            }
        }
        st.ftl.partial_merges += 1;
        self.replace(lb, pb, t, st, cost);
    }

    fn replace(&mut self, lb: u32, pb: u32, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        debug_assert!(
            !self.free.contains(&pb),
            "a free block never becomes a data block"
        );
        let old = std::mem::replace(&mut self.data[lb as usize], pb);
        if old != NONE {
            self.retire(old, t, st, cost);
        }
    }

    /// Maps logical blocks `[0, n)` to physical blocks `[0, n)`, as writing
    /// them in order on a fresh device does (each log block switches).
    pub fn fill(&mut self, n: u32) {
        assert!(
            self.is_fresh() && n as usize <= self.data.len(),
            "a fill maps a fresh device"
        );
        for lb in 0..n {
            self.data[lb as usize] = lb;
        }
        self.free.drain(..n as usize);
    }

    /// Whether nothing has been written.
    pub fn is_fresh(&self) -> bool {
        self.free.len() == self.blocks
    }

    /// Every physical block is a data block, a log block or free, once.
    pub fn check(&self, s: &dyn Scheme) -> std::result::Result<(), String> {
        let mut seen = vec![false; self.blocks];
        let data = self.data.iter().copied().filter(|&b| b != NONE);
        for b in data.chain(self.free.iter().copied()).chain(s.log_blocks()) {
            match seen.get_mut(b as usize) {
                Some(x) if !*x => *x = true,
                _ => return Err(format!("physical block {b} is used twice or out of range")),
            }
        }
        if let Some(b) = seen.iter().position(|&x| !x) {
            return Err(format!("physical block {b} was lost"));
        }
        s.check(self)
    }
}

/// A log-block FTL: the shared [`Core`] and a scheme's log blocks.
pub(super) struct LogFtl<S: Scheme> {
    pub core: Core,
    pub scheme: S,
}

impl<S: Scheme> LogFtl<S> {
    /// Starts a command when the device is free (one at a time); returns
    /// when the controller is done with it.
    fn command(&mut self, at: Nanos, cmd_ns: Nanos, cost: &mut Cost) -> Nanos {
        let s = at.max(self.core.dev_free);
        // One command at a time: no NAND work is booked before this one
        // starts, so what ends by then is history (issue times alone would
        // keep a deep queue's whole backlog in the timelines).
        self.core.array.forget_before(s);
        cost.busy(s, s + cmd_ns);
        s + cmd_ns
    }

    /// Every block used once, and the scheme's own consistency.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.core.check(&self.scheme)
    }
}

impl<S: Scheme> Model for LogFtl<S> {
    fn geometry(&self) -> Geometry {
        self.core.front.geometry()
    }

    fn read(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        size_erase_counts(st, self.core.blocks);
        let mut cost = Cost::new(at);
        let t = self.command(at, self.core.front.read_cmd_ns, &mut cost);
        let ps = self.core.front.page_size;
        // A page with no copy reads as on a preconditioned drive: at its
        // place in a data block. Each page goes to the host once it is out.
        let mut host_free = t;
        for (pos, bytes) in page_pieces(offset, len, ps) {
            let lpn = (pos / ps) as u32;
            let ppn = self.core.current(lpn, &self.scheme).unwrap_or(lpn);
            let ready = self
                .core
                .array
                .read(self.core.die(ppn), t, bytes, st, &mut cost);
            host_free = ready.max(host_free) + self.core.front.host_ns(bytes);
        }
        cost.busy(t, host_free);
        self.core.dev_free = host_free;
        Ok(cost.completion())
    }

    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        size_erase_counts(st, self.core.blocks);
        let mut cost = Cost::new(at);
        // One command at a time: overhead, the data in, then the NAND work.
        let t = self.command(at, self.core.front.write_cmd_ns, &mut cost);
        let t = t + self.core.front.host_ns(len);
        cost.busy(t, t);
        let ps = self.core.front.page_size;
        for (pos, bytes) in page_pieces(offset, len, ps) {
            let lpn = (pos / ps) as u32;
            self.scheme
                .write(&mut self.core, lpn, bytes < ps, t, st, &mut cost)?;
        }
        self.core.dev_free = cost.end();
        Ok(cost.completion())
    }

    fn flush(&mut self, at: Nanos, _st: &mut DeviceStats) -> Result<Completion> {
        Ok(Cost::new(at).completion())
    }

    fn busy_until(&self) -> Option<Nanos> {
        Some(self.core.dev_free)
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        LogFtl::check_invariants(self)
    }

    fn fill(&mut self, len: u64) -> bool {
        let bb = u64::from(self.core.bp) * self.core.front.page_size;
        if !self.core.is_fresh() || len % bb != 0 {
            return false;
        }
        self.core.fill((len / bb) as u32);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::bast::Bast;
    use super::super::fast::Fast;
    use super::super::tests::{array, front};
    use super::*;
    use proptest::prelude::*;

    /// 1 MiB of 4 KB pages in ganged blocks of 8 pages x 2 dies (64 KB):
    /// 16 logical blocks, `logs` log blocks, one spare beside them.
    fn core(logs: u32) -> Core {
        Core::new(front(), array(), 16, 16, logs + 1)
    }

    fn bast(logs: u32) -> LogFtl<Bast> {
        bast_with(logs, true)
    }

    fn bast_with(logs: u32, partial: bool) -> LogFtl<Bast> {
        LogFtl {
            core: core(logs),
            scheme: Bast::new(logs, 16, partial),
        }
    }

    fn fast(logs: u32) -> LogFtl<Fast> {
        fast_with(logs, true)
    }

    fn fast_with(logs: u32, partial: bool) -> LogFtl<Fast> {
        LogFtl {
            core: core(logs),
            scheme: Fast::new(logs, partial),
        }
    }

    /// Which host page write each logical page's latest copy holds.
    fn contents<S: Scheme>(f: &LogFtl<S>) -> Vec<Option<u64>> {
        (0..256)
            .map(|lpn| {
                let ppn = f.core.current(lpn, &f.scheme)?;
                f.core.stamps.get(&ppn).copied()
            })
            .collect()
    }

    /// Replays `ops` — (page, pages, partial, sequential) — against `f` and
    /// a reference of the write that last touched each page.
    fn replay<S: Scheme>(f: &mut LogFtl<S>, ops: &[(u64, u64, bool, bool)]) -> DeviceStats {
        let mut st = DeviceStats::default();
        let mut reference = vec![None; 256];
        let (mut at, mut seq, mut n_written) = (0, 0u64, 0u64);
        for &(page, n, partial, sequential) in ops {
            let (off, len) = if sequential {
                (seq % 256 * 4096, n.min(256 - seq % 256) * 4096)
            } else if partial {
                (page * 4096 + 512, 512)
            } else {
                (page * 4096, n.min(256 - page) * 4096)
            };
            seq = (off + len) / 4096;
            at = f.write(at, off, len, &mut st).unwrap().end;
            for p in off / 4096..(off + len).div_ceil(4096) {
                n_written += 1;
                reference[p as usize] = Some(n_written);
            }
            f.check_invariants().unwrap();
            assert_eq!(contents(f), reference);
        }
        assert_eq!(st.erase_counts.total() * 2, st.block_erases);
        st
    }

    fn ops() -> impl Strategy<Value = Vec<(u64, u64, bool, bool)>> {
        proptest::collection::vec(
            (
                0u64..256,
                1u64..20,
                prop::bool::weighted(0.1),
                prop::bool::weighted(0.3),
            ),
            100..500,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn bast_keeps_every_page_latest_copy(ops in ops(), logs in 1u32..5) {
            let st = replay(&mut bast(logs), &ops);
            prop_assert!(st.block_erases > 0);
        }

        #[test]
        fn fast_keeps_every_page_latest_copy(ops in ops(), logs in 2u32..6) {
            let st = replay(&mut fast(logs), &ops);
            prop_assert!(st.block_erases > 0);
        }
    }

    #[test]
    fn a_block_written_in_order_switches_at_the_cost_of_an_erase() {
        for mut f in [Box::new(bast(2)) as Box<dyn Model>, Box::new(fast(2))] {
            let mut st = DeviceStats::default();
            f.write(0, 0, 65536, &mut st).unwrap();
            assert_eq!((st.nand_page_programs, st.block_erases), (16, 0));
            f.write(0, 0, 65536, &mut st).unwrap();
            // The old data block is erased on both dies; nothing is copied.
            assert_eq!(
                (st.nand_page_reads, st.nand_page_programs, st.block_erases),
                (0, 32, 2)
            );
        }
    }

    #[test]
    fn bast_merges_the_oldest_log_block_in_full() {
        let mut f = bast(2);
        let mut st = DeviceStats::default();
        f.write(0, 0, 1 << 20, &mut st).unwrap();
        // Two 4 KB writes into block 0 and one into block 1 take both logs.
        for off in [4096, 8192, 65536 + 4096] {
            f.write(0, off, 4096, &mut st).unwrap();
        }
        let before = st.clone();
        f.write(0, 2 * 65536, 4096, &mut st).unwrap();
        // Block 0's merge: 16 pages copied (2 from its log), 2 blocks erased
        // (data and log) on 2 dies; then the new write's program.
        assert_eq!(st.nand_page_reads - before.nand_page_reads, 16);
        assert_eq!(st.nand_page_programs - before.nand_page_programs, 17);
        assert_eq!(st.block_erases - before.block_erases, 4);
        let m = &st.ftl;
        assert_eq!(
            (m.switch_merges, m.partial_merges, m.full_merges),
            (16, 0, 1)
        );
    }

    #[test]
    fn fast_reclaims_its_oldest_random_block_by_merging_what_it_holds() {
        let mut f = fast(2);
        let mut st = DeviceStats::default();
        f.write(0, 0, 1 << 20, &mut st).unwrap();
        // 16 random pages fill the one random block: 8 in block 3, 8 in 5.
        for i in 0..8 {
            f.write(0, 3 * 65536 + (i * 2 + 1) * 4096, 4096, &mut st)
                .unwrap();
            f.write(0, 5 * 65536 + (i * 2 + 1) * 4096, 4096, &mut st)
                .unwrap();
        }
        let before = st.clone();
        f.write(0, 7 * 65536 + 4096, 4096, &mut st).unwrap();
        // Two full merges of 16 pages, 3 blocks erased, then the write.
        assert_eq!(st.nand_page_reads - before.nand_page_reads, 32);
        assert_eq!(st.nand_page_programs - before.nand_page_programs, 33);
        assert_eq!(st.block_erases - before.block_erases, 6);
        let m = &st.ftl;
        assert_eq!(
            (m.switch_merges, m.partial_merges, m.full_merges),
            (16, 0, 2)
        );
    }

    /// A log block written in order from the block's first page, cut short:
    /// a partial merge copies the rest in and erases the old data block
    /// only; without partial merges it is merged in full.
    #[test]
    fn an_in_order_log_block_cut_short_merges_partially() {
        for partial in [true, false] {
            let mut f = bast_with(1, partial);
            let mut st = DeviceStats::default();
            f.write(0, 0, 1 << 20, &mut st).unwrap();
            f.write(0, 0, 3 * 4096, &mut st).unwrap(); // pages 0..3 of block 0
            let before = st.clone();
            f.write(0, 65536 + 4096, 4096, &mut st).unwrap(); // evicts it
            let (moves, erases, merges) = if partial {
                // 13 pages copied into the log block; the old data block
                // erased on both dies.
                (13, 2, (0, 1, 0))
            } else {
                // 16 pages into a fresh block; data and log block erased.
                (16, 4, (0, 0, 1))
            };
            let d = st.ftl.since(&before.ftl);
            assert_eq!(st.gc_page_moves - before.gc_page_moves, moves);
            assert_eq!(st.block_erases - before.block_erases, erases);
            assert_eq!((d.switch_merges, d.partial_merges, d.full_merges), merges);
            f.check_invariants().unwrap();
        }
        for partial in [true, false] {
            let mut f = fast_with(2, partial);
            let mut st = DeviceStats::default();
            f.write(0, 0, 1 << 20, &mut st).unwrap();
            f.write(0, 3 * 65536, 5 * 4096, &mut st).unwrap(); // a run in block 3
            f.write(0, 3 * 65536 + 4096, 4096, &mut st).unwrap(); // a newer page 1
            let before = st.clone();
            f.write(0, 5 * 65536, 4096, &mut st).unwrap(); // a run in block 5
            let d = st.ftl.since(&before.ftl);
            let (moves, merges) = if partial {
                (11, (0, 1, 0))
            } else {
                (16, (0, 0, 1))
            };
            assert_eq!(st.gc_page_moves - before.gc_page_moves, moves);
            assert_eq!((d.switch_merges, d.partial_merges, d.full_merges), merges);
            f.check_invariants().unwrap();
            // After a partial merge page 1's latest copy is still the
            // random log's; a full merge gathered it.
            let p1 = f.core.current(3 * 16 + 1, &f.scheme).unwrap();
            let in_log = f.scheme.log_copy(3 * 16 + 1) == Some(p1);
            assert_eq!(in_log, partial);
        }
    }

    #[test]
    fn the_fast_fill_matches_writing_in_order() {
        let (mut slow, mut quick) = (bast(3), bast(3));
        let mut st = DeviceStats::default();
        slow.write(0, 0, 10 * 65536, &mut st).unwrap();
        assert!(quick.fill(10 * 65536));
        assert!(!quick.fill(10 * 65536), "a fresh device only");
        assert_eq!(slow.core.data, quick.core.data);
        assert_eq!(slow.core.free, quick.core.free);
        quick.check_invariants().unwrap();
    }
}
