//! protocol: the wire between the game server and its clients. Messages ([`messages`]),
//! their encoding with size limits ([`codec`], the only module that knows the format) and
//! delta snapshots ([`view`]). No I/O and no clock: the server and the load-test bots both
//! build on it, and it is tested without sockets.
//!
//! These docs are the protocol's specification for client authors. Behaviour of today's
//! server that a client relies on is stated here too, with the server's default settings
//! (`server run`, see `docs/server.example.toml`) and, where the value is a constant, the
//! constant's name. [`wire_examples`] shows each kind of message byte by byte, and
//! `clients/python/mmo_client.py` in the repository is a client in Python written from
//! these docs (CI runs it against the server).
//!
//! # Writing a client
//!
//! ## Connection
//!
//! QUIC version 1 (RFC 9000) over UDP, TLS 1.3 only, ALPN [`ALPN`] (`mmo-sim/1`), and QUIC
//! datagrams (RFC 9221). The server listens on `127.0.0.1:4433` unless configured
//! otherwise. It may answer a first connection attempt with a QUIC Retry (setting `retry`,
//! on by default); it accepts no 0-RTT data and no connection migration.
//!
//! - **Certificate.** Unless given one (settings `cert` and `key`), the server creates a new
//!   self-signed certificate at every start (so its fingerprint changes), valid for the DNS
//!   name `localhost` and the IP addresses `127.0.0.1` and `::1`. No authority signs it, so
//!   a client pins it instead of validating a chain: the **fingerprint** is the SHA-256
//!   digest of the leaf certificate's DER encoding, written as 64 lowercase hex digits
//!   without separators (`openssl x509 -noout -fingerprint -sha256` prints the same digest
//!   in upper case with colons). The server logs it at start (the `fingerprint` field of
//!   its "server started" line) and, with the setting `fingerprint_file`, writes it to that
//!   file followed by a newline. A pinning client accepts the certificate whose DER digest
//!   equals the pinned one and skips name and chain checks; the TLS handshake's own
//!   signature check still applies. The generated certificate's key is ECDSA P-256 (TLS
//!   signature scheme `ecdsa_secp256r1_sha256`). With a QUIC stack that has no hook to
//!   check a certificate during the handshake, turn its verification off, compare the
//!   peer certificate's digest once the handshake completes, and close the connection
//!   before sending anything when it differs.
//! - **Server name (SNI).** The server has one certificate and ignores the name the client
//!   sends. The reference client (the `client` crate) sends `localhost`; with a certificate of
//!   your own, send its DNS name and validate it normally.
//! - **Datagrams.** The client must offer datagram support (the `max_datagram_frame_size`
//!   transport parameter). Snapshot datagrams are at most [`MAX_DATAGRAM_BYTES`] (1,200)
//!   bytes; the server sizes each one to the smallest of its setting `snapshot_max_bytes`
//!   (800 by default, at most 1,200), the path's MTU, and the client's parameter minus 9
//!   bytes of frame overhead. So a client should advertise at least 1,209 (quinn and most
//!   stacks advertise 65,535); a smaller value only makes snapshots smaller. A client whose
//!   connection takes no datagrams at all gets its snapshots on a stream instead (see
//!   *Clients without datagrams*). One that takes datagrams, but none of at least 200
//!   bytes (the server's `MIN_SNAPSHOT_BYTES`), is refused at login, after the name check,
//!   with [`DisconnectReason::DatagramsUnsupported`] (a `Disconnect` frame, then close code
//!   12).
//! - **Streams.** The client opens exactly one bidirectional stream, the control stream;
//!   the server opens none, except the snapshot stream of a client without datagrams.
//!   (The server lets a connection open two bidirectional and four unidirectional streams,
//!   which a browser's HTTP/3 needs; a native client uses one.) QUIC announces a stream
//!   only with its first bytes, so send the hello at once.
//! - **Liveness.** The server sends QUIC keep-alives every 4 s (setting `keep_alive_secs`)
//!   and the connection closes after 15 s without a packet from the peer
//!   (`idle_timeout_secs`; QUIC takes the smaller of both sides' `max_idle_timeout`). No
//!   application ping is needed: the server never sends [`ServerMessage::Ping`] today and
//!   answers a [`ClientMessage::Ping`] with a [`ServerMessage::Pong`] of the same nonce
//!   (useful to measure the round trip). A client must still answer a server `Ping` with a
//!   `Pong` should one come.
//!
//! ## Encoding
//!
//! bincode 2 "standard": little endian, integers as variable-length (a value up to 250 is
//! one byte; otherwise a marker byte 251/252/253 followed by 2/4/8 bytes), whatever the
//! field's type (`u16` included); signed integers zigzag-encoded first; `f32` as 4 bytes;
//! `Option` as a 0/1 byte then the value; enums as the variant index (variable-length,
//! from 0 in declaration order) then the fields; `String` and `Vec` as a variable-length
//! count (of bytes for a string) then the items. Structs are their fields in declaration
//! order. [`wire_examples`] spells this out on real messages; [`messages`] has every type.
//! A message must be followed by nothing: trailing bytes in a frame or datagram make it
//! invalid. Decoders on both sides take an integer written wider than needed (a 5 as 251
//! then two bytes), and refuse a marker wider than the field's type (252 or 253 for a
//! `u16`; 253 for a `u32`), the markers 254 and 255, an enum index past the last variant
//! and an `Option` tag other than 0 or 1.
//!
//! ## Control stream
//!
//! Each frame is a 4-byte big-endian length then that many bytes of one message
//! ([`ClientMessage`] from the client, [`ServerMessage`] from the server). A length above
//! [`MAX_FRAME_BYTES`] (4,096) ends the session at once with `FrameTooLarge`; a length of
//! 0, or a payload that is not exactly one valid message, with `BadMessage`, as does any
//! other message in place of the hello or the login. The session goes:
//!
//! 1. client → [`ClientMessage::Hello`] with [`PROTOCOL_VERSION`]. A server of another
//!    version answers [`ServerMessage::Disconnect`] with
//!    [`DisconnectReason::VersionMismatch`] and a text naming both versions.
//! 2. client → [`ClientMessage::Login`]. The name is 1 to [`MAX_NAME_CHARS`] (32)
//!    characters, counted as Unicode scalar values (Rust `char`s, Python `len(str)`), not
//!    bytes and not user-perceived characters, and holds no control character (Unicode
//!    category Cc: U+0000–U+001F and U+007F–U+009F). Anything else is allowed, spaces and
//!    other players' names included. A name outside these rules is refused with
//!    [`DisconnectReason::LoginRejected`]. A server configured with a public key
//!    (`auth_public_key`) also wants a token (see *Login tokens*) whose account is the
//!    name; a server without one (development mode) ignores the token. One account has
//!    at most one live session: a login of an account already in the world is refused
//!    with `LoginRejected` ("already logged in"), the first session goes on. Instead of
//!    the login, a client may send [`ClientMessage::Spectate`] (see *Spectators*).
//! 3. server → [`ServerMessage::Welcome`]: the client's character id, tick rate, map id,
//!    map bounds and view radius. Snapshot datagrams can arrive before the welcome (the
//!    stream and datagrams are not ordered with each other); a client may apply them, or
//!    drop them and wait for the next.
//! 4. Then either side may send `Ping { nonce }`, answered by `Pong` with the same nonce
//!    (the server answers at most [`MAX_PINGS_PER_SEC`] a second, a second's worth at
//!    once; a ping beyond that is an invalid message and gets no `Pong`); the server
//!    sends [`ServerMessage::Event`]s. A `Hello` or `Login` after the login is
//!    an invalid message (see *Inputs*) and changes nothing: the session goes on under its
//!    first name. The client ends the session with [`ClientMessage::Leave`]; the server
//!    answers with a `Disconnect` of [`DisconnectReason::ClientLeft`].
//!
//! Frames the client sends after the login and before the welcome are handled after the
//! welcome.
//!
//! ## Login tokens
//!
//! The game's login service issues them; the game server checks them with its public key
//! and does no other lookup. `Login.token` carries the token as ASCII text:
//!
//! ```text
//! v1.<payload>.<signature>
//! ```
//!
//! - `<payload>`: base64url without padding (RFC 4648 §5, `A–Z a–z 0–9 - _`, no `=`) of
//!   the expiry as 8 bytes (unsigned big-endian seconds since the Unix epoch, UTC)
//!   followed by the account name in UTF-8 (1 to 128 bytes, to the end).
//! - `<signature>`: base64url without padding of the 64-byte Ed25519 signature (RFC 8032)
//!   of the ASCII text `v1.<payload>`, with the private key whose public half the server
//!   is configured with (`server keygen` makes a pair; OpenSSL's Ed25519 PEM keys work
//!   too).
//!
//! A token is at most 512 bytes. The server takes it until 30 s after its expiry (room for
//! the two machines' clocks to differ). A missing, malformed, forged or expired token, or
//! one for another account than the name, is refused with
//! [`DisconnectReason::LoginRejected`] and a text saying which. `server token --signing-key
//! FILE --account NAME --ttl SECS` prints one for development; the `auth` crate's docs
//! give a Python version of the minting.
//!
//! ## How a session ends
//!
//! Most endings are a [`ServerMessage::Disconnect`] (a reason and a text): the server
//! writes it, finishes its side of the stream, waits up to half a second for the client to
//! receive it, then closes the connection with the reason's [`DisconnectReason::code`] as
//! the QUIC application error code and the same text as the reason phrase. Some endings
//! arrive **only as a close code**, without a `Disconnect` frame:
//!
//! - [`DisconnectReason::Timeout`] (9): the hello and the login did not both arrive within
//!   5 s of the QUIC handshake's end (setting `handshake_timeout_secs`). The QUIC handshake
//!   itself must finish within the same time.
//! - [`DisconnectReason::ServerFull`] (5) at connection time: the server already holds its
//!   most sessions in total (`max_clients`) or from the client's IP address
//!   (`max_clients_per_ip`); the reason phrase says which. (When the world has no room
//!   for the character at login, `ServerFull` comes as a frame.)
//! - Code 0 with an empty reason phrase, which is no `DisconnectReason`
//!   ([`DisconnectReason::from_code`] gives `None`): the client finished (FIN) or reset
//!   its control stream, before or after the welcome. The server removes the character.
//!   A client that ends its stream gets this close rather than a `Disconnect`;
//!   [`ClientMessage::Leave`] is the clean way out.
//!
//! On shutdown the server sends [`Event::ShuttingDown`] with the grace period (2 s by
//! default, `shutdown_grace_secs`), then a `Disconnect` with
//! [`DisconnectReason::Shutdown`]; new connections are refused at the QUIC level. A
//! connection silent for the idle timeout closes without any application code.
//!
//! An operator may end a session through the server's admin API: the client gets a
//! `Disconnect` with [`DisconnectReason::Kicked`] (close code 13) and a text from the
//! operator. Like `DatagramsUnsupported`, this reason was appended within version 1: a
//! client built before it fails to decode that frame (an unknown variant) and sees an
//! unknown close code, and should treat both as the end of the session.
//!
//! ## Datagrams
//!
//! Each is one version byte (the low 8 bits of [`PROTOCOL_VERSION`]) and one message, at
//! most [`MAX_DATAGRAM_BYTES`] (1,200) in all.
//!
//! ### Inputs (client → server)
//!
//! [`ClientDatagram::Input`]: a sequence number, the newest snapshot tick applied, and a
//! [`Command`]. Send inputs only after the welcome: the server reads datagrams once the
//! session is in the world, so one sent before may be dropped (by the QUIC stack, when its
//! datagram buffer fills) or taken late.
//!
//! - **Sequence.** `seq` must grow with every input (start at 1 or above, and skip numbers
//!   if you like: `last_input_seq` is 0 before any input was taken, so an order sent as 0
//!   cannot be told taken); an input whose `seq` is not above the newest the server took is
//!   dropped without notice (datagrams can arrive out of order). Sequences do not wrap: a
//!   session sends fewer than 2^32 inputs (at 30 a second, four and a half years).
//! - **Latest wins.** Inputs are unreliable. Of the inputs that arrive during one tick,
//!   the last command other than [`Command::Nothing`] is applied at the next tick; send the
//!   current intent again if it matters. To know an order was taken, send it in every
//!   input from the first that carries it until a snapshot's `last_input_seq` reaches
//!   that first input: every input since carried the order, so the one taken did (the
//!   world leaves a body on its path when the same `MoveTo` comes again). A
//!   `last_input_seq` past an order sent only once proves nothing: a later input may have
//!   arrived without it. (The load-test bots resend an order not confirmed within 250 ms.)
//!   `Nothing` only acknowledges: send one at least every 100 ms or so when idle, so
//!   deltas stay small.
//! - **Commands.** [`Command::MoveTo`]: a point in metres, finite and inside the welcome's
//!   bounds (edges included); the server finds the path, and a point inside a wall, or on
//!   ground the character cannot reach (another island), is moved to the nearest point it
//!   can walk to. [`Command::Direction`]: finite, with a length
//!   (`hypot(x, y)`) of at least 1e-6 (the server's `session::machine::check_command`);
//!   only the direction counts, the character walks at its speed until the next command,
//!   kept out of walls. [`Command::Stop`] stops it.
//! - **Rate.** At most 30 inputs per second per session (setting `input_rate_per_sec`),
//!   as a token bucket that holds one second of inputs, so a burst of 30 passes. Inputs
//!   beyond the rate are dropped without notice: they are **not** invalid messages, get no
//!   event and never lead to a disconnect. Every valid input counts against the rate,
//!   `Nothing` and stale ones included.
//! - **Invalid messages.** An undecodable datagram (wrong version byte, too long,
//!   malformed, trailing bytes), an input that breaks the command rules above, a
//!   `Hello` or `Login` after the login, and a `Ping` beyond [`MAX_PINGS_PER_SEC`] each
//!   count as one invalid message and are dropped. The server tells the client with [`Event::InvalidInput`] (the count so far
//!   and why the latest was invalid), coalesced: at the first invalid message, then for an
//!   invalid message only when a second or more has passed since the last event. The
//!   count never decreases; at [`MAX_INVALID_MESSAGES`] (100) the session ends with
//!   [`DisconnectReason::TooManyInvalid`] instead of an event.
//!
//! ### Snapshots (server → client)
//!
//! [`ServerDatagram::Snapshot`]. The world ticks 20 times a second
//! (`Welcome::tick_rate_hz`); tick numbers count the server's ticks since it started, one
//! per tick. A client normally gets one snapshot per tick, fewer when the server thins out
//! snapshots under load (at worst one every 8 ticks, `MAX_STRIDE` in the server's
//! `snapshot_pool` module), when the client's bandwidth cap (64,000 bytes/s by default,
//! `bandwidth_cap_bytes_per_sec`) is spent, or when its connection is congested (after 200
//! congested snapshots in a row, 10 s at full rate, the server disconnects with
//! [`DisconnectReason::SlowClient`]).
//!
//! A snapshot is a delta against the view of the snapshot at `baseline_tick`: the newest
//! tick the client acknowledged (in an input's `ack_tick`; acknowledgements only move
//! forward, an input dropped as stale or over the rate carries none, and one of a tick the
//! server sent no snapshot of, or no longer holds, is ignored), if the server still holds
//! that view (it keeps the last 16 it sent, `server::interest::HISTORY`); else
//! `None`, against an empty view. It lists entities that entered the view (full state),
//! changed (position delta in centimetres, and the motion when it changed) or left. To
//! apply one to its baseline view ([`View::apply`] does this): remove every `left` id,
//! which must be in the baseline; move every `changed` entity by its delta and take its
//! motion when given, each of which must be in the baseline and not in `left`; add every
//! `entered` entity, which must not remain in the view. No id appears twice in one list,
//! but one id may be in `left` and `entered` of the same snapshot (its kind or radius
//! changed). Each list comes in id order (`index`, then `generation`), as a view is kept,
//! so a client can apply a snapshot in one merge of its sorted view with the three lists;
//! [`View::apply`] also accepts lists in any order (it sorts those that are not). Keep the
//! views of the last few snapshots received by tick (32 is plenty); apply each snapshot to
//! its baseline's view and drop snapshots whose baseline you no longer hold or whose tick
//! is not newer than the newest you applied. Once a snapshot against tick `B` is applied,
//! views older than `B` are never baselines again (the server holds your acknowledgement
//! of `B`, and its acknowledgements only move forward): drop them. [`ViewHistory`] does
//! exactly this, in reused memory ([`View::apply_into`]); a Rust client that receives
//! many snapshots can also decode each into one reused [`Snapshot`] with
//! [`codec::decode_snapshot_datagram`]. Acknowledge the newest tick in your next input.
//! `last_input_seq` is the `seq` of the newest input the world had taken when it ran the
//! tick (0 before any).
//!
//! The view holds the entities within the welcome's view radius of your character; one in
//! view leaves only 4 m further out (setting `view_hysteresis_m`, not in the welcome), so
//! entities on the border do not flicker. **Your own character is in your view**: it
//! ranks ahead of every other entity that enters or changes, so its position comes from
//! snapshots like anyone else's. A snapshot need not carry every change: the server looks
//! at far entities less often than near ones (this project's server: every tick within
//! 8 m of your character, down to every eighth tick at the edge of the view), and when a
//! datagram cannot hold every change, the nearest and most out-of-date entities go first.
//! One left out keeps its state in the baseline the snapshot applies to (even when a newer
//! snapshot you have not acknowledged yet carried it) and is sent in a later snapshot.
//!
//! **Draw the newest news, not the newest view.** While your acknowledgements take longer
//! than a tick to reach the server, snapshots apply to baselines a tick or more behind the
//! newest view, so consecutive views alternate between older and newer states of the
//! entities left out, and drawn as they are, those step back and forth. Keep the views
//! for the deltas, and draw of each entity the state carried last: for each view, note
//! the tick of the snapshot that carried each entity's state (for an entity the snapshot
//! left out, its baseline view's note), and draw the state with the newest note, or
//! nothing once a snapshot newer than that said it left; keep an entity the newest view
//! does not hold while its note is newer than that view's baseline. In detail: a snapshot
//! against no baseline counts as against tick 0; an entity the snapshot left out takes its
//! baseline view's note, or the baseline's tick when you no longer hold that view's notes;
//! a `left` id is a departure at the snapshot's tick, unless the same snapshot's `entered`
//! holds it (a new kind or radius); departures are kept while their tick is newer than the
//! baseline of the snapshot being taken in, and an entity is not drawn when a kept
//! departure is newer than its note. [`Shown`] does exactly this (`view/shown.rs`); with
//! prompt acknowledgements it is the view.
//!
//! ## World, units and axes
//!
//! The world is a plane: `x` and `y` in metres in the map's own coordinates, no height and
//! no orientation on the wire. Positions on the wire are whole centimetres ([`QPos`]), the
//! centre of the body's circle of `radius_cm`. For grid maps (the default map, den520d, is
//! one) one cell is one metre: cell (column `x`, row `y`) is the square from (`x`, `y`) to
//! (`x` + 1, `y` + 1), row 0 being the file's first row, so `y` grows downwards when the
//! map is drawn as its file reads. Player characters and NPCs are circles of 0.4 m radius
//! walking at 1.5 m/s (7.5 cm per tick; `RADIUS_M` and `SPEED_MPS` in the server's `game`
//! module); the crowd rules may also move a body aside (motion [`Motion::Circling`]) or
//! push it ([`Motion::Repulsed`]).
//!
//! ## The map
//!
//! `GET /map` on the server's HTTP listener (setting `metrics_listen`, `127.0.0.1:9100` by
//! default) returns the world's navmesh file (`application/octet-stream`): the format is
//! documented in the `navmesh` crate's `file` module (magic bytes, a format version,
//! vertices, counter-clockwise triangles, their neighbours, a CRC-32), in the same metres
//! as the wire. Its `X-Map-Id` header equals [`Welcome::map_id`]. The map does not change
//! while the server runs: the response carries a strong `ETag` and
//! `Cache-Control: public, max-age=3600`, and a request with `If-None-Match: <that tag>`
//! gets `304 Not Modified` without a body. A point is walkable when it lies in one of the
//! triangles; a `MoveTo` elsewhere walks to the nearest walkable point. `GET /map.svg`
//! draws the same map (walkable triangles filled, walls as lines) as SVG whose `viewBox`
//! is the map's bounds in metres, repeated in `X-Bounds-Min-X`, `-Min-Y`, `-Max-X` and
//! `-Max-Y` headers: a client can draw it under its entities without parsing the navmesh.
//!
//! ## Clients without datagrams
//!
//! Some QUIC stacks offer no datagrams (.NET's `System.Net.Quic` among them). The server
//! sees this in the client's transport parameters (no `max_datagram_frame_size`) and
//! serves the client all the same:
//!
//! - **Snapshots** come on one unidirectional stream the server opens after the welcome
//!   (allow the server at least one: `initial_max_streams_uni` ≥ 1). Each snapshot is
//!   framed like a control frame: a 4-byte big-endian length, then the bytes of the
//!   snapshot datagram (version byte included, at most [`MAX_DATAGRAM_BYTES`]). **Latest
//!   wins**: when the stream has not taken a snapshot by the time the next one is built,
//!   the older one is dropped, so a slow reader skips ticks instead of falling behind.
//!   Deltas work as with datagrams (acknowledge what you applied).
//! - **Inputs** go on the control stream as [`ClientMessage::Input`] frames, with exactly
//!   the rules of input datagrams (sequence, latest wins, rate, validity).
//!
//! ## Browsers: WebTransport
//!
//! The same QUIC port also speaks HTTP/3 (ALPN `h3`) for WebTransport
//! (draft-ietf-webtrans-http3; Chromium's `WebTransport`). A browser connects to
//! `https://HOST:PORT/mmo` (the QUIC port; any query string is allowed), and everything
//! else is this protocol unchanged: the first bidirectional WebTransport stream the client
//! opens is the control stream (frames as above), and inputs and snapshots are WebTransport
//! datagrams carrying the datagram bytes as above. Only one session per connection is
//! served; another path is answered 404, and a datagram naming another session (its
//! quarter stream id) counts as an invalid message.
//!
//! Unless the server is configured with a certificate (`cert`, `key`), browsers are given
//! a separate generated certificate that they accept by its hash: ECDSA P-256, valid for
//! 13 days from an hour before it was made (browsers take at most 14 days for
//! `serverCertificateHashes`), replaced after 6 days (connections already open keep
//! theirs). `GET /webtransport` on the HTTP listener returns, as JSON, `port` (the QUIC
//! port), `path` (`/mmo`) and `certificate_sha256` (64 lowercase hex digits, or `null`
//! with a configured certificate, which browsers validate through their authorities):
//!
//! ```text
//! const info = await (await fetch('/webtransport')).json();
//! const hash = Uint8Array.from(info.certificate_sha256.match(/../g), (h) => parseInt(h, 16));
//! const wt = new WebTransport(`https://${location.hostname}:${info.port}${info.path}`,
//!   { serverCertificateHashes: [{ algorithm: 'sha-256', value: hash }] });
//! ```
//!
//! Native clients always get the main certificate, whose fingerprint they pin. The
//! viewer page the server serves at `/` is a complete browser client in plain JavaScript
//! (`server/viewer/wire.js` encodes and decodes these messages).
//!
//! ## Spectators
//!
//! [`ClientMessage::Spectate`] in place of the login watches the world without a
//! character: the welcome's `entity` is [`NetId::NONE`], and snapshots hold what is within
//! the view radius of the spectator's point, exactly as a player's hold what is near its
//! character. A [`Command::MoveTo`] moves the point (clamped into the map's bounds); other
//! commands only acknowledge. A spectator sees one region of the view radius at a time,
//! whatever the size of the world. It counts against `max_clients` like a player.

pub mod bus;
pub mod codec;
pub mod messages;
pub mod view;

#[doc = include_str!("../docs/wire-examples.md")]
pub mod wire_examples {}

pub use codec::{DecodeError, EncodeError, MAX_DATAGRAM_BYTES, MAX_FRAME_BYTES};
pub use messages::{
    Bounds, Change, ClientDatagram, ClientMessage, Command, DisconnectReason, EntityKind,
    EntityState, Event, Input, Motion, NetId, QPos, ServerDatagram, ServerMessage, Snapshot,
    Welcome,
};
pub use view::{
    ApplyError, ApplyScratch, BuildError, Candidate, Received, Shown, SnapshotBuilder,
    SnapshotHeader, View, ViewHistory, build_snapshot,
};

/// The protocol version this crate speaks. Bumped on any change to a message. Datagrams
/// carry its low 8 bits as their first byte.
pub const PROTOCOL_VERSION: u16 = 1;

/// The ALPN protocol name of the QUIC connection.
pub const ALPN: &[u8] = b"mmo-sim/1";

/// Invalid messages (undecodable datagrams, inputs that break the command rules, a hello
/// or login after the login, pings beyond [`MAX_PINGS_PER_SEC`]) at which the server ends a session with
/// [`DisconnectReason::TooManyInvalid`]. Inputs dropped for the rate limit or as stale are
/// not invalid and do not count.
pub const MAX_INVALID_MESSAGES: u32 = 100;

/// The most [`ClientMessage::Ping`]s a second the server answers, as a token bucket that
/// holds one second of them: a ping beyond it gets no `Pong` and counts as an invalid
/// message.
pub const MAX_PINGS_PER_SEC: u32 = 10;

/// Longest login name, in characters: Unicode scalar values (Rust `char`s), not bytes.
pub const MAX_NAME_CHARS: usize = 32;
