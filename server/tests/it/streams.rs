//! A client whose QUIC connection takes no datagrams (as .NET's `System.Net.Quic` today)
//! still plays: it is detected from its transport parameters, its snapshots come on a
//! unidirectional stream the server opens (length-prefixed, latest wins), and its inputs go
//! on the control stream as `ClientMessage::Input`.

use std::sync::Arc;
use std::time::Duration;

use client::Trust;
use client::tls::{TransportLimits, client_config};
use protocol::codec::{decode_datagram, encode_frame};
use protocol::{ClientMessage, Command, Input, ServerDatagram, ViewHistory};
use server::config::Config;
use server::run::start;
use tokio::time::timeout;

/// Reads one length-prefixed snapshot from the snapshot stream.
async fn next_snapshot(stream: &mut quinn::RecvStream) -> protocol::Snapshot {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await.unwrap();
    let len = u32::from_be_bytes(len) as usize;
    assert!(
        len <= protocol::MAX_DATAGRAM_BYTES,
        "a snapshot of {len} bytes"
    );
    let mut bytes = vec![0u8; len];
    stream.read_exact(&mut bytes).await.unwrap();
    let ServerDatagram::Snapshot(snapshot) = decode_datagram(&bytes).unwrap();
    snapshot
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_datagrams_gets_snapshots_on_a_stream_and_moves() {
    let server = start(Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        npcs: 50,
        spawn_point: Some([68.5, 164.5]),
        shutdown_grace_secs: 0.5,
        ..Config::default()
    })
    .await
    .unwrap();
    let addr = server.quic_addr;
    let endpoint = client::endpoint(addr, Trust::Pinned(server.fingerprint)).unwrap();
    let limits = TransportLimits {
        idle_timeout: Duration::from_secs(15),
        keep_alive: Duration::from_secs(4),
    };
    let mut quic = client_config(Trust::Pinned(server.fingerprint), limits).unwrap();
    let mut transport = quinn::TransportConfig::default();
    // No datagrams at all; the server may open one stream towards the client.
    transport
        .datagram_receive_buffer_size(None)
        .max_concurrent_uni_streams(1u8.into());
    quic.transport_config(Arc::new(transport));
    let conn = endpoint
        .connect_with(quic, addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let welcome = crate::raw::login(&mut send, &mut recv, "streamer").await;
    let mut snapshots = timeout(Duration::from_secs(5), conn.accept_uni())
        .await
        .expect("a snapshot stream within 5 s")
        .unwrap();

    let mut history = ViewHistory::new();
    let mut seq = 0;
    let mut start = None;
    let target = (72.5f32, 164.5f32);
    let mut closest = f32::MAX;
    for _ in 0..120 {
        let snapshot = timeout(Duration::from_secs(5), next_snapshot(&mut snapshots))
            .await
            .expect("snapshots keep coming on the stream");
        history.receive(&snapshot).unwrap();
        let (tick, view) = history.newest().unwrap();
        let me = view.get(welcome.entity).expect("own character in view");
        let at = me.pos.to_metres();
        start.get_or_insert(at);
        closest = closest.min((at.0 - target.0).hypot(at.1 - target.1));
        seq += 1;
        let command = if seq % 10 == 1 {
            Command::MoveTo {
                x: target.0,
                y: target.1,
            }
        } else {
            Command::Nothing
        };
        let input = ClientMessage::Input(Input {
            seq,
            ack_tick: Some(tick),
            command,
        });
        send.write_all(&encode_frame(&input).unwrap())
            .await
            .unwrap();
        if closest < 0.5 {
            break;
        }
    }
    let start = start.unwrap();
    let from = (start.0 - target.0).hypot(start.1 - target.1);
    assert!(from > 2.0, "the target is {from} m from the spawn");
    assert!(
        closest < 0.5,
        "the character walked from {from:.1} m to {closest:.1} m of its target"
    );
    conn.close(0u32.into(), b"");
    server.shutdown().await.unwrap();
}
