//! Opening a store in a file.
//!
//! A plain file behind the [`BlockDevice`] trait: pread / pwrite, flush =
//! fdatasync, 512-byte sectors, no erase units. (The device crate's
//! `FileDevice` supersedes it once it lands.)

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use flashkv_device::{BlockDevice, Completion, DeviceStats, Geometry, Nanos};

use crate::error::Result;

struct PlainFile {
    file: File,
    geo: Geometry,
    stats: DeviceStats,
    opened: Instant,
}

/// A device over the file at `path`: a new or empty file is sized to
/// `size`; an existing one keeps its length (so a truncated store is found
/// out, not silently extended).
pub(crate) fn open(path: &Path, size: u64) -> Result<Box<dyn BlockDevice>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let len = file.metadata()?.len();
    let size = if len == 0 {
        let size = size - size % 512;
        file.set_len(size)?;
        size
    } else {
        len - len % 512
    };
    Ok(Box::new(PlainFile {
        file,
        geo: Geometry {
            sector_size: 512,
            erase_unit: None,
            capacity: size,
            program_once: false,
        },
        stats: DeviceStats::default(),
        opened: Instant::now(),
    }))
}

impl PlainFile {
    fn done(&self, start: Nanos) -> Completion {
        let end = self.clock();
        Completion {
            start,
            end,
            energy_nj: 0,
        }
    }
}

impl BlockDevice for PlainFile {
    fn geometry(&self) -> Geometry {
        self.geo
    }
    fn read_at(
        &mut self,
        _: Nanos,
        offset: u64,
        buf: &mut [u8],
    ) -> flashkv_device::Result<Completion> {
        self.geo.check(offset, buf.len() as u64)?;
        let start = self.clock();
        self.file.read_exact_at(buf, offset)?;
        self.stats.host_reads += 1;
        self.stats.host_read_bytes += buf.len() as u64;
        Ok(self.done(start))
    }
    fn write_at(
        &mut self,
        _: Nanos,
        offset: u64,
        buf: &[u8],
    ) -> flashkv_device::Result<Completion> {
        self.geo.check(offset, buf.len() as u64)?;
        let start = self.clock();
        self.file.write_all_at(buf, offset)?;
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += buf.len() as u64;
        Ok(self.done(start))
    }
    fn flush_at(&mut self, _: Nanos) -> flashkv_device::Result<Completion> {
        let start = self.clock();
        self.file.sync_data()?;
        self.stats.flushes += 1;
        Ok(self.done(start))
    }
    fn trim_at(&mut self, _: Nanos, _: u64, _: u64) -> flashkv_device::Result<Completion> {
        Err(flashkv_device::DeviceError::Unsupported(
            "trim on a plain file",
        ))
    }
    fn clock(&self) -> Nanos {
        self.opened.elapsed().as_nanos() as Nanos
    }
    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }
}
