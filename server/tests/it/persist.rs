//! Characters survive crashes: the `server run` binary is killed with SIGKILL under 100
//! moving players, five times in a row, and restarted on the same store each time (the
//! embedded store and a real PostgreSQL). Every player comes back within 1.5 m of the last
//! position its client saw, and the store holds exactly one intact record per player.
//! And the store may go away: with PostgreSQL stopped the server keeps serving, reports
//! not ready, queues the saves and writes them when the database is back. Two servers on
//! one PostgreSQL hold an account once between them.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client::{Client, Fingerprint, Trust};
use protocol::Command as Order;
use store::test_postgres::TestPostgres;
use tokio::sync::watch;

/// Players in the world at each kill.
const PLAYERS: usize = 100;
/// Kills in a row.
const ROUNDS: usize = 5;
/// How far a resumed character may be from where its client last saw it, metres.
const TOLERANCE_M: f32 = 1.5;

struct Server {
    child: Child,
    quic: SocketAddr,
    metrics: SocketAddr,
    fingerprint: Fingerprint,
}

/// Starts `server run` on loopback with its characters where `store_args` say
/// (`--data-dir DIR` or `--store URL`).
fn start_server(store_args: &[String]) -> Server {
    start_server_at("127.0.0.1:0".parse().unwrap(), store_args).expect("a start line")
}

/// A free loopback UDP address whose port lies below the kernel's range of ephemeral ports
/// (`/proc/sys/net/ipv4/ip_local_port_range`), which sockets bound to port 0 are given
/// from: no other test's client or server is given it once this one's server is killed,
/// so a start again on it is not refused (only another test choosing its port the same
/// way could take it, from about ten thousand). Port 0 where that range leaves no room.
fn quiet_addr() -> SocketAddr {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(0);
    let low = 20_000u16;
    if ephemeral_low <= low + 1_000 {
        return "127.0.0.1:0".parse().unwrap();
    }
    let span = u32::from(ephemeral_low - low);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let start = (std::process::id().wrapping_mul(7919) ^ nanos) % span;
    (0..span)
        .map(|i| low + ((start + i) % span) as u16)
        .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
        .find(|&addr| std::net::UdpSocket::bind(addr).is_ok())
        .unwrap_or_else(|| "127.0.0.1:0".parse().unwrap())
}

/// [`start_server`] on a [`quiet_addr`], for a server the test kills and starts again on
/// its address (a few tries, should another test's probe have taken the port just then).
fn start_server_quiet(store_args: &[String]) -> Server {
    (0..5)
        .find_map(|_| start_server_at(quiet_addr(), store_args))
        .unwrap_or_else(|| start_server(store_args))
}

/// [`start_server`] with QUIC on `listen`; `None` when it does not start (the address is
/// taken: another test's socket may have been given the port meanwhile).
fn start_server_at(listen: SocketAddr, store_args: &[String]) -> Option<Server> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["run", "--listen", &listen.to_string()])
        .args([
            "--metrics-listen",
            "127.0.0.1:0",
            "--npcs",
            "50",
            "--max-clients",
            "500",
            "--max-clients-per-ip",
            "500",
            "--log-format",
            "json",
        ])
        .args(store_args)
        .env("RUST_LOG", "warn,server::run=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let Some(started) = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.contains("server started"))
    else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    let line: serde_json::Value = serde_json::from_str(&started).unwrap();
    let fields = &line["fields"];
    Some(Server {
        child,
        quic: fields["quic"].as_str().unwrap().parse().unwrap(),
        metrics: fields["metrics"].as_str().unwrap().parse().unwrap(),
        fingerprint: Fingerprint::parse(fields["fingerprint"].as_str().unwrap()).unwrap(),
    })
}

/// What the test knows of one player.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    /// The own character's position in the first snapshot after logging in.
    first: Option<(f32, f32)>,
    /// ... and in the newest snapshot.
    last: Option<(f32, f32)>,
}

/// One player: logs in, notes where it stands, and walks back and forth until `stop`.
async fn play(
    server: SocketAddr,
    fingerprint: Fingerprint,
    name: String,
    seen: Arc<Mutex<BTreeMap<String, Seen>>>,
    mut stop: watch::Receiver<bool>,
) {
    let endpoint = client::endpoint(server, Trust::Pinned(fingerprint)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut client = loop {
        match Client::connect(&endpoint, server, &name).await {
            Ok(client) => break client,
            Err(err) => {
                assert!(Instant::now() < deadline, "{name} could not log in: {err}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let me = client.welcome().entity;
    let bounds = client.welcome().bounds;
    let mut next_order = Instant::now();
    let mut leg = 0u32;
    loop {
        tokio::select! {
            snapshot = client.next_snapshot() => {
                if snapshot.is_err() {
                    return;
                }
            }
            _ = stop.changed() => return,
        }
        let Some(pos) = client
            .view()
            .and_then(|(_, view)| view.get(me))
            .map(|e| e.pos.to_metres())
        else {
            continue;
        };
        {
            let mut seen = seen.lock().unwrap();
            let entry = seen.entry(name.clone()).or_default();
            entry.first.get_or_insert(pos);
            entry.last = Some(pos);
        }
        if Instant::now() >= next_order {
            // Ten metres one way, then back: always moving while the server is killed.
            leg += 1;
            let dx = if leg.is_multiple_of(2) { 10.0 } else { -10.0 };
            let x = (pos.0 + dx).clamp(bounds.min_x, bounds.max_x);
            let _ = client.send_command(Order::MoveTo { x, y: pos.1 });
            next_order = Instant::now() + Duration::from_secs(3);
        }
    }
}

/// Every record of the store, read on a thread of its own (PostgreSQL's client runs a
/// runtime of its own, which may not start inside the test's).
fn all_characters(spec: &store::StoreSpec) -> Vec<store::Character> {
    let spec = spec.clone();
    std::thread::spawn(move || store::open(&spec).unwrap().all().unwrap())
        .join()
        .unwrap()
}

fn distance(a: (f32, f32), b: (f32, f32)) -> f32 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

/// Two `server run` processes on one PostgreSQL (a mistake, but one that must not copy a
/// character): an account live on one is refused on the other, until its session ends;
/// a server killed and started again on its address lets its players straight back in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_database_hold_an_account_once() {
    let db = TestPostgres::start().unwrap();
    let store_args = ["--store".to_owned(), db.url()];
    let mut one = start_server(&store_args);
    let mut two = start_server_quiet(&store_args);
    let endpoint =
        |server: &Server| client::endpoint(server.quic, Trust::Pinned(server.fingerprint)).unwrap();
    let (on_one, on_two) = (endpoint(&one), endpoint(&two));
    let ada = Client::connect(&on_one, one.quic, "ada").await.unwrap();
    match Client::connect(&on_two, two.quic, "ada").await {
        Err(client::ClientError::Disconnected { reason, text }) => {
            assert_eq!(reason, protocol::DisconnectReason::LoginRejected);
            assert!(text.contains("already logged in"), "{text}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("ada logged in on both servers"),
    }
    let bob = Client::connect(&on_two, two.quic, "bob").await.unwrap();
    ada.leave().await;
    // Released as the session ends (by the store writer, within a moment).
    let ada = crate::net::connect_once_free(&on_two, two.quic, "ada").await;
    // Killed with both logged in: the claims stay for the claims' lifetime (15 s) for
    // everyone else, but the server started again on the same address takes them over.
    let listen = two.quic;
    two.child.kill().unwrap();
    two.child.wait().unwrap();
    drop((ada, bob));
    let started = Instant::now();
    match Client::connect(&on_one, one.quic, "ada").await {
        Err(client::ClientError::Disconnected { text, .. }) => {
            assert!(text.contains("already logged in"), "{text}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("ada logged in on the first server while the killed one's claim held"),
    }
    let Some(mut two) = start_server_at(listen, &store_args) else {
        // The port went to another socket meanwhile (only another test choosing a quiet
        // port could take it): the takeover cannot be shown this time.
        eprintln!("{listen} was taken before the restart; the takeover is not checked");
        one.child.kill().unwrap();
        one.child.wait().unwrap();
        return;
    };
    let on_two = endpoint(&two);
    let ada = Client::connect(&on_two, two.quic, "ada").await.unwrap();
    let bob = Client::connect(&on_two, two.quic, "bob").await.unwrap();
    assert!(
        started.elapsed() < server::persist::CLAIM_TTL,
        "the claims may have lapsed instead"
    );
    ada.leave().await;
    bob.leave().await;
    for server in [&mut one, &mut two] {
        server.child.kill().unwrap();
        server.child.wait().unwrap();
    }
}

/// Five kills in a row under [`PLAYERS`] moving players, on the store `spec`.
async fn kill_9_five_times(spec: &store::StoreSpec) {
    let store_args: Vec<String> = match spec {
        store::StoreSpec::Embedded { dir } => {
            vec!["--data-dir".into(), dir.display().to_string()]
        }
        store::StoreSpec::Postgres { url } => vec!["--store".into(), url.clone()],
    };
    let names: Vec<String> = (0..PLAYERS).map(|i| format!("hero{i:03}")).collect();
    let mut before: BTreeMap<String, (f32, f32)> = BTreeMap::new();
    // Started again on its first address: the start after a kill takes over the claims
    // of the one killed (which never released them), and its players get back in at once.
    let mut listen: Option<SocketAddr> = None;
    for round in 0..=ROUNDS {
        // Should the port have been given to another socket meanwhile, on another one: the
        // killed start's claims then lapse, and `play` waits for them.
        let mut server = match listen {
            None => start_server_quiet(&store_args),
            Some(listen) => start_server_at(listen, &store_args)
                .unwrap_or_else(|| start_server_quiet(&store_args)),
        };
        listen = Some(server.quic);
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let (stop_tx, stop) = watch::channel(false);
        let mut players = Vec::new();
        for name in &names {
            players.push(tokio::spawn(play(
                server.quic,
                server.fingerprint,
                name.clone(),
                Arc::clone(&seen),
                stop.clone(),
            )));
        }
        // Everyone in and walking for a few seconds.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = seen
                .lock()
                .unwrap()
                .values()
                .filter(|s| s.first.is_some())
                .count();
            if ready == PLAYERS {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: {ready} of {PLAYERS} players in"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let seen_now = seen.lock().unwrap().clone();
        // Each player resumed where its client last saw it before the previous kill.
        for (name, last) in &before {
            let first = seen_now[name].first.unwrap();
            let off = distance(first, *last);
            assert!(
                off <= TOLERANCE_M,
                "round {round}: {name} resumed {off:.2} m from where it was last seen ({last:?} -> {first:?})"
            );
        }
        if round == ROUNDS {
            stop_tx.send(true).unwrap();
            for player in players {
                player.await.unwrap();
            }
            server.child.kill().unwrap();
            server.child.wait().unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        // SIGKILL: no shutdown, no last save.
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        before = seen
            .lock()
            .unwrap()
            .iter()
            .map(|(name, s)| (name.clone(), s.last.unwrap()))
            .collect();
        stop_tx.send(true).unwrap();
        for player in players {
            player.await.unwrap();
        }
    }
    // One record per player, each intact and written more than once.
    let all = all_characters(spec);
    let accounts: Vec<&str> = all.iter().map(|c| c.account.as_str()).collect();
    let expected: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(accounts, expected);
    for character in &all {
        assert!(character.version >= 2, "{character:?}");
        assert!(character.pos.iter().all(|v| v.is_finite()), "{character:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn characters_survive_kill_9_five_times_on_the_embedded_store() {
    let dir: PathBuf = std::env::temp_dir().join(format!("server-it-kill9-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    kill_9_five_times(&store::StoreSpec::Embedded { dir: dir.clone() }).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn characters_survive_kill_9_five_times_on_postgresql() {
    let db = TestPostgres::start().unwrap();
    kill_9_five_times(&store::StoreSpec::Postgres { url: db.url() }).await;
}

/// The store goes away: PostgreSQL stops while players walk. The server keeps ticking and
/// serving them, says it is not ready, keeps the saves (counted), refuses a new login with
/// a reason, and writes every queued save once the database is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_rides_out_a_database_outage() {
    use crate::net::{http_get, metric_value};

    let mut db = TestPostgres::start().unwrap();
    let spec = store::StoreSpec::Postgres { url: db.url() };
    let mut server = start_server(&["--store".to_owned(), db.url()]);
    let names: Vec<String> = (0..10).map(|i| format!("walker{i}")).collect();
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let (stop_tx, stop) = watch::channel(false);
    let players: Vec<_> = names
        .iter()
        .map(|name| {
            tokio::spawn(play(
                server.quic,
                server.fingerprint,
                name.clone(),
                Arc::clone(&seen),
                stop.clone(),
            ))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.lock().unwrap().len() < names.len() {
        assert!(Instant::now() < deadline, "players did not get in");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        http_get(server.metrics, "/readyz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    // Every player saved once before the outage.
    while metric_value(
        &http_get(server.metrics, "/metrics").await,
        "mmo_saves_total",
    ) < 10
    {
        assert!(Instant::now() < deadline, "no saves before the outage");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    db.stop().unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let ticks_before = metric_value(
        &http_get(server.metrics, "/metrics").await,
        "mmo_ticks_total",
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let metrics = http_get(server.metrics, "/metrics").await;
    assert!(
        metric_value(&metrics, "mmo_ticks_total") >= ticks_before + 20,
        "the world stalled"
    );
    assert_eq!(metric_value(&metrics, "mmo_store_up"), 0);
    assert!(
        metric_value(&metrics, "mmo_saves_pending") >= 1,
        "{metrics}"
    );
    assert!(metric_value(&metrics, "mmo_save_failures_total") >= 1);
    assert!(
        http_get(server.metrics, "/readyz")
            .await
            .starts_with("HTTP/1.1 503")
    );
    // A new player cannot get its character: refused with a reason, not left hanging.
    let endpoint = client::endpoint(server.quic, Trust::Pinned(server.fingerprint)).unwrap();
    match Client::connect(&endpoint, server.quic, "latecomer").await {
        Err(client::ClientError::Disconnected { text, .. }) => {
            assert!(text.contains("store is unavailable"), "{text}");
        }
        Err(other) => panic!("refused without a reason: {other}"),
        Ok(_) => panic!("logged in while the store was down"),
    }
    db.start_again().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = http_get(server.metrics, "/metrics").await;
        if metric_value(&metrics, "mmo_store_up") == 1
            && metric_value(&metrics, "mmo_saves_pending") == 0
        {
            break;
        }
        assert!(Instant::now() < deadline, "the queued saves did not land");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        http_get(server.metrics, "/readyz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    stop_tx.send(true).unwrap();
    for player in players {
        player.await.unwrap();
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    // Every player has one record, written before the outage and again after it.
    let all = all_characters(&spec);
    let accounts: Vec<&str> = all.iter().map(|c| c.account.as_str()).collect();
    let expected: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(accounts, expected);
    for character in all {
        assert!(character.version >= 2, "{character:?}");
    }
}
