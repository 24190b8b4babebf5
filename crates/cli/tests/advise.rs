//! `flashkv advise`: seed 002's rule of thumb on the presets, the JSON
//! object, advice from a measured profile, and usage errors.

use std::process::{Command, Output};

fn flashkv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = flashkv(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("stdout is only JSON")
}

#[test]
fn breakeven_is_low_single_digit_percent_on_disks_and_above_half_on_the_intel_320() {
    for (device, lo, hi) in [
        ("hdd-7200", 0.005, 0.05),
        ("hdd-15k", 0.005, 0.05),
        ("ssd-320", 0.5, 1.0),
    ] {
        let o = flashkv(&["advise", "--device", device, "--ops", "400"]);
        assert!(o.status.success());
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("f = (P / F_seq) / t_rand(P) = (4K / "),
            "{out}"
        );
        assert!(out.contains("T = (pages per MB of RAM"), "{out}");
        let a = json(&["advise", "--device", device, "--ops", "400", "--json"]);
        let f = a["breakeven_fraction"].as_f64().unwrap();
        assert!(f > lo && f < hi, "{device}: {f}");
        assert!(out.contains(&format!("{:.1} %", f * 100.0)), "{out}");
    }
}

#[test]
fn json_is_one_object_with_the_four_patterns() {
    let a = json(&["advise", "--device", "hdd-15k", "--ops", "300", "--json"]);
    assert_eq!(a["device"], "hdd-15k");
    assert_eq!(a["device_class"], "hdd");
    assert!(a["five_minute_rule_s"].as_f64().unwrap() > 300.0);
    let pats = a["patterns"].as_array().unwrap();
    let names: Vec<&str> = pats
        .iter()
        .map(|p| p["pattern"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sr", "rr", "sw", "rw"]);
    let alg1: Vec<u64> = pats
        .iter()
        .map(|p| p["algorithm1_block_size"].as_u64().unwrap())
        .collect();
    assert_eq!(
        alg1,
        [64 << 10, 1 << 20, 4 << 10, 256 << 10],
        "seed 000 Algorithm 1, HDD"
    );
    for p in pats {
        assert!(p["best_block_size"].as_u64().unwrap() >= 4096);
        assert!(p["mb_per_s"].as_f64().unwrap() > 0.0);
        assert!(p["energy_j_per_gb"].as_f64().unwrap() > 0.0);
    }
    // A smaller file means shorter seeks: random reads gain on the scan.
    let small = json(&[
        "advise",
        "--device",
        "hdd-15k",
        "--ops",
        "300",
        "--file-size",
        "256m",
        "--json",
    ]);
    assert!(small["breakeven_fraction"].as_f64() > a["breakeven_fraction"].as_f64());
}

#[test]
fn a_profile_is_advised_as_measured() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.json");
    let o = flashkv(&[
        "profile",
        "--device",
        "usb-flash",
        "--block-sizes",
        "4k,64k,1m",
        "--ops",
        "200",
        "--json",
    ]);
    assert!(o.status.success());
    std::fs::write(&p, &o.stdout).unwrap();
    let a = json(&["advise", "--profile", p.to_str().unwrap(), "--json"]);
    assert_eq!(a["device"], "usb-flash");
    assert_eq!(a["device_class"], "flash_drive");
    assert_eq!(a["patterns"][0]["algorithm1_block_size"], 64 << 10);
    assert!(a["breakeven_fraction"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{ not rows").unwrap();
    let no_rr = dir.path().join("no-rr.json");
    let o = flashkv(&[
        "profile",
        "--device",
        "nvme",
        "--patterns",
        "sr",
        "--block-sizes",
        "4k",
        "--ops",
        "10",
        "--json",
    ]);
    std::fs::write(&no_rr, &o.stdout).unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["advise"], "required"),
        (&["advise", "--device", "nope"], "unknown device preset"),
        (
            &["advise", "--device", "nvme", "--file-size", "1t"],
            "larger than the device's capacity",
        ),
        (
            &["advise", "--profile", junk.to_str().unwrap()],
            "not the JSON of `flashkv profile --json`",
        ),
        (
            &["advise", "--profile", no_rr.to_str().unwrap()],
            "no random read (rr) rows",
        ),
        (
            &["advise", "--device", "nvme", "--ram-usd-per-gb", "0"],
            "not a positive price",
        ),
    ];
    for (args, needle) in cases {
        let o = flashkv(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.starts_with("error: ") && e.contains(needle),
            "{args:?}: {e}"
        );
        assert!(o.stdout.is_empty());
    }
}
