//! The command line as a user meets it: exit codes, one-line errors, JSON on
//! stdout only, and the lab's output files.

use std::process::{Command, Output};

fn flashkv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_usage_error(args: &[&str], needle: &str) {
    let o = flashkv(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(
        e.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {e}"
    );
    assert!(
        e.starts_with("error: ") && e.contains(needle),
        "{args:?}: {e}"
    );
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    assert_usage_error(
        &["profile", "--device", "no-such-drive"],
        "unknown device preset 'no-such-drive'",
    );
    assert_usage_error(
        &["profile", "--device", "nvme", "--block-sizes", "0"],
        "greater than zero",
    );
    assert_usage_error(
        &["profile", "--device", "nvme", "--block-sizes", "1000"],
        "multiple of the device's 512-byte sector",
    );
    assert_usage_error(
        &["profile", "--device", "nvme", "--span", "1t"],
        "larger than the device's capacity",
    );
    assert_usage_error(
        &["profile", "--device", "nvme", "--patterns", "zz"],
        "unknown pattern 'zz'",
    );
    assert_usage_error(&["profile"], "required");
    assert_usage_error(&["lab", "--nope"], "--nope");
    assert_usage_error(&["frobnicate"], "frobnicate");
}

/// A spec as the README tells users to write it.
const USER_SPEC: &str = "description = \"my 15K disk\"\nsource = \"datasheet\"\n\
    capacity = \"8 GiB\"\npower = { active_mw = 12000, idle_mw = 8000 }\n\
    [model]\nkind = \"hdd\"\nrpm = 15000\nseek_avg_ms = 3.5\nmedia_mb_per_s = 125\n";

#[test]
fn a_spec_missing_a_field_or_with_bad_power_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("s.toml");
    let s = spec.to_str().unwrap();
    for (from, to, needle) in [
        (
            "description = \"my 15K disk\"\n",
            "",
            "missing field `description`",
        ),
        ("source = \"datasheet\"\n", "", "missing field `source`"),
        (
            "power = { active_mw = 12000, idle_mw = 8000 }\n",
            "",
            "missing field `power`",
        ),
        (
            "idle_mw = 8000",
            "idle_mw = -3",
            "power.idle_mw = -3 must be a number >= 0",
        ),
        (
            "active_mw = 12000",
            "active_mw = 5000",
            "power.active_mw = 5000 is below",
        ),
    ] {
        std::fs::write(&spec, USER_SPEC.replace(from, to)).unwrap();
        assert_usage_error(&["profile", "--spec", s], needle);
        assert_usage_error(&["advise", "--spec", s], needle);
    }
}

/// Capacities are sold in decimal: "500 GB" is 5 × 10^11 bytes, and the
/// profile's header gives a span that is no whole MiB exactly, not as
/// a count of KiB; an FTL that cannot take such a capacity names the
/// nearest that fits, and a bad size says which units are decimal.
#[test]
fn decimal_capacities_are_read_and_shown_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("s.toml");
    let s = spec.to_str().unwrap();
    for (capacity, shown) in [
        ("500 GB", "span 465.7 GiB (500000000000 B)"),
        ("499289944 KiB", "span 476.2 GiB (511272902656 B)"),
        ("8 GiB", "span 8 GiB\n"),
    ] {
        std::fs::write(&spec, USER_SPEC.replace("8 GiB", capacity)).unwrap();
        let o = flashkv(&["profile", "--spec", s, "--patterns", "rr", "--ops", "5"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(shown), "{capacity}: {out}");
    }
    let ftl = "description = \"d\"\nsource = \"s\"\ncapacity = \"300 GB\"\n\
        power = { active_mw = 1, idle_mw = 1 }\n[model]\nkind = \"ftl\"\nmapping = \"page\"\n\
        page_size = \"4k\"\npages_per_block = 64\nread_us = 40\nprogram_us = 100\n\
        erase_us = 1000\nhost_mb_per_s = 1000\n";
    std::fs::write(&spec, ftl).unwrap();
    assert_usage_error(
        &["profile", "--spec", s],
        "capacity 300000000000 B is not a multiple of page_size (4096 B): the nearest below is 299999997952 B",
    );
    std::fs::write(&spec, USER_SPEC.replace("8 GiB", "8 GX")).unwrap();
    assert_usage_error(&["profile", "--spec", s], "GB, TB are powers of 1000");
    assert_usage_error(
        &["profile", "--device", "nvme", "--span", "1 GQ"],
        "KB, MB, GB, TB are powers of 1000",
    );
}

#[test]
fn a_malformed_spec_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "capacity = \"1 GiB\"\n[model]\nkind = \"hdd\"\nrpm = 15000\nseek_avg_ms = 3.5\nmedia_mb_per_s = 125\nwarp_drive = true\n").unwrap();
    assert_usage_error(&["profile", "--spec", bad.to_str().unwrap()], "warp_drive");
    let missing = dir.path().join("missing.toml");
    assert_usage_error(
        &["profile", "--spec", missing.to_str().unwrap()],
        "missing.toml",
    );
}

#[test]
fn a_user_spec_profiles_and_json_is_only_json() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("my-disk.toml");
    std::fs::write(&spec, USER_SPEC).unwrap();
    let o = flashkv(&[
        "profile",
        "--spec",
        spec.to_str().unwrap(),
        "--patterns",
        "rr,sw",
        "--block-sizes",
        "4k,64k",
        "--ops",
        "200",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        for field in [
            "device",
            "pattern",
            "block_size",
            "ops",
            "iops",
            "mb_per_s",
            "mean_latency_us",
            "p99_latency_us",
            "energy_uj_per_op",
            "erases",
        ] {
            assert!(r.get(field).is_some(), "missing {field} in {r}");
        }
        assert_eq!(r["device"], "my-disk");
        assert!(r["iops"].as_f64().unwrap() > 0.0);
    }
    // Sequential 64 KB writes stream; random 4 KB reads wait for the arm.
    let iops = |p: &str, bs: u64| {
        rows.iter()
            .find(|r| r["pattern"] == p && r["block_size"] == bs)
            .unwrap()["mb_per_s"]
            .as_f64()
            .unwrap()
    };
    assert!(iops("sw", 65536) > 20.0 * iops("rr", 4096));
}

#[test]
fn raw_nand_in_place_update_costs_the_seed_figure() {
    let o = flashkv(&[
        "profile",
        "--device",
        "nand-ipl",
        "--patterns",
        "rw",
        "--block-sizes",
        "4k",
        "--ops",
        "50",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["mean_latency_us"].as_f64().unwrap(), 10460.0);
    assert_eq!(rows[0]["erases"].as_u64().unwrap(), 50);
}

#[test]
fn devices_lists_every_preset() {
    let o = flashkv(&["devices", "--json"]);
    assert!(o.status.success());
    let all: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    for want in [
        "hdd-15k",
        "hdd-7200",
        "flash-ssd-2005",
        "dram-ssd",
        "nand-ipl",
        "nand-table21",
        "ssd-x25m",
        "ssd-320",
        "ssd-lowend",
        "usb-flash",
        "nvme",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
}

#[test]
fn lab_quick_writes_results_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = flashkv(&[
        "lab",
        "seed004",
        "--quick",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["seed004"].as_array().unwrap();
    // 9 block sizes: hdd 2 tables, flash 3, dram 2.
    assert_eq!(rows.len(), 63);
    for f in [
        "summary.md",
        "seed004/seed004.json",
        "seed004/seed004.csv",
        "seed004/hdd-15k-random_read.svg",
        "seed004/flash-ssd-2005-mixed_50_50.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} not written");
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("within 15 %"), "{summary}");
}

/// Output piped into a reader that is gone (`flashkv devices | head -0`)
/// ends the program as it ends other Unix tools: killed by SIGPIPE at its
/// first write, saying nothing (no panic, no error line).
#[test]
fn output_closed_early_ends_quietly_by_sigpipe() {
    use std::os::unix::process::ExitStatusExt;
    for args in [&["devices", "--json"][..], &["devices"]] {
        // The reading end is closed before the program starts, so its
        // first write fails whatever the timing.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_flashkv"))
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            None,
            "{args:?}: exited instead of a signal"
        );
        assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{args:?}");
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

#[test]
fn replay_reports_counts_and_rejects_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(
        &trace,
        "128166372003061629,usr,0,Write,8192,4096,1331\n128166372016853449,usr,0,Read,4096,8192,1200\n",
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    for target in [["--device", "nvme"], ["--hybrid", "ssd-lowend,hdd-7200"]] {
        let o = flashkv(&[
            "replay", "--trace", t, "--format", "msr", target[0], target[1], "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            (
                v["records"].as_u64(),
                v["reads"].as_u64(),
                v["writes"].as_u64()
            ),
            (Some(2), Some(1), Some(1))
        );
        assert_eq!(
            (v["read_bytes"].as_u64(), v["write_bytes"].as_u64()),
            (Some(8192), Some(4096))
        );
        // The device's counters: a single device's, or each side's.
        let dev = if target[0] == "--device" {
            &v["device"]
        } else {
            &v["ssd"]
        };
        assert!(dev["nand_page_programs"].as_u64().is_some(), "{v}");
        assert!(dev["translation_reads"].as_u64().is_some(), "{v}");
    }
    std::fs::write(
        &trace,
        "128166372003061629,usr,0,Write,8192,4096,1331\nnot a record\n",
    )
    .unwrap();
    assert_usage_error(
        &[
            "replay", "--trace", t, "--format", "msr", "--device", "nvme",
        ],
        "line 2",
    );
}

/// An FTL spec with a cached mapping table and a data cache: profile
/// reports the translation reads, the cached writes and the multi-plane
/// operations of each run, in JSON and in a table of its own.
#[test]
fn profile_reports_the_ftl_internals() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("caches.toml");
    let text = "description = \"d\"\nsource = \"s\"\ncapacity = \"256 MiB\"\n\
        power = { active_mw = 1, idle_mw = 1 }\n[model]\nkind = \"ftl\"\nmapping = \"page\"\n\
        page_size = \"4k\"\npages_per_block = 64\nchannels = 2\ndies_per_channel = 2\n\
        planes_per_die = 2\nread_us = 40\nprogram_us = 200\nerase_us = 2000\n\
        host_mb_per_s = 1000\nwrite_cache = \"4 MiB\"\nmapping_cache = \"16 KiB\"\n";
    std::fs::write(&spec, text).unwrap();
    let s = spec.to_str().unwrap();
    let args = [
        "profile",
        "--spec",
        s,
        "--patterns",
        "rw",
        "--block-sizes",
        "4k",
        "--ops",
        "3000",
    ];
    let o = flashkv(&[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ftl = &rows[0]["ftl"];
    // 64 translation pages, 4 in DRAM: random writes miss most lookups.
    let reads = ftl["translation_reads"].as_u64().unwrap();
    assert!(reads > 1000, "{ftl}");
    assert_eq!(ftl["cache_writes"].as_u64(), Some(3000));
    assert!(ftl["multi_plane_ops"].as_u64().unwrap() > 0, "{ftl}");
    let o = flashkv(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("FTL internals per run") && out.contains("transl. reads"),
        "{out}"
    );
    assert!(out.contains(&reads.to_string()), "{out}");
}

/// A pipe is read once: `--trace /dev/stdin` replays what it is given.
#[test]
fn replay_reads_a_piped_trace_once() {
    use std::io::Write;
    let trace = "128166372003061629,usr,0,Write,8192,4096,1331\n\
                 128166372016853449,usr,0,Read,4096,8192,1200\n";
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(["replay", "--trace", "/dev/stdin", "--format", "msr"])
        .args(["--device", "nvme", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(trace.as_bytes()).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["records"].as_u64(), v["writes"].as_u64()),
        (Some(2), Some(1))
    );
}

/// --capacity sizes a hybrid's HDD (the hybrid's size) and --ssd-capacity
/// its SSD, as --capacity sizes a single device.
#[test]
fn replay_sizes_a_hybrid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(&trace, "128166372003061629,usr,0,Write,8192,4096,1331\n").unwrap();
    let t = trace.to_str().unwrap();
    let o = flashkv(&[
        "replay",
        "--trace",
        t,
        "--format",
        "msr",
        "--hybrid",
        "ssd-lowend,hdd-7200",
        "--capacity",
        "100GB",
        "--ssd-capacity",
        "4GiB",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["capacity"].as_u64(), Some(100_000_000_000 / 4096 * 4096));
    let o = flashkv(&[
        "replay", "--trace", t, "--format", "msr", "--device", "nvme", "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["capacity"].as_u64(), Some(2 << 30));
    assert_usage_error(
        &[
            "replay",
            "--trace",
            t,
            "--format",
            "msr",
            "--device",
            "nvme",
            "--ssd-capacity",
            "1g",
        ],
        "--hybrid",
    );
}

/// A DiskSim trace whose timestamps are nanoseconds, read as the format's
/// milliseconds, spans days for a fraction of a second of requests: the
/// replay says so and names --time-unit ns.
#[test]
fn replay_warns_of_an_implausibly_slow_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.disksim");
    let lines: String = (0..200u64)
        .map(|i| format!("{} 0 {} 8 {}\n", i * 50_000, i * 8, i % 2))
        .collect();
    std::fs::write(&trace, lines).unwrap();
    let t = trace.to_str().unwrap();
    let args = [
        "replay", "--trace", t, "--format", "disksim", "--device", "nvme",
    ];
    let o = flashkv(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    // stderr also has the progress line of the finished replay.
    let e = stderr(&o);
    let warnings: Vec<&str> = e.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 1, "{e}");
    assert!(
        warnings[0].contains("0.020 per second") && warnings[0].contains("--time-unit ns"),
        "{e}"
    );
    let o = flashkv(&[&args[..], &["--time-unit", "ns"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn hybrid_create_then_inspect_on_files() {
    let dir = tempfile::tempdir().unwrap();
    let (ssd, hdd) = (dir.path().join("ssd.img"), dir.path().join("hdd.img"));
    let (s, h) = (ssd.to_str().unwrap(), hdd.to_str().unwrap());
    let o = flashkv(&[
        "hybrid",
        "create",
        "--ssd",
        s,
        "--hdd",
        h,
        "--ssd-size",
        "64m",
        "--hdd-size",
        "256m",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["action"], "create");
    let o = flashkv(&["hybrid", "inspect", "--ssd", s, "--hdd", h, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(w["layout"], v["layout"]);
    assert_usage_error(
        &[
            "hybrid",
            "inspect",
            "--ssd",
            s,
            "--hdd",
            "/nonexistent/x.img",
        ],
        "x.img",
    );
}

/// A `kv` option after its subcommand says where it goes; another
/// unknown argument keeps clap's plain message.
#[test]
fn a_kv_option_after_the_subcommand_says_where_it_goes() {
    assert_usage_error(
        &["kv", "put", "a", "b", "--db", "x"],
        "--db is an option of `kv` and goes before its subcommand",
    );
    assert_usage_error(
        &["kv", "get", "a", "--device=nvme"],
        "--device is an option of `kv`",
    );
    let o = flashkv(&["kv", "--db", "x", "put", "a", "b", "--bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains("option of `kv`"), "{}", stderr(&o));
    assert!(!std::path::Path::new("x").exists(), "nothing was created");
}

/// An engine option the command line sets is named by its flag, not by
/// the engine's field name, and the refused store leaves no file.
#[test]
fn a_refused_size_is_named_by_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("small");
    let db = db.to_str().unwrap();
    assert_usage_error(
        &[
            "kv", "--db", db, "--create", "--size", "1k", "put", "a", "b",
        ],
        "--size: 1024 bytes of the device is too small",
    );
    assert!(!stderr(&flashkv(&[
        "kv", "--db", db, "--create", "--size", "1k", "put", "a", "b"
    ]))
    .contains("max_size"));
    assert!(!std::path::Path::new(db).exists(), "no file was left");
}

/// A key over the engine's limit is refused before `--create` makes a
/// store, and `kv --help` states the limits.
#[test]
fn a_key_or_value_over_its_limit_is_refused_before_create() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("limits");
    let db = db.to_str().unwrap();
    let long_key = "k".repeat(1025);
    assert_usage_error(
        &["kv", "--db", db, "--create", "put", &long_key, "v"],
        "key of 1025 bytes is too large (limit 1024)",
    );
    // (A value over 1 MiB does not fit one argument of a command line.)
    assert!(!std::path::Path::new(db).exists(), "no store was made");
    let help = String::from_utf8_lossy(&flashkv(&["kv", "--help"]).stdout).to_string();
    assert!(
        help.contains("a key up to 1 KiB") && help.contains("a value up to 1 MiB"),
        "{help}"
    );
}

/// A negative number taken for an option says why it is refused and how
/// to pass one as a key or value.
#[test]
fn a_negative_number_says_what_to_do() {
    assert_usage_error(
        &["profile", "--device", "hdd-7200", "--ops", "-1"],
        "no number flashkv takes is negative",
    );
    assert_usage_error(&["kv", "--db", "x", "put", "a", "-1"], "goes after `--`");
    assert!(!std::path::Path::new("x").exists(), "nothing was created");
}
