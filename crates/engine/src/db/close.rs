//! Letting go of a store: the devices handed back as they are, or the end
//! of the log marked when a `Db` is dropped.

use flashkv_device::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Result};

use super::{Core, Db, Devices};
use crate::redo;

/// Writes of the mark a drop leaves at the end of the log, at most.
const MARKS: usize = 3;

impl Db {
    /// The devices as they are; the `Db` left behind writes nothing when
    /// dropped.
    pub(super) fn into_devices(self) -> Devices {
        let mut c = self.core.write().unwrap_or_else(|e| e.into_inner());
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
        if std::thread::panicking() {
            return;
        }
        if let Ok(c) = self.core.get_mut() {
            if !c.poisoned {
                c.mark_log_end();
            }
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

impl Core {
    /// Appends an empty batch after the log's last record, unflushed: its
    /// durable distance says which records a flush made durable. Recovery
    /// tells a durable record that a write lost (or sent elsewhere) from a
    /// torn tail only by such a later record, which a store dropped right
    /// after its last flush would otherwise not have.
    ///
    /// A mark the device lost vouches for nothing, so it is read back, and
    /// written again (as the next record) up to [`MARKS`] times. Best
    /// effort: without a mark, recovery ends the log as it always did.
    fn mark_log_end(&mut self) {
        if self
            .disk
            .journal
            .as_ref()
            .is_none_or(|w| w.written().1 == 0)
        {
            return;
        }
        let end = redo::Writer::new(&self.meta, 0).finish();
        for _ in 0..MARKS {
            if self.disk.append(redo::REDO_RECORD, &end).is_err() {
                return;
            }
            let Some(w) = self.disk.journal.take() else {
                return;
            };
            let landed = w.last_reads_back(&mut self.disk, end.len());
            self.disk.journal = Some(w);
            if !matches!(landed, Ok(false)) {
                return;
            }
        }
    }
}
