//! Figures the docs and the presets quote are the model's: when a model
//! changes, this fails until the text says what it does now.

use flashkv_device::{presets, BlockDevice};
use flashkv_lab::profile::{run, Pattern, ProfileSpec};

/// `flashkv profile --device PRESET --ops 2000` at QD1 over the whole drive.
fn profile(preset: &str, pattern: Pattern, block_size: u64) -> flashkv_lab::profile::ProfileRow {
    let mut dev = presets::open(preset).unwrap();
    let span = dev.geometry().capacity;
    let spec = ProfileSpec {
        pattern,
        block_size,
        ops: 2000,
        span,
        iodepth: 1,
        seed: 1,
    };
    run(&mut dev, preset, &spec).unwrap()
}

/// 5846 as "5,846".
fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `ssd-lowend`'s source line quotes its QD1 figures against `hdd-7200`.
#[test]
fn the_low_end_ssds_quoted_figures_are_the_models() {
    let source = presets::get("ssd-lowend").unwrap().source;
    let rr = profile("ssd-lowend", Pattern::RandRead, 4096).iops;
    let rw = profile("ssd-lowend", Pattern::RandWrite, 4096).iops;
    let sw = profile("ssd-lowend", Pattern::SeqWrite, 1 << 20).mb_per_s;
    let sr = profile("ssd-lowend", Pattern::SeqRead, 1 << 20).mb_per_s;
    let hdd = profile("hdd-7200", Pattern::RandWrite, 4096).iops;
    for quoted in [
        format!("rr 4K {} IOPS", thousands(rr)),
        format!(
            "rw 4K {} IOPS ({:.0} % of hdd-7200's {:.0})",
            thousands(rw),
            rw / hdd * 100.0,
            hdd
        ),
        format!("sw 1M {sw:.0} MB/s"),
        format!("sr 1M {sr:.0} MB/s"),
    ] {
        assert!(
            source.contains(&quoted),
            "ssd-lowend's source should say {quoted:?}: {source}"
        );
    }
}

/// docs/devices.md's preset table and docs/profiler.md quote the models.
#[test]
fn the_device_pages_quote_the_models() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/");
    let devices = std::fs::read_to_string(format!("{root}devices.md")).unwrap();
    let rw = profile("ssd-lowend", Pattern::RandWrite, 4096).iops;
    let hdd = profile("hdd-7200", Pattern::RandWrite, 4096).iops;
    let share = format!("~{:.0} % of `hdd-7200`'s", (rw / hdd * 10.0).round() * 10.0);
    assert!(devices.contains(&share), "devices.md should say {share:?}");
    // seed 001's in-place update on raw NAND.
    let ipl = profile("nand-ipl", Pattern::RandWrite, 4096).mean_latency_us / 1000.0;
    let profiler = std::fs::read_to_string(format!("{root}profiler.md")).unwrap();
    let quoted = format!("seed 001's {ipl:.2} ms");
    assert!(
        profiler.contains(&quoted),
        "profiler.md should say {quoted:?}"
    );
    // hdd-desktop streams from the outer edge as documented.
    let sr = profile("hdd-desktop", Pattern::SeqRead, 1 << 20).mb_per_s;
    let quoted = format!("gives {sr:.1} MB/s");
    assert!(
        devices.contains(&quoted),
        "devices.md should say {quoted:?}"
    );
}
