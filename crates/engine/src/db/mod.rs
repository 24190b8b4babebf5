//! The database: open, the public API, commits and checkpoints
//! (recovery is in [`recover`]).

mod batch;
mod buffered;
mod checkpoint;
mod close;
mod commit;
mod open;
mod recover;
mod resume;
mod writer;

pub use batch::{BatchOp, WriteBatch};

use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use flashkv_device::{BlockDevice, DeviceStats, Geometry};

use crate::btree::{self, Meta, Shape, Tree};
use crate::buffer::{BufferPool, BufferStats, Change};
use crate::error::{corrupt, invalid, Error, Location, Result, Structure};
use crate::file::{self, Mode, Shrink};
use crate::group::LogSync;
use crate::io::{Disk, ReadAt, Region, RegionStats};
use crate::iter::{owned, prefix_end, Range, ReadAhead};
use crate::logdev;
use crate::memtable::{head, Memtable};
use crate::options::{IoProfile, Options, StoreKind, LOG_SECTOR};
use crate::page::{Page, PageId, NO_PAGE};
use crate::redo;
use crate::store::{InPlace, Ipl, PageStore, Span, StoreStats, Tiered};
use crate::superblock::{Checkpoint, Layout, SLOT_BYTES};
use crate::wal::{Logged, Next, Wal};

/// Default virtual capacity of a store in a file (the file grows as the
/// store does, so this is a limit, not a size).
const FILE_MAX: u64 = 64 << 30;
/// Erase-unit size assumed for in-place stores on devices without one.
const EMULATED_UNIT: u64 = 128 << 10;

/// A store's device and its log device, if it has one.
pub type Devices = (Box<dyn BlockDevice>, Option<Box<dyn BlockDevice>>);

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
    /// Checkpoints written (full ones and switches).
    pub checkpoints: u64,
    /// Checkpoints that carried the dirty pages forward into the new log
    /// epoch instead of writing them back (the log's half ran short).
    pub switches: u64,
    /// Switches that first wrote pages back because the background writer
    /// had let too many stay dirty (time a commit waited for write-back).
    pub stalls: u64,
    /// Keys the memtable holds now (changes not yet in the tree).
    pub memtable_keys: usize,
    /// Bytes the memtable takes in memory now, about (its pairs, their
    /// filter, and the sorted copy reads use once it stops changing).
    pub memtable_bytes: usize,
    /// Drains of the memtable into the tree.
    pub drains: u64,
    /// Bytes of the write-ahead log's region now: its home, or more while
    /// a batch larger than half of it needs the room.
    pub log_bytes: u64,
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
    /// A store in a file: the log a checkpoint retires is given back to the
    /// file system, and the file is cut short when the log comes home.
    shrink: Option<Shrink>,
    /// Where to cut the file once the checkpoint that brought the log home
    /// is durable.
    cut_at: Option<u64>,
    /// Reads the store's device outside the lock (a file): a read that
    /// misses the pool under the shared lock reads the page itself.
    reader: Option<ReadAt>,
    /// Id of the log device (0: the log is on the store's device).
    log_id: u64,
    /// Opened read-only: no write reaches the device.
    read_only: bool,
    poisoned: bool,
    commits: u64,
    checkpoints: u64,
    /// Checkpoints that carried dirty pages forward instead of writing them.
    switches: u64,
    /// Switches that first wrote pages back, the background writer behind.
    stalls: u64,
    /// Clean dirty pages ahead of need ([`writer`]).
    writer: bool,
    /// The writer's work runs after commits (no thread for it).
    writer_inline: bool,
    /// Checkpoint at close even where the log could be left to the next
    /// open ([`Core::keeps_log`]).
    close_checkpoint: bool,
    /// Log bytes the last batch that did not fit needed (its record and
    /// the room kept for write-backs).
    log_need: u64,
    /// `next_page` when the running batch began: pages it allocates from
    /// there on were never allocated before.
    batch_from: PageId,
    /// Pairs of small batches not yet in the tree ([`crate::memtable`]);
    /// shared only with a drain that is running.
    memtable: Arc<Memtable>,
    /// Bytes the memtable may hold (0: writes go to the tree).
    memtable_cap: usize,
    /// The running batch drains the memtable (its record says so).
    draining: bool,
    /// Drains of the memtable into the tree.
    drains: u64,
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
    inner: Arc<Inner>,
    /// The background writer's thread, on stores whose log a thread can
    /// flush ([`writer`]).
    writer: Option<std::thread::JoinHandle<()>>,
}

/// What a `Db` shares with its background writer.
struct Inner {
    core: RwLock<Core>,
    /// How far the log is durable: durable commits wait on it after
    /// letting the lock go (group commit, on files).
    sync: Arc<LogSync>,
    /// Wakes the background writer.
    signal: writer::Signal,
    /// How many pairs ranges read first.
    read_ahead: ReadAhead,
    /// Last, so it is dropped after the pool.
    _give_back: GiveBack,
}

/// Hands the memory a store freed back to the system when the store is
/// dropped. glibc keeps freed memory in the arena of the thread that
/// allocated it, and a pool's pages come from every thread that read
/// them: without this, a closed store's pool stays in the process's
/// resident set, and a store opened next by other threads adds its own.
struct GiveBack;

impl Drop for GiveBack {
    fn drop(&mut self) {
        give_back();
    }
}

/// Returns the heap's free memory to the system ([`GiveBack`]).
fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; 0 keeps no pad.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Inner {
    /// The core, unless an earlier failure left it out of step with the
    /// device: a panic inside an operation (the mutex is poisoned) or an
    /// error midway through a write. Then every call fails until the store
    /// is reopened, which recovers the last durable state.
    fn lock(&self) -> Result<RwLockWriteGuard<'_, Core>> {
        let mut c = self.core.write().map_err(|_| Error::Poisoned)?;
        if c.poisoned || self.sync.failed() {
            return Err(Error::Poisoned);
        }
        // Hand the policy the page uses readers recorded meanwhile, and
        // admit the pages they read.
        c.pool.drain_shared();
        c.disk.catch_up();
        c.guard(|c| c.store.release(&mut c.disk))?;
        c.guard(Core::admit_staged)?;
        Ok(c)
    }
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
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
        let (shrink, reader) = (dev.shrinker()?, dev.reader()?);
        match Core::open(Box::new(dev), None, opts, mode, Some((len, shrink))) {
            Ok(mut core) => {
                core.reader = Some(reader);
                Ok(Db::from_core(core))
            }
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

    /// The `Db` of an opened core, with its background writer's thread
    /// where the log can be flushed outside the lock (else the writer's
    /// work runs after commits, [`Core::write_behind`]).
    fn from_core(mut core: Core) -> Db {
        let threaded = core.writer && core.disk.sync.outside();
        core.writer_inline = core.writer && !threaded;
        let inner = Arc::new(Inner {
            sync: core.disk.sync.clone(),
            core: RwLock::new(core),
            signal: writer::Signal::default(),
            read_ahead: ReadAhead::default(),
            _give_back: GiveBack,
        });
        // Without a thread the writer's work runs after commits instead.
        let writer = match threaded {
            true => writer::spawn(inner.clone()).ok(),
            false => None,
        };
        if threaded && writer.is_none() {
            if let Ok(mut c) = inner.core.write() {
                c.writer_inline = true;
            }
        }
        Db { inner, writer }
    }

    /// The read-ahead of this store's ranges.
    pub(crate) fn read_ahead(&self) -> &ReadAhead {
        &self.inner.read_ahead
    }

    /// The core for an operation; see [`Inner::lock`].
    fn lock(&self) -> Result<RwLockWriteGuard<'_, Core>> {
        self.inner.lock()
    }

    /// The core under the shared lock, for reads of resident pages; the
    /// same refusals as [`Db::lock`].
    fn shared(&self) -> Result<RwLockReadGuard<'_, Core>> {
        let c = self.inner.core.read().map_err(|_| Error::Poisoned)?;
        if c.poisoned || self.inner.sync.failed() {
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
            if let Some(v) = c.memtable.get(key) {
                let f = f.take().expect("nothing lent yet");
                return Ok(f(v));
            }
            // A page not in the pool is read here, in parallel with other
            // readers, and admitted at the next exclusive lock; until then
            // readers find it staged.
            let mut fetch = |id: PageId| -> Result<Option<Page>> {
                if let Some(page) = c.pool.staged(id) {
                    return Ok(Some(page));
                }
                let Some(page) = c.reader.as_ref().and_then(|r| c.store.read_shared(r, id)) else {
                    return Ok(None);
                };
                Ok(c.pool.stage(page.clone()).then_some(page))
            };
            if let Some(Some(found)) = btree::get_shared(&c.pool, &c.meta, key, &mut fetch, lend)? {
                return Ok(found);
            }
        }
        let mut c = self.lock()?;
        btree::check_key(key, c.store.page_size())?;
        let v = c.value(key)?;
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
        let cost = Memtable::cost(key, None);
        if c.buffers(cost) {
            if c.value(key)?.is_none() {
                return Ok(false);
            }
            let wait = c.buffer(&[(key, None)], cost)?;
            self.committed(c, wait)?;
            return Ok(true);
        }
        let mut existed = false;
        let wait = c.write_with(1, 1, |t| {
            existed = t.delete(key)?;
            Ok(())
        })?;
        self.committed(c, wait)?;
        Ok(existed)
    }

    /// After a commit: lets the lock go, wakes the background writer if
    /// there are pages to clean, and returns once the commit is durable: at
    /// once, unless it logged record `wait` to be made durable outside the
    /// lock (group commit).
    fn committed(&self, c: RwLockWriteGuard<'_, Core>, wait: Option<u64>) -> Result<()> {
        let due = self.writer.is_some() && c.writer_due();
        drop(c);
        if due {
            self.inner.signal.wake();
        }
        wait.map_or(Ok(()), |n| self.inner.sync.wait(n))
    }

    /// Replaces the value of an existing key. Returns whether the key was
    /// there: an absent key is left absent and nothing is written.
    #[must_use = "update writes nothing when the key is absent"]
    pub fn update(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let mut c = self.lock()?;
        btree::check_key(key, c.store.page_size())?;
        btree::check_value(value)?;
        if c.value(key)?.is_none() {
            return Ok(false);
        }
        let cost = Memtable::cost(key, Some(value));
        if c.buffers(cost) {
            let wait = c.buffer(&[(key, Some(value))], cost)?;
            self.committed(c, wait)?;
            return Ok(true);
        }
        let wait = c.write_with(value.len(), 1, |t| {
            let existed = t.put(key, value)?;
            debug_assert!(existed, "the key update found is still there");
            Ok(())
        })?;
        self.committed(c, wait)?;
        Ok(true)
    }

    /// Stores `value` under a new key (the seed's key manager): keys are
    /// unique, persistent and increasing, encoded as 8 big-endian bytes so
    /// they sort in numeric order. Returns the key's number.
    pub fn insert_auto(&self, value: &[u8]) -> Result<u64> {
        let mut c = self.lock()?;
        btree::check_value(value)?;
        // The key counter lives in the tree's state, which only the tree's
        // batches log: this one goes to the tree.
        let mut n = 0;
        let wait = c.write_with(value.len(), 1, |t| {
            n = t.meta.next_auto;
            t.meta.next_auto += 1;
            let existed = t.put(&n.to_be_bytes(), value)?;
            debug_assert!(!existed, "key {n} is new");
            Ok(())
        })?;
        self.committed(c, wait)?;
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
        let cost = batch
            .iter()
            .map(|op| {
                let (k, v) = op.change();
                Memtable::cost(k, v)
            })
            .sum();
        if c.buffers(cost) {
            let changes: Vec<_> = batch.iter().map(BatchOp::change).collect();
            let wait = c.buffer(&changes, cost)?;
            return self.committed(c, wait);
        }
        // In key order (a stable sort: one key's operations keep theirs):
        // neighbouring keys share their descent, whose pages stay in cache.
        // Keys' first 8 bytes, compared as one integer, decide most pairs.
        let mut ops: Vec<(u64, BatchOp<'_>)> =
            batch.iter().map(|op| (head(op.key()), op)).collect();
        ops.sort_by(|(ha, a), (hb, b)| ha.cmp(hb).then_with(|| a.key().cmp(b.key())));
        let wait = c.write_with(bytes + batch.len(), batch.len(), |t| {
            for &(_, op) in &ops {
                match op {
                    BatchOp::Put(k, v) => t.put(k, v).map(drop)?,
                    BatchOp::Delete(k) => t.delete(k).map(drop)?,
                }
            }
            Ok(())
        })?;
        self.committed(c, wait)
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
        self.scan_chunk(range, reverse, limit, |pairs| {
            for p in pairs {
                f(p.key(), p.value());
            }
            pairs.len()
        })
    }

    /// `f` of the at most `limit` pairs with keys in `range` (descending
    /// if `reverse`), all at once, lent from the buffers holding them so a
    /// caller can keep them without a copy; the same locking as
    /// [`Db::scan_with`].
    pub(crate) fn scan_chunk<R: RangeBounds<[u8]>, T>(
        &self,
        range: R,
        reverse: bool,
        limit: usize,
        f: impl FnOnce(&[btree::Pair<'_>]) -> T,
    ) -> Result<T> {
        let bounds = (range.start_bound(), range.end_bound());
        if limit != usize::MAX {
            let c = self.shared()?;
            let mut pairs = btree::Pairs::new();
            if c.scan_resident(bounds, reverse, limit, &mut pairs)? {
                return Ok(f(&pairs));
            }
        }
        let mut c = self.lock()?;
        let pairs = c.scan(bounds, reverse, limit)?;
        drop(c);
        debug_assert!(pairs.len() <= limit, "a scan stops at its limit");
        // One copy more, into one buffer the pairs are lent from.
        let (buf, spans) = btree::pack(&pairs);
        let lent: Vec<btree::Pair<'_>> = spans
            .iter()
            .map(|&span| btree::Pair { buf: &buf, span })
            .collect();
        Ok(f(&lent))
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
    /// let keys: Vec<Vec<u8>> = db.prefix(b"a").map(|r| r.unwrap().key().to_vec()).collect();
    /// assert_eq!(keys, [b"a1".to_vec(), b"a2".to_vec()]);
    /// assert_eq!(db.range_rev(..).next().unwrap().unwrap().key(), b"b1");
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
            owned(Bound::Included(prefix)),
            prefix_end(prefix),
            false,
        )
    }

    /// The tree's height, keys, pages by kind, free pages and leaf fill,
    /// from a walk of every page (reads the whole store). The pairs the
    /// memtable holds are not in the tree yet ([`Stats::memtable_keys`]).
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

    /// Moves the memtable's pairs into the tree, writes every dirty page to
    /// the page store, records a checkpoint and empties the write-ahead log.
    pub fn checkpoint(&self) -> Result<()> {
        let mut c = self.lock()?;
        c.drain()?;
        c.guard(Core::checkpoint)
    }

    /// Makes every write durable, marks the end of the log, and returns
    /// the device. An in-place store leaves its dirty pages to the log,
    /// which the next open replays and goes on appending to; other stores,
    /// and any with [`crate::OptionsBuilder::close_checkpoint`], write them
    /// back first (a checkpoint).
    pub fn close(self) -> Result<Box<dyn BlockDevice>> {
        Ok(self.close_with_log()?.0)
    }

    /// [`Db::close`], returning the device and the log device, if the
    /// store has one ([`Db::open_with_log`]).
    pub fn close_with_log(mut self) -> Result<Devices> {
        self.stop_writer();
        self.lock()?.guard(Core::close_out)?;
        Ok(self.into_devices())
    }

    /// Returns the device as it is, without writing anything (for crash tests).
    pub fn into_device(mut self) -> Box<dyn BlockDevice> {
        self.stop_writer();
        self.into_devices().0
    }

    /// Counters since open.
    pub fn stats(&self) -> Stats {
        let mut c = self.inner.core.write().unwrap_or_else(|e| e.into_inner());
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
            switches: c.switches,
            stalls: c.stalls,
            memtable_keys: c.memtable.len(),
            memtable_bytes: c.memtable.memory(),
            drains: c.drains,
            log_bytes: c.layout.wal_len,
            device_flushes: c.disk.flushes + self.inner.sync.syncs(),
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
        self.inner
            .core
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .store
            .kind()
    }
}

impl Core {
    /// Admits the pages shared readers read since the last exclusive lock.
    fn admit_staged(&mut self) -> Result<()> {
        let n = self.pool.admit_staged(&mut *self.store, &mut self.disk)?;
        if n > 0 {
            let bytes = n * self.store.page_size() as u64;
            self.store.note_shared_reads(n);
            self.disk.data.reads += n;
            self.disk.data.read_bytes += bytes;
        }
        Ok(())
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

    /// The value of `key`: the memtable's change, else the tree's.
    fn value(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.memtable.get(key) {
            Some(v) => Ok(v.map(<[u8]>::to_vec)),
            None => self.read(|t| t.get(key)),
        }
    }

    fn read<T>(&mut self, f: impl FnOnce(&mut Tree<'_>) -> Result<T>) -> Result<T> {
        debug_assert!(self.pool.idle(), "a read runs between batches");
        self.guard(|c| {
            let r = f(&mut c.tree());
            // A read never pins; this only brings the pool back to size.
            c.pool.unpin(&mut *c.store, &mut c.disk)?;
            c.settle()?;
            r
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// Heads that differ order keys as the keys' bytes do.
        #[test]
        fn heads_agree_with_key_order(
            a in proptest::collection::vec(any::<u8>(), 0..12),
            b in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            let (ha, hb) = (super::head(&a), super::head(&b));
            if ha != hb {
                prop_assert_eq!(ha.cmp(&hb), a.cmp(&b));
            }
        }
    }
}
