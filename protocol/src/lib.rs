//! protocol: the wire between the game server and its clients. Messages ([`messages`]),
//! their encoding with size limits ([`codec`], the only module that knows the format) and
//! delta snapshots ([`view`]). No I/O and no clock: the server and the load-test bots both
//! build on it, and it is tested without sockets.
//!
//! # Writing a client
//!
//! **Transport.** QUIC (RFC 9000) with TLS 1.3, ALPN [`ALPN`] (`mmo-sim/1`). The server
//! presents a self-signed certificate unless configured with one; it logs the certificate's
//! SHA-256 fingerprint at start so clients can pin it. The client must support QUIC
//! datagrams (RFC 9221).
//!
//! **Encoding.** bincode 2 "standard": little endian, integers as variable-length (a value
//! below 251 is one byte; otherwise a marker byte 251/252/253 followed by 2/4/8 bytes),
//! signed integers zigzag-encoded first, `f32` as 4 bytes, `Option` as a 0/1 byte then the
//! value, enums as the variant index (variable-length, from 0 in declaration order) then the
//! fields, `String` and `Vec` as a variable-length count then the items. Structs are their
//! fields in declaration order. See [`messages`] for every type.
//!
//! **Control stream.** The client opens one bidirectional stream. Each frame is a 4-byte
//! big-endian length then that many bytes of one message ([`ClientMessage`] from the client,
//! [`ServerMessage`] from the server); a length above [`MAX_FRAME_BYTES`] (4,096) closes the
//! session. The session goes:
//!
//! 1. client → [`ClientMessage::Hello`] with [`PROTOCOL_VERSION`]. A server of another
//!    version answers [`ServerMessage::Disconnect`] with
//!    [`DisconnectReason::VersionMismatch`] and a text naming both versions.
//! 2. client → [`ClientMessage::Login`] (name of 1–32 characters, optional token).
//! 3. server → [`ServerMessage::Welcome`]: the client's character id, tick rate, map id,
//!    map bounds and view radius. From now on datagrams flow both ways.
//! 4. Either side may send `Ping { nonce }`; the other answers `Pong` with the same nonce.
//!    The server may send [`ServerMessage::Event`]s. The client ends the session with
//!    [`ClientMessage::Leave`] (or by closing the connection).
//! 5. The server ends a session with [`ServerMessage::Disconnect`] (a reason and a text),
//!    then closes the connection with the reason's [`DisconnectReason::code`] as the QUIC
//!    application error code, so the reason is known even if the frame is lost.
//!
//! The handshake (hello and login) must finish within a few seconds or the server closes
//! the connection with [`DisconnectReason::Timeout`].
//!
//! **Datagrams.** Each is one version byte (the low 8 bits of [`PROTOCOL_VERSION`]) and one
//! message, at most [`MAX_DATAGRAM_BYTES`] (1,200) in all.
//! - Client → server: [`ClientDatagram::Input`]: a sequence number (increasing), the newest
//!   snapshot tick received, and a [`Command`] (move to a point, walk in a direction, stop,
//!   or nothing). Inputs are unreliable and the latest wins; send the current intent again
//!   if it matters, and send `Nothing` inputs to acknowledge snapshots when idle. The server
//!   drops inputs with non-finite numbers, points outside the map bounds, or above its
//!   rate limit, and counts them; after [`MAX_INVALID_MESSAGES`] invalid messages it
//!   disconnects with [`DisconnectReason::TooManyInvalid`].
//! - Server → client: [`ServerDatagram::Snapshot`], one per tick (20 per second) unless the
//!   client's bandwidth budget is spent. A snapshot is a delta against the view of the
//!   snapshot at `baseline_tick` (one the client acknowledged; `None` means against an empty
//!   view): entities that entered the view (full state), changed (position delta in
//!   centimetres, and motion when it changed) or left. Keep the views of the last few
//!   snapshots received (32 is plenty) by tick; apply each snapshot to its baseline's view
//!   with [`View::apply`] and drop snapshots whose baseline you no longer hold or whose tick
//!   is not newer than the newest you applied (datagrams can arrive out of order).
//!   [`ViewHistory`] does exactly this. Acknowledge the newest tick in your next input.
//!
//! Positions are centimetres ([`QPos`]); world coordinates are metres with the map's
//! bounds from the welcome. The view holds the entities within the view radius of your
//! character (with a few metres of hysteresis before they leave), nearest first when a
//! datagram cannot hold every change; an entity left out keeps its last state in your view
//! and is sent in a later snapshot.

pub mod codec;
pub mod messages;
pub mod view;

pub use codec::{DecodeError, EncodeError, MAX_DATAGRAM_BYTES, MAX_FRAME_BYTES};
pub use messages::{
    Bounds, Change, ClientDatagram, ClientMessage, Command, DisconnectReason, EntityKind,
    EntityState, Event, Input, Motion, NetId, QPos, ServerDatagram, ServerMessage, Snapshot,
    Welcome,
};
pub use view::{
    ApplyError, BuildError, Candidate, Received, SnapshotBuilder, SnapshotHeader, View,
    ViewHistory, build_snapshot,
};

/// The protocol version this crate speaks. Bumped on any change to a message.
pub const PROTOCOL_VERSION: u16 = 1;

/// The ALPN protocol name of the QUIC connection.
pub const ALPN: &[u8] = b"mmo-sim/1";

/// Invalid messages (undecodable datagrams, invalid inputs) a session may send before the
/// server disconnects it.
pub const MAX_INVALID_MESSAGES: u32 = 100;

/// Longest login name, characters.
pub const MAX_NAME_CHARS: usize = 32;
