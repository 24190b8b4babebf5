//! The hybrid's own errors reach a `BlockDevice` caller typed: a damaged
//! mapping tablet is `DeviceError::Stacked` holding `HybridError::Corrupt`
//! with where it lies, never wrong data.

mod common;

use flashkv_device::{BlockDevice, DeviceError};
use flashkv_hybrid::{HybridDevice, HybridError, Options};
use flashkv_testing::Shared;

const SECTOR: u64 = 4096;
const SECTORS: u64 = 2048; // 8 MiB HDD

#[test]
fn a_damaged_mapping_tablet_is_a_typed_corruption_error() {
    let ssd = Shared::new(common::timed("4 MiB", 20.0, 500.0));
    let hdd = common::timed("8 MiB", 20.0, 500.0);
    let opts = Options {
        // Eight resident tablets: scattered writes swap tablets out.
        memory_limit: 8 * 4096,
        size_threshold: 1 << 20,
        seq_threshold: 1 << 30,
        ..Options::default()
    };
    let mut dev = HybridDevice::create(Box::new(ssd.clone()), Box::new(hdd), opts).unwrap();
    let now = dev.clock();
    for s in (0..SECTORS).step_by(7) {
        dev.write_at(now, s * SECTOR, &[s as u8 | 1; 4096]).unwrap();
    }
    let stores = dev.hybrid_stats().tablet_stores;
    assert!(stores > 0, "tablets were swapped out");
    // Every swapped-out tablet image is overwritten.
    let l = dev.layout();
    let region = vec![0xA5u8; (l.cache_start - l.map_start) as usize];
    ssd.with(|d| d.write(l.map_start, &region)).unwrap();

    let mut buf = [0u8; 4096];
    let mut damage = None;
    for s in (0..SECTORS).step_by(7) {
        match dev.read_at(dev.clock(), s * SECTOR, &mut buf) {
            Ok(_) => assert_eq!(buf, [s as u8 | 1; 4096], "sector {s}: wrong data"),
            Err(e) => {
                damage = Some(e);
                break;
            }
        }
    }
    let e = damage.expect("a read needed a damaged tablet");
    assert!(matches!(e, DeviceError::Stacked(_)), "{e:?}");
    match e.stacked::<HybridError>() {
        Some(HybridError::Corrupt { what, location }) => {
            assert_eq!(*what, "mapping tablet");
            assert!(
                (l.map_start..l.cache_start).contains(location),
                "{location}"
            );
            assert_eq!((location - l.map_start) % 4096, 0, "a tablet slot's start");
        }
        other => panic!("expected a corrupt tablet, got {other:?}"),
    }
    let message = e.to_string();
    assert!(
        message.starts_with("corrupt mapping tablet at SSD offset "),
        "{message}"
    );
    assert!(!message.contains('\n'));
}
