//! Fault injection for crash-recovery and corruption tests: [`FaultDevice`]
//! wraps any device and models a volatile write cache, power loss, I/O
//! errors, corrupted reads, misdirected writes, latent sector errors and
//! latency spikes, every random choice drawn from the plan's one seed.
//!
//! Writes and trims since the last completed flush are *unflushed*. The inner
//! device receives every write at once (so reads and costs are those of the
//! inner device), and the wrapper keeps an undo log: the pre-image of each
//! unflushed write. At a crash a seeded choice decides, per unflushed write,
//! whether it survived, was lost, or (several sectors) was torn, only some
//! of its sectors landing; the write in flight may also tear inside a
//! sector ([`FaultPlan::tear_bytes`]). The lost sectors are then rolled
//! back to what they held. After a crash every call fails with
//! [`DeviceError::Crashed`]; [`FaultDevice::restart`] powers the device up
//! again under a new plan (so a test can crash it again during recovery),
//! and [`FaultDevice::recover`] hands back the bare inner device.
//!
//! On a program-once device (raw NAND) a completed program is durable (there
//! is no cache to lose), so only the write interrupted by the crash can be
//! lost or torn, unless [`FaultPlan::lose_programs`] gives it a cache: lost
//! programs then leave sectors programmed but reading as erased, which
//! the wrapper keeps as masks over the inner device. Pre-images are read
//! through the inner device: on a simulated device its read counters and
//! clock include them.

mod crash;
mod inject;
mod plan;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

pub use plan::{FaultPlan, Strike};

use crate::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, QueuedIo, Result};
use crash::Pending;
use plan::Rng;

/// How many faults of each kind a [`FaultDevice`] has injected, so a test
/// can check that its faults struck.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Injected {
    /// Sectors returned with a bit flipped.
    pub flipped_reads: u64,
    /// Writes that landed elsewhere.
    pub misdirected_writes: u64,
    /// Reads failed by a latent sector error.
    pub latent_errors: u64,
    /// Operations slowed by a latency spike.
    pub spikes: u64,
}

/// A device that can lose power and corrupt. See the module documentation.
pub struct FaultDevice<D: BlockDevice> {
    inner: D,
    plan: FaultPlan,
    /// Whether unflushed writes can be lost (a write cache).
    volatile: bool,
    sector: u64,
    pending: Vec<Pending>,
    /// Program-once sectors whose lost programs read as these bytes.
    masked: BTreeMap<u64, Box<[u8]>>,
    /// Sectors whose reads fail (latent sector errors).
    latent: BTreeSet<u64>,
    ops: u64,
    writes: u64,
    crashed: bool,
    rollback_error: Option<DeviceError>,
    rng: Rng,
    /// The latest completion reported, spikes included.
    late: Nanos,
    injected: Injected,
}

impl<D: BlockDevice> FaultDevice<D> {
    /// Wraps `inner`, powered on, with `plan`'s faults to come.
    pub fn new(inner: D, plan: FaultPlan) -> Self {
        let g = inner.geometry();
        assert!(g.sector_size > 0, "a device has sectors");
        assert!(
            !plan.misdirect.is_off() || g.capacity >= u64::from(g.sector_size),
            "a misdirected write needs somewhere to land"
        );
        FaultDevice {
            volatile: !g.program_once || plan.lose_programs,
            sector: u64::from(g.sector_size),
            rng: Rng::new(plan.seed),
            latent: plan.latent.at.iter().copied().collect(),
            inner,
            plan,
            pending: Vec::new(),
            masked: BTreeMap::new(),
            ops: 0,
            writes: 0,
            crashed: false,
            rollback_error: None,
            late: 0,
            injected: Injected::default(),
        }
    }

    /// Whether power has been lost.
    pub fn crashed(&self) -> bool {
        self.crashed
    }

    /// Writes and trims not yet made durable by a flush.
    pub fn unflushed(&self) -> usize {
        self.pending.len()
    }

    /// Operations and writes issued so far (including failed ones), for
    /// choosing crash points.
    pub fn counts(&self) -> (u64, u64) {
        (self.ops, self.writes)
    }

    /// The faults injected so far.
    pub fn injected(&self) -> Injected {
        self.injected
    }

    /// Loses power now (if not already): unflushed writes survive, vanish
    /// or tear as the plan's seed decides.
    pub fn crash(&mut self) -> Result<()> {
        if !self.crashed {
            self.crashed = true;
            self.roll_back(None)?;
        }
        Ok(())
    }

    /// Loses power now (if not already), keeping exactly the unflushed
    /// writes and trims `keep` picks, each whole, by index (oldest first,
    /// `0..self.unflushed()`): a chosen crash state rather than a seeded one.
    pub fn crash_keeping(&mut self, keep: impl Fn(usize) -> bool) -> Result<()> {
        if !self.crashed {
            self.crashed = true;
            self.roll_back(Some(&keep))?;
        }
        Ok(())
    }

    /// Replaces the plan while the power is on: `plan`'s faults strike
    /// from the next operation, numbered from 0 again. What is unflushed
    /// stays unflushed; sectors already unreadable stay so.
    pub fn arm(&mut self, plan: FaultPlan) {
        assert!(!self.crashed, "arm a powered device; restart a crashed one");
        let volatile = !self.inner.geometry().program_once || plan.lose_programs;
        assert!(
            self.pending.is_empty() || volatile == self.volatile,
            "a write cache holding unflushed writes stays a write cache"
        );
        self.volatile = volatile;
        self.rng = Rng::new(plan.seed);
        self.latent.extend(plan.latent.at.iter().copied());
        (self.ops, self.writes) = (0, 0);
        self.plan = plan;
    }

    /// Loses power (if not already) and powers up again with `plan`:
    /// what survived, lost programs and latent errors included, with new
    /// faults to come.
    pub fn restart(mut self, plan: FaultPlan) -> Result<Self> {
        self.crash()?;
        if let Some(e) = self.rollback_error.take() {
            return Err(e);
        }
        debug_assert!(
            self.pending.is_empty(),
            "the crash settled every unflushed write"
        );
        let mut next = FaultDevice::new(self.inner, plan);
        next.masked = self.masked;
        next.latent.extend(self.latent);
        next.late = self.late;
        Ok(next)
    }

    /// Loses power (if not already) and returns the inner device holding
    /// what survived. Lost programs on a program-once device exist only in
    /// the wrapper: use [`Self::restart`] for those.
    pub fn recover(mut self) -> Result<D> {
        self.crash()?;
        if let Some(e) = self.rollback_error.take() {
            return Err(e);
        }
        if !self.masked.is_empty() {
            return Err(DeviceError::Unsupported(
                "recover: lost programs read as erased only through the FaultDevice; restart it",
            ));
        }
        Ok(self.inner)
    }

    /// The inner device as it is: every write so far, unless a crash
    /// already rolled some back.
    pub fn into_inner(self) -> D {
        self.inner
    }

    /// The inner device, as it is.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Counts an operation and decides whether it fails or loses power.
    fn begin(&mut self, write: bool, offset: u64) -> Result<()> {
        if self.crashed {
            return Err(DeviceError::Crashed);
        }
        let op = self.ops;
        let wr = self.writes;
        self.ops += 1;
        if write {
            self.writes += 1;
        }
        debug_assert!(self.writes <= self.ops, "every write is an operation");
        let power_lost = self.plan.crash_after_ops == Some(op)
            || (write && self.plan.crash_after_writes == Some(wr));
        if power_lost {
            return Err(DeviceError::Crashed);
        }
        assert!(
            !self.plan.panic_ops.contains(&op),
            "injected panic at operation {op}"
        );
        if self.plan.fail_ops.contains(&op) || (write && self.plan.fail_writes.contains(&wr)) {
            return Err(DeviceError::Injected { offset });
        }
        Ok(())
    }

    fn guard(&mut self, write: bool, offset: u64, in_flight: Option<(u64, &[u8])>) -> Result<()> {
        match self.begin(write, offset) {
            Err(DeviceError::Crashed) if !self.crashed => Err(self.lose_power(in_flight)),
            other => other,
        }
    }
}

impl<D: BlockDevice> BlockDevice for FaultDevice<D> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }

    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        self.guard(false, offset, None)?;
        self.inner.geometry().check(offset, buf.len() as u64)?;
        self.check_latent(offset, buf.len() as u64)?;
        let c = self.read_medium(at, offset, buf)?;
        self.flip_reads(offset, buf);
        Ok(self.spike(c))
    }

    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.guard(true, offset, Some((offset, buf)))?;
        self.inner.geometry().check(offset, buf.len() as u64)?;
        let Some(target) = self.misdirected(offset, buf.len() as u64) else {
            let c = self.write_through(at, offset, buf)?;
            return Ok(self.spike(c));
        };
        // The write goes astray: its target keeps what it held, and what
        // it hits may refuse it (a programmed sector): either way the
        // host is told it landed.
        let c = match self.write_through(at, target, buf) {
            Ok(c) => c,
            Err(_) => self.done(at),
        };
        Ok(self.spike(c))
    }

    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.guard(false, 0, None)?;
        let c = self.inner.flush_at(at)?;
        // Durable now: nothing before this flush can be lost.
        self.pending.clear();
        Ok(self.spike(c))
    }

    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.guard(false, offset, None)?;
        self.inner.geometry().check(offset, len)?;
        if self.volatile {
            let mut pre = vec![0u8; len as usize];
            self.read_medium(at, offset, &mut pre)?;
            self.pending.push(Pending::new(offset, pre, self.sector));
        }
        let c = self.inner.trim_at(at, offset, len)?;
        Ok(self.spike(c))
    }

    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        self.guard(false, 0, None)?;
        let c = self.inner.erase_at(at, unit)?;
        self.erased(unit);
        Ok(self.spike(c))
    }

    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        self.inner.is_programmed(offset, len)
    }

    fn clock(&self) -> Nanos {
        self.inner.clock().max(self.late)
    }

    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }

    fn reorders_queue(&self) -> bool {
        self.inner.reorders_queue()
    }

    fn pick_next(&self, at: Nanos, queued: &[QueuedIo]) -> usize {
        self.inner.pick_next(at, queued)
    }

    fn busy_until(&self) -> Nanos {
        self.inner.busy_until().max(self.late)
    }

    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.inner.energy_nj_until(t)
    }

    fn advance_to(&mut self, t: Nanos) {
        self.inner.advance_to(t)
    }

    fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        self.inner.set_standby_after(after)
    }

    fn tiers(&self) -> Option<crate::Tiers> {
        self.inner.tiers()
    }
}
