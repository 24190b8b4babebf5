//! A write-ahead log on a device of its own ([`crate::Db::open_with_log`]).
//!
//! The log device starts with a header naming the store it belongs to (an
//! id the store's checkpoints carry too), so a store is never recovered
//! from another store's log: replaying the wrong log would look like an
//! empty one and silently drop committed batches.
//!
//! Header (first sector): magic "FKVLOG\0\0", version, the id (u64), crc32c
//! of the bytes before it.

use crate::error::{corrupt, Error, Location, Result, Structure};
use crate::io::{Disk, Region};
use crate::le::{u32_at, u64_at};

const MAGIC: u64 = u64::from_le_bytes(*b"FKVLOG\0\0");
const VERSION: u8 = 1;
const BYTES: usize = 21;

/// A new log device id: never 0 (which means "no log device").
pub(crate) fn new_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (t ^ (u64::from(std::process::id()) << 40)) | 1
}

/// Writes the header of a log device for store `id` and makes it durable.
pub(crate) fn write_header(disk: &mut Disk, id: u64) -> Result<()> {
    debug_assert_ne!(id, 0, "0 means the log is on the store's device");
    let mut buf = vec![0u8; disk.log_geo.sector_size as usize];
    assert!(buf.len() >= BYTES, "a sector holds the header");
    buf[0..8].copy_from_slice(&MAGIC.to_le_bytes());
    buf[8] = VERSION;
    buf[9..17].copy_from_slice(&id.to_le_bytes());
    let crc = crc32c::crc32c(&buf[..17]);
    buf[17..BYTES].copy_from_slice(&crc.to_le_bytes());
    if disk.log_programmed(0, buf.len() as u64) {
        let unit = disk.log_geo.erase_unit.unwrap_or(buf.len() as u64);
        disk.erase(Region::Wal, 0, unit)?;
    }
    disk.write(Region::Wal, 0, &buf)?;
    disk.flush()
}

/// Checks that the log device carries the header of store `id`.
pub(crate) fn check_header(disk: &mut Disk, id: u64) -> Result<()> {
    let mut buf = vec![0u8; disk.log_geo.sector_size as usize];
    assert!(buf.len() >= BYTES, "a sector holds the header");
    disk.read(Region::Wal, 0, &mut buf)?;
    if u64_at(&buf, 0) != MAGIC {
        return Err(Error::WrongLogDevice(
            "the log device holds no flashkv log: give the device the store was created with",
        ));
    }
    if u32_at(&buf, 17) != crc32c::crc32c(&buf[..17]) {
        return Err(corrupt(
            Structure::LogDeviceHeader,
            Location::Offset(0),
            "checksum mismatch",
        ));
    }
    if buf[8] != VERSION {
        return Err(Error::Version {
            what: "log device header",
            found: buf[8],
            expected: VERSION,
        });
    }
    if u64_at(&buf, 9) != id {
        return Err(Error::WrongLogDevice(
            "the log device belongs to another store: give the device the store was created with",
        ));
    }
    Ok(())
}
