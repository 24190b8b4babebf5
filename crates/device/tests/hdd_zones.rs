//! A zoned disk streams at its outer rate at the start of the LBA range and
//! at its inner rate at the end, as the data sheet and the preset say.

use flashkv_device::{presets, BlockDevice, DeviceSpec, SimDevice};

/// MB/s of `n` sequential 1 MiB reads from `offset`, one outstanding (as
/// `flashkv profile --patterns sr --block-sizes 1m` issues them).
fn sequential_mb_s(dev: &mut SimDevice, offset: u64, n: u64) -> f64 {
    let mut buf = vec![0u8; 1 << 20];
    let t0 = dev.clock();
    for i in 0..n {
        dev.read(offset + i * buf.len() as u64, &mut buf).unwrap();
    }
    (n << 20) as f64 / ((dev.clock() - t0) as f64 / 1e9) / 1e6
}

/// Outer and inner sequential rates of a device: 256 MiB at each end.
fn outer_inner(dev: &mut SimDevice) -> (f64, f64) {
    let n = 256;
    let end = dev.geometry().capacity - (n << 20);
    (sequential_mb_s(dev, 0, n), sequential_mb_s(dev, end, n))
}

#[test]
fn hdd_desktop_streams_at_the_data_sheet_outer_and_assumed_inner_rates() {
    let (outer, inner) = outer_inner(&mut presets::open("hdd-desktop").unwrap());
    println!("hdd-desktop 1 MiB sequential reads: outer {outer:.1} MB/s (data sheet 210), inner {inner:.1} MB/s (assumed 115)");
    assert!((outer / 210.0 - 1.0).abs() < 0.10, "{outer}");
    assert!((inner / 115.0 - 1.0).abs() < 0.10, "{inner}");
    // Deterministic: the figures the preset comments quote (each run
    // includes its first positioning: a full seek for the inner one).
    assert_eq!(format!("{outer:.1} {inner:.1}"), "208.4 114.1");
}

#[test]
fn the_rate_falls_zone_by_zone_across_the_lba_range() {
    let dev = || presets::open("hdd-desktop").unwrap();
    let cap = dev().geometry().capacity;
    let rates: Vec<f64> = (0..8)
        .map(|i| sequential_mb_s(&mut dev(), cap / 8 * i / (1 << 20) * (1 << 20), 64))
        .collect();
    println!("hdd-desktop by eighths of the LBA range: {rates:.1?}");
    assert!(rates.windows(2).all(|w| w[0] > w[1]), "{rates:?}");
}

#[test]
fn a_single_zone_disk_streams_alike_at_both_ends() {
    let spec = "capacity = \"64 GiB\"\n[model]\nkind = \"hdd\"\nrpm = 7200\nseek_avg_ms = 8.5\nmedia_mb_per_s = 150\n";
    let mut dev = SimDevice::new(&DeviceSpec::from_toml(spec, "flat").unwrap()).unwrap();
    let (outer, inner) = outer_inner(&mut dev);
    assert!((outer / inner - 1.0).abs() < 0.01, "{outer} {inner}");
}

#[test]
fn an_exabyte_zoned_disk_sets_up_at_once() {
    let spec = "capacity = \"1 EiB\"\n[model]\nkind = \"hdd\"\nrpm = 7200\nseek_avg_ms = 8\nmedia_mb_per_s = 250\ninner_mb_per_s = 130\nzones = 256\ninterface_mb_per_s = 600\n";
    let t = std::time::Instant::now();
    let mut dev = SimDevice::new(&DeviceSpec::from_toml(spec, "big").unwrap()).unwrap();
    let (outer, inner) = outer_inner(&mut dev);
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    assert!(outer > 1.8 * inner && inner > 100.0, "{outer} {inner}");
}
