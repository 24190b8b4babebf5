use std::path::PathBuf;

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
    #[error("{}: not a flashkv store ({why}); nothing was written", path.display())]
    NotAStoreFile { path: PathBuf, why: String },
    #[error("{}: no such store (create it with Db::create or open_or_create)", path.display())]
    NoStore { path: PathBuf },
    #[error("{}: already exists and is not empty; a new store is created only in a missing or empty file", path.display())]
    Exists { path: PathBuf },
    #[error("{}: the store is open {}", path.display(), holder_text(*holder))]
    Locked { path: PathBuf, holder: Option<u32> },
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
    #[error("the store was opened read-only")]
    ReadOnly,
    #[error("the store has writes to recover (a crash or a writer left them): open it for writing once first")]
    NeedsRecovery,
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// Who holds a store's lock, for [`Error::Locked`].
fn holder_text(holder: Option<u32>) -> String {
    match holder {
        Some(pid) if pid == std::process::id() => "elsewhere in this process".into(),
        Some(pid) => format!("in another process (pid {pid})"),
        None => "in another process".into(),
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthand for a corruption error.
pub(crate) fn corrupt(msg: impl Into<String>) -> Error {
    Error::Corrupt(msg.into())
}
