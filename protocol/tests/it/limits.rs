//! The codec's limits: length claims beyond the bytes, messages and input over the
//! channels' sizes, and versions and disconnect reasons this build does not know.

use protocol::codec::{
    FRAME_HEADER_BYTES, FrameReader, SnapshotEncoder, decode_datagram, decode_frame_payload,
    encode_datagram, encode_frame, encode_snapshot_datagram, encoded_len, frame_payload_len,
};
use protocol::{
    ClientDatagram, ClientMessage, Command, DecodeError, DisconnectReason, EncodeError, EntityKind,
    EntityState, Input, MAX_DATAGRAM_BYTES, MAX_FRAME_BYTES, Motion, NetId, PROTOCOL_VERSION, QPos,
    ServerDatagram, ServerMessage, Snapshot,
};

/// bincode's varint for a `u64`: the marker byte 253 then eight little-endian bytes.
fn varint_u64(value: u64) -> Vec<u8> {
    let mut bytes = vec![253];
    bytes.extend_from_slice(&value.to_le_bytes());
    bytes
}

/// Payloads whose strings or lists announce far more elements than the bytes (or the
/// limits) allow are refused. What they allocate on the way cannot be measured here: a
/// counting global allocator needs `unsafe`, which the workspace forbids (`forbid`, so no
/// `allow` can lift it). Lists decode through `codec::deserialize_list`, which reserves
/// room only for elements read; serde's own `Vec` reserved up to 1 MiB from the announced
/// count alone. Strings reserve at most bincode's decode limit.
#[test]
fn huge_length_claims_are_refused() {
    let claims = [
        1u64 << 16,
        1 << 32,
        u64::MAX,
        MAX_FRAME_BYTES as u64 + 1,
        100,
    ];
    for claim in claims {
        // Login (variant 1) whose name announces `claim` bytes.
        let mut login = vec![1];
        login.extend(varint_u64(claim));
        login.extend_from_slice(b"abc");
        assert!(
            decode_frame_payload::<ClientMessage>(&login).is_err(),
            "name of {claim}"
        );

        // Login with a short name and a token announcing `claim` bytes.
        let mut token = vec![1, 3, b'a', b'd', b'a', 1];
        token.extend(varint_u64(claim));
        assert!(
            decode_frame_payload::<ClientMessage>(&token).is_err(),
            "token of {claim}"
        );

        // Disconnect (variant 4), reason 0, text announcing `claim` bytes.
        let mut disconnect = vec![4, 0];
        disconnect.extend(varint_u64(claim));
        assert!(
            decode_frame_payload::<ServerMessage>(&disconnect).is_err(),
            "text of {claim}"
        );

        // Event (variant 1), InvalidInput (variant 1), count 0, reason of `claim` bytes.
        let mut event = vec![1, 1, 0];
        event.extend(varint_u64(claim));
        assert!(
            decode_frame_payload::<ServerMessage>(&event).is_err(),
            "reason of {claim}"
        );

        // Welcome (variant 0): version, entity, tick rate, then a map id of `claim` bytes.
        let mut welcome = vec![0, 1, 0, 0, 20];
        welcome.extend(varint_u64(claim));
        assert!(
            decode_frame_payload::<ServerMessage>(&welcome).is_err(),
            "map id of {claim}"
        );

        // Snapshot datagrams with each list announcing `claim` elements, the earlier
        // lists empty: version, variant 0, tick 0, no baseline, input 0.
        for empty_lists_before in 0..3 {
            let mut datagram = vec![PROTOCOL_VERSION as u8, 0, 0, 0, 0];
            datagram.extend(std::iter::repeat_n(0, empty_lists_before));
            datagram.extend(varint_u64(claim));
            datagram.extend_from_slice(&[0; 16]);
            assert!(
                decode_datagram::<ServerDatagram>(&datagram).is_err(),
                "list {empty_lists_before} of {claim}"
            );
        }
    }
}

/// Encoders refuse what the channel cannot carry, at exactly the limit.
#[test]
fn encoders_refuse_oversized_messages() {
    let login = |chars: usize| ClientMessage::Login {
        name: "x".repeat(chars),
        token: None,
    };
    // Variant (1 byte), name length (3 bytes), the name, no token (1 byte).
    assert!(matches!(
        encode_frame(&login(5_000)),
        Err(EncodeError::TooLarge {
            size: 5_005,
            limit: MAX_FRAME_BYTES
        })
    ));
    let largest = MAX_FRAME_BYTES - 5;
    let frame = encode_frame(&login(largest)).expect("a payload of exactly the limit fits");
    assert_eq!(frame.len(), FRAME_HEADER_BYTES + MAX_FRAME_BYTES);
    let mut reader = FrameReader::new();
    reader.push(&frame);
    assert_eq!(
        reader.next_message::<ClientMessage>(),
        Ok(Some(login(largest)))
    );
    assert!(matches!(
        encode_frame(&login(largest + 1)),
        Err(EncodeError::TooLarge {
            size: 4_097,
            limit: MAX_FRAME_BYTES
        })
    ));

    let entity = |index: u32| EntityState {
        id: NetId {
            index,
            generation: 0,
        },
        kind: EntityKind::Npc,
        radius_cm: 40,
        pos: QPos {
            x_cm: 1_000,
            y_cm: -1_000,
        },
        motion: Motion::Moving,
    };
    let crowd = ServerDatagram::Snapshot(Snapshot {
        tick: 1,
        entered: (0..500).map(entity).collect(),
        ..Snapshot::default()
    });
    assert!(matches!(
        encode_datagram(&crowd),
        Err(EncodeError::TooLarge {
            limit: MAX_DATAGRAM_BYTES,
            ..
        })
    ));

    // A snapshot of exactly the limit: leaves of 2 bytes each fill it (the rest of the
    // snapshot takes an even number of bytes), and a baseline tick makes it one byte too
    // many (`None` is one byte, `Some(0)` two).
    let leaving = |count: u32| Snapshot {
        tick: 1,
        left: (0..count)
            .map(|_| NetId {
                index: 0,
                generation: 0,
            })
            .collect(),
        ..Snapshot::default()
    };
    let overhead = 1 + encoded_len(&ServerDatagram::Snapshot(leaving(300))) - 2 * 300;
    let exact = leaving(((MAX_DATAGRAM_BYTES - overhead) / 2) as u32);
    let exact = ServerDatagram::Snapshot(exact);
    let bytes = encode_datagram(&exact).expect("a datagram of exactly the limit fits");
    assert_eq!(bytes.len(), MAX_DATAGRAM_BYTES);
    assert_eq!(decode_datagram::<ServerDatagram>(&bytes), Ok(exact.clone()));
    let ServerDatagram::Snapshot(mut over) = exact;
    // The hand-written encoder agrees, lists longer than a one-byte length included,
    // into a buffer that held a larger datagram before.
    let mut hand = vec![0xAA; 4 * MAX_DATAGRAM_BYTES];
    assert!(encode_snapshot_datagram(&over, &mut hand).is_ok());
    assert_eq!(hand, bytes);
    let mut encoder = SnapshotEncoder::new();
    encoder.begin(over.tick, over.baseline_tick, over.last_input_seq);
    for id in &over.left {
        encoder.leave(id);
    }
    assert!(encoder.finish(&mut hand).is_ok());
    assert_eq!(hand, bytes);
    over.baseline_tick = Some(0);
    encoder.begin(over.tick, over.baseline_tick, over.last_input_seq);
    for id in &over.left {
        encoder.leave(id);
    }
    assert!(matches!(
        encoder.finish(&mut hand),
        Err(EncodeError::TooLarge {
            size: 1_201,
            limit: MAX_DATAGRAM_BYTES
        })
    ));
    assert!(matches!(
        encode_snapshot_datagram(&over, &mut hand),
        Err(EncodeError::TooLarge {
            size: 1_201,
            limit: MAX_DATAGRAM_BYTES
        })
    ));
    assert!(matches!(
        encode_datagram(&ServerDatagram::Snapshot(over)),
        Err(EncodeError::TooLarge {
            size: 1_201,
            limit: MAX_DATAGRAM_BYTES
        })
    ));
}

/// Decoders refuse oversized input before looking at it.
#[test]
fn decoders_refuse_oversized_input() {
    let datagram = vec![PROTOCOL_VERSION as u8; MAX_DATAGRAM_BYTES + 1];
    assert_eq!(
        decode_datagram::<ServerDatagram>(&datagram),
        Err(DecodeError::TooLarge {
            size: MAX_DATAGRAM_BYTES + 1,
            limit: MAX_DATAGRAM_BYTES
        })
    );
    assert_eq!(
        decode_frame_payload::<ClientMessage>(&[0; MAX_FRAME_BYTES + 1]),
        Err(DecodeError::TooLarge {
            size: MAX_FRAME_BYTES + 1,
            limit: MAX_FRAME_BYTES
        })
    );
    assert_eq!(
        frame_payload_len(u32::MAX.to_be_bytes()),
        Err(DecodeError::TooLarge {
            size: u32::MAX as usize,
            limit: MAX_FRAME_BYTES
        })
    );
    assert!(matches!(
        frame_payload_len([0; FRAME_HEADER_BYTES]),
        Err(DecodeError::Malformed(_))
    ));
    // A reader facing a header that announces too much fails at once, without waiting
    // for (and buffering) the announced bytes.
    let mut reader = FrameReader::new();
    reader.push(&((MAX_FRAME_BYTES + 1) as u32).to_be_bytes());
    assert!(matches!(
        reader.next_message::<ServerMessage>(),
        Err(DecodeError::TooLarge { .. })
    ));
    // Trailing bytes after a valid payload are refused, not ignored.
    let mut frame = encode_frame(&ClientMessage::Leave).expect("encodes");
    frame.push(0);
    assert_eq!(
        decode_frame_payload::<ClientMessage>(&frame[FRAME_HEADER_BYTES..]),
        Err(DecodeError::TrailingBytes { extra: 1 })
    );
    assert_eq!(
        decode_datagram::<ClientDatagram>(&[]),
        Err(DecodeError::Empty)
    );
}

/// A datagram whose version byte is anything but this version's is refused as such.
#[test]
fn datagrams_of_other_versions_are_refused() {
    let expected = (PROTOCOL_VERSION & 0xff) as u8;
    let input = ClientDatagram::Input(Input {
        seq: 1,
        ack_tick: None,
        command: Command::Stop,
    });
    let snapshot = ServerDatagram::Snapshot(Snapshot::default());
    let mut input_bytes = encode_datagram(&input).expect("encodes");
    let mut snapshot_bytes = encode_datagram(&snapshot).expect("encodes");
    assert_eq!(input_bytes[0], expected);
    for got in (0..=u8::MAX).filter(|&byte| byte != expected) {
        input_bytes[0] = got;
        snapshot_bytes[0] = got;
        assert_eq!(
            decode_datagram::<ClientDatagram>(&input_bytes),
            Err(DecodeError::Version { got, expected })
        );
        assert_eq!(
            decode_datagram::<ServerDatagram>(&snapshot_bytes),
            Err(DecodeError::Version { got, expected })
        );
    }
    // A hello from another version is a valid frame: only its content differs.
    let hello = ClientMessage::Hello { version: 999 };
    let frame = encode_frame(&hello).expect("encodes");
    let mut reader = FrameReader::new();
    reader.push(&frame);
    assert_eq!(reader.next_message::<ClientMessage>(), Ok(Some(hello)));
}

/// A client that knows fewer disconnect reasons than the server (an older build) fails to
/// decode a newer one; it cannot take it for another reason. This is why a reason added
/// at the end of the list needs no new protocol version.
#[test]
fn an_unknown_disconnect_reason_does_not_decode() {
    let newest = *DisconnectReason::ALL.last().unwrap();
    let frame = encode_frame(&ServerMessage::Disconnect {
        reason: newest,
        text: String::new(),
    })
    .unwrap();
    let mut payload = frame[FRAME_HEADER_BYTES..].to_vec();
    // The message's variant index, then the reason's: one byte each below 251.
    assert_eq!(payload[1] as usize, DisconnectReason::ALL.len() - 1);
    payload[1] = DisconnectReason::ALL.len() as u8;
    assert!(decode_frame_payload::<ServerMessage>(&payload).is_err());
}
