//! A FileDevice (buffered and O_DIRECT) returns what was written, against a
//! flat reference, across writes, trims, flushes and a reopen.

use flashkv_device::{BlockDevice, FileDevice, FileOptions};
use proptest::prelude::*;

const SPAN: u64 = 1 << 20;

#[derive(Debug, Clone)]
enum Op {
    Write { block: u64, blocks: u64, byte: u8 },
    Read { block: u64, blocks: u64 },
    Trim { block: u64, blocks: u64 },
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    // In 4096-byte units so the same ops fit O_DIRECT's sector.
    let range = (0..SPAN / 4096 - 40, 1u64..40);
    prop_oneof![
        4 => (range.clone(), any::<u8>()).prop_map(|((block, blocks), byte)| Op::Write { block, blocks, byte }),
        3 => range.clone().prop_map(|(block, blocks)| Op::Read { block, blocks }),
        1 => range.prop_map(|(block, blocks)| Op::Trim { block, blocks }),
        1 => Just(Op::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn file_device_round_trips(ops in proptest::collection::vec(op(), 1..40), direct in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev");
        let opts = FileOptions { capacity: SPAN, direct, ..FileOptions::default() };
        let mut dev = FileDevice::open(&path, &opts).unwrap();
        let mut flat = vec![0u8; SPAN as usize];
        for op in &ops {
            match *op {
                Op::Write { block, blocks, byte } => {
                    let data: Vec<u8> = (0..blocks * 4096).map(|i| byte.wrapping_add((i % 251) as u8)).collect();
                    dev.write(block * 4096, &data).unwrap();
                    flat[(block * 4096) as usize..][..data.len()].copy_from_slice(&data);
                }
                Op::Read { block, blocks } => {
                    let mut buf = vec![0u8; (blocks * 4096) as usize];
                    dev.read(block * 4096, &mut buf).unwrap();
                    prop_assert!(buf[..] == flat[(block * 4096) as usize..][..buf.len()]);
                }
                Op::Trim { block, blocks } => {
                    dev.trim(block * 4096, blocks * 4096).unwrap();
                    flat[(block * 4096) as usize..][..(blocks * 4096) as usize].fill(0);
                }
                Op::Flush => { dev.flush().unwrap(); }
            }
        }
        dev.flush().unwrap();
        drop(dev);
        let mut dev = FileDevice::open(&path, &FileOptions { create: false, ..opts }).unwrap();
        let mut all = vec![0u8; SPAN as usize];
        dev.read(0, &mut all).unwrap();
        prop_assert!(all == flat);
        prop_assert!(dev.clock() > 0);
    }
}
