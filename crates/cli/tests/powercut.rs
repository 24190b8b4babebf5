//! Power cuts under the `flashkv` commands on real files. The hybrid
//! drive: `flashkv hybrid
//! create` makes the SSD and HDD files on the power-cut layer
//! (`flashkv_testing::powercut`, a FUSE file system that loses whatever no
//! `fsync` covered), then this process writes tagged sectors through the
//! hybrid with flushes now and then. Power fails at a random request,
//! during the create or the writes; after a restart the pair must open and
//! recover, and every 512-byte piece must hold the value its last
//! completed flush acknowledged or one written after it. A create that
//! returned must survive a cut that drops every unsynced change. Needs
//! FUSE (root or fusermount3); skips, saying so, without it.

use std::path::{Path, PathBuf};
use std::process::Command;

use flashkv_device::{BlockDevice, FileDevice, FileOptions, Nanos};
use flashkv_hybrid::{HybridDevice, Options};
use flashkv_testing::powercut::{Loss, PowerCut};
use flashkv_testing::{cases, Tally};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SECTOR: u64 = 4096;
/// Sectors the writes touch (of the HDD file's 1,024), so they overlap.
const SECTORS: u64 = 192;
const PIECE: usize = 512;
const PIECES: usize = SECTOR as usize / PIECE;
const LOSSES: [Loss; 3] = [Loss::All, Loss::Some, Loss::Torn];

/// What each piece may hold: its acknowledged tag, and the tags written
/// since the last completed flush.
struct Oracle {
    acked: Vec<u64>,
    since: Vec<Vec<u64>>,
}

impl Oracle {
    fn new() -> Oracle {
        let n = SECTORS as usize * PIECES;
        Oracle {
            acked: vec![0; n],
            since: vec![Vec::new(); n],
        }
    }

    fn flushed(&mut self) {
        for (a, s) in self.acked.iter_mut().zip(&mut self.since) {
            if let Some(&t) = s.last() {
                *a = t;
            }
            s.clear();
        }
    }

    fn allowed(&self, p: usize, tag: u64) -> bool {
        self.acked[p] == tag || self.since[p].contains(&tag)
    }
}

fn tag_of(piece: &[u8]) -> Option<u64> {
    let t = u64::from_le_bytes(piece[..8].try_into().expect("8 bytes"));
    piece.chunks(8).all(|c| c == t.to_le_bytes()).then_some(t)
}

/// `flashkv hybrid create` on `ssd` and `hdd`: whether it succeeded.
fn create(ssd: &Path, hdd: &Path) -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args([
            "hybrid",
            "create",
            "--ssd-size",
            "2m",
            "--hdd-size",
            "4m",
            "--json",
            "--ssd",
        ])
        .arg(ssd)
        .arg("--hdd")
        .arg(hdd)
        .output()
        .expect("run flashkv");
    out.status.success()
}

/// The pair on `ssd` and `hdd`, opened and recovered.
fn open(ssd: &Path, hdd: &Path) -> Result<HybridDevice, String> {
    let side = |p: &Path| FileDevice::open(p, &FileOptions::default()).map_err(|e| e.to_string());
    let (s, h) = (side(ssd)?, side(hdd)?);
    HybridDevice::open(Box::new(s), Box::new(h), Options::default()).map_err(|e| e.to_string())
}

/// Writes and flushes until `ops` requests are done or power fails.
fn workload(dev: &mut HybridDevice, o: &mut Oracle, rng: &mut SmallRng, ops: u64) {
    let mut now: Nanos = dev.clock();
    for id in 1..=ops {
        let r = if rng.gen_bool(0.2) {
            dev.flush_at(now).map(|c| {
                o.flushed();
                c.end
            })
        } else {
            let (first, n) = (rng.gen_range(0..SECTORS - 3), rng.gen_range(1..4));
            let mut data = Vec::new();
            for s in first..first + n {
                for k in 0..PIECES {
                    let tag = id << 20 | s << 4 | k as u64;
                    data.extend(tag.to_le_bytes().repeat(PIECE / 8));
                    o.since[s as usize * PIECES + k].push(tag);
                }
            }
            dev.write_at(now, first * SECTOR, &data).map(|c| c.end)
        };
        match r {
            Ok(end) => now = end,
            Err(_) => return,
        }
    }
}

/// Checks every piece of the recovered pair against the oracle.
fn check(what: &str, dev: &mut HybridDevice, o: &Oracle) {
    let mut buf = vec![0; (SECTORS * SECTOR) as usize];
    dev.read_at(dev.clock(), 0, &mut buf)
        .unwrap_or_else(|e| panic!("{what}: read: {e}"));
    for (p, piece) in buf.chunks(PIECE).enumerate() {
        let tag = tag_of(piece).unwrap_or_else(|| panic!("{what}: piece {p} holds no whole write"));
        assert!(
            o.allowed(p, tag),
            "{what}: piece {p} holds {tag:#x}, acknowledged {:#x}",
            o.acked[p]
        );
    }
}

/// Removes a pair for good (the removals synced).
fn remove(ssd: &Path, hdd: &Path) {
    for p in [ssd, hdd] {
        std::fs::remove_file(p).expect("remove a case's file");
    }
    flashkv_device::sync_parent(ssd).expect("sync the removals");
}

/// Requests the layer sees from `f`.
fn requests(pc: &PowerCut, f: impl FnOnce()) -> u64 {
    let before = pc.ops();
    f();
    pc.ops() - before
}

/// One case: a create cut at a random request (half the cases) or not,
/// then writes cut at a random request, each point chosen among the
/// requests a dry run of the same steps made; then recovery and the
/// check. Counts the create's cut (where there was one) and the writes'.
fn case(pc: &PowerCut, seed: u64) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = pc.path();
    let (ssd, hdd): (PathBuf, PathBuf) = (
        dir.join(format!("ssd-{seed}")),
        dir.join(format!("hdd-{seed}")),
    );
    let mut t = Tally::default();
    if rng.gen_bool(0.5) {
        let n = requests(pc, || {
            assert!(create(&ssd, &hdd), "seed {seed}: dry create")
        });
        remove(&ssd, &hdd);
        pc.arm(rng.gen_range(1..=n), LOSSES[rng.gen_range(0..3)], rng.gen());
        let made = create(&ssd, &hdd);
        let struck = pc.is_cut();
        assert!(
            !made || !struck,
            "seed {seed}: create succeeded with the power off"
        );
        t += struck.into();
        if !struck {
            pc.cut(Loss::All, rng.gen());
        }
        pc.restart();
        if !made {
            // Never acknowledged: start over, as a user would.
            let _ = std::fs::remove_file(&ssd);
            let _ = std::fs::remove_file(&hdd);
            flashkv_device::sync_parent(&ssd).expect("sync the removals");
            assert!(create(&ssd, &hdd), "seed {seed}: create after a cut create");
        }
    } else {
        assert!(create(&ssd, &hdd), "seed {seed}: create");
        // A create that returned survives a cut of everything unsynced.
        pc.cut(Loss::All, rng.gen());
        pc.restart();
    }
    let what = format!("seed {seed}");
    let mut dev = open(&ssd, &hdd)
        .unwrap_or_else(|e| panic!("{what}: a created pair does not open after a cut: {e}"));
    // A dry run of the writes on a pair of its own counts their requests.
    let (dry_ssd, dry_hdd) = (
        dir.join(format!("dry-ssd-{seed}")),
        dir.join(format!("dry-hdd-{seed}")),
    );
    assert!(create(&dry_ssd, &dry_hdd), "{what}: dry create");
    let n = requests(pc, || {
        let mut dry = open(&dry_ssd, &dry_hdd).expect("open the dry pair");
        workload(&mut dry, &mut Oracle::new(), &mut rng.clone(), 300);
    });
    remove(&dry_ssd, &dry_hdd);
    let (mut o, loss) = (Oracle::new(), LOSSES[rng.gen_range(0..3)]);
    pc.arm(rng.gen_range(1..=n), loss, rng.gen());
    workload(&mut dev, &mut o, &mut rng, 300);
    let struck = pc.is_cut();
    t += struck.into();
    if !struck {
        pc.cut(loss, rng.gen());
    }
    drop(dev);
    pc.restart();
    let what = format!("{what}: writes cut at a request of {n}, {loss:?}");
    let mut dev = open(&ssd, &hdd).unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    check(&what, &mut dev, &o);
    drop(dev);
    remove(&ssd, &hdd);
    t
}

#[test]
fn power_cut_under_the_hybrid_on_files() {
    let test = "power_cut_under_the_hybrid_on_files";
    let pc = match PowerCut::mount() {
        Ok(pc) => pc,
        Err(why) => return eprintln!("{test}: skipped: {why}"),
    };
    let t = cases(test, 0..300, |seed| case(&pc, seed));
    t.assert_hits(test, 90);
}

/// A file system that refuses to sync directories: a new store is made
/// all the same, and the command says so once, naming the directory.
#[test]
fn power_cut_layer_refusing_directory_syncs_is_named_once() {
    let test = "power_cut_layer_refusing_directory_syncs_is_named_once";
    let pc = match PowerCut::mount() {
        Ok(pc) => pc,
        Err(why) => return eprintln!("{test}: skipped: {why}"),
    };
    pc.refuse_dir_syncs(true);
    let db = pc.path().join("store");
    let out = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(["kv", "--db"])
        .arg(&db)
        .args(["--create", "put", "k", "v"])
        .output()
        .expect("run flashkv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kv put failed: {err}");
    let dir = pc.path().display().to_string();
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("cannot be synced"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains(&dir) && warnings[0].contains("power cut"),
        "{err}"
    );
    pc.refuse_dir_syncs(false);
    let got = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(["kv", "--db"])
        .arg(&db)
        .args(["get", "k"])
        .output()
        .expect("run flashkv");
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "v");
}
