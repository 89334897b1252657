//! A client's handshake by hand, on a control stream the test opened itself (for
//! connections the reference client does not make: without datagrams, over WebTransport).

use protocol::codec::{FrameReader, encode_frame};
use protocol::{ClientMessage, PROTOCOL_VERSION, ServerMessage, Welcome};

/// Sends the hello and a login as `name`, then reads frames until the welcome.
pub(crate) async fn login(
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    name: &str,
) -> Welcome {
    for message in [
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
        },
        ClientMessage::Login {
            name: name.to_owned(),
            token: None,
        },
    ] {
        send.write_all(&encode_frame(&message).unwrap())
            .await
            .unwrap();
    }
    let mut reader = FrameReader::new();
    let mut chunk = [0u8; 4096];
    let first = loop {
        if let Some(message) = reader.next_message::<ServerMessage>().unwrap() {
            break message;
        }
        let n = recv.read(&mut chunk).await.unwrap().expect("the welcome");
        reader.push(&chunk[..n]);
    };
    match first {
        ServerMessage::Welcome(welcome) => welcome,
        other => panic!("expected a welcome, got {other:?}"),
    }
}
