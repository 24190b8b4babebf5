//! [`PairDevice`]: a fast and a slow device as one address space, for a
//! store that places its data by tier (hot pages on an SSD, cold ones on a
//! disk).

use std::ops::Range;
use std::sync::Arc;

use crate::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, Result, Syncer};

/// Which of a pair's devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Tier {
    /// The fast device (an SSD).
    Fast,
    /// The slow device (a disk).
    Slow,
}

impl Tier {
    fn other(self) -> Tier {
        match self {
            Tier::Fast => Tier::Slow,
            Tier::Slow => Tier::Fast,
        }
    }
}

/// Where each device of a pair lies in its address space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiers {
    /// The fast device's bytes.
    pub fast: Range<u64>,
    /// The slow device's bytes.
    pub slow: Range<u64>,
}

/// Two devices as one: the first (`first` of [`PairDevice::new`]) at offset
/// 0, the other right after it. A request inside one device goes to it; one
/// spanning the boundary is split into a request to each, both issued at
/// the same time (it completes when the later one does, and costs both).
///
/// A flush flushes only the devices written or trimmed since their last
/// flush, so a commit that wrote only the SSD does not wake a disk in
/// standby; with neither written it completes at once, touching neither.
/// [`PairDevice::part_mut`] counts as a write to that device (the caller
/// may have written through it).
///
/// Stats are the two devices' summed; erase counts are concatenated, the
/// fast device's units first. Energy, clock and waiting
/// ([`BlockDevice::advance_to`]) cover both devices.
pub struct PairDevice {
    fast: Box<dyn BlockDevice>,
    slow: Box<dyn BlockDevice>,
    first: Tier,
    /// Bytes of the first device: where the second begins.
    split: u64,
    sector: u32,
    /// Written or trimmed since its last flush: `[fast, slow]`.
    dirty: [bool; 2],
}

fn idx(t: Tier) -> usize {
    match t {
        Tier::Fast => 0,
        Tier::Slow => 1,
    }
}

impl PairDevice {
    /// `fast` and `slow` as one address space, `first`'s device at offset 0
    /// (so a store's superblock, checkpoints and log, which sit at the
    /// start, land on it). Both need the same sector size; neither may be
    /// raw NAND (program-once sectors, host-visible erase units).
    pub fn new(
        fast: Box<dyn BlockDevice>,
        slow: Box<dyn BlockDevice>,
        first: Tier,
    ) -> Result<PairDevice> {
        let (f, s) = (fast.geometry(), slow.geometry());
        for (name, g) in [("fast", f), ("slow", s)] {
            if g.program_once || g.erase_unit.is_some() {
                return Err(DeviceError::BadInput(format!(
                    "device pair: the {name} device is raw NAND (host-visible erase units); \
                     pair devices that hide erasing (an FTL SSD, a disk)"
                )));
            }
        }
        if f.sector_size != s.sector_size {
            return Err(DeviceError::BadInput(format!(
                "device pair: sector sizes differ (fast {} B, slow {} B)",
                f.sector_size, s.sector_size
            )));
        }
        let split = match first {
            Tier::Fast => f.capacity,
            Tier::Slow => s.capacity,
        };
        debug_assert_eq!(split % u64::from(f.sector_size), 0, "whole sectors");
        if f.capacity.checked_add(s.capacity).is_none() {
            return Err(DeviceError::BadInput(
                "device pair: the capacities overflow 64 bits".into(),
            ));
        }
        Ok(PairDevice {
            fast,
            slow,
            first,
            split,
            sector: f.sector_size,
            dirty: [false; 2],
        })
    }

    /// One of the devices.
    pub fn part(&self, t: Tier) -> &dyn BlockDevice {
        match t {
            Tier::Fast => &*self.fast,
            Tier::Slow => &*self.slow,
        }
    }

    /// One of the devices, to set it up (a standby timer). Its next flush
    /// through the pair flushes it, whatever was done through this.
    pub fn part_mut(&mut self, t: Tier) -> &mut dyn BlockDevice {
        self.dirty[idx(t)] = true;
        match t {
            Tier::Fast => &mut *self.fast,
            Tier::Slow => &mut *self.slow,
        }
    }

    /// The devices, `(fast, slow)`.
    pub fn into_parts(self) -> (Box<dyn BlockDevice>, Box<dyn BlockDevice>) {
        (self.fast, self.slow)
    }

    fn dev(&mut self, t: Tier) -> &mut dyn BlockDevice {
        match t {
            Tier::Fast => &mut *self.fast,
            Tier::Slow => &mut *self.slow,
        }
    }

    /// The pieces of `[offset, offset+len)`: (device, its offset, bytes
    /// into the request, length), in address order.
    fn pieces(&self, offset: u64, len: u64) -> Vec<(Tier, u64, usize, u64)> {
        let end = offset + len;
        let mut out = Vec::with_capacity(2);
        if offset < self.split {
            out.push((self.first, offset, 0, end.min(self.split) - offset));
        }
        if end > self.split {
            let from = offset.max(self.split);
            let into = (from - offset) as usize;
            out.push((self.first.other(), from - self.split, into, end - from));
        }
        debug_assert_eq!(out.iter().map(|p| p.3).sum::<u64>(), len, "pieces cover");
        out
    }
}

/// The completion of requests issued together.
fn join(at: Nanos, cs: &[Completion]) -> Completion {
    let c = Completion {
        start: cs.iter().map(|c| c.start).min().unwrap_or(at),
        end: cs.iter().map(|c| c.end).max().unwrap_or(at),
        energy_nj: cs.iter().map(|c| c.energy_nj).sum(),
    };
    debug_assert!(c.start <= c.end, "a completion ends after it starts");
    c
}

impl BlockDevice for PairDevice {
    fn geometry(&self) -> Geometry {
        Geometry {
            sector_size: self.sector,
            erase_unit: None,
            capacity: self.fast.geometry().capacity + self.slow.geometry().capacity,
            program_once: false,
        }
    }

    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let mut cs = Vec::with_capacity(2);
        for (t, o, into, len) in self.pieces(offset, buf.len() as u64) {
            let b = &mut buf[into..into + len as usize];
            cs.push(self.dev(t).read_at(at, o, b)?);
        }
        Ok(join(at, &cs))
    }

    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let mut cs = Vec::with_capacity(2);
        for (t, o, into, len) in self.pieces(offset, buf.len() as u64) {
            self.dirty[idx(t)] = true;
            cs.push(
                self.dev(t)
                    .write_at(at, o, &buf[into..into + len as usize])?,
            );
        }
        Ok(join(at, &cs))
    }

    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        let mut cs = Vec::with_capacity(2);
        for t in [Tier::Fast, Tier::Slow] {
            if self.dirty[idx(t)] {
                cs.push(self.dev(t).flush_at(at)?);
                self.dirty[idx(t)] = false;
            }
        }
        Ok(join(at, &cs))
    }

    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.geometry().check(offset, len)?;
        let mut cs = Vec::with_capacity(2);
        for (t, o, _, l) in self.pieces(offset, len) {
            self.dirty[idx(t)] = true;
            cs.push(self.dev(t).trim_at(at, o, l)?);
        }
        Ok(join(at, &cs))
    }

    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        self.geometry().check(offset, len).is_ok()
            && self
                .pieces(offset, len)
                .into_iter()
                .any(|(t, o, _, l)| self.part(t).is_programmed(o, l))
    }

    fn clock(&self) -> Nanos {
        self.fast.clock().max(self.slow.clock())
    }

    fn stats(&self) -> DeviceStats {
        let mut s = self.fast.stats();
        s.add(&self.slow.stats());
        s
    }

    fn busy_until(&self) -> Nanos {
        self.fast.busy_until().max(self.slow.busy_until())
    }

    fn syncer(&self) -> Option<Syncer> {
        let (a, b) = (self.fast.syncer()?, self.slow.syncer()?);
        Some(Arc::new(move || {
            a()?;
            b()
        }))
    }

    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.fast.energy_nj_until(t) + self.slow.energy_nj_until(t)
    }

    fn advance_to(&mut self, t: Nanos) {
        self.fast.advance_to(t);
        self.slow.advance_to(t);
    }

    fn tiers(&self) -> Option<Tiers> {
        let second = self.split..self.geometry().capacity;
        debug_assert!(self.split <= second.end, "the first device comes first");
        Some(match self.first {
            Tier::Fast => Tiers {
                fast: 0..self.split,
                slow: second,
            },
            Tier::Slow => Tiers {
                fast: second,
                slow: 0..self.split,
            },
        })
    }
}
