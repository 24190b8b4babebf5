//! Write-ahead log: a region of checksummed, sequence-numbered records.
//!
//! Every record starts on a sector boundary and is written once, so a torn
//! or lost write can only damage records that were never acknowledged as
//! durable. Recovery reads records in order from the start of the region
//! and stops at the first one that is invalid, out of sequence or of another
//! epoch. The epoch is the sequence number of the checkpoint the log follows;
//! every open and checkpoint starts a new one, so neither records from before
//! the checkpoint nor records a crash left behind a lost one are replayed.
//! Epochs alternate between the two halves of the region, so recovery can
//! copy what it found into a new epoch without overwriting it. On
//! program-once devices an erase unit of the region is erased before the
//! log first writes into it in an epoch.
//!
//! Record header (32 bytes): magic, version, kind, how far back the log was
//! durable (u16: the record's sequence number less that of the newest
//! record a flush had made durable when it was written, `u16::MAX` if
//! unknown or further), sequence number, payload length, crc32c over the
//! header's other 28 bytes and the payload, epoch.
//!
//! The durable distance tells a torn tail from a damaged or lost record:
//! when the record recovery stops at is followed by a valid record that
//! says it was durable, that record was acknowledged and then damaged, or
//! its write was lost or sent elsewhere, which is [`Error::Corrupt`], never
//! a silent end of the log. A lost write leaves its slot blank or stale, so
//! the records after a blank end are looked for too; and records of the
//! next epoch in the other half say that epoch's checkpoint was written.

use crate::error::{corrupt, Error, Location, Result, Structure};
use crate::io::{Disk, Region};
use crate::le::{u16_at, u32_at, u64_at};
use crate::redo::CARRY_RECORD;

/// A record recovery read back.
pub(crate) struct Logged {
    /// Its sequence number.
    pub seq: u64,
    pub kind: u8,
    pub payload: Vec<u8>,
}

/// What the other half of the log holds of the epoch after the one
/// recovered.
pub(crate) enum Next {
    Nothing,
    /// Only records that carry pages forward ([`CARRY_RECORD`]): the
    /// start of a checkpoint that a crash cut short before its slot was
    /// written (nothing was committed after them).
    Carry,
    /// Anything else: that epoch's checkpoint was written.
    More,
}

/// A record read back.
struct Record {
    kind: u8,
    payload: Vec<u8>,
    /// Bytes it takes.
    total: u64,
    /// Its durable distance (`u16::MAX`: unknown).
    back: u16,
}

/// What recovery finds where a record may start.
enum Found {
    Record(Record),
    /// No valid record with the sequence number sought: the sector there
    /// (`None` past the end of the log).
    Not(Option<Vec<u8>>),
}

/// What a sector where a record may start holds.
#[derive(Debug, PartialEq, Eq)]
enum Header {
    /// A header of this epoch with this sequence number.
    Ours(u64),
    /// A header of another epoch, with its sequence number: left from an
    /// earlier use of the half.
    Stale(u64),
    Blank,
    /// Anything else: a torn or damaged header.
    Damaged,
}

const MAGIC: u32 = 0x4C57_4B46; // "FKWL"
/// Version 2 records carry the durable distance; version 1 (earlier
/// builds, still read) has zeros there.
const VERSION: u8 = 2;
const HDR: usize = 32;
/// Reads of a record that fails its checks before it counts as damaged.
const READS: usize = 3;
/// Payloads from this size on are written without a copy of the record
/// (in up to three writes: a log's records in the lab are smaller).
const LARGE: usize = 256 << 10;
/// Bytes after the end of the log searched for later records that say the
/// end is not one: the longest record a lost write can hide.
const SEARCH_WINDOW: u64 = 4 << 20;
/// Bytes of that window read at a time.
const SEARCH_CHUNK: u64 = 1 << 20;

pub(crate) struct Wal {
    /// The region: two halves, epochs alternate between them.
    region: u64,
    /// The current half.
    start: u64,
    len: u64,
    pos: u64,
    /// Sequence number of the next record.
    pub next_seq: u64,
    /// Sequence number of the current epoch's first record.
    first: u64,
    sector: u64,
    /// Bytes from `start` already erased (program-once devices) since the last reset.
    clean_to: u64,
    epoch: u64,
    /// Sequence number of the newest record a flush made durable (0: none).
    durable: u64,
}

/// Checksum of a record: header without its crc field, then the payload.
fn record_crc(rec: &[u8]) -> u32 {
    let plen = u32_at(rec, 16) as usize;
    let c = crc32c::crc32c(&rec[0..20]);
    crc32c::crc32c_append(
        crc32c::crc32c_append(c, &rec[24..32]),
        &rec[HDR..HDR + plen],
    )
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

impl Wal {
    /// The log over `[start, start+len)`, in the half of epoch `epoch`.
    pub fn new(start: u64, len: u64, sector: u64, next_seq: u64, epoch: u64) -> Wal {
        assert!(
            sector >= HDR as u64,
            "a {sector}-byte sector holds a record header"
        );
        assert!(
            len % (2 * sector) == 0 && len >= 2 * sector,
            "the log is two halves of whole sectors"
        );
        assert!(next_seq > 0, "sequence numbers start at 1");
        Wal {
            region: start,
            start: start + (epoch % 2) * (len / 2),
            len: len / 2,
            pos: 0,
            next_seq,
            first: next_seq,
            sector,
            clean_to: 0,
            epoch,
            durable: 0,
        }
    }

    /// A device flush made every record appended so far durable.
    pub fn flushed(&mut self) {
        debug_assert!(
            self.durable < self.next_seq,
            "durable records were appended"
        );
        self.durable = self.next_seq - 1;
    }

    /// Records up to `seq` were made durable by a flush outside the
    /// store's lock (group commit).
    pub fn durable_to(&mut self, seq: u64) {
        assert!(seq < self.next_seq, "durable records were appended");
        self.durable = self.durable.max(seq);
    }

    /// Bytes a record with `payload` bytes takes.
    pub fn record_len(&self, payload: usize) -> u64 {
        round_up((HDR + payload) as u64, self.sector)
    }

    /// Bytes left in the current half.
    pub fn remaining(&self) -> u64 {
        debug_assert!(self.pos <= self.len, "the log stays in its half");
        self.len - self.pos
    }

    /// Bytes of one half: the most one epoch holds.
    pub fn capacity(&self) -> u64 {
        self.len
    }

    /// Writes a record (not yet durable: the caller flushes the device to commit).
    pub fn append(&mut self, disk: &mut Disk, kind: u8, payload: &[u8]) -> Result<()> {
        let total = self.record_len(payload.len());
        if self.pos + total > self.len {
            return Err(Error::Full("write-ahead log"));
        }
        assert!(
            payload.len() <= u32::MAX as usize,
            "a payload's length fits its field"
        );
        assert_eq!(self.pos % self.sector, 0, "records start on a sector");
        let head = self.head(kind, payload);
        self.erase_ahead(disk, total)?;
        let at = self.start + self.pos;
        if payload.len() < LARGE {
            let mut buf = head;
            buf.extend_from_slice(payload);
            buf.resize(total as usize, 0);
            disk.write(Region::Wal, at, &buf)?;
        } else {
            self.write_large(disk, at, head, payload)?;
        }
        self.pos += total;
        disk.appended(self.next_seq);
        self.next_seq += 1;
        Ok(())
    }

    /// The header of this epoch's next record, of `kind` around `payload`.
    fn head(&self, kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; HDR];
        h[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        h[4] = VERSION;
        h[5] = kind;
        let back = match self.durable {
            0 => u16::MAX,
            d => u16::try_from(self.next_seq - d).unwrap_or(u16::MAX),
        };
        h[6..8].copy_from_slice(&back.to_le_bytes());
        h[8..16].copy_from_slice(&self.next_seq.to_le_bytes());
        h[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        h[24..32].copy_from_slice(&self.epoch.to_le_bytes());
        let crc = crc32c::crc32c(&h[0..20]);
        let crc = crc32c::crc32c_append(crc32c::crc32c_append(crc, &h[24..32]), payload);
        h[20..24].copy_from_slice(&crc.to_le_bytes());
        debug_assert!(
            payload.len() < LARGE
                || self.header(&[&h[..], &payload[..self.sector as usize]].concat())
                    == Header::Ours(self.next_seq),
            "a record reads back as this epoch's next one"
        );
        h
    }

    /// Erases, on program-once devices, the units a record of `total`
    /// bytes at the current position is written into.
    fn erase_ahead(&mut self, disk: &mut Disk, total: u64) -> Result<()> {
        if let Some(eu) = disk
            .log_geo
            .erase_unit
            .filter(|_| disk.log_geo.program_once)
        {
            while self.clean_to < self.pos + total {
                let off = self.start + self.clean_to;
                if disk.log_programmed(off, eu) {
                    disk.erase(Region::Wal, off, eu)?;
                }
                self.clean_to += eu;
            }
        }
        debug_assert!(
            self.clean_to >= self.pos + total
                || disk.log_geo.erase_unit.is_none()
                || !disk.log_geo.program_once,
            "a program-once log writes only erased sectors"
        );
        Ok(())
    }

    /// Writes a large record at `at` without copying its payload whole:
    /// the header's sector, the payload's whole sectors after it straight
    /// from `payload`, and its last part padded to a sector.
    fn write_large(&self, disk: &mut Disk, at: u64, head: Vec<u8>, payload: &[u8]) -> Result<()> {
        let s = self.sector as usize;
        let first = s - HDR;
        let mut buf = head;
        buf.extend_from_slice(&payload[..first]);
        disk.write(Region::Wal, at, &buf)?;
        let rest = &payload[first..];
        let whole = rest.len() - rest.len() % s;
        disk.write(Region::Wal, at + s as u64, &rest[..whole])?;
        if whole < rest.len() {
            let mut tail = rest[whole..].to_vec();
            tail.resize(s, 0);
            disk.write(Region::Wal, at + (s + whole) as u64, &tail)?;
        }
        Ok(())
    }

    /// The record at `pos` if it is valid and has sequence number `seq`.
    /// One that fails its checks but is neither blank nor (by its
    /// sequence number) another epoch's is read again, up to [`READS`]
    /// times: a read corrupted on its way from the medium (bus,
    /// controller, memory) reads right the next time, a record damaged on
    /// the medium does not.
    fn read_at(&self, disk: &mut Disk, pos: u64, seq: u64) -> Result<Found> {
        let mut found = self.read_once(disk, pos, seq)?;
        for _ in 1..READS {
            match &found {
                // Another epoch's record with the sequence number sought is
                // ours, its epoch misread, or (rarely) a stale one that
                // reads the same again.
                Found::Not(Some(head))
                    if matches!(self.header(head), Header::Ours(_) | Header::Damaged)
                        || self.header(head) == Header::Stale(seq) =>
                {
                    found = self.read_once(disk, pos, seq)?;
                }
                _ => break,
            }
        }
        Ok(found)
    }

    /// [`Wal::read_at`], one read.
    fn read_once(&self, disk: &mut Disk, pos: u64, seq: u64) -> Result<Found> {
        if pos + self.sector > self.len {
            return Ok(Found::Not(None));
        }
        let mut head = vec![0u8; self.sector as usize];
        disk.read(Region::Wal, self.start + pos, &mut head)?;
        if self.header(&head) != Header::Ours(seq) {
            return Ok(Found::Not(Some(head)));
        }
        let plen = u32_at(&head, 16) as usize;
        let total = self.record_len(plen);
        if pos + total > self.len {
            return Ok(Found::Not(Some(head)));
        }
        let mut buf = head;
        buf.resize(total as usize, 0);
        if total > self.sector {
            let s = self.sector as usize;
            disk.read(Region::Wal, self.start + pos + self.sector, &mut buf[s..])?;
        }
        buf.truncate(HDR + plen);
        if record_crc(&buf) != u32_at(&buf, 20) {
            buf.truncate(self.sector as usize);
            return Ok(Found::Not(Some(buf)));
        }
        debug_assert_eq!(total % self.sector, 0, "a record takes whole sectors");
        let back = match buf[4] {
            1 => u16::MAX, // version 1 did not say
            _ => u16_at(&buf, 6),
        };
        Ok(Found::Record(Record {
            kind: buf[5],
            payload: buf.split_off(HDR),
            total,
            back,
        }))
    }

    /// What a sector holding a record header says, checksum unchecked.
    fn header(&self, head: &[u8]) -> Header {
        let magic = u32_at(head, 0) == MAGIC;
        let epoch = u64_at(head, 24);
        match (magic && matches!(head[4], 1 | 2), epoch == self.epoch) {
            (true, true) => Header::Ours(u64_at(head, 8)),
            (true, false) => Header::Stale(u64_at(head, 8)),
            _ if head.iter().all(|&b| b == 0) => Header::Blank,
            _ => Header::Damaged,
        }
    }

    /// Reads the valid records from the start of the region, beginning with
    /// sequence number `self.next_seq`, and positions the log after them.
    /// A damaged or missing record that a later record says was durable is
    /// [`Error::Corrupt`], not the end of the log; unless the last record
    /// read is a mark that no record follows (`ends`), the log after it is
    /// searched for such a record.
    pub fn recover(
        &mut self,
        disk: &mut Disk,
        ends: impl Fn(&Logged) -> bool,
    ) -> Result<Vec<Logged>> {
        let first = self.next_seq;
        let (out, pos, end) = self.read_records(disk, first, u64::MAX)?;
        self.pos = pos;
        self.next_seq = first + out.len() as u64;
        match end {
            Some(head) if !out.last().is_some_and(ends) => self.check_end(disk, &head)?,
            _ => {}
        }
        debug_assert_eq!(
            out.len() as u64,
            self.next_seq - first,
            "one record per sequence number"
        );
        self.durable = self.next_seq - 1;
        // Appends must never erase the units holding these records.
        self.clean_to = match disk.log_geo.erase_unit {
            Some(eu) if disk.log_geo.program_once => self.pos.div_ceil(eu) * eu,
            _ => 0,
        };
        Ok(out)
    }

    /// Where recovery stopped (`pos`, expecting `next_seq`; `head` the
    /// sector there): whatever it holds (blank space, an earlier epoch's
    /// record, a torn or damaged one), the records of this epoch written
    /// after it decide whether it was the end of the log. A write the
    /// device lost or sent elsewhere leaves its slot as it was, blank or
    /// stale, so a blank is no proof of the end either.
    fn check_end(&self, disk: &mut Disk, head: &[u8]) -> Result<()> {
        let (pos, lost) = (self.pos, self.next_seq);
        let mut highest = lost;
        if self.header(head) != Header::Ours(lost) {
            return self.vouch_scan(disk, pos, lost, &mut highest);
        }
        // Its header is whole: the next record follows it, maybe past the
        // window (a write astray may also have landed inside it).
        self.vouch_scan(disk, pos + self.sector, lost, &mut highest)?;
        let next = pos + self.record_len(u32_at(head, 16) as usize);
        if next >= pos + SEARCH_WINDOW && next < self.len {
            self.vouch_scan(disk, next, lost, &mut highest)?;
        }
        Ok(())
    }

    /// Reads the window after `from` for records of this epoch written
    /// after record `lost`. One that says `lost` was durable, or one out
    /// of order (numbered at most `highest`, the highest seen so far: a
    /// write that went astray), makes the end of the log at `lost`
    /// [`Error::Corrupt`]. Records after the last flush say nothing, so a
    /// torn tail still ends the log.
    fn vouch_scan(&self, disk: &mut Disk, from: u64, lost: u64, highest: &mut u64) -> Result<()> {
        let mut why = None;
        self.each_record(disk, (from, SEARCH_WINDOW), |_, seq, r| {
            if seq <= *highest {
                why = Some(
                    "missing from its place, and a record lies out of order: a write went astray",
                );
            } else if r.back != u16::MAX && seq.saturating_sub(u64::from(r.back)) >= lost {
                why = Some("missing or damaged, and a later record says it was durable");
            }
            *highest = seq;
            why.is_none()
        })?;
        match why {
            Some(why) => Err(corrupt(Structure::LogRecord, Location::Record(lost), why)),
            None => Ok(()),
        }
    }

    /// Calls `f` with the offset, sequence number and contents of each
    /// valid record of this epoch in the `window` bytes after `from` (to
    /// the half's end at most), read in large chunks, until `f` says stop.
    fn each_record(
        &self,
        disk: &mut Disk,
        (from, window): (u64, u64),
        mut f: impl FnMut(u64, u64, Record) -> bool,
    ) -> Result<()> {
        let to = from.saturating_add(window).min(self.len);
        let (s, mut next, mut at) = (self.sector as usize, from, from);
        while at < to {
            let len = SEARCH_CHUNK.min(to - at);
            let mut buf = vec![0u8; len as usize];
            disk.read(Region::Wal, self.start + at, &mut buf)?;
            for (i, head) in buf.chunks_exact(s).enumerate() {
                let p = at + (i * s) as u64;
                let Header::Ours(seq) = self.header(head) else {
                    continue;
                };
                if p < next {
                    continue;
                }
                // Read again from the device: a flip on the way is retried.
                if let Found::Record(r) = self.read_at(disk, p, seq)? {
                    next = p + r.total;
                    if !f(p, seq, r) {
                        return Ok(());
                    }
                }
            }
            at += len;
        }
        Ok(())
    }

    /// What the start of the other half holds of the next epoch. Nothing,
    /// unless checkpoint `epoch + 1` was written (the log moves to the new
    /// half only once it is durable), or a checkpoint a crash cut short
    /// carried pages forward there ([`Next::Carry`]) before writing its slot.
    pub fn next_epoch(&self, disk: &mut Disk) -> Result<Next> {
        let epoch = self.epoch + 1;
        let next = Wal {
            start: self.region + (epoch % 2) * self.len,
            epoch,
            pos: 0,
            ..*self
        };
        debug_assert_ne!(
            next.start, self.start,
            "the next epoch is in the other half"
        );
        let mut found = Next::Nothing;
        // Finding it takes a second fault (a lost checkpoint), so the
        // search is short: one chunk.
        next.each_record(disk, (0, SEARCH_CHUNK), |_, _, r| {
            found = match r.kind {
                CARRY_RECORD => Next::Carry,
                _ => Next::More,
            };
            matches!(found, Next::Carry)
        })?;
        Ok(found)
    }

    /// Whether the record appended last, of `payload` bytes, reads back.
    pub fn last_reads_back(&self, disk: &mut Disk, payload: usize) -> Result<bool> {
        let total = self.record_len(payload);
        assert!(
            self.pos >= total,
            "a record of {payload} bytes was appended"
        );
        let found = self.read_at(disk, self.pos - total, self.next_seq - 1)?;
        Ok(matches!(found, Found::Record(_)))
    }

    /// Steps back over the record appended (or recovered) last, of
    /// `payload` bytes, so that the next append takes its place and its
    /// sequence number.
    pub fn unappend(&mut self, payload: usize) {
        let total = self.record_len(payload);
        assert!(
            self.pos >= total && self.next_seq > 1,
            "a record of {payload} bytes was appended"
        );
        self.pos -= total;
        self.next_seq -= 1;
        self.durable = self.durable.min(self.next_seq - 1);
    }

    /// The records of the current epoch appended so far, read back from
    /// the device (to rebuild pages a rollback could not restore). One
    /// that does not read back is [`Error::Corrupt`].
    pub fn read_back(&self, disk: &mut Disk) -> Result<Vec<Logged>> {
        let (out, pos, _) = self.read_records(disk, self.first, self.next_seq)?;
        let read = self.first + out.len() as u64;
        if read < self.next_seq {
            return Err(corrupt(
                Structure::LogRecord,
                Location::Record(read),
                "appended since the store was opened, it does not read back",
            ));
        }
        debug_assert_eq!(pos, self.pos, "the epoch's records end where appends go");
        Ok(out)
    }

    /// Reads the half's records in sequence from its start (`first` the
    /// first's number), up to number `until` (not included) or the first
    /// missing; returns them, where they end, and what lies there instead
    /// of the next one ([`Found::Not`]; nothing when `until` stopped it).
    fn read_records(
        &self,
        disk: &mut Disk,
        first: u64,
        until: u64,
    ) -> Result<(Vec<Logged>, u64, Option<Vec<u8>>)> {
        let (mut out, mut pos, mut seq) = (Vec::new(), 0, first);
        while seq < until {
            match self.read_at(disk, pos, seq)? {
                Found::Record(r) => {
                    out.push(Logged {
                        seq,
                        kind: r.kind,
                        payload: r.payload,
                    });
                    pos += r.total;
                    seq += 1;
                }
                Found::Not(head) => return Ok((out, pos, head)),
            }
        }
        Ok((out, pos, None))
    }

    /// Offset and length of the records written in the current epoch.
    pub fn written(&self) -> (u64, u64) {
        (self.start, self.pos)
    }

    /// Starts over in a new epoch (after a checkpoint), in the other half of
    /// the region: the records of the previous epoch stay intact until the
    /// checkpoint that replaces them is durable.
    pub fn reset(&mut self, epoch: u64) {
        assert!(
            epoch > self.epoch,
            "epochs only move forward ({} to {epoch})",
            self.epoch
        );
        self.start = self.region + (epoch % 2) * self.len;
        self.pos = 0;
        self.first = self.next_seq;
        self.clean_to = 0;
        self.epoch = epoch;
    }

    /// Like [`Wal::reset`], in the region `[start, start+len)`: the log
    /// moves there (a larger one for a batch that does not fit, or back
    /// home). The old region stays intact until the checkpoint naming the
    /// new one is durable.
    pub fn relocate(&mut self, start: u64, len: u64, epoch: u64) {
        assert!(
            len % (2 * self.sector) == 0 && len >= 2 * self.sector,
            "the log is two halves of whole sectors"
        );
        self.region = start;
        self.len = len / 2;
        self.reset(epoch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashkv_device::{Geometry, MemDevice};
    use proptest::prelude::*;

    const HALF: u64 = 32 << 10;

    fn disk() -> Disk {
        let geo = Geometry {
            sector_size: 512,
            erase_unit: None,
            capacity: 2 * HALF,
            program_once: false,
        };
        Disk::new(Box::new(MemDevice::new(geo)), None)
    }

    fn sector(disk: &mut Disk, s: u64) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        disk.read(Region::Wal, s * 512, &mut b).unwrap();
        b
    }

    proptest! {
        /// Records of two epochs, then sectors zeroed (a lost write),
        /// scribbled on, or copied elsewhere (a write astray): recovery
        /// and the look at the next epoch answer, never panic, and a log
        /// left whole reads back whole.
        #[test]
        fn recovery_survives_any_log(
            lens in proptest::collection::vec((0usize..1500, any::<bool>()), 0..12),
            next in 0usize..3,
            damage in proptest::collection::vec((0u64..128, 0u64..128, 0u8..3, any::<u8>()), 0..6),
        ) {
            let mut d = disk();
            let mut w = Wal::new(0, 2 * HALF, 512, 1, 4);
            let mut written = 0;
            for (len, flush) in &lens {
                if w.append(&mut d, 4, &vec![7; *len]).is_ok() {
                    written += 1;
                }
                if *flush {
                    w.flushed();
                }
            }
            let mut n = Wal::new(0, 2 * HALF, 512, w.next_seq, 5);
            for _ in 0..next {
                let _ = n.append(&mut d, 4, &[1; 40]);
            }
            for &(at, from, how, byte) in &damage {
                let b = match how {
                    0 => vec![0; 512],
                    1 => vec![byte; 512],
                    _ => sector(&mut d, from),
                };
                d.write(Region::Wal, at * 512, &b).unwrap();
            }
            let mut r = Wal::new(0, 2 * HALF, 512, 1, 4);
            let got = r.recover(&mut d, |_| false);
            let _ = r.next_epoch(&mut d);
            if damage.is_empty() {
                prop_assert_eq!(got.map(|g| g.len()).ok(), Some(written));
            }
        }
    }
}
