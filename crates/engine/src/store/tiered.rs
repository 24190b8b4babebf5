//! Two-device page store: pages placed across the fast and the slow device
//! of a device pair (`flashkv_device::PairDevice`) by a [`Placement`].
//!
//! Every page has a *home* on the slow device, at `home_start + id *
//! page_size`, as the in-place store's pages; a page placed on the fast
//! device lives in one of its *slots* instead, which the store maps. Pages
//! are written back whole where they live, imaged in the write-ahead log
//! first (the store overwrites), so a dirty page moves between devices for
//! the price of its write-back. The hot/cold placement also moves clean
//! pages: a copy written to a free fast slot on a read, or a page sent back
//! home (free where its home still holds its image).
//!
//! The map is not logged: a checkpoint holds it (slot, page pairs), and
//! what changes between checkpoints is safe to lose because
//! * every page *written* since the checkpoint has its image in the log,
//!   so recovery does not read it from where the checkpoint's map says;
//! * a page moved *clean* left its image where the checkpoint's map says:
//!   a slot the checkpoint names is not reused until the next checkpoint,
//!   and a home is written clean only for its own page, when the page has
//!   changed since the checkpoint (so its image is in the log) or the
//!   checkpoint's map does not send it there.
//!
//! Lost and misdirected writes are caught as in the in-place store: the
//! checksum of each page's last image is remembered ([`Sealed`]) and the
//! pages written are read back before a checkpoint.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use super::placement::{Heat, Io, Side, SAMPLES};
use super::sealed::{Sealed, READS};
use super::{write_runs, PageStore, StoreStats};
use crate::buffer::Frame;
use crate::error::{bad_page, corrupt, invalid, Error, Location, Result, Structure};
use crate::io::{Disk, ReadAt, Region};
use crate::le::{u32_at, u64_at};
use crate::options::{Placement, StoreKind};
use crate::page::{Kind, Page, PageId};

/// Version of the map a checkpoint holds.
const MAP_VERSION: u8 = 1;
/// Bytes of the map before its entries: version, the pair's two address
/// ranges, the entry count.
const MAP_HDR: usize = 1 + 4 * 8 + 4;
/// Bytes of one entry: slot (u32), page (u64).
const ENTRY: usize = 12;

/// Where a page lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    Home,
    Slot(u32),
}

pub(crate) struct Tiered {
    placement: Placement,
    page_size: usize,
    /// The pair's address ranges (checked against the device at open).
    fast_range: Range<u64>,
    slow_range: Range<u64>,
    /// Where the store's region starts (its ceiling counts from there).
    region_start: u64,
    /// Page `id`'s home is at `home_start + id * page_size`.
    home_start: u64,
    /// Homes the region holds, and how many may be used now (fewer while
    /// the log lies above them).
    home_region: u64,
    homes: u64,
    /// Slot `s` is at `slot_start + s * page_size`.
    slot_start: u64,
    /// Slots usable now (fewer while the log lies above them).
    usable: u32,
    /// The page in each slot now, and at the last checkpoint.
    slots: Vec<Option<PageId>>,
    ckpt: Vec<Option<PageId>>,
    /// Slots empty now and at the last checkpoint, below `usable`.
    free: BTreeSet<u32>,
    /// The slot of every page on the fast device.
    on_fast: HashMap<PageId, u32>,
    /// Pages on the fast device whose home still holds their image.
    home_current: HashSet<PageId>,
    /// The pages of the write under way: placed, not written yet, so no
    /// victim to make room for another.
    writing: HashSet<PageId>,
    /// Largest write of consecutive pages.
    write_size: u64,
    unit: u64,
    sealed: Sealed,
    heat: Heat,
    stats: StoreStats,
}

/// Where a two-device store lies: the region's part on each device.
pub(crate) struct Span {
    pub region: Range<u64>,
    pub fast: Range<u64>,
    pub slow: Range<u64>,
}

impl Tiered {
    /// Fast slots a checkpoint slot of `slot_len` bytes can map.
    pub fn max_slots(slot_len: u64) -> u64 {
        // Room is left for the checkpoint's fixed fields.
        slot_len.saturating_sub(4096 + MAP_HDR as u64) / ENTRY as u64
    }

    /// A store over `span.region` of a pair whose devices lie at
    /// `span.fast` and `span.slow`, holding at most `max_slots` fast
    /// slots (what a checkpoint slot can map), restoring `state`.
    pub fn new(
        placement: Placement,
        span: Span,
        page_size: usize,
        unit: u64,
        max_slots: u64,
        state: &[u8],
    ) -> Result<Tiered> {
        let ps = page_size as u64;
        let part = |r: &Range<u64>| {
            let (a, b) = (r.start.max(span.region.start), r.end.min(span.region.end));
            let a = a.div_ceil(ps) * ps;
            (a, b.saturating_sub(a) / ps)
        };
        let ((home_start, home_region), (slot_start, n)) = (part(&span.slow), part(&span.fast));
        let slots = n.min(max_slots).min(u64::from(u32::MAX)) as u32;
        if home_region == 0 || slots == 0 {
            return Err(invalid(
                "store",
                "a two-device store needs room for pages on both devices of the pair",
            ));
        }
        let mut s = Tiered {
            placement,
            page_size,
            fast_range: span.fast,
            slow_range: span.slow,
            region_start: span.region.start,
            home_start,
            home_region,
            homes: home_region,
            slot_start,
            usable: slots,
            slots: vec![None; slots as usize],
            ckpt: vec![None; slots as usize],
            free: BTreeSet::new(),
            on_fast: HashMap::new(),
            home_current: HashSet::new(),
            writing: HashSet::new(),
            write_size: ps,
            unit: unit.max(ps),
            sealed: Sealed::default(),
            heat: Heat::new(u64::from(slots)),
            stats: StoreStats::default(),
        };
        if !state.is_empty() {
            s.decode(state)?;
        }
        s.checkpointed();
        Ok(s)
    }

    /// Restores the map a checkpoint holds.
    fn decode(&mut self, b: &[u8]) -> Result<()> {
        let bad = |why| corrupt(Structure::Checkpoint, Location::Offset(0), why);
        if b.len() < MAP_HDR || b[0] != MAP_VERSION {
            return Err(bad("a two-device map of another version"));
        }
        let ranges = [u64_at(b, 1), u64_at(b, 9), u64_at(b, 17), u64_at(b, 25)];
        let here = [
            self.fast_range.start,
            self.fast_range.end,
            self.slow_range.start,
            self.slow_range.end,
        ];
        if ranges != here {
            return Err(Error::InvalidOption {
                option: "store",
                why: format!(
                    "the store was made on a device pair laid out as fast {}..{}, slow {}..{}; this pair is fast {}..{}, slow {}..{}",
                    ranges[0], ranges[1], ranges[2], ranges[3], here[0], here[1], here[2], here[3]
                ),
            });
        }
        let n = u32_at(b, 33) as usize;
        if b.len() != MAP_HDR + n * ENTRY {
            return Err(bad("a two-device map of the wrong length"));
        }
        for e in b[MAP_HDR..].chunks(ENTRY) {
            let (slot, id) = (u32_at(e, 0), u64_at(e, 4));
            let taken = self.slots.get(slot as usize).is_none_or(Option::is_some);
            if taken || id >= self.home_region || self.on_fast.contains_key(&id) {
                return Err(bad("a two-device map entry out of range or repeated"));
            }
            self.slots[slot as usize] = Some(id);
            self.on_fast.insert(id, slot);
        }
        Ok(())
    }

    /// The checkpoint whose map [`PageStore::encode_state`] gave is
    /// durable: the slots it named may be reused once emptied.
    fn checkpointed(&mut self) {
        self.ckpt.clone_from(&self.slots);
        self.free = (0..self.usable)
            .filter(|&s| self.slots[s as usize].is_none())
            .collect();
    }

    fn home(&self, id: PageId) -> u64 {
        debug_assert!(id < self.home_region, "page {id} has a home");
        self.home_start + id * self.page_size as u64
    }

    fn slot_offset(&self, s: u32) -> u64 {
        self.slot_start + u64::from(s) * self.page_size as u64
    }

    fn loc(&self, id: PageId) -> Loc {
        self.on_fast.get(&id).map_or(Loc::Home, |&s| Loc::Slot(s))
    }

    fn offset(&self, loc: Loc, id: PageId) -> u64 {
        match loc {
            Loc::Home => self.home(id),
            Loc::Slot(s) => self.slot_offset(s),
        }
    }

    fn side(loc: Loc) -> Side {
        match loc {
            Loc::Home => Side::Slow,
            Loc::Slot(_) => Side::Fast,
        }
    }

    /// Page `id` now lives at `to` (its image there, or at home where
    /// `home_current`); the slot it leaves is free unless the last
    /// checkpoint names it.
    fn place(&mut self, id: PageId, to: Loc, home_current: bool) {
        if let Some(s) = self.on_fast.remove(&id) {
            self.slots[s as usize] = None;
            if self.ckpt[s as usize].is_none() && s < self.usable {
                self.free.insert(s);
            }
        }
        self.home_current.remove(&id);
        if let Loc::Slot(s) = to {
            debug_assert!(self.slots[s as usize].is_none(), "slot {s} is empty");
            self.free.remove(&s);
            self.slots[s as usize] = Some(id);
            self.on_fast.insert(id, s);
            if home_current {
                self.home_current.insert(id);
            }
        }
        debug_assert_eq!(self.loc(id), to, "page {id} placed");
    }

    /// Reads one page at `loc`, timing it for the hot/cold costs.
    fn read_at(&mut self, disk: &mut Disk, id: PageId, loc: Loc) -> Result<Page> {
        let t0 = disk.now();
        let buf = Page::filled(self.page_size, |b| {
            disk.read(Region::Data, self.offset(loc, id), b)
        })?;
        let side = Self::side(loc);
        self.heat
            .costs
            .observe(side, Io::Read, 1, disk.now().saturating_sub(t0));
        self.stats.page_reads += 1;
        if side == Side::Fast {
            self.stats.fast_reads += 1;
        }
        Page::from_bytes(buf, id)
    }

    /// A free fast slot, making room by sending home the sampled page that
    /// gains least from the fast device, if `id` gains more (hot/cold).
    fn slot_for(&mut self, disk: &mut Disk, id: PageId) -> Result<Option<u32>> {
        if let Some(&s) = self.free.first() {
            return Ok(Some(s));
        }
        if self.placement != Placement::HotCold {
            return Ok(None);
        }
        let n = self.usable as usize;
        let sampled: Vec<u32> = (0..SAMPLES).map(|_| self.heat.sample(n) as u32).collect();
        let victim = sampled
            .into_iter()
            .filter_map(|s| self.slots[s as usize].map(|v| (v, s)))
            .filter(|&(v, _)| v != id && !self.writing.contains(&v))
            .min_by(|a, b| self.heat.gain(a.0).total_cmp(&self.heat.gain(b.0)));
        // The swap pays if what `id` gains over the victim covers writing
        // `id` there and, unless its home is current, copying the victim home.
        let swap = |t: &Self, v: PageId| {
            let c = &t.heat.costs;
            let copy = match t.home_current.contains(&v) {
                true => 0.0,
                false => c.of(Side::Fast, Io::Read) + c.of(Side::Slow, Io::Write),
            };
            c.of(Side::Fast, Io::Write) + copy
        };
        match victim {
            Some((v, s)) if self.heat.gain(id) - self.heat.gain(v) > swap(self, v) => {
                self.send_home(disk, v, s)?;
                Ok(self.free.first().copied())
            }
            _ => Ok(None),
        }
    }

    /// Moves clean page `id` from its fast slot to its home: free where the
    /// home still holds its image; else its image is copied there. The
    /// checkpoint's map may send `id` home only if its home holds its image
    /// as of the checkpoint or `id` changed since (its image is then in the
    /// log): a home that does not hold its image means the latter.
    fn send_home(&mut self, disk: &mut Disk, id: PageId, s: u32) -> Result<()> {
        debug_assert_eq!(self.loc(id), Loc::Slot(s), "page {id} is in slot {s}");
        if !self.home_current.contains(&id) {
            let page = self.read_at(disk, id, Loc::Slot(s))?;
            if !self.sealed.as_written(id, page.bytes()) {
                return Err(bad_page(id, "an older image than the one last written"));
            }
            self.write_pages(disk, vec![(self.home(id), id, page.bytes())])?;
        }
        self.place(id, Loc::Home, false);
        self.heat.moved(id);
        self.stats.demotions += 1;
        // Wherever a slot was freed, it is the first free one now, or a
        // slot the checkpoint names (kept).
        debug_assert!(self.free.len() <= self.usable as usize, "free slots exist");
        Ok(())
    }

    /// After reading clean page `page` from its home: copies it to a fast
    /// slot where the hot/cold placement wants it there.
    fn promote_clean(&mut self, disk: &mut Disk, page: &Page) -> Result<()> {
        let id = page.id();
        let Some(s) = self.slot_for(disk, id)? else {
            self.stats.fast_full += 1;
            return Ok(());
        };
        self.write_pages(disk, vec![(self.slot_offset(s), id, page.bytes())])?;
        self.place(id, Loc::Slot(s), true);
        self.heat.moved(id);
        self.stats.promotions += 1;
        Ok(())
    }

    /// Where a dirty page goes when written back.
    fn target(&mut self, disk: &mut Disk, id: PageId, kind: Kind) -> Result<Loc> {
        let here = self.loc(id);
        let fast = match (self.placement, kind) {
            // A free page stays where it is until it is used again.
            (_, Kind::Free) => return Ok(here),
            (Placement::IndexOnFast, k) => k == Kind::Internal,
            (Placement::HotCold, _) => {
                let moves = self.heat.note(id, Self::side(here), Io::Write);
                (here == Loc::Home) == moves
            }
        };
        Ok(match (fast, here) {
            (true, Loc::Slot(_)) | (false, Loc::Home) => here,
            (false, Loc::Slot(_)) => {
                self.stats.demotions += 1;
                self.heat.moved(id);
                Loc::Home
            }
            (true, Loc::Home) => match self.slot_for(disk, id)? {
                Some(s) => {
                    self.stats.promotions += 1;
                    self.heat.moved(id);
                    // Taken now, so the next page of the write gets another.
                    self.place(id, Loc::Slot(s), false);
                    Loc::Slot(s)
                }
                None => {
                    self.stats.fast_full += 1;
                    Loc::Home
                }
            },
        })
    }

    /// Writes `(offset, page, image)`s, consecutive ones together, and
    /// remembers their checksums; times them for the hot/cold costs.
    fn write_pages(&mut self, disk: &mut Disk, pages: Vec<(u64, PageId, &[u8])>) -> Result<()> {
        for &(_, id, img) in &pages {
            self.sealed.wrote(id, u32_at(img, 0));
        }
        let fast_range = self.fast_range.clone();
        let fast = |off: u64| fast_range.contains(&off);
        let n_fast = pages.iter().filter(|(off, ..)| fast(*off)).count() as u64;
        let n = pages.len() as u64;
        let mut ns = [0u64; 2];
        let mut images: Vec<(u64, &[u8])> = pages.into_iter().map(|(o, _, i)| (o, i)).collect();
        write_runs(&mut images, self.write_size, |at, run| {
            let t0 = disk.now();
            disk.write(Region::Data, at, run)?;
            ns[usize::from(!fast(at))] += disk.now().saturating_sub(t0);
            Ok(())
        })?;
        self.heat
            .costs
            .observe(Side::Fast, Io::Write, n_fast, ns[0]);
        self.heat
            .costs
            .observe(Side::Slow, Io::Write, n - n_fast, ns[1]);
        self.stats.page_writes += n;
        self.stats.fast_writes += n_fast;
        Ok(())
    }
}

impl PageStore for Tiered {
    fn kind(&self) -> StoreKind {
        StoreKind::TwoDevice(self.placement)
    }
    fn page_size(&self) -> usize {
        self.page_size
    }
    fn max_pages(&self) -> u64 {
        self.homes
    }
    fn unit_of(&self, id: PageId) -> u64 {
        id * self.page_size as u64 / self.unit
    }
    fn extent(&self, next_page: PageId) -> u64 {
        // A pair is no file: nothing of it can have been cut short.
        let _ = next_page;
        0
    }
    fn used(&self, next_page: PageId) -> u64 {
        if self.slot_start > self.home_start {
            // The fast device's slots lie above the homes, to the region's
            // end: no room above for the log to move to.
            return self.slot_offset(self.slots.len() as u32);
        }
        let homes = self.home_start + next_page * self.page_size as u64;
        let slots = (0..self.slots.len())
            .rev()
            .find(|&s| self.slots[s].is_some() || self.ckpt[s].is_some())
            .map_or(0, |s| self.slot_offset(s as u32 + 1));
        homes.max(slots)
    }
    fn unit_pages(&self, unit: u64) -> Range<PageId> {
        let ps = self.page_size as u64;
        (unit * self.unit).div_ceil(ps)..((unit + 1) * self.unit).div_ceil(ps)
    }
    fn log_capacity(&self) -> usize {
        0
    }
    fn overwrites(&self) -> bool {
        true
    }
    fn journals_writes(&self) -> bool {
        false
    }

    fn read(&mut self, disk: &mut Disk, id: PageId) -> Result<Page> {
        if id >= self.home_region {
            return Err(bad_page(id, "beyond the store"));
        }
        let loc = self.loc(id);
        let page = self.read_at(disk, id, loc)?;
        if !self.sealed.as_written(id, page.bytes()) {
            return Err(bad_page(
                id,
                "an older image than the one last written: a write was lost or went astray",
            ));
        }
        if self.placement == Placement::HotCold {
            let moves = self.heat.note(id, Self::side(loc), Io::Read);
            match (moves, loc) {
                (true, Loc::Home) => self.promote_clean(disk, &page)?,
                (true, Loc::Slot(s)) => self.send_home(disk, id, s)?,
                (false, _) => {}
            }
        }
        Ok(page)
    }

    fn read_shared(&self, read: &ReadAt, id: PageId) -> Option<Page> {
        // Hot/cold counts every read, which takes the exclusive path.
        if self.placement == Placement::HotCold || id >= self.home_region {
            return None;
        }
        let buf = Page::filled(self.page_size, |b| read(self.offset(self.loc(id), id), b)).ok()?;
        let page = Page::from_bytes(buf, id).ok()?;
        self.sealed.as_written(id, page.bytes()).then_some(page)
    }

    fn note_shared_reads(&mut self, n: u64) {
        self.stats.page_reads += n;
    }

    fn run_pages(&self, bytes: u64) -> u64 {
        (bytes / self.page_size as u64).max(1)
    }

    /// Reads the homes of the run: the pages whose home holds their image.
    fn read_run(&mut self, disk: &mut Disk, first: PageId, n: u64) -> Result<Vec<Page>> {
        let n = n.min(self.homes.saturating_sub(first));
        debug_assert!(n > 0, "a run holds a page of the region");
        let mut buf = vec![0u8; n as usize * self.page_size];
        disk.read(Region::Data, self.home(first), &mut buf)?;
        self.stats.run_reads += 1;
        let pages: Vec<Page> = buf
            .chunks(self.page_size)
            .zip(first..)
            .filter(|(_, id)| self.loc(*id) == Loc::Home || self.home_current.contains(id))
            .filter(|(b, id)| self.sealed.as_written(*id, b))
            .filter_map(|(b, id)| Page::from_bytes(b.into(), id).ok())
            .collect();
        self.stats.run_pages += pages.len() as u64;
        Ok(pages)
    }

    fn set_write_size(&mut self, bytes: u64) {
        self.write_size = bytes.max(self.page_size as u64);
    }

    fn needs_merge(&self, _: &Disk, _: PageId, _: &Frame) -> bool {
        false
    }

    fn write(&mut self, disk: &mut Disk, frames: &mut [(PageId, Frame)]) -> Result<()> {
        let mut at = Vec::with_capacity(frames.len());
        self.writing = frames.iter().map(|(id, _)| *id).collect();
        for (id, f) in frames.iter_mut() {
            debug_assert!(f.dirty, "page {id}: only changed pages are written");
            let to = self.target(disk, *id, f.page.kind())?;
            self.place(*id, to, false);
            f.page.seal();
            at.push(self.offset(to, *id));
        }
        self.writing.clear();
        // The sealed images are written from the frames, not copied.
        let pages = frames
            .iter()
            .zip(at)
            .map(|((id, f), off)| (off, *id, f.page.bytes()))
            .collect();
        self.write_pages(disk, pages)?;
        for (_, f) in frames.iter_mut() {
            f.clean();
        }
        Ok(())
    }

    /// Reads back the pages written since the last checkpoint where they
    /// live now.
    fn verify(&mut self, disk: &mut Disk) -> Result<()> {
        for id in self.sealed.take_unverified() {
            let page = (id, self.offset(self.loc(id), id), self.page_size);
            self.sealed.read_back(disk, page, READS)?;
        }
        Ok(())
    }

    fn set_ceiling(&mut self, bytes: u64, next_page: PageId) -> Result<()> {
        let top = self.region_start + bytes;
        let ps = self.page_size as u64;
        let homes = (top.saturating_sub(self.home_start) / ps).min(self.home_region);
        let slots = (top.saturating_sub(self.slot_start) / ps).min(self.slots.len() as u64) as u32;
        let busy = |s: usize| self.slots[s].is_some() || self.ckpt[s].is_some();
        if next_page > homes || (slots as usize..self.slots.len()).any(busy) {
            return Err(Error::Full("page store (the log lies above it)"));
        }
        self.homes = homes;
        self.usable = slots;
        self.free.retain(|&s| s < slots);
        self.free.extend((0..slots).filter(|&s| !busy(s as usize)));
        Ok(())
    }

    fn encode_state(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.push(MAP_VERSION);
        for v in [
            self.fast_range.start,
            self.fast_range.end,
            self.slow_range.start,
            self.slow_range.end,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.on_fast.len() as u32).to_le_bytes());
        for (s, id) in self.slots.iter().enumerate() {
            if let Some(id) = id {
                out.extend_from_slice(&(s as u32).to_le_bytes());
                out.extend_from_slice(&id.to_le_bytes());
            }
        }
        assert_eq!(
            out.len() - start,
            MAP_HDR + self.on_fast.len() * ENTRY,
            "every page on the fast device is in one slot"
        );
    }

    fn checkpointed(&mut self) {
        Tiered::checkpointed(self);
    }

    fn replay(&mut self, _: &mut Disk, seq: u64, _: u8, _: &[u8]) -> Result<()> {
        Err(corrupt(
            Structure::LogRecord,
            Location::Record(seq),
            "the two-device store logs no records of its own",
        ))
    }

    fn stats(&self) -> StoreStats {
        StoreStats {
            fast_pages: self.on_fast.len() as u64,
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn span() -> Span {
        Span {
            region: 1 << 20..(64 << 20),
            fast: 0..(8 << 20),
            slow: (8 << 20)..(64 << 20),
        }
    }

    fn store(state: &[u8]) -> Result<Tiered> {
        Tiered::new(Placement::HotCold, span(), 4096, 128 << 10, 100, state)
    }

    proptest! {
        /// A checkpoint's map, whatever its bytes, restores or is refused.
        #[test]
        fn the_map_decoder_survives_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = store(&bytes);
        }
    }

    #[test]
    fn the_map_round_trips_and_names_the_pair() {
        let mut s = store(&[]).unwrap();
        for (id, slot) in [(5u64, 0u32), (9, 3), (1, 7)] {
            s.place(id, Loc::Slot(slot), false);
        }
        let mut out = Vec::new();
        s.encode_state(&mut out);
        let t = store(&out).unwrap();
        assert_eq!(t.on_fast, s.on_fast);
        assert_eq!(t.slots, t.ckpt, "what a checkpoint names is kept");
        assert!(!t.free.contains(&3) && t.free.contains(&4));
        // Another pair's layout is refused, and so is a repeated slot.
        let other = Span {
            fast: 0..(4 << 20),
            ..span()
        };
        let e = Tiered::new(Placement::HotCold, other, 4096, 128 << 10, 100, &out);
        assert!(matches!(e, Err(Error::InvalidOption { .. })));
        let mut dup = out.clone();
        let n = dup.len();
        dup[n - ENTRY..n - ENTRY + 4].copy_from_slice(&0u32.to_le_bytes());
        assert!(matches!(store(&dup), Err(Error::Corrupt { .. })));
    }
}
