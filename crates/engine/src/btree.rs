//! B+-tree whose nodes are slotted pages in the buffer pool.
//!
//! Leaves hold `key → value cell` and link to both siblings (scans run either
//! way); internal nodes hold `separator → child` with the leftmost child in
//! the page header. A value cell is `[0][bytes]` inline or
//! `[1][length u32][first overflow page u64]`. Changes to existing pages are
//! made as typed operations ([`Op`]) so the in-page logging store can log
//! them; splits rewrite pages whole. A leaf emptied by deletes leaves the
//! tree (its siblings are joined, its parent drops it, an internal node
//! left childless goes too, and a root with one child hands over to it);
//! its page, like those of dropped overflow chains, goes on a free list
//! that allocation takes from first. A leaf under a quarter full merges
//! with a sibling under the same parent when both fit one page; internal
//! nodes are not merged.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use smallvec::SmallVec;

use serde::Serialize;

use crate::buffer::BufferPool;
use crate::error::{bad_tree, Error, Result};
use crate::io::Disk;
use crate::le::{u32_at, u64_at};
use crate::options::IoProfile;
use crate::page::{Kind, Op, OpRef, Page, PageId, NO_PAGE};
use crate::store::PageStore;

/// Longest key accepted.
pub const MAX_KEY: usize = 1024;
/// Longest value accepted.
pub const MAX_VALUE: usize = 1 << 20;
/// Deepest tree walked before declaring the structure corrupt.
const MAX_DEPTH: usize = 64;
/// What [`crate::Error::Full`] says when the page store has no page left.
pub(crate) const NO_FREE_PAGES: &str = "no free pages";
/// Why a walk down the tree gave up.
const TOO_DEEP: &str = "deeper than 64 levels (a pointer loop)";
/// Why a tree pointer is refused.
const NOT_TREE: &str = "a tree pointer reaches an overflow or free page";
const OVERFLOW_CELL: usize = 13;

/// The shape of the tree, from a walk of all of it ([`crate::Db::shape`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Shape {
    /// Levels from the root to the leaves (1: the root is a leaf).
    pub height: u32,
    /// Keys in the leaves.
    pub keys: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Internal (index) pages.
    pub internal_pages: u64,
    /// Pages holding values too large for a leaf.
    pub overflow_pages: u64,
    /// Pages on the free list, reused before the store grows.
    pub free_pages: u64,
    /// Pages allocated in the page store (all of the above).
    pub pages: u64,
    /// Share of the leaves' cell space in use (0..=1).
    pub leaf_fill: f64,
}

/// Tree state persisted with every log record and checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    pub root: PageId,
    pub next_page: PageId,
    pub next_auto: u64,
    /// First page of the free list (pages of dropped overflow chains).
    pub free_head: PageId,
}

/// Access to pages for one operation.
pub(crate) struct Tree<'a> {
    pub pool: &'a mut BufferPool,
    pub store: &'a mut dyn PageStore,
    pub disk: &'a mut Disk,
    pub meta: &'a mut Meta,
    /// Request sizes and scan breakeven; `None`: page at a time.
    pub io: Option<IoProfile>,
    /// Percent of a leaf kept when a key past the right edge splits it.
    pub append_fill: usize,
}

/// A scan reading the page store in runs. Leaves of the runs read that may
/// hold keys of the range wait here until the leaf chain reaches them, so
/// each run is read once even where the chain jumps about the store (a
/// store filled in random key order); what waits is at most the leaves the
/// scan returns.
struct Runs {
    pages: u64,
    read: HashSet<u64>,
    leaves: HashMap<PageId, Page>,
}

/// Largest cell (slot included) a page takes, so any split leaves both halves fitting.
fn max_cell(page_size: usize) -> usize {
    Page::capacity(page_size) / 3
}

/// Longest key pages of this size hold.
pub(crate) fn max_key(page_size: usize) -> usize {
    let max = MAX_KEY.min(max_cell(page_size) - Page::cell_size(0, OVERFLOW_CELL));
    debug_assert!(max > 0, "a {page_size}-byte page holds a key");
    max
}

pub(crate) fn check_key(key: &[u8], page_size: usize) -> Result<()> {
    let max = max_key(page_size);
    if key.len() > max {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max,
        });
    }
    Ok(())
}

pub(crate) fn check_value(val: &[u8]) -> Result<()> {
    if val.len() > MAX_VALUE {
        return Err(Error::ValueTooLarge {
            len: val.len(),
            max: MAX_VALUE,
        });
    }
    Ok(())
}

/// The last page of a path from the root (a leaf, once the path is whole).
fn leaf_of(path: &[PageId]) -> PageId {
    *path.last().expect("a path holds at least the root")
}

/// Whether value cell `cell` points to overflow pages (else its value is
/// inline).
fn is_overflow(cell: &[u8]) -> bool {
    cell.first() == Some(&1) && cell.len() == OVERFLOW_CELL
}

/// The cell of a value about to be replaced or deleted, kept where its
/// overflow pages must be freed afterwards (an inline value is not copied).
fn overflow_of(cell: &[u8]) -> Option<Vec<u8>> {
    is_overflow(cell).then(|| cell.to_vec())
}

/// Index among the children of internal page `p` (0: the leftmost) of the one covering `key`.
fn child_index(p: &Page, key: &[u8]) -> usize {
    debug_assert_eq!(p.kind(), Kind::Internal, "page {}", p.id());
    match p.search(key) {
        Ok(i) => i + 1,
        Err(i) => i,
    }
}

/// The child of internal page `p` right of its separator `i`.
fn child_at(p: &Page, i: usize) -> Result<PageId> {
    debug_assert!(i < p.len(), "page {}: child {i} of {}", p.id(), p.len());
    let v = p.val(i);
    if v.len() != 8 {
        return Err(bad_tree(p.id(), "a child pointer is not 8 bytes"));
    }
    Ok(u64_at(v, 0))
}

/// Child of internal page `p` covering `key`.
fn child_for(p: &Page, key: &[u8]) -> Result<PageId> {
    match p.search(key) {
        Ok(i) => child_at(p, i),
        Err(0) => Ok(p.next()),
        Err(i) => child_at(p, i - 1),
    }
}

/// A page where a shared read may fetch one the pool does not hold:
/// `Ok(None)` when it cannot (the read then goes the exclusive way).
pub(crate) type Fetch<'a> = &'a mut dyn FnMut(PageId) -> Result<Option<Page>>;

/// `f` of the value of `key` (lent from the page), read without changing
/// anything but the pool's record of shared uses: pages not resident are
/// taken from `fetch`. `Ok(None)`: `fetch` could not give one (or too many
/// uses wait), and `f` did not run.
pub(crate) fn get_shared<T>(
    pool: &BufferPool,
    meta: &Meta,
    key: &[u8],
    fetch: Fetch<'_>,
    f: impl FnOnce(Option<&[u8]>) -> T,
) -> Result<Option<T>> {
    // The resident pages passed, for the policy: no allocation per read.
    let mut used = [NO_PAGE; MAX_DEPTH];
    let mut n = 0;
    let mut id = meta.root;
    // The page fetched last, while the descent is on it.
    let mut fetched: Option<Page>;
    for _ in 0..MAX_DEPTH {
        let p = match pool.peek(id) {
            Some(p) => {
                used[n] = id;
                n += 1;
                p
            }
            None => match fetch(id)? {
                Some(page) => {
                    debug_assert_eq!(page.id(), id, "a fetch gives the page asked for");
                    fetched = Some(page);
                    fetched.as_ref().expect("just fetched")
                }
                None => return Ok(None),
            },
        };
        match p.kind() {
            Kind::Internal => id = child_for(p, key)?,
            Kind::Leaf => {
                let value = match p.search(key) {
                    Err(_) => None,
                    Ok(i) => match p.val(i) {
                        [0, v @ ..] => Some(v),
                        // Overflow chains go the exclusive way.
                        _ => return Ok(None),
                    },
                };
                return Ok(pool.note_shared(&used[..n]).then(|| f(value)));
            }
            Kind::Overflow | Kind::Free => return Err(bad_tree(id, NOT_TREE)),
        }
    }
    Err(bad_tree(meta.root, TOO_DEEP))
}

/// The resident leaf covering `key` (`None`: the leftmost leaf, or the
/// rightmost if `rightmost`), with the pages passed recorded in `used`;
/// `Ok(None)` if some page on the way is not resident.
fn resident_leaf<'p>(
    pool: &'p BufferPool,
    meta: &Meta,
    key: Option<&[u8]>,
    rightmost: bool,
    used: &mut Used,
) -> Result<Option<&'p Page>> {
    let mut id = meta.root;
    for _ in 0..MAX_DEPTH {
        let Some(p) = pool.peek(id) else {
            return Ok(None);
        };
        used.push(id);
        id = match (p.kind(), key) {
            (Kind::Leaf, _) => return Ok(Some(p)),
            (Kind::Internal, Some(k)) => child_for(p, k)?,
            (Kind::Internal, None) if rightmost && !p.is_empty() => child_at(p, p.len() - 1)?,
            (Kind::Internal, None) => p.next(),
            _ => return Err(bad_tree(id, NOT_TREE)),
        };
    }
    Err(bad_tree(meta.root, TOO_DEEP))
}

/// Whether `k` lies above the lower bound `lo` / below the upper bound `hi`.
pub(crate) fn above(k: &[u8], lo: Bound<&[u8]>) -> bool {
    match lo {
        Bound::Included(b) => k >= b,
        Bound::Excluded(b) => k > b,
        Bound::Unbounded => true,
    }
}
pub(crate) fn below(k: &[u8], hi: Bound<&[u8]>) -> bool {
    match hi {
        Bound::Included(b) => k <= b,
        Bound::Excluded(b) => k < b,
        Bound::Unbounded => true,
    }
}

/// Where a pair lies in the buffer holding it: where its key starts,
/// the key's and the value's lengths. The value starts one byte past the
/// key's end, after an inline value's marker in a page's cell and after
/// the tag in a memtable slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    at: usize,
    key_len: usize,
    value_len: usize,
}

impl Span {
    /// The span of a key at `at` of `key_len` bytes, its value of
    /// `value_len` bytes a byte past it, in `buf`.
    pub(crate) fn new(buf: &[u8], at: usize, key_len: usize, value_len: usize) -> Span {
        debug_assert!(
            at + key_len < buf.len() && at + key_len + 1 + value_len <= buf.len(),
            "a pair lies in its buffer"
        );
        Span {
            at,
            key_len,
            value_len,
        }
    }

    pub(crate) fn key<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.at..self.at + self.key_len]
    }

    pub(crate) fn value<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        let from = self.at + self.key_len + 1;
        &buf[from..from + self.value_len]
    }
}

/// A pair lent from the pool (a page's image) or the memtable (a slot), or
/// from a chunk the exclusive path copied ([`pack`]): a caller keeps it by
/// cloning the buffer's `Arc`, copying no byte.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pair<'p> {
    pub(crate) buf: &'p Arc<[u8]>,
    pub(crate) span: Span,
}

impl<'p> Pair<'p> {
    pub(crate) fn key(&self) -> &'p [u8] {
        self.span.key(self.buf)
    }

    pub(crate) fn value(&self) -> &'p [u8] {
        self.span.value(self.buf)
    }
}

/// Copies `pairs` into one buffer, each key then a byte then its value
/// (the layout a [`Span`] reads), to lend them as [`Pair`]s.
pub(crate) fn pack(pairs: &[(Vec<u8>, Vec<u8>)]) -> (Arc<[u8]>, Vec<Span>) {
    let len = pairs.iter().map(|(k, v)| k.len() + 1 + v.len()).sum();
    let mut buf = Vec::with_capacity(len);
    let mut at = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        at.push(buf.len());
        buf.extend_from_slice(k);
        buf.push(0);
        buf.extend_from_slice(v);
    }
    debug_assert_eq!(buf.len(), len, "the buffer sized once");
    let spans = pairs
        .iter()
        .zip(at)
        .map(|((k, v), at)| Span::new(&buf, at, k.len(), v.len()))
        .collect();
    (buf.into(), spans)
}

/// A limited scan (see [`Tree::scan`]) when every page it takes is
/// resident and every value is inline: its pairs, in scan order, lent
/// from the pool, put in `out` (empty: a caller's buffer, on its stack for
/// a short range, so a range allocates nothing here); `false` sends it
/// down the exclusive path, `out` holding no telling what. Records the
/// pages it used for the policy when it succeeds.
pub(crate) fn scan_resident<'p>(
    pool: &'p BufferPool,
    meta: &Meta,
    (lo, hi): (Bound<&[u8]>, Bound<&[u8]>),
    reverse: bool,
    limit: usize,
    out: &mut Pairs<'p>,
) -> Result<bool> {
    debug_assert!(out.is_empty(), "a scan fills an empty buffer");
    let mut used = Used::new();
    let start = match (reverse, lo, hi) {
        (false, Bound::Included(k) | Bound::Excluded(k), _) => Some(k),
        (true, _, Bound::Included(k) | Bound::Excluded(k)) => Some(k),
        _ => None,
    };
    let Some(mut leaf) = resident_leaf(pool, meta, start, reverse, &mut used)? else {
        return Ok(false);
    };
    // The exclusive scan finds its first leaf, then reads it: two uses,
    // which policies that count them (ARC) must see the same way.
    used.push(leaf.id());
    // Slots before the start key (after it, descending) are outside.
    let mut skip = start.map_or(0, |k| match (reverse, leaf.search(k)) {
        (false, Ok(i) | Err(i)) => i,
        (true, Ok(i)) => leaf.len() - 1 - i,
        (true, Err(i)) => leaf.len() - i,
    });
    // Keys come in scan order, so once one is inside the near bound
    // (the start) every later one is: only the far bound is compared.
    let mut started = false;
    loop {
        if leaf.kind() != Kind::Leaf || used.len() > MAX_SHARED_LEAVES {
            return Ok(false);
        }
        let n = leaf.len();
        // The cells this leaf gives are loaded together: the scan then
        // waits for memory about once, not once a pair.
        let want = limit.saturating_sub(out.len());
        match reverse {
            false => leaf.prefetch_keys(skip, skip + want),
            true => leaf.prefetch_keys(n.saturating_sub(skip + want), n - skip),
        }
        for j in std::mem::take(&mut skip)..n {
            if out.len() >= limit {
                return Ok(pool.note_shared(&used));
            }
            let i = if reverse { n - 1 - j } else { j };
            let (buf, (at, kl, vl)) = (leaf.image(), leaf.cell_span(i));
            let k = &buf[at..at + kl];
            let past = match reverse {
                false => !below(k, hi),
                true => !above(k, lo),
            };
            if past {
                return Ok(pool.note_shared(&used));
            }
            started = started
                || match reverse {
                    false => above(k, lo),
                    true => below(k, hi),
                };
            if started {
                // Overflow values go the exclusive way.
                if vl == 0 || buf[at + kl] != 0 {
                    return Ok(false);
                }
                let span = Span::new(buf, at, kl, vl - 1);
                out.push(Pair { buf, span });
            }
        }
        let next = if reverse { leaf.prev() } else { leaf.next() };
        if next == NO_PAGE || out.len() >= limit {
            return Ok(pool.note_shared(&used));
        }
        let Some(p) = pool.peek(next) else {
            return Ok(false);
        };
        used.push(next);
        leaf = p;
    }
}

/// Leaves a shared scan walks before leaving the rest to the exclusive path.
const MAX_SHARED_LEAVES: usize = 64;

/// The pages a shared scan used: a short range's fit on the stack.
type Used = SmallVec<[PageId; 8]>;

/// The pairs a shared scan lends: a short range's fit on the stack, as
/// most chunks a range reads are (the first is as long as the last
/// range's take, often a few pairs).
pub(crate) type Pairs<'p> = SmallVec<[Pair<'p>; 16]>;

impl Tree<'_> {
    fn page(&mut self, id: PageId) -> Result<&Page> {
        if id >= self.meta.next_page {
            return Err(bad_tree(id, "a pointer past the allocated pages"));
        }
        Ok(&self.pool.get(self.store, self.disk, id)?.page)
    }

    fn apply<B: AsRef<[u8]>>(&mut self, id: PageId, op: Op<B>) -> Result<()> {
        self.pool.get(self.store, self.disk, id)?;
        let cap = self.store.log_capacity();
        self.pool.apply(id, op, cap)
    }

    fn put_whole(&mut self, page: Page) -> Result<()> {
        debug_assert!(
            page.id() < self.meta.next_page,
            "page {} allocated",
            page.id()
        );
        self.pool.put_whole(self.store, self.disk, page)
    }

    /// A new page: the head of the free list, or one past the last.
    fn alloc(&mut self, kind: Kind) -> Result<Page> {
        let id = match self.meta.free_head {
            NO_PAGE => {
                let id = self.meta.next_page;
                if id >= self.store.max_pages() {
                    return Err(Error::Full(NO_FREE_PAGES));
                }
                self.meta.next_page += 1;
                id
            }
            id => {
                let p = self.page(id)?;
                if p.kind() != Kind::Free {
                    return Err(bad_tree(id, "a page on the free list is in use"));
                }
                self.meta.free_head = p.next();
                id
            }
        };
        debug_assert!(id < self.meta.next_page, "page {id} allocated");
        debug_assert_ne!(
            self.meta.free_head, id,
            "the free list moved past the page it gave"
        );
        Ok(Page::new(self.store.page_size(), id, kind))
    }

    /// Puts the overflow pages of value `cell` (if any) on the free list.
    fn free_value(&mut self, cell: &[u8]) -> Result<()> {
        if !is_overflow(cell) {
            return Ok(());
        }
        let len = u32_at(cell, 1) as usize;
        let mut id = u64_at(cell, 5);
        for _ in 0..len.div_ceil(Page::overflow_capacity(self.store.page_size())) {
            let p = self.page(id)?;
            if p.kind() != Kind::Overflow {
                return Err(bad_tree(id, "broken overflow chain"));
            }
            let next = p.next();
            self.free_page(id)?;
            id = next;
        }
        Ok(())
    }

    /// Creates the empty root leaf of a new tree.
    pub fn create(&mut self) -> Result<()> {
        assert_eq!(self.meta.next_page, 0, "a new tree's store holds no page");
        assert_eq!(
            self.meta.free_head, NO_PAGE,
            "a new tree's free list is empty"
        );
        let root = self.alloc(Kind::Leaf)?;
        self.meta.root = root.id();
        self.put_whole(root)
    }

    /// Page ids from the root to the leaf covering `key`.
    fn path(&mut self, key: &[u8]) -> Result<Vec<PageId>> {
        let mut path = Vec::with_capacity(8);
        path.push(self.meta.root);
        loop {
            let id = leaf_of(&path);
            let p = self.page(id)?;
            match p.kind() {
                Kind::Leaf => {
                    debug_assert_eq!(path[0], self.meta.root, "a path starts at the root");
                    return Ok(path);
                }
                Kind::Internal => {
                    let c = child_for(p, key)?;
                    path.push(c);
                }
                Kind::Overflow | Kind::Free => return Err(bad_tree(id, NOT_TREE)),
            }
            if path.len() > MAX_DEPTH {
                return Err(bad_tree(self.meta.root, TOO_DEEP));
            }
        }
    }

    /// Walks the whole tree and the free list.
    pub fn shape(&mut self) -> Result<Shape> {
        let ps = self.store.page_size();
        let mut sh = Shape {
            pages: self.meta.next_page,
            ..Shape::default()
        };
        let (mut used, mut level) = (0u64, vec![self.meta.root]);
        while !level.is_empty() {
            sh.height += 1;
            if sh.height as usize > MAX_DEPTH {
                return Err(bad_tree(self.meta.root, TOO_DEEP));
            }
            let mut next = Vec::new();
            for id in level {
                let p = self.page(id)?;
                match p.kind() {
                    Kind::Internal => {
                        sh.internal_pages += 1;
                        next.push(p.next());
                        for i in 0..p.len() {
                            next.push(child_at(p, i)?);
                        }
                    }
                    Kind::Leaf => {
                        sh.leaf_pages += 1;
                        sh.keys += p.len() as u64;
                        used += p.used() as u64;
                        let cells: Vec<Vec<u8>> = (0..p.len()).map(|i| p.val(i).to_vec()).collect();
                        for c in cells
                            .iter()
                            .filter(|c| c.first() == Some(&1) && c.len() == OVERFLOW_CELL)
                        {
                            let len = u32_at(c, 1) as usize;
                            sh.overflow_pages += len.div_ceil(Page::overflow_capacity(ps)) as u64;
                        }
                    }
                    _ => return Err(bad_tree(id, NOT_TREE)),
                }
            }
            level = next;
        }
        let mut id = self.meta.free_head;
        while id != NO_PAGE {
            sh.free_pages += 1;
            if sh.free_pages > self.meta.next_page {
                return Err(bad_tree(self.meta.free_head, "the free list loops"));
            }
            id = self.page(id)?.next();
        }
        sh.leaf_fill = used as f64 / (sh.leaf_pages.max(1) * Page::capacity(ps) as u64) as f64;
        debug_assert!(
            (0.0..=1.0).contains(&sh.leaf_fill),
            "leaves fit their pages"
        );
        debug_assert!(
            sh.leaf_pages + sh.internal_pages + sh.overflow_pages + sh.free_pages <= sh.pages,
            "every page is one thing: {sh:?}"
        );
        Ok(sh)
    }

    /// Leaf at the left (`rightmost == false`) or right edge of the tree.
    fn edge_leaf(&mut self, rightmost: bool) -> Result<PageId> {
        let mut id = self.meta.root;
        for _ in 0..MAX_DEPTH {
            let p = self.page(id)?;
            match p.kind() {
                Kind::Leaf => return Ok(id),
                Kind::Internal if rightmost && !p.is_empty() => id = child_at(p, p.len() - 1)?,
                Kind::Internal => id = p.next(),
                Kind::Overflow | Kind::Free => return Err(bad_tree(id, NOT_TREE)),
            }
        }
        Err(bad_tree(self.meta.root, TOO_DEEP))
    }

    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let leaf = leaf_of(&self.path(key)?);
        let p = self.page(leaf)?;
        match p.search(key) {
            Ok(i) => {
                let cell = p.val(i).to_vec();
                Ok(Some(self.load_value(leaf, &cell)?))
            }
            Err(_) => Ok(None),
        }
    }

    /// The value a cell of `leaf` holds, read from its overflow pages if
    /// it is not inline.
    fn load_value(&mut self, leaf: PageId, cell: &[u8]) -> Result<Vec<u8>> {
        match cell.first() {
            Some(0) => Ok(cell[1..].to_vec()),
            Some(1) if cell.len() == OVERFLOW_CELL => {
                let len = u32_at(cell, 1) as usize;
                let mut id = u64_at(cell, 5);
                if len > MAX_VALUE {
                    return Err(bad_tree(leaf, "an overflow value longer than the limit"));
                }
                let mut out = Vec::with_capacity(len);
                while out.len() < len {
                    let p = self.page(id)?;
                    if p.kind() != Kind::Overflow || p.overflow_data().is_empty() {
                        return Err(bad_tree(id, "broken overflow chain"));
                    }
                    out.extend_from_slice(p.overflow_data());
                    id = p.next();
                }
                if out.len() != len {
                    return Err(bad_tree(leaf, "an overflow chain longer than its value"));
                }
                Ok(out)
            }
            _ => Err(crate::error::bad_page(leaf, "malformed value cell")),
        }
    }

    /// The cell for `val`, writing overflow pages when it is not kept inline.
    fn store_value(&mut self, key: &[u8], val: &[u8]) -> Result<Vec<u8>> {
        let ps = self.store.page_size();
        assert!(
            val.len() <= MAX_VALUE,
            "values are checked before they are stored"
        );
        assert!(
            key.len() <= max_key(ps),
            "keys are checked before they are stored"
        );
        if Page::cell_size(key.len(), 1 + val.len()) <= max_cell(ps) {
            let mut c = Vec::with_capacity(1 + val.len());
            c.push(0);
            c.extend_from_slice(val);
            return Ok(c);
        }
        let chunk = Page::overflow_capacity(ps);
        let mut pages: Vec<Page> = Vec::new();
        for part in val.chunks(chunk) {
            let mut p = self.alloc(Kind::Overflow)?;
            p.set_overflow_data(part);
            if let Some(prev) = pages.last_mut() {
                prev.set_next(p.id());
            }
            pages.push(p);
        }
        let first = pages.first().map_or(NO_PAGE, Page::id);
        for p in pages {
            self.put_whole(p)?;
        }
        let mut c = vec![1u8];
        c.extend_from_slice(&(val.len() as u32).to_le_bytes());
        c.extend_from_slice(&first.to_le_bytes());
        debug_assert_eq!(c.len(), OVERFLOW_CELL);
        debug_assert!(
            Page::cell_size(key.len(), c.len()) <= max_cell(ps),
            "the cell fits"
        );
        Ok(c)
    }

    /// Inserts or replaces. Returns whether the key existed.
    pub fn put(&mut self, key: &[u8], val: &[u8]) -> Result<bool> {
        let cell = self.store_value(key, val)?;
        let path = self.path(key)?;
        let leaf = leaf_of(&path);
        let p = self.page(leaf)?;
        let cap = Page::capacity(p.size());
        match p.search(key) {
            Ok(i) => {
                let old = Page::cell_size(key.len(), p.val(i).len());
                let old_cell = overflow_of(p.val(i));
                if p.used() - old + Page::cell_size(key.len(), cell.len()) <= cap {
                    self.apply(leaf, OpRef::Update(key, &cell))?;
                } else {
                    self.split_insert(&path, key.to_vec(), cell, true)?;
                }
                if let Some(c) = old_cell {
                    self.free_value(&c)?;
                }
                Ok(true)
            }
            Err(_) => {
                if p.fits(key.len(), cell.len()) {
                    self.apply(leaf, OpRef::Insert(key, &cell))?;
                } else {
                    self.split_insert(&path, key.to_vec(), cell, false)?;
                }
                Ok(false)
            }
        }
    }

    /// Removes `key`. Returns whether it existed. A leaf left empty leaves
    /// the tree and its page goes on the free list.
    pub fn delete(&mut self, key: &[u8]) -> Result<bool> {
        debug_assert!(
            key.len() <= max_key(self.store.page_size()),
            "keys are checked first"
        );
        let path = self.path(key)?;
        let leaf = leaf_of(&path);
        let p = self.page(leaf)?;
        let Ok(i) = p.search(key) else {
            return Ok(false);
        };
        let old_cell = overflow_of(p.val(i));
        let emptied = p.len() == 1;
        self.apply(leaf, OpRef::Delete(key))?;
        if let Some(c) = old_cell {
            self.free_value(&c)?;
        }
        if emptied && path.len() > 1 {
            self.unlink_leaf(leaf)?;
            self.remove_child(&path[..path.len() - 1], key)?;
            self.free_page(leaf)?;
            self.shrink_root()?;
        } else if path.len() > 1 {
            self.merge_underfull(&path, key)?;
        }
        Ok(true)
    }

    /// Merges the leaf at the end of `path` with a sibling under the same
    /// parent when it is less than a quarter full and both fit one page:
    /// the right one's cells join the left one, which takes its place in
    /// the leaf chain, and the right one's page is freed.
    fn merge_underfull(&mut self, path: &[PageId], key: &[u8]) -> Result<()> {
        let (leaf, parent) = (path[path.len() - 1], path[path.len() - 2]);
        let cap = Page::capacity(self.store.page_size());
        if self.page(leaf)?.used() * 4 >= cap {
            return Ok(());
        }
        let p = self.page(parent)?.clone();
        let at = child_index(&p, key);
        let child = |i: usize| {
            if i == 0 {
                Ok(p.next())
            } else {
                child_at(&p, i - 1)
            }
        };
        // The leaf with its left sibling, else with its right one, if they fit one page.
        let pairs = [(at > 0).then(|| at - 1), (at < p.len()).then_some(at)];
        let mut found = None;
        for left_at in pairs.into_iter().flatten() {
            let (left, right) = (child(left_at)?, child(left_at + 1)?);
            let (l, r) = (self.page(left)?.clone(), self.page(right)?.clone());
            if l.kind() == Kind::Leaf && r.kind() == Kind::Leaf && l.used() + r.used() <= cap {
                found = Some((left_at + 1, left, right, l, r));
                break;
            }
        }
        let Some((right_at, left, right, l, r)) = found else {
            return Ok(());
        };
        let separator = p.key(right_at - 1).to_vec();
        if self.disk.journal.is_some() {
            // As operations: the log takes the moved cells, not the page.
            let ops = (0..r.len())
                .map(|i| OpRef::Insert(r.key(i), r.val(i)))
                .chain([OpRef::SetNext(r.next())]);
            self.rewrite_by_ops(left, ops)?;
        } else {
            let mut merged = l.clone();
            for i in 0..r.len() {
                merged.insert_at(merged.len(), r.key(i), r.val(i));
            }
            merged.set_next(r.next());
            self.put_whole(merged)?;
        }
        if r.next() != NO_PAGE {
            self.apply(r.next(), OpRef::SetPrev(left))?;
        }
        debug_assert!(self.node_holds(left, None, None), "merged leaf {left}");
        debug_assert!(
            self.pool
                .peek(left)
                .is_some_and(|m| m.len() == l.len() + r.len() && m.next() == r.next()),
            "leaf {left} took every cell of {right} and its place in the chain"
        );
        self.apply(parent, Op::Delete(separator))?;
        self.free_page(right)?;
        self.shrink_root()
    }

    /// Joins the siblings of an empty leaf to each other.
    fn unlink_leaf(&mut self, leaf: PageId) -> Result<()> {
        let p = self.page(leaf)?;
        debug_assert!(
            p.kind() == Kind::Leaf && p.is_empty(),
            "only an empty leaf leaves"
        );
        let (prev, next) = (p.prev(), p.next());
        if prev != NO_PAGE {
            self.apply(prev, OpRef::SetNext(next))?;
        }
        if next != NO_PAGE {
            self.apply(next, OpRef::SetPrev(prev))?;
        }
        Ok(())
    }

    /// Removes the child covering `key` from the internal node at the end
    /// of `path`; a node left with no child at all leaves its parent too.
    fn remove_child(&mut self, path: &[PageId], key: &[u8]) -> Result<()> {
        let Some((&id, above)) = path.split_last() else {
            return Err(bad_tree(self.meta.root, "a path without an internal node"));
        };
        let p = self.page(id)?;
        debug_assert_eq!(p.kind(), Kind::Internal);
        if p.is_empty() {
            // Its only child, the leftmost, is going: the node goes too.
            if above.is_empty() {
                return Err(bad_tree(id, "the root lost its only child"));
            }
            self.remove_child(above, key)?;
            return self.free_page(id);
        }
        match child_index(p, key) {
            0 => {
                // The leftmost child goes: the first keyed child takes its place.
                let (first_key, first) = (p.key(0).to_vec(), child_at(p, 0)?);
                self.apply(id, OpRef::SetNext(first))?;
                self.apply(id, Op::Delete(first_key))
            }
            i => {
                let k = p.key(i - 1).to_vec();
                self.apply(id, Op::Delete(k))
            }
        }
    }

    /// Puts page `id` (no longer referenced) on the free list.
    fn free_page(&mut self, id: PageId) -> Result<()> {
        assert_ne!(id, self.meta.root, "the root is never freed");
        assert_ne!(id, self.meta.free_head, "a page is freed once");
        let mut free = Page::new(self.store.page_size(), id, Kind::Free);
        free.set_next(self.meta.free_head);
        self.put_whole(free)?;
        self.meta.free_head = id;
        Ok(())
    }

    /// While the root is an internal node with one child, that child becomes the root.
    fn shrink_root(&mut self) -> Result<()> {
        loop {
            let root = self.meta.root;
            let p = self.page(root)?;
            if p.kind() != Kind::Internal || !p.is_empty() {
                debug_assert!(
                    p.kind() != Kind::Internal || p.next() != NO_PAGE,
                    "root {root} has a leftmost child"
                );
                return Ok(());
            }
            self.meta.root = p.next();
            self.free_page(root)?;
        }
    }

    /// Puts `(key, cell)` into the full node at the end of `path`, splitting
    /// it and, as needed, its ancestors.
    fn split_insert(
        &mut self,
        path: &[PageId],
        key: Vec<u8>,
        cell: Vec<u8>,
        replace: bool,
    ) -> Result<()> {
        assert!(!path.is_empty(), "a split starts at a node");
        let mut level = path.len() - 1;
        let (mut key, mut cell, mut replace) = (key, cell, replace);
        loop {
            let id = path[level];
            let node = self.page(id)?.clone();
            let split = if node.kind() == Kind::Leaf {
                self.split_leaf(node, key, cell, replace)?
            } else {
                self.split_internal(node, key, cell)?
            };
            let (sep, right) = split;
            debug_assert!(
                self.node_holds(id, None, Some(&sep)),
                "left half of node {id}"
            );
            debug_assert!(
                self.node_holds(right, Some(&sep), None),
                "right half of node {id}"
            );
            if level == 0 {
                assert_eq!(id, self.meta.root, "the top of a path is the root");
                let mut root = self.alloc(Kind::Internal)?;
                root.set_next(id);
                root.insert_at(0, &sep, &right.to_le_bytes());
                self.meta.root = root.id();
                return self.put_whole(root);
            }
            level -= 1;
            let parent = self.page(path[level])?;
            let child = right.to_le_bytes().to_vec();
            if parent.fits(sep.len(), child.len()) {
                return self.apply(path[level], Op::Insert(sep, child));
            }
            (key, cell, replace) = (sep, child, false);
        }
    }

    /// Splits a full leaf. Returns the separator and the new right leaf.
    fn split_leaf(
        &mut self,
        mut node: Page,
        key: Vec<u8>,
        cell: Vec<u8>,
        replace: bool,
    ) -> Result<(Vec<u8>, PageId)> {
        let id = node.id();
        let mut right = self.alloc(Kind::Leaf)?;
        let last = node.len().checked_sub(1).map(|i| node.key(i).to_vec());
        // Appending past the right edge (keys arriving in order) leaves the
        // leaf fuller than half, so an ordered load fills its pages, but
        // not full, so later inserts among its keys do not split every page.
        let appends = !replace
            && node.next() == NO_PAGE
            && !matches!(last.as_deref(), Some(l) if l >= &key[..]);
        let (cells, pos) = with_cell(&node, &key, &cell);
        let at = split_point(&cells, if appends { self.append_fill } else { 50 });
        for (i, (k, v)) in cells[at..].iter().enumerate() {
            right.insert_at(i, k, v);
        }
        let rid = right.id();
        let old_next = node.next();
        right.set_next(old_next);
        right.set_prev(id);
        let sep = cells[at].0.to_vec();
        if self.disk.journal.is_some() {
            // The new key, if it stays in this leaf.
            let stays = (pos < at).then_some(match replace {
                true => OpRef::Update(&key, &cell),
                false => OpRef::Insert(&key, &cell),
            });
            self.shrink_leaf(&node, &sep, stays, rid)?;
            debug_assert_eq!(
                self.pool.peek(id).map(Page::len),
                Some(at),
                "left half of a split"
            );
        } else {
            let left: Vec<(Vec<u8>, Vec<u8>)> = cells[..at]
                .iter()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect();
            node.clear_cells();
            for (i, (k, v)) in left.iter().enumerate() {
                node.insert_at(i, k, v);
            }
            node.set_next(rid);
            self.put_whole(node)?;
        }
        self.put_whole(right)?;
        debug_assert!(
            self.sixth_full(id) && (appends || self.sixth_full(rid)),
            "a split of leaf {id} leaves both halves a sixth full (the left one when appending)"
        );
        if old_next != NO_PAGE {
            self.apply(old_next, OpRef::SetPrev(rid))?;
        }
        Ok((sep, rid))
    }

    /// The left half of a leaf split, as operations on the leaf (its keys
    /// from `sep` on move right; `stays`, the new key's change if it is
    /// left of `sep`; the new sibling link): a few hundred bytes in the
    /// write-ahead log where an image costs the page. The page store still
    /// writes the leaf whole (no in-page log for it: `log_cap` 0).
    fn shrink_leaf(
        &mut self,
        node: &Page,
        sep: &[u8],
        stays: Option<OpRef>,
        rid: PageId,
    ) -> Result<()> {
        let moved = (0..node.len()).map(|i| node.key(i)).filter(|k| *k >= sep);
        let ops = moved
            .map(OpRef::Delete)
            .chain(stays)
            .chain([OpRef::SetNext(rid)]);
        self.rewrite_by_ops(node.id(), ops)
    }

    /// Applies `ops` to page `id` for the write-ahead log, while the page
    /// store writes the page whole (no in-page log: `log_cap` 0), as it
    /// would a page rewritten whole.
    fn rewrite_by_ops<B: AsRef<[u8]>>(
        &mut self,
        id: PageId,
        ops: impl IntoIterator<Item = Op<B>>,
    ) -> Result<()> {
        // Resident, and pinned from the first operation on.
        self.pool.get(self.store, self.disk, id)?;
        for op in ops {
            self.pool.apply(id, op, 0)?;
        }
        Ok(())
    }

    /// Splits a full internal node; the middle separator moves up.
    fn split_internal(
        &mut self,
        mut node: Page,
        key: Vec<u8>,
        child: Vec<u8>,
    ) -> Result<(Vec<u8>, PageId)> {
        let mut cells: Vec<(Vec<u8>, Vec<u8>)> = (0..node.len())
            .map(|i| (node.key(i).to_vec(), node.val(i).to_vec()))
            .collect();
        match cells.binary_search_by(|(k, _)| k[..].cmp(&key)) {
            Ok(_) => {
                return Err(bad_tree(
                    node.id(),
                    "a new separator is already in its parent",
                ))
            }
            Err(i) => cells.insert(i, (key, child)),
        }
        assert!(cells.len() >= 2, "a full internal node splits in two");
        let at = split_point(&cells, 50).min(cells.len() - 1);
        let mut right = self.alloc(Kind::Internal)?;
        node.clear_cells();
        for (i, (k, v)) in cells[..at].iter().enumerate() {
            node.insert_at(i, k, v);
        }
        let (sep, up) = &cells[at];
        right.set_next(u64::from_le_bytes(
            up[..]
                .try_into()
                .map_err(|_| bad_tree(node.id(), "a child pointer is not 8 bytes"))?,
        ));
        for (i, (k, v)) in cells[at + 1..].iter().enumerate() {
            right.insert_at(i, k, v);
        }
        let rid = right.id();
        self.put_whole(node)?;
        self.put_whole(right)?;
        Ok((sep.clone(), rid))
    }

    /// Pairs with keys in `range`, ascending or descending, at most `limit`.
    pub fn scan(
        &mut self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let start = match (reverse, lo, hi) {
            (false, Bound::Included(k) | Bound::Excluded(k), _) => leaf_of(&self.path(k)?),
            (true, _, Bound::Included(k) | Bound::Excluded(k)) => leaf_of(&self.path(k)?),
            (r, _, _) => self.edge_leaf(r)?,
        };
        let mut runs = self.plan_runs(lo, hi, limit)?;
        let mut id = start;
        let mut visited = 0u64;
        while id != NO_PAGE && out.len() < limit {
            visited += 1;
            if visited > self.meta.next_page {
                return Err(bad_tree(start, "the leaf chain loops"));
            }
            let p = self.scan_page(&mut runs, id, lo, hi)?;
            if p.kind() != Kind::Leaf {
                return Err(bad_tree(id, "the leaf chain reaches a non-leaf"));
            }
            let mut cells = Vec::new();
            let mut done = false;
            let idx: Vec<usize> = if reverse {
                (0..p.len()).rev().collect()
            } else {
                (0..p.len()).collect()
            };
            for i in idx {
                let k = p.key(i);
                let (inside, past) = if reverse {
                    (below(k, hi), !above(k, lo))
                } else {
                    (above(k, lo), !below(k, hi))
                };
                if past {
                    done = true;
                    break;
                }
                if inside {
                    cells.push((k.to_vec(), p.val(i).to_vec()));
                }
            }
            let next = if reverse { p.prev() } else { p.next() };
            for (k, c) in cells {
                if out.len() >= limit {
                    break;
                }
                let v = self.load_value(id, &c)?;
                out.push((k, v));
            }
            if done {
                break;
            }
            id = next;
        }
        debug_assert!(out.len() <= limit, "a scan stops at its limit");
        debug_assert!(
            out.windows(2).all(|w| match reverse {
                false => w[0].0 < w[1].0,
                true => w[0].0 > w[1].0,
            }),
            "a scan returns keys in order, each once"
        );
        Ok(out)
    }
}

impl Tree<'_> {
    /// Debug builds: whether resident node `id` is well formed: a leaf or
    /// an internal node whose cells fit its page in strict key order, every
    /// key at or above `lo` and below `hi`, an internal node's children all
    /// allocated pages.
    fn node_holds(&self, id: PageId, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let Some(p) = self.pool.peek(id) else {
            return false;
        };
        let sorted = (1..p.len()).all(|i| p.key(i - 1) < p.key(i));
        let inside = (0..p.len())
            .all(|i| lo.is_none_or(|lo| p.key(i) >= lo) && hi.is_none_or(|hi| p.key(i) < hi));
        let allocated = |c: PageId| c < self.meta.next_page;
        let links = match p.kind() {
            Kind::Leaf => true,
            Kind::Internal => {
                allocated(p.next()) && (0..p.len()).all(|i| child_at(p, i).is_ok_and(allocated))
            }
            Kind::Overflow | Kind::Free => false,
        };
        sorted && inside && links && p.used() <= Page::capacity(p.size())
    }

    /// Debug builds: whether resident leaf `id` is at least a sixth full,
    /// as both halves of a leaf split are (each cell is at most a third of
    /// a page and the split is at the middle byte).
    fn sixth_full(&self, id: PageId) -> bool {
        self.pool
            .peek(id)
            .is_some_and(|p| p.used() * 6 >= Page::capacity(p.size()))
    }

    /// Runs for a scan of `lo..hi` when it is expected to touch more than
    /// the breakeven fraction of the store (seed 002): then reading it all
    /// in large sequential requests costs less than reading its pages one
    /// by one. Only unlimited scans: a limit says little about the pages.
    fn plan_runs(
        &mut self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        limit: usize,
    ) -> Result<Option<Runs>> {
        let Some(io) = self.io else {
            return Ok(None);
        };
        let pages = self.store.run_pages(io.scan_read_bytes);
        if limit != usize::MAX || pages < 2 || self.range_share(lo, hi)? <= io.breakeven_fraction {
            return Ok(None);
        }
        Ok(Some(Runs {
            pages,
            read: HashSet::new(),
            leaves: HashMap::new(),
        }))
    }

    /// About what share of the leaves hold keys in `lo..hi`: the share of
    /// the children the range spans in the first node where it spans more
    /// than one, scaled by the shares of the single children above it.
    fn range_share(&mut self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<f64> {
        let mut id = self.meta.root;
        let mut share = 1.0;
        for _ in 0..MAX_DEPTH {
            let p = self.page(id)?;
            if p.kind() != Kind::Internal {
                return Ok(share);
            }
            let children = p.len() + 1;
            let a = match lo {
                Bound::Included(k) | Bound::Excluded(k) => child_index(p, k),
                Bound::Unbounded => 0,
            };
            let b = match hi {
                Bound::Included(k) | Bound::Excluded(k) => child_index(p, k),
                Bound::Unbounded => children - 1,
            };
            if b < a {
                return Ok(0.0);
            }
            if b > a {
                debug_assert!(b < children, "child {b} of {children}");
                return Ok(share * (b - a + 1) as f64 / children as f64);
            }
            share /= children as f64;
            id = if a == 0 {
                p.next()
            } else {
                child_at(p, a - 1)?
            };
        }
        Err(bad_tree(self.meta.root, TOO_DEEP))
    }

    /// Page `id` for a scan: the buffered copy when there is one (it may be
    /// newer than the store's), else from the run holding it, read when the
    /// scan first needs a page of it; without runs, through the buffer pool.
    fn scan_page(
        &mut self,
        runs: &mut Option<Runs>,
        id: PageId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Cow<'_, Page>> {
        if id >= self.meta.next_page {
            return Err(bad_tree(id, "a pointer past the allocated pages"));
        }
        let Some(r) = runs.as_mut().filter(|_| !self.pool.contains(id)) else {
            return Ok(Cow::Borrowed(self.page(id)?));
        };
        let run = id / r.pages;
        if r.read.insert(run) {
            let first = run * r.pages;
            let n = r.pages.min(self.meta.next_page - first);
            for p in self.store.read_run(self.disk, first, n)? {
                // A buffered page is newer than the run's copy, and stays
                // so when the scan evicts it (writing it) before reaching it.
                if p.kind() == Kind::Leaf && overlaps(&p, lo, hi) && !self.pool.contains(p.id()) {
                    r.leaves.insert(p.id(), p);
                }
            }
        }
        match r.leaves.remove(&id) {
            Some(p) => {
                debug_assert!(p.kind() == Kind::Leaf && p.id() == id, "a run's leaf {id}");
                Ok(Cow::Owned(p))
            }
            None => Ok(Cow::Borrowed(self.page(id)?)),
        }
    }
}

/// Whether leaf `p` may hold keys in `lo..hi` (an empty leaf may: it is
/// still part of the chain).
fn overlaps(p: &Page, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    if p.is_empty() {
        return true;
    }
    let (first, last) = (p.key(0), p.key(p.len() - 1));
    above(last, lo) && below(first, hi)
}

/// A cell's key and value, borrowed.
type CellRef<'a> = (&'a [u8], &'a [u8]);

/// A leaf's cells with `key`'s cell put in (replacing the key's old one),
/// borrowed, and where it went.
fn with_cell<'a>(node: &'a Page, key: &'a [u8], cell: &'a [u8]) -> (Vec<CellRef<'a>>, usize) {
    debug_assert_eq!(node.kind(), Kind::Leaf, "page {}", node.id());
    let mut cells: Vec<CellRef> = Vec::with_capacity(node.len() + 1);
    cells.extend((0..node.len()).map(|i| (node.key(i), node.val(i))));
    let pos = match node.search(key) {
        Ok(i) => {
            cells[i].1 = cell;
            i
        }
        Err(i) => {
            cells.insert(i, (key, cell));
            i
        }
    };
    (cells, pos)
}

/// Index of the first cell of the right half: about `pct` percent of the
/// bytes on the left.
fn split_point<K: AsRef<[u8]>, V: AsRef<[u8]>>(cells: &[(K, V)], pct: usize) -> usize {
    assert!(cells.len() >= 2, "a split has a cell for each side");
    assert!((1..100).contains(&pct), "both sides keep something");
    let size = |(k, v): &(K, V)| Page::cell_size(k.as_ref().len(), v.as_ref().len());
    let total: usize = cells.iter().map(size).sum();
    let mut acc = 0;
    for (i, c) in cells.iter().enumerate() {
        acc += size(c);
        if acc * 100 >= total * pct {
            return (i + 1).clamp(1, cells.len() - 1);
        }
    }
    cells.len() - 1
}

/// What [`Tree::verify`] found: the leaves in key order and the tree's height.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct Walk {
    pub height: usize,
    pub internal: usize,
    /// Leaves in key order: page, keys, bytes used.
    pub leaves: Vec<(PageId, usize, usize)>,
}

#[cfg(test)]
impl Tree<'_> {
    /// Test support: walks every node from the root and checks the tree's
    /// structure: each node's keys in order and within the range its
    /// parent's separators give it, every leaf at the same depth, the leaf
    /// chain linking the leaves in key order both ways. (Internal nodes
    /// are not merged: one may be left with a single child.)
    pub fn verify(&mut self) -> Result<Walk, String> {
        let mut walk = Walk {
            height: 0,
            internal: 0,
            leaves: Vec::new(),
        };
        self.verify_node(self.meta.root, (None, None), 1, &mut walk)?;
        for (i, &(id, _, _)) in walk.leaves.iter().enumerate() {
            let p = self.page(id).map_err(|e| e.to_string())?;
            let prev = i.checked_sub(1).map_or(NO_PAGE, |j| walk.leaves[j].0);
            let next = walk.leaves.get(i + 1).map_or(NO_PAGE, |l| l.0);
            if (p.prev(), p.next()) != (prev, next) {
                return Err(format!(
                    "leaf {id}: links {:?}, want {:?}",
                    (p.prev(), p.next()),
                    (prev, next)
                ));
            }
        }
        Ok(walk)
    }

    fn verify_node(
        &mut self,
        id: PageId,
        (lo, hi): (Option<Vec<u8>>, Option<Vec<u8>>),
        depth: usize,
        walk: &mut Walk,
    ) -> Result<(), String> {
        let p = self.page(id).map_err(|e| e.to_string())?.clone();
        let keys: Vec<&[u8]> = (0..p.len()).map(|i| p.key(i)).collect();
        if keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("page {id}: keys out of order"));
        }
        let inside =
            |k: &[u8]| lo.as_deref().is_none_or(|l| k >= l) && hi.as_deref().is_none_or(|h| k < h);
        if let Some(k) = keys.iter().find(|k| !inside(k)) {
            return Err(format!("page {id}: key {k:?} outside {lo:?}..{hi:?}"));
        }
        match p.kind() {
            Kind::Leaf if walk.height == 0 || walk.height == depth => {
                walk.height = depth;
                walk.leaves.push((id, p.len(), p.used()));
                Ok(())
            }
            Kind::Leaf => Err(format!(
                "leaf {id} at depth {depth}, others at {}",
                walk.height
            )),
            Kind::Internal => {
                walk.internal += 1;
                let mut bounds: Vec<Option<Vec<u8>>> = vec![lo];
                bounds.extend(keys.iter().map(|k| Some(k.to_vec())));
                bounds.push(hi);
                let mut children = vec![p.next()];
                for i in 0..p.len() {
                    children.push(child_at(&p, i).map_err(|e| e.to_string())?);
                }
                for (i, c) in children.into_iter().enumerate() {
                    let range = (bounds[i].clone(), bounds[i + 1].clone());
                    self.verify_node(c, range, depth + 1, walk)?;
                }
                Ok(())
            }
            _ => Err(format!("page {id}: not a tree page")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_limit_leaves_room_for_splits() {
        assert_eq!(max_key(4096), MAX_KEY);
        assert_eq!(max_key(1024), 306);
    }

    use crate::{Db, Options};
    use flashkv_device::{Geometry, MemDevice};
    use rand::seq::SliceRandom;
    use rand::SeedableRng;

    const PAGE: usize = 512;
    const VALUE: usize = 100;

    /// A store of 512-byte pages and a 4-frame pool, so nodes split after
    /// a few keys and pages come and go through the page store.
    fn small_pages() -> Db {
        let geo = Geometry {
            sector_size: 512,
            erase_unit: None,
            capacity: 32 << 20,
            program_once: false,
        };
        let o = Options::builder()
            .page_size(PAGE as u32)
            .buffer_pages(4)
            .wal_size(1 << 20);
        Db::open(Box::new(MemDevice::new(geo)), o.build().unwrap()).unwrap()
    }

    fn key(n: u64) -> [u8; 8] {
        n.to_be_bytes()
    }

    fn walk(db: &Db) -> Walk {
        db.with_tree(|t| Ok(t.verify())).unwrap().unwrap()
    }

    /// Keys per leaf and separators per internal node, from the page layout.
    fn fanout() -> (usize, usize) {
        let cap = Page::capacity(PAGE);
        let leaf = cap / Page::cell_size(8, 1 + VALUE);
        let internal = cap / Page::cell_size(8, 8);
        (leaf, internal)
    }

    #[test]
    fn ascending_keys_split_leaves_then_the_root_then_internal_nodes() {
        let (per_leaf, per_node) = fanout();
        assert_eq!(
            (per_leaf, per_node),
            (4, 21),
            "the layout the counts below follow"
        );
        let db = small_pages();
        let put = |n: u64| db.put(&key(n), &[n as u8; VALUE]).unwrap();
        for n in 0..per_leaf as u64 {
            put(n);
        }
        let w = walk(&db);
        assert_eq!(
            (w.height, w.leaves.len(), w.internal),
            (1, 1, 0),
            "a full root leaf"
        );
        // One more key: the leaf splits and a root is made over both halves.
        put(per_leaf as u64);
        let w = walk(&db);
        assert_eq!(
            (w.height, w.leaves.len(), w.internal),
            (2, 2, 1),
            "a leaf and root split"
        );
        // Appending fills each leaf before the next is started: the root
        // holds `per_node` separators, `per_node + 1` full leaves.
        let full = ((per_node + 1) * per_leaf) as u64;
        for n in per_leaf as u64 + 1..full {
            put(n);
            let w = walk(&db);
            assert_eq!(w.height, 2, "key {n}");
            assert!(
                w.leaves[..w.leaves.len() - 1]
                    .iter()
                    .all(|l| l.1 == per_leaf),
                "key {n}: full leaves"
            );
        }
        assert_eq!(walk(&db).leaves.len(), per_node + 1);
        // One more leaf overflows the root: an internal split and a new root.
        put(full);
        let w = walk(&db);
        assert_eq!(
            (w.height, w.leaves.len(), w.internal),
            (3, per_node + 2, 3),
            "an internal and root split"
        );
        assert_eq!(db.scan(..).unwrap().len(), full as usize + 1);
    }

    #[test]
    fn random_keys_split_in_the_middle_and_deletes_merge_back_to_one_leaf() {
        let (per_leaf, _) = fanout();
        let db = small_pages();
        let mut keys: Vec<u64> = (0..600).collect();
        keys.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(3));
        let cap = Page::capacity(PAGE);
        for (i, &n) in keys.iter().enumerate() {
            db.put(&key(n), &[n as u8; VALUE]).unwrap();
            let w = walk(&db);
            assert_eq!(w.leaves.iter().map(|l| l.1).sum::<usize>(), i + 1);
            // Splits halve full leaves; only the rightmost may have been
            // started by a key past every other.
            let (rightmost, rest) = w.leaves.split_last().unwrap();
            assert!(rightmost.1 >= 1);
            for l in rest {
                assert!(
                    l.2 * 6 >= cap,
                    "key {n}: leaf {} is {} of {cap} bytes",
                    l.0,
                    l.2
                );
            }
        }
        let grown = walk(&db);
        assert_eq!(grown.height, 3);
        assert!(grown.leaves.len() * per_leaf >= 600);
        // Deletes take empty leaves out of the tree and merge underfull
        // ones with a sibling: a leaf that leaves the tree holding two or
        // more keys (one delete takes one) was merged.
        keys.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(4));
        let (mut before, mut merges) = (grown.leaves, 0);
        for (i, &n) in keys.iter().enumerate() {
            assert!(db.delete(&key(n)).unwrap());
            let w = walk(&db);
            assert_eq!(w.leaves.iter().map(|l| l.1).sum::<usize>(), 600 - i - 1);
            if w.height > 1 {
                assert!(
                    w.leaves.iter().all(|l| l.1 > 0),
                    "key {n}: an empty leaf stayed"
                );
            }
            let gone = before
                .iter()
                .filter(|b| !w.leaves.iter().any(|l| l.0 == b.0));
            merges += gone.filter(|b| b.1 >= 2).count();
            before = w.leaves;
        }
        assert!(merges > 10, "{merges} merges");
        let w = walk(&db);
        assert_eq!(
            (w.height, w.leaves.len(), w.internal),
            (1, 1, 0),
            "back to a root leaf"
        );
        let shape = db.shape().unwrap();
        assert_eq!(
            (shape.keys, shape.free_pages + 1),
            (0, shape.pages),
            "every other page is free"
        );
    }
}
