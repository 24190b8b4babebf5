//! Block mapping: a logical block in one physical block.

use std::collections::VecDeque;

use super::map::NONE;
use super::{assert_consistent, internal, Audit, Front, FtlParams};
use crate::array::{page_pieces, size_erase_counts, Cost, NandArray};
use crate::spec::{require, require_multiple};
use crate::{Completion, DeviceStats, Geometry, Model, Nanos, Result};

/// A fresh block a sequential run is filling, replacing logical block `lb`:
/// bytes below `next` are in `pb`, the rest still in the old block.
#[derive(Clone, Copy)]
struct Run {
    lb: u32,
    pb: u32,
    next: u64,
}

pub(super) struct BlockFtl {
    front: Front,
    array: NandArray,
    units: u32,
    /// Pages of a ganged block (pages_per_block × dies).
    block_pages: u32,
    block_bytes: u64,
    /// Physical blocks: logical ones plus spares.
    blocks: usize,
    /// Logical block -> physical block.
    map: Vec<u32>,
    free: VecDeque<u32>,
    run: Option<Run>,
    /// Where the last write ended: a write starting there continues a run.
    last_write_end: u64,
    /// A rewritten block keeps its place, going through a scratch block.
    scratch: bool,
    dev_free: Nanos,
    audit: Audit,
}

impl BlockFtl {
    pub(super) fn new(p: &FtlParams, front: Front, array: NandArray) -> Result<Self> {
        let units = array.units() as u64;
        let block_pages = p.pages_per_block.saturating_mul(units);
        let block_bytes = block_pages.saturating_mul(p.page_size);
        require_multiple(
            "ftl (block mapping)",
            front.capacity,
            block_bytes,
            "page_size × pages_per_block × dies",
        )?;
        let logical = front.capacity / block_bytes;
        let spare = ((logical as f64 * p.over_provisioning).ceil() as u64).max(1);
        let blocks = logical.saturating_add(spare);
        require(
            blocks < u64::from(NONE) && block_pages < u64::from(NONE),
            "ftl: too many blocks to map",
        )?;
        Ok(BlockFtl {
            front,
            array,
            units: units as u32,
            block_pages: block_pages as u32,
            block_bytes,
            blocks: blocks as usize,
            map: vec![NONE; logical as usize],
            free: (0..blocks as u32).collect(),
            run: None,
            last_write_end: 0,
            scratch: p.scratch_copy,
            dev_free: 0,
            audit: Audit::new(blocks),
        })
    }

    fn unit(&self, page: u32) -> usize {
        (page % self.units) as usize
    }

    fn program_pages(
        &mut self,
        pages: std::ops::Range<u32>,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        for i in pages {
            let u = self.unit(i);
            self.array.program(u, t, self.front.page_size, st, cost);
        }
    }

    /// Erases physical block `pb` (its block on every die).
    fn erase(&mut self, pb: u32, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        debug_assert!((pb as usize) < self.blocks, "block {pb} of {}", self.blocks);
        for u in 0..self.units as usize {
            self.array.erase(u, t, st, cost);
        }
        st.erase_counts.add(u64::from(pb));
    }

    /// Erases physical block `pb` and frees it.
    fn retire(&mut self, pb: u32, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        debug_assert!(!self.free.contains(&pb), "block {pb} is freed twice");
        self.erase(pb, t, st, cost);
        self.free.push_back(pb);
    }

    /// Ends the open run: copies the pages it did not write from the old
    /// block, erases the old block and maps the new one.
    fn close_run(&mut self, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        let Some(r) = self.run.take() else { return };
        debug_assert!(r.next <= self.block_bytes, "a run stays inside its block");
        let old = self.map[r.lb as usize];
        if old != NONE {
            let ps = self.front.page_size;
            for i in r.next.div_ceil(ps) as u32..self.block_pages {
                let u = self.unit(i);
                let ready = self.array.read(u, t, ps, st, cost);
                self.array.program(u, ready, ps, st, cost);
            }
            self.map[r.lb as usize] = NONE;
            self.retire(old, t, st, cost);
        }
        self.map[r.lb as usize] = r.pb;
        self.merged();
    }

    /// After a merge round (a run closed, a block rewritten): the full
    /// check when the audit says so.
    fn merged(&mut self) {
        if self.audit.due() {
            assert_consistent("ftl (block)", self.audit.rounds, self.check_invariants());
        }
    }

    /// Writes bytes `[lo, hi)` of logical block `lb`; `run` tells whether
    /// the write continues a sequential run.
    #[allow(clippy::too_many_arguments)]
    fn write_block(
        &mut self,
        lb: u32,
        lo: u64,
        hi: u64,
        run: bool,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<()> {
        debug_assert!(
            lo < hi && hi <= self.block_bytes,
            "[{lo}, {hi}) inside one block"
        );
        debug_assert!((lb as usize) < self.map.len(), "logical block {lb}");
        let ps = self.front.page_size;
        let pages = (lo / ps) as u32..hi.div_ceil(ps) as u32;
        let complete = hi == self.block_bytes;
        if let Some(r) = self.run.as_mut().filter(|r| r.lb == lb && r.next == lo) {
            // The run goes on. A page it already started is programmed again:
            // the controller merged the new sectors into its buffer copy.
            r.next = hi;
            self.program_pages(pages, t, st, cost);
            if complete {
                self.close_run(t, st, cost);
            }
            return Ok(());
        }
        self.close_run(t, st, cost);
        let pb = self
            .free
            .pop_front()
            .ok_or_else(|| internal("no spare block"))?;
        // A write from the start of a block opens a run, unless it is a whole
        // block written out of sequence: that still goes through the scratch
        // copy (seed 004's 128 KB random writes are slower than its 4 KB ones).
        if lo == 0 && (run || !complete) {
            self.run = Some(Run { lb, pb, next: hi });
            self.program_pages(pages, t, st, cost);
            if complete {
                self.close_run(t, st, cost);
            }
            return Ok(());
        }
        let old = self.map[lb as usize];
        if old == NONE {
            self.program_pages(pages, t, st, cost);
        } else if self.scratch {
            // The block keeps its place: out to the scratch block, erase it,
            // back in merged; then the scratch block is erased for reuse.
            self.copy_block(t, st, cost);
            self.erase(old, t, st, cost);
            self.copy_block(t, st, cost);
            self.retire(pb, t, st, cost);
            self.merged();
            return Ok(());
        } else {
            self.copy_block(t, st, cost);
            self.map[lb as usize] = NONE;
            self.retire(old, t, st, cost);
        }
        self.map[lb as usize] = pb;
        self.merged();
        Ok(())
    }

    /// Reads a whole block and programs all of it elsewhere, merged.
    fn copy_block(&mut self, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) {
        let ps = self.front.page_size;
        for i in 0..self.block_pages {
            let u = self.unit(i);
            self.array.read(u, t, ps, st, cost);
        }
        self.program_pages(0..self.block_pages, t, st, cost);
    }

    /// Starts a command when the device is free; returns when the
    /// controller is done with it.
    fn command(&mut self, at: Nanos, cmd_ns: Nanos, cost: &mut Cost) -> Nanos {
        let s = at.max(self.dev_free);
        // One command at a time: nothing is booked before it starts.
        self.array.forget_before(s);
        cost.busy(s, s + cmd_ns);
        s + cmd_ns
    }

    /// Every physical block is mapped, free or the open run's, once.
    fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut seen = vec![false; self.blocks];
        let mapped = self.map.iter().copied().filter(|&b| b != NONE);
        let run = self.run.map(|r| r.pb);
        for b in mapped.chain(self.free.iter().copied()).chain(run) {
            let b = b as usize;
            if b >= self.blocks || seen[b] {
                return Err(format!("physical block {b} is used twice"));
            }
            seen[b] = true;
        }
        if let Some(b) = seen.iter().position(|&s| !s) {
            return Err(format!("physical block {b} was lost"));
        }
        Ok(())
    }
}

impl Model for BlockFtl {
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
        let t = self.command(at, self.front.read_cmd_ns, &mut cost);
        let ps = self.front.page_size;
        let bp = u64::from(self.block_pages);
        // Where a page lives does not change its die, so reads need no
        // lookup. Each page goes to the host as soon as it is out.
        let mut host_free = t;
        for (pos, bytes) in page_pieces(offset, len, ps) {
            let u = self.unit(((pos / ps) % bp) as u32);
            let ready = self.array.read(u, t, bytes, st, &mut cost);
            host_free = ready.max(host_free) + self.front.host_ns(bytes);
        }
        cost.busy(t, host_free);
        self.dev_free = host_free;
        Ok(cost.completion())
    }

    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        size_erase_counts(st, self.blocks);
        let mut cost = Cost::new(at);
        // One command at a time: overhead, the data in, then the NAND work.
        let t = self.command(at, self.front.write_cmd_ns, &mut cost);
        let t = t + self.front.host_ns(len);
        cost.busy(t, t);
        let bb = self.block_bytes;
        let run = offset == self.last_write_end;
        self.last_write_end = offset + len;
        let end = offset + len;
        let mut pos = offset;
        while pos < end {
            let lb = pos / bb;
            let stop = end.min((lb + 1) * bb);
            let continues = run || pos != offset;
            self.write_block(
                lb as u32,
                pos - lb * bb,
                stop - lb * bb,
                continues,
                t,
                st,
                &mut cost,
            )?;
            pos = stop;
        }
        self.dev_free = cost.end();
        Ok(cost.completion())
    }

    fn flush(&mut self, at: Nanos, _st: &mut DeviceStats) -> Result<Completion> {
        Ok(Cost::new(at).completion())
    }

    fn busy_until(&self) -> Option<Nanos> {
        Some(self.dev_free)
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        BlockFtl::check_invariants(self)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{array, front, ops, page_params};
    use super::super::FtlMapping;
    use super::*;
    use proptest::prelude::*;

    /// Ganged blocks of 8 pages x 2 dies = 64 KB; 1 MiB holds 16 of them.
    fn block_ftl(scratch_copy: bool) -> BlockFtl {
        let p = FtlParams {
            mapping: FtlMapping::Block,
            over_provisioning: 0.0,
            scratch_copy,
            ..page_params(0.0)
        };
        BlockFtl::new(&p, front(), array()).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn block_mapping_never_loses_or_shares_a_block(ops in ops(), scratch in any::<bool>()) {
            let mut f = block_ftl(scratch);
            let mut st = DeviceStats::default();
            let mut at = 0;
            let mut seq = 0u64;
            for (page, n, partial, sequential) in ops {
                let (off, len) = if sequential {
                    // A run of whole pages from where the last one ended.
                    let off = seq % (1 << 20);
                    (off, (n * 4096).min((1 << 20) - off))
                } else if partial {
                    (page * 4096 + 512, 512)
                } else {
                    (page * 4096, n.min(256 - page) * 4096)
                };
                seq = off + len;
                at = f.write(at, off, len, &mut st).unwrap().end;
                if let Err(e) = f.check_invariants() {
                    return Err(TestCaseError::fail(e));
                }
            }
        }
    }
}
