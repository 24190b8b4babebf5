//! What a store is opened with.

use std::sync::Arc;

use crate::policy::{Lru, Policy};

/// How in-page logging divides an erase unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IplGeometry {
    /// Data page size in bytes.
    pub page_size: u32,
    /// Data pages per erase unit.
    pub pages_per_unit: u32,
    /// 512-byte log sectors per erase unit.
    pub log_sectors: u32,
    /// `Some(k)`: page `i` owns log sectors `k*i .. k*i+k`; `None`: the log
    /// sectors are shared by all pages of the unit, taken in order.
    pub sectors_per_page: Option<u32>,
}

/// Size of an in-page-logging log sector (seed 001, Listing 5.10: SECTORSIZE 512).
pub const LOG_SECTOR: u32 = 512;

impl IplGeometry {
    /// Seed 001 (Figure 4.1): 128 KB unit = 28 × 4 KB pages + 32 × 512 B log
    /// sectors, one log sector per page (4 left over).
    pub const fn seed() -> Self {
        IplGeometry {
            page_size: 4096,
            pages_per_unit: 28,
            log_sectors: 32,
            sectors_per_page: Some(1),
        }
    }
    /// Lee & Moon, SIGMOD 2007: 128 KB unit = 15 × 8 KB pages + 16 × 512 B
    /// log sectors shared by the unit's pages.
    pub const fn shared() -> Self {
        IplGeometry {
            page_size: 8192,
            pages_per_unit: 15,
            log_sectors: 16,
            sectors_per_page: None,
        }
    }
    /// `pages_per_unit` pages of `page_size` bytes, each with `sectors_per_page` log sectors.
    pub const fn custom(page_size: u32, pages_per_unit: u32, sectors_per_page: u32) -> Self {
        IplGeometry {
            page_size,
            pages_per_unit,
            log_sectors: pages_per_unit * sectors_per_page,
            sectors_per_page: Some(sectors_per_page),
        }
    }
    /// Bytes of one erase unit.
    pub fn unit_size(&self) -> u64 {
        u64::from(self.page_size) * u64::from(self.pages_per_unit)
            + u64::from(self.log_sectors) * u64::from(LOG_SECTOR)
    }
}

impl Default for IplGeometry {
    fn default() -> Self {
        Self::seed()
    }
}

/// Which page store writes pages to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Whole pages written back where they live (read-erase-rewrite of the
    /// erase unit on raw NAND when the page is already programmed).
    InPlace,
    /// In-page logging with the given erase-unit layout.
    InPageLogging(IplGeometry),
}

impl StoreKind {
    pub fn name(&self) -> &'static str {
        match self {
            StoreKind::InPlace => "in-place",
            StoreKind::InPageLogging(_) => "ipl",
        }
    }
}

/// What a device profile says about request sizes, for [`Options::tuned_for`]
/// (the lab's advisor, `flashkv advise`, makes one from a profile).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoProfile {
    /// Bytes per device read when a scan reads the page store sequentially
    /// (the advisor's best sequential-read block size).
    pub scan_read_bytes: u64,
    /// Bytes per device write when the page store writes consecutive pages
    /// (the advisor's best sequential-write block size).
    pub seq_write_bytes: u64,
    /// Fraction of a table above which reading all of it sequentially is
    /// cheaper than reading the pages wanted one by one (seed 002's breakeven).
    pub breakeven_fraction: f64,
}

/// Makes a replacement policy for a pool of the given number of frames.
pub type PolicyFactory = Arc<dyn Fn(usize) -> Box<dyn Policy> + Send + Sync>;

/// Options for [`crate::Db::open`].
#[derive(Clone)]
pub struct Options {
    /// Page store; `None` means the one the store was created with, or
    /// `InPlace` for a new store. A mismatch with the stored one is an error.
    pub store: Option<StoreKind>,
    /// Page size of the in-place store (IPL takes it from its geometry).
    pub page_size: u32,
    /// Buffer pool frames (at least 1). A write batch may pin more frames
    /// while it runs; the pool shrinks back when it commits.
    pub buffer_pages: usize,
    /// Buffer replacement policy.
    pub policy: PolicyFactory,
    /// Keep the B+-tree's internal pages resident outside the buffer budget,
    /// as seed 001 keeps its index in main memory: with `buffer_pages = 1`
    /// the one frame then holds data (leaf and overflow) pages only.
    pub index_in_memory: bool,
    /// Write-ahead log. Without it nothing is durable until [`crate::Db::flush`]
    /// and a crash can corrupt the store: only for experiments that count
    /// page-store I/O alone.
    pub wal: bool,
    /// Bytes reserved for the write-ahead log.
    pub wal_size: u64,
    /// Make every write durable before it returns (a device flush per write).
    pub sync: bool,
    /// Bytes of the device the store may use; `None` = min(capacity, 1 GiB).
    pub max_size: Option<u64>,
    /// Request sizes and scan breakeven of the device; `None`: every page
    /// is read and written on its own.
    pub io: Option<IoProfile>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            store: None,
            page_size: 4096,
            buffer_pages: 256,
            policy: Arc::new(|_| Box::new(Lru::default())),
            index_in_memory: false,
            wal: true,
            wal_size: 16 << 20,
            sync: false,
            max_size: None,
            io: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("store", &self.store)
            .field("page_size", &self.page_size)
            .field("buffer_pages", &self.buffer_pages)
            .field("index_in_memory", &self.index_in_memory)
            .field("wal", &self.wal)
            .field("wal_size", &self.wal_size)
            .field("sync", &self.sync)
            .field("max_size", &self.max_size)
            .field("io", &self.io)
            .finish()
    }
}

impl Options {
    /// The default options, with reads and writes sized for the device
    /// `profile` describes: a range scan expected to touch more than the
    /// breakeven fraction of the page store reads it in runs of
    /// `scan_read_bytes` instead of page by page, and consecutive new pages
    /// are written in requests of up to `seq_write_bytes`.
    pub fn tuned_for(profile: &IoProfile) -> Options {
        Options::default().io_profile(*profile)
    }
    /// Sizes reads and writes for a device (see [`Options::tuned_for`]).
    pub fn io_profile(mut self, profile: IoProfile) -> Self {
        self.io = Some(profile);
        self
    }
    /// Chooses the page store.
    pub fn store(mut self, kind: StoreKind) -> Self {
        self.store = Some(kind);
        self
    }
    pub fn buffer_pages(mut self, n: usize) -> Self {
        self.buffer_pages = n;
        self
    }
    pub fn wal(mut self, on: bool) -> Self {
        self.wal = on;
        self
    }
    pub fn wal_size(mut self, bytes: u64) -> Self {
        self.wal_size = bytes;
        self
    }
    pub fn sync(mut self, on: bool) -> Self {
        self.sync = on;
        self
    }
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.max_size = Some(bytes);
        self
    }
    pub fn index_in_memory(mut self, on: bool) -> Self {
        self.index_in_memory = on;
        self
    }
    pub fn policy(mut self, f: PolicyFactory) -> Self {
        self.policy = f;
        self
    }
}
