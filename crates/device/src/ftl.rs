//! NAND behind a flash translation layer: an SSD, an early flash disk or a
//! USB stick. The host sees plain sectors that can be rewritten; the FTL
//! hides erasing, at a cost that depends on how it maps logical to physical
//! flash.
//!
//! * `mapping = "page"`: every logical page can live anywhere. Logical page
//!   `l` belongs to die `l % dies` (so consecutive pages stripe over the
//!   dies); each die appends to its open block and, when its free blocks
//!   run low, garbage-collects greedily (the block with the fewest valid
//!   pages), copying its valid pages within the die. Spare flash
//!   (over-provisioning) keeps that possible. Trim invalidates pages.
//! * `mapping = "block"`: a logical block lives in one physical block, as in
//!   early flash disks and USB sticks. The block is ganged across all dies
//!   (page `i` of a block on die `i % dies`). A write that starts a block or
//!   continues a sequential run fills a fresh block page by page; the old
//!   block is erased when the run completes the block, or after its remaining
//!   pages are copied when the run breaks off. Any other write, including a
//!   whole block written out of sequence, reads the whole old block, programs
//!   a fresh block with the merged data and erases the old one (seed 004:
//!   "read the entire block ... erase ... rewrite all 132 KBytes"). With
//!   `scratch_copy` the block keeps its place instead: copied to a scratch
//!   block, erased, copied back. Such devices serve one command at a time
//!   and ignore trim.
//! * `mapping = "bast"` / `"fast"`: log-block (hybrid-mapped) FTLs, as flash
//!   disks and SSDs of about 2002-2010 used: block-mapped data blocks plus
//!   `log_blocks` page-mapped log blocks that absorb writes until a merge
//!   folds them into their data blocks (see `ftl/bast.rs`, `ftl/fast.rs`).
//!   Blocks are ganged across the dies as in block mapping; one command at
//!   a time; trim is ignored.
//!
//! Commands pass the controller one at a time (`read_command_us`,
//! `write_command_us`), data crosses the host interface at `host_mb_per_s`,
//! and the NAND work uses the timelines of [`NandArray`]. There is no
//! write cache: a write completes when its pages are programmed.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

mod bast;
mod fast;
mod logblock;
mod map;

use map::{BlockState, Blocks, L2p, Layout, NONE};

use crate::nand::{
    default_sector, one, page_pieces, size_erase_counts, ArraySpec, Cost, NandArray, Timeline,
};
use crate::sim::{transfer_ns, us};
use crate::spec::{de_size, require};
use crate::{Completion, DeviceError, DeviceStats, Geometry, Model, Nanos, Result};

/// How the FTL maps logical to physical flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FtlMapping {
    /// Any logical page anywhere; greedy garbage collection per die.
    Page,
    /// A logical block in one physical block; a small write rewrites it.
    Block,
    /// Log blocks, each serving one logical block (BAST).
    Bast,
    /// One sequential log block and random log blocks shared by all (FAST).
    Fast,
}

/// Parameters of an FTL device. The NAND fields mean what they mean for raw
/// NAND ([`crate::NandParams`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlParams {
    /// How logical pages map to physical flash.
    pub mapping: FtlMapping,
    /// Bytes per NAND page; the page FTL maps in units of this size.
    #[serde(deserialize_with = "de_size")]
    pub page_size: u64,
    /// Pages per block of one die.
    pub pages_per_block: u64,
    /// Host sector size.
    #[serde(default = "default_sector", deserialize_with = "de_size")]
    pub sector_size: u64,
    /// Array read of one page, µs.
    pub read_us: f64,
    /// Program of one page, µs.
    pub program_us: f64,
    /// Erase of one block, µs.
    pub erase_us: f64,
    /// Channel bus rate, MB/s; 0 means the transfer is included in the times above.
    #[serde(default)]
    pub bus_mb_per_s: f64,
    /// Channels, each a bus shared by its dies.
    #[serde(default = "one")]
    pub channels: u32,
    /// Dies on each channel; each works on its own.
    #[serde(default = "one")]
    pub dies_per_channel: u32,
    /// Energy per page read, µJ.
    #[serde(default)]
    pub read_uj: f64,
    /// Energy per page program, µJ.
    #[serde(default)]
    pub program_uj: f64,
    /// Energy per block erase, µJ.
    #[serde(default)]
    pub erase_uj: f64,
    /// Host interface rate, MB/s.
    pub host_mb_per_s: f64,
    /// Controller time per read command, µs. Commands pass the controller
    /// one at a time, so it caps IOPS at 10^6 / read_command_us.
    #[serde(default)]
    pub read_command_us: f64,
    /// Controller time per write (and trim) command, µs.
    #[serde(default)]
    pub write_command_us: f64,
    /// Spare flash as a fraction of the capacity (0.07 = 7 %). Block
    /// mapping uses it for its pool of spare blocks (at least one).
    #[serde(default = "default_op")]
    pub over_provisioning: f64,
    /// Page mapping: a die garbage-collects while it has fewer free blocks.
    #[serde(default = "default_gc")]
    pub gc_free_blocks: u32,
    /// BAST and FAST: log blocks (under FAST, one of them is the sequential
    /// log block). They come out of the spare blocks, which are raised to
    /// `log_blocks + 1` if over-provisioning leaves fewer.
    #[serde(default = "default_log_blocks")]
    pub log_blocks: u32,
    /// Block mapping: a block rewritten out of sequence keeps its place: it
    /// is copied to a scratch block, erased, and copied back merged (seed
    /// 004's description, and safe against power loss without remapping),
    /// instead of being remapped to a spare block.
    #[serde(default)]
    pub scratch_copy: bool,
}

fn default_log_blocks() -> u32 {
    8
}

fn default_op() -> f64 {
    0.07
}

fn default_gc() -> u32 {
    2
}

pub(crate) fn model(p: &FtlParams, capacity: u64) -> Result<Box<dyn Model>> {
    let array = ArraySpec {
        kind: "ftl",
        page_size: p.page_size,
        pages_per_block: p.pages_per_block,
        sector_size: p.sector_size,
        read_us: p.read_us,
        program_us: p.program_us,
        erase_us: p.erase_us,
        bus_mb_per_s: p.bus_mb_per_s,
        channels: p.channels,
        dies_per_channel: p.dies_per_channel,
        read_uj: p.read_uj,
        program_uj: p.program_uj,
        erase_uj: p.erase_uj,
    }
    .build()?;
    require(
        p.host_mb_per_s.is_finite() && p.host_mb_per_s > 0.0,
        "ftl: host_mb_per_s must be positive",
    )?;
    require(
        [p.read_command_us, p.write_command_us]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0),
        "ftl: read_command_us and write_command_us must be finite and not negative",
    )?;
    require(
        p.over_provisioning.is_finite() && p.over_provisioning >= 0.0,
        "ftl: over_provisioning must be a fraction >= 0 (0.07 = 7 %)",
    )?;
    let front = Front {
        sector_size: p.sector_size,
        capacity,
        page_size: p.page_size,
        host_mb_per_s: p.host_mb_per_s,
        page_host_ns: transfer_ns(p.page_size, p.host_mb_per_s),
        read_cmd_ns: us(p.read_command_us),
        write_cmd_ns: us(p.write_command_us),
    };
    match p.mapping {
        FtlMapping::Page => Ok(Box::new(PageFtl::new(p, front, array)?)),
        FtlMapping::Block => Ok(Box::new(BlockFtl::new(p, front, array)?)),
        FtlMapping::Bast | FtlMapping::Fast => log_block_model(p, front, array),
    }
}

fn log_block_model(p: &FtlParams, front: Front, array: NandArray) -> Result<Box<dyn Model>> {
    let fast = p.mapping == FtlMapping::Fast;
    require(
        p.log_blocks > u32::from(fast),
        "ftl: log_blocks must be at least 1 (bast) or 2 (fast: one sequential, the rest random)",
    )?;
    let bp = p.pages_per_block.saturating_mul(array.units() as u64);
    let block_bytes = bp.saturating_mul(p.page_size);
    require(
        front.capacity % block_bytes == 0,
        "ftl: log-block mapping needs capacity to be a multiple of page_size × pages_per_block × dies",
    )?;
    let logical = front.capacity / block_bytes;
    let spare =
        ((logical as f64 * p.over_provisioning).ceil() as u64).max(u64::from(p.log_blocks) + 1);
    require(
        logical.saturating_add(spare).saturating_mul(bp) < u64::from(NONE),
        "ftl: too many pages to map (raise page_size)",
    )?;
    let core = logblock::Core::new(front, array, bp as u32, logical as u32, spare as u32);
    Ok(if fast {
        Box::new(logblock::LogFtl {
            core,
            scheme: fast::Fast::new(p.log_blocks),
        })
    } else {
        Box::new(logblock::LogFtl {
            core,
            scheme: bast::Bast::new(p.log_blocks, bp as u32),
        })
    })
}

/// What both mappings share: geometry and the host side of a command.
struct Front {
    sector_size: u64,
    capacity: u64,
    page_size: u64,
    host_mb_per_s: f64,
    page_host_ns: Nanos,
    read_cmd_ns: Nanos,
    write_cmd_ns: Nanos,
}

impl Front {
    fn geometry(&self) -> Geometry {
        Geometry {
            sector_size: self.sector_size as u32,
            erase_unit: None,
            capacity: self.capacity,
            program_once: false,
        }
    }

    fn host_ns(&self, bytes: u64) -> Nanos {
        if bytes == self.page_size {
            self.page_host_ns
        } else {
            transfer_ns(bytes, self.host_mb_per_s)
        }
    }
}

/// An FTL invariant broke: a bug in the model, not the caller's fault.
fn internal(what: &'static str) -> DeviceError {
    DeviceError::internal("ftl", what)
}

/// Runs a model's full consistency check after its garbage-collection or
/// merge rounds, in debug builds (the test profile has them on): every
/// round while the check is cheap, and on a large device every `cost /
/// 4096` rounds, so checking costs about 4,096 steps a round on average.
struct Audit {
    rounds: u64,
    every: u64,
}

impl Audit {
    /// An audit of a check that visits about `cost` entries.
    fn new(cost: u64) -> Self {
        Audit {
            rounds: 0,
            every: (cost / 4096).max(1),
        }
    }

    /// Counts a round; whether the full check is due after it.
    fn due(&mut self) -> bool {
        if !cfg!(debug_assertions) {
            return false;
        }
        self.rounds += 1;
        self.rounds % self.every == 0
    }
}

/// Panics, naming what broke, if a model's consistency check failed.
fn assert_consistent(model: &str, round: u64, check: std::result::Result<(), String>) {
    let broken = check.err();
    assert!(
        broken.is_none(),
        "{model}: invariant broken after round {round}: {}",
        broken.unwrap_or_default()
    );
}

// ------------------------------------------------------------ page mapping

struct Die {
    open: u32,
    /// Next page to program in `open`.
    wp: u32,
    /// Blocks of this die never used yet: the die's `fresh`-th block onwards.
    fresh: u32,
    /// Erased blocks, in the order they were erased (used after the fresh ones).
    free: VecDeque<u32>,
}

struct PageFtl {
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
    fn new(p: &FtlParams, front: Front, array: NandArray) -> Result<Self> {
        require(
            front.capacity % p.page_size == 0,
            "ftl: capacity must be a multiple of page_size",
        )?;
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

// ----------------------------------------------------------- block mapping

/// A fresh block a sequential run is filling, replacing logical block `lb`:
/// bytes below `next` are in `pb`, the rest still in the old block.
#[derive(Clone, Copy)]
struct Run {
    lb: u32,
    pb: u32,
    next: u64,
}

struct BlockFtl {
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
    fn new(p: &FtlParams, front: Front, array: NandArray) -> Result<Self> {
        let units = array.units() as u64;
        let block_pages = p.pages_per_block.saturating_mul(units);
        let block_bytes = block_pages.saturating_mul(p.page_size);
        require(
            front.capacity % block_bytes == 0,
            "ftl: block mapping needs capacity to be a multiple of page_size × pages_per_block × dies",
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
    use super::*;
    use proptest::prelude::*;

    /// A small page-mapped FTL: 1 MiB of 4 KB pages, 8-page blocks, 2 dies.
    fn page_params(op: f64) -> FtlParams {
        FtlParams {
            mapping: FtlMapping::Page,
            page_size: 4096,
            pages_per_block: 8,
            sector_size: 512,
            read_us: 10.0,
            program_us: 100.0,
            erase_us: 1000.0,
            bus_mb_per_s: 0.0,
            channels: 2,
            dies_per_channel: 1,
            read_uj: 0.0,
            program_uj: 0.0,
            erase_uj: 0.0,
            host_mb_per_s: 4096.0,
            read_command_us: 0.0,
            write_command_us: 0.0,
            over_provisioning: op,
            gc_free_blocks: 2,
            log_blocks: 8,
            scratch_copy: false,
        }
    }

    pub(super) fn front() -> Front {
        Front {
            sector_size: 512,
            capacity: 1 << 20,
            page_size: 4096,
            host_mb_per_s: 4096.0,
            page_host_ns: 1000,
            read_cmd_ns: 0,
            write_cmd_ns: 0,
        }
    }

    pub(super) fn array() -> NandArray {
        ArraySpec {
            kind: "ftl",
            page_size: 4096,
            pages_per_block: 8,
            sector_size: 512,
            read_us: 10.0,
            program_us: 100.0,
            erase_us: 1000.0,
            bus_mb_per_s: 0.0,
            channels: 2,
            dies_per_channel: 1,
            read_uj: 0.0,
            program_uj: 0.0,
            erase_uj: 0.0,
        }
        .build()
        .unwrap()
    }

    fn page_ftl(op: f64) -> PageFtl {
        PageFtl::new(&page_params(op), front(), array()).unwrap()
    }

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

    /// (page, pages, partial, trim): a write or trim of whole pages, or a
    /// 512 B write into a page.
    fn ops() -> impl Strategy<Value = Vec<(u64, u64, bool, bool)>> {
        proptest::collection::vec(
            (
                0u64..256,
                1u64..4,
                any::<bool>(),
                prop::bool::weighted(0.05),
            ),
            300..900,
        )
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

    #[test]
    fn too_little_over_provisioning_is_a_spec_error() {
        let e = model(&page_params(0.0), 1 << 20).err().unwrap().to_string();
        assert!(
            e.contains("over_provisioning") && e.contains("spare blocks"),
            "{e}"
        );
        let e = model(
            &FtlParams {
                host_mb_per_s: 0.0,
                ..page_params(0.25)
            },
            1 << 20,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("host_mb_per_s"), "{e}");
    }
}
