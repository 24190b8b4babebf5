//! get / put / scan on a real file and on the simulated `nvme` SSD, for
//! both page stores. Wall time: the engine's CPU cost plus, for the file,
//! the page cache and fdatasync at checkpoints (puts are not synced one by one).

use std::ops::Bound;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use flashkv_engine::{Db, IplGeometry, Options, StoreKind};
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
            let opts = Options::default()
                .store(kind)
                .buffer_pages(256)
                .max_size(256 << 20);
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

criterion_group!(benches, bench);
criterion_main!(benches);
