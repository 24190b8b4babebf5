//! The block-size advisor: from a profile (measured, or simulated from a
//! device model) it picks a block size per access pattern, sets seed 000's
//! Algorithm 1 answer beside it, and derives seed 002's scan-versus-random
//! breakeven and Gray's five-minute rule for caching a page in RAM.

use flashkv_device::{BlockDevice, DeviceSpec, FtlMapping, ModelSpec, SimDevice};
use flashkv_engine::IoProfile;
use serde::{Deserialize, Serialize};

use crate::profile::{self, Pattern, ProfileError, ProfileRow, ProfileSpec};
use crate::report::size_label;

/// The patterns the advisor answers for, in order.
pub const PATTERNS: [Pattern; 4] = [
    Pattern::SeqRead,
    Pattern::RandRead,
    Pattern::SeqWrite,
    Pattern::RandWrite,
];
/// Seed 000's block sizes (4 KB .. 1 MB).
pub const BLOCK_SIZES: [u64; 5] = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];
/// A smaller block is "best" when it reaches this share of the top
/// throughput: beyond it a larger block only adds latency and buffer memory.
pub const GOOD_ENOUGH: f64 = 0.9;

/// How to advise.
#[derive(Debug, Clone)]
pub struct AdviceOptions {
    /// The database page: the unit of a random read.
    pub page_size: u64,
    /// Bytes the random requests fall in (the file); `None`: the whole device.
    pub file_size: Option<u64>,
    /// Requests outstanding when simulating (SSD random figures are rated at QD32).
    pub iodepth: usize,
    /// Requests per simulated point.
    pub ops: u64,
    /// Price of the device, for the five-minute rule (USD).
    pub device_usd: f64,
    /// Price of RAM (USD per GiB).
    pub ram_usd_per_gb: f64,
    pub seed: u64,
}

impl Default for AdviceOptions {
    fn default() -> Self {
        AdviceOptions {
            page_size: 4096,
            file_size: None,
            iodepth: 32,
            ops: 300,
            device_usd: 100.0,
            ram_usd_per_gb: 3.0,
            seed: 1,
        }
    }
}

/// Seed 000's device classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceClass {
    Hdd,
    FlashDrive,
    Ssd,
}

impl DeviceClass {
    /// From a model: disks are HDDs; flash without a page-mapping FTL (raw
    /// NAND, block- and log-block-mapped sticks and early drives) behaves as
    /// seed 000's flash drive; page-mapped and DRAM SSDs are SSDs.
    pub fn of_model(m: &ModelSpec) -> DeviceClass {
        match m {
            ModelSpec::Hdd(_) => DeviceClass::Hdd,
            ModelSpec::Nand(_) => DeviceClass::FlashDrive,
            ModelSpec::Ftl(p) if p.mapping != FtlMapping::Page => DeviceClass::FlashDrive,
            ModelSpec::Ftl(_) | ModelSpec::Dram(_) => DeviceClass::Ssd,
        }
    }

    /// From measurements: small random reads served no faster than one per
    /// 0.5 ms and ten times slower in MB/s than the best sequential read are
    /// mechanical positioning (HDD); small random writes ten times slower
    /// than small random reads are a block-mapped flash drive; else an SSD.
    pub fn of_rows(rows: &[ProfileRow]) -> Option<DeviceClass> {
        let of = |p: Pattern| rows.iter().filter(move |r| r.pattern == p.code());
        let rr = of(Pattern::RandRead).min_by_key(|r| r.block_size)?;
        let seq = of(Pattern::SeqRead).map(|r| r.mb_per_s).fold(0.0, f64::max);
        if 1.0 / rr.iops >= 0.5e-3 && seq >= 10.0 * rr.mb_per_s {
            return Some(DeviceClass::Hdd);
        }
        match of(Pattern::RandWrite).min_by_key(|r| r.block_size) {
            Some(rw) if rw.iops * 10.0 < rr.iops => Some(DeviceClass::FlashDrive),
            _ => Some(DeviceClass::Ssd),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DeviceClass::Hdd => "hdd",
            DeviceClass::FlashDrive => "flash_drive",
            DeviceClass::Ssd => "ssd",
        }
    }

    /// Seed 000's Algorithm 1: best block size in bytes by class and pattern.
    pub fn algorithm1(self, p: Pattern) -> u64 {
        let kb = match (self, p) {
            (DeviceClass::Hdd, Pattern::SeqRead) => 64,
            (DeviceClass::Hdd, Pattern::SeqWrite) => 4,
            (DeviceClass::Hdd, Pattern::RandWrite) => 256,
            (DeviceClass::FlashDrive, Pattern::SeqRead | Pattern::RandRead) => 64,
            (DeviceClass::FlashDrive, Pattern::SeqWrite) => 16,
            _ => 1024,
        };
        kb << 10
    }
}

/// Seed 000's future direction (section 5.3): Algorithm 1 with the file
/// size. Its Experiment 2, rerun on the models of the seed's drives
/// (`flashkv lab seed000`: whole-file sequential passes and random
/// requests within files of 32 MB to 2 GB), changes the best block with the
/// file size only for the (class, pattern) listed here, in bands of the
/// largest file size each answer holds for; for every other pattern of the
/// disk and the flash drive it finds one block at every file size, and
/// Algorithm 1's answer stands. Its SSD was not in Experiment 2.
///
/// The disk's sequential writes: a whole-file pass ends with the file's
/// last blocks still in the write cache (16 writes, of any size), which
/// large blocks make a large share of a small file. crates/lab/tests/seed000.rs
/// checks this table against Experiment 2.
pub const FILE_SIZE_RULES: [(DeviceClass, Pattern, Bands); 1] = [(
    DeviceClass::Hdd,
    Pattern::SeqWrite,
    &[
        (64 << 20, 1 << 20),
        (128 << 20, 256 << 10),
        (u64::MAX, 4 << 10),
    ],
)];

/// (largest file size, block size) bands, smallest file size first.
pub type Bands = &'static [(u64, u64)];

/// Experiment 2's file sizes (32 MB to 2 GB).
pub const FILE_SIZE_RANGE: (u64, u64) = (32 << 20, 2 << 30);

impl DeviceClass {
    /// Algorithm 1 with the file size: the block size for a file of
    /// `file_size` bytes, and why (where Experiment 2 shows the file size
    /// matters, its band; else Algorithm 1's answer and why it stands).
    pub fn algorithm1_for_file(self, p: Pattern, file_size: u64) -> (u64, String) {
        let a1 = self.algorithm1(p);
        let outside = if (FILE_SIZE_RANGE.0..=FILE_SIZE_RANGE.1).contains(&file_size) {
            ""
        } else {
            " (outside Experiment 2's 32M..2G: the nearest size measured)"
        };
        if let Some((_, _, bands)) = FILE_SIZE_RULES
            .iter()
            .find(|(c, q, _)| *c == self && *q == p)
        {
            let (upto, block) = bands
                .iter()
                .copied()
                .find(|&(upto, _)| file_size <= upto)
                .unwrap_or((u64::MAX, a1));
            let band = if upto == u64::MAX {
                format!("above {}", size_label(bands[bands.len() - 2].0))
            } else {
                format!("up to {}", size_label(upto))
            };
            return (
                block,
                format!(
                    "Experiment 2: the best block changes with the file size; {band}: {}{outside}",
                    size_label(block)
                ),
            );
        }
        let why = match (self, p.writes()) {
            (DeviceClass::Ssd, _) => "the seed's Experiment 2 did not include the SSD: Algorithm 1's answer",
            (_, true) => "file size does not change it (seed 000: no pattern for writes; Experiment 2 on the models: one block at every file size)",
            (_, false) => "file size does not change it in the models (Experiment 2: one block at every file size; seed 000 found a pattern for reads, which the models do not reproduce)",
        };
        (a1, why.to_string())
    }
}

/// The advice for one pattern.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatternAdvice {
    pub pattern: String,
    pub best_block_size: u64,
    pub algorithm1_block_size: u64,
    /// Algorithm 1 with the file size ([`DeviceClass::algorithm1_for_file`]),
    /// when the advice is for a file of a given size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm1_file_block_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm1_file_why: Option<String>,
    pub mb_per_s: f64,
    /// `None` where the profile has no energy figures (real files).
    pub energy_j_per_gb: Option<f64>,
    pub mean_latency_us: f64,
    pub why: String,
}

/// Everything the advisor says about a device.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Advice {
    pub device: String,
    pub device_class: DeviceClass,
    pub breakeven_fraction: f64,
    pub breakeven_formula: String,
    pub five_minute_rule_s: f64,
    pub five_minute_formula: String,
    pub patterns: Vec<PatternAdvice>,
}

/// What the engine takes from the advice ([`flashkv_engine::OptionsBuilder::io_profile`]):
/// the best sequential-read block as its scan read size, the best
/// sequential-write block as its write size for consecutive pages, and the
/// breakeven. A pattern the profile lacks gives 0: page by page.
impl From<&Advice> for IoProfile {
    fn from(a: &Advice) -> IoProfile {
        let best = |p: Pattern| {
            a.patterns
                .iter()
                .find(|x| x.pattern == p.code())
                .map_or(0, |x| x.best_block_size)
        };
        IoProfile {
            scan_read_bytes: best(Pattern::SeqRead),
            seq_write_bytes: best(Pattern::SeqWrite),
            breakeven_fraction: a.breakeven_fraction,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AdviceError {
    #[error("the profile has no {0} rows")]
    Missing(String),
    #[error("the profile mixes devices '{0}' and '{1}'; give one device's rows")]
    Mixed(String, String),
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

/// Simulates the rows the advisor needs on a fresh model of `spec`: each
/// pattern at seed 000's block sizes and the page size, over the file.
pub fn profile_model(
    spec: &DeviceSpec,
    o: &AdviceOptions,
) -> Result<Vec<ProfileRow>, ProfileError> {
    let capacity = SimDevice::new(spec)?.geometry().capacity;
    let span = o.file_size.unwrap_or(capacity);
    let mut sizes = BLOCK_SIZES.to_vec();
    if !sizes.contains(&o.page_size) {
        sizes.push(o.page_size);
        sizes.sort_unstable();
    }
    // Disks and DRAM keep no write history; flash is written once first.
    let fresh_is_steady = matches!(spec.model, ModelSpec::Hdd(_) | ModelSpec::Dram(_));
    let mut rows = Vec::new();
    for pattern in PATTERNS {
        let mut dev = SimDevice::new(spec)?;
        for &block_size in &sizes {
            let s = ProfileSpec {
                pattern,
                block_size,
                ops: o.ops,
                span,
                iodepth: o.iodepth,
                seed: o.seed,
            };
            profile::validate(&dev, &s)?;
            if pattern.writes() && !fresh_is_steady && block_size == sizes[0] {
                profile::precondition(&mut dev, span)?;
            }
            rows.push(profile::run_prepared(&mut dev, &spec.name, &s)?);
        }
    }
    Ok(rows)
}

/// Advice from profile rows (any iodepth; random reads at `page_size`
/// must be among them for the breakeven and the five-minute rule).
pub fn advise(
    rows: &[ProfileRow],
    class: DeviceClass,
    o: &AdviceOptions,
) -> Result<Advice, AdviceError> {
    let device = rows
        .first()
        .ok_or_else(|| AdviceError::Missing("device".into()))?
        .device
        .clone();
    if let Some(r) = rows.iter().find(|r| r.device != device) {
        return Err(AdviceError::Mixed(device, r.device.clone()));
    }
    let of = |p: Pattern| rows.iter().filter(move |r| r.pattern == p.code());
    let page = size_label(o.page_size);
    let rr = of(Pattern::RandRead)
        .find(|r| r.block_size == o.page_size)
        .ok_or_else(|| AdviceError::Missing(format!("random read (rr) {page}")))?;
    let seq = of(Pattern::SeqRead)
        .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))
        .ok_or_else(|| AdviceError::Missing("sequential read (sr)".into()))?;

    // Reading a fraction f of the file's pages at random costs f·N·t_rand;
    // scanning it all costs N·P/F_seq. They are equal at f = (P/F_seq)/t_rand.
    let t_seq = o.page_size as f64 / (seq.mb_per_s * 1e6);
    let t_rand = 1.0 / rr.iops;
    let breakeven = (t_seq / t_rand).min(1.0);
    let breakeven_formula = format!(
        "f = (P / F_seq) / t_rand(P) = ({page} / {:.1} MB/s at {}) / (1 / {:.0} IOPS at iodepth {}) = {:.1} µs / {:.1} µs = {:.1} %{}",
        seq.mb_per_s,
        size_label(seq.block_size),
        rr.iops,
        rr.iodepth,
        t_seq * 1e6,
        t_rand * 1e6,
        breakeven * 100.0,
        if t_seq >= t_rand { " (capped: random page reads never lose to a scan)" } else { "" }
    );

    // Gray and Putzolu: keep a page cached if it is used more often than once
    // per (pages per MB of RAM / accesses per s per disk) × ($ per disk / $ per MB of RAM).
    let pages_per_mb = (1u64 << 20) as f64 / o.page_size as f64;
    let usd_per_mb = o.ram_usd_per_gb / 1024.0;
    let five = pages_per_mb / rr.iops * (o.device_usd / usd_per_mb);
    let five_minute_formula = format!(
        "T = (pages per MB of RAM / accesses per s per device) × (price per device / price per MB of RAM) = ({pages_per_mb:.0} / {:.0}) × (${:.0} / ${usd_per_mb:.5}) = {five:.0} s",
        rr.iops, o.device_usd
    );

    let patterns = PATTERNS
        .iter()
        .filter_map(|&p| pattern_advice(of(p).collect(), p, class, o.file_size))
        .collect();
    Ok(Advice {
        device,
        device_class: class,
        breakeven_fraction: breakeven,
        breakeven_formula,
        five_minute_rule_s: five,
        five_minute_formula,
        patterns,
    })
}

fn pattern_advice(
    mut rows: Vec<&ProfileRow>,
    p: Pattern,
    class: DeviceClass,
    file_size: Option<u64>,
) -> Option<PatternAdvice> {
    rows.sort_by_key(|r| r.block_size);
    let top = *rows
        .iter()
        .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))?;
    let best = *rows
        .iter()
        .find(|r| r.mb_per_s >= GOOD_ENOUGH * top.mb_per_s)?;
    let why = if best.block_size == top.block_size {
        format!(
            "highest throughput, {:.1} MB/s; mean latency {:.0} µs",
            best.mb_per_s, best.mean_latency_us
        )
    } else {
        format!(
            "{:.1} MB/s, {:.0} % of the top {:.1} MB/s at {}, with mean latency {:.0} µs instead of {:.0} µs",
            best.mb_per_s,
            100.0 * best.mb_per_s / top.mb_per_s,
            top.mb_per_s,
            size_label(top.block_size),
            best.mean_latency_us,
            top.mean_latency_us
        )
    };
    // µJ per request over bytes per request, in J per 10^9 bytes.
    let energy =
        (best.energy_uj_per_op > 0.0).then(|| best.energy_uj_per_op * 1e3 / best.block_size as f64);
    let for_file = file_size.map(|f| class.algorithm1_for_file(p, f));
    Some(PatternAdvice {
        pattern: p.code().to_string(),
        best_block_size: best.block_size,
        algorithm1_block_size: class.algorithm1(p),
        algorithm1_file_block_size: for_file.as_ref().map(|f| f.0),
        algorithm1_file_why: for_file.map(|f| f.1),
        mb_per_s: best.mb_per_s,
        energy_j_per_gb: energy,
        mean_latency_us: best.mean_latency_us,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashkv_device::presets;

    fn advice(name: &str) -> Advice {
        let spec = presets::get(name).unwrap();
        let o = AdviceOptions {
            ops: 300,
            ..AdviceOptions::default()
        };
        let rows = profile_model(&spec, &o).unwrap();
        advise(&rows, DeviceClass::of_model(&spec.model), &o).unwrap()
    }

    #[test]
    fn seed_002_rule_of_thumb_holds_for_disks_and_the_intel_320() {
        for hdd in ["hdd-7200", "hdd-15k"] {
            let a = advice(hdd);
            assert_eq!(a.device_class, DeviceClass::Hdd);
            assert!(
                (0.005..0.05).contains(&a.breakeven_fraction),
                "{hdd}: {}",
                a.breakeven_formula
            );
        }
        let a = advice("ssd-320");
        assert_eq!(a.device_class, DeviceClass::Ssd);
        assert!(a.breakeven_fraction > 0.5, "{}", a.breakeven_formula);
        assert!(a.breakeven_formula.contains("P / F_seq"));
    }

    #[test]
    fn classes_from_rows_agree_with_classes_from_models() {
        for name in ["hdd-15k", "ssd-320", "usb-flash", "nvme"] {
            let spec = presets::get(name).unwrap();
            let o = AdviceOptions {
                ops: 200,
                ..AdviceOptions::default()
            };
            let rows = profile_model(&spec, &o).unwrap();
            assert_eq!(
                DeviceClass::of_rows(&rows),
                Some(DeviceClass::of_model(&spec.model)),
                "{name}"
            );
        }
    }

    #[test]
    fn best_block_is_the_smallest_within_reach_of_the_top() {
        let row = |bs: u64, mb: f64| ProfileRow {
            device: "d".into(),
            pattern: "sr".into(),
            block_size: bs,
            iodepth: 1,
            ops: 1,
            iops: mb * 1e6 / bs as f64,
            mb_per_s: mb,
            mean_latency_us: bs as f64 / mb,
            p99_latency_us: 0.0,
            p50_latency_us: 0.0,
            p95_latency_us: 0.0,
            p999_latency_us: 0.0,
            max_latency_us: 0.0,
            energy_uj_per_op: 2.0,
            erases: 0,
            ftl: Default::default(),
        };
        let rows = [row(4096, 10.0), row(65536, 95.0), row(1 << 20, 100.0)];
        let a = pattern_advice(
            rows.iter().collect(),
            Pattern::SeqRead,
            DeviceClass::Hdd,
            None,
        )
        .unwrap();
        assert_eq!((a.best_block_size, a.algorithm1_block_size), (65536, 65536));
        assert!(a.why.contains("95 % of the top"), "{}", a.why);
        // 2 µJ per 64 KiB = 2e-6 J / 65536 B = 0.0305 J per 10^9 B.
        assert!((a.energy_j_per_gb.unwrap() - 2e-6 / 65536.0 * 1e9).abs() < 1e-9);
    }

    #[test]
    fn algorithm1_takes_the_file_size_where_experiment_2_found_it_matters() {
        let (b, why) = DeviceClass::Hdd.algorithm1_for_file(Pattern::SeqWrite, 32 << 20);
        assert_eq!(b, 1 << 20);
        assert!(why.contains("up to 64M"), "{why}");
        let (b, why) = DeviceClass::Hdd.algorithm1_for_file(Pattern::SeqWrite, 100 << 20);
        assert_eq!((b, why.contains("up to 128M")), (256 << 10, true), "{why}");
        let (b, why) = DeviceClass::Hdd.algorithm1_for_file(Pattern::SeqWrite, 8 << 30);
        assert_eq!(b, 4 << 10);
        assert!(
            why.contains("above 128M") && why.contains("outside"),
            "{why}"
        );
        // Elsewhere Algorithm 1's answer stands, with why.
        for class in [DeviceClass::Hdd, DeviceClass::FlashDrive, DeviceClass::Ssd] {
            for p in PATTERNS {
                let (b, why) = class.algorithm1_for_file(p, 512 << 20);
                if (class, p) != (DeviceClass::Hdd, Pattern::SeqWrite) {
                    assert_eq!(b, class.algorithm1(p), "{class:?} {p}");
                    assert!(
                        why.contains("Algorithm 1") || why.contains("does not change"),
                        "{why}"
                    );
                }
            }
        }
        let (_, why) = DeviceClass::FlashDrive.algorithm1_for_file(Pattern::SeqWrite, 1 << 30);
        assert!(why.contains("no pattern for writes"), "{why}");
    }

    #[test]
    fn five_minute_rule_follows_gray() {
        // 256 pages per MB, 100 IOPS, $100 disk, $1/GiB RAM: 2.56 × 102,400 s.
        let mut rows = Vec::new();
        for (p, iops) in [("rr", 100.0), ("sr", 1000.0)] {
            rows.push(ProfileRow {
                device: "d".into(),
                pattern: p.into(),
                block_size: 4096,
                iodepth: 1,
                ops: 1,
                iops,
                mb_per_s: iops * 4096.0 / 1e6,
                mean_latency_us: 1.0,
                p99_latency_us: 1.0,
                p50_latency_us: 1.0,
                p95_latency_us: 1.0,
                p999_latency_us: 1.0,
                max_latency_us: 1.0,
                energy_uj_per_op: 0.0,
                erases: 0,
                ftl: Default::default(),
            });
        }
        let o = AdviceOptions {
            ram_usd_per_gb: 1.0,
            ..AdviceOptions::default()
        };
        let a = advise(&rows, DeviceClass::Hdd, &o).unwrap();
        assert!((a.five_minute_rule_s - 2.56 * 102_400.0).abs() < 1e-6);
        assert!((a.breakeven_fraction - 0.1).abs() < 1e-12);
        assert!(a.patterns.iter().all(|p| p.energy_j_per_gb.is_none()));
    }
}
