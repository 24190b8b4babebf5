//! The flush worker (HeteroDrive §3.2). A round takes the records from the
//! dirty tail up to `round_bytes` of log, sorts their dirty sectors by home
//! sector, merges neighbours into large HDD writes and issues them in
//! increasing sector order; the SSD reads of one write overlap the HDD write
//! before it.
//!
//! A sector written back is marked flushed but stays dirty (recovery would
//! still replay it, and new writes to it stay in the cache) until its whole
//! round is on the HDD: then the HDD is made durable and a superblock moves
//! the tail past the round. So an idle period may end in mid-round without
//! losing the work done, and the log is only released behind durable data.

use flashkv_device::Nanos;

use crate::device::HybridDevice;
use crate::error::{HybridError, Result};
use crate::layout::Superblock;
use crate::maps::{decode, encode, encode_flushed};
use crate::record::Header;

/// When a flush session stops.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Goal {
    /// Idle time: issue writes only while the devices are free before the
    /// next request arrives at `deadline`.
    Idle { deadline: Nanos },
    /// Pressure: until the dirty span is at most this many sectors.
    Span(u64),
    /// Everything.
    Drain,
}

impl HybridDevice {
    /// Runs the flush worker from `start`; returns when its last step is
    /// done (durable, if the tail moved), or `start` if there was nothing to do.
    pub(crate) fn flush_session(&mut self, start: Nanos, goal: Goal) -> Result<Nanos> {
        let c = self.layout.cache_sectors;
        let s = self.layout.sector;
        let round = (self.opts.round_bytes / s).max(1);
        let max_run = (self.opts.max_flush_write / s).max(1) as usize;
        let mut ssd_t = start;
        let mut hdd_end = start;
        let mut cursor = self.log.dirty_tail;
        let mut last_seq = None;
        let mut wrote = false;
        let out_of_time = |t: Nanos| matches!(goal, Goal::Idle { deadline } if t >= deadline);
        'rounds: while cursor < self.log.head {
            if out_of_time(ssd_t.max(hdd_end)) {
                break;
            }
            if let Goal::Span(target) = goal {
                if self.log.head - cursor <= target {
                    break;
                }
            }
            // The round's records and the dirty sectors not yet written back.
            let mut recs = Vec::new();
            let mut end = cursor;
            let mut todo = Vec::new();
            {
                let (m, mut io) = mio!(self, ssd_t);
                while end < self.log.head && end - cursor < round {
                    match m.record_at(&mut io, end % c)? {
                        Some(len) => {
                            recs.push((end, len));
                            end += len;
                        }
                        // The unused end of a lap.
                        None => end = ((end / c + 1) * c).min(self.log.head),
                    }
                }
                for &(pos, len) in &recs {
                    for slot in pos % c + 1..pos % c + len {
                        if let Some(e) = decode(m.rev_get(&mut io, slot)?) {
                            if e.unflushed() {
                                todo.push((e.value, slot));
                            }
                        }
                    }
                }
                ssd_t = io.t;
            }
            todo.sort_unstable();
            let mut i = 0;
            while i < todo.len() {
                if out_of_time(ssd_t.max(hdd_end)) {
                    break 'rounds;
                }
                let mut j = i + 1;
                while j < todo.len() && todo[j].0 == todo[j - 1].0 + 1 && j - i < max_run {
                    j += 1;
                }
                let mut data = vec![0u8; (j - i) * s as usize];
                let mut k = i;
                while k < j {
                    let mut l = k + 1;
                    while l < j && todo[l].1 == todo[l - 1].1 + 1 {
                        l += 1;
                    }
                    let buf = &mut data[(k - i) * s as usize..(l - i) * s as usize];
                    let r = self
                        .ssd
                        .read_at(ssd_t, self.layout.cache_offset(todo[k].1), buf)?;
                    ssd_t = ssd_t.max(r.end);
                    k = l;
                }
                let w = self.hdd.write_at(ssd_t, todo[i].0 * s, &data)?;
                hdd_end = hdd_end.max(w.end);
                self.st.flush_writes += 1;
                self.st.flush_bytes += data.len() as u64;
                wrote = true;
                let (m, mut io) = mio!(self, ssd_t);
                for &(home, slot) in &todo[i..j] {
                    m.rev_set(&mut io, slot, encode_flushed(home))?;
                    m.fwd_set(&mut io, home, encode_flushed(slot))?;
                }
                ssd_t = io.t;
                self.dirty_sectors -= (j - i) as u64;
                i = j;
            }
            // The whole round is on the HDD: its sectors become clean.
            let (m, mut io) = mio!(self, ssd_t);
            for &(pos, len) in &recs {
                for slot in pos % c + 1..pos % c + len {
                    if let Some(e) = decode(m.rev_get(&mut io, slot)?) {
                        if e.dirty {
                            m.rev_set(&mut io, slot, encode(e.value, false))?;
                            m.fwd_set(&mut io, e.value, encode(slot, false))?;
                        }
                    }
                }
            }
            ssd_t = io.t;
            if let Some(&(pos, len)) = recs.last() {
                // The superblock names the last record the tail passes.
                let offset = self.layout.cache_offset(pos % c);
                let mut b = vec![0u8; s as usize];
                ssd_t = ssd_t.max(self.ssd.read_at(ssd_t, offset, &mut b)?.end);
                let h = Header::decode(&b)
                    .filter(|h| h.len() == len && h.format_id == self.log.format_id)
                    .ok_or(HybridError::Corrupt {
                        what: "log record header",
                        offset,
                    })?;
                last_seq = Some(h.seq);
            }
            cursor = end;
        }
        if cursor == self.log.dirty_tail {
            let end = if wrote { ssd_t.max(hdd_end) } else { start };
            self.st.flush_ns += end - start;
            return Ok(end);
        }
        // HDD data durable first; only then may the superblock release the log.
        let hf = self.hdd.flush_at(hdd_end)?;
        let sb = Superblock {
            layout: self.layout,
            format_id: self.log.format_id,
            sb_seq: self.log.sb_seq + 1,
            tail: cursor,
            tail_prev_seq: last_seq.unwrap_or(self.log.tail_prev_seq),
        };
        let w = self
            .ssd
            .write_at(hf.end.max(ssd_t), sb.slot_offset(), &sb.encode())?;
        let f = self.ssd.flush_at(w.end)?;
        self.log.sb_seq = sb.sb_seq;
        self.log.tail_prev_seq = sb.tail_prev_seq;
        self.log.dirty_tail = cursor;
        self.st.flush_ns += f.end - start;
        Ok(f.end)
    }
}
