use thiserror::Error;

use flashkv_device::DeviceError;

/// Everything the engine can fail with.
#[derive(Debug, Error)]
pub enum Error {
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    #[error("corruption: {0}")]
    Corrupt(String),
    #[error("unsupported format version {found} in {what} (this build reads version {expected})")]
    Version {
        what: &'static str,
        found: u8,
        expected: u8,
    },
    #[error("not a flashkv store: no valid superblock")]
    NotAStore,
    #[error("key of {len} bytes is too large (limit {max})")]
    KeyTooLarge { len: usize, max: usize },
    #[error("value of {len} bytes is too large (limit {max})")]
    ValueTooLarge { len: usize, max: usize },
    #[error("key not found")]
    NotFound,
    #[error("store is full: {0}")]
    Full(&'static str),
    #[error("invalid options: {0}")]
    Options(String),
    #[error("the store was created with page store '{stored}', not '{requested}'")]
    StoreMismatch {
        stored: &'static str,
        requested: &'static str,
    },
    #[error("an earlier write failed midway; reopen the store to recover")]
    Poisoned,
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthand for a corruption error.
pub(crate) fn corrupt(msg: impl Into<String>) -> Error {
    Error::Corrupt(msg.into())
}
