//! The data cache at work: host writes into DRAM, dirty pages destaged to
//! flash in the background, FLUSH waiting for the destage.
//!
//! Background work is booked lazily but in time order: before a command
//! issued at `at` is served, every destage the cache would have started by
//! then (its data in DRAM and its die free) is booked, so a read arriving
//! while dies are idle finds them destaging what they would have, and a
//! read arriving first goes ahead of destages that would start after it.
//! Its garbage collection and map updates go with it. The NAND energy of
//! background work is charged to the next command's completion.

use super::cache::{Slot, Wrote};
use super::PageFtl;
use crate::array::Cost;
use crate::ftl::internal;
use crate::{CachePolicy, DeviceStats, Nanos, Result};

impl PageFtl {
    /// Books the destages that start by `at` (all of them, if `all`).
    pub(super) fn destage(&mut self, at: Nanos, all: bool, st: &mut DeviceStats) -> Result<()> {
        if self.cache.is_none() {
            return Ok(());
        }
        let mut bg = Cost::new(at);
        while let Some((u, s, ready)) = self.next_destage() {
            let start = ready.max(self.array.free_at(u));
            if !all && start > at {
                break;
            }
            self.destage_page(u, s, ready, st, &mut bg)?;
        }
        self.end_round(at, st, &mut bg)?;
        if let Some(c) = self.cache.as_mut() {
            c.retire(at);
        }
        Ok(())
    }

    /// Ends a round of work: queued programs issued, translation pages
    /// written back; the background energy is kept for the next command.
    fn end_round(&mut self, t: Nanos, st: &mut DeviceStats, bg: &mut Cost) -> Result<()> {
        self.flush_all(st, bg);
        self.write_back_all(t, st, bg)?;
        self.flush_all(st, bg);
        self.background_nj += bg.energy();
        Ok(())
    }

    /// The dirty page whose destage would start first: (die, page, ready).
    fn next_destage(&mut self) -> Option<(usize, Slot, Nanos)> {
        let cache = self.cache.as_mut()?;
        let mut best: Option<(Nanos, usize, Slot, Nanos)> = None;
        for u in 0..self.groups.len() {
            if let Some((s, ready)) = cache.head(u) {
                let start = ready.max(self.array.free_at(u));
                if best.is_none_or(|b| start < b.0) {
                    best = Some((start, u, s, ready));
                }
            }
        }
        best.map(|(_, u, s, ready)| (u, s, ready))
    }

    /// Books the program of dirty page `s` (on die `u`, in DRAM at `ready`).
    fn destage_page(
        &mut self,
        u: usize,
        s: Slot,
        ready: Nanos,
        st: &mut DeviceStats,
        bg: &mut Cost,
    ) -> Result<()> {
        if let Some(c) = self.cache.as_mut() {
            c.booked(u, s);
        }
        st.ftl.cache_destages += 1;
        let t = self.translate(s.lpn, true, ready, st, bg);
        self.program_page(s.lpn, t, Some(s), st, bg)
    }

    /// Waits from `t` until DRAM has room for `lpn`, destaging early if
    /// nothing else would free a page; returns when it has.
    fn admit(&mut self, lpn: u32, t: Nanos, st: &mut DeviceStats) -> Result<Nanos> {
        let mut now = t;
        loop {
            let cache = self
                .cache
                .as_mut()
                .ok_or_else(|| internal("no data cache"))?;
            cache.retire(now);
            if cache.room_for(lpn) {
                return Ok(now);
            }
            if let Some(end) = cache.next_end() {
                now = now.max(end);
                continue;
            }
            // Every page dirty and none booked: book the first destage now.
            let (u, s, ready) = self
                .next_destage()
                .ok_or_else(|| internal("a full data cache with nothing to destage"))?;
            let mut bg = Cost::new(now);
            self.destage_page(u, s, ready, st, &mut bg)?;
            self.end_round(now, st, &mut bg)?;
        }
    }

    /// Writes one page of a host write, its data at the controller at
    /// `ready`, through the data cache; returns when the write of it is
    /// done as the host sees it.
    pub(super) fn cached_write(
        &mut self,
        lpn: u32,
        ready: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Result<Nanos> {
        let slot_free = self.admit(lpn, ready, st)?;
        let ds = self.dram.book(slot_free, self.dram_page_ns);
        let de = ds + self.dram_page_ns;
        cost.busy(ds, de);
        st.ftl.cache_writes += 1;
        let u = self.unit(lpn);
        let through = self.policy == CachePolicy::WriteThrough;
        let cache = self
            .cache
            .as_mut()
            .ok_or_else(|| internal("no data cache"))?;
        if through {
            let s = cache.write_through(lpn);
            let t = self.translate(lpn, true, de, st, cost);
            self.program_page(lpn, t, Some(s), st, cost)?;
        } else if cache.write(lpn, u, de) == Wrote::Absorbed {
            st.ftl.cache_write_hits += 1;
        }
        Ok(de)
    }

    /// Reads `bytes` of `lpn` from DRAM if the cache holds it, from `t`;
    /// whether it did (the data then goes to the host).
    pub(super) fn cached_read(
        &mut self,
        lpn: u32,
        t: Nanos,
        bytes: u64,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> bool {
        let Some(cache) = self.cache.as_mut() else {
            return false;
        };
        if !cache.read_hit(lpn) {
            return false;
        }
        st.ftl.cache_read_hits += 1;
        let dur = crate::sim::transfer_ns(bytes, self.cache_mb_per_s);
        let ds = self.dram.book(t, dur);
        cost.busy(ds, ds + dur);
        self.send_to_host(ds + dur, bytes, cost);
        true
    }

    /// Whether the cache holds `lpn` (a partial write then merges in DRAM).
    pub(super) fn cached(&self, lpn: u32) -> bool {
        self.cache.as_ref().is_some_and(|c| c.contains(lpn))
    }

    /// FLUSH: every dirty page destaged; returns when the last program
    /// booked ends (`at` if nothing is pending).
    pub(super) fn flush_cache(&mut self, at: Nanos, st: &mut DeviceStats) -> Result<Nanos> {
        self.destage(at, true, st)?;
        let Some(cache) = self.cache.as_mut() else {
            return Ok(at);
        };
        debug_assert!(!cache.has_dirty(), "a flush leaves nothing dirty");
        Ok(cache.last_end().unwrap_or(at).max(at))
    }

    /// Drops trimmed page `lpn` from the cache.
    pub(super) fn uncache(&mut self, lpn: u32) {
        if let Some(c) = self.cache.as_mut() {
            c.drop_page(lpn);
        }
    }

    /// The caches' own consistency.
    pub(super) fn check_caches(&self) -> std::result::Result<(), String> {
        if let Some(c) = &self.cmt {
            c.check()?;
        }
        if let Some(c) = &self.cache {
            c.check()?;
        }
        Ok(())
    }
}
