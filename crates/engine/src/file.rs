//! Opening a store in a file.

use std::path::Path;

use flashkv_device::BlockDevice;

use crate::error::Result;

/// A device over the file at `path` (created if missing) of `size` bytes.
pub(crate) fn open(path: &Path, size: u64) -> Result<Box<dyn BlockDevice>> {
    let _ = (path, size);
    Err(crate::Error::Options(
        "file devices are not available yet".into(),
    ))
}
