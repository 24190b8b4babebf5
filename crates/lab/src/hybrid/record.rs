//! What the lab puts between the engine and the devices: a wrapper that
//! records every request a device serves (for the access-pattern plot and
//! the I/O counts), and a shared handle to the hybrid so its counters can be
//! read while the store owns it.

use std::sync::{Arc, Mutex};

use flashkv_device::{BlockDevice, Completion, DeviceStats, Geometry, Nanos, QueuedIo, Result};

/// One request a device served.
#[derive(Debug, Clone, Copy)]
pub struct Io {
    /// When the device started and finished serving it (virtual ns).
    pub start: Nanos,
    pub end: Nanos,
    pub offset: u64,
    pub len: u64,
    pub write: bool,
}

/// Requests recorded while `on`.
#[derive(Debug, Default)]
pub struct Trace {
    pub on: bool,
    pub ios: Vec<Io>,
}

pub type SharedTrace = Arc<Mutex<Trace>>;

/// Records the reads and writes of `inner` into a trace.
pub struct Recorder {
    inner: Box<dyn BlockDevice>,
    trace: SharedTrace,
}

impl Recorder {
    pub fn new(inner: Box<dyn BlockDevice>) -> (Self, SharedTrace) {
        let trace = SharedTrace::default();
        (
            Recorder {
                inner,
                trace: trace.clone(),
            },
            trace,
        )
    }

    fn note(&self, c: Completion, offset: u64, len: usize, write: bool) {
        let mut t = self.trace.lock().unwrap_or_else(|e| e.into_inner());
        if t.on {
            t.ios.push(Io {
                start: c.start,
                end: c.end,
                offset,
                len: len as u64,
                write,
            });
        }
    }
}

impl BlockDevice for Recorder {
    fn geometry(&self) -> Geometry {
        self.inner.geometry()
    }
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        let c = self.inner.read_at(at, offset, buf)?;
        self.note(c, offset, buf.len(), false);
        Ok(c)
    }
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        let c = self.inner.write_at(at, offset, buf)?;
        self.note(c, offset, buf.len(), true);
        Ok(c)
    }
    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.inner.flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.inner.trim_at(at, offset, len)
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
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.inner.energy_nj_until(t)
    }
    fn advance_to(&mut self, t: Nanos) {
        self.inner.advance_to(t)
    }
    fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        self.inner.set_standby_after(after)
    }
    fn tiers(&self) -> Option<flashkv_device::Tiers> {
        self.inner.tiers()
    }
}

/// A device owned by the store and watched by the lab (its clock, and the
/// hybrid's counters).
pub struct Shared<D>(pub Arc<Mutex<D>>);

impl<D> Clone for Shared<D> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<D: BlockDevice> Shared<D> {
    pub fn new(dev: D) -> Self {
        Shared(Arc::new(Mutex::new(dev)))
    }
    pub fn lock(&self) -> std::sync::MutexGuard<'_, D> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<D: BlockDevice> BlockDevice for Shared<D> {
    fn geometry(&self) -> Geometry {
        self.lock().geometry()
    }
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        self.lock().read_at(at, offset, buf)
    }
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.lock().write_at(at, offset, buf)
    }
    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.lock().flush_at(at)
    }
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.lock().trim_at(at, offset, len)
    }
    fn clock(&self) -> Nanos {
        self.lock().clock()
    }
    fn stats(&self) -> DeviceStats {
        self.lock().stats()
    }
    fn busy_until(&self) -> Nanos {
        self.lock().busy_until()
    }
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.lock().energy_nj_until(t)
    }
    fn advance_to(&mut self, t: Nanos) {
        self.lock().advance_to(t)
    }
    fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        self.lock().set_standby_after(after)
    }
    fn tiers(&self) -> Option<flashkv_device::Tiers> {
        self.lock().tiers()
    }
}
