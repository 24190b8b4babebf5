//! A device handle shared between a test and the store that owns a box of it.

use std::sync::{Arc, Mutex, MutexGuard};

use flashkv_device::{BlockDevice, Completion, DeviceStats, Geometry, Nanos, Result, Syncer};

/// Clones share one device; [`Shared::take`] removes it (after the store
/// is gone), and every later call through a clone panics.
pub struct Shared<D> {
    dev: Arc<Mutex<Option<D>>>,
    /// Offer a [`Syncer`], as a real file does, so a store flushes its
    /// durable commits outside its lock (group commit).
    syncer: bool,
}

impl<D> Clone for Shared<D> {
    fn clone(&self) -> Self {
        Shared {
            dev: self.dev.clone(),
            syncer: self.syncer,
        }
    }
}

impl<D: BlockDevice + 'static> Shared<D> {
    pub fn new(dev: D) -> Self {
        Shared {
            dev: Arc::new(Mutex::new(Some(dev))),
            syncer: false,
        }
    }

    /// A handle that offers a syncer (flushing the device at its clock).
    pub fn grouped(dev: D) -> Self {
        Shared {
            syncer: true,
            ..Shared::new(dev)
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<D>> {
        // A panic injected inside a device call poisons the lock; the
        // device is still whole (the panic came before any change).
        self.dev.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut D) -> T) -> T {
        f(self.lock().as_mut().expect("device taken"))
    }

    /// The device, leaving the handle empty.
    pub fn take(&self) -> D {
        self.lock().take().expect("device taken")
    }
}

impl<D: BlockDevice + 'static> BlockDevice for Shared<D> {
    fn syncer(&self) -> Option<Syncer> {
        let me = self.clone();
        self.syncer
            .then(|| Arc::new(move || me.with(|d| d.flush().map(drop))) as Syncer)
    }
    fn geometry(&self) -> Geometry {
        self.with(|d| d.geometry())
    }
    fn read_at(&mut self, at: Nanos, o: u64, b: &mut [u8]) -> Result<Completion> {
        self.with(|d| d.read_at(at, o, b))
    }
    fn write_at(&mut self, at: Nanos, o: u64, b: &[u8]) -> Result<Completion> {
        self.with(|d| d.write_at(at, o, b))
    }
    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        self.with(|d| d.flush_at(at))
    }
    fn trim_at(&mut self, at: Nanos, o: u64, l: u64) -> Result<Completion> {
        self.with(|d| d.trim_at(at, o, l))
    }
    fn erase_at(&mut self, at: Nanos, u: u64) -> Result<Completion> {
        self.with(|d| d.erase_at(at, u))
    }
    fn is_programmed(&self, o: u64, l: u64) -> bool {
        self.with(|d| d.is_programmed(o, l))
    }
    fn clock(&self) -> Nanos {
        self.with(|d| d.clock())
    }
    fn stats(&self) -> DeviceStats {
        self.with(|d| d.stats())
    }
    fn energy_nj_until(&self, t: Nanos) -> u64 {
        self.with(|d| d.energy_nj_until(t))
    }
    fn advance_to(&mut self, t: Nanos) {
        self.with(|d| d.advance_to(t))
    }
    fn set_standby_after(&mut self, after: Option<Nanos>) -> Result<()> {
        self.with(|d| d.set_standby_after(after))
    }
    fn tiers(&self) -> Option<flashkv_device::Tiers> {
        self.with(|d| d.tiers())
    }
}
