//! What the benchmark asks of a key-value engine, and the list of engines.

use std::path::Path;

use crate::workload::{Key, Value};

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// One engine open on a fresh directory. Every write method returns once
/// its writes are durable (synced to the device).
pub trait Engine: Send {
    /// Writes `pairs` in one atomic batch (one transaction / commit).
    fn write_batch(&mut self, pairs: &[(Key, Value)]) -> Result<()>;
    /// Writes one pair on its own.
    fn put(&mut self, key: &Key, value: &Value) -> Result<()>;
    /// Deletes `keys` in one atomic batch.
    fn delete_batch(&mut self, keys: &[(Key, Value)]) -> Result<()>;
    /// A handle for point reads, usable on another thread while other
    /// handles read too; `Err` with the reason when the engine has none.
    fn reader(&self) -> Result<Box<dyn Reader + '_>>;
    /// A handle for durable puts, usable on another thread while other
    /// handles write too; `Err` with the reason when the engine has none.
    fn writer(&self) -> Result<Box<dyn Writer + '_>>;
    /// Flushes and closes the engine, so its files have their final size.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Durable puts from one of several threads.
pub trait Writer: Send {
    /// Writes one pair on its own; returns once it is durable.
    fn put(&mut self, key: &Key, value: &Value) -> Result<()>;
}

/// Point and range reads.
pub trait Reader: Send {
    /// The value's length if `key` is present.
    fn get(&mut self, key: &Key) -> Result<Option<usize>>;
    /// How many pairs the first `limit` keys from `start` (inclusive) have.
    fn range(&mut self, start: &Key, limit: usize) -> Result<usize>;
}

/// How to open an engine in a directory.
pub type Opener = fn(dir: &Path, keys: usize) -> Result<Box<dyn Engine>>;

/// Every engine the benchmark knows, in the default order, with its opener
/// when this build has it.
pub fn all() -> Vec<(&'static str, Option<Opener>)> {
    vec![
        (
            "flashkv-inplace",
            Some(crate::engines::flashkv::open_inplace as Opener),
        ),
        (
            "flashkv-ipl",
            Some(crate::engines::flashkv::open_ipl as Opener),
        ),
        ("redb", peers::REDB),
        ("fjall", peers::FJALL),
        ("sled", peers::SLED),
        ("sqlite", peers::SQLITE),
    ]
}

#[cfg(feature = "peers")]
mod peers {
    use super::Opener;
    use crate::engines;
    pub const REDB: Option<Opener> = Some(engines::redb::open);
    pub const FJALL: Option<Opener> = Some(engines::fjall::open);
    pub const SLED: Option<Opener> = Some(engines::sled::open);
    pub const SQLITE: Option<Opener> = Some(engines::sqlite::open);
}

#[cfg(not(feature = "peers"))]
mod peers {
    use super::Opener;
    pub const REDB: Option<Opener> = None;
    pub const FJALL: Option<Opener> = None;
    pub const SLED: Option<Opener> = None;
    pub const SQLITE: Option<Opener> = None;
}
