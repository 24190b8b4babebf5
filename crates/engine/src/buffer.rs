//! Buffer pool: resident pages, their dirty state and in-memory page logs.
//!
//! Pages a running write batch modifies are pinned: they stay resident (the
//! pool may grow past its capacity meanwhile) until the batch's log record
//! is written, so no page store ever sees a change that is not logged.
//!
//! Bookkeeping is per page touched, never per resident page: the pinned
//! pages are listed as the batch pins them, and the dirty pages are kept in
//! an ordered set, where an erase unit's dirty pages are one range (both
//! page stores number a unit's pages consecutively).
//!
//! The pool also knows which pages have an image in the write-ahead log
//! since the checkpoint ("imaged"), and counts the dirty pages that do not:
//! a store that overwrites pages logs their images just before writing
//! them back, and the log keeps room for that many.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Mutex;

use crate::error::Result;
use crate::io::Disk;
use crate::page::{Kind, Op, Page, PageId, NO_PAGE};
use crate::policy::{FrameInfo, FrameView, Policy};
use crate::redo;
use crate::store::PageStore;

/// A resident page.
#[derive(Clone)]
pub(crate) struct Frame {
    pub page: Page,
    /// Differs from the page store's copy.
    pub dirty: bool,
    /// Must be written whole (new page, unloggable change or full log).
    pub bomb: bool,
    /// Encoded in-page log records since the page was last written.
    pub log: Vec<u8>,
    pub records: u16,
    /// Modified by the running batch.
    pub pinned: bool,
    /// Log record (count of appends) holding the latest image of the page.
    pub lsn: u64,
    /// Used since the policy last looked (a policy that reads the bits:
    /// [`Policy::reads_bits`]).
    pub used: UseBit,
}

/// A frame's reference bit. Readers sharing the store set it, so it is
/// atomic; it is cleared only under the exclusive lock, by the policy.
#[derive(Debug, Default)]
pub(crate) struct UseBit(AtomicBool);

impl Clone for UseBit {
    fn clone(&self) -> Self {
        UseBit(AtomicBool::new(self.get()))
    }
}

impl UseBit {
    /// Sets the bit, storing only if it was clear: readers on several
    /// cores using a hot page (the root) then only read its frame's line,
    /// never pass it back and forth.
    fn set(&self) {
        if !self.get() {
            self.0.store(true, Relaxed);
        }
    }

    fn get(&self) -> bool {
        self.0.load(Relaxed)
    }

    fn clear(&self) {
        self.0.store(false, Relaxed);
    }
}

impl Frame {
    /// The page store wrote the page.
    pub fn clean(&mut self) {
        debug_assert!(
            !self.pinned,
            "page {}: written while a batch pins it",
            self.page.id()
        );
        self.dirty = false;
        self.bomb = false;
        self.log.clear();
        self.records = 0;
    }
}

/// A page's state before the running batch first changed it.
enum Before {
    /// The batch created it.
    New,
    /// The page store holds it as it was: rolling back forgets the frame,
    /// and a later use reads it again (no copy of a clean page is kept,
    /// which halves the memory of a batch over pages read from the store).
    Clean,
    /// It was dirty: a copy of its frame.
    Dirty(Frame),
    /// It was dirty, in a pool whose pages the log rebuilds: rolling back
    /// forgets the frame, and the caller rebuilds it from the log, which
    /// holds every change committed since the checkpoint.
    Logged,
}

/// Entries past which a batch's map is dropped, not cleared, when it
/// commits: clearing costs the map's capacity, which a large batch (a bulk
/// load) would otherwise leave for every later commit to pay, and keep.
const KEEP_MAP: usize = 4096;

/// Empties a batch's map (`undo`, `changes`), keeping its memory only if
/// a batch of ordinary size left it.
fn emptied<V>(m: &mut HashMap<PageId, V>) {
    match m.capacity() > KEEP_MAP {
        true => *m = HashMap::default(),
        false => m.clear(),
    }
}

/// What a batch did to a page.
pub(crate) enum Change {
    /// Rewrote it whole (a new page, a split, a freed page).
    Whole,
    /// Applied these encoded operations, in order.
    Ops { count: u16, bytes: Vec<u8> },
}

/// Buffer counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BufferStats {
    /// Page requests the pool served.
    pub hits: u64,
    /// Page requests that read the page store.
    pub misses: u64,
    /// Of those, the pages readers sharing the store read themselves (in
    /// parallel, outside the exclusive lock), admitted afterwards.
    pub shared_misses: u64,
    /// Evictions that wrote the victim (and its group) back.
    pub dirty_evictions: u64,
    /// Evictions of unchanged pages: nothing written.
    pub clean_evictions: u64,
    /// Dirty pages written along with a victim of the same erase unit.
    pub group_writes: u64,
    /// Pages written back by evictions (victims and their groups).
    pub eviction_pages: u64,
    /// Pages written back ahead of need, by the background writer (or by
    /// a switch whose carry it had let grow too large).
    pub writer_pages: u64,
    /// Pages written back by full checkpoints (close, recovery, and
    /// [`crate::Db::checkpoint`]).
    pub checkpoint_pages: u64,
    /// Dirty pages a batch's rollback rebuilt from the log (a store that
    /// overwrites pages, with a log, keeps no copy of them).
    pub rebuilt_pages: u64,
}

/// Why pages are written back, for [`BufferStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    Eviction,
    Writer,
    Checkpoint,
}

/// Page uses seen by readers holding the store shared, for the policy.
/// Cache-line aligned: each reader thread has its own shard, so readers
/// on different cores do not contend on it.
#[derive(Default)]
#[repr(align(128))]
struct SharedUses {
    pages: Vec<PageId>,
    hits: u64,
}

/// Pages a batch pins beyond which, if the pool is smaller, nothing is
/// evicted until it commits.
const LARGE_BATCH: usize = 64;

/// Shards of shared uses; a thread keeps to one.
const USE_SHARDS: usize = 8;

/// The shard of the calling thread: threads take shards in the order they
/// first read, so a single thread's uses stay in order in shard 0.
fn use_shard() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % USE_SHARDS);
    SHARD.with(|s| *s)
}

/// Pages shared readers may stage before one is sent down the exclusive
/// path to admit them (4 MiB of 4 KiB pages). Each such hand-over stops
/// every reader; staged pages serve reads meanwhile, so holding more of
/// them costs memory, not reads again.
const MAX_STAGED: usize = 1024;

/// Pages shared readers read from the store, in the order they read them,
/// and where each is in that order.
#[derive(Default)]
struct Staged {
    pages: Vec<Page>,
    at: HashMap<PageId, usize>,
}

/// Uses readers may record before one is sent down the exclusive path to
/// hand them over (when other readers kept the policy busy meanwhile).
const MAX_SHARED_USES: usize = 4096;

/// Uses a reader records before it hands them to the policy itself: enough
/// that taking the policy's lock is a small part of the work (one atomic
/// operation per batch against a hash lookup and a list move per use), few
/// enough that the read doing it stays short. A use costs the policy about
/// 0.1 µs (a cache miss or two), so sixteen add about 1.5 µs to one read in
/// a few, where a 10-key range takes 2–3 µs; 64 added about 6 µs to one in
/// thirteen, and the ranges' p99 was 2–3× their p50 (docs/benchmarks.md).
const HAND_OVER: usize = 16;

/// Pools get distinct numbers, for [`repeated_use`].
static POOLS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The pool (its number) and page the calling thread used last.
    static LAST_USE: Cell<(u64, PageId)> = const { Cell::new((u64::MAX, NO_PAGE)) };
}

/// Whether the calling thread's last use in pool `pool` was of `page`,
/// which it now uses: the same use, as the B-tree fetches a page and then
/// reads it.
fn repeated_use(pool: u64, page: PageId) -> bool {
    LAST_USE.with(|c| c.replace((pool, page)) == (pool, page))
}

/// The policy, reached with exclusive access (no lock taken).
fn policy_of(m: &mut Mutex<Box<dyn Policy>>) -> &mut dyn Policy {
    m.get_mut().unwrap_or_else(|e| e.into_inner()).as_mut()
}

pub(crate) struct BufferPool {
    frames: HashMap<PageId, Frame>,
    /// Uses by shared readers, in order per thread, not yet given to the policy.
    shared: [Mutex<SharedUses>; USE_SHARDS],
    /// Pages shared readers read from the store, admitted at the next
    /// exclusive lock (no writer runs in between, so they are current).
    staged: Mutex<Staged>,
    /// Resident pages that differ from the page store's copy.
    dirty: BTreeSet<PageId>,
    /// The dirty pages by their latest change (the frame's `lsn`), oldest
    /// first: the background writer cleans the pages changed longest ago.
    by_change: BTreeSet<(u64, PageId)>,
    /// Each dirty page's key in `by_change`.
    change_of: HashMap<PageId, u64>,
    /// Pages the running batch pinned, in the order it pinned them.
    pinned: Vec<PageId>,
    /// What the running batch did to each pinned page, for its log record.
    changes: HashMap<PageId, Change>,
    capacity: usize,
    /// The replacement policy. Under the exclusive lock it is reached
    /// without locking ([`Mutex::get_mut`]); a shared reader whose uses
    /// reach [`HAND_OVER`] gives them to it if no other reader holds it.
    policy: Mutex<Box<dyn Policy>>,
    policy_name: &'static str,
    /// The policy reads the frames' use bits ([`Policy::reads_bits`]):
    /// uses set them and never reach it.
    bits: bool,
    /// This pool's number, for [`repeated_use`].
    number: u64,
    pub stats: BufferStats,
    /// State of each page before the running batch first changed it, to
    /// roll the batch back.
    undo: HashMap<PageId, Before>,
    /// A rollback may leave dirty pages for the log to rebuild.
    log_rebuilds: bool,
    /// Keep internal (index) pages resident outside the frame budget, as
    /// seed 001 keeps its index in main memory.
    index_resident: bool,
    /// Never evict a dirty page: a read-only store holds the pages the log
    /// of a closed store changed, and cannot write them.
    keep_dirty: bool,
    /// Resident internal pages.
    index_pages: usize,
    /// Pages whose image the write-ahead log holds since the checkpoint.
    imaged: HashSet<PageId>,
    /// Dirty pages not in `imaged`.
    unimaged: usize,
}

/// Pages per images record: bounds the record's buffer (1 MiB of 4 KiB pages).
const IMAGES_PER_RECORD: usize = 256;

struct View<'a> {
    frames: &'a HashMap<PageId, Frame>,
    dirty: &'a BTreeSet<PageId>,
    store: &'a dyn PageStore,
    index_resident: bool,
    keep_dirty: bool,
}

fn is_index(f: &Frame) -> bool {
    f.page.kind() == Kind::Internal
}

impl FrameView for View<'_> {
    fn referenced(&self, page: PageId) -> bool {
        self.frames.get(&page).is_some_and(|f| f.used.get())
    }
    fn clear_reference(&self, page: PageId) {
        if let Some(f) = self.frames.get(&page) {
            f.used.clear();
        }
    }
    fn info(&self, page: PageId) -> Option<FrameInfo> {
        self.frames.get(&page).map(|f| FrameInfo {
            page,
            dirty: f.dirty,
            unit: self.store.unit_of(page),
        })
    }
    fn evictable(&self, page: PageId) -> bool {
        self.frames.get(&page).is_some_and(|f| {
            !(f.pinned || self.index_resident && is_index(f) || self.keep_dirty && f.dirty)
        })
    }
    fn dirty_in_unit(&self, unit: u64) -> Vec<PageId> {
        self.dirty
            .range(self.store.unit_pages(unit))
            .copied()
            .filter(|p| self.evictable(*p))
            .collect()
    }
}

impl BufferPool {
    pub fn new(capacity: usize, policy: Box<dyn Policy>, index_resident: bool) -> BufferPool {
        BufferPool {
            frames: HashMap::default(),
            shared: Default::default(),
            staged: Mutex::new(Staged::default()),
            dirty: BTreeSet::new(),
            by_change: BTreeSet::new(),
            change_of: HashMap::default(),
            pinned: Vec::new(),
            changes: HashMap::default(),
            capacity: capacity.max(1),
            policy_name: policy.name(),
            bits: policy.reads_bits(),
            number: POOLS.fetch_add(1, Relaxed),
            policy: Mutex::new(policy),
            stats: BufferStats::default(),
            undo: HashMap::default(),
            log_rebuilds: false,
            index_resident,
            keep_dirty: false,
            index_pages: 0,
            imaged: HashSet::default(),
            unimaged: 0,
        }
    }

    /// Adds `id` to or removes it from the dirty set, keeping the count
    /// of dirty pages without an image.
    fn set_dirty(&mut self, id: PageId, dirty: bool) {
        let changed = match dirty {
            true => self.dirty.insert(id),
            false => self.dirty.remove(&id),
        };
        if changed {
            match dirty {
                true => {
                    let lsn = self.frames.get(&id).map_or(0, |f| f.lsn);
                    self.change_of.insert(id, lsn);
                    self.by_change.insert((lsn, id));
                }
                false => {
                    let lsn = self.change_of.remove(&id).expect("a dirty page has a key");
                    self.by_change.remove(&(lsn, id));
                }
            }
        }
        if changed && !self.imaged.contains(&id) {
            match dirty {
                true => self.unimaged += 1,
                false => {
                    assert!(
                        self.unimaged > 0,
                        "page {id}: more unimaged pages cleaned than dirtied"
                    );
                    self.unimaged -= 1;
                }
            }
        }
    }

    /// The log now holds an image of `id` (durably once it is flushed).
    pub fn mark_imaged(&mut self, id: PageId) {
        if self.imaged.insert(id) && self.dirty.contains(&id) {
            assert!(
                self.unimaged > 0,
                "page {id}: dirty, unimaged, yet not counted"
            );
            self.unimaged -= 1;
        }
    }

    /// Whether the log holds an image of `id` since the checkpoint.
    pub fn is_imaged(&self, id: PageId) -> bool {
        self.imaged.contains(&id)
    }

    /// A new log epoch began: it holds no images yet.
    pub fn new_epoch(&mut self) {
        debug_assert!(self.pinned.is_empty(), "an epoch begins between batches");
        self.imaged.clear();
        self.unimaged = self.dirty.len();
    }

    /// Dirty pages whose image is not in the log.
    pub fn unimaged(&self) -> usize {
        debug_assert_eq!(
            self.unimaged,
            self.dirty
                .iter()
                .filter(|p| !self.imaged.contains(p))
                .count(),
            "count of dirty pages without an image"
        );
        self.unimaged
    }

    /// Whether the pool holds fewer pages than its capacity: pages changed
    /// now are likely to stay until the next checkpoint.
    pub fn has_room(&self) -> bool {
        self.budgeted() < self.capacity
    }

    pub fn dirty_len(&self) -> usize {
        self.dirty.len()
    }

    /// Frames counted against the capacity.
    fn budgeted(&self) -> usize {
        if self.index_resident {
            self.frames.len() - self.index_pages
        } else {
            self.frames.len()
        }
    }

    pub fn policy_name(&self) -> &'static str {
        self.policy_name
    }

    /// The policy, under the exclusive lock.
    fn policy(&mut self) -> &mut dyn Policy {
        policy_of(&mut self.policy)
    }

    pub fn contains(&self, id: PageId) -> bool {
        self.frames.contains_key(&id)
    }

    pub fn resident(&self) -> usize {
        self.frames.len()
    }

    /// The resident page `id`, without recording a use (see [`Self::note_shared`]).
    pub fn peek(&self, id: PageId) -> Option<&Page> {
        self.frames.get(&id).map(|f| &f.page)
    }

    /// Records that a shared reader used `pages` (all resident): in their
    /// frames' bits, for a policy that reads them (always room); else in
    /// the thread's uses, false, recording nothing, when too many uses wait
    /// for the policy already.
    /// Once the thread's uses reach [`HAND_OVER`], gives them to the policy
    /// if no other reader is doing so (else they wait for the next reader
    /// or exclusive lock): readers hand their uses over in small batches,
    /// not all at once under the exclusive lock.
    pub fn note_shared(&self, pages: &[PageId]) -> bool {
        let shard = &self.shared[use_shard()];
        let mut s = shard.lock().unwrap_or_else(|e| e.into_inner());
        if self.bits {
            s.hits += pages.len() as u64;
            drop(s);
            for &id in pages {
                self.mark_used(id, &self.frames[&id]);
            }
            return true;
        }
        if s.pages.len() + pages.len() > MAX_SHARED_USES {
            return false;
        }
        s.pages.extend_from_slice(pages);
        s.hits += pages.len() as u64;
        if s.pages.len() >= HAND_OVER {
            if let Ok(mut policy) = self.policy.try_lock() {
                // No eviction runs under the shared lock, and the last
                // exclusive lock took the uses before these: all resident.
                for id in s.pages.drain(..) {
                    debug_assert!(self.frames.contains_key(&id), "page {id} resident");
                    policy.access(id);
                }
            }
        }
        true
    }

    /// Records a use of resident page `id` in its frame `f`, for a policy
    /// that reads the bits: a page used twice in a row (by one thread) is
    /// used once.
    fn mark_used(&self, id: PageId, f: &Frame) {
        debug_assert!(self.bits, "the policy reads use bits");
        if !repeated_use(self.number, id) {
            f.used.set();
        }
    }

    /// A use of resident page `id`, for the policy.
    fn use_page(&mut self, id: PageId) {
        match self.bits {
            true => self.mark_used(id, &self.frames[&id]),
            false => self.policy().access(id),
        }
    }

    /// Gives the policy the uses shared readers recorded, each thread's in
    /// order. Runs first under the exclusive lock, so those pages are
    /// still resident.
    pub fn drain_shared(&mut self) {
        debug_assert!(
            self.idle(),
            "shared uses are handed over between operations"
        );
        let policy = policy_of(&mut self.policy);
        for shard in &mut self.shared {
            let s = shard.get_mut().unwrap_or_else(|e| e.into_inner());
            self.stats.hits += std::mem::take(&mut s.hits);
            // Drained in place: the vector keeps its room for the next uses.
            for id in s.pages.drain(..) {
                debug_assert!(
                    self.frames.contains_key(&id),
                    "shared use of evicted page {id}"
                );
                if self.frames.contains_key(&id) {
                    policy.access(id);
                }
            }
        }
    }

    /// Keeps a page a shared reader read for the next exclusive lock to
    /// admit; false, keeping nothing, when too many wait already.
    pub fn stage(&self, page: Page) -> bool {
        let mut s = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert_eq!(s.pages.len(), s.at.len(), "each staged page once");
        if s.at.contains_key(&page.id()) {
            return true; // another reader staged it first
        }
        // No more than the pool holds: admitted, they would evict each other.
        if s.pages.len() >= MAX_STAGED.min(self.capacity) {
            return false;
        }
        let i = s.pages.len();
        s.at.insert(page.id(), i);
        s.pages.push(page);
        true
    }

    /// The page `id` a shared reader staged, if one did since the last
    /// exclusive lock: current, as no writer ran since.
    pub fn staged(&self, id: PageId) -> Option<Page> {
        let s = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        s.at.get(&id).map(|&i| s.pages[i].clone())
    }

    /// Admits the pages shared readers read (those not resident since),
    /// making room as a miss does; returns how many it admitted. Runs
    /// first under the exclusive lock.
    pub fn admit_staged(&mut self, store: &mut dyn PageStore, disk: &mut Disk) -> Result<u64> {
        let staged = std::mem::take(self.staged.get_mut().unwrap_or_else(|e| e.into_inner()));
        let mut n = 0;
        for page in staged.pages {
            let id = page.id();
            if self.frames.contains_key(&id) {
                continue;
            }
            self.stats.misses += 1;
            self.stats.shared_misses += 1;
            self.make_room(store, disk)?;
            self.insert(id, page, false, false);
            n += 1;
        }
        Ok(n)
    }

    /// The frame of `id`, read from the store on a miss.
    pub fn get(
        &mut self,
        store: &mut dyn PageStore,
        disk: &mut Disk,
        id: PageId,
    ) -> Result<&mut Frame> {
        if self.frames.contains_key(&id) {
            self.stats.hits += 1;
            self.use_page(id);
        } else {
            self.stats.misses += 1;
            self.make_room(store, disk)?;
            let page = store.read(disk, id)?;
            debug_assert_eq!(page.id(), id, "a page store reads the page asked for");
            self.insert(id, page, false, false);
        }
        Ok(self.frames.get_mut(&id).expect("resident"))
    }

    /// Remembers the page's state before the running batch changes it,
    /// and that the batch pins it.
    fn save(&mut self, id: PageId) {
        debug_assert_eq!(
            self.undo.len(),
            self.pinned.len(),
            "every pinned page has its undo"
        );
        if !self.undo.contains_key(&id) {
            let before = match self.frames.get(&id) {
                None => Before::New,
                Some(f) if !f.dirty => Before::Clean,
                // A copy would serve only a batch that fails or must run
                // again (rare), yet every commit would pay for it.
                Some(_) if self.log_rebuilds => Before::Logged,
                Some(f) => Before::Dirty(f.clone()),
            };
            self.undo.insert(id, before);
            self.pinned.push(id);
        }
    }

    /// Brings the dirty set in line with the frame of `id` (or its absence).
    fn note(&mut self, id: PageId) {
        let dirty = self.frames.get(&id).is_some_and(|f| f.dirty);
        self.set_dirty(id, dirty);
    }

    fn insert(&mut self, id: PageId, page: Page, dirty: bool, pinned: bool) {
        let f = Frame {
            page,
            dirty,
            bomb: dirty,
            log: Vec::new(),
            records: 0,
            pinned,
            lsn: 0,
            used: UseBit::default(),
        };
        let index = is_index(&f);
        debug_assert_eq!(f.page.id(), id, "a frame holds its own page");
        match self.frames.insert(id, f) {
            Some(old) => {
                self.index_pages =
                    self.index_pages + usize::from(index) - usize::from(is_index(&old));
                // The page's image changed, not its use: its bit stays.
                if old.used.get() {
                    self.frames[&id].used.set();
                }
                self.use_page(id);
            }
            None => {
                self.index_pages += usize::from(index);
                self.policy().admit(id);
                if self.bits {
                    // Loading a page is its use: the read that follows is the same.
                    repeated_use(self.number, id);
                }
            }
        }
        self.note(id);
    }

    /// A page the running batch created or rewrote whole.
    pub fn put_whole(
        &mut self,
        store: &mut dyn PageStore,
        disk: &mut Disk,
        page: Page,
    ) -> Result<()> {
        let id = page.id();
        if !self.frames.contains_key(&id) {
            self.make_room(store, disk)?;
        }
        self.save(id);
        self.insert(id, page, true, true);
        self.changes.insert(id, Change::Whole);
        debug_assert!(self.dirty.contains(&id), "page {id} rewritten is dirty");
        Ok(())
    }

    /// A page recovered from the write-ahead log: dirty, written whole, not pinned.
    pub fn install(&mut self, page: Page) {
        debug_assert!(
            self.pinned.is_empty(),
            "recovery installs pages outside any batch"
        );
        self.insert(page.id(), page, true, false);
    }

    /// Applies a change to a resident page and records it in the page's log.
    pub fn apply<B: AsRef<[u8]>>(&mut self, id: PageId, op: Op<B>, log_cap: usize) -> Result<()> {
        self.save(id);
        let f = self.frames.get_mut(&id).expect("page is resident");
        f.page.apply(&op)?;
        match self.changes.entry(id).or_insert_with(|| Change::Ops {
            count: 0,
            // Room for a few operations: one growth, not one per operation.
            bytes: Vec::with_capacity(4 * op.encoded_len()),
        }) {
            // Operations outweighing the page are logged as its image.
            Change::Ops { count, bytes } if *count == u16::MAX || bytes.len() >= f.page.size() => {
                self.changes.insert(id, Change::Whole);
            }
            Change::Ops { count, bytes } => {
                op.encode(bytes);
                *count += 1;
            }
            Change::Whole => {}
        }
        let was_dirty = f.dirty;
        if !was_dirty {
            policy_of(&mut self.policy).dirtied(id);
        }
        f.dirty = true;
        f.pinned = true;
        if !f.bomb {
            if log_cap == 0 || f.log.len() + op.encoded_len() > log_cap {
                // Seed 001 §5.2.3: a full log turns the page into a "bomb".
                f.bomb = true;
                f.log.clear();
                f.records = 0;
            } else {
                op.encode(&mut f.log);
                f.records += 1;
            }
        }
        debug_assert!(
            f.bomb || f.log.len() <= log_cap,
            "page {id}: its log fits a sector"
        );
        // A dirty frame is in the dirty set already: skip the search.
        debug_assert_eq!(self.dirty.contains(&id), was_dirty, "page {id}: dirty set");
        if !was_dirty {
            self.set_dirty(id, true);
        }
        Ok(())
    }

    /// The pages the running batch created with ids from `from` on (never
    /// allocated before: the store's copy is nothing anyone needs), by id,
    /// sealed: what a batch may write where they live before its record.
    pub fn fresh(&mut self, from: PageId) -> Vec<(PageId, &[u8])> {
        let mut ids: Vec<PageId> = self
            .undo
            .iter()
            .filter(|(id, b)| **id >= from && matches!(b, Before::New))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        for id in &ids {
            self.frames.get_mut(id).expect("pinned").page.seal();
        }
        ids.iter()
            .map(|id| (*id, self.frames[id].page.bytes()))
            .collect()
    }

    /// The running batch wrote `ids` where they live before its record: once
    /// it commits they are clean (and without an image in the log, so a
    /// later write back logs one first).
    pub fn mark_stored(&mut self, ids: &[PageId]) {
        for id in ids {
            let f = self.frames.get_mut(id).expect("pinned");
            debug_assert!(f.pinned && f.dirty, "page {id} of the batch");
            f.dirty = false;
            f.bomb = false;
            f.log.clear();
            f.records = 0;
            self.set_dirty(*id, false);
        }
    }

    /// The pages the running batch changed, by page id, with what it did
    /// to each.
    pub fn batch(&self) -> Vec<(&Page, &Change)> {
        debug_assert_eq!(
            self.changes.len(),
            self.pinned.len(),
            "every pinned page has its change"
        );
        let mut v: Vec<(&Page, &Change)> = self
            .pinned
            .iter()
            .map(|id| (&self.frames[id].page, &self.changes[id]))
            .collect();
        v.sort_unstable_by_key(|(p, _)| p.id());
        v
    }

    /// From now on no dirty page leaves the pool (a read-only store's).
    pub fn keep_dirty(&mut self) {
        self.keep_dirty = true;
    }

    /// A page recovery installed is as the page store holds it: it leaves
    /// the pool, to be read again when used.
    pub fn forget_installed(&mut self, id: PageId) {
        debug_assert!(
            self.frames.get(&id).is_some_and(|f| f.dirty && !f.pinned),
            "page {id} was installed by recovery"
        );
        self.remove(id);
    }

    /// Applies logged operations to a page recovery installed earlier.
    pub fn replay_ops(&mut self, id: PageId, ops: &[Op]) -> Result<()> {
        let Some(f) = self.frames.get_mut(&id) else {
            return Err(crate::error::bad_page(
                id,
                "the log changes it, but holds no image of it since the checkpoint",
            ));
        };
        debug_assert!(f.dirty, "a page recovery installed is dirty");
        for op in ops {
            f.page.apply(op)?;
        }
        Ok(())
    }

    /// Whether eviction should wait for the running batch to commit:
    /// every resident page is pinned, or the batch pins more pages than
    /// the pool holds (and more than [`LARGE_BATCH`]). The pool grows with
    /// such a batch and shrinks when it commits: evicting the few unpinned
    /// pages meanwhile would only throw out the index the batch walks, and
    /// finding them costs a walk past every pinned page.
    fn hold_evictions(&self) -> bool {
        self.pinned.len() >= self.frames.len() || self.pinned.len() > self.capacity.max(LARGE_BATCH)
    }

    /// The batch is logged (as record `disk.logged`): its pages may be
    /// evicted; shrink to capacity.
    pub fn unpin(&mut self, store: &mut dyn PageStore, disk: &mut Disk) -> Result<()> {
        emptied(&mut self.undo);
        emptied(&mut self.changes);
        for id in std::mem::take(&mut self.pinned) {
            let f = self.frames.get_mut(&id).expect("a pinned page is resident");
            debug_assert!(f.pinned, "page {id} listed as pinned");
            f.pinned = false;
            f.page.build_index();
            self.changed_by(id, disk.logged);
        }
        debug_assert!(self.idle(), "a committed batch leaves nothing pinned");
        self.shrink(store, disk)
    }

    fn remove(&mut self, id: PageId) {
        if let Some(f) = self.frames.remove(&id) {
            assert!(
                self.index_pages >= usize::from(is_index(&f)),
                "index pages counted"
            );
            self.index_pages -= usize::from(is_index(&f));
            self.policy().forget(id);
            self.set_dirty(id, false);
        }
    }

    /// Undoes every change of the running batch; returns the pages it
    /// could not restore, for the log to rebuild ([`Before::Logged`]).
    #[must_use = "the pages returned must be rebuilt from the log"]
    pub fn rollback(&mut self) -> Vec<PageId> {
        self.pinned.clear();
        emptied(&mut self.changes);
        let mut lost = Vec::new();
        for (id, before) in std::mem::take(&mut self.undo) {
            match before {
                Before::Dirty(f) => {
                    let index = usize::from(is_index(&f));
                    let old = self
                        .frames
                        .insert(id, f)
                        .map_or(0, |o| usize::from(is_index(&o)));
                    self.index_pages = self.index_pages + index - old;
                    self.note(id);
                }
                Before::New | Before::Clean => self.remove(id),
                Before::Logged => {
                    self.remove(id);
                    lost.push(id);
                }
            }
        }
        debug_assert!(self.consistent(), "the pool after a rollback");
        lost
    }

    /// Lets a rollback leave dirty pages for the log to rebuild (a store
    /// with a log, whose frames hold nothing the log does not: no in-page
    /// log of their own).
    pub fn rebuild_from_log(&mut self, on: bool) {
        self.log_rebuilds = on;
    }

    /// A page the log rebuilt after a rollback: its latest change is in
    /// the newest record at most, which must be durable before it is
    /// written back.
    pub fn rebuilt(&mut self, id: PageId, logged: u64) {
        debug_assert!(
            self.frames.get(&id).is_some_and(|f| f.dirty),
            "page {id} was dirty before the batch"
        );
        self.stats.rebuilt_pages += 1;
        self.changed_by(id, logged);
    }

    /// Record `logged` holds the latest change of resident page `id`: a
    /// dirty one is ordered by it among the pages changed longest ago.
    fn changed_by(&mut self, id: PageId, logged: u64) {
        let f = self
            .frames
            .get_mut(&id)
            .expect("a changed page is resident");
        f.lsn = logged;
        // Dirty but for the pages a batch stored before its record.
        if f.dirty {
            let old = self
                .change_of
                .insert(id, logged)
                .expect("a dirty page has a key");
            self.by_change.remove(&(old, id));
            self.by_change.insert((logged, id));
        }
    }

    fn make_room(&mut self, store: &mut dyn PageStore, disk: &mut Disk) -> Result<()> {
        while self.budgeted() >= self.capacity && !self.hold_evictions() {
            if !self.evict(store, disk)? {
                break;
            }
        }
        Ok(())
    }

    /// Evicts one page; false when every resident page is pinned.
    fn evict(&mut self, store: &mut dyn PageStore, disk: &mut Disk) -> Result<bool> {
        let view = View {
            frames: &self.frames,
            dirty: &self.dirty,
            store: &*store,
            index_resident: self.index_resident,
            keep_dirty: self.keep_dirty,
        };
        let policy = policy_of(&mut self.policy);
        let Some(victim) = policy.victim(&view) else {
            return Ok(false);
        };
        assert!(
            view.evictable(victim),
            "policy {} chose page {victim}, which may not leave",
            self.policy_name
        );
        let f = &self.frames[&victim];
        if f.dirty {
            let unit = store.unit_of(victim);
            let mut group = if store.needs_merge(disk, victim, f) {
                // The whole unit is rewritten anyway: take dirty pages of it along.
                let mut g = view.dirty_in_unit(unit);
                g.retain(|p| *p == victim || store.joins_rewrite(disk, *p, &self.frames[p]));
                g
            } else {
                let info = FrameInfo {
                    page: victim,
                    dirty: true,
                    unit,
                };
                let mut g = policy.write_group(info, &view);
                g.retain(|p| {
                    view.evictable(*p) && view.info(*p).is_some_and(|i| i.dirty && i.unit == unit)
                });
                g.push(victim);
                g
            };
            group.sort_unstable();
            group.dedup();
            if !self.room_to_image(store, disk, &group) {
                // The log's half cannot take their images: the pool stays
                // over its size until a switch carries them (the caller's).
                return Ok(false);
            }
            self.write(store, disk, &group, Why::Eviction)?;
            self.stats.dirty_evictions += 1;
            self.stats.group_writes += group.len() as u64 - 1;
        } else {
            self.stats.clean_evictions += 1;
        }
        debug_assert!(!self.dirty.contains(&victim), "page {victim} leaves clean");
        self.remove(victim);
        Ok(true)
    }

    fn write(
        &mut self,
        store: &mut dyn PageStore,
        disk: &mut Disk,
        ids: &[PageId],
        why: Why,
    ) -> Result<()> {
        self.log_images(store, disk, ids, true)?;
        let n = ids.len() as u64;
        match why {
            Why::Eviction => self.stats.eviction_pages += n,
            Why::Writer => self.stats.writer_pages += n,
            Why::Checkpoint => self.stats.checkpoint_pages += n,
        }
        let lsn = ids.iter().map(|id| self.frames[id].lsn).max().unwrap_or(0);
        disk.barrier(lsn)?;
        let mut taken: Vec<(PageId, Frame)> = ids
            .iter()
            .map(|id| (*id, self.frames.remove(id).expect("resident")))
            .collect();
        let r = store.write(disk, &mut taken);
        debug_assert!(
            r.is_err() || taken.iter().all(|(_, f)| !f.dirty),
            "a page store marks what it wrote clean"
        );
        for (id, f) in taken {
            self.frames.insert(id, f);
            self.note(id);
        }
        r
    }

    /// Whether the log has room for the images writing `ids` back logs.
    pub fn room_to_image(&self, store: &dyn PageStore, disk: &Disk, ids: &[PageId]) -> bool {
        let Some(w) = disk.journal.as_ref().filter(|_| store.overwrites()) else {
            return true;
        };
        let n = ids.iter().filter(|id| !self.imaged.contains(id)).count();
        let rec = |k: usize| match k {
            0 => 0,
            k => w.record_len(redo::IMAGES_HDR + k * (store.page_size() + redo::IMAGE_OVERHEAD)),
        };
        let full = (n / IMAGES_PER_RECORD) as u64 * rec(IMAGES_PER_RECORD);
        full + rec(n % IMAGES_PER_RECORD) <= w.remaining()
    }

    /// Whether the pool holds more frames than its size with no batch
    /// running: evictions waited for room in the log.
    pub fn over(&self) -> bool {
        self.idle() && self.budgeted() > self.capacity
    }

    /// Evicts down to the pool's size (after a switch made room).
    pub fn shrink(&mut self, store: &mut dyn PageStore, disk: &mut Disk) -> Result<()> {
        while self.budgeted() > self.capacity {
            if !self.evict(store, disk)? {
                break;
            }
        }
        Ok(())
    }

    /// Before a store that overwrites pages writes `ids` back: logs the
    /// images of those the log holds none of since the checkpoint, in
    /// records of at most [`IMAGES_PER_RECORD`] pages, so a torn write-back
    /// is rebuilt from the log; with `flush`, makes them durable. Each
    /// page's `lsn` then covers its image: a write back waits for it.
    pub fn log_images(
        &mut self,
        store: &dyn PageStore,
        disk: &mut Disk,
        ids: &[PageId],
        flush: bool,
    ) -> Result<()> {
        if !store.overwrites() || disk.journal.is_none() {
            return Ok(());
        }
        let ps = store.page_size();
        let pending: Vec<PageId> = ids
            .iter()
            .copied()
            .filter(|id| !self.imaged.contains(id))
            .collect();
        for chunk in pending.chunks(IMAGES_PER_RECORD) {
            let mut rec = redo::Writer::images(chunk.len(), ps);
            for id in chunk {
                let f = &self.frames[id];
                debug_assert!(f.dirty, "page {id} imaged for write back is dirty");
                rec.image(&f.page);
            }
            disk.append(redo::IMAGES_RECORD, &rec.finish())?;
            for id in chunk {
                let f = self.frames.get_mut(id).expect("resident");
                f.lsn = f.lsn.max(disk.logged);
                self.mark_imaged(*id);
            }
        }
        if flush && !pending.is_empty() {
            disk.flush_log()?;
        }
        Ok(())
    }

    /// Writes every dirty page, unit by unit; pages stay resident. The
    /// images the write-back needs are logged first, all together.
    pub fn flush_all(&mut self, store: &mut dyn PageStore, disk: &mut Disk) -> Result<()> {
        assert!(self.idle(), "a checkpoint runs between batches");
        let dirty: Vec<PageId> = self.dirty.iter().copied().collect();
        self.log_images(store, disk, &dirty, true)?;
        let mut units: Vec<(u64, PageId)> =
            self.dirty.iter().map(|&p| (store.unit_of(p), p)).collect();
        units.sort_unstable();
        for chunk in units.chunk_by(|a, b| a.0 == b.0) {
            let ids: Vec<PageId> = chunk.iter().map(|&(_, p)| p).collect();
            self.write(store, disk, &ids, Why::Checkpoint)?;
        }
        debug_assert!(self.dirty.is_empty(), "flush_all left dirty pages");
        debug_assert!(self.consistent(), "the pool after a checkpoint");
        Ok(())
    }

    /// The `n` dirty pages changed longest ago.
    pub fn oldest_dirty(&self, n: usize) -> Vec<PageId> {
        self.by_change.iter().take(n).map(|&(_, p)| p).collect()
    }

    /// Writes back up to `n` dirty pages, those changed longest ago first;
    /// they stay resident, clean.
    pub fn clean_oldest(
        &mut self,
        store: &mut dyn PageStore,
        disk: &mut Disk,
        n: usize,
    ) -> Result<()> {
        let ids = self.oldest_dirty(n);
        self.log_images(store, disk, &ids, true)?;
        self.clean(store, disk, &ids)
    }

    /// Writes back those of `ids` that are still dirty, erase unit by
    /// erase unit (the background writer's write back); they stay
    /// resident, clean.
    pub fn clean(
        &mut self,
        store: &mut dyn PageStore,
        disk: &mut Disk,
        ids: &[PageId],
    ) -> Result<()> {
        assert!(self.idle(), "pages are cleaned between batches");
        let mut units: Vec<(u64, PageId)> = ids
            .iter()
            .filter(|p| self.dirty.contains(p))
            .map(|&p| (store.unit_of(p), p))
            .collect();
        units.sort_unstable();
        for chunk in units.chunk_by(|a, b| a.0 == b.0) {
            let ids: Vec<PageId> = chunk.iter().map(|&(_, p)| p).collect();
            self.write(store, disk, &ids, Why::Writer)?;
        }
        Ok(())
    }

    /// Frames the pool holds at most (between batches).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The dirty pages, by page id.
    pub fn dirty_ids(&self) -> Vec<PageId> {
        self.dirty.iter().copied().collect()
    }

    /// Whether no batch is running: nothing pinned, nothing to undo.
    pub fn idle(&self) -> bool {
        self.pinned.is_empty() && self.undo.is_empty() && self.changes.is_empty()
    }

    /// Debug builds: whether the bookkeeping agrees with the frames (a
    /// walk of every frame: run at checkpoints and rollbacks, not per
    /// operation).
    fn consistent(&self) -> bool {
        let dirty: BTreeSet<PageId> = self
            .frames
            .iter()
            .filter(|(_, f)| f.dirty)
            .map(|(id, _)| *id)
            .collect();
        let pinned: HashSet<PageId> = self
            .frames
            .iter()
            .filter(|(_, f)| f.pinned)
            .map(|(id, _)| *id)
            .collect();
        let index = self.frames.values().filter(|f| is_index(f)).count();
        let logs_clean = self
            .frames
            .values()
            .all(|f| f.dirty || (f.log.is_empty() && f.records == 0 && !f.bomb));
        let keys: BTreeSet<(u64, PageId)> = self.change_of.iter().map(|(&p, &l)| (l, p)).collect();
        dirty == self.dirty
            && keys == self.by_change
            && self.dirty.iter().all(|p| self.change_of.contains_key(p))
            && self.change_of.len() == self.dirty.len()
            && pinned.len() == self.pinned.len()
            && self.pinned.iter().all(|id| pinned.contains(id))
            && index == self.index_pages
            && logs_clean
            && self.unimaged
                == self
                    .dirty
                    .iter()
                    .filter(|p| !self.imaged.contains(p))
                    .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Lru;

    #[test]
    fn a_staged_page_serves_reads_and_is_staged_once_up_to_the_pool() {
        let pool = BufferPool::new(3, Box::<Lru>::default(), false);
        let page = |id| Page::new(4096, id, Kind::Leaf);
        assert!(pool.staged(1).is_none());
        assert!(pool.stage(page(1)));
        assert_eq!(pool.staged(1).map(|p| p.id()), Some(1));
        assert!(pool.staged(2).is_none());
        assert!(pool.stage(page(1)), "staged already: kept once");
        assert!(pool.stage(page(2)) && pool.stage(page(3)));
        assert!(!pool.stage(page(4)), "no more than the pool holds");
        let s = pool.staged.lock().unwrap();
        let ids: Vec<PageId> = s.pages.iter().map(Page::id).collect();
        assert_eq!(ids, [1, 2, 3], "in the order read");
        assert_eq!(s.at.len(), 3);
    }
}
