//! The NBD wire protocol, fixed-newstyle handshake and simple replies
//! (<https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md>).
//! Integers are big-endian. Structured replies and extended headers are
//! declined, so every reply is the 16-byte simple reply.

use std::io::{self, Read, Write};

pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const REPLY_MAGIC_OPT: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
pub const FLAG_NO_ZEROES: u16 = 2;

pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;

pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_ERR_UNSUP: u32 = (1 << 31) | 1;
pub const REP_ERR_INVALID: u32 = (1 << 31) | 3;
pub const REP_ERR_UNKNOWN: u32 = (1 << 31) | 6;

pub const INFO_EXPORT: u16 = 0;
pub const INFO_BLOCK_SIZE: u16 = 3;

pub const TFLAG_HAS_FLAGS: u16 = 1;
pub const TFLAG_SEND_FLUSH: u16 = 1 << 2;
pub const TFLAG_SEND_FUA: u16 = 1 << 3;
pub const TFLAG_ROTATIONAL: u16 = 1 << 4;
pub const TFLAG_SEND_TRIM: u16 = 1 << 5;
pub const TFLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;

pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;

/// Command flags: force unit access (the write is durable when answered),
/// and, for WRITE_ZEROES, "allocate: do not trim".
pub const CMD_FLAG_FUA: u16 = 1;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;

pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;

/// Longest option payload accepted; an export name and a few info requests
/// fit many times over.
pub const MAX_OPTION: u32 = 64 << 10;
/// Largest read or write served, advertised as the maximum block size. A
/// trim or write-zeroes carries no payload and may be longer.
pub const MAX_REQUEST: u32 = 32 << 20;

/// Why a connection was closed without an orderly end.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("bad magic {0:#x} ({1})")]
    Magic(u64, &'static str),
    #[error("unknown client flags {0:#x}")]
    ClientFlags(u32),
    #[error("option {option} of {len} bytes is longer than {MAX_OPTION}")]
    OptionTooLong { option: u32, len: u32 },
    #[error("export '{0}' does not exist")]
    NoSuchExport(String),
}

pub fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

pub fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// One option reply: magic, the option it answers, its type and payload.
pub fn option_reply(w: &mut impl Write, option: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let len = u32::try_from(data.len()).expect("option replies are small");
    let mut head = Vec::with_capacity(20 + data.len());
    head.extend_from_slice(&REPLY_MAGIC_OPT.to_be_bytes());
    head.extend_from_slice(&option.to_be_bytes());
    head.extend_from_slice(&kind.to_be_bytes());
    head.extend_from_slice(&len.to_be_bytes());
    head.extend_from_slice(data);
    w.write_all(&head)
}

/// A transmission request's header (the payload of a write follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// NBD_CMD_FLAG_* bits.
    pub flags: u16,
    pub kind: u16,
    pub handle: u64,
    pub offset: u64,
    pub len: u32,
}

/// Reads a request; `Ok(None)` when the client closed the connection
/// between requests.
pub fn read_request(r: &mut impl Read) -> Result<Option<Request>, ProtocolError> {
    let mut b = [0u8; 28];
    let mut got = 0;
    while got < b.len() {
        match r.read(&mut b[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let magic = u32::from_be_bytes(b[0..4].try_into().expect("4 bytes"));
    if magic != REQUEST_MAGIC {
        return Err(ProtocolError::Magic(magic.into(), "request"));
    }
    Ok(Some(Request {
        flags: u16::from_be_bytes(b[4..6].try_into().expect("2 bytes")),
        kind: u16::from_be_bytes(b[6..8].try_into().expect("2 bytes")),
        handle: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
        offset: u64::from_be_bytes(b[16..24].try_into().expect("8 bytes")),
        len: u32::from_be_bytes(b[24..28].try_into().expect("4 bytes")),
    }))
}

/// A simple reply: magic, error, handle, then a read's data when it succeeded.
pub fn write_reply(w: &mut impl Write, error: u32, handle: u64, data: &[u8]) -> io::Result<()> {
    let mut head = [0u8; 16];
    head[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    head[4..8].copy_from_slice(&error.to_be_bytes());
    head[8..16].copy_from_slice(&handle.to_be_bytes());
    w.write_all(&head)?;
    if error == 0 {
        w.write_all(data)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_and_a_bad_magic_is_refused() {
        let mut b = Vec::new();
        b.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b.extend_from_slice(&CMD_FLAG_FUA.to_be_bytes());
        b.extend_from_slice(&CMD_WRITE.to_be_bytes());
        b.extend_from_slice(&7u64.to_be_bytes());
        b.extend_from_slice(&4096u64.to_be_bytes());
        b.extend_from_slice(&512u32.to_be_bytes());
        let r = read_request(&mut &b[..]).unwrap().unwrap();
        assert_eq!(
            r,
            Request {
                flags: CMD_FLAG_FUA,
                kind: CMD_WRITE,
                handle: 7,
                offset: 4096,
                len: 512
            }
        );
        assert!(read_request(&mut &b[..0]).unwrap().is_none());
        assert!(matches!(
            read_request(&mut &b[..10]),
            Err(ProtocolError::Io(_))
        ));
        b[0] = 0;
        assert!(matches!(
            read_request(&mut &b[..]),
            Err(ProtocolError::Magic(0x609513, "request"))
        ));
    }

    #[test]
    fn a_failed_read_reply_carries_no_data() {
        let mut out = Vec::new();
        write_reply(&mut out, EINVAL, 9, &[1, 2, 3]).unwrap();
        assert_eq!(out.len(), 16);
        assert_eq!(&out[4..8], &EINVAL.to_be_bytes());
        out.clear();
        write_reply(&mut out, 0, 9, &[1, 2, 3]).unwrap();
        assert_eq!(&out[16..], &[1, 2, 3]);
    }
}
