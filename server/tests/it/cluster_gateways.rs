//! Two gateways in front of the same two zones: players connected to different gateways
//! see each other, an order given through one gateway moves the character that players of
//! the other gateway watch, and the gateways mint distinct ids.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::{Client, Fingerprint, Trust};
use protocol::{Command as Order, EntityKind, NetId};
use server::config::Config;
use server::run::start_gateway;
use tokio::sync::watch;

use crate::cluster::{census, cluster_file, nats, scratch, wait_ticking, zone};

/// Players on each gateway.
const PLAYERS: usize = 5;
/// Where everyone spawns (den520d, walkable around it), within the gateways' spread.
const SPAWN: [f32; 2] = [128.0, 100.0];

/// What one player saw: its own id, and every player id and position in its views.
#[derive(Debug, Default)]
struct Seen {
    me: Option<NetId>,
    /// Each other player seen, with its positions in every snapshot, metres.
    players: BTreeMap<NetId, Vec<(f32, f32)>>,
}

async fn watch_world(
    server: SocketAddr,
    fingerprint: Fingerprint,
    name: String,
    seen: Arc<Mutex<BTreeMap<String, Seen>>>,
    orders: Option<watch::Receiver<Option<(f32, f32)>>>,
    mut stop: watch::Receiver<bool>,
) {
    let endpoint = client::endpoint(server, Trust::Pinned(fingerprint)).unwrap();
    let mut client = Client::connect(&endpoint, server, &name).await.unwrap();
    let me = client.welcome().entity;
    seen.lock().unwrap().entry(name.clone()).or_default().me = Some(me);
    let mut orders = orders;
    loop {
        tokio::select! {
            snapshot = client.next_snapshot() => {
                if snapshot.is_err() {
                    return;
                }
            }
            _ = stop.changed() => return,
        }
        if let Some(orders) = &mut orders
            && orders.has_changed().unwrap_or(false)
            && let Some((x, y)) = *orders.borrow_and_update()
        {
            let _ = client.send_command(Order::MoveTo { x, y });
        }
        let Some((_, view)) = client.view() else {
            continue;
        };
        let mut seen = seen.lock().unwrap();
        let mine = seen.entry(name.clone()).or_default();
        for e in view.entities() {
            if e.kind == EntityKind::Player && e.id != me {
                mine.players
                    .entry(e.id)
                    .or_default()
                    .push(e.pos.to_metres());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_of_two_gateways_see_and_follow_each_other() {
    let (_nats, url) = nats();
    let dir = scratch("cluster-gateways");
    let (file, metrics) = cluster_file(&dir, &url, 200, None, 2);
    let _west = zone(&file, "west");
    let _east = zone(&file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let census = census(&url, &["west", "east"]).await;
    let config = Config {
        max_clients_per_ip: 1_000,
        shutdown_grace_secs: 0.5,
        spawn_point: Some(SPAWN),
        spawn_spread_m: 6.0,
        ..Config::default()
    };
    let gw1 = start_gateway(config.clone(), &file, Some("gw1"))
        .await
        .unwrap();
    let gw2 = start_gateway(config, &file, Some("gw2")).await.unwrap();
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let (stop, stopped) = watch::channel(false);
    // The first player of gw2 takes orders from the test.
    let (order, orders) = watch::channel(None);
    let mut players = Vec::new();
    for (gw, tag) in [(&gw1, "a"), (&gw2, "b")] {
        for k in 0..PLAYERS {
            let orders = (tag == "b" && k == 0).then(|| orders.clone());
            players.push(tokio::spawn(watch_world(
                gw.quic_addr,
                gw.fingerprint,
                format!("{tag}-{k}"),
                Arc::clone(&seen),
                orders,
                stopped.clone(),
            )));
        }
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    // The walker goes west of the border at x = 128, then east past it and its 2 m
    // handoff margin, then west again.
    for (dx, secs) in [(-8.0, 7), (14.0, 12), (-8.0, 12)] {
        order.send_replace(Some((SPAWN[0] + dx, SPAWN[1])));
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
    stop.send_replace(true);
    for player in players {
        player.await.unwrap();
    }
    let census = census.finish().await;
    let seen = std::mem::take(&mut *seen.lock().unwrap());

    assert_eq!(census.doubles, 0, "ids real twice: {census:?}");
    let ids: BTreeMap<String, NetId> = seen
        .iter()
        .map(|(name, s)| (name.clone(), s.me.expect("every player logged in")))
        .collect();
    assert_eq!(ids.len(), 2 * PLAYERS, "{ids:?}");
    let distinct: BTreeSet<NetId> = ids.values().copied().collect();
    assert_eq!(
        distinct.len(),
        ids.len(),
        "gateways minted the same id: {ids:?}"
    );
    let ids_of = |tag: &str| -> BTreeSet<NetId> {
        ids.iter()
            .filter(|(name, _)| name.starts_with(tag))
            .map(|(_, id)| *id)
            .collect()
    };
    let (of_a, of_b) = (ids_of("a-"), ids_of("b-"));
    // Everyone spawned within 12 m of each other: each player sees every player of the
    // other gateway.
    for (name, s) in &seen {
        let others = if name.starts_with("a-") { &of_b } else { &of_a };
        let missing: Vec<_> = others
            .iter()
            .filter(|id| !s.players.contains_key(id))
            .collect();
        assert!(missing.is_empty(), "{name} never saw {missing:?}");
    }
    // The walker, ordered through gw2, moved in the views of gw1's players: into the east
    // zone and back into the west one, past the handoff margin both ways: two handoffs.
    let walker = ids["b-0"];
    for k in 0..PLAYERS {
        let track = &seen[&format!("a-{k}")].players[&walker];
        // The sides of the border it was seen on, beyond the handoff margin, in order.
        let mut sides: Vec<&str> = Vec::new();
        for &(x, _) in track {
            let side = match x {
                x if x < 125.5 => "west",
                x if x > 130.5 => "east",
                _ => continue,
            };
            if sides.last() != Some(&side) {
                sides.push(side);
            }
        }
        assert!(
            sides.windows(3).any(|w| w == ["west", "east", "west"]),
            "a-{k} saw the walker on sides {sides:?}"
        );
    }
    gw1.shutdown().await.unwrap();
    gw2.shutdown().await.unwrap();
}

/// One live session per account across the gateways sharing the cluster's PostgreSQL: a
/// login of an account live on the other gateway is refused as already logged in, and
/// once that session ends the account logs in on this one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_lives_on_one_gateway_at_a_time() {
    let db = store::test_postgres::TestPostgres::start().unwrap();
    let (_nats, url) = nats();
    let dir = scratch("cluster-claims");
    let (file, metrics) = cluster_file(&dir, &url, 50, Some(&db.url()), 2);
    let _west = zone(&file, "west");
    let _east = zone(&file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let config = Config {
        max_clients_per_ip: 1_000,
        shutdown_grace_secs: 0.5,
        ..Config::default()
    };
    let gw1 = start_gateway(config.clone(), &file, Some("gw1"))
        .await
        .unwrap();
    let gw2 = start_gateway(config, &file, Some("gw2")).await.unwrap();
    let at = |gw: &server::run::Running| {
        let endpoint = client::endpoint(gw.quic_addr, Trust::Pinned(gw.fingerprint)).unwrap();
        (endpoint, gw.quic_addr)
    };
    let ((one, one_addr), (two, two_addr)) = (at(&gw1), at(&gw2));
    let first = Client::connect(&one, one_addr, "ada").await.unwrap();
    match Client::connect(&two, two_addr, "ada").await {
        Err(client::ClientError::Disconnected { reason, text }) => {
            assert_eq!(reason, protocol::DisconnectReason::LoginRejected);
            assert!(text.contains("already logged in"), "{text}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("ada logged in on both gateways"),
    }
    // Another account is not held up.
    let bob = Client::connect(&two, two_addr, "bob").await.unwrap();
    // A gateway runs no world: the viewer's questions say so, rather than that a world
    // stopped.
    let answer = crate::net::http_get(gw1.metrics_addr, "/api/world").await;
    assert!(answer.starts_with("HTTP/1.1 501"), "{answer}");
    assert!(
        answer.contains("cluster gateway and runs no world"),
        "{answer}"
    );
    first.leave().await;
    // gw1 releases the claim as the session ends (its store writer, within a moment).
    let mut again = crate::net::connect_once_free(&two, two_addr, "ada").await;
    // Should the claim lapse while gw2 cannot reach the store and another process take
    // it (done here by hand: gw2's claims ended, and another holder claims ada), gw2's
    // next renewal finds it gone and ends that session: the account is live elsewhere.
    let url = db.url();
    let taken = std::thread::spawn(move || {
        let mut store = store::open(&store::StoreSpec::Postgres { url }).unwrap();
        store
            .release_earlier_claims("gateway gw2 ", "thief")
            .unwrap();
        store
            .claim("ada", "thief", Duration::from_secs(60))
            .unwrap()
    })
    .join()
    .unwrap();
    assert!(taken.is_some(), "the claim was not free to take");
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match again.next_message().await {
                Ok(protocol::ServerMessage::Disconnect { reason, text }) => break (reason, text),
                Ok(_) => continue,
                Err(err) => panic!("ada's session ended without a word: {err}"),
            }
        }
    })
    .await
    .expect("ada's session on gw2 ended within two renewals");
    assert_eq!(ended.0, protocol::DisconnectReason::LoginRejected);
    assert!(ended.1.contains("logged in elsewhere"), "{}", ended.1);
    // bob's claim, taken from gw2 too but by nobody else, is renewed: bob plays on.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(bob.connection().close_reason().is_none(), "bob was cut off");
    bob.leave().await;
    gw1.shutdown().await.unwrap();
    gw2.shutdown().await.unwrap();
}

/// A gateway's admin API answers its own sessions: it lists them with their characters
/// and kicks one; what only a world can answer is 501.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_lists_and_kicks_its_sessions() {
    const TOKEN: &str = "test-admin-token-0123456789";
    let (_nats, url) = nats();
    let dir = scratch("cluster-gateway-admin");
    let (file, metrics) = cluster_file(&dir, &url, 20, None, 1);
    let _west = zone(&file, "west");
    let _east = zone(&file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let config = Config {
        max_clients_per_ip: 1_000,
        shutdown_grace_secs: 0.5,
        admin_listen: "127.0.0.1:0".parse().unwrap(),
        admin_token: Some(server::config::AdminToken::new(TOKEN).unwrap()),
        ..Config::default()
    };
    let gw = start_gateway(config, &file, Some("gw1")).await.unwrap();
    let admin = gw.admin_addr.expect("the admin API is on");
    let endpoint = client::endpoint(gw.quic_addr, Trust::Pinned(gw.fingerprint)).unwrap();
    let ada = Client::connect(&endpoint, gw.quic_addr, "ada")
        .await
        .unwrap();
    let mut bob = Client::connect(&endpoint, gw.quic_addr, "bob")
        .await
        .unwrap();
    let call = |method: &'static str, path: String| async move {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        );
        let mut stream = tokio::net::TcpStream::connect(admin).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
            .await
            .unwrap();
        let mut response = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut response)
            .await
            .unwrap();
        response
    };
    let listed = call("GET", "/admin/sessions".to_owned()).await;
    assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
    let body: serde_json::Value =
        serde_json::from_str(listed.split_once("\r\n\r\n").unwrap().1).unwrap();
    let sessions = body["sessions"].as_array().expect("a list of sessions");
    let accounts: BTreeSet<&str> = sessions
        .iter()
        .map(|s| s["account"].as_str().unwrap())
        .collect();
    assert_eq!(accounts, BTreeSet::from(["ada", "bob"]));
    let bob_info = sessions.iter().find(|s| s["account"] == "bob").unwrap();
    let entity = bob.welcome().entity;
    assert_eq!(
        bob_info["entity"],
        format!("{}.{}", entity.index, entity.generation)
    );
    let bob_session = bob_info["id"].as_u64().unwrap();
    let kicked = call("POST", format!("/admin/sessions/{bob_session}/kick")).await;
    assert!(kicked.starts_with("HTTP/1.1 200"), "{kicked}");
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match bob.next_message().await {
                Ok(protocol::ServerMessage::Disconnect { reason, .. }) => break reason,
                Ok(_) => continue,
                Err(err) => panic!("bob's session ended without a word: {err}"),
            }
        }
    })
    .await
    .expect("bob's session ended within 5 s");
    assert_eq!(ended, protocol::DisconnectReason::Kicked);
    let world = call("GET", "/admin/world".to_owned()).await;
    assert!(world.starts_with("HTTP/1.1 501"), "{world}");
    assert!(world.contains("runs no world"), "{world}");
    ada.leave().await;
    gw.shutdown().await.unwrap();
}
