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
///
/// Power states: the device is active while it serves operations and idle
/// from the end of its last operation. With a standby state
/// ([`PowerSpec::standby_mw`](crate::PowerSpec)) and a standby timer `T`
/// set, a device idle for longer than `T` went to standby `T` after its
/// last operation; the next operation waits for the wake-up (`wake_ms`,
/// issued to the model that much later) and costs the wake-up energy
/// (`wake_mj`). Idle power is drawn for idle time that was neither standby
/// nor waking, standby power for standby time; while waking, only the
/// wake-up energy counts (a data sheet's spin-up figure covers it).
pub struct SimDevice {
    name: String,
    model: Box<dyn Model>,
    geometry: Geometry,
    data: DataStore,
    stats: DeviceStats,
    clock: Nanos,
    /// When the last operation ended (and the model was free): the device
    /// has been idle since.
    idle_since: Nanos,
    active_mw: f64,
    idle_mw: f64,
    standby_mw: Option<f64>,
    standby_after: Option<Nanos>,
    wake_ns: Nanos,
    wake_nj: u64,
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
            idle_since: 0,
            active_mw: spec.power.active_mw,
            idle_mw: spec.power.idle_mw,
            standby_mw: spec.power.standby_mw,
            standby_after: spec.power.standby_after_ns(),
            wake_ns: spec.power.wake_ns(),
            wake_nj: spec.power.wake_nj(),
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

    /// Energy including idle and standby power up to the current clock, in
    /// nanojoules: [`BlockDevice::energy_nj_until`] at the clock.
    pub fn total_energy_nj(&self) -> u64 {
        self.energy_nj_until(self.clock)
    }

    /// Sets the standby timer: the device enters standby after `after` of
    /// idle time (`None`: never). Fails where the spec gives no standby
    /// state (`power.standby_mw`). Takes effect from the next operation,
    /// for the idle time since the last one too.
    pub fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        if after.is_some() && self.standby_mw.is_none() {
            return Err(crate::DeviceError::BadInput(format!(
                "device {} has no standby state (its spec sets no power.standby_mw)",
                self.name
            )));
        }
        self.standby_after = after;
        Ok(())
    }

    /// Nanoseconds in standby up to host time `t` (at least the clock),
    /// the standby the device is in since its last operation included.
    pub fn standby_ns_until(&self, t: Nanos) -> u64 {
        let horizon = t.max(self.clock);
        let pending = self
            .asleep_at()
            .map_or(0, |asleep| horizon.saturating_sub(asleep));
        self.stats.standby_ns + pending
    }

    /// The standby timer, if set.
    pub fn standby_after(&self) -> Option<Nanos> {
        self.standby_after
    }

    /// When the device went to standby if nothing comes before: `T` after
    /// it became idle, or never.
    fn asleep_at(&self) -> Option<Nanos> {
        self.standby_after
            .map(|t| self.idle_since.saturating_add(t))
    }

    /// An operation issued at `at`: if the device went to standby before,
    /// counts the standby time and the wake-up and returns when the model
    /// sees the operation (after the wake-up), with the wake-up's energy.
    fn wake(&mut self, at: Nanos) -> (Nanos, u64) {
        match self.asleep_at() {
            Some(asleep) if at > asleep => {
                debug_assert!(self.standby_mw.is_some(), "a timer needs a standby state");
                self.stats.standby_ns += at - asleep;
                self.stats.wakeups += 1;
                self.stats.wake_ns += self.wake_ns;
                (at + self.wake_ns, self.wake_nj)
            }
            _ => (at, 0),
        }
    }

    /// Bytes of RAM holding the device's data.
    pub fn resident_bytes(&self) -> u64 {
        self.data.resident_bytes()
    }

    /// Counts a served operation: active power while busy, `wake_nj` of a
    /// wake-up before it; the device is idle from its end.
    fn account(&mut self, c: Completion, wake_nj: u64) -> Completion {
        debug_assert!(c.start <= c.end, "a completion ends after it starts");
        let busy = c.end - c.start;
        let active_nj = crate::stats::nj(self.active_mw, busy);
        let c = Completion {
            energy_nj: c.energy_nj + active_nj + wake_nj,
            ..c
        };
        self.stats.busy_ns += busy;
        self.stats.energy_nj += c.energy_nj;
        self.clock = self.clock.max(c.end);
        let free = self.model.busy_until().unwrap_or(c.end).max(c.end);
        self.idle_since = self.idle_since.max(free);
        debug_assert!(self.idle_since >= c.end, "idle only after the operation");
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
        let (at, wake_nj) = self.wake(at);
        let c = self.model.read(at, offset, len, &mut self.stats)?;
        debug_assert!(
            len == 0 || c.end >= at,
            "a read completes no earlier than issued"
        );
        self.data.read(offset, buf)?;
        self.stats.host_reads += 1;
        self.stats.host_read_bytes += len;
        Ok(self.account(c, wake_nj))
    }

    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        let len = buf.len() as u64;
        self.geometry.check(offset, len)?;
        let (at, wake_nj) = self.wake(at);
        let c = self.model.write(at, offset, len, &mut self.stats)?;
        debug_assert!(
            len == 0 || c.end >= at,
            "a write completes no earlier than issued"
        );
        self.data.write(offset, buf)?;
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += len;
        Ok(self.account(c, wake_nj))
    }

    fn write_zeros_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.geometry.check(offset, len)?;
        let (at, wake_nj) = self.wake(at);
        let c = self.model.write(at, offset, len, &mut self.stats)?;
        // What a write of zeros leaves, without reading a buffer of them.
        self.data.zero(offset, len)?;
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += len;
        Ok(self.account(c, wake_nj))
    }

    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        let (at, wake_nj) = self.wake(at);
        let c = self.model.flush(at, &mut self.stats)?;
        self.stats.flushes += 1;
        Ok(self.account(c, wake_nj))
    }

    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.geometry.check(offset, len)?;
        let (at, wake_nj) = self.wake(at);
        let c = self.model.trim(at, offset, len, &mut self.stats)?;
        self.data.zero(offset, len)?;
        self.stats.trims += 1;
        Ok(self.account(c, wake_nj))
    }

    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        let (at, wake_nj) = self.wake(at);
        let c = self.model.erase(at, unit, &mut self.stats)?;
        if let Some(eu) = self.geometry.erase_unit {
            debug_assert!(
                (unit + 1) * eu <= self.geometry.capacity,
                "the model checked the unit"
            );
            self.data.zero(unit * eu, eu)?;
        }
        Ok(self.account(c, wake_nj))
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

    fn energy_nj_until(&self, t: Nanos) -> u64 {
        let horizon = t.max(self.clock);
        let st = &self.stats;
        // Standby since the last operation too, not yet counted by a wake-up.
        let standby = self.standby_ns_until(horizon);
        let idle = horizon.saturating_sub(st.busy_ns + standby + st.wake_ns);
        let standby_nj = match self.standby_mw {
            Some(mw) if standby > 0 => crate::stats::nj(mw, standby),
            _ => 0,
        };
        st.energy_nj + crate::stats::nj(self.idle_mw, idle) + standby_nj
    }

    fn advance_to(&mut self, t: Nanos) {
        self.clock = self.clock.max(t);
    }

    fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        SimDevice::set_standby_after(self, after)
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
