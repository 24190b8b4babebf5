//! Scratch (not committed): memory of deleting half the keys in one batch.
use flashkv_engine::*;
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
    std::fs::copy("/var/tmp/fk/phases.db", &path).unwrap();
    let db = Db::open_path(&path, Options::builder().sync(true).build().unwrap()).unwrap();
    let keys: Vec<Vec<u8>> = db
        .range::<std::ops::RangeFull>(..)
        .map(|p| p.unwrap().0)
        .collect();
    eprintln!("read {} {}", keys.len(), rss());
    let mut b = WriteBatch::default();
    for k in keys.iter().step_by(2) {
        b.delete(k);
    }
    eprintln!("batch {}", rss());
    let t = std::time::Instant::now();
    db.write(b).unwrap();
    eprintln!("delete {:.0}/s", 150_250.0 / t.elapsed().as_secs_f64());
    let s = db.stats();
    eprintln!("deleted: resident {} {}", s.resident_pages, rss());
    db.close().unwrap();
    eprintln!("closed {}", rss());
}
