//! Requests that cover a 4 KiB mapping unit only in part: reads take what
//! they need from whole units, writes read the units at their ends first,
//! trims zero the partial units and trim the whole ones.

use flashkv_device::{Completion, Nanos};

use crate::device::{HybridDevice, Span};
use crate::error::Result;

impl HybridDevice {
    /// The range rounded out to whole mapping units.
    fn units(&self, offset: u64, len: u64) -> (u64, u64) {
        let u = self.layout.sector;
        let a = offset / u * u;
        (a, (offset + len).div_ceil(u) * u - a)
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

    /// Writes any sector-aligned range: partial units are read first and merged.
    pub(crate) fn write_range(&mut self, at: Nanos, offset: u64, buf: &[u8]) -> Result<Completion> {
        let len = buf.len() as u64;
        let (a, n) = self.units(offset, len);
        if len == 0 {
            return Ok(Span::new(at).done(at));
        }
        if (a, n) == (offset, len) {
            return self.write_inner(at, offset, buf);
        }
        let u = self.layout.sector as usize;
        let mut whole = vec![0u8; n as usize];
        let mut span = Span::new(at);
        let mut t = at;
        let head = offset != a;
        if head {
            let c = self.read_inner(at, a, &mut whole[..u], false)?;
            span.add(c);
            t = t.max(c.end);
        }
        let tail = a + n - u as u64;
        if offset + len != a + n && !(head && tail == a) {
            let c = self.read_inner(at, tail, &mut whole[n as usize - u..], false)?;
            span.add(c);
            t = t.max(c.end);
        }
        let from = (offset - a) as usize;
        whole[from..from + buf.len()].copy_from_slice(buf);
        span.add(self.write_inner(t, a, &whole)?);
        Ok(span.done(at))
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
