//! A power-cut layer for real files: a small FUSE file system, in the
//! manner of LazyFS, that keeps every write, length change, creation,
//! removal and rename no `fsync`/`fdatasync` has covered, and on a
//! simulated power cut drops all of them, a random subset, or a subset
//! with writes torn at 512 bytes ([`Loss`]). See [`model`] for where this
//! is stricter or looser than ext4's ordered mode.
//!
//! A test mounts one ([`PowerCut::mount`]), runs a program on files under
//! [`PowerCut::path`], arms a cut at the n-th request that changes or
//! syncs the disk ([`PowerCut::arm`]); from that request on every request
//! fails with EIO, as on a machine without power. Then it drops what it
//! had open, [`PowerCut::restart`]s, and reads what survived.
//!
//! Mounting needs `/dev/fuse` and root (or `fusermount3`); where it fails,
//! [`PowerCut::mount`] says why, and the test skips saying so.

mod fs;
pub mod model;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fuser::{BackgroundSession, Config, MountOption};
use rand::rngs::SmallRng;
use rand::SeedableRng;

pub use model::Loss;

use fs::{Inner, PowerCutFs};

/// A mounted power-cut file system; dropping it unmounts it.
pub struct PowerCut {
    session: Option<BackgroundSession>,
    dir: PathBuf,
    inner: Arc<Mutex<Inner>>,
}

impl PowerCut {
    /// Mounts an empty one on a new directory under the system's temp
    /// directory; the error says why FUSE is not available here.
    pub fn mount() -> Result<PowerCut, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("flashkv-powercut-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let inner = Arc::new(Mutex::new(Inner::default()));
        let (uid, gid) = owner(&dir);
        let fs = PowerCutFs {
            inner: inner.clone(),
            uid,
            gid,
        };
        let mut config = Config::default();
        config.mount_options = vec![MountOption::FSName("flashkv-powercut".into())];
        match fuser::spawn_mount(fs, &dir, &config) {
            Ok(session) => Ok(PowerCut {
                session: Some(session),
                dir,
                inner,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(format!("cannot mount a FUSE file system (needs /dev/fuse and root or fusermount3): {e}"))
            }
        }
    }

    /// The mount point: files made under it live in the layer.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Requests that changed or synced the disk since mounting.
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Cuts power during the `n`-th request from now (1: the next) that
    /// changes or syncs the disk, losing what `loss` drops (chosen by `seed`).
    pub fn arm(&self, n: u64, loss: Loss, seed: u64) {
        assert!(n > 0, "a cut is armed at a request still to come");
        let mut g = self.lock();
        assert!(!g.dead, "arm a cut with power on");
        let at = g.ops + n;
        g.armed = Some((at, loss, SmallRng::seed_from_u64(seed)));
    }

    /// Cuts power now, between requests.
    pub fn cut(&self, loss: Loss, seed: u64) {
        let mut g = self.lock();
        assert!(!g.dead, "power is already off");
        g.disk.cut(loss, &mut SmallRng::seed_from_u64(seed));
        g.dead = true;
        g.armed = None;
    }

    /// Makes directory syncs fail with EINVAL (`true`), as on a file
    /// system that does not sync directories, or work again.
    pub fn refuse_dir_syncs(&self, refuse: bool) {
        self.lock().refuse_dir_sync = refuse;
    }

    /// Whether power is off (a cut struck and no restart followed).
    pub fn is_cut(&self) -> bool {
        self.lock().dead
    }

    /// Powers up again: the files are what the cut kept; a cut armed but
    /// not reached is disarmed. Returns whether a cut had struck.
    pub fn restart(&self) -> bool {
        let mut g = self.lock();
        g.armed = None;
        std::mem::replace(&mut g.dead, false)
    }
}

impl Drop for PowerCut {
    fn drop(&mut self) {
        drop(self.session.take());
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The owner of `dir`: the files in the layer are theirs.
fn owner(dir: &Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).map_or((0, 0), |m| (m.uid(), m.gid()))
}
