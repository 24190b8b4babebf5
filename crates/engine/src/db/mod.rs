//! The database: open, the public API, commits and checkpoints
//! (recovery is in [`recover`]).

mod close;
mod recover;

use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use flashkv_device::{BlockDevice, DeviceStats, Geometry};

use crate::btree::{self, Meta, Shape, Tree};
use crate::buffer::{BufferPool, BufferStats, Change};
use crate::error::{corrupt, invalid, Error, Location, Result, Structure};
use crate::file::{self, Mode};
use crate::group::LogSync;
use crate::io::{Disk, Region, RegionStats};
use crate::iter::{prefix_end, Range};
use crate::logdev;
use crate::options::{IoProfile, Options, StoreKind, LOG_SECTOR};
use crate::page::{PageId, NO_PAGE};
use crate::redo;
use crate::store::{InPlace, Ipl, PageStore, StoreStats};
use crate::superblock::{Checkpoint, Layout, SLOT_BYTES};
use crate::wal::{Logged, Next, Wal};

/// Default virtual capacity of a store in a file (the file grows as the
/// store does, so this is a limit, not a size).
const FILE_MAX: u64 = 64 << 30;
/// Erase-unit size assumed for in-place stores on devices without one.
const EMULATED_UNIT: u64 = 128 << 10;

/// A store's device and its log device, if it has one.
pub type Devices = (Box<dyn BlockDevice>, Option<Box<dyn BlockDevice>>);

/// A change in a [`WriteBatch`], borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set the key to the value.
    Put(&'a [u8], &'a [u8]),
    /// Remove the key.
    Delete(&'a [u8]),
}

impl<'a> BatchOp<'a> {
    /// The key the operation changes.
    pub fn key(&self) -> &'a [u8] {
        match *self {
            BatchOp::Put(k, _) | BatchOp::Delete(k) => k,
        }
    }
}

/// Changes applied atomically by [`Db::write`]: after a crash either all of
/// them are visible or none is.
///
/// ```
/// # use flashkv_engine::{Db, Options, WriteBatch};
/// # let db = Db::open(Box::new(flashkv_device::presets::open("dram-ssd").unwrap()), Options::default()).unwrap();
/// let mut b = WriteBatch::default();
/// b.put(b"a", b"1").put(b"b", b"2").delete(b"c");
/// db.write(b).unwrap();
/// assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
/// ```
///
/// Keys and values are copied into one buffer, not allocated one by one:
/// a batch of 1,000 puts spent a fifth of its time in `malloc` and `free`
/// when each pair was two vectors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// Keys and values, back to back.
    bytes: Vec<u8>,
    /// Per change: where its key starts, the key's length, and the value's
    /// length (`u32::MAX` for a delete); the value follows the key.
    ops: Vec<(usize, u32, u32)>,
}

/// The value length marking a delete in [`WriteBatch::ops`].
const DELETE: u32 = u32::MAX;

impl WriteBatch {
    /// An empty batch with room for `ops` changes of `bytes` key and value
    /// bytes in all.
    pub fn with_capacity(ops: usize, bytes: usize) -> Self {
        WriteBatch {
            bytes: Vec::with_capacity(bytes),
            ops: Vec::with_capacity(ops),
        }
    }

    /// Sets `key` to `value` when the batch is written.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        // Lengths beyond u32 are refused when the batch is written (a key
        // or value must fit a page); saturate so they stay refusable.
        let vl = u32::try_from(value.len())
            .unwrap_or(DELETE - 1)
            .min(DELETE - 1);
        self.push(key, vl);
        self.bytes.extend_from_slice(value);
        self
    }

    /// Removes `key` when the batch is written.
    pub fn delete(&mut self, key: &[u8]) -> &mut Self {
        self.push(key, DELETE);
        self
    }

    fn push(&mut self, key: &[u8], vl: u32) {
        let kl = u32::try_from(key.len()).unwrap_or(u32::MAX);
        self.ops.push((self.bytes.len(), kl, vl));
        self.bytes.extend_from_slice(key);
    }

    /// The changes, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = BatchOp<'_>> + '_ {
        self.ops.iter().map(|&(at, kl, vl)| {
            let k_end = at + kl as usize;
            let key = &self.bytes[at..k_end];
            match vl {
                DELETE => BatchOp::Delete(key),
                _ => BatchOp::Put(key, &self.bytes[k_end..k_end + vl as usize]),
            }
        })
    }

    /// Changes in the batch.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch holds no change.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Counters since the store was opened.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stats {
    /// The page store's name ([`StoreKind::name`]).
    pub store_kind: &'static str,
    /// The replacement policy's name.
    pub policy: &'static str,
    /// Buffer pool counters.
    pub buffer: BufferStats,
    /// Pages in the buffer pool now.
    pub resident_pages: usize,
    /// Pages allocated in the page store (free ones included).
    pub pages_allocated: u64,
    /// Page-store counters (pages, log sectors, merges, erases).
    pub store: StoreStats,
    /// Device operations on the page store's region: what seed 001 counts.
    pub data_io: RegionStats,
    /// Device operations of the write-ahead log.
    pub wal_io: RegionStats,
    /// Device operations of checkpoints (superblocks).
    pub meta_io: RegionStats,
    /// Batches committed.
    pub commits: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Device flushes (each makes the log durable).
    pub device_flushes: u64,
    /// The device's own counters (all regions).
    pub device: DeviceStats,
    /// The log device's counters, where the log has a device of its own.
    pub log_device: Option<DeviceStats>,
    /// The devices' virtual clock, ns: the later of the store's and the log
    /// device's (simulated devices; wall time since open for files).
    pub device_clock_ns: u64,
}

struct Core {
    disk: Disk,
    store: Box<dyn PageStore>,
    pool: BufferPool,
    meta: Meta,
    layout: Layout,
    ckpt_seq: u64,
    /// Next log sequence number when the log is off (kept for checkpoints).
    wal_seq: u64,
    sync: bool,
    append_fill: u8,
    io: Option<IoProfile>,
    /// Trim the log half a checkpoint retires (file stores).
    trim_log: bool,
    /// Id of the log device (0: the log is on the store's device).
    log_id: u64,
    /// Opened read-only: no write reaches the device.
    read_only: bool,
    poisoned: bool,
    commits: u64,
    checkpoints: u64,
}

/// An embedded, ordered key-value store on a [`BlockDevice`].
///
/// All methods take `&self`; a `Db` is `Send + Sync` and can be shared
/// between threads. Point reads whose pages are in the buffer pool run in
/// parallel; everything else takes the store exclusively, one operation at
/// a time. Every operation sees the state after the last batch that
/// completed before it (a batch is never seen in part).
///
/// ```
/// use flashkv_engine::{Db, Options, StoreKind, IplGeometry};
/// let dev = flashkv_device::presets::open("dram-ssd").unwrap();
/// let opts = Options::builder()
///     .store(StoreKind::InPageLogging(IplGeometry::seed()))
///     .build()
///     .unwrap();
/// let db = Db::open(Box::new(dev), opts).unwrap();
/// db.put(b"hello", b"world").unwrap();
/// db.flush().unwrap(); // durable
/// assert_eq!(db.get(b"hello").unwrap(), Some(b"world".to_vec()));
/// let all = db.scan(..).unwrap();
/// assert_eq!(all, vec![(b"hello".to_vec(), b"world".to_vec())]);
/// ```
pub struct Db {
    core: RwLock<Core>,
    /// How far the log is durable: durable commits wait on it after
    /// letting the lock go (group commit, on files).
    sync: Arc<LogSync>,
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Db {
    /// Opens the store on `device` and recovers committed writes from the
    /// write-ahead log. A blank device (its superblock area all zeros, as a
    /// new simulated device is) gets a new store; anything else that does
    /// not hold a flashkv store is refused with [`Error::NotAStore`] before
    /// anything is written.
    pub fn open(device: Box<dyn BlockDevice>, opts: Options) -> Result<Db> {
        Ok(Db::from_core(Core::open(
            device,
            None,
            opts,
            Mode::Create,
            None,
        )?))
    }

    /// Like [`Db::open`], with the write-ahead log on a device of its own
    /// (as databases keep their log on a separate disk). The durability
    /// contract is the same; a flush makes the log device durable before
    /// the store's. A store created this way must always be opened with
    /// its log device, and a log device is refused for any other store.
    pub fn open_with_log(
        device: Box<dyn BlockDevice>,
        log: Box<dyn BlockDevice>,
        opts: Options,
    ) -> Result<Db> {
        Ok(Db::from_core(Core::open(
            device,
            Some(log),
            opts,
            Mode::Create,
            None,
        )?))
    }

    /// Opens the store on `device`; a blank device is [`Error::NotAStore`] too.
    pub fn open_existing(device: Box<dyn BlockDevice>, opts: Options) -> Result<Db> {
        Ok(Db::from_core(Core::open(
            device,
            None,
            opts,
            Mode::Existing,
            None,
        )?))
    }

    /// Creates a store in the file at `path`, which must be missing or
    /// empty ([`Error::Exists`] otherwise). The file grows as the store
    /// does, up to [`crate::OptionsBuilder::max_size`]. If creation fails, a file this
    /// call created is removed again.
    pub fn create(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Self::open_file(path.as_ref(), opts, Mode::Create)
    }

    /// Opens the store in the file at `path`. A missing file is
    /// [`Error::NoStore`]; a file that does not hold a flashkv store is
    /// [`Error::NotAStoreFile`] and is not written. The store is locked
    /// for this `Db` ([`Error::Locked`] if another one holds it).
    pub fn open_path(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Self::open_file(path.as_ref(), opts, Mode::Existing)
    }

    /// Opens the store in the file at `path` for reading only: the file is
    /// opened read-only and under a shared lock, so read-only opens (in any
    /// process) share a store while a writer is refused, and a read-only
    /// open is refused while a writer has it ([`Error::Locked`]). Writes
    /// are [`Error::ReadOnly`]. A store with writes to recover (a crash
    /// left them) is [`Error::NeedsRecovery`]: recovery writes, so a writer
    /// must open it first.
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Self::open_file(path.as_ref(), opts, Mode::ReadOnly)
    }

    /// [`Db::create`] where `path` is missing or empty, else [`Db::open_path`].
    pub fn open_or_create(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let path = path.as_ref();
        let fresh = match std::fs::metadata(path) {
            Ok(m) => m.is_file() && m.len() == 0,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(Error::Io(e)),
        };
        let mode = if fresh { Mode::Create } else { Mode::Existing };
        Self::open_file(path, opts, mode)
    }

    fn open_file(path: &Path, opts: Options, mode: Mode) -> Result<Db> {
        let cap = opts.max_size.unwrap_or(FILE_MAX);
        let (dev, created) = file::open(path, cap, mode)?;
        let len = dev.len()?;
        match Core::open(Box::new(dev), None, opts, mode, Some(len)) {
            Ok(core) => Ok(Db::from_core(core)),
            Err(e) => {
                if created {
                    let _ = std::fs::remove_file(path);
                } else if mode == Mode::Create {
                    // It was empty: leave it so.
                    let _ = std::fs::OpenOptions::new()
                        .write(true)
                        .open(path)
                        .and_then(|f| f.set_len(0));
                }
                Err(match e {
                    Error::NotAStore => Error::NotAStoreFile {
                        path: path.to_path_buf(),
                        why: "no valid flashkv superblock".into(),
                    },
                    e => e,
                })
            }
        }
    }

    fn from_core(core: Core) -> Db {
        Db {
            sync: core.disk.sync.clone(),
            core: RwLock::new(core),
        }
    }

    /// The core, unless an earlier failure left it out of step with the
    /// device: a panic inside an operation (the mutex is poisoned) or an
    /// error midway through a write. Then every call fails until the store
    /// is reopened, which recovers the last durable state.
    fn lock(&self) -> Result<RwLockWriteGuard<'_, Core>> {
        let mut c = self.core.write().map_err(|_| Error::Poisoned)?;
        if c.poisoned || self.sync.failed() {
            return Err(Error::Poisoned);
        }
        // Hand the policy the page uses readers recorded meanwhile.
        c.pool.drain_shared();
        c.disk.catch_up();
        Ok(c)
    }

    /// The core under the shared lock, for reads of resident pages; the
    /// same refusals as [`Db::lock`].
    fn shared(&self) -> Result<RwLockReadGuard<'_, Core>> {
        let c = self.core.read().map_err(|_| Error::Poisoned)?;
        if c.poisoned || self.sync.failed() {
            return Err(Error::Poisoned);
        }
        Ok(c)
    }

    /// The value of `key`, if any.
    ///
    /// Readers run in parallel with each other while the pages they need
    /// are in the buffer pool; a read that misses, and every write, takes
    /// the store exclusively.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(key, |v| v.map(<[u8]>::to_vec))
    }

    /// `f` of the value of `key` (`None` if absent), lent from the buffer
    /// pool where the pages are resident, so nothing is copied. `f` runs
    /// while the store is locked, shared when every page is resident: it
    /// must not call this `Db` (that would deadlock).
    ///
    /// ```
    /// # use flashkv_engine::{Db, Options};
    /// # let db = Db::open(Box::new(flashkv_device::presets::open("dram-ssd").unwrap()), Options::default()).unwrap();
    /// db.put(b"k", b"four").unwrap();
    /// assert_eq!(db.get_with(b"k", |v| v.map(<[u8]>::len)).unwrap(), Some(4));
    /// assert_eq!(db.get_with(b"nope", |v| v.is_none()).unwrap(), true);
    /// ```
    pub fn get_with<T>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> T) -> Result<T> {
        let mut f = Some(f);
        {
            let c = self.shared()?;
            btree::check_key(key, c.store.page_size())?;
            let lend = |v: Option<&[u8]>| f.take().map(|f| f(v));
            if let Some(Some(found)) = btree::get_resident(&c.pool, &c.meta, key, lend)? {
                return Ok(found);
            }
        }
        let mut c = self.lock()?;
        btree::check_key(key, c.store.page_size())?;
        let v = c.read(|t| t.get(key))?;
        drop(c);
        let f = f.expect("the shared path lent nothing");
        Ok(f(v.as_deref()))
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::default();
        b.put(key, value);
        self.write(b)
    }

    /// Removes `key`; returns whether it was there.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        let mut c = self.lock()?;
        btree::check_key(key, c.store.page_size())?;
        let mut existed = false;
        let wait = c.write_with(1, 1, |t| {
            existed = t.delete(key)?;
            Ok(())
        })?;
        drop(c);
        self.durable(wait)?;
        Ok(existed)
    }

    /// Returns once a commit is durable: at once, unless it logged record
    /// `wait` to be made durable outside the lock (group commit).
    fn durable(&self, wait: Option<u64>) -> Result<()> {
        wait.map_or(Ok(()), |n| self.sync.wait(n))
    }

    /// Replaces the value of an existing key. Returns whether the key was
    /// there: an absent key is left absent and nothing is written.
    #[must_use = "update writes nothing when the key is absent"]
    pub fn update(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let mut c = self.lock()?;
        btree::check_key(key, c.store.page_size())?;
        btree::check_value(value)?;
        if c.read(|t| t.get(key))?.is_none() {
            return Ok(false);
        }
        let wait = c.write_with(value.len(), 1, |t| {
            let existed = t.put(key, value)?;
            debug_assert!(existed, "the key update found is still there");
            Ok(())
        })?;
        drop(c);
        self.durable(wait)?;
        Ok(true)
    }

    /// Stores `value` under a new key (the seed's key manager): keys are
    /// unique, persistent and increasing, encoded as 8 big-endian bytes so
    /// they sort in numeric order. Returns the key's number.
    pub fn insert_auto(&self, value: &[u8]) -> Result<u64> {
        let mut c = self.lock()?;
        btree::check_value(value)?;
        let mut n = 0;
        let wait = c.write_with(value.len(), 1, |t| {
            n = t.meta.next_auto;
            t.meta.next_auto += 1;
            let existed = t.put(&n.to_be_bytes(), value)?;
            debug_assert!(!existed, "key {n} is new");
            Ok(())
        })?;
        drop(c);
        self.durable(wait)?;
        Ok(n)
    }

    /// Applies `batch` atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        let mut c = self.lock()?;
        let ps = c.store.page_size();
        let mut bytes = 0;
        for op in batch.iter() {
            match op {
                BatchOp::Put(k, v) => {
                    btree::check_key(k, ps)?;
                    btree::check_value(v)?;
                    bytes += v.len();
                }
                BatchOp::Delete(k) => btree::check_key(k, ps)?,
            }
        }
        // In key order (a stable sort: one key's operations keep theirs):
        // neighbouring keys share their descent, whose pages stay in cache.
        let mut ops: Vec<BatchOp<'_>> = batch.iter().collect();
        ops.sort_by(|a, b| a.key().cmp(b.key()));
        let wait = c.write_with(bytes + batch.len(), batch.len(), |t| {
            for &op in &ops {
                match op {
                    BatchOp::Put(k, v) => t.put(k, v).map(drop)?,
                    BatchOp::Delete(k) => t.delete(k).map(drop)?,
                }
            }
            Ok(())
        })?;
        drop(c);
        self.durable(wait)
    }

    /// Pairs with keys in `range`, in ascending key order. `range` is `..`
    /// or a pair of bounds on byte slices:
    ///
    /// ```
    /// # use flashkv_engine::{Db, Options};
    /// use std::ops::Bound::{Excluded, Included};
    /// # let db = Db::open(Box::new(flashkv_device::presets::open("dram-ssd").unwrap()), Options::default()).unwrap();
    /// for k in [b"a", b"b", b"c"] {
    ///     db.put(k, b"").unwrap();
    /// }
    /// let keys: Vec<_> = db.scan((Included(&b"a"[..]), Excluded(&b"c"[..]))).unwrap();
    /// assert_eq!(keys.len(), 2);
    /// assert_eq!(db.scan_rev(..).unwrap()[0].0, b"c");
    /// ```
    pub fn scan<R: RangeBounds<[u8]>>(&self, range: R) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.scan_dir(range, false, usize::MAX)
    }

    /// Pairs with keys in `range`, in descending key order.
    pub fn scan_rev<R: RangeBounds<[u8]>>(&self, range: R) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.scan_dir(range, true, usize::MAX)
    }

    /// At most `limit` pairs with keys in `range`, descending if `reverse`.
    pub fn scan_dir<R: RangeBounds<[u8]>>(
        &self,
        range: R,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        self.scan_with(range, reverse, limit, |k, v| {
            out.push((k.to_vec(), v.to_vec()))
        })?;
        Ok(out)
    }

    /// Calls `f` with each of at most `limit` pairs with keys in `range`
    /// (descending if `reverse`), borrowed from the buffer pool, and
    /// returns how many there were: a scan that copies nothing it is not
    /// asked to. `f` runs while the store is locked, shared when every page
    /// is resident: it must not call this `Db` (that would deadlock).
    ///
    /// ```
    /// # use flashkv_engine::{Db, Options};
    /// # let db = Db::open(Box::new(flashkv_device::presets::open("dram-ssd").unwrap()), Options::default()).unwrap();
    /// db.put(b"a", b"12").unwrap();
    /// db.put(b"b", b"345").unwrap();
    /// let mut bytes = 0;
    /// let n = db.scan_with(.., false, 10, |_k, v| bytes += v.len()).unwrap();
    /// assert_eq!((n, bytes), (2, 5));
    /// ```
    pub fn scan_with<R: RangeBounds<[u8]>>(
        &self,
        range: R,
        reverse: bool,
        limit: usize,
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let bounds = (range.start_bound(), range.end_bound());
        if limit != usize::MAX {
            let c = self.shared()?;
            if let Some(at) = btree::scan_resident(&c.pool, &c.meta, bounds, reverse, limit)? {
                for &p in &at {
                    let (k, v) = btree::pair_at(p);
                    f(k, v);
                }
                return Ok(at.len());
            }
        }
        let mut c = self.lock()?;
        let pairs = c.read(|t| t.scan(bounds.0, bounds.1, reverse, limit))?;
        drop(c);
        debug_assert!(pairs.len() <= limit, "a scan stops at its limit");
        for (k, v) in &pairs {
            f(k, v);
        }
        Ok(pairs.len())
    }

    /// Iterator over the pairs with keys in `range`, ascending, holding
    /// one chunk of pairs at a time (see [`Range`] for what it sees of
    /// concurrent writes).
    ///
    /// ```
    /// # use flashkv_engine::{Db, Options};
    /// # let db = Db::open(Box::new(flashkv_device::presets::open("dram-ssd").unwrap()), Options::default()).unwrap();
    /// for k in [b"a1", b"a2", b"b1"] {
    ///     db.put(k, b"").unwrap();
    /// }
    /// let keys: Vec<Vec<u8>> = db.prefix(b"a").map(|r| r.unwrap().0).collect();
    /// assert_eq!(keys, [b"a1".to_vec(), b"a2".to_vec()]);
    /// assert_eq!(db.range_rev(..).next().unwrap().unwrap().0, b"b1");
    /// ```
    pub fn range<R: RangeBounds<[u8]>>(&self, range: R) -> Range<'_> {
        Range::new(
            self,
            owned(range.start_bound()),
            owned(range.end_bound()),
            false,
        )
    }

    /// Like [`Db::range`], descending.
    pub fn range_rev<R: RangeBounds<[u8]>>(&self, range: R) -> Range<'_> {
        Range::new(
            self,
            owned(range.start_bound()),
            owned(range.end_bound()),
            true,
        )
    }

    /// Iterator over the pairs whose keys start with `prefix`, ascending.
    pub fn prefix(&self, prefix: &[u8]) -> Range<'_> {
        Range::new(
            self,
            Bound::Included(prefix.to_vec()),
            prefix_end(prefix),
            false,
        )
    }

    /// The tree's height, keys, pages by kind, free pages and leaf fill,
    /// from a walk of every page (reads the whole store).
    pub fn shape(&self) -> Result<Shape> {
        let mut c = self.lock()?;
        c.read(|t| t.shape())
    }

    /// Makes every write so far durable.
    pub fn flush(&self) -> Result<()> {
        let mut c = self.lock()?;
        // A read-only store has no log open, and its checkpoint writes nothing.
        c.guard(|c| {
            if c.disk.journal.is_some() {
                c.disk.flush()
            } else {
                c.checkpoint()
            }
        })
    }

    /// Writes every dirty page to the page store, records a checkpoint and
    /// empties the write-ahead log.
    pub fn checkpoint(&self) -> Result<()> {
        self.lock()?.guard(Core::checkpoint)
    }

    /// Checkpoints, marks the end of the log, and returns the device.
    pub fn close(self) -> Result<Box<dyn BlockDevice>> {
        Ok(self.close_with_log()?.0)
    }

    /// Checkpoints, marks the end of the log, and returns the device and
    /// the log device, if the store has one ([`Db::open_with_log`]).
    pub fn close_with_log(self) -> Result<Devices> {
        self.lock()?.guard(|c| {
            c.checkpoint()?;
            c.mark_log_end();
            Ok(())
        })?;
        Ok(self.into_devices())
    }

    /// Returns the device as it is, without writing anything (for crash tests).
    pub fn into_device(self) -> Box<dyn BlockDevice> {
        self.into_devices().0
    }

    /// Counters since open.
    pub fn stats(&self) -> Stats {
        let mut c = self.core.write().unwrap_or_else(|e| e.into_inner());
        c.pool.drain_shared();
        Stats {
            store_kind: c.store.kind().name(),
            policy: c.pool.policy_name(),
            buffer: c.pool.stats,
            resident_pages: c.pool.resident(),
            pages_allocated: c.meta.next_page,
            store: c.store.stats(),
            data_io: c.disk.data,
            wal_io: c.disk.wal,
            meta_io: c.disk.meta,
            commits: c.commits,
            checkpoints: c.checkpoints,
            device_flushes: c.disk.flushes + self.sync.syncs(),
            device: c.disk.dev.stats(),
            log_device: c.disk.log.as_ref().map(|l| l.stats()),
            device_clock_ns: c.disk.now(),
        }
    }

    /// Test support: runs `f` on the tree, as a read.
    #[cfg(test)]
    pub(crate) fn with_tree<T>(&self, f: impl FnOnce(&mut Tree<'_>) -> Result<T>) -> Result<T> {
        self.lock()?.read(f)
    }

    /// The page store the store uses.
    pub fn store_kind(&self) -> StoreKind {
        self.core
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .store
            .kind()
    }
}

impl Core {
    /// Opens the store on `device`. `create`: a blank device gets a new
    /// store.
    /// `file_len`: the length of the file holding the store, for file stores.
    fn open(
        device: Box<dyn BlockDevice>,
        log: Option<Box<dyn BlockDevice>>,
        opts: Options,
        mode: Mode,
        file_len: Option<u64>,
    ) -> Result<Core> {
        let mut disk = Disk::new(device, log);
        let (ckpt, fresh) = Self::recognise(&mut disk, &opts, mode == Mode::Create)?;
        let store = Self::open_store(&ckpt, &disk, file_len)?;
        let created = ckpt.seq == 0;
        let l = ckpt.layout;
        let log_sector = u64::from(disk.log_geo.sector_size);
        let mut wal = Wal::new(l.wal_start, l.wal_len, log_sector, ckpt.wal_seq, ckpt.seq);
        // Checkpoint 0 has no log; a store made just now has no next epoch.
        let mut records = match created {
            true => Vec::new(),
            false => wal.recover(&mut disk, close::is_end_mark)?,
        };
        // The marks of a store closed or dropped replay as nothing.
        while records.last().is_some_and(close::is_end_mark) {
            records.pop();
        }
        let next = match fresh {
            true => Next::Nothing,
            false => wal.next_epoch(&mut disk)?,
        };
        let read_only = mode == Mode::ReadOnly;
        if read_only && (created || !records.is_empty()) {
            // Recovery writes; a reader cannot, as in SQLite.
            return Err(Error::NeedsRecovery);
        }
        let mut core = Core::new(disk, store, &ckpt, &opts, read_only);
        core.trim_log = file_len.is_some();
        match read_only {
            true => core.check_next_epoch(&next, false)?,
            false => core.start(records, &next, wal, opts.lab.wal, created)?,
        }
        Ok(core)
    }

    /// The page store checkpoint `ckpt` describes, once its layout is
    /// checked against the device and, for a store in a file, the file
    /// (`file_len` bytes) is checked to hold every page it covers.
    fn open_store(
        ckpt: &Checkpoint,
        disk: &Disk,
        file_len: Option<u64>,
    ) -> Result<Box<dyn PageStore>> {
        let l = ckpt.layout;
        let wal_end = l.wal_start.saturating_add(l.wal_len);
        let log_fits = match ckpt.log_id {
            0 => wal_end <= l.data_start,
            _ => wal_end <= disk.log_geo.capacity,
        };
        let ordered = l.data_start >= 2 * l.slot_len && l.data_len > 0 && l.wal_len > 0;
        if l.data_start.saturating_add(l.data_len) > disk.geo.capacity || !log_fits || !ordered {
            return Err(corrupt(
                Structure::Checkpoint,
                Location::Offset((ckpt.seq % 2) * l.slot_len),
                "its layout does not fit the device",
            ));
        }
        let store = Self::make_store(ckpt, disk)?;
        if let Some(len) = file_len {
            // A checkpoint is written after every page it covers.
            if len < store.extent(ckpt.next_page) {
                return Err(corrupt(
                    Structure::File,
                    Location::Offset(len),
                    "the file ends before the pages its checkpoint covers: truncated",
                ));
            }
        }
        Ok(store)
    }

    /// The core of a store opened at checkpoint `ckpt`, before recovery.
    fn new(
        disk: Disk,
        mut store: Box<dyn PageStore>,
        ckpt: &Checkpoint,
        opts: &Options,
        read_only: bool,
    ) -> Core {
        if let Some(io) = opts.io {
            store.set_write_size(io.seq_write_bytes);
        }
        let policy = (opts.policy)(opts.buffer_pages);
        Core {
            pool: BufferPool::new(opts.buffer_pages, policy, opts.lab.index_in_memory),
            meta: Meta {
                root: ckpt.root,
                next_page: ckpt.next_page,
                next_auto: ckpt.next_auto,
                free_head: ckpt.free_head,
            },
            layout: ckpt.layout,
            ckpt_seq: ckpt.seq,
            wal_seq: ckpt.wal_seq,
            sync: opts.sync,
            append_fill: opts.append_fill,
            io: opts.io,
            trim_log: false,
            log_id: ckpt.log_id,
            read_only,
            poisoned: false,
            commits: 0,
            checkpoints: 0,
            store,
            disk,
        }
    }

    /// Makes an opened store ready for writing: replays `records`, checks
    /// that no later checkpoint was lost (`next`: the next epoch's first
    /// records), copies them into a new epoch, creates the tree of a new
    /// store, and checkpoints.
    fn start(
        &mut self,
        records: Vec<Logged>,
        next: &Next,
        mut wal: Wal,
        log: bool,
        created: bool,
    ) -> Result<()> {
        let recovered = !records.is_empty();
        self.recover(records)?;
        self.check_next_epoch(next, recovered)?;
        if recovered {
            self.guard(|c| c.relog(&mut wal))?;
        }
        self.wal_seq = wal.next_seq;
        if log {
            self.disk.journal = Some(wal);
        }
        if created {
            // The new root is written by the checkpoint below, as no batch
            // logged it: it must not stay pinned.
            self.guard(|c| c.tree().create())?;
            self.pool.unpin(&mut *self.store, &mut self.disk)?;
        }
        // Replayed pages go to the page store and the log starts over in a
        // new epoch, so records a crash left after a gap are never replayed.
        self.guard(Core::checkpoint)?;
        self.pool.unpin(&mut *self.store, &mut self.disk)
    }

    /// The newest checkpoint on the device; on a blank device (when
    /// `create`) the first checkpoint of a new store, written before
    /// anything else so that a store whose creation a crash interrupted is
    /// still recognised as one. True with a checkpoint written just now.
    fn recognise(disk: &mut Disk, opts: &Options, create: bool) -> Result<(Checkpoint, bool)> {
        let geo = disk.geo;
        let align = geo.erase_unit.unwrap_or(u64::from(geo.sector_size));
        let slot_len = round_up(SLOT_BYTES, align);
        match Checkpoint::read_latest(disk, slot_len)? {
            Some(c) => {
                if let Some(k) = opts.store.filter(|k| *k != c.store) {
                    return Err(Error::StoreMismatch {
                        stored: c.store.name(),
                        requested: k.name(),
                    });
                }
                match (c.log_id, disk.log.is_some()) {
                    (0, false) => {}
                    (0, true) => {
                        return Err(Error::WrongLogDevice(
                            "the store keeps its log on its own device: open it without a log device",
                        ))
                    }
                    (_, false) => {
                        return Err(Error::WrongLogDevice(
                            "the store keeps its log on a device of its own: open it with Db::open_with_log",
                        ))
                    }
                    (id, true) => logdev::check_header(disk, id)?,
                }
                Ok((c, false))
            }
            None if create => {
                let c = Self::plan(opts, disk, slot_len)?;
                if c.log_id != 0 {
                    logdev::write_header(disk, c.log_id)?;
                }
                c.write(disk)?;
                Ok((c, true))
            }
            None => Err(Error::NotAStore),
        }
    }

    /// The page store a checkpoint describes.
    fn make_store(ckpt: &Checkpoint, disk: &Disk) -> Result<Box<dyn PageStore>> {
        let (geo, l) = (disk.geo, ckpt.layout);
        let sector = u64::from(geo.sector_size);
        Ok(match ckpt.store {
            StoreKind::InPlace => {
                let ps = u64::from(ckpt.page_size);
                if !(512..=65536).contains(&ps) || ps % sector != 0 {
                    return Err(corrupt(
                        Structure::Checkpoint,
                        Location::Offset((ckpt.seq % 2) * l.slot_len),
                        "its page size does not fit the device's sectors",
                    ));
                }
                let unit = geo.erase_unit.unwrap_or(EMULATED_UNIT).max(ps);
                Box::new(InPlace::new(
                    l.data_start,
                    l.data_len,
                    ps as usize,
                    unit,
                    geo.program_once,
                ))
            }
            StoreKind::InPageLogging(g) => {
                Box::new(Ipl::new(g, l.data_start, l.data_len, &ckpt.store_state)?)
            }
        })
    }

    /// Where a new store's log goes: (start, length, where the page store
    /// then starts on the store's device, log device id). On the store's
    /// device the log follows the checkpoint slots; on a log device of its
    /// own it follows the header in the first erase unit (or sector).
    fn plan_log(opts: &Options, disk: &Disk, slot_len: u64) -> Result<(u64, u64, u64, u64)> {
        let lg = disk.log_geo;
        let align = lg.erase_unit.unwrap_or(u64::from(lg.sector_size));
        debug_assert!(opts.wal_size >= 64 << 10, "built options hold a 64 KiB log");
        let want = round_up(opts.wal_size, 2 * align);
        if disk.log.is_none() {
            return Ok((2 * slot_len, want, 2 * slot_len + want, 0));
        }
        let room = lg.capacity.saturating_sub(align);
        let len = want.min(room - room % (2 * align));
        if len < 64 << 10 {
            return Err(invalid(
                "wal_size",
                format!(
                    "a log device of {} bytes is too small for a log (need 64 KiB after its header)",
                    lg.capacity
                ),
            ));
        }
        Ok((align, len, 2 * slot_len, logdev::new_id()))
    }

    /// The page size of a new store, if the device can hold its pages.
    fn plan_page_size(opts: &Options, kind: StoreKind, geo: Geometry) -> Result<u32> {
        let sector = u64::from(geo.sector_size);
        let page_size = match kind {
            StoreKind::InPlace => opts.in_place_page_size(),
            StoreKind::InPageLogging(g) => {
                if u64::from(LOG_SECTOR) % sector != 0 {
                    return Err(invalid(
                        "store",
                        format!("in-page logging needs sectors of at most {LOG_SECTOR} bytes; the device has {sector}"),
                    ));
                }
                match geo.erase_unit {
                    Some(eu) if eu != g.unit_size() => {
                        return Err(invalid(
                            "store",
                            format!(
                                "an in-page logging unit of {} bytes does not match the device's {eu}-byte erase unit",
                                g.unit_size()
                            ),
                        ))
                    }
                    _ => g.page_size,
                }
            }
        };
        if u64::from(page_size) % sector != 0 {
            return Err(invalid(
                "page_size",
                format!("{page_size} bytes is not a multiple of the {sector}-byte sector"),
            ));
        }
        match (kind, geo.erase_unit) {
            (StoreKind::InPlace, Some(eu)) if eu % u64::from(page_size) != 0 => Err(invalid(
                "page_size",
                format!("{page_size} bytes does not divide the {eu}-byte erase unit"),
            )),
            _ => Ok(page_size),
        }
    }

    /// The layout and first checkpoint of a new store.
    fn plan(opts: &Options, disk: &Disk, slot_len: u64) -> Result<Checkpoint> {
        let geo = disk.geo;
        let align = geo.erase_unit.unwrap_or(u64::from(geo.sector_size));
        let kind = opts.store.unwrap_or(StoreKind::InPlace);
        let page_size = Self::plan_page_size(opts, kind, geo)?;
        let (wal_start, wal_len, data_start, log_id) = Self::plan_log(opts, disk, slot_len)?;
        let end = opts.max_size.unwrap_or(geo.capacity).min(geo.capacity);
        let mut end = end - end % align;
        if let StoreKind::InPageLogging(g) = kind {
            // The erase-unit map must fit a checkpoint slot: a store holds
            // at most that many units (about 2.2 GiB with the seed layout).
            let units = (slot_len - 4096) / (25 + u64::from(g.log_sectors));
            end = end.min(data_start + units * g.unit_size());
        }
        if end <= data_start {
            return Err(invalid(
                "max_size",
                format!(
                    "{end} bytes of the device is too small for a store (it needs more than {data_start})",
                ),
            ));
        }
        Ok(Checkpoint {
            seq: 0,
            store: kind,
            page_size,
            layout: Layout {
                slot_len,
                wal_start,
                wal_len,
                data_start,
                data_len: end - data_start,
            },
            root: 0,
            next_page: 0,
            next_auto: 0,
            free_head: NO_PAGE,
            wal_seq: 1,
            log_id,
            store_state: Vec::new(),
        })
    }

    fn tree(&mut self) -> Tree<'_> {
        Tree {
            pool: &mut self.pool,
            store: &mut *self.store,
            disk: &mut self.disk,
            meta: &mut self.meta,
            io: self.io,
            append_fill: usize::from(self.append_fill),
        }
    }

    /// Runs `f`; a device or corruption error leaves memory and device out
    /// of step, so later calls fail until the store is reopened (recovery).
    fn guard<T>(&mut self, f: impl FnOnce(&mut Core) -> Result<T>) -> Result<T> {
        let r = f(self);
        if r.as_ref().is_err_and(Error::poisons) {
            self.poisoned = true;
        }
        r
    }

    fn read<T>(&mut self, f: impl FnOnce(&mut Tree<'_>) -> Result<T>) -> Result<T> {
        debug_assert!(self.pool.idle(), "a read runs between batches");
        self.guard(|c| {
            let r = f(&mut c.tree());
            // A read never pins; this only brings the pool back to size.
            c.pool.unpin(&mut *c.store, &mut c.disk)?;
            r
        })
    }

    /// Applies a batch of `ops` operations with `f`, logs it and commits.
    /// `hint` is about the bytes it writes, to make room in the log
    /// beforehand. Returns the record to wait for, outside the lock, where
    /// the commit is durable once a flush covers it ([`LogSync::wait`]).
    fn write_with(
        &mut self,
        hint: usize,
        ops: usize,
        mut f: impl FnMut(&mut Tree<'_>) -> Result<()>,
    ) -> Result<Option<u64>> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.guard(|c| {
            if let Some(w) = &c.disk.journal {
                // Each operation may dirty one more page without an image.
                let fresh = (c.meta.next_page as usize).saturating_sub(c.pool.dirty_len());
                let unimaged = c.pool.unimaged() + ops.min(fresh);
                let want = 2 * hint as u64 + w.capacity() / 16 + c.log_reserve(w, unimaged);
                if w.remaining() < want {
                    c.checkpoint()?;
                }
            }
            for attempt in 0..2 {
                assert!(c.pool.idle(), "a batch starts with nothing pinned");
                let before = c.meta;
                if let Err(e) = f(&mut c.tree()) {
                    c.pool.rollback();
                    c.meta = before;
                    return Err(e);
                }
                match c.log_batch() {
                    Err(Error::Full(_)) if attempt == 0 => {
                        // The log filled up: undo, checkpoint, and run the batch again.
                        c.pool.rollback();
                        c.meta = before;
                        c.checkpoint()?;
                    }
                    Err(e) => {
                        c.pool.rollback();
                        c.meta = before;
                        return Err(e);
                    }
                    Ok(wait) => {
                        c.commits += 1;
                        return c.pool.unpin(&mut *c.store, &mut c.disk).map(|()| wait);
                    }
                }
            }
            unreachable!("second attempt returns")
        })
    }

    /// Log bytes to keep free for what writing back the dirty pages may
    /// log: an image of each of the `unimaged` pages (a store that
    /// overwrites pages logs one before it writes a page back, one record
    /// per page at worst), and a record of the store's own per dirty page.
    fn log_reserve(&self, wal: &Wal, unimaged: usize) -> u64 {
        let ps = self.store.page_size();
        let mut r = 0;
        if self.store.overwrites() {
            let one = wal.record_len(redo::IMAGES_HDR + redo::IMAGE_OVERHEAD + ps);
            r += unimaged as u64 * one;
        }
        if self.store.journals_writes() {
            r += self.pool.dirty_len() as u64 * wal.record_len(64);
        }
        r
    }

    /// Appends the running batch to the log (durably if `sync`): images of
    /// the pages it rewrote whole, the operations it applied to the others,
    /// and an image of each page it changed for the first time since the
    /// checkpoint where that is cheaper than logging the image later:
    ///
    /// - a store that does not overwrite pages logs such images always (it
    ///   never logs one before a write back);
    /// - a store that does logs them while the pool is full (the page will
    ///   likely be written back before the checkpoint, and an image logged
    ///   then costs a log flush of its own), or when the log could not keep
    ///   [`Core::log_reserve`] for every page the batch changed (an image
    ///   in the record costs less than the reserve for it).
    ///
    /// A record that does not fit is [`Error::Full`], and nothing is written.
    /// A durable commit is flushed here, or returns its record to wait for
    /// where the log can be flushed outside the lock.
    fn log_batch(&mut self) -> Result<Option<u64>> {
        let Some(mut wal) = self.disk.journal.take() else {
            return Ok(None);
        };
        let mut built = self.batch_record(self.store.overwrites() && self.pool.has_room());
        let need = |b: &(redo::Writer, Vec<PageId>)| {
            let newly = b.1.iter().filter(|id| !self.pool.is_imaged(**id)).count();
            wal.record_len(b.0.len()) + self.log_reserve(&wal, self.pool.unimaged() - newly)
        };
        if need(&built) > wal.remaining() && self.store.overwrites() {
            built = self.batch_record(false);
        }
        let r = match need(&built) > wal.remaining() {
            true => Err(Error::Full("write-ahead log")),
            false => wal.append(&mut self.disk, redo::REDO_RECORD, &built.0.finish()),
        };
        self.wal_seq = wal.next_seq;
        self.disk.journal = Some(wal);
        r?;
        for id in built.1 {
            self.pool.mark_imaged(id);
        }
        if !self.sync {
            return Ok(None);
        }
        if self.disk.sync.outside() {
            return Ok(Some(self.disk.logged));
        }
        self.disk.flush()?;
        Ok(None)
    }

    /// The running batch's record and the pages it holds images of;
    /// `ops_first`: operations for every page the batch did not rewrite
    /// whole, else only for pages the log holds an image of.
    fn batch_record(&self, ops_first: bool) -> (redo::Writer, Vec<PageId>) {
        let ps = self.store.page_size();
        let batch = self.pool.batch();
        let mut rec = redo::Writer::new(&self.meta, batch.len() * 256);
        let mut imaged = Vec::new();
        for (page, change) in batch {
            match change {
                Change::Ops { count, bytes }
                    if (ops_first || self.pool.is_imaged(page.id())) && bytes.len() + 2 < ps =>
                {
                    rec.ops(page.id(), *count, bytes)
                }
                _ => {
                    rec.image(page);
                    imaged.push(page.id());
                }
            }
        }
        (rec, imaged)
    }

    /// Writes checkpoint `seq` of the store as it is now, its log starting
    /// at record `wal_seq`, and makes it the current one.
    fn write_checkpoint(&mut self, seq: u64, wal_seq: u64) -> Result<()> {
        // The log that rebuilds the pages written since the last
        // checkpoint is retired with it: they must be on the device.
        self.store.verify(&mut self.disk)?;
        let mut state = Vec::new();
        self.store.encode_state(&mut state);
        Checkpoint {
            seq,
            store: self.store.kind(),
            page_size: self.store.page_size() as u32,
            layout: self.layout,
            root: self.meta.root,
            next_page: self.meta.next_page,
            next_auto: self.meta.next_auto,
            free_head: self.meta.free_head,
            wal_seq,
            log_id: self.log_id,
            store_state: state,
        }
        .write(&mut self.disk)?;
        assert!(
            seq == self.ckpt_seq + 1,
            "checkpoint {seq} follows {}",
            self.ckpt_seq
        );
        self.ckpt_seq = seq;
        self.checkpoints += 1;
        Ok(())
    }

    fn checkpoint(&mut self) -> Result<()> {
        if self.read_only {
            // Nothing was changed, so there is nothing to write.
            debug_assert_eq!(
                self.pool.dirty_len(),
                0,
                "a read-only store has dirty pages"
            );
            return Ok(());
        }
        self.pool.flush_all(&mut *self.store, &mut self.disk)?;
        if let Some(w) = &self.disk.journal {
            self.wal_seq = w.next_seq;
        }
        self.write_checkpoint(self.ckpt_seq + 1, self.wal_seq)?;
        if let Some(mut w) = self.disk.journal.take() {
            // The checkpoint is durable: the records before it are not needed.
            let (off, len) = w.written();
            let r = match self.trim_log && len > 0 {
                true => self.disk.erase(Region::Wal, off, len),
                false => Ok(()),
            };
            w.reset(self.ckpt_seq);
            self.pool.new_epoch();
            self.disk.journal = Some(w);
            r?;
        }
        debug_assert_eq!(
            self.pool.dirty_len(),
            0,
            "a checkpoint leaves no page dirty"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{BatchOp, WriteBatch};

    #[test]
    fn a_batch_gives_back_its_changes_in_order() {
        let mut b = WriteBatch::with_capacity(4, 16);
        b.put(b"k1", b"v1")
            .delete(b"k2")
            .put(b"", b"")
            .put(b"k3", b"");
        let ops: Vec<BatchOp> = b.iter().collect();
        assert_eq!(
            ops,
            [
                BatchOp::Put(b"k1", b"v1"),
                BatchOp::Delete(b"k2"),
                BatchOp::Put(b"", b""),
                BatchOp::Put(b"k3", b""),
            ]
        );
        assert_eq!(b.len(), 4);
        assert!(!b.is_empty() && WriteBatch::default().is_empty());
    }
}
