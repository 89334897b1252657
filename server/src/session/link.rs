//! How a session's bytes travel: a native QUIC connection (the protocol's ALPN) or a
//! WebTransport session (ALPN `h3`, [`crate::webtransport`]), with snapshots as datagrams,
//! or on a stream for a client whose connection takes no datagrams.
//!
//! Everything above this module sees one control stream, incoming input datagrams and a
//! [`DatagramSink`] for snapshots, whichever way they travel.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use quinn::{Connection, RecvStream, SendStream};
use tokio::sync::Notify;

use crate::game::DatagramSink;
use crate::webtransport::{self, WtError, WtSession};

/// A session's carriage.
pub struct Link {
    conn: Connection,
    /// WebTransport's datagram prefix and the streams that keep its session open; `None`
    /// for a native connection.
    wt: Option<(Vec<u8>, WtSession)>,
    /// The WebTransport request's path and query (`None` for native clients).
    pub path: Option<String>,
}

/// Why a link did not open.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The connection or its control stream went away.
    #[error("the connection was lost before its control stream opened")]
    Lost,
    /// A WebTransport session did not open.
    #[error("WebTransport: {0}")]
    WebTransport(#[from] WtError),
}

/// Whether the connection negotiated HTTP/3 (a browser's WebTransport).
pub fn is_webtransport(conn: &Connection) -> bool {
    conn.handshake_data()
        .and_then(|data| data.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|data| data.protocol)
        .is_some_and(|alpn| alpn == webtransport::ALPN)
}

impl Link {
    /// Waits for the client's control stream (after opening the WebTransport session, for
    /// an `h3` connection).
    pub async fn open(conn: &Connection) -> Result<(Link, SendStream, RecvStream), LinkError> {
        if is_webtransport(conn) {
            let (session, send, recv) = webtransport::accept(conn).await?;
            let prefix = session.datagram_prefix.clone();
            let path = Some(session.path.clone());
            let link = Link {
                conn: conn.clone(),
                wt: Some((prefix, session)),
                path,
            };
            return Ok((link, send, recv));
        }
        let (send, recv) = conn.accept_bi().await.map_err(|_| LinkError::Lost)?;
        let link = Link {
            conn: conn.clone(),
            wt: None,
            path: None,
        };
        Ok((link, send, recv))
    }

    /// Whether snapshots go on a stream because the client takes no datagrams.
    pub fn streams_snapshots(&self) -> bool {
        self.conn.max_datagram_size().is_none()
    }

    /// The largest snapshot the client can be sent, as the handshake checks it: the path's
    /// datagram limit less the WebTransport prefix, or the protocol's datagram limit when
    /// snapshots go on a stream.
    pub fn max_snapshot_bytes(&self) -> Option<usize> {
        match self.conn.max_datagram_size() {
            None => Some(protocol::MAX_DATAGRAM_BYTES),
            Some(max) => Some(max.saturating_sub(self.prefix().len())),
        }
    }

    fn prefix(&self) -> &[u8] {
        self.wt.as_ref().map_or(&[], |(prefix, _)| prefix)
    }

    /// The next datagram of this session, without the WebTransport prefix: `Err` when the
    /// connection is gone, `Ok(None)` for a datagram that names another session (or none),
    /// which the caller counts as invalid. The prefix is read as the number it encodes,
    /// since QUIC allows a longer encoding than the shortest.
    pub async fn read_datagram(&self) -> Result<Option<Bytes>, ()> {
        let datagram = self.conn.read_datagram().await.map_err(|_| ())?;
        let Some((_, session)) = &self.wt else {
            return Ok(Some(datagram));
        };
        let mut rest = &datagram[..];
        match webtransport::h3::varint(&mut rest) {
            Some(id) if id == session.quarter_stream_id => {
                Ok(Some(datagram.slice(datagram.len() - rest.len()..)))
            }
            _ => Ok(None),
        }
    }

    /// Where the world's snapshots for this session go.
    pub fn sink(&self) -> Box<dyn DatagramSink> {
        if self.streams_snapshots() {
            return Box::new(StreamSink::start(self.conn.clone()));
        }
        match &self.wt {
            None => Box::new(self.conn.clone()),
            Some((prefix, _)) => Box::new(WtSink {
                conn: self.conn.clone(),
                prefix: prefix.clone(),
            }),
        }
    }
}

/// Snapshots as HTTP datagrams of a WebTransport session.
struct WtSink {
    conn: Connection,
    prefix: Vec<u8>,
}

impl DatagramSink for WtSink {
    fn max_datagram_size(&self) -> Option<usize> {
        self.conn
            .max_datagram_size()
            .map(|max| max.saturating_sub(self.prefix.len()))
    }
    fn send_space(&self) -> usize {
        self.conn
            .datagram_send_buffer_space()
            .saturating_sub(self.prefix.len())
    }
    fn send(&self, datagram: Bytes) -> bool {
        let mut framed = Vec::with_capacity(self.prefix.len() + datagram.len());
        framed.extend_from_slice(&self.prefix);
        framed.extend_from_slice(&datagram);
        self.conn.send_datagram(framed.into()).is_ok()
    }
    fn remote(&self) -> Option<std::net::SocketAddr> {
        Some(self.conn.remote_address())
    }
}

/// Snapshots on a unidirectional stream the server opens, for a client without datagrams:
/// each one framed as a control frame is (a 4-byte big-endian length, then the datagram's
/// bytes), and the latest wins: a snapshot the stream has not taken yet when the next one
/// comes is replaced by it, so a slow reader skips snapshots rather than falling behind.
struct StreamSink {
    slot: Arc<Slot>,
    remote: std::net::SocketAddr,
}

#[derive(Default)]
struct Slot {
    latest: Mutex<Option<Bytes>>,
    ready: Notify,
    closed: std::sync::atomic::AtomicBool,
}

impl StreamSink {
    fn start(conn: Connection) -> StreamSink {
        let remote = conn.remote_address();
        let slot = Arc::new(Slot::default());
        let writer = Arc::clone(&slot);
        tokio::spawn(async move {
            let written = write_latest(&conn, &writer);
            tokio::select! {
                _ = written => {}
                _ = conn.closed() => {}
            }
            writer
                .closed
                .store(true, std::sync::atomic::Ordering::Relaxed);
        });
        StreamSink { slot, remote }
    }
}

/// Writes the slot's latest snapshot whenever there is one; ends when the stream fails.
async fn write_latest(conn: &Connection, slot: &Slot) -> Option<()> {
    let mut stream = conn.open_uni().await.ok()?;
    loop {
        slot.ready.notified().await;
        let next = slot
            .latest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(datagram) = next else { continue };
        let len = u32::try_from(datagram.len()).ok()?;
        stream.write_all(&len.to_be_bytes()).await.ok()?;
        stream.write_all(&datagram).await.ok()?;
    }
}

impl DatagramSink for StreamSink {
    fn max_datagram_size(&self) -> Option<usize> {
        Some(protocol::MAX_DATAGRAM_BYTES)
    }
    fn send_space(&self) -> usize {
        // Latest wins: there is always room for the next snapshot.
        protocol::MAX_DATAGRAM_BYTES
    }
    fn send(&self, datagram: Bytes) -> bool {
        if self.slot.closed.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        *self
            .slot
            .latest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(datagram);
        self.slot.ready.notify_one();
        true
    }
    fn remote(&self) -> Option<std::net::SocketAddr> {
        Some(self.remote)
    }
}
