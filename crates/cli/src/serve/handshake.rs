//! The fixed-newstyle handshake: greeting, client flags, then options until
//! the client picks the export (NBD_OPT_GO or NBD_OPT_EXPORT_NAME) or aborts.

use std::io::{Read, Write};

use super::nbd::*;

/// What the server says about its one export.
#[derive(Debug, Clone)]
pub struct ExportInfo {
    pub name: String,
    pub size: u64,
    pub flags: u16,
    /// Advertised preferred block size: the device's sector, at least
    /// 4 KiB (the minimum is 1: the export serves any alignment).
    pub preferred_block: u32,
}

impl ExportInfo {
    /// The default export ("") or its name.
    fn is(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.name.as_bytes()
    }
}

/// How the handshake ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Transmit,
    Aborted,
}

/// Runs the handshake on a fresh connection.
pub fn negotiate(
    r: &mut impl Read,
    w: &mut impl Write,
    e: &ExportInfo,
) -> Result<Outcome, ProtocolError> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    w.write_all(&hello)?;
    let client = read_u32(r)?;
    let known = u32::from(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    if client & !known != 0 {
        return Err(ProtocolError::ClientFlags(client));
    }
    let no_zeroes = client & u32::from(FLAG_NO_ZEROES) != 0;
    loop {
        let magic = read_u64(r)?;
        if magic != IHAVEOPT {
            return Err(ProtocolError::Magic(magic, "option"));
        }
        let option = read_u32(r)?;
        let len = read_u32(r)?;
        if len > MAX_OPTION {
            return Err(ProtocolError::OptionTooLong { option, len });
        }
        let mut data = vec![0u8; len as usize];
        r.read_exact(&mut data)?;
        match option {
            OPT_EXPORT_NAME => return export_name(w, e, &data, no_zeroes),
            OPT_ABORT => {
                // The client may already be gone; it asked to end anyway.
                let _ = option_reply(w, option, REP_ACK, &[]);
                return Ok(Outcome::Aborted);
            }
            OPT_LIST => list(w, e, &data)?,
            OPT_INFO | OPT_GO => {
                if info(w, e, option, &data)? && option == OPT_GO {
                    return Ok(Outcome::Transmit);
                }
            }
            _ => option_reply(w, option, REP_ERR_UNSUP, &[])?,
        }
    }
}

/// NBD_OPT_EXPORT_NAME: no error reply exists, so an unknown name closes.
fn export_name(
    w: &mut impl Write,
    e: &ExportInfo,
    name: &[u8],
    no_zeroes: bool,
) -> Result<Outcome, ProtocolError> {
    if !e.is(name) {
        return Err(ProtocolError::NoSuchExport(
            String::from_utf8_lossy(name).into(),
        ));
    }
    let mut b = Vec::with_capacity(134);
    b.extend_from_slice(&e.size.to_be_bytes());
    b.extend_from_slice(&e.flags.to_be_bytes());
    if !no_zeroes {
        b.extend_from_slice(&[0u8; 124]);
    }
    w.write_all(&b)?;
    Ok(Outcome::Transmit)
}

fn list(w: &mut impl Write, e: &ExportInfo, data: &[u8]) -> Result<(), ProtocolError> {
    if !data.is_empty() {
        option_reply(w, OPT_LIST, REP_ERR_INVALID, &[])?;
        return Ok(());
    }
    let name = e.name.as_bytes();
    let mut b = Vec::with_capacity(4 + name.len());
    b.extend_from_slice(&(name.len() as u32).to_be_bytes());
    b.extend_from_slice(name);
    option_reply(w, OPT_LIST, REP_SERVER, &b)?;
    option_reply(w, OPT_LIST, REP_ACK, &[])?;
    Ok(())
}

/// An INFO/GO request: export name, then the information types asked for.
fn parse_info(data: &[u8]) -> Option<(&[u8], Vec<u16>)> {
    let name_len = u32::from_be_bytes(data.get(..4)?.try_into().ok()?) as usize;
    let name = data.get(4..4usize.checked_add(name_len)?)?;
    let rest = &data[4 + name_len..];
    let n = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?) as usize;
    let list = rest.get(2..)?;
    if list.len() != 2 * n {
        return None;
    }
    let types = list
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    Some((name, types))
}

/// Answers NBD_OPT_INFO or NBD_OPT_GO; true when the export was described.
fn info(
    w: &mut impl Write,
    e: &ExportInfo,
    option: u32,
    data: &[u8],
) -> Result<bool, ProtocolError> {
    let Some((name, types)) = parse_info(data) else {
        option_reply(w, option, REP_ERR_INVALID, &[])?;
        return Ok(false);
    };
    if !e.is(name) {
        option_reply(w, option, REP_ERR_UNKNOWN, &[])?;
        return Ok(false);
    }
    let mut export = Vec::with_capacity(12);
    export.extend_from_slice(&INFO_EXPORT.to_be_bytes());
    export.extend_from_slice(&e.size.to_be_bytes());
    export.extend_from_slice(&e.flags.to_be_bytes());
    option_reply(w, option, REP_INFO, &export)?;
    // Block sizes only when asked. The minimum is 1 because the export
    // serves any alignment (by read-modify-write below the sector), so a
    // client that obeys the sizes never has a request refused for them.
    if types.contains(&INFO_BLOCK_SIZE) {
        let mut b = Vec::with_capacity(14);
        b.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        b.extend_from_slice(&1u32.to_be_bytes());
        b.extend_from_slice(&e.preferred_block.to_be_bytes());
        b.extend_from_slice(&MAX_REQUEST.to_be_bytes());
        option_reply(w, option, REP_INFO, &b)?;
    }
    option_reply(w, option, REP_ACK, &[])?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_requests_parse_only_when_their_lengths_agree() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(parse_info(&d), Some((&b"abc"[..], vec![INFO_BLOCK_SIZE])));
        assert_eq!(parse_info(&d[..d.len() - 1]), None);
        d[3] = 200;
        assert_eq!(parse_info(&d), None, "name longer than the option");
        assert_eq!(parse_info(&[0xff; 4]), None);
    }
}
