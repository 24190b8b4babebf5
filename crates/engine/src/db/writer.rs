//! The background writer: cleans dirty pages before anything needs them
//! clean, as a database writer does (Oracle's DBWn, PostgreSQL's
//! background writer).
//!
//! A switch carries every dirty page into the new log epoch, and an
//! eviction of a dirty page writes it in the reader's or committer's time;
//! both cost less the fewer pages are dirty. The writer keeps the dirty
//! pages at most [`Core::dirty_limit`]: the pages changed longest ago are
//! written back first (those still changing stay dirty and absorb their
//! changes). Paced by the log: the target is a fraction of what a switch
//! may carry, so a switch rarely has to write back itself ([`Stats::stalls`]).
//!
//! Where the log's device can be flushed from any thread (a file), a
//! thread does the cleaning: under the store's lock it picks pages and
//! logs the images a write back needs, lets the lock go while a flush
//! makes them durable (shared with committers, as group commit), then
//! takes the lock again to write the pages. On simulated devices, whose
//! clock lives under the lock, a commit that leaves too many pages dirty
//! cleans a step's worth itself, so runs stay deterministic.
//!
//! [`Stats::stalls`]: crate::Stats::stalls

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::{Core, Inner};
use crate::error::Result;
use crate::page::PageId;

/// Pages one step of the writer cleans at most: bounds how long it holds
/// the store's lock.
pub(super) const STEP: usize = 64;

/// Wakes the writer thread, and tells it to stop.
#[derive(Default)]
pub(super) struct Signal {
    state: Mutex<Wake>,
    cond: Condvar,
}

#[derive(Default)]
struct Wake {
    due: bool,
    stop: bool,
}

impl Signal {
    fn state(&self) -> std::sync::MutexGuard<'_, Wake> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the writer to look at the store.
    pub fn wake(&self) {
        self.state().due = true;
        self.cond.notify_one();
    }

    /// Asks the writer to stop.
    pub fn stop(&self) {
        self.state().stop = true;
        self.cond.notify_one();
    }

    /// Waits until woken; false once asked to stop.
    fn wait(&self) -> bool {
        let mut s = self.state();
        while !s.due && !s.stop {
            s = self.cond.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        s.due = false;
        !s.stop
    }
}

/// Starts the writer thread of a store.
pub(super) fn spawn(inner: Arc<Inner>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("flashkv-writer".into())
        .spawn(move || {
            while inner.signal.wait() {
                // A device error poisons the store (every later call
                // reports it); the writer has nothing more to do then.
                if let Err(e) = run(&inner) {
                    if e.poisons() || matches!(e, crate::Error::Poisoned) {
                        break;
                    }
                }
            }
        })
}

/// Steps until the store needs no more cleaning.
fn run(inner: &Inner) -> Result<()> {
    loop {
        let staged = {
            let mut c = inner.lock()?;
            if !c.writer_due() {
                return Ok(());
            }
            c.guard(Core::stage)?
        };
        let (ids, logged) = staged;
        // The images and the pages' records become durable outside the
        // lock, in a flush shared with committers.
        inner.sync.wait(logged)?;
        let mut c = inner.lock()?;
        c.guard(|c| c.clean(&ids))?;
    }
}

impl Core {
    /// Dirty pages beyond which the writer cleans: what a switch carries
    /// without moving the log ([`Core::carry_limit`]), or an eighth of the
    /// pool once it is nearly full, so that evictions find clean pages.
    pub(super) fn dirty_limit(&self) -> usize {
        let (cap, limit) = (self.pool.capacity(), self.carry_limit());
        match self.pool.resident() >= cap - cap / 8 {
            true => limit.min(cap / 8),
            false => limit,
        }
        .max(1)
    }

    /// Whether the writer has pages to clean. Never without the log (the
    /// lab's seed 001 setting): pages are then written when evicted or
    /// flushed, and nothing else would count them.
    pub(super) fn writer_due(&self) -> bool {
        self.writer && self.disk.journal.is_some() && self.pool.dirty_len() > self.dirty_limit()
    }

    /// Pages the next step cleans: down to three quarters of the limit (so
    /// the writer does not wake for every page), a step's worth at most.
    fn step_pages(&self) -> usize {
        let keep = self.dirty_limit() / 4 * 3;
        self.pool.dirty_len().saturating_sub(keep).min(STEP)
    }

    /// One step under the lock: picks the dirty pages changed longest ago
    /// (a step's worth, or the excess over the limit) and logs the images
    /// their write back needs; where the log's half has no room for them, a
    /// switch carries them instead. Returns the pages and the records to
    /// make durable before they are written.
    pub(super) fn stage(&mut self) -> Result<(Vec<PageId>, u64)> {
        let ids = self.pool.oldest_dirty(self.step_pages());
        if !self.pool.room_to_image(&*self.store, &self.disk, &ids) {
            self.switch(0)?;
        }
        self.pool
            .log_images(&*self.store, &mut self.disk, &ids, false)?;
        Ok((ids, self.disk.logged))
    }

    /// Writes back those of `ids` still dirty (their images logged and
    /// durable, unless a switch carried them since).
    pub(super) fn clean(&mut self, ids: &[PageId]) -> Result<()> {
        self.pool.clean(&mut *self.store, &mut self.disk, ids)
    }

    /// The writer's work on a device without a thread for it, after a
    /// commit: cleans the excess over the target, a step at a time.
    pub(super) fn write_behind(&mut self) -> Result<()> {
        if self.writer_due() {
            while self.step_pages() > 0 {
                let (ids, _) = self.stage()?;
                self.clean(&ids)?;
            }
        }
        Ok(())
    }
}
