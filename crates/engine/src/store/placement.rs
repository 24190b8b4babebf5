//! Where a two-device store wants each page: by its kind (the index on the
//! fast device, seed 002's "Index on SSD") or by what its reads and writes
//! have cost (hot/cold, after Koltsidas & Viglas, "Flashing up the storage
//! layer", VLDB 2008: read-intensive pages on flash, write-intensive ones
//! on disk, a page moved only when that pays for the move).
//!
//! Hot/cold keeps, for every page the store has read or written:
//! * its *regret*: what its I/O cost where it is, less what the same I/O
//!   would have cost on the other device, summed since it last moved and
//!   never below 0. A page moves once its regret exceeds the cost of
//!   writing it on the other device (the ski-rental rule: pay for a move
//!   only after losing as much by not moving, which costs at most twice
//!   the best offline choice);
//! * its *gain*: what the fast device saves on its I/O, halved every
//!   [`Heat::half_life`] store I/Os, which ranks pages when the fast device
//!   is full: a page takes the slot of the page that gains least, if it
//!   gains more.
//!
//! What an I/O costs on each device is the mean of what the store's own
//! reads and writes took there (device time), from class figures until a
//! device has served one of each.

use std::collections::HashMap;

use crate::page::PageId;

/// A device of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Fast = 0,
    Slow = 1,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Fast => Side::Slow,
            Side::Slow => Side::Fast,
        }
    }
}

/// A read or a write of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Io {
    Read = 0,
    Write = 1,
}

/// Nanoseconds per page I/O assumed before any is observed: a random 4 KiB
/// read and write on an SSD of seed 002's class (about 0.1 and 1 ms) and
/// on a 7,200 rpm disk (about 8 ms either way).
const PRIOR_NS: [[f64; 2]; 2] = [[100e3, 1e6], [8e6, 8e6]];

/// Page I/Os a cost is averaged over: the mean of the last so many,
/// roughly (an exponential moving average), so a device whose cost
/// changes (an SSD that wrote sequentially while loading and merges blocks
/// under random updates) is judged by what it does now, and a disk whose
/// reads now hit its track buffer and now seek is judged by their mix.
const WINDOW: f64 = 1024.0;

/// Mean device time per page I/O, by device and kind.
#[derive(Debug, Default)]
pub(crate) struct Costs {
    mean_ns: [[f64; 2]; 2],
    n: [[u64; 2]; 2],
}

impl Costs {
    /// `pages` pages were read or written on `side` in `ns` of device time.
    /// An untimed device (0 ns) teaches nothing.
    pub fn observe(&mut self, side: Side, io: Io, pages: u64, ns: u64) {
        let (s, i) = (side as usize, io as usize);
        if pages == 0 || ns == 0 {
            return;
        }
        self.n[s][i] += pages;
        // The first pages' plain mean, then a moving one.
        let w = (pages as f64 / (self.n[s][i] as f64).min(WINDOW)).min(1.0);
        let per_page = ns as f64 / pages as f64;
        self.mean_ns[s][i] += (per_page - self.mean_ns[s][i]) * w;
        debug_assert!(self.mean_ns[s][i] > 0.0, "a timed device costs time");
    }

    /// What one page I/O costs on `side`, in nanoseconds.
    pub fn of(&self, side: Side, io: Io) -> f64 {
        let (s, i) = (side as usize, io as usize);
        match self.n[s][i] {
            0 => PRIOR_NS[s][i],
            _ => self.mean_ns[s][i],
        }
    }
}

/// What the store knows of one page's I/O.
#[derive(Debug, Clone, Copy, Default)]
struct PageHeat {
    regret: f64,
    gain: f64,
    /// The tick `gain` was last decayed to.
    at: u64,
}

/// The hot/cold bookkeeping of every page read or written since open.
#[derive(Debug)]
pub(crate) struct Heat {
    pages: HashMap<PageId, PageHeat>,
    /// Store I/Os so far.
    tick: u64,
    /// Store I/Os over which a page's gain halves: about the time the fast
    /// device's contents take to turn over.
    half_life: f64,
    pub costs: Costs,
    /// State of the generator that samples victims (xorshift: a fixed
    /// sequence, so runs are deterministic).
    rng: u64,
}

/// Pages of the fast device looked at for a victim.
pub(crate) const SAMPLES: usize = 8;

impl Heat {
    pub fn new(fast_slots: u64) -> Heat {
        Heat {
            pages: HashMap::new(),
            tick: 0,
            half_life: fast_slots.max(64) as f64,
            costs: Costs::default(),
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// Page `id`, on `side`, was read or written: returns whether it should
    /// now move to the other device.
    pub fn note(&mut self, id: PageId, side: Side, io: Io) -> bool {
        self.tick += 1;
        let (here, there) = (self.costs.of(side, io), self.costs.of(side.other(), io));
        let saved = self.costs.of(Side::Slow, io) - self.costs.of(Side::Fast, io);
        let move_cost = self.costs.of(side.other(), Io::Write);
        let (tick, half) = (self.tick, self.half_life);
        let h = self.pages.entry(id).or_default();
        h.gain = decayed(h, tick, half) + saved;
        h.at = tick;
        h.regret = (h.regret + here - there).max(0.0);
        debug_assert!(
            h.regret.is_finite() && h.gain.is_finite(),
            "page {id}: finite heat"
        );
        h.regret > move_cost
    }

    /// Page `id` moved: its regret starts again.
    pub fn moved(&mut self, id: PageId) {
        if let Some(h) = self.pages.get_mut(&id) {
            h.regret = 0.0;
        }
    }

    /// What the fast device saves page `id` now (decayed).
    pub fn gain(&self, id: PageId) -> f64 {
        self.pages
            .get(&id)
            .map_or(0.0, |h| decayed(h, self.tick, self.half_life))
    }

    /// A number below `n` (n > 0), from a fixed sequence.
    pub fn sample(&mut self, n: usize) -> usize {
        assert!(n > 0, "a sample of something");
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % n as u64) as usize
    }
}

fn decayed(h: &PageHeat, tick: u64, half_life: f64) -> f64 {
    debug_assert!(tick >= h.at, "time runs forward");
    h.gain * 0.5f64.powf((tick - h.at) as f64 / half_life)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_start_from_the_class_figures_and_follow_what_is_seen() {
        let mut c = Costs::default();
        assert_eq!(c.of(Side::Slow, Io::Read), 8e6);
        c.observe(Side::Slow, Io::Read, 2, 10_000_000);
        assert_eq!(c.of(Side::Slow, Io::Read), 5e6);
        c.observe(Side::Slow, Io::Read, 2, 2_000_000);
        assert_eq!(
            c.of(Side::Slow, Io::Read),
            3e6,
            "the mean of the first pages"
        );
        for _ in 0..20_000 {
            c.observe(Side::Slow, Io::Read, 1, 1_000_000);
        }
        assert!(
            (c.of(Side::Slow, Io::Read) - 1e6).abs() < 1.0,
            "what it costs now"
        );
        // An untimed device (0 ns) leaves the class figure.
        c.observe(Side::Fast, Io::Write, 3, 0);
        assert_eq!(c.of(Side::Fast, Io::Write), 1e6);
    }

    #[test]
    fn a_read_mostly_page_moves_to_the_fast_device_after_paying_for_it() {
        let mut h = Heat::new(100);
        // Each slow read loses 7.9 ms against the fast device; a move costs
        // a fast write (1 ms): the first read already pays for it.
        assert!(h.note(1, Side::Slow, Io::Read));
        h.moved(1);
        // On the fast device reads are where they should be: no regret.
        for _ in 0..10 {
            assert!(!h.note(1, Side::Fast, Io::Read));
        }
        assert!(
            h.gain(1) > h.gain(2),
            "a page read gains more than one never seen"
        );
    }

    #[test]
    fn writes_on_a_device_that_writes_slowly_move_a_page_off_it() {
        let mut h = Heat::new(100);
        h.costs.observe(Side::Fast, Io::Write, 1, 20_000_000); // a low-end SSD
        h.costs.observe(Side::Slow, Io::Write, 1, 8_000_000);
        // Regret 12 ms a write; moving costs a slow write (8 ms).
        assert!(h.note(5, Side::Fast, Io::Write));
        assert!(h.gain(5) < 0.0, "the fast device costs this page time");
    }

    #[test]
    fn gain_halves_every_half_life() {
        let mut h = Heat::new(64);
        h.note(1, Side::Slow, Io::Read);
        let g = h.gain(1);
        for _ in 0..64 {
            h.note(2, Side::Slow, Io::Write);
        }
        assert!((h.gain(1) - g / 2.0).abs() < 1e-6 * g);
    }

    #[test]
    fn samples_stay_in_range_and_repeat_across_runs() {
        let (mut a, mut b) = (Heat::new(1), Heat::new(1));
        for n in 1..50 {
            let x = a.sample(n);
            assert!(x < n);
            assert_eq!(x, b.sample(n));
        }
    }
}
