//! Scratch (not committed): memory of a 300k-pair bulk batch.
use flashkv_engine::*;
use rand::{Rng, SeedableRng};
fn rss() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .filter(|l| l.starts_with("VmHWM") || l.starts_with("VmRSS"))
        .collect::<Vec<_>>()
        .join(" ")
}
fn main() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("s");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let pairs: Vec<([u8; 24], [u8; 150])> = (0..300_000).map(|_| (rng.gen(), [7u8; 150])).collect();
    eprintln!("start {}", rss());
    let db = Db::create(&path, Options::builder().sync(true).build().unwrap()).unwrap();
    let mut b = WriteBatch::default();
    for (k, v) in &pairs {
        b.put(k, v);
    }
    eprintln!("batch built {}", rss());
    db.write(b).unwrap();
    eprintln!("written {}", rss());
    db.close().unwrap();
    eprintln!("closed {}", rss());
}
