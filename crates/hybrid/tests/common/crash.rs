//! A crash harness: devices whose writes stay volatile until a flush, and that
//! lose power after a given number of operations. A power cut keeps a random
//! subset of the volatile writes, tearing some at sector granularity.

use std::sync::{Arc, Mutex};

use flashkv_device::{BlockDevice, Completion, DeviceError, DeviceStats, Geometry, Nanos, Result};
use rand::Rng;

const SECTOR: usize = 512;

/// Operations left before the power goes (shared by every device of a machine).
pub struct Power {
    pub ops_left: u64,
}

pub struct Disk {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<(u64, Vec<u8>)>,
}

/// A device on a [`Disk`].
pub struct CrashDevice {
    disk: Arc<Mutex<Disk>>,
    power: Arc<Mutex<Power>>,
    clock: Nanos,
    per_op: Nanos,
    ns_per_byte: Nanos,
    stats: DeviceStats,
}

impl CrashDevice {
    /// A device holding `image`, all of it durable.
    pub fn new(
        image: Vec<u8>,
        power: Arc<Mutex<Power>>,
        per_op: Nanos,
        ns_per_byte: Nanos,
    ) -> (Self, Arc<Mutex<Disk>>) {
        let disk = Arc::new(Mutex::new(Disk {
            durable: image.clone(),
            current: image,
            pending: Vec::new(),
        }));
        (
            CrashDevice {
                disk: disk.clone(),
                power,
                clock: 0,
                per_op,
                ns_per_byte,
                stats: DeviceStats::default(),
            },
            disk,
        )
    }

    fn step(&mut self, at: Nanos, bytes: usize) -> Result<Completion> {
        let mut p = self.power.lock().unwrap();
        if p.ops_left == 0 {
            return Err(DeviceError::Crashed);
        }
        p.ops_left -= 1;
        let start = at.max(self.clock);
        self.clock = start + self.per_op + bytes as Nanos * self.ns_per_byte;
        Ok(Completion {
            start,
            end: self.clock,
            energy_nj: 0,
        })
    }
}

impl Disk {
    /// Everything written so far, as if it had all been flushed.
    pub fn current(&self) -> Vec<u8> {
        self.current.clone()
    }

    /// What survives a power cut.
    pub fn after_crash(&self, rng: &mut impl Rng) -> Vec<u8> {
        let mut img = self.durable.clone();
        for (off, data) in &self.pending {
            match rng.gen_range(0..4) {
                0 => {} // lost
                1 => {
                    // torn: any subset of its sectors
                    for (i, s) in data.chunks(SECTOR).enumerate() {
                        if rng.gen_bool(0.5) {
                            let o = *off as usize + i * SECTOR;
                            img[o..o + s.len()].copy_from_slice(s);
                        }
                    }
                }
                _ => img[*off as usize..*off as usize + data.len()].copy_from_slice(data),
            }
        }
        img
    }
}

impl Disk {
    /// Writes since the last flush.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// What survives a power cut that keeps exactly the pending writes
    /// `keep` picks (by index, oldest first).
    pub fn after_crash_keeping(&self, keep: impl Fn(usize) -> bool) -> Vec<u8> {
        let mut img = self.durable.clone();
        for (i, (off, data)) in self.pending.iter().enumerate() {
            if keep(i) {
                img[*off as usize..*off as usize + data.len()].copy_from_slice(data);
            }
        }
        img
    }
}

impl BlockDevice for CrashDevice {
    fn geometry(&self) -> Geometry {
        Geometry {
            sector_size: SECTOR as u32,
            erase_unit: None,
            capacity: self.disk.lock().unwrap().current.len() as u64,
            program_once: false,
        }
    }
    fn read_at(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let c = self.step(at, buf.len())?;
        let d = self.disk.lock().unwrap();
        buf.copy_from_slice(&d.current[offset as usize..offset as usize + buf.len()]);
        self.stats.host_reads += 1;
        Ok(c)
    }
    fn write_at(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        self.geometry().check(offset, buf.len() as u64)?;
        let c = self.step(at, buf.len())?;
        let mut d = self.disk.lock().unwrap();
        d.current[offset as usize..offset as usize + buf.len()].copy_from_slice(buf);
        d.pending.push((offset, buf.to_vec()));
        self.stats.host_writes += 1;
        Ok(c)
    }
    fn flush_at(&mut self, at: Nanos) -> Result<Completion> {
        let c = self.step(at, 0)?;
        let mut d = self.disk.lock().unwrap();
        d.durable = d.current.clone();
        d.pending.clear();
        Ok(c)
    }
    fn trim_at(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        self.write_at(at, offset, &vec![0u8; len as usize])
    }
    fn clock(&self) -> Nanos {
        self.clock
    }
    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }
}
