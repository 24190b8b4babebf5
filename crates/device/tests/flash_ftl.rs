//! NAND behind an FTL: data round trips, read-erase-rewrite costs of block
//! mapping, garbage collection under overwrites.

use flashkv_device::{presets, BlockDevice, DeviceSpec, SimDevice};
use proptest::prelude::*;

fn ftl(mapping: &str, extra: &str) -> SimDevice {
    let spec = DeviceSpec::from_toml(
        &format!(
            "capacity = \"1m\"\n[model]\nkind = \"ftl\"\nmapping = \"{mapping}\"\npage_size = \"4k\"\n\
             pages_per_block = 4\nread_us = 10\nprogram_us = 100\nerase_us = 1000\nhost_mb_per_s = 4096\n\
             over_provisioning = 0.25\n{extra}"
        ),
        mapping,
    )
    .unwrap();
    SimDevice::new(&spec).unwrap()
}

#[test]
fn ftl_devices_hide_erasing() {
    for name in [
        "flash-ssd-2005",
        "ssd-x25m",
        "ssd-320",
        "ssd-lowend",
        "usb-flash",
        "nvme",
    ] {
        let g = presets::open(name).unwrap().geometry();
        assert_eq!((g.erase_unit, g.program_once), (None, false), "{name}");
        assert!(g.capacity <= 4 << 30, "{name}: keep simulations small");
    }
}

#[test]
fn block_mapped_small_write_is_read_erase_rewrite_of_the_block() {
    // One die, 4-page (16 KB) blocks.
    let mut d = ftl("block", "");
    d.write(0, &[1; 16384]).unwrap();
    let before = d.stats();
    let at = d.clock();
    let c = d.write_at(at, 4096, &[2; 4096]).unwrap();
    let s = d.stats();
    assert_eq!(s.nand_page_reads - before.nand_page_reads, 4);
    assert_eq!(s.nand_page_programs - before.nand_page_programs, 4);
    assert_eq!(s.block_erases - before.block_erases, 1);
    // 4096 B over the host (1 us), 4 reads, 4 programs, 1 erase.
    assert_eq!(c.end - at, 1_000 + 4 * 10_000 + 4 * 100_000 + 1_000_000);
    let mut buf = vec![0; 16384];
    d.read(0, &mut buf).unwrap();
    assert!(buf[..4096].iter().all(|&b| b == 1) && buf[4096..8192].iter().all(|&b| b == 2));
}

#[test]
fn block_mapped_scratch_copy_costs_the_block_twice_and_keeps_data() {
    let mut d = ftl("block", "scratch_copy = true");
    d.write(0, &[1; 16384]).unwrap();
    let before = d.stats();
    let at = d.clock();
    let c = d.write_at(at, 4096, &[2; 4096]).unwrap();
    let s = d.stats();
    // Out to the scratch block and back: 8 reads, 8 programs, 2 erases.
    assert_eq!(s.nand_page_reads - before.nand_page_reads, 8);
    assert_eq!(s.nand_page_programs - before.nand_page_programs, 8);
    assert_eq!(s.block_erases - before.block_erases, 2);
    assert_eq!(
        c.end - at,
        1_000 + 2 * (4 * 10_000 + 4 * 100_000 + 1_000_000)
    );
    let mut buf = vec![0; 16384];
    d.read(0, &mut buf).unwrap();
    assert!(buf[..4096].iter().all(|&b| b == 1) && buf[4096..8192].iter().all(|&b| b == 2));
}

#[test]
fn block_mapped_sequential_run_costs_only_programs_and_erases() {
    let mut d = ftl("block", "");
    d.write(0, &[1; 65536]).unwrap();
    let before = d.stats();
    // Rewrite the same four blocks as a run of 4 KB writes.
    for i in 0..16 {
        d.write(i * 4096, &[2; 4096]).unwrap();
    }
    let s = d.stats();
    assert_eq!(s.nand_page_reads, before.nand_page_reads);
    assert_eq!(s.nand_page_programs - before.nand_page_programs, 16);
    assert_eq!(s.block_erases - before.block_erases, 4);
}

#[test]
fn flash_ssd_2005_small_random_write_copies_its_132_kb_block_out_and_back() {
    let mut d = presets::open("flash-ssd-2005").unwrap();
    d.write(0, &vec![1; 1 << 20]).unwrap();
    let before = d.stats();
    let at = d.clock();
    let c = d.write_at(at, 5 * 131072 + 8192, &[2; 4096]).unwrap();
    let s = d.stats();
    assert_eq!(s.nand_page_reads - before.nand_page_reads, 128);
    assert_eq!(s.nand_page_programs - before.nand_page_programs, 128);
    assert_eq!(s.block_erases - before.block_erases, 2);
    // 790 us command + 4 KB at 150 MB/s, then twice (to the scratch block
    // and back) 64 x (25 us + 2 KB at 52 MB/s) + 64 x (2 KB at 52 MB/s +
    // 250 us) + a 2 ms erase.
    let page_bus = 39_385;
    let expect =
        790_000 + 27_307 + 2 * (64 * (25_000 + page_bus) + 64 * (page_bus + 250_000) + 2_000_000);
    assert_eq!(c.end - at, expect);
}

#[test]
fn page_mapped_reads_stripe_over_dies() {
    let mut d = ftl("page", "channels = 2\ndies_per_channel = 2");
    let mut buf = vec![0; 4 * 4096];
    let c = d.read(0, &mut buf).unwrap();
    // Four pages on four dies at once, then 4 x 1 us over the host link.
    assert_eq!(c.end - c.start, 10_000 + 4_000);
    let c = d.write(0, &buf).unwrap();
    // Pages cross the host link one by one; each die programs as its page arrives.
    assert_eq!(c.end - c.start, 4_000 + 100_000);
}

#[test]
fn page_mapped_overwrites_force_gc_and_keep_data() {
    let mut d = ftl("page", "channels = 2");
    let mut reference = vec![0u8; 1 << 20];
    let mut x = 99u64;
    for i in 0..4000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let page = (x >> 33) % 256;
        let data = [(i % 251) as u8 + 1; 4096];
        d.write(page * 4096, &data).unwrap();
        reference[(page * 4096) as usize..(page * 4096 + 4096) as usize].copy_from_slice(&data);
        if i % 64 == 0 {
            d.check_invariants().unwrap();
        }
    }
    d.check_invariants().unwrap();
    let s = d.stats();
    assert!(s.gc_page_moves > 0 && s.block_erases > 100, "{s:?}");
    assert!(s.write_amplification() > 1.0);
    let mut all = vec![0u8; 1 << 20];
    d.read(0, &mut all).unwrap();
    assert!(all == reference);
}

#[test]
fn trim_reads_back_zeros() {
    let mut d = presets::open("nvme").unwrap();
    d.write(0, &[5; 8192]).unwrap();
    d.trim(0, 4096).unwrap();
    let mut buf = vec![1; 8192];
    d.read(0, &mut buf).unwrap();
    assert!(buf[..4096].iter().all(|&b| b == 0) && buf[4096..].iter().all(|&b| b == 5));
}

#[test]
fn bad_ftl_specs_are_one_line_errors() {
    let bad = |extra: &str| {
        DeviceSpec::from_toml(
            &format!(
                "capacity = \"1m\"\n[model]\nkind = \"ftl\"\npage_size = \"4k\"\npages_per_block = 4\n\
                 read_us = 10\nprogram_us = 100\nerase_us = 1000\nhost_mb_per_s = 100\n{extra}"
            ),
            "t",
        )
        .unwrap_err()
        .to_string()
    };
    assert!(bad("mapping = \"hybrid\"").contains("hybrid"));
    assert!(bad("mapping = \"page\"\nover_provisioning = 0").contains("over_provisioning"));
    assert!(bad("mapping = \"page\"\nover_provisioning = -0.5").contains("over_provisioning"));
    assert!(bad("mapping = \"block\"\npages_per_block = 0").contains("pages_per_block"));
    assert!(bad("mapping = \"page\"\nread_us = -1").contains("read_us"));
    assert!(!bad("mapping = \"page\"\nover_provisioning = 0").contains('\n'));
    assert!(bad("mapping = \"page\"\nover_provisioning = 1e300").contains("too many"));
    assert!(bad("mapping = \"block\"\nover_provisioning = 1e300").contains("too many"));
    assert!(bad("mapping = \"bast\"\nover_provisioning = 1e300").contains("too many"));
    assert!(bad("mapping = \"bast\"\nlog_blocks = 0").contains("log_blocks"));
    assert!(bad("mapping = \"fast\"\nlog_blocks = 1").contains("log_blocks"));
    assert!(bad("mapping = \"fast\"\ncapacity_x = 1").contains("capacity_x"));
    assert!(
        bad("mapping = \"page\"\nchannels = 100000\ndies_per_channel = 100000").contains("65536")
    );
    // The DRAM-side features are the page FTL's, and must make sense.
    let e = bad("mapping = \"bast\"\nwrite_cache = \"1m\"\nover_provisioning = 0.5");
    assert!(e.contains("apply to mapping = \"page\""), "{e}");
    assert!(bad("mapping = \"page\"\nplanes_per_die = 0").contains("planes_per_die"));
    assert!(bad("mapping = \"page\"\nplanes_per_die = 65").contains("planes_per_die"));
    assert!(bad("mapping = \"page\"\nwrite_cache = 512").contains("write_cache"));
    assert!(bad("mapping = \"page\"\nmapping_cache = 100").contains("mapping_cache"));
    assert!(bad("mapping = \"page\"\ncache_mb_per_s = 0").contains("cache_mb_per_s"));
    let e = bad("mapping = \"page\"\nwrite_cache_policy = \"sometimes\"");
    assert!(
        e.contains("write-back") && e.contains("write-through"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn ftl_devices_round_trip_data_against_a_reference(
        mapping in 0usize..4,
        ops in proptest::collection::vec((0u64..2048, 1u64..24, any::<u8>(), prop::bool::weighted(0.1)), 1..200)
    ) {
        let mut d = match mapping {
            0 => ftl("block", "dies_per_channel = 2"),
            1 => ftl("page", "channels = 2"),
            2 => ftl("bast", "dies_per_channel = 2\nlog_blocks = 3"),
            _ => ftl("fast", "channels = 2\nlog_blocks = 3"),
        };
        let mut reference = vec![0u8; 1 << 20];
        for (i, (sector, n, byte, trim)) in ops.into_iter().enumerate() {
            let n = n.min(2048 - sector);
            let (off, len) = (sector * 512, (n * 512) as usize);
            if trim {
                d.trim(off, len as u64).unwrap();
                reference[off as usize..off as usize + len].fill(0);
            } else {
                let data: Vec<u8> = (0..len).map(|i| byte.wrapping_add(i as u8) | 1).collect();
                d.write(off, &data).unwrap();
                reference[off as usize..off as usize + len].copy_from_slice(&data);
            }
            // Release builds check the maps here only (debug builds after GC too).
            if i % 16 == 15 {
                prop_assert_eq!(d.check_invariants().map_err(|e| e.to_string()), Ok(()));
            }
        }
        prop_assert_eq!(d.check_invariants().map_err(|e| e.to_string()), Ok(()));
        let mut all = vec![0u8; 1 << 20];
        d.read(0, &mut all).unwrap();
        prop_assert!(all == reference);
    }
}
