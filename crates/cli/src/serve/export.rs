//! The served device: a window `[base, base + size)` of a [`BlockDevice`],
//! taking requests at any byte offset and length. Requests that are not
//! whole sectors become a read-modify-write of the sectors they cover, so
//! the server advertises a minimum block size of 1 (and the sector, or
//! 4 KiB, as the preferred size that avoids the read-modify-write).

use flashkv_device::{BlockDevice, Completion, DeviceError, Nanos};

use super::served::Served;

use super::nbd::{EINVAL, EIO, ENOSPC, EPERM};

pub struct Export {
    dev: Served,
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
    pub fn new(dev: Served, base: u64, size: u64) -> Self {
        let g = dev.get().geometry();
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
        self.dev.get().clock()
    }

    pub fn device(&self) -> &dyn BlockDevice {
        self.dev.get()
    }

    pub fn served_mut(&mut self) -> &mut Served {
        &mut self.dev
    }

    pub fn served(&self) -> &Served {
        &self.dev
    }

    /// A read or trim past the end is EINVAL; a write past it is ENOSPC,
    /// as the protocol asks.
    fn check(&self, offset: u64, len: u64, past_end: u32) -> Result<(), Errno> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Errno(past_end)),
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
        self.check(offset, len, EINVAL)?;
        if len == 0 {
            return Ok(idle(at));
        }
        let (start, end) = self.covering(offset, len);
        if (start, end) == (offset, offset + len) {
            return Ok(self.dev.get_mut().read_at(at, self.base + offset, buf)?);
        }
        let mut whole = vec![0u8; (end - start) as usize];
        let c = self
            .dev
            .get_mut()
            .read_at(at, self.base + start, &mut whole)?;
        let from = (offset - start) as usize;
        buf.copy_from_slice(&whole[from..from + buf.len()]);
        Ok(c)
    }

    pub fn write(&mut self, at: Nanos, offset: u64, data: &[u8]) -> Result<Completion, Errno> {
        let len = data.len() as u64;
        self.check(offset, len, ENOSPC)?;
        if len == 0 {
            return Ok(idle(at));
        }
        let (start, end) = self.covering(offset, len);
        if (start, end) == (offset, offset + len) {
            return Ok(self.dev.get_mut().write_at(at, self.base + offset, data)?);
        }
        let mut whole = vec![0u8; (end - start) as usize];
        let r = self
            .dev
            .get_mut()
            .read_at(at, self.base + start, &mut whole)?;
        let from = (offset - start) as usize;
        whole[from..from + data.len()].copy_from_slice(data);
        let w = self
            .dev
            .get_mut()
            .write_at(r.end, self.base + start, &whole)?;
        Ok(Completion {
            start: r.start,
            end: w.end,
            energy_nj: r.energy_nj + w.energy_nj,
        })
    }

    pub fn flush(&mut self, at: Nanos) -> Result<Completion, Errno> {
        Ok(self.dev.get_mut().flush_at(at)?)
    }

    /// Trims the whole sectors inside the range; a trim is advisory, so
    /// partial sectors at its ends keep their data.
    pub fn trim(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion, Errno> {
        self.check(offset, len, EINVAL)?;
        let (start, end) = self.inside(offset, len);
        if end <= start {
            return Ok(idle(at));
        }
        Ok(self
            .dev
            .get_mut()
            .trim_at(at, self.base + start, end - start)?)
    }

    /// The whole sectors inside `[offset, offset + len)` (empty when
    /// `end <= start`).
    fn inside(&self, offset: u64, len: u64) -> (u64, u64) {
        let start = offset.div_ceil(self.sector) * self.sector;
        let end = (offset + len) / self.sector * self.sector;
        (start, end)
    }

    /// Makes the range read back as zeros. Whole sectors are trimmed (the
    /// device reads a trimmed sector as zeros) unless `allocate`
    /// (NBD_CMD_FLAG_NO_HOLE) asks for them to be written; partial sectors
    /// at the ends are written.
    pub fn zero(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        allocate: bool,
    ) -> Result<Completion, Errno> {
        self.check(offset, len, ENOSPC)?;
        let (start, end) = self.inside(offset, len);
        if allocate || end <= start {
            return self.write_zeros(at, offset, len);
        }
        let mut c = self
            .dev
            .get_mut()
            .trim_at(at, self.base + start, end - start)?;
        if offset < start {
            c = join(c, self.write_zeros(at, offset, start - offset)?);
        }
        if offset + len > end {
            c = join(c, self.write_zeros(at, end, offset + len - end)?);
        }
        Ok(c)
    }

    /// Writes zeros over the range, 1 MiB at a time.
    fn write_zeros(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion, Errno> {
        const CHUNK: u64 = 1 << 20;
        let zeros = vec![0u8; len.min(CHUNK) as usize];
        let mut done: Option<Completion> = None;
        let mut pos = offset;
        while pos < offset + len {
            let n = (offset + len - pos).min(CHUNK) as usize;
            let w = self.write(at, pos, &zeros[..n])?;
            done = Some(done.map_or(w, |c| join(c, w)));
            pos += n as u64;
        }
        Ok(done.unwrap_or_else(|| idle(at)))
    }
}

/// Two operations served for one request: from the first start to the
/// last end, with both energies.
pub fn join(a: Completion, b: Completion) -> Completion {
    Completion {
        start: a.start.min(b.start),
        end: a.end.max(b.end),
        energy_nj: a.energy_nj + b.energy_nj,
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
        Export::new(Served::Plain(Box::new(dev)), sector, 1 << 20)
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
        e.dev.get_mut().read(0, &mut raw).unwrap();
        assert_eq!(raw, vec![0u8; s]);
    }

    #[test]
    fn out_of_range_is_einval_and_trim_keeps_partial_sectors() {
        let mut e = export();
        let s = e.sector();
        let mut b = vec![0u8; 8];
        assert_eq!(e.read(0, (1 << 20) - 4, &mut b), Err(Errno(EINVAL)));
        assert_eq!(e.write(0, u64::MAX - 2, &b), Err(Errno(ENOSPC)));
        assert_eq!(e.zero(0, 1 << 20, 1, false), Err(Errno(ENOSPC)));
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

    #[test]
    fn zeroes_trim_whole_sectors_or_write_them_and_keep_neighbours() {
        for allocate in [false, true] {
            let mut e = export();
            let s = e.sector() as usize;
            e.write(0, 0, &vec![7u8; 4 * s]).unwrap();
            let before = e.device().stats();
            // From the middle of sector 0 to the middle of sector 3.
            e.zero(0, (s / 2) as u64, (3 * s) as u64, allocate).unwrap();
            let mut all = vec![0u8; 4 * s];
            e.read(0, 0, &mut all).unwrap();
            assert!(all[..s / 2].iter().all(|&x| x == 7), "head kept");
            assert!(all[s / 2..3 * s + s / 2].iter().all(|&x| x == 0), "zeroed");
            assert!(all[3 * s + s / 2..].iter().all(|&x| x == 7), "tail kept");
            let after = e.device().stats();
            let trims = after.trims - before.trims;
            assert_eq!(trims, u64::from(!allocate), "allocate writes, else trims");
        }
    }
}
