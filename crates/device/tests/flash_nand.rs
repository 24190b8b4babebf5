//! Raw NAND: program-once, erase, exact seed costs, data round trips.

use flashkv_device::{presets, update_in_place, BlockDevice, DeviceError, DeviceSpec, SimDevice};
use proptest::prelude::*;

#[test]
fn nand_ipl_in_place_update_of_one_page_is_seed_001s_10_46_ms() {
    let mut d = presets::open("nand-ipl").unwrap();
    let g = d.geometry();
    assert_eq!(g.erase_unit, Some(128 * 1024));
    assert!(g.program_once);
    d.write(5 * 4096, &[1; 4096]).unwrap();
    let before = d.stats();
    let c = update_in_place(&mut d, 5 * 4096, &[2; 4096]).unwrap();
    // 32 reads x 80 us + 1 erase x 1.5 ms + 32 programs x 200 us.
    assert_eq!(c.end - c.start, 10_460_000);
    let s = d.stats();
    assert_eq!(s.nand_page_reads - before.nand_page_reads, 32);
    assert_eq!(s.nand_page_programs - before.nand_page_programs, 32);
    assert_eq!(s.block_erases - before.block_erases, 1);
    assert_eq!(s.erase_counts.get(0), 1);
    let mut buf = vec![0; 4096];
    d.read(5 * 4096, &mut buf).unwrap();
    assert_eq!(buf, vec![2; 4096]);
}

#[test]
fn in_place_update_on_an_unprogrammed_range_is_a_plain_write() {
    let mut d = presets::open("nand-ipl").unwrap();
    let c = update_in_place(&mut d, 0, &[3; 4096]).unwrap();
    assert_eq!(c.end - c.start, 200_000);
    assert_eq!(d.stats().block_erases, 0);
}

#[test]
fn in_place_update_across_two_units_rewrites_both() {
    let mut d = presets::open("nand-ipl").unwrap();
    let eu = 128 * 1024;
    d.write(eu - 4096, &[1; 8192]).unwrap();
    update_in_place(&mut d, eu - 4096, &[9; 8192]).unwrap();
    assert_eq!(d.stats().block_erases, 2);
    let mut buf = vec![0; 8192];
    d.read(eu - 4096, &mut buf).unwrap();
    assert_eq!(buf, vec![9; 8192]);
}

#[test]
fn nand_table21_costs_are_seed_000s_per_4_kb_figures_exactly() {
    let mut d = presets::open("nand-table21").unwrap();
    assert_eq!(d.geometry().erase_unit, Some(16 * 1024));
    let w = d.write(0, &[1; 4096]).unwrap();
    assert_eq!((w.end - w.start, w.energy_nj), (1_833_000, 59_600));
    let mut buf = [0; 4096];
    let r = d.read(0, &mut buf).unwrap();
    assert_eq!((r.end - r.start, r.energy_nj), (284_200, 9_400));
    // A 16 KB block holds four 4 KB pieces: per 4 KB, a quarter of an erase.
    let e = d.erase(0).unwrap();
    assert_eq!((e.end - e.start, e.energy_nj), (1_996_800, 66_000));
    assert_eq!(((e.end - e.start) / 4, e.energy_nj / 4), (499_200, 16_500));
    let s = d.stats();
    assert_eq!(
        (s.nand_page_programs, s.nand_page_reads, s.block_erases),
        (8, 8, 1)
    );
    assert_eq!(s.energy_nj, 59_600 + 9_400 + 66_000);
}

#[test]
fn a_second_program_is_refused_with_a_clear_error_and_changes_nothing() {
    let mut d = presets::open("nand-ipl").unwrap();
    d.write(8192, &[1; 512]).unwrap();
    let before = (d.stats(), d.clock());
    let e = d.write(4096, &[2; 8192]).unwrap_err();
    assert!(
        matches!(e, DeviceError::AlreadyProgrammed { offset: 8192 }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("already programmed") && msg.contains("erase"),
        "{msg}"
    );
    assert_eq!((d.stats(), d.clock()), before);
    let mut buf = vec![0; 512];
    d.read(8192, &mut buf).unwrap();
    assert_eq!(buf, vec![1; 512]);
    // The untouched sectors of the refused range are still programmable.
    d.write(4096, &[3; 4096]).unwrap();
}

#[test]
fn erase_allows_reprogramming_and_counts_wear() {
    let mut d = presets::open("nand-ipl").unwrap();
    let eu = 128 * 1024;
    d.write(eu, &[7; 4096]).unwrap();
    assert!(d.is_programmed(eu, 4096));
    d.erase(1).unwrap();
    assert!(!d.is_programmed(eu, eu));
    let mut buf = vec![1; 4096];
    d.read(eu, &mut buf).unwrap();
    assert_eq!(buf, vec![0; 4096]);
    d.write(eu, &[8; 4096]).unwrap();
    d.erase(1).unwrap();
    let s = d.stats();
    assert_eq!(s.erase_counts.units(), 2048);
    assert_eq!(s.erase_counts.touched(), 1);
    assert_eq!(
        (s.erase_counts.get(1), s.erase_counts.get(0), s.block_erases),
        (2, 0, 2)
    );
    let wear = s.wear().unwrap();
    assert_eq!((wear.min, wear.max), (0, 2));
}

#[test]
fn log_sectors_can_be_programmed_one_at_a_time_into_a_page() {
    let mut d = presets::open("nand-ipl").unwrap();
    for i in 0..8 {
        d.write(i * 512, &[i as u8 + 1; 512]).unwrap();
    }
    assert!(d.write(0, &[0; 512]).is_err());
    let mut buf = vec![0; 4096];
    d.read(0, &mut buf).unwrap();
    assert!(buf
        .chunks(512)
        .enumerate()
        .all(|(i, c)| c.iter().all(|&b| b == i as u8 + 1)));
}

fn small_nand() -> SimDevice {
    let spec = DeviceSpec::from_toml(
        "capacity = \"256k\"\n[model]\nkind = \"nand\"\npage_size = \"2k\"\npages_per_block = 8\n\
         read_us = 25\nprogram_us = 200\nerase_us = 1500\nbus_mb_per_s = 40\nchannels = 2\ndies_per_channel = 2",
        "small",
    )
    .unwrap();
    SimDevice::new(&spec).unwrap()
}

proptest! {
    #[test]
    fn raw_nand_round_trips_data_against_a_reference(
        ops in proptest::collection::vec((0u64..512, 1u64..40, any::<u8>(), any::<bool>()), 1..60)
    ) {
        let mut d = small_nand();
        let mut reference = vec![0u8; 256 * 1024];
        for (sector, n, byte, erase) in ops {
            if erase {
                let unit = sector / 32;
                d.erase(unit).unwrap();
                reference[(unit * 16384) as usize..((unit + 1) * 16384) as usize].fill(0);
                continue;
            }
            let n = n.min(512 - sector);
            let (off, len) = (sector * 512, (n * 512) as usize);
            let data: Vec<u8> = (0..len).map(|i| byte.wrapping_add(i as u8)).collect();
            if d.is_programmed(off, len as u64) {
                let refused = matches!(
                    d.write(off, &data),
                    Err(DeviceError::AlreadyProgrammed { .. })
                );
                prop_assert!(refused);
                update_in_place(&mut d, off, &data).unwrap();
            } else {
                d.write(off, &data).unwrap();
            }
            reference[off as usize..off as usize + len].copy_from_slice(&data);
        }
        let mut all = vec![0u8; 256 * 1024];
        d.read(0, &mut all).unwrap();
        prop_assert!(all == reference);
    }
}
