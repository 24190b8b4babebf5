//! `flashkv profile` of a 4 TiB page-mapped SSD stays within a memory
//! budget: one device at a time, and tables sized by what the run touches.
//! A test binary of its own, so the peak RSS of the children it waits for
//! is this run's alone.

use std::process::Command;

/// Peak RSS of the children waited for so far, bytes (Linux reports KiB).
fn children_peak_rss() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    assert_eq!(rc, 0, "getrusage failed");
    u.ru_maxrss as u64 * 1024
}

#[test]
fn profile_of_a_four_terabyte_nvme_peaks_under_450_mb() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("nvme4t.toml");
    // The nvme preset's model, at 4 TiB.
    let body = "description = \"nvme at 4 TiB\"\nsource = \"the nvme preset\"\n\
        capacity = \"4 TiB\"\npower = { active_mw = 6000, idle_mw = 30 }\n[model]\n\
        kind = \"ftl\"\nmapping = \"page\"\npage_size = \"4k\"\npages_per_block = 64\n\
        channels = 8\ndies_per_channel = 8\nread_us = 40.0\nbus_mb_per_s = 1200.0\n\
        program_us = 120.0\nerase_us = 3000.0\nhost_mb_per_s = 3500.0\n\
        read_command_us = 1.5\nwrite_command_us = 1.5\nover_provisioning = 0.07\n";
    std::fs::write(&spec, body).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(["profile", "--spec"])
        .arg(&spec)
        .args(["--patterns", "mix", "--block-sizes", "4k", "--ops", "1e6"])
        .args(["--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["ops"], 1_000_000);
    let peak = children_peak_rss();
    eprintln!("peak RSS {} MB", peak / 1_000_000);
    assert!(peak < 450_000_000, "peak RSS {peak} B");
}
