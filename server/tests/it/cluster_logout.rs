//! A login right after a logout while the zone cannot reach the store: the zones reach
//! the cluster's PostgreSQL through a TCP relay the test cuts, the gateways directly. The
//! player walks on after the cut and logs out; the zone's save of the leave waits for the
//! store, and the login that follows, through the same gateway or another, goes on from
//! where the character was last seen, not from the store's older record.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::{Client, Trust};
use protocol::Command as Order;
use server::config::Config;
use server::run::start_gateway;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::cluster::{cluster_file, nats, scratch, wait_ticking, zone};

/// Where the player spawns (den520d, walkable around it), in the west zone.
const SPAWN: [f32; 2] = [110.0, 100.0];

/// A TCP relay to `to` that stops relaying (drops every connection, and every new one)
/// while `cut` says so.
async fn relay(to: SocketAddr, cut: watch::Receiver<bool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            if *cut.borrow() {
                continue;
            }
            let mut cut = cut.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = TcpStream::connect(to).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = cut.wait_for(|&cut| cut) => {}
                }
            });
        }
    });
    addr
}

/// The own character's position in the client's newest view, waiting for a snapshot
/// that shows it.
async fn own_position(client: &mut Client) -> (f32, f32) {
    let me = client.welcome().entity;
    loop {
        client.next_snapshot().await.unwrap();
        if let Some(pos) = client
            .view()
            .and_then(|(_, view)| view.get(me))
            .map(|e| e.pos.to_metres())
        {
            return pos;
        }
    }
}

/// Walks the client's character to `to` and returns where it stands after `secs`.
async fn walk(client: &mut Client, to: (f32, f32), secs: u64) -> (f32, f32) {
    client
        .send_command(Order::MoveTo { x: to.0, y: to.1 })
        .unwrap();
    let until = Instant::now() + Duration::from_secs(secs);
    let mut at = own_position(client).await;
    while Instant::now() < until {
        at = own_position(client).await;
    }
    at
}

fn distance(a: (f32, f32), b: (f32, f32)) -> f32 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

/// The same gateway: it remembers where it last saw the character (and its own save of
/// that is pending or written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_after_a_logout_goes_on_from_where_the_zone_could_not_save() {
    logout_while_the_zone_cannot_save("cluster-logout", false).await;
}

/// Another gateway: it waits for the first one to give the account back, which that does
/// once its save of where it last saw the character is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_through_another_gateway_after_a_logout_goes_on_from_there_too() {
    logout_while_the_zone_cannot_save("cluster-logout-elsewhere", true).await;
}

/// Ada logs in through gateway gw1, walks 8 m, the zones lose the store, she walks 8 m back
/// and logs out; she logs in again through gw1, or through gw2 (`elsewhere`).
async fn logout_while_the_zone_cannot_save(scratch_name: &str, elsewhere: bool) {
    let db = store::test_postgres::TestPostgres::start().unwrap();
    let (_nats, url) = nats();
    let dir = scratch(scratch_name);
    let (file, metrics) = cluster_file(&dir, &url, 20, Some(&db.url()), 2);
    // The zones' copy of the cluster file names the relay as the store.
    let (cut, cut_rx) = watch::channel(false);
    let db_addr = SocketAddr::from(([127, 0, 0, 1], db.port()));
    let relayed = relay(db_addr, cut_rx).await;
    let zones_file = dir.join("zones.toml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        &format!("127.0.0.1:{}/", db.port()),
        &format!("127.0.0.1:{}/", relayed.port()),
    );
    std::fs::write(&zones_file, text).unwrap();
    let _west = zone(&zones_file, "west");
    let _east = zone(&zones_file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let config = Config {
        max_clients_per_ip: 1_000,
        shutdown_grace_secs: 0.5,
        spawn_point: Some(SPAWN),
        spawn_spread_m: 2.0,
        ..Config::default()
    };
    let gw1 = start_gateway(config.clone(), &file, Some("gw1"))
        .await
        .unwrap();
    let gw2 = start_gateway(config, &file, Some("gw2")).await.unwrap();
    let endpoint_of = |gw: &server::run::Running| {
        client::endpoint(gw.quic_addr, Trust::Pinned(gw.fingerprint)).unwrap()
    };
    let endpoint = endpoint_of(&gw1);
    let mut ada = Client::connect(&endpoint, gw1.quic_addr, "ada")
        .await
        .unwrap();
    let start = own_position(&mut ada).await;
    // Eight metres one way: the zone saves it there (every half second).
    let saved = walk(&mut ada, (start.0 + 8.0, start.1), 8).await;
    assert!(
        distance(saved, start) > 5.0,
        "ada did not walk: {start:?} -> {saved:?}"
    );
    // The zone loses the store; ada walks eight metres back and logs out.
    cut.send_replace(true);
    let last = walk(&mut ada, start, 8).await;
    assert!(
        distance(last, saved) > 5.0,
        "ada did not walk back: {saved:?} -> {last:?}"
    );
    ada.leave().await;
    // In again: where ada was last seen, not where the zone last saved her.
    let (again_on, again_addr) = if elsewhere {
        (endpoint_of(&gw2), gw2.quic_addr)
    } else {
        (endpoint, gw1.quic_addr)
    };
    let mut again = crate::net::connect_once_free(&again_on, again_addr, "ada").await;
    let resumed = own_position(&mut again).await;
    assert!(
        distance(resumed, last) < 1.5,
        "ada resumed at {resumed:?}, logged out at {last:?}, last saved by the zone at {saved:?}"
    );
    // The zone reaches the store again and writes what it kept: its late save of the
    // leave is older than the new login's saves.
    cut.send_replace(false);
    again.leave().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let url = Arc::new(db.url());
    loop {
        let url = String::clone(&url);
        let now = std::thread::spawn(move || {
            let mut store = store::open(&store::StoreSpec::Postgres { url }).unwrap();
            store.load("ada").unwrap().expect("ada was saved")
        })
        .join()
        .unwrap();
        let first_login = now.order.is_some_and(|o| o.session == 1);
        if !first_login && distance((now.pos[0], now.pos[1]), resumed) < 1.5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the store kept {now:?} after the zone reached it again"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    gw1.shutdown().await.unwrap();
    gw2.shutdown().await.unwrap();
}
