use flashkv_device::DeviceError;
use thiserror::Error;

/// What creating, opening or running a hybrid device can fail with.
///
/// New variants may come: match with a wildcard arm. Through the
/// [`flashkv_device::BlockDevice`] interface a hybrid's own error arrives as
/// [`DeviceError::Stacked`]; `e.stacked::<HybridError>()` gets it back.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum HybridError {
    /// The SSD or the HDD failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// Neither superblock slot on the SSD holds a valid superblock.
    #[error("no hybrid superblock on the SSD: create the hybrid first (or both superblock copies are corrupt)")]
    NotFormatted,
    /// The devices cannot hold a hybrid, or do not match its superblock.
    #[error("hybrid layout: {0}")]
    Layout(String),
    /// An option out of range; the message names it.
    #[error("invalid hybrid option: {0}")]
    Options(String),
    /// Data the hybrid wrote to the SSD came back damaged (its checksum or
    /// its shape is wrong).
    #[error("corrupt {what} at SSD offset {location}")]
    Corrupt {
        /// What was damaged (a mapping tablet, a log record header).
        what: &'static str,
        /// Its byte offset on the SSD.
        location: u64,
    },
    /// Every tablet slot of the mapping region is in use.
    #[error("mapping region full: all {slots} tablet slots are in use")]
    MappingFull {
        /// Slots in the mapping region.
        slots: u64,
    },
}

/// A hybrid operation's result.
pub type Result<T, E = HybridError> = std::result::Result<T, E>;

impl From<HybridError> for DeviceError {
    /// `BlockDevice` callers see device errors: a device's own error as it
    /// is, the hybrid's kept typed inside [`DeviceError::Stacked`].
    fn from(e: HybridError) -> Self {
        match e {
            HybridError::Device(d) => d,
            other => DeviceError::Stacked(Box::new(other)),
        }
    }
}
