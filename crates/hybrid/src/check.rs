//! Consistency checks of the maps and the log, for tests (they read
//! swapped-out tablets, which costs SSD time): the kind of state a stale
//! map entry or mask would leave behind shows up here before it shows up as
//! wrong data.

use flashkv_device::BlockDevice;

use crate::device::HybridDevice;
use crate::error::Result;
use crate::maps::{decode, encode, encode_flushed, Entry};

impl HybridDevice {
    /// Panics if the log's positions are out of order, if a reverse entry
    /// and the forward entry of its home disagree, if a forward entry has no
    /// reverse entry, if a copy's state does not fit where its record lies
    /// (dirty only past the durable tail, unflushed only past the flushed
    /// tail), or if the counters differ from the entries.
    #[doc(hidden)]
    pub fn check_invariants(&mut self) -> Result<()> {
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
            (self.cached_sectors, self.dirty_sectors),
            "counters"
        );
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
