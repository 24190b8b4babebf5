//! Little-endian integers at offsets of byte slices, as every on-device
//! format stores them. The caller checks the length first; an offset past
//! the end is a bug and panics on the slice bound.

pub(crate) fn u16_at(b: &[u8], o: usize) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[o..o + 2]);
    u16::from_le_bytes(a)
}

pub(crate) fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(a)
}

pub(crate) fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}
