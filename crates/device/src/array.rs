//! The timing and energy side of NAND flash, shared by the raw NAND and FTL
//! models: dies with their own busy times sharing channel buses
//! ([`NandArray`]), busy intervals of a shared resource ([`Timeline`]) and
//! what an operation cost ([`Cost`]).

use std::collections::BTreeMap;

use crate::sim::{transfer_ns, us};
use crate::spec::require;
use crate::{Completion, DeviceStats, Nanos, Result};

/// A shared resource (a channel bus, a host link) as the intervals it is
/// busy. A transfer takes the first gap long enough for it, so a request
/// whose data is ready early is not held behind one submitted before it
/// whose data is ready later. Intervals are kept by start (sorted and
/// apart, so their ends are sorted too): booking costs a logarithm of how
/// many there are, however far ahead background work has booked.
#[derive(Default)]
pub(crate) struct Timeline {
    busy: BTreeMap<Nanos, Nanos>,
}

impl Timeline {
    /// Books `dur` at the earliest time at or after `t`; returns its start.
    pub fn book(&mut self, t: Nanos, dur: Nanos) -> Nanos {
        if dur == 0 {
            return t;
        }
        let mut start = t;
        // The interval under `t`, if any, then those after it in turn.
        if let Some((_, &e)) = self.busy.range(..=start).next_back() {
            start = start.max(e);
        }
        while let Some((&s, &e)) = self.busy.range(start..).next() {
            if s >= start + dur {
                break;
            }
            start = e;
        }
        let end = start + dur;
        debug_assert!(start >= t, "a booking never starts before it was asked for");
        // Merge with touching neighbours to keep the map small.
        let prev = self
            .busy
            .range(..start)
            .next_back()
            .filter(|&(_, &e)| e == start)
            .map(|(&s, _)| s);
        let next_end = self.busy.remove(&end);
        let merged_end = next_end.unwrap_or(end);
        match prev {
            Some(s) => {
                self.busy.insert(s, merged_end);
            }
            None => {
                self.busy.insert(start, merged_end);
            }
        }
        debug_assert!(
            self.apart_near(start),
            "busy intervals stay sorted and apart"
        );
        start
    }

    /// Whether the intervals around `t` are non-empty and apart.
    fn apart_near(&self, t: Nanos) -> bool {
        let before = self.busy.range(..t).next_back();
        let after = self.busy.range(t..).take(2);
        let near: Vec<(Nanos, Nanos)> = before
            .into_iter()
            .chain(after)
            .map(|(&s, &e)| (s, e))
            .collect();
        near.iter().all(|&(s, e)| s < e) && near.windows(2).all(|w| w[0].1 < w[1].0)
    }

    /// Forgets intervals that end by `t`: nothing is booked before the
    /// time of the command being served.
    pub fn forget_before(&mut self, t: Nanos) {
        while let Some(entry) = self.busy.first_entry() {
            if *entry.get() > t {
                break;
            }
            entry.remove();
        }
    }
}

/// The timing and energy side of a NAND array: dies with their own busy
/// timelines, sharing channel buses. Used by the raw NAND and FTL models.
pub(crate) struct NandArray {
    channels: usize,
    unit_free: Vec<Nanos>,
    chans: Vec<Timeline>,
    page_size: u64,
    read_ns: Nanos,
    program_ns: Nanos,
    erase_ns: Nanos,
    bus_mb_per_s: f64,
    page_xfer_ns: Nanos,
    read_nj: u64,
    program_nj: u64,
    erase_nj: u64,
}

/// The NAND side of a model's parameters, validated into a [`NandArray`].
pub(crate) struct ArraySpec<'a> {
    pub kind: &'a str,
    pub page_size: u64,
    pub pages_per_block: u64,
    pub sector_size: u64,
    pub read_us: f64,
    pub program_us: f64,
    pub erase_us: f64,
    pub bus_mb_per_s: f64,
    pub channels: u32,
    pub dies_per_channel: u32,
    pub read_uj: f64,
    pub program_uj: f64,
    pub erase_uj: f64,
}

fn non_negative(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

fn nj(uj: f64) -> u64 {
    (uj * 1000.0).round() as u64
}

impl ArraySpec<'_> {
    pub fn build(&self) -> Result<NandArray> {
        let k = self.kind;
        require(
            self.sector_size.is_power_of_two() && self.sector_size <= u64::from(u32::MAX / 2 + 1),
            &format!("{k}: sector_size must be a power of two of at most 2 GiB"),
        )?;
        require(
            self.page_size > 0 && self.page_size % self.sector_size == 0,
            &format!("{k}: page_size must be a positive multiple of sector_size"),
        )?;
        require(
            self.pages_per_block > 0,
            &format!("{k}: pages_per_block must be at least 1"),
        )?;
        require(
            self.channels > 0
                && self.dies_per_channel > 0
                && u64::from(self.channels) * u64::from(self.dies_per_channel) <= 1 << 16,
            &format!("{k}: channels and dies_per_channel must be at least 1, with at most 65536 dies in all"),
        )?;
        require(
            [self.read_us, self.program_us, self.erase_us]
                .into_iter()
                .all(non_negative),
            &format!("{k}: read_us, program_us and erase_us must be finite and not negative"),
        )?;
        require(
            non_negative(self.bus_mb_per_s),
            &format!(
                "{k}: bus_mb_per_s must be finite and not negative (0 = included in the op times)"
            ),
        )?;
        require(
            [self.read_uj, self.program_uj, self.erase_uj]
                .into_iter()
                .all(non_negative),
            &format!("{k}: read_uj, program_uj and erase_uj must be finite and not negative"),
        )?;
        let units = self.channels as usize * self.dies_per_channel as usize;
        let mut a = NandArray {
            channels: self.channels as usize,
            unit_free: vec![0; units],
            chans: (0..self.channels).map(|_| Timeline::default()).collect(),
            page_size: self.page_size,
            read_ns: us(self.read_us),
            program_ns: us(self.program_us),
            erase_ns: us(self.erase_us),
            bus_mb_per_s: self.bus_mb_per_s,
            page_xfer_ns: 0,
            read_nj: nj(self.read_uj),
            program_nj: nj(self.program_uj),
            erase_nj: nj(self.erase_uj),
        };
        a.page_xfer_ns = a.xfer(self.page_size);
        Ok(a)
    }
}

/// What an operation has cost so far: the span it kept resources busy and
/// the NAND energy it used.
pub(crate) struct Cost {
    start: Nanos,
    end: Nanos,
    energy_nj: u64,
}

impl Cost {
    pub fn new(at: Nanos) -> Self {
        Cost {
            start: Nanos::MAX,
            end: at,
            energy_nj: 0,
        }
    }

    /// Records that a resource worked on the operation from `s` to `e`.
    pub fn busy(&mut self, s: Nanos, e: Nanos) {
        debug_assert!(s <= e, "busy from {s} to {e}: ends before it starts");
        self.start = self.start.min(s);
        self.end = self.end.max(e);
    }

    pub fn end(&self) -> Nanos {
        self.end
    }

    /// NAND energy spent so far.
    pub fn energy(&self) -> u64 {
        self.energy_nj
    }

    /// Adds energy spent on the operation's behalf elsewhere.
    pub fn add_energy(&mut self, nj: u64) {
        self.energy_nj += nj;
    }

    pub fn completion(self) -> Completion {
        debug_assert!(self.start == Nanos::MAX || self.start <= self.end);
        Completion {
            start: self.start.min(self.end),
            end: self.end,
            energy_nj: self.energy_nj,
        }
    }
}

impl NandArray {
    pub fn units(&self) -> usize {
        self.unit_free.len()
    }

    /// Called with the issue time of each command (issue times do not go back).
    pub fn forget_before(&mut self, t: Nanos) {
        for c in &mut self.chans {
            c.forget_before(t);
        }
    }

    fn xfer(&self, bytes: u64) -> Nanos {
        if self.bus_mb_per_s == 0.0 {
            0
        } else if bytes == self.page_size && self.page_xfer_ns != 0 {
            self.page_xfer_ns
        } else {
            transfer_ns(bytes, self.bus_mb_per_s)
        }
    }

    /// When `unit` is done with everything booked on it so far.
    pub fn free_at(&self, unit: usize) -> Nanos {
        self.unit_free[unit]
    }

    /// Reads a page on `unit` no earlier than `t` and moves `bytes` of it
    /// over the channel; returns when they are out.
    pub fn read(
        &mut self,
        unit: usize,
        t: Nanos,
        bytes: u64,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        let mut ready = [0];
        self.read_planes(unit, t, &[bytes], &mut ready, st, cost);
        ready[0]
    }

    /// Reads one page on each of `bytes.len()` planes of `unit` at once (a
    /// multi-plane read: one array read), no earlier than `t`, then moves
    /// `bytes[i]` of page `i` over the channel, one after the other;
    /// `ready[i]` is when page `i` is out.
    pub fn read_planes(
        &mut self,
        unit: usize,
        t: Nanos,
        bytes: &[u64],
        ready: &mut [Nanos],
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        assert_eq!(bytes.len(), ready.len(), "a ready time per page");
        debug_assert!(
            bytes.iter().all(|&b| b > 0 && b <= self.page_size),
            "a read moves part of one page"
        );
        let c = unit % self.channels;
        let s = t.max(self.unit_free[unit]);
        let mut e = s + self.read_ns;
        for (i, &b) in bytes.iter().enumerate() {
            let dur = self.xfer(b);
            e = self.chans[c].book(e, dur) + dur;
            ready[i] = e;
        }
        debug_assert!(e >= s + self.read_ns);
        self.unit_free[unit] = e;
        let n = bytes.len() as u64;
        st.nand_page_reads += n;
        st.ftl.multi_plane_ops += u64::from(n > 1);
        cost.energy_nj += self.read_nj * n;
        cost.busy(s, e);
    }

    /// Moves `bytes` over the channel to `unit` once they are available at
    /// `t`, then programs the page; returns when the program is done.
    pub fn program(
        &mut self,
        unit: usize,
        t: Nanos,
        bytes: u64,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        self.program_planes(unit, &[(t, bytes)], st, cost)
    }

    /// Programs one page on each of `pages.len()` planes of `unit` at once
    /// (a multi-plane program: one program time): page `i`'s `bytes` cross
    /// the channel once they are available at its `t` and the die is free,
    /// one after the other, then all are programmed. Returns when they are.
    pub fn program_planes(
        &mut self,
        unit: usize,
        pages: &[(Nanos, u64)],
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        assert!(!pages.is_empty(), "a program writes a page");
        debug_assert!(
            pages.iter().all(|&(_, b)| b > 0 && b <= self.page_size),
            "a program writes part of one page"
        );
        let c = unit % self.channels;
        let mut at = self.unit_free[unit];
        let mut first = None;
        for &(t, bytes) in pages {
            let dur = self.xfer(bytes);
            let s = self.chans[c].book(t.max(at), dur);
            debug_assert!(s >= t, "a program starts once its data is there");
            first.get_or_insert(s);
            at = s + dur;
            st.nand_program_bytes += bytes;
        }
        let e = at + self.program_ns;
        self.unit_free[unit] = e;
        let n = pages.len() as u64;
        st.nand_page_programs += n;
        st.ftl.multi_plane_ops += u64::from(n > 1);
        cost.energy_nj += self.program_nj * n;
        cost.busy(first.unwrap_or(at), e);
        e
    }

    /// Copies a page within `unit` (copy-back: read then program, no bus).
    pub fn copy(&mut self, unit: usize, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Nanos {
        debug_assert!(unit < self.units(), "die {unit} of {}", self.units());
        let s = t.max(self.unit_free[unit]);
        let e = s + self.read_ns + self.program_ns;
        self.unit_free[unit] = e;
        st.nand_page_reads += 1;
        st.nand_page_programs += 1;
        st.nand_program_bytes += self.page_size;
        cost.energy_nj += self.read_nj + self.program_nj;
        cost.busy(s, e);
        e
    }

    /// Erases a block on `unit` (counted by the caller, which knows the block).
    pub fn erase(&mut self, unit: usize, t: Nanos, st: &mut DeviceStats, cost: &mut Cost) -> Nanos {
        self.erase_planes(unit, 1, t, st, cost)
    }

    /// Erases a block on each of `planes` planes of `unit` at once (a
    /// multi-plane erase: one erase time; the caller counts the blocks).
    pub fn erase_planes(
        &mut self,
        unit: usize,
        planes: u32,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        debug_assert!(unit < self.units(), "die {unit} of {}", self.units());
        assert!(planes >= 1, "an erase erases a block");
        let s = t.max(self.unit_free[unit]);
        let e = s + self.erase_ns;
        self.unit_free[unit] = e;
        st.block_erases += u64::from(planes);
        st.ftl.multi_plane_ops += u64::from(planes > 1);
        cost.energy_nj += self.erase_nj * u64::from(planes);
        cost.busy(s, e);
        e
    }
}

/// Sizes the per-block erase counters; the stats start empty and only a
/// model knows how many blocks it has.
pub(crate) fn size_erase_counts(st: &mut DeviceStats, blocks: usize) {
    st.erase_counts.set_units(blocks as u64);
}

/// The pieces `[offset, offset+len)` falls into, one per page of
/// `page_size` bytes: `(piece offset, piece length)`.
pub(crate) fn page_pieces(
    offset: u64,
    len: u64,
    page_size: u64,
) -> impl Iterator<Item = (u64, u64)> {
    assert!(page_size > 0, "pages have a size");
    let end = offset + len;
    let mut pos = offset;
    std::iter::from_fn(move || {
        (pos < end).then(|| {
            let n = ((pos / page_size + 1) * page_size).min(end) - pos;
            debug_assert!(n > 0 && n <= page_size);
            let piece = (pos, n);
            pos += n;
            piece
        })
    })
}
