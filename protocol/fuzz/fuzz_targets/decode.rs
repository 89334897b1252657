//! Feeds arbitrary bytes to every decoder of the protocol: both datagram decoders, both
//! frame payload decoders, and stream readers of both directions fed in chunks. Decoding
//! must never panic; whatever decodes must be a message the encoder accepts (within the
//! same size limit) and that survives another round trip; and a decoded snapshot applied
//! to a view must not panic either. The hand-written snapshot decoder
//! (`decode_snapshot_datagram`, into a reused snapshot) must give exactly the generic
//! decoder's result, and `View::apply_into` exactly `View::apply`'s.

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::codec::{
    decode_datagram, decode_frame_payload, decode_snapshot_datagram, encode_datagram, encode_frame,
    FrameMessage, FrameReader, FRAME_HEADER_BYTES,
};
use protocol::{
    ApplyScratch, ClientDatagram, ClientMessage, ServerDatagram, ServerMessage, Snapshot, View,
};

fuzz_target!(|data: &[u8]| {
    // Datagrams, the body after the version byte being the fuzzer's to choose.
    if let Ok(message) = decode_datagram::<ClientDatagram>(data) {
        let bytes = encode_datagram(&message).expect("a decoded input re-encodes");
        // The decoder also takes integers written longer than needed; the encoder writes
        // them short, so the round trip is checked from the re-encoded bytes.
        assert!(bytes.len() <= data.len());
        let again: ClientDatagram = decode_datagram(&bytes).expect("a re-encoded input decodes");
        assert_eq!(encode_datagram(&again).expect("re-encodes"), bytes);
    }
    // The hand-written decoder, into a snapshot that held something else before.
    let mut reused = Snapshot {
        tick: 7,
        ..Snapshot::default()
    };
    let by_hand = decode_snapshot_datagram(data, &mut reused).map(|()| reused);
    let generic = decode_datagram::<ServerDatagram>(data);
    match (&by_hand, &generic) {
        (Ok(a), Ok(ServerDatagram::Snapshot(b))) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("the decoders disagree: {by_hand:?} against {generic:?}"),
    }
    if let Ok(message) = generic {
        let bytes = encode_datagram(&message).expect("a decoded snapshot re-encodes");
        assert!(bytes.len() <= data.len());
        let again: ServerDatagram = decode_datagram(&bytes).expect("a re-encoded snapshot decodes");
        assert_eq!(encode_datagram(&again).expect("re-encodes"), bytes);
        // A snapshot is untrusted input to the client's view as well.
        let ServerDatagram::Snapshot(snapshot) = &message;
        if let Ok(view) = View::new().apply(snapshot) {
            assert!(view
                .entities()
                .windows(2)
                .all(|pair| pair[0].id < pair[1].id));
            let again = view.apply(snapshot);
            let mut scratch = ApplyScratch::default();
            let mut into = View::new();
            let reused = view
                .apply_into(snapshot, &mut scratch, &mut into)
                .map(|()| into);
            assert_eq!(reused, again);
        }
    }

    // Frame payloads (what follows a frame header).
    check_payload::<ClientMessage>(data);
    check_payload::<ServerMessage>(data);

    // Streams: the first byte picks the chunk size, the rest is the stream.
    if let Some((&chunk, stream)) = data.split_first() {
        read_stream::<ClientMessage>(stream, usize::from(chunk % 64) + 1);
        read_stream::<ServerMessage>(stream, usize::from(chunk % 64) + 1);
    }
});

fn check_payload<M: FrameMessage>(payload: &[u8]) {
    if let Ok(message) = decode_frame_payload::<M>(payload) {
        let frame = encode_frame(&message).expect("a decoded message re-encodes");
        assert!(frame.len() <= FRAME_HEADER_BYTES + payload.len());
        let again: M = decode_frame_payload(&frame[FRAME_HEADER_BYTES..])
            .expect("a re-encoded message decodes");
        assert_eq!(encode_frame(&again).expect("re-encodes"), frame);
    }
}

fn read_stream<M: FrameMessage>(stream: &[u8], chunk: usize) {
    let mut reader = FrameReader::new();
    for piece in stream.chunks(chunk) {
        reader.push(piece);
        loop {
            match reader.next_message::<M>() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                // An error is final: the stream is out of step. Asking again must not
                // panic either.
                Err(_) => {
                    let _ = reader.next_message::<M>();
                    return;
                }
            }
        }
    }
}
