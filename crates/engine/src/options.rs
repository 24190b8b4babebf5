//! What a store is opened with.

use std::sync::Arc;

use crate::error::{invalid, Result};
use crate::policies::Clock;
use crate::policy::Policy;

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
    /// Why this layout cannot work, if it cannot: a page size out of
    /// range, too many pages per unit for the map's bit set, too many log
    /// sectors for its owner bytes, or too few for every page.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        if let Some(why) = page_size_problem(self.page_size) {
            return Some(why);
        }
        if !(1..=64).contains(&self.pages_per_unit) {
            return Some("in-page logging takes 1..=64 pages per erase unit");
        }
        if self.log_sectors > 255 {
            return Some("in-page logging takes at most 255 log sectors per erase unit");
        }
        match self.sectors_per_page {
            Some(k)
                if k == 0
                    || u64::from(k) * u64::from(self.pages_per_unit)
                        > u64::from(self.log_sectors) =>
            {
                Some("in-page logging needs a log sector for every page")
            }
            None if self.log_sectors == 0 => {
                Some("in-page logging needs a log sector for every page")
            }
            _ => None,
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
    /// Pages placed across the two devices of a device pair
    /// (`flashkv_device::PairDevice`), a fast one and a slow one, by the
    /// given policy; written back in place (as [`StoreKind::InPlace`]) on
    /// whichever device holds them.
    TwoDevice(Placement),
}

impl StoreKind {
    /// The store's name in reports and on the command line: "in-place",
    /// "ipl" or "two-device".
    pub fn name(&self) -> &'static str {
        match self {
            StoreKind::InPlace => "in-place",
            StoreKind::InPageLogging(_) => "ipl",
            StoreKind::TwoDevice(_) => "two-device",
        }
    }
}

/// Where a two-device store ([`StoreKind::TwoDevice`]) puts each page.
/// Every page has a home on the slow device; a page placed on the fast
/// device lives in one of its slots instead, as many as it has room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Internal (index) pages on the fast device, leaves and overflow pages
    /// on the slow one: seed 002's "Index on SSD". Where the fast device is
    /// full, an internal page stays on the slow one.
    IndexOnFast,
    /// Pages move by their observed reads and writes (after the hot/cold,
    /// read-/write-intensive placement of Koltsidas & Viglas, "Flashing up
    /// the storage layer", VLDB 2008): a page moves when what it has cost
    /// where it is, against what it would have cost on the other device,
    /// exceeds what moving it costs; the fast device keeps the pages that
    /// gain most from it.
    HotCold,
}

impl Placement {
    /// Every placement, in the order reports list them.
    pub const ALL: [Placement; 2] = [Placement::IndexOnFast, Placement::HotCold];

    /// The policy's name in reports and on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Placement::IndexOnFast => "index-on-fast",
            Placement::HotCold => "hot-cold",
        }
    }

    /// The placement called `name` ([`Placement::name`]).
    pub fn by_name(name: &str) -> Option<Placement> {
        Placement::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// What a device profile says about request sizes, for
/// [`OptionsBuilder::io_profile`] (the lab's advisor, `flashkv advise`,
/// makes one from a profile).
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

/// How large the buffer pool may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    Frames(usize),
    Bytes(u64),
}

impl Pool {
    /// Frames of `page_size` bytes (at least one).
    pub fn frames(self, page_size: u32) -> usize {
        match self {
            Pool::Frames(n) => n,
            Pool::Bytes(b) => usize::try_from(b / u64::from(page_size)).unwrap_or(usize::MAX),
        }
        .max(1)
    }
}

/// Makes a replacement policy for a pool of the given number of frames.
pub type PolicyFactory = Arc<dyn Fn(usize) -> Box<dyn Policy> + Send + Sync>;

/// Page size of an in-place store unless [`OptionsBuilder::page_size`] says otherwise.
const PAGE_SIZE: u32 = 4096;
/// The memtable's budget on a store in a file unless
/// [`OptionsBuilder::memtable`] says otherwise: RocksDB's default write
/// buffer (`write_buffer_size`, 64 MiB).
const MEMTABLE: usize = 64 << 20;
/// Percent of a leaf an ordered load fills, unless [`OptionsBuilder::append_fill`] says otherwise.
const APPEND_FILL: u8 = 90;

/// The buffer pool's bytes at most unless [`OptionsBuilder::cache_size`]
/// or [`OptionsBuilder::buffer_pages`] says otherwise: an eighth of the
/// machine's memory, between [`MIN_CACHE`] and [`MAX_CACHE`].
fn default_cache() -> u64 {
    // SAFETY: sysconf has no preconditions; -1 (unknown) is handled.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let ram = u64::try_from(pages).unwrap_or(0) * u64::try_from(size).unwrap_or(0);
    (ram / 8).clamp(MIN_CACHE, MAX_CACHE)
}
/// The default pool on a machine of little memory (or one that does not say).
const MIN_CACHE: u64 = 64 << 20;
/// The default pool at most: redb's default cache.
const MAX_CACHE: u64 = 1 << 30;
/// Bytes of write-ahead log unless [`OptionsBuilder::wal_size`] says
/// otherwise: an eighth of the store's room, at most this.
const WAL_SIZE: u64 = 64 << 20;
/// The smallest write-ahead log: room for a batch of a few large pages.
const MIN_WAL: u64 = 64 << 10;

/// Why a page size cannot be used, if it cannot.
fn page_size_problem(bytes: u32) -> Option<&'static str> {
    match (512..=65536).contains(&bytes) && bytes % 512 == 0 {
        true => None,
        false => Some("a page is 512..=65536 bytes, a multiple of 512"),
    }
}

/// Options for opening a store, validated when built: make them with
/// [`Options::builder`], or take [`Options::default`].
///
/// ```
/// use flashkv_engine::{Options, StoreKind};
/// let o = Options::builder().store(StoreKind::InPlace).buffer_pages(1024).sync(true).build().unwrap();
/// # let _ = o;
/// assert!(Options::builder().buffer_pages(0).build().is_err());
/// ```
#[derive(Clone)]
pub struct Options {
    pub(crate) store: Option<StoreKind>,
    pub(crate) page_size: Option<u32>,
    pub(crate) pool: Pool,
    pub(crate) policy: PolicyFactory,
    pub(crate) wal_size: Option<u64>,
    pub(crate) sync: bool,
    pub(crate) writer: bool,
    pub(crate) close_checkpoint: bool,
    pub(crate) memtable: Option<usize>,
    pub(crate) append_fill: u8,
    pub(crate) max_size: Option<u64>,
    pub(crate) io: Option<IoProfile>,
    pub(crate) lab: LabOptions,
}

/// Knobs for experiments that count page-store I/O the way seed 001 does.
/// They weaken what a store guarantees, so they are not for production
/// use: they are set through `OptionsBuilder::lab`, which only builds
/// with the crate's `lab` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabOptions {
    /// Write-ahead log. Without it nothing is durable until
    /// [`crate::Db::flush`] and a crash can leave the store unreadable.
    /// Default: `true`.
    pub wal: bool,
    /// Keep the B+-tree's internal pages resident outside the buffer
    /// budget, as seed 001 keeps its index in main memory: with one buffer
    /// page the frame then holds data (leaf and overflow) pages only.
    /// Default: `false`.
    pub index_in_memory: bool,
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            wal: true,
            index_in_memory: false,
        }
    }
}

/// Builds [`Options`]: every setter says its default, and
/// [`OptionsBuilder::build`] checks what can be checked before a device is
/// seen (what depends on the device is checked when the store opens).
#[derive(Clone)]
#[must_use = "a builder does nothing until it is built"]
pub struct OptionsBuilder(Options);

impl Default for Options {
    fn default() -> Self {
        Options {
            store: None,
            page_size: None,
            pool: Pool::Bytes(default_cache()),
            policy: Arc::new(|_| Box::new(Clock::default())),
            wal_size: None,
            sync: false,
            writer: true,
            close_checkpoint: false,
            memtable: None,
            append_fill: APPEND_FILL,
            max_size: None,
            io: None,
            lab: LabOptions::default(),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("store", &self.store)
            .field("page_size", &self.page_size)
            .field("pool", &self.pool)
            .field("wal_size", &self.wal_size)
            .field("sync", &self.sync)
            .field("writer", &self.writer)
            .field("close_checkpoint", &self.close_checkpoint)
            .field("memtable", &self.memtable)
            .field("append_fill", &self.append_fill)
            .field("max_size", &self.max_size)
            .field("io", &self.io)
            .field("lab", &self.lab)
            .finish()
    }
}

impl Options {
    /// A builder starting from the defaults.
    pub fn builder() -> OptionsBuilder {
        OptionsBuilder(Options::default())
    }

    /// A builder starting from these options.
    pub fn to_builder(&self) -> OptionsBuilder {
        OptionsBuilder(self.clone())
    }

    /// Bytes the memtable may hold on a store in a file (`file`) or not
    /// ([`OptionsBuilder::memtable`]).
    pub(crate) fn memtable_bytes(&self, file: bool) -> usize {
        self.memtable.unwrap_or(if file { MEMTABLE } else { 0 })
    }

    /// Bytes of the log's home for a new store that may use `room` bytes.
    pub(crate) fn wal_bytes(&self, room: u64) -> u64 {
        self.wal_size.unwrap_or((room / 8).clamp(MIN_WAL, WAL_SIZE))
    }

    /// Page size of a new in-place store.
    pub(crate) fn in_place_page_size(&self) -> u32 {
        self.page_size.unwrap_or(PAGE_SIZE)
    }
}

impl OptionsBuilder {
    /// The page store. A store opened with another one than it was
    /// created with is refused ([`crate::Error::StoreMismatch`]).
    /// Default: the one the store was created with; for a new store
    /// [`StoreKind::InPlace`].
    pub fn store(mut self, kind: StoreKind) -> Self {
        self.0.store = Some(kind);
        self
    }

    /// Page size of a new in-place store: 512..=65536 bytes, a multiple of
    /// 512 and of the device's sector, dividing its erase unit. In-page
    /// logging takes its geometry's page size; a different one here is an
    /// error. Default: 4096.
    pub fn page_size(mut self, bytes: u32) -> Self {
        self.0.page_size = Some(bytes);
        self
    }

    /// Buffer pool frames (pages), at least 1; replaces
    /// [`OptionsBuilder::cache_size`]. A write batch may pin more frames
    /// while it runs; the pool shrinks back when it commits. Default: what
    /// [`OptionsBuilder::cache_size`]'s default holds.
    pub fn buffer_pages(mut self, frames: usize) -> Self {
        self.0.pool = Pool::Frames(frames);
        self
    }

    /// Bytes of pages the buffer pool holds at most (rounded down to whole
    /// pages, at least one); replaces [`OptionsBuilder::buffer_pages`].
    /// The pool takes memory only for the pages read or written, so this
    /// is a cap, not an allocation. Default: an eighth of the machine's
    /// memory, at least 64 MiB and at most 1 GiB (redb's default cache): a
    /// store shares the machine with its application, and the operating
    /// system's page cache holds what the pool drops.
    pub fn cache_size(mut self, bytes: u64) -> Self {
        self.0.pool = Pool::Bytes(bytes);
        self
    }

    /// The buffer replacement policy ([`crate::policy_by_name`] makes the
    /// built-in ones). Default: CLOCK ([`crate::policies::Clock`]), as
    /// PostgreSQL's clock sweep: a hit sets a bit in the page's frame, so
    /// readers record hits with no lock and no list to move, where LRU
    /// moves the page in a list under a lock (measured in
    /// docs/benchmarks.md, "CLOCK by default"). The lab's stores set
    /// [`crate::Lru`], the seeds' policy.
    pub fn policy(mut self, factory: PolicyFactory) -> Self {
        self.0.policy = factory;
        self
    }

    /// Bytes of the write-ahead log's home region of a new store, at least
    /// 64 KiB (rounded up to two erase units). A batch whose record does
    /// not fit half of it moves the log to a larger region for as long as
    /// needed (except on raw NAND, where it is refused with
    /// [`crate::Error::Full`]); a larger log lets pages stay dirty longer,
    /// absorbing more changes per write back. In a file the region costs
    /// disk space only where written, and is given back after each
    /// checkpoint. Default: an eighth of the bytes the store may use
    /// ([`OptionsBuilder::max_size`], or the device), at least 64 KiB and at
    /// most 64 MiB.
    pub fn wal_size(mut self, bytes: u64) -> Self {
        self.0.wal_size = Some(bytes);
        self
    }

    /// Make every write durable before it returns (a device flush per
    /// write); otherwise writes are durable after [`crate::Db::flush`].
    /// Default: `false`.
    pub fn sync(mut self, on: bool) -> Self {
        self.0.sync = on;
        self
    }

    /// Clean dirty pages ahead of need: a background writer writes back the
    /// pages changed longest ago, so that a log switch carries few pages
    /// forward and an eviction seldom finds a dirty victim. A thread where
    /// the log's device can be flushed from one (a file); otherwise the
    /// work runs after the commit that calls for it. Off: pages are
    /// written back only when evicted or at checkpoints, as in the seed
    /// experiments. Default: `true`.
    pub fn writer(mut self, on: bool) -> Self {
        self.0.writer = on;
        self
    }

    /// Make [`crate::Db::close`] write every dirty page back first (a full
    /// checkpoint), so that the next open replays nothing. Off, a close of
    /// an in-place store makes the log durable and marks its end, writing
    /// no page (unless writing them would write less than the log holds):
    /// the next open, or a [`crate::Db::open_read_only`], replays the log
    /// into the pool and a writer goes on appending to it; the pages are
    /// written when the background writer or the next log switch would
    /// have written them, as if the store had stayed open (an LSM store's
    /// close leaves its memtable in its journal the same way). Stores that
    /// do not overwrite pages (in-page logging, two devices) and stores on
    /// raw NAND always checkpoint at close. Default: `false`.
    pub fn close_checkpoint(mut self, on: bool) -> Self {
        self.0.close_checkpoint = on;
        self
    }

    /// Bytes of small batches' pairs held in memory (a memtable) before
    /// they go into the tree, on an in-place store with a log. A batch
    /// that fits the budget is committed by logging its pairs, not by
    /// changing the leaves they land in; reads look in the memtable first.
    /// Once it would hold more, all of it goes into the tree in key order
    /// as one batch (a drain), as it does before a batch larger than the
    /// budget, which goes to the tree directly. A close leaves it in the
    /// log, and the next open reads it back. 0: every write goes to the
    /// tree. Default: 64 MiB on a store in a file (RocksDB's write buffer),
    /// 0 on emulated devices, whose page-level counts the lab studies; it
    /// is ignored by stores other than in place, by stores on raw NAND and
    /// without the log.
    pub fn memtable(mut self, bytes: usize) -> Self {
        self.0.memtable = Some(bytes);
        self
    }

    /// Percent of a leaf's bytes kept when a key past the tree's right
    /// edge splits it (keys arriving in ascending order: an ordered load,
    /// increasing ids), 50 to 95: what such a load leaves filled. High
    /// suits keys that keep increasing; lower it (as PostgreSQL's
    /// `fillfactor`) when later inserts land among the loaded keys, which
    /// then split full leaves less often. Default: 90 (PostgreSQL's).
    pub fn append_fill(mut self, percent: u8) -> Self {
        self.0.append_fill = percent;
        self
    }

    /// Bytes of the device a new store may use (for a store in a file: the
    /// most the file grows to). Default: the whole device; 64 GiB for a
    /// store in a file.
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.0.max_size = Some(bytes);
        self
    }

    /// Sizes reads and writes for the device `profile` describes: a range
    /// scan expected to touch more than the breakeven fraction of the page
    /// store reads it in runs of `scan_read_bytes` instead of page by page,
    /// and consecutive new pages are written in requests of up to
    /// `seq_write_bytes`. Default: none, every page is read and written on
    /// its own.
    pub fn io_profile(mut self, profile: IoProfile) -> Self {
        self.0.io = Some(profile);
        self
    }

    /// Research knobs ([`LabOptions`]). Default: [`LabOptions::default`].
    #[cfg(feature = "lab")]
    pub fn lab(mut self, lab: LabOptions) -> Self {
        self.0.lab = lab;
        self
    }

    /// The options, if they are consistent; [`crate::Error::InvalidOption`]
    /// names the first that is not.
    pub fn build(self) -> Result<Options> {
        let o = self.0;
        if o.pool == Pool::Frames(0) {
            return Err(invalid(
                "buffer_pages",
                "the buffer pool needs at least 1 frame",
            ));
        }
        if o.pool == Pool::Bytes(0) {
            return Err(invalid(
                "cache_size",
                "the buffer pool needs room for at least 1 page",
            ));
        }
        if let Some(wal) = o.wal_size.filter(|&w| w < MIN_WAL) {
            return Err(invalid(
                "wal_size",
                format!("{wal} bytes is less than the 64 KiB a log needs"),
            ));
        }
        if !(50..=95).contains(&o.append_fill) {
            return Err(invalid(
                "append_fill",
                format!("{} % is outside 50 to 95 %", o.append_fill),
            ));
        }
        if o.max_size == Some(0) {
            return Err(invalid("max_size", "a store needs more than 0 bytes"));
        }
        if let Some(why) = o.page_size.and_then(page_size_problem) {
            return Err(invalid("page_size", why));
        }
        if let Some(StoreKind::InPageLogging(g)) = o.store {
            if let Some(why) = g.problem() {
                return Err(invalid("store", why));
            }
            if o.page_size.is_some_and(|p| p != g.page_size) {
                return Err(invalid(
                    "page_size",
                    "in-page logging takes its geometry's page size",
                ));
            }
        }
        if let Some(io) = o.io {
            check_io(&io)?;
        }
        Ok(o)
    }
}

/// Checks an I/O profile.
fn check_io(io: &IoProfile) -> Result<()> {
    if !(0.0..=1.0).contains(&io.breakeven_fraction) {
        return Err(invalid(
            "io_profile",
            format!(
                "breakeven fraction {} must be within 0..=1",
                io.breakeven_fraction
            ),
        ));
    }
    if io.scan_read_bytes == 0 || io.seq_write_bytes == 0 {
        return Err(invalid(
            "io_profile",
            "request sizes must be at least 1 byte",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn refused(b: OptionsBuilder, option: &str) {
        match b.build() {
            Err(Error::InvalidOption { option: o, .. }) => assert_eq!(o, option),
            other => panic!("{option}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn the_defaults_build() {
        let o = Options::builder().build().unwrap();
        assert_eq!(format!("{o:?}"), format!("{:?}", Options::default()));
        assert_eq!(o.in_place_page_size(), 4096);
        assert_eq!((o.wal_size, o.sync, o.writer), (None, false, true));
        assert_eq!(o.wal_bytes(64 << 30), 64 << 20);
        assert_eq!(o.wal_bytes(64 << 20), 8 << 20);
        assert_eq!(o.wal_bytes(1 << 10), 64 << 10);
        let Pool::Bytes(cache) = o.pool else {
            panic!("the default pool is a size in bytes")
        };
        assert!((64 << 20..=1 << 30).contains(&cache), "{cache}");
        assert_eq!(Pool::Bytes(cache).frames(4096) as u64, cache / 4096);
        assert_eq!(Pool::Bytes(100).frames(4096), 1, "at least one frame");
        assert_eq!(
            o.lab,
            LabOptions {
                wal: true,
                index_in_memory: false
            }
        );
    }

    #[test]
    fn build_refuses_what_cannot_work() {
        refused(Options::builder().buffer_pages(0), "buffer_pages");
        refused(Options::builder().cache_size(0), "cache_size");
        refused(Options::builder().append_fill(49), "append_fill");
        refused(Options::builder().append_fill(96), "append_fill");
        refused(Options::builder().wal_size((64 << 10) - 1), "wal_size");
        refused(Options::builder().max_size(0), "max_size");
        refused(Options::builder().page_size(1000), "page_size");
        refused(Options::builder().page_size(256), "page_size");
        refused(Options::builder().page_size(128 << 10), "page_size");
        let ipl = StoreKind::InPageLogging(IplGeometry::seed());
        refused(Options::builder().store(ipl).page_size(8192), "page_size");
        refused(
            Options::builder().store(StoreKind::InPageLogging(IplGeometry::custom(4096, 65, 1))),
            "store",
        );
        refused(
            Options::builder().store(StoreKind::InPageLogging(IplGeometry {
                sectors_per_page: Some(2),
                ..IplGeometry::seed()
            })),
            "store",
        );
        let io = IoProfile {
            scan_read_bytes: 1 << 20,
            seq_write_bytes: 1 << 20,
            breakeven_fraction: 1.5,
        };
        refused(Options::builder().io_profile(io), "io_profile");
        let io = IoProfile {
            breakeven_fraction: f64::NAN,
            ..io
        };
        refused(Options::builder().io_profile(io), "io_profile");
        let io = IoProfile {
            scan_read_bytes: 0,
            breakeven_fraction: 0.5,
            ..io
        };
        refused(Options::builder().io_profile(io), "io_profile");
        // Built options start a builder that checks again.
        let o = Options::builder().sync(true).build().unwrap();
        refused(o.to_builder().buffer_pages(0), "buffer_pages");
        assert!(o.to_builder().build().unwrap().sync);
        // The boundaries themselves build.
        let ok = Options::builder()
            .buffer_pages(1)
            .wal_size(64 << 10)
            .page_size(512);
        assert!(ok.store(ipl).page_size(4096).build().is_ok());
    }
}
