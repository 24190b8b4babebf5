//! Cold and hot page cache on a real file (`flashkv profile --path FILE
//! --cache cold,hot`): a cold run reads the storage device, counted by the
//! kernel's read counter for this process (/proc/self/io read_bytes), and
//! a hot run does not. The file lives in Cargo's target tmpdir, on the disk
//! the build uses; where that file system refuses O_DIRECT, or the counter
//! is missing, the test says so and skips.

use flashkv_lab::cache::Cache;
use flashkv_lab::profile::Pattern;
use flashkv_lab::real::cache::{device_read_bytes, run, CacheSpec};
use flashkv_lab::real::{prepare, Budget, TargetOptions};

#[test]
fn cold_reads_the_device_and_hot_reads_the_page_cache() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("cache-file");
    let target = prepare(
        &path,
        &TargetOptions {
            span: Some(16 << 20),
            writes: false,
            force: false,
            direct: true,
        },
    )
    .unwrap();
    if !target.direct {
        eprintln!(
            "skipped: {} refuses O_DIRECT ({:?}), so a cold run cannot bypass the page cache here",
            path.display(),
            target.warning
        );
        return;
    }
    if device_read_bytes().is_none() {
        eprintln!("skipped: /proc/self/io has no read_bytes counter here");
        return;
    }
    let spec = |cache| CacheSpec {
        cache,
        pattern: Pattern::RandRead,
        block_size: 4096,
        file_size: 16 << 20,
        budget: Budget::Ops(500),
        iodepth: 1,
        seed: 3,
    };
    let (cold, warning) = run(&target, "f", &spec(Cache::Cold)).unwrap();
    if let Some(w) = warning {
        eprintln!("skipped: {w}");
        return;
    }
    let asked = 500 * 4096;
    let read = cold.device_read_bytes.unwrap();
    assert_eq!((cold.ops, cold.direct), (500, Some(true)));
    // O_DIRECT reads what was asked, from the device (reads of the same
    // block twice count twice).
    assert!(
        read >= asked,
        "cold read {read} of {asked} bytes from the device"
    );
    let (hot, warning) = run(&target, "f", &spec(Cache::Hot)).unwrap();
    assert!(warning.is_none(), "{warning:?}");
    assert_eq!(hot.direct, Some(false));
    let hot_read = hot.device_read_bytes.unwrap();
    assert!(
        hot_read < asked / 10,
        "hot read {hot_read} bytes from the device after the warm pass"
    );
    // Writes are refused: the cache runs read.
    let e = run(
        &target,
        "f",
        &CacheSpec {
            pattern: Pattern::RandWrite,
            ..spec(Cache::Cold)
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("read"), "{e}");
    // Where O_DIRECT is refused, cold drops the cached pages first and says
    // so; on this file system the pages are dropped and the device is read.
    let buffered = flashkv_lab::real::Target {
        direct: false,
        ..target.clone()
    };
    let (fallback, warning) = run(&buffered, "f", &spec(Cache::Cold)).unwrap();
    let w = warning.expect("a cold run without O_DIRECT warns");
    assert!(w.contains("O_DIRECT") && w.contains("DONTNEED"), "{w}");
    assert_eq!(fallback.direct, Some(false));
    let r = fallback.device_read_bytes.unwrap();
    assert!(
        r >= asked / 2,
        "the dropped pages were read again: {r} bytes"
    );
}
