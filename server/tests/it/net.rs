//! `server run` over real QUIC on 127.0.0.1: logins, snapshots, interest, misbehaving
//! clients, slow clients, delta snapshots and graceful shutdown. Each test starts its own
//! server in-process on port 0 and drives it with the reference client.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use client::{Client, ClientError, Trust};
use protocol::codec::encode_frame;
use protocol::{
    ClientMessage, Command, DisconnectReason, EntityKind, Event, ServerMessage, Snapshot, View,
};
use server::config::Config;
use server::run::{Running, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

/// An open spot of den520d (the embedded default map) where test players spawn.
const SPAWN: [f32; 2] = [68.5, 164.5];

fn config(npcs: u32) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        npcs,
        spawn_point: Some(SPAWN),
        shutdown_grace_secs: 0.5,
        ..Config::default()
    }
}

async fn connect(server: &Running, name: &str) -> Client {
    let endpoint = client::endpoint(server.quic_addr, Trust::Pinned(server.fingerprint)).unwrap();
    timeout(
        Duration::from_secs(10),
        Client::connect(&endpoint, server.quic_addr, name),
    )
    .await
    .expect("login within 10 s")
    .expect("login accepted")
}

/// Receives snapshots for `ticks` ticks, acknowledging each with a `Nothing` input.
async fn follow(client: &mut Client, ticks: usize) -> Vec<Snapshot> {
    let mut got = Vec::new();
    while got.len() < ticks {
        let snapshot = timeout(Duration::from_secs(5), client.next_snapshot())
            .await
            .expect("a snapshot within 5 s")
            .expect("snapshots keep coming");
        client.send_command(Command::Nothing).unwrap();
        got.push(snapshot);
    }
    got
}

fn own_position(client: &Client) -> (f32, f32) {
    let me = client.welcome().entity;
    let (_, view) = client.view().expect("a view");
    view.get(me).expect("own character in view").pos.to_metres()
}

fn distance(a: (f32, f32), b: (f32, f32)) -> f32 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

/// Logs `name` in once the account is free: tries again every 100 ms, for 5 s, while the
/// server says it is already logged in (a claim another process or session is giving back).
pub(crate) async fn connect_once_free(
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
    name: &str,
) -> Client {
    for _ in 0..50 {
        match Client::connect(endpoint, addr, name).await {
            Ok(client) => return client,
            Err(ClientError::Disconnected { text, .. }) if text.contains("already logged in") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("{name}: {other}"),
        }
    }
    panic!("{name} was still logged in elsewhere after 5 s");
}

pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_see_each_other_move_and_only_what_is_near() {
    let server = start(config(500)).await.unwrap();
    let mut ada = connect(&server, "ada").await;
    let mut bob = connect(&server, "bob").await;
    assert_ne!(ada.welcome().entity, bob.welcome().entity);
    assert_eq!(ada.welcome().map_id, "den520d.map");
    follow(&mut ada, 5).await;
    follow(&mut bob, 5).await;

    // Both spawned within 8 m of the same point: each sees the other.
    let view_radius = ada.welcome().view_radius_m;
    let (_, view) = bob.view().unwrap();
    let seen = view.get(ada.welcome().entity).expect("bob sees ada");
    assert_eq!(seen.kind, EntityKind::Player);

    // Ada walks 6 m east (or west, whichever is open); Bob sees her move.
    let start_ada = own_position(&ada);
    let seen_before = seen.pos.to_metres();
    let target = (start_ada.0 + 6.0, start_ada.1);
    ada.send_command(Command::MoveTo {
        x: target.0,
        y: target.1,
    })
    .unwrap();
    for _ in 0..60 {
        follow(&mut ada, 1).await;
        follow(&mut bob, 1).await;
    }
    let ada_now = own_position(&ada);
    assert!(
        distance(ada_now, start_ada) > 1.0,
        "ada moved from {start_ada:?} to {ada_now:?}"
    );
    let (_, view) = bob.view().unwrap();
    let seen_after = view.get(ada.welcome().entity).expect("bob still sees ada");
    assert!(
        distance(seen_after.pos.to_metres(), seen_before) > 1.0,
        "bob saw ada move"
    );

    // Both see NPCs, and nothing beyond the view radius plus hysteresis.
    for client in [&ada, &bob] {
        let me = own_position(client);
        let (_, view) = client.view().unwrap();
        let npcs = view
            .entities()
            .iter()
            .filter(|e| e.kind == EntityKind::Npc)
            .count();
        assert!(npcs > 0, "NPCs in view");
        for entity in view.entities() {
            let d = distance(entity.pos.to_metres(), me);
            // Radius 30 m, hysteresis 4 m, plus a tick of movement of either side.
            assert!(d <= view_radius + 4.0 + 0.5, "{:?} at {d} m", entity.id);
        }
    }
    ada.leave().await;
    bob.leave().await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_snapshots_hold_what_full_snapshots_showed() {
    let server = start(config(500)).await.unwrap();
    // `delta` acknowledges every snapshot, so it gets deltas; `full` never acknowledges
    // (it sends nothing), so every snapshot it gets is built against the empty view.
    let mut delta = connect(&server, "delta").await;
    let mut full = connect(&server, "full").await;
    let mut full_views: BTreeMap<u64, View> = BTreeMap::new();
    let mut delta_views: BTreeMap<u64, View> = BTreeMap::new();
    let mut deltas = 0;
    for _ in 0..60 {
        let snapshot = follow(&mut delta, 1).await.remove(0);
        deltas += usize::from(snapshot.baseline_tick.is_some());
        let (tick, view) = delta.view().unwrap();
        delta_views.insert(tick, view.clone());
        let snapshot = timeout(Duration::from_secs(5), full.next_snapshot())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(snapshot.baseline_tick, None);
        let (tick, view) = full.view().unwrap();
        full_views.insert(tick, view.clone());
    }
    assert!(deltas > 40, "{deltas} of 60 snapshots were deltas");
    // A delta snapshot looks at each entity in view on a cadence (every tick near the
    // viewer, every eighth at the edge of the view: `interest::schedule`), so the delta
    // client holds each entity as it was at one of the last eight ticks, and most as they
    // are now.
    let (mut compared, mut current) = (0, 0);
    for (tick, full_view) in &full_views {
        let Some(delta_view) = delta_views.get(tick) else {
            continue;
        };
        for entity in full_view.entities() {
            if let Some(other) = delta_view.get(entity.id) {
                // Only where the full client saw the entity at each of those ticks (the two
                // clients stand apart: an entity can enter one view before the other).
                let window: Vec<&protocol::EntityState> = (tick.saturating_sub(7)..=*tick)
                    .filter_map(|t| full_views.get(&t).and_then(|view| view.get(entity.id)))
                    .collect();
                if window.len() < 8 {
                    continue;
                }
                assert!(
                    window.contains(&other),
                    "tick {tick}: {other:?} is none of {window:?}"
                );
                compared += 1;
                current += usize::from(other == entity);
            }
        }
    }
    assert!(compared > 100, "compared {compared} entity states");
    assert!(
        current * 3 > compared,
        "{current} of {compared} entity states are current"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_clients_get_a_reason_and_others_carry_on() {
    let server = start(config(200)).await.unwrap();
    let addr = server.quic_addr;
    let endpoint = client::endpoint(addr, Trust::Pinned(server.fingerprint)).unwrap();
    let mut good = connect(&server, "good").await;
    follow(&mut good, 3).await;

    // A client of another protocol version hears both versions.
    let (_conn, mut send, mut recv) = client::open(&endpoint, addr).await.unwrap();
    send.write_all(&encode_frame(&ClientMessage::Hello { version: 999 }).unwrap())
        .await
        .unwrap();
    let (reason, text) = read_disconnect(&mut recv).await;
    assert_eq!(reason, DisconnectReason::VersionMismatch);
    assert!(text.contains("999") && text.contains('1'), "{text}");

    // An oversized frame header.
    let (_conn, mut send, mut recv) = client::open(&endpoint, addr).await.unwrap();
    send.write_all(&1_000_000u32.to_be_bytes()).await.unwrap();
    let (reason, _) = read_disconnect(&mut recv).await;
    assert_eq!(reason, DisconnectReason::FrameTooLarge);

    // A frame of garbage.
    let (_conn, mut send, mut recv) = client::open(&endpoint, addr).await.unwrap();
    send.write_all(&[0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff])
        .await
        .unwrap();
    let (reason, _) = read_disconnect(&mut recv).await;
    assert_eq!(reason, DisconnectReason::BadMessage);

    // A logged-in client sending garbage datagrams and NaN inputs: told, then dropped.
    let mut bad = connect(&server, "bad").await;
    bad.send_raw(vec![0xde, 0xad, 0xbe, 0xef]).unwrap();
    let told = timeout(Duration::from_secs(5), bad.next_message())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            told,
            ServerMessage::Event(Event::InvalidInput { count: 1, .. })
        ),
        "{told:?}"
    );
    let mut ending = None;
    for i in 0..200 {
        let sent = if i % 2 == 0 {
            bad.send_command(Command::MoveTo {
                x: f32::NAN,
                y: 1.0,
            })
            .map(|_| ())
        } else {
            bad.send_raw(vec![1, 2, 3])
        };
        if let Err(err) = sent {
            ending = Some(err);
            break;
        }
        // Paced a little so datagrams are not dropped by the send buffer.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let ending = match ending {
        Some(err) => err,
        None => loop {
            match timeout(Duration::from_secs(5), bad.next_message())
                .await
                .expect("disconnected within 5 s")
            {
                Ok(_) => continue,
                Err(err) => break err,
            }
        },
    };
    let ending = match ending {
        ClientError::Disconnected { reason, .. } => reason,
        ClientError::Closed(_) => {
            let err = bad.connection().closed().await;
            client::close_reason(&err).expect("closed with a reason").0
        }
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(ending, DisconnectReason::TooManyInvalid);

    // The good client never noticed: snapshots keep coming, ticks keep rising.
    let snapshots = follow(&mut good, 20).await;
    assert!(snapshots.windows(2).all(|w| w[0].tick < w[1].tick));
    let metrics = http_get(server.metrics_addr, "/metrics").await;
    for line in [
        "mmo_disconnects_total{reason=\"version_mismatch\"} 1",
        "mmo_disconnects_total{reason=\"frame_too_large\"} 1",
        "mmo_disconnects_total{reason=\"bad_message\"} 1",
        "mmo_disconnects_total{reason=\"too_many_invalid\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    good.leave().await;
    server.shutdown().await.unwrap();
}

/// Reads control frames until the server's disconnect.
async fn read_disconnect(recv: &mut quinn::RecvStream) -> (DisconnectReason, String) {
    let mut reader = protocol::codec::FrameReader::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(message) = reader.next_message::<ServerMessage>().unwrap() {
            if let ServerMessage::Disconnect { reason, text } = message {
                return (reason, text);
            }
            continue;
        }
        let n = timeout(Duration::from_secs(5), recv.read(&mut buf))
            .await
            .expect("an answer within 5 s")
            .expect("readable")
            .expect("a disconnect before the stream ends");
        reader.push(&buf[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_does_not_slow_the_tick() {
    let server = start(config(500)).await.unwrap();
    // This client logs in and then never reads a datagram or a frame again.
    let _silent = connect(&server, "silent").await;
    let mut watcher = connect(&server, "watcher").await;
    follow(&mut watcher, 5).await;
    let ticks_before = server.metrics.ticks.get();
    let started = tokio::time::Instant::now();
    let snapshots = follow(&mut watcher, 40).await;
    let elapsed = started.elapsed();
    let ticks = server.metrics.ticks.get() - ticks_before;
    // 40 snapshots at 20 Hz take 2 s; allow a loaded machine twice that.
    assert!(
        elapsed < Duration::from_secs(4),
        "40 snapshots took {elapsed:?}"
    );
    assert!(ticks >= 35, "{ticks} ticks in {elapsed:?}");
    assert!(snapshots.windows(2).all(|w| w[0].tick < w[1].tick));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_tells_clients_why() {
    let server = start(config(100)).await.unwrap();
    let mut client = connect(&server, "ada").await;
    follow(&mut client, 2).await;
    let metrics_addr = server.metrics_addr;
    let ready = http_get(metrics_addr, "/readyz").await;
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    let health = http_get(metrics_addr, "/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let missing = http_get(metrics_addr, "/nope").await;
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

    let stopping = tokio::spawn(server.shutdown());
    let notice = timeout(Duration::from_secs(5), client.next_message())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            notice,
            ServerMessage::Event(Event::ShuttingDown { grace_ms: 500 })
        ),
        "{notice:?}"
    );
    let last = timeout(Duration::from_secs(5), client.next_message())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            last,
            ServerMessage::Disconnect {
                reason: DisconnectReason::Shutdown,
                ..
            }
        ),
        "{last:?}"
    );
    timeout(Duration::from_secs(10), stopping)
        .await
        .expect("shutdown within 10 s")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_per_address_are_capped() {
    let server = start(Config {
        max_clients_per_ip: 2,
        ..config(50)
    })
    .await
    .unwrap();
    let first = connect(&server, "one").await;
    let second = connect(&server, "two").await;
    let endpoint = client::endpoint(server.quic_addr, Trust::Pinned(server.fingerprint)).unwrap();
    let refused = Client::connect(&endpoint, server.quic_addr, "three").await;
    match refused {
        Err(ClientError::Disconnected { reason, text }) => {
            assert_eq!(reason, DisconnectReason::ServerFull);
            assert!(text.contains("address"), "{text}");
        }
        Err(other) => {
            panic!("expected a server-full disconnect, got {other:?}")
        }
        Ok(_) => panic!("a third session from one address was accepted"),
    }
    first.leave().await;
    // A slot is free again once a session ends.
    let mut third = None;
    for _ in 0..20 {
        if let Ok(client) = Client::connect(&endpoint, server.quic_addr, "three").await {
            third = Some(client);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(third.is_some(), "a freed slot is reused");
    drop(second);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_pinning_another_certificate_does_not_connect() {
    let server = start(config(10)).await.unwrap();
    let mut wrong = server.fingerprint;
    wrong.0[0] ^= 0xff;
    let endpoint = client::endpoint(server.quic_addr, Trust::Pinned(wrong)).unwrap();
    let refused = timeout(
        Duration::from_secs(10),
        Client::connect(&endpoint, server.quic_addr, "mallory"),
    )
    .await
    .expect("an answer within 10 s");
    assert!(
        matches!(refused, Err(ClientError::Connect(_))),
        "{:?}",
        refused.err()
    );
    server.shutdown().await.unwrap();
}

/// A load-test bot (the I/O-free state machine) plays a session for three seconds and
/// finds nothing wrong in what the server sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_test_bot_finds_no_violations() {
    use loadtest::bot::{Behaviour, Bot, Sample};
    use protocol::codec::{FrameReader, encode_datagram};
    use protocol::{ClientDatagram, PROTOCOL_VERSION};
    use std::time::Instant;

    let server = start(config(300)).await.unwrap();
    let endpoint = client::endpoint(server.quic_addr, Trust::Pinned(server.fingerprint)).unwrap();
    let (conn, mut send, mut recv) = client::open(&endpoint, server.quic_addr).await.unwrap();
    for message in [
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
        },
        ClientMessage::Login {
            name: Bot::name(1),
            token: None,
        },
    ] {
        send.write_all(&encode_frame(&message).unwrap())
            .await
            .unwrap();
    }
    let mut reader = FrameReader::new();
    let mut buf = [0u8; 4096];
    let welcome = loop {
        if let Some(ServerMessage::Welcome(welcome)) = reader.next_message().unwrap() {
            break welcome;
        }
        let n = recv.read(&mut buf).await.unwrap().unwrap();
        reader.push(&buf[..n]);
    };
    let mut bot = Bot::new(Behaviour::Click, 1);
    bot.on_welcome(welcome, Instant::now());
    let end = Instant::now() + Duration::from_secs(3);
    let mut samples = Vec::new();
    while Instant::now() < end {
        tokio::select! {
            datagram = conn.read_datagram() => bot.on_datagram(&datagram.unwrap(), Instant::now()),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        if let Some(input) = bot.next_input(Instant::now()) {
            let bytes = encode_datagram(&ClientDatagram::Input(input)).unwrap();
            conn.send_datagram(bytes.into()).unwrap();
        }
        samples.extend(bot.drain());
    }
    let violations: Vec<_> = samples
        .iter()
        .filter(|s| matches!(s, Sample::Violation(_)))
        .collect();
    assert!(violations.is_empty(), "{violations:?}");
    assert!(bot.snapshots >= 40, "{} snapshots in 3 s", bot.snapshots);
    assert!(samples.iter().any(|s| matches!(s, Sample::Rtt(_))));
    server.shutdown().await.unwrap();
}

/// A number from a `/metrics` text: the value of the line `name value`.
pub(crate) fn metric_value(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
}

/// The QUIC socket asks for megabytes of receive buffer, not the kernel's default of a
/// few hundred kilobytes, and exports what it got and what the kernel dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quic_socket_has_megabytes_of_buffer_and_counts_drops() {
    let server = start(config(10)).await.unwrap();
    let metrics = http_get(server.metrics_addr, "/metrics").await;
    let granted = metric_value(&metrics, "mmo_udp_receive_buffer_bytes");
    let asked = u64::from(server::config::DEFAULT_SOCKET_BUFFER_BYTES);
    assert!(asked >= 4 << 20);
    match std::fs::read_to_string("/proc/sys/net/core/rmem_max") {
        Ok(max) => {
            let max: u64 = max.trim().parse().unwrap();
            assert_eq!(granted, asked.min(max), "rmem_max {max}");
        }
        Err(_) => assert!(granted > 0),
    }
    assert!(metric_value(&metrics, "mmo_udp_send_buffer_bytes") > 0);
    // Nobody flooded this socket.
    assert_eq!(metric_value(&metrics, "mmo_udp_receive_drops_total"), 0);
    server.shutdown().await.unwrap();
}

/// A client whose QUIC connection takes datagrams, but none big enough for a snapshot,
/// would be welcomed and then sent nothing while holding a slot: it is refused at login
/// with its own reason, and a normal client still gets in. (A client that takes no
/// datagrams at all gets its snapshots on a stream: `streams.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_room_for_datagrams_is_refused_at_login() {
    use std::sync::Arc;

    use client::tls::{TransportLimits, client_config};
    use protocol::PROTOCOL_VERSION;

    let server = start(config(10)).await.unwrap();
    let addr = server.quic_addr;
    let endpoint = client::endpoint(addr, Trust::Pinned(server.fingerprint)).unwrap();
    for (datagram_buffer, said) in [(Some(150), "accepts datagrams of at most")] {
        let limits = TransportLimits {
            idle_timeout: Duration::from_secs(15),
            keep_alive: Duration::from_secs(4),
        };
        let mut quic = client_config(Trust::Pinned(server.fingerprint), limits).unwrap();
        let mut transport = quinn::TransportConfig::default();
        // The receive buffer also sets the largest datagram frame the client announces.
        transport.datagram_receive_buffer_size(datagram_buffer);
        quic.transport_config(Arc::new(transport));
        let conn = endpoint
            .connect_with(quic, addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        for message in [
            ClientMessage::Hello {
                version: PROTOCOL_VERSION,
            },
            ClientMessage::Login {
                name: "mute".to_owned(),
                token: None,
            },
        ] {
            send.write_all(&encode_frame(&message).unwrap())
                .await
                .unwrap();
        }
        let (reason, text) = read_disconnect(&mut recv).await;
        assert_eq!(reason, DisconnectReason::DatagramsUnsupported, "{text}");
        assert!(text.contains(said), "{text}");
        let closed = timeout(Duration::from_secs(5), conn.closed())
            .await
            .unwrap();
        let (code, _) = client::close_reason(&closed).expect("closed with a reason");
        assert_eq!(code, DisconnectReason::DatagramsUnsupported);
    }
    let metrics = http_get(server.metrics_addr, "/metrics").await;
    assert!(
        metrics.contains("mmo_disconnects_total{reason=\"datagrams_unsupported\"} 1\n"),
        "{metrics}"
    );
    assert_eq!(metric_value(&metrics, "mmo_entities{kind=\"player\"}"), 0);
    let mut fine = connect(&server, "fine").await;
    follow(&mut fine, 2).await;
    fine.leave().await;
    server.shutdown().await.unwrap();
}
