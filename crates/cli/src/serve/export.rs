//! The served device: a window `[base, base + size)` of a [`BlockDevice`],
//! taking requests at any byte offset and length. Requests that are not
//! whole sectors become a read-modify-write of the sectors they cover, so
//! clients that ignore the advertised block size still work.

use flashkv_device::{BlockDevice, Completion, DeviceError, Nanos};

use super::nbd::{EINVAL, EIO, EPERM};

pub struct Export {
    dev: Box<dyn BlockDevice>,
    base: u64,
    size: u64,
    sector: u64,
}

/// Why a request failed, as the NBD error number the client gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub u32);

impl From<DeviceError> for Errno {
    fn from(e: DeviceError) -> Self {
        match e {
            DeviceError::OutOfRange { .. } | DeviceError::Misaligned { .. } => Errno(EINVAL),
            DeviceError::Unsupported(_) => Errno(EPERM),
            other => {
                // A failing device is worth a line; the client only sees EIO.
                eprintln!("serve: device error: {other}");
                Errno(EIO)
            }
        }
    }
}

impl Export {
    /// Serves `size` bytes of `dev` from `base`, which is sector aligned.
    pub fn new(dev: Box<dyn BlockDevice>, base: u64, size: u64) -> Self {
        let g = dev.geometry();
        let sector = u64::from(g.sector_size);
        assert!(
            base % sector == 0,
            "export base {base} is not sector aligned"
        );
        assert!(base + size <= g.capacity, "export runs past the device");
        Export {
            dev,
            base,
            size,
            sector,
        }
    }

    pub fn sector(&self) -> u64 {
        self.sector
    }

    pub fn clock(&self) -> Nanos {
        self.dev.clock()
    }

    pub fn device(&self) -> &dyn BlockDevice {
        &*self.dev
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), Errno> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Errno(EINVAL)),
        }
    }

    /// The whole sectors covering `[offset, offset + len)`.
    fn covering(&self, offset: u64, len: u64) -> (u64, u64) {
        let start = offset / self.sector * self.sector;
        let end = (offset + len).div_ceil(self.sector) * self.sector;
        (start, end)
    }

    pub fn read(&mut self, at: Nanos, offset: u64, buf: &mut [u8]) -> Result<Completion, Errno> {
        let len = buf.len() as u64;
        self.check(offset, len)?;
        if len == 0 {
            return Ok(idle(at));
        }
        let (start, end) = self.covering(offset, len);
        if (start, end) == (offset, offset + len) {
            return Ok(self.dev.read_at(at, self.base + offset, buf)?);
        }
        let mut whole = vec![0u8; (end - start) as usize];
        let c = self.dev.read_at(at, self.base + start, &mut whole)?;
        let from = (offset - start) as usize;
        buf.copy_from_slice(&whole[from..from + buf.len()]);
        Ok(c)
    }

    pub fn write(&mut self, at: Nanos, offset: u64, data: &[u8]) -> Result<Completion, Errno> {
        let len = data.len() as u64;
        self.check(offset, len)?;
        if len == 0 {
            return Ok(idle(at));
        }
        let (start, end) = self.covering(offset, len);
        if (start, end) == (offset, offset + len) {
            return Ok(self.dev.write_at(at, self.base + offset, data)?);
        }
        let mut whole = vec![0u8; (end - start) as usize];
        let r = self.dev.read_at(at, self.base + start, &mut whole)?;
        let from = (offset - start) as usize;
        whole[from..from + data.len()].copy_from_slice(data);
        let w = self.dev.write_at(r.end, self.base + start, &whole)?;
        Ok(Completion {
            start: r.start,
            end: w.end,
            energy_nj: r.energy_nj + w.energy_nj,
        })
    }

    pub fn flush(&mut self, at: Nanos) -> Result<Completion, Errno> {
        Ok(self.dev.flush_at(at)?)
    }

    /// Trims the whole sectors inside the range; a trim is advisory, so
    /// partial sectors at its ends keep their data.
    pub fn trim(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion, Errno> {
        self.check(offset, len)?;
        let start = offset.div_ceil(self.sector) * self.sector;
        let end = (offset + len) / self.sector * self.sector;
        if end <= start {
            return Ok(idle(at));
        }
        Ok(self.dev.trim_at(at, self.base + start, end - start)?)
    }
}

/// A request that needs nothing from the device.
fn idle(at: Nanos) -> Completion {
    Completion {
        start: at,
        end: at,
        energy_nj: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashkv_device::presets;

    fn export() -> Export {
        let dev = presets::open("nvme").unwrap();
        let sector = u64::from(dev.geometry().sector_size);
        Export::new(Box::new(dev), sector, 1 << 20)
    }

    #[test]
    fn unaligned_requests_read_modify_write_inside_the_window() {
        let mut e = export();
        let s = e.sector() as usize;
        e.write(0, 0, &vec![1u8; 2 * s]).unwrap();
        e.write(0, 3, &[9u8; 5]).unwrap();
        let mut b = vec![0u8; 10];
        e.read(0, 0, &mut b).unwrap();
        assert_eq!(b, [1, 1, 1, 9, 9, 9, 9, 9, 1, 1]);
        // The window starts one sector in: device offset 0 is untouched.
        let mut raw = vec![0u8; s];
        e.dev.read(0, &mut raw).unwrap();
        assert_eq!(raw, vec![0u8; s]);
    }

    #[test]
    fn out_of_range_is_einval_and_trim_keeps_partial_sectors() {
        let mut e = export();
        let s = e.sector();
        let mut b = vec![0u8; 8];
        assert_eq!(e.read(0, (1 << 20) - 4, &mut b), Err(Errno(EINVAL)));
        assert_eq!(e.write(0, u64::MAX - 2, &b), Err(Errno(EINVAL)));
        assert_eq!(e.trim(0, 1 << 20, 1).unwrap_err(), Errno(EINVAL));
        e.write(0, 0, &vec![5u8; 3 * s as usize]).unwrap();
        e.trim(0, 1, 2 * s).unwrap();
        let mut all = vec![0u8; 3 * s as usize];
        e.read(0, 0, &mut all).unwrap();
        let (s, all) = (s as usize, all);
        assert!(
            all[..s].iter().all(|&x| x == 5),
            "first partial sector kept"
        );
        assert!(
            all[s..2 * s].iter().all(|&x| x == 0),
            "whole sector trimmed"
        );
        assert!(
            all[2 * s..].iter().all(|&x| x == 5),
            "last partial sector kept"
        );
    }
}
