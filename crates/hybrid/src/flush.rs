//! The flush worker (HeteroDrive §3.2): takes rounds of records from the
//! dirty tail, sorts their live dirty sectors by home sector, merges
//! neighbours into large HDD writes, and finally makes the HDD durable before
//! a superblock moves the tail past them. The SSD reads of one round overlap
//! the HDD writes of the previous one.

use flashkv_device::Nanos;

use crate::device::HybridDevice;
use crate::error::{HybridError, Result};
use crate::layout::Superblock;
use crate::maps::{decode, encode};
use crate::record::{Header, Kind};

/// When a flush session stops.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Goal {
    /// Idle time: start rounds only before the next request arrives.
    Idle { deadline: Nanos },
    /// Pressure: until the dirty span is at most this many sectors.
    Span(u64),
    /// Everything.
    Drain,
}

/// A log record a round flushes: log position, length, offset in the round's buffer.
struct Rec {
    pos: u64,
    len: u64,
    at: usize,
}

impl HybridDevice {
    /// Runs the flush worker from `start`; returns when its last step is
    /// durable (or `start` if there was nothing to do).
    pub(crate) fn flush_session(&mut self, start: Nanos, goal: Goal) -> Result<Nanos> {
        let c = self.layout.cache_sectors;
        let s = self.layout.sector;
        let round = (self.opts.round_bytes / s).max(1);
        let max_run = (self.opts.max_flush_write / s).max(1) as usize;
        let mut ssd_t = start;
        let mut hdd_end = start;
        let mut cursor = self.log.dirty_tail;
        let mut last_seq = None;
        while cursor < self.log.head {
            let go = match goal {
                Goal::Idle { deadline } => ssd_t < deadline,
                Goal::Span(target) => self.log.head - cursor > target,
                Goal::Drain => true,
            };
            if !go {
                break;
            }
            // Gather whole records.
            let first = cursor;
            let mut recs = Vec::new();
            let mut bytes = 0usize;
            {
                let (m, mut io) = mio!(self, ssd_t);
                while cursor < self.log.head && cursor - first < round {
                    match m.record_at(&mut io, cursor % c)? {
                        Some(len) => {
                            recs.push(Rec {
                                pos: cursor,
                                len,
                                at: bytes,
                            });
                            bytes += (len * s) as usize;
                            cursor += len;
                        }
                        None => cursor = ((cursor / c + 1) * c).min(self.log.head),
                    }
                }
                ssd_t = io.t;
            }
            // Read them, one SSD read per run of adjacent records.
            let mut buf = vec![0u8; bytes];
            let mut i = 0;
            while i < recs.len() {
                let mut j = i + 1;
                while j < recs.len()
                    && recs[j].pos == recs[j - 1].pos + recs[j - 1].len
                    && recs[j].pos % c != 0
                {
                    j += 1;
                }
                let end = recs[j - 1].at + (recs[j - 1].len * s) as usize;
                let r = self.ssd.read_at(
                    ssd_t,
                    self.layout.cache_offset(recs[i].pos % c),
                    &mut buf[recs[i].at..end],
                )?;
                ssd_t = ssd_t.max(r.end);
                i = j;
            }
            let read_end = ssd_t;
            // Live dirty sectors: (home, offset in buf, slot).
            let mut live = Vec::new();
            {
                let (m, mut io) = mio!(self, ssd_t);
                for r in &recs {
                    let header = Header::decode(&buf[r.at..r.at + s as usize])
                        .filter(|h| h.len() == r.len && h.format_id == self.log.format_id)
                        .ok_or(HybridError::Corrupt {
                            what: "log record header",
                            offset: self.layout.cache_offset(r.pos % c),
                        })?;
                    last_seq = Some(header.seq);
                    if header.kind != Kind::Data {
                        continue;
                    }
                    header.check_data(
                        &buf[r.at + s as usize..r.at + (r.len * s) as usize],
                        self.layout.cache_offset(r.pos % c),
                    )?;
                    for j in 1..r.len {
                        let slot = r.pos % c + j;
                        if let Some((home, true)) = decode(m.rev_get(&mut io, slot)?) {
                            live.push((home, r.at + (j * s) as usize, slot));
                        }
                    }
                }
                ssd_t = io.t;
            }
            live.sort_unstable_by_key(|x| x.0);
            // Merge neighbours on the HDD into large writes, in sector order.
            let mut i = 0;
            while i < live.len() {
                let mut j = i + 1;
                while j < live.len() && live[j].0 == live[j - 1].0 + 1 && j - i < max_run {
                    j += 1;
                }
                let mut data = Vec::with_capacity((j - i) * s as usize);
                for x in &live[i..j] {
                    data.extend_from_slice(&buf[x.1..x.1 + s as usize]);
                }
                let w = self.hdd.write_at(read_end, live[i].0 * s, &data)?;
                hdd_end = hdd_end.max(w.end);
                self.st.flush_writes += 1;
                self.st.flush_bytes += data.len() as u64;
                i = j;
            }
            let (m, mut io) = mio!(self, ssd_t);
            for &(home, _, slot) in &live {
                m.rev_set(&mut io, slot, encode(home, false))?;
                m.fwd_set(&mut io, home, encode(slot, false))?;
            }
            ssd_t = io.t;
            self.dirty_sectors -= live.len() as u64;
        }
        if cursor == self.log.dirty_tail {
            return Ok(start);
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
