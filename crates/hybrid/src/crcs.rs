//! Checksums of the cached units, and the reads that check them. A bit
//! flipped on the SSD, or on the way from it, must come back as an error,
//! never as data, nor be written back to the HDD. Log records carry a
//! checksum of their whole data, but a unit is read back on its own (a host
//! read hit, a merge, the flush worker), so each cached unit's CRC-32C is
//! kept in memory: taken when the unit is logged (the data is in hand) or
//! replayed (recovery has just checked the record's data checksum), and
//! checked on every read of the unit from the SSD. Nothing changes on disk.

use flashkv_device::{Completion, Nanos};

use crate::device::{HybridDevice, Span};
use crate::error::{HybridError, Result};

/// One CRC-32C per cache slot, and a bit saying whether the slot holds a
/// cached unit: 4.125 bytes per unit of cache (2.1 MiB for a 2 GiB cache),
/// allocated zeroed, so the pages of a cache never filled cost nothing.
pub(crate) struct UnitCrcs {
    crc: Vec<u32>,
    held: Vec<u64>,
    count: u64,
}

impl UnitCrcs {
    /// A store for a cache of `slots` units, none held.
    pub fn new(slots: u64) -> Self {
        UnitCrcs {
            crc: vec![0; slots as usize],
            held: vec![0; slots.div_ceil(64) as usize],
            count: 0,
        }
    }

    fn bit(slot: u64) -> (usize, u64) {
        ((slot / 64) as usize, 1 << (slot % 64))
    }

    /// `slot` now caches a unit whose data has checksum `crc`.
    pub fn set(&mut self, slot: u64, crc: u32) {
        let (w, b) = Self::bit(slot);
        assert!(self.held[w] & b == 0, "slot {slot} cached twice");
        self.held[w] |= b;
        self.crc[slot as usize] = crc;
        self.count += 1;
    }

    /// `slot` no longer caches a unit (a no-op if it did not).
    pub fn clear(&mut self, slot: u64) {
        let (w, b) = Self::bit(slot);
        if self.held[w] & b != 0 {
            assert!(self.count > 0, "a checksum nobody counted");
            self.held[w] &= !b;
            self.count -= 1;
        }
    }

    /// The checksum of the unit cached at `slot`, if one is.
    pub fn get(&self, slot: u64) -> Option<u32> {
        let (w, b) = Self::bit(slot);
        (self.held[w] & b != 0).then(|| self.crc[slot as usize])
    }

    /// Slots holding a checksum.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Memory the store takes.
    pub fn bytes(&self) -> u64 {
        (self.crc.len() * 4 + self.held.len() * 8) as u64
    }
}

/// The checksum a unit's data is cached with.
pub(crate) fn unit_crc(unit: &[u8]) -> u32 {
    crc32c::crc32c(unit)
}

impl HybridDevice {
    /// Whether `unit`, read from `slot`, is what was cached there.
    pub(crate) fn unit_intact(&self, slot: u64, unit: &[u8]) -> bool {
        debug_assert_eq!(unit.len() as u64, self.layout.sector, "one unit");
        let want = self.maps.crcs.get(slot);
        assert!(want.is_some(), "slot {slot} is read but caches nothing");
        want == Some(unit_crc(unit))
    }

    /// Reads the units cached at the consecutive slots from `slot` into
    /// `buf`, issued at `at`, each checked against its checksum; one that
    /// fails is read again (see [`Self::reread_unit`]).
    pub(crate) fn read_units(
        &mut self,
        at: Nanos,
        slot: u64,
        buf: &mut [u8],
    ) -> Result<Completion> {
        let s = self.layout.sector as usize;
        debug_assert!(!buf.is_empty() && buf.len() % s == 0, "whole units");
        let first = self.ssd.read_at(at, self.layout.cache_offset(slot), buf)?;
        let mut span = Span::new(at);
        span.add(first);
        for (k, unit) in buf.chunks_mut(s).enumerate() {
            let x = slot + k as u64;
            if !self.unit_intact(x, unit) {
                span.add(self.reread_unit(first.end, x, unit)?);
            }
        }
        Ok(span.done(at))
    }

    /// Reads the unit cached at `slot` again, after a read of it failed its
    /// checksum: a flip on the way from the medium does not survive a
    /// second read (the engine reads its WAL records again for the same
    /// reason). If this read fails too, the copy is damaged: a typed
    /// corruption error, never the data.
    pub(crate) fn reread_unit(
        &mut self,
        at: Nanos,
        slot: u64,
        unit: &mut [u8],
    ) -> Result<Completion> {
        let offset = self.layout.cache_offset(slot);
        let c = self.ssd.read_at(at, offset, unit)?;
        self.st.checksum_rereads += 1;
        if self.unit_intact(slot, unit) {
            Ok(c)
        } else {
            Err(HybridError::Corrupt {
                what: "cached data",
                location: offset,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_holds_one_checksum_until_cleared() {
        let mut c = UnitCrcs::new(130);
        assert_eq!((c.get(129), c.count()), (None, 0));
        c.set(129, 0);
        c.set(3, 0xdead_beef);
        assert_eq!(
            (c.get(129), c.get(3), c.count()),
            (Some(0), Some(0xdead_beef), 2)
        );
        c.clear(129);
        c.clear(129);
        assert_eq!((c.get(129), c.count()), (None, 1));
        c.set(129, 7);
        assert_eq!(c.get(129), Some(7));
        assert_eq!(c.bytes(), 130 * 4 + 3 * 8);
    }

    #[test]
    #[should_panic(expected = "slot 5 cached twice")]
    fn a_slot_cached_twice_is_a_bug() {
        let mut c = UnitCrcs::new(8);
        c.set(5, 1);
        c.set(5, 2);
    }
}
