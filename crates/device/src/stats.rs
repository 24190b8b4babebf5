use std::collections::BTreeMap;

use serde::Serialize;

/// Counters a device keeps since it was created. Simulated counts and times
/// are deterministic; a [`crate::FileDevice`] fills only the host counters and
/// wall-clock busy time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceStats {
    /// Read requests from the host.
    pub host_reads: u64,
    /// Write requests from the host.
    pub host_writes: u64,
    /// Bytes the host read.
    pub host_read_bytes: u64,
    /// Bytes the host wrote.
    pub host_write_bytes: u64,
    /// Flush requests.
    pub flushes: u64,
    /// Trim requests.
    pub trims: u64,
    /// NAND page reads, including those done by GC and read-modify-write.
    pub nand_page_reads: u64,
    /// NAND page programs, including GC moves and rewrites.
    pub nand_page_programs: u64,
    /// Erase operations on erase units (blocks).
    pub block_erases: u64,
    /// Valid pages garbage collection copied.
    pub gc_page_moves: u64,
    /// Bytes the NAND programmed (for write amplification).
    pub nand_program_bytes: u64,
    /// Sum of service times (ns); parallel units can make it exceed the clock.
    pub busy_ns: u64,
    /// Energy in nanojoules: per-operation energy plus active power while
    /// busy, and the energy of wake-ups from standby. Idle and standby power
    /// are added by [`crate::BlockDevice::energy_nj_until`].
    pub energy_nj: u64,
    /// Time spent in standby, up to the last wake-up (ns).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub standby_ns: u64,
    /// Wake-ups from standby (an HDD's spin-ups).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wakeups: u64,
    /// Time requests waited for wake-ups (ns).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wake_ns: u64,
    /// What an FTL's merges, mapping cache, data cache and planes did.
    #[serde(flatten)]
    pub ftl: FtlCounters,
    /// Erase counts of the erase units (physical blocks), for wear.
    #[serde(skip_serializing_if = "EraseCounts::is_empty")]
    pub erase_counts: EraseCounts,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Counters of an FTL's internals (zero on devices without them). The NAND
/// work they stand for is also in the NAND counters of [`DeviceStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct FtlCounters {
    /// Log-block FTLs: a log block written in order and in full became the
    /// data block (one erase, no copy).
    pub switch_merges: u64,
    /// Log-block FTLs: a log block written in order but not in full got the
    /// rest of its pages copied from where they were and became the data
    /// block.
    pub partial_merges: u64,
    /// Log-block FTLs: every page of a logical block gathered into a fresh
    /// block.
    pub full_merges: u64,
    /// Cached mapping table: map lookups and updates that found their
    /// translation page in DRAM.
    pub map_cache_hits: u64,
    /// Cached mapping table: lookups and updates that did not.
    pub map_cache_misses: u64,
    /// Translation pages read from flash (a miss on a page flash holds, and
    /// garbage collection updating a page not in DRAM).
    pub translation_reads: u64,
    /// Translation pages programmed (a dirty page evicted or updated by
    /// garbage collection; garbage collection moving one counts as a GC move).
    pub translation_writes: u64,
    /// Data cache: host pages written into it.
    pub cache_writes: u64,
    /// Data cache: host pages written over a copy not yet destaged (one
    /// program saved each).
    pub cache_write_hits: u64,
    /// Data cache: host pages read from it instead of flash.
    pub cache_read_hits: u64,
    /// Data cache: pages programmed from it to flash.
    pub cache_destages: u64,
    /// Reads, programs and erases done on two or more planes of a die at once.
    pub multi_plane_ops: u64,
}

impl FtlCounters {
    /// Share of mapping-cache lookups that hit (1.0 when there were none).
    pub fn map_hit_ratio(&self) -> f64 {
        let n = self.map_cache_hits + self.map_cache_misses;
        if n == 0 {
            1.0
        } else {
            self.map_cache_hits as f64 / n as f64
        }
    }

    /// Every counter of `self` plus `other`'s (two devices' internals).
    pub fn plus(&self, o: &FtlCounters) -> FtlCounters {
        FtlCounters {
            switch_merges: self.switch_merges + o.switch_merges,
            partial_merges: self.partial_merges + o.partial_merges,
            full_merges: self.full_merges + o.full_merges,
            map_cache_hits: self.map_cache_hits + o.map_cache_hits,
            map_cache_misses: self.map_cache_misses + o.map_cache_misses,
            translation_reads: self.translation_reads + o.translation_reads,
            translation_writes: self.translation_writes + o.translation_writes,
            cache_writes: self.cache_writes + o.cache_writes,
            cache_write_hits: self.cache_write_hits + o.cache_write_hits,
            cache_read_hits: self.cache_read_hits + o.cache_read_hits,
            cache_destages: self.cache_destages + o.cache_destages,
            multi_plane_ops: self.multi_plane_ops + o.multi_plane_ops,
        }
    }

    /// Every counter of `self` less `before`'s (what happened since).
    pub fn since(&self, b: &FtlCounters) -> FtlCounters {
        FtlCounters {
            switch_merges: self.switch_merges - b.switch_merges,
            partial_merges: self.partial_merges - b.partial_merges,
            full_merges: self.full_merges - b.full_merges,
            map_cache_hits: self.map_cache_hits - b.map_cache_hits,
            map_cache_misses: self.map_cache_misses - b.map_cache_misses,
            translation_reads: self.translation_reads - b.translation_reads,
            translation_writes: self.translation_writes - b.translation_writes,
            cache_writes: self.cache_writes - b.cache_writes,
            cache_write_hits: self.cache_write_hits - b.cache_write_hits,
            cache_read_hits: self.cache_read_hits - b.cache_read_hits,
            cache_destages: self.cache_destages - b.cache_destages,
            multi_plane_ops: self.multi_plane_ops - b.multi_plane_ops,
        }
    }

    /// Whether every counter is zero (a device without these internals).
    pub fn is_zero(&self) -> bool {
        *self == FtlCounters::default()
    }
}

/// Erase counts per erase unit, kept only for units erased at least once,
/// so a multi-terabyte device costs memory for what it erased, not for its
/// size. Serialises as `{"units": n, "erased": {"unit": count, ...}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EraseCounts {
    units: u64,
    erased: BTreeMap<u64, u32>,
}

impl EraseCounts {
    /// Sets how many erase units the device has (only a model knows).
    pub fn set_units(&mut self, units: u64) {
        debug_assert!(
            self.erased.keys().next_back().is_none_or(|&u| u < units),
            "a device keeps its erase units"
        );
        self.units = units;
    }

    /// Erase units of the device (0 before the model has said).
    pub fn units(&self) -> u64 {
        self.units
    }

    /// Whether the device has no erase units (or the model has not said).
    pub fn is_empty(&self) -> bool {
        self.units == 0
    }

    /// Counts one erase of `unit`.
    pub fn add(&mut self, unit: u64) {
        debug_assert!(unit < self.units, "erase unit {unit} of {}", self.units);
        *self.erased.entry(unit).or_insert(0) += 1;
    }

    /// Erases of `unit` so far.
    pub fn get(&self, unit: u64) -> u32 {
        self.erased.get(&unit).copied().unwrap_or(0)
    }

    /// Units erased at least once.
    pub fn touched(&self) -> usize {
        self.erased.len()
    }

    /// Appends `other`'s units after these (two devices' blocks as one list).
    pub fn append(&mut self, other: &EraseCounts) {
        let base = self.units;
        let touched = self.erased.len() + other.erased.len();
        self.erased
            .extend(other.erased.iter().map(|(&u, &c)| (base + u, c)));
        self.units += other.units;
        debug_assert_eq!(self.erased.len(), touched, "units do not collide");
    }

    /// Sum of all erase counts.
    pub fn total(&self) -> u64 {
        self.erased.values().map(|&c| u64::from(c)).sum()
    }
}

/// Wear across erase units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Wear {
    /// Erases of the least erased unit.
    pub min: u32,
    /// Mean erases per unit.
    pub mean: f64,
    /// Erases of the most erased unit.
    pub max: u32,
}

impl DeviceStats {
    /// NAND bytes programmed per host byte written (1.0 where there is no NAND).
    pub fn write_amplification(&self) -> f64 {
        if self.host_write_bytes == 0 || self.nand_program_bytes == 0 {
            return 1.0;
        }
        self.nand_program_bytes as f64 / self.host_write_bytes as f64
    }

    /// Min / mean / max erases per erase unit; `None` without erase units.
    pub fn wear(&self) -> Option<Wear> {
        let e = &self.erase_counts;
        if e.units == 0 {
            return None;
        }
        let never = (e.erased.len() as u64) < e.units;
        let min = e.erased.values().copied().min().filter(|_| !never);
        let w = Wear {
            min: min.unwrap_or(0),
            mean: e.total() as f64 / e.units as f64,
            max: e.erased.values().copied().max().unwrap_or(0),
        };
        debug_assert!(f64::from(w.min) <= w.mean && w.mean <= f64::from(w.max));
        Some(w)
    }

    /// Energy including idle power for the time the device was not busy,
    /// up to virtual time `clock` (a device without standby).
    pub fn energy_with_idle_nj(&self, clock: u64, idle_mw: f64) -> u64 {
        let idle_ns = clock.saturating_sub(self.busy_ns);
        self.energy_nj + nj(idle_mw, idle_ns)
    }

    /// Adds `other`'s counters to these (two devices as one). Erase counts
    /// are concatenated: `other`'s units follow these.
    pub fn add(&mut self, o: &DeviceStats) {
        self.host_reads += o.host_reads;
        self.host_writes += o.host_writes;
        self.host_read_bytes += o.host_read_bytes;
        self.host_write_bytes += o.host_write_bytes;
        self.flushes += o.flushes;
        self.trims += o.trims;
        self.nand_page_reads += o.nand_page_reads;
        self.nand_page_programs += o.nand_page_programs;
        self.block_erases += o.block_erases;
        self.gc_page_moves += o.gc_page_moves;
        self.nand_program_bytes += o.nand_program_bytes;
        self.busy_ns += o.busy_ns;
        self.energy_nj += o.energy_nj;
        self.standby_ns += o.standby_ns;
        self.wakeups += o.wakeups;
        self.wake_ns += o.wake_ns;
        self.ftl = self.ftl.plus(&o.ftl);
        self.erase_counts.append(&o.erase_counts);
    }
}

/// Energy in nanojoules of `mw` milliwatts drawn for `ns` nanoseconds.
pub(crate) fn nj(mw: f64, ns: u64) -> u64 {
    // mW * ns = 1e-3 W * 1e-9 s = 1e-12 J = 1e-3 nJ
    (mw * ns as f64 / 1000.0) as u64
}
