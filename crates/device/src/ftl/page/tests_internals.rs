//! The page FTL with planes, a cached mapping table and a data cache, under
//! random writes, partial writes, trims, reads and flushes: the maps stay
//! consistent after every operation, and after a FLUSH every page written
//! and not trimmed is on flash.

use proptest::prelude::*;

use super::PageFtl;
use crate::array::ArraySpec;
use crate::ftl::map::NONE;
use crate::ftl::tests::page_params;
use crate::ftl::{CachePolicy, Front, FtlParams};
use crate::{DeviceStats, Model};

const PAGE: u64 = 512;
const PAGES: u64 = 2048;

/// 1 MiB of 512 B pages (128 map entries a translation page: 16 of them),
/// 8-page blocks per plane, 2 dies.
fn ftl(planes: u32, map_cache: u64, cache: u64, policy: CachePolicy) -> PageFtl {
    let p = FtlParams {
        page_size: PAGE,
        pages_per_block: 8,
        planes_per_die: planes,
        mapping_cache: map_cache,
        write_cache: cache,
        write_cache_policy: policy,
        ..page_params(0.25)
    };
    let front = Front {
        sector_size: 512,
        capacity: PAGES * PAGE,
        page_size: PAGE,
        host_mb_per_s: 4096.0,
        page_host_ns: 125,
        read_cmd_ns: 0,
        write_cmd_ns: 0,
    };
    let array = ArraySpec {
        kind: "ftl",
        page_size: PAGE,
        pages_per_block: 8,
        sector_size: 512,
        read_us: 10.0,
        program_us: 100.0,
        erase_us: 1000.0,
        bus_mb_per_s: 400.0,
        channels: 2,
        dies_per_channel: 1,
        read_uj: 0.0,
        program_uj: 0.0,
        erase_uj: 0.0,
    }
    .build()
    .unwrap();
    PageFtl::new(&p, front, array).unwrap()
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Write(u64, u64),
    Trim(u64, u64),
    Read(u64, u64),
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    // Hot pages (the first 300) most of the time, so caches are hit.
    let page = prop_oneof![3 => 0u64..300, 1 => 0u64..PAGES];
    prop_oneof![
        12 => (page.clone(), 1u64..6).prop_map(|(p, n)| Op::Write(p, n)),
        1 => (page.clone(), 1u64..40).prop_map(|(p, n)| Op::Trim(p, n)),
        4 => (page, 1u64..6).prop_map(|(p, n)| Op::Read(p, n)),
        1 => Just(Op::Flush),
    ]
}

/// Runs `ops`; returns the pages that must be live after a flush.
fn run(f: &mut PageFtl, ops: &[Op], st: &mut DeviceStats) -> Vec<bool> {
    let mut live = vec![false; PAGES as usize];
    let mut at = 0;
    for (i, &op) in ops.iter().enumerate() {
        let c = match op {
            Op::Write(p, n) | Op::Trim(p, n) | Op::Read(p, n) => {
                let n = n.min(PAGES - p);
                let (off, len) = (p * PAGE, n * PAGE);
                for q in p..p + n {
                    match op {
                        Op::Write(..) => live[q as usize] = true,
                        Op::Trim(..) => live[q as usize] = false,
                        _ => {}
                    }
                }
                match op {
                    Op::Write(..) => f.write(at, off, len, st),
                    Op::Trim(..) => f.trim(at, off, len, st),
                    _ => f.read(at, off, len, st),
                }
            }
            Op::Flush => f.flush(at, st),
        }
        .unwrap();
        // Every other command comes 1 us after the one before, whether or
        // not that is done.
        at = if i % 2 == 0 { c.end } else { at + 1_000 };
        f.check_invariants().unwrap();
    }
    f.flush(at, st).unwrap();
    live
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn every_page_written_is_on_flash_after_a_flush(
        ops in proptest::collection::vec(op(), 200..700),
        planes in 1u32..3,
        map_cache in prop_oneof![Just(0u64), Just(2 * PAGE), Just(4 * PAGE)],
        cache in prop_oneof![Just(0u64), Just(16 * PAGE)],
        through in any::<bool>(),
    ) {
        let policy = if through { CachePolicy::WriteThrough } else { CachePolicy::WriteBack };
        let mut f = ftl(planes, map_cache, cache, policy);
        let mut st = DeviceStats::default();
        let live = run(&mut f, &ops, &mut st);
        for (lpn, &l) in live.iter().enumerate() {
            prop_assert_eq!(f.l2p.get(lpn as u32) != NONE, l, "lpn {}", lpn);
        }
        prop_assert_eq!(st.erase_counts.total(), st.block_erases);
        if map_cache > 0 {
            let m = st.ftl;
            prop_assert!(m.map_cache_hits + m.map_cache_misses > 0);
            prop_assert!(m.translation_reads <= m.map_cache_misses + st.gc_page_moves);
        }
        if cache > 0 && through {
            prop_assert_eq!(st.ftl.cache_write_hits, 0);
        }
    }
}

/// With a data cache, a page rewritten while dirty is programmed once.
#[test]
fn the_same_operations_without_caches_program_at_least_as_much() {
    // Eight hot pages written over and over, faster than two dies program.
    let ops: Vec<Op> = (0..400).map(|i| Op::Write(i % 8, 1)).collect();
    let mut plain = DeviceStats::default();
    run(&mut ftl(1, 0, 0, CachePolicy::WriteBack), &ops, &mut plain);
    let mut cached = DeviceStats::default();
    run(
        &mut ftl(1, 0, 16 * PAGE, CachePolicy::WriteBack),
        &ops,
        &mut cached,
    );
    assert_eq!(plain.nand_page_programs, 400 + plain.gc_page_moves);
    assert!(
        cached.nand_page_programs < plain.nand_page_programs,
        "{cached:?}"
    );
    assert_eq!(
        cached.ftl.cache_destages + cached.ftl.cache_write_hits,
        cached.ftl.cache_writes
    );
}
