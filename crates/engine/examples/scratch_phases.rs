//! Scratch (not committed): the bench's write phases with per-phase stats.
use flashkv_engine::*;
use rand::{Rng, SeedableRng};
fn rss() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .filter(|l| l.starts_with("VmHWM") || l.starts_with("VmRSS"))
        .collect::<Vec<_>>()
        .join(" ")
}
fn io() -> u64 {
    let s = std::fs::read_to_string("/proc/self/io").unwrap();
    s.lines()
        .find(|l| l.starts_with("write_bytes"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}
fn show(what: &str, a: &Stats, b: &Stats, user: u64, w0: u64) {
    let w = io() - w0;
    eprintln!("{what}: wa {:.2} (io {:.1} MB) data {:.1} MB wal {:.1} MB writer {} evict {} ckpt {} flushes {} switches {} ckpts {} stalls {} | {}",
        w as f64 / user.max(1) as f64, w as f64 / 1e6,
        (b.data_io.write_bytes - a.data_io.write_bytes) as f64 / 1e6,
        (b.wal_io.write_bytes - a.wal_io.write_bytes) as f64 / 1e6,
        b.buffer.writer_pages - a.buffer.writer_pages, b.buffer.eviction_pages - a.buffer.eviction_pages,
        b.buffer.checkpoint_pages - a.buffer.checkpoint_pages, b.device_flushes - a.device_flushes,
        b.switches - a.switches, b.checkpoints - a.checkpoints, b.stalls - a.stalls, rss());
}
fn main() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("s");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let sync = std::env::var("NOSYNC").is_err();
    let opts = || Options::builder().sync(sync).build().unwrap();
    let pairs: Vec<([u8; 24], [u8; 150])> = (0..351_500).map(|_| (rng.gen(), [7u8; 150])).collect();
    let nb: usize = std::env::var("NB")
        .map(|v| v.parse().unwrap())
        .unwrap_or(50);
    let mut pairs: Vec<([u8; 24], [u8; 150])> = pairs;
    pairs.extend((0..nb * 1000 - 50_000).map(|_| (rng.gen(), [7u8; 150])));
    let batched = pairs.split_off(300_500);
    let puts = pairs.split_off(300_000);
    eprintln!("start {}", rss());
    let tpl = std::path::Path::new("/var/tmp/fk/phases.db");
    if std::env::var("TPL").is_ok() && tpl.exists() {
        std::fs::copy(tpl, &path).unwrap();
    } else {
        let db = Db::create(&path, opts()).unwrap();
        let (s0, w0) = (db.stats(), io());
        let mut b = WriteBatch::default();
        for (k, v) in &pairs {
            b.put(k, v);
        }
        let t = std::time::Instant::now();
        db.write(b).unwrap();
        let el = t.elapsed();
        show(
            &format!("bulk {:.0}/s", 300_000.0 / el.as_secs_f64()),
            &s0,
            &db.stats(),
            300_000 * 174,
            w0,
        );
        let (s0, w0) = (db.stats(), io());
        db.close().unwrap();
        eprintln!("  close io {:.1} MB", (io() - w0) as f64 / 1e6);
        let _ = s0;
        let db = Db::open_path(&path, opts()).unwrap();
        let (s0, w0) = (db.stats(), io());
        let t = std::time::Instant::now();
        for (k, v) in &puts {
            db.put(k, v).unwrap();
        }
        let el = t.elapsed();
        show(
            &format!("puts {:.0}/s", 500.0 / el.as_secs_f64()),
            &s0,
            &db.stats(),
            500 * 174,
            w0,
        );
        let w1 = io();
        db.close().unwrap();
        eprintln!(
            "  close io {:.1} MB -> wa through close {:.1}",
            (io() - w1) as f64 / 1e6,
            (io() - w0) as f64 / (500.0 * 174.0)
        );
        if std::env::var("TPL").is_ok() {
            std::fs::copy(&path, tpl).unwrap();
        }
    }
    let db = Db::open_path(&path, opts()).unwrap();
    let (s0, w0) = (db.stats(), io());
    let t = std::time::Instant::now();
    for c in batched.chunks(1000) {
        let mut b = WriteBatch::default();
        for (k, v) in c {
            b.put(k, v);
        }
        db.write(b).unwrap();
    }
    let el = t.elapsed();
    show(
        &format!("batches {:.0}/s", batched.len() as f64 / el.as_secs_f64()),
        &s0,
        &db.stats(),
        batched.len() as u64 * 174,
        w0,
    );
    let (s1, w1) = (db.stats(), io());
    let _ = s1;
    db.close().unwrap();
    eprintln!(
        "  close io {:.1} MB -> wa through close {:.1}",
        (io() - w1) as f64 / 1e6,
        (io() - w0) as f64 / (batched.len() as f64 * 174.0)
    );
    eprintln!("after close {}", rss());
    let db = Db::open_path(&path, opts()).unwrap();
    eprintln!("reopen {}", rss());
    let mut n = 0usize;
    for p in db.range::<std::ops::RangeFull>(..) {
        n += p.unwrap().1.len();
    }
    let s = db.stats();
    eprintln!(
        "scanned {n}; resident {} pages ({:.1} MB) {}",
        s.resident_pages,
        s.resident_pages as f64 * 4096.0 / 1e6,
        rss()
    );
}
