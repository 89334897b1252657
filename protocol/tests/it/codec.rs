//! The codec: round trips of every message, and decoders fed arbitrary bytes (the limits
//! are in `limits.rs`).

use std::fmt::Debug;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use protocol::codec::{
    DatagramMessage, FRAME_HEADER_BYTES, FrameMessage, FrameReader, SnapshotEncoder,
    decode_datagram, decode_frame_payload, encode_datagram, encode_frame, encode_snapshot_datagram,
    encoded_len, frame_payload_len, snapshot_header_len,
};
use protocol::{
    Change, ClientDatagram, ClientMessage, Command, DecodeError, DisconnectReason, EncodeError,
    Event, Input, MAX_DATAGRAM_BYTES, MAX_FRAME_BYTES, NetId, PROTOCOL_VERSION, ServerDatagram,
    ServerMessage, View,
};

use crate::strategies::{
    change, client_datagram, client_message, entity_state, server_datagram, server_message,
    snapshot,
};

/// Whether a message holds a NaN somewhere, so that `==` cannot compare it with itself.
#[expect(
    clippy::eq_op,
    reason = "comparing a value with itself is the NaN test"
)]
fn holds_nan<M: PartialEq>(message: &M) -> bool {
    message != message
}

/// A decoded message equals the original: field by field when it can be compared (no
/// NaN), and in every case bitwise, by encoding both to the same bytes.
fn check_same<M: PartialEq + Debug>(
    decoded: &M,
    original: &M,
    encode: impl Fn(&M) -> Result<Vec<u8>, EncodeError>,
) -> Result<(), TestCaseError> {
    if !holds_nan(original) {
        prop_assert_eq!(decoded, original);
    }
    let again = encode(decoded).map_err(|err| TestCaseError::fail(err.to_string()))?;
    let first = encode(original).map_err(|err| TestCaseError::fail(err.to_string()))?;
    prop_assert_eq!(again, first);
    Ok(())
}

/// A frame round trip: the header announces the payload, and both the one-shot decoder
/// and a [`FrameReader`] give the message back, the reader then wanting more bytes.
fn check_frame_round_trip<M: FrameMessage + PartialEq + Debug>(
    message: &M,
) -> Result<(), TestCaseError> {
    let bytes = encode_frame(message).map_err(|err| TestCaseError::fail(err.to_string()))?;
    let header = *bytes
        .first_chunk::<FRAME_HEADER_BYTES>()
        .ok_or_else(|| TestCaseError::fail("frame shorter than its header"))?;
    let payload = &bytes[FRAME_HEADER_BYTES..];
    prop_assert_eq!(frame_payload_len(header), Ok(payload.len()));
    prop_assert_eq!(payload.len(), encoded_len(message));

    let direct: M = decode_frame_payload(payload)
        .map_err(|err| TestCaseError::fail(format!("payload does not decode: {err}")))?;
    check_same(&direct, message, encode_frame)?;

    let mut reader = FrameReader::new();
    reader.push(&bytes);
    let Some(via_reader) = reader
        .next_message::<M>()
        .map_err(|err| TestCaseError::fail(format!("reader fails: {err}")))?
    else {
        return Err(TestCaseError::fail(
            "reader wants more bytes of a whole frame",
        ));
    };
    check_same(&via_reader, message, encode_frame)?;
    prop_assert!(matches!(reader.next_message::<M>(), Ok(None)));
    Ok(())
}

/// A datagram round trip: the message encodes exactly when its size fits, to the version
/// byte and the body, and decodes back.
fn check_datagram_round_trip<M: DatagramMessage + PartialEq + Debug>(
    message: &M,
) -> Result<(), TestCaseError> {
    let size = 1 + encoded_len(message);
    match encode_datagram(message) {
        Ok(bytes) => {
            prop_assert!(size <= MAX_DATAGRAM_BYTES);
            prop_assert_eq!(bytes.len(), size);
            prop_assert_eq!(bytes[0], PROTOCOL_VERSION as u8);
            let decoded: M = decode_datagram(&bytes)
                .map_err(|err| TestCaseError::fail(format!("datagram does not decode: {err}")))?;
            check_same(&decoded, message, encode_datagram)?;
        }
        Err(EncodeError::TooLarge { size: got, limit }) => {
            prop_assert_eq!(limit, MAX_DATAGRAM_BYTES);
            prop_assert_eq!(got, size);
            prop_assert!(size > MAX_DATAGRAM_BYTES);
        }
        Err(err) => return Err(TestCaseError::fail(format!("cannot encode: {err}"))),
    }
    Ok(())
}

/// Whatever a decoder accepts is a message the encoder can write again (no larger: the
/// decoder also takes non-minimal varints, the encoder writes minimal ones) and that then
/// decodes to the same encoding.
fn check_reencodes<M: PartialEq + Debug>(
    decoded: &M,
    input_len: usize,
    encode: impl Fn(&M) -> Result<Vec<u8>, EncodeError>,
    decode: impl Fn(&[u8]) -> Result<M, DecodeError>,
) -> Result<(), TestCaseError> {
    let bytes = encode(decoded)
        .map_err(|err| TestCaseError::fail(format!("decoded message does not re-encode: {err}")))?;
    prop_assert!(bytes.len() <= input_len);
    let again = decode(&bytes).map_err(|err| TestCaseError::fail(err.to_string()))?;
    let bytes_again = encode(&again).map_err(|err| TestCaseError::fail(err.to_string()))?;
    prop_assert_eq!(bytes_again, bytes);
    Ok(())
}

/// Feeds bytes to every decoder; none may panic, and whatever decodes must re-encode.
fn decode_everything(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(message) = decode_datagram::<ClientDatagram>(bytes) {
        check_reencodes(&message, bytes.len(), encode_datagram, decode_datagram)?;
    }
    if let Ok(message) = decode_datagram::<ServerDatagram>(bytes) {
        check_reencodes(&message, bytes.len(), encode_datagram, decode_datagram)?;
        // A decoded snapshot is untrusted input to `View::apply` as well.
        let ServerDatagram::Snapshot(snapshot) = &message;
        if let Ok(view) = View::new().apply(snapshot) {
            let ids: Vec<NetId> = view.entities().iter().map(|entity| entity.id).collect();
            prop_assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        }
    }
    // The header is what a stream reader strips; the rest is a payload.
    let payload = bytes.get(FRAME_HEADER_BYTES..).unwrap_or(bytes);
    if let Ok(message) = decode_frame_payload::<ClientMessage>(payload) {
        check_reencodes(
            &message,
            FRAME_HEADER_BYTES + payload.len(),
            encode_frame,
            |frame: &[u8]| decode_frame_payload(&frame[FRAME_HEADER_BYTES..]),
        )?;
    }
    if let Ok(message) = decode_frame_payload::<ServerMessage>(payload) {
        check_reencodes(
            &message,
            FRAME_HEADER_BYTES + payload.len(),
            encode_frame,
            |frame: &[u8]| decode_frame_payload(&frame[FRAME_HEADER_BYTES..]),
        )?;
    }
    if let Some(header) = bytes.first_chunk::<FRAME_HEADER_BYTES>() {
        // Announced lengths are checked, never trusted.
        if let Ok(len) = frame_payload_len(*header) {
            prop_assert!((1..=MAX_FRAME_BYTES).contains(&len));
        }
    }
    Ok(())
}

/// Feeds bytes to a [`FrameReader`] in the given chunk sizes, taking every frame it
/// yields, until the bytes run out or the reader fails (an error is final).
fn read_frames_in_chunks<M: FrameMessage>(bytes: &[u8], chunks: &[usize]) -> Vec<M> {
    let mut reader = FrameReader::new();
    let mut messages = Vec::new();
    let mut rest = bytes;
    let mut sizes = chunks.iter().copied().cycle();
    while !rest.is_empty() {
        let size = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        reader.push(chunk);
        loop {
            match reader.next_message::<M>() {
                Ok(Some(message)) => messages.push(message),
                Ok(None) => break,
                Err(_) => {
                    // Once out of step the stream stays failed; asking again must not
                    // panic either.
                    let _ = reader.next_message::<M>();
                    return messages;
                }
            }
        }
    }
    messages
}

/// Splits `bytes` at the given cut points (any values; taken modulo the length).
fn chunk_sizes(len: usize, cuts: &[usize]) -> Vec<usize> {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (len + 1)).collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

/// Valid messages with some bytes overwritten, cut short or extended: inputs that get
/// past the first checks of a decoder, which arbitrary bytes rarely do.
fn mutated(valid: Vec<u8>, edits: Vec<(usize, u8)>, resize: Option<usize>) -> Vec<u8> {
    let mut bytes = valid;
    for (at, byte) in edits {
        if !bytes.is_empty() {
            let len = bytes.len();
            bytes[at % len] = byte;
        }
    }
    if let Some(len) = resize {
        bytes.resize(len, 0xfb);
    }
    bytes
}

fn mutated_valid_bytes() -> impl Strategy<Value = Vec<u8>> {
    let valid = prop_oneof![
        client_datagram().prop_map(|message| encode_datagram(&message).unwrap_or_default()),
        server_datagram().prop_map(|message| encode_datagram(&message).unwrap_or_default()),
        client_message().prop_map(|message| encode_frame(&message).unwrap_or_default()),
        server_message().prop_map(|message| encode_frame(&message).unwrap_or_default()),
    ];
    (
        valid,
        vec((any::<usize>(), any::<u8>()), 0..4),
        proptest::option::of(0..1400usize),
    )
        .prop_map(|(bytes, edits, resize)| mutated(bytes, edits, resize))
}

proptest! {
    #![proptest_config(crate::config(2048))]

    #[test]
    fn client_messages_round_trip(message in client_message()) {
        check_frame_round_trip(&message)?;
    }

    #[test]
    fn server_messages_round_trip(message in server_message()) {
        check_frame_round_trip(&message)?;
    }

    #[test]
    fn client_datagrams_round_trip(message in client_datagram()) {
        check_datagram_round_trip(&message)?;
    }

    #[test]
    fn server_datagrams_round_trip(message in server_datagram()) {
        check_datagram_round_trip(&message)?;
    }

    /// The snapshot server's hand-written encoder writes exactly bincode's bytes, and
    /// refuses exactly what `encode_datagram` refuses.
    #[test]
    fn the_snapshot_encoder_writes_bincodes_bytes(snapshot in snapshot()) {
        let mut out = vec![0xAA; 7];
        let hand = encode_snapshot_datagram(&snapshot, &mut out)
            .map(|()| out)
            .map_err(|err| err.to_string());
        let reference =
            encode_datagram(&ServerDatagram::Snapshot(snapshot)).map_err(|err| err.to_string());
        prop_assert_eq!(hand, reference);
    }

    /// The entry-by-entry encoder writes the same bytes, whatever order the three lists'
    /// entries come in (each list in its own order), and the same again for a second
    /// snapshot begun after a first.
    #[test]
    fn the_entry_by_entry_encoder_writes_the_snapshots_bytes(
        first in snapshot(),
        snapshot in snapshot(),
        order in vec(0..3u8, 0..120),
    ) {
        let mut encoder = SnapshotEncoder::new();
        let mut out = vec![0xAA; 3];
        for snapshot in [&first, &snapshot] {
            encoder.begin(snapshot.tick, snapshot.baseline_tick, snapshot.last_input_seq);
            prop_assert_eq!(encoder.header_len(), snapshot_header_len(snapshot));
            let (mut entered, mut changed, mut left) = (
                snapshot.entered.iter(),
                snapshot.changed.iter(),
                snapshot.left.iter(),
            );
            // Entries interleaved as `order` says, then whatever it left.
            for list in order.iter().chain([0, 1, 2].iter().cycle().take(3 * 48)) {
                match list {
                    0 => entered.next().map(|entity| encoder.enter(entity)),
                    1 => changed.next().map(|change| encoder.change(change)),
                    _ => left.next().map(|id| encoder.leave(id)),
                };
            }
            let hand = encoder
                .finish(&mut out)
                .map(|()| out.clone())
                .map_err(|err| err.to_string());
            let mut whole = Vec::new();
            let reference = encode_snapshot_datagram(snapshot, &mut whole)
                .map(|()| whole)
                .map_err(|err| err.to_string());
            prop_assert_eq!(hand, reference);
        }
    }

    /// A change written from the two states it goes between is the change's entry.
    #[test]
    fn a_change_between_two_states_is_written_as_the_change(
        old in entity_state(),
        new in entity_state(),
        first in vec(change(), 0..3),
        then in vec(change(), 0..3),
    ) {
        let (mut by_states, mut by_change) = (SnapshotEncoder::new(), SnapshotEncoder::new());
        for encoder in [&mut by_states, &mut by_change] {
            encoder.begin(7, Some(5), 3);
            for change in &first {
                encoder.change(change);
            }
        }
        by_states.change_between(&old, &new);
        by_change.change(&Change::between(&old, &new));
        for encoder in [&mut by_states, &mut by_change] {
            for change in &then {
                encoder.change(change);
            }
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        prop_assert!(by_states.finish(&mut a).is_ok() && by_change.finish(&mut b).is_ok());
        prop_assert_eq!(a, b);
    }

    /// The header's size, worked out without encoding, is what the snapshot takes with
    /// its lists empty.
    #[test]
    fn the_snapshot_header_len_is_what_an_empty_snapshot_takes(mut snapshot in snapshot()) {
        snapshot.entered.clear();
        snapshot.changed.clear();
        snapshot.left.clear();
        let len = snapshot_header_len(&snapshot);
        let encoded = encode_datagram(&ServerDatagram::Snapshot(snapshot))
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(len, encoded.len());
    }

    /// A stream of frames cut anywhere, even inside headers, yields the same messages.
    #[test]
    fn frames_survive_any_chunking(
        client in vec(client_message(), 0..8),
        server in vec(server_message(), 0..8),
        cuts in vec(any::<usize>(), 0..24),
    ) {
        let mut stream = Vec::new();
        for message in &client {
            stream.extend(encode_frame(message).map_err(|err| TestCaseError::fail(err.to_string()))?);
        }
        let got: Vec<ClientMessage> = read_frames_in_chunks(&stream, &chunk_sizes(stream.len(), &cuts));
        prop_assert_eq!(got, client);

        // Server messages may hold NaNs: compare what they encode to.
        let mut stream = Vec::new();
        for message in &server {
            stream.extend(encode_frame(message).map_err(|err| TestCaseError::fail(err.to_string()))?);
        }
        let got: Vec<ServerMessage> = read_frames_in_chunks(&stream, &chunk_sizes(stream.len(), &cuts));
        prop_assert_eq!(got.len(), server.len());
        let mut again = Vec::new();
        for message in &got {
            again.extend(encode_frame(message).map_err(|err| TestCaseError::fail(err.to_string()))?);
        }
        prop_assert_eq!(again, stream);
    }

    /// Arbitrary bytes: every decoder answers (Ok or Err) without panicking.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in vec(any::<u8>(), 0..2000),
        chunks in vec(1..300usize, 1..16),
    ) {
        decode_everything(&bytes)?;
        read_frames_in_chunks::<ClientMessage>(&bytes, &chunks);
        read_frames_in_chunks::<ServerMessage>(&bytes, &chunks);
    }

    /// Arbitrary bytes after a plausible prefix (the version byte, or a frame header
    /// announcing the rest), so the bodies reach the message decoders.
    #[test]
    fn arbitrary_bodies_never_panic(body in vec(any::<u8>(), 0..1300)) {
        let mut datagram = vec![PROTOCOL_VERSION as u8];
        datagram.extend_from_slice(&body);
        decode_everything(&datagram)?;
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        decode_everything(&frame)?;
        read_frames_in_chunks::<ClientMessage>(&frame, &[frame.len()]);
        read_frames_in_chunks::<ServerMessage>(&frame, &[frame.len()]);
    }

    /// Valid messages with a few bytes changed: no decoder panics.
    #[test]
    fn mutated_messages_never_panic(
        bytes in mutated_valid_bytes(),
        chunks in vec(1..64usize, 1..8),
    ) {
        decode_everything(&bytes)?;
        read_frames_in_chunks::<ClientMessage>(&bytes, &chunks);
        read_frames_in_chunks::<ServerMessage>(&bytes, &chunks);
    }

    /// A client of any version gets its hello through, so the server can name both
    /// versions when refusing it.
    #[test]
    fn hello_of_any_version_decodes(version in any::<u16>()) {
        let frame = encode_frame(&ClientMessage::Hello { version })
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(
            decode_frame_payload::<ClientMessage>(&frame[FRAME_HEADER_BYTES..]),
            Ok(ClientMessage::Hello { version })
        );
    }

    /// Snapshots that fit a datagram round trip whatever their lists hold.
    #[test]
    fn snapshots_round_trip(snapshot in snapshot()) {
        check_datagram_round_trip(&ServerDatagram::Snapshot(snapshot))?;
    }
}

/// Every variant, and every disconnect reason, round trips (the generators pick variants
/// at random; this does not depend on them).
#[test]
fn every_variant_round_trips() {
    let mut client = vec![
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
        },
        ClientMessage::Login {
            name: "ada".to_owned(),
            token: Some("t0k€n".to_owned()),
        },
        ClientMessage::Login {
            name: String::new(),
            token: None,
        },
        ClientMessage::Ping { nonce: u64::MAX },
        ClientMessage::Pong { nonce: 0 },
        ClientMessage::Leave,
    ];
    for message in client.drain(..) {
        check_frame_round_trip(&message).expect("client message round trips");
    }
    let mut server = vec![
        ServerMessage::Welcome(protocol::Welcome {
            version: PROTOCOL_VERSION,
            entity: NetId {
                index: 7,
                generation: 70_000,
            },
            tick_rate_hz: 20,
            map_id: "arena".to_owned(),
            bounds: protocol::Bounds {
                min_x: -50.0,
                min_y: -25.5,
                max_x: 50.0,
                max_y: f32::MAX,
            },
            view_radius_m: 30.0,
        }),
        ServerMessage::Event(Event::ShuttingDown { grace_ms: 5_000 }),
        ServerMessage::Event(Event::InvalidInput {
            count: 3,
            reason: "point outside the map".to_owned(),
        }),
        ServerMessage::Ping { nonce: 1 },
        ServerMessage::Pong { nonce: 1 << 40 },
    ];
    server.extend(
        DisconnectReason::ALL
            .into_iter()
            .map(|reason| ServerMessage::Disconnect {
                reason,
                text: reason.name().to_owned(),
            }),
    );
    for message in &server {
        check_frame_round_trip(message).expect("server message round trips");
    }
    for command in [
        Command::Nothing,
        Command::MoveTo { x: 1.5, y: -2.25 },
        Command::Direction {
            x: f32::NAN,
            y: f32::NEG_INFINITY,
        },
        Command::Stop,
    ] {
        let input = ClientDatagram::Input(Input {
            seq: 300,
            ack_tick: Some(u64::MAX),
            command,
        });
        check_datagram_round_trip(&input).expect("input round trips");
    }
}

/// Disconnect reasons: codes are 1.., distinct, and map back to their reason.
#[test]
fn disconnect_codes_are_distinct_and_invertible() {
    for (at, reason) in DisconnectReason::ALL.into_iter().enumerate() {
        assert_eq!(reason.code() as usize, at + 1, "{reason:?}");
        assert_eq!(
            DisconnectReason::from_code(u64::from(reason.code())),
            Some(reason)
        );
    }
    assert_eq!(DisconnectReason::from_code(0), None);
    let past_the_last = DisconnectReason::ALL.len() as u64 + 1;
    assert_eq!(DisconnectReason::from_code(past_the_last), None);
    let mut names: Vec<&str> = DisconnectReason::ALL.iter().map(|r| r.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), DisconnectReason::ALL.len());
}
