//! Cold and hot page cache on a real file (seed 002's "Cold Buffers vs.
//! Hot Buffers"): the same reads over the first `file_size` bytes of a
//! prepared file, with the operating system's page cache bypassed (cold:
//! O_DIRECT) or warm (hot: read through it after one sequential pass over
//! those bytes). Each row carries the bytes the kernel read from the
//! storage device during the measured run (`read_bytes` of /proc/self/io),
//! which shows whether the cold run reached the device and the hot one did
//! not.
//!
//! Where the file system refuses O_DIRECT (tmpfs, some network and FUSE
//! file systems), a cold run drops the file's cached pages with
//! `posix_fadvise(POSIX_FADV_DONTNEED)` and reads through the cache, and
//! says so: a file system without a backing device keeps its pages anyway.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::time::Duration;

use flashkv_device::DeviceError;

use super::{run as run_real, Budget, RealSpec, Target};
use crate::cache::{Cache, CacheRow};
use crate::profile::{Pattern, ProfileError};

/// One cold or hot run.
#[derive(Debug, Clone)]
pub struct CacheSpec {
    pub cache: Cache,
    pub pattern: Pattern,
    pub block_size: u64,
    /// Bytes of the file's span the requests fall in (from its start).
    pub file_size: u64,
    pub budget: Budget,
    /// Threads, each with one request outstanding.
    pub iodepth: usize,
    pub seed: u64,
}

/// Bytes this process has had the kernel read from storage devices, from
/// /proc/self/io; `None` where the counter is missing.
pub fn device_read_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/io").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))?
        .trim()
        .parse()
        .ok()
}

/// Runs `spec` on the prepared `target`; the row and, where the cold run
/// could not bypass the page cache, why.
pub fn run(
    target: &Target,
    name: &str,
    spec: &CacheSpec,
) -> Result<(CacheRow, Option<String>), ProfileError> {
    if spec.pattern.writes() {
        return Err(ProfileError::Device(DeviceError::BadInput(
            "the cache runs read: use sr or rr".into(),
        )));
    }
    if spec.file_size == 0 || spec.file_size > target.span {
        return Err(ProfileError::SpanTooLarge {
            span: spec.file_size,
            capacity: target.span,
        });
    }
    let direct = spec.cache == Cache::Cold && target.direct;
    let mut warning = None;
    let file = File::open(&target.path).map_err(DeviceError::Io)?;
    match spec.cache {
        Cache::Hot => warm(&file, target.base, spec.file_size)?,
        Cache::Cold if !direct => {
            drop_cached(&file, target.base, spec.file_size)?;
            warning = Some(format!(
                "{}: the file system does not take O_DIRECT, so the cold run reads through the page cache after \
                 posix_fadvise(DONTNEED) dropped the file's pages; file systems without a backing device (tmpfs) keep them, \
                 and the run is then not cold (see device_read_bytes)",
                target.path.display()
            ));
        }
        Cache::Cold => {}
    }
    let mut devs = Target {
        direct,
        ..target.clone()
    }
    .open(spec.iodepth)?;
    let before = device_read_bytes();
    let row = run_real(
        &mut devs,
        name,
        &RealSpec {
            pattern: spec.pattern,
            block_size: spec.block_size,
            base: target.base,
            span: spec.file_size,
            budget: spec.budget,
            warmup: Duration::ZERO,
            seed: spec.seed,
        },
        &|_| {},
    )?;
    let read = before
        .zip(device_read_bytes())
        .map(|(b, a)| a.saturating_sub(b));
    let asked = row.ops * spec.block_size;
    if let (true, Some(r)) = (direct, read) {
        if r < asked / 2 {
            warning = Some(format!(
                "{}: the cold run read {r} bytes from a storage device for {asked} requested: nothing backs the file \
                 with a device the kernel counts (tmpfs takes O_DIRECT on Linux 6.6 and later), so cold means little here",
                target.path.display()
            ));
        }
    }
    let mut out = CacheRow::of(&row, spec.cache, spec.file_size);
    out.device_read_bytes = read;
    out.direct = Some(direct);
    Ok((out, warning))
}

/// Reads `[base, base + len)` once through the page cache.
fn warm(file: &File, base: u64, len: u64) -> Result<(), DeviceError> {
    const CHUNK: u64 = 1 << 20;
    let mut buf = vec![0u8; CHUNK as usize];
    let mut off = base;
    while off < base + len {
        let n = CHUNK.min(base + len - off) as usize;
        file.read_exact_at(&mut buf[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Asks the kernel to drop the cached pages of `[base, base + len)`.
fn drop_cached(file: &File, base: u64, len: u64) -> Result<(), DeviceError> {
    let (off, n) = (i64::try_from(base), i64::try_from(len));
    let (Ok(off), Ok(n)) = (off, n) else {
        return Err(DeviceError::BadInput("file range beyond i64".into()));
    };
    // SAFETY: posix_fadvise only reads its integer arguments; the
    // descriptor is open for the call's duration.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), off, n, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(DeviceError::Io(std::io::Error::from_raw_os_error(rc)));
    }
    Ok(())
}
