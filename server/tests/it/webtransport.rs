//! WebTransport from a Rust client speaking HTTP/3 the way a browser does: the CONNECT,
//! the session's stream, HTTP datagrams. Checks what the browser test cannot see: the
//! certificate browsers get, refusals of bad requests, and that the server keeps serving.

use std::time::Duration;

use client::Trust;
use client::tls::{Fingerprint, TransportLimits, client_config_with_alpn};
use protocol::codec::{decode_datagram, encode_datagram};
use protocol::{ClientDatagram, Command, Input, ServerDatagram};
use server::config::Config;
use server::run::{Running, start};
use server::webtransport::{h3, qpack};
use tokio::time::timeout;

async fn server() -> Running {
    start(Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        npcs: 50,
        spawn_point: Some([68.5, 164.5]),
        shutdown_grace_secs: 0.5,
        ..Config::default()
    })
    .await
    .unwrap()
}

/// An HTTP/3 connection that only accepts the server's generated WebTransport certificate.
async fn h3_connection(server: &Running) -> quinn::Connection {
    let cert = server
        .certificates
        .webtransport()
        .expect("a generated certificate");
    let pinned = Fingerprint::parse(&cert.sha256_hex()).unwrap();
    let limits = TransportLimits {
        idle_timeout: Duration::from_secs(15),
        keep_alive: Duration::from_secs(4),
    };
    let mut config = client_config_with_alpn(Trust::Pinned(pinned), limits, b"h3").unwrap();
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_uni_streams(4u8.into());
    config.transport_config(std::sync::Arc::new(transport));
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint
        .connect_with(config, server.quic_addr, "localhost")
        .unwrap()
        .await
        .expect("the h3 handshake with the WebTransport certificate")
}

fn connect_request(path: &str) -> Vec<u8> {
    let fields = qpack::encode_fields(&[
        (":method", "CONNECT"),
        (":protocol", "webtransport"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", path),
    ]);
    h3::frame(h3::FRAME_HEADERS, &fields)
}

/// Reads the response's HEADERS frame and returns its `:status`.
async fn response_status(recv: &mut quinn::RecvStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some((kind, payload, _)) = h3::take_frame(&buf).unwrap() {
            assert_eq!(kind, h3::FRAME_HEADERS);
            let fields = qpack::decode(payload).unwrap();
            return fields
                .into_iter()
                .find(|(name, _)| name == ":status")
                .map(|(_, value)| value)
                .expect("a status");
        }
        let n = recv.read(&mut chunk).await.unwrap().expect("a response");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A WebTransport session at `path`, accepted (200): its CONNECT stream (kept open while
/// the session lasts) and the session's stream, its header (the signal, then the session
/// id: the CONNECT stream's) written, ready for frames.
async fn open_session(
    conn: &quinn::Connection,
    path: &str,
) -> (
    (quinn::SendStream, quinn::RecvStream),
    quinn::SendStream,
    quinn::RecvStream,
) {
    let (mut connect_send, mut connect_recv) = conn.open_bi().await.unwrap();
    // A reserved ("grease") frame first, as a browser may send one (RFC 9114 §9): the
    // server skips it.
    let mut request = h3::frame(0x21 + 0x1f * 5, b"grease");
    request.extend_from_slice(&connect_request(path));
    connect_send.write_all(&request).await.unwrap();
    assert_eq!(response_status(&mut connect_recv).await, "200");
    let (mut send, recv) = conn.open_bi().await.unwrap();
    let mut header = Vec::new();
    h3::put_varint(&mut header, h3::WT_BIDI_SIGNAL);
    h3::put_varint(&mut header, u64::from(connect_send.id()));
    send.write_all(&header).await.unwrap();
    ((connect_send, connect_recv), send, recv)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webtransport_session_plays_over_http_datagrams() {
    let server = server().await;
    let conn = h3_connection(&server).await;
    let (_connect, mut send, mut recv) = open_session(&conn, "/mmo?from=test").await;
    let welcome = crate::raw::login(&mut send, &mut recv, "h3").await;
    // Snapshots come as HTTP datagrams: the quarter stream id (0), then the datagram.
    let mut seen_self = false;
    // The inputs name the session in both of QUIC's shortest encodings of 0 (one byte, and
    // two: 0x40 0x00): the server reads the number, and takes both.
    let mut inputs_seen = 0;
    for seq in 1..=20 {
        let datagram = timeout(Duration::from_secs(5), conn.read_datagram())
            .await
            .expect("a snapshot within 5 s")
            .unwrap();
        assert_eq!(datagram[0], 0, "the session's quarter stream id");
        let ServerDatagram::Snapshot(snapshot) = decode_datagram(&datagram[1..]).unwrap();
        seen_self |= snapshot.entered.iter().any(|e| e.id == welcome.entity);
        inputs_seen = inputs_seen.max(snapshot.last_input_seq);
        let input = encode_datagram(&ClientDatagram::Input(Input {
            seq,
            ack_tick: Some(snapshot.tick),
            command: Command::Nothing,
        }))
        .unwrap();
        let mut framed = if seq % 2 == 0 { vec![0x40, 0] } else { vec![0] };
        framed.extend_from_slice(&input);
        conn.send_datagram(framed.into()).unwrap();
    }
    assert!(seen_self, "the own character entered the view");
    // Snapshots carry the newest input the world took; some of the even ones were among
    // them by the last, unless inputs with the longer prefix were dropped.
    assert!(
        inputs_seen >= 10,
        "the newest input taken was {inputs_seen}"
    );
    let metrics = crate::net::http_get(server.metrics_addr, "/metrics").await;
    let invalid =
        crate::net::metric_value(&metrics, "mmo_invalid_messages_total{kind=\"datagram\"}");
    assert_eq!(invalid, 0, "a datagram was taken for invalid");
    conn.close(0u32.into(), b"");
    server.shutdown().await.unwrap();
}

/// A session whose stream ends before its login frees the client's slot, so the server
/// must not keep the connection either: it closes it (the client here would keep it open
/// for ever with its keep-alives, and the server's own reader of the session's streams
/// holds it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stream_ended_before_the_login_closes_the_connection() {
    let server = server().await;
    let conn = h3_connection(&server).await;
    let (_connect, mut send, _recv) = open_session(&conn, "/mmo").await;
    send.finish().unwrap();
    let closed = timeout(Duration::from_secs(10), conn.closed()).await;
    assert!(
        closed.is_ok(),
        "the server closes the connection of a session that ended before its login"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_webtransport_requests_are_refused_and_others_play_on() {
    let server = server().await;
    // Another path: 404, and no session.
    let conn = h3_connection(&server).await;
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&connect_request("/admin")).await.unwrap();
    assert_eq!(response_status(&mut recv).await, "404");
    // A plain GET: 400.
    let conn = h3_connection(&server).await;
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let get = qpack::encode_fields(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/mmo"),
    ]);
    send.write_all(&h3::frame(h3::FRAME_HEADERS, &get))
        .await
        .unwrap();
    assert_eq!(response_status(&mut recv).await, "400");
    // Garbage where the request belongs: the connection ends, the server does not.
    let conn = h3_connection(&server).await;
    let (mut send, _recv) = conn.open_bi().await.unwrap();
    send.write_all(&[0x01, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff])
        .await
        .unwrap();
    let _ = send.finish();
    let closed = timeout(Duration::from_secs(10), conn.closed()).await;
    assert!(
        closed.is_ok(),
        "the server closes a connection it cannot use"
    );
    // Each request that opened no session is counted as an invalid message (once its
    // session task has seen it through, which may be just after the client got its answer).
    let mut invalid = 0;
    for _ in 0..50 {
        let metrics = crate::net::http_get(server.metrics_addr, "/metrics").await;
        invalid = crate::net::metric_value(&metrics, "mmo_invalid_messages_total{kind=\"frame\"}");
        if invalid >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(invalid, 3);
    // A native client still plays.
    let endpoint = client::endpoint(server.quic_addr, Trust::Pinned(server.fingerprint)).unwrap();
    let mut native = client::Client::connect(&endpoint, server.quic_addr, "native")
        .await
        .unwrap();
    timeout(Duration::from_secs(5), native.next_snapshot())
        .await
        .unwrap()
        .unwrap();
    native.leave().await;
    server.shutdown().await.unwrap();
}

/// A client ends its session as a browser's `transport.close()` does: a
/// `CLOSE_WEBTRANSPORT_SESSION` capsule in the CONNECT stream's DATA frames (here after a
/// capsule of another type, which is skipped, and split across two frames, the stream left
/// open), or the end of that stream alone. The server closes the
/// connection, and the character leaves the world: no snapshot keeps coming, no client is
/// counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_client_closes_ends() {
    let server = server().await;
    for (name, close_capsule) in [("capsule", true), ("fin", false)] {
        let conn = h3_connection(&server).await;
        let ((mut connect_send, _connect_recv), mut send, mut recv) =
            open_session(&conn, "/mmo").await;
        crate::raw::login(&mut send, &mut recv, name).await;
        timeout(Duration::from_secs(5), conn.read_datagram())
            .await
            .expect("a snapshot within 5 s")
            .unwrap();
        if close_capsule {
            let mut capsules = Vec::new();
            // DRAIN_WEBTRANSPORT_SESSION, empty; then the close: a code and a message.
            h3::put_varint(&mut capsules, 0x78ae);
            h3::put_varint(&mut capsules, 0);
            h3::put_varint(&mut capsules, 0x2843);
            h3::put_varint(&mut capsules, 6);
            capsules.extend_from_slice(&7u32.to_be_bytes());
            capsules.extend_from_slice(b"ok");
            let (first, second) = capsules.split_at(4);
            let mut frames = h3::frame(0x00, first);
            frames.extend(h3::frame(0x00, second));
            connect_send.write_all(&frames).await.unwrap();
        } else {
            connect_send.finish().unwrap();
        }
        let closed = timeout(Duration::from_secs(5), conn.closed())
            .await
            .unwrap_or_else(|_| panic!("{name}: the connection still open after 5 s"));
        assert!(
            matches!(&closed, quinn::ConnectionError::ApplicationClosed(close)
                if close.error_code == 0x100u32.into()),
            "{name}: {closed:?}"
        );
        let mut clients = 1;
        for _ in 0..50 {
            let metrics = crate::net::http_get(server.metrics_addr, "/metrics").await;
            clients = crate::net::metric_value(&metrics, "mmo_clients_connected");
            if clients == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(clients, 0, "{name}: the character is still counted");
    }
    server.shutdown().await.unwrap();
}
