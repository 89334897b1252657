//! A zone killed with SIGKILL and restarted: its players, still connected to their
//! gateway, see their characters again near where they last stood (the zones save them
//! to a real PostgreSQL every half second), nobody is disconnected, and no id is ever
//! real in two zones.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client::{Client, Fingerprint, Trust};
use protocol::Command as Order;
use server::config::Config;
use server::run::{Running, start_gateway};
use store::test_postgres::TestPostgres;
use tokio::sync::watch;

use crate::cluster::{
    CensusRun, Killed, census, nats, scrape, scratch, two_zones, wait_ticking, zone,
};

/// Players in the world.
const PLAYERS: usize = 24;

/// What a player saw.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    /// The longest time its character was missing from its snapshots.
    missing_max: Duration,
    /// Where it last saw its character before it went missing the longest time, and where
    /// the character came back.
    gone_at: Option<(f32, f32)>,
    back_at: Option<(f32, f32)>,
    /// Whether its session ended before the test stopped it.
    ended: bool,
}

/// The cluster file's gateway, its sessions ending half a second after a shutdown notice.
async fn gateway(file: &Path) -> Running {
    let config = Config {
        max_clients_per_ip: 1_000,
        shutdown_grace_secs: 0.5,
        ..Config::default()
    };
    start_gateway(config, file, None).await.unwrap()
}

/// `count` players named `{prefix}-{k}` log in through the gateway at `addr`, one after
/// another once the last one's character is in the world; each reads its snapshots until
/// its session ends.
pub(crate) async fn join_players(
    addr: std::net::SocketAddr,
    fingerprint: Fingerprint,
    prefix: &str,
    count: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut players = Vec::new();
    for k in 0..count {
        let (joined, in_world) = tokio::sync::oneshot::channel();
        let name = format!("{prefix}-{k}");
        players.push(tokio::spawn(async move {
            let endpoint = client::endpoint(addr, Trust::Pinned(fingerprint)).unwrap();
            let mut client = Client::connect(&endpoint, addr, &name).await.unwrap();
            let me = client.welcome().entity;
            let mut joined = Some(joined);
            while client.next_snapshot().await.is_ok() {
                if client.view().and_then(|(_, view)| view.get(me)).is_some()
                    && let Some(joined) = joined.take()
                {
                    let _ = joined.send(());
                }
            }
        }));
        tokio::time::timeout(Duration::from_secs(20), in_world)
            .await
            .expect("a player's character never came")
            .unwrap();
    }
    players
}

async fn play(
    server: std::net::SocketAddr,
    fingerprint: Fingerprint,
    name: String,
    seen: Arc<Mutex<BTreeMap<String, Seen>>>,
    mut stop: watch::Receiver<bool>,
) {
    let endpoint = client::endpoint(server, Trust::Pinned(fingerprint)).unwrap();
    let mut client = Client::connect(&endpoint, server, &name).await.unwrap();
    let me = client.welcome().entity;
    let bounds = client.welcome().bounds;
    let (mut next_order, mut leg) = (Instant::now(), 0u32);
    let mut last_pos: Option<(f32, f32)> = None;
    // Since when the character has been missing, and where it was last seen.
    let mut missing_since: Option<(Instant, Option<(f32, f32)>)> = None;
    loop {
        tokio::select! {
            snapshot = client.next_snapshot() => {
                if snapshot.is_err() {
                    seen.lock().unwrap().entry(name.clone()).or_default().ended = true;
                    return;
                }
            }
            _ = stop.changed() => return,
        }
        let pos = client
            .view()
            .and_then(|(_, view)| view.get(me))
            .map(|e| e.pos.to_metres());
        let Some(pos) = pos else {
            missing_since.get_or_insert((Instant::now(), last_pos));
            continue;
        };
        if let Some((since, gone_at)) = missing_since.take() {
            let missing = since.elapsed();
            let mut seen = seen.lock().unwrap();
            let entry = seen.entry(name.clone()).or_default();
            if missing > entry.missing_max {
                entry.missing_max = missing;
                entry.gone_at = gone_at;
                entry.back_at = Some(pos);
            }
        }
        last_pos = Some(pos);
        if Instant::now() >= next_order {
            leg += 1;
            let dx = if leg.is_multiple_of(2) { 8.0 } else { -8.0 };
            let x = (pos.0 + dx).clamp(bounds.min_x, bounds.max_x);
            let _ = client.send_command(Order::MoveTo { x, y: pos.1 });
            next_order = Instant::now() + Duration::from_secs(3);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zone_killed_and_restarted_gives_its_players_back() {
    let db = TestPostgres::start().unwrap();
    let (_nats, url) = nats();
    let dir = scratch("cluster-kill");
    let (file, metrics) = two_zones(&dir, &url, 300, Some(&db.url()));
    let _west = zone(&file, "west");
    let mut east = zone(&file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let census = census(&url, &["west", "east"]).await;
    let gateway = gateway(&file).await;
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let (stop, stopped) = watch::channel(false);
    let players: Vec<_> = (0..PLAYERS)
        .map(|k| {
            tokio::spawn(play(
                gateway.quic_addr,
                gateway.fingerprint,
                format!("walker-{k}"),
                Arc::clone(&seen),
                stopped.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(6)).await;
    east.0.kill().unwrap();
    east.0.wait().unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _east = zone(&file, "east");
    tokio::time::sleep(Duration::from_secs(12)).await;
    stop.send_replace(true);
    for player in players {
        player.await.unwrap();
    }
    let census = census.finish().await;
    let seen = seen.lock().unwrap().clone();
    println!("census {census:?}");
    for (name, s) in &seen {
        println!("{name}: {s:?}");
    }
    assert_eq!(census.doubles, 0, "ids real twice: {census:?}");
    let ended: Vec<&String> = seen
        .iter()
        .filter(|(_, s)| s.ended)
        .map(|(n, _)| n)
        .collect();
    assert!(ended.is_empty(), "sessions ended: {ended:?}");
    let comebacks: Vec<&Seen> = seen
        .values()
        .filter(|s| s.missing_max > Duration::from_secs(1))
        .collect();
    assert!(
        !comebacks.is_empty(),
        "no player was in the killed zone: {seen:?}"
    );
    for s in &seen {
        // Down for 3 s, back within 5 s of the restart.
        assert!(s.1.missing_max <= Duration::from_secs(8), "{s:?}");
    }
    for s in comebacks {
        let (Some(a), Some(b)) = (s.gone_at, s.back_at) else {
            panic!("{s:?}");
        };
        let moved = (a.0 - b.0).hypot(a.1 - b.1);
        assert!(
            moved <= 3.0,
            "came back {moved} m from where it was last seen: {s:?}"
        );
    }
    gateway.shutdown().await.unwrap();
}

/// A gateway shut down while its players play: the sessions end with the shutdown, and
/// each one's leave reaches its zone before the gateway is gone, so no character stays in
/// the world with nobody playing it (the census's players at the end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_shut_down_takes_its_players_out_of_the_zones() {
    let (_nats, url) = nats();
    let dir = scratch("cluster-gateway-stop");
    let (file, metrics) = two_zones(&dir, &url, 50, None);
    let _west = zone(&file, "west");
    let _east = zone(&file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let census = census(&url, &["west", "east"]).await;
    let gateway = gateway(&file).await;
    let players = join_players(gateway.quic_addr, gateway.fingerprint, "leaver", PLAYERS).await;
    gateway.shutdown().await.unwrap();
    for player in players {
        player.await.unwrap();
    }
    // By the leaves, not by the zones taking the gateway for gone.
    assert_eq!(players_out(metrics).await, 0.0);
    nobody_left(census).await;
}

/// Waits (up to 20 s) until the zones at `metrics` hold no player, then a second more
/// for their frames; returns how many characters they removed because their gateway was
/// gone.
async fn players_out(metrics: [std::net::SocketAddr; 2]) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut players = 0.0;
        for m in metrics {
            players += scrape(m, "mmo_entities{kind=\"player\"}").await.unwrap();
        }
        if players == 0.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{players} players still in the zones"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut orphans = 0.0;
    for m in metrics {
        orphans += scrape(m, "mmo_zone_orphans_removed_total").await.unwrap();
    }
    orphans
}

/// Ends the census and checks that no character was left in the zones, and that no id
/// was ever real in two.
async fn nobody_left(census: CensusRun) {
    let census = census.finish().await;
    println!("census {census:?}");
    assert_eq!(
        census.players_last, 0,
        "characters left in the zones: {census:?}"
    );
    assert_eq!(census.doubles, 0, "ids real twice: {census:?}");
}

/// A gateway killed with SIGKILL sends no leaves: the zones take it for gone once it has
/// been silent for `GATEWAY_SILENT` (5 s) and save and remove its players' characters, so
/// none stays in the world with nobody playing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_takes_its_players_out_of_the_zones() {
    let (_nats, url) = nats();
    let dir = scratch("cluster-gateway-kill");
    let (file, metrics) = two_zones(&dir, &url, 50, None);
    // The gateway runs as a process of its own, on a QUIC port known beforehand.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace(
            "\nlisten = \"127.0.0.1:0\"",
            &format!("\nlisten = \"127.0.0.1:{port}\""),
        ),
    )
    .unwrap();
    let _west = zone(&file, "west");
    let _east = zone(&file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let census = census(&url, &["west", "east"]).await;
    let fingerprint_file = dir.join("gateway.fingerprint");
    let log = std::fs::File::create(dir.join("gateway.log")).unwrap();
    let mut gateway = Killed(
        std::process::Command::new(env!("CARGO_BIN_EXE_server"))
            .args(["gateway", "--cluster"])
            .arg(&file)
            .arg("--fingerprint-file")
            .arg(&fingerprint_file)
            .current_dir(&dir)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let fingerprint = loop {
        if let Ok(text) = std::fs::read_to_string(&fingerprint_file)
            && let Ok(fingerprint) = Fingerprint::parse(text.trim())
        {
            break fingerprint;
        }
        assert!(Instant::now() < deadline, "the gateway did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let players = join_players(addr, fingerprint, "orphan", PLAYERS).await;
    gateway.0.kill().unwrap();
    gateway.0.wait().unwrap();
    assert_eq!(players_out(metrics).await, PLAYERS as f64);
    nobody_left(census).await;
    for player in players {
        player.abort();
    }
}
