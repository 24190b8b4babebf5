//! Letting go of a store: the devices handed back as they are, or the end
//! of the log marked when a `Db` is dropped.

use flashkv_device::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Result};

use super::{Core, Db, Devices};
use crate::redo;
use crate::wal::Logged;

/// Writes of the mark a drop leaves at the end of the log, at most.
const MARKS: usize = 3;

impl Db {
    /// The devices as they are; the `Db` left behind writes nothing when
    /// dropped.
    pub(super) fn into_devices(self) -> Devices {
        let mut c = self.inner.core.write().unwrap_or_else(|e| e.into_inner());
        c.disk.journal = None;
        let dev = std::mem::replace(&mut c.disk.dev, Box::new(Detached));
        (dev, c.disk.log.take())
    }
}

impl Drop for Db {
    /// Marks the end of the log ([`Core::mark_log_end`]); a drop has no
    /// one to report a failure to, and writes nothing while a panic
    /// unwinds or after a failure poisoned the store.
    fn drop(&mut self) {
        self.stop_writer();
        // A flush that failed outside the lock (group commit) poisons too:
        // a mark must not follow records that may not be durable.
        if std::thread::panicking() || self.inner.sync.failed() {
            return;
        }
        if let Ok(mut c) = self.inner.core.write() {
            if !c.poisoned {
                c.mark_log_end();
            }
        }
    }
}

impl Db {
    /// Stops the background writer's thread (it finishes its step).
    pub(super) fn stop_writer(&mut self) {
        if let Some(t) = self.writer.take() {
            self.inner.signal.stop();
            // A writer that panicked poisoned the store's lock already.
            let _ = t.join();
        }
    }
}

/// Where the device of a `Db` was, once [`Db::into_device`] took it.
struct Detached;

impl BlockDevice for Detached {
    fn geometry(&self) -> Geometry {
        Geometry {
            sector_size: 512,
            erase_unit: None,
            capacity: 0,
            program_once: false,
        }
    }
    fn read_at(&mut self, _: u64, _: u64, _: &mut [u8]) -> Result<Completion> {
        Err(DeviceError::Unsupported(
            "the device was taken from the store",
        ))
    }
    fn write_at(&mut self, _: u64, _: u64, _: &[u8]) -> Result<Completion> {
        Err(DeviceError::Unsupported(
            "the device was taken from the store",
        ))
    }
    fn flush_at(&mut self, _: u64) -> Result<Completion> {
        Err(DeviceError::Unsupported(
            "the device was taken from the store",
        ))
    }
    fn trim_at(&mut self, _: u64, _: u64, _: u64) -> Result<Completion> {
        Err(DeviceError::Unsupported(
            "the device was taken from the store",
        ))
    }
    fn clock(&self) -> u64 {
        0
    }
    fn stats(&self) -> DeviceStats {
        DeviceStats::default()
    }
}

/// The mark a closed or dropped store leaves at the end of its log: an
/// images record of no page, which nothing else writes (a write back logs
/// at least one image) and which replays as nothing.
pub(super) fn end_mark() -> Vec<u8> {
    redo::Writer::images(0, 0).finish()
}

/// Whether `r` is the mark a closed or dropped store left: its log ends
/// there.
pub(super) fn is_end_mark(r: &Logged) -> bool {
    r.kind == redo::IMAGES_RECORD && r.payload == end_mark()
}

impl Core {
    /// Appends the end mark ([`is_end_mark`]) after the log's last record,
    /// unflushed. Its durable distance says which records a flush made
    /// durable, and recovery tells a durable record that a write lost (or
    /// sent elsewhere) from a torn tail only by a later record like it,
    /// which a store dropped right after its last flush would otherwise not
    /// have; and a log that ends with it needs no search past its end.
    ///
    /// A mark the device lost vouches for nothing, so it is read back, and
    /// written again (as the next record) up to [`MARKS`] times. Best
    /// effort: without a mark, recovery searches past the end as it does
    /// after a crash.
    pub(super) fn mark_log_end(&mut self) {
        let mark = end_mark();
        for _ in 0..MARKS {
            if self.disk.journal.is_none() || self.disk.append(redo::IMAGES_RECORD, &mark).is_err()
            {
                return;
            }
            let Some(w) = self.disk.journal.take() else {
                return;
            };
            let landed = w.last_reads_back(&mut self.disk, mark.len());
            self.disk.journal = Some(w);
            if !matches!(landed, Ok(false)) {
                return;
            }
        }
    }
}
