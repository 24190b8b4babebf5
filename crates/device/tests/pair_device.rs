//! A fast and a slow device as one address space.

use flashkv_device::{
    presets, BlockDevice, DeviceSpec, FaultDevice, FaultPlan, Geometry, MemDevice, PairDevice,
    SimDevice, Tier, Tiers,
};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;

fn mem(capacity: u64, sector: u32) -> Box<dyn BlockDevice> {
    Box::new(MemDevice::new(Geometry {
        sector_size: sector,
        erase_unit: None,
        capacity,
        program_once: false,
    }))
}

/// A preset at its own capacity (the data is kept sparse).
fn sim(name: &str) -> Box<dyn BlockDevice> {
    let spec: DeviceSpec = presets::get(name).unwrap();
    Box::new(SimDevice::new(&spec).unwrap())
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn tiers_place_the_first_device_at_zero() {
    let p = PairDevice::new(mem(4 * MIB, 512), mem(16 * MIB, 512), Tier::Fast).unwrap();
    let want = Tiers {
        fast: 0..4 * MIB,
        slow: 4 * MIB..20 * MIB,
    };
    assert_eq!(p.tiers(), Some(want.clone()));
    assert_eq!(p.geometry().capacity, 20 * MIB);
    assert_eq!(p.geometry().erase_unit, None);
    assert!(!p.geometry().program_once);
    let q = PairDevice::new(mem(4 * MIB, 512), mem(16 * MIB, 512), Tier::Slow).unwrap();
    assert_eq!(
        q.tiers(),
        Some(Tiers {
            fast: 16 * MIB..20 * MIB,
            slow: 0..16 * MIB,
        })
    );
    // A wrapper says so too; a single device has no tiers.
    let f = FaultDevice::new(p, FaultPlan::default());
    assert_eq!(f.tiers(), Some(want));
    assert_eq!(mem(MIB, 512).tiers(), None);
    let boxed: Box<dyn BlockDevice> = Box::new(q);
    assert_eq!(boxed.tiers().unwrap().slow, 0..16 * MIB);
}

#[test]
fn a_request_across_the_boundary_is_split_and_reads_back() {
    for first in [Tier::Fast, Tier::Slow] {
        let mut p = PairDevice::new(sim("ssd-320"), sim("hdd-7200"), first).unwrap();
        let split = p.part(first).geometry().capacity;
        let data = pattern(64 * 1024, 7);
        let at = split - 16 * 1024; // 16 KiB before, 48 KiB after
        let c = p.write_at(0, at, &data).unwrap();
        let (a, b) = (p.part(first).stats(), p.part(other(first)).stats());
        assert_eq!((a.host_writes, a.host_write_bytes), (1, 16 * 1024));
        assert_eq!((b.host_writes, b.host_write_bytes), (1, 48 * 1024));
        // Issued together: done when the later one is, costing both.
        let ends = [p.part(first).clock(), p.part(other(first)).clock()];
        assert_eq!(c.end, ends[0].max(ends[1]));
        assert_eq!(c.energy_nj, a.energy_nj + b.energy_nj);
        let mut back = vec![0u8; data.len()];
        p.read_at(c.end, at, &mut back).unwrap();
        assert_eq!(back, data, "first {first:?}");
        // Each part holds its piece at its own offset.
        let mut piece = vec![0u8; 48 * 1024];
        p.part_mut(other(first)).read(0, &mut piece).unwrap();
        assert_eq!(piece, data[16 * 1024..]);
        let st = p.stats();
        assert_eq!(st.host_reads, 3);
        assert_eq!(st.host_writes, 2);
        let clocks = [p.part(first).clock(), p.part(other(first)).clock()];
        assert_eq!(p.clock(), clocks[0].max(clocks[1]));
    }
}

fn other(t: Tier) -> Tier {
    match t {
        Tier::Fast => Tier::Slow,
        Tier::Slow => Tier::Fast,
    }
}

#[test]
fn offsets_land_on_their_device() {
    let mut p = PairDevice::new(mem(MIB, 512), mem(2 * MIB, 512), Tier::Slow).unwrap();
    p.write(0, &[1u8; 512]).unwrap(); // slow, its offset 0
    p.write(2 * MIB, &[2u8; 1024]).unwrap(); // fast, its offset 0
    p.trim(2 * MIB + 512, 512).unwrap();
    let (f, s) = (p.part(Tier::Fast).stats(), p.part(Tier::Slow).stats());
    assert_eq!(
        (f.host_writes, f.trims, s.host_writes, s.trims),
        (1, 1, 1, 0)
    );
    let (fast, slow) = p.into_parts();
    let (mut fast, mut slow) = (fast, slow);
    let mut b = [0u8; 1024];
    fast.read(0, &mut b).unwrap();
    assert_eq!(
        (b[0], b[511], b[512], b[1023]),
        (2, 2, 0, 0),
        "the trim zeroed"
    );
    slow.read(0, &mut b[..512]).unwrap();
    assert_eq!(b[0], 1);
}

#[test]
fn a_flush_touches_only_written_devices() {
    let mut p = PairDevice::new(sim("ssd-320"), sim("hdd-7200"), Tier::Fast).unwrap();
    let split = p.part(Tier::Fast).geometry().capacity;
    let c = p.flush_at(5).unwrap();
    assert_eq!((c.start, c.end, c.energy_nj), (5, 5, 0), "nothing written");
    let flushes = |p: &PairDevice| {
        (
            p.part(Tier::Fast).stats().flushes,
            p.part(Tier::Slow).stats().flushes,
        )
    };
    assert_eq!(flushes(&p), (0, 0));
    p.write(0, &[3u8; 4096]).unwrap(); // the SSD only
    p.flush().unwrap();
    assert_eq!(flushes(&p), (1, 0), "the disk is left alone");
    p.flush().unwrap();
    assert_eq!(flushes(&p), (1, 0), "flushed already");
    p.write(split - 512, &[4u8; 1024]).unwrap(); // both
    p.flush().unwrap();
    assert_eq!(flushes(&p), (2, 1));
    p.trim(split, 4096).unwrap(); // the disk only
    p.flush().unwrap();
    assert_eq!(flushes(&p), (2, 2));
}

/// An SSD-only commit does not wake a disk in standby.
#[test]
fn an_ssd_commit_leaves_a_sleeping_disk_asleep() {
    let mut p = PairDevice::new(sim("ssd-320"), sim("hdd-7200"), Tier::Fast).unwrap();
    let split = p.part(Tier::Fast).geometry().capacity;
    p.part_mut(Tier::Slow)
        .set_standby_after(Some(1_000_000_000))
        .unwrap();
    p.write(split, &[1u8; 4096]).unwrap();
    p.flush().unwrap();
    let t = 100_000_000_000;
    p.advance_to(t);
    assert_eq!(p.clock(), t);
    p.write_at(t, 0, &[2u8; 4096]).unwrap();
    p.flush_at(t).unwrap();
    assert_eq!(p.part(Tier::Slow).stats().wakeups, 0);
    assert_eq!(p.stats().wakeups, 0);
    // Energy is both devices': the disk's includes its standby since.
    let e = p.energy_nj_until(t);
    assert_eq!(
        e,
        p.part(Tier::Fast).energy_nj_until(t) + p.part(Tier::Slow).energy_nj_until(t)
    );
    // Mostly standby: under 2.1 W on average over the 100 s.
    assert!(p.part(Tier::Slow).energy_nj_until(t) < 210_000_000_000);
}

#[test]
fn mismatched_sectors_and_raw_nand_are_refused() {
    let e = PairDevice::new(mem(MIB, 512), mem(MIB, 4096), Tier::Fast)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "device pair: sector sizes differ (fast 512 B, slow 4096 B)"
    );
    let nand = sim("nand-ipl");
    let e = PairDevice::new(nand, mem(MIB, 512), Tier::Fast)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "device pair: the fast device is raw NAND (host-visible erase units); \
         pair devices that hide erasing (an FTL SSD, a disk)"
    );
}

#[test]
fn stats_add_up_and_erase_counts_concatenate() {
    let mut p = PairDevice::new(sim("ssd-320"), sim("ssd-x25m"), Tier::Fast).unwrap();
    for i in 0..64u64 {
        p.write(i * MIB, &pattern(4096, i as u8)).unwrap();
    }
    let (f, s) = (p.part(Tier::Fast).stats(), p.part(Tier::Slow).stats());
    let st = p.stats();
    assert_eq!(st.host_writes, f.host_writes + s.host_writes);
    assert_eq!(
        st.nand_page_programs,
        f.nand_page_programs + s.nand_page_programs
    );
    assert_eq!(st.energy_nj, f.energy_nj + s.energy_nj);
    assert_eq!(st.busy_ns, f.busy_ns + s.busy_ns);
    assert_eq!(
        st.erase_counts.units(),
        f.erase_counts.units() + s.erase_counts.units()
    );
    assert!(p.syncer().is_none(), "simulated devices offer none");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any sequence of writes reads back as from one flat device.
    #[test]
    fn a_pair_reads_back_as_one_device(
        writes in prop::collection::vec((0u64..60, 1u64..8, any::<u8>()), 1..20),
        slow_first in any::<bool>(),
    ) {
        let first = if slow_first { Tier::Slow } else { Tier::Fast };
        let mut p = PairDevice::new(mem(24 * 512, 512), mem(40 * 512, 512), first).unwrap();
        let mut flat = vec![0u8; 64 * 512];
        for (sector, n, seed) in writes {
            let n = n.min(64 - sector);
            let data = pattern((n * 512) as usize, seed);
            p.write(sector * 512, &data).unwrap();
            flat[(sector * 512) as usize..][..data.len()].copy_from_slice(&data);
        }
        let mut back = vec![0u8; flat.len()];
        p.read(0, &mut back).unwrap();
        prop_assert_eq!(back, flat);
    }
}
