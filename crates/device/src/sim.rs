//! [`SimDevice`]: real data plus a cost model and a virtual clock.

use crate::{
    BlockDevice, Completion, DataStore, DeviceSpec, DeviceStats, Geometry, Nanos, QueuedIo, Result,
};

/// The cost side of a simulated device: it decides when each operation is
/// served, what it costs and which NAND work it causes. The data itself is
/// kept by [`SimDevice`]; a model only sees offsets and lengths, already
/// checked against [`Model::geometry`].
pub trait Model: Send + Sync {
    /// Sector size, erase unit, capacity.
    fn geometry(&self) -> Geometry;
    /// Costs a read of `len` bytes at `offset` issued at `at`.
    fn read(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion>;
    /// Costs a write. May refuse it (raw NAND: [`crate::DeviceError::AlreadyProgrammed`]);
    /// the data is stored only when it succeeds.
    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion>;
    /// Drains any volatile write cache.
    fn flush(&mut self, at: Nanos, st: &mut DeviceStats) -> Result<Completion>;
    /// Forgets the range (FTL: invalidates its pages).
    fn trim(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        st: &mut DeviceStats,
    ) -> Result<Completion> {
        let _ = (offset, len, st);
        Ok(Completion {
            start: at,
            end: at,
            energy_nj: 0,
        })
    }
    /// Erases a host-visible erase unit (raw NAND only).
    fn erase(&mut self, at: Nanos, unit: u64, st: &mut DeviceStats) -> Result<Completion> {
        let _ = (at, unit, st);
        Err(crate::DeviceError::Unsupported(
            "erase: this device has no host-visible erase units",
        ))
    }
    /// See [`BlockDevice::is_programmed`].
    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        let _ = (offset, len);
        false
    }
    /// See [`BlockDevice::reorders_queue`].
    fn reorders_queue(&self) -> bool {
        false
    }
    /// See [`BlockDevice::pick_next`].
    fn pick_next(&self, at: Nanos, queued: &[QueuedIo]) -> usize {
        let _ = (at, queued);
        0
    }
    /// Puts the device in the state a sequential write of zeros over
    /// `[0, len)` leaves, without simulating it, if the model can (a fresh
    /// page-mapped FTL). Counters and clocks are left alone.
    fn fill(&mut self, len: u64) -> bool {
        let _ = len;
        false
    }
    /// When the device can start its next command; `None` means "use the clock".
    fn busy_until(&self) -> Option<Nanos> {
        None
    }
    /// The model's own consistency (an FTL's maps against its blocks); the
    /// message says what broke. Models without internal state have none.
    fn check_invariants(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// A simulated device: stores data for real and costs every operation.
pub struct SimDevice {
    name: String,
    model: Box<dyn Model>,
    geometry: Geometry,
    data: DataStore,
    stats: DeviceStats,
    clock: Nanos,
    active_mw: f64,
    idle_mw: f64,
}

impl SimDevice {
    /// A device built from a spec, with its data in memory.
    pub fn new(spec: &DeviceSpec) -> Result<Self> {
        Self::with_store(spec, DataStore::default())
    }

    /// A device built from a spec, keeping its data in `data`.
    pub fn with_store(spec: &DeviceSpec, data: DataStore) -> Result<Self> {
        let model = spec.build_model()?;
        let geometry = model.geometry();
        Ok(SimDevice {
            name: spec.name.clone(),
            model,
            geometry,
            data,
            stats: DeviceStats::default(),
            clock: 0,
            active_mw: spec.power.active_mw,
            idle_mw: spec.power.idle_mw,
        })
    }

    /// The spec's name (a preset's, or the file a spec came from).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks the model's internal consistency (an FTL's maps against its
    /// blocks). Debug builds also check after garbage collection; tests
    /// call this every so many operations. An error is a flashkv bug.
    pub fn check_invariants(&self) -> Result<()> {
        self.model
            .check_invariants()
            .map_err(|e| crate::DeviceError::internal(&self.name, e))
    }

    /// Energy including idle power up to the current clock, in nanojoules.
    pub fn total_energy_nj(&self) -> u64 {
        self.stats.energy_with_idle_nj(self.clock, self.idle_mw)
    }

    /// Bytes of RAM holding the device's data.
    pub fn resident_bytes(&self) -> u64 {
        self.data.resident_bytes()
    }

    fn account(&mut self, c: Completion) -> Completion {
        debug_assert!(c.start <= c.end, "a completion ends after it starts");
        let busy = c.end - c.start;
        let active_nj = (self.active_mw * busy as f64 / 1000.0) as u64;
        let c = Completion {
            energy_nj: c.energy_nj + active_nj,
            ..c
        };
        self.stats.busy_ns += busy;
        self.stats.energy_nj += c.energy_nj;
        self.clock = self.clock.max(c.end);
        c
    }
}

impl BlockDevice for SimDevice {
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        let len = buf.len() as u64;
        self.geometry.check(offset, len)?;
        let c = self.model.read(at, offset, len, &mut self.stats)?;
        debug_assert!(
            len == 0 || c.end >= at,
            "a read completes no earlier than issued"
        );
        self.data.read(offset, buf)?;
        self.stats.host_reads += 1;
        self.stats.host_read_bytes += len;
        Ok(self.account(c))
    }

    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        let len = buf.len() as u64;
        self.geometry.check(offset, len)?;
        let c = self.model.write(at, offset, len, &mut self.stats)?;
        debug_assert!(
            len == 0 || c.end >= at,
            "a write completes no earlier than issued"
        );
        self.data.write(offset, buf)?;
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += len;
        Ok(self.account(c))
    }

    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        let c = self.model.flush(at, &mut self.stats)?;
        self.stats.flushes += 1;
        Ok(self.account(c))
    }

    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.geometry.check(offset, len)?;
        let c = self.model.trim(at, offset, len, &mut self.stats)?;
        self.data.zero(offset, len)?;
        self.stats.trims += 1;
        Ok(self.account(c))
    }

    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        let c = self.model.erase(at, unit, &mut self.stats)?;
        if let Some(eu) = self.geometry.erase_unit {
            debug_assert!(
                (unit + 1) * eu <= self.geometry.capacity,
                "the model checked the unit"
            );
            self.data.zero(unit * eu, eu)?;
        }
        Ok(self.account(c))
    }

    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        self.model.is_programmed(offset, len)
    }

    fn clock(&self) -> Nanos {
        self.clock
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }

    fn reorders_queue(&self) -> bool {
        self.model.reorders_queue()
    }

    fn pick_next(&self, at: Nanos, queued: &[QueuedIo]) -> usize {
        self.model.pick_next(at, queued)
    }

    fn busy_until(&self) -> Nanos {
        self.model.busy_until().unwrap_or(self.clock)
    }

    fn fill_sequential(&mut self, len: u64) -> Result<bool> {
        self.geometry.check(0, len)?;
        // Zeros over a store that holds nothing leave it as it is.
        if self.data.resident_bytes() != 0 || !self.model.fill(len) {
            return Ok(false);
        }
        Ok(true)
    }
}

/// Nanoseconds to move `bytes` at `mb_per_s` (MB = 10^6 bytes).
pub(crate) fn transfer_ns(bytes: u64, mb_per_s: f64) -> Nanos {
    debug_assert!(mb_per_s > 0.0, "a rate of {mb_per_s} MB/s");
    (bytes as f64 * 1000.0 / mb_per_s).round() as Nanos
}

/// Microseconds (as written in specs) to nanoseconds.
pub(crate) fn us(v: f64) -> Nanos {
    debug_assert!(v.is_finite() && v >= 0.0, "{v} µs");
    (v * 1000.0).round() as Nanos
}
