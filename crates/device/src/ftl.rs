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

use serde::{Deserialize, Serialize};

mod bast;
mod block;
mod fast;
mod logblock;
mod map;
mod page;

use block::BlockFtl;
use map::NONE;
use page::PageFtl;

use crate::array::{ArraySpec, NandArray};
use crate::nand::{default_sector, one};
use crate::sim::{transfer_ns, us};
use crate::spec::{de_size, require, require_multiple};
use crate::{DeviceError, Geometry, Model, Nanos, Result};

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
    /// BAST and FAST: a log block written in order from its block's first
    /// page but not to the end is merged partially (the rest of the block
    /// copied in, one erase) rather than in full, as FAST's paper (Lee et
    /// al. 2007) does. Default false: merges as Kim et al.'s BAST (2002)
    /// describes them, which the presets were calibrated with.
    #[serde(default)]
    pub partial_merges: bool,
    /// Page mapping: planes per die. A die's blocks on its planes are used,
    /// collected and erased together (multi-plane erase), its pages
    /// written across the planes in turn; pages of one die in the same row
    /// of its planes are read or programmed at once (multi-plane
    /// operations) where they are queued together (default 1).
    #[serde(default = "one")]
    pub planes_per_die: u32,
    /// Page mapping: DRAM for the cached mapping table (DFTL), e.g.
    /// "2 MiB"; it holds translation pages (one flash page of 4-byte map
    /// entries each), least recently used first out, dirty ones written
    /// back. 0 (the default) keeps the whole map in DRAM.
    #[serde(default, deserialize_with = "de_size")]
    pub mapping_cache: u64,
    /// Page mapping: DRAM data cache, e.g. "256 MiB"; 0 (the default): none.
    #[serde(default, deserialize_with = "de_size")]
    pub write_cache: u64,
    /// How the data cache treats writes (default write-back).
    #[serde(default)]
    pub write_cache_policy: CachePolicy,
    /// Rate of the controller's DRAM, MB/s, for data going into and out of
    /// the data cache (default 3200: MQSim's 800 MT/s on a 4-byte bus).
    #[serde(default = "default_dram_rate")]
    pub cache_mb_per_s: f64,
}

/// What a write does with the data cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CachePolicy {
    /// A write completes once its data is in DRAM; the cache destages it to
    /// flash in the background, and a FLUSH waits for the destage.
    #[default]
    WriteBack,
    /// A write completes once its data is programmed; the cache keeps it
    /// for reads.
    WriteThrough,
}

fn default_dram_rate() -> f64 {
    3200.0
}

/// The DRAM-side features are the page FTL's: log-block and block-mapped
/// controllers were made for little or no DRAM.
fn check_page_only(p: &FtlParams) -> Result<()> {
    let extras = p.planes_per_die != 1 || p.mapping_cache != 0 || p.write_cache != 0;
    require(
        p.mapping == FtlMapping::Page || !extras,
        "ftl: planes_per_die, mapping_cache and write_cache apply to mapping = \"page\"",
    )?;
    require(
        (1..=page::MAX_PLANES as u32).contains(&p.planes_per_die),
        "ftl: planes_per_die must be 1 to 64",
    )?;
    require(
        p.cache_mb_per_s.is_finite() && p.cache_mb_per_s > 0.0,
        "ftl: cache_mb_per_s must be positive",
    )?;
    require(
        p.write_cache == 0 || p.write_cache >= p.page_size,
        "ftl: write_cache must hold at least one page (or be 0: none)",
    )?;
    require(
        p.mapping_cache == 0 || p.mapping_cache >= p.page_size,
        "ftl: mapping_cache must hold at least one translation page (or be 0: the whole map in DRAM)",
    )
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
    check_page_only(p)?;
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
    require_multiple(
        "ftl (log-block mapping)",
        front.capacity,
        block_bytes,
        "page_size × pages_per_block × dies",
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
            scheme: fast::Fast::new(p.log_blocks, p.partial_merges),
        })
    } else {
        Box::new(logblock::LogFtl {
            core,
            scheme: bast::Bast::new(p.log_blocks, bp as u32, p.partial_merges),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A small page-mapped FTL: 1 MiB of 4 KB pages, 8-page blocks, 2 dies.
    pub(super) fn page_params(op: f64) -> FtlParams {
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
            partial_merges: false,
            planes_per_die: 1,
            mapping_cache: 0,
            write_cache: 0,
            write_cache_policy: CachePolicy::WriteBack,
            cache_mb_per_s: 3200.0,
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

    /// (page, pages, partial, trim): a write or trim of whole pages, or a
    /// 512 B write into a page.
    pub(super) fn ops() -> impl Strategy<Value = Vec<(u64, u64, bool, bool)>> {
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
