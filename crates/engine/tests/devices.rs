//! Both page stores on every kind of simulated device: raw NAND (program
//! once, explicit erase), FTL SSDs, HDDs and a DRAM SSD.

use flashkv_engine::{Db, IplGeometry, Options, StoreKind};

fn kinds() -> [StoreKind; 3] {
    [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
        StoreKind::InPageLogging(IplGeometry::shared()),
    ]
}

fn exercise(preset: &str, kind: StoreKind, frames: usize) {
    let opts = Options::default()
        .store(kind)
        .buffer_pages(frames)
        .max_size(64 << 20)
        .wal_size(4 << 20);
    let dev = flashkv_device::presets::open(preset).unwrap();
    let db = Db::open(Box::new(dev), opts.clone()).unwrap();
    for i in 0..1500u32 {
        db.put(&(i % 700).to_be_bytes(), format!("v{i}").as_bytes())
            .unwrap();
        if i % 5 == 0 {
            db.delete(&((i * 7) % 700).to_be_bytes()).unwrap();
        }
    }
    let want = db.scan(..).unwrap();
    db.flush().unwrap();
    let db = Db::open(db.into_device(), Options::default()).unwrap();
    assert_eq!(db.store_kind(), kind);
    assert_eq!(db.scan(..).unwrap(), want, "{preset} {kind:?} {frames}");
    let s = db.stats();
    assert_eq!(s.store_kind, kind.name());
}

#[test]
fn every_device_kind() {
    for preset in ["nand-ipl", "nvme", "hdd-7200", "dram-ssd"] {
        for kind in kinds() {
            for frames in [1, 16] {
                exercise(preset, kind, frames);
            }
        }
    }
}

/// On raw NAND the in-place store erases on (nearly) every page update with
/// a one-page buffer, in-page logging far less often (seed 001 hypothesis 3).
#[test]
fn ipl_erases_less_than_in_place_on_raw_nand() {
    let mut erases = Vec::new();
    for kind in [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
    ] {
        let opts = Options::default()
            .store(kind)
            .buffer_pages(1)
            .wal(false)
            .max_size(64 << 20);
        let db = Db::open(
            Box::new(flashkv_device::presets::open("nand-ipl").unwrap()),
            opts,
        )
        .unwrap();
        for i in 0..400u32 {
            db.put(&(i % 200).to_be_bytes(), &[i as u8; 40]).unwrap();
        }
        for i in 0..2000u32 {
            let k = (i.wrapping_mul(2654435761) % 200).to_be_bytes();
            db.update(&k, &[i as u8; 40]).unwrap();
        }
        db.flush().unwrap();
        let s = db.stats();
        assert_eq!(s.wal_io.writes, 0);
        erases.push(s.data_io.erases);
    }
    assert!(
        erases[1] * 2 < erases[0],
        "erases in-place {} vs ipl {}",
        erases[0],
        erases[1]
    );
}
