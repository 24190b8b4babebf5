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
//! Record header (32 bytes): magic, version, kind, sequence number, payload
//! length, crc32c over the header's other 28 bytes and the payload, epoch.

use crate::error::{Error, Result};
use crate::io::{Disk, Region};

const MAGIC: u32 = 0x4C57_4B46; // "FKWL"
const VERSION: u8 = 1;
const HDR: usize = 32;

pub(crate) struct Wal {
    /// The region: two halves, epochs alternate between them.
    region: u64,
    /// The current half.
    start: u64,
    len: u64,
    pos: u64,
    /// Sequence number of the next record.
    pub next_seq: u64,
    sector: u64,
    /// Bytes from `start` already erased (program-once devices) since the last reset.
    clean_to: u64,
    epoch: u64,
}

/// Checksum of a record: header without its crc field, then the payload.
fn record_crc(rec: &[u8]) -> u32 {
    let plen = u32::from_le_bytes(rec[16..20].try_into().unwrap()) as usize;
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
        Wal {
            region: start,
            start: start + (epoch % 2) * (len / 2),
            len: len / 2,
            pos: 0,
            next_seq,
            sector,
            clean_to: 0,
            epoch,
        }
    }

    /// Bytes a record with `payload` bytes takes.
    pub fn record_len(&self, payload: usize) -> u64 {
        round_up((HDR + payload) as u64, self.sector)
    }

    pub fn remaining(&self) -> u64 {
        self.len - self.pos
    }

    pub fn capacity(&self) -> u64 {
        self.len
    }

    /// Writes a record (not yet durable: the caller flushes the device to commit).
    pub fn append(&mut self, disk: &mut Disk, kind: u8, payload: &[u8]) -> Result<()> {
        let total = self.record_len(payload.len());
        if self.pos + total > self.len {
            return Err(Error::Full("write-ahead log"));
        }
        let mut buf = vec![0u8; total as usize];
        buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        buf[4] = VERSION;
        buf[5] = kind;
        buf[8..16].copy_from_slice(&self.next_seq.to_le_bytes());
        buf[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        buf[24..32].copy_from_slice(&self.epoch.to_le_bytes());
        buf[HDR..HDR + payload.len()].copy_from_slice(payload);
        let crc = record_crc(&buf);
        buf[20..24].copy_from_slice(&crc.to_le_bytes());
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
        disk.write(Region::Wal, self.start + self.pos, &buf)?;
        self.pos += total;
        self.next_seq += 1;
        disk.logged += 1;
        Ok(())
    }

    /// The record at `pos` if it is valid and the next in sequence:
    /// (kind, payload, bytes taken).
    fn read_at(&self, disk: &mut Disk, pos: u64) -> Result<Option<(u8, Vec<u8>, u64)>> {
        if pos + self.sector > self.len {
            return Ok(None);
        }
        let mut head = vec![0u8; self.sector as usize];
        disk.read(Region::Wal, self.start + pos, &mut head)?;
        let ok = u32::from_le_bytes(head[0..4].try_into().unwrap()) == MAGIC
            && head[4] == VERSION
            && u64::from_le_bytes(head[8..16].try_into().unwrap()) == self.next_seq
            && u64::from_le_bytes(head[24..32].try_into().unwrap()) == self.epoch;
        if !ok {
            return Ok(None);
        }
        let plen = u32::from_le_bytes(head[16..20].try_into().unwrap()) as usize;
        let total = self.record_len(plen);
        if pos + total > self.len {
            return Ok(None);
        }
        let mut buf = head;
        buf.resize(total as usize, 0);
        if total > self.sector {
            let s = self.sector as usize;
            disk.read(Region::Wal, self.start + pos + self.sector, &mut buf[s..])?;
        }
        buf.truncate(HDR + plen);
        if record_crc(&buf) != u32::from_le_bytes(buf[20..24].try_into().unwrap()) {
            return Ok(None);
        }
        Ok(Some((buf[5], buf.split_off(HDR), total)))
    }

    /// Reads the valid records from the start of the region, beginning with
    /// sequence number `self.next_seq`, and positions the log after them.
    pub fn recover(&mut self, disk: &mut Disk) -> Result<Vec<(u8, Vec<u8>)>> {
        let mut out = Vec::new();
        self.pos = 0;
        while let Some((kind, payload, total)) = self.read_at(disk, self.pos)? {
            out.push((kind, payload));
            self.pos += total;
            self.next_seq += 1;
        }
        // Appends must never erase the units holding these records.
        self.clean_to = match disk.log_geo.erase_unit {
            Some(eu) if disk.log_geo.program_once => self.pos.div_ceil(eu) * eu,
            _ => 0,
        };
        Ok(out)
    }

    /// Offset and length of the records written in the current epoch.
    pub fn written(&self) -> (u64, u64) {
        (self.start, self.pos)
    }

    /// Starts over in a new epoch (after a checkpoint), in the other half of
    /// the region: the records of the previous epoch stay intact until the
    /// checkpoint that replaces them is durable.
    pub fn reset(&mut self, epoch: u64) {
        self.start = self.region + (epoch % 2) * self.len;
        self.pos = 0;
        self.clean_to = 0;
        self.epoch = epoch;
    }
}
