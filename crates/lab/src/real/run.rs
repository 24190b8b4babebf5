//! Runs one access pattern on real storage with `iodepth` threads, each
//! keeping one synchronous request outstanding on its own descriptor (as fio
//! does with `numjobs` × `ioengine=psync`): the device sees `iodepth`
//! requests at a time. Sequential patterns share one block counter, so the
//! threads together stream through the span in order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flashkv_device::{BlockDevice, FileDevice, Latencies};
use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};

use crate::profile::{Pattern, ProfileError, ProfileRow};

/// When a run stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// After this many requests in all.
    Ops(u64),
    /// After this much wall time.
    Time(Duration),
}

/// One real profiling run.
#[derive(Debug, Clone)]
pub struct RealSpec {
    pub pattern: Pattern,
    pub block_size: u64,
    /// Offset of the test span (past an own file's header).
    pub base: u64,
    pub span: u64,
    pub budget: Budget,
    /// Same pattern run first, unmeasured (caches, FTL state, disk spin).
    pub warmup: Duration,
    pub seed: u64,
}

/// Runs `spec` with one thread per device in `devs` (its iodepth).
/// `progress` gets the measured phase's completed fraction now and then.
pub fn run(
    devs: &mut [FileDevice],
    name: &str,
    spec: &RealSpec,
    progress: &(dyn Fn(f64) + Sync),
) -> Result<ProfileRow, ProfileError> {
    validate(devs, spec)?;
    // Sequential runs go on from where the warm-up stopped, as fio's ramp
    // does, rather than rewriting blocks the warm-up has just written.
    let cursor = AtomicU64::new(0);
    if !spec.warmup.is_zero() {
        phase(devs, spec, Budget::Time(spec.warmup), &cursor, &|_| {})?;
    }
    let (lat, elapsed) = phase(devs, spec, spec.budget, &cursor, progress)?;
    if spec.pattern.writes() {
        // Outside the timing, as fio ends a direct-I/O job without fsync.
        devs[0].flush()?;
    }
    let n = lat.count() as f64;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rank = |q: f64| lat.quantile(q) as f64 / 1e3;
    Ok(ProfileRow {
        device: name.to_string(),
        pattern: spec.pattern.code().to_string(),
        block_size: spec.block_size,
        iodepth: devs.len(),
        ops: lat.count(),
        iops: n / secs,
        mb_per_s: n * spec.block_size as f64 / secs / 1e6,
        mean_latency_us: lat.mean() / 1e3,
        p99_latency_us: rank(0.99),
        p50_latency_us: rank(0.50),
        p95_latency_us: rank(0.95),
        p999_latency_us: rank(0.999),
        max_latency_us: lat.max() as f64 / 1e3,
        // A file has no energy meter or erase counter.
        energy_uj_per_op: 0.0,
        erases: 0,
        ftl: Default::default(),
    })
}

fn validate(devs: &[FileDevice], spec: &RealSpec) -> Result<(), ProfileError> {
    let Some(first) = devs.first() else {
        return Err(ProfileError::Zero);
    };
    let g = first.geometry();
    let sector = u64::from(g.sector_size);
    if spec.block_size == 0 || spec.block_size % sector != 0 {
        return Err(ProfileError::BadBlockSize {
            block: spec.block_size,
            sector: g.sector_size,
        });
    }
    if spec.base + spec.span > g.capacity {
        return Err(ProfileError::SpanTooLarge {
            span: spec.span,
            capacity: g.capacity - spec.base.min(g.capacity),
        });
    }
    if spec.span < spec.block_size {
        return Err(ProfileError::SpanTooSmall {
            span: spec.span,
            block: spec.block_size,
        });
    }
    if spec.budget == Budget::Ops(0) {
        return Err(ProfileError::Zero);
    }
    Ok(())
}

/// One timed phase: its request latencies and the wall time it took.
fn phase(
    devs: &mut [FileDevice],
    spec: &RealSpec,
    budget: Budget,
    next_seq: &AtomicU64,
    progress: &(dyn Fn(f64) + Sync),
) -> Result<(Latencies, Duration), ProfileError> {
    let claimed = AtomicU64::new(0);
    let start = Instant::now();
    let results: Vec<Result<Latencies, ProfileError>> = std::thread::scope(|s| {
        let handles: Vec<_> = devs
            .iter_mut()
            .enumerate()
            .map(|(i, dev)| {
                let claimed = &claimed;
                let report = (i == 0).then_some(progress);
                s.spawn(move || {
                    let w = Worker {
                        spec,
                        budget,
                        start,
                        claimed,
                        next_seq,
                        rng: SmallRng::seed_from_u64(spec.seed.wrapping_add(i as u64)),
                    };
                    w.go(dev, report)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("profile thread panicked"))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut lat = Latencies::default();
    for r in results {
        lat.merge(&r?);
    }
    Ok((lat, elapsed))
}

struct Worker<'a> {
    spec: &'a RealSpec,
    budget: Budget,
    start: Instant,
    claimed: &'a AtomicU64,
    next_seq: &'a AtomicU64,
    rng: SmallRng,
}

impl Worker<'_> {
    fn go(
        mut self,
        dev: &mut FileDevice,
        report: Option<&(dyn Fn(f64) + Sync)>,
    ) -> Result<Latencies, ProfileError> {
        let bs = self.spec.block_size;
        let blocks = self.spec.span / bs;
        // Page-aligned, so O_DIRECT transfers need no bounce copy.
        let mut store = vec![0u8; bs as usize + 4096];
        let skip = store.as_ptr().align_offset(4096);
        let buf = &mut store[skip..skip + bs as usize];
        self.rng.fill_bytes(buf);
        let mut lat = Latencies::default();
        let mut last_report = Instant::now();
        while let Some(done) = self.claim() {
            let (index, write) = match self.spec.pattern {
                Pattern::SeqRead | Pattern::SeqWrite => (
                    self.next_seq.fetch_add(1, Ordering::Relaxed) % blocks,
                    self.spec.pattern == Pattern::SeqWrite,
                ),
                Pattern::RandRead => (self.rng.gen_range(0..blocks), false),
                Pattern::RandWrite => (self.rng.gen_range(0..blocks), true),
                Pattern::Mix => (self.rng.gen_range(0..blocks), self.rng.gen_bool(0.5)),
            };
            let off = self.spec.base + index * bs;
            let t = Instant::now();
            if write {
                dev.write_at(0, off, buf)?;
            } else {
                dev.read_at(0, off, buf)?;
            }
            lat.record(t.elapsed().as_nanos() as u64);
            if let Some(report) = report {
                if last_report.elapsed() >= Duration::from_millis(100) {
                    report(done);
                    last_report = Instant::now();
                }
            }
        }
        Ok(lat)
    }

    /// Takes the next request if the budget allows it; returns the fraction done.
    fn claim(&self) -> Option<f64> {
        match self.budget {
            Budget::Ops(n) => {
                let i = self.claimed.fetch_add(1, Ordering::Relaxed);
                (i < n).then(|| i as f64 / n as f64)
            }
            Budget::Time(d) => {
                let e = self.start.elapsed();
                (e < d).then(|| e.as_secs_f64() / d.as_secs_f64())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::{prepare, TargetOptions};

    #[test]
    fn every_pattern_produces_a_row_with_the_requested_ops() {
        let dir = tempfile::tempdir().unwrap();
        let t = prepare(
            &dir.path().join("f"),
            &TargetOptions {
                span: Some(4 << 20),
                writes: true,
                force: false,
                direct: true,
            },
        )
        .unwrap();
        let mut devs = t.open(3).unwrap();
        for pattern in Pattern::ALL {
            let spec = RealSpec {
                pattern,
                block_size: 64 << 10,
                base: t.base,
                span: t.span,
                budget: Budget::Ops(100),
                warmup: Duration::ZERO,
                seed: 1,
            };
            let row = run(&mut devs, "f", &spec, &|_| {}).unwrap();
            assert_eq!((row.ops, row.iodepth), (100, 3));
            assert!(row.iops > 0.0 && row.mean_latency_us > 0.0);
            assert!(row.p99_latency_us >= row.mean_latency_us * 0.5);
        }
        let marker = std::fs::read(&t.path).unwrap();
        assert!(
            marker.starts_with(crate::real::MARKER),
            "writes stay past the header"
        );
    }

    #[test]
    fn a_time_budget_stops_and_bad_specs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let t = prepare(
            &dir.path().join("f"),
            &TargetOptions {
                span: Some(1 << 20),
                writes: false,
                force: false,
                direct: false,
            },
        )
        .unwrap();
        let mut devs = t.open(1).unwrap();
        let spec = RealSpec {
            pattern: Pattern::RandRead,
            block_size: 4096,
            base: t.base,
            span: t.span,
            budget: Budget::Time(Duration::from_millis(50)),
            warmup: Duration::from_millis(10),
            seed: 1,
        };
        let row = run(&mut devs, "f", &spec, &|_| {}).unwrap();
        assert!(row.ops > 0);
        let bad = |s: RealSpec, devs: &mut [FileDevice]| run(devs, "f", &s, &|_| {}).unwrap_err();
        let e = bad(
            RealSpec {
                block_size: 1000,
                ..spec.clone()
            },
            &mut devs,
        );
        assert!(matches!(e, ProfileError::BadBlockSize { .. }));
        let e = bad(
            RealSpec {
                span: 2 << 20,
                ..spec.clone()
            },
            &mut devs,
        );
        assert!(matches!(e, ProfileError::SpanTooLarge { .. }));
        let e = bad(
            RealSpec {
                pattern: Pattern::SeqWrite,
                ..spec.clone()
            },
            &mut devs,
        );
        assert!(
            matches!(e, ProfileError::Device(_)),
            "read-only target: {e}"
        );
    }
}
