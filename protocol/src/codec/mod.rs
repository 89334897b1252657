//! All encoding and decoding: the only module that knows bincode (2.0.x, pinned), so a
//! later switch of format is a change to this file alone.
//!
//! - Encoding: bincode's standard configuration (little endian, variable-length integers:
//!   values below 251 take one byte), then a size check: bincode enforces its limit only
//!   when decoding, so every encoder here checks the size it wrote.
//! - Datagrams: one version byte ([`crate::PROTOCOL_VERSION`], truncated to 8 bits) and the
//!   bincode body, at most [`MAX_DATAGRAM_BYTES`] in all.
//! - Control stream frames: a 4-byte big-endian payload length, then the bincode body of
//!   one message; the length is at most [`MAX_FRAME_BYTES`].
//! - Decoding: the wire size is checked first. bincode's memory limit (`FRAME_DECODE_LIMIT`,
//!   `DATAGRAM_DECODE_LIMIT`) caps what a string may reserve before its bytes are read,
//!   and lists grow only with the elements actually read (`deserialize_list`), so no
//!   allocation exceeds the decode limit whatever lengths the input announces. All bytes
//!   must be consumed: trailing bytes are an error, not ignored.

use std::fmt;
use std::marker::PhantomData;

use bincode::config::{Configuration, Limit, LittleEndian, Varint};
use serde::de::{DeserializeOwned, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

use crate::PROTOCOL_VERSION;
use crate::messages::{
    Change, ClientDatagram, ClientMessage, EntityState, NetId, ServerDatagram, ServerMessage,
};

/// Largest control-stream frame payload, bytes.
pub const MAX_FRAME_BYTES: usize = 4096;
/// Largest datagram, bytes (version byte included). On a path with QUIC's smallest MTU a
/// datagram holds a little less than this, so the server also caps each snapshot at what
/// the connection allows.
pub const MAX_DATAGRAM_BYTES: usize = 1200;
/// Bytes of a datagram before its message body: the version byte.
pub const DATAGRAM_HEADER_BYTES: usize = 1;
/// Bytes of a control frame before its payload: the length.
pub const FRAME_HEADER_BYTES: usize = 4;

/// Memory a decoder may claim for one frame. bincode's limit counts in-memory sizes of
/// what it allocates (a list of n items claims n × the item's size), not bytes read, so
/// it sits above the wire limit; the wire limit is checked separately before decoding.
const FRAME_DECODE_LIMIT: usize = 16 * 1024;
/// Memory a decoder may claim for one datagram (a snapshot of 1,200 bytes holds at most a
/// few hundred entities of 24 bytes in memory).
const DATAGRAM_DECODE_LIMIT: usize = 64 * 1024;

const ENCODE_CONFIG: Configuration<LittleEndian, Varint> = bincode::config::standard();
const FRAME_CONFIG: Configuration<LittleEndian, Varint, Limit<FRAME_DECODE_LIMIT>> =
    bincode::config::standard().with_limit::<FRAME_DECODE_LIMIT>();
const DATAGRAM_CONFIG: Configuration<LittleEndian, Varint, Limit<DATAGRAM_DECODE_LIMIT>> =
    bincode::config::standard().with_limit::<DATAGRAM_DECODE_LIMIT>();

/// Why a message could not be encoded.
#[derive(Debug, Error)]
pub enum EncodeError {
    /// The message is larger than its channel allows.
    #[error("message of {size} bytes exceeds the {limit}-byte limit")]
    TooLarge {
        /// Encoded size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The encoder failed (a type the format cannot express).
    #[error("cannot encode message: {0}")]
    Bincode(String),
}

/// Why bytes could not be decoded into a message.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DecodeError {
    /// An empty datagram.
    #[error("empty datagram")]
    Empty,
    /// More bytes than the channel allows.
    #[error("{size} bytes exceed the {limit}-byte limit")]
    TooLarge {
        /// Size received or announced.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The datagram was written for another protocol version.
    #[error("datagram of protocol version {got}, expected {expected}")]
    Version {
        /// Version byte received.
        got: u8,
        /// Version byte expected.
        expected: u8,
    },
    /// The body is not a valid message.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A valid message followed by bytes that belong to none.
    #[error("{extra} trailing bytes after the message")]
    TrailingBytes {
        /// How many.
        extra: usize,
    },
}

/// A message that travels on the control stream.
pub trait FrameMessage: Serialize + DeserializeOwned + sealed::Sealed {}
impl FrameMessage for ClientMessage {}
impl FrameMessage for ServerMessage {}

/// A message that travels as a datagram.
pub trait DatagramMessage: Serialize + DeserializeOwned + sealed::Sealed {}
impl DatagramMessage for ClientDatagram {}
impl DatagramMessage for ServerDatagram {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ClientMessage {}
    impl Sealed for super::ServerMessage {}
    impl Sealed for super::ClientDatagram {}
    impl Sealed for super::ServerDatagram {}
}

mod snapshot;

pub use snapshot::{
    SnapshotEncoder, decode_snapshot_datagram, encode_snapshot_datagram, snapshot_header_len,
};

fn version_byte() -> u8 {
    // Versions are small; the byte is the version modulo 256.
    (PROTOCOL_VERSION & 0xff) as u8
}

/// Encodes a datagram: version byte and body, at most [`MAX_DATAGRAM_BYTES`].
pub fn encode_datagram<M: DatagramMessage>(message: &M) -> Result<Vec<u8>, EncodeError> {
    // Room for the largest datagram at once: one allocation, however large it turns out.
    let mut out = Vec::with_capacity(MAX_DATAGRAM_BYTES);
    out.push(version_byte());
    bincode::serde::encode_into_std_write(message, &mut out, ENCODE_CONFIG)
        .map_err(|err| EncodeError::Bincode(err.to_string()))?;
    if out.len() > MAX_DATAGRAM_BYTES {
        return Err(EncodeError::TooLarge {
            size: out.len(),
            limit: MAX_DATAGRAM_BYTES,
        });
    }
    Ok(out)
}

/// Decodes a datagram written by [`encode_datagram`].
pub fn decode_datagram<M: DatagramMessage>(bytes: &[u8]) -> Result<M, DecodeError> {
    let (&version, body) = bytes.split_first().ok_or(DecodeError::Empty)?;
    if bytes.len() > MAX_DATAGRAM_BYTES {
        return Err(DecodeError::TooLarge {
            size: bytes.len(),
            limit: MAX_DATAGRAM_BYTES,
        });
    }
    if version != version_byte() {
        return Err(DecodeError::Version {
            got: version,
            expected: version_byte(),
        });
    }
    decode_exact(body, DATAGRAM_CONFIG)
}

/// The largest bus payload ([`crate::bus`]): NATS's default limit, 1 MiB.
pub const MAX_BUS_BYTES: usize = 1024 * 1024;
/// Memory a decoder may claim for one bus payload.
const BUS_DECODE_LIMIT: usize = 8 * MAX_BUS_BYTES;
const BUS_CONFIG: Configuration<LittleEndian, Varint, Limit<BUS_DECODE_LIMIT>> =
    bincode::config::standard().with_limit::<BUS_DECODE_LIMIT>();

/// Encodes a bus payload: the version byte [`crate::bus::BUS_VERSION`] and the message, at
/// most [`MAX_BUS_BYTES`].
pub fn encode_bus(message: &crate::bus::BusMessage) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![crate::bus::BUS_VERSION];
    bincode::serde::encode_into_std_write(message, &mut out, ENCODE_CONFIG)
        .map_err(|err| EncodeError::Bincode(err.to_string()))?;
    if out.len() > MAX_BUS_BYTES {
        return Err(EncodeError::TooLarge {
            size: out.len(),
            limit: MAX_BUS_BYTES,
        });
    }
    Ok(out)
}

/// Decodes a bus payload written by [`encode_bus`].
pub fn decode_bus(bytes: &[u8]) -> Result<crate::bus::BusMessage, DecodeError> {
    let (&version, body) = bytes.split_first().ok_or(DecodeError::Empty)?;
    if bytes.len() > MAX_BUS_BYTES {
        return Err(DecodeError::TooLarge {
            size: bytes.len(),
            limit: MAX_BUS_BYTES,
        });
    }
    if version != crate::bus::BUS_VERSION {
        return Err(DecodeError::Version {
            got: version,
            expected: crate::bus::BUS_VERSION,
        });
    }
    decode_exact(body, BUS_CONFIG)
}

/// Encodes a control-stream frame: the 4-byte big-endian length, then the message.
pub fn encode_frame<M: FrameMessage>(message: &M) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![0u8; FRAME_HEADER_BYTES];
    bincode::serde::encode_into_std_write(message, &mut out, ENCODE_CONFIG)
        .map_err(|err| EncodeError::Bincode(err.to_string()))?;
    let payload = out.len() - FRAME_HEADER_BYTES;
    if payload > MAX_FRAME_BYTES {
        return Err(EncodeError::TooLarge {
            size: payload,
            limit: MAX_FRAME_BYTES,
        });
    }
    // In range: payload <= MAX_FRAME_BYTES.
    out[..FRAME_HEADER_BYTES].copy_from_slice(&(payload as u32).to_be_bytes());
    Ok(out)
}

/// The payload length a frame header announces, checked against [`MAX_FRAME_BYTES`].
/// A reader calls this on the first four bytes, then reads that many and calls
/// [`decode_frame_payload`].
pub fn frame_payload_len(header: [u8; FRAME_HEADER_BYTES]) -> Result<usize, DecodeError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(DecodeError::TooLarge {
            size: len,
            limit: MAX_FRAME_BYTES,
        });
    }
    if len == 0 {
        return Err(DecodeError::Malformed("empty frame".to_owned()));
    }
    Ok(len)
}

/// Decodes one frame's payload (the bytes after its header).
pub fn decode_frame_payload<M: FrameMessage>(payload: &[u8]) -> Result<M, DecodeError> {
    if payload.len() > MAX_FRAME_BYTES {
        return Err(DecodeError::TooLarge {
            size: payload.len(),
            limit: MAX_FRAME_BYTES,
        });
    }
    decode_exact(payload, FRAME_CONFIG)
}

/// Splits frames out of a byte stream that arrives in pieces, for readers that are not
/// async (tests, fuzzing). An error is final: the stream is out of step and must be closed.
#[derive(Debug, Default)]
pub struct FrameReader {
    buffer: Vec<u8>,
    /// Where the next frame starts in `buffer`: the frames read are dropped at the next
    /// push, all at once, so that many small frames in one push cost their length and not
    /// their number times the buffer's.
    start: usize,
}

impl FrameReader {
    /// An empty reader.
    pub fn new() -> FrameReader {
        FrameReader::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.drain(..self.start);
        self.start = 0;
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole frame's message, `Ok(None)` when more bytes are needed.
    pub fn next_message<M: FrameMessage>(&mut self) -> Result<Option<M>, DecodeError> {
        let unread = &self.buffer[self.start..];
        let Some(header) = unread.first_chunk::<FRAME_HEADER_BYTES>() else {
            return Ok(None);
        };
        let len = frame_payload_len(*header)?;
        let end = FRAME_HEADER_BYTES + len;
        if unread.len() < end {
            return Ok(None);
        }
        let message = decode_frame_payload(&unread[FRAME_HEADER_BYTES..end]);
        self.start += end;
        message.map(Some)
    }
}

/// The encoded size of a value in the datagram configuration, for budgeting snapshots.
pub fn encoded_len<T: Serialize>(value: &T) -> usize {
    let mut counter = CountingWriter(0);
    // Encoding into a counter cannot fail for the plain data types of this crate; should
    // it ever, the value counts as too large to fit anywhere.
    match bincode::serde::encode_into_writer(value, &mut counter, ENCODE_CONFIG) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Bytes of an unsigned integer in bincode's variable-length encoding.
pub(crate) fn varint_len(value: u64) -> usize {
    // Without branches: snapshot budgeting calls this for every entity near a viewer.
    1 + 2 * usize::from(value > 250)
        + 2 * usize::from(value > 0xffff)
        + 4 * usize::from(value > 0xffff_ffff)
}

/// Bytes of a signed integer (zigzag, then variable length).
fn zigzag_len(value: i32) -> usize {
    let zigzag = ((value << 1) ^ (value >> 31)) as u32;
    varint_len(u64::from(zigzag))
}

/// Encoded size of an entity id, computed without encoding (snapshot budgeting calls this
/// for every candidate); equal to [`encoded_len`] of the same value.
pub fn net_id_len(id: &NetId) -> usize {
    varint_len(u64::from(id.index)) + varint_len(u64::from(id.generation))
}

/// Encoded size of a change, computed without encoding; equal to [`encoded_len`].
pub fn change_len(change: &Change) -> usize {
    // The motion option: a tag byte, and the variant index (one byte) when present.
    let motion = if change.motion.is_some() { 2 } else { 1 };
    net_id_len(&change.id) + zigzag_len(change.dx_cm) + zigzag_len(change.dy_cm) + motion
}

/// Encoded size of an entity's full state, computed without encoding; equal to
/// [`encoded_len`].
pub fn entity_len(entity: &EntityState) -> usize {
    // Kind and motion are one-byte variant indices.
    net_id_len(&entity.id)
        + 1
        + varint_len(u64::from(entity.radius_cm))
        + zigzag_len(entity.pos.x_cm)
        + zigzag_len(entity.pos.y_cm)
        + 1
}

struct CountingWriter(usize);

impl bincode::enc::write::Writer for CountingWriter {
    fn write(&mut self, bytes: &[u8]) -> Result<(), bincode::error::EncodeError> {
        self.0 += bytes.len();
        Ok(())
    }
}

/// Elements a decoded list reserves room for before it has read any, whatever length its
/// prefix announces.
const LIST_PREALLOC: usize = 64;

/// Deserializes a list (`#[serde(deserialize_with)]` on every `Vec` field of a message)
/// without trusting its announced length. Serde's own `Vec` reserves room for the announced
/// number of elements, up to 1 MiB, before reading any, and bincode's byte limit does not
/// see that reservation: a 14-byte datagram announcing 2^32 entities cost a 1 MiB
/// allocation. Here a list reserves at most [`LIST_PREALLOC`] elements and grows only with
/// elements actually decoded, each of which consumes input bytes, so the input's size
/// bounds the allocation.
pub(crate) fn deserialize_list<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct ListVisitor<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
        type Value = Vec<T>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a list")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(LIST_PREALLOC));
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(items)
        }
    }

    deserializer.deserialize_seq(ListVisitor(PhantomData))
}

fn decode_exact<M: DeserializeOwned, C: bincode::config::Config>(
    bytes: &[u8],
    config: C,
) -> Result<M, DecodeError> {
    let (message, used) = bincode::serde::decode_from_slice::<M, C>(bytes, config)
        .map_err(|err| DecodeError::Malformed(err.to_string()))?;
    if used != bytes.len() {
        return Err(DecodeError::TrailingBytes {
            extra: bytes.len() - used,
        });
    }
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{Command, Input};

    #[test]
    fn datagram_round_trip_and_version_check() {
        let input = ClientDatagram::Input(Input {
            seq: 7,
            ack_tick: Some(1234),
            command: Command::MoveTo { x: 1.5, y: -2.0 },
        });
        let bytes = encode_datagram(&input).expect("encodes");
        assert_eq!(decode_datagram::<ClientDatagram>(&bytes), Ok(input));
        let mut wrong = bytes.clone();
        wrong[0] = wrong[0].wrapping_add(1);
        assert!(matches!(
            decode_datagram::<ClientDatagram>(&wrong),
            Err(DecodeError::Version { .. })
        ));
        let mut trailing = bytes;
        trailing.push(0);
        assert_eq!(
            decode_datagram::<ClientDatagram>(&trailing),
            Err(DecodeError::TrailingBytes { extra: 1 })
        );
        assert_eq!(
            decode_datagram::<ClientDatagram>(&[]),
            Err(DecodeError::Empty)
        );
    }

    #[test]
    fn frames_split_across_pushes() {
        let hello = ClientMessage::Hello { version: 1 };
        let login = ClientMessage::Login {
            name: "ada".to_owned(),
            token: None,
        };
        let mut stream = encode_frame(&hello).expect("encodes");
        stream.extend(encode_frame(&login).expect("encodes"));
        let mut reader = FrameReader::new();
        let mut got = Vec::new();
        for byte in &stream {
            reader.push(std::slice::from_ref(byte));
            while let Some(message) = reader
                .next_message::<ClientMessage>()
                .expect("valid stream")
            {
                got.push(message);
            }
        }
        assert_eq!(got, vec![hello, login]);
    }

    #[test]
    fn oversized_frames_are_refused_both_ways() {
        let huge = ClientMessage::Login {
            name: "x".repeat(MAX_FRAME_BYTES),
            token: None,
        };
        assert!(matches!(
            encode_frame(&huge),
            Err(EncodeError::TooLarge { .. })
        ));
        let header = ((MAX_FRAME_BYTES + 1) as u32).to_be_bytes();
        assert_eq!(
            frame_payload_len(header),
            Err(DecodeError::TooLarge {
                size: MAX_FRAME_BYTES + 1,
                limit: MAX_FRAME_BYTES
            })
        );
    }

    #[test]
    fn computed_sizes_match_the_encoder() {
        use crate::messages::{EntityKind, Motion, QPos};
        let edges = [
            0i32,
            1,
            -1,
            62,
            -63,
            125,
            -125,
            126,
            -126,
            127,
            250,
            32_767,
            -32_768,
            32_768,
            65_535,
            1 << 20,
            -(1 << 20),
            i32::MAX,
            i32::MIN,
        ];
        let unsigned = [0u32, 1, 250, 251, 65_535, 65_536, u32::MAX];
        for &index in &unsigned {
            for &generation in &unsigned {
                let id = NetId { index, generation };
                assert_eq!(net_id_len(&id), encoded_len(&id), "{id:?}");
                for &d in &edges {
                    for motion in [None, Some(Motion::Repulsed)] {
                        let change = Change {
                            id,
                            dx_cm: d,
                            dy_cm: d.wrapping_neg() / 3,
                            motion,
                        };
                        assert_eq!(change_len(&change), encoded_len(&change), "{change:?}");
                    }
                    for radius_cm in [0u16, 40, 250, 251, u16::MAX] {
                        let entity = EntityState {
                            id,
                            kind: EntityKind::Player,
                            radius_cm,
                            pos: QPos {
                                x_cm: d,
                                y_cm: d.wrapping_mul(7),
                            },
                            motion: Motion::Circling,
                        };
                        assert_eq!(entity_len(&entity), encoded_len(&entity), "{entity:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn encoded_len_matches_encoding() {
        let input = ClientDatagram::Input(Input {
            seq: 300,
            ack_tick: None,
            command: Command::Stop,
        });
        let bytes = encode_datagram(&input).expect("encodes");
        assert_eq!(encoded_len(&input) + DATAGRAM_HEADER_BYTES, bytes.len());
    }

    #[test]
    fn bus_round_trip_and_refusals() {
        use crate::bus::{BUS_VERSION, BusMessage, PlayerInput};
        use crate::messages::NetId;
        let message = BusMessage::Input(PlayerInput {
            id: NetId {
                index: 7,
                generation: 3,
            },
            seq: 9,
            command: Command::MoveTo { x: 1.5, y: -2.0 },
        });
        let bytes = encode_bus(&message).unwrap();
        assert_eq!(bytes[0], BUS_VERSION);
        assert_eq!(decode_bus(&bytes).unwrap(), message);
        let mut other = bytes.clone();
        other[0] = BUS_VERSION + 1;
        assert!(matches!(
            decode_bus(&other),
            Err(DecodeError::Version { .. })
        ));
        assert_eq!(decode_bus(&[]), Err(DecodeError::Empty));
        assert!(matches!(
            decode_bus(&[BUS_VERSION, 200, 1, 2]),
            Err(DecodeError::Malformed(_))
        ));
        let mut long = bytes;
        long.push(0);
        assert!(matches!(
            decode_bus(&long),
            Err(DecodeError::TrailingBytes { extra: 1 })
        ));
    }
}
