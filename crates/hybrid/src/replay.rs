//! Replays a trace on any [`BlockDevice`] and reports latencies and counts.

use flashkv_device::{BlockDevice, DeviceStats, Latencies, Nanos};
use serde::Serialize;

use crate::trace::TraceRecord;

/// When each request is issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// At its trace time (after the device's clock at the start), so requests
    /// queue when the device is slower than the traced one.
    AsTraced,
    /// Each when the previous one completes.
    BackToBack,
}

/// Latency summary, nanoseconds: exact count, mean and max; percentiles
/// from a histogram, within 0.1 %.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: Nanos,
    pub p95_ns: Nanos,
    pub p99_ns: Nanos,
    pub p999_ns: Nanos,
    pub max_ns: Nanos,
}

impl Latency {
    fn of(l: &Latencies) -> Self {
        Latency {
            count: l.count(),
            mean_ns: l.mean(),
            p50_ns: l.quantile(0.50),
            p95_ns: l.quantile(0.95),
            p99_ns: l.quantile(0.99),
            p999_ns: l.quantile(0.999),
            max_ns: l.max(),
        }
    }
}

/// What a replay did. `reads + writes + skipped == records`.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub records: u64,
    pub reads: u64,
    pub writes: u64,
    /// Zero-length records.
    pub skipped: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Records whose range was past the device's end and was folded back into it.
    pub folded: u64,
    pub latency: Latency,
    pub read_latency: Latency,
    pub write_latency: Latency,
    /// Virtual time from the first issue to the last completion.
    pub makespan_ns: Nanos,
    /// Requests (reads and writes) per second of makespan.
    pub iops: f64,
    /// Bytes read and written per second of makespan, MB/s (10^6 bytes).
    pub mb_per_s: f64,
    /// The device's counters after the replay.
    pub device: DeviceStats,
}

/// The sector-aligned range a record maps to on a device of this capacity:
/// rounded out to whole sectors, and folded back into the device (offset
/// modulo the room left) when it runs past the end. `None` if it is empty.
fn place(r: &TraceRecord, sector: u64, capacity: u64) -> Option<(u64, u64, bool)> {
    if r.len == 0 {
        return None;
    }
    // In sectors, so nothing overflows near the top of the u64 range.
    let first = r.offset / sector;
    let last = r.offset.saturating_add(r.len).div_ceil(sector);
    let sectors = capacity / sector;
    let n = (last - first).min(sectors);
    if first + n <= sectors {
        return Some((first * sector, n * sector, false));
    }
    let room = sectors - n + 1;
    Some(((first % room) * sector, n * sector, true))
}

/// Runs `records` on `dev`; writes carry a fixed pattern.
pub fn replay(
    dev: &mut dyn BlockDevice,
    records: &[TraceRecord],
    timing: Timing,
) -> flashkv_device::Result<ReplayReport> {
    let g = dev.geometry();
    let sector = u64::from(g.sector_size);
    let base = dev.clock();
    let mut buf: Vec<u8> = Vec::new();
    let (mut all, mut reads, mut writes) = (
        Latencies::default(),
        Latencies::default(),
        Latencies::default(),
    );
    let mut rep = ReplayReport {
        records: records.len() as u64,
        reads: 0,
        writes: 0,
        skipped: 0,
        read_bytes: 0,
        write_bytes: 0,
        folded: 0,
        latency: Latency::default(),
        read_latency: Latency::default(),
        write_latency: Latency::default(),
        makespan_ns: 0,
        iops: 0.0,
        mb_per_s: 0.0,
        device: DeviceStats::default(),
    };
    let mut first: Option<Nanos> = None;
    let mut last_end = base;
    for r in records {
        let Some((offset, len, folded)) = place(r, sector, g.capacity) else {
            rep.skipped += 1;
            continue;
        };
        rep.folded += u64::from(folded);
        let at = match timing {
            Timing::AsTraced => base.saturating_add(r.time_ns),
            Timing::BackToBack => dev.clock(),
        };
        if buf.len() < len as usize {
            buf = (0..len).map(|i| (i % 251) as u8).collect();
        }
        let c = if r.write {
            rep.writes += 1;
            rep.write_bytes += len;
            dev.write_at(at, offset, &buf[..len as usize])?
        } else {
            rep.reads += 1;
            rep.read_bytes += len;
            dev.read_at(at, offset, &mut buf[..len as usize])?
        };
        let lat = c.end.saturating_sub(at);
        all.record(lat);
        if r.write { &mut writes } else { &mut reads }.record(lat);
        first.get_or_insert(at);
        last_end = last_end.max(c.end);
    }
    rep.latency = Latency::of(&all);
    rep.read_latency = Latency::of(&reads);
    rep.write_latency = Latency::of(&writes);
    rep.makespan_ns = last_end - first.unwrap_or(last_end);
    if rep.makespan_ns > 0 {
        let secs = rep.makespan_ns as f64 / 1e9;
        rep.iops = (rep.reads + rep.writes) as f64 / secs;
        rep.mb_per_s = (rep.read_bytes + rep.write_bytes) as f64 / secs / 1e6;
    }
    rep.device = dev.stats();
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_aligned_and_folded_into_the_device() {
        let r = |offset, len| TraceRecord {
            time_ns: 0,
            offset,
            len,
            write: true,
        };
        assert_eq!(place(&r(100, 10), 512, 1 << 20), Some((0, 512, false)));
        assert_eq!(place(&r(1000, 100), 512, 1 << 20), Some((512, 1024, false)));
        assert_eq!(place(&r(0, 0), 512, 1 << 20), None);
        let (o, l, folded) = place(&r(5 << 30, 8192), 512, 1 << 20).unwrap();
        assert!(folded && o + l <= 1 << 20 && o % 512 == 0 && l == 8192);
        assert_eq!(
            place(&r(0, 4 << 20), 512, 1 << 20),
            Some((0, 1 << 20, false))
        );
    }

    proptest::proptest! {
        #[test]
        fn any_record_lands_inside_the_device(offset: u64, len: u64, cap in 1u64..1 << 40) {
            let cap = cap * 512;
            let r = TraceRecord { time_ns: 0, offset, len, write: false };
            if let Some((o, l, _)) = place(&r, 512, cap) {
                proptest::prop_assert!(o % 512 == 0 && l % 512 == 0 && o + l <= cap);
            }
        }
    }

    #[test]
    fn percentiles_come_from_the_histogram() {
        let mut h = Latencies::default();
        (1..=100).for_each(|v| h.record(v));
        let l = Latency::of(&h);
        assert_eq!(
            (l.p50_ns, l.p95_ns, l.p99_ns, l.p999_ns, l.max_ns, l.count),
            (50, 95, 99, 100, 100, 100)
        );
        assert_eq!(Latency::of(&Latencies::default()).count, 0);
    }
}
