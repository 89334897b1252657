//! `server run`: the game server as a function a test can start ([`start`]) and stop
//! ([`Running::shutdown`]).
//!
//! [`start`] loads the map, binds the QUIC endpoint and the HTTP endpoint, starts the world
//! thread and the accept loop, and returns the bound addresses and the certificate
//! fingerprint. Shutdown: stop accepting, tell every client (an event, then after the grace
//! period a disconnect), stop the world thread, close the endpoint.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use navmesh::NavMesh;
use navmesh_builder::load::{build_source, load_map as load_map_file};
use navmesh_builder::pipeline::SourceKind;
use protocol::{Bounds, DisconnectReason};
use store::StoreSpec;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tracing::{error, info, warn};

use crate::cluster::ClusterFile;
use crate::config::{Config, ConfigError};
use crate::game::{Game, GameConfig, ToWorld, run_loop};
use crate::http::{Health, HttpLimits, MapFile, serve as serve_http};
use crate::interest::ViewRange;
use crate::metrics::{HandshakeFailure, Metrics, Refusal};
use crate::persist::{Persist, Saver, StopWriter, gateway_holder, server_holder};
use crate::session::{SessionContext, run as run_session};
use crate::snapshots::SnapshotConfig;
use crate::tls::{
    Certificates, Fingerprint, Identity, TransportLimits, WebTransportCert, server_config,
};
use crate::udp::{self, BufferSizes};

mod slots;

use slots::{SlotGuard, Slots, address_of};

/// The default map, embedded so `server run` works from any directory: den520d, a
/// Dragon Age: Origins map from the Moving AI benchmark set (see maps/movingai/README.md).
pub const DEFAULT_MAP_NAME: &str = "den520d.map";
const DEFAULT_MAP: &str = include_str!("../../maps/movingai/den520d.map");

/// Capacity of the world thread's inbox.
const INBOX: usize = 16_384;

/// A server that is running.
pub struct Running {
    /// The QUIC address it listens on.
    pub quic_addr: SocketAddr,
    /// The HTTP address of `/metrics`, `/healthz`, `/readyz`.
    pub metrics_addr: SocketAddr,
    /// SHA-256 of its certificate, for clients to pin.
    pub fingerprint: Fingerprint,
    /// The admin API's address; `None` when it is off (no token configured).
    pub admin_addr: Option<SocketAddr>,
    /// Its metrics.
    pub metrics: Arc<Metrics>,
    /// Its certificates: the generated WebTransport one, when there is one, is the
    /// certificate a browser must be given the hash of.
    pub certificates: Arc<Certificates>,
    shutdown: Arc<watch::Sender<bool>>,
    task: tokio::task::JoinHandle<Result<()>>,
}

/// The world thread, as the accept loop keeps it.
struct WorldThread {
    /// Set to end the loop.
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
    /// A gateway's bus publisher: it ends when the router has stopped, once NATS has
    /// taken what the router sent last.
    bus: Option<tokio::task::JoinHandle<()>>,
    /// Resolves when the thread has ended.
    ended: oneshot::Receiver<()>,
}

/// Starts a server's shutdown from anywhere (a signal handler).
#[derive(Clone)]
pub struct ShutdownTrigger(Arc<watch::Sender<bool>>);

impl ShutdownTrigger {
    /// Starts the shutdown (idempotent).
    pub fn trigger(&self) {
        self.0.send_replace(true);
    }
}

impl Running {
    /// Starts the shutdown (idempotent); [`Running::wait`] sees it through.
    pub fn begin_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// A handle that starts the shutdown while something else waits for the server.
    pub fn shutdown_trigger(&self) -> ShutdownTrigger {
        ShutdownTrigger(Arc::clone(&self.shutdown))
    }

    /// Waits until the server has stopped (after a shutdown began, or a fatal error).
    pub async fn wait(self) -> Result<()> {
        self.task
            .await
            .map_err(|err| anyhow!("server task failed: {err}"))?
    }

    /// Shuts down: stops accepting, tells the clients, waits out the grace period, stops.
    pub async fn shutdown(self) -> Result<()> {
        self.begin_shutdown();
        self.wait().await
    }
}

/// Loads the configured map, or builds the embedded default map; returns the mesh and the
/// map's name (the id clients are told).
pub fn load_map(config: &Config) -> Result<(NavMesh, String)> {
    let loaded = match &config.map {
        Some(path) => load_map_file(path)?,
        None => build_source(DEFAULT_MAP_NAME, DEFAULT_MAP, SourceKind::Grid)
            .context("the embedded default map")?,
    };
    Ok((loaded.mesh, loaded.name))
}

/// Starts the server: binds both endpoints, starts the world thread and the accept loop.
pub async fn start(config: Config) -> Result<Running> {
    start_with(config, None).await
}

/// Starts gateway `gateway` (the only one when `None`) of the cluster file at `cluster`:
/// the sessions of `server run`, with the cluster's router where the world thread would
/// be (see [`crate::cluster::gateway`]). The gateway's addresses, map and store come from
/// the cluster file; the rest of `config` applies as to `server run`.
pub async fn start_gateway(
    mut config: Config,
    cluster: &std::path::Path,
    gateway: Option<&str>,
) -> Result<Running> {
    let file = Arc::new(ClusterFile::load(cluster)?);
    let (index, spec) = file.gateway(gateway)?;
    config.listen = spec.listen;
    config.metrics_listen = spec.metrics_listen;
    config.map.clone_from(&file.map);
    config.store.clone_from(&file.store);
    config.data_dir = None;
    let name = spec.name.clone();
    let client = crate::cluster::bus::connect(&file.nats, &format!("gateway {name}")).await?;
    start_with(config, Some((file, index, client))).await
}

/// The cluster behind a gateway: its file, the gateway's index, the NATS connection.
type Cluster = (Arc<ClusterFile>, usize, async_nats::Client);

async fn start_with(config: Config, cluster: Option<Cluster>) -> Result<Running> {
    config.validate()?;
    let (mesh, map_id) = match &cluster {
        Some((file, _, _)) => crate::cluster::zone::load_cluster_map(file)?,
        None => load_map(&config)?,
    };
    let auth_key = config.load_auth_key()?;
    let admin_token = config.load_admin_token()?;
    let mesh = Arc::new(mesh);
    let metrics = Arc::new(Metrics::default());
    let view = ViewRange {
        radius_m: config.view_radius_m,
        hysteresis_m: config.view_hysteresis_m,
    };
    // The world is built before anything binds, so that a spawn point that finds no ground
    // fails the start-up at once.
    let world = match cluster {
        Some(cluster) => WorldKind::Cluster(cluster),
        None => WorldKind::Game(Box::new(build_game(
            &config,
            Arc::clone(&mesh),
            view,
            Arc::clone(&metrics),
        )?)),
    };
    let (certificates, fingerprint) = load_certificates(&config)?;
    let certificates = Arc::new(certificates);
    let limits = TransportLimits {
        idle_timeout: Duration::from_secs_f32(config.idle_timeout_secs),
        keep_alive: Duration::from_secs_f32(config.keep_alive_secs),
    };
    let mut quic = server_config(Arc::clone(&certificates), limits)?;
    // Connections still in their handshake, beyond which new ones are refused outright.
    quic.max_incoming(config.max_clients as usize + 64);
    let socket = udp::bind(
        config.listen,
        BufferSizes {
            recv_bytes: config.socket_recv_buffer_bytes as usize,
            send_bytes: config.socket_send_buffer_bytes as usize,
        },
    )
    .with_context(|| format!("cannot listen for QUIC on {}", config.listen))?;
    let (socket_recv, socket_send, socket_inode) = (socket.recv, socket.send, socket.inode);
    let endpoint = quinn::Endpoint::new(
        crate::tls::endpoint_config(),
        Some(quic),
        socket.socket,
        Arc::new(quinn::TokioRuntime),
    )
    .with_context(|| format!("cannot listen for QUIC on {}", config.listen))?;
    let quic_addr = endpoint.local_addr().context("QUIC endpoint address")?;
    let http = tokio::net::TcpListener::bind(config.metrics_listen)
        .await
        .with_context(|| format!("cannot listen for HTTP on {}", config.metrics_listen))?;
    let metrics_addr = http.local_addr().context("HTTP endpoint address")?;

    metrics
        .udp_receive_buffer_bytes
        .set(i64::try_from(socket_recv.granted).unwrap_or(i64::MAX));
    metrics
        .udp_send_buffer_bytes
        .set(i64::try_from(socket_send.granted).unwrap_or(i64::MAX));
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    tokio::spawn(rotate_certificates(
        Arc::clone(&certificates),
        shutdown_rx.clone(),
    ));
    tokio::spawn(udp::watch(
        Arc::clone(&metrics),
        socket_inode,
        shutdown_rx.clone(),
    ));
    let ready = Arc::new(AtomicBool::new(false));
    let characters = match (&config.store, &config.data_dir) {
        (Some(url), _) => Some(url.parse::<StoreSpec>().context("--store")?),
        (None, Some(dir)) => Some(StoreSpec::Embedded { dir: dir.clone() }),
        (None, None) => None,
    };
    // Sessions claim their accounts in the store, so that one account is in the world
    // once across the processes sharing it (a cluster's gateways, or two `server run`
    // on one PostgreSQL by mistake; the embedded store's file is one process's at a time).
    let holder = match (&world, &characters) {
        (WorldKind::Cluster((file, index, _)), _) => {
            Some(gateway_holder(&file.gateways[*index].name))
        }
        (WorldKind::Game(_), Some(StoreSpec::Postgres { .. })) => Some(server_holder(quic_addr)),
        (WorldKind::Game(_), _) => None,
    };
    let (persist, writer) = match &characters {
        Some(spec) => {
            let (persist, writer) = Persist::start_claiming(spec, Arc::clone(&metrics), holder)?;
            info!(store = %spec, "character store open");
            (Some(persist), Some(writer))
        }
        None => {
            warn!("no character store configured: characters are not kept across sessions");
            (None, None)
        }
    };
    let (world_tx, world_rx) = mpsc::channel(INBOX);
    let http = tokio::spawn(serve_http(
        http,
        Arc::new(Health {
            metrics: Arc::clone(&metrics),
            ready: Arc::clone(&ready),
            shutdown: shutdown_rx.clone(),
            store: persist.clone(),
            map: Some(MapFile::new(&map_id, &mesh)),
            certificates: Some(Arc::clone(&certificates)),
            quic_port: quic_addr.port(),
            world: Some(world_tx.clone()),
        }),
        HttpLimits::default(),
    ));

    let bounds = mesh.bounds();
    let snapshots = SnapshotConfig {
        bandwidth_cap_bytes_per_sec: config.bandwidth_cap_bytes_per_sec,
        snapshot_max_bytes: config.snapshot_max_bytes,
        slow_client_ticks: config.slow_client_ticks,
        workers: config.snapshot_workers as usize,
        nice: config.snapshot_nice,
    };
    type WorldBody = Box<dyn FnOnce(mpsc::Receiver<ToWorld>, Arc<AtomicBool>) + Send>;
    // A gateway's bus publisher, which the shutdown waits for once the router has stopped.
    let mut bus = None;
    let is_gateway = matches!(world, WorldKind::Cluster(_));
    let world_body: WorldBody = match world {
        WorldKind::Cluster((file, index, client)) => {
            use crate::cluster::gateway;
            let (bus_tx, bus_rx) = mpsc::channel(INBOX);
            let (out_tx, out_rx) = mpsc::channel(INBOX);
            gateway::listen_frames(client.clone(), Arc::clone(&file), bus_tx.clone()).await?;
            bus = Some(tokio::spawn(gateway::publish(
                client,
                Arc::clone(&file),
                persist.clone(),
                out_rx,
                bus_tx,
            )));
            let spawn_point = config
                .spawn_point
                .map(|[x, y]| ((x, y), config.spawn_spread_m));
            let mut router = gateway::Router::new(file, index, &mesh, view, spawn_point, out_tx);
            if let Some(persist) = &persist {
                router.keep_last_seen(persist.clone(), map_id.clone());
            }
            if let Some([x, y]) = config.spawn_point
                && router.spawn_point_count() == 0
            {
                return Err(no_spawn_ground(&config, &mesh, x, y).into());
            }
            let (metrics, ready) = (Arc::clone(&metrics), Arc::clone(&ready));
            Box::new(move |inbox, stop| {
                gateway::run_loop(router, inbox, bus_rx, snapshots, metrics, stop, ready);
            })
        }
        WorldKind::Game(mut game) => {
            if let Some(persist) = &persist {
                game.keep_characters(Saver::new(persist.clone(), map_id.clone()));
            }
            let (metrics, ready) = (Arc::clone(&metrics), Arc::clone(&ready));
            Box::new(move |inbox, stop| {
                run_loop(*game, inbox, snapshots, metrics, stop, ready);
            })
        }
    };
    let admin_addr = crate::admin::start(
        config.admin_listen,
        admin_token,
        |token| crate::admin::AdminState {
            token,
            world: world_tx.clone(),
            metrics: Arc::clone(&metrics),
            map_id: map_id.clone(),
        },
        shutdown_rx.clone(),
    )
    .await?
    .map(|(addr, _task)| addr);
    let stop = Arc::new(AtomicBool::new(false));
    // The sender is dropped when the thread ends, however it ends (a panic included), so
    // the accept loop learns at once if the world stops before a shutdown.
    let (ended_tx, ended_rx) = oneshot::channel::<()>();
    let world_thread = {
        let stop = Arc::clone(&stop);
        let world_nice = config.world_nice;
        std::thread::Builder::new()
            .name("world".to_owned())
            .spawn(move || {
                let _ended = ended_tx;
                // The world saved everyone as it stopped; the writer takes that to the
                // store before the thread ends, however it ends. A gateway's router that
                // panicked leaves its claims to lapse (the zones still hold its players).
                let _writer = StopWriter {
                    writer,
                    keep_claims_on_panic: is_gateway,
                };
                crate::priority::apply("world", world_nice);
                world_body(world_rx, stop);
            })
            .context("cannot start the world thread")?
    };

    let ctx = Arc::new(SessionContext {
        metrics: Arc::clone(&metrics),
        world: world_tx,
        shutdown: shutdown_rx.clone(),
        map_id: map_id.clone(),
        bounds: Bounds {
            min_x: bounds.min.x as f32,
            min_y: bounds.min.y as f32,
            max_x: bounds.max.x as f32,
            max_y: bounds.max.y as f32,
        },
        view_radius_m: config.view_radius_m,
        handshake_timeout: config.handshake_timeout(),
        input_rate_per_sec: config.input_rate_per_sec,
        shutdown_grace: config.shutdown_grace(),
        persist,
        auth_key,
        accounts: Default::default(),
    });
    if let Some(path) = &config.fingerprint_file {
        std::fs::write(path, format!("{fingerprint}\n"))
            .with_context(|| format!("cannot write the fingerprint to {}", path.display()))?;
    }
    info!(
        quic = %quic_addr,
        metrics = %metrics_addr,
        fingerprint = %fingerprint,
        map = %map_id,
        npcs = config.npcs,
        "server started"
    );
    let shutdown_tx = Arc::new(shutdown_tx);
    let task = tokio::spawn(accept_loop(
        endpoint,
        ctx,
        config,
        Arc::clone(&shutdown_tx),
        WorldThread {
            stop,
            thread: world_thread,
            bus,
            ended: ended_rx,
        },
        http,
    ));
    Ok(Running {
        certificates,
        quic_addr,
        metrics_addr,
        fingerprint,
        admin_addr,
        metrics,
        shutdown: shutdown_tx,
        task,
    })
}

/// What the world thread runs: a cluster's router, or the world itself.
enum WorldKind {
    /// A gateway of this cluster.
    Cluster(Cluster),
    /// `server run`'s world.
    Game(Box<Game>),
}

/// The world of `server run`. A `spawn_point` whose `spawn_spread_m` takes in no walkable
/// ground clear of walls is refused: every login would be refused there.
fn build_game(
    config: &Config,
    mesh: Arc<NavMesh>,
    view: ViewRange,
    metrics: Arc<Metrics>,
) -> Result<Game, ConfigError> {
    let game = Game::new(
        Arc::clone(&mesh),
        GameConfig {
            npcs: config.npcs,
            seed: config.seed,
            path_budget: config.path_budget,
            path_budget_per_body: config.path_budget_per_body,
            path_corner_graph: config.path_corner_graph,
            spawn_point: config.spawn_point.map(|[x, y]| sim::Vec2::new(x, y)),
            spawn_spread_m: config.spawn_spread_m,
            max_clients: config.max_clients,
            view,
            doors: config.doors.clone(),
        },
        metrics,
    );
    if let Some([x, y]) = config.spawn_point
        && game.spawn_point_count() == 0
    {
        return Err(no_spawn_ground(config, &mesh, x, y));
    }
    Ok(game)
}

/// The error of a `spawn_point` (at `x`, `y`) whose `spawn_spread_m` takes in no walkable
/// ground clear of walls on `mesh`.
fn no_spawn_ground(config: &Config, mesh: &NavMesh, x: f32, y: f32) -> ConfigError {
    let bounds = mesh.bounds();
    ConfigError::NoSpawnGround {
        x,
        y,
        spread_m: config.spawn_spread_m,
        min: [bounds.min.x, bounds.min.y],
        max: [bounds.max.x, bounds.max.y],
    }
}

/// The server's certificates and the fingerprint clients pin: the PEM files of `cert` and
/// `key`, or a fresh self-signed certificate (and a generated one for browsers).
fn load_certificates(config: &Config) -> Result<(Certificates, Fingerprint)> {
    match (&config.cert, &config.key) {
        (Some(cert), Some(key)) => {
            let identity = Identity::from_pem_files(cert, key)?;
            let fingerprint = identity.fingerprint();
            let certificates = Certificates::new(identity, None).with_context(|| {
                format!("--cert {} and --key {}", cert.display(), key.display())
            })?;
            Ok((certificates, fingerprint))
        }
        _ => {
            let identity = Identity::self_signed()?;
            let fingerprint = identity.fingerprint();
            let generated = WebTransportCert::generate(unix_secs())?;
            let certificates = Certificates::new(identity, Some(generated))
                .context("the generated self-signed certificate")?;
            Ok((certificates, fingerprint))
        }
    }
}

async fn accept_loop(
    endpoint: quinn::Endpoint,
    ctx: Arc<SessionContext>,
    config: Config,
    shutdown_tx: Arc<watch::Sender<bool>>,
    mut world: WorldThread,
    http: tokio::task::JoinHandle<()>,
) -> Result<()> {
    let mut shutdown = shutdown_tx.subscribe();
    let mut world_failed = false;
    let slots = Arc::new(Mutex::new(Slots::default()));
    let mut sessions = JoinSet::new();
    let mut next_session = 1u64;
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                if config.retry && !incoming.remote_address_validated() && incoming.may_retry() {
                    // Stateless: the client comes back with a token proving its address.
                    let _ = incoming.retry();
                    continue;
                }
                let ip = address_of(incoming.remote_address().ip());
                let refusal = {
                    let mut slots = slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    let from_ip = slots.per_ip.get(&ip).copied().unwrap_or(0);
                    if slots.total >= config.max_clients {
                        Some(Refusal::ServerFull)
                    } else if from_ip >= config.max_clients_per_ip {
                        Some(Refusal::PerAddress)
                    } else {
                        slots.total += 1;
                        *slots.per_ip.entry(ip).or_default() += 1;
                        None
                    }
                };
                let session = next_session;
                next_session += 1;
                let ctx = Arc::clone(&ctx);
                let guard = refusal.is_none().then(|| SlotGuard { slots: Arc::clone(&slots), ip });
                let handshake_timeout = config.handshake_timeout();
                sessions.spawn(async move {
                    let conn = match tokio::time::timeout(handshake_timeout, incoming).await {
                        Ok(Ok(conn)) => conn,
                        Ok(Err(_)) => {
                            ctx.metrics.handshake_failed(HandshakeFailure::Error);
                            return;
                        }
                        Err(_) => {
                            ctx.metrics.handshake_failed(HandshakeFailure::Timeout);
                            return;
                        }
                    };
                    if let Some(why) = refusal {
                        // Completing the handshake costs a little, but the client learns why.
                        ctx.metrics.refused(why);
                        ctx.metrics.disconnected(DisconnectReason::ServerFull);
                        let text = match why {
                            Refusal::PerAddress => "too many sessions from your address",
                            _ => "the server is full",
                        };
                        conn.close(DisconnectReason::ServerFull.code().into(), text.as_bytes());
                        return;
                    }
                    let _guard = guard;
                    run_session(session, conn, ctx).await;
                });
            }
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
            // `wait_for` sees a shutdown begun before this task first ran, which
            // `changed` on a receiver subscribed after it would miss.
            () = async { let _ = shutdown.wait_for(|&stopping| stopping).await; } => break,
            _ = &mut world.ended => {
                error!("the world thread stopped unexpectedly; shutting down");
                world_failed = true;
                shutdown_tx.send_replace(true);
                break;
            }
        }
    }

    // Shutdown: refuse newcomers, let sessions tell their clients and drain.
    info!(sessions = sessions.len(), "shutting down");
    endpoint.set_server_config(None);
    let drain = config.shutdown_grace() + Duration::from_secs(2);
    let drained = tokio::time::timeout(drain, async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!(
            left = sessions.len(),
            "sessions did not end within the grace period"
        );
        sessions.abort_all();
    }
    world.stop.store(true, Ordering::Relaxed);
    let thread = world.thread;
    let joined = tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|err| anyhow!("cannot join the world thread: {err}"))?;
    if let Some(bus) = world.bus {
        // The publisher waits at most 2 s for NATS; this bounds a stuck one.
        let _ = tokio::time::timeout(Duration::from_secs(3), bus).await;
    }
    endpoint.close(
        DisconnectReason::Shutdown.code().into(),
        b"server shut down",
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    // The HTTP endpoint stopped accepting when the shutdown began; its last connections
    // end by their deadline.
    if http.await.is_err() {
        warn!("the HTTP endpoint's task failed");
    }
    if let Some(path) = &config.fingerprint_file {
        // A client started later must not pin the certificate of a server that is gone.
        let _ = std::fs::remove_file(path);
    }
    if joined.is_err() {
        bail!("the world thread panicked");
    }
    if world_failed {
        bail!("the world thread stopped before the shutdown");
    }
    info!("server stopped");
    Ok(())
}

/// The wall clock in Unix seconds (0 before 1970).
fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Replaces the generated WebTransport certificate when it is due; checks hourly.
async fn rotate_certificates(certificates: Arc<Certificates>, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(3600)) => {}
            _ = shutdown.changed() => return,
        }
        match certificates.rotate_if_due(unix_secs()) {
            Ok(Some(fresh)) => info!(
                sha256 = %fresh.sha256_hex(),
                "new WebTransport certificate"
            ),
            Ok(None) => {}
            Err(err) => warn!("cannot rotate the WebTransport certificate: {err:#}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::ScratchFile as Scratch;

    /// A fresh certificate as PEM, its fingerprint, and its key as PEM.
    fn self_signed_pem() -> (String, Fingerprint, String) {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        (
            certified.cert.pem(),
            Fingerprint::of(certified.cert.der()),
            certified.signing_key.serialize_pem(),
        )
    }

    #[test]
    fn a_certificate_and_key_that_do_not_match_are_named() {
        let (cert_a, fingerprint_a, key_a) = self_signed_pem();
        let (_, _, key_b) = self_signed_pem();
        let cert = Scratch::new("a.crt", &cert_a);
        let config = |key: &Scratch| Config {
            cert: Some(cert.0.clone()),
            key: Some(key.0.clone()),
            ..Config::default()
        };
        let own_key = Scratch::new("a.key", &key_a);
        let (_, fingerprint) = load_certificates(&config(&own_key)).unwrap();
        assert_eq!(fingerprint, fingerprint_a);

        let other_key = Scratch::new("b.key", &key_b);
        let err = format!("{:#}", load_certificates(&config(&other_key)).unwrap_err());
        let named = format!(
            "--cert {} and --key {}: ",
            cert.0.display(),
            other_key.0.display()
        );
        assert!(err.starts_with(&named), "{err}");
        assert!(err.contains("do not form a usable identity"), "{err}");
    }

    fn arena_config(spawn_point: Option<[f32; 2]>, spawn_spread_m: f32) -> Config {
        Config {
            map: Some(concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/arena.json").into()),
            npcs: 0,
            spawn_point,
            spawn_spread_m,
            ..Config::default()
        }
    }

    fn game_on(config: &Config) -> Result<Game, ConfigError> {
        config.validate().unwrap();
        let (mesh, _) = load_map(config).unwrap();
        let view = ViewRange {
            radius_m: config.view_radius_m,
            hysteresis_m: config.view_hysteresis_m,
        };
        build_game(config, Arc::new(mesh), view, Arc::new(Metrics::default()))
    }

    /// The arena spans [0, 0] to [40, 30]; (28, 5) is in the rock east of its hall, 4 m
    /// from the nearest floor.
    #[test]
    fn a_spawn_point_that_finds_no_ground_fails_the_start_up() {
        for (at, spread) in [([500.0, 500.0], 8.0), ([28.0, 5.0], 2.0)] {
            let err = game_on(&arena_config(Some(at), spread))
                .err()
                .expect("no spawn ground");
            assert_eq!(err.setting(), "spawn_point");
            assert!(
                matches!(err, ConfigError::NoSpawnGround { x, y, spread_m, min, max }
                    if [x, y] == at && spread_m == spread && min == [0.0, 0.0] && max == [40.0, 30.0]),
                "{err}"
            );
            let shown = err.to_string();
            for part in [
                "spawn_point",
                "spawn_spread_m",
                &format!("[{}, {}]", at[0], at[1]),
                &format!("spawn_spread_m {spread}"),
                "[0, 0] to [40, 30]",
            ] {
                assert!(shown.contains(part), "{part:?} missing from {shown}");
            }
        }
        // On the floor, or anywhere: players have somewhere to appear.
        let near = game_on(&arena_config(Some([12.0, 5.0]), 8.0)).unwrap();
        assert!(near.spawn_point_count() > 0);
        let anywhere = game_on(&arena_config(None, 8.0)).unwrap();
        assert!(anywhere.spawn_point_count() > 0);
    }
}
