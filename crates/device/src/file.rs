//! Real files and block devices.
//!
//! I/O is positioned (pread/pwrite). With `direct` the file is opened with
//! O_DIRECT so the page cache does not hide the device; every transfer then
//! goes through a 4096-aligned bounce buffer, because callers' buffers have
//! no particular alignment. File systems that refuse O_DIRECT (tmpfs, some
//! network and FUSE file systems) get buffered I/O and a warning the caller
//! may show ([`FileDevice::warning`]); this library never prints.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, Result};

/// O_DIRECT alignment: buffers, offsets and lengths are multiples of it.
const DIRECT_ALIGN: usize = 4096;
/// Largest piece moved through the bounce buffer at once.
const BOUNCE_MAX: usize = 1 << 20;

/// How to open a [`FileDevice`].
#[derive(Debug, Clone)]
pub struct FileOptions {
    /// Size of a file that does not exist yet (or is empty). An existing
    /// file or block device keeps its own size.
    pub capacity: u64,
    /// Create the file when it is missing.
    pub create: bool,
    /// Bypass the page cache with O_DIRECT where the file system allows it.
    pub direct: bool,
    /// Open for reading only; writes and trims are refused.
    pub read_only: bool,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            capacity: 0,
            create: true,
            direct: true,
            read_only: false,
        }
    }
}

/// A real file or block device behind the [`BlockDevice`] trait. Its clock
/// is wall time since it was opened; its stats hold the host counters and
/// the wall time spent in I/O.
#[derive(Debug)]
pub struct FileDevice {
    file: File,
    path: PathBuf,
    geometry: Geometry,
    direct: bool,
    read_only: bool,
    warning: Option<String>,
    opened: Instant,
    stats: DeviceStats,
    bounce: Vec<u8>,
}

fn with_path(path: &Path, e: io::Error) -> DeviceError {
    DeviceError::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// What is at a path before opening it, and the rules for creating it.
fn existing(path: &Path, opts: &FileOptions) -> Result<Option<std::fs::Metadata>> {
    let existing = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(with_path(path, e)),
    };
    if existing.is_none() {
        if !opts.create {
            return Err(with_path(
                path,
                io::Error::new(io::ErrorKind::NotFound, "no such file (create is off)"),
            ));
        }
        if opts.read_only || opts.capacity == 0 {
            return Err(DeviceError::BadInput(format!(
                "{}: does not exist; creating it needs a capacity and write access",
                path.display()
            )));
        }
    }
    Ok(existing)
}

/// Opens one path, with or without O_DIRECT.
struct Opener<'a> {
    path: &'a Path,
    opts: &'a FileOptions,
    /// The path does not exist yet.
    create: bool,
}

impl Opener<'_> {
    fn open(&self, direct: bool) -> Result<File> {
        let mut o = OpenOptions::new();
        o.read(true).write(!self.opts.read_only).create(self.create);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        o.open(self.path).map_err(|e| with_path(self.path, e))
    }

    /// The file, with O_DIRECT if asked for and the file system takes it
    /// at open; else buffered, with the warning why.
    fn open_direct(&self) -> Result<(File, bool, Option<String>)> {
        if !self.opts.direct {
            return Ok((self.open(false)?, false, None));
        }
        match self.open(true) {
            Ok(f) => Ok((f, true, None)),
            Err(DeviceError::Io(e)) if e.raw_os_error() == Some(libc::EINVAL) => {
                let warning = no_direct(self.path, &e);
                Ok((self.open(false)?, false, Some(warning)))
            }
            Err(e) => Err(e),
        }
    }

    /// The size of the file or block device; an empty new file gets the
    /// capacity asked for.
    fn size(&self, file: &mut File, block_dev: bool) -> Result<u64> {
        let at = |e| with_path(self.path, e);
        if block_dev {
            return file.seek(SeekFrom::End(0)).map_err(at);
        }
        let size = file.metadata().map_err(at)?.size();
        let opts = self.opts;
        if size == 0 && opts.capacity > 0 && !opts.read_only {
            file.set_len(opts.capacity).map_err(at)?;
            return Ok(opts.capacity);
        }
        Ok(size)
    }

    /// Some file systems take O_DIRECT at open and refuse it at the first
    /// transfer: reads one aligned block; the warning if it was refused.
    fn refuses_direct(&self, file: &File, bounce: &mut Vec<u8>) -> Result<Option<String>> {
        let buf = aligned(bounce, DIRECT_ALIGN);
        match file.read_exact_at(buf, 0) {
            Ok(()) => Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(Some(no_direct(self.path, &e))),
            Err(e) => Err(with_path(self.path, e)),
        }
    }
}

impl FileDevice {
    /// Opens (or creates) the file or block device at `path`.
    pub fn open(path: impl AsRef<Path>, opts: &FileOptions) -> Result<Self> {
        let path = path.as_ref();
        let existing = existing(path, opts)?;
        let block_dev = existing
            .as_ref()
            .is_some_and(|m| m.file_type().is_block_device());
        if block_dev && !opts.read_only {
            refuse_if_mounted(path)?;
        }
        let opener = Opener {
            path,
            opts,
            create: existing.is_none(),
        };
        let (mut file, mut direct, mut warning) = opener.open_direct()?;
        let size = opener.size(&mut file, block_dev)?;
        if opener.create {
            // Its length and its name are durable before anything written
            // to it is: a device that a power cut shrank to nothing, or
            // took away, would lose every write acknowledged on it.
            file.sync_all().map_err(|e| with_path(path, e))?;
            crate::sync_parent(path).map_err(DeviceError::Io)?;
        }
        let mut bounce = Vec::new();
        if direct && size >= DIRECT_ALIGN as u64 {
            if let Some(w) = opener.refuses_direct(&file, &mut bounce)? {
                (file, direct, warning) = (opener.open(false)?, false, Some(w));
            }
        }
        debug_assert!(!direct || opts.direct, "O_DIRECT only when asked for");
        let sector = if direct { DIRECT_ALIGN as u64 } else { 512 };
        let capacity = size / sector * sector;
        if capacity == 0 {
            return Err(DeviceError::BadInput(format!(
                "{}: its {size} bytes hold no whole {sector}-byte sector",
                path.display()
            )));
        }
        debug_assert!(capacity <= size && capacity % sector == 0);
        Ok(FileDevice {
            file,
            path: path.to_path_buf(),
            geometry: Geometry {
                sector_size: sector as u32,
                erase_unit: None,
                capacity,
                program_once: false,
            },
            direct,
            read_only: opts.read_only,
            warning,
            opened: Instant::now(),
            stats: DeviceStats::default(),
            bounce,
        })
    }

    /// Whether I/O bypasses the page cache (O_DIRECT).
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// Why O_DIRECT was asked for but not used, for the caller to show.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// The path the device was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn now(&self) -> Nanos {
        self.opened.elapsed().as_nanos() as Nanos
    }

    fn writable(&self, what: &'static str) -> Result<()> {
        if self.read_only {
            Err(DeviceError::Unsupported(what))
        } else {
            Ok(())
        }
    }

    fn timed(&mut self, start: Nanos) -> Completion {
        let end = self.now().max(start);
        debug_assert!(end >= start);
        self.stats.busy_ns += end - start;
        Completion {
            start,
            end,
            energy_nj: 0,
        }
    }

    fn pread(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        debug_assert!(
            !self.direct || offset % DIRECT_ALIGN as u64 == 0,
            "O_DIRECT offsets are aligned"
        );
        if !self.direct || is_aligned(buf) {
            return self.file.read_exact_at(buf, offset);
        }
        for (i, piece) in buf.chunks_mut(BOUNCE_MAX).enumerate() {
            let b = aligned(&mut self.bounce, piece.len());
            self.file
                .read_exact_at(b, offset + (i * BOUNCE_MAX) as u64)?;
            piece.copy_from_slice(b);
        }
        Ok(())
    }

    fn pwrite(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        debug_assert!(
            !self.read_only,
            "writes to a read-only device are refused first"
        );
        debug_assert!(
            !self.direct || offset % DIRECT_ALIGN as u64 == 0,
            "O_DIRECT offsets are aligned"
        );
        if !self.direct || is_aligned(buf) {
            return self.file.write_all_at(buf, offset);
        }
        for (i, piece) in buf.chunks(BOUNCE_MAX).enumerate() {
            let b = aligned(&mut self.bounce, piece.len());
            b.copy_from_slice(piece);
            self.file
                .write_all_at(b, offset + (i * BOUNCE_MAX) as u64)?;
        }
        Ok(())
    }
}

/// Deallocates `[offset, offset+len)` of `file` (it then reads as zeros,
/// and the file keeps its length); false where the file system cannot.
pub fn punch_hole(file: &File, offset: u64, len: u64) -> bool {
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return false;
    };
    // SAFETY: fallocate only reads its integer arguments; the descriptor is
    // owned by `file` and open for the duration of the call.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            n,
        )
    };
    rc == 0
}

fn no_direct(path: &Path, e: &io::Error) -> String {
    format!(
        "{}: O_DIRECT is not supported here ({e}); using buffered I/O, so the page cache serves repeated reads",
        path.display()
    )
}

/// Whether O_DIRECT can use `buf` itself, sparing a copy through the bounce
/// buffer (callers that care, such as the profiler, allocate aligned buffers).
fn is_aligned(buf: &[u8]) -> bool {
    buf.as_ptr().align_offset(DIRECT_ALIGN) == 0 && buf.len() % DIRECT_ALIGN == 0
}

/// A `len`-byte slice of `buf` starting on a [`DIRECT_ALIGN`] boundary,
/// growing `buf` as needed (allocation happens only for a new largest size).
fn aligned(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buf.len() < len + DIRECT_ALIGN {
        *buf = vec![0u8; len + DIRECT_ALIGN];
    }
    let start = buf.as_ptr().align_offset(DIRECT_ALIGN);
    debug_assert!(start < DIRECT_ALIGN && start + len <= buf.len());
    &mut buf[start..start + len]
}

/// Refuses a block device that is mounted, or one of whose partitions is.
fn refuse_if_mounted(path: &Path) -> Result<()> {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else {
        return Ok(());
    };
    let dev = std::fs::canonicalize(path).map_err(|e| with_path(path, e))?;
    let dev = dev.to_string_lossy();
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(source), Some(target)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !source.starts_with('/') {
            continue;
        }
        let Ok(source) = std::fs::canonicalize(source) else {
            continue;
        };
        if source.to_string_lossy().starts_with(dev.as_ref()) {
            return Err(DeviceError::Io(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "{}: {} is mounted on {target}; refusing to open it for writing (unmount it, or open read-only)",
                    path.display(),
                    source.display()
                ),
            )));
        }
    }
    Ok(())
}

impl BlockDevice for FileDevice {
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn syncer(&self) -> Option<crate::Syncer> {
        // A second handle on the same open file: fdatasync through it
        // covers every write made through this one.
        let file = self.file.try_clone().ok().filter(|_| !self.read_only)?;
        let path = self.path.clone();
        Some(std::sync::Arc::new(move || {
            file.sync_data().map_err(|e| with_path(&path, e))
        }))
    }

    fn read_at(&mut self, _at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        self.geometry.check(offset, buf.len() as u64)?;
        let start = self.now();
        self.pread(offset, buf)
            .map_err(|e| with_path(&self.path, e))?;
        self.stats.host_reads += 1;
        self.stats.host_read_bytes += buf.len() as u64;
        Ok(self.timed(start))
    }

    fn write_at(&mut self, _at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.writable("write: device opened read-only")?;
        self.geometry.check(offset, buf.len() as u64)?;
        let start = self.now();
        self.pwrite(offset, buf)
            .map_err(|e| with_path(&self.path, e))?;
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += buf.len() as u64;
        Ok(self.timed(start))
    }

    fn flush_at(&mut self, _at: Nanos) -> Result<Completion> {
        let start = self.now();
        if !self.read_only {
            self.file
                .sync_data()
                .map_err(|e| with_path(&self.path, e))?;
        }
        self.stats.flushes += 1;
        Ok(self.timed(start))
    }

    fn trim_at(&mut self, _at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.writable("trim: device opened read-only")?;
        self.geometry.check(offset, len)?;
        let start = self.now();
        if !punch_hole(&self.file, offset, len) {
            let zeros = vec![0u8; (len as usize).min(BOUNCE_MAX)];
            let mut pos = offset;
            while pos < offset + len {
                let n = (offset + len - pos).min(zeros.len() as u64) as usize;
                debug_assert!(n > 0 && n as u64 % u64::from(self.geometry.sector_size) == 0);
                self.pwrite(pos, &zeros[..n])
                    .map_err(|e| with_path(&self.path, e))?;
                pos += n as u64;
            }
        }
        self.stats.trims += 1;
        Ok(self.timed(start))
    }

    fn clock(&self) -> Nanos {
        self.now()
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(capacity: u64, direct: bool) -> FileOptions {
        FileOptions {
            capacity,
            direct,
            ..FileOptions::default()
        }
    }

    #[test]
    fn creates_a_file_of_the_capacity_and_reopens_it_with_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dev");
        let mut d = FileDevice::open(&p, &opts(1 << 20, false)).unwrap();
        assert_eq!(d.geometry().capacity, 1 << 20);
        assert_eq!(d.geometry().sector_size, 512);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 1 << 20);
        d.write(4096, &[9u8; 1024]).unwrap();
        d.flush().unwrap();
        drop(d);
        let mut d = FileDevice::open(
            &p,
            &FileOptions {
                capacity: 5 << 20,
                create: false,
                ..opts(0, false)
            },
        )
        .unwrap();
        assert_eq!(d.geometry().capacity, 1 << 20);
        let mut buf = [0u8; 1024];
        d.read(4096, &mut buf).unwrap();
        assert_eq!(buf, [9u8; 1024]);
        let s = d.stats();
        assert_eq!((s.host_reads, s.host_read_bytes), (1, 1024));
    }

    #[test]
    fn direct_io_works_or_falls_back_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = FileDevice::open(dir.path().join("dev"), &opts(1 << 20, true)).unwrap();
        assert!(d.direct() != d.warning().is_some());
        let sector = d.geometry().sector_size as usize;
        assert_eq!(sector, if d.direct() { 4096 } else { 512 });
        // An unaligned caller buffer still works: it goes through the bounce buffer.
        let data: Vec<u8> = (0..sector * 3 + 1).map(|i| i as u8).collect();
        d.write(sector as u64, &data[1..]).unwrap();
        let mut back = vec![0u8; sector * 3 + 1];
        d.read(sector as u64, &mut back[1..]).unwrap();
        assert_eq!(&back[1..], &data[1..]);
        assert!(matches!(
            d.read(1, &mut back[..sector]),
            Err(DeviceError::Misaligned { .. })
        ));
    }

    #[test]
    fn trim_reads_back_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = FileDevice::open(dir.path().join("dev"), &opts(1 << 20, false)).unwrap();
        d.write(0, &vec![0xabu8; 64 << 10]).unwrap();
        d.trim(4096, 8192).unwrap();
        let mut buf = vec![0u8; 64 << 10];
        d.read(0, &mut buf).unwrap();
        assert!(buf[..4096].iter().all(|&b| b == 0xab));
        assert!(buf[4096..12288].iter().all(|&b| b == 0));
        assert!(buf[12288..].iter().all(|&b| b == 0xab));
    }

    #[test]
    fn bad_opens_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let e = FileDevice::open(
            &missing,
            &FileOptions {
                create: false,
                ..opts(1 << 20, false)
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("missing") && e.contains("create is off"), "{e}");
        let e = FileDevice::open(&missing, &opts(0, false))
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a capacity"), "{e}");
    }

    #[test]
    fn read_only_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dev");
        FileDevice::open(&p, &opts(1 << 20, false)).unwrap();
        let mut d = FileDevice::open(
            &p,
            &FileOptions {
                read_only: true,
                ..opts(0, false)
            },
        )
        .unwrap();
        assert!(matches!(
            d.write(0, &[1u8; 512]),
            Err(DeviceError::Unsupported(_))
        ));
        let mut buf = [1u8; 512];
        d.read(0, &mut buf).unwrap();
        assert_eq!(buf, [0u8; 512]);
    }

    #[test]
    fn a_mounted_block_device_is_refused_for_writing() {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let Some(dev) = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .find(|s| std::fs::metadata(s).is_ok_and(|m| m.file_type().is_block_device()))
        else {
            return; // no mounted block device visible here
        };
        let e = FileDevice::open(dev, &opts(0, false))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is mounted"), "{e}");
    }
}
