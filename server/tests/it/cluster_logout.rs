//! A login right after a logout while the zone cannot reach the store: the zones reach
//! the cluster's PostgreSQL through a TCP relay the test cuts, the gateway directly. The
//! player walks on after the cut and logs out; the zone's save of the leave waits for the
//! store, and the login that follows through the same gateway goes on from where the
//! character was last seen, not from the store's older record.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_after_a_logout_goes_on_from_where_the_zone_could_not_save() {
    let db = store::test_postgres::TestPostgres::start().unwrap();
    let (_nats, url) = nats();
    let dir = scratch("cluster-logout");
    let (file, metrics) = cluster_file(&dir, &url, 20, Some(&db.url()), 1);
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
    let gw = start_gateway(config, &file, Some("gw1")).await.unwrap();
    let endpoint = client::endpoint(gw.quic_addr, Trust::Pinned(gw.fingerprint)).unwrap();
    let mut ada = Client::connect(&endpoint, gw.quic_addr, "ada")
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
    let stored = {
        let url = db.url();
        std::thread::spawn(move || {
            let mut store = store::open(&store::StoreSpec::Postgres { url }).unwrap();
            store.load("ada").unwrap().expect("ada was saved")
        })
        .join()
        .unwrap()
    };
    let stored_at = (stored.pos[0], stored.pos[1]);
    assert!(
        distance(stored_at, last) > 5.0,
        "the store holds where ada logged out ({stored_at:?}): the cut came too late"
    );
    // In again through the same gateway: where ada was last seen, not where the store has
    // her.
    let mut again = crate::net::connect_once_free(&endpoint, gw.quic_addr, "ada").await;
    let resumed = own_position(&mut again).await;
    assert!(
        distance(resumed, last) < 1.5,
        "ada resumed at {resumed:?}, logged out at {last:?}, stored at {stored_at:?}"
    );
    // The zone reaches the store again and writes what it kept: the late save of the
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
        if now.order > stored.order && distance((now.pos[0], now.pos[1]), resumed) < 1.5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the store kept {now:?} after the zone reached it again"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    gw.shutdown().await.unwrap();
}
