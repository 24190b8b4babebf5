use serde::Serialize;

/// Counters a device keeps since it was created. Simulated counts and times
/// are deterministic; a [`crate::FileDevice`] fills only the host counters and
/// wall-clock busy time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceStats {
    pub host_reads: u64,
    pub host_writes: u64,
    pub host_read_bytes: u64,
    pub host_write_bytes: u64,
    pub flushes: u64,
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
    /// Erase count of every erase unit (physical block), for wear.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub erase_counts: Vec<u32>,
}

/// Wear across erase units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Wear {
    pub min: u32,
    pub mean: f64,
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
        let min = *self.erase_counts.iter().min()?;
        let max = *self.erase_counts.iter().max()?;
        let sum: u64 = self.erase_counts.iter().map(|&c| u64::from(c)).sum();
        Some(Wear {
            min,
            mean: sum as f64 / self.erase_counts.len() as f64,
            max,
        })
    }

    /// Energy including idle power for the time the device was not busy,
    /// up to virtual time `clock`.
    pub fn energy_with_idle_nj(&self, clock: u64, idle_mw: f64) -> u64 {
        let idle_ns = clock.saturating_sub(self.busy_ns);
        // mW * ns = 1e-3 W * 1e-9 s = 1e-12 J = 1e-3 nJ
        self.energy_nj + (idle_mw * idle_ns as f64 / 1000.0) as u64
    }
}
