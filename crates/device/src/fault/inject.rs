//! Faults that strike without a crash: corrupted reads, latent sector
//! errors, misdirected writes and latency spikes.

use super::FaultDevice;
use crate::{BlockDevice, Completion, DeviceError, Result};

impl<D: BlockDevice> FaultDevice<D> {
    /// Fails a read touching a latent (unreadable) sector, which a read
    /// may also discover for the first time.
    pub(super) fn check_latent(&mut self, offset: u64, len: u64) -> Result<()> {
        if self.latent.is_empty() && self.plan.latent.chance == 0.0 {
            return Ok(());
        }
        let first = offset / self.sector;
        for s in first..first + len / self.sector {
            if self.latent.contains(&s) || self.plan.latent.hits(s, &mut self.rng) {
                self.latent.insert(s);
                self.injected.latent_errors += 1;
                return Err(DeviceError::Unreadable {
                    offset: s * self.sector,
                });
            }
        }
        Ok(())
    }

    /// Flips one bit in each struck sector of a completed read.
    pub(super) fn flip_reads(&mut self, offset: u64, buf: &mut [u8]) {
        if self.plan.flip_reads.is_off() {
            return;
        }
        let s = self.sector as usize;
        let first = offset / self.sector;
        for (k, chunk) in buf.chunks_mut(s).enumerate() {
            if self.plan.flip_reads.hits(first + k as u64, &mut self.rng) {
                let byte = self.rng.below_n(chunk.len() as u64) as usize;
                let was = chunk[byte];
                chunk[byte] ^= 1 << self.rng.below_n(8);
                debug_assert_eq!((was ^ chunk[byte]).count_ones(), 1, "one bit flipped");
                self.injected.flipped_reads += 1;
            }
        }
    }

    /// Where this write lands instead of `offset`, if it goes astray: a
    /// few sectors before or after, clear of its target, inside the device.
    pub(super) fn misdirected(&mut self, offset: u64, len: u64) -> Option<u64> {
        let write = self.writes - 1;
        if !self.plan.misdirect.hits(write, &mut self.rng) {
            return None;
        }
        let n = len / self.sector;
        let d = (n + 1 + self.rng.below_n(n + 8)) * self.sector;
        let capacity = self.inner.geometry().capacity;
        let after = offset + d + len <= capacity;
        let target = match (self.rng.below_n(2), offset.checked_sub(d)) {
            (0, Some(before)) => before,
            _ if after => offset + d,
            (_, before) => before?,
        };
        debug_assert_eq!(target % self.sector, 0, "a misdirected write stays aligned");
        debug_assert!(
            target + len <= capacity,
            "a misdirected write stays on the device"
        );
        debug_assert!(
            target + len <= offset || offset + len <= target,
            "a misdirected write misses its target"
        );
        self.injected.misdirected_writes += 1;
        Some(target)
    }

    /// Adds a latency spike to the operation just counted, if struck.
    pub(super) fn spike(&mut self, mut c: Completion) -> Completion {
        if self.plan.spikes.hits(self.ops - 1, &mut self.rng) {
            c.end += self.plan.spike_ns;
            self.injected.spikes += 1;
        }
        self.late = self.late.max(c.end);
        c
    }
}
