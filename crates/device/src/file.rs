//! Real files and block devices. (Being written.)
pub struct FileDevice;
pub struct FileOptions;
