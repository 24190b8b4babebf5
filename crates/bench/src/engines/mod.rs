//! One module per engine; the peers behind their features.

pub mod cache_budget;
#[cfg(feature = "peers")]
pub mod fjall;
pub mod flashkv;
#[cfg(feature = "lmdb")]
pub mod lmdb;
#[cfg(feature = "peers")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "peers")]
pub mod sled;
#[cfg(feature = "peers")]
pub mod sqlite;
