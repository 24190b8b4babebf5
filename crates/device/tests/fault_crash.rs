//! Randomized crashes against a reference: after power loss every sector
//! holds its value at the last flush or the value of one of the writes made
//! to it since, and sectors untouched since the last flush are intact.

use flashkv_device::{presets, BlockDevice, FaultDevice, FaultPlan, FileDevice, FileOptions};
use proptest::prelude::*;

const SECTORS: u64 = 64;

#[derive(Debug, Clone)]
enum Op {
    /// Sectors `[first, first + n)`, each filled with a tag unique to this write.
    Write {
        first: u64,
        n: u64,
    },
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..SECTORS - 8, 1u64..8).prop_map(|(first, n)| Op::Write { first, n }),
        1 => Just(Op::Flush),
    ]
}

fn check<D: BlockDevice>(
    inner: D,
    ops: Vec<Op>,
    crash_after: u64,
    seed: u64,
) -> Result<(), TestCaseError> {
    let mut dev = FaultDevice::new(inner, FaultPlan::crash_after_writes(crash_after, seed));
    // Per sector: the value at the last flush and the values written since.
    let mut durable = vec![0u32; SECTORS as usize];
    let mut since: Vec<Vec<u32>> = vec![Vec::new(); SECTORS as usize];
    let mut tag = 0u32;
    for op in ops {
        match op {
            Op::Write { first, n } => {
                tag += 1;
                let data: Vec<u8> = (0..n)
                    .flat_map(|k| sector_bytes(tag * 16 + k as u32))
                    .collect();
                let r = dev.write(first * 512, &data);
                for k in 0..n {
                    since[(first + k) as usize].push(tag * 16 + k as u32);
                }
                if r.is_err() {
                    break;
                }
            }
            Op::Flush => {
                dev.flush().unwrap();
                for (d, s) in durable.iter_mut().zip(since.iter_mut()) {
                    if let Some(&last) = s.last() {
                        *d = last;
                    }
                    s.clear();
                }
            }
        }
    }
    let mut inner = dev.recover().unwrap();
    let mut buf = vec![0u8; (SECTORS * 512) as usize];
    inner.read(0, &mut buf).unwrap();
    for (i, sector) in buf.chunks(512).enumerate() {
        let got = u32::from_le_bytes(sector[..4].try_into().unwrap());
        prop_assert!(
            sector == &sector_bytes(got)[..],
            "sector {} is not a whole written sector",
            i
        );
        prop_assert!(
            got == durable[i] || since[i].contains(&got),
            "sector {}: {} is neither the flushed {} nor one of {:?}",
            i,
            got,
            durable[i],
            since[i]
        );
    }
    Ok(())
}

/// A sector holding `tag` (0 = never written: zeros).
fn sector_bytes(tag: u32) -> Vec<u8> {
    if tag == 0 {
        return vec![0u8; 512];
    }
    (0..128).flat_map(|_| tag.to_le_bytes()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn crashes_on_a_simulated_ssd_lose_nothing_flushed(
        ops in proptest::collection::vec(op(), 1..50), crash_after in 0u64..50, seed in any::<u64>()
    ) {
        check(presets::open("dram-ssd").unwrap(), ops, crash_after, seed)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn crashes_on_a_real_file_lose_nothing_flushed(
        ops in proptest::collection::vec(op(), 1..30), crash_after in 0u64..30, seed in any::<u64>()
    ) {
        let dir = tempfile::tempdir().unwrap();
        let opts = FileOptions { capacity: SECTORS * 512, direct: false, ..FileOptions::default() };
        check(FileDevice::open(dir.path().join("dev"), &opts).unwrap(), ops, crash_after, seed)?;
    }
}
