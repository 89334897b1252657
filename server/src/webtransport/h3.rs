//! The HTTP/3 pieces of WebTransport, without I/O: QUIC variable-length integers, HTTP/3
//! frames, the server's SETTINGS, and checking the extended CONNECT request that opens a
//! session (RFC 9114, RFC 9220, RFC 9297, draft-ietf-webtrans-http3).

use super::qpack::{self, QpackError};

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const STREAM_CONTROL: u64 = 0x00;
/// A WebTransport bidirectional stream starts with this signal value, then the session id.
pub const WT_BIDI_SIGNAL: u64 = 0x41;
/// A WebTransport unidirectional stream's type, followed by the session id.
pub const WT_UNI_STREAM: u64 = 0x54;

/// HTTP/3 frame types (RFC 9114 §7.2).
pub const FRAME_HEADERS: u64 = 0x01;
/// The SETTINGS frame.
pub const FRAME_SETTINGS: u64 = 0x04;

/// Whether a frame of type `kind` is one HTTP/3 does not define (an extension's, or a
/// reserved "grease" type, 0x1f × N + 0x21): RFC 9114 §9 asks a receiver to ignore those,
/// wherever they come. The types HTTP/3 defines, and those it reserves from HTTP/2 as
/// errors, are not.
pub fn is_extension_frame(kind: u64) -> bool {
    !matches!(kind, 0x00..=0x09 | 0x0d)
}

/// The largest HEADERS or SETTINGS frame payload read.
pub const MAX_FRAME_PAYLOAD: u64 = 16 * 1024;

/// The path a WebTransport session opens on.
pub const SESSION_PATH: &str = "/mmo";

/// Settings (RFC 9114 §7.2.4.1, RFC 9220, RFC 9297, draft-ietf-webtrans-http3): the
/// extended CONNECT, HTTP datagrams (and the older code points browsers still send), and
/// WebTransport itself (the current max-sessions setting and the older enable setting).
const SETTINGS: [(u64, u64); 7] = [
    (0x01, 0),       // QPACK_MAX_TABLE_CAPACITY: no dynamic table.
    (0x08, 1),       // ENABLE_CONNECT_PROTOCOL
    (0x33, 1),       // H3_DATAGRAM
    (0xffd277, 1),   // H3_DATAGRAM, draft code point
    (0x2b603742, 1), // ENABLE_WEBTRANSPORT, draft-02 code point
    (0x2b603743, 1), // WEBTRANSPORT_MAX_SESSIONS, draft code point
    (0xc671706a, 1), // WEBTRANSPORT_MAX_SESSIONS
];

/// Appends a QUIC variable-length integer (RFC 9000 §16); `value` below 2^62.
pub fn put_varint(out: &mut Vec<u8>, value: u64) {
    if value < 1 << 6 {
        out.push(value as u8);
    } else if value < 1 << 14 {
        out.extend_from_slice(&((value as u16) | 0x4000).to_be_bytes());
    } else if value < 1 << 30 {
        out.extend_from_slice(&((value as u32) | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a variable-length integer from the front of `bytes`; `None` when it is cut short.
pub fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let first = *bytes.first()?;
    let len = 1usize << (first >> 6);
    if bytes.len() < len {
        return None;
    }
    let mut value = u64::from(first & 0x3f);
    for &b in &bytes[1..len] {
        value = (value << 8) | u64::from(b);
    }
    *bytes = &bytes[len..];
    Some(value)
}

/// The bytes of a frame.
pub fn frame(kind: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    put_varint(&mut out, kind);
    put_varint(&mut out, payload.len() as u64);
    out.extend_from_slice(payload);
    out
}

/// What the server writes first on its control stream: the stream type and SETTINGS.
pub fn server_control_stream() -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in SETTINGS {
        put_varint(&mut payload, id);
        put_varint(&mut payload, value);
    }
    let mut out = Vec::new();
    put_varint(&mut out, STREAM_CONTROL);
    out.extend_from_slice(&frame(FRAME_SETTINGS, &payload));
    out
}

/// The response that accepts a session: 200 and the draft header older browsers check.
pub fn accept_response() -> Vec<u8> {
    let fields = qpack::encode_response(200, &[("sec-webtransport-http3-draft", "draft02")]);
    frame(FRAME_HEADERS, &fields)
}

/// A response refusing the request with `status`.
pub fn refuse_response(status: u16) -> Vec<u8> {
    frame(FRAME_HEADERS, &qpack::encode_response(status, &[]))
}

/// Why a session request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The request stream did not start with a HEADERS frame.
    #[error("the request stream starts with frame type {0:#x}, not HEADERS")]
    NotHeaders(u64),
    /// The HEADERS frame is larger than allowed.
    #[error("the request's HEADERS frame announces {0} bytes, more than {MAX_FRAME_PAYLOAD}")]
    TooLarge(u64),
    /// The field section does not decode.
    #[error("the request's fields do not decode: {0}")]
    Fields(#[from] QpackError),
    /// Not an extended CONNECT for WebTransport.
    #[error("not a WebTransport request: {0}")]
    NotWebTransport(String),
    /// A WebTransport request for another path.
    #[error("no WebTransport endpoint at {0:?} (the server's is {SESSION_PATH})")]
    UnknownPath(String),
}

impl RequestError {
    /// The status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::UnknownPath(_) => 404,
            _ => 400,
        }
    }
}

/// A whole frame at the front of a buffer: its type, its payload, and the bytes it took.
pub type TakenFrame<'a> = (u64, &'a [u8], usize);

/// Reads a whole frame from the front of `buf`: `Ok(None)` while more bytes are needed.
pub fn take_frame(buf: &[u8]) -> Result<Option<TakenFrame<'_>>, RequestError> {
    let mut rest = buf;
    let Some(kind) = varint(&mut rest) else {
        return Ok(None);
    };
    let Some(len) = varint(&mut rest) else {
        return Ok(None);
    };
    if len > MAX_FRAME_PAYLOAD {
        return Err(RequestError::TooLarge(len));
    }
    let len = len as usize;
    if rest.len() < len {
        return Ok(None);
    }
    let consumed = buf.len() - rest.len() + len;
    Ok(Some((kind, &rest[..len], consumed)))
}

/// Checks the session request's fields: an extended CONNECT (`:protocol webtransport`) over
/// https for [`SESSION_PATH`] (a query string is allowed); returns the path.
pub fn check_request(fields: &[qpack::Field]) -> Result<String, RequestError> {
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let wrong = |what: String| Err(RequestError::NotWebTransport(what));
    match get(":method") {
        Some("CONNECT") => {}
        other => return wrong(format!("method {other:?}, expected CONNECT")),
    }
    match get(":protocol") {
        Some("webtransport") => {}
        other => return wrong(format!(":protocol {other:?}, expected \"webtransport\"")),
    }
    match get(":scheme") {
        Some("https") => {}
        other => return wrong(format!(":scheme {other:?}, expected https")),
    }
    if get(":authority").is_none() {
        return wrong("no :authority".to_owned());
    }
    let path = get(":path").unwrap_or("");
    let bare = path.split('?').next().unwrap_or("");
    if bare != SESSION_PATH {
        return Err(RequestError::UnknownPath(path.to_owned()));
    }
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_length() {
        for value in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut slice = out.as_slice();
            assert_eq!(varint(&mut slice), Some(value));
            assert!(slice.is_empty());
            // Cut short, it is incomplete rather than wrong.
            let mut short = &out[..out.len() - 1];
            if !short.is_empty() {
                assert_eq!(varint(&mut short), None);
            }
        }
        // RFC 9000 §A.1's examples.
        assert_eq!(varint(&mut &[0x40, 0x25][..]), Some(37));
        assert_eq!(varint(&mut &[0x7b, 0xbd][..]), Some(15_293));
    }

    #[test]
    fn the_server_settings_enable_webtransport() {
        let bytes = server_control_stream();
        let mut rest = &bytes[..];
        assert_eq!(varint(&mut rest), Some(STREAM_CONTROL));
        let (kind, payload, used) = take_frame(rest).unwrap().unwrap();
        assert_eq!((kind, used), (FRAME_SETTINGS, rest.len()));
        let mut settings = Vec::new();
        let mut p = payload;
        while !p.is_empty() {
            settings.push((varint(&mut p).unwrap(), varint(&mut p).unwrap()));
        }
        for needed in [(0x08, 1), (0x33, 1), (0xc671706a, 1)] {
            assert!(settings.contains(&needed), "{needed:x?} missing");
        }
    }

    fn fields(list: &[(&str, &str)]) -> Vec<qpack::Field> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_a_webtransport_connect_to_the_session_path_is_accepted() {
        let good = [
            (":method", "CONNECT"),
            (":protocol", "webtransport"),
            (":scheme", "https"),
            (":authority", "127.0.0.1:4433"),
            (":path", "/mmo?spectate"),
        ];
        assert_eq!(check_request(&fields(&good)).unwrap(), "/mmo?spectate");
        let mut get = good;
        get[0].1 = "GET";
        assert_eq!(check_request(&fields(&get)).unwrap_err().status(), 400);
        let mut ws = good;
        ws[1].1 = "websocket";
        assert!(matches!(
            check_request(&fields(&ws)),
            Err(RequestError::NotWebTransport(_))
        ));
        let mut other = good;
        other[4].1 = "/admin";
        assert_eq!(check_request(&fields(&other)).unwrap_err().status(), 404);
        assert!(check_request(&fields(&good[..4])).is_err());
    }

    #[test]
    fn frames_wait_for_their_bytes_and_refuse_huge_ones() {
        let whole = frame(FRAME_HEADERS, b"abc");
        for end in 0..whole.len() {
            assert_eq!(take_frame(&whole[..end]).unwrap(), None);
        }
        let (kind, payload, used) = take_frame(&whole).unwrap().unwrap();
        assert_eq!(
            (kind, payload, used),
            (FRAME_HEADERS, &b"abc"[..], whole.len())
        );
        let mut huge = Vec::new();
        put_varint(&mut huge, FRAME_HEADERS);
        put_varint(&mut huge, 1 << 20);
        assert_eq!(take_frame(&huge), Err(RequestError::TooLarge(1 << 20)));
    }

    #[test]
    fn frames_http3_does_not_define_are_extensions() {
        for kind in [
            0x0a,
            0x0c,
            0x0e,
            0x21,
            0x21 + 0x1f * 7,
            0x2f00,
            0x4000_0000_0000,
        ] {
            assert!(is_extension_frame(kind), "{kind:#x}");
        }
        for kind in [
            0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0d,
        ] {
            assert!(!is_extension_frame(kind), "{kind:#x}");
        }
    }
}
