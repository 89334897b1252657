//! The load-test swarm (`loadtest::swarm`) against a real server started in-process on
//! 127.0.0.1:0, over real QUIC: a healthy run passes the default gates, a server that
//! goes away mid-run fails them. (The `loadtest` binary's own exit codes are tested in
//! its crate, against endpoints that need no game server.)

use std::time::Duration;

use client::Trust;
use loadtest::bot::{Behaviour, InputPace};
use loadtest::slo::Slo;
use loadtest::swarm::{Options, Progress, run};
use server::config::Config;
use server::run::{Running, start};

async fn server(npcs: u32) -> Running {
    start(Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        npcs,
        max_clients_per_ip: 1_000,
        shutdown_grace_secs: 0.5,
        ..Config::default()
    })
    .await
    .unwrap()
}

fn options(server: &Running, bots: u64, duration_secs: u64) -> Options {
    Options {
        server: server.quic_addr,
        bots,
        ramp: Duration::from_secs(2),
        duration: Duration::from_secs(duration_secs),
        warmup: Duration::from_secs(4),
        behaviour: Behaviour::Mixed,
        pace: InputPace::Timer,
        trust: Trust::Pinned(server.fingerprint),
        metrics_url: Some(format!("http://{}/metrics", server.metrics_addr)),
        progress: Progress::Quiet,
        tokens: None,
        borders: None,
        targets: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_bots_for_fifteen_seconds() {
    let server = server(500).await;
    let report = tokio::time::timeout(Duration::from_secs(60), run(options(&server, 100, 15)))
        .await
        .expect("the swarm ends by itself")
        .unwrap();
    println!("{}", report.table());
    assert_eq!(report.connected, 100, "{:?}", report.failed_to_connect);
    assert_eq!(report.failed_count(), 0);
    assert_eq!(report.dropped_count(), 0, "{:?}", report.dropped);
    assert_eq!(report.violation_count(), 0, "{:?}", report.violations);
    assert!(report.rtt.count > 1_000, "{:?}", report.rtt);
    assert!(
        report.snapshots_per_bot_per_sec > 15.0,
        "{}",
        report.snapshots_per_bot_per_sec
    );
    let server_figures = report
        .server_figures
        .as_ref()
        .expect("metrics were scraped");
    assert!(server_figures.ticks >= 250, "{server_figures:?}");
    assert_eq!(server_figures.clients, 0, "the bots left at the end");
    let slo = Slo::from_toml(
        "max_failed_connections = 0\nmax_dropped = 0\nmax_violations = 0\nsnapshot_interval_p99_ms = 100\n",
    )
    .unwrap();
    assert_eq!(slo.misses(&report), Vec::<String>::new());
    assert_eq!(Slo::default().misses(&report), Vec::<String>::new());
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_is_reported_not_waited_for() {
    let server = server(100).await;
    let options = options(&server, 20, 8);
    let swarm = tokio::spawn(run(options));
    tokio::time::sleep(Duration::from_secs(4)).await;
    server.shutdown().await.unwrap();
    let report = tokio::time::timeout(Duration::from_secs(30), swarm)
        .await
        .expect("the swarm ends by itself")
        .unwrap()
        .unwrap();
    println!("{}", report.table());
    assert_eq!(report.connected, 20);
    assert_eq!(
        report.dropped.get("shutdown"),
        Some(&20),
        "{:?}",
        report.dropped
    );
    assert_eq!(report.violation_count(), 0, "{:?}", report.violations);
    // The default gates (no SLO file) fail the run.
    let misses = Slo::default().misses(&report);
    assert_eq!(misses.len(), 1, "{misses:?}");
    assert!(misses[0].starts_with("dropped sessions: 20"), "{misses:?}");
}
