//! The end of a WebTransport session as the client tells it on the CONNECT stream: a
//! `CLOSE_WEBTRANSPORT_SESSION` capsule, or the stream's end or reset.
//!
//! The stream's body, after the request, is HTTP/3 frames; capsules (RFC 9297) travel in
//! the payloads of its DATA frames, and one may be split across frames. Other frames and
//! other capsules are skipped without being kept.

use quinn::{Connection, RecvStream};
use tracing::debug;

use super::h3;

/// `H3_NO_ERROR`, closing the connection of a session the client ended.
const H3_NO_ERROR: u32 = 0x0100;

/// The frame type of HTTP/3 DATA.
const FRAME_DATA: u64 = 0x00;

/// The capsule type of `CLOSE_WEBTRANSPORT_SESSION`.
pub(super) const CLOSE_SESSION_CAPSULE: u64 = 0x2843;

/// The CONNECT stream's body after the request: first what the request's read took beyond
/// it, then the stream.
pub(super) struct ConnectBody {
    pub early: Vec<u8>,
    pub recv: RecvStream,
}

impl ConnectBody {
    /// The next bytes into `buf` (at least one), `None` at the stream's end or reset.
    async fn read(&mut self, buf: &mut [u8]) -> Option<usize> {
        if !self.early.is_empty() {
            let n = buf.len().min(self.early.len());
            buf[..n].copy_from_slice(&self.early[..n]);
            self.early.drain(..n);
            return Some(n);
        }
        match self.recv.read(buf).await {
            Ok(Some(n)) => Some(n),
            Ok(None) | Err(_) => None,
        }
    }

    /// One variable-length integer.
    async fn varint(&mut self) -> Option<u64> {
        let mut bytes = [0u8; 8];
        self.read_exact(&mut bytes[..1]).await?;
        let len = 1usize << (bytes[0] >> 6);
        self.read_exact(&mut bytes[1..len]).await?;
        h3::varint(&mut &bytes[..len])
    }

    async fn read_exact(&mut self, buf: &mut [u8]) -> Option<()> {
        let mut at = 0;
        while at < buf.len() {
            at += self.read(&mut buf[at..]).await?;
        }
        Some(())
    }
}

/// Reads the CONNECT stream's body until the client ends the session (a close capsule,
/// the stream's end or reset), then closes the connection, which holds no other session.
/// Ends with the connection.
pub(super) async fn watch(conn: Connection, mut body: ConnectBody) {
    let mut capsules = Capsules::default();
    let mut chunk = [0u8; 1024];
    let closed_by_capsule = async {
        loop {
            let kind = body.varint().await?;
            let mut len = body.varint().await?;
            while len > 0 {
                let take = len.min(chunk.len() as u64) as usize;
                let n = body.read(&mut chunk[..take]).await?;
                len -= n as u64;
                if kind == FRAME_DATA && capsules.feed(&chunk[..n]) {
                    return Some(());
                }
            }
        }
    }
    .await;
    if conn.close_reason().is_none() {
        let how = match closed_by_capsule {
            Some(()) => "CLOSE_WEBTRANSPORT_SESSION",
            None => "the CONNECT stream's end",
        };
        debug!(how, "the client ended its WebTransport session");
        conn.close(H3_NO_ERROR.into(), b"the WebTransport session ended");
    }
}

/// A parser of the capsules in a body, fed as its bytes arrive.
#[derive(Default)]
struct Capsules {
    /// The start of a capsule whose type and length are not all here yet.
    head: Vec<u8>,
    /// Bytes of the current capsule's payload still to skip.
    skip: u64,
}

impl Capsules {
    /// Takes the body's next bytes; `true` once a close capsule has begun. Each byte is
    /// looked at once: a capsule's header (two QUIC varints, at most 16 bytes) is held
    /// over reads only when a read cuts it short, and a payload is skipped in place.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        loop {
            let skipped = self.skip.min(bytes.len() as u64) as usize;
            self.skip -= skipped as u64;
            bytes = &bytes[skipped..];
            if bytes.is_empty() {
                return false;
            }
            let held = self.head.len();
            let take = bytes.len().min(CAPSULE_HEAD_MAX - held);
            self.head.extend_from_slice(&bytes[..take]);
            let mut rest = &self.head[..];
            let (Some(kind), Some(len)) = (h3::varint(&mut rest), h3::varint(&mut rest)) else {
                // The type and length are cut short: the rest comes with the next bytes.
                return false;
            };
            if kind == CLOSE_SESSION_CAPSULE {
                return true;
            }
            // The header's bytes that came in this read (it did not fit in those held).
            let used = self.head.len() - rest.len() - held;
            self.head.clear();
            self.skip = len;
            bytes = &bytes[used..];
        }
    }
}

/// The longest capsule header: a type and a length, each a QUIC varint of up to 8 bytes.
const CAPSULE_HEAD_MAX: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    fn capsule(kind: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        h3::put_varint(&mut out, kind);
        h3::put_varint(&mut out, payload.len() as u64);
        out.extend_from_slice(payload);
        out
    }

    /// A close capsule after others is found however the bytes are cut: all at once, byte
    /// by byte, or at every place in two.
    #[test]
    fn a_close_capsule_is_found_however_the_body_is_cut() {
        let mut body = capsule(0x78ae, b"");
        body.extend(capsule(0x1234_5678, &[7; 300]));
        body.extend(capsule(CLOSE_SESSION_CAPSULE, b"\0\0\0\x07bye"));
        assert!(Capsules::default().feed(&body));
        let mut capsules = Capsules::default();
        let found = body.iter().position(|&b| capsules.feed(&[b]));
        let close_at = body.len() - capsule(CLOSE_SESSION_CAPSULE, b"\0\0\0\x07bye").len();
        // Found once its type and length are in (two bytes of type, one of length).
        assert_eq!(found, Some(close_at + 2));
        for cut in 0..body.len() {
            let mut capsules = Capsules::default();
            let first = capsules.feed(&body[..cut]);
            assert!(first || capsules.feed(&body[cut..]), "cut at {cut}");
        }
    }

    /// Other capsules, whatever their payload holds, end nothing.
    #[test]
    fn other_capsules_are_skipped() {
        let mut close_inside = Vec::new();
        h3::put_varint(&mut close_inside, CLOSE_SESSION_CAPSULE);
        let mut body = capsule(0x78ae, &close_inside);
        body.extend(capsule(0x41, &[0x40; 70]));
        assert!(!Capsules::default().feed(&body));
        let mut capsules = Capsules::default();
        assert!(body.iter().all(|&b| !capsules.feed(&[b])));
    }
}
