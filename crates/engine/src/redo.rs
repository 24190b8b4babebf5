//! The write-ahead log record of a committed batch.
//!
//! It holds the tree's state after the batch and, for every page the batch
//! changed, either the page's whole image or the operations ([`Op`]) the
//! batch applied to it. A page's first change after a checkpoint is always
//! an image (as is a page rewritten whole), so recovery rebuilds every page
//! changed since the checkpoint from the log alone — its image, then the
//! operations after it, in log order — and never from the page store's
//! copy, which may be torn or newer than the log. Later changes cost their
//! operations (a few hundred bytes), not a page.
//!
//! Layout (little endian): root, next page, next auto key, free-list head
//! (u64 each), entry count (u32), then per entry: tag (0 image, 1
//! operations), page id (u64), length (u32) and the data: a sealed page
//! image, or an operation count (u16) and the encoded operations.

use crate::btree::Meta;
use crate::error::{corrupt, Result};
use crate::page::{Op, Page, PageId};

/// Write-ahead log record kind of a batch of images and operations.
pub(crate) const REDO_RECORD: u8 = 4;
const META_BYTES: usize = 36;
const IMAGE: u8 = 0;
const OPS: u8 = 1;
const ENTRY_HDR: usize = 13;

/// What a record says happened to one page.
#[derive(Debug)]
pub(crate) enum Entry {
    Image(Page),
    Ops(PageId, Vec<Op>),
}

/// Builds a record: [`Writer::image`] and [`Writer::ops`] per page, then
/// [`Writer::finish`].
pub(crate) struct Writer {
    buf: Vec<u8>,
    entries: u32,
}

impl Writer {
    pub fn new(meta: &Meta, capacity: usize) -> Writer {
        let mut buf = Vec::with_capacity(META_BYTES + capacity);
        for v in [meta.root, meta.next_page, meta.next_auto, meta.free_head] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&0u32.to_le_bytes());
        Writer { buf, entries: 0 }
    }

    fn entry(&mut self, tag: u8, id: PageId, len: usize) {
        self.buf.push(tag);
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        self.entries += 1;
    }

    /// The whole page, sealed with its checksum.
    pub fn image(&mut self, p: &Page) {
        self.entry(IMAGE, p.id(), p.bytes().len());
        let at = self.buf.len();
        self.buf.extend_from_slice(p.bytes());
        let c = crc32c::crc32c(&self.buf[at + 4..]);
        self.buf[at..at + 4].copy_from_slice(&c.to_le_bytes());
    }

    /// `count` encoded operations applied to page `id`.
    pub fn ops(&mut self, id: PageId, count: u16, ops: &[u8]) {
        self.entry(OPS, id, 2 + ops.len());
        self.buf.extend_from_slice(&count.to_le_bytes());
        self.buf.extend_from_slice(ops);
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf[32..36].copy_from_slice(&self.entries.to_le_bytes());
        self.buf
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// Decodes a record; any malformed byte is a corruption error.
pub(crate) fn decode(b: &[u8], page_size: usize) -> Result<(Meta, Vec<Entry>)> {
    if b.len() < META_BYTES {
        return Err(corrupt("redo record truncated"));
    }
    let meta = Meta {
        root: u64_at(b, 0),
        next_page: u64_at(b, 8),
        next_auto: u64_at(b, 16),
        free_head: u64_at(b, 24),
    };
    let n = u32::from_le_bytes(b[32..36].try_into().expect("4 bytes")) as usize;
    let mut rest = &b[META_BYTES..];
    let mut entries = Vec::with_capacity(n.min(rest.len() / ENTRY_HDR));
    for _ in 0..n {
        if rest.len() < ENTRY_HDR {
            return Err(corrupt("redo record entry truncated"));
        }
        let (tag, id) = (rest[0], u64_at(rest, 1));
        let len = u32::from_le_bytes(rest[9..13].try_into().expect("4 bytes")) as usize;
        let data = rest
            .get(ENTRY_HDR..ENTRY_HDR + len)
            .ok_or_else(|| corrupt("redo record entry longer than the record"))?;
        entries.push(match tag {
            IMAGE if len == page_size => Entry::Image(Page::from_bytes(data.into(), id)?),
            OPS if len >= 2 => {
                let count = u16::from_le_bytes([data[0], data[1]]) as usize;
                Entry::Ops(id, Op::decode_all(&data[2..], count)?)
            }
            _ => return Err(corrupt("redo record entry malformed")),
        });
        rest = &rest[ENTRY_HDR + len..];
    }
    if !rest.is_empty() {
        return Err(corrupt("redo record longer than its entries"));
    }
    Ok((meta, entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::Kind;
    use proptest::prelude::*;

    fn meta() -> Meta {
        Meta {
            root: 1,
            next_page: 9,
            next_auto: 3,
            free_head: u64::MAX,
        }
    }

    #[test]
    fn records_roundtrip() {
        let mut page = Page::new(512, 4, Kind::Leaf);
        page.insert_at(0, b"k", b"v");
        let mut ops = Vec::new();
        let op = Op::Insert(b"a".to_vec(), b"b".to_vec());
        op.encode(&mut ops);
        let mut w = Writer::new(&meta(), 0);
        w.image(&page);
        w.ops(7, 1, &ops);
        let (m, entries) = decode(&w.finish(), 512).unwrap();
        assert_eq!(m, meta());
        assert!(matches!(&entries[0], Entry::Image(p) if p.id() == 4 && p.key(0) == b"k"));
        assert!(matches!(&entries[1], Entry::Ops(7, o) if o == &vec![op.clone()]));
        assert_eq!(entries.len(), 2);
    }

    proptest! {
        #[test]
        fn decoder_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..700)) {
            let _ = decode(&bytes, 512);
        }

        #[test]
        fn decoder_survives_damaged_records(cut in 0usize..600, flip in 0usize..600) {
            let mut page = Page::new(512, 2, Kind::Leaf);
            page.insert_at(0, b"key", b"value");
            let mut ops = Vec::new();
            Op::Delete(b"key".to_vec()).encode(&mut ops);
            let mut w = Writer::new(&meta(), 0);
            w.image(&page);
            w.ops(2, 1, &ops);
            let mut rec = w.finish();
            if let Some(b) = rec.get_mut(flip) {
                *b ^= 0x5A;
            }
            rec.truncate(cut.max(1));
            let _ = decode(&rec, 512);
        }
    }
}
