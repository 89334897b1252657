//! `server`: the game server binary. `server run` serves the world to QUIC clients;
//! `server simulate` runs the world headless as fast as the machine allows and reports
//! tick times and the world's health figures; `server keygen` and `server token` make the
//! key pair and the login tokens of an authenticated server.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use server::config::{Config, LogFormat};
use server::simulate::{self, SimulateArgs};

#[derive(Parser)]
#[command(
    version,
    about = "The game server: runs the world on a map and serves it over QUIC"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `server run` flags. Each overrides the config file; each also reads an environment
/// variable (flags win over the environment).
#[derive(clap::Args)]
struct RunArgs {
    /// TOML config file (any setting of the server; see README).
    #[arg(long, value_name = "FILE", env = "MMO_CONFIG")]
    config: Option<PathBuf>,
    /// QUIC address to listen on [default: 127.0.0.1:4433].
    #[arg(long, value_name = "ADDR:PORT", env = "MMO_LISTEN")]
    listen: Option<SocketAddr>,
    /// HTTP address of the viewer (/), /metrics, /healthz, /readyz, /map and
    /// /webtransport [default: 127.0.0.1:9100]. Also `--http-listen`.
    #[arg(
        long,
        visible_alias = "http-listen",
        value_name = "ADDR:PORT",
        env = "MMO_METRICS_LISTEN"
    )]
    metrics_listen: Option<SocketAddr>,
    /// Map: navmesh file, .json polygon map or .map grid map [default: embedded den520d].
    #[arg(long, value_name = "FILE", env = "MMO_MAP")]
    map: Option<PathBuf>,
    /// Wandering NPCs [default: 2000].
    #[arg(long, value_name = "N", env = "MMO_NPCS")]
    npcs: Option<u32>,
    /// PEM certificate chain (with --key) [default: a fresh self-signed certificate].
    #[arg(long, value_name = "FILE", env = "MMO_CERT", requires = "key")]
    cert: Option<PathBuf>,
    /// PEM private key of --cert.
    #[arg(long, value_name = "FILE", env = "MMO_KEY", requires = "cert")]
    key: Option<PathBuf>,
    /// Most sessions at once [default: 2000].
    #[arg(long, value_name = "N", env = "MMO_MAX_CLIENTS")]
    max_clients: Option<u32>,
    /// Most sessions from one IP address (an IPv6 /64 counts as one) [default: 64].
    #[arg(long, value_name = "N", env = "MMO_MAX_CLIENTS_PER_IP")]
    max_clients_per_ip: Option<u32>,
    /// Threads that build snapshots; 0: the cores left after the world's thread
    /// [default: 0].
    #[arg(long, value_name = "N", env = "MMO_SNAPSHOT_WORKERS")]
    snapshot_workers: Option<u32>,
    /// Threads of the runtime that runs QUIC and the sessions; 0: half the cores, at least
    /// one [default: 0].
    #[arg(long, value_name = "N", env = "MMO_QUIC_THREADS")]
    quic_threads: Option<u32>,
    /// Niceness the world thread asks for, -20 (first) to 19 (last); 0 leaves it; below 0
    /// needs CAP_SYS_NICE, else a warning [default: 0].
    #[arg(
        long,
        value_name = "N",
        env = "MMO_WORLD_NICE",
        allow_hyphen_values = true
    )]
    world_nice: Option<i32>,
    /// Niceness each snapshot worker thread asks for, as --world-nice for the world
    /// [default: 0].
    #[arg(
        long,
        value_name = "N",
        env = "MMO_SNAPSHOT_NICE",
        allow_hyphen_values = true
    )]
    snapshot_nice: Option<i32>,
    /// Seed of the spawn generator and the world [default: 1].
    #[arg(long, value_name = "K", env = "MMO_SEED")]
    seed: Option<u64>,
    /// Path search node expansions the world may spend per tick [default: 20000].
    #[arg(long, value_name = "NODES", env = "MMO_PATH_BUDGET")]
    path_budget: Option<u32>,
    /// Path search node expansions per tick for each body; the world spends the larger of
    /// this times its bodies and --path-budget [default: 2.5].
    #[arg(long, value_name = "NODES", env = "MMO_PATH_BUDGET_PER_BODY")]
    path_budget_per_body: Option<f32>,
    /// Answer the world's path requests through the mesh's corner graph: the same paths,
    /// faster on corridor maps [default: false].
    #[arg(long, value_name = "BOOL", env = "MMO_PATH_CORNER_GRAPH")]
    path_corner_graph: Option<bool>,
    /// Receive buffer asked for on the QUIC socket, bytes; Linux caps it at
    /// net.core.rmem_max [default: 4194304].
    #[arg(long, value_name = "BYTES", env = "MMO_SOCKET_RECV_BUFFER_BYTES")]
    socket_recv_buffer_bytes: Option<u32>,
    /// Send buffer asked for on the QUIC socket, bytes; Linux caps it at
    /// net.core.wmem_max [default: 4194304].
    #[arg(long, value_name = "BYTES", env = "MMO_SOCKET_SEND_BUFFER_BYTES")]
    socket_send_buffer_bytes: Option<u32>,
    /// Log format [default: human].
    #[arg(long, value_enum, env = "MMO_LOG_FORMAT")]
    log_format: Option<LogFormat>,
    /// Write the certificate's SHA-256 fingerprint (hex) to this file at start.
    #[arg(long, value_name = "FILE", env = "MMO_FINGERPRINT_FILE")]
    fingerprint_file: Option<PathBuf>,
    /// Directory of the embedded character store [default: ./data].
    #[arg(long, value_name = "DIR", env = "MMO_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Keep characters in PostgreSQL instead (postgres://user:password@host/db);
    /// --data-dir is then unused.
    #[arg(long, value_name = "URL", env = "MMO_STORE")]
    store: Option<String>,
    /// Ed25519 public key (PEM) that login tokens must be signed for (`server keygen`
    /// writes one) [default: none, development mode: logins are not authenticated].
    #[arg(long, value_name = "FILE", env = "MMO_AUTH_PUBLIC_KEY")]
    auth_public_key: Option<PathBuf>,
    /// HTTP address of the admin API, which listens only with a token
    /// (--admin-token-file or MMO_ADMIN_TOKEN) [default: 127.0.0.1:9101].
    #[arg(long, value_name = "ADDR:PORT", env = "MMO_ADMIN_LISTEN")]
    admin_listen: Option<SocketAddr>,
    /// File holding the admin API's bearer token; the environment variable
    /// MMO_ADMIN_TOKEN may hold the token itself instead [default: none, the admin API
    /// is off].
    #[arg(long, value_name = "FILE", env = "MMO_ADMIN_TOKEN_FILE")]
    admin_token_file: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the world to game clients over QUIC until SIGINT or SIGTERM.
    ///
    /// With no arguments: the embedded default map with 2,000 wandering NPCs on
    /// 127.0.0.1:4433, metrics on 127.0.0.1:9100, a fresh self-signed certificate whose
    /// SHA-256 fingerprint is logged at start. Log level from RUST_LOG (default info).
    Run(Box<RunArgs>),
    /// Run one zone of a cluster: its region of the map on a 20 Hz world, its neighbours'
    /// bodies near the border as ghosts, bodies handed over on NATS (docs/zones.md).
    Zone {
        /// The cluster file (TOML; see docs/cluster.example.toml).
        #[arg(long, value_name = "FILE", env = "MMO_CLUSTER")]
        cluster: PathBuf,
        /// Which zone of the file to run.
        #[arg(long, value_name = "NAME", env = "MMO_ZONE")]
        zone: String,
        /// Log lines as `human` text or `json` [default: human].
        #[arg(long, value_name = "FORMAT", env = "MMO_LOG_FORMAT")]
        log_format: Option<LogFormat>,
    },
    /// Run a gateway of a cluster: today's client protocol on QUIC, each client's inputs
    /// routed to the zone that owns its character, snapshots from every zone's frames. Its
    /// addresses, map and store come from the cluster file; the other flags are `run`'s.
    Gateway {
        /// The cluster file (TOML; see docs/cluster.example.toml).
        #[arg(long, value_name = "FILE", env = "MMO_CLUSTER")]
        cluster: PathBuf,
        /// Which gateway of the file to run [default: the only one].
        #[arg(long, value_name = "NAME", env = "MMO_GATEWAY")]
        gateway: Option<String>,
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// Watch a cluster's custody rules: listen to every zone's frames on NATS and check,
    /// at every frame, that no id is real in two zones and that the NPCs in custody stay
    /// the same number (docs/zones.md). Prints one line; exits non-zero when a rule broke,
    /// no check was made, or fewer handoffs than asked were seen.
    Census {
        /// The cluster file (TOML; its `nats` and its zones are read).
        #[arg(long, value_name = "FILE", env = "MMO_CLUSTER")]
        cluster: PathBuf,
        /// How long to watch, seconds (SIGINT or SIGTERM ends it sooner).
        #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
        seconds: f64,
        /// Write the full report here as JSON.
        #[arg(long, value_name = "OUT.json")]
        report: Option<PathBuf>,
        /// Fail unless at least this many handoffs were seen complete.
        #[arg(long, value_name = "N", default_value_t = 0)]
        min_handoffs: u64,
    },
    /// Write a new Ed25519 key pair for login tokens: DIR/signing.key (the private key,
    /// PKCS#8 PEM, readable by its owner only) and DIR/public.key (PEM, for
    /// `--auth-public-key`). Existing files are never overwritten.
    Keygen {
        /// Directory to write the two files in (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Print a login token for an account, signed with a signing key, alone on stdout.
    ///
    /// For development and load tests; in production the game's login service issues
    /// tokens (the format is in the `auth` crate's docs and the protocol docs).
    Token {
        /// The private key (PEM, as `server keygen` writes DIR/signing.key).
        #[arg(long, value_name = "FILE", env = "MMO_SIGNING_KEY")]
        signing_key: PathBuf,
        /// The account: the name the client logs in with.
        #[arg(long, value_name = "NAME")]
        account: String,
        /// Seconds from now until the token expires.
        #[arg(long, value_name = "SECS", default_value_t = 3600)]
        ttl: u64,
    },
    /// Run the world headless on a map as fast as possible and report tick times and the
    /// world's health figures.
    ///
    /// Spawns `--npcs` wandering NPCs and `--players` player characters (which get a walk
    /// order to a random point every few seconds) at random walkable points, in the first
    /// tick, then runs `--seconds` of 20 Hz ticks and prints a table: tick times
    /// (p50/p99/max), each phase's share of the total, overlap, bodies in walls,
    /// circling/repulsed/stuck bodies, arrivals and path requests.
    Simulate {
        /// The map: a navmesh file (.navmesh), or a map the builder reads (.json polygon
        /// map, .map Moving AI grid map), built in memory first.
        #[arg(long, value_name = "FILE")]
        map: PathBuf,
        /// Wandering NPCs to spawn (at most 1,000,000).
        #[arg(long, value_name = "N")]
        npcs: u64,
        /// Simulated seconds to run (20 ticks each, rounded to whole ticks, at least one).
        #[arg(long, value_name = "S", allow_negative_numbers = true)]
        seconds: f64,
        /// Seed of the spawn and order generator and of the world.
        #[arg(long, value_name = "K", default_value_t = 1)]
        seed: u64,
        /// Player characters to spawn (at most 1,000,000); each walks to a random point
        /// every few seconds.
        #[arg(long, value_name = "P", default_value_t = 0)]
        players: u64,
        /// Path search node expansions the world may spend per tick; requests beyond
        /// wait for later ticks [default: the world's, 20,000].
        #[arg(long, value_name = "NODES")]
        path_budget: Option<u64>,
        /// Path search node expansions per tick for each body; the world spends the larger
        /// of this times its bodies and --path-budget [default: the world's, 2.5].
        #[arg(long, value_name = "NODES")]
        path_budget_per_body: Option<f32>,
        /// Answer path requests through the mesh's corner graph instead of the search (the
        /// same paths; faster on corridor maps, see `WorldConfig::path_corner_graph`).
        #[arg(long)]
        corner_graph: bool,
        /// Also write the figures as JSON here.
        #[arg(long, value_name = "OUT.json")]
        report: Option<PathBuf>,
        /// Also draw the final frame here: the mesh, every body coloured by its motion and
        /// the remaining paths of a few NPCs.
        #[arg(long, value_name = "OUT.svg")]
        svg: Option<PathBuf>,
        /// Also draw the jam picture here: the mesh shaded by how many NPC-seconds were
        /// spent crawling (below 10% of the walking speed) in each square metre over the run.
        #[arg(long, value_name = "OUT.svg")]
        jam_svg: Option<PathBuf>,
        /// Also write one CSV line per tick here: its time and each phase's, milliseconds,
        /// the paths served, the requests waiting and the bodies circling (where the slow
        /// ticks' time goes).
        #[arg(long, value_name = "OUT.csv")]
        ticks_csv: Option<PathBuf>,
        /// Count the bodies that walk through the segment X0,Y0,X1,Y1 (metres), each way,
        /// per 10 s, and how densely they stand within 2 m of it: what a passage carries.
        /// Printed after the table and written to the report as `gate`.
        #[arg(long, value_name = "X0,Y0,X1,Y1")]
        gate: Option<String>,
        /// Turn off the world's anticipation before contact (see
        /// `WorldConfig::anticipation`): bodies react only once they touch, with the paper's
        /// circling and repulsion, as before it existed. For comparisons.
        #[arg(long)]
        no_anticipation: bool,
        /// Turn off congestion-aware paths (see `WorldConfig::congestion_routing`): paths
        /// are then the shortest ones, whatever the jams they cross. For comparisons.
        #[arg(long)]
        no_congestion_routing: bool,
        /// A body whose path leads into a jam asks for a detour at most once in this many
        /// seconds (see `WorldConfig::detour_every_secs`) [default: the world's, 5].
        #[arg(long, value_name = "SECONDS")]
        detour_every_secs: Option<f32>,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", server::error_chain(err.as_ref()));
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    match Cli::parse().command {
        Command::Run(args) => serve(*args),
        Command::Zone {
            cluster,
            zone,
            log_format,
        } => run_zone(&cluster, &zone, log_format.unwrap_or_default()),
        Command::Gateway {
            cluster,
            gateway,
            run,
        } => serve_gateway(&cluster, gateway.as_deref(), *run),
        Command::Census {
            cluster,
            seconds,
            report,
            min_handoffs,
        } => census(&cluster, seconds, report.as_deref(), min_handoffs),
        Command::Keygen { out } => keygen(&out),
        Command::Token {
            signing_key,
            account,
            ttl,
        } => token(&signing_key, &account, ttl),
        Command::Simulate {
            map,
            npcs,
            seconds,
            seed,
            players,
            path_budget,
            path_budget_per_body,
            corner_graph,
            report,
            svg,
            jam_svg,
            ticks_csv,
            gate,
            no_anticipation,
            no_congestion_routing,
            detour_every_secs,
        } => simulate::run(&SimulateArgs {
            map,
            npcs,
            seconds,
            seed,
            players,
            path_budget,
            path_budget_per_body,
            corner_graph,
            report,
            svg,
            jam_svg,
            ticks_csv,
            gate,
            anticipation: !no_anticipation,
            congestion_routing: !no_congestion_routing,
            detour_every_secs,
        }),
    }
}

/// The configuration: defaults, then the file, then environment and flags.
fn config_of(args: RunArgs) -> Result<Config> {
    let mut config = match &args.config {
        Some(path) => Config::from_toml_file(path)?,
        None => Config::default(),
    };
    macro_rules! set {
        ($($field:ident),*) => {
            $(if let Some(value) = args.$field { config.$field = value; })*
        };
    }
    set!(
        listen,
        metrics_listen,
        npcs,
        max_clients,
        max_clients_per_ip,
        snapshot_workers,
        quic_threads,
        world_nice,
        snapshot_nice,
        seed,
        path_budget,
        path_budget_per_body,
        path_corner_graph,
        socket_recv_buffer_bytes,
        socket_send_buffer_bytes,
        log_format,
        admin_listen
    );
    if args.admin_token_file.is_some() {
        config.admin_token_file = args.admin_token_file;
    }
    // The token itself only from the environment: a flag would show it in `ps`.
    if let Some(text) = std::env::var_os("MMO_ADMIN_TOKEN") {
        let text = text
            .into_string()
            .map_err(|_| anyhow::anyhow!("MMO_ADMIN_TOKEN is not UTF-8"))?;
        config.admin_token =
            Some(server::admin::AdminToken::new(text.trim()).context("MMO_ADMIN_TOKEN")?);
    }
    if args.map.is_some() {
        config.map = args.map;
    }
    if args.auth_public_key.is_some() {
        config.auth_public_key = args.auth_public_key;
    }
    if args.fingerprint_file.is_some() {
        config.fingerprint_file = args.fingerprint_file;
    }
    if args.data_dir.is_some() {
        config.data_dir = args.data_dir;
    }
    if args.store.is_some() {
        config.store = args.store;
    }
    if config.data_dir.is_none() && config.store.is_none() {
        config.data_dir = Some(PathBuf::from("data"));
    }
    if args.cert.is_some() {
        config.cert = args.cert;
        config.key = args.key;
    }
    // The value may come from the file, the environment or a flag: name where to look.
    config.validate().with_context(|| match &args.config {
        Some(path) => format!(
            "the settings of config file {} with the MMO_* variables and flags over it",
            path.display()
        ),
        None => "the settings of the MMO_* variables and flags".to_owned(),
    })?;
    Ok(config)
}

/// `server keygen`: writes DIR/signing.key (owner-only) and DIR/public.key.
fn keygen(out: &Path) -> Result<()> {
    let key = auth::SigningKey::generate().context("cannot generate a key")?;
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create directory {}", out.display()))?;
    let private = out.join("signing.key");
    let public = out.join("public.key");
    for path in [&private, &public] {
        if path.exists() {
            anyhow::bail!(
                "{} exists; keygen does not overwrite keys (tokens signed with the old key would stop working)",
                path.display()
            );
        }
    }
    write_new(&private, &key.to_pem(), 0o600)?;
    write_new(&public, &key.public_key().to_pem(), 0o644)?;
    println!(
        "wrote {} (keep it secret: it signs login tokens) and {} (give it to `server run --auth-public-key`)",
        private.display(),
        public.display()
    );
    Ok(())
}

/// Writes a file that must not exist yet, with these Unix permissions.
fn write_new(path: &Path, text: &str, mode: u32) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `server token`: prints a token for `account` that expires `ttl_secs` from now.
fn token(signing_key: &Path, account: &str, ttl_secs: u64) -> Result<()> {
    let text = server::config::read_bounded(
        signing_key,
        "signing key",
        server::config::MAX_SECRET_FILE_BYTES,
    )?;
    let key = auth::SigningKey::from_pem(&text)
        .with_context(|| format!("signing key {}", signing_key.display()))?;
    // A token for a name the server refuses would be refused with it.
    server::session::login::check(account, None, None, 0)
        .map_err(|rejected| anyhow::anyhow!("account {account:?}: {}", rejected.end.text))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("the system clock is before 1970")?
        .as_secs();
    let token = key
        .mint(account, now.saturating_add(ttl_secs))
        .with_context(|| format!("account {account:?}"))?;
    println!("{token}");
    Ok(())
}

fn init_logging(format: LogFormat) {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::prelude::*;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| spec.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        // Colours only for a person at a terminal: escape codes in a file or a log
        // collector's pipe are noise that breaks searching.
        LogFormat::Human => registry
            .with(tracing_subscriber::fmt::layer().with_ansi(std::io::stdout().is_terminal()))
            .init(),
        LogFormat::Json => registry
            .with(tracing_subscriber::fmt::layer().json())
            .init(),
    }
}

fn serve(args: RunArgs) -> Result<()> {
    let config = config_of(args)?;
    init_logging(config.log_format);
    let threads = config.quic_threads_or_default();
    serve_until_signal(threads, || server::run::start(config))
}

fn serve_gateway(cluster: &Path, gateway: Option<&str>, args: RunArgs) -> Result<()> {
    let config = config_of(args)?;
    init_logging(config.log_format);
    let threads = config.quic_threads_or_default();
    serve_until_signal(threads, || {
        server::run::start_gateway(config, cluster, gateway)
    })
}

fn census(cluster: &Path, seconds: f64, out: Option<&Path>, min_handoffs: u64) -> Result<()> {
    anyhow::ensure!(
        seconds.is_finite() && (0.0..=86_400.0).contains(&seconds),
        "--seconds {seconds}: must be between 0 and 86400"
    );
    init_logging(LogFormat::default());
    let report = runtime()?.block_on(async {
        let signal = shutdown_signal()?;
        let file = server::cluster::ClusterFile::load(cluster)?;
        server::cluster::census::watch(
            &file.nats,
            file.zones.iter().map(|zone| zone.name.clone()).collect(),
            std::time::Duration::from_secs_f64(seconds),
            signal,
        )
        .await
    })?;
    println!("{}", report.summary());
    let examples = [
        &report.double_examples,
        &report.npc_change_examples,
        &report.bad_messages,
    ];
    for example in examples.into_iter().flatten() {
        println!("  {example}");
    }
    if let Some(out) = out {
        let json = serde_json::to_string_pretty(&report).context("census report")?;
        std::fs::write(out, json + "\n")
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    anyhow::ensure!(report.passed(), "the census found a broken custody rule");
    anyhow::ensure!(
        report.handoffs >= min_handoffs,
        "the census saw {} handoffs, fewer than --min-handoffs {min_handoffs}",
        report.handoffs
    );
    Ok(())
}

/// The async runtime, with tokio's default thread count (one per core).
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The async runtime of a serving process, with `threads` worker threads.
fn serving_runtime(threads: usize) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Starts a server with `start` on a runtime of `threads` threads and runs it until a
/// signal (then shuts it down gracefully) or until it stops by itself.
fn serve_until_signal<F, Fut>(threads: usize, start: F) -> Result<()>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<server::run::Running>>,
{
    serving_runtime(threads)?.block_on(async {
        // Signals are watched before the server starts, so a SIGTERM that arrives right
        // after the start line still shuts it down gracefully instead of killing it.
        let signal = shutdown_signal()?;
        let running = start().await?;
        let trigger = running.shutdown_trigger();
        // The server ends on a signal, or by itself when its world fails.
        let stopped = running.wait();
        tokio::pin!(stopped);
        tokio::select! {
            result = &mut stopped => return result,
            () = signal => {}
        }
        tracing::info!("signal received");
        trigger.trigger();
        stopped.await
    })
}

fn run_zone(cluster: &Path, zone: &str, log_format: LogFormat) -> Result<()> {
    init_logging(log_format);
    runtime()?.block_on(async {
        let signal = shutdown_signal()?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            signal.await;
            tracing::info!("signal received");
            stop.send_replace(true);
        });
        server::cluster::zone::run(cluster, zone, stopped).await
    })
}

/// A future that completes on SIGINT or SIGTERM; the handlers are installed at once.
#[cfg(unix)]
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// A future that completes on Ctrl-C.
#[cfg(not(unix))]
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        // Without a working Ctrl-C handler the server runs until killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}
