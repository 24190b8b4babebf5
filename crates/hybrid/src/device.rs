//! [`HybridDevice`]: the block device and its read, write and trim paths.

use flashkv_device::{BlockDevice, Completion, DeviceStats, Geometry, Nanos};

use crate::append::Log;
use crate::error::{HybridError, Result};
use crate::flush::Budget;
use crate::layout::Layout;
use crate::maps::{decode, Maps};
use crate::options::Options;
use crate::record::{max_extents, Kind};
use crate::route::{HotReads, Route, Router};
use crate::stats::{HybridStats, RecoveryReport};

/// HeteroDrive: an SSD used as a log-structured write cache and read cache in
/// front of an HDD, seen as one block device with the HDD's capacity.
///
/// Small random writes are appended to the SSD's cache region; large or
/// sequential writes go to the HDD; reads are served from wherever the newest
/// copy lives; a flush worker writes dirty data back to the HDD in sector order
/// when the device is idle (an operation issued later than the device's clock)
/// or when the dirty part of the cache passes the high watermark.
///
/// Durability: after [`BlockDevice::flush_at`] completes, every write issued
/// before it survives power loss; [`HybridDevice::open`] replays the log.
pub struct HybridDevice {
    pub(crate) ssd: Box<dyn BlockDevice>,
    pub(crate) hdd: Box<dyn BlockDevice>,
    pub(crate) layout: Layout,
    pub(crate) opts: Options,
    pub(crate) maps: Maps,
    pub(crate) log: Log,
    router: Router,
    hot: HotReads,
    clock: Nanos,
    /// When background work (flushes, promotions) last keeps a device busy.
    pub(crate) bg_until: Nanos,
    host: DeviceStats,
    pub(crate) st: HybridStats,
    /// Cached units, and how many are unflushed.
    pub(crate) counts: crate::maps::Counts,
    /// The flush worker's round in progress.
    pub(crate) round: Option<crate::flush::Round>,
    /// When debug builds check the maps after a round.
    pub(crate) audit: crate::check::Audit,
    /// Set when the dirty span passes the high watermark, cleared below the low one.
    pressure: bool,
    /// Set after a write outside the log: the next record starts on a boundary.
    pub(crate) realign: bool,
    pub(crate) costs: crate::flush::ReadCosts,
    /// The sector the host sees: the devices' larger one. A write that
    /// covers a 4 KiB mapping unit only in part is cached sector-exact.
    pub(crate) host_sector: u64,
}

/// Start, end and energy of several device operations making up one.
pub(crate) struct Span {
    start: Nanos,
    end: Nanos,
    energy_nj: u64,
}

impl Span {
    pub(crate) fn new(at: Nanos) -> Self {
        Span {
            start: Nanos::MAX,
            end: at,
            energy_nj: 0,
        }
    }
    pub(crate) fn add(&mut self, c: Completion) {
        debug_assert!(c.start <= c.end, "a completion ends after it starts");
        self.start = self.start.min(c.start);
        self.end = self.end.max(c.end);
        self.energy_nj += c.energy_nj;
    }
    pub(crate) fn done(self, at: Nanos) -> Completion {
        Completion {
            start: if self.start == Nanos::MAX {
                at
            } else {
                self.start
            },
            end: self.end,
            energy_nj: self.energy_nj,
        }
    }
}

impl HybridDevice {
    pub(crate) fn assemble(
        ssd: Box<dyn BlockDevice>,
        hdd: Box<dyn BlockDevice>,
        layout: Layout,
        opts: Options,
        log: Log,
    ) -> Result<Self> {
        opts.validate(layout.sector)?;
        let slots = u32::try_from(layout.map_slots)
            .map_err(|_| HybridError::Layout("mapping region too large".into()))?;
        let tabs = crate::tablets::Tablets::new(layout.map_start, slots, opts.resident_tablets());
        let host_sector = u64::from(ssd.geometry().sector_size.max(hdd.geometry().sector_size));
        // A copy's missing mask has one bit per host sector of a unit.
        if layout.sector / host_sector > 8 {
            return Err(HybridError::Layout(format!(
                "host sectors of {host_sector} bytes: at most 8 per {} byte unit",
                layout.sector
            )));
        }
        debug_assert_eq!(
            layout.sector % host_sector,
            0,
            "a unit holds whole host sectors"
        );
        Ok(HybridDevice {
            router: Router::new(opts.size_threshold, opts.seq_threshold),
            hot: HotReads::new(opts.promote_after, opts.promote_table),
            clock: ssd.clock().max(hdd.clock()),
            bg_until: 0,
            host: DeviceStats::default(),
            st: HybridStats {
                cache_bytes: layout.cache_sectors * layout.sector,
                ..HybridStats::default()
            },
            counts: crate::maps::Counts::new(layout.cache_sectors),
            round: None,
            audit: crate::check::Audit::new(
                layout.cache_sectors,
                layout.map_slots,
                opts.round_bytes / layout.sector,
            ),
            pressure: false,
            realign: true,
            costs: crate::flush::ReadCosts::default(),
            host_sector,
            maps: Maps::new(tabs, layout.cache_sectors),
            ssd,
            hdd,
            layout,
            opts,
            log,
        })
    }

    /// The SSD and HDD underneath, for their own counters.
    pub fn devices(&self) -> (&dyn BlockDevice, &dyn BlockDevice) {
        (&*self.ssd, &*self.hdd)
    }

    /// Gives the two devices back as they are, without flushing anything: what
    /// a power cut leaves behind (acknowledged writes are already durable).
    pub fn into_devices(self) -> (Box<dyn BlockDevice>, Box<dyn BlockDevice>) {
        (self.ssd, self.hdd)
    }

    /// Where the superblocks, the mapping region and the cache are on the SSD.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The run-time policy the device was opened with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Counters specific to the hybrid.
    pub fn hybrid_stats(&self) -> HybridStats {
        let s = self.layout.sector;
        let mut st = self.st.clone();
        st.dirty_bytes = self.counts.dirty * s;
        st.cached_bytes = self.counts.cached * s;
        st.dirty_span_bytes = (self.log.head - self.log.flushed_tail) * s;
        let read = st.read_hit_bytes + st.read_miss_bytes;
        st.read_hit_ratio = if read == 0 {
            0.0
        } else {
            st.read_hit_bytes as f64 / read as f64
        };
        st.flush_mb_per_s = if st.flush_ns == 0 {
            0.0
        } else {
            st.flush_bytes as f64 * 1000.0 / st.flush_ns as f64
        };
        st.mapping_memory_bytes = self.maps.tabs.resident_bytes();
        st.tablet_loads = self.maps.tabs.loads;
        st.tablet_stores = self.maps.tabs.stores;
        st.checksum_memory_bytes = self.maps.crcs.bytes();
        st.checksum_rereads += self.maps.tabs.rereads;
        st
    }

    /// Records what recovery did; the device is usable from its end on.
    pub(crate) fn set_recovery(&mut self, r: RecoveryReport, end: Nanos) {
        self.st.recovery = Some(r);
        self.clock = self.clock.max(end);
    }

    /// Longest record the log takes, in data sectors.
    pub(crate) fn max_record(&self) -> u64 {
        let most = (self.layout.cache_sectors / 8).min(crate::record::MAX_EXTENT_LEN);
        debug_assert!(most >= 1, "a cache of at least 8 sectors");
        (self.opts.max_flush_write / self.layout.sector).clamp(1, most)
    }

    /// The missing mask of a copy holding none of its unit.
    pub(crate) fn full_mask(&self) -> u8 {
        debug_assert!(self.layout.sector / self.host_sector <= 8);
        ((1u16 << (self.layout.sector / self.host_sector)) - 1) as u8
    }

    /// Writes every dirty sector back to the HDD, starting at `at`; returns
    /// when it is durable there.
    pub fn drain(&mut self, at: Nanos) -> flashkv_device::Result<Completion> {
        let start = at.max(self.bg_until);
        let end = self.flush_work(start, Budget::All)?;
        let end = self.commit(end)?;
        // Everything is on the HDD and the superblock says so.
        debug_assert_eq!(self.counts.dirty, 0, "a drain leaves nothing dirty");
        debug_assert!(self.log.dirty_tail == self.log.head, "{:?}", self.log);
        self.bg_until = self.bg_until.max(end);
        self.clock = self.clock.max(end);
        Ok(Completion {
            start,
            end,
            energy_nj: 0,
        })
    }

    /// Runs the flush worker in the idle time before `at`.
    fn idle_work(&mut self, at: Nanos) -> Result<()> {
        let from = self.clock.max(self.bg_until) + self.opts.idle_threshold_ns;
        if at > from && self.log.head > self.log.flushed_tail {
            let end = self.flush_work(from, Budget::Until(at))?;
            self.bg_until = self.bg_until.max(end);
            self.st.idle_flushes += 1;
        }
        Ok(())
    }

    /// Between the watermarks the worker writes back twice what the host
    /// wrote, in the background, so the cache drains while writes continue.
    fn pressure(&mut self, at: Nanos, written: u64) -> Result<()> {
        let c = self.layout.cache_sectors as f64;
        let span = (self.log.head - self.log.flushed_tail) as f64;
        if span >= self.opts.high_watermark * c {
            self.pressure = true;
        } else if span <= self.opts.low_watermark * c {
            self.pressure = false;
        }
        if self.pressure {
            let end = self.flush_work(at.max(self.bg_until), Budget::Bytes(2 * written))?;
            self.bg_until = self.bg_until.max(end);
            self.st.pressure_flushes += 1;
        }
        Ok(())
    }

    /// Whether `home` has a dirty cached copy; a clean one is dropped, since
    /// the caller is about to write the sector on the HDD.
    fn dirty_or_drop(&mut self, t: &mut Nanos, home: u64) -> Result<bool> {
        let (m, mut io) = mio!(self, *t);
        let r = match decode(m.fwd_get(&mut io, home)?) {
            Some(e) if e.dirty => true,
            Some(e) => {
                m.fwd_clear(&mut io, home)?;
                m.rev_clear(&mut io, e.value)?;
                self.counts.remove(e);
                false
            }
            None => false,
        };
        *t = io.t;
        Ok(r)
    }

    /// Writes any range of whole host sectors. Units the write covers only
    /// in part are logged sector-exact (see `log_units`): serving a write
    /// never reads the HDD.
    pub(crate) fn write_inner(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        let len = buf.len() as u64;
        debug_assert!(offset % self.host_sector == 0 && len % self.host_sector == 0);
        self.idle_work(at)?;
        let u = self.layout.sector;
        let (first, end) = (offset / u, (offset + len).div_ceil(u));
        let mut t = at;
        let mut span = Span::new(at);
        // The router sees the units the write touches, as it did when partial
        // units were read-modify-written: a stream of small appends inside a
        // unit (a log's) is not a sequential run of whole units.
        let to_ssd = self.router.route(first * u, (end - first) * u) == Route::Ssd;
        // On the HDD route, units with a dirty cached copy stay in the cache,
        // so the newest copy of a sector is only ever in one place and
        // recovery never replays stale data over newer HDD data.
        let mut i = first;
        while i < end {
            let logged = to_ssd || self.dirty_or_drop(&mut t, i)?;
            let mut j = i + 1;
            while j < end && (to_ssd || self.dirty_or_drop(&mut t, j)? == logged) {
                j += 1;
            }
            let (lo, hi) = (offset.max(i * u), (offset + len).min(j * u));
            let piece = &buf[(lo - offset) as usize..(hi - offset) as usize];
            if logged {
                self.log_units(&mut t, lo, piece, &mut span)?;
            } else {
                span.add(self.hdd.write_at(t, lo, piece)?);
                self.st.hdd_write_requests += 1;
                self.st.hdd_write_bytes += piece.len() as u64;
            }
            i = j;
        }
        let c = span.done(at);
        self.clock = self.clock.max(c.end);
        self.pressure(at, len)?;
        Ok(c)
    }

    /// Reads whole mapping units; `host` reads may promote what they read.
    pub(crate) fn read_inner(
        &mut self,
        at: Nanos,
        offset: u64,
        buf: &mut [u8],
        host: bool,
    ) -> Result<Completion> {
        let len = buf.len() as u64;
        self.idle_work(at)?;
        let s = self.layout.sector;
        debug_assert!(offset % s == 0 && len % s == 0, "whole units");
        let (v, n) = (offset / s, len / s);
        let mut t = at;
        // Runs of units: (first unit index, count, cache slot or None for the HDD).
        let mut runs: Vec<(u64, u64, Option<u64>)> = Vec::new();
        // Units cached in part: read from the HDD, then their cached sectors
        // laid over: (unit index, slot, missing mask).
        let mut overlays: Vec<(u64, u64, u8)> = Vec::new();
        {
            let (m, mut io) = mio!(self, t);
            for i in 0..n {
                let slot = match decode(m.fwd_get(&mut io, v + i)?) {
                    Some(e) if e.missing != 0 => {
                        overlays.push((i, e.value, e.missing));
                        None
                    }
                    e => e.map(|e| e.value),
                };
                let extends = match (runs.last(), slot) {
                    (Some(&(_, _, None)), None) => true,
                    (Some(&(_, cnt, Some(first))), Some(x)) => x == first + cnt,
                    _ => false,
                };
                match runs.last_mut() {
                    Some(run) if extends => run.1 += 1,
                    _ => runs.push((i, 1, slot)),
                }
            }
            t = io.t;
        }
        debug_assert_eq!(
            runs.iter().map(|r| r.1).sum::<u64>(),
            n,
            "the runs cover the read"
        );
        let mut span = Span::new(at);
        for &(i, cnt, slot) in &runs {
            let part = &mut buf[(i * s) as usize..((i + cnt) * s) as usize];
            match slot {
                Some(slot) => {
                    span.add(self.read_units(t, slot, part)?);
                    self.st.read_hit_bytes += cnt * s;
                }
                None => {
                    span.add(self.hdd.read_at(t, (v + i) * s, part)?);
                    self.st.read_miss_bytes += cnt * s;
                }
            }
        }
        self.overlay(t, buf, &overlays, &mut span)?;
        let c = span.done(at);
        self.clock = self.clock.max(c.end);
        if host && self.opts.promote && self.hot.note(offset, len, len < self.opts.size_threshold) {
            self.promote(c.end, v, buf, &runs, &overlays)?;
        }
        Ok(c)
    }

    /// Copies the HDD runs of a read (units from `v`, data in `buf`) into the
    /// cache as clean records, in the background after `end`.
    fn promote(
        &mut self,
        end: Nanos,
        v: u64,
        buf: &[u8],
        runs: &[(u64, u64, Option<u64>)],
        overlays: &[(u64, u64, u8)],
    ) -> Result<()> {
        let s = self.layout.sector;
        let mut pt = end.max(self.bg_until);
        for &(i, cnt, slot) in runs {
            // A unit cached in part is dirty: a clean copy must not replace it.
            let mixed = overlays.iter().any(|o| (i..i + cnt).contains(&o.0));
            if slot.is_some() || mixed || cnt > self.max_record() {
                continue;
            }
            let part = &buf[(i * s) as usize..((i + cnt) * s) as usize];
            if let Some(pc) = self.append(&mut pt, Kind::Promote, vec![(v + i, cnt, 0)], part)? {
                self.bg_until = self.bg_until.max(pc.end);
                self.st.promotions += 1;
                self.st.promoted_bytes += cnt * s;
            }
        }
        Ok(())
    }

    /// Trims whole mapping units.
    pub(crate) fn trim_inner(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.idle_work(at)?;
        let s = self.layout.sector;
        debug_assert!(offset % s == 0 && len % s == 0, "whole units");
        let (v, n) = (offset / s, len / s);
        let mut t = at;
        let mut dirty: Vec<(u64, u64, u8)> = Vec::new();
        {
            let (m, mut io) = mio!(self, t);
            for home in v..v + n {
                if let Some(e) = decode(m.fwd_get(&mut io, home)?) {
                    m.fwd_clear(&mut io, home)?;
                    m.rev_clear(&mut io, e.value)?;
                    self.counts.remove(e);
                    if e.dirty {
                        match dirty.last_mut() {
                            Some((h, k, _)) if *h + *k == home => *k += 1,
                            _ => dirty.push((home, 1, 0)),
                        }
                    }
                }
            }
            t = io.t;
        }
        let mut span = Span::new(at);
        let c = self.hdd.trim_at(t, offset, len)?;
        span.add(c);
        if !dirty.is_empty() {
            // The trim record may only become durable after the HDD trim, or
            // recovery would expose HDD data older than the dropped copies.
            let f = self.hdd.flush_at(c.end)?;
            span.add(f);
            let mut tt = f.end;
            for chunk in dirty.chunks(max_extents(s)) {
                if let Some(c) = self.append(&mut tt, Kind::Trim, chunk.to_vec(), &[])? {
                    span.add(c);
                }
            }
        }
        let c = span.done(at);
        self.clock = self.clock.max(c.end);
        Ok(c)
    }
}

impl BlockDevice for HybridDevice {
    fn geometry(&self) -> Geometry {
        Geometry {
            sector_size: self.host_sector as u32,
            erase_unit: None,
            capacity: self.layout.capacity,
            program_once: false,
        }
    }

    fn read_at(
        &mut self,
        at: Nanos,
        offset: u64,
        buf: &mut [u8],
    ) -> flashkv_device::Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let c = self.read_range(at, offset, buf)?;
        self.st.read_requests += 1;
        self.host.host_reads += 1;
        self.host.host_read_bytes += buf.len() as u64;
        Ok(c)
    }

    fn write_at(
        &mut self,
        at: Nanos,
        offset: u64,
        buf: &[u8],
    ) -> flashkv_device::Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let c = self.write_range(at, offset, buf)?;
        self.host.host_writes += 1;
        self.host.host_write_bytes += buf.len() as u64;
        Ok(c)
    }

    /// Both devices flush in parallel; the log already holds everything needed
    /// to rebuild the mapping.
    fn flush_at(&mut self, at: Nanos) -> flashkv_device::Result<Completion> {
        self.idle_work(at)?;
        let mut span = Span::new(at);
        span.add(self.ssd.flush_at(at)?);
        span.add(self.hdd.flush_at(at)?);
        self.host.flushes += 1;
        let c = span.done(at);
        self.clock = self.clock.max(c.end);
        Ok(c)
    }

    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> flashkv_device::Result<Completion> {
        self.geometry().check(offset, len)?;
        let c = self.trim_range(at, offset, len)?;
        self.host.trims += 1;
        Ok(c)
    }

    fn clock(&self) -> Nanos {
        self.clock
    }

    /// Host counters of the hybrid; device-internal counters, busy time and
    /// energy summed over the SSD and HDD.
    fn stats(&self) -> DeviceStats {
        let (a, b) = (self.ssd.stats(), self.hdd.stats());
        DeviceStats {
            nand_page_reads: a.nand_page_reads + b.nand_page_reads,
            nand_page_programs: a.nand_page_programs + b.nand_page_programs,
            block_erases: a.block_erases + b.block_erases,
            gc_page_moves: a.gc_page_moves + b.gc_page_moves,
            nand_program_bytes: a.nand_program_bytes + b.nand_program_bytes,
            busy_ns: a.busy_ns + b.busy_ns,
            energy_nj: a.energy_nj + b.energy_nj,
            standby_ns: a.standby_ns + b.standby_ns,
            wakeups: a.wakeups + b.wakeups,
            wake_ns: a.wake_ns + b.wake_ns,
            ftl: a.ftl.plus(&b.ftl),
            erase_counts: a.erase_counts,
            ..self.host.clone()
        }
    }

    fn busy_until(&self) -> Nanos {
        self.clock
            .max(self.ssd.busy_until())
            .max(self.hdd.busy_until())
    }
    /// Both devices' energy, idle and standby power included.
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.ssd.energy_nj_until(t) + self.hdd.energy_nj_until(t)
    }
}
