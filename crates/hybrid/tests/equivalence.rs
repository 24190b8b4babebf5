//! Any sequence of reads, writes, trims, flushes, idle periods and reopens
//! returns exactly what a plain array of bytes would.

mod common;

use flashkv_device::{BlockDevice, Nanos};
use flashkv_hybrid::{HybridDevice, HybridStats, Options};
use proptest::prelude::*;

const SECTOR: u64 = 4096;
const HDD_SECTORS: u64 = 8192; // 32 MiB

/// Spreads the small hot set over the device, so the maps need many tablets.
fn spread(sector: u64) -> u64 {
    sector * 61 % (HDD_SECTORS - 16)
}

#[derive(Debug, Clone)]
enum Op {
    Write {
        sector: u64,
        len: u64,
        fill: u8,
    },
    Read {
        sector: u64,
        len: u64,
    },
    Trim {
        sector: u64,
        len: u64,
    },
    Flush,
    Idle {
        ns: Nanos,
    },
    Reopen,
    /// 512-byte granular: `kind` 0 write, 1 read, 2 trim; offset and length
    /// in 512-byte units from a spread sector.
    Small {
        kind: u8,
        sector: u64,
        at: u64,
        n: u64,
        fill: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    // Hot region so data is rewritten, cached, flushed and reclaimed.
    let place = (0u64..256, 1u64..10);
    prop_oneof![
        8 => (place.clone(), any::<u8>()).prop_map(|((sector, len), fill)| Op::Write { sector, len, fill }),
        // Sequential runs, to exercise the run counter.
        2 => (0u64..120, any::<u8>()).prop_map(|(s, fill)| Op::Write { sector: s * 8, len: 8, fill }),
        5 => place.clone().prop_map(|(sector, len)| Op::Read { sector, len }),
        1 => place.prop_map(|(sector, len)| Op::Trim { sector, len }),
        1 => Just(Op::Flush),
        2 => (1u64..40_000_000).prop_map(|ns| Op::Idle { ns }),
        1 => Just(Op::Reopen),
        4 => (0u8..3, 0u64..256, 0u64..8, 1u64..20, any::<u8>())
            .prop_map(|(kind, sector, at, n, fill)| Op::Small { kind, sector, at, n, fill }),
    ]
}

fn options() -> Options {
    Options {
        size_threshold: 16 << 10,
        seq_threshold: 24 << 10,
        memory_limit: 8 * 4096, // swap tablets constantly
        round_bytes: 64 << 10,
        max_flush_write: 16 << 10,
        promote_after: 1,
        idle_threshold_ns: 100_000,
        ..Options::default()
    }
}

/// Bytes of a write: distinct per sector and per fill.
fn pattern(sector: u64, len: u64, fill: u8) -> Vec<u8> {
    (0..len * SECTOR)
        .map(|i| fill ^ ((sector * SECTOR + i) % 251) as u8)
        .collect()
}

fn run(ops: Vec<Op>) -> Result<HybridStats, TestCaseError> {
    // A 2 MiB SSD: a cache of ~500 sectors, so the log wraps and pressure flushes run.
    let mut dev = Some(
        HybridDevice::create(
            common::dram("2 MiB", 400.0),
            common::dram("32 MiB", 100.0),
            options(),
        )
        .unwrap(),
    );
    let mut model = vec![0u8; (HDD_SECTORS * SECTOR) as usize];
    let mut now: Nanos = 0;
    for op in ops {
        dev.as_mut().unwrap().check_invariants().unwrap();
        let d = dev.as_mut().unwrap();
        match op {
            Op::Write { sector, len, fill } => {
                let sector = spread(sector);
                let len = len.min(HDD_SECTORS - sector);
                let data = pattern(sector, len, fill);
                let c = d.write_at(now, sector * SECTOR, &data).unwrap();
                now = now.max(c.end);
                let o = (sector * SECTOR) as usize;
                model[o..o + data.len()].copy_from_slice(&data);
            }
            Op::Read { sector, len } => {
                let sector = spread(sector);
                let mut buf = vec![0u8; (len * SECTOR) as usize];
                let c = d.read_at(now, sector * SECTOR, &mut buf).unwrap();
                now = now.max(c.end);
                let o = (sector * SECTOR) as usize;
                prop_assert!(
                    buf == model[o..o + buf.len()],
                    "read at sector {sector} len {len}"
                );
            }
            Op::Trim { sector, len } => {
                let sector = spread(sector);
                let c = d.trim_at(now, sector * SECTOR, len * SECTOR).unwrap();
                now = now.max(c.end);
                let o = (sector * SECTOR) as usize;
                model[o..o + (len * SECTOR) as usize].fill(0);
            }
            Op::Flush => now = now.max(d.flush_at(now).unwrap().end),
            Op::Idle { ns } => now += ns,
            Op::Small {
                kind,
                sector,
                at,
                n,
                fill,
            } => {
                let off = spread(sector) * SECTOR + at * 512;
                let (o, len) = (off as usize, (n * 512) as usize);
                let c = match kind {
                    0 => {
                        let data: Vec<u8> =
                            (0..len).map(|i| fill ^ ((o + i) % 253) as u8).collect();
                        model[o..o + len].copy_from_slice(&data);
                        d.write_at(now, off, &data).unwrap()
                    }
                    1 => {
                        let mut buf = vec![0u8; len];
                        let c = d.read_at(now, off, &mut buf).unwrap();
                        prop_assert!(buf == model[o..o + len], "small read at {off} len {len}");
                        c
                    }
                    _ => {
                        model[o..o + len].fill(0);
                        d.trim_at(now, off, len as u64).unwrap()
                    }
                };
                now = now.max(c.end);
            }
            Op::Reopen => {
                let (ssd, hdd) = dev.take().unwrap().into_devices();
                let d = HybridDevice::open(ssd, hdd, options()).unwrap();
                now = now.max(d.clock());
                dev = Some(d);
            }
        }
    }
    let d = dev.as_mut().unwrap();
    d.check_invariants().unwrap();
    let mut all = vec![0u8; model.len()];
    d.read_at(now, 0, &mut all).unwrap();
    prop_assert!(all == model, "final contents differ");
    // Drained, the HDD alone holds everything.
    let before = d.hybrid_stats();
    let c = d.drain(now + 1).unwrap();
    prop_assert_eq!(d.hybrid_stats().dirty_bytes, 0);
    let (_, hdd) = dev.take().unwrap().into_devices();
    let mut hdd = hdd;
    hdd.read_at(c.end, 0, &mut all).unwrap();
    prop_assert!(all == model, "HDD after drain differs");
    Ok(before)
}

/// `n` cases, or `PROPTEST_CASES` (for long runs; the config is explicit).
fn cases(n: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]
    #[test]
    fn hybrid_reads_back_what_a_plain_device_would(ops in proptest::collection::vec(op(), 1..160)) {
        run(ops).map(|_| ())?;
    }
}

#[test]
fn many_small_random_writes_wrap_the_log_and_stay_correct() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut ops = Vec::new();
    for i in 0..3000 {
        ops.push(Op::Write {
            sector: rng.gen_range(0..500),
            len: rng.gen_range(1..3),
            fill: i as u8,
        });
        if i % 50 == 0 {
            ops.push(Op::Write {
                sector: rng.gen_range(0..500),
                len: 6,
                fill: !(i as u8),
            });
        }
        if i % 7 == 0 {
            ops.push(Op::Read {
                sector: rng.gen_range(0..500),
                len: rng.gen_range(1..5),
            });
        }
        if i % 1000 == 500 && i < 2000 {
            ops.push(Op::Reopen);
        }
    }
    let st = run(ops).unwrap();
    eprintln!("{st:#?}");
    // The run went through every mechanism it is meant to check.
    assert!(
        st.pressure_flushes > 0 && st.flush_bytes > 0 && st.ssd_write_bytes > 2 * st.cache_bytes,
        "log wrapped under pressure"
    );
    assert!(st.hdd_write_requests > 0 && st.ssd_write_requests > 0);
    assert!(st.read_hit_bytes > 0 && st.read_miss_bytes > 0);
    assert!(st.tablet_loads > 0 && st.tablet_stores > 0);
    assert!(st.recovery.is_some_and(|r| r.records > 0));
}

/// Issue 13: a block trace (SPC format, 512-byte sectors) of 1 KiB writes
/// off the 4 KiB unit, with idle gaps and a reopen, leaves the hybrid
/// byte-identical to a plain device; serving the writes (with the flush
/// worker and recovery) never reads the HDD; drained, the HDD alone matches.
#[test]
fn an_unaligned_1k_write_trace_matches_a_plain_device_without_reading_the_hdd() {
    use flashkv_hybrid::trace::{parse, Format};
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(13);
    let mut text = String::new();
    let mut secs = 0.0;
    for i in 0..4000u64 {
        // Mostly 2 sectors off a 4 KiB boundary, as OLTP traces are; a hot set.
        let unit = rng.gen_range(0..600u64) * 13 % (HDD_SECTORS - 1);
        let off = if rng.gen_bool(0.7) {
            2
        } else {
            rng.gen_range(0..8)
        };
        secs += if i % 97 == 0 { 0.05 } else { 0.000_2 };
        text.push_str(&format!("0,{},1024,w,{secs:.6}\n", unit * 8 + off));
    }
    let recs = parse(Format::Spc, text.as_bytes()).unwrap();
    assert_eq!(recs.len(), 4000);
    let mut dev = HybridDevice::create(
        common::dram("2 MiB", 400.0),
        common::dram("32 MiB", 100.0),
        options(),
    )
    .unwrap();
    let mut plain = common::dram("32 MiB", 100.0);
    let mut ssd_reads = 0;
    for (i, r) in recs.iter().enumerate() {
        assert!(r.write && r.len == 1024 && r.offset % 512 == 0);
        let data: Vec<u8> = (0..r.len)
            .map(|k| (i as u64 * 7 + (r.offset + k) % 251) as u8)
            .collect();
        let at = dev.clock().max(r.time_ns);
        dev.write_at(at, r.offset, &data).unwrap();
        plain.write_at(plain.clock(), r.offset, &data).unwrap();
        if i == 2500 {
            ssd_reads += dev.hybrid_stats().merge_reads;
            let (ssd, hdd) = dev.into_devices();
            dev = HybridDevice::open(ssd, hdd, options()).unwrap();
            assert!(dev.hybrid_stats().recovery.unwrap().dirty_sectors > 0);
        }
    }
    let st = dev.hybrid_stats();
    eprintln!("{st:#?}");
    assert_eq!(
        dev.devices().1.stats().host_reads,
        0,
        "a write read the HDD"
    );
    assert_eq!(st.hdd_write_requests, 0);
    assert!(st.partial_units > 0 && ssd_reads + st.merge_reads > 0);
    assert!(st.flush_bytes > 0 && st.pressure_flushes + st.idle_flushes > 0);
    let (mut got, mut want) = (vec![0u8; (HDD_SECTORS * SECTOR) as usize], vec![0u8; 0]);
    want.resize(got.len(), 0);
    dev.read_at(dev.clock(), 0, &mut got).unwrap();
    plain.read_at(plain.clock(), 0, &mut want).unwrap();
    assert!(got == want, "hybrid differs from the plain device");
    let c = dev.drain(dev.clock()).unwrap();
    let (_, mut hdd) = dev.into_devices();
    hdd.read_at(c.end, 0, &mut got).unwrap();
    assert!(got == want, "HDD after drain differs from the plain device");
}
