//! Creating a hybrid (formatting the SSD) and opening one (recovery).
//!
//! Recovery reads the superblock, then replays the log from the durable dirty
//! tail: each record must be intact (header and data checksums), belong to
//! this format and continue the chain (`prev_seq` = the previous record's
//! `seq`). The first record that does not ends the log. Clean cached data is
//! not recovered: the read cache starts cold, which is safe because the HDD
//! holds it.

use flashkv_device::{BlockDevice, DeviceError, Nanos};

use crate::append::Log;
use crate::crcs::unit_crc;
use crate::device::HybridDevice;
use crate::error::{HybridError, Result};
use crate::layout::{Layout, Superblock};
use crate::maps::decode;
use crate::options::Options;
use crate::record::{Header, Kind};
use crate::stats::RecoveryReport;

/// The newest valid superblock, if any, and when reading it finished. A
/// slot that fails its checksum is read again (up to [`RECOVERY_READS`]
/// reads): a flip on the way from the SSD must not make the older copy
/// win, whose tail may point at records the log has since reused.
fn read_superblock(
    ssd: &mut dyn BlockDevice,
    sector: u64,
    at: Nanos,
) -> Result<(Option<Superblock>, Nanos)> {
    let mut best: Option<Superblock> = None;
    let mut end = at;
    for off in Superblock::slots() {
        let mut b = vec![0u8; sector as usize];
        let r = ssd.read_at(at, off, &mut b)?;
        end = end.max(r.end);
        let mut found = Superblock::decode(&b);
        let mut reads = 1;
        while found.is_none() && reads < RECOVERY_READS && b.iter().any(|&x| x != 0) {
            end = end.max(ssd.read_at(end, off, &mut b)?.end);
            found = Superblock::decode(&b);
            reads += 1;
        }
        if let Some(sb) = found {
            debug_assert_eq!(sb.slot_offset(), off, "a superblock lies in its own slot");
            if best.is_none_or(|x| sb.sb_seq > x.sb_seq) {
                best = Some(sb);
            }
        }
    }
    Ok((best, end))
}

/// A replayed record and, for a data record, its units' checksums (taken
/// from data that has just passed the record's data checksum).
struct Replayed {
    h: Header,
    crcs: Vec<u32>,
}

impl Replayed {
    fn new(h: Header, data: &[u8], sector: u64) -> Self {
        debug_assert_eq!(data.len() as u64, h.data_sectors * sector);
        let crcs = match h.kind {
            Kind::Data => data.chunks_exact(sector as usize).map(unit_crc).collect(),
            // Promoted copies are not replayed; a trim has no data.
            Kind::Promote | Kind::Trim => Vec::new(),
        };
        Replayed { h, crcs }
    }
}

/// What a direct read of the log at a position found.
enum Found {
    /// The next record of the chain, intact.
    Next(Replayed),
    /// An intact header of something else: the log ends before it.
    NotNext,
    /// A header or data that fails its checksum: damaged, torn, or misread.
    Damaged,
}

/// Reads of a log record or superblock slot, in all, before recovery takes
/// it as damaged. A miss here is silent (the log ends early and drops the
/// records after it), unlike a miss when a cached unit is read (an error),
/// so recovery tries harder: a flip on the way from the medium must strike
/// every read to cost a record. With one 512-byte sector read in 200
/// flipped, a 12 KiB record fails a read with odds 0.11: four reads lost
/// one in 6,000 such records (the corruption test met it), eight lose one
/// in 37 million. The extra reads cost time only at a damaged or torn
/// record: the end of the log after a crash.
pub(crate) const RECOVERY_READS: u32 = 8;

/// Reads the log through a window, so a scan costs large sequential reads.
struct Window {
    pos: u64,
    buf: Vec<u8>,
}

const WINDOW_BYTES: u64 = 1 << 20;

impl HybridDevice {
    /// Formats `ssd` as the cache of `hdd` and returns the device. Whatever the
    /// HDD holds is its initial content; earlier cache contents are discarded.
    pub fn create(
        ssd: Box<dyn BlockDevice>,
        hdd: Box<dyn BlockDevice>,
        opts: Options,
    ) -> Result<Self> {
        let mut ssd = ssd;
        let layout = Layout::compute(ssd.geometry(), hdd.geometry())?;
        opts.validate(layout.sector)?;
        let now = ssd.clock();
        let (old, t) = read_superblock(&mut *ssd, layout.sector, now)?;
        // A new format id keeps an earlier format's records out of this log.
        let format_id = old.map_or(1, |o| o.format_id.wrapping_add(1));
        let sb_seq = old.map_or(1, |o| o.sb_seq + 1);
        let mut end = t;
        for seq in [sb_seq, sb_seq + 1] {
            let sb = Superblock {
                layout,
                format_id,
                sb_seq: seq,
                tail: 0,
                tail_prev_seq: 0,
                seq_floor: 1,
            };
            end = end.max(ssd.write_at(t, sb.slot_offset(), &sb.encode())?.end);
        }
        ssd.flush_at(end)?;
        let log = Log {
            free_tail: 0,
            dirty_tail: 0,
            flushed_tail: 0,
            flushed_prev_seq: 0,
            head: 0,
            last_seq: 0,
            next_seq: 1,
            format_id,
            sb_seq: sb_seq + 1,
            tail_prev_seq: 0,
            seq_floor: 1,
            floor_saved: true,
        };
        HybridDevice::assemble(ssd, hdd, layout, opts, log)
    }

    /// Opens a hybrid made by [`HybridDevice::create`] on these devices,
    /// recovering its mapping from the log; the recovery is reported in
    /// [`HybridDevice::hybrid_stats`].
    pub fn open(
        ssd: Box<dyn BlockDevice>,
        hdd: Box<dyn BlockDevice>,
        opts: Options,
    ) -> Result<Self> {
        let mut ssd = ssd;
        let layout = Layout::compute(ssd.geometry(), hdd.geometry())?;
        let start = ssd.clock().max(hdd.clock());
        let (sb, t) = read_superblock(&mut *ssd, layout.sector, start)?;
        let sb = sb.ok_or(HybridError::NotFormatted)?;
        if sb.layout != layout {
            return Err(HybridError::Layout(format!(
                "the devices do not match the superblock (recorded {:?}, found {:?})",
                sb.layout, layout
            )));
        }
        let log = Log {
            free_tail: sb.tail,
            dirty_tail: sb.tail,
            flushed_tail: sb.tail,
            flushed_prev_seq: sb.tail_prev_seq,
            head: sb.tail,
            last_seq: sb.tail_prev_seq,
            next_seq: sb.tail_prev_seq + 1,
            format_id: sb.format_id,
            sb_seq: sb.sb_seq,
            tail_prev_seq: sb.tail_prev_seq,
            // Until the replay sets this session's.
            seq_floor: sb.seq_floor,
            floor_saved: false,
        };
        let mut dev = HybridDevice::assemble(ssd, hdd, layout, opts, log)?;
        let mut report = dev.replay(t)?;
        let end = dev.bg_until.max(t);
        report.time_ns = end - start;
        dev.set_recovery(report, end);
        Ok(dev)
    }

    /// Bytes of log at `pos` (`sectors` long, within one lap), read through `w`.
    fn log_bytes<'w>(
        &mut self,
        w: &'w mut Window,
        t: &mut Nanos,
        pos: u64,
        sectors: u64,
        scanned: &mut u64,
    ) -> Result<&'w [u8]> {
        let c = self.layout.cache_sectors;
        let s = self.layout.sector;
        let have = w.buf.len() as u64 / s;
        if !(pos >= w.pos && pos + sectors <= w.pos + have) {
            let lap_end = (pos / c + 1) * c;
            let n = (WINDOW_BYTES / s).max(sectors).min(lap_end - pos);
            w.pos = pos;
            w.buf = vec![0u8; (n * s) as usize];
            let offset = self.layout.cache_offset(pos % c);
            match self.ssd.read_at(*t, offset, &mut w.buf) {
                Ok(r) => {
                    *t = r.end;
                    *scanned += n * s;
                }
                // An unreadable sector past what is needed (past the log's
                // end, say) must not fail the recovery: read only what is.
                Err(DeviceError::Unreadable { .. }) if n > sectors => {
                    w.buf.truncate((sectors * s) as usize);
                    *t = self.ssd.read_at(*t, offset, &mut w.buf)?.end;
                    *scanned += sectors * s;
                }
                Err(e) => return Err(e.into()),
            }
        }
        debug_assert!(pos >= w.pos && pos + sectors <= w.pos + w.buf.len() as u64 / s);
        let at = ((pos - w.pos) * s) as usize;
        Ok(&w.buf[at..at + (sectors * s) as usize])
    }

    /// Whether the intact header `h`, found at log position `pos`, has a
    /// record's shape, belongs to this format and continues the chain after
    /// `last` within `limit`.
    fn continues(&self, h: &Header, pos: u64, last: u64, limit: u64) -> bool {
        let c = self.layout.cache_sectors;
        let vsectors = self.layout.capacity / self.layout.sector;
        let full = self.full_mask();
        // A missing mask only on a data record's single-unit extent, and
        // naming at least one sector held.
        let mask_ok = |&(_, n, m): &(u64, u64, u8)| {
            m == 0 || (h.kind == Kind::Data && n == 1 && m & !full == 0 && m != full)
        };
        let units: u64 = h.extents.iter().map(|e| e.1).sum();
        let shape_ok = h.extents.iter().all(|e| e.1 > 0 && mask_ok(e))
            && match h.kind {
                Kind::Data | Kind::Promote => units == h.data_sectors && h.data_sectors > 0,
                Kind::Trim => h.data_sectors == 0,
            };
        shape_ok
            && h.format_id == self.log.format_id
            && h.prev_seq == last
            && h.seq > last
            && pos % c + h.len() <= c
            && pos + h.len() <= limit
            && h.extents
                .iter()
                .all(|&(home, n, _)| home.checked_add(n).is_some_and(|e| e <= vsectors))
    }

    /// The record at `pos` with its units' checksums, if it is intact and
    /// continues the chain after `last`. One whose header or data fails its
    /// checksum is read again on its own, up to [`RECOVERY_READS`] reads in
    /// all: a flip on the way from the SSD must not end the log there and
    /// silently drop the acknowledged records after it.
    fn record_if_valid(
        &mut self,
        w: &mut Window,
        t: &mut Nanos,
        (pos, last, limit): (u64, u64, u64),
        scanned: &mut u64,
    ) -> Result<Option<Replayed>> {
        let b = self.log_bytes(w, t, pos, 1, scanned)?;
        match Header::decode(b) {
            // Never written: no flip makes a record of it.
            None if b.iter().all(|&x| x == 0) => return Ok(None),
            None => {}
            Some(h) if !self.continues(&h, pos, last, limit) => return Ok(None),
            Some(h) => {
                let data = self.log_bytes(w, t, pos + 1, h.data_sectors, scanned)?;
                if crc32c::crc32c(data) == h.data_crc {
                    return Ok(Some(Replayed::new(h, data, self.layout.sector)));
                }
            }
        }
        for _ in 1..RECOVERY_READS {
            match self.read_record(t, (pos, last, limit), scanned)? {
                Found::Next(r) => return Ok(Some(r)),
                Found::NotNext => return Ok(None),
                Found::Damaged => {}
            }
        }
        // Damaged on every read: a torn append, the end of the log.
        Ok(None)
    }

    /// Reads the record at `pos` directly (not through the window).
    fn read_record(
        &mut self,
        t: &mut Nanos,
        (pos, last, limit): (u64, u64, u64),
        scanned: &mut u64,
    ) -> Result<Found> {
        let (s, c) = (self.layout.sector, self.layout.cache_sectors);
        let mut b = vec![0u8; s as usize];
        *t = self
            .ssd
            .read_at(*t, self.layout.cache_offset(pos % c), &mut b)?
            .end;
        *scanned += s;
        self.st.checksum_rereads += 1;
        let h = match Header::decode(&b) {
            // Never written: what the window showed was a flip.
            None if b.iter().all(|&x| x == 0) => return Ok(Found::NotNext),
            None => return Ok(Found::Damaged),
            Some(h) if !self.continues(&h, pos, last, limit) => return Ok(Found::NotNext),
            Some(h) => h,
        };
        let mut data = vec![0u8; (h.data_sectors * s) as usize];
        if !data.is_empty() {
            let offset = self.layout.cache_offset((pos + 1) % c);
            *t = self.ssd.read_at(*t, offset, &mut data)?.end;
            *scanned += data.len() as u64;
        }
        Ok(if crc32c::crc32c(&data) == h.data_crc {
            Found::Next(Replayed::new(h, &data, s))
        } else {
            Found::Damaged
        })
    }

    /// Replays the log from the dirty tail, starting at `at`.
    fn replay(&mut self, at: Nanos) -> Result<RecoveryReport> {
        let c = self.layout.cache_sectors;
        let tail = self.log.dirty_tail;
        let limit = tail + c;
        let mut t = at;
        let mut w = Window {
            pos: 0,
            buf: Vec::new(),
        };
        let mut report = RecoveryReport::default();
        let mut pos = tail;
        let mut last = self.log.last_seq;
        while pos < limit {
            let scanned = &mut report.scanned_bytes;
            let mut h = self.record_if_valid(&mut w, &mut t, (pos, last, limit), scanned)?;
            // A record after a gap starts on the next boundary (an alignment
            // boundary, or the next lap when the last record did not fit).
            let mut gap = pos;
            while h.is_none() && gap < limit {
                let next = self.layout.next_boundary(gap);
                let lap = (gap / c + 1) * c;
                if next >= limit {
                    break;
                }
                h = self.record_if_valid(&mut w, &mut t, (next, last, limit), scanned)?;
                if h.is_some() {
                    pos = next;
                } else if next == lap {
                    break;
                } else {
                    // Also try the next lap: the tail of this one may be unused.
                    gap = lap - 1;
                }
            }
            let Some(Replayed { h, crcs }) = h else { break };
            debug_assert!(
                h.seq > last && pos + h.len() <= limit,
                "a valid record continues the chain"
            );
            self.apply(&mut t, pos, &h, &crcs)?;
            report.records += 1;
            last = h.seq;
            pos += h.len();
        }
        self.log.head = pos;
        self.log.last_seq = last;
        self.log.next_seq = self.session_seq(&mut t, last, &mut report.scanned_bytes)?;
        self.log.seq_floor = self.log.next_seq;
        self.check_log();
        report.dirty_sectors = self.counts.dirty;
        self.bg_until = t;
        Ok(report)
    }

    /// The first sequence number of the session being opened, after the
    /// replay ended at `last`. Records lost in a crash may still sit past
    /// the head; none of them may ever continue the chain, so the session
    /// numbers above every number they can have: those of the newest
    /// session that appended start at the superblock's floor, and those it
    /// lost after its last flush are at most a cache's worth (one per
    /// sector) past its durable records, or past its floor; older sessions'
    /// lie below that floor. A version 1 superblock has no floor: the
    /// cache region is scanned for the highest number instead.
    fn session_seq(&mut self, t: &mut Nanos, last: u64, scanned: &mut u64) -> Result<u64> {
        let c = self.layout.cache_sectors;
        let next = if self.log.seq_floor == 0 {
            self.highest_seq(t, scanned)?.max(last).checked_add(1)
        } else {
            last.max(self.log.seq_floor).checked_add(c + 1)
        };
        next.ok_or(HybridError::Corrupt {
            what: "log sequence number",
            location: self.layout.cache_start,
        })
    }

    /// The highest sequence number of any record header of this format in
    /// the cache region.
    fn highest_seq(&mut self, t: &mut Nanos, scanned: &mut u64) -> Result<u64> {
        let c = self.layout.cache_sectors;
        let mut w = Window {
            pos: 0,
            buf: Vec::new(),
        };
        let mut high = 0;
        for pos in 0..c {
            if let Some(h) = Header::decode(self.log_bytes(&mut w, t, pos, 1, scanned)?) {
                if h.format_id == self.log.format_id {
                    high = high.max(h.seq);
                }
            }
        }
        Ok(high)
    }

    /// Applies a replayed record (with its data units' checksums) to the maps.
    fn apply(&mut self, t: &mut Nanos, pos: u64, h: &Header, crcs: &[u32]) -> Result<()> {
        let idx = pos % self.layout.cache_sectors;
        let (m, mut io) = mio!(self, *t);
        match h.kind {
            Kind::Data => {
                let units = h
                    .extents
                    .iter()
                    .flat_map(|&(h0, n, m)| (h0..h0 + n).map(move |x| (x, m)));
                debug_assert_eq!(crcs.len() as u64, h.data_sectors, "a checksum a unit");
                for (i, ((home, missing), &crc)) in units.zip(crcs).enumerate() {
                    let slot = idx + 1 + i as u64;
                    if let Some(old) = m.map_copy(&mut io, (home, slot), true, missing, crc)? {
                        self.counts.remove(old);
                    }
                    self.counts.add(true);
                }
            }
            // Promoted copies are clean; the HDD has the data.
            Kind::Promote => {}
            Kind::Trim => {
                for &(home0, n, _) in &h.extents {
                    for home in home0..home0 + n {
                        if let Some(e) = decode(m.fwd_get(&mut io, home)?) {
                            m.fwd_clear(&mut io, home)?;
                            m.rev_clear(&mut io, e.value)?;
                            self.counts.remove(e);
                        }
                    }
                }
            }
        }
        m.set_record(&mut io, idx, h.len())?;
        *t = io.t;
        Ok(())
    }
}
