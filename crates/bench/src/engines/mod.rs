//! One module per engine.

#[cfg(feature = "peers")]
pub mod fjall;
pub mod flashkv;
#[cfg(feature = "peers")]
pub mod redb;
#[cfg(feature = "peers")]
pub mod sled;
#[cfg(feature = "peers")]
pub mod sqlite;
