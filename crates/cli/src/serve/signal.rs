//! Signals the server answers: SIGINT and SIGTERM end it (with its report),
//! SIGUSR1 asks for the report now, SIGUSR2 for the report and a new
//! interval (the request counters and latencies start again from zero).
//! Handlers only set flags; the accept loop looks at them.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static REPORT: AtomicBool = AtomicBool::new(false);
static INTERVAL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_report(_: libc::c_int) {
    REPORT.store(true, Ordering::SeqCst);
}

extern "C" fn on_interval(_: libc::c_int) {
    INTERVAL.store(true, Ordering::SeqCst);
}

/// Installs the handlers; a write to a client that hung up then fails with
/// EPIPE instead of killing the server.
pub fn install() {
    let stop = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let report = on_report as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let interval = on_interval as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handlers only store to atomics, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, stop);
        libc::signal(libc::SIGTERM, stop);
        libc::signal(libc::SIGUSR1, report);
        libc::signal(libc::SIGUSR2, interval);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Whether a report was asked for since the last call.
pub fn take_report() -> bool {
    REPORT.swap(false, Ordering::SeqCst)
}

/// Whether a new interval was asked for since the last call.
pub fn take_interval() -> bool {
    INTERVAL.swap(false, Ordering::SeqCst)
}
