//! The file or block device a real profile runs on, and whether it may be
//! written.
//!
//! A file the profiler creates starts with a [`HEADER`]-byte block holding
//! [`MARKER`]; the test span follows it, so profiling never overwrites the
//! marker. The marker travels with the file (copies and renames stay ours)
//! and any other program that rewrites the file's start makes it foreign
//! again, which errs on the safe side. Anything without the marker (other
//! files, block devices) is only read unless the caller forces writes;
//! [`FileDevice`] refuses to open a mounted block device for writing even then.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use flashkv_device::{BlockDevice, DeviceError, FileDevice, FileOptions};
use rand::{rngs::SmallRng, RngCore, SeedableRng};

use crate::report::size_label;

/// First bytes of a file the profiler created.
pub const MARKER: &[u8] = b"flashkv profile file v1\n";
/// Bytes before the test span in a file the profiler owns (one O_DIRECT block).
pub const HEADER: u64 = 4096;
/// Test span of a file created without an explicit span.
pub const DEFAULT_SPAN: u64 = 256 << 20;

/// What the caller is about to do with the path.
#[derive(Debug, Clone)]
pub struct TargetOptions {
    /// Bytes to test; `None`: the default for a new file, else all of it.
    pub span: Option<u64>,
    /// Whether any pattern writes.
    pub writes: bool,
    /// Write even to a file or device without the marker.
    pub force: bool,
    /// Ask for O_DIRECT.
    pub direct: bool,
}

/// A prepared path: the span `[base, base + span)` is laid out and may be
/// used as `read_only` says.
#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    pub base: u64,
    pub span: u64,
    /// Created by the profiler (carries the marker).
    pub own: bool,
    pub read_only: bool,
    pub direct: bool,
    /// Why O_DIRECT was not used, when it was asked for.
    pub warning: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{0}: exists and was not created by flashkv profile; refusing to write to it (pass --force to overwrite it, or profile read patterns only)")]
    NotOurs(PathBuf),
    #[error("--span {} is not a positive multiple of 4 KiB", size_label(*.0))]
    BadSpan(u64),
    #[error("{0}: not a regular file or block device")]
    NotAFile(PathBuf),
    #[error("--span {}: larger than {path}, which holds {}", size_label(*span), size_label(*capacity))]
    TooSmall {
        path: PathBuf,
        span: u64,
        capacity: u64,
    },
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Checks the path, creates or extends a file the profiler owns and fills
/// its span with random bytes (so reads hit allocated blocks and no device
/// can compress or deduplicate them away).
pub fn prepare(path: &Path, opts: &TargetOptions) -> Result<Target, TargetError> {
    prepare_with(path, opts, &mut |_, _| {})
}

/// [`prepare`], calling `on_fill(done, total)` (bytes) while it fills a span.
pub fn prepare_with(
    path: &Path,
    opts: &TargetOptions,
    on_fill: &mut dyn FnMut(u64, u64),
) -> Result<Target, TargetError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(path, e).into()),
    };
    let Some(meta) = meta else {
        let span = opts.span.unwrap_or(DEFAULT_SPAN);
        return lay_out(path, opts, span, 0, on_fill);
    };
    let block_dev = meta.file_type().is_block_device();
    if !block_dev && !meta.is_file() {
        return Err(TargetError::NotAFile(path.to_path_buf()));
    }
    if !block_dev && has_marker(path)? {
        let span = opts.span.unwrap_or(meta.len().saturating_sub(HEADER));
        return lay_out(path, opts, span, meta.len().saturating_sub(HEADER), on_fill);
    }
    if opts.writes && !opts.force {
        return Err(TargetError::NotOurs(path.to_path_buf()));
    }
    let dev = FileDevice::open(path, &file_options(opts, 0, !opts.writes))?;
    let capacity = dev.geometry().capacity;
    let span = opts.span.unwrap_or(capacity);
    if span > capacity {
        return Err(TargetError::TooSmall {
            path: path.to_path_buf(),
            span,
            capacity,
        });
    }
    Ok(Target {
        path: path.to_path_buf(),
        base: 0,
        span,
        own: false,
        read_only: !opts.writes,
        direct: dev.direct(),
        warning: dev.warning().map(str::to_string),
    })
}

impl Target {
    /// Opens `n` descriptors of the target, one per I/O thread.
    pub fn open(&self, n: usize) -> Result<Vec<FileDevice>, DeviceError> {
        let o = FileOptions {
            capacity: 0,
            create: false,
            direct: self.direct,
            read_only: self.read_only,
        };
        (0..n).map(|_| FileDevice::open(&self.path, &o)).collect()
    }
}

/// Creates (`have` = 0) or extends an own file to hold `span` bytes after the
/// header, writing the header and the new part of the span.
fn lay_out(
    path: &Path,
    opts: &TargetOptions,
    span: u64,
    have: u64,
    on_fill: &mut dyn FnMut(u64, u64),
) -> Result<Target, TargetError> {
    // Checked before anything is created: O_DIRECT moves whole 4 KiB blocks.
    if span == 0 || span % HEADER != 0 {
        return Err(TargetError::BadSpan(span));
    }
    let total = HEADER + span;
    let mut dev = FileDevice::open(path, &file_options(opts, total, false))?;
    if have < span {
        // An existing own file is grown before it is reopened at its new size.
        if have > 0 {
            drop(dev);
            File::options()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(total))
                .map_err(|e| io_err(path, e))?;
            dev = FileDevice::open(path, &file_options(opts, 0, false))?;
        }
        let mut header = vec![0u8; HEADER as usize];
        header[..MARKER.len()].copy_from_slice(MARKER);
        dev.write(0, &header)?;
        fill(&mut dev, HEADER + have, HEADER + span, on_fill)?;
        dev.flush()?;
    }
    Ok(Target {
        path: path.to_path_buf(),
        base: HEADER,
        span,
        own: true,
        read_only: !opts.writes,
        direct: dev.direct(),
        warning: dev.warning().map(str::to_string),
    })
}

fn fill(
    dev: &mut FileDevice,
    from: u64,
    to: u64,
    on_fill: &mut dyn FnMut(u64, u64),
) -> Result<(), DeviceError> {
    const CHUNK: u64 = 1 << 20;
    let mut rng = SmallRng::seed_from_u64(from);
    let mut buf = vec![0u8; CHUNK as usize];
    let mut off = from;
    while off < to {
        let n = CHUNK.min(to - off) as usize;
        rng.fill_bytes(&mut buf[..n]);
        dev.write(off, &buf[..n])?;
        off += n as u64;
        on_fill(off - from, to - from);
    }
    Ok(())
}

fn has_marker(path: &Path) -> Result<bool, TargetError> {
    let mut head = vec![0u8; MARKER.len()];
    let mut f = File::open(path).map_err(|e| io_err(path, e))?;
    match f.read_exact(&mut head) {
        Ok(()) => Ok(head == MARKER),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(io_err(path, e).into()),
    }
}

fn file_options(opts: &TargetOptions, capacity: u64, read_only: bool) -> FileOptions {
    FileOptions {
        capacity,
        create: capacity > 0,
        direct: opts.direct,
        read_only,
    }
}

fn io_err(path: &Path, e: io::Error) -> DeviceError {
    DeviceError::Io(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(span: u64, writes: bool, force: bool) -> TargetOptions {
        TargetOptions {
            span: Some(span),
            writes,
            force,
            direct: false,
        }
    }

    #[test]
    fn creates_marks_fills_and_grows_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let mut seen = Vec::new();
        let t = prepare_with(&p, &opts(1 << 20, true, false), &mut |d, n| {
            seen.push((d, n))
        })
        .unwrap();
        assert!(t.own && t.base == HEADER && t.span == 1 << 20);
        assert_eq!(seen, [(1 << 20, 1 << 20)], "one 1 MiB chunk reported");
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes.len() as u64, HEADER + (1 << 20));
        assert!(bytes.starts_with(MARKER));
        assert!(bytes[HEADER as usize..].iter().any(|&b| b != 0));
        // Ours again on the next run, and grown to a larger span.
        let t = prepare(&p, &opts(2 << 20, true, false)).unwrap();
        assert!(t.own && t.span == 2 << 20);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes.len() as u64, HEADER + (2 << 20));
        assert!(bytes[bytes.len() - 4096..].iter().any(|&b| b != 0));
    }

    #[test]
    fn a_foreign_file_is_read_only_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("precious");
        std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
        let e = prepare(&p, &opts(1 << 20, true, false)).unwrap_err();
        assert!(matches!(e, TargetError::NotOurs(_)), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), vec![7u8; 1 << 20]);
        let t = prepare(&p, &opts(1 << 20, false, false)).unwrap();
        assert!(!t.own && t.read_only && t.base == 0);
        let t = prepare(&p, &opts(1 << 20, true, true)).unwrap();
        assert!(!t.read_only);
        let e = prepare(&p, &opts(2 << 20, false, false)).unwrap_err();
        assert!(matches!(e, TargetError::TooSmall { .. }), "{e}");
        let fresh = dir.path().join("fresh");
        let e = prepare(&fresh, &opts(1000, true, false)).unwrap_err();
        assert!(matches!(e, TargetError::BadSpan(1000)), "{e}");
        assert!(!fresh.exists());
    }
}
