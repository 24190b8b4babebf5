//! HeteroDrive (seed 003): an SSD in front of an HDD, seen as one
//! [`flashkv_device::BlockDevice`], plus block-trace parsing ([`trace`]) and
//! replay on any device ([`replay`]).
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

mod device;
mod error;
mod flush;
mod layout;
mod maps;
mod options;
mod record;
mod recover;
pub mod replay;
mod route;
mod stats;
mod tablets;
pub mod trace;

pub use device::HybridDevice;
pub use error::{HybridError, Result};
pub use layout::Layout;
pub use options::Options;
pub use route::{Route, Router};
pub use stats::{HybridStats, RecoveryReport};
