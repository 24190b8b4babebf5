//! The forward map (virtual sector → cache slot) and the reverse map (cache
//! slot → home sector), sharing one tablet pool.
//!
//! Entry encoding: `value + 1` in the low bits (zero is "unmapped"), [`DIRTY`]
//! while recovery would replay the copy (its record is past the durable
//! tail), [`FLUSHED`] once the flush worker has also written it to the HDD.
//! Bits 53..61 hold the copy's missing mask: bit `i` set when host sector
//! `i` of the 4 KiB unit is not in the copy (a write covered the unit only in
//! part and nothing older was cached); those sectors are read from the HDD.
//! A reverse entry with
//! [`HEADER`] marks the first slot of a log record and holds its length, so the
//! flush worker and the reclaimer can walk the log through the map alone.

use crate::crcs::UnitCrcs;
use crate::error::Result;
use crate::tablets::{Io, RadixMap, Tablets};

pub(crate) const DIRTY: u64 = 1 << 63;
pub(crate) const HEADER: u64 = 1 << 62;
const FLUSHED: u64 = 1 << 61;
const MISSING_SHIFT: u32 = 53;
const VALUE: u64 = (1 << MISSING_SHIFT) - 1;

/// A decoded map entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub value: u64,
    pub dirty: bool,
    pub flushed: bool,
    /// Host sectors of the unit this copy does not hold (0: the whole unit).
    pub missing: u8,
}

impl Entry {
    /// Dirty and not yet written to the HDD: what `dirty_bytes` counts.
    pub fn unflushed(&self) -> bool {
        self.dirty && !self.flushed
    }
}

/// `None` if unmapped.
pub(crate) fn decode(e: u64) -> Option<Entry> {
    (e != 0).then(|| Entry {
        value: (e & VALUE) - 1,
        dirty: e & DIRTY != 0,
        flushed: e & FLUSHED != 0,
        missing: (e >> MISSING_SHIFT) as u8,
    })
}

pub(crate) fn encode(value: u64, dirty: bool, missing: u8) -> u64 {
    debug_assert!(value < VALUE);
    debug_assert!(missing != u8::MAX, "a copy holds at least one sector");
    (value + 1) | if dirty { DIRTY } else { 0 } | u64::from(missing) << MISSING_SHIFT
}

/// Dirty (still replayed by recovery) but already on the HDD.
pub(crate) fn encode_flushed(value: u64, missing: u8) -> u64 {
    encode(value, true, missing) | FLUSHED
}

/// Cached units and how many of them are unflushed (what `cached_bytes` and
/// `dirty_bytes` report), kept with every map change and checked at each:
/// a miscount shows here long before the maps disagree with the log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    pub cached: u64,
    pub dirty: u64,
    /// Slots in the cache: no more units can be cached.
    limit: u64,
}

impl Counts {
    pub fn new(limit: u64) -> Self {
        Counts {
            cached: 0,
            dirty: 0,
            limit,
        }
    }

    /// A unit was mapped to a slot, dirty or clean.
    pub fn add(&mut self, dirty: bool) {
        assert!(self.cached < self.limit, "more units cached than slots");
        self.cached += 1;
        self.dirty += u64::from(dirty);
        debug_assert!(self.dirty <= self.cached);
    }

    /// The copy `e` was unmapped.
    pub fn remove(&mut self, e: Entry) {
        let unflushed = u64::from(e.unflushed());
        assert!(self.cached > 0, "a copy uncached from an empty cache");
        assert!(self.dirty >= unflushed, "an unflushed copy nobody counted");
        self.cached -= 1;
        self.dirty -= unflushed;
        debug_assert!(self.dirty <= self.cached);
    }

    /// `n` unflushed copies were written back to the HDD.
    pub fn written_back(&mut self, n: u64) {
        assert!(
            self.dirty >= n,
            "wrote back {n} of {} dirty copies",
            self.dirty
        );
        self.dirty -= n;
    }
}

pub(crate) struct Maps {
    pub tabs: Tablets,
    fwd: RadixMap,
    rev: RadixMap,
    /// The checksum of each cached unit's data, by slot: set when a unit
    /// is mapped to a slot, cleared with the slot's reverse entry.
    pub crcs: UnitCrcs,
}

impl Maps {
    pub fn new(tabs: Tablets, cache_sectors: u64) -> Self {
        Maps {
            tabs,
            fwd: RadixMap::default(),
            rev: RadixMap::default(),
            crcs: UnitCrcs::new(cache_sectors),
        }
    }

    /// Maps `home` to its new copy at `slot` (data with checksum `crc`);
    /// returns the copy it replaces, now unmapped, if there was one.
    pub fn map_copy(
        &mut self,
        io: &mut Io,
        (home, slot): (u64, u64),
        dirty: bool,
        missing: u8,
        crc: u32,
    ) -> Result<Option<Entry>> {
        let old = decode(self.fwd_get(io, home)?);
        if let Some(old) = old {
            debug_assert!(old.value != slot, "a copy replaces another slot's");
            self.rev_clear(io, old.value)?;
        }
        self.fwd_set(io, home, encode(slot, dirty, missing))?;
        self.rev_set(io, slot, encode(home, dirty, missing))?;
        self.crcs.set(slot, crc);
        Ok(old)
    }

    pub fn fwd_get(&mut self, io: &mut Io, home: u64) -> Result<u64> {
        self.fwd.get(&mut self.tabs, io, home)
    }
    pub fn fwd_set(&mut self, io: &mut Io, home: u64, e: u64) -> Result<()> {
        self.fwd.set(&mut self.tabs, io, home, e)
    }
    pub fn fwd_clear(&mut self, io: &mut Io, home: u64) -> Result<()> {
        self.fwd.clear(&mut self.tabs, io, home)
    }
    /// Mapped homes (walks the whole forward tree: for checks).
    pub fn fwd_count(&mut self, io: &mut Io) -> Result<u64> {
        self.fwd.count(&mut self.tabs, io)
    }
    pub fn rev_get(&mut self, io: &mut Io, slot: u64) -> Result<u64> {
        self.rev.get(&mut self.tabs, io, slot)
    }
    pub fn rev_set(&mut self, io: &mut Io, slot: u64, e: u64) -> Result<()> {
        self.rev.set(&mut self.tabs, io, slot, e)
    }
    /// Unmaps `slot` (and forgets its checksum).
    pub fn rev_clear(&mut self, io: &mut Io, slot: u64) -> Result<()> {
        self.crcs.clear(slot);
        self.rev.clear(&mut self.tabs, io, slot)
    }

    /// Record header entry: length in sectors, if `slot` starts a record.
    pub fn record_at(&mut self, io: &mut Io, slot: u64) -> Result<Option<u64>> {
        let e = self.rev_get(io, slot)?;
        let len = (e & HEADER != 0).then_some(e & VALUE);
        debug_assert!(len != Some(0), "a record holds its header");
        Ok(len)
    }

    /// Marks `slot` as the header of a record of `len` sectors.
    pub fn set_record(&mut self, io: &mut Io, slot: u64, len: u64) -> Result<()> {
        debug_assert!((1..VALUE).contains(&len), "record of {len} sectors");
        self.rev_set(io, slot, HEADER | len)
    }
}
