//! Data written to simulated disks reads back, whatever the caches do, and
//! the same operations always take the same virtual time.

use flashkv_device::{presets, BlockDevice, SimDevice};
use proptest::prelude::*;

const SPAN: u64 = 8 << 20;

#[derive(Debug, Clone)]
enum Op {
    Write { sector: u64, sectors: u64, byte: u8 },
    Read { sector: u64, sectors: u64 },
    Flush,
    Trim { sector: u64, sectors: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    let range = (0..SPAN / 512 - 300, 1u64..300);
    prop_oneof![
        4 => (range.clone(), any::<u8>()).prop_map(|((sector, sectors), byte)| Op::Write { sector, sectors, byte }),
        4 => range.clone().prop_map(|(sector, sectors)| Op::Read { sector, sectors }),
        1 => Just(Op::Flush),
        1 => range.prop_map(|(sector, sectors)| Op::Trim { sector, sectors }),
    ]
}

/// Applies `ops` to `dev` and a flat reference; returns every completion time.
fn apply(dev: &mut SimDevice, ops: &[Op]) -> Result<Vec<(u64, u64)>, TestCaseError> {
    let mut flat = vec![0u8; SPAN as usize];
    let mut times = Vec::new();
    for op in ops {
        let c = match *op {
            Op::Write {
                sector,
                sectors,
                byte,
            } => {
                let data: Vec<u8> = (0..sectors * 512).map(|i| byte ^ (i as u8)).collect();
                let at = (sector * 512) as usize;
                flat[at..at + data.len()].copy_from_slice(&data);
                dev.write(sector * 512, &data).unwrap()
            }
            Op::Read { sector, sectors } => {
                let mut buf = vec![0u8; (sectors * 512) as usize];
                let c = dev.read(sector * 512, &mut buf).unwrap();
                let at = (sector * 512) as usize;
                prop_assert_eq!(&buf[..], &flat[at..at + buf.len()]);
                c
            }
            Op::Flush => dev.flush().unwrap(),
            Op::Trim { sector, sectors } => {
                let at = (sector * 512) as usize;
                flat[at..at + (sectors * 512) as usize].fill(0);
                dev.trim(sector * 512, sectors * 512).unwrap()
            }
        };
        prop_assert!(c.start <= c.end);
        times.push((c.start, c.end));
    }
    let mut all = vec![0u8; SPAN as usize];
    dev.read(0, &mut all).unwrap();
    prop_assert!(all == flat);
    Ok(times)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn hdd_presets_round_trip_data_deterministically(ops in proptest::collection::vec(op(), 1..60)) {
        for name in ["hdd-15k", "hdd-7200"] {
            let mut a = presets::open(name).unwrap();
            let mut b = presets::open(name).unwrap();
            let ta = apply(&mut a, &ops)?;
            let tb = apply(&mut b, &ops)?;
            prop_assert_eq!(ta, tb);
            prop_assert_eq!(a.stats(), b.stats());
        }
    }
}

#[test]
fn misaligned_and_out_of_range_io_is_refused() {
    let mut d = presets::open("hdd-15k").unwrap();
    let cap = d.geometry().capacity;
    let mut buf = [0u8; 512];
    assert!(d.read(100, &mut buf).is_err());
    assert!(d.write(cap, &buf).is_err());
    assert!(d.read(cap - 512, &mut buf).is_ok());
}

/// A write of zeros (`write_zeros_at`, as the profiler's preconditioning
/// issues) is the write of a zero buffer: the same completion, counters
/// and data, on an empty device and over data, on a disk and an SSD.
#[test]
fn a_write_of_zeros_is_a_write_of_a_zero_buffer() {
    for preset in ["hdd-7200", "nvme"] {
        let mut a = flashkv_device::presets::open(preset).unwrap();
        let mut b = flashkv_device::presets::open(preset).unwrap();
        for (off, len) in [(0u64, 1u64 << 20), (8192, 4096), (1 << 20, 3 << 20)] {
            let data = vec![0xA5; len as usize];
            for d in [&mut a, &mut b] {
                d.write(off + 4096, &data).unwrap();
            }
            let ca = a.write_at(a.clock(), off, &vec![0; len as usize]).unwrap();
            let cb = b.write_zeros_at(b.clock(), off, len).unwrap();
            assert_eq!(
                (ca.start, ca.end, ca.energy_nj),
                (cb.start, cb.end, cb.energy_nj),
                "{preset}"
            );
            let (mut ra, mut rb) = (vec![1; len as usize + 8192], vec![2; len as usize + 8192]);
            a.read(off, &mut ra).unwrap();
            b.read(off, &mut rb).unwrap();
            assert!(
                ra == rb && ra[..len as usize].iter().all(|&x| x == 0),
                "{preset}: data"
            );
        }
        assert_eq!(a.stats(), b.stats(), "{preset}: every counter");
    }
}
