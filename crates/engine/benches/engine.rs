//! get / put / scan on a real file and on the simulated `nvme` SSD, for
//! both page stores. Wall time: the engine's CPU cost plus, for the file,
//! the page cache and fdatasync at checkpoints (puts are not synced one by one).

use std::ops::Bound;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use flashkv_engine::{Db, IplGeometry, LabOptions, Options, StoreKind};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const KEYS: u32 = 20_000;

fn key(i: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&i.wrapping_mul(2654435761).to_be_bytes());
    k[12..].copy_from_slice(&i.to_be_bytes());
    k
}

fn loaded(db: Db) -> Db {
    for i in 0..KEYS {
        db.put(&key(i), &[i as u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let kinds = [
        ("in-place", StoreKind::InPlace),
        ("ipl", StoreKind::InPageLogging(IplGeometry::seed())),
    ];
    for (kname, kind) in kinds {
        for dev in ["file", "nvme"] {
            let opts = Options::builder()
                .store(kind)
                .buffer_pages(256)
                .max_size(256 << 20)
                .build()
                .unwrap();
            let open = || match dev {
                "file" => {
                    let path = dir
                        .path()
                        .join(format!("{kname}-{}", rand::random::<u32>()));
                    Db::create(path, opts.clone()).unwrap()
                }
                _ => Db::open(
                    Box::new(flashkv_device::presets::open("nvme").unwrap()),
                    opts.clone(),
                )
                .unwrap(),
            };
            let db = loaded(open());
            let mut g = c.benchmark_group(format!("{dev}/{kname}"));
            g.sample_size(20)
                .measurement_time(std::time::Duration::from_secs(2));
            let mut rng = SmallRng::seed_from_u64(1);
            g.bench_function("get", |b| {
                b.iter(|| db.get(&key(rng.gen_range(0..KEYS))).unwrap().unwrap())
            });
            let mut n = KEYS;
            g.bench_function("put", |b| {
                b.iter(|| {
                    n += 1;
                    db.put(&key(n), &[7u8; 100]).unwrap()
                })
            });
            g.bench_function("scan100", |b| {
                b.iter_batched(
                    || key(rng.gen_range(0..KEYS)),
                    |k| {
                        let from = (Bound::Included(&k[..]), Bound::Unbounded);
                        db.scan_dir(from, false, 100).unwrap()
                    },
                    BatchSize::SmallInput,
                )
            });
            g.finish();
        }
    }
}

/// Get latency with 1k and 100k resident frames, on a hot set resident in
/// both: buffer bookkeeping must not grow with the frames (it once walked
/// all of them on every get).
fn frames(c: &mut Criterion) {
    const PAGES: u32 = 100_000;
    let mut g = c.benchmark_group("frames");
    g.sample_size(20)
        .measurement_time(std::time::Duration::from_secs(2));
    for frames in [1_000usize, 100_000] {
        let dev = Box::new(flashkv_device::presets::open("dram-ssd").unwrap());
        let opts = Options::builder().buffer_pages(frames).lab(LabOptions {
            wal: false,
            ..LabOptions::default()
        });
        let db = Db::open(dev, opts.build().unwrap()).unwrap();
        // Two values of 1,800 bytes fill a leaf: 2 * PAGES keys, PAGES leaves.
        for i in 0..2 * PAGES {
            db.put(&key(i), &[1u8; 1800]).unwrap();
        }
        for i in 0..2 * PAGES {
            db.get(&key(i)).unwrap();
        }
        let hot: Vec<[u8; 16]> = (0..500).map(key).collect();
        for k in &hot {
            db.get(k).unwrap();
        }
        assert!(db.stats().resident_pages >= frames.min(PAGES as usize) * 9 / 10);
        let mut i = 0;
        g.bench_function(format!("get/{frames}"), |b| {
            b.iter(|| {
                i = (i + 7) % hot.len();
                db.get(&hot[i]).unwrap().unwrap()
            })
        });
    }
    g.finish();
}

/// Random point reads of a cached store from 1 and 2 threads: the time
/// per read of each thread, so 2 threads scaling perfectly show the same
/// time as 1 (criterion's throughput is per thread).
fn threads(c: &mut Criterion) {
    let dev = Box::new(flashkv_device::presets::open("dram-ssd").unwrap());
    let db = loaded(Db::open(dev, Options::builder().buffer_pages(4096).build().unwrap()).unwrap());
    for i in 0..KEYS {
        db.get(&key(i)).unwrap();
    }
    let mut g = c.benchmark_group("threads");
    g.sample_size(20)
        .measurement_time(std::time::Duration::from_secs(3));
    for n in [1usize, 2] {
        g.bench_function(format!("get/{n}"), |b| {
            b.iter_custom(|iters| {
                let start = std::time::Instant::now();
                std::thread::scope(|s| {
                    for t in 0..n {
                        let db = &db;
                        s.spawn(move || {
                            let mut rng = SmallRng::seed_from_u64(t as u64);
                            for _ in 0..iters {
                                db.get(&key(rng.gen_range(0..KEYS))).unwrap().unwrap();
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench, frames, threads);
criterion_main!(benches);
