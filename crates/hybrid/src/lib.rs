//! HeteroDrive (seed 003): an SSD in front of an HDD, seen as one
//! [`flashkv_device::BlockDevice`], plus block-trace parsing ([`trace`]) and
//! replay on any device ([`replay`]).
//!
//! * **Layout** ([`Layout`]): two superblock copies, a mapping region of 4 KiB
//!   tablet slots sized for the worst case, and the cache region, a circular
//!   log aligned to a large power of two (so an FTL SSD sees one sequential
//!   stream). Data is mapped in 4 KiB units (or the devices' larger
//!   sector); the host sees the devices' larger sector. A write that covers
//!   a unit only in part is cached sector-exact: logged as is with a missing
//!   mask (merged with the unit's cached copy, read from the SSD, if there is
//!   one), so serving a write never reads the HDD; reads lay the cached
//!   sectors over the HDD's, and write-back writes only the sectors held.
//! * **Routing** ([`Router`]): writes of at least `size_threshold` go to the
//!   HDD; smaller ones too while the sequential-run counter (bytes written
//!   consecutively, halved by each non-consecutive write) is at least
//!   `seq_threshold`; the rest are appended to the log. Sectors with a dirty
//!   cached copy always stay in the log, so the newest copy lives in one place.
//! * **Mapping**: forward (virtual sector → cache slot) and reverse (cache slot
//!   → home sector, plus record boundaries) maps, 4-level radix trees of 4 KiB
//!   tablets, LRU-swapped to the mapping region beyond `memory_limit`. Reads
//!   are split into cached and uncached runs and reassembled.
//! * **Flush worker**: rounds of up to `round_bytes` of log, sorted by home
//!   sector, neighbours merged into writes of up to `max_flush_write`; it runs
//!   in idle time (an operation issued later than the device's clock) and,
//!   between the watermarks, in the background at twice the host's write rate.
//! * **Durability**: every append is a checksummed record chained by sequence
//!   number; a superblock records the tail behind which everything is on the
//!   HDD, and the session's first sequence number (made durable before the
//!   session appends), so a record lost in a crash never rejoins a later
//!   session's chain. After [`flashkv_device::BlockDevice::flush_at`] completes, every
//!   earlier write survives power loss; [`HybridDevice::open`] replays the log
//!   and reports the time in [`RecoveryReport`]. The read cache starts cold.
//! * **Promotion** (on by default): a 4 KiB block read randomly from the HDD
//!   `promote_after` times is copied into the log as a clean record.
//!
//! Counters: [`HybridDevice::hybrid_stats`] (since create/open);
//! `stats()` gives the hybrid's host counters with the devices' internal
//! counters, busy time and energy summed.
//!
//! ```
//! use flashkv_device::{BlockDevice, DeviceSpec, SimDevice};
//! use flashkv_hybrid::{HybridDevice, Options};
//! let dram = |cap: &str| {
//!     let toml = format!("capacity = \"{cap}\"\n[model]\nkind = \"dram\"\nread_overhead_us = 10.0\nwrite_overhead_us = 10.0\nread_mb_per_s = 500.0\nwrite_mb_per_s = 500.0\n");
//!     Box::new(SimDevice::new(&DeviceSpec::from_toml(&toml, "d").unwrap()).unwrap()) as Box<dyn BlockDevice>
//! };
//! let mut dev = HybridDevice::create(dram("64 MiB"), dram("1 GiB"), Options::default()).unwrap();
//! dev.write(4096, &[7u8; 4096]).unwrap(); // small and random: to the SSD log
//! let mut buf = [0u8; 4096];
//! dev.read(4096, &mut buf).unwrap();
//! assert_eq!(buf, [7u8; 4096]);
//! assert_eq!(dev.hybrid_stats().ssd_write_requests, 1);
//! ```

#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

/// The maps and an I/O cursor on the SSD at time `$t`, borrowed apart from
/// the device's other fields.
macro_rules! mio {
    ($dev:ident, $t:expr) => {
        (
            &mut $dev.maps,
            crate::tablets::Io {
                dev: &mut *$dev.ssd,
                t: $t,
            },
        )
    };
}

mod append;
mod check;
mod crcs;
mod device;
mod error;
mod flush;
mod layout;
mod maps;
mod options;
mod partial;
mod record;
mod recover;
pub mod replay;
mod route;
mod stats;
mod tablets;
pub mod trace;

pub use device::HybridDevice;
pub use error::{HybridError, Result};
pub use layout::{is_hybrid_ssd, Layout, SUPERBLOCK_BYTES};
pub use options::{Options, IDLE_THRESHOLD_NS, WHOLE_CACHE};
pub use route::{Route, Router};
pub use stats::{HybridStats, RecoveryReport};
