//! Access-pattern profiler: sequential / random × read / write (and a 50/50
//! random mix) at one block size and queue depth, on any [`BlockDevice`].
//!
//! The host keeps `iodepth` requests outstanding and issues a new one the
//! moment one completes. Devices that reorder their queue (an HDD's command
//! queueing) hold the requests and choose which to serve whenever they are
//! free; others serve in submission order with whatever internal
//! concurrency their model has (NAND channels and dies). On a program-once
//! device (raw NAND) a write to a programmed page is performed as the
//! conventional in-place update: read the erase unit, erase, rewrite.
//!
//! Write payloads are zeros: costs do not depend on content, and the sparse
//! data store then needs no memory for a preconditioned span.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

use flashkv_device::{
    update_in_place, BlockDevice, Completion, DeviceError, DeviceStats, FtlCounters, Latencies,
    Nanos, QueuedIo,
};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// An access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Pattern {
    SeqRead,
    RandRead,
    SeqWrite,
    RandWrite,
    /// 50 % random reads, 50 % random writes.
    Mix,
}

impl Pattern {
    pub const ALL: [Pattern; 5] = [
        Pattern::SeqRead,
        Pattern::RandRead,
        Pattern::SeqWrite,
        Pattern::RandWrite,
        Pattern::Mix,
    ];

    /// The short code used on the command line and in JSON: sr, rr, sw, rw, mix.
    pub fn code(self) -> &'static str {
        match self {
            Pattern::SeqRead => "sr",
            Pattern::RandRead => "rr",
            Pattern::SeqWrite => "sw",
            Pattern::RandWrite => "rw",
            Pattern::Mix => "mix",
        }
    }

    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.code() == s)
    }

    /// Whether the pattern writes.
    pub fn writes(self) -> bool {
        !matches!(self, Pattern::SeqRead | Pattern::RandRead)
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// One profiling run.
#[derive(Debug, Clone)]
pub struct ProfileSpec {
    pub pattern: Pattern,
    /// Bytes per request; a multiple of the device's sector size.
    pub block_size: u64,
    /// Measured requests (after preconditioning).
    pub ops: u64,
    /// Bytes of the device the requests fall in, from offset 0.
    pub span: u64,
    /// Requests kept outstanding.
    pub iodepth: usize,
    /// Seed for random offsets and the read/write choice of `mix`.
    pub seed: u64,
}

/// What a run measured. Field names are the JSON row format.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileRow {
    pub device: String,
    pub pattern: String,
    pub block_size: u64,
    pub iodepth: usize,
    pub ops: u64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub mean_latency_us: f64,
    pub p99_latency_us: f64,
    /// Median, 95th and 99.9th percentile and maximum latency, µs.
    #[serde(default)]
    pub p50_latency_us: f64,
    #[serde(default)]
    pub p95_latency_us: f64,
    #[serde(default)]
    pub p999_latency_us: f64,
    #[serde(default)]
    pub max_latency_us: f64,
    pub energy_uj_per_op: f64,
    pub erases: u64,
    /// What the FTL's merges, mapping cache, data cache and planes did
    /// during the measured requests (all zero elsewhere).
    #[serde(default)]
    pub ftl: FtlCounters,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "block size must be a positive multiple of the device's {sector}-byte sector, got {block}"
    )]
    BadBlockSize { block: u64, sector: u32 },
    #[error("--span {}: larger than the device's capacity of {}", crate::report::size_label(*span), crate::report::size_label(*capacity))]
    SpanTooLarge { span: u64, capacity: u64 },
    #[error("--span {}: smaller than one {} block", crate::report::size_label(*span), crate::report::size_label(*block))]
    SpanTooSmall { span: u64, block: u64 },
    #[error("ops and iodepth must be at least 1")]
    Zero,
    #[error("at most {MAX_OPS} ops and an iodepth of {MAX_IODEPTH} per run, got {ops} ops at iodepth {iodepth}")]
    TooMany { ops: u64, iodepth: usize },
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Most requests per run: about a day of simulation at 10^7 requests/s.
pub const MAX_OPS: u64 = 1_000_000_000_000;
/// Deepest queue: the outstanding requests are kept in memory.
pub const MAX_IODEPTH: usize = 1 << 16;

/// Checks a spec against a device before anything is written.
pub fn validate(dev: &dyn BlockDevice, spec: &ProfileSpec) -> Result<(), ProfileError> {
    let g = dev.geometry();
    let sector = u64::from(g.sector_size);
    if spec.block_size == 0 || spec.block_size % sector != 0 {
        return Err(ProfileError::BadBlockSize {
            block: spec.block_size,
            sector: g.sector_size,
        });
    }
    if spec.span > g.capacity {
        return Err(ProfileError::SpanTooLarge {
            span: spec.span,
            capacity: g.capacity,
        });
    }
    if spec.span < spec.block_size {
        return Err(ProfileError::SpanTooSmall {
            span: spec.span,
            block: spec.block_size,
        });
    }
    if spec.ops == 0 || spec.iodepth == 0 {
        return Err(ProfileError::Zero);
    }
    if spec.ops > MAX_OPS || spec.iodepth > MAX_IODEPTH {
        return Err(ProfileError::TooMany {
            ops: spec.ops,
            iodepth: spec.iodepth,
        });
    }
    Ok(())
}

/// Runs one pattern on `dev` and reports what it measured. Write patterns
/// first write the span once, sequentially (preconditioning), then flush.
pub fn run(
    dev: &mut dyn BlockDevice,
    device_name: &str,
    spec: &ProfileSpec,
) -> Result<ProfileRow, ProfileError> {
    run_observed(dev, device_name, spec, &mut |_| {})
}

/// MiB of preconditioning counted as one unit of [`work`].
const MIB: u64 = 1 << 20;
/// Completed requests between two calls of a progress callback.
const TICK_OPS: u64 = 1024;

/// The work of a [`run_observed`] in the units its callback counts: one per
/// request, and one per MiB a write pattern's preconditioning writes.
pub fn work(spec: &ProfileSpec) -> u64 {
    let fill = if spec.pattern.writes() {
        spec.span.div_ceil(MIB)
    } else {
        0
    };
    spec.ops + fill
}

/// [`run`], calling `tick(n)` as each n units of [`work`] are done, so a
/// long point shows progress.
pub fn run_observed(
    dev: &mut dyn BlockDevice,
    device_name: &str,
    spec: &ProfileSpec,
    tick: &mut dyn FnMut(u64),
) -> Result<ProfileRow, ProfileError> {
    validate(dev, spec)?;
    if spec.pattern.writes() {
        if dev.fill_sequential(spec.span)? {
            tick(spec.span.div_ceil(MIB));
        } else {
            write_span(dev, spec.span, tick)?;
        }
    }
    measure(dev, device_name, spec, tick)
}

/// [`run`] without preconditioning: for a device whose span has already been
/// written (a series of runs on one device).
pub fn run_prepared(
    dev: &mut dyn BlockDevice,
    device_name: &str,
    spec: &ProfileSpec,
) -> Result<ProfileRow, ProfileError> {
    measure(dev, device_name, spec, &mut |_| {})
}

/// The measured requests of a run, on a prepared device.
fn measure(
    dev: &mut dyn BlockDevice,
    device_name: &str,
    spec: &ProfileSpec,
    tick: &mut dyn FnMut(u64),
) -> Result<ProfileRow, ProfileError> {
    validate(dev, spec)?;
    let blocks = spec.span / spec.block_size;
    let buf = vec![0u8; spec.block_size as usize];
    dev.flush()?;

    let before = dev.stats();
    let t0 = dev.clock();
    let mut gen = Generator {
        pattern: spec.pattern,
        rng: SmallRng::seed_from_u64(spec.seed),
        next_seq: 0,
        blocks,
        block: spec.block_size,
    };
    let mut io = Io {
        dev,
        buf,
        scratch: vec![0u8; spec.block_size as usize],
    };
    let mut flight = InFlight::new(io.dev.reorders_queue());
    let mut latencies = Latencies::default();
    let first = spec.ops.min(spec.iodepth as u64);
    for _ in 0..first {
        flight.issue(&mut io, t0, gen.next())?;
    }
    let (mut issued, mut last_end) = (first, t0);
    loop {
        if flight.dispatch(&mut io)? {
            continue;
        }
        let Some(Reverse((end, issue))) = flight.done.pop() else {
            break;
        };
        latencies.record(end - issue);
        if latencies.count() % TICK_OPS == 0 {
            tick(TICK_OPS);
        }
        last_end = last_end.max(end);
        // The host replaces each completed request at once.
        if issued < spec.ops {
            flight.issue(&mut io, end, gen.next())?;
            issued += 1;
        }
    }
    debug_assert_eq!(latencies.count(), spec.ops, "every request completed");
    tick(spec.ops % TICK_OPS);
    let after = io.dev.stats();
    Ok(row(
        device_name,
        spec,
        &latencies,
        last_end - t0,
        &before,
        &after,
    ))
}

/// Requests in flight: the completions the host waits for and, on a device
/// that reorders its queue, the requests it has not picked yet.
struct InFlight {
    /// Outstanding completions (end, issue time), earliest first.
    done: BinaryHeap<Reverse<(Nanos, Nanos)>>,
    /// Issued but not yet handed to a reordering device.
    queue: Vec<(QueuedIo, Nanos)>,
    reorders: bool,
}

impl InFlight {
    fn new(reorders: bool) -> Self {
        InFlight {
            done: BinaryHeap::new(),
            queue: Vec::new(),
            reorders,
        }
    }

    /// Issues `req` at `at`: to the device, or to the queue of one that
    /// picks its own order.
    fn issue(&mut self, io: &mut Io, at: Nanos, req: QueuedIo) -> Result<(), DeviceError> {
        if self.reorders {
            self.queue.push((req, at));
        } else {
            let c = io.submit(at, req)?;
            self.done.push(Reverse((c.end, at)));
        }
        Ok(())
    }

    /// A reordering device picks its next command the moment it is free,
    /// before the host's replacement for the request that just completed
    /// arrives: hands it its pick if it is free by the next completion.
    /// Whether it did.
    fn dispatch(&mut self, io: &mut Io) -> Result<bool, DeviceError> {
        let Some(earliest) = self.queue.iter().map(|q| q.1).min() else {
            return Ok(false);
        };
        let free = io.dev.busy_until().max(earliest);
        if self
            .done
            .peek()
            .is_some_and(|Reverse((end, _))| free > *end)
        {
            return Ok(false);
        }
        let ready: Vec<usize> = (0..self.queue.len())
            .filter(|&i| self.queue[i].1 <= free)
            .collect();
        debug_assert!(
            !ready.is_empty(),
            "the earliest request is ready when the device is free"
        );
        let ios: Vec<QueuedIo> = ready.iter().map(|&i| self.queue[i].0).collect();
        let pick = ready[io.dev.pick_next(free, &ios).min(ready.len() - 1)];
        let (req, issue) = self.queue.swap_remove(pick);
        let c = io.submit(free, req)?;
        self.done.push(Reverse((c.end, issue)));
        Ok(true)
    }
}

/// The row a run's latencies and counters make, over `elapsed` ns.
fn row(
    device_name: &str,
    spec: &ProfileSpec,
    latencies: &Latencies,
    elapsed: Nanos,
    before: &DeviceStats,
    after: &DeviceStats,
) -> ProfileRow {
    let elapsed_s = elapsed.max(1) as f64 / 1e9;
    let n = latencies.count() as f64;
    let us = |ns: Nanos| ns as f64 / 1e3;
    ProfileRow {
        device: device_name.to_string(),
        pattern: spec.pattern.code().to_string(),
        block_size: spec.block_size,
        iodepth: spec.iodepth,
        ops: spec.ops,
        iops: n / elapsed_s,
        mb_per_s: n * spec.block_size as f64 / elapsed_s / 1e6,
        mean_latency_us: latencies.mean() / 1e3,
        p99_latency_us: us(latencies.quantile(0.99)),
        p50_latency_us: us(latencies.quantile(0.50)),
        p95_latency_us: us(latencies.quantile(0.95)),
        p999_latency_us: us(latencies.quantile(0.999)),
        max_latency_us: us(latencies.max()),
        energy_uj_per_op: (after.energy_nj - before.energy_nj) as f64 / n / 1e3,
        erases: after.block_erases - before.block_erases,
        ftl: after.ftl.since(&before.ftl),
    }
}

/// Writes `[0, len)` once in large sequential requests, or has the device
/// set up that state directly where it can (a fresh page-mapped FTL: the
/// same mapping, no simulated writes; see `BlockDevice::fill_sequential`).
pub fn precondition(dev: &mut dyn BlockDevice, len: u64) -> Result<(), DeviceError> {
    if dev.fill_sequential(len)? {
        return Ok(());
    }
    write_span(dev, len, &mut |_| {})
}

/// Writes `[0, len)` once in large sequential requests, simulating each;
/// `tick` counts the MiB written.
fn write_span(
    dev: &mut dyn BlockDevice,
    len: u64,
    tick: &mut dyn FnMut(u64),
) -> Result<(), DeviceError> {
    let g = dev.geometry();
    let step = (1u64 << 20).max(g.erase_unit.unwrap_or(0));
    let mut off = 0;
    while off < len {
        let n = step.min(len - off);
        if g.program_once && dev.is_programmed(off, n) {
            update_in_place(dev, off, &vec![0u8; n as usize])?;
        } else {
            dev.write_zeros(off, n)?;
        }
        tick((off + n).div_ceil(MIB) - off.div_ceil(MIB));
        off += n;
    }
    Ok(())
}

struct Generator {
    pattern: Pattern,
    rng: SmallRng,
    next_seq: u64,
    blocks: u64,
    block: u64,
}

impl Generator {
    fn next(&mut self) -> QueuedIo {
        let (index, write) = match self.pattern {
            Pattern::SeqRead | Pattern::SeqWrite => {
                let i = self.next_seq % self.blocks;
                self.next_seq += 1;
                (i, self.pattern == Pattern::SeqWrite)
            }
            Pattern::RandRead => (self.rng.gen_range(0..self.blocks), false),
            Pattern::RandWrite => (self.rng.gen_range(0..self.blocks), true),
            Pattern::Mix => {
                let w = self.rng.gen_bool(0.5);
                (self.rng.gen_range(0..self.blocks), w)
            }
        };
        QueuedIo {
            offset: index * self.block,
            len: self.block,
            write,
        }
    }
}

struct Io<'a> {
    dev: &'a mut dyn BlockDevice,
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

impl Io<'_> {
    fn submit(&mut self, at: Nanos, req: QueuedIo) -> Result<Completion, DeviceError> {
        if !req.write {
            return self.dev.read_at(at, req.offset, &mut self.scratch);
        }
        if self.dev.geometry().program_once && self.dev.is_programmed(req.offset, req.len) {
            // The in-place update is a synchronous read-erase-rewrite sequence:
            // it starts when the device is free, and the request waited from `at`.
            let c = update_in_place(self.dev, req.offset, &self.buf)?;
            return Ok(Completion {
                start: c.start.max(at),
                ..c
            });
        }
        self.dev.write_at(at, req.offset, &self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashkv_device::presets;

    fn spec(pattern: Pattern, bs: u64, qd: usize) -> ProfileSpec {
        ProfileSpec {
            pattern,
            block_size: bs,
            ops: 500,
            span: 64 << 20,
            iodepth: qd,
            seed: 7,
        }
    }

    #[test]
    fn dram_random_read_matches_overhead_plus_transfer() {
        let mut dev = presets::open("dram-ssd").unwrap();
        let row = run(&mut dev, "dram-ssd", &spec(Pattern::RandRead, 4096, 1)).unwrap();
        // 32 us overhead + 4096 B at 88 MB/s = 46.545 us -> 78.545 us per op.
        let expect = 1e6 / 78.545;
        assert!((row.iops - expect).abs() / expect < 1e-3, "{}", row.iops);
        assert_eq!(row.ops, 500);
        assert_eq!(row.erases, 0);
    }

    #[test]
    fn queue_depth_on_a_single_server_adds_latency_not_iops() {
        let mut a = presets::open("dram-ssd").unwrap();
        let mut b = presets::open("dram-ssd").unwrap();
        let q1 = run(&mut a, "d", &spec(Pattern::RandWrite, 8192, 1)).unwrap();
        let q2 = run(&mut b, "d", &spec(Pattern::RandWrite, 8192, 2)).unwrap();
        assert!((q1.iops - q2.iops).abs() / q1.iops < 0.01);
        assert!((q2.mean_latency_us / q1.mean_latency_us - 2.0).abs() < 0.02);
    }

    #[test]
    fn runs_are_deterministic() {
        let r = |seed| {
            let mut d = presets::open("dram-ssd").unwrap();
            run(
                &mut d,
                "d",
                &ProfileSpec {
                    seed,
                    ..spec(Pattern::Mix, 4096, 4)
                },
            )
            .unwrap()
        };
        assert_eq!(r(1), r(1));
    }

    #[test]
    fn fast_preconditioning_measures_what_the_simulated_fill_does() {
        let mut fast = presets::open("ssd-x25m").unwrap();
        let mut slow = presets::open("ssd-x25m").unwrap();
        let spec = ProfileSpec {
            pattern: Pattern::RandWrite,
            block_size: 4096,
            ops: 20_000,
            span: fast.geometry().capacity,
            iodepth: 4,
            seed: 3,
        };
        let a = run(&mut fast, "d", &spec).unwrap();
        write_span(&mut slow, spec.span, &mut |_| {}).unwrap();
        let b = run_prepared(&mut slow, "d", &spec).unwrap();
        assert_eq!(a, b);
        let (sa, sb) = (fast.stats(), slow.stats());
        assert!(sa.gc_page_moves > 0, "{sa:?}");
        assert_eq!(sa.gc_page_moves, sb.gc_page_moves);
        assert_eq!(sa.erase_counts, sb.erase_counts);
    }

    /// The progress callback counts exactly the work [`work`] announces,
    /// with a simulated fill (hdd) and a direct one (FTL), and the row is
    /// the one `run` gives.
    #[test]
    fn observed_runs_tick_through_all_their_work() {
        for (preset, pattern, span) in [
            ("hdd-7200", Pattern::RandWrite, 9 << 20),
            ("ssd-x25m", Pattern::RandWrite, 64 << 20),
            ("nvme", Pattern::RandRead, 64 << 20),
        ] {
            let s = ProfileSpec {
                pattern,
                block_size: 4096,
                ops: 2500,
                span,
                iodepth: 2,
                seed: 1,
            };
            let mut ticks = Vec::new();
            let mut d = presets::open(preset).unwrap();
            let row = run_observed(&mut d, "d", &s, &mut |n| ticks.push(n)).unwrap();
            assert_eq!(ticks.iter().sum::<u64>(), work(&s), "{preset}");
            assert!(ticks.len() >= 3, "{preset}: {ticks:?}");
            let mut d = presets::open(preset).unwrap();
            assert_eq!(row, run(&mut d, "d", &s).unwrap());
        }
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut d = presets::open("dram-ssd").unwrap();
        let cap = d.geometry().capacity;
        let bad = |s: ProfileSpec, d: &mut dyn BlockDevice| run(d, "d", &s).unwrap_err();
        assert!(matches!(
            bad(spec(Pattern::SeqRead, 0, 1), &mut d),
            ProfileError::BadBlockSize { .. }
        ));
        assert!(matches!(
            bad(spec(Pattern::SeqRead, 1000, 1), &mut d),
            ProfileError::BadBlockSize { .. }
        ));
        assert!(matches!(
            bad(
                ProfileSpec {
                    span: cap + 512,
                    ..spec(Pattern::SeqRead, 4096, 1)
                },
                &mut d
            ),
            ProfileError::SpanTooLarge { .. }
        ));
        assert!(matches!(
            bad(
                ProfileSpec {
                    ops: 0,
                    ..spec(Pattern::SeqRead, 4096, 1)
                },
                &mut d
            ),
            ProfileError::Zero
        ));
    }
}
