//! How fast the simulation runs: simulated 4 KB random reads and writes per
//! second of host CPU, on `nvme` (page-mapped FTL) and `hdd-15k`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use flashkv_device::{presets, BlockDevice};
use rand::{rngs::SmallRng, Rng, SeedableRng};

const SPAN: u64 = 256 << 20;
const BATCH: u64 = 4096;

fn bench(c: &mut Criterion) {
    for preset in ["nvme", "hdd-15k"] {
        let mut g = c.benchmark_group(preset);
        g.throughput(Throughput::Elements(BATCH));
        let mut dev = presets::open(preset).unwrap();
        let mut buf = vec![0u8; 4096];
        // Write the span once so reads hit mapped pages and writes overwrite.
        for off in (0..SPAN).step_by(1 << 20) {
            dev.write(off, &[1u8; 1 << 20]).unwrap();
        }
        let mut rng = SmallRng::seed_from_u64(1);
        g.bench_function("4k-random-read", |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    let off = rng.gen_range(0..SPAN / 4096) * 4096;
                    dev.read(off, &mut buf).unwrap();
                }
            })
        });
        g.bench_function("4k-random-write", |b| {
            b.iter_batched(
                || (),
                |_| {
                    for _ in 0..BATCH {
                        let off = rng.gen_range(0..SPAN / 4096) * 4096;
                        dev.write(off, &buf).unwrap();
                    }
                },
                BatchSize::PerIteration,
            )
        });
        g.finish();
    }
}

/// Reads over the whole of a fresh `nvme` (no preconditioning): what the
/// model itself costs per simulated read.
fn fresh_reads(c: &mut Criterion) {
    let mut g = c.benchmark_group("nvme-fresh");
    g.throughput(Throughput::Elements(BATCH));
    let mut dev = presets::open("nvme").unwrap();
    let pages = dev.geometry().capacity / 4096;
    let mut buf = vec![0u8; 4096];
    let mut rng = SmallRng::seed_from_u64(2);
    g.bench_function("4k-random-read", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                let off = rng.gen_range(0..pages) * 4096;
                dev.read(off, &mut buf).unwrap();
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench, fresh_reads);
criterion_main!(benches);
