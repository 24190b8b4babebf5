//! The circular log in the cache region: finding room (reclaiming clean
//! records, or waiting for the flush worker) and appending records.

use flashkv_device::{Completion, Nanos};

use crate::crcs::unit_crc;
use crate::device::{HybridDevice, Span};
use crate::error::{HybridError, Result};
use crate::flush::Budget;
use crate::maps::decode;
use crate::record::{max_extents, Header, Kind};

/// The circular log in the cache region, in log positions (sectors counted
/// from the first append ever; the slot is `pos % cache_sectors`).
///
/// `free_tail ≤ dirty_tail ≤ flushed_tail ≤ head ≤ free_tail + cache_sectors`:
/// `[free_tail, dirty_tail)` is the flushed (clean) zone, `[dirty_tail, head)`
/// the cached (dirty) zone, the rest free. The flush worker has written
/// `[dirty_tail, flushed_tail)` back already; the superblock moves
/// `dirty_tail` up to it only now and then, because on an FTL SSD every
/// write outside the log breaks its sequential stream. Records never
/// straddle the end of the region: one that would is placed at the start of
/// the next lap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Log {
    pub free_tail: u64,
    pub dirty_tail: u64,
    pub flushed_tail: u64,
    /// Sequence number of the record just before `flushed_tail`.
    pub flushed_prev_seq: u64,
    pub head: u64,
    /// Sequence number of the newest record (the next one's `prev_seq`).
    pub last_seq: u64,
    pub next_seq: u64,
    pub format_id: u64,
    pub sb_seq: u64,
    /// `tail_prev_seq` of the durable superblock.
    pub tail_prev_seq: u64,
    /// The first sequence number of this session (since create or open).
    /// Records lost in a crash may survive past the head with any number
    /// this session gave out; recovery numbers the next session above them
    /// from the floor in the superblock, so it must be durable before the
    /// session appends anything.
    pub seq_floor: u64,
    /// Whether the durable superblock holds `seq_floor`.
    pub floor_saved: bool,
}

impl HybridDevice {
    /// Drops the oldest record of the flushed zone.
    fn reclaim_one(&mut self, t: &mut Nanos) -> Result<()> {
        let c = self.layout.cache_sectors;
        let pos = self.log.free_tail;
        assert!(
            pos < self.log.dirty_tail,
            "only the clean zone is reclaimed"
        );
        let (m, mut io) = mio!(self, *t);
        match m.record_at(&mut io, pos % c)? {
            Some(len) => {
                for slot in pos % c + 1..pos % c + len {
                    if let Some(home) = decode(m.rev_get(&mut io, slot)?).map(|e| e.value) {
                        let fwd = decode(m.fwd_get(&mut io, home)?).filter(|f| f.value == slot);
                        if let Some(f) = fwd {
                            debug_assert!(!f.dirty, "the clean zone holds clean copies");
                            m.fwd_clear(&mut io, home)?;
                            self.counts.remove(f);
                        }
                        m.rev_clear(&mut io, slot)?;
                    }
                }
                m.rev_clear(&mut io, pos % c)?;
                debug_assert!(
                    pos + len <= self.log.dirty_tail,
                    "a clean record ends in the clean zone"
                );
                self.log.free_tail = pos + len;
            }
            // The unused end of a lap.
            None => self.log.free_tail = self.layout.next_boundary(pos).min(self.log.dirty_tail),
        }
        *t = io.t;
        Ok(())
    }

    /// Finds room for a record of `need` sectors, reclaiming clean space and,
    /// when `may_flush` and the cache is all dirty, flushing (the caller waits).
    /// Returns its log position, or `None` if there is no room without flushing.
    fn reserve(&mut self, t: &mut Nanos, need: u64, may_flush: bool) -> Result<Option<u64>> {
        let c = self.layout.cache_sectors;
        loop {
            let mut pos = self.log.head;
            if self.realign && !self.layout.on_boundary(pos) {
                // A write outside the log broke the SSD's sequential stream:
                // resume it on an erase-block boundary.
                pos = self.layout.next_boundary(pos);
            }
            if pos % c + need > c {
                pos = (pos / c + 1) * c;
            }
            if pos + need <= self.log.free_tail + c {
                debug_assert!(pos >= self.log.head && pos % c + need <= c);
                return Ok(Some(pos));
            }
            if self.log.free_tail < self.log.dirty_tail {
                self.reclaim_one(t)?;
                continue;
            }
            if self.log.dirty_tail < self.log.flushed_tail {
                *t = (*t).max(self.commit((*t).max(self.bg_until))?);
                self.bg_until = self.bg_until.max(*t);
                continue;
            }
            if !may_flush {
                return Ok(None);
            }
            self.st.stalls += 1;
            // Only until there is room; the background worker does the rest.
            let target = c.saturating_sub(2 * need);
            let before = self.log.flushed_tail;
            let end = self.flush_work((*t).max(self.bg_until), Budget::Span(target))?;
            self.bg_until = self.bg_until.max(end);
            *t = (*t).max(end);
            if self.log.flushed_tail == before {
                return Err(HybridError::Layout(
                    "cache region too small for this write".into(),
                ));
            }
        }
    }

    /// Appends a record. For data and promotion records `data` holds one
    /// unit per unit of the extents, in order, which get mapped (dirty for
    /// data) with the extents' missing masks. Returns `None` if a promotion
    /// found no room.
    pub(crate) fn append(
        &mut self,
        t: &mut Nanos,
        kind: Kind,
        extents: Vec<(u64, u64, u8)>,
        data: &[u8],
    ) -> Result<Option<Completion>> {
        let s = self.layout.sector;
        let c = self.layout.cache_sectors;
        let k = data.len() as u64 / s;
        debug_assert!(kind == Kind::Trim || extents.iter().map(|e| e.1).sum::<u64>() == k);
        if !self.log.floor_saved {
            let (tail, prev) = (self.log.dirty_tail, self.log.tail_prev_seq);
            *t = self.save_superblock(*t, tail, prev)?;
        }
        debug_assert!(self.log.next_seq >= self.log.seq_floor);
        let Some(pos) = self.reserve(t, k + 1, kind != Kind::Promote)? else {
            return Ok(None);
        };
        let idx = pos % c;
        assert!(
            idx + k < c,
            "a record never straddles the end of the region"
        );
        self.map_record(t, idx, &extents, data, kind == Kind::Data)?;
        let header = Header {
            kind,
            format_id: self.log.format_id,
            seq: self.log.next_seq,
            prev_seq: self.log.last_seq,
            data_sectors: k,
            data_crc: crc32c::crc32c(data),
            extents,
        };
        self.log.last_seq = self.log.next_seq;
        self.log.next_seq += 1;
        self.log.head = pos + k + 1;
        self.realign = false;
        let mut buf = header.encode(s);
        debug_assert_eq!(
            Header::decode(&buf).as_ref(),
            Some(&header),
            "the header reads back"
        );
        buf.extend_from_slice(data);
        Ok(Some(self.ssd.write_at(
            *t,
            self.layout.cache_offset(idx),
            &buf,
        )?))
    }

    /// Maps the units of a record appended at slot `idx` (`data` one unit
    /// per unit of `extents`, or none for a trim) and marks its header slot.
    fn map_record(
        &mut self,
        t: &mut Nanos,
        idx: u64,
        extents: &[(u64, u64, u8)],
        data: &[u8],
        dirty: bool,
    ) -> Result<()> {
        let s = self.layout.sector as usize;
        let k = (data.len() / s) as u64;
        let (m, mut io) = mio!(self, *t);
        // Each unit's checksum is taken while its data is in hand; every
        // read of the unit from the SSD checks it.
        let mut units = data.chunks_exact(s);
        // A trim record's extents name units it unmaps, not data.
        let homes = extents
            .iter()
            .filter(|_| k > 0)
            .flat_map(|&(h0, n, missing)| (h0..h0 + n).map(move |h| (h, missing)));
        for (slot, (home, missing)) in (idx + 1..).zip(homes) {
            let unit = units
                .next()
                .expect("one unit of data per unit of the extents");
            let crc = unit_crc(unit);
            if let Some(old) = m.map_copy(&mut io, (home, slot), dirty, missing, crc)? {
                self.counts.remove(old);
            }
            self.counts.add(dirty);
        }
        assert!(units.next().is_none(), "data for units no extent names");
        m.set_record(&mut io, idx, k + 1)?;
        *t = io.t;
        Ok(())
    }

    /// Appends host data for the units of `extents` (see [`Self::append`]),
    /// split into records the log takes; `host_bytes` is what the host wrote.
    pub(crate) fn append_data(
        &mut self,
        t: &mut Nanos,
        extents: &[(u64, u64, u8)],
        data: &[u8],
        host_bytes: u64,
        span: &mut Span,
    ) -> Result<()> {
        let s = self.layout.sector as usize;
        let (per, most) = (self.max_record(), max_extents(s as u64));
        let mut rec: Vec<(u64, u64, u8)> = Vec::new();
        let (mut k, mut from) = (0u64, 0usize);
        let mut parts = extents.iter().copied();
        let mut cur = parts.next();
        while let Some((home, n, missing)) = cur {
            let take = n.min(per - k);
            rec.push((home, take, missing));
            k += take;
            cur = if take < n {
                Some((home + take, n - take, missing))
            } else {
                parts.next()
            };
            if k == per || rec.len() == most || cur.is_none() {
                let to = from + k as usize * s;
                let r = std::mem::take(&mut rec);
                if let Some(c) = self.append(t, Kind::Data, r, &data[from..to])? {
                    span.add(c);
                }
                (k, from) = (0, to);
            }
        }
        debug_assert_eq!(from, data.len());
        self.st.ssd_write_requests += 1;
        self.st.ssd_write_bytes += host_bytes;
        Ok(())
    }
}
