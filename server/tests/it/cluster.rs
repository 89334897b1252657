//! One world across processes, on loopback: a real nats-server (Debian's package), two
//! `server zone` processes (the binary) splitting den520d at x = 128, and a gateway
//! started in-process, with a swarm of bots over real QUIC. A census listens to every
//! zone's frames on NATS and checks, at every frame, that no id is real in two zones and
//! that every NPC is in some zone's custody.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::Trust;
use futures_util::StreamExt;
use loadtest::bot::{Behaviour, InputPace};
use loadtest::swarm::{Options, Progress, run};
use protocol::bus::BusMessage;
use server::cluster::census::CensusReport;
use server::config::Config;
use server::run::start_gateway;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when dropped.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A nats-server on a free loopback port.
pub(crate) fn nats() -> (Killed, String) {
    let port = free_port();
    let child = Command::new("nats-server")
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server (Debian's package nats-server) must be installed");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nats-server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    (Killed(child), format!("nats://127.0.0.1:{port}"))
}

/// A scratch directory of the test's own.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mmo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a two-zone cluster file for den520d (the embedded map) and returns its path
/// and the zones' metrics addresses.
pub(crate) fn two_zones(
    dir: &Path,
    nats: &str,
    npcs: u32,
    store: Option<&str>,
) -> (PathBuf, [SocketAddr; 2]) {
    cluster_file(dir, nats, npcs, store, 1)
}

/// [`two_zones`] with `gateways` gateways, named gw1, gw2, ...
pub(crate) fn cluster_file(
    dir: &Path,
    nats: &str,
    npcs: u32,
    store: Option<&str>,
    gateways: usize,
) -> (PathBuf, [SocketAddr; 2]) {
    let metrics = [free_port(), free_port()].map(|p| SocketAddr::from(([127, 0, 0, 1], p)));
    let store = store
        .map(|s| format!("store = \"{s}\"\n"))
        .unwrap_or_default();
    let mut text = format!(
        r#"npcs = {npcs}
nats = "{nats}"
{store}
[[zones]]
name = "west"
region = [0.0, 0.0, 128.0, 257.0]
metrics_listen = "{}"

[[zones]]
name = "east"
region = [128.0, 0.0, 256.0, 257.0]
metrics_listen = "{}"
"#,
        metrics[0], metrics[1]
    );
    for k in 1..=gateways {
        text.push_str(&format!(
            "\n[[gateways]]\nname = \"gw{k}\"\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"127.0.0.1:0\"\n"
        ));
    }
    let path = dir.join("cluster.toml");
    std::fs::write(&path, text).unwrap();
    (path, metrics)
}

/// Starts `server zone` for `zone`, its log in the scratch directory.
pub(crate) fn zone(cluster: &Path, zone: &str) -> Killed {
    let log = std::fs::File::create(cluster.with_file_name(format!("{zone}.log"))).unwrap();
    Killed(
        Command::new(env!("CARGO_BIN_EXE_server"))
            .args(["zone", "--cluster"])
            .arg(cluster)
            .args(["--zone", zone])
            .env("RUST_LOG", "warn,server::cluster=info")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

/// Waits until a zone's /metrics answers and shows its NPCs (a zone spawns them once it
/// has heard from its neighbours).
pub(crate) async fn wait_ticking(metrics: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(reals) = scrape(metrics, "mmo_zone_reals").await
            && reals > 0.0
        {
            return;
        }
        assert!(Instant::now() < deadline, "zone at {metrics} never ticked");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One sample of a metric from `/metrics`.
pub(crate) async fn scrape(addr: SocketAddr, name: &str) -> Option<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
}

/// A census (`server::cluster::census`) listening to every zone's frames until finished.
pub(crate) struct CensusRun {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<CensusReport>>,
}

impl CensusRun {
    /// Stops the census and returns what it saw.
    pub(crate) async fn finish(mut self) -> CensusReport {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.unwrap().unwrap()
    }
}

/// Starts a census of the zones named `zones` on the NATS server at `nats`.
pub(crate) async fn census(nats: &str, zones: &[&str]) -> CensusRun {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let url = nats.to_owned();
    let zones: Vec<String> = zones.iter().map(|&zone| zone.to_owned()).collect();
    let task = tokio::spawn(async move {
        server::cluster::census::watch(&url, zones, Duration::from_secs(3_600), async {
            let _ = stopped.await;
        })
        .await
    });
    // Let it subscribe before the caller goes on.
    tokio::time::sleep(Duration::from_millis(300)).await;
    CensusRun {
        stop: Some(stop),
        task,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_zones_one_gateway_bots_and_an_exact_census() {
    let (_nats, url) = nats();
    let dir = scratch("cluster");
    let (file, metrics) = two_zones(&dir, &url, 400, None);
    let _west = zone(&file, "west");
    let _east = zone(&file, "east");
    for m in metrics {
        wait_ticking(m).await;
    }
    let census = census(&url, &["west", "east"]).await;
    let listener = async_nats::connect(&url).await.unwrap();
    let mut directory = listener.subscribe("mmo.directory").await.unwrap();
    let gateway = start_gateway(
        Config {
            max_clients_per_ip: 1_000,
            shutdown_grace_secs: 0.5,
            // Next to the border, in a stretch open on both sides.
            spawn_point: Some([128.0, 100.0]),
            ..Config::default()
        },
        &file,
        None,
    )
    .await
    .unwrap();
    let borders = Arc::new(loadtest::borders::Borders::from_file(&file).unwrap());
    let targets = Arc::new(loadtest::targets::BorderTargets::from_file(&file, &borders).unwrap());
    let swarm = tokio::spawn(tokio::time::timeout(
        Duration::from_secs(90),
        run(Options {
            server: gateway.quic_addr,
            bots: 30,
            ramp: Duration::from_secs(2),
            duration: Duration::from_secs(15),
            warmup: Duration::from_secs(3),
            behaviour: Behaviour::Border,
            pace: InputPace::Timer,
            trust: Trust::Pinned(gateway.fingerprint),
            metrics_url: None,
            progress: Progress::Quiet,
            tokens: None,
            borders: Some(Arc::clone(&borders)),
            targets: Some(targets),
        }),
    ));
    // Overlaps are counted once every bot is in: players joining at nearby spawn points
    // may land on each other, and the repulsion parts them in a few ticks.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let overlapping = || async {
        let mut ticks = [0.0; 2];
        for m in metrics {
            ticks[0] += scrape(m, "mmo_zone_ticks_overlapping_total").await.unwrap();
            ticks[1] += scrape(m, "mmo_ticks_total").await.unwrap();
        }
        ticks
    };
    let settled = overlapping().await;
    let report = swarm
        .await
        .unwrap()
        .expect("the swarm ends by itself")
        .unwrap();
    let ended = overlapping().await;
    println!("{}", report.table());
    let census = census.finish().await;
    let handoffs = scrape(metrics[0], "mmo_handoffs_total").await.unwrap()
        + scrape(metrics[1], "mmo_handoffs_total").await.unwrap();
    let failed = scrape(metrics[0], "mmo_handoffs_failed_total")
        .await
        .unwrap()
        + scrape(metrics[1], "mmo_handoffs_failed_total")
            .await
            .unwrap();
    let reals = scrape(metrics[0], "mmo_zone_reals").await.unwrap()
        + scrape(metrics[1], "mmo_zone_reals").await.unwrap();
    // [overlapping pairs at worst, bodies in walls at worst, ticks ending with an
    // overlap once all joined, ticks since], both zones.
    let mut worst = [0.0, 0.0, ended[0] - settled[0], ended[1] - settled[1]];
    for m in metrics {
        worst[0] += scrape(m, "mmo_zone_overlapping_pairs_max").await.unwrap();
        worst[1] += scrape(m, "mmo_zone_bodies_in_walls_max").await.unwrap();
    }
    println!(
        "census: {census:?}; handoffs {handoffs}, failed {failed}, reals now {reals}, overlaps / in walls {worst:?}"
    );
    assert_eq!(report.connected, 30, "{:?}", report.failed_to_connect);
    assert_eq!(report.dropped_count(), 0, "{:?}", report.dropped);
    assert_eq!(report.violation_count(), 0, "{:?}", report.violations);
    assert!(census.checks > 300, "{census:?}");
    assert!(report.crossings >= 30, "{report:?}");
    assert!(
        report.own_missing_max_ms <= 150.0,
        "{}",
        report.own_missing_max_ms
    );
    // No id real twice, the NPCs in custody always the same number.
    assert!(census.passed(), "{}: {census:?}", census.summary());
    assert!(census.npcs_min >= 390, "{census:?}");
    assert!(census.handoffs >= 10, "{census:?}");
    assert!(handoffs >= 10.0, "only {handoffs} handoffs");
    assert_eq!(failed, 0.0);
    let mut announced = BTreeMap::new();
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(1_500), directory.next()).await
    {
        if let Ok(BusMessage::Announce(zone)) = protocol::codec::decode_bus(&message.payload) {
            announced.insert(zone.zone.clone(), zone.region);
        }
        if announced.len() == 2 {
            break;
        }
    }
    assert_eq!(
        announced,
        BTreeMap::from([
            ("east".to_owned(), [128.0, 0.0, 256.0, 257.0]),
            ("west".to_owned(), [0.0, 0.0, 128.0, 257.0]),
        ]),
        "the directory"
    );
    // At the 99th percentile of ticks no pair overlaps, and no body ever stands in a wall.
    assert_eq!(worst[1], 0.0, "bodies in walls");
    assert!(
        worst[2] <= worst[3] / 100.0,
        "ticks with overlaps: {worst:?}"
    );
    gateway.shutdown().await.unwrap();
}

/// Bad cluster setups end `server zone` with one clear line and a failure exit code.
#[test]
fn bad_cluster_files_get_one_clear_error_line() {
    let dir = scratch("cluster-bad");
    let closed = free_port();
    let (file, _) = two_zones(&dir, &format!("nats://127.0.0.1:{closed}"), 10, None);
    let gapped = dir.join("gapped.toml");
    std::fs::write(
        &gapped,
        "nats = \"nats://127.0.0.1:1\"\n[[zones]]\nname = \"a\"\nregion = [0, 0, 100, 257]\n",
    )
    .unwrap();
    let overlapping = dir.join("overlapping.toml");
    std::fs::write(
        &overlapping,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("[128.0, 0.0, 256.0, 257.0]", "[120.0, 0.0, 256.0, 257.0]"),
    )
    .unwrap();
    let cases = [
        (&file, "north", "names no zone \"north\""),
        (
            &file,
            "west",
            &format!("cannot reach NATS at nats://127.0.0.1:{closed}") as &str,
        ),
        (&gapped, "a", "no zone owns the walkable point"),
        (&overlapping, "west", "zones \"west\" and \"east\" overlap"),
    ];
    // Runs the server with `args`; it must fail with one line naming `expected`.
    let fails_in_one_line = |args: &[&std::ffi::OsStr], expected: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_server"))
            .args(args)
            .env("RUST_LOG", "off")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    };
    for (path, zone, expected) in cases {
        let args = ["zone", "--cluster"].map(std::ffi::OsStr::new);
        let zone_args = ["--zone", zone].map(std::ffi::OsStr::new);
        fails_in_one_line(
            &[&args[..], &[path.as_os_str()], &zone_args[..]].concat(),
            expected,
        );
    }
    // The census reads the same file: NATS unreachable is one line too.
    let args = ["census", "--seconds", "1", "--cluster"].map(std::ffi::OsStr::new);
    fails_in_one_line(
        &[&args[..], &[file.as_os_str()]].concat(),
        "cannot reach NATS",
    );
}

/// nats-server restarted under a running cluster with a gateway and its players: the
/// zones reconnect by themselves, their frames reach listeners again and bodies are handed
/// over again; nothing restarts, and no zone takes the gateway, silent while NATS was
/// down, for gone (its players' characters stay).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_ride_out_a_nats_restart() {
    let (mut server, url) = nats();
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let dir = scratch("cluster-nats");
    let (file, metrics) = two_zones(&dir, &url, 400, None);
    let mut zones = [zone(&file, "west"), zone(&file, "east")];
    for m in metrics {
        wait_ticking(m).await;
    }
    let config = Config {
        max_clients_per_ip: 1_000,
        ..Config::default()
    };
    let gateway = start_gateway(config, &file, None).await.unwrap();
    let (addr, fingerprint) = (gateway.quic_addr, gateway.fingerprint);
    let players = crate::cluster_failure::join_players(addr, fingerprint, "rider", 8).await;
    let count = |name: &'static str| async move {
        scrape(metrics[0], name).await.unwrap_or(0.0)
            + scrape(metrics[1], name).await.unwrap_or(0.0)
    };
    let handoffs = || async {
        scrape(metrics[0], "mmo_handoffs_total")
            .await
            .unwrap_or(0.0)
            + scrape(metrics[1], "mmo_handoffs_total")
                .await
                .unwrap_or(0.0)
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = handoffs().await;
    server = Killed(
        Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let census = census(&url, &["west", "east"]).await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let census = census.finish().await;
    let after = handoffs().await;
    println!("handoffs {before} → {after}; {census:?}");
    for zone in &mut zones {
        assert!(zone.0.try_wait().unwrap().is_none(), "a zone exited");
    }
    assert!(census.frames > 100, "frames flow again: {census:?}");
    assert!(census.passed(), "{}: {census:?}", census.summary());
    assert!(after > before, "handoffs resumed: {before} → {after}");
    assert_eq!(count("mmo_zone_orphans_removed_total").await, 0.0);
    assert_eq!(count("mmo_entities{kind=\"player\"}").await, 8.0);
    for player in players {
        player.abort();
    }
    drop(server);
}
