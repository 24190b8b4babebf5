//! Consistency checks of the maps and the log: the kind of state a stale
//! map entry or mask would leave behind shows up here before it shows up as
//! wrong data. Tests call [`HybridDevice::check_invariants`] (it reads
//! swapped-out tablets, which costs SSD time); debug builds run the checks
//! after flush rounds ([`HybridDevice::audit_round`]).

use flashkv_device::BlockDevice;

use crate::device::HybridDevice;
use crate::error::Result;
use crate::maps::{decode, encode, encode_flushed, Entry};

/// How often debug builds check the maps after a flush round.
pub(crate) struct Audit {
    rounds: u64,
    every: u64,
}

impl Audit {
    /// Checking walks the log and every tablet: on a large cache, only
    /// every so many rounds, so it costs about an eighth of a round's work.
    pub fn new(cache_sectors: u64, map_slots: u64, round_sectors: u64) -> Self {
        let cost = cache_sectors + map_slots * crate::tablets::FANOUT as u64;
        Audit {
            rounds: 0,
            every: (cost / (8 * round_sectors.max(1))).max(1),
        }
    }
}

impl HybridDevice {
    /// After a flush round, in debug builds (the test profile has them on):
    /// the log's positions and the counters every round; the maps against
    /// the log every few rounds, where every tablet fits in memory, so the
    /// check reads nothing from the SSD and changes nothing a test counts.
    pub(crate) fn audit_round(&mut self) -> Result<()> {
        if !cfg!(debug_assertions) {
            return Ok(());
        }
        self.check_log();
        self.audit.rounds += 1;
        if self.maps.tabs.never_swaps() && self.audit.rounds % self.audit.every == 0 {
            self.check_invariants()?;
        }
        Ok(())
    }

    /// The log's positions are in order, the sequence numbers fit them, and
    /// the counters fit the cache and the checksums kept. Reads nothing.
    pub(crate) fn check_log(&self) {
        let l = self.log;
        let c = self.layout.cache_sectors;
        assert!(
            l.free_tail <= l.dirty_tail
                && l.dirty_tail <= l.flushed_tail
                && l.flushed_tail <= l.head
                && l.head <= l.free_tail + c,
            "log positions out of order: {l:?}"
        );
        assert!(
            l.last_seq < l.next_seq && l.seq_floor <= l.next_seq,
            "{l:?}"
        );
        assert!(
            l.floor_saved || l.next_seq == l.seq_floor,
            "appended before the floor was saved: {l:?}"
        );
        let k = self.counts;
        assert!(
            k.dirty <= k.cached && k.cached <= l.head - l.free_tail,
            "counters {k:?} do not fit the log {l:?}"
        );
        assert_eq!(
            self.maps.crcs.count(),
            k.cached,
            "one checksum per cached unit"
        );
    }

    /// Panics if the log's positions are out of order, if a reverse entry
    /// and the forward entry of its home disagree, if a forward entry has no
    /// reverse entry, if a copy's state does not fit where its record lies
    /// (dirty only past the durable tail, unflushed only past the flushed
    /// tail), if the counters differ from the entries, or if the cached
    /// units and the checksums kept for them are not one to one.
    #[doc(hidden)]
    pub fn check_invariants(&mut self) -> Result<()> {
        self.check_log();
        let l = self.log;
        let c = self.layout.cache_sectors;
        let full = self.full_mask();
        let (mut cached, mut dirty) = (0, 0);
        let now = self.clock();
        let mut pos = l.free_tail;
        while pos < l.head {
            let (m, mut io) = mio!(self, now);
            let Some(len) = m.record_at(&mut io, pos % c)? else {
                pos = self.layout.next_boundary(pos);
                continue;
            };
            for slot in pos % c + 1..pos % c + len {
                let Some(r) = decode(m.rev_get(&mut io, slot)?) else {
                    continue;
                };
                let f = decode(m.fwd_get(&mut io, r.value)?);
                // The same slot, and the same state and mask.
                assert_eq!(
                    f.map(|f| (f.value, raw(f))),
                    Some((slot, raw(r))),
                    "unit {} cached at slot {slot} (log position {pos})",
                    r.value
                );
                assert!(r.missing != full, "slot {slot} holds no sector");
                assert!(
                    m.crcs.get(slot).is_some(),
                    "slot {slot} caches unit {} without a checksum",
                    r.value
                );
                assert!(
                    !r.dirty || pos >= l.dirty_tail,
                    "dirty before the durable tail: slot {slot}"
                );
                assert!(
                    !r.unflushed() || pos >= l.flushed_tail,
                    "unflushed before the flushed tail: slot {slot}"
                );
                cached += 1;
                dirty += u64::from(r.unflushed());
            }
            pos += len;
        }
        assert_eq!(
            (cached, dirty),
            (self.counts.cached, self.counts.dirty),
            "counters"
        );
        // One checksum per cached unit: none left behind by an unmapped slot.
        assert_eq!(self.maps.crcs.count(), cached, "checksums of cached units");
        let (m, mut io) = mio!(self, now);
        assert_eq!(
            m.fwd_count(&mut io)?,
            cached,
            "forward entries without a reverse one"
        );
        Ok(())
    }
}

/// An entry's state and mask, encoded.
fn raw(e: Entry) -> u64 {
    if e.flushed {
        encode_flushed(0, e.missing)
    } else {
        encode(0, e.dirty, e.missing)
    }
}
