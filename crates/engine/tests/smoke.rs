use flashkv_engine::{Db, IplGeometry, Options, StoreKind};

fn dev() -> Box<dyn flashkv_device::BlockDevice> {
    Box::new(flashkv_device::presets::open("dram-ssd").unwrap())
}

fn opts(kind: StoreKind, frames: usize) -> Options {
    Options::default()
        .store(kind)
        .buffer_pages(frames)
        .max_size(64 << 20)
        .wal_size(4 << 20)
}

#[test]
fn smoke_both_stores() {
    for kind in [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
        StoreKind::InPageLogging(IplGeometry::shared()),
    ] {
        for frames in [1, 4, 64] {
            let db = Db::open(dev(), opts(kind, frames)).unwrap();
            for i in 0..3000u32 {
                db.put(&i.to_be_bytes(), format!("value-{i}").as_bytes())
                    .unwrap();
            }
            for i in (0..3000u32).step_by(3) {
                assert!(db.delete(&i.to_be_bytes()).unwrap());
            }
            let d = db.into_device();
            let db = Db::open(d, opts(kind, frames)).unwrap();
            for i in 0..3000u32 {
                let v = db.get(&i.to_be_bytes()).unwrap();
                if i % 3 == 0 {
                    assert_eq!(v, None, "{kind:?} {frames} {i}");
                } else {
                    assert_eq!(
                        v,
                        Some(format!("value-{i}").into_bytes()),
                        "{kind:?} {frames} {i}"
                    );
                }
            }
            assert_eq!(db.scan(..).unwrap().len(), 2000);
            let big = vec![7u8; 1 << 20];
            db.put(b"big", &big).unwrap();
            db.flush().unwrap();
            let s = db.stats();
            assert_eq!(db.get(b"big").unwrap().unwrap(), big);
            eprintln!("{kind:?} {frames}: {s:?}");
        }
    }
}
