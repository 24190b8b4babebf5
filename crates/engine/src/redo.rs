//! Write-ahead log records of page changes.
//!
//! A batch record holds the tree's state after a committed batch and, for
//! every page the batch changed, either the page's whole image or the
//! operations ([`Op`]) the batch applied to it. An images record holds
//! whole pages only: the images a store that overwrites pages in place
//! logs just before it overwrites them (torn-page protection, the job of
//! InnoDB's double-write buffer, done by the log).
//!
//! Recovery rebuilds a page from its first image in the log since the
//! checkpoint and the operations after it; a page with operations but no
//! image was not written since the checkpoint, so the page store's copy is
//! the state the operations apply to (see `docs/design.md`).
//!
//! Batch layout (little endian): root, next page, next auto key, free-list
//! head (u64 each), entry count (u32), then per entry: tag (0 image, 1
//! operations, 2 image without free space), page id (u64), length (u32)
//! and the data: a sealed page image (tag 0, read still), an operation
//! count (u16) and the encoded operations, or a page's live bytes (tag 2:
//! u32 head length, the head, the tail; the free space between them comes
//! back as zeros and the checksum is recomputed). An images record is the
//! entry count and the entries, all images.

use crate::btree::Meta;
use crate::error::{corrupt, Error, Location, Result, Structure};
use crate::le::{u16_at, u32_at, u64_at};
use crate::memtable::Change;
use crate::page::{Op, Page, PageId};

/// Write-ahead log record kind of a batch of images and operations.
pub(crate) const REDO_RECORD: u8 = 4;
/// Write-ahead log record kind of page images logged before a write back.
pub(crate) const IMAGES_RECORD: u8 = 5;
/// Write-ahead log record kind of the pages a checkpoint carries into the
/// new epoch: a batch record (tree state and images) that commits nothing
/// new, written before the checkpoint's slot.
pub(crate) const CARRY_RECORD: u8 = 6;
/// Bytes an image entry takes at most beyond the page itself: the entry
/// header and the live spans' head length.
pub(crate) const IMAGE_OVERHEAD: usize = ENTRY_HDR + 4;
/// Bytes before the entries of an images record.
pub(crate) const IMAGES_HDR: usize = 4;
/// Bytes of a batch record before its entries: tree state and entry count.
pub(crate) const META_BYTES: usize = 36;
const IMAGE: u8 = 0;
const OPS: u8 = 1;
/// A page image without its free space: u32 head length, head, tail.
const SPANS: u8 = 2;
/// A new page written to the page store before the record: u32 checksum of
/// the image written.
const STORED: u8 = 3;
/// Pairs for the memtable (the id field holds their count): per pair u16
/// key length, u8 tag (1 put, 0 delete), u32 value length, key, value.
const PAIRS: u8 = 4;
/// The memtable was drained into the tree by this batch (no data).
const DRAINED: u8 = 5;
const ENTRY_HDR: usize = 13;
/// Bytes before each pair's key in a pairs entry.
const PAIR_HDR: usize = 7;

/// What a record says happened to one page.
#[derive(Debug)]
pub(crate) enum Entry {
    Image(Page),
    Ops(PageId, Vec<Op>),
    /// A page the batch created, written to the page store (and made
    /// durable) before its record, sealed with this checksum.
    Stored(PageId, u32),
    /// Changes for the memtable: the entry's data, checked to decode
    /// ([`pairs`]).
    Pairs(Vec<u8>),
    /// The memtable was drained into the tree (this record's pages).
    Drained,
}

impl Entry {
    /// The page the entry changes, if it is a page's.
    pub fn page(&self) -> Option<PageId> {
        match self {
            Entry::Image(p) => Some(p.id()),
            Entry::Ops(id, _) | Entry::Stored(id, _) => Some(*id),
            Entry::Pairs(_) | Entry::Drained => None,
        }
    }
}

/// The changes of a pairs entry's data, checked by the decoder.
pub(crate) fn pairs(mut b: &[u8]) -> impl Iterator<Item = Change<'_>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let (kl, put, vl) = (usize::from(u16_at(b, 0)), b[2] == 1, u32_at(b, 3) as usize);
        let (k, v) = (
            &b[PAIR_HDR..PAIR_HDR + kl],
            &b[PAIR_HDR + kl..PAIR_HDR + kl + vl],
        );
        b = &b[PAIR_HDR + kl + vl..];
        Some((k, put.then_some(v)))
    })
}

/// Checks a pairs entry's data: `n` pairs filling it exactly, each key
/// and value within the engine's limits.
fn check_pairs(mut b: &[u8], n: u64) -> std::result::Result<(), &'static str> {
    let mut count = 0u64;
    while !b.is_empty() {
        if b.len() < PAIR_HDR {
            return Err("a pair's header past the end of its entry");
        }
        let (kl, tag, vl) = (usize::from(u16_at(b, 0)), b[2], u32_at(b, 3) as usize);
        if kl > crate::btree::MAX_KEY
            || vl > crate::btree::MAX_VALUE
            || tag > 1
            || (tag == 0 && vl != 0)
        {
            return Err("a pair of unknown kind or length");
        }
        b = b
            .get(PAIR_HDR + kl + vl..)
            .ok_or("a pair longer than its entry")?;
        count += 1;
    }
    match count == n {
        true => Ok(()),
        false => Err("a pairs entry whose count is not its pairs'"),
    }
}

/// Builds a record: [`Writer::image`] and [`Writer::ops`] per page, then
/// [`Writer::finish`].
pub(crate) struct Writer {
    buf: Vec<u8>,
    /// Page size of the images written (0: none yet), to check the record.
    page_size: usize,
    entries: u32,
    /// Where the entries start (after the entry count).
    body_at: usize,
}

impl Writer {
    pub fn new(meta: &Meta, capacity: usize) -> Writer {
        let mut buf = Vec::with_capacity(META_BYTES + capacity);
        for v in [meta.root, meta.next_page, meta.next_auto, meta.free_head] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&0u32.to_le_bytes());
        Writer {
            buf,
            page_size: 0,
            entries: 0,
            body_at: META_BYTES,
        }
    }

    fn entry(&mut self, tag: u8, id: PageId, len: usize) {
        assert!(len <= u32::MAX as usize, "an entry's length fits its field");
        assert_ne!(id, crate::page::NO_PAGE, "an entry names a page");
        self.buf.push(tag);
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        self.entries += 1;
    }

    /// Bytes [`Writer::image`] adds for page `p`.
    pub fn image_len(p: &Page) -> usize {
        let (head, tail) = p.live_spans();
        ENTRY_HDR + 4 + head + p.bytes().len() - tail
    }

    /// Bytes [`Writer::ops`] adds for `ops` bytes of operations.
    pub fn ops_len(ops: &[u8]) -> usize {
        ENTRY_HDR + 2 + ops.len()
    }

    /// The page's image: its live bytes only (the free space between
    /// slots and cells is left out and comes back as zeros).
    pub fn image(&mut self, p: &Page) {
        let (head, tail) = p.live_spans();
        let b = p.bytes();
        assert!(
            self.page_size == 0 || self.page_size == b.len(),
            "one page size per record"
        );
        self.page_size = b.len();
        self.entry(SPANS, p.id(), 4 + head + b.len() - tail);
        self.buf.extend_from_slice(&(head as u32).to_le_bytes());
        self.buf.extend_from_slice(&b[..head]);
        self.buf.extend_from_slice(&b[tail..]);
    }

    /// Page `id`, created by the batch and written to the page store with
    /// checksum `crc` before the record.
    pub fn stored(&mut self, id: PageId, crc: u32) {
        self.entry(STORED, id, 4);
        self.buf.extend_from_slice(&crc.to_le_bytes());
    }

    /// Bytes [`Writer::stored`] adds.
    pub const STORED_LEN: usize = ENTRY_HDR + 4;

    /// Bytes [`Writer::pairs`] adds for `changes`.
    pub fn pairs_len<'a>(changes: impl Iterator<Item = Change<'a>>) -> usize {
        ENTRY_HDR
            + changes
                .map(|(k, v)| PAIR_HDR + k.len() + v.map_or(0, <[u8]>::len))
                .sum::<usize>()
    }

    /// An entry of `changes` for the memtable, `len` bytes
    /// ([`Writer::pairs_len`]).
    pub fn pairs<'a>(&mut self, changes: impl Iterator<Item = Change<'a>> + Clone, len: usize) {
        let n = changes.clone().count();
        self.entry(PAIRS, n as u64, len - ENTRY_HDR);
        let at = self.buf.len();
        for (k, v) in changes {
            let kl = u16::try_from(k.len()).expect("a key fits a page");
            let vl = u32::try_from(v.map_or(0, <[u8]>::len)).expect("a value's length fits");
            self.buf.extend_from_slice(&kl.to_le_bytes());
            self.buf.push(u8::from(v.is_some()));
            self.buf.extend_from_slice(&vl.to_le_bytes());
            self.buf.extend_from_slice(k);
            self.buf.extend_from_slice(v.unwrap_or_default());
        }
        assert_eq!(
            self.buf.len() - at,
            len - ENTRY_HDR,
            "a pairs entry as sized"
        );
    }

    /// Says the memtable was drained into the tree by this batch.
    pub fn drained(&mut self) {
        self.entry(DRAINED, 0, 0);
    }

    /// Bytes [`Writer::drained`] adds.
    pub const DRAINED_LEN: usize = ENTRY_HDR;

    /// `count` encoded operations applied to page `id`.
    pub fn ops(&mut self, id: PageId, count: u16, ops: &[u8]) {
        assert!(
            count > 0 && !ops.is_empty(),
            "page {id}: an entry of no operations"
        );
        self.entry(OPS, id, 2 + ops.len());
        self.buf.extend_from_slice(&count.to_le_bytes());
        self.buf.extend_from_slice(ops);
    }

    /// The record, checked (debug builds) to decode to what was written.
    pub fn finish(mut self) -> Vec<u8> {
        let at = self.body_at - 4;
        self.buf[at..at + 4].copy_from_slice(&self.entries.to_le_bytes());
        debug_assert!(
            decode_entries(&self.buf[at..], self.page_size, 0)
                .is_ok_and(|e| e.len() == self.entries as usize),
            "a record decodes to its {} entries",
            self.entries
        );
        self.buf
    }

    /// A writer of an images record (no tree state), for about `pages` pages.
    pub fn images(pages: usize, page_size: usize) -> Writer {
        let mut buf = Vec::with_capacity(IMAGES_HDR + pages * (page_size + ENTRY_HDR));
        buf.extend_from_slice(&0u32.to_le_bytes());
        Writer {
            buf,
            page_size: 0,
            entries: 0,
            body_at: IMAGES_HDR,
        }
    }

    /// Bytes of the record so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
}

/// The error for record `seq`, which does not decode.
fn bad(seq: u64, why: &'static str) -> Error {
    corrupt(Structure::LogRecord, Location::Record(seq), why)
}

/// Decodes batch record `seq`; any malformed byte is a corruption error.
pub(crate) fn decode(b: &[u8], page_size: usize, seq: u64) -> Result<(Meta, Vec<Entry>)> {
    let meta = decode_meta(b, seq)?;
    Ok((meta, decode_entries(&b[32..], page_size, seq)?))
}

/// The tree state batch record `seq` (of this or an earlier format) starts with.
pub(crate) fn decode_meta(b: &[u8], seq: u64) -> Result<Meta> {
    if b.len() < META_BYTES {
        return Err(bad(seq, "a batch record shorter than its tree state"));
    }
    Ok(Meta {
        root: u64_at(b, 0),
        next_page: u64_at(b, 8),
        next_auto: u64_at(b, 16),
        free_head: u64_at(b, 24),
    })
}

/// Decodes images record `seq`: every entry must be a page image.
pub(crate) fn decode_images(b: &[u8], page_size: usize, seq: u64) -> Result<Vec<Page>> {
    decode_entries(b, page_size, seq)?
        .into_iter()
        .map(|e| match e {
            Entry::Image(p) => Ok(p),
            _ => Err(bad(seq, "an images record holds operations")),
        })
        .collect()
}

/// A page from its live spans: head, zeros, tail; sealed anew (the
/// record's checksum covered the bytes), then validated.
fn from_spans(data: &[u8], page_size: usize, id: PageId, seq: u64) -> Result<Page> {
    let spans = (data.len() >= 4).then(|| (u32_at(data, 0) as usize, &data[4..]));
    let Some((head, rest)) =
        spans.filter(|(head, rest)| *head >= 4 && *head <= rest.len() && rest.len() <= page_size)
    else {
        return Err(bad(seq, "a page image's spans are out of range"));
    };
    let Ok(image) = Page::filled(page_size, |buf| {
        buf[..head].copy_from_slice(&rest[..head]);
        let tail = rest.len() - head;
        buf[page_size - tail..].copy_from_slice(&rest[head..]);
        let c = crc32c::crc32c(&buf[4..]);
        buf[..4].copy_from_slice(&c.to_le_bytes());
        Ok::<(), std::convert::Infallible>(())
    });
    Page::from_bytes(image, id)
}

/// An entry count (u32) and the entries of record `seq`, filling `b` exactly.
fn decode_entries(b: &[u8], page_size: usize, seq: u64) -> Result<Vec<Entry>> {
    if b.len() < 4 {
        return Err(bad(seq, "a record shorter than its entry count"));
    }
    let n = u32_at(b, 0) as usize;
    let mut rest = &b[4..];
    let mut entries = Vec::with_capacity(n.min(rest.len() / ENTRY_HDR));
    for _ in 0..n {
        if rest.len() < ENTRY_HDR {
            return Err(bad(seq, "an entry header past the end of the record"));
        }
        let (tag, id) = (rest[0], u64_at(rest, 1));
        let len = u32_at(rest, 9) as usize;
        let data = rest
            .get(ENTRY_HDR..ENTRY_HDR + len)
            .ok_or_else(|| bad(seq, "an entry longer than the record"))?;
        entries.push(match tag {
            IMAGE if len == page_size => Entry::Image(Page::from_bytes(data.into(), id)?),
            SPANS => Entry::Image(from_spans(data, page_size, id, seq)?),
            OPS if len >= 2 => {
                let count = usize::from(u16_at(data, 0));
                let ops = Op::decode_all(&data[2..], count).map_err(|why| bad(seq, why))?;
                Entry::Ops(id, ops)
            }
            STORED if len == 4 => Entry::Stored(id, u32_at(data, 0)),
            PAIRS => {
                check_pairs(data, id).map_err(|why| bad(seq, why))?;
                Entry::Pairs(data.to_vec())
            }
            DRAINED if len == 0 && id == 0 => Entry::Drained,
            _ => return Err(bad(seq, "an entry of unknown kind or length")),
        });
        rest = &rest[ENTRY_HDR + len..];
    }
    if !rest.is_empty() {
        return Err(bad(seq, "a record longer than its entries"));
    }
    debug_assert_eq!(entries.len(), n, "one entry per count");
    Ok(entries)
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
        let (m, entries) = decode(&w.finish(), 512, 1).unwrap();
        assert_eq!(m, meta());
        assert!(matches!(&entries[0], Entry::Image(p) if p.id() == 4 && p.key(0) == b"k"));
        assert!(matches!(&entries[1], Entry::Ops(7, o) if o == &vec![op.clone()]));
        assert_eq!(entries.len(), 2);
    }

    #[test]
    fn an_image_keeps_every_cell_and_leaves_out_free_space() {
        let mut page = Page::new(4096, 6, Kind::Leaf);
        for i in 0..40u8 {
            page.insert_at(i as usize, &[b'k', i], &[i; 50]);
        }
        for _ in 0..25 {
            page.remove_at(3); // fragmented cells, stale slots in the gap
        }
        let mut w = Writer::images(1, 4096);
        w.image(&page);
        let rec = w.finish();
        let (head, tail) = page.live_spans();
        assert!(tail - head > 1500, "the gap is most of the page");
        assert_eq!(rec.len(), IMAGES_HDR + IMAGE_OVERHEAD + head + 4096 - tail);
        let back = decode_images(&rec, 4096, 1).unwrap().pop().unwrap();
        assert_eq!(back.len(), page.len());
        for i in 0..page.len() {
            assert_eq!((back.key(i), back.val(i)), (page.key(i), page.val(i)));
        }
        // An image written whole (tag 0, earlier builds) still decodes.
        let mut whole = Writer::images(1, 4096);
        whole.page_size = 4096;
        whole.entry(IMAGE, 6, 4096);
        whole.buf.extend_from_slice(page.clone().seal());
        let back = decode_images(&whole.finish(), 4096, 1)
            .unwrap()
            .pop()
            .unwrap();
        assert_eq!(back.bytes(), page.clone().seal());
    }

    #[test]
    fn pairs_and_a_drain_roundtrip_and_damage_is_refused() {
        let changes: Vec<Change> = vec![(b"a", Some(b"1")), (b"", None), (b"ccc", Some(b""))];
        let len = Writer::pairs_len(changes.iter().copied());
        let mut w = Writer::new(&meta(), len + Writer::DRAINED_LEN);
        w.drained();
        w.pairs(changes.iter().copied(), len);
        let rec = w.finish();
        let (_, entries) = decode(&rec, 4096, 1).unwrap();
        assert!(matches!(entries[0], Entry::Drained));
        let Entry::Pairs(data) = &entries[1] else {
            panic!("a pairs entry: {:?}", entries[1]);
        };
        assert_eq!(pairs(data).collect::<Vec<_>>(), changes);
        assert!(entries.iter().all(|e| e.page().is_none()));
        // Cut anywhere in the pairs, or a count that is not theirs.
        for cut in META_BYTES + 4 + ENTRY_HDR..rec.len() {
            assert!(decode(&rec[..cut], 4096, 1).is_err(), "cut at {cut}");
        }
        let mut wrong = rec.clone();
        let count_at = META_BYTES + 4 + ENTRY_HDR + 1;
        wrong[count_at] = 4;
        assert!(decode(&wrong, 4096, 1).is_err(), "a count of 4 for 3 pairs");
    }

    #[test]
    fn images_roundtrip_and_refuse_operations() {
        let mut a = Page::new(512, 3, Kind::Leaf);
        a.insert_at(0, b"x", b"y");
        let b = Page::new(512, 8, Kind::Internal);
        let mut w = Writer::images(2, 512);
        assert_eq!(w.len(), IMAGES_HDR, "no entry yet");
        w.image(&a);
        w.image(&b);
        // Only live bytes: the empty internal page is its header.
        let live = |p: &Page| p.live_spans().0 + 512 - p.live_spans().1;
        assert_eq!(
            w.len(),
            IMAGES_HDR + 2 * IMAGE_OVERHEAD + live(&a) + live(&b)
        );
        assert_eq!(live(&b), crate::page::HEADER);
        let pages = decode_images(&w.finish(), 512, 1).unwrap();
        assert_eq!(pages.iter().map(Page::id).collect::<Vec<_>>(), [3, 8]);
        assert_eq!(pages[0].key(0), b"x");
        // A batch's entries are not an images record.
        let mut ops = Vec::new();
        Op::Delete(b"x".to_vec()).encode(&mut ops);
        let mut w = Writer::new(&meta(), 0);
        w.ops(3, 1, &ops);
        let rec = w.finish();
        assert!(decode_images(&rec[32..], 512, 1).is_err());
    }

    proptest! {
        #[test]
        fn decoder_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..700)) {
            let _ = decode(&bytes, 512, 1);
            let _ = decode_images(&bytes, 512, 1);
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
            let _ = decode(&rec, 512, 1);
        }
    }
}
