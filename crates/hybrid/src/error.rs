use flashkv_device::DeviceError;
use thiserror::Error;

/// What creating, opening or running a hybrid device can fail with.
#[derive(Debug, Error)]
pub enum HybridError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("no hybrid superblock on the SSD: create the hybrid first (or both superblock copies are corrupt)")]
    NotFormatted,
    #[error("hybrid layout: {0}")]
    Layout(String),
    #[error("invalid hybrid option: {0}")]
    Options(String),
    #[error("corrupt {what} at SSD offset {offset}")]
    Corrupt { what: &'static str, offset: u64 },
    #[error("mapping region full: all {slots} tablet slots are in use")]
    MappingFull { slots: u64 },
}

pub type Result<T, E = HybridError> = std::result::Result<T, E>;

impl From<HybridError> for DeviceError {
    /// `BlockDevice` callers see device errors; hybrid-specific ones become
    /// invalid-data I/O errors carrying their message.
    fn from(e: HybridError) -> Self {
        match e {
            HybridError::Device(d) => d,
            other => DeviceError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                other.to_string(),
            )),
        }
    }
}
