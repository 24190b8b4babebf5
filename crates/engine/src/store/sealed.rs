//! What a store that overwrites pages last wrote to each page since it was
//! opened: the checksum it sealed the image with. A write the device lost
//! or sent elsewhere leaves its target holding the page's previous image,
//! whose own checksum and page id are valid; only the checksum the store
//! remembers tells the two apart.
//!
//! Checksums are kept in chunks of [`CHUNK`] pages, allocated as pages in
//! them are written: about 4 bytes per page for the chunks written, and
//! nothing for the rest of the store. A checksum of 0 is not remembered
//! (one image in 2^32 goes unchecked).

use crate::error::{bad_page, Result};
use crate::io::{Disk, Region};
use crate::le::u32_at;
use crate::page::PageId;

/// Reads of a page that does not read back as written before it counts as
/// lost: a read corrupted on its way from the medium reads right again.
pub(crate) const READS: usize = 3;

/// Pages per chunk of checksums.
const CHUNK: usize = 1024;

struct Chunk {
    /// The checksum of each page's last image written (0: none).
    crc: [u32; CHUNK],
    /// Bit per page: written since it was last read back.
    pending: [u64; CHUNK / 64],
}

#[derive(Default)]
pub(crate) struct Sealed {
    chunks: Vec<Option<Box<Chunk>>>,
    /// Chunks with pages written since they were last read back.
    pending: Vec<usize>,
}

impl Sealed {
    /// Whether `img`, read for page `id`, carries the checksum of the image
    /// last written for it (any, for a page not written since open: the
    /// log or a checkpoint's read-back vouches for those).
    pub fn as_written(&self, id: PageId, img: &[u8]) -> bool {
        self.expected(id).is_none_or(|crc| u32_at(img, 0) == crc)
    }

    /// [`Sealed::as_written`], and its bytes match that checksum.
    pub fn reads_back(&self, id: PageId, img: &[u8]) -> bool {
        self.as_written(id, img) && crc32c::crc32c(&img[4..]) == u32_at(img, 0)
    }

    /// Reads page `id` (`len` bytes at `off`) up to `tries` times until it
    /// reads back as written, or fails ([`crate::Error::Corrupt`]).
    pub fn read_back(
        &self,
        disk: &mut Disk,
        (id, off, len): (PageId, u64, usize),
        tries: usize,
    ) -> Result<()> {
        let mut img = vec![0u8; len];
        debug_assert!(len > 4 && tries > 0, "a page is read back");
        for _ in 0..tries {
            disk.read(Region::Meta, off, &mut img)?;
            if self.reads_back(id, &img) {
                return Ok(());
            }
        }
        Err(bad_page(
            id,
            "does not read back as written: the write was lost or went astray",
        ))
    }

    /// Page `id` was written with checksum `crc`.
    pub fn wrote(&mut self, id: PageId, crc: u32) {
        let (c, i) = ((id / CHUNK as u64) as usize, id as usize % CHUNK);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        let chunk = self.chunks[c].get_or_insert_with(|| {
            Box::new(Chunk {
                crc: [0; CHUNK],
                pending: [0; CHUNK / 64],
            })
        });
        chunk.crc[i] = crc;
        if chunk.pending.iter().all(|&w| w == 0) {
            self.pending.push(c);
        }
        chunk.pending[i / 64] |= 1 << (i % 64);
        debug_assert!(
            crc == 0 || self.expected(id) == Some(crc),
            "page {id} remembered"
        );
    }

    /// The checksum page `id` was last written with since open, if known.
    pub fn expected(&self, id: PageId) -> Option<u32> {
        let c = usize::try_from(id / CHUNK as u64).ok()?;
        let crc = self.chunks.get(c)?.as_ref()?.crc[id as usize % CHUNK];
        (crc != 0).then_some(crc)
    }

    /// The pages written since they were last read back, in order, and
    /// forgets them: the caller reads them back.
    pub fn take_unverified(&mut self) -> Vec<PageId> {
        self.pending.sort_unstable();
        let mut ids = Vec::new();
        for c in self.pending.drain(..) {
            let chunk = self.chunks[c]
                .as_mut()
                .expect("a chunk with pages pending was written");
            for (w, bits) in chunk.pending.iter_mut().enumerate() {
                let base = (c * CHUNK + w * 64) as PageId;
                ids.extend((0..64).filter(|b| *bits & (1 << b) != 0).map(|b| base + b));
                *bits = 0;
            }
        }
        debug_assert!(ids.is_sorted(), "pages in order");
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_checksum_per_page() {
        let mut s = Sealed::default();
        let far = 3 * CHUNK as u64 + 65;
        assert_eq!(s.expected(5), None);
        s.wrote(far, 9);
        s.wrote(5, 7);
        s.wrote(5, 8);
        assert_eq!(s.expected(5), Some(8));
        assert_eq!(s.expected(far), Some(9));
        assert_eq!(s.expected(6), None);
        assert_eq!(s.expected(CHUNK as u64 + 1), None, "a chunk never written");
        assert_eq!(s.expected(u64::MAX), None);
        // A checksum of 0 forgets the earlier one rather than keep a wrong one.
        s.wrote(5, 0);
        assert_eq!(s.expected(5), None);
        assert_eq!(s.take_unverified(), [5, far]);
        assert!(s.take_unverified().is_empty());
        s.wrote(far, 10);
        assert_eq!(s.take_unverified(), [far]);
        assert_eq!(s.chunks.iter().flatten().count(), 2, "chunks as written");
    }
}
