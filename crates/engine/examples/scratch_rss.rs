//! Scratch (not committed): RSS of a reopened store read whole.
use flashkv_engine::*;
fn rss() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .filter(|l| l.starts_with("VmHWM") || l.starts_with("VmRSS"))
        .collect::<Vec<_>>()
        .join(" ")
}
fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).unwrap());
    eprintln!("start {}", rss());
    let db = Db::open_path(&path, Options::builder().sync(true).build().unwrap()).unwrap();
    eprintln!("open {}", rss());
    let mut n = 0usize;
    for p in db.range::<std::ops::RangeFull>(..) {
        n += p.unwrap().1.len();
    }
    let s = db.stats();
    eprintln!(
        "scanned {n} bytes; resident {} pages ({:.1} MB) allocated {} {}",
        s.resident_pages,
        s.resident_pages as f64 * 4096.0 / 1e6,
        s.pages_allocated,
        rss()
    );
    db.close().unwrap();
    eprintln!("closed {}", rss());
}
