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

/// Issue 11: a DiskSim trace in nanoseconds over 16 devices replays with
/// its own time unit and a device map; counts, bytes and the per-device
/// split add up exactly, and 4 KiB-aligned requests stay aligned when folded.
#[test]
fn a_nanosecond_disksim_trace_over_16_devices_replays_as_recorded() {
    use flashkv_device::presets;
    use flashkv_hybrid::replay::{replay_mapped, DeviceMap};
    use flashkv_hybrid::trace::{read_file_with, TimeUnit};

    let mut text = String::new();
    let mut expect = [(0u64, 0u64); 16]; // (requests, bytes) per device
    for i in 0..1600u64 {
        let dev = (i * 7) % 16;
        // 4 KiB-aligned, up to 1 GiB into each device: many fold.
        let sector = (i * 104_729 % 262_144) * 8;
        let sectors = 8 * (1 + i % 2);
        let flags = if i % 3 == 0 { 0 } else { 1 }; // bit 0: read
        writeln!(text, "{} {dev} {sector} {sectors} {flags}", i * 85_000).unwrap();
        expect[dev as usize].0 += 1;
        expect[dev as usize].1 += sectors * 512;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.disksim");
    std::fs::write(&path, text).unwrap();
    let recs = read_file_with(Format::Disksim, Some(TimeUnit::Ns), &path).unwrap();
    assert_eq!(recs.last().unwrap().time_ns, 1599 * 85_000); // 136 ms, not 38 hours

    let mut dev = presets::open("nvme").unwrap(); // 2 GiB: 16 x 128 MiB
    let map: DeviceMap = "stride=128M".parse().unwrap();
    let rep = replay_mapped(&mut dev, &recs, Timing::AsTraced, &map).unwrap();
    assert_eq!(rep.records, 1600);
    assert_eq!(rep.reads + rep.writes, 1600);
    assert_eq!(rep.per_device.len(), 16);
    for d in &rep.per_device {
        let (n, bytes) = expect[d.device as usize];
        assert_eq!(d.offset, u64::from(d.device) * (128 << 20));
        assert_eq!(
            (d.reads + d.writes, d.read_bytes + d.write_bytes),
            (n, bytes)
        );
    }
    let sum = |f: fn(&flashkv_hybrid::replay::DeviceSplit) -> u64| {
        rep.per_device.iter().map(f).sum::<u64>()
    };
    assert_eq!(sum(|d| d.read_bytes), rep.read_bytes);
    assert_eq!(sum(|d| d.write_bytes), rep.write_bytes);
    assert_eq!(sum(|d| d.folded), rep.folded);
    assert!(rep.folded > 1000, "{}", rep.folded);
    // Aligned stays aligned: no write needed a partial-page read-modify-write,
    // so the NAND read and programmed exactly the requested pages.
    let st = &rep.device;
    assert_eq!(st.nand_page_reads, rep.read_bytes / 4096);
    assert_eq!(st.nand_page_programs, rep.write_bytes / 4096);
    assert!(rep.makespan_ns < 1_000_000_000, "{}", rep.makespan_ns);
    assert!(rep.iops > 0.0 && rep.mb_per_s > 0.0);
}
