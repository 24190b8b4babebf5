//! The page FTL's tables, sized by what has been written rather than by the
//! capacity: the logical-to-physical map in chunks allocated on first write
//! (found through a directory of zeroed memory the system maps only where
//! it is written, or on devices above 2^28 pages a hash of the chunks
//! written), reverse entries only for blocks programmed during the
//! simulation, and four bytes of state per physical block (zeroed memory
//! too).
//!
//! A sequential fill of a fresh device ([`Layout::fill_ppn`]) is not stored
//! at all: an entry no chunk holds maps where the fill put it.

use rustc_hash::FxHashMap;

/// No logical or physical page (u32 keeps the maps small and flat).
pub(super) const NONE: u32 = u32::MAX;

/// Map entries per chunk: small, so scattered writes over a huge device
/// allocate little beside each page they touch (64 bytes per chunk, plus
/// about 10 bytes of hash entry).
const CHUNK: usize = 16;

/// Where pages go: logical page `l` lives on die `l % units`; block `b` is
/// on die `b % units`.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub units: u32,
    pub ppb: u32,
}

impl Layout {
    /// The physical page a sequential fill of a fresh device gives `lpn`:
    /// die `u` fills its blocks `u, u + units, ...` in order.
    pub fn fill_ppn(&self, lpn: u32) -> u32 {
        let (u, i) = (lpn % self.units, lpn / self.units);
        ((i / self.ppb) * self.units + u) * self.ppb + i % self.ppb
    }

    /// The logical page a sequential fill put at `ppn` (the inverse).
    pub fn fill_lpn(&self, ppn: u32) -> u32 {
        let b = ppn / self.ppb;
        let i = (b / self.units) * self.ppb + ppn % self.ppb;
        i * self.units + b % self.units
    }
}

/// Most chunks a dense directory has: 2^24 (64 MiB of directory, for 2^28
/// logical pages, 1 TiB of 4 KiB pages). Above it a scattered run would
/// have the system map most of a directory as large as its chunks, so the
/// directory is a hash of the chunks written: slower (a hash per lookup),
/// as small as what the run touches.
const DENSE_CHUNKS: u64 = 1 << 24;

/// Where each chunk of the map is in the slab.
enum Dir {
    /// 1 + the chunk's slab index for every chunk of the capacity, 0 for
    /// none (zeroed memory: mapped by the system where written).
    Dense(Vec<u32>),
    /// Slab index of each chunk written.
    Hashed(FxHashMap<u32, u32>),
}

impl Dir {
    fn get(&self, d: u32) -> Option<u32> {
        match self {
            Dir::Dense(v) => v[d as usize].checked_sub(1),
            Dir::Hashed(m) => m.get(&d).copied(),
        }
    }

    fn insert(&mut self, d: u32, c: u32) {
        debug_assert!(self.get(d).is_none(), "chunk {d} is stored once");
        match self {
            Dir::Dense(v) => v[d as usize] = c + 1,
            Dir::Hashed(m) => {
                m.insert(d, c);
            }
        }
    }
}

/// Chunks per slab segment: the slab grows a segment (1 MiB) at a time,
/// never by copying what it holds.
const SEGMENT: usize = (1 << 20) / (4 * CHUNK);

/// Logical page -> physical page.
pub(super) struct L2p {
    /// Chunk index into the slab of each run of `CHUNK` logical pages
    /// written so far.
    dir: Dir,
    slab: Vec<Box<[[u32; CHUNK]]>>,
    chunks: usize,
    /// Logical pages below this were placed by a sequential fill.
    filled: u32,
    layout: Layout,
}

impl L2p {
    pub fn new(logical: u64, layout: Layout) -> Self {
        let chunks = logical.div_ceil(CHUNK as u64);
        assert!(chunks < u64::from(u32::MAX), "chunk numbers fit u32");
        let dir = if chunks <= DENSE_CHUNKS {
            Dir::Dense(vec![0; chunks as usize])
        } else {
            Dir::Hashed(FxHashMap::default())
        };
        L2p {
            dir,
            slab: Vec::new(),
            chunks: 0,
            filled: 0,
            layout,
        }
    }

    /// Whether nothing has been mapped yet.
    pub fn is_empty(&self) -> bool {
        self.chunks == 0 && self.filled == 0
    }

    /// Records that logical pages `[0, pages)` were filled sequentially.
    pub fn set_filled(&mut self, pages: u32) {
        assert!(self.is_empty(), "a fill maps a fresh device only");
        self.filled = pages;
    }

    pub fn get(&self, lpn: u32) -> u32 {
        match self.dir.get(lpn / CHUNK as u32) {
            None => self.unstored(lpn),
            Some(c) => self.chunk(c)[lpn as usize % CHUNK],
        }
    }

    fn chunk(&self, c: u32) -> &[u32; CHUNK] {
        &self.slab[c as usize / SEGMENT][c as usize % SEGMENT]
    }

    pub fn set(&mut self, lpn: u32, ppn: u32) {
        let d = lpn / CHUNK as u32;
        let c = match self.dir.get(d) {
            Some(c) => c as usize,
            None => self.new_chunk(d),
        };
        self.slab[c / SEGMENT][c % SEGMENT][lpn as usize % CHUNK] = ppn;
    }

    /// Stores chunk `d`, holding what it maps now; returns its slab index.
    fn new_chunk(&mut self, d: u32) -> usize {
        if self.chunks % SEGMENT == 0 {
            self.slab
                .push(vec![[NONE; CHUNK]; SEGMENT].into_boxed_slice());
        }
        let c = self.chunks;
        let base = d * CHUNK as u32;
        let fresh = std::array::from_fn(|i| self.unstored(base + i as u32));
        self.slab[c / SEGMENT][c % SEGMENT] = fresh;
        self.dir
            .insert(d, u32::try_from(c).expect("fewer chunks than pages"));
        self.chunks += 1;
        c
    }

    fn unstored(&self, lpn: u32) -> u32 {
        if lpn < self.filled {
            self.layout.fill_ppn(lpn)
        } else {
            NONE
        }
    }
}

/// What a physical block is doing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum BlockState {
    Free,
    Open,
    Full,
}

const STATE_SHIFT: u32 = 30;
/// Set in `meta` of a block the sequential fill wrote and nothing was
/// programmed in since: its reverse entries are [`Layout::fill_lpn`].
const FILLED: u32 = 1 << 29;
const VALID_MASK: u32 = FILLED - 1;

/// Per physical block: state, fill flag and valid-page count packed in one
/// word, and where its reverse (physical -> logical) entries are, if it
/// has any. Both tables start as zeros, which the system maps lazily.
pub(super) struct Blocks {
    meta: Vec<u32>,
    /// 1 + index of the block's run of `ppb` entries in `rev`, or 0 for a
    /// block not programmed (since its erase) during the simulation.
    slot: Vec<u32>,
    /// Logical page each programmed page was written for (stale once the
    /// page is overwritten elsewhere: validity is `l2p[rev] == ppn`).
    rev: Vec<u32>,
    free_slots: Vec<u32>,
    /// Logical pages the fill wrote.
    filled: u32,
    layout: Layout,
}

impl Blocks {
    pub fn new(blocks: usize, layout: Layout) -> Self {
        assert!(
            layout.ppb <= VALID_MASK,
            "pages_per_block fits the valid count"
        );
        assert!(blocks < NONE as usize, "slot numbers fit u32");
        Blocks {
            meta: vec![0; blocks],
            slot: vec![0; blocks],
            rev: Vec::new(),
            free_slots: Vec::new(),
            filled: 0,
            layout,
        }
    }

    pub fn len(&self) -> usize {
        self.meta.len()
    }

    pub fn state(&self, b: u32) -> BlockState {
        match self.meta[b as usize] >> STATE_SHIFT {
            0 => BlockState::Free,
            1 => BlockState::Open,
            _ => BlockState::Full,
        }
    }

    pub fn valid(&self, b: u32) -> u32 {
        self.meta[b as usize] & VALID_MASK
    }

    fn filled(&self, b: u32) -> bool {
        self.meta[b as usize] & FILLED != 0
    }

    fn pack(&mut self, b: u32, s: BlockState, filled: bool, valid: u32) {
        debug_assert!(valid <= self.layout.ppb);
        let f = if filled { FILLED } else { 0 };
        self.meta[b as usize] = ((s as u32) << STATE_SHIFT) | f | valid;
    }

    pub fn set_state(&mut self, b: u32, s: BlockState) {
        let v = self.valid(b);
        // Erased: its reverse entries are gone, the fill's too.
        let erased = s == BlockState::Free;
        self.pack(b, s, self.filled(b) && !erased, v);
        if erased {
            let slot = std::mem::replace(&mut self.slot[b as usize], 0);
            if slot != 0 {
                self.free_slots.push(slot - 1);
            }
        }
    }

    pub fn add_valid(&mut self, b: u32) {
        self.meta[b as usize] += 1;
        debug_assert!(self.valid(b) <= self.layout.ppb);
    }

    pub fn sub_valid(&mut self, b: u32) {
        debug_assert!(self.valid(b) > 0);
        self.meta[b as usize] -= 1;
    }

    /// Records that the sequential fill wrote `valid` pages of block `b`,
    /// which now is in state `s`; `pages` logical pages were filled in all.
    pub fn set_filled(&mut self, b: u32, s: BlockState, valid: u32, pages: u32) {
        debug_assert_eq!(self.slot[b as usize], 0, "the fill writes fresh blocks");
        self.pack(b, s, true, valid);
        self.filled = pages;
    }

    /// The logical page programmed at `ppn`, or NONE.
    pub fn rev(&self, ppn: u32) -> u32 {
        let ppb = self.layout.ppb;
        let b = ppn / ppb;
        match self.slot[b as usize] {
            0 if self.filled(b) => self.filled_rev(ppn),
            0 => NONE,
            s => self.rev[((s - 1) * ppb + ppn % ppb) as usize],
        }
    }

    fn filled_rev(&self, ppn: u32) -> u32 {
        let lpn = self.layout.fill_lpn(ppn);
        if lpn < self.filled {
            lpn
        } else {
            NONE
        }
    }

    /// Records that `ppn` was programmed with `lpn`. A block's first program
    /// since its erase takes a run of reverse entries (keeping what the fill
    /// put in it).
    pub fn set_rev(&mut self, ppn: u32, lpn: u32) {
        let ppb = self.layout.ppb;
        let b = ppn / ppb;
        if self.slot[b as usize] == 0 {
            let s = self.free_slots.pop().unwrap_or_else(|| {
                let s = (self.rev.len() / ppb as usize) as u32;
                self.rev.resize(self.rev.len() + ppb as usize, NONE);
                s
            });
            let (first, filled) = (b * ppb, self.filled(b));
            for i in 0..ppb {
                let was = if filled {
                    self.filled_rev(first + i)
                } else {
                    NONE
                };
                self.rev[(s * ppb + i) as usize] = was;
            }
            self.slot[b as usize] = s + 1;
        }
        let s = self.slot[b as usize] - 1;
        self.rev[(s * ppb + ppn % ppb) as usize] = lpn;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_layout_is_its_own_inverse() {
        let l = Layout { units: 6, ppb: 8 };
        for lpn in 0..10_000 {
            let ppn = l.fill_ppn(lpn);
            assert_eq!(l.fill_lpn(ppn), lpn);
            // On its die, in fill order.
            assert_eq!((ppn / l.ppb) % l.units, lpn % l.units);
        }
    }

    #[test]
    fn the_map_allocates_only_chunks_it_writes() {
        let layout = Layout { units: 4, ppb: 16 };
        // Both directories: a large map's is a hash.
        let mut h = L2p::new((DENSE_CHUNKS + 1) * CHUNK as u64, layout);
        assert!(matches!(h.dir, Dir::Hashed(_)));
        h.set(12345, 7);
        assert_eq!((h.get(12345), h.get(12346), h.chunks), (7, NONE, 1));
        let mut m = L2p::new(1 << 20, layout);
        assert!(matches!(m.dir, Dir::Dense(_)));
        assert_eq!(m.get(12345), NONE);
        m.set(12345, 7);
        m.set(12346, 8);
        assert_eq!((m.get(12345), m.get(12346), m.get(12344)), (7, 8, NONE));
        assert_eq!(m.chunks, 1);
        let mut f = L2p::new(1 << 20, layout);
        f.set_filled(1000);
        f.set(5, 99);
        assert_eq!(f.get(5), 99);
        assert_eq!(f.get(6), layout.fill_ppn(6));
        assert_eq!(f.get(999), layout.fill_ppn(999));
        assert_eq!(f.get(1000), NONE);
    }

    /// Wherever the docs give the map's chunk size, it is this one.
    #[test]
    fn the_docs_state_the_chunk_size_the_code_has() {
        let docs = [
            include_str!("../../../../README.md"),
            include_str!("../../../../docs/devices.md"),
        ];
        let claim = format!("{CHUNK}-entry chunks");
        assert!(docs[1].contains(&claim), "docs/devices.md: {claim}");
        for text in docs {
            for (i, _) in text.match_indices("-entry chunks") {
                let n = text[..i].rsplit(|c: char| !c.is_ascii_digit()).next();
                assert_eq!(n, Some(CHUNK.to_string().as_str()), "near {i}");
            }
        }
    }

    #[test]
    fn block_state_and_valid_count_pack_together() {
        let mut b = Blocks::new(10, Layout { units: 2, ppb: 4 });
        b.set_state(3, BlockState::Open);
        b.add_valid(3);
        b.add_valid(3);
        b.set_state(3, BlockState::Full);
        b.sub_valid(3);
        assert_eq!((b.state(3), b.valid(3)), (BlockState::Full, 1));
        b.set_rev(13, 42);
        assert_eq!((b.rev(13), b.rev(12)), (42, NONE));
        b.sub_valid(3);
        b.set_state(3, BlockState::Free);
        assert_eq!((b.rev(13), b.valid(3)), (NONE, 0));
        assert_eq!(b.free_slots, vec![0]);
        // A block the fill half wrote keeps those entries when programmed on.
        let l = Layout { units: 2, ppb: 4 };
        let mut f = Blocks::new(10, l);
        f.set_filled(1, BlockState::Open, 2, 4);
        assert_eq!((f.rev(4), f.rev(5), f.rev(6)), (1, 3, NONE));
        f.set_rev(6, 77);
        assert_eq!((f.rev(4), f.rev(5), f.rev(6)), (1, 3, 77));
    }
}
