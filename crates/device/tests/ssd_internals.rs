//! The SSD internals MQSim models, each against its closed form, with
//! counts and virtual times asserted exactly: the DRAM data cache absorbs a
//! burst of exactly its size at DRAM speed and FLUSH waits for the
//! destage; the cached mapping table (DFTL) hits as often as the share of
//! the map it holds under uniform random reads; a second plane doubles a
//! die's program bandwidth.

use flashkv_device::{BlockDevice, DeviceSpec, SimDevice};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// 64 MiB of 4 KiB pages on one die, 64-page blocks; no bus time (it is
/// in the NAND times), 1000 MB/s host link (4096 ns a page), 2 us per
/// command, 100 ms programs so that nothing is destaged during a burst.
fn spec(extra: &str) -> DeviceSpec {
    let text = format!(
        "capacity = \"64 MiB\"\n[model]\nkind = \"ftl\"\nmapping = \"page\"\npage_size = \"4k\"\n\
         pages_per_block = 64\nread_us = 50\nprogram_us = 100000\nerase_us = 3000\n\
         host_mb_per_s = 1000\nread_command_us = 2\nwrite_command_us = 2\n{extra}"
    );
    DeviceSpec::from_toml(&text, "t").unwrap()
}

const PAGE: usize = 4096;
const CMD: u64 = 2_000;
const HOST: u64 = 4_096;
/// A 4 KiB page at the default 3200 MB/s of DRAM.
const DRAM: u64 = 1_280;
const PROGRAM: u64 = 100_000_000;
/// A page read (a translation page's).
const READ: u64 = 50_000;

/// Both caches on: 1 MiB of data cache (256 pages), 16 KiB of mapping
/// cache (4 translation pages of the 16 the 64 MiB map takes).
const BOTH: &str = "write_cache = \"1 MiB\"\nmapping_cache = \"16 KiB\"\n";

#[test]
fn a_burst_of_the_cache_size_completes_at_dram_speed() {
    let mut d = SimDevice::new(&spec(BOTH)).unwrap();
    let cache_pages = 256u64;
    let page = [7u8; PAGE];
    for k in 0..cache_pages {
        let at = d.clock();
        let c = d.write_at(at, k * PAGE as u64, &page).unwrap();
        // Command, the page over the link, into DRAM: no flash in the way.
        assert_eq!(c.end - at, CMD + HOST + DRAM, "write {k}");
    }
    let burst_end = d.clock();
    assert_eq!(burst_end, cache_pages * (CMD + HOST + DRAM));
    // One more page: every page is dirty or being destaged; it waits for
    // the first destage, booked when the first page was in DRAM and its
    // translation page read (a miss).
    let first_program = CMD + HOST + DRAM + READ;
    let c = d
        .write_at(burst_end, cache_pages * PAGE as u64, &page)
        .unwrap();
    assert_eq!(c.end, first_program + PROGRAM + DRAM);
    let s = d.stats();
    assert_eq!((s.ftl.cache_writes, s.ftl.cache_write_hits), (257, 0));
    // FLUSH waits for every destage: 257 programs one after the other on
    // the one die, from the first page's arrival.
    let f = d.flush().unwrap();
    assert_eq!(f.end, first_program + 257 * PROGRAM);
    let s = d.stats();
    assert_eq!((s.ftl.cache_destages, s.nand_page_programs), (257, 257));
    // The destages change map entries of one translation page: a miss
    // (its read), then hits; it stays in DRAM, dirty.
    let m = s.ftl;
    assert_eq!((m.map_cache_misses, m.map_cache_hits), (1, 256));
    assert_eq!((m.translation_reads, m.translation_writes), (1, 0));
    let mut buf = [0u8; PAGE];
    d.read(3 * PAGE as u64, &mut buf).unwrap();
    assert_eq!(buf, page);
    // Reads of cached pages come from DRAM.
    assert_eq!(
        (d.stats().ftl.cache_read_hits, d.stats().nand_page_reads),
        (1, 1)
    );
    d.check_invariants().unwrap();
}

#[test]
fn overwrites_of_a_page_not_yet_destaged_are_absorbed() {
    let mut d = SimDevice::new(&spec(BOTH)).unwrap();
    for _ in 0..10 {
        d.write(0, &[1u8; PAGE]).unwrap();
        d.write(PAGE as u64, &[2u8; PAGE]).unwrap();
    }
    d.flush().unwrap();
    let s = d.stats();
    // The first write of each page is destaged at once (the die is free);
    // the other nine of page 0 wait behind it as one dirty copy, and the
    // die programs page 1 first, then page 0's last version: 3 programs.
    assert_eq!((s.ftl.cache_writes, s.nand_page_programs), (20, 3));
    assert_eq!(s.ftl.cache_write_hits, 20 - 3);
}

#[test]
fn write_through_completes_when_programmed() {
    let mut d = SimDevice::new(&spec(
        "write_cache = \"1 MiB\"\nwrite_cache_policy = \"write-through\"",
    ))
    .unwrap();
    let c = d.write(0, &[1u8; PAGE]).unwrap();
    assert_eq!(c.end, CMD + HOST + DRAM + PROGRAM);
    let f = d.flush().unwrap();
    assert_eq!(f.end, c.end);
    let mut buf = [0u8; PAGE];
    let r = d.read(0, &mut buf).unwrap();
    assert_eq!(r.end - r.start, CMD + DRAM + HOST);
    assert_eq!(d.stats().ftl.cache_read_hits, 1);
}

/// Uniform random 4 KiB reads over a span of `tpages` translation pages of
/// a filled device, with 4 in DRAM: (hits, misses, translation reads).
fn random_reads(tpages: u64, n: u64, seed: u64) -> (u64, u64, u64) {
    let mut d = SimDevice::new(&spec(BOTH)).unwrap();
    assert!(d.fill_sequential(64 << 20).unwrap());
    let pages = tpages * 1024;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut buf = [0u8; PAGE];
    // Warm the cache: from here on it holds 4 distinct translation pages.
    for tp in 0..4.min(tpages) {
        d.read(tp * 1024 * PAGE as u64, &mut buf).unwrap();
    }
    let before = d.stats();
    for _ in 0..n {
        let p = rng.gen_range(0..pages);
        d.read(p * PAGE as u64, &mut buf).unwrap();
    }
    let s = d.stats();
    let f = s.ftl.since(&before.ftl);
    assert_eq!(
        s.nand_page_reads - before.nand_page_reads,
        n + f.translation_reads
    );
    (f.map_cache_hits, f.map_cache_misses, f.translation_reads)
}

#[test]
fn dftl_hits_the_cached_fraction_of_the_map_under_uniform_random_reads() {
    let n = 20_000u64;
    // (translation pages read over, the counts this seed gives)
    for (tpages, counts) in [
        (4, (20_000, 0, 0)),
        (8, (10_097, 9_903, 9_903)),
        (16, (5_048, 14_952, 14_952)),
    ] {
        let (hits, misses, reads) = random_reads(tpages, n, 7);
        assert_eq!((hits, misses, reads), counts, "{tpages} translation pages");
        // The closed form: DRAM holds 4 of `tpages`, each read's page is
        // uniform, so a read hits with probability 4 / tpages.
        let p = 4.0 / tpages as f64;
        let sigma = (p * (1.0 - p) / n as f64).sqrt();
        let ratio = hits as f64 / n as f64;
        assert!(
            (ratio - p).abs() <= 4.0 * sigma + 1e-12,
            "{tpages}: {ratio} vs {p}"
        );
    }
}

/// One die; `planes` planes; no cache: a 1 MiB write (256 pages).
fn write_mib(planes: u32) -> (u64, u64) {
    let mut d = SimDevice::new(&spec(&format!("planes_per_die = {planes}"))).unwrap();
    let c = d.write(0, &vec![3u8; 1 << 20]).unwrap();
    (c.end, d.stats().ftl.multi_plane_ops)
}

#[test]
fn a_second_plane_doubles_a_dies_program_bandwidth() {
    // One plane: a page at a time, 256 programs after the first page is in.
    let (one, ops1) = write_mib(1);
    assert_eq!((one, ops1), (CMD + HOST + 256 * PROGRAM, 0));
    // Two planes: two pages a program, from the second page's arrival.
    let (two, ops2) = write_mib(2);
    assert_eq!((two, ops2), (CMD + 2 * HOST + 128 * PROGRAM, 128));
    let bandwidth = |end: u64| (1u64 << 20) as f64 / end as f64;
    assert!((bandwidth(two) / bandwidth(one) - 2.0).abs() < 1e-3);
    // Reading it back, pages of a row come out of one multi-plane read.
    let mut d = SimDevice::new(&spec("planes_per_die = 2")).unwrap();
    d.write(0, &vec![3u8; 1 << 20]).unwrap();
    let before = d.stats();
    let mut buf = vec![0u8; 1 << 20];
    d.read(0, &mut buf).unwrap();
    let s = d.stats();
    assert_eq!(s.ftl.multi_plane_ops - before.ftl.multi_plane_ops, 128);
    assert_eq!(s.nand_page_reads - before.nand_page_reads, 256);
    assert!(buf.iter().all(|&b| b == 3));
}

#[test]
fn the_data_cache_destages_two_planes_at_once() {
    let flush_end = |planes: u32| {
        let mut d = SimDevice::new(&spec(&format!("{BOTH}planes_per_die = {planes}"))).unwrap();
        for k in 0..64u64 {
            d.write(k * PAGE as u64, &[5u8; PAGE]).unwrap();
        }
        d.flush().unwrap().end
    };
    // The first page goes alone (the die is free when it arrives and its
    // translation page is read), the other 63 wait for it: 63 programs
    // with one plane, 32 with two.
    let first = CMD + HOST + DRAM + READ;
    assert_eq!(flush_end(1), first + 64 * PROGRAM);
    assert_eq!(flush_end(2), first + 33 * PROGRAM);
}
