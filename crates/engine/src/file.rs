//! Opening a store in a file.

use std::path::Path;

use flashkv_device::{BlockDevice, FileDevice, FileOptions};

use crate::error::Result;

/// The file at `path` as a device: a new or empty file is sized to `size`,
/// an existing one keeps its length (a truncated store is then found out,
/// not silently extended). Buffered I/O with fdatasync on flush: O_DIRECT
/// would force 4 KiB sectors, and in-page logging writes 512-byte log sectors.
pub(crate) fn open(path: &Path, size: u64) -> Result<Box<dyn BlockDevice>> {
    let opts = FileOptions {
        capacity: size,
        create: true,
        direct: false,
        read_only: false,
    };
    Ok(Box::new(FileDevice::open(path, &opts)?))
}
