//! What the engine fails with. Damage is [`Error::Corrupt`], naming the
//! structure and where it lies; a key that is not there is not an error
//! (reads answer `None`, [`crate::Db::update`] and [`crate::Db::delete`]
//! answer `false`).

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use flashkv_device::DeviceError;

use crate::page::PageId;

/// Everything the engine can fail with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The device failed an operation (an I/O error, an unreadable sector,
    /// a crash of a simulated device).
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    /// An on-device structure failed its checks: a checksum, a bound, a
    /// link between pages. Never returned as data.
    #[error("corrupt {what} ({location}): {why}")]
    Corrupt {
        /// The structure found damaged.
        what: Structure,
        /// Where it lies.
        location: Location,
        /// What failed.
        why: &'static str,
    },
    /// A structure of a format version this build does not read.
    #[error("unsupported format version {found} in {what} (this build reads version {expected})")]
    Version {
        /// The structure: "superblock", "page", "log sector", ...
        what: &'static str,
        /// The version found.
        found: u8,
        /// The newest version this build reads.
        expected: u8,
    },
    /// The device holds something other than a flashkv store.
    #[error("not a flashkv store: no valid superblock")]
    NotAStore,
    /// The file holds something other than a flashkv store; nothing was written.
    #[error("{}: not a flashkv store ({why}); nothing was written", path.display())]
    NotAStoreFile {
        /// The file.
        path: PathBuf,
        /// Why it is not a store.
        why: String,
    },
    /// The file to open is missing.
    #[error("{}: no such store (create it with Db::create or open_or_create)", path.display())]
    NoStore {
        /// The missing file.
        path: PathBuf,
    },
    /// The file to create already holds data.
    #[error("{}: already exists and is not empty; a new store is created only in a missing or empty file", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// Another open holds the store's lock.
    #[error("{}: the store is open {}", path.display(), holder_text(*holder))]
    Locked {
        /// The file.
        path: PathBuf,
        /// The process holding the lock, where the system tells it.
        holder: Option<u32>,
    },
    /// A key longer than the store takes.
    #[error("key of {len} bytes is too large (limit {max})")]
    KeyTooLarge {
        /// Bytes of the key.
        len: usize,
        /// Longest key the store takes.
        max: usize,
    },
    /// A value longer than [`crate::MAX_VALUE`].
    #[error("value of {len} bytes is too large (limit {max})")]
    ValueTooLarge {
        /// Bytes of the value.
        len: usize,
        /// Longest value the store takes.
        max: usize,
    },
    /// No room left in the named part of the store.
    #[error("store is full: {0}")]
    Full(&'static str),
    /// An option out of range, or one the device cannot honour.
    #[error("invalid option {option}: {why}")]
    InvalidOption {
        /// The option, as [`crate::OptionsBuilder`] names it.
        option: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The store was opened with a log device it was not created with, or
    /// without the one it was.
    #[error("{0}")]
    WrongLogDevice(&'static str),
    /// The store was opened with another page store than it was created with.
    #[error("the store was created with page store '{stored}', not '{requested}'")]
    StoreMismatch {
        /// The page store the store holds.
        stored: &'static str,
        /// The page store the options asked for.
        requested: &'static str,
    },
    /// An earlier operation failed midway; the store must be reopened.
    #[error("an earlier write failed midway; reopen the store to recover")]
    Poisoned,
    /// A write to a store opened read-only.
    #[error("the store was opened read-only")]
    ReadOnly,
    /// A read-only open of a store with writes to recover.
    #[error("the store has writes to recover (a crash or a writer left them): open it for writing once first")]
    NeedsRecovery,
    /// An error of the file system holding a file store.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// An on-device structure, as [`Error::Corrupt`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Structure {
    /// A checkpoint slot (the superblock).
    Checkpoint,
    /// A write-ahead log record.
    LogRecord,
    /// The header of a log device ([`crate::Db::open_with_log`]).
    LogDeviceHeader,
    /// A tree, overflow or free page.
    Page,
    /// A log sector of the in-page-logging store.
    LogSector,
    /// The in-page-logging store's erase-unit map.
    UnitMap,
    /// The links between pages: child pointers, the leaf chain, overflow
    /// chains, the free list.
    Tree,
    /// The file holding a store.
    File,
}

impl fmt::Display for Structure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Structure::Checkpoint => "checkpoint",
            Structure::LogRecord => "write-ahead log record",
            Structure::LogDeviceHeader => "log device header",
            Structure::Page => "page",
            Structure::LogSector => "in-page log sector",
            Structure::UnitMap => "erase-unit map",
            Structure::Tree => "tree",
            Structure::File => "store file",
        })
    }
}

/// Where a damaged structure lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A page, by number.
    Page(PageId),
    /// A write-ahead log record, by sequence number.
    Record(u64),
    /// A byte offset on the device (or in the file).
    Offset(u64),
    /// A logical erase unit of the in-page-logging store.
    Unit(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Page(id) => write!(f, "page {id}"),
            Location::Record(seq) => write!(f, "record {seq}"),
            Location::Offset(o) => write!(f, "byte {o}"),
            Location::Unit(u) => write!(f, "erase unit {u}"),
        }
    }
}

/// Who holds a store's lock, for [`Error::Locked`].
fn holder_text(holder: Option<u32>) -> String {
    match holder {
        Some(pid) if pid == std::process::id() => "elsewhere in this process".into(),
        Some(pid) => format!("in another process (pid {pid})"),
        None => "in another process".into(),
    }
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A corruption error.
pub(crate) fn corrupt(what: Structure, location: Location, why: &'static str) -> Error {
    Error::Corrupt {
        what,
        location,
        why,
    }
}

/// A corruption error of page `id`.
pub(crate) fn bad_page(id: PageId, why: &'static str) -> Error {
    corrupt(Structure::Page, Location::Page(id), why)
}

/// A corruption error in the links between pages, found at page `id`.
pub(crate) fn bad_tree(id: PageId, why: &'static str) -> Error {
    corrupt(Structure::Tree, Location::Page(id), why)
}

/// An invalid option.
pub(crate) fn invalid(option: &'static str, why: impl Into<String>) -> Error {
    Error::InvalidOption {
        option,
        why: why.into(),
    }
}

impl Error {
    /// Whether the error may leave memory and device out of step (a
    /// device failure or damage found midway): the store then refuses
    /// every call until it is reopened.
    pub(crate) fn poisons(&self) -> bool {
        matches!(
            self,
            Error::Device(_) | Error::Io(_) | Error::Corrupt { .. }
        )
    }
}
