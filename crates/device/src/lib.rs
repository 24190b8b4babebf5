//! Block devices for flashkv.
//!
//! Everything above this crate sees storage only through [`BlockDevice`]: a
//! byte-addressed, sector-aligned device with a geometry (sector size, erase
//! unit or none, capacity). Implementations:
//!
//! * [`FileDevice`]: a real file or block device (pread/pwrite, O_DIRECT where
//!   the file system allows it, flush = fdatasync).
//! * [`SimDevice`]: stores the data for real and costs every operation with a
//!   [`Model`] (HDD, raw NAND, NAND + FTL, DRAM SSD), advancing a virtual clock.
//! * [`FaultDevice`]: wraps another device and injects crashes, torn and
//!   lost writes, I/O errors, corrupted reads, misdirected writes, latent
//!   sector errors and latency spikes, for crash-recovery and corruption tests.
//! * [`MemDevice`]: an untimed in-memory device of any geometry, for tests.
//! * [`PairDevice`]: two devices (a fast one and a slow one) as one address
//!   space, for a store that places its data by tier.
//!
//! Time is virtual nanoseconds ([`Nanos`]). Every operation is issued at a
//! time `at` and returns a [`Completion`]; a device serves operations in the
//! order they are submitted, using whatever internal concurrency its model has
//! (NAND channels and dies, an HDD's write-back cache). Synchronous callers use
//! the plain [`BlockDevice::read`] / [`BlockDevice::write`] helpers, which issue
//! at the device's clock.
//!
//! ```
//! use flashkv_device::{BlockDevice, presets};
//! let mut dev = presets::open("nvme").unwrap();
//! dev.write(0, &[7u8; 4096]).unwrap();
//! let mut buf = [0u8; 4096];
//! dev.read(0, &mut buf).unwrap();
//! assert_eq!(buf, [7u8; 4096]);
//! assert!(dev.clock() > 0);
//! ```

#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod array;
mod dirsync;
mod dram;
mod error;
mod fault;
mod file;
mod ftl;
mod hdd;
mod latency;
mod mem;
mod nand;
mod pair;
pub mod presets;
mod sim;
mod spec;
mod stats;
mod store;

pub use dirsync::sync_parent;
pub use dram::DramParams;
pub use error::{DeviceError, Result};
pub use fault::{FaultDevice, FaultPlan, Injected, Strike};
pub use file::{punch_hole, FileDevice, FileOptions};
pub use ftl::{CachePolicy, FtlMapping, FtlParams};
pub use hdd::HddParams;
pub use latency::Latencies;
pub use mem::MemDevice;
pub use nand::{update_in_place, NandParams};
pub use pair::{PairDevice, Tier, Tiers};
pub use sim::{Model, SimDevice};
pub use spec::{parse_size, Calibration, DeviceSpec, Fit, ModelSpec, PowerSpec, SIZE_UNITS};
pub use stats::{DeviceStats, EraseCounts, FtlCounters, Wear};
pub use store::{free_space, DataStore};

/// Virtual time in nanoseconds.
pub type Nanos = u64;

/// Makes every write a device completed so far durable, callable from any
/// thread without the device itself: see [`BlockDevice::syncer`].
pub type Syncer = std::sync::Arc<dyn Fn() -> Result<()> + Send + Sync>;

/// Shape of a device, all in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Geometry {
    /// Smallest unit of I/O: offsets and lengths must be multiples of it.
    pub sector_size: u32,
    /// Erase unit for devices the host must erase itself (raw NAND); `None`
    /// where the device (or its FTL) hides erasing.
    pub erase_unit: Option<u64>,
    /// Addressable bytes.
    pub capacity: u64,
    /// True where a sector can be written only once between erases of its
    /// unit (raw NAND). Writing it again is [`DeviceError::AlreadyProgrammed`].
    pub program_once: bool,
}

impl Geometry {
    /// Checks that `[offset, offset+len)` is sector aligned and inside the device.
    pub fn check(&self, offset: u64, len: u64) -> Result<()> {
        debug_assert!(self.sector_size > 0, "a geometry has sectors");
        let s = u64::from(self.sector_size);
        if offset % s != 0 || len % s != 0 {
            return Err(DeviceError::Misaligned {
                offset,
                len,
                sector: self.sector_size,
            });
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.capacity => Ok(()),
            _ => Err(DeviceError::OutOfRange {
                offset,
                len,
                capacity: self.capacity,
            }),
        }
    }
}

/// When an operation was served and what it cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Completion {
    /// When the device started serving it (after any queueing).
    pub start: Nanos,
    /// When it completed, as the host sees it.
    pub end: Nanos,
    /// Energy the operation consumed, in nanojoules.
    pub energy_nj: u64,
}

/// What a queued request is, for devices that reorder their queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuedIo {
    /// Byte offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// A write (else a read).
    pub write: bool,
}

/// A byte-addressed, sector-aligned block device.
pub trait BlockDevice: Send + Sync {
    /// Sector size, erase unit, capacity.
    fn geometry(&self) -> Geometry;

    /// Reads `buf.len()` bytes at `offset`, issued at virtual time `at`.
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion>;
    /// Writes `buf` at `offset`, issued at `at`.
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion>;
    /// Writes `len` zero bytes at `offset`, issued at `at`: the same
    /// request as [`BlockDevice::write_at`] with a buffer of zeros (costed
    /// and counted as one), which a device that keeps its data sparsely
    /// need not scan.
    fn write_zeros_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.write_at(at, offset, &vec![0; len as usize])
    }
    /// Makes every completed write durable (drains write caches).
    fn flush_at(&mut self, at: Nanos) -> Result<Completion>;
    /// Tells the device the range holds no data; it reads back as zeros.
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion>;
    /// Erases erase unit `unit` (raw NAND only); its sectors read as zeros and
    /// may be programmed again.
    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        let _ = (at, unit);
        Err(DeviceError::Unsupported(
            "erase: this device has no host-visible erase units",
        ))
    }
    /// Whether any sector of the range has been programmed since its unit's
    /// last erase. Only meaningful where `geometry().program_once`.
    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        let _ = (offset, len);
        false
    }

    /// The device's virtual clock: the latest completion it has reported (for
    /// a real file, wall time since it was opened).
    fn clock(&self) -> Nanos;
    /// Counters since the device was created.
    fn stats(&self) -> DeviceStats;

    /// True where the device picks the order in which it serves queued
    /// commands (an HDD's command queueing). Callers that keep several
    /// requests outstanding then hold them and ask [`Self::pick_next`] each
    /// time the device is free (at [`Self::busy_until`]).
    fn reorders_queue(&self) -> bool {
        false
    }
    /// Index into `queued` of the request the device serves next when free at `at`.
    fn pick_next(&self, at: Nanos, queued: &[QueuedIo]) -> usize {
        let _ = (at, queued);
        0
    }
    /// When the device can start serving the next command.
    fn busy_until(&self) -> Nanos {
        self.clock()
    }
    /// Fast preconditioning: puts the device in the state writing zeros
    /// over `[0, len)` sequentially would leave, without simulating each
    /// write, where the device can (a fresh page-mapped FTL). Counters and the
    /// clock do not move, as if the fill happened before the device was
    /// created. `Ok(false)` means it did nothing: write the span instead.
    fn fill_sequential(&mut self, len: u64) -> Result<bool> {
        let _ = len;
        Ok(false)
    }

    /// A flush that needs no `&mut self`, so a caller can make its writes
    /// durable outside its own lock while others go on writing (group
    /// commit). Only devices timed by the wall clock offer one: a
    /// simulated device's flush moves its virtual clock. Default: none,
    /// flush through [`Self::flush_at`].
    fn syncer(&self) -> Option<Syncer> {
        None
    }

    /// Energy in nanojoules from time 0 up to host time `t`: the
    /// operations' energy plus idle power for the time the device was idle
    /// and standby power for the time it was in standby. A `t` past the
    /// clock counts the rest as idle time, then standby once the standby
    /// timer ran out; a `t` before it counts up to the clock. Default: the
    /// operations' energy only (a real file).
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        let _ = t;
        self.stats().energy_nj
    }
    /// The host did nothing until `t` (think time): the clock moves to `t`
    /// if it is behind, with no operation. Whether the device went to
    /// standby meanwhile is decided at the next operation. Default: nothing
    /// (a real file keeps wall time).
    fn advance_to(&mut self, t: Nanos) {
        let _ = t;
    }
    /// Sets the idle time after which the device enters standby (the ATA
    /// standby timer), or `None` for never. Fails for a device without a
    /// standby state.
    fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        match after {
            None => Ok(()),
            Some(_) => Err(DeviceError::Unsupported(
                "standby: this device has no standby state",
            )),
        }
    }
    /// Where each device of a pair ([`PairDevice`]) lies in the address
    /// space; `None` for a single device.
    fn tiers(&self) -> Option<Tiers> {
        None
    }

    /// Synchronous read, issued at the device's clock.
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        let at = self.clock();
        self.read_at(at, offset, buf)
    }
    /// Synchronous write, issued at the device's clock.
    fn write(&mut self, offset: u64, buf: &[u8]) -> Result<Completion> {
        let at = self.clock();
        self.write_at(at, offset, buf)
    }
    /// Synchronous [`BlockDevice::write_zeros_at`].
    fn write_zeros(&mut self, offset: u64, len: u64) -> Result<Completion> {
        let at = self.clock();
        self.write_zeros_at(at, offset, len)
    }
    /// Synchronous flush.
    fn flush(&mut self) -> Result<Completion> {
        let at = self.clock();
        self.flush_at(at)
    }
    /// Synchronous trim.
    fn trim(&mut self, offset: u64, len: u64) -> Result<Completion> {
        let at = self.clock();
        self.trim_at(at, offset, len)
    }
    /// Synchronous erase.
    fn erase(&mut self, unit: u64) -> Result<Completion> {
        let at = self.clock();
        self.erase_at(at, unit)
    }
}

impl<D: BlockDevice + ?Sized> BlockDevice for Box<D> {
    fn geometry(&self) -> Geometry {
        (**self).geometry()
    }
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        (**self).read_at(at, offset, buf)
    }
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        (**self).write_at(at, offset, buf)
    }
    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        (**self).flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        (**self).trim_at(at, offset, len)
    }
    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        (**self).erase_at(at, unit)
    }
    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        (**self).is_programmed(offset, len)
    }
    fn clock(&self) -> Nanos {
        (**self).clock()
    }
    fn stats(&self) -> DeviceStats {
        (**self).stats()
    }
    fn reorders_queue(&self) -> bool {
        (**self).reorders_queue()
    }
    fn pick_next(&self, at: Nanos, queued: &[QueuedIo]) -> usize {
        (**self).pick_next(at, queued)
    }
    fn busy_until(&self) -> Nanos {
        (**self).busy_until()
    }
    fn fill_sequential(&mut self, len: u64) -> Result<bool> {
        (**self).fill_sequential(len)
    }
    fn syncer(&self) -> Option<Syncer> {
        (**self).syncer()
    }
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        (**self).energy_nj_until(t)
    }
    fn advance_to(&mut self, t: Nanos) {
        (**self).advance_to(t)
    }
    fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        (**self).set_standby_after(after)
    }
    fn tiers(&self) -> Option<Tiers> {
        (**self).tiers()
    }
}
