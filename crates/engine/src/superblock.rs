//! Checkpoints: two copies ("slots") at the start of the device, written
//! alternately, each with a checksum and a sequence number; opening picks
//! the newest valid one, so a torn checkpoint write leaves the previous one.
//!
//! Slot header (32 bytes): magic, format version, store kind, sequence
//! number, payload length, crc32c over the header's first 28 bytes and the
//! payload. The payload is [`Checkpoint::encode`].

use crate::error::{corrupt, Error, Location, Result, Structure};
use crate::io::{Disk, Region};
use crate::le::{u32_at, u64_at};
use crate::options::{IplGeometry, Placement, StoreKind};

const MAGIC: u64 = u64::from_le_bytes(*b"FLASHKV\0");
/// Version 3 added the log's home region (a log outgrown by a batch moves
/// to a larger region and back) and the carry record (kind 6) in the log;
/// version 2 added the log device's id after `wal_seq`. Slots of versions
/// 1 and 2 are still read (their log is at home).
pub const FORMAT_VERSION: u8 = 3;
const HDR: usize = 32;
/// Bytes reserved for each checkpoint slot (rounded up to the erase unit).
pub const SLOT_BYTES: u64 = 1 << 20;
/// Bytes of a payload before the store's state: four u32 and thirteen u64.
const FIXED: usize = 4 * 4 + 13 * 8;
/// Bytes at the start of a device that must be zero for it to count as blank.
const BLANK_CHECK: u64 = 64 << 10;

/// Where the regions of a store lie on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub slot_len: u64,
    /// The log's region now (both halves).
    pub wal_start: u64,
    pub wal_len: u64,
    pub data_start: u64,
    pub data_len: u64,
    /// The region the log was made in: between the slots and the page
    /// store, or at the start of a log device. A batch larger than half of
    /// it moves the log to a larger region at the top of the device; the
    /// log comes back once it fits again.
    pub home_start: u64,
    pub home_len: u64,
}

impl Layout {
    /// The regions of a layout this build writes lie in order without
    /// overlapping: two slots, the log (unless on its own device), the page
    /// store.
    pub fn check(&self) {
        assert!(
            self.slot_len >= SLOT_BYTES,
            "a slot holds {SLOT_BYTES} bytes"
        );
        assert!(
            self.data_start >= 2 * self.slot_len && self.data_len > 0,
            "the page store follows the slots: {self:?}"
        );
        assert!(self.wal_len > 0, "a store has a log: {self:?}");
        assert!(
            self.home_len > 0 && (self.at_home() || self.wal_len > self.home_len),
            "a log away from home is larger than its home: {self:?}"
        );
    }

    /// Whether the log is in its home region.
    pub fn at_home(&self) -> bool {
        (self.wal_start, self.wal_len) == (self.home_start, self.home_len)
    }
}

/// Everything a checkpoint records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub seq: u64,
    pub store: StoreKind,
    pub page_size: u32,
    pub layout: Layout,
    pub root: u64,
    pub next_page: u64,
    pub next_auto: u64,
    pub free_head: u64,
    pub wal_seq: u64,
    /// Id of the device the log is on when it has one of its own (its
    /// header carries the same id); 0: the log is on the store's device.
    pub log_id: u64,
    pub store_state: Vec<u8>,
}

/// Why a checkpoint's payload does not decode.
type Malformed = &'static str;

struct Reader<'a>(&'a [u8]);
impl Reader<'_> {
    fn take(&mut self, n: usize) -> std::result::Result<&[u8], Malformed> {
        if self.0.len() < n {
            return Err("payload truncated");
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u32(&mut self) -> std::result::Result<u32, Malformed> {
        Ok(u32_at(self.take(4)?, 0))
    }
    fn u64(&mut self) -> std::result::Result<u64, Malformed> {
        Ok(u64_at(self.take(8)?, 0))
    }
}

/// Whether `head` is what a write of a superblock over zeros leaves when
/// torn inside its magic: a proper prefix of the magic, then zeros.
fn torn_magic(head: &[u8]) -> bool {
    debug_assert!(head.len() >= 8, "a sector holds the magic");
    let magic = MAGIC.to_le_bytes();
    let k = head.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    k < magic.len() && head[..k] == magic[..k]
}

/// A two-device store's placement in the checkpoint (the field an
/// in-page-logging store keeps its pages per unit in).
fn placement_code(p: Placement) -> u32 {
    match p {
        Placement::IndexOnFast => 1,
        Placement::HotCold => 2,
    }
}

impl Checkpoint {
    fn encode(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(FIXED + self.store_state.len());
        let (ppu, nlog, spp) = match self.store {
            StoreKind::InPlace => (0, 0, 0),
            StoreKind::TwoDevice(p) => (placement_code(p), 0, 0),
            StoreKind::InPageLogging(g) => (
                g.pages_per_unit,
                g.log_sectors,
                g.sectors_per_page.unwrap_or(0),
            ),
        };
        for v in [self.page_size, ppu, nlog, spp] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        let l = &self.layout;
        for v in [
            l.slot_len,
            l.wal_start,
            l.wal_len,
            l.data_start,
            l.data_len,
            self.root,
            self.next_page,
            self.next_auto,
            self.free_head,
            self.wal_seq,
            self.log_id,
            l.home_start,
            l.home_len,
        ] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p.extend_from_slice(&self.store_state);
        debug_assert_eq!(
            p.len(),
            FIXED + self.store_state.len(),
            "the fixed fields' length"
        );
        p
    }

    fn decode(
        version: u8,
        kind: u8,
        seq: u64,
        b: &[u8],
    ) -> std::result::Result<Checkpoint, Malformed> {
        let mut r = Reader(b);
        let page_size = r.u32()?;
        let (ppu, nlog, spp) = (r.u32()?, r.u32()?, r.u32()?);
        let store = match kind {
            1 => StoreKind::InPlace,
            2 => StoreKind::InPageLogging(IplGeometry {
                page_size,
                pages_per_unit: ppu,
                log_sectors: nlog,
                sectors_per_page: (spp != 0).then_some(spp),
            }),
            3 => StoreKind::TwoDevice(match ppu {
                1 => Placement::IndexOnFast,
                2 => Placement::HotCold,
                _ => return Err("unknown placement of a two-device store"),
            }),
            _ => return Err("unknown page store"),
        };
        let (slot_len, wal_start, wal_len) = (r.u64()?, r.u64()?, r.u64()?);
        let (data_start, data_len) = (r.u64()?, r.u64()?);
        let (root, next_page, next_auto) = (r.u64()?, r.u64()?, r.u64()?);
        let (free_head, wal_seq) = (r.u64()?, r.u64()?);
        let log_id = if version >= 2 { r.u64()? } else { 0 };
        let (home_start, home_len) = match version {
            3.. => (r.u64()?, r.u64()?),
            _ => (wal_start, wal_len),
        };
        let layout = Layout {
            slot_len,
            wal_start,
            wal_len,
            data_start,
            data_len,
            home_start,
            home_len,
        };
        Ok(Checkpoint {
            seq,
            store,
            page_size,
            layout,
            root,
            next_page,
            next_auto,
            free_head,
            wal_seq,
            log_id,
            store_state: r.0.to_vec(),
        })
    }

    /// Writes this checkpoint into slot `seq % 2` and makes it durable.
    pub fn write(&self, disk: &mut Disk) -> Result<()> {
        let payload = self.encode();
        let sector = u64::from(disk.geo.sector_size);
        let total = ((HDR + payload.len()) as u64).div_ceil(sector) * sector;
        if total > self.layout.slot_len {
            return Err(Error::Full("checkpoint larger than its slot"));
        }
        self.layout.check();
        debug_assert_eq!(
            Self::decode(FORMAT_VERSION, self.kind_byte(), self.seq, &payload).as_ref(),
            Ok(self),
            "a checkpoint decodes to itself"
        );
        let mut buf = vec![0u8; total as usize];
        buf[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        buf[8] = FORMAT_VERSION;
        buf[9] = self.kind_byte();
        buf[16..24].copy_from_slice(&self.seq.to_le_bytes());
        buf[24..28].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        buf[HDR..HDR + payload.len()].copy_from_slice(&payload);
        let crc = crc32c::crc32c_append(crc32c::crc32c(&buf[0..28]), &payload);
        buf[28..32].copy_from_slice(&crc.to_le_bytes());
        let off = (self.seq % 2) * self.layout.slot_len;
        if let Some(eu) = disk.geo.erase_unit.filter(|_| disk.geo.program_once) {
            let mut u = off;
            while u < off + total {
                if disk.programmed(u, eu) {
                    disk.erase(Region::Meta, u, eu)?;
                }
                u += eu;
            }
        }
        // Everything the checkpoint describes must be durable before it is.
        disk.flush()?;
        disk.write(Region::Meta, off, &buf)?;
        disk.flush()
    }

    /// The newest valid checkpoint; `Ok(None)` on a blank device, or one
    /// where the first write of a new store (its first checkpoint, in slot
    /// 0, before anything was committed) was torn.
    pub fn read_latest(disk: &mut Disk, slot_len: u64) -> Result<Option<Checkpoint>> {
        let sector = u64::from(disk.geo.sector_size);
        let mut best: Option<Checkpoint> = None;
        // Per slot: its first sector is all zeros.
        let mut blank = [true; 2];
        // Slot 0 holds what a torn first checkpoint can leave.
        let mut torn_first = false;
        let mut first_err = None;
        for slot in 0..2u64 {
            let off = slot * slot_len;
            if off + sector > disk.geo.capacity {
                break;
            }
            let mut head = vec![0u8; sector as usize];
            disk.read(Region::Meta, off, &mut head)?;
            if head.iter().all(|&b| b == 0) {
                continue;
            }
            blank[slot as usize] = false;
            let magic_prefix = torn_magic(&head);
            match Self::parse(disk, off, slot_len, head) {
                Ok(c) => {
                    if !matches!(&best, Some(b) if b.seq >= c.seq) {
                        best = Some(c);
                    }
                }
                Err(e) => {
                    torn_first |= slot == 0 && (magic_prefix || matches!(e, Error::Corrupt { .. }));
                    first_err = first_err.or(Some(e));
                }
            }
        }
        let fresh = blank[1] && (blank[0] || torn_first) && Self::blank(disk, sector)?;
        debug_assert!(
            best.is_none() || !blank[0] || !blank[1],
            "a checkpoint was read from a slot"
        );
        match (best, first_err) {
            (Some(c), _) => Ok(Some(c)),
            (None, _) if fresh => Ok(None),
            // The magic matched but the rest did not: ours, and damaged.
            (None, Some(e @ (Error::Version { .. } | Error::Corrupt { .. }))) => Err(e),
            (None, _) => Err(Error::NotAStore),
        }
    }

    /// Whether the start of the device after its first `skip` bytes is all
    /// zeros, as on a device never written: a new store may be made there.
    /// Foreign formats put their own headers in this range (partition
    /// tables, file-system superblocks), so they are never taken for blank.
    fn blank(disk: &mut Disk, skip: u64) -> Result<bool> {
        let len = BLANK_CHECK.min(disk.geo.capacity);
        let len = len - len % u64::from(disk.geo.sector_size);
        if len <= skip {
            return Ok(true);
        }
        let mut buf = vec![0u8; (len - skip) as usize];
        disk.read(Region::Meta, skip, &mut buf)?;
        Ok(buf.iter().all(|&b| b == 0))
    }

    /// The header's page-store byte.
    fn kind_byte(&self) -> u8 {
        match self.store {
            StoreKind::InPlace => 1,
            StoreKind::InPageLogging(_) => 2,
            StoreKind::TwoDevice(_) => 3,
        }
    }

    fn parse(disk: &mut Disk, off: u64, slot_len: u64, head: Vec<u8>) -> Result<Checkpoint> {
        assert!(head.len() >= HDR, "a sector holds the slot header");
        let bad = |why| corrupt(Structure::Checkpoint, Location::Offset(off), why);
        if u64_at(&head, 0) != MAGIC {
            return Err(Error::NotAStore);
        }
        if !(1..=FORMAT_VERSION).contains(&head[8]) {
            return Err(Error::Version {
                what: "superblock",
                found: head[8],
                expected: FORMAT_VERSION,
            });
        }
        let seq = u64_at(&head, 16);
        let plen = u32_at(&head, 24) as usize;
        let sector = head.len() as u64;
        let total = ((HDR + plen) as u64).div_ceil(sector) * sector;
        if total > slot_len || off + total > disk.geo.capacity {
            return Err(bad("length out of range"));
        }
        let mut buf = head;
        buf.resize(total as usize, 0);
        if total > sector {
            disk.read(Region::Meta, off + sector, &mut buf[sector as usize..])?;
        }
        let payload = &buf[HDR..HDR + plen];
        let crc = crc32c::crc32c_append(crc32c::crc32c(&buf[0..28]), payload);
        if crc != u32_at(&buf, 28) {
            return Err(bad("checksum mismatch"));
        }
        let c = Self::decode(buf[8], buf[9], seq, payload).map_err(bad)?;
        if c.layout.slot_len != slot_len {
            return Err(bad("slot size disagrees with the device"));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn checkpoint_decoder_never_panics(kind in 0u8..5, bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            for version in 1..=FORMAT_VERSION {
                let _ = Checkpoint::decode(version, kind, 1, &bytes);
            }
        }
    }

    #[test]
    fn checkpoint_roundtrips() {
        let c = Checkpoint {
            seq: 7,
            store: StoreKind::InPageLogging(IplGeometry::shared()),
            page_size: 8192,
            layout: Layout {
                slot_len: 1 << 20,
                wal_start: 2 << 20,
                wal_len: 1 << 20,
                data_start: 3 << 20,
                data_len: 5 << 20,
                home_start: 2 << 20,
                home_len: 1 << 20,
            },
            root: 3,
            next_page: 9,
            next_auto: 4,
            free_head: 5,
            wal_seq: 11,
            log_id: 99,
            store_state: vec![1, 2, 3],
        };
        let p = c.encode();
        assert_eq!(Checkpoint::decode(FORMAT_VERSION, 2, 7, &p).unwrap(), c);
        for placement in Placement::ALL {
            let c = Checkpoint {
                store: StoreKind::TwoDevice(placement),
                page_size: 4096,
                ..c.clone()
            };
            let p = c.encode();
            assert_eq!(Checkpoint::decode(FORMAT_VERSION, 3, 7, &p).unwrap(), c);
        }
        let mut p = c.encode();
        p[4] = 9; // no such placement
        assert!(Checkpoint::decode(FORMAT_VERSION, 3, 7, &p).is_err());
    }
}
