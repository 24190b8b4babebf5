//! A user-written HDD spec predicts what the textbook access model says
//! (seed 002: t = seek_avg + t_rev/2 + b/F_d), and the seed presets keep
//! their published per-access costs.

use flashkv_device::{presets, BlockDevice, DeviceSpec, SimDevice};

const USER_SPEC: &str = r#"
description = "a 15K disk as a user would describe it"
capacity = "64 GiB"
[model]
kind = "hdd"
rpm = 15000
seek_avg_ms = 3.5
media_mb_per_s = 125
"#;

/// Mean service time (ms) of `n` synchronous random accesses of `bs` bytes.
fn mean_random_ms(dev: &mut SimDevice, bs: usize, n: u64, write: bool) -> f64 {
    let blocks = dev.geometry().capacity / bs as u64;
    let mut buf = vec![0u8; bs];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut total = 0;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let off = x % blocks * bs as u64;
        let c = if write {
            dev.write(off, &buf).unwrap()
        } else {
            dev.read(off, &mut buf).unwrap()
        };
        total += c.end - c.start;
    }
    total as f64 / n as f64 / 1e6
}

#[test]
fn user_spec_4k_random_read_is_seek_plus_half_rotation_plus_transfer() {
    let spec = DeviceSpec::from_toml(USER_SPEC, "my-15k").unwrap();
    let mut dev = SimDevice::new(&spec).unwrap();
    let model = mean_random_ms(&mut dev, 4096, 4000, false);
    let analytic = 3.5 + 2.0 + 4096.0 / 125e6 * 1e3;
    println!("user spec 4 KB random read QD1: model {model:.3} ms, analytic {analytic:.3} ms");
    assert!(
        (model / analytic - 1.0).abs() < 0.10,
        "{model} vs {analytic}"
    );
}

#[test]
fn hdd_7200_keeps_seed_001_table_3_1_costs() {
    let mut dev = presets::open("hdd-7200").unwrap();
    let read = mean_random_ms(&mut dev, 2048, 3000, false);
    let write = mean_random_ms(&mut dev, 2048, 3000, true);
    println!("hdd-7200 2 KB QD1: read {read:.2} ms (seed 12.7), write {write:.2} ms (seed 13.7)");
    assert!((read / 12.7 - 1.0).abs() < 0.03, "{read}");
    assert!((write / 13.7 - 1.0).abs() < 0.03, "{write}");
}

/// Seed 001's chapter 3 charges an in-place disk update 27.4 ms (its Table
/// 3.1 read + write would be 26.4 ms). A disk that reads a block and then
/// rewrites it in place pays the random read plus one revolution, because
/// the sector has just passed under the head: ~12.7 + 8.3 ms.
#[test]
fn hdd_7200_in_place_update_is_a_read_plus_a_revolution() {
    let mut dev = presets::open("hdd-7200").unwrap();
    let blocks = dev.geometry().capacity / 4096;
    let mut buf = vec![0u8; 4096];
    let n = 2000u64;
    let mut total = 0;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let off = x % blocks * 4096;
        let t0 = dev.clock();
        dev.read(off, &mut buf).unwrap();
        dev.write(off, &buf).unwrap();
        total += dev.clock() - t0;
    }
    let ms = total as f64 / n as f64 / 1e6;
    println!("hdd-7200 4 KB in-place update: {ms:.2} ms (seed 001 text: 27.4 ms)");
    assert!((20.0..22.5).contains(&ms), "{ms}");
}
