use flashkv_device::Nanos;
use serde::Serialize;

/// What recovery found and what it cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryReport {
    /// Log records replayed (data, promotion and trim records).
    pub records: u64,
    /// Dirty sectors mapped again.
    pub dirty_sectors: u64,
    /// Bytes of log read from the SSD.
    pub scanned_bytes: u64,
    /// Virtual time from the first superblock read to the end of the scan.
    pub time_ns: Nanos,
}

/// Counters of a hybrid device, beyond the host counters of `stats()`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HybridStats {
    /// Host write requests (or parts of them) sent to the SSD cache.
    pub ssd_write_requests: u64,
    /// Host bytes sent to the SSD cache.
    pub ssd_write_bytes: u64,
    /// Host write requests (or parts of them) sent straight to the HDD.
    pub hdd_write_requests: u64,
    /// Host bytes sent straight to the HDD.
    pub hdd_write_bytes: u64,
    /// Host read requests.
    pub read_requests: u64,
    /// Read bytes served from the SSD cache.
    pub read_hit_bytes: u64,
    /// Read bytes served from the HDD.
    pub read_miss_bytes: u64,
    /// `read_hit_bytes / (read_hit_bytes + read_miss_bytes)`.
    pub read_hit_ratio: f64,
    /// Cached bytes not yet on the HDD.
    pub dirty_bytes: u64,
    /// Cached bytes (dirty or clean) reads can be served from.
    pub cached_bytes: u64,
    /// Log span between the dirty tail and the head, in bytes (what the watermarks watch).
    pub dirty_span_bytes: u64,
    /// Size of the cache region.
    pub cache_bytes: u64,
    /// Bytes the flush worker wrote back.
    pub flush_bytes: u64,
    /// HDD writes the flush worker used.
    pub flush_writes: u64,
    /// Flush sessions in idle time.
    pub idle_flushes: u64,
    /// Superblock updates that released written-back log.
    pub commits: u64,
    /// Flush sessions under pressure (past the high watermark).
    pub pressure_flushes: u64,
    /// Virtual time the flush worker ran, from each start to its last
    /// completion (under pressure this includes waiting behind host I/O).
    pub flush_ns: Nanos,
    /// `flush_bytes` per second of `flush_ns`, MB/s (10^6 bytes).
    pub flush_mb_per_s: f64,
    /// Writes that waited for the flush worker to free cache space.
    pub stalls: u64,
    /// Units logged with only some of their host sectors (a write covered
    /// them in part and no cached copy held the rest).
    pub partial_units: u64,
    /// SSD reads of a cached copy merged into a write covering its unit in part.
    pub merge_reads: u64,
    /// Runs of HDD data copied into the cache after repeated reads.
    pub promotions: u64,
    /// Bytes those copies held.
    pub promoted_bytes: u64,
    /// Memory the resident mapping tablets take.
    pub mapping_memory_bytes: u64,
    /// Tablets read back from the mapping region.
    pub tablet_loads: u64,
    /// Tablets written out to the mapping region.
    pub tablet_stores: u64,
    /// Memory the checksums of the cached units take (4.125 bytes per unit
    /// of cache).
    pub checksum_memory_bytes: u64,
    /// Reads from the SSD repeated because the first failed its checksum
    /// (a cached unit, a log record during recovery, a tablet).
    pub checksum_rereads: u64,
    /// Present when the device was opened (recovered) rather than created.
    pub recovery: Option<RecoveryReport>,
}
