use flashkv_device::Nanos;
use serde::Serialize;

use crate::error::{HybridError, Result};
use crate::tablets::TABLET_BYTES;

/// The default idle threshold: one average access of a 7,200 rpm disk
/// (8.5 ms seek + 4.17 ms half revolution; the seed's Seagate
/// ST3500418AS and `hdd-7200` alike). A flush write, once started, cannot
/// be taken back: a request arriving just after it waits about one access.
/// Waiting that long before starting bounds the delay flushing adds to the
/// idle time already seen (the break-even rule of ski rental, as for disk
/// spin-down). See docs/hybrid.md, "The flush policy".
pub const IDLE_THRESHOLD_NS: Nanos = 12_670_000;

/// A round as large as the cache: the flush worker sorts everything dirty
/// into one pass over the HDD (seed 003: the SSD's capacity "gives a chance
/// to reshape flush requests"). A round stops between any two writes, so
/// its size costs the host no latency; its memory is 40 bytes per dirty
/// 4 KiB unit (1 % of the dirty data).
pub const WHOLE_CACHE: u64 = u64::MAX;

/// Run-time policy of a hybrid device. None of it is stored on the devices:
/// a hybrid may be reopened with different options.
#[derive(Debug, Clone, Serialize)]
pub struct Options {
    /// Writes of at least this many bytes go to the HDD (HeteroDrive §3.4).
    /// Default 64 KiB: OLTP writes are mostly 8 KB, bulk loads much larger.
    pub size_threshold: u64,
    /// Smaller writes go to the HDD while the sequential-run counter (bytes
    /// written consecutively, halved by every non-consecutive write) is at
    /// least this. Default 128 KiB.
    pub seq_threshold: u64,
    /// Memory for resident mapping tablets. Default 64 MiB (the seed's setting).
    pub memory_limit: u64,
    /// Fraction of the cache region whose dirty span starts a flush under
    /// pressure. Default 0.75.
    pub high_watermark: f64,
    /// Fraction the pressure flush brings the dirty span down to. Default 0.5.
    pub low_watermark: f64,
    /// How long the device must have been idle before the flush worker
    /// starts. Default [`IDLE_THRESHOLD_NS`], one disk access.
    pub idle_threshold_ns: Nanos,
    /// Log bytes the flush worker gathers, sorts and writes back per round.
    /// Larger rounds sort more data into longer sequential HDD runs; an idle
    /// period may end mid-round without losing the work. Default
    /// [`WHOLE_CACHE`]: everything dirty.
    pub round_bytes: u64,
    /// Largest merged write the flush worker sends to the HDD. Default 1 MiB.
    pub max_flush_write: u64,
    /// Pull HDD data that is read randomly more than once into the cache
    /// (beyond the seed). Default on: OLTP re-reads what it reads.
    pub promote: bool,
    /// Small random HDD reads of the same 4 KiB block before it is promoted.
    /// Default 2 (hot data only; 1 promotes every random miss, which raised
    /// the hit ratio from 0.44 to 0.58 on an 80/20 random 8 KiB mix over
    /// `ssd-lowend` + `hdd-7200`, at the cost of more SSD writes).
    pub promote_after: u32,
    /// Blocks whose read counts are tracked before the counts are forgotten. Default 65 536.
    pub promote_table: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            size_threshold: 64 << 10,
            seq_threshold: 128 << 10,
            memory_limit: 64 << 20,
            high_watermark: 0.75,
            low_watermark: 0.5,
            idle_threshold_ns: IDLE_THRESHOLD_NS,
            round_bytes: WHOLE_CACHE,
            max_flush_write: 1 << 20,
            promote: true,
            promote_after: 2,
            promote_table: 1 << 16,
        }
    }
}

impl Options {
    pub(crate) fn validate(&self, sector: u64) -> Result<()> {
        let bad = |m: &str| Err(HybridError::Options(m.to_string()));
        if !(0.0 < self.low_watermark
            && self.low_watermark < self.high_watermark
            && self.high_watermark <= 1.0)
        {
            return bad("need 0 < low_watermark < high_watermark <= 1");
        }
        if self.memory_limit < 8 * TABLET_BYTES {
            return bad("memory_limit must hold at least 8 tablets (32 KiB)");
        }
        if self.round_bytes < sector || self.max_flush_write < sector {
            return bad("round_bytes and max_flush_write must be at least one sector");
        }
        if self.size_threshold == 0 {
            return bad("size_threshold must be positive");
        }
        Ok(())
    }

    pub(crate) fn resident_tablets(&self) -> usize {
        let n = (self.memory_limit / TABLET_BYTES) as usize;
        debug_assert!(n >= 8, "validate() asks for 8 tablets");
        n
    }
}
