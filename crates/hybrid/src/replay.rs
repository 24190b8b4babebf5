//! Replays a trace on any [`BlockDevice`] and reports latencies and counts.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use flashkv_device::{BlockDevice, DeviceError, DeviceStats, Latencies, Nanos};
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
    /// Requests.
    pub count: u64,
    /// Exact mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: Nanos,
    /// 95th percentile.
    pub p95_ns: Nanos,
    /// 99th percentile.
    pub p99_ns: Nanos,
    /// 99.9th percentile.
    pub p999_ns: Nanos,
    /// Exact maximum.
    pub max_ns: Nanos,
}

impl Latency {
    fn of(l: &Latencies) -> Self {
        let lat = Latency {
            count: l.count(),
            mean_ns: l.mean(),
            p50_ns: l.quantile(0.50),
            p95_ns: l.quantile(0.95),
            p99_ns: l.quantile(0.99),
            p999_ns: l.quantile(0.999),
            max_ns: l.max(),
        };
        debug_assert!(lat.p50_ns <= lat.p99_ns && lat.p99_ns <= lat.max_ns);
        lat
    }
}

/// Where each trace device's requests go on the target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DeviceMap {
    /// Every trace device addresses the whole target from offset 0.
    #[default]
    Shared,
    /// Trace device `d` starts at `d × stride` and has `stride` bytes.
    Stride(u64),
    /// Trace device `d` starts at the given offset and runs to the next
    /// listed start (or the target's end); devices not listed are an error.
    Offsets(BTreeMap<u32, u64>),
}

/// Ranges start on mapping-unit boundaries, so aligned requests stay aligned.
pub const MAP_UNIT: u64 = 4096;

impl std::str::FromStr for DeviceMap {
    type Err = String;
    /// `shared`, `stride=SIZE`, or `DEV=OFFSET,DEV=OFFSET,...` (sizes like 64G).
    fn from_str(s: &str) -> Result<Self, String> {
        let size = |v: &str| {
            let b = flashkv_device::parse_size(v.trim()).map_err(|e| e.to_string())?;
            if b % MAP_UNIT != 0 {
                return Err(format!("'{v}' is not a multiple of 4 KiB"));
            }
            Ok(b)
        };
        if s == "shared" {
            return Ok(DeviceMap::Shared);
        }
        if let Some(v) = s.strip_prefix("stride=") {
            let b = size(v)?;
            return if b == 0 {
                Err("stride must be at least 4 KiB".into())
            } else {
                Ok(DeviceMap::Stride(b))
            };
        }
        let mut map = BTreeMap::new();
        for item in s.split(',') {
            let (d, off) = item
                .split_once('=')
                .ok_or_else(|| format!("'{item}' is not DEV=OFFSET"))?;
            let d: u32 = d
                .trim()
                .parse()
                .map_err(|_| format!("'{d}' is not a trace device number"))?;
            if map.insert(d, size(off)?).is_some() {
                return Err(format!("trace device {d} is mapped twice"));
            }
        }
        let mut starts: Vec<u64> = map.values().copied().collect();
        starts.sort_unstable();
        if starts.windows(2).any(|w| w[0] == w[1]) {
            return Err("two trace devices start at the same offset".into());
        }
        Ok(DeviceMap::Offsets(map))
    }
}

impl DeviceMap {
    /// The window `(start, len)` of trace device `d` on a target of `capacity`.
    fn window(&self, d: u32, capacity: u64) -> Result<(u64, u64), DeviceError> {
        let (start, end) = match self {
            DeviceMap::Shared => (0, capacity),
            DeviceMap::Stride(s) => {
                let start = u64::from(d).saturating_mul(*s);
                (start, start.saturating_add(*s).min(capacity))
            }
            DeviceMap::Offsets(m) => {
                let start = *m.get(&d).ok_or_else(|| {
                    DeviceError::Spec(format!("trace device {d} is not in the device map"))
                })?;
                let next = m.values().copied().filter(|&o| o > start).min();
                (start, next.unwrap_or(capacity).min(capacity))
            }
        };
        if start >= end {
            return Err(DeviceError::Spec(format!(
                "trace device {d} maps to offset {start}, past the target's {capacity} bytes"
            )));
        }
        Ok((start, end - start))
    }
}

/// What one trace device's requests amounted to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceSplit {
    /// The trace's device number.
    pub device: u32,
    /// Where its range starts on the target.
    pub offset: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Requests folded back into the device's range.
    pub folded: u64,
}

/// What a replay did. `reads + writes + skipped == records`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplayReport {
    /// Trace records replayed.
    pub records: u64,
    /// Read requests issued.
    pub reads: u64,
    /// Write requests issued.
    pub writes: u64,
    /// Zero-length records.
    pub skipped: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Records whose range was past their device's end and was folded back
    /// into it (by whole 4 KiB units, so alignment to 4 KiB is kept).
    pub folded: u64,
    /// Requests and bytes per trace device, ascending.
    pub per_device: Vec<DeviceSplit>,
    /// Latencies of every request.
    pub latency: Latency,
    /// Latencies of reads.
    pub read_latency: Latency,
    /// Latencies of writes.
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

/// The sector-aligned range a record maps to in a window of `window`
/// bytes (a multiple of the sector): rounded out to whole sectors and, when
/// it runs past the end, folded back by whole 4 KiB units, so its offset
/// within a 4 KiB unit is kept (a request too large for that goes to the
/// window's start). `None` if it is empty.
fn place(r: &TraceRecord, sector: u64, window: u64) -> Option<(u64, u64, bool)> {
    if r.len == 0 {
        return None;
    }
    // In sectors, so nothing overflows near the top of the u64 range.
    let first = r.offset / sector;
    let last = r.offset.saturating_add(r.len).div_ceil(sector);
    let sectors = window / sector;
    let n = (last - first).min(sectors);
    if first + n <= sectors {
        return Some((first * sector, n * sector, false));
    }
    let unit = MAP_UNIT.max(sector) / sector;
    let within = first % unit;
    if within + n > sectors {
        return Some((0, n * sector, true));
    }
    let room = (sectors - within - n) / unit + 1;
    Some((
        ((first / unit) % room * unit + within) * sector,
        n * sector,
        true,
    ))
}

/// Runs `records` on `dev`, every trace device on the whole of it. Writes
/// carry zeros: costs do not depend on content, and a simulated device's
/// sparse store then keeps nothing, so memory does not grow with the trace.
pub fn replay(
    dev: &mut dyn BlockDevice,
    records: &[TraceRecord],
    timing: Timing,
) -> flashkv_device::Result<ReplayReport> {
    replay_mapped(dev, records, timing, &DeviceMap::Shared)
}

/// Runs `records` (a slice, or a stream such as [`crate::trace::Records`]
/// yields) on `dev` with each trace device where `map` puts it. Memory does
/// not grow with the number of records.
pub fn replay_mapped<I>(
    dev: &mut dyn BlockDevice,
    records: I,
    timing: Timing,
    map: &DeviceMap,
) -> flashkv_device::Result<ReplayReport>
where
    I: IntoIterator,
    I::Item: Borrow<TraceRecord>,
{
    let mut run = Run::new(dev, timing);
    for r in records {
        let r: &TraceRecord = r.borrow();
        run.rep.records += 1;
        if let Some((offset, len)) = run.place(r, map)? {
            run.issue(r, offset, len)?;
        }
    }
    Ok(run.report())
}

/// A replay in progress: its counts, latencies and buffers.
struct Run<'a> {
    dev: &'a mut dyn BlockDevice,
    timing: Timing,
    sector: u64,
    capacity: u64,
    /// The device's clock when the replay started.
    base: Nanos,
    split: BTreeMap<u32, DeviceSplit>,
    /// Zeros to write and room to read into, grown to the largest request.
    zeros: Vec<u8>,
    scratch: Vec<u8>,
    all: Latencies,
    reads: Latencies,
    writes: Latencies,
    rep: ReplayReport,
    first: Option<Nanos>,
    last_end: Nanos,
}

impl<'a> Run<'a> {
    fn new(dev: &'a mut dyn BlockDevice, timing: Timing) -> Self {
        let g = dev.geometry();
        let base = dev.clock();
        Run {
            dev,
            timing,
            sector: u64::from(g.sector_size),
            capacity: g.capacity,
            base,
            split: BTreeMap::new(),
            zeros: Vec::new(),
            scratch: Vec::new(),
            all: Latencies::default(),
            reads: Latencies::default(),
            writes: Latencies::default(),
            rep: ReplayReport::default(),
            first: None,
            last_end: base,
        }
    }

    /// Where record `r` goes on the device, counted against its trace
    /// device; `None` (counted as skipped) when it has no bytes.
    fn place(
        &mut self,
        r: &TraceRecord,
        map: &DeviceMap,
    ) -> flashkv_device::Result<Option<(u64, u64)>> {
        let (start, window) = map.window(r.device, self.capacity)?;
        let Some((offset, len, folded)) = place(r, self.sector, window) else {
            self.rep.skipped += 1;
            return Ok(None);
        };
        debug_assert!(
            offset + len <= window,
            "a record stays in its device's window"
        );
        let d = self.split.entry(r.device).or_insert_with(|| DeviceSplit {
            device: r.device,
            offset: start,
            ..DeviceSplit::default()
        });
        d.folded += u64::from(folded);
        if r.write {
            (d.writes, d.write_bytes) = (d.writes + 1, d.write_bytes + len);
        } else {
            (d.reads, d.read_bytes) = (d.reads + 1, d.read_bytes + len);
        }
        self.rep.folded += u64::from(folded);
        Ok(Some((start + offset, len)))
    }

    /// Issues `r` as a request of `len` bytes at `offset`, at its trace
    /// time or when the device is free, and records its latency.
    fn issue(&mut self, r: &TraceRecord, offset: u64, len: u64) -> flashkv_device::Result<()> {
        let at = match self.timing {
            Timing::AsTraced => self.base.saturating_add(r.time_ns),
            Timing::BackToBack => self.dev.clock(),
        };
        let n = len as usize;
        let c = if r.write {
            self.rep.writes += 1;
            self.rep.write_bytes += len;
            if self.zeros.len() < n {
                self.zeros.resize(n, 0);
            }
            self.dev.write_at(at, offset, &self.zeros[..n])?
        } else {
            self.rep.reads += 1;
            self.rep.read_bytes += len;
            if self.scratch.len() < n {
                self.scratch.resize(n, 0);
            }
            self.dev.read_at(at, offset, &mut self.scratch[..n])?
        };
        let lat = c.end.saturating_sub(at);
        self.all.record(lat);
        if r.write {
            &mut self.writes
        } else {
            &mut self.reads
        }
        .record(lat);
        self.first.get_or_insert(at);
        self.last_end = self.last_end.max(c.end);
        Ok(())
    }

    /// The report: counts, latencies, rates over the makespan.
    fn report(self) -> ReplayReport {
        let mut rep = self.rep;
        debug_assert_eq!(rep.reads + rep.writes + rep.skipped, rep.records);
        rep.per_device = self.split.into_values().collect();
        rep.latency = Latency::of(&self.all);
        rep.read_latency = Latency::of(&self.reads);
        rep.write_latency = Latency::of(&self.writes);
        rep.makespan_ns = self.last_end - self.first.unwrap_or(self.last_end);
        if rep.makespan_ns > 0 {
            let secs = rep.makespan_ns as f64 / 1e9;
            rep.iops = (rep.reads + rep.writes) as f64 / secs;
            rep.mb_per_s = (rep.read_bytes + rep.write_bytes) as f64 / secs / 1e6;
        }
        rep.device = self.dev.stats();
        rep
    }
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
            device: 0,
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
            let r = TraceRecord { time_ns: 0, offset, len, write: false, device: 0 };
            if let Some((o, l, _)) = place(&r, 512, cap) {
                proptest::prop_assert!(o % 512 == 0 && l % 512 == 0 && o + l <= cap);
            }
        }

        #[test]
        fn folding_keeps_4k_alignment(page: u64, pages in 1u64..64, cap in 64u64..1 << 30) {
            let (cap, offset) = (cap * 4096, page.wrapping_mul(4096));
            let r = TraceRecord { time_ns: 0, offset, len: pages * 4096, write: true, device: 0 };
            let (o, l, _) = place(&r, 512, cap).unwrap();
            proptest::prop_assert!(o % 4096 == 0 && l == pages * 4096 && o + l <= cap);
        }
    }

    #[test]
    fn device_maps_parse_and_give_each_device_its_window() {
        let m: DeviceMap = "0=0,1=1M,2=3M".parse().unwrap();
        assert_eq!(m.window(1, 8 << 20).unwrap(), (1 << 20, 2 << 20));
        assert_eq!(m.window(2, 8 << 20).unwrap(), (3 << 20, 5 << 20));
        assert!(m.window(3, 8 << 20).is_err());
        let s: DeviceMap = "stride=1M".parse().unwrap();
        assert_eq!(s.window(5, 8 << 20).unwrap(), (5 << 20, 1 << 20));
        assert!(s.window(8, 8 << 20).is_err());
        for bad in ["0=1000", "x=0", "0=0,0=4K", "0=4K,1=4K", "stride=0", "0"] {
            assert!(bad.parse::<DeviceMap>().is_err(), "{bad}");
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
