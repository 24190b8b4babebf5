//! How keys and values travel as text: `--key-format`/`--value-format`
//! (utf8, hex, base64) and the TSV escapes that keep a tab, a newline or a
//! non-UTF-8 byte from making a line ambiguous.

use clap::ValueEnum;

/// Text form of keys or values on the command line, in output and in imports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text; in TSV `\t`, `\n`, `\r`, `\\` and `\xNN` (non-UTF-8 bytes) are escapes.
    Utf8,
    /// Two hex digits per byte.
    Hex,
    /// Standard base64 with padding.
    Base64,
}

/// The formats of keys and of values.
#[derive(Clone, Copy, Debug)]
pub struct Codec {
    pub key: Format,
    pub value: Format,
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

impl Format {
    /// Bytes given as a command-line argument or a JSON string (no TSV escapes).
    pub fn decode_arg(self, s: &str) -> Result<Vec<u8>, String> {
        match self {
            Format::Utf8 => Ok(s.as_bytes().to_vec()),
            Format::Hex => hex_decode(s.as_bytes()),
            Format::Base64 => b64_decode(s.as_bytes()),
        }
    }

    /// Bytes of one TSV field (escapes undone for utf8).
    pub fn decode_tsv(self, field: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Format::Utf8 => unescape(field),
            Format::Hex => hex_decode(field),
            Format::Base64 => b64_decode(field),
        }
    }

    /// One TSV field: never holds a tab or a newline.
    pub fn encode_tsv(self, bytes: &[u8], out: &mut String) {
        match self {
            Format::Utf8 => escape(bytes, out),
            Format::Hex => hex_encode(bytes, out),
            Format::Base64 => b64_encode(bytes, out),
        }
    }

    /// A JSON string's content; utf8 data that is not UTF-8 cannot be one.
    pub fn encode_json(self, bytes: &[u8]) -> Result<String, String> {
        let mut s = String::new();
        match self {
            Format::Utf8 => {
                return String::from_utf8(bytes.to_vec()).map_err(|_| {
                    "data is not UTF-8: use --key-format/--value-format hex or base64 for JSON"
                        .to_string()
                })
            }
            Format::Hex => hex_encode(bytes, &mut s),
            Format::Base64 => b64_encode(bytes, &mut s),
        }
        Ok(s)
    }
}

/// Backslash-escapes `\t \n \r \\`, and as `\xNN` other ASCII control
/// characters and every byte that is not part of valid UTF-8.
pub fn escape(bytes: &[u8], out: &mut String) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\\' => out.push_str("\\\\"),
                // Other control characters would garble a terminal.
                c if c.is_ascii_control() => out.push_str(&format!("\\x{:02x}", c as u8)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
}

/// Undoes [`escape`]; an unknown or cut-short escape is an error.
pub fn unescape(s: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        match s.get(i + 1) {
            Some(b't') => out.push(b'\t'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let h = s.get(i + 2..i + 4).ok_or("cut-short \\x escape")?;
                out.extend(hex_decode(h)?);
                i += 2;
            }
            Some(&c) => return Err(format!("unknown escape \\{}", c as char)),
            None => return Err("a lone backslash at the end".into()),
        }
        i += 2;
    }
    Ok(out)
}

fn hex_encode(bytes: &[u8], out: &mut String) {
    const D: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(D[(b >> 4) as usize] as char);
        out.push(D[(b & 15) as usize] as char);
    }
}

fn hex_decode(s: &[u8]) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("hex {:?}: odd number of digits", lossy(s)));
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2)
        .map(|p| match (digit(p[0]), digit(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err(format!("hex {:?}: not a hex digit", lossy(s))),
        })
        .collect()
}

fn b64_encode(bytes: &[u8], out: &mut String) {
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

fn b64_decode(s: &[u8]) -> Result<Vec<u8>, String> {
    let bad = || format!("base64 {:?}: not valid base64", lossy(s));
    if !s.len().is_multiple_of(4) {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (q, quad) in s.chunks(4).enumerate() {
        let last = q + 1 == s.len() / 4;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return Err(bad());
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            let v = B64.iter().position(|&d| d == c).ok_or_else(bad)?;
            n = n << 6 | v as u32;
        }
        n <<= 6 * pad;
        out.extend(&n.to_be_bytes()[1..4 - pad]);
    }
    Ok(out)
}

fn lossy(s: &[u8]) -> String {
    String::from_utf8_lossy(&s[..s.len().min(40)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tsv(f: Format, b: &[u8]) -> String {
        let mut s = String::new();
        f.encode_tsv(b, &mut s);
        s
    }

    #[test]
    fn escapes_round_trip_every_byte_pair() {
        for a in 0..=255u8 {
            for b in [0u8, b'\\', b'x', 0x80, 0xc3, 0xa9, b'\t'] {
                let data = [a, b, b'\n'];
                for f in [Format::Utf8, Format::Hex, Format::Base64] {
                    let s = tsv(f, &data);
                    assert!(!s.contains('\t') && !s.contains('\n') && !s.contains('\r'));
                    assert_eq!(f.decode_tsv(s.as_bytes()).unwrap(), data, "{f:?} {s}");
                }
            }
        }
    }

    #[test]
    fn known_encodings() {
        assert_eq!(tsv(Format::Utf8, b"a\tb\\c\xff\n"), "a\\tb\\\\c\\xff\\n");
        assert_eq!(tsv(Format::Utf8, "é".as_bytes()), "é");
        assert_eq!(tsv(Format::Utf8, b"\x00\x7f"), "\\x00\\x7f");
        assert_eq!(tsv(Format::Hex, b"\x00\xab"), "00ab");
        assert_eq!(tsv(Format::Base64, b"foob"), "Zm9vYg==");
        assert_eq!(tsv(Format::Base64, b"fooba"), "Zm9vYmE=");
        assert_eq!(Format::Base64.decode_arg("Zm9vYmFy").unwrap(), b"foobar");
        assert!(Format::Base64.decode_arg("Zm9=Ym==").is_err());
        assert!(Format::Hex.decode_arg("abc").is_err());
        assert!(Format::Hex.decode_arg("zz").is_err());
        assert!(unescape(b"a\\q").is_err());
        assert!(unescape(b"a\\").is_err());
        assert!(unescape(b"\\x4").is_err());
        assert!(Format::Utf8.encode_json(b"\xff").is_err());
    }
}
