//! The page FTL's tables, sized by what has been written rather than by the
//! capacity: the logical-to-physical map in chunks allocated on first write,
//! reverse entries only for blocks programmed during the simulation, and
//! four bytes of state per physical block.
//!
//! A sequential fill of a fresh device ([`Layout::fill_ppn`]) is not stored
//! at all: an entry no chunk holds maps where the fill put it.

/// No logical or physical page (u32 keeps the maps small and flat).
pub(super) const NONE: u32 = u32::MAX;

/// Map entries per chunk: small, so scattered writes over a huge device
/// allocate little beside each page they touch. 16 (64 bytes) balances the
/// directory (4 bytes per chunk of the capacity) against the chunks: after
/// a fill and 10^6 random 4 KB writes to a 512 GiB `nvme`, 64 entries took
/// 235 MB of RSS and 16 take 120 MB; at 4 TiB the two are about even.
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

/// Chunks per slab segment: the slab grows a segment (1 MiB) at a time,
/// never by copying what it holds.
const SEGMENT: usize = (1 << 20) / (4 * CHUNK);

/// Logical page -> physical page.
pub(super) struct L2p {
    /// Chunk index into the slab for each run of `CHUNK` logical pages, or NONE.
    dir: Vec<u32>,
    slab: Vec<Box<[[u32; CHUNK]]>>,
    chunks: usize,
    /// Logical pages below this were placed by a sequential fill.
    filled: u32,
    layout: Layout,
}

impl L2p {
    pub fn new(logical: u64, layout: Layout) -> Self {
        L2p {
            dir: vec![NONE; logical.div_ceil(CHUNK as u64) as usize],
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
        match self.dir[lpn as usize / CHUNK] {
            NONE => self.unstored(lpn),
            c => self.chunk(c)[lpn as usize % CHUNK],
        }
    }

    fn chunk(&self, c: u32) -> &[u32; CHUNK] {
        &self.slab[c as usize / SEGMENT][c as usize % SEGMENT]
    }

    pub fn set(&mut self, lpn: u32, ppn: u32) {
        let d = lpn as usize / CHUNK;
        if self.dir[d] == NONE {
            if self.chunks % SEGMENT == 0 {
                self.slab
                    .push(vec![[NONE; CHUNK]; SEGMENT].into_boxed_slice());
            }
            let c = self.chunks;
            let base = (d * CHUNK) as u32;
            let fresh = std::array::from_fn(|i| self.unstored(base + i as u32));
            self.slab[c / SEGMENT][c % SEGMENT] = fresh;
            self.dir[d] = u32::try_from(c).expect("fewer chunks than pages");
            self.chunks += 1;
        }
        let c = self.dir[d] as usize;
        self.slab[c / SEGMENT][c % SEGMENT][lpn as usize % CHUNK] = ppn;
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
const VALID_MASK: u32 = (1 << STATE_SHIFT) - 1;

/// `Blocks::slot` of a block the sequential fill wrote: its reverse entries
/// are [`Layout::fill_lpn`].
const FILLED: u32 = NONE - 1;

/// Per physical block: state and valid-page count packed in one word, and
/// where its reverse (physical -> logical) entries are, if it has any.
pub(super) struct Blocks {
    meta: Vec<u32>,
    /// Index of the block's run of `ppb` entries in `rev`; FILLED; or NONE
    /// for a block not programmed since it was last erased.
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
        Blocks {
            meta: vec![0; blocks],
            slot: vec![NONE; blocks],
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

    fn pack(&mut self, b: u32, s: BlockState, valid: u32) {
        debug_assert!(valid <= self.layout.ppb);
        self.meta[b as usize] = ((s as u32) << STATE_SHIFT) | valid;
    }

    pub fn set_state(&mut self, b: u32, s: BlockState) {
        let v = self.valid(b);
        self.pack(b, s, v);
        if s == BlockState::Free {
            // Erased: its reverse entries are gone.
            let slot = std::mem::replace(&mut self.slot[b as usize], NONE);
            if slot != NONE && slot != FILLED {
                self.free_slots.push(slot);
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
        self.pack(b, s, valid);
        self.slot[b as usize] = FILLED;
        self.filled = pages;
    }

    /// The logical page programmed at `ppn`, or NONE.
    pub fn rev(&self, ppn: u32) -> u32 {
        let ppb = self.layout.ppb;
        match self.slot[(ppn / ppb) as usize] {
            NONE => NONE,
            FILLED => self.filled_rev(ppn),
            s => self.rev[(s * ppb + ppn % ppb) as usize],
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
        let b = (ppn / ppb) as usize;
        let slot = self.slot[b];
        if slot == NONE || slot == FILLED {
            let s = self.free_slots.pop().unwrap_or_else(|| {
                let s = (self.rev.len() / ppb as usize) as u32;
                self.rev.resize(self.rev.len() + ppb as usize, NONE);
                s
            });
            let first = b as u32 * ppb;
            for i in 0..ppb {
                let was = if slot == FILLED {
                    self.filled_rev(first + i)
                } else {
                    NONE
                };
                self.rev[(s * ppb + i) as usize] = was;
            }
            self.slot[b] = s;
        }
        self.rev[(self.slot[b] * ppb + ppn % ppb) as usize] = lpn;
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
        let mut m = L2p::new(1 << 20, layout);
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
