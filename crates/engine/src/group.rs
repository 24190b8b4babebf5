//! Group commit: a durable commit appends its record under the store's
//! lock, lets the lock go, and then waits here until a flush covers the
//! record. One committer flushes at a time; those that queue behind it
//! find their records covered by the next flush, which takes everything
//! appended until it starts. So writers on several threads share flushes,
//! and readers and the next writer run while a flush is in progress.
//!
//! Only a device with a [`Syncer`] (a real file) flushes here; a simulated
//! device is flushed under the lock, where its virtual clock lives.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use flashkv_device::Syncer;

use crate::error::{Error, Result};

/// A point in the log: records appended (the disk's count) and the
/// sequence number of the newest of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Mark {
    pub logged: u64,
    pub seq: u64,
}

#[derive(Debug, Default)]
struct State {
    /// The newest record whose write has completed.
    appended: Mark,
    /// The newest record a completed flush covers.
    durable: Mark,
    /// A committer is flushing (outside the mutex).
    syncing: bool,
    /// Flushes done here, outside the store's lock.
    syncs: u64,
}

/// How far the log is durable, shared by the store's lock and committers.
pub(crate) struct LogSync {
    syncer: Option<Syncer>,
    state: Mutex<State>,
    flushed: Condvar,
    /// A flush failed: what it covered is unknown, so nothing more is
    /// acknowledged until the store is reopened. Outside the mutex: every
    /// read checks it, and readers on several threads would pass the
    /// mutex's line around.
    failed: AtomicBool,
}

impl LogSync {
    /// `syncer`: how to flush the log's device from any thread, if it can be.
    pub fn new(syncer: Option<Syncer>) -> LogSync {
        LogSync {
            syncer,
            state: Mutex::new(State::default()),
            flushed: Condvar::new(),
            failed: AtomicBool::new(false),
        }
    }

    // No code panics while holding the mutex, and its state stays whole.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether durable commits wait here instead of flushing under the lock.
    pub fn outside(&self) -> bool {
        self.syncer.is_some()
    }

    /// A record's write completed (called under the store's lock).
    pub fn appended(&self, at: Mark) {
        let mut s = self.state();
        assert!(at > s.appended, "records are appended in order");
        s.appended = at;
    }

    /// A flush under the store's lock made everything appended durable.
    pub fn flushed(&self) {
        let mut s = self.state();
        s.durable = s.durable.max(s.appended);
        drop(s);
        self.flushed.notify_all();
    }

    /// The newest record known durable.
    pub fn durable(&self) -> Mark {
        self.state().durable
    }

    /// Flushes done outside the store's lock.
    pub fn syncs(&self) -> u64 {
        self.state().syncs
    }

    /// Whether a flush outside the lock failed (the store must be reopened).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Returns once record count `logged` is durable: flushes if no one
    /// else is, else waits for the flush in progress and looks again.
    pub fn wait(&self, logged: u64) -> Result<()> {
        let Some(syncer) = &self.syncer else {
            unreachable!("only a device with a syncer commits outside the lock")
        };
        let mut s = self.state();
        assert!(logged <= s.appended.logged, "record {logged} was appended");
        loop {
            if self.failed.load(Ordering::Acquire) {
                return Err(Error::Poisoned);
            }
            if s.durable.logged >= logged {
                return Ok(());
            }
            if s.syncing {
                s = self.flushed.wait(s).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            s.syncing = true;
            let target = s.appended;
            drop(s);
            let r = syncer();
            s = self.state();
            s.syncing = false;
            match r {
                Ok(()) => {
                    s.durable = s.durable.max(target);
                    s.syncs += 1;
                }
                Err(_) => self.failed.store(true, Ordering::Release),
            }
            self.flushed.notify_all();
            if let Err(e) = r {
                return Err(e.into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    fn counting() -> (LogSync, Arc<AtomicU64>) {
        let n = Arc::new(AtomicU64::new(0));
        let m = n.clone();
        let s: Syncer = Arc::new(move || {
            m.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        (LogSync::new(Some(s)), n)
    }

    #[test]
    fn a_flush_covers_everything_appended_before_it() {
        let (sync, flushes) = counting();
        for i in 1..=3 {
            sync.appended(Mark { logged: i, seq: i });
        }
        sync.wait(1).unwrap();
        assert_eq!(sync.durable(), Mark { logged: 3, seq: 3 });
        sync.wait(3).unwrap();
        assert_eq!(flushes.load(Ordering::SeqCst), 1, "record 3 was covered");
        sync.appended(Mark { logged: 4, seq: 4 });
        sync.flushed();
        sync.wait(4).unwrap();
        assert_eq!(flushes.load(Ordering::SeqCst), 1, "a locked flush counts");
    }

    /// Two committers queued behind a flush in progress share the next one.
    #[test]
    fn committers_queued_behind_a_flush_share_the_next() {
        let (entered, wait_entered) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = Mutex::new(released);
        let flushes = Arc::new(AtomicU64::new(0));
        let n = flushes.clone();
        let s: Syncer = Arc::new(move || {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                entered.send(()).unwrap();
                released.lock().unwrap().recv().unwrap();
            }
            Ok(())
        });
        let sync = Arc::new(LogSync::new(Some(s)));
        sync.appended(Mark { logged: 1, seq: 1 });
        let first = std::thread::spawn({
            let sync = sync.clone();
            move || sync.wait(1)
        });
        wait_entered.recv().unwrap();
        // Appended while the first flush runs: it does not cover them.
        sync.appended(Mark { logged: 2, seq: 2 });
        sync.appended(Mark { logged: 3, seq: 3 });
        let later: Vec<_> = (2..=3)
            .map(|i| {
                let sync = sync.clone();
                std::thread::spawn(move || sync.wait(i))
            })
            .collect();
        release.send(()).unwrap();
        first.join().unwrap().unwrap();
        for t in later {
            t.join().unwrap().unwrap();
        }
        assert_eq!(
            flushes.load(Ordering::SeqCst),
            2,
            "records 2 and 3 share a flush"
        );
        assert_eq!(sync.syncs(), 2);
        assert_eq!(sync.durable(), Mark { logged: 3, seq: 3 });
    }

    #[test]
    fn a_failed_flush_fails_every_later_wait() {
        let s: Syncer = Arc::new(|| Err(flashkv_device::DeviceError::Unsupported("no")));
        let sync = LogSync::new(Some(s));
        sync.appended(Mark { logged: 1, seq: 1 });
        assert!(matches!(sync.wait(1), Err(Error::Device(_))));
        assert!(sync.failed());
        assert!(matches!(sync.wait(1), Err(Error::Poisoned)));
    }
}
