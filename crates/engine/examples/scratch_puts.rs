//! Scratch (not committed): durable single puts.
use flashkv_engine::*;
use rand::{Rng, SeedableRng};
fn main() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("s");
    let src = std::env::var("SRC").unwrap_or("/var/tmp/fk/phases.db".into());
    if std::env::var("FRESH").is_err() {
        std::process::Command::new("cp")
            .args([
                std::env::var("CPMODE")
                    .unwrap_or("--sparse=always".into())
                    .as_str(),
                &src,
                path.to_str().unwrap(),
            ])
            .status()
            .unwrap();
    }
    let db = if std::env::var("FRESH").is_ok() {
        Db::create(&path, Options::builder().sync(true).build().unwrap()).unwrap()
    } else {
        Db::open_path(&path, Options::builder().sync(true).build().unwrap()).unwrap()
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    let n: usize = std::env::var("N")
        .map(|v| v.parse().unwrap())
        .unwrap_or(500);
    let t = std::time::Instant::now();
    for _ in 0..n {
        let k: [u8; 24] = rng.gen();
        db.put(&k, &[3u8; 150]).unwrap();
    }
    eprintln!("{:.0} puts/s", n as f64 / t.elapsed().as_secs_f64());
    db.close().unwrap();
}
