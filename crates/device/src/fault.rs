//! Fault injection for crash-recovery tests: [`FaultDevice`] wraps any
//! device and models a volatile write cache, power loss and I/O errors.
//!
//! Writes and trims since the last completed flush are *unflushed*. The inner
//! device receives every write at once (so reads and costs are those of the
//! inner device), and the wrapper keeps an undo log: the pre-image of each
//! unflushed write. At a crash a seeded choice decides, per unflushed write,
//! whether it survived, was lost, or (several sectors) was torn, only some
//! of its sectors landing; the lost sectors are then rolled back to what
//! they held. After a crash every call fails with [`DeviceError::Crashed`];
//! [`FaultDevice::recover`] hands back the inner device with the post-crash
//! contents, so a test can reopen a store on it.
//!
//! On a program-once device (raw NAND) a completed program is durable (there
//! is no cache to lose), so only the write interrupted by the crash can be
//! lost or torn. Pre-images are read through the inner device: on a
//! simulated device its read counters and clock include them.

use std::collections::BTreeMap;

use crate::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, QueuedIo, Result};

/// What to inject. The default injects nothing.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// `n` writes complete; power is lost during write `n + 1`, which fails
    /// with [`DeviceError::Crashed`] and may land whole, in part or not at all.
    pub crash_after_writes: Option<u64>,
    /// `n` operations of any kind complete; power is lost during the next one.
    pub crash_after_ops: Option<u64>,
    /// Seeds the choice of which unflushed writes survive a crash.
    pub seed: u64,
    /// Whether an unflushed multi-sector write may land in part.
    pub tear: bool,
    /// Operations (numbered from 0 over every call) that fail with
    /// [`DeviceError::Injected`] and have no effect.
    pub fail_ops: Vec<u64>,
    /// Writes (numbered from 0) that fail with [`DeviceError::Injected`].
    pub fail_writes: Vec<u64>,
}

impl FaultPlan {
    /// A plan that loses power during write `n + 1`, tearing writes, choices seeded by `seed`.
    pub fn crash_after_writes(n: u64, seed: u64) -> Self {
        FaultPlan {
            crash_after_writes: Some(n),
            seed,
            tear: true,
            ..FaultPlan::default()
        }
    }
}

/// An unflushed write: where, and what the range held before it.
#[derive(Debug)]
struct Pending {
    offset: u64,
    pre: Vec<u8>,
}

/// A device that can lose power. See the module documentation.
pub struct FaultDevice<D: BlockDevice> {
    inner: D,
    plan: FaultPlan,
    volatile: bool,
    sector: u64,
    pending: Vec<Pending>,
    ops: u64,
    writes: u64,
    crashed: bool,
    rollback_error: Option<DeviceError>,
    rng: u64,
}

impl<D: BlockDevice> FaultDevice<D> {
    pub fn new(inner: D, plan: FaultPlan) -> Self {
        let g = inner.geometry();
        FaultDevice {
            volatile: !g.program_once,
            sector: u64::from(g.sector_size),
            rng: plan.seed,
            inner,
            plan,
            pending: Vec::new(),
            ops: 0,
            writes: 0,
            crashed: false,
            rollback_error: None,
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

    /// Loses power now (if not already): unflushed writes survive, vanish
    /// or tear as the plan's seed decides.
    pub fn crash(&mut self) -> Result<()> {
        if !self.crashed {
            self.crashed = true;
            self.roll_back()?;
        }
        Ok(())
    }

    /// Loses power (if not already) and returns the inner device holding
    /// what survived.
    pub fn recover(mut self) -> Result<D> {
        self.crash()?;
        match self.rollback_error.take() {
            Some(e) => Err(e),
            None => Ok(self.inner),
        }
    }

    /// The inner device as it is: every write so far, unless a crash
    /// already rolled some back.
    pub fn into_inner(self) -> D {
        self.inner
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    fn next_random(&mut self) -> u64 {
        // splitmix64: fixed forever, so a seed names the same crash outcome.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Which sectors of an `n`-sector write land: all, none or (tearing) a
    /// random subset.
    fn fate(&mut self, n: u64) -> Vec<bool> {
        let choices = if self.plan.tear && n > 1 { 3 } else { 2 };
        match self.next_random() % choices {
            0 => vec![true; n as usize],
            1 => vec![false; n as usize],
            _ => (0..n).map(|_| self.next_random() & 1 == 1).collect(),
        }
    }

    /// Rewrites every sector whose final unflushed write did not land with
    /// what it held after the last write that did (or at the last flush).
    fn roll_back(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        // sector -> (write index, landed) in write order
        let mut history: BTreeMap<u64, Vec<(usize, bool)>> = BTreeMap::new();
        for (i, p) in pending.iter().enumerate() {
            let n = p.pre.len() as u64 / self.sector;
            let fate = self.fate(n);
            for (k, landed) in fate.into_iter().enumerate() {
                history
                    .entry(p.offset / self.sector + k as u64)
                    .or_default()
                    .push((i, landed));
            }
        }
        for (sector, writes) in history {
            // The write after the last one that landed held, as its
            // pre-image, exactly what the sector must end up with.
            let after_last_landed = writes
                .iter()
                .rposition(|&(_, landed)| landed)
                .map_or(0, |j| j + 1);
            let Some(&(i, _)) = writes.get(after_last_landed) else {
                continue;
            };
            let p = &pending[i];
            let at = (sector * self.sector - p.offset) as usize;
            let image = &p.pre[at..at + self.sector as usize];
            let t = self.inner.clock();
            self.inner.write_at(t, sector * self.sector, image)?;
        }
        Ok(())
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
        let power_lost = self.plan.crash_after_ops == Some(op)
            || (write && self.plan.crash_after_writes == Some(wr));
        if power_lost {
            return Err(DeviceError::Crashed);
        }
        if self.plan.fail_ops.contains(&op) || (write && self.plan.fail_writes.contains(&wr)) {
            return Err(DeviceError::Injected { offset });
        }
        Ok(())
    }

    /// Power lost during this call: `Crashed`, after rolling back. A write
    /// in flight may land, vanish or tear like an unflushed one.
    fn lose_power(&mut self, in_flight: Option<(u64, &[u8])>) -> DeviceError {
        self.crashed = true;
        if let Some((offset, data)) = in_flight {
            if self
                .inner
                .geometry()
                .check(offset, data.len() as u64)
                .is_ok()
            {
                // A failed in-flight write simply did not happen.
                let _ = if self.volatile {
                    let t = self.inner.clock();
                    self.write_logged(t, offset, data).map(|_| ())
                } else {
                    self.write_landed(offset, data)
                };
            }
        }
        if let Err(e) = self.roll_back() {
            self.rollback_error = Some(e);
        }
        DeviceError::Crashed
    }

    /// Program-once devices cannot roll back: write only the sectors that land.
    fn write_landed(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let fate = self.fate(data.len() as u64 / self.sector);
        let s = self.sector as usize;
        for (k, chunk) in data.chunks(s).enumerate() {
            if fate[k] {
                let t = self.inner.clock();
                self.inner.write_at(t, offset + (k * s) as u64, chunk)?;
            }
        }
        Ok(())
    }

    /// Writes through, keeping the pre-image while the write is unflushed.
    fn write_logged(&mut self, at: Nanos, offset: u64, data: &[u8]) -> Result<Completion> {
        let mut pre = vec![0u8; data.len()];
        self.inner.read_at(at, offset, &mut pre)?;
        let c = self.inner.write_at(at, offset, data)?;
        self.pending.push(Pending { offset, pre });
        Ok(c)
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
        self.inner.read_at(at, offset, buf)
    }

    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.guard(true, offset, Some((offset, buf)))?;
        self.inner.geometry().check(offset, buf.len() as u64)?;
        if self.volatile {
            self.write_logged(at, offset, buf)
        } else {
            self.inner.write_at(at, offset, buf)
        }
    }

    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.guard(false, 0, None)?;
        let c = self.inner.flush_at(at)?;
        self.pending.clear();
        Ok(c)
    }

    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.guard(false, offset, None)?;
        self.inner.geometry().check(offset, len)?;
        if self.volatile {
            let mut pre = vec![0u8; len as usize];
            self.inner.read_at(at, offset, &mut pre)?;
            self.pending.push(Pending { offset, pre });
        }
        self.inner.trim_at(at, offset, len)
    }

    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        self.guard(false, 0, None)?;
        self.inner.erase_at(at, unit)
    }

    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        self.inner.is_programmed(offset, len)
    }

    fn clock(&self) -> Nanos {
        self.inner.clock()
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
        self.inner.busy_until()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets;

    fn dev(plan: FaultPlan) -> FaultDevice<crate::SimDevice> {
        FaultDevice::new(presets::open("dram-ssd").unwrap(), plan)
    }

    #[test]
    fn power_loss_during_write_n_plus_1_then_everything_fails() {
        let mut d = dev(FaultPlan::crash_after_writes(3, 1));
        let mut buf = [0u8; 512];
        for i in 0..3u64 {
            d.write(i * 512, &[1u8; 512]).unwrap();
            d.read(0, &mut buf).unwrap();
        }
        assert!(matches!(
            d.write(4096, &[2u8; 512]),
            Err(DeviceError::Crashed)
        ));
        assert!(d.crashed());
        assert!(matches!(d.read(0, &mut buf), Err(DeviceError::Crashed)));
        assert!(matches!(d.flush(), Err(DeviceError::Crashed)));
        assert_eq!(d.counts(), (7, 4));
    }

    #[test]
    fn crash_after_ops_counts_every_call() {
        let mut d = dev(FaultPlan {
            crash_after_ops: Some(2),
            ..FaultPlan::default()
        });
        let mut buf = [0u8; 512];
        d.read(0, &mut buf).unwrap();
        d.flush().unwrap();
        assert!(matches!(d.read(0, &mut buf), Err(DeviceError::Crashed)));
    }

    #[test]
    fn flushed_data_survives_and_unflushed_sectors_are_old_or_new() {
        let (mut kept, mut lost, mut torn) = (0, 0, 0);
        for seed in 0..200 {
            let mut d = dev(FaultPlan {
                seed,
                tear: true,
                ..FaultPlan::default()
            });
            d.write(0, &[1u8; 4096]).unwrap();
            d.flush().unwrap();
            d.write(0, &[2u8; 4096]).unwrap();
            assert_eq!(d.unflushed(), 1);
            let mut inner = d.recover().unwrap();
            let mut buf = [0u8; 4096];
            inner.read(0, &mut buf).unwrap();
            let new = buf
                .chunks(512)
                .filter(|s| s.iter().all(|&b| b == 2))
                .count();
            let old = buf
                .chunks(512)
                .filter(|s| s.iter().all(|&b| b == 1))
                .count();
            assert_eq!(new + old, 8, "every sector is old or new");
            match new {
                8 => kept += 1,
                0 => lost += 1,
                _ => torn += 1,
            }
        }
        assert!(kept > 20 && lost > 20 && torn > 20, "{kept} {lost} {torn}");
    }

    #[test]
    fn overlapping_unflushed_writes_end_as_one_of_their_values() {
        for seed in 0..100 {
            let mut d = dev(FaultPlan {
                seed,
                tear: true,
                ..FaultPlan::default()
            });
            d.write(0, &[1u8; 1024]).unwrap();
            d.flush().unwrap();
            d.write(0, &[2u8; 1024]).unwrap();
            d.write(512, &[3u8; 1024]).unwrap();
            d.trim(0, 512).unwrap();
            let mut inner = d.recover().unwrap();
            let mut buf = [9u8; 1536];
            inner.read(0, &mut buf).unwrap();
            let s: Vec<u8> = buf.chunks(512).map(|c| c[0]).collect();
            assert!(buf.chunks(512).all(|c| c.iter().all(|&b| b == c[0])));
            assert!([1, 2, 0].contains(&s[0]), "{s:?}");
            assert!([1, 2, 3].contains(&s[1]), "{s:?}");
            assert!([0, 3].contains(&s[2]), "{s:?}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_outcome() {
        let run = |seed| {
            let mut d = dev(FaultPlan::crash_after_writes(20, seed));
            for i in 0..21u64 {
                let _ = d.write(i % 7 * 1024, &[i as u8 + 1; 2048]);
            }
            let mut inner = d.recover().unwrap();
            let mut buf = vec![0u8; 8192];
            inner.read(0, &mut buf).unwrap();
            buf
        };
        assert_eq!(run(5), run(5));
        assert!((0..10).any(|s| run(s) != run(5)));
    }

    #[test]
    fn injected_errors_fail_the_call_without_effect_or_crash() {
        let mut d = dev(FaultPlan {
            fail_ops: vec![1],
            fail_writes: vec![2],
            ..FaultPlan::default()
        });
        let mut buf = [0u8; 512];
        d.write(0, &[1u8; 512]).unwrap(); // op 0, write 0
        assert!(matches!(
            d.read(0, &mut buf),
            Err(DeviceError::Injected { offset: 0 })
        ));
        d.write(512, &[1u8; 512]).unwrap(); // write 1
        assert!(matches!(
            d.write(1024, &[1u8; 512]),
            Err(DeviceError::Injected { offset: 1024 })
        ));
        assert!(!d.crashed());
        d.read(1024, &mut buf).unwrap();
        assert_eq!(buf, [0u8; 512]);
        let e = DeviceError::Injected { offset: 1024 }.to_string();
        assert!(e.contains("injected I/O error"));
    }

    #[test]
    fn into_inner_keeps_every_write() {
        let mut d = dev(FaultPlan::default());
        d.write(0, &[5u8; 512]).unwrap();
        let mut inner = d.into_inner();
        let mut buf = [0u8; 512];
        inner.read(0, &mut buf).unwrap();
        assert_eq!(buf, [5u8; 512]);
    }
}
