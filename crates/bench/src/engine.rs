//! What the benchmark asks of a key-value engine, and the list of engines.
//! Both suites (the seven phases and YCSB) drive engines only through
//! these two traits.

use std::path::Path;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// A key and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// One engine open on a directory. Every write returns once it is durable
/// (synced to the device).
pub trait Engine: Send {
    /// Writes `pairs` in one atomic batch (one transaction / commit).
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()>;
    /// Deletes `keys` in one atomic batch.
    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()>;
    /// A handle for one client thread, usable while other clients run on
    /// other threads: each engine's own recommended way to share it.
    fn client(&self) -> Result<Box<dyn Client + '_>>;
    /// Flushes and closes the engine, so its files have their final size.
    fn close(self: Box<Self>) -> Result<()>;
}

/// What one client thread does: point reads, ranges and durable puts.
pub trait Client: Send {
    /// The value's length if `key` is present.
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>>;
    /// How many pairs the first `limit` keys from `start` (inclusive) have,
    /// each value checked non-empty (so it is read).
    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize>;
    /// Writes one pair (insert or overwrite) in its own durable commit.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
}

/// What an engine is given besides its defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Setup {
    /// The cache budget of the larger-than-memory scale, in bytes, set
    /// through the engine's own cache setting (docs/benchmarks.md lists
    /// them); `None`: the engine's default cache.
    pub cache_bytes: Option<u64>,
}

/// How to open an engine in a directory: creates the store when the
/// directory is empty, else opens the one there.
pub type Opener = fn(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>>;

/// Every engine name the benchmark knows, in the default order.
pub const NAMES: [&str; 9] = [
    "flashkv-inplace",
    "flashkv-ipl",
    "flashkv-no-memtable",
    "redb",
    "fjall",
    "sled",
    "sqlite",
    "lmdb",
    "rocksdb",
];

/// The feature a peer needs, for the message when a build left it out.
pub fn feature_of(name: &str) -> &'static str {
    match name {
        "lmdb" => "lmdb",
        "rocksdb" => "rocksdb",
        _ => "peers",
    }
}

/// `name`'s opener when this build has it.
pub fn opener(name: &str) -> Option<Opener> {
    use crate::engines;
    match name {
        "flashkv-inplace" => Some(engines::flashkv::open_inplace),
        "flashkv-ipl" => Some(engines::flashkv::open_ipl),
        "flashkv-no-memtable" => Some(engines::flashkv::open_no_memtable),
        #[cfg(feature = "peers")]
        "redb" => Some(engines::redb::open),
        #[cfg(feature = "peers")]
        "fjall" => Some(engines::fjall::open),
        #[cfg(feature = "peers")]
        "sled" => Some(engines::sled::open),
        #[cfg(feature = "peers")]
        "sqlite" => Some(engines::sqlite::open),
        #[cfg(feature = "lmdb")]
        "lmdb" => Some(engines::lmdb::open),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Some(engines::rocksdb::open),
        _ => None,
    }
}
