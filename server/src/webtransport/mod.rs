//! WebTransport over HTTP/3, for browsers: the same QUIC endpoint as native clients, told
//! apart by ALPN (`h3` here, the protocol's own ALPN for native clients).
//!
//! A browser opens a session with an extended CONNECT to [`h3::SESSION_PATH`] on its first
//! bidirectional stream, then opens one WebTransport bidirectional stream, which carries
//! the game's control frames exactly as a native client's control stream does. Inputs and
//! snapshots are HTTP datagrams (RFC 9297): the game's datagram bytes behind the session's
//! quarter stream id. Everything after [`accept`] is the ordinary session.
//!
//! Only what a WebTransport client needs is implemented: no dynamic QPACK table (the server
//! advertises a capacity of 0), one session per connection, no other HTTP requests.
//!
//! The session ends when the client ends it: a `CLOSE_WEBTRANSPORT_SESSION` capsule, or
//! the end or reset of its CONNECT stream (what a browser's `transport.close()` sends).
//! The server then closes the connection, which holds no other session, and the game's
//! session ends as for a connection lost.

pub mod h3;
mod huffman_table;
pub mod qpack;
mod session_end;

use quinn::{Connection, RecvStream, SendStream};
use tracing::debug;

/// The ALPN of HTTP/3.
pub const ALPN: &[u8] = b"h3";

/// `H3_STREAM_CREATION_ERROR`, for peer streams of a type this server does not take.
const H3_STREAM_CREATION_ERROR: u32 = 0x0103;

/// An open WebTransport session.
pub struct WtSession {
    /// What precedes every HTTP datagram this server sends in this session: its quarter
    /// stream id, as the shortest variable-length integer.
    pub datagram_prefix: Vec<u8>,
    /// The quarter stream id, which a client's datagrams start with (in any of the
    /// variable-length integer's encodings).
    pub quarter_stream_id: u64,
    /// The request's path and query.
    pub path: String,
    /// The server's HTTP/3 control stream and its side of the CONNECT stream; closing
    /// either would end the session, so they live as long as it does. (The client's side
    /// is watched for the session's end: [`session_end::watch`].)
    _keep: (SendStream, SendStream),
}

/// Why a WebTransport session did not open.
#[derive(Debug, thiserror::Error)]
pub enum WtError {
    /// The connection or a stream went away.
    #[error("the connection was lost while opening the session")]
    Lost,
    /// The CONNECT request was refused (and answered with its status).
    #[error(transparent)]
    Request(#[from] h3::RequestError),
    /// The first WebTransport stream was not one of this session.
    #[error("the control stream does not belong to the session: {0}")]
    BadStream(String),
}

/// Opens the session on an `h3` connection: sends the server's SETTINGS, takes the
/// CONNECT request and answers it, then waits for the session's first bidirectional
/// stream, which it returns beside the session: the game's control stream. The caller
/// bounds the time this takes.
pub async fn accept(conn: &Connection) -> Result<(WtSession, SendStream, RecvStream), WtError> {
    let mut control = conn.open_uni().await.map_err(|_| WtError::Lost)?;
    control
        .write_all(&h3::server_control_stream())
        .await
        .map_err(|_| WtError::Lost)?;
    tokio::spawn(take_peer_uni_streams(conn.clone()));

    let (mut connect_send, mut connect_recv) = conn.accept_bi().await.map_err(|_| WtError::Lost)?;
    let session_id = u64::from(connect_send.id());
    let (path, early) = match read_request(&mut connect_recv).await {
        Ok(read) => read,
        Err(err) => {
            if let WtError::Request(refused) = &err {
                let _ = connect_send
                    .write_all(&h3::refuse_response(refused.status()))
                    .await;
                let _ = connect_send.finish();
                let _ = connect_send.stopped().await;
            }
            return Err(err);
        }
    };
    connect_send
        .write_all(&h3::accept_response())
        .await
        .map_err(|_| WtError::Lost)?;

    let (send, mut recv) = conn.accept_bi().await.map_err(|_| WtError::Lost)?;
    let signal = read_varint(&mut recv).await.ok_or(WtError::Lost)?;
    if signal != h3::WT_BIDI_SIGNAL {
        return Err(WtError::BadStream(format!(
            "it starts with {signal:#x}, not the WebTransport signal {:#x}",
            h3::WT_BIDI_SIGNAL
        )));
    }
    let session = read_varint(&mut recv).await.ok_or(WtError::Lost)?;
    if session != session_id {
        return Err(WtError::BadStream(format!(
            "it names session {session}, the session is {session_id}"
        )));
    }
    let mut datagram_prefix = Vec::new();
    h3::put_varint(&mut datagram_prefix, session_id / 4);
    let session = WtSession {
        datagram_prefix,
        quarter_stream_id: session_id / 4,
        path,
        _keep: (control, connect_send),
    };
    let body = session_end::ConnectBody {
        early,
        recv: connect_recv,
    };
    tokio::spawn(session_end::watch(conn.clone(), body));
    Ok((session, send, recv))
}

/// Reads the request's HEADERS frame and checks it; frames of types HTTP/3 does not
/// define before it are skipped (RFC 9114 §9: a browser may send "grease" frames), within
/// the handshake's deadline that bounds this whole read. Returns the path and the bytes
/// read beyond the frame (the start of the body, where the session's end may be told).
async fn read_request(recv: &mut RecvStream) -> Result<(String, Vec<u8>), WtError> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        // The frames skipped are dropped once a read, not one by one: a stream of tiny
        // frames costs its length, not its length times the buffer's.
        let mut at = 0;
        while let Some((kind, payload, used)) = h3::take_frame(&buf[at..])? {
            if kind == h3::FRAME_HEADERS {
                let fields = qpack::decode(payload).map_err(h3::RequestError::from)?;
                let path = h3::check_request(&fields)?;
                return Ok((path, buf[at + used..].to_vec()));
            }
            if !h3::is_extension_frame(kind) {
                return Err(h3::RequestError::NotHeaders(kind).into());
            }
            at += used;
        }
        buf.drain(..at);
        match recv.read(&mut chunk).await {
            Ok(Some(n)) => buf.extend_from_slice(&chunk[..n]),
            Ok(None) | Err(_) => return Err(WtError::Lost),
        }
    }
}

/// Reads one variable-length integer from a stream.
async fn read_varint(recv: &mut RecvStream) -> Option<u64> {
    let mut bytes = [0u8; 8];
    recv.read_exact(&mut bytes[..1]).await.ok()?;
    let len = 1usize << (bytes[0] >> 6);
    recv.read_exact(&mut bytes[1..len]).await.ok()?;
    h3::varint(&mut &bytes[..len])
}

/// Takes the browser's unidirectional streams: its control stream and its QPACK streams
/// are read and discarded (no dynamic table is in use, and no setting of the client's
/// changes what this server sends); any other type is stopped.
async fn take_peer_uni_streams(conn: Connection) {
    while let Ok(mut recv) = conn.accept_uni().await {
        tokio::spawn(async move {
            let Some(kind) = read_varint(&mut recv).await else {
                return;
            };
            match kind {
                h3::STREAM_CONTROL | 0x02 | 0x03 => {
                    let mut sink = [0u8; 1024];
                    while let Ok(Some(_)) = recv.read(&mut sink).await {}
                }
                other => {
                    debug!(
                        kind = other,
                        "stopping a unidirectional stream of unknown type"
                    );
                    let _ = recv.stop(H3_STREAM_CREATION_ERROR.into());
                }
            }
        });
    }
}
