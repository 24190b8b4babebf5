//! Ctrl-C or SIGTERM to the benchmark: the engine's process running then
//! is stopped too, no further one starts, and the work directory (the
//! engines' files) is removed before the benchmark exits.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
/// The running engine process, 0 when none.
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; the pid is our own child's.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// Installs the handler for SIGINT and SIGTERM (in the parent only).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches atomics and calls kill.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether a stop was asked for.
pub fn asked() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Records the engine process now running (`None` once it ended).
pub fn child(pid: Option<u32>) {
    let pid = pid.and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
    CHILD.store(pid, Ordering::SeqCst);
    if pid > 0 && asked() {
        // SAFETY: as in the handler: our own child.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}
