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
    /// Energy in nanojoules: per-operation energy plus active power while busy.
    /// Idle power is added by [`DeviceStats::energy_with_idle_nj`].
    pub energy_nj: u64,
    /// Erase counts of the erase units (physical blocks), for wear.
    #[serde(skip_serializing_if = "EraseCounts::is_empty")]
    pub erase_counts: EraseCounts,
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
    /// up to virtual time `clock`.
    pub fn energy_with_idle_nj(&self, clock: u64, idle_mw: f64) -> u64 {
        let idle_ns = clock.saturating_sub(self.busy_ns);
        // mW * ns = 1e-3 W * 1e-9 s = 1e-12 J = 1e-3 nJ
        self.energy_nj + (idle_mw * idle_ns as f64 / 1000.0) as u64
    }
}
