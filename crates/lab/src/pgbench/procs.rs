//! What a run starts, and taking it all down again: every process, mount,
//! thread and folder is pushed on a [`Stack`] as it is made and undone in
//! reverse order when the stack drops, on success, on an error and on
//! Ctrl-C. Children run in their own process group (so the terminal's
//! Ctrl-C reaches only the lab, which then stops them in order) and get
//! SIGTERM if the lab itself dies.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::lab::LabError;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM set a flag the waits look at, while this lives; the
/// previous handlers come back when it drops.
pub struct Interrupts {
    old: [libc::sighandler_t; 2],
}

impl Interrupts {
    pub fn catch() -> Interrupts {
        INTERRUPTED.store(false, Ordering::SeqCst);
        let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only stores to an atomic.
        let old = unsafe {
            [
                libc::signal(libc::SIGINT, h),
                libc::signal(libc::SIGTERM, h),
            ]
        };
        Interrupts { old }
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        // SAFETY: restores the handlers `catch` replaced.
        unsafe {
            libc::signal(libc::SIGINT, self.old[0]);
            libc::signal(libc::SIGTERM, self.old[1]);
        }
    }
}

/// `Err(Interrupted)` once Ctrl-C (or SIGTERM) arrived.
pub fn check() -> Result<(), LabError> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        Err(LabError::Interrupted)
    } else {
        Ok(())
    }
}

/// Polls `ready` until it holds; fails after `limit` or when interrupted.
pub fn wait_for(
    what: &str,
    limit: Duration,
    mut ready: impl FnMut() -> Result<bool, LabError>,
) -> Result<(), LabError> {
    let began = Instant::now();
    while !ready()? {
        check()?;
        if began.elapsed() > limit {
            return Err(LabError::Run(format!("{what}: not ready after {limit:?}")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A command in its own process group that gets SIGTERM if the lab dies.
pub fn command(program: &Path) -> Command {
    let mut c = Command::new(program);
    c.process_group(0);
    // SAFETY: prctl is async-signal-safe; it runs in the child before exec.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    c
}

/// Sends `sig` to a child that may have exited already.
pub fn signal(child: &Child, sig: libc::c_int) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: a signal to our own child's pid (reaped only by us).
    unsafe { libc::kill(pid, sig) };
}

/// Waits up to `limit` for a child to exit.
pub fn reap(child: &mut Child, limit: Duration) -> bool {
    let began = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return true,
            Ok(None) if began.elapsed() > limit => return false,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Stops a child: `sig`, then SIGKILL if it has not exited in `grace`.
pub fn stop(child: &mut Child, sig: libc::c_int, grace: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    signal(child, sig);
    if !reap(child, grace) {
        signal(child, libc::SIGKILL);
        reap(child, Duration::from_secs(5));
    }
}

/// Whether `path` is a mount point now.
pub fn is_mount(path: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    let p = path.to_string_lossy();
    mounts
        .lines()
        .any(|l| l.split(' ').nth(1).is_some_and(|m| unescape(m) == p))
}

/// /proc/mounts writes a space as `\040`.
fn unescape(m: &str) -> String {
    m.replace("\\040", " ").replace("\\011", "\t")
}

/// Unmounts `path`, retrying while it is busy, then detaching it.
pub fn unmount(path: &Path) {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return;
    };
    for _ in 0..50 {
        if !is_mount(path) {
            return;
        }
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: as above.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
}

enum Item {
    /// A child and the signal that ends it cleanly.
    Proc {
        child: Child,
        sig: libc::c_int,
    },
    Mount(PathBuf),
    Thread(Arc<AtomicBool>, JoinHandle<()>),
    Dir(PathBuf),
}

/// Everything a run made, undone in reverse when dropped.
#[derive(Default)]
pub struct Stack {
    items: Vec<Item>,
}

impl Stack {
    /// Keeps `child`, ended with `sig` (then SIGKILL) at teardown; returns
    /// its index for [`Stack::child`].
    pub fn process(&mut self, child: Child, sig: libc::c_int) -> usize {
        self.items.push(Item::Proc { child, sig });
        self.items.len() - 1
    }

    pub fn child(&mut self, index: usize) -> &mut Child {
        match &mut self.items[index] {
            Item::Proc { child, .. } => child,
            _ => unreachable!("item {index} is a process"),
        }
    }

    pub fn mount(&mut self, path: &Path) {
        self.items.push(Item::Mount(path.to_path_buf()));
    }

    /// A thread that runs until `stop` is set.
    pub fn thread(&mut self, stop: Arc<AtomicBool>, handle: JoinHandle<()>) {
        self.items.push(Item::Thread(stop, handle));
    }

    /// A folder removed with all it holds.
    pub fn dir(&mut self, path: &Path) {
        self.items.push(Item::Dir(path.to_path_buf()));
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        while let Some(item) = self.items.pop() {
            match item {
                Item::Proc { mut child, sig } => stop(&mut child, sig, Duration::from_secs(20)),
                Item::Mount(p) => unmount(&p),
                Item::Thread(flag, h) => {
                    flag.store(true, Ordering::SeqCst);
                    let _ = h.join();
                }
                Item::Dir(p) => {
                    if let Err(e) = std::fs::remove_dir_all(&p) {
                        if e.kind() != std::io::ErrorKind::NotFound {
                            eprintln!("pgbench: cannot remove {}: {e}", p.display());
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_stack_stops_its_processes_and_removes_its_folders() {
        let dir = std::env::temp_dir().join(format!("flashkv-stack-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        let pid;
        {
            let mut s = Stack::default();
            s.dir(&dir);
            let child = command(Path::new("sleep")).arg("600").spawn().unwrap();
            pid = child.id() as libc::pid_t;
            let i = s.process(child, libc::SIGTERM);
            assert!(s.child(i).try_wait().unwrap().is_none(), "running");
        }
        assert!(!dir.exists(), "the folder is gone");
        // SAFETY: signal 0 only asks whether the pid exists.
        assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "the child was reaped");
    }

    #[test]
    fn mount_lines_unescape_spaces() {
        assert_eq!(unescape("/tmp/a\\040b"), "/tmp/a b");
        assert!(!is_mount(Path::new("/no/such/mount")));
    }
}
