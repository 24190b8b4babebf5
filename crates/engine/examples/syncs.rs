//! Scratch: durable batches on a file store, flushes per commit.
use flashkv_engine::*;
use rand::{Rng, SeedableRng};
fn main() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let ipl = std::env::var("IPL").is_ok();
    let kind = if ipl {
        StoreKind::InPageLogging(IplGeometry::seed())
    } else {
        StoreKind::InPlace
    };
    let path = dir.path().join("s");
    let mut o = Options::builder().store(kind).sync(true);
    if let Ok(c) = std::env::var("CACHE_MB") {
        o = o.cache_size(c.parse::<u64>().unwrap() << 20);
    }
    let db = Db::create(&path, o.build().unwrap()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut b = WriteBatch::default();
    for _ in 0..300_000 {
        let k: [u8; 24] = rng.gen();
        b.put(&k, &[1u8; 150]);
    }
    let t = std::time::Instant::now();
    db.write(b).unwrap();
    let s = db.stats();
    eprintln!(
        "{} bulk {:?} switches {} ckpts {} wal MB {:.1} data MB {:.1}",
        kind.name(),
        t.elapsed(),
        s.switches,
        s.checkpoints,
        s.wal_io.write_bytes as f64 / 1e6,
        s.data_io.write_bytes as f64 / 1e6
    );
    let s0 = db.stats();
    let t = std::time::Instant::now();
    for _ in 0..50 {
        let mut b = WriteBatch::default();
        for _ in 0..1000 {
            let k: [u8; 24] = rng.gen();
            b.put(&k, &[2u8; 150]);
        }
        db.write(b).unwrap();
    }
    let el = t.elapsed();
    let s1 = db.stats();
    eprintln!("batches: {:.0} puts/s, flushes/commit {:.2}, switches {}, stalls {}, wal MB {:.1}, data MB {:.1}, merges {}, buf {:?}",
        50_000.0 / el.as_secs_f64(), (s1.device_flushes - s0.device_flushes) as f64 / 50.0, s1.switches - s0.switches, s1.stalls - s0.stalls,
        (s1.wal_io.write_bytes - s0.wal_io.write_bytes) as f64 / 1e6, (s1.data_io.write_bytes - s0.data_io.write_bytes) as f64 / 1e6, s1.store.merges - s0.store.merges, s1.buffer);
}
