//! The two-device store of docs/engine.md: the index on a simulated SSD,
//! the leaves on a simulated disk. `cargo run --example two_device -p flashkv-engine`

use flashkv_device::{presets, PairDevice, Tier};
use flashkv_engine::{Db, Options, Placement, StoreKind, WriteBatch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ssd = Box::new(presets::open("ssd-x25m")?);
    let hdd = Box::new(presets::open("hdd-7200")?);
    // The log and checkpoints on the SSD (Tier::Slow puts them on the disk).
    let pair = Box::new(PairDevice::new(ssd, hdd, Tier::Fast)?);
    let opts = Options::builder()
        .store(StoreKind::TwoDevice(Placement::IndexOnFast))
        .build()?;
    let db = Db::open(pair, opts)?;
    let mut batch = WriteBatch::default();
    for i in 0..20_000u32 {
        batch.put(&i.to_be_bytes(), &[7u8; 100]);
    }
    db.write(batch)?;
    db.checkpoint()?;
    let (s, shape) = (db.stats(), db.shape()?);
    println!(
        "{} internal pages, {} on the SSD; {} leaves on the disk",
        shape.internal_pages, s.store.fast_pages, shape.leaf_pages
    );
    assert_eq!(s.store.fast_pages, shape.internal_pages);
    Ok(())
}
