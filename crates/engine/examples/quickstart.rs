//! The README's embedding example, kept compiling and running:
//! `cargo run --example quickstart -p flashkv-engine`.

use flashkv_device::presets;
use flashkv_engine::{Db, IplGeometry, Options, StoreKind, WriteBatch};
use std::ops::Bound;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // On a simulated raw NAND device with in-page logging ...
    let dev = Box::new(presets::open("nand-ipl")?);
    let opts = Options::builder()
        .store(StoreKind::InPageLogging(IplGeometry::seed()))
        .build()?;
    let db = Db::open(dev, opts)?;
    // ... or in a real file: Db::open_or_create("my.db", Options::default())?
    db.put(b"user:1", b"alice")?;
    // A missing key is `false` (or `None` from `get`), not an error.
    assert!(!db.update(b"user:9", b"eve")?);
    let mut batch = WriteBatch::default();
    batch.put(b"user:2", b"bob").delete(b"user:1");
    db.write(batch)?; // atomic
    db.flush()?; // durable
    for (k, v) in db.scan((Bound::Included(&b"user:"[..]), Bound::Unbounded))? {
        println!(
            "{}\t{}",
            String::from_utf8_lossy(&k),
            String::from_utf8_lossy(&v)
        );
    }
    let s = db.stats();
    println!(
        "buffer hits {} misses {}; device writes {}",
        s.buffer.hits, s.buffer.misses, s.device.host_writes
    );
    Ok(())
}
