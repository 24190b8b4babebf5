//! The flush worker (HeteroDrive §3.2). A round takes the records after the
//! last completed round, up to `round_bytes` of log, and sorts their dirty
//! sectors by home sector; the worker then issues them to the HDD in
//! increasing sector order, merging neighbours into writes of up to
//! `max_flush_write`, one write per step, so it can stop whenever its time is
//! up and continue later. The data comes from one read of the whole round or
//! from reads of each write's sectors, whichever the SSD serves faster.
//!
//! A sector written back is marked flushed but stays dirty (recovery would
//! still replay it, and new writes to it stay in the cache) until a commit:
//! both devices are made durable (the HDD for what was written back, the SSD
//! for the newer records of sectors the worker skipped as superseded), then a
//! superblock moves the durable tail past the rounds completed so far and
//! their sectors become clean. The log is only ever released behind durable
//! data. Commits happen when an eighth of the cache has been written back,
//! when a write needs the space, and on drain.

use flashkv_device::Nanos;

use crate::device::HybridDevice;
use crate::error::{HybridError, Result};
use crate::layout::Superblock;
use crate::maps::{decode, encode, encode_flushed};
use crate::record::Header;

/// How much the worker may do in one go.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Budget {
    /// Idle time: start writes only before the next request arrives at this time.
    Until(Nanos),
    /// At least this many bytes written back (one write at least).
    Bytes(u64),
    /// Until the dirty span is at most this many sectors.
    Span(u64),
    /// Everything.
    All,
}

type Todo = (u64, u64, Option<usize>, u8);

/// The round in progress.
pub(crate) struct Round {
    /// Its records: (log position, sectors).
    recs: Vec<(u64, u64)>,
    /// Log position just past it.
    end: u64,
    /// Dirty units still to write back, sorted: (home, slot, offset in
    /// `buf` when the round was read whole, missing mask).
    todo: Vec<Todo>,
    next: usize,
    buf: Vec<u8>,
    /// When `buf` was read.
    ready: Nanos,
}

/// What SSD reads cost, learned in virtual time: per byte of a large
/// sequential read, and per single-sector read. They decide whether a round
/// is read whole (an FTL SSD streams, but serves small reads one by one) or
/// sector by sector as it is written back (fewer bytes, and the reads overlap
/// the HDD writes).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReadCosts {
    seq_ns_per_byte: Option<f64>,
    sector_ns: Option<f64>,
}

impl ReadCosts {
    fn learn(slot: &mut Option<f64>, sample: f64) {
        *slot = Some(slot.map_or(sample, |v| 0.8 * v + 0.2 * sample));
    }
}

/// Reads at least this long teach the sequential cost.
const SEQ_SAMPLE: u64 = 256 << 10;
/// Smallest round gathered in idle time.
const MIN_IDLE_ROUND: u64 = 1 << 20;
/// Largest round read whole into memory: larger rounds (a round may span
/// the whole cache) read each write's sectors as it is written back, so
/// the worker's memory stays bounded whatever `round_bytes` is.
const MAX_WHOLE_READ: u64 = 64 << 20;

impl HybridDevice {
    /// Runs the worker from `start` within `budget`; returns when its last
    /// step completes (or `start` if it did nothing).
    pub(crate) fn flush_work(&mut self, start: Nanos, budget: Budget) -> Result<Nanos> {
        let mut ssd_t = start;
        let mut hdd_end = start;
        let mut bytes = 0;
        let mut did = false;
        loop {
            let stop = match budget {
                Budget::Until(deadline) => ssd_t.max(hdd_end) >= deadline,
                Budget::Bytes(b) => bytes >= b,
                Budget::Span(target) => self.log.head - self.log.flushed_tail <= target,
                Budget::All => false,
            };
            if stop {
                break;
            }
            let round = match self.round.take() {
                Some(r) => r,
                None if self.log.flushed_tail == self.log.head => break,
                None => {
                    let deadline = match budget {
                        Budget::Until(d) => Some(d),
                        _ => None,
                    };
                    self.gather(&mut ssd_t, deadline)?
                }
            };
            did = true;
            if round.next < round.todo.len() {
                let mut round = round;
                bytes += self.write_back(&mut round, &mut ssd_t, &mut hdd_end)?;
                self.round = Some(round);
            } else {
                let end = self.finish(round, ssd_t, hdd_end)?;
                ssd_t = end;
                hdd_end = end;
            }
        }
        let end = if did { ssd_t.max(hdd_end) } else { start };
        self.st.flush_ns += end - start;
        Ok(end)
    }

    /// Collects the next round, after the last completed one. In idle time
    /// (`deadline`) the round is cut so that reading it whole would take at
    /// most half the time left, leaving the rest for writing it back.
    fn gather(&mut self, t: &mut Nanos, deadline: Option<Nanos>) -> Result<Round> {
        let c = self.layout.cache_sectors;
        let s = self.layout.sector;
        let first = self.log.flushed_tail;
        self.probe(t, first)?;
        let mut limit = self.opts.round_bytes;
        if let (Some(d), Some(cost)) = (deadline, self.costs.seq_ns_per_byte) {
            let fits = (d.saturating_sub(*t) as f64 / 2.0 / cost.max(1e-3)) as u64;
            limit = limit.min(fits.max(MIN_IDLE_ROUND));
        }
        let limit = (limit / s).max(1);
        let (m, mut io) = mio!(self, *t);
        let mut recs = Vec::new();
        let mut end = first;
        while end < self.log.head && end - first < limit {
            match m.record_at(&mut io, end % c)? {
                Some(len) => {
                    recs.push((end, len));
                    end += len;
                }
                // A gap before a boundary.
                None => end = self.layout.next_boundary(end).min(self.log.head),
            }
        }
        let mut todo = Vec::new();
        let mut at = 0usize;
        for &(pos, len) in &recs {
            for j in 1..len {
                let slot = pos % c + j;
                if let Some(e) = decode(m.rev_get(&mut io, slot)?) {
                    if e.unflushed() {
                        todo.push((e.value, slot, Some(at + (j * s) as usize), e.missing));
                    }
                }
            }
            at += (len * s) as usize;
        }
        *t = io.t;
        debug_assert!(
            end <= self.log.head && end > first,
            "a round takes some of the log"
        );
        todo.sort_unstable();
        let mut round = Round {
            recs,
            end,
            todo,
            next: 0,
            buf: Vec::new(),
            ready: *t,
        };
        if self.read_whole(&round) {
            self.read_round(&mut round, t)?;
        } else {
            round.todo.iter_mut().for_each(|x| x.2 = None);
        }
        Ok(round)
    }

    /// Learns the SSD's read costs the first time, reading at the log
    /// position `pos` (which holds a record).
    fn probe(&mut self, t: &mut Nanos, pos: u64) -> Result<()> {
        let s = self.layout.sector;
        let c = self.layout.cache_sectors;
        if self.costs.sector_ns.is_none() {
            let mut b = vec![0u8; s as usize];
            let r = self
                .ssd
                .read_at(*t, self.layout.cache_offset(pos % c), &mut b)?;
            *t = (*t).max(r.end);
            ReadCosts::learn(&mut self.costs.sector_ns, (r.end - r.start) as f64);
        }
        if self.costs.seq_ns_per_byte.is_none() {
            let n = (SEQ_SAMPLE / s).min(c - pos % c);
            let mut b = vec![0u8; (n * s) as usize];
            let r = self
                .ssd
                .read_at(*t, self.layout.cache_offset(pos % c), &mut b)?;
            *t = (*t).max(r.end);
            let per_byte = (r.end - r.start) as f64 / b.len() as f64;
            ReadCosts::learn(&mut self.costs.seq_ns_per_byte, per_byte);
        }
        Ok(())
    }

    /// Whether reading the round whole is cheaper than reading its dirty
    /// sectors one by one (and fits the worker's buffer).
    fn read_whole(&self, round: &Round) -> bool {
        let span: u64 = round.recs.iter().map(|r| r.1 * self.layout.sector).sum();
        debug_assert!(round.todo.len() as u64 * self.layout.sector <= span);
        if span > MAX_WHOLE_READ {
            return false;
        }
        let whole = span as f64 * self.costs.seq_ns_per_byte.unwrap_or(0.0);
        let sectors = round.todo.len() as f64 * self.costs.sector_ns.unwrap_or(0.0);
        !round.todo.is_empty() && whole < sectors
    }

    /// Reads the round's records into its buffer, one read per run of adjacent records.
    fn read_round(&mut self, round: &mut Round, t: &mut Nanos) -> Result<()> {
        let s = self.layout.sector;
        let c = self.layout.cache_sectors;
        let recs = &round.recs;
        let span: u64 = recs.iter().map(|r| r.1 * s).sum();
        round.buf = vec![0u8; span as usize];
        let (mut i, mut at) = (0, 0usize);
        while i < recs.len() {
            let mut j = i + 1;
            let mut bytes = (recs[i].1 * s) as usize;
            while j < recs.len() && recs[j].0 == recs[j - 1].0 + recs[j - 1].1 && recs[j].0 % c != 0
            {
                bytes += (recs[j].1 * s) as usize;
                j += 1;
            }
            let offset = self.layout.cache_offset(recs[i].0 % c);
            let r = self
                .ssd
                .read_at(*t, offset, &mut round.buf[at..at + bytes])?;
            *t = (*t).max(r.end);
            if bytes as u64 >= SEQ_SAMPLE {
                ReadCosts::learn(
                    &mut self.costs.seq_ns_per_byte,
                    (r.end - r.start) as f64 / bytes as f64,
                );
            }
            at += bytes;
            i = j;
        }
        debug_assert_eq!(at, round.buf.len(), "the reads fill the round's buffer");
        round.ready = *t;
        Ok(())
    }

    /// Writes back the next run of neighbouring units still dirty; returns
    /// its bytes. Only the sectors a copy holds are written (a unit cached in
    /// part never needs the HDD read), one write per contiguous stretch.
    fn write_back(
        &mut self,
        round: &mut Round,
        ssd_t: &mut Nanos,
        hdd_end: &mut Nanos,
    ) -> Result<u64> {
        let s = self.layout.sector;
        let run = self.next_run(round, ssd_t)?;
        if run.is_empty() {
            return Ok(0);
        }
        let data = self.run_data(round, &run, ssd_t)?;
        let hs = self.host_sector as usize;
        let subs = s as usize / hs;
        let valid = |x: usize| run[x / subs].3 >> (x % subs) & 1 == 0;
        let (total, mut x, mut bytes) = (run.len() * subs, 0, 0);
        while x < total {
            if !valid(x) {
                x += 1;
                continue;
            }
            let mut y = x + 1;
            while y < total && valid(y) {
                y += 1;
            }
            let off = run[0].0 * s + (x * hs) as u64;
            let w = self.hdd.write_at(*ssd_t, off, &data[x * hs..y * hs])?;
            *hdd_end = (*hdd_end).max(w.end);
            bytes += ((y - x) * hs) as u64;
            self.st.flush_writes += 1;
            x = y;
        }
        debug_assert!(bytes > 0, "a run writes back at least a sector");
        let (m, mut io) = mio!(self, *ssd_t);
        for &(home, slot, _, missing) in &run {
            m.rev_set(&mut io, slot, encode_flushed(home, missing))?;
            m.fwd_set(&mut io, home, encode_flushed(slot, missing))?;
        }
        *ssd_t = io.t;
        self.counts.written_back(run.len() as u64);
        self.st.flush_bytes += bytes;
        Ok(bytes)
    }

    /// The next run of neighbouring units still dirty (host writes since the
    /// round was gathered may have superseded some). A unit joins the run
    /// only where the sectors held stay contiguous across the boundary.
    fn next_run(&mut self, round: &mut Round, ssd_t: &mut Nanos) -> Result<Vec<Todo>> {
        let max_run = (self.opts.max_flush_write / self.layout.sector).max(1) as usize;
        let full = self.full_mask();
        let top = full ^ (full >> 1);
        let mut run: Vec<Todo> = Vec::new();
        let (m, mut io) = mio!(self, *ssd_t);
        while round.next < round.todo.len() && run.len() < max_run {
            let (home, slot, _, missing) = round.todo[round.next];
            if run
                .last()
                .is_some_and(|&(h, _, _, pm)| home != h + 1 || pm & top != 0 || missing & 1 != 0)
            {
                break;
            }
            round.next += 1;
            let live =
                decode(m.rev_get(&mut io, slot)?).is_some_and(|e| e.value == home && e.unflushed());
            if live {
                run.push(round.todo[round.next - 1]);
            } else if !run.is_empty() {
                break;
            }
        }
        *ssd_t = io.t;
        debug_assert!(
            run.windows(2).all(|w| w[1].0 == w[0].0 + 1),
            "a run is of neighbouring units"
        );
        debug_assert!(run.len() <= max_run);
        Ok(run)
    }

    /// The run's units as cached, each checked against its checksum: the
    /// HDD never receives a flipped bit. Unless the round was read whole,
    /// all its pieces are read at once: an SSD with several channels and
    /// dies serves them in parallel.
    fn run_data(&mut self, round: &Round, run: &[Todo], ssd_t: &mut Nanos) -> Result<Vec<u8>> {
        let s = self.layout.sector as usize;
        let mut data = vec![0u8; run.len() * s];
        let issue = *ssd_t;
        let mut k = 0;
        while k < run.len() {
            if let Some(at) = run[k].2 {
                let unit = &mut data[k * s..(k + 1) * s];
                unit.copy_from_slice(&round.buf[at..at + s]);
                *ssd_t = (*ssd_t).max(round.ready);
                if !self.unit_intact(run[k].1, unit) {
                    *ssd_t = (*ssd_t).max(self.reread_unit(round.ready, run[k].1, unit)?.end);
                }
                k += 1;
                continue;
            }
            let mut l = k + 1;
            while l < run.len() && run[l].1 == run[l - 1].1 + 1 {
                l += 1;
            }
            let buf = &mut data[k * s..l * s];
            let r = self.read_units(issue, run[k].1, buf)?;
            *ssd_t = (*ssd_t).max(r.end);
            if l == k + 1 {
                ReadCosts::learn(&mut self.costs.sector_ns, (r.end - r.start) as f64);
            }
            k = l;
        }
        debug_assert!(*ssd_t >= issue);
        Ok(data)
    }

    /// The whole round is on the HDD: note how far the worker got, and
    /// commit once enough has piled up. Returns when that is done.
    fn finish(&mut self, round: Round, ssd_t: Nanos, hdd_end: Nanos) -> Result<Nanos> {
        let c = self.layout.cache_sectors;
        let s = self.layout.sector;
        let mut t = ssd_t.max(hdd_end);
        if let Some(&(pos, len)) = round.recs.last() {
            // The superblock will name the last record the tail passes.
            let offset = self.layout.cache_offset(pos % c);
            let mut b = vec![0u8; s as usize];
            let ours = |b: &[u8]| {
                Header::decode(b).filter(|h| h.len() == len && h.format_id == self.log.format_id)
            };
            let r = self.ssd.read_at(ssd_t, offset, &mut b)?;
            t = t.max(r.end);
            let mut h = ours(&b);
            if h.is_none() {
                // Read again: a flip on the way does not survive it.
                t = t.max(self.ssd.read_at(r.end, offset, &mut b)?.end);
                self.st.checksum_rereads += 1;
                h = ours(&b);
            }
            let h = h.ok_or(HybridError::Corrupt {
                what: "log record header",
                location: offset,
            })?;
            self.log.flushed_prev_seq = h.seq;
        }
        debug_assert!(
            round.next == round.todo.len(),
            "the whole round is written back"
        );
        debug_assert!(round.end > self.log.flushed_tail && round.end <= self.log.head);
        self.log.flushed_tail = round.end;
        if self.log.flushed_tail - self.log.dirty_tail >= c / 8 {
            t = self.commit(t)?;
        }
        self.audit_round()?;
        Ok(t)
    }

    /// Makes the written-back rounds durable on the HDD, then moves the
    /// superblock's tail past them and marks their sectors clean. Returns
    /// when it is durable (`at` if there was nothing to commit).
    pub(crate) fn commit(&mut self, at: Nanos) -> Result<Nanos> {
        if self.log.dirty_tail == self.log.flushed_tail {
            return Ok(at);
        }
        let c = self.layout.cache_sectors;
        // The worker skipped sectors superseded by newer records; those
        // records must be durable before the old ones are released.
        let sf = self.ssd.flush_at(at)?;
        let hf = self.hdd.flush_at(at)?;
        let (tail, prev) = (self.log.flushed_tail, self.log.flushed_prev_seq);
        let f = self.save_superblock(hf.end.max(sf.end), tail, prev)?;
        let (m, mut io) = mio!(self, f);
        let mut pos = self.log.dirty_tail;
        while pos < self.log.flushed_tail {
            match m.record_at(&mut io, pos % c)? {
                Some(len) => {
                    for slot in pos % c + 1..pos % c + len {
                        if let Some(e) = decode(m.rev_get(&mut io, slot)?) {
                            if e.dirty {
                                m.rev_set(&mut io, slot, encode(e.value, false, e.missing))?;
                                m.fwd_set(&mut io, e.value, encode(slot, false, e.missing))?;
                            }
                        }
                    }
                    pos += len;
                }
                None => pos = self.layout.next_boundary(pos),
            }
        }
        let end = io.t;
        self.log.dirty_tail = self.log.flushed_tail;
        self.st.commits += 1;
        Ok(end)
    }

    /// Writes the next superblock (durable tail `tail`, whose record before
    /// it is `tail_prev_seq`, and this session's `seq_floor`) and makes it
    /// durable; returns when it is.
    pub(crate) fn save_superblock(
        &mut self,
        at: Nanos,
        tail: u64,
        tail_prev_seq: u64,
    ) -> Result<Nanos> {
        debug_assert!(tail >= self.log.free_tail && tail <= self.log.head);
        let sb = Superblock {
            layout: self.layout,
            format_id: self.log.format_id,
            sb_seq: self.log.sb_seq + 1,
            tail,
            tail_prev_seq,
            seq_floor: self.log.seq_floor,
        };
        let w = self.ssd.write_at(at, sb.slot_offset(), &sb.encode())?;
        let f = self.ssd.flush_at(w.end)?;
        // A write outside the log: the next record starts on a boundary.
        self.realign = true;
        self.log.sb_seq = sb.sb_seq;
        self.log.tail_prev_seq = tail_prev_seq;
        self.log.floor_saved = true;
        Ok(f.end)
    }
}
