//! Ctrl-C during a long run. Long calls run without the GIL; a device
//! wrapped in [`Interruptible`] takes the GIL back every few thousand
//! operations to run Python's signal handlers, and a raised
//! `KeyboardInterrupt` fails the operation, which ends the run where it
//! is. The caller then raises the stored exception instead of the device
//! error it caused.

use std::sync::{Arc, Mutex};

use flashkv_device::{
    BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, QueuedIo, Result,
};
use pyo3::prelude::*;

/// Operations between two looks at Python's signals.
const EVERY: u32 = 4096;

/// What stopped a run, shared between a wrapper and its caller.
#[derive(Clone, Default)]
pub struct Stop(Arc<Mutex<Option<PyErr>>>);

impl Stop {
    /// Runs Python's signal handlers; `false` (and the exception kept)
    /// if one raised.
    pub fn check(&self) -> bool {
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => true,
            Err(e) => {
                *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                false
            }
        }
    }

    /// The exception a signal handler raised, if one did.
    pub fn take(&self) -> Option<PyErr> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// `r`, or the interrupt that cut it short.
    pub fn result<T>(&self, r: std::result::Result<T, PyErr>) -> PyResult<T> {
        match self.take() {
            Some(e) => Err(e),
            None => r,
        }
    }
}

/// A device that looks at Python's signals every [`EVERY`] operations.
pub struct Interruptible<D> {
    pub inner: D,
    stop: Stop,
    ops: u32,
}

impl<D: BlockDevice> Interruptible<D> {
    pub fn new(inner: D, stop: Stop) -> Self {
        Interruptible {
            inner,
            stop,
            ops: 0,
        }
    }

    fn tick(&mut self) -> Result<()> {
        self.ops += 1;
        if self.ops < EVERY {
            return Ok(());
        }
        self.ops = 0;
        if self.stop.check() {
            Ok(())
        } else {
            Err(DeviceError::BadInput("interrupted".into()))
        }
    }
}

impl<D: BlockDevice> BlockDevice for Interruptible<D> {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        self.tick()?;
        self.inner.read_at(at, offset, buf)
    }
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.tick()?;
        self.inner.write_at(at, offset, buf)
    }
    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.inner.flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.tick()?;
        self.inner.trim_at(at, offset, len)
    }
    fn erase_at(&mut self, at: Nanos, unit: u64) -> Result<Completion> {
        self.tick()?;
        self.inner.erase_at(at, unit)
    }
    fn is_programmed(&self, offset: u64, len: u64) -> bool {
        self.inner.is_programmed(offset, len)
    }
    fn clock(&self) -> Nanos {
        self.inner.clock()
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
    fn reorders_queue(&self) -> bool {
        self.inner.reorders_queue()
    }
    fn pick_next(&self, at: Nanos, queued: &[QueuedIo]) -> usize {
        self.inner.pick_next(at, queued)
    }
    fn busy_until(&self) -> Nanos {
        self.inner.busy_until()
    }
    fn fill_sequential(&mut self, len: u64) -> Result<bool> {
        self.inner.fill_sequential(len)
    }
}
