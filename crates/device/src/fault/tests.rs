//! The fault device: crashes, tearing, corruption, determinism.

use super::*;
use crate::presets;

fn dev(plan: FaultPlan) -> FaultDevice<crate::SimDevice> {
    FaultDevice::new(presets::open("dram-ssd").unwrap(), plan)
}

#[test]
fn power_loss_during_write_n_plus_1_then_everything_fails() {
    let mut d = dev(FaultPlan::crash_after_writes(3, 1));
    let mut buf = [0u8; 512];
    for i in 0..3u64 {
        d.write(i * 512, &[1u8; 512]).unwrap();
        d.read(0, &mut buf).unwrap();
    }
    assert!(matches!(
        d.write(4096, &[2u8; 512]),
        Err(DeviceError::Crashed)
    ));
    assert!(d.crashed());
    assert!(matches!(d.read(0, &mut buf), Err(DeviceError::Crashed)));
    assert!(matches!(d.flush(), Err(DeviceError::Crashed)));
    assert_eq!(d.counts(), (7, 4));
}

#[test]
fn crash_after_ops_counts_every_call() {
    let mut d = dev(FaultPlan {
        crash_after_ops: Some(2),
        ..FaultPlan::default()
    });
    let mut buf = [0u8; 512];
    d.read(0, &mut buf).unwrap();
    d.flush().unwrap();
    assert!(matches!(d.read(0, &mut buf), Err(DeviceError::Crashed)));
}

#[test]
fn a_chosen_crash_keeps_exactly_the_writes_picked() {
    let mut d = dev(FaultPlan::default());
    d.write(0, &[1u8; 512]).unwrap();
    d.flush().unwrap();
    // Three unflushed writes: over sector 0, sector 1, and sector 0 again.
    d.write(0, &[2u8; 512]).unwrap();
    d.write(512, &[3u8; 512]).unwrap();
    d.write(0, &[4u8; 1024]).unwrap();
    assert_eq!(d.unflushed(), 3);
    d.crash_keeping(|i| i == 1).unwrap();
    assert!(d.crashed());
    let mut inner = d.recover().unwrap();
    let mut buf = [0u8; 1024];
    inner.read(0, &mut buf).unwrap();
    // Sector 0 back to its flushed value, sector 1 holds write 1 alone.
    assert!(buf[..512].iter().all(|&b| b == 1), "{}", buf[0]);
    assert!(buf[512..].iter().all(|&b| b == 3), "{}", buf[512]);
}

#[test]
fn flushed_data_survives_and_unflushed_sectors_are_old_or_new() {
    let (mut kept, mut lost, mut torn) = (0, 0, 0);
    for seed in 0..200 {
        let mut d = dev(FaultPlan {
            seed,
            tear: true,
            ..FaultPlan::default()
        });
        d.write(0, &[1u8; 4096]).unwrap();
        d.flush().unwrap();
        d.write(0, &[2u8; 4096]).unwrap();
        assert_eq!(d.unflushed(), 1);
        let mut inner = d.recover().unwrap();
        let mut buf = [0u8; 4096];
        inner.read(0, &mut buf).unwrap();
        let new = buf
            .chunks(512)
            .filter(|s| s.iter().all(|&b| b == 2))
            .count();
        let old = buf
            .chunks(512)
            .filter(|s| s.iter().all(|&b| b == 1))
            .count();
        assert_eq!(new + old, 8, "every sector is old or new");
        match new {
            8 => kept += 1,
            0 => lost += 1,
            _ => torn += 1,
        }
    }
    assert!(kept > 20 && lost > 20 && torn > 20, "{kept} {lost} {torn}");
}

#[test]
fn overlapping_unflushed_writes_end_as_one_of_their_values() {
    for seed in 0..100 {
        let mut d = dev(FaultPlan {
            seed,
            tear: true,
            ..FaultPlan::default()
        });
        d.write(0, &[1u8; 1024]).unwrap();
        d.flush().unwrap();
        d.write(0, &[2u8; 1024]).unwrap();
        d.write(512, &[3u8; 1024]).unwrap();
        d.trim(0, 512).unwrap();
        let mut inner = d.recover().unwrap();
        let mut buf = [9u8; 1536];
        inner.read(0, &mut buf).unwrap();
        let s: Vec<u8> = buf.chunks(512).map(|c| c[0]).collect();
        assert!(buf.chunks(512).all(|c| c.iter().all(|&b| b == c[0])));
        assert!([1, 2, 0].contains(&s[0]), "{s:?}");
        assert!([1, 2, 3].contains(&s[1]), "{s:?}");
        assert!([0, 3].contains(&s[2]), "{s:?}");
    }
}

#[test]
fn the_same_seed_gives_the_same_outcome() {
    let run = |seed| {
        let mut d = dev(FaultPlan::crash_after_writes(20, seed));
        for i in 0..21u64 {
            let _ = d.write(i % 7 * 1024, &[i as u8 + 1; 2048]);
        }
        let mut inner = d.recover().unwrap();
        let mut buf = vec![0u8; 8192];
        inner.read(0, &mut buf).unwrap();
        buf
    };
    assert_eq!(run(5), run(5));
    assert!((0..10).any(|s| run(s) != run(5)));
}

#[test]
fn injected_errors_fail_the_call_without_effect_or_crash() {
    let mut d = dev(FaultPlan {
        fail_ops: vec![1],
        fail_writes: vec![2],
        ..FaultPlan::default()
    });
    let mut buf = [0u8; 512];
    d.write(0, &[1u8; 512]).unwrap(); // op 0, write 0
    assert!(matches!(
        d.read(0, &mut buf),
        Err(DeviceError::Injected { offset: 0 })
    ));
    d.write(512, &[1u8; 512]).unwrap(); // write 1
    assert!(matches!(
        d.write(1024, &[1u8; 512]),
        Err(DeviceError::Injected { offset: 1024 })
    ));
    assert!(!d.crashed());
    d.read(1024, &mut buf).unwrap();
    assert_eq!(buf, [0u8; 512]);
    let e = DeviceError::Injected { offset: 1024 }.to_string();
    assert!(e.contains("injected I/O error"));
}

#[test]
fn into_inner_keeps_every_write() {
    let mut d = dev(FaultPlan::default());
    d.write(0, &[5u8; 512]).unwrap();
    let mut inner = d.into_inner();
    let mut buf = [0u8; 512];
    inner.read(0, &mut buf).unwrap();
    assert_eq!(buf, [5u8; 512]);
}

fn mem_nand() -> crate::MemDevice {
    crate::MemDevice::new(Geometry {
        sector_size: 512,
        erase_unit: Some(4096),
        capacity: 1 << 16,
        program_once: true,
    })
}

#[test]
fn flipped_reads_differ_in_one_bit_and_the_medium_keeps_the_truth() {
    let mut d = dev(FaultPlan {
        flip_reads: Strike::at(vec![1]),
        ..FaultPlan::default()
    });
    d.write(0, &[7u8; 1024]).unwrap();
    let mut buf = [0u8; 1024];
    d.read(0, &mut buf).unwrap();
    assert_eq!(&buf[..512], &[7u8; 512]);
    let bits: u32 = buf[512..].iter().map(|b| (b ^ 7).count_ones()).sum();
    assert_eq!(bits, 1);
    assert_eq!(d.injected().flipped_reads, 1);
    let mut inner = d.into_inner();
    inner.read(0, &mut buf).unwrap();
    assert_eq!(buf, [7u8; 1024]);
}

#[test]
fn a_latent_sector_fails_its_reads_until_rewritten() {
    let mut d = dev(FaultPlan {
        latent: Strike::at(vec![3]),
        ..FaultPlan::default()
    });
    let mut buf = [0u8; 2048];
    assert!(matches!(
        d.read(1024, &mut buf),
        Err(DeviceError::Unreadable { offset: 1536 })
    ));
    d.read(0, &mut buf[..1024]).unwrap();
    d.write(1536, &[1u8; 512]).unwrap();
    d.read(1024, &mut buf).unwrap();
    assert_eq!(d.injected().latent_errors, 1);
    // A random latent error, once found, stays until the sector is rewritten.
    let mut d = dev(FaultPlan {
        latent: Strike::chance(1.0),
        ..FaultPlan::default()
    });
    assert!(d.read(0, &mut buf[..512]).is_err());
    assert!(d.read(0, &mut buf[..512]).is_err());
}

#[test]
fn a_misdirected_write_lands_elsewhere_and_leaves_its_target() {
    for seed in 0..50 {
        let mut d = dev(FaultPlan {
            seed,
            misdirect: Strike::at(vec![1]),
            ..FaultPlan::default()
        });
        d.write(8192, &[1u8; 1024]).unwrap();
        d.write(8192, &[2u8; 1024]).unwrap();
        let mut buf = vec![0u8; 32768];
        d.read(0, &mut buf).unwrap();
        assert!(
            buf[8192..9216] == [1u8; 1024],
            "seed {seed}: target changed"
        );
        let twos = buf.chunks(512).filter(|s| s == &[2u8; 512]).count();
        assert_eq!(twos, 2, "seed {seed}: the write landed nowhere whole");
        assert_eq!(d.injected().misdirected_writes, 1);
    }
}

#[test]
fn latency_spikes_add_virtual_time() {
    let run = |spikes: Strike| {
        let mut d = dev(FaultPlan {
            spikes,
            spike_ns: 5_000_000,
            ..FaultPlan::default()
        });
        for i in 0..4u64 {
            d.write(i * 512, &[1u8; 512]).unwrap();
        }
        (d.clock(), d.injected().spikes)
    };
    let (base, none) = run(Strike::default());
    let (late, two) = run(Strike::at(vec![1, 2]));
    assert_eq!((none, two), (0, 2));
    assert!(late >= base + 10_000_000, "{late} vs {base}");
}

#[test]
fn lost_programs_stay_programmed_and_read_as_erased_until_erased() {
    let mut lost = 0;
    for seed in 0..40 {
        let mut d = FaultDevice::new(
            mem_nand(),
            FaultPlan {
                seed,
                lose_programs: true,
                ..FaultPlan::default()
            },
        );
        d.write(0, &[1u8; 512]).unwrap();
        d.flush().unwrap();
        d.write(512, &[2u8; 512]).unwrap();
        let mut d = d.restart(FaultPlan::default()).unwrap();
        let mut buf = [9u8; 1024];
        d.read(0, &mut buf).unwrap();
        assert_eq!(
            &buf[..512],
            &[1u8; 512],
            "seed {seed}: flushed program lost"
        );
        assert!(d.is_programmed(512, 512));
        if buf[512..] == [0u8; 512] {
            lost += 1;
            assert!(d.write(512, &[3u8; 512]).is_err(), "programmed twice");
            d.erase(0).unwrap();
            d.write(512, &[3u8; 512]).unwrap();
        } else {
            assert_eq!(&buf[512..], &[2u8; 512]);
        }
    }
    assert!((5..35).contains(&lost), "{lost} of 40 lost");
}

#[test]
fn the_write_in_flight_can_tear_inside_a_sector() {
    let mut cut = 0;
    for seed in 0..60 {
        let mut d = dev(FaultPlan {
            tear_bytes: true,
            ..FaultPlan::crash_after_writes(1, seed)
        });
        d.write(0, &[1u8; 512]).unwrap();
        d.flush().unwrap();
        assert!(d.write(0, &[2u8; 512]).is_err());
        let mut inner = d.recover().unwrap();
        let mut buf = [0u8; 512];
        inner.read(0, &mut buf).unwrap();
        let new = buf.iter().take_while(|&&b| b == 2).count();
        assert!(
            buf[new..].iter().all(|&b| b == 1),
            "seed {seed}: not a prefix"
        );
        cut += usize::from(new > 0 && new < 512);
    }
    assert!(cut > 10, "only {cut} torn inside a sector");
}

#[test]
fn a_program_in_flight_tears_on_raw_nand_without_a_cache() {
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..60 {
        let mut d = FaultDevice::new(
            mem_nand(),
            FaultPlan {
                tear_bytes: true,
                ..FaultPlan::crash_after_writes(1, seed)
            },
        );
        d.write(0, &[1u8; 512]).unwrap();
        assert!(d.write(512, &[2u8; 1024]).is_err());
        let mut inner = d.recover().unwrap();
        let mut buf = [0u8; 1536];
        inner.read(0, &mut buf).unwrap();
        assert_eq!(
            &buf[..512],
            &[1u8; 512],
            "seed {seed}: completed program lost"
        );
        for s in buf[512..].chunks(512) {
            let new = s.iter().take_while(|&&b| b == 2).count();
            assert!(s[new..].iter().all(|&b| b == 0), "seed {seed}");
            outcomes.insert(match new {
                0 => 0,
                512 => 2,
                _ => 1,
            });
        }
    }
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
}
