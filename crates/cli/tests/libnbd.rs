//! `flashkv serve` with libnbd's clients (nbdinfo, nbdcopy, nbdfuse) beside
//! qemu-io, and an ext4 file system made and mounted through nbdfuse and
//! fuse2fs: the clients the PostgreSQL experiment stands on. Each test
//! skips with a message where its programs (Debian: libnbd-bin, nbdfuse,
//! fuse2fs, qemu-utils) or FUSE mounting (root, /dev/fuse) are missing;
//! `.ci/run` installs them.

mod nbd;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nbd::*;

/// Whether `tool` runs; if not, says which package has it.
fn have(tool: &str, package: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("{tool} is not installed (Debian: {package}): skipping");
    }
    ok
}

/// FUSE mounts need root here (no fusermount3 is assumed) and /dev/fuse.
fn can_mount() -> bool {
    // SAFETY: geteuid only reads the process's credentials.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = root && Path::new("/dev/fuse").exists();
    if !ok {
        eprintln!("FUSE mounts need root and /dev/fuse: skipping");
    }
    ok
}

fn uri(sock: &Path) -> String {
    format!("nbd+unix:///?socket={}", sock.display())
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{cmd:?}: {out}");
    out
}

fn count(report: &serde_json::Value, key: &str) -> u64 {
    report[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {report}"))
}

/// Bytes that differ block to block (no run of zeros a sparse copy skips).
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The first `n` bytes of a copy that must be `size` long, with nothing
/// but zeros in its last MiB.
fn read_head(path: &Path, n: usize, size: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).unwrap();
    assert_eq!(f.metadata().unwrap().len(), size, "the whole export");
    let mut head = vec![0u8; n];
    f.read_exact(&mut head).unwrap();
    let mut tail = vec![1u8; 1 << 20];
    f.seek(SeekFrom::End(-(1 << 20))).unwrap();
    f.read_exact(&mut tail).unwrap();
    assert!(
        tail.iter().all(|&b| b == 0),
        "never written, reads as zeros"
    );
    head
}

#[test]
fn nbdinfo_lists_the_export_with_its_size_and_block_sizes() {
    if !have("nbdinfo", "libnbd-bin") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--device", "hdd-7200"]);
    let out = run(Command::new("nbdinfo").arg(uri(&server.socket)));
    for want in [
        "export-size: 79456894976",
        "block_size_minimum: 1",
        "block_size_preferred: 4096",
        "block_size_maximum: 33554432",
        "can_trim: true",
        "can_zero: true",
        "can_fua: true",
        "can_flush: true",
        "is_rotational: true",
    ] {
        assert!(out.contains(want), "no '{want}' in {out}");
    }
    let list = run(Command::new("nbdinfo")
        .arg("--list")
        .arg(uri(&server.socket)));
    assert!(list.contains("export=\"hdd-7200\""), "{list}");
    // An unknown name is NBD_REP_ERR_UNKNOWN, which libnbd reports as ENOENT.
    let bad = format!("nbd+unix:///nope?socket={}", server.socket.display());
    let o = Command::new("nbdinfo").arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("No such file or directory"), "{err}");
    let (r, log) = server.stop();
    assert_eq!(count(&r, "errors"), 0, "{log}");
}

#[test]
fn nbdcopy_of_256_mib_round_trips_byte_for_byte() {
    if !have("nbdcopy", "libnbd-bin") {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (src, back) = (dir.path().join("src"), dir.path().join("back"));
    let data = pattern(256 << 20, 7);
    std::fs::write(&src, &data).unwrap();
    let server = Server::start(dir.path(), &["--device", "nvme"]);
    let u = uri(&server.socket);
    run(Command::new("nbdcopy").arg("--flush").arg(&src).arg(&u));
    // The whole 2 GiB export comes back, as a sparse file.
    run(Command::new("nbdcopy").arg(&u).arg(&back));
    let got = read_head(&back, 256 << 20, 2 << 30);
    assert!(got == data, "the copy back differs");
    let (r, log) = server.stop();
    assert_eq!(count(&r, "errors"), 0, "{log}");
    assert!(count(&r, "write_bytes") >= 256 << 20, "{r}");
    assert!(count(&r, "read_bytes") >= 256 << 20, "{r}");
    assert!(count(&r, "flushes") >= 1, "{r}");
}

#[test]
fn a_pattern_written_by_one_client_reads_back_with_another() {
    if !have("nbdcopy", "libnbd-bin") || !have("qemu-io", "qemu-utils") {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let server = Server::start(dir.path(), &["--device", "ssd-lowend"]);
    let u = uri(&server.socket);
    // qemu-io writes, at an offset no sector boundary lines up with;
    // nbdcopy reads it back.
    run(Command::new("qemu-io").args([
        "-f",
        "raw",
        "-c",
        "write -P 0x5c 1000000 70000",
        "-c",
        "flush",
        &u,
    ]));
    let back = dir.path().join("back");
    run(Command::new("nbdcopy").arg(&u).arg(&back));
    let got = read_head(&back, 2 << 20, 2 << 30);
    assert!(got[1_000_000..1_070_000].iter().all(|&b| b == 0x5c));
    assert!(got[..1_000_000].iter().all(|&b| b == 0) && got[1_070_000..].iter().all(|&b| b == 0));
    // nbdcopy writes; qemu-io verifies with its own pattern check.
    let src = dir.path().join("src");
    std::fs::write(&src, vec![0xa7u8; 1 << 20]).unwrap();
    run(Command::new("nbdcopy").arg(&src).arg(&u));
    let out = run(Command::new("qemu-io").args(["-f", "raw", "-c", "read -P 0xa7 0 1m", &u]));
    assert!(out.contains("read 1048576/1048576"), "{out}");
    let (r, log) = server.stop();
    assert_eq!(count(&r, "errors"), 0, "{log}");
}

/// A FUSE mount that is taken down (and its daemon reaped) when dropped.
struct Mounted {
    path: PathBuf,
    daemon: Child,
}

impl Mounted {
    fn wait(path: &Path, mut daemon: Child, ready: impl Fn() -> bool) -> Mounted {
        let began = Instant::now();
        while !ready() {
            if let Some(s) = daemon.try_wait().unwrap() {
                panic!("{} exited ({s}) before mounting", path.display());
            }
            assert!(began.elapsed() < Duration::from_secs(30), "never mounted");
            std::thread::sleep(Duration::from_millis(20));
        }
        Mounted {
            path: path.to_path_buf(),
            daemon,
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let c = std::ffi::CString::new(self.path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::umount2(c.as_ptr(), 0) } != 0 {
            // SAFETY: as above; a busy mount is detached instead.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = self.daemon.wait();
    }
}

fn is_mount(path: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let p = path.to_str().unwrap();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(p))
}

/// `nbdfuse DIR --unix SOCKET`: the export as the file DIR/nbd.
fn nbdfuse(dir: &Path, sock: &Path) -> Mounted {
    std::fs::create_dir_all(dir).unwrap();
    let child = Command::new("nbdfuse")
        .arg(dir)
        .arg("--unix")
        .arg(sock)
        .spawn()
        .unwrap();
    let file = dir.join("nbd");
    Mounted::wait(dir, child, || file.exists())
}

#[test]
fn mkfs_and_fuse2fs_make_a_file_system_through_nbdfuse() {
    if !have("nbdfuse", "nbdfuse") || !have("fuse2fs", "fuse2fs") || !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The disk whose TRIM from mkfs once came back EINVAL.
    let server = Server::start(dir.path(), &["--device", "hdd-7200"]);
    let (nd, mnt) = (dir.path().join("n"), dir.path().join("m"));
    let text = b"written through ext4, fuse2fs, nbdfuse and NBD\n";
    {
        let n = nbdfuse(&nd, &server.socket);
        let disk = nd.join("nbd");
        // mkfs discards the whole disk and zeroes its inode tables.
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&disk)
            .arg("1G"));
        std::fs::create_dir_all(&mnt).unwrap();
        for round in 0..2 {
            let child = Command::new("fuse2fs")
                .arg(&disk)
                .arg(&mnt)
                .args(["-f", "-o", "direct_io"])
                .spawn()
                .unwrap();
            let m = Mounted::wait(&mnt, child, || is_mount(&mnt));
            let f = mnt.join("hello.txt");
            if round == 0 {
                let mut w = std::fs::File::create(&f).unwrap();
                w.write_all(text).unwrap();
                w.sync_all().unwrap();
            } else {
                assert_eq!(std::fs::read(&f).unwrap(), text, "kept across a remount");
            }
            drop(m);
        }
        drop(n);
    }
    assert!(!is_mount(&mnt) && !is_mount(&nd));
    let (r, log) = server.stop();
    assert_eq!(count(&r, "errors"), 0, "{log}");
    assert!(count(&r, "trims") >= 1, "mkfs discarded: {r}");
    assert!(count(&r, "flushes") >= 1, "{r}");
}
