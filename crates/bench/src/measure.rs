//! What the process wrote to the device, and how much disk a directory takes.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Bytes this process (all its threads) has caused to be written to the
/// storage device: `write_bytes` in `/proc/self/io`. Counted when a page
/// of the page cache first becomes dirty, so rewriting a dirty page before
/// writeback is counted once.
pub fn written_bytes() -> io::Result<u64> {
    let text = std::fs::read_to_string("/proc/self/io")?;
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other("no write_bytes in /proc/self/io"))
}

/// This process's resident memory: (now, peak), from `VmRSS` and `VmHWM`
/// in `/proc/self/status`.
pub fn rss_bytes() -> io::Result<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| -> io::Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .ok_or_else(|| io::Error::other(format!("no {name} in /proc/self/status")))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Makes every file under `dir` durable and drops it from the page cache
/// (`fdatasync`, then `POSIX_FADV_DONTNEED`), so the next reads of it go
/// to the device.
pub fn evict(dir: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            evict(&entry.path())?;
        } else if meta.is_file() {
            let f = std::fs::File::open(entry.path())?;
            f.sync_data()?;
            // SAFETY: a valid open descriptor; the advice only drops clean
            // cached pages.
            let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            if r != 0 {
                return Err(io::Error::from_raw_os_error(r));
            }
        }
    }
    Ok(())
}

/// Starts this process's peak RSS (`VmHWM`) afresh from its current RSS.
pub fn reset_peak_rss() -> io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// Disk use of everything under `dir`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirSize {
    /// Blocks allocated (`st_blocks` × 512).
    pub allocated: u64,
    /// File lengths (`st_size`), holes included.
    pub apparent: u64,
}

pub fn dir_size(dir: &Path) -> io::Result<DirSize> {
    let mut total = DirSize::default();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            let sub = dir_size(&entry.path())?;
            total.allocated += sub.allocated;
            total.apparent += sub.apparent;
        } else if meta.is_file() {
            total.allocated += meta.blocks() * 512;
            total.apparent += meta.len();
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_size_counts_nested_files_and_holes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("a"), vec![1u8; 8192]).unwrap();
        let f = std::fs::File::create(d.path().join("sub/sparse")).unwrap();
        f.set_len(1 << 20).unwrap();
        let s = dir_size(d.path()).unwrap();
        assert_eq!(s.apparent, 8192 + (1 << 20));
        assert!(s.allocated >= 8192 && s.allocated < 1 << 20, "{s:?}");
    }

    #[test]
    fn evict_keeps_the_files_and_the_peak_rss_can_restart() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/a"), vec![7u8; 1 << 20]).unwrap();
        evict(d.path()).unwrap();
        assert_eq!(
            std::fs::read(d.path().join("sub/a")).unwrap(),
            vec![7u8; 1 << 20]
        );
        let big = vec![1u8; 64 << 20];
        let (_, peak) = rss_bytes().unwrap();
        drop(big);
        reset_peak_rss().unwrap();
        let (now, after) = rss_bytes().unwrap();
        assert!(after < peak && after >= now, "{peak} {after} {now}");
    }

    #[test]
    fn written_bytes_and_rss_are_readable_and_free_space_positive() {
        let _ = written_bytes().unwrap();
        let (now, peak) = rss_bytes().unwrap();
        assert!(now > 0 && peak >= now, "{now} {peak}");
        assert!(flashkv_device::free_space(Path::new("/")).unwrap() > 0);
    }
}
