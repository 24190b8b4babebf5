//! Requests that cover a 4 KiB mapping unit only in part: reads take what
//! they need from whole units (a unit cached in part is read from the HDD
//! with its cached sectors laid over), writes log exactly the host sectors
//! they cover with a missing mask for the rest (never reading the HDD),
//! trims zero the partial units and trim the whole ones.

use flashkv_device::{Completion, Nanos};

use crate::device::{HybridDevice, Span};
use crate::error::Result;
use crate::maps::decode;

impl HybridDevice {
    /// The range rounded out to whole mapping units.
    fn units(&self, offset: u64, len: u64) -> (u64, u64) {
        let u = self.layout.sector;
        let a = offset / u * u;
        let n = (offset + len).div_ceil(u) * u - a;
        debug_assert!(a <= offset && offset + len <= a + n && n % u == 0);
        (a, n)
    }

    pub(crate) fn read_range(
        &mut self,
        at: Nanos,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Completion> {
        let (a, n) = self.units(offset, buf.len() as u64);
        if buf.is_empty() {
            return Ok(Span::new(at).done(at));
        }
        if (a, n) == (offset, buf.len() as u64) {
            return self.read_inner(at, offset, buf, true);
        }
        let mut whole = vec![0u8; n as usize];
        let c = self.read_inner(at, a, &mut whole, true)?;
        let from = (offset - a) as usize;
        buf.copy_from_slice(&whole[from..from + buf.len()]);
        Ok(c)
    }

    /// Writes any range of whole host sectors.
    pub(crate) fn write_range(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        if buf.is_empty() {
            return Ok(Span::new(at).done(at));
        }
        self.write_inner(at, offset, buf)
    }

    /// The host sectors of `unit` that `[offset, end)` covers, as a mask.
    fn covered(&self, unit: u64, offset: u64, end: u64) -> u8 {
        let (u, hs) = (self.layout.sector, self.host_sector);
        let lo = offset.max(unit * u).min((unit + 1) * u);
        let hi = end.clamp(lo, (unit + 1) * u);
        let (a, b) = ((lo - unit * u) / hs, (hi - unit * u) / hs);
        debug_assert!(a <= b && b <= 8, "sectors {a}..{b} of a unit");
        (((1u16 << b) - 1) & !((1u16 << a) - 1)) as u8
    }

    /// Appends host data at `offset` to the log. A unit it covers only in
    /// part is merged with the unit's cached copy (read from the SSD) if
    /// there is one; the sectors neither holds are recorded as missing, and
    /// stay on the HDD.
    pub(crate) fn log_units(
        &mut self,
        t: &mut Nanos,
        offset: u64,
        data: &[u8],
        span: &mut Span,
    ) -> Result<()> {
        let u = self.layout.sector;
        let end = offset + data.len() as u64;
        assert!(!data.is_empty(), "a write of no data logs nothing");
        let (first, last) = (offset / u, (end - 1) / u);
        let mut whole = vec![0u8; ((last - first + 1) * u) as usize];
        let full = self.full_mask();
        let mut missing = [0u8; 2];
        let issue = *t;
        for (k, unit) in [first, last].into_iter().enumerate() {
            let m_new = full & !self.covered(unit, offset, end);
            if m_new == 0 || (k == 1 && last == first) {
                continue;
            }
            let (m, mut io) = mio!(self, *t);
            let cached = decode(m.fwd_get(&mut io, unit)?);
            *t = io.t;
            missing[k] = match cached {
                Some(e) => {
                    let at = ((unit - first) * u) as usize;
                    let old = &mut whole[at..at + u as usize];
                    let r = self.read_units(issue.max(*t), e.value, old)?;
                    span.add(r);
                    *t = (*t).max(r.end);
                    self.st.merge_reads += 1;
                    e.missing & m_new
                }
                None => m_new,
            };
        }
        let from = (offset - first * u) as usize;
        whole[from..from + data.len()].copy_from_slice(data);
        let mut extents = Vec::with_capacity(3);
        let mut middle = (first, last + 1);
        if missing[0] != 0 {
            extents.push((first, 1, missing[0]));
            middle.0 += 1;
        }
        if missing[1] != 0 && last > first {
            middle.1 -= 1;
        }
        if middle.0 < middle.1 {
            extents.push((middle.0, middle.1 - middle.0, 0));
        }
        if missing[1] != 0 && last > first {
            extents.push((last, 1, missing[1]));
        }
        debug_assert_eq!(
            extents.iter().map(|e| e.1).sum::<u64>(),
            last - first + 1,
            "the extents cover the units written"
        );
        self.st.partial_units += extents.iter().filter(|e| e.2 != 0).count() as u64;
        self.append_data(t, &extents, &whole, data.len() as u64, span)
    }

    /// Lays the cached sectors of units cached in part over what was read
    /// from the HDD into `buf` (whole units from unit 0 of `buf`).
    pub(crate) fn overlay(
        &mut self,
        t: Nanos,
        buf: &mut [u8],
        overlays: &[(u64, u64, u8)],
        span: &mut Span,
    ) -> Result<()> {
        let (u, hs) = (self.layout.sector as usize, self.host_sector as usize);
        let mut copy = vec![0u8; u];
        for &(i, slot, missing) in overlays {
            span.add(self.read_units(t, slot, &mut copy)?);
            let unit = &mut buf[i as usize * u..(i as usize + 1) * u];
            debug_assert!(
                missing != 0 && missing != self.full_mask(),
                "cached in part"
            );
            for k in (0..u / hs).filter(|k| missing >> k & 1 == 0) {
                unit[k * hs..(k + 1) * hs].copy_from_slice(&copy[k * hs..(k + 1) * hs]);
                self.st.read_hit_bytes += hs as u64;
                self.st.read_miss_bytes -= hs as u64;
            }
        }
        Ok(())
    }

    /// Trims whole units inside the range and zeroes the partial ones at its ends.
    pub(crate) fn trim_range(&mut self, at: Nanos, offset: u64, len: u64) -> Result<Completion> {
        let u = self.layout.sector;
        let end = offset + len;
        let (lo, hi) = (offset.div_ceil(u) * u, end / u * u);
        if lo >= hi {
            return self.write_range(at, offset, &vec![0u8; len as usize]);
        }
        let mut span = Span::new(at);
        span.add(self.trim_inner(at, lo, hi - lo)?);
        if offset < lo {
            span.add(self.write_range(at, offset, &vec![0u8; (lo - offset) as usize])?);
        }
        if hi < end {
            span.add(self.write_range(at, hi, &vec![0u8; (end - hi) as usize])?);
        }
        Ok(span.done(at))
    }
}
