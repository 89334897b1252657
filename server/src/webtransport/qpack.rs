//! The slice of QPACK (RFC 9204) a WebTransport server needs: decoding the field section of
//! a request whose encoder may use the static table and Huffman-coded strings but no
//! dynamic table (this server advertises a dynamic table capacity of 0, so any reference
//! to one is an error), and encoding a response with static references and plain literals.

use super::huffman_table::{MAX_BITS, lengths};

/// A field section that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QpackError {
    /// The bytes end inside a field line.
    #[error("the field section ends inside a field line")]
    Truncated,
    /// An integer runs on past 63 bits.
    #[error("an integer in the field section is too large")]
    Overflow,
    /// The encoder referred to a dynamic table, which this decoder never allows.
    #[error("the field section refers to the dynamic table, whose capacity is 0")]
    DynamicTable,
    /// A static table index past its 99 entries.
    #[error("static table index {0} does not exist")]
    BadIndex(u64),
    /// A Huffman-coded string that does not decode.
    #[error("a Huffman-coded string is malformed")]
    Huffman,
    /// A name or value that is not UTF-8.
    #[error("a field name or value is not UTF-8")]
    NotUtf8,
    /// More field lines than a request needs.
    #[error("the field section has more than {0} lines")]
    TooMany(usize),
}

/// At most this many field lines are decoded from one section.
const MAX_FIELDS: usize = 64;

/// The static table (RFC 9204 Appendix A): name and value of each entry.
const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// The static index of `:status 200`.
const STATUS_200: u64 = 25;

/// One decoded field line.
pub type Field = (String, String);

/// Decodes a field section (the payload of a HEADERS frame).
pub fn decode(mut bytes: &[u8]) -> Result<Vec<Field>, QpackError> {
    let required_insert_count = int(&mut bytes, 8)?;
    let _delta_base = int(&mut bytes, 7)?;
    if required_insert_count != 0 {
        return Err(QpackError::DynamicTable);
    }
    let mut fields = Vec::new();
    while let Some(&first) = bytes.first() {
        if fields.len() == MAX_FIELDS {
            return Err(QpackError::TooMany(MAX_FIELDS));
        }
        let field = if first & 0x80 != 0 {
            // Indexed field line: 1 T index(6).
            if first & 0x40 == 0 {
                return Err(QpackError::DynamicTable);
            }
            let (name, value) = entry(int(&mut bytes, 6)?)?;
            (name.to_owned(), value.to_owned())
        } else if first & 0x40 != 0 {
            // Literal with name reference: 01 N T index(4), then the value.
            if first & 0x10 == 0 {
                return Err(QpackError::DynamicTable);
            }
            let (name, _) = entry(int(&mut bytes, 4)?)?;
            (name.to_owned(), string(&mut bytes, 7)?)
        } else if first & 0x20 != 0 {
            // Literal with literal name: 001 N H len(3) name, then the value.
            let name = string(&mut bytes, 3)?;
            (name, string(&mut bytes, 7)?)
        } else {
            // 0001 (post-base index) and 0000 (post-base name reference): dynamic only.
            return Err(QpackError::DynamicTable);
        };
        fields.push(field);
    }
    Ok(fields)
}

/// Encodes a response field section: `:status` (from the static table when it is 200)
/// and plain literal fields.
pub fn encode_response(status: u16, fields: &[(&str, &str)]) -> Vec<u8> {
    // Required insert count 0, delta base 0.
    let mut out = vec![0, 0];
    if status == 200 {
        put_int(&mut out, 0xc0, 6, STATUS_200);
    } else {
        // Literal with static name reference to `:status` (index 24), never indexed: 0.
        put_int(&mut out, 0x50, 4, 24);
        put_string(&mut out, 7, &status.to_string());
    }
    put_literals(&mut out, fields);
    out
}

/// Encodes fields as literals with literal names (a request, in tests and clients).
pub fn encode_fields(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = vec![0, 0];
    put_literals(&mut out, fields);
    out
}

fn put_literals(out: &mut Vec<u8>, fields: &[(&str, &str)]) {
    for (name, value) in fields {
        put_int(out, 0x20, 3, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        put_string(out, 7, value);
    }
}

fn entry(index: u64) -> Result<(&'static str, &'static str), QpackError> {
    usize::try_from(index)
        .ok()
        .and_then(|i| STATIC.get(i).copied())
        .ok_or(QpackError::BadIndex(index))
}

/// A prefix integer (RFC 7541 §5.1) whose first byte keeps `bits` low bits for it.
fn int(bytes: &mut &[u8], bits: u32) -> Result<u64, QpackError> {
    let (&first, rest) = bytes.split_first().ok_or(QpackError::Truncated)?;
    *bytes = rest;
    let max = (1u64 << bits) - 1;
    let mut value = u64::from(first) & max;
    if value < max {
        return Ok(value);
    }
    let mut shift = 0u32;
    loop {
        let (&byte, rest) = bytes.split_first().ok_or(QpackError::Truncated)?;
        *bytes = rest;
        if shift > 56 {
            return Err(QpackError::Overflow);
        }
        value += u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
}

fn put_int(out: &mut Vec<u8>, flags: u8, bits: u32, value: u64) {
    let max = (1u64 << bits) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A string literal whose length has `bits` bits in the first byte, with the Huffman flag
/// just above them.
fn string(bytes: &mut &[u8], bits: u32) -> Result<String, QpackError> {
    let huffman = bytes.first().is_some_and(|&b| b & (1 << bits) != 0);
    let len = int(bytes, bits)?;
    let len = usize::try_from(len).map_err(|_| QpackError::Truncated)?;
    if len > bytes.len() {
        return Err(QpackError::Truncated);
    }
    let (raw, rest) = bytes.split_at(len);
    *bytes = rest;
    let decoded = if huffman {
        huffman_decode(raw)?
    } else {
        raw.to_vec()
    };
    String::from_utf8(decoded).map_err(|_| QpackError::NotUtf8)
}

fn put_string(out: &mut Vec<u8>, bits: u32, text: &str) {
    put_int(out, 0, bits, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// Decodes a Huffman-coded string (RFC 7541 §5.2): padding is at most 7 one-bits, and EOS
/// inside the string is an error.
fn huffman_decode(raw: &[u8]) -> Result<Vec<u8>, QpackError> {
    let mut out = Vec::with_capacity(raw.len() * 8 / 5);
    let lengths = lengths();
    let (mut code, mut len) = (0u32, 0u8);
    for &byte in raw {
        for shift in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> shift) & 1);
            len += 1;
            if len < 5 {
                continue;
            }
            if let Some(symbol) = lengths.symbol(code, len) {
                // EOS (256) inside the string is an error.
                let symbol = u8::try_from(symbol).map_err(|_| QpackError::Huffman)?;
                out.push(symbol);
                (code, len) = (0, 0);
            } else if len >= MAX_BITS {
                return Err(QpackError::Huffman);
            }
        }
    }
    // What is left must be a prefix of EOS: all ones, shorter than a byte.
    if len >= 8 || code != (1u32 << len) - 1 {
        return Err(QpackError::Huffman);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::huffman_table::CODES;
    use super::*;

    /// Encodes with the Huffman code, for tests.
    fn huffman_encode(text: &str) -> Vec<u8> {
        let (mut acc, mut bits, mut out) = (0u64, 0u32, Vec::new());
        for &b in text.as_bytes() {
            let (code, len) = CODES[usize::from(b)];
            acc = (acc << len) | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                out.push((acc >> (bits - 8)) as u8);
                bits -= 8;
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) as u8) | ((1u8 << (8 - bits)) - 1));
        }
        out
    }

    #[test]
    fn the_huffman_example_of_rfc_7541_decodes() {
        // RFC 7541 C.4.1: "www.example.com".
        let raw = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        assert_eq!(huffman_decode(&raw).unwrap(), b"www.example.com");
        for text in ["", "/mmo?x=1", "webtransport", "Mozilla/5.0 (X11; Linux)"] {
            assert_eq!(
                huffman_decode(&huffman_encode(text)).unwrap(),
                text.as_bytes()
            );
        }
        // Padding of a zero bit is not EOS.
        assert_eq!(huffman_decode(&[0x00]), Err(QpackError::Huffman));
    }

    #[test]
    fn a_request_section_decodes_with_static_references_and_literals() {
        let mut section = vec![0, 0];
        put_int(&mut section, 0xc0, 6, 15); // :method CONNECT
        put_int(&mut section, 0xc0, 6, 23); // :scheme https
        // :authority with a Huffman value.
        put_int(&mut section, 0x50, 4, 0);
        let value = huffman_encode("127.0.0.1:4433");
        put_int(&mut section, 0x80, 7, value.len() as u64);
        section.extend_from_slice(&value);
        // :path, plain.
        put_int(&mut section, 0x50, 4, 1);
        put_string(&mut section, 7, "/mmo");
        // :protocol as a literal name.
        put_int(&mut section, 0x20, 3, ":protocol".len() as u64);
        section.extend_from_slice(b":protocol");
        put_string(&mut section, 7, "webtransport");
        let fields = decode(&section).unwrap();
        let get = |name: &str| {
            fields
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get(":method"), Some("CONNECT"));
        assert_eq!(get(":scheme"), Some("https"));
        assert_eq!(get(":authority"), Some("127.0.0.1:4433"));
        assert_eq!(get(":path"), Some("/mmo"));
        assert_eq!(get(":protocol"), Some("webtransport"));
    }

    #[test]
    fn bad_sections_are_errors_not_panics() {
        assert_eq!(decode(&[1, 0]), Err(QpackError::DynamicTable));
        assert_eq!(decode(&[0, 0, 0x80]), Err(QpackError::DynamicTable));
        assert_eq!(decode(&[0, 0, 0xff, 0x80]), Err(QpackError::Truncated));
        assert_eq!(decode(&[0, 0, 0xff, 0x30]), Err(QpackError::BadIndex(111)));
        assert_eq!(
            decode(&[0, 0, 0x51, 0x05, b'a']),
            Err(QpackError::Truncated)
        );
        let mut overflow = vec![0, 0, 0xff];
        overflow.extend([0xff; 12]);
        assert_eq!(decode(&overflow), Err(QpackError::Overflow));
        // Every prefix of a valid section is an error or a shorter list, never a panic.
        let response = encode_response(404, &[("sec-webtransport-http3-draft", "draft02")]);
        for end in 0..response.len() {
            let _ = decode(&response[..end]);
        }
    }

    #[test]
    fn responses_decode_to_what_was_encoded() {
        let ok = encode_response(200, &[("sec-webtransport-http3-draft", "draft02")]);
        assert_eq!(
            decode(&ok).unwrap(),
            vec![
                (":status".to_owned(), "200".to_owned()),
                (
                    "sec-webtransport-http3-draft".to_owned(),
                    "draft02".to_owned()
                ),
            ]
        );
        let not_found = encode_response(404, &[]);
        assert_eq!(
            decode(&not_found).unwrap(),
            vec![(":status".to_owned(), "404".to_owned())]
        );
    }
}
