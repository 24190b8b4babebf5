//! Scratch: point reads and 10-key ranges after a reopen, as the bench does.
use flashkv_engine::*;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
fn main() {
    let path = std::path::PathBuf::from("/var/tmp/fk/reads.db");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let keys: Vec<[u8; 24]> = (0..300_000).map(|_| rng.gen()).collect();
    if !path.exists() {
        let db = Db::create(&path, Options::builder().sync(true).build().unwrap()).unwrap();
        let mut b = WriteBatch::default();
        for k in &keys {
            b.put(k, &[1u8; 150]);
        }
        db.write(b).unwrap();
    }
    let db = Db::open_path(&path, Options::builder().sync(true).build().unwrap()).unwrap();
    let what = std::env::args().nth(1).unwrap_or_default();
    let t = std::time::Instant::now();
    let mut n = 0usize;
    if what != "ranges" {
        for _ in 0..1 {
            for _ in 0..300_000 {
                let k = &keys[rng.gen_range(0..keys.len())];
                n += db.get_with(k, |v| v.map_or(0, |v| v.len())).unwrap();
            }
        }
        eprintln!("gets: {:.0}/s", 300_000.0 / t.elapsed().as_secs_f64());
    }
    let t = std::time::Instant::now();
    if what != "gets" {
        for _ in 0..100_000 {
            let k = &keys[rng.gen_range(0..keys.len())];
            for p in db
                .range::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Included(&k[..]), Bound::Unbounded))
                .take(10)
            {
                n += p.unwrap().1.len();
            }
        }
        eprintln!("ranges: {:.0}/s", 100_000.0 / t.elapsed().as_secs_f64());
    }
    eprintln!("{n} {:?}", db.stats().buffer);
}
