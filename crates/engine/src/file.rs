//! A store in a file: the file grows as the store does, and one process at
//! a time writes it.
//!
//! The device a file store sees has a fixed *virtual* capacity
//! ([`crate::OptionsBuilder::max_size`]); the file itself is only as long as the
//! highest byte written, and reads past its end return zeros, so a new store
//! of a few pages is a few hundred KiB on disk, not its capacity. Buffered
//! I/O with fdatasync on flush: O_DIRECT would force 4 KiB sectors, and
//! in-page logging writes 512-byte log sectors.
//!
//! A new file's directory is synced before the store is used, so the
//! first durable commit does not depend on a name a power cut could take
//! ([`flashkv_device::sync_parent`]).
//!
//! A `flock` is held for as long as the store is open: exclusive for a
//! writer, shared for a read-only open, so readers may share a store with
//! each other but not with a writer. A refused opener gets
//! [`Error::Locked`], naming the holder's process id where `/proc/locks`
//! tells it. `flock` locks belong to the open file, so two opens in one
//! process exclude each other too.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::sync::Arc;

use flashkv_device::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, Syncer};

use crate::error::{Error, Result};

/// Sector of a file store: what in-page logging's log sectors need.
const SECTOR: u32 = 512;

/// How [`open`] treats the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The file must exist (and hold a store: the caller checks).
    Existing,
    /// The file must be missing or empty.
    Create,
    /// The file must exist; it is opened for reading only, under a shared lock.
    ReadOnly,
}

/// A file holding a store, locked for this process.
pub(crate) struct StoreFile {
    file: File,
    path: PathBuf,
    capacity: u64,
    opened: Instant,
    stats: DeviceStats,
}

fn io_err(path: &Path, e: io::Error) -> Error {
    Error::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn dev_err(path: &Path, e: io::Error) -> DeviceError {
    DeviceError::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Opens the file at `path` as a device of `capacity` bytes. Returns the
/// device and whether this call created the file (so a failed creation can
/// remove it again). Nothing is written here.
pub(crate) fn open(path: &Path, capacity: u64, mode: Mode) -> Result<(StoreFile, bool)> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(path, e)),
    };
    if let Some(m) = &meta {
        if !m.is_file() {
            return Err(Error::NotAStoreFile {
                path: path.to_path_buf(),
                why: "not a regular file".into(),
            });
        }
    }
    let created = meta.is_none();
    match (mode, &meta) {
        (Mode::Existing | Mode::ReadOnly, None) => {
            return Err(Error::NoStore {
                path: path.to_path_buf(),
            })
        }
        (Mode::Create, Some(m)) if m.len() > 0 => {
            return Err(Error::Exists {
                path: path.to_path_buf(),
            })
        }
        _ => {}
    }
    let file = OpenOptions::new()
        .read(true)
        .write(mode != Mode::ReadOnly)
        .create_new(created)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let capacity = capacity - capacity % u64::from(SECTOR);
    let dev = StoreFile {
        file,
        path: path.to_path_buf(),
        capacity,
        opened: Instant::now(),
        stats: DeviceStats::default(),
    };
    if let Err(e) = dev.lock(mode != Mode::ReadOnly) {
        drop(dev);
        if created {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    if mode == Mode::Create && dev.file.metadata().map_err(|e| io_err(path, e))?.len() > 0 {
        // Someone wrote the file between our check and our lock.
        return Err(Error::Exists {
            path: path.to_path_buf(),
        });
    }
    if created {
        // The new name is durable before the first commit that needs it.
        if let Err(e) = flashkv_device::sync_parent(path) {
            drop(dev);
            let _ = std::fs::remove_file(path);
            return Err(Error::Io(e));
        }
    }
    Ok((dev, created))
}

/// Cuts a store's file short at a byte offset: what lay past it reads as
/// zeros, as it did before it was written.
pub(crate) type Shrink = Box<dyn Fn(u64) -> io::Result<()> + Send + Sync>;

impl StoreFile {
    /// A reader of this file for readers sharing the store (a second
    /// handle on it): reads past its end are zeros, as through the store.
    pub fn reader(&self) -> Result<crate::io::ReadAt> {
        let file = self.file.try_clone().map_err(|e| io_err(&self.path, e))?;
        Ok(Arc::new(move |offset, buf: &mut [u8]| {
            let mut got = 0;
            while got < buf.len() {
                match file.read_at(&mut buf[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            buf[got..].fill(0);
            Ok(())
        }))
    }

    /// A [`Shrink`] for this file (a second handle on it).
    pub fn shrinker(&self) -> Result<Shrink> {
        let file = self.file.try_clone().map_err(|e| io_err(&self.path, e))?;
        Ok(Box::new(move |len| file.set_len(len)))
    }

    /// Takes the file's lock, exclusive or shared, without waiting.
    fn lock(&self, exclusive: bool) -> Result<()> {
        let how = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        // SAFETY: flock only reads its integer arguments; the descriptor is
        // owned by `self.file` and open for the duration of the call.
        let rc = unsafe { libc::flock(self.file.as_raw_fd(), how | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let ino = self.file.metadata().map(|m| m.ino()).unwrap_or(0);
            return Err(Error::Locked {
                path: self.path.clone(),
                holder: lock_holder(ino),
            });
        }
        Err(io_err(&self.path, e))
    }

    /// The file's length now.
    pub fn len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| io_err(&self.path, e))?
            .len())
    }

    fn now(&self) -> Nanos {
        self.opened.elapsed().as_nanos() as Nanos
    }

    fn done(&mut self, start: Nanos) -> Completion {
        let end = self.now().max(start);
        self.stats.busy_ns += end - start;
        Completion {
            start,
            end,
            energy_nj: 0,
        }
    }

    fn dev_err(&self, e: io::Error) -> DeviceError {
        dev_err(&self.path, e)
    }
}

/// The process holding a `flock` on the file with inode `ino`, from
/// `/proc/locks` ("1: FLOCK ADVISORY WRITE 1234 08:01:5678 0 EOF").
fn lock_holder(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let i = f.iter().position(|w| *w == "FLOCK")?;
        let pid = f.get(i + 3)?.parse().ok()?;
        let inode: u64 = f.get(i + 4)?.rsplit(':').next()?.parse().ok()?;
        (inode == ino).then_some(pid)
    })
}

impl BlockDevice for StoreFile {
    fn geometry(&self) -> Geometry {
        Geometry {
            sector_size: SECTOR,
            erase_unit: None,
            capacity: self.capacity,
            program_once: false,
        }
    }

    fn read_at(
        &mut self,
        _at: Nanos,
        offset: u64,
        buf: &mut [u8],
    ) -> flashkv_device::Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let start = self.now();
        // Past the end of the file the store has written nothing: zeros.
        let mut got = 0;
        while got < buf.len() {
            match self.file.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.dev_err(e)),
            }
        }
        debug_assert!(got <= buf.len(), "a read fills at most its buffer");
        buf[got..].fill(0);
        self.stats.host_reads += 1;
        self.stats.host_read_bytes += buf.len() as u64;
        Ok(self.done(start))
    }

    fn write_at(
        &mut self,
        _at: Nanos,
        offset: u64,
        buf: &[u8],
    ) -> flashkv_device::Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let start = self.now();
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| self.dev_err(e))?;
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += buf.len() as u64;
        Ok(self.done(start))
    }

    fn flush_at(&mut self, _at: Nanos) -> flashkv_device::Result<Completion> {
        let start = self.now();
        self.file.sync_data().map_err(|e| self.dev_err(e))?;
        self.stats.flushes += 1;
        Ok(self.done(start))
    }

    fn trim_at(&mut self, _at: Nanos, offset: u64, len: u64) -> flashkv_device::Result<Completion> {
        self.geometry().check(offset, len)?;
        let start = self.now();
        let end = self.file.metadata().map_err(|e| self.dev_err(e))?.len();
        let len = len.min(end.saturating_sub(offset));
        if len > 0 {
            punch_hole(&self.file, offset, len).map_err(|e| self.dev_err(e))?;
        }
        self.stats.trims += 1;
        Ok(self.done(start))
    }

    fn clock(&self) -> Nanos {
        self.now()
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }

    fn syncer(&self) -> Option<Syncer> {
        // A second handle on the same open file (the lock stays with the
        // first): fdatasync through it covers every write made through this one.
        let file = self.file.try_clone().ok()?;
        let path = self.path.clone();
        Some(Arc::new(move || {
            file.sync_data().map_err(|e| dev_err(&path, e))
        }))
    }
}

/// Gives `[offset, offset+len)` back to the file system (it reads as zeros);
/// where the file system cannot, writes zeros.
fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<()> {
    if flashkv_device::punch_hole(file, offset, len) {
        return Ok(());
    }
    let zeros = vec![0u8; len.min(1 << 20) as usize];
    let mut pos = offset;
    while pos < offset + len {
        let k = (offset + len - pos).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..k], pos)?;
        pos += k as u64;
    }
    Ok(())
}
