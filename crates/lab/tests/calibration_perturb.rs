//! No calibration holds by construction: each parameter fitted to a seed
//! figure (and each physical one a headline rests on) is moved by ±20 %,
//! and the headline it was fitted to must move with it, by at least 5 %
//! (2 % for the disk's, whose seek and rotation dominate), in the direction
//! the physics says.

use flashkv_device::{presets, BlockDevice, DeviceSpec, ModelSpec, SimDevice};
use flashkv_lab::profile::{run, Pattern, ProfileSpec};

const MIB: u64 = 1 << 20;

/// A headline: IOPS (or MB/s for sequential patterns) of one profile row.
struct Headline {
    pattern: Pattern,
    block_size: u64,
    iodepth: usize,
    ops: u64,
    span: u64,
}

impl Headline {
    fn measure(&self, spec: &DeviceSpec) -> f64 {
        let mut dev = SimDevice::new(spec).unwrap();
        let span = self.span.min(dev.geometry().capacity) / self.block_size * self.block_size;
        let p = ProfileSpec {
            pattern: self.pattern,
            block_size: self.block_size,
            ops: self.ops,
            span,
            iodepth: self.iodepth,
            seed: 42,
        };
        let row = run(&mut dev, &spec.name, &p).unwrap();
        match self.pattern {
            Pattern::SeqRead | Pattern::SeqWrite => row.mb_per_s,
            _ => row.iops,
        }
    }
}

fn h(pattern: Pattern, block_size: u64, iodepth: usize, ops: u64, span: u64) -> Headline {
    Headline {
        pattern,
        block_size,
        iodepth,
        ops,
        span,
    }
}

/// Scales one parameter of a model by a factor.
type Scale = fn(&mut ModelSpec, f64);

/// Checks that scaling by 0.8 and 1.2 moves the headline by >= 5 % each
/// way; `slower` says a larger parameter lowers the headline.
fn moves(preset: &str, param: &str, scale: Scale, slower: bool, headline: &Headline) {
    moves_by(preset, param, scale, slower, headline, 0.05)
}

fn moves_by(preset: &str, param: &str, scale: Scale, slower: bool, headline: &Headline, by: f64) {
    let base = presets::get(preset).unwrap();
    let at = |f: f64| {
        let mut spec = base.clone();
        scale(&mut spec.model, f);
        headline.measure(&spec)
    };
    let (lo, mid, hi) = (at(0.8), headline.measure(&base), at(1.2));
    println!("{preset} {param} x0.8 / x1 / x1.2: {lo:.1} / {mid:.1} / {hi:.1}");
    let (down, up) = if slower { (hi, lo) } else { (lo, hi) };
    assert!(
        down < mid * (1.0 - by) && up > mid * (1.0 + by),
        "{preset}: {param} does not move its headline ({lo:.1} / {mid:.1} / {hi:.1})"
    );
}

fn ftl(m: &mut ModelSpec) -> &mut flashkv_device::FtlParams {
    match m {
        ModelSpec::Ftl(p) => p,
        _ => unreachable!(),
    }
}

fn hdd(m: &mut ModelSpec) -> &mut flashkv_device::HddParams {
    match m {
        ModelSpec::Hdd(p) => p,
        _ => unreachable!(),
    }
}

fn dram(m: &mut ModelSpec) -> &mut flashkv_device::DramParams {
    match m {
        ModelSpec::Dram(p) => p,
        _ => unreachable!(),
    }
}

#[test]
fn flash_ssd_2005_headlines_move_with_their_parameters() {
    let p = "flash-ssd-2005";
    let rr4 = h(Pattern::RandRead, 4096, 2, 200, 64 * MIB);
    let rr128 = h(Pattern::RandRead, 131072, 2, 100, 64 * MIB);
    let rw4 = h(Pattern::RandWrite, 4096, 2, 40, 64 * MIB);
    moves(
        p,
        "read_command_us",
        |m, f| ftl(m).read_command_us *= f,
        true,
        &rr4,
    );
    moves(
        p,
        "bus_mb_per_s",
        |m, f| ftl(m).bus_mb_per_s *= f,
        false,
        &rr128,
    );
    moves(p, "program_us", |m, f| ftl(m).program_us *= f, true, &rw4);
}

#[test]
fn intel_ssd_headlines_move_with_their_parameters() {
    for p in ["ssd-x25m", "ssd-320"] {
        let sw = h(Pattern::SeqWrite, MIB, 4, 100, 256 * MIB);
        let rr = h(Pattern::RandRead, 4096, 32, 5000, 100 * MIB);
        let rw = h(Pattern::RandWrite, 4096, 32, 5000, 100 * MIB);
        moves(p, "program_us", |m, f| ftl(m).program_us *= f, true, &sw);
        moves(p, "program_us", |m, f| ftl(m).program_us *= f, true, &rw);
        moves(
            p,
            "host_mb_per_s",
            |m, f| ftl(m).host_mb_per_s *= f,
            false,
            &rr,
        );
    }
}

#[test]
fn low_end_flash_headlines_move_with_their_parameters() {
    for p in ["ssd-lowend", "usb-flash"] {
        let sw = h(Pattern::SeqWrite, MIB, 1, 64, 64 * MIB);
        let rw = h(Pattern::RandWrite, 4096, 1, 300, u64::MAX);
        moves(p, "program_us", |m, f| ftl(m).program_us *= f, true, &sw);
        moves(p, "program_us", |m, f| ftl(m).program_us *= f, true, &rw);
    }
}

#[test]
fn disk_and_dram_headlines_move_with_their_fitted_parameters() {
    let p = "hdd-15k";
    let whole = u64::MAX;
    let rr128 = h(Pattern::RandRead, 131072, 2, 600, whole);
    let rw4 = h(Pattern::RandWrite, 4096, 2, 600, whole);
    let media: Scale = |m, f| hdd(m).media_mb_per_s *= f;
    moves_by(p, "media_mb_per_s", media, false, &rr128, 0.02);
    let cache: Scale = |m, f| {
        let c = &mut hdd(m).write_cache_entries;
        *c = (f64::from(*c) * f).round() as u32;
    };
    moves_by(p, "write_cache_entries", cache, false, &rw4, 0.02);
    let rr4 = h(Pattern::RandRead, 4096, 2, 600, whole);
    let d = "dram-ssd";
    moves(
        d,
        "read_overhead_us",
        |m, f| dram(m).read_overhead_us *= f,
        true,
        &rr4,
    );
}
