//! Each trace format, written to a file, parses and replays with counts that
//! add up; replay works on a plain device and on a hybrid.

mod common;

use std::fmt::Write as _;

use flashkv_hybrid::replay::{replay, Timing};
use flashkv_hybrid::trace::{read_file, Format, TraceError};
use flashkv_hybrid::{HybridDevice, Options};

/// 200 requests: every 5th a write, every 50th zero-length, some past 1 GiB.
fn requests() -> Vec<(u64, u64, u64, bool)> {
    (0..200u64)
        .map(|i| {
            let sector = (i * 79_193) % 4_000_000;
            let sectors = if i % 50 == 7 { 0 } else { 1 + i % 16 };
            (i * 250_000, sector, sectors, i % 5 == 0) // (ns, sector, sectors, write)
        })
        .collect()
}

fn write_trace(format: Format) -> (tempfile::TempDir, std::path::PathBuf) {
    let mut text = String::new();
    for (ns, sector, n, w) in requests() {
        match format {
            Format::Msr => writeln!(
                text,
                "{},src1,0,{},{},{},100",
                128_166_372_000_000_000 + ns / 100,
                if w { "Write" } else { "Read" },
                sector * 512,
                n * 512
            ),
            Format::Spc => writeln!(text, "0,{sector},{},{},{:.6}", n * 512, if w { 'w' } else { 'r' }, ns as f64 / 1e9),
            Format::Disksim => writeln!(text, "{:.6} 0 {sector} {n} {}", ns as f64 / 1e6, u8::from(!w)),
            Format::Blkparse => writeln!(
                text,
                "  8,0    0 {:>8} {:>14.9} 1234  Q {:>3} {sector} + {n} [db]\n  8,0    0 {:>8} {:>14.9} 1234  D {:>3} {sector} + {n} [db]",
                1,
                ns as f64 / 1e9,
                if w { "WS" } else { "R" },
                2,
                ns as f64 / 1e9,
                if w { "WS" } else { "R" }
            ),
        }
        .unwrap();
    }
    if format == Format::Blkparse {
        text.push_str("CPU0 (8,0):\n Reads Queued:         160,    1280KiB\n");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn every_format_parses_and_replays_with_counts_that_add_up() {
    let expected = requests();
    let writes = expected.iter().filter(|r| r.3 && r.2 > 0).count() as u64;
    let skipped = expected.iter().filter(|r| r.2 == 0).count() as u64;
    for format in [Format::Msr, Format::Spc, Format::Disksim, Format::Blkparse] {
        let (_dir, path) = write_trace(format);
        let recs = read_file(format, &path).unwrap();
        assert_eq!(recs.len(), expected.len(), "{format:?}");
        for (r, e) in recs.iter().zip(&expected) {
            assert_eq!(
                (r.offset, r.len, r.write),
                (e.1 * 512, e.2 * 512, e.3),
                "{format:?}"
            );
            assert!(
                r.time_ns.abs_diff(e.0) <= 1000,
                "{format:?}: {} vs {}",
                r.time_ns,
                e.0
            );
        }
        // A 1 GiB device: requests beyond it are folded back in.
        let mut dev = common::dram("1 GiB", 200.0);
        let rep = replay(&mut *dev, &recs, Timing::AsTraced).unwrap();
        assert_eq!(rep.records, 200);
        assert_eq!(rep.reads + rep.writes + rep.skipped, rep.records);
        assert_eq!((rep.writes, rep.skipped), (writes, skipped));
        assert!(rep.folded > 0);
        assert_eq!(rep.device.host_reads, rep.reads);
        assert_eq!(rep.device.host_writes, rep.writes);
        assert_eq!(rep.device.host_write_bytes, rep.write_bytes);
        assert_eq!(rep.latency.count, rep.reads + rep.writes);
        let l = rep.latency;
        assert!(
            0 < l.p50_ns && l.p50_ns <= l.p95_ns && l.p95_ns <= l.p99_ns && l.p99_ns <= l.max_ns
        );
    }
}

#[test]
fn replay_runs_on_a_hybrid_back_to_back() {
    let (_dir, path) = write_trace(Format::Spc);
    let recs = read_file(Format::Spc, &path).unwrap();
    let mut dev = HybridDevice::create(
        common::dram("256 MiB", 400.0),
        common::dram("4 GiB", 100.0),
        Options::default(),
    )
    .unwrap();
    let rep = replay(&mut dev, &recs, Timing::BackToBack).unwrap();
    let st = dev.hybrid_stats();
    assert_eq!(rep.reads + rep.writes + rep.skipped, 200);
    assert_eq!(st.ssd_write_requests + st.hdd_write_requests, rep.writes);
    assert_eq!(st.read_requests, rep.reads);
    assert_eq!(rep.device.host_writes, rep.writes);
    // Back to back: no queueing, so the makespan is the sum of service times.
    assert!(rep.makespan_ns > 0 && rep.latency.max_ns <= rep.makespan_ns);
}

#[test]
fn a_malformed_line_names_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(
        &path,
        "128166372003061629,hm,1,Read,0,4096,1\n128166372003061630,hm,1,Read,zero,4096,1\n",
    )
    .unwrap();
    match read_file(Format::Msr, &path) {
        Err(TraceError::Malformed { line: 2, reason }) => {
            assert!(reason.contains("offset"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}
