//! The flush worker writes back at no less than half the HDD's sequential
//! write bandwidth when the device is idle (virtual time, `hdd-7200`).

use flashkv_device::{presets, BlockDevice};
use flashkv_hybrid::{HybridDevice, Options};
use rand::seq::SliceRandom;
use rand::SeedableRng;

const REGION: u64 = 16 << 20;

/// MB/s of back-to-back 1 MiB sequential writes on a fresh `hdd-7200`.
fn hdd_sequential_mb_per_s() -> f64 {
    let mut hdd = presets::open("hdd-7200").unwrap();
    let chunk = vec![0x5au8; 1 << 20];
    let mut end = 0;
    for i in 0..REGION / chunk.len() as u64 {
        end = hdd
            .write_at(end, (1 << 30) + i * chunk.len() as u64, &chunk)
            .unwrap()
            .end;
    }
    let end = hdd.flush_at(end).unwrap().end;
    REGION as f64 * 1000.0 / end as f64
}

/// Idle flush MB/s of a hybrid over `ssd` and `hdd-7200` after random 4 KiB
/// writes covering a 16 MiB region.
fn idle_flush_mb_per_s(ssd: &str) -> f64 {
    let ssd = Box::new(presets::open(ssd).unwrap());
    let hdd = Box::new(presets::open("hdd-7200").unwrap());
    let mut dev = HybridDevice::create(ssd, hdd, Options::default()).unwrap();
    // Random 4 KiB writes covering a 16 MiB region: all go to the SSD log.
    let mut blocks: Vec<u64> = (0..REGION / 4096).collect();
    blocks.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(3));
    let mut now = dev.clock();
    for b in blocks {
        now = dev
            .write_at(now, (1 << 30) + b * 4096, &[b as u8; 4096])
            .unwrap()
            .end;
    }
    let st = dev.hybrid_stats();
    assert_eq!(st.dirty_bytes, REGION);
    assert_eq!(st.flush_bytes, 0, "no idle time yet");
    // A long idle period before the next request.
    let mut buf = [0u8; 4096];
    dev.read_at(now + 60_000_000_000, 1 << 30, &mut buf)
        .unwrap();
    assert_eq!(buf, [0u8; 4096]);
    let st = dev.hybrid_stats();
    assert_eq!(st.dirty_bytes, 0);
    assert_eq!(st.flush_bytes, REGION);
    assert_eq!(
        st.flush_writes,
        REGION / (1 << 20),
        "merged into 1 MiB writes"
    );
    assert!(st.idle_flushes >= 1);
    st.flush_mb_per_s
}

#[test]
fn idle_flush_runs_at_least_half_the_hdd_sequential_bandwidth() {
    let seq = hdd_sequential_mb_per_s();
    for ssd in ["dram-ssd", "ssd-lowend"] {
        let flush = idle_flush_mb_per_s(ssd);
        eprintln!("hdd-7200 sequential write {seq:.1} MB/s; idle flush from {ssd} {flush:.1} MB/s");
        assert!(
            flush >= seq / 2.0,
            "{ssd}: flush {flush:.1} MB/s < half of {seq:.1} MB/s"
        );
    }
}

#[test]
fn a_short_idle_period_makes_progress_and_keeps_the_rest_dirty() {
    for ssd in ["dram-ssd", "ssd-lowend"] {
        let hdd = Box::new(presets::open("hdd-7200").unwrap());
        let ssd_dev = Box::new(presets::open(ssd).unwrap());
        let mut dev = HybridDevice::create(ssd_dev, hdd, Options::default()).unwrap();
        let mut now = dev.clock();
        for b in 0..2048u64 {
            // Every other block, scattered: no merging, so flushing is slow.
            now = dev
                .write_at(now, (b * 7919 % 4096) * 8192, &[1u8; 4096])
                .unwrap()
                .end;
        }
        let dirty = dev.hybrid_stats().dirty_bytes;
        // 100 ms of idle time: some but not all of it gets written back.
        let arrive = now + 102_000_000;
        let mut buf = [0u8; 4096];
        let c = dev.read_at(arrive, 0, &mut buf).unwrap();
        let st = dev.hybrid_stats();
        assert!(
            st.flush_bytes > 0 && st.dirty_bytes > 0 && st.dirty_bytes < dirty,
            "{ssd}: {st:?}"
        );
        // The request waited at most for the device operations in progress.
        assert!(c.end - arrive < 30_000_000, "{ssd}: {c:?}");
    }
}
