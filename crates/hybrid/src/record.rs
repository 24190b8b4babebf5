//! Log records in the cache region. Every append is one record: a header
//! sector followed by its data sectors, written in one SSD write. The header
//! carries a checksum of itself and of the data (a torn append is detected)
//! and the sequence number of the record before it (a stale record left from
//! an earlier lap or format never continues the chain).

const MAGIC: u32 = 0x4352_4548; // "HERC"
const FIXED: usize = 44;
const EXTENT: usize = 12;
/// Longest extent: the length field's low 24 bits.
pub(crate) const MAX_EXTENT_LEN: u64 = (1 << 24) - 1;

/// What a record means for the mapping when the log is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Host data, dirty until flushed to the HDD.
    Data = 1,
    /// A clean copy of HDD data pulled into the cache; ignored by recovery.
    Promote = 2,
    /// Unmaps its extents (a trim over dirty cached sectors).
    Trim = 3,
}

/// A decoded record header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: Kind,
    pub format_id: u64,
    pub seq: u64,
    pub prev_seq: u64,
    /// Sectors of data following the header.
    pub data_sectors: u64,
    pub data_crc: u32,
    /// (home unit, units, missing mask) the data (or the trim) applies to,
    /// in order; the data holds one unit per unit of the extents. A nonzero
    /// mask (one unit only) names the host sectors of the unit the record
    /// does not hold. On disk the mask is the top byte of the length.
    pub extents: Vec<(u64, u64, u8)>,
}

/// How many extents fit in a header sector.
pub(crate) fn max_extents(sector: u64) -> usize {
    debug_assert!(
        sector as usize >= FIXED + 4 + EXTENT,
        "a header holds an extent"
    );
    (sector as usize - FIXED - 4) / EXTENT
}

impl Header {
    pub fn encode(&self, sector: u64) -> Vec<u8> {
        debug_assert!(self.extents.len() <= max_extents(sector));
        let mut b = vec![0u8; sector as usize];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[8..16].copy_from_slice(&self.format_id.to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..32].copy_from_slice(&self.prev_seq.to_le_bytes());
        b[32..36].copy_from_slice(&(self.data_sectors as u32).to_le_bytes());
        b[36..40].copy_from_slice(&(self.extents.len() as u32).to_le_bytes());
        b[40..44].copy_from_slice(&self.data_crc.to_le_bytes());
        for (i, &(home, len, missing)) in self.extents.iter().enumerate() {
            debug_assert!(len <= MAX_EXTENT_LEN && (missing == 0 || len == 1));
            let at = FIXED + i * EXTENT;
            b[at..at + 8].copy_from_slice(&home.to_le_bytes());
            let v = len as u32 | u32::from(missing) << 24;
            b[at + 8..at + 12].copy_from_slice(&v.to_le_bytes());
        }
        let end = b.len() - 4;
        let crc = crc32c::crc32c(&b[..end]);
        b[end..].copy_from_slice(&crc.to_le_bytes());
        debug_assert!(
            self.data_sectors <= u64::from(u32::MAX),
            "the length field holds it"
        );
        b
    }

    /// Decodes a header sector; `None` if it is not an intact header.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let end = b.len().checked_sub(4)?;
        if end < FIXED || u32_at(0) != MAGIC || u32_at(end) != crc32c::crc32c(&b[..end]) {
            return None;
        }
        let kind = match u32_at(4) {
            1 => Kind::Data,
            2 => Kind::Promote,
            3 => Kind::Trim,
            _ => return None,
        };
        let n = u32_at(36) as usize;
        if n > max_extents(b.len() as u64) {
            return None;
        }
        let extents = (0..n)
            .map(|i| {
                let at = FIXED + i * EXTENT;
                let v = u32_at(at + 8);
                (u64_at(at), u64::from(v) & MAX_EXTENT_LEN, (v >> 24) as u8)
            })
            .collect();
        Some(Header {
            kind,
            format_id: u64_at(8),
            seq: u64_at(16),
            prev_seq: u64_at(24),
            data_sectors: u64::from(u32_at(32)),
            data_crc: u32_at(40),
            extents,
        })
    }

    /// Sectors the record occupies in the log.
    pub fn len(&self) -> u64 {
        1 + self.data_sectors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_detects_damage() {
        let h = Header {
            kind: Kind::Trim,
            format_id: 7,
            seq: 42,
            prev_seq: 41,
            data_sectors: 0,
            data_crc: 0,
            extents: vec![(5, 3, 0), (1 << 35, 1, 0b1100_0011), (9, 9, 0)],
        };
        let mut b = h.encode(512);
        assert_eq!(Header::decode(&b), Some(h.clone()));
        assert_eq!(
            b[FIXED + EXTENT + 8..FIXED + EXTENT + 12],
            [1, 0, 0, 0b1100_0011]
        );
        b[100] ^= 0x10;
        assert_eq!(Header::decode(&b), None);
        assert_eq!(Header::decode(&[0u8; 512]), None);
        assert_eq!(max_extents(512), 38);
    }

    proptest::proptest! {
        #[test]
        fn header_decode_survives_any_bytes(
            b in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
            n in 0u32..64,
        ) {
            let mut b = b;
            // Also bytes that pass the magic and checksum checks, with any
            // extent count, so the rest is exercised.
            if b.len() >= FIXED + 4 {
                b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
                b[36..40].copy_from_slice(&n.to_le_bytes());
                let end = b.len() - 4;
                let crc = crc32c::crc32c(&b[..end]);
                b[end..].copy_from_slice(&crc.to_le_bytes());
            }
            if let Some(h) = Header::decode(&b) {
                proptest::prop_assert!(h.extents.len() <= max_extents(b.len() as u64));
            }
        }
    }
}
