//! Where a simulated device keeps its bytes.
//!
//! Memory storage is sparse: the device is cut into 4 KiB chunks and only
//! chunks holding a non-zero byte are kept, so a preconditioned 1 GiB span
//! written with zeros costs no memory. File storage keeps the bytes in a
//! (sparse) file for spans too large for memory.

use rustc_hash::FxHashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::Result;

const CHUNK: u64 = 4096;

/// The bytes of a simulated device. Never-written, trimmed and erased bytes read as zero.
#[derive(Debug)]
pub enum DataStore {
    /// Sparse in memory: only 4 KiB chunks holding a non-zero byte.
    Memory(FxHashMap<u64, Box<[u8; CHUNK as usize]>>),
    /// In a (sparse) file.
    File(File),
}

impl Default for DataStore {
    fn default() -> Self {
        DataStore::Memory(FxHashMap::default())
    }
}

impl DataStore {
    /// A store backed by the file at `path` (created or truncated).
    pub fn file(path: &Path) -> Result<Self> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(DataStore::File(f))
    }

    /// Reads `buf.len()` bytes at `offset`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        match self {
            DataStore::Memory(chunks) => {
                for_chunks(offset, buf.len(), |chunk, within, range| {
                    let dst = &mut buf[range];
                    match chunks.get(&chunk) {
                        Some(c) => dst.copy_from_slice(&c[within..within + dst.len()]),
                        None => dst.fill(0),
                    }
                });
                Ok(())
            }
            DataStore::File(f) => {
                // Reading past the end of a sparse file yields fewer bytes: zero-fill.
                let mut done = 0;
                while done < buf.len() {
                    let n = f.read_at(&mut buf[done..], offset + done as u64)?;
                    if n == 0 {
                        buf[done..].fill(0);
                        break;
                    }
                    done += n;
                }
                Ok(())
            }
        }
    }

    /// Writes `buf` at `offset`.
    pub fn write(&mut self, offset: u64, buf: &[u8]) -> Result<()> {
        match self {
            DataStore::Memory(chunks) => {
                for_chunks(offset, buf.len(), |chunk, within, range| {
                    let src = &buf[range];
                    let whole = src.len() == CHUNK as usize;
                    debug_assert!(!whole || within == 0, "a whole chunk starts it");
                    if is_zero(src) {
                        if whole {
                            chunks.remove(&chunk);
                        } else if let Some(c) = chunks.get_mut(&chunk) {
                            c[within..within + src.len()].fill(0);
                        }
                        return;
                    }
                    let c = chunks
                        .entry(chunk)
                        .or_insert_with(|| Box::new([0u8; CHUNK as usize]));
                    c[within..within + src.len()].copy_from_slice(src);
                });
                Ok(())
            }
            DataStore::File(f) => Ok(f.write_all_at(buf, offset)?),
        }
    }

    /// Zeroes `[offset, offset+len)`.
    pub fn zero(&mut self, offset: u64, len: u64) -> Result<()> {
        match self {
            // Nothing written yet: zeros everywhere already.
            DataStore::Memory(chunks) if chunks.is_empty() => Ok(()),
            DataStore::Memory(chunks) => {
                let mut pos = offset;
                let end = offset + len;
                while pos < end {
                    let chunk = pos / CHUNK;
                    let within = (pos % CHUNK) as usize;
                    let n = ((CHUNK - pos % CHUNK).min(end - pos)) as usize;
                    if n == CHUNK as usize {
                        chunks.remove(&chunk);
                    } else if let Some(c) = chunks.get_mut(&chunk) {
                        c[within..within + n].fill(0);
                    }
                    debug_assert!(chunks
                        .get(&chunk)
                        .is_none_or(|c| is_zero(&c[within..within + n])));
                    pos += n as u64;
                }
                Ok(())
            }
            DataStore::File(f) => {
                let zeros = vec![0u8; CHUNK as usize];
                let mut pos = offset;
                let end = offset + len;
                while pos < end {
                    let n = (CHUNK.min(end - pos)) as usize;
                    f.write_all_at(&zeros[..n], pos)?;
                    pos += n as u64;
                }
                Ok(())
            }
        }
    }

    /// A store in a file of its own in `dir`, unlinked as soon as it is
    /// created (so nothing is left behind, even after a crash), once `dir`
    /// is known to have `need` bytes free.
    pub fn scratch_file(dir: &Path, need: u64) -> Result<Self> {
        let free = free_space(dir)?;
        if free < need {
            return Err(crate::DeviceError::Io(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!(
                    "{} has {free} bytes free, a simulated device's data needs up to {need}",
                    dir.display()
                ),
            )));
        }
        // Unique within the process too: several stores may be open at once.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!(".flashkv-scratch-{}-{n}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        Ok(DataStore::File(f))
    }

    /// Bytes of memory the store holds (0 for a file store).
    pub fn resident_bytes(&self) -> u64 {
        match self {
            DataStore::Memory(chunks) => chunks.len() as u64 * CHUNK,
            DataStore::File(_) => 0,
        }
    }
}

/// Bytes an unprivileged user may still write on the file system holding
/// `dir` (`statvfs`): what every command checks before it fills a file.
// statvfs's field types differ between platforms (u32 on some 32-bit ones).
#[allow(clippy::useless_conversion)]
pub fn free_space(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a valid NUL-terminated path and statvfs writes only
    // into `st`, which is read after it reports success.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok(u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
}

/// Whether every byte is zero, a word at a time: it runs on every simulated
/// write, so a byte loop would dominate preconditioning a large span.
fn is_zero(buf: &[u8]) -> bool {
    let mut words = buf.chunks_exact(16);
    let whole = words
        .by_ref()
        .all(|w| u128::from_ne_bytes(w.try_into().unwrap_or([1; 16])) == 0);
    whole && words.remainder().iter().all(|&b| b == 0)
}

/// Calls `f(chunk index, offset within chunk, range of the buffer)` for each
/// chunk the byte range `[offset, offset+len)` touches.
fn for_chunks(offset: u64, len: usize, mut f: impl FnMut(u64, usize, std::ops::Range<usize>)) {
    let mut done = 0usize;
    while done < len {
        let pos = offset + done as u64;
        let within = (pos % CHUNK) as usize;
        let n = (CHUNK as usize - within).min(len - done);
        debug_assert!(
            n > 0 && within + n <= CHUNK as usize,
            "a piece stays in its chunk"
        );
        f(pos / CHUNK, within, done..done + n);
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_scratch_store_leaves_no_file_and_refuses_without_room() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = DataStore::scratch_file(dir.path(), 1 << 20).unwrap();
        let _other = DataStore::scratch_file(dir.path(), 1 << 20).unwrap();
        s.write(8192, &[5; 100]).unwrap();
        let mut b = [0u8; 100];
        s.read(8192, &mut b).unwrap();
        assert_eq!(b, [5; 100]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let e = DataStore::scratch_file(dir.path(), u64::MAX).unwrap_err();
        assert!(e.to_string().contains("bytes free"), "{e}");
    }

    proptest! {
        #[test]
        fn memory_and_file_stores_match_a_flat_buffer(
            ops in proptest::collection::vec((0u64..20_000, 0usize..9000, any::<u8>(), any::<bool>()), 1..40)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut mem = DataStore::default();
            let mut file = DataStore::file(&dir.path().join("d")).unwrap();
            let mut flat = vec![0u8; 32_000];
            for (off, len, byte, zero) in ops {
                if zero {
                    mem.zero(off, len as u64).unwrap();
                    file.zero(off, len as u64).unwrap();
                    flat[off as usize..off as usize + len].fill(0);
                } else {
                    let data: Vec<u8> = (0..len).map(|i| byte.wrapping_add(i as u8) & (i as u8 | 1)).collect();
                    mem.write(off, &data).unwrap();
                    file.write(off, &data).unwrap();
                    flat[off as usize..off as usize + len].copy_from_slice(&data);
                }
            }
            let mut a = vec![0u8; 32_000];
            let mut b = vec![0u8; 32_000];
            mem.read(0, &mut a).unwrap();
            file.read(0, &mut b).unwrap();
            prop_assert_eq!(&a, &flat);
            prop_assert_eq!(&b, &flat);
        }
    }
}
