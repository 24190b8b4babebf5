//! Recovery after power loss on the configuration (`ssd-lowend` in
//! front of `hdd-7200`): every flushed write is back, and recovery reports
//! what it read and how long it took in virtual time.

use flashkv_device::{presets, BlockDevice};
use flashkv_hybrid::{HybridDevice, Options};

#[test]
fn recovery_replays_the_dirty_log_and_reports_its_time() {
    let ssd = Box::new(presets::open("ssd-lowend").unwrap());
    let hdd = Box::new(presets::open("hdd-7200").unwrap());
    let mut dev = HybridDevice::create(ssd, hdd, Options::default()).unwrap();
    // 64 MiB of random 8 KiB writes, all in the SSD log, then a flush.
    let blocks = 8192u64;
    let mut now = dev.clock();
    for i in 0..blocks {
        let b = i * 7919 % (1 << 20);
        let c = dev
            .write_at(now, b * 8192, &[(i % 251) as u8 + 1; 8192])
            .unwrap();
        now = c.end;
    }
    dev.flush_at(now).unwrap();
    let dirty = dev.hybrid_stats().dirty_bytes;
    assert_eq!(dirty, blocks * 8192);
    // Power cut: take the devices as they are.
    let (ssd, hdd) = dev.into_devices();
    let mut dev = HybridDevice::open(ssd, hdd, Options::default()).unwrap();
    let r = dev.hybrid_stats().recovery.unwrap();
    assert_eq!(r.records, blocks);
    assert_eq!(r.dirty_sectors * 4096, dirty);
    // The log is read once, in large sequential reads.
    assert!(r.scanned_bytes >= blocks * 12288 && r.scanned_bytes <= blocks * 12288 + (2 << 20));
    eprintln!(
        "recovered {} records ({} MiB dirty) scanning {} MiB in {:.1} ms of virtual time",
        r.records,
        dirty >> 20,
        r.scanned_bytes >> 20,
        r.time_ns as f64 / 1e6
    );
    let mut buf = [0u8; 8192];
    for i in (0..blocks).step_by(97) {
        let b = i * 7919 % (1 << 20);
        dev.read_at(dev.clock(), b * 8192, &mut buf).unwrap();
        assert_eq!(buf, [(i % 251) as u8 + 1; 8192]);
    }
}
