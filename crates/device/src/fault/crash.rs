//! Power loss: the undo log of unflushed writes and how a crash settles
//! each sector they touched.

use std::collections::BTreeMap;

use super::FaultDevice;
use crate::{BlockDevice, Completion, Nanos, Result};

/// An unflushed write: where, what the range held before it, and whether
/// it was the one in flight at the crash.
#[derive(Debug)]
pub(super) struct Pending {
    offset: u64,
    pre: Vec<u8>,
    in_flight: bool,
}

impl Pending {
    /// An unflushed write of whole `sector`-byte sectors.
    pub fn new(offset: u64, pre: Vec<u8>, sector: u64) -> Self {
        assert!(
            offset % sector == 0 && pre.len() as u64 % sector == 0,
            "an unflushed write covers whole sectors"
        );
        Pending {
            offset,
            pre,
            in_flight: false,
        }
    }
}

/// What became of one sector of a write at a crash.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fate {
    Lost,
    Landed,
    /// Only the first bytes landed.
    Prefix(usize),
}

impl<D: BlockDevice> FaultDevice<D> {
    /// The fate of each sector of an `n`-sector write: all, none or
    /// (tearing) a random subset; the write in flight may also tear inside
    /// a sector.
    fn fates(&mut self, n: u64, in_flight: bool) -> Vec<Fate> {
        let fates = self.draw_fates(n, in_flight);
        debug_assert_eq!(fates.len() as u64, n, "a fate per sector");
        debug_assert!(
            fates.iter().all(|f| match f {
                Fate::Prefix(c) => *c > 0 && (*c as u64) < self.sector,
                _ => true,
            }),
            "a torn sector keeps part of its bytes"
        );
        fates
    }

    fn draw_fates(&mut self, n: u64, in_flight: bool) -> Vec<Fate> {
        if in_flight && self.plan.tear_bytes {
            let s = self.sector;
            return (0..n)
                .map(|_| match self.rng.below_n(3) {
                    0 => Fate::Lost,
                    1 => Fate::Landed,
                    _ => Fate::Prefix(1 + self.rng.below_n(s - 1) as usize),
                })
                .collect();
        }
        let choices = if self.plan.tear && n > 1 { 3 } else { 2 };
        match self.rng.below_n(choices) {
            0 => vec![Fate::Landed; n as usize],
            1 => vec![Fate::Lost; n as usize],
            _ => (0..n)
                .map(|_| match self.rng.next() & 1 {
                    1 => Fate::Landed,
                    _ => Fate::Lost,
                })
                .collect(),
        }
    }

    /// Settles every sector an unflushed write touched to what the fates
    /// of its writes leave there: drawn from the seed, or whole (`keep(i)`
    /// for the `i`-th unflushed write, oldest first) where `keep` is given.
    pub(super) fn roll_back(&mut self, keep: Option<&dyn Fn(usize) -> bool>) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        // sector -> (write index, fate) in write order
        let mut history: BTreeMap<u64, Vec<(usize, Fate)>> = BTreeMap::new();
        for (i, p) in pending.iter().enumerate() {
            let n = p.pre.len() as u64 / self.sector;
            let fates = match keep {
                Some(keep) if keep(i) => vec![Fate::Landed; n as usize],
                Some(_) => vec![Fate::Lost; n as usize],
                None => self.fates(n, p.in_flight),
            };
            for (k, fate) in fates.into_iter().enumerate() {
                history
                    .entry(p.offset / self.sector + k as u64)
                    .or_default()
                    .push((i, fate));
            }
        }
        for (sector, writes) in history {
            self.settle(sector, &pending, &writes)?;
        }
        debug_assert!(self.pending.is_empty(), "nothing is written while settling");
        Ok(())
    }

    /// Replays a sector's writes from its oldest pre-image, each write's
    /// bytes being the next one's pre-image (the last one's: what the
    /// medium holds now).
    fn settle(&mut self, sector: u64, pending: &[Pending], writes: &[(usize, Fate)]) -> Result<()> {
        if writes.last().is_some_and(|w| w.1 == Fate::Landed) {
            return Ok(());
        }
        let s = self.sector as usize;
        let at = sector * self.sector;
        let pre = |j: usize| {
            let p = &pending[writes[j].0];
            debug_assert!(p.offset <= at && at + s as u64 <= p.offset + p.pre.len() as u64);
            let from = (at - p.offset) as usize;
            &p.pre[from..from + s]
        };
        let mut now = vec![0u8; s];
        self.read_medium(self.inner.clock(), at, &mut now)?;
        let mut v = pre(0).to_vec();
        for (j, &(_, fate)) in writes.iter().enumerate() {
            let data = if j + 1 < writes.len() {
                pre(j + 1)
            } else {
                &now
            };
            match fate {
                Fate::Lost => {}
                Fate::Landed => v.copy_from_slice(data),
                Fate::Prefix(c) => v[..c].copy_from_slice(&data[..c]),
            }
        }
        if v == now {
            return Ok(());
        }
        if self.volatile && !self.inner.geometry().program_once {
            let t = self.inner.clock();
            self.inner.write_at(t, at, &v)?;
        } else {
            // A program cannot be undone: the sector stays programmed.
            self.masked.insert(sector, v.into_boxed_slice());
        }
        Ok(())
    }

    /// Power lost during this call: `Crashed`, after rolling back. A write
    /// in flight may land, vanish or tear like an unflushed one.
    pub(super) fn lose_power(&mut self, in_flight: Option<(u64, &[u8])>) -> crate::DeviceError {
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
                    self.write_logged(t, offset, data, true).map(|_| ())
                } else {
                    self.write_landed(offset, data)
                };
            }
        }
        if let Err(e) = self.roll_back(None) {
            self.rollback_error = Some(e);
        }
        crate::DeviceError::Crashed
    }

    /// Program-once devices without a cache cannot roll back: program only
    /// what lands (the rest of a torn sector stays erased).
    fn write_landed(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let fates = self.fates(data.len() as u64 / self.sector, true);
        let s = self.sector as usize;
        for (k, chunk) in data.chunks(s).enumerate() {
            let mut bytes = chunk.to_vec();
            match fates[k] {
                Fate::Lost => continue,
                Fate::Landed => {}
                Fate::Prefix(c) => bytes[c..].fill(0),
            }
            let t = self.inner.clock();
            self.inner.write_at(t, offset + (k * s) as u64, &bytes)?;
        }
        Ok(())
    }

    /// Writes through, keeping the pre-image while the write is unflushed.
    fn write_logged(
        &mut self,
        at: Nanos,
        offset: u64,
        data: &[u8],
        in_flight: bool,
    ) -> Result<Completion> {
        let mut pre = vec![0u8; data.len()];
        self.read_medium(at, offset, &mut pre)?;
        let c = self.inner.write_at(at, offset, data)?;
        let mut p = Pending::new(offset, pre, self.sector);
        p.in_flight = in_flight;
        self.pending.push(p);
        Ok(c)
    }

    /// A completed write: logged while it can still be lost; a rewrite
    /// cures a latent sector error.
    pub(super) fn write_through(
        &mut self,
        at: Nanos,
        offset: u64,
        data: &[u8],
    ) -> Result<Completion> {
        let c = if self.volatile {
            self.write_logged(at, offset, data, false)?
        } else {
            self.inner.write_at(at, offset, data)?
        };
        if !self.latent.is_empty() {
            let first = offset / self.sector;
            for s in first..first + data.len() as u64 / self.sector {
                self.latent.remove(&s);
            }
        }
        Ok(c)
    }

    /// Reads what the medium holds, lost programs reading as they settled.
    pub(super) fn read_medium(
        &mut self,
        at: Nanos,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Completion> {
        let c = self.inner.read_at(at, offset, buf)?;
        let first = offset / self.sector;
        let end = first + buf.len() as u64 / self.sector;
        for (&sector, image) in self.masked.range(first..end) {
            debug_assert_eq!(image.len() as u64, self.sector, "a mask covers one sector");
            let from = ((sector - first) * self.sector) as usize;
            buf[from..from + image.len()].copy_from_slice(image);
        }
        Ok(c)
    }

    /// After erasing `unit`: its masks and latent errors are gone, and an
    /// erase is a barrier, making earlier programs durable.
    pub(super) fn erased(&mut self, unit: u64) {
        let Some(eu) = self.inner.geometry().erase_unit else {
            return;
        };
        self.pending.clear();
        debug_assert_eq!(eu % self.sector, 0, "an erase unit holds whole sectors");
        let (a, b) = (unit * eu / self.sector, (unit + 1) * eu / self.sector);
        self.masked.retain(|&s, _| s < a || s >= b);
        self.latent.retain(|&s| s < a || s >= b);
    }

    /// A completion at `at` for a write that went nowhere.
    pub(super) fn done(&self, at: Nanos) -> Completion {
        Completion {
            start: at,
            end: at,
            energy_nj: 0,
        }
    }
}
