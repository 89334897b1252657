//! `server run` settings: defaults that run out of the box, then a TOML file, then
//! environment variables and flags (the binary applies those two through clap, flags
//! winning). Every setting is checked once, here, with an error that names it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Deserialize;

pub use crate::admin::AdminToken;

/// The QUIC socket's receive and send buffers asked for by default, bytes: room for a few
/// thousand datagrams, so a burst does not overflow the buffer before the endpoint reads.
pub const DEFAULT_SOCKET_BUFFER_BYTES: u32 = 4 * 1024 * 1024;

/// Smallest and largest socket buffer sizes accepted, bytes (Linux doubles the value set,
/// and the doubled value must fit a C `int`).
const SOCKET_BUFFER_RANGE: std::ops::RangeInclusive<u32> = 4096..=512 * 1024 * 1024;

/// The smallest snapshot datagram the server builds, bytes: the lower bound of
/// `snapshot_max_bytes`, and the least a client's QUIC connection must accept in one
/// datagram to be let in.
pub const MIN_SNAPSHOT_BYTES: u32 = 200;

/// The most snapshot worker threads accepted: more than any machine's cores would only
/// add threads that wait.
const MAX_SNAPSHOT_WORKERS: u32 = 1024;

/// The most QUIC runtime threads accepted, for the same reason.
const MAX_QUIC_THREADS: u32 = 1024;

/// Why a configuration is refused ([`Config::validate`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// `cert` without `key`, or `key` without `cert`.
    #[error("cert and key go together: give both or neither")]
    CertWithoutKey,
    /// A setting outside the values it takes.
    #[error("{setting} must be {allowed}, got {got}")]
    OutOfRange {
        /// The setting's name, as in the TOML file.
        setting: &'static str,
        /// The values it takes, in words ("between 1 and 1000").
        allowed: String,
        /// The value given.
        got: String,
    },
    /// `spawn_point` with a NaN or infinite coordinate.
    #[error("spawn_point must be two finite numbers, got [{x}, {y}]")]
    SpawnPointNotFinite {
        /// x as given.
        x: f32,
        /// y as given.
        y: f32,
    },
    /// `spawn_point` and `spawn_spread_m` take in no walkable ground clear of walls on the
    /// map, so every login would be refused (checked against the map at start-up).
    #[error(
        "spawn_point and spawn_spread_m must take in walkable ground clear of walls on the map, which spans [{}, {}] to [{}, {}]; got spawn_point [{x}, {y}], spawn_spread_m {spread_m}",
        min[0], min[1], max[0], max[1]
    )]
    NoSpawnGround {
        /// `spawn_point`'s x as given.
        x: f32,
        /// `spawn_point`'s y as given.
        y: f32,
        /// `spawn_spread_m` as given.
        spread_m: f32,
        /// The map's lower corner, metres.
        min: [f64; 2],
        /// The map's upper corner, metres.
        max: [f64; 2],
    },
    /// Both `admin_token_file` and `MMO_ADMIN_TOKEN`: which one counts would be a guess.
    #[error("admin_token_file and MMO_ADMIN_TOKEN are both set: give the admin token once")]
    AdminTokenTwice,
    /// A door with a NaN or infinite coordinate.
    #[error("doors[{door}] must be four finite numbers")]
    DoorNotFinite {
        /// The door's index.
        door: usize,
    },
    /// Keep-alives no more often than the idle timeout would let connections close.
    #[error(
        "keep_alive_secs ({keep_alive_secs}) must be shorter than idle_timeout_secs ({idle_timeout_secs})"
    )]
    KeepAliveNotShorter {
        /// The keep-alive period given.
        keep_alive_secs: f32,
        /// The idle timeout given.
        idle_timeout_secs: f32,
    },
}

impl ConfigError {
    /// The setting at fault (`cert` for a certificate without key or the other way round).
    pub fn setting(&self) -> &'static str {
        match self {
            ConfigError::CertWithoutKey => "cert",
            ConfigError::OutOfRange { setting, .. } => setting,
            ConfigError::SpawnPointNotFinite { .. } | ConfigError::NoSpawnGround { .. } => {
                "spawn_point"
            }
            ConfigError::KeepAliveNotShorter { .. } => "keep_alive_secs",
            ConfigError::AdminTokenTwice => "admin_token_file",
            ConfigError::DoorNotFinite { .. } => "doors",
        }
    }
}

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// Every setting of `server run`. The TOML file uses the same names.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// QUIC address to listen on (UDP).
    pub listen: SocketAddr,
    /// HTTP address of the viewer (`/`), `/metrics`, `/healthz`, `/readyz`, `/map` and
    /// `/webtransport`; in TOML also `http_listen`.
    #[serde(alias = "http_listen")]
    pub metrics_listen: SocketAddr,
    /// Map to serve: a navmesh file or a map the builder reads. `None`: the embedded default
    /// map (den520d, a Dragon Age: Origins map from the Moving AI benchmark set).
    pub map: Option<PathBuf>,
    /// Wandering NPCs spawned at start.
    pub npcs: u32,
    /// Seed of the spawn generator and the world.
    pub seed: u64,
    /// Path search node expansions the world may spend per tick; requests beyond it wait
    /// for later ticks (none is dropped). More serves a burst of requests sooner at the
    /// cost of longer ticks while it lasts.
    pub path_budget: u32,
    /// Path search node expansions per tick for each body in the world: the world spends
    /// up to the larger of `path_budget` and this times its bodies, so the start-up burst
    /// (every NPC asking for its first path) drains in 3 to 4 s whatever the NPC count.
    pub path_budget_per_body: f32,
    /// Whether the world may answer path requests through the mesh's corner graph (built
    /// at start) instead of the search: the same paths, faster on corridor
    /// maps such as brc202d, a little slower on open maps such as den520d.
    pub path_corner_graph: bool,
    /// Players spawn at walkable points within `spawn_spread_m` of this point, `[x, y]` in
    /// metres. `None`: anywhere on the map.
    pub spawn_point: Option<[f32; 2]>,
    /// How far from `spawn_point` players appear, metres.
    pub spawn_spread_m: f32,
    /// PEM certificate chain; with `key`. Neither: a self-signed certificate is generated.
    pub cert: Option<PathBuf>,
    /// PEM private key of `cert`.
    pub key: Option<PathBuf>,
    /// Most sessions at once.
    pub max_clients: u32,
    /// Most sessions from one IP address at once (an IPv6 /64 counts as one address).
    pub max_clients_per_ip: u32,
    /// Entities within this distance of a character are in its view, metres.
    pub view_radius_m: f32,
    /// An entity in view leaves it only beyond `view_radius_m` plus this, metres.
    pub view_hysteresis_m: f32,
    /// Snapshot bytes per client per second, at most (datagram payloads).
    pub bandwidth_cap_bytes_per_sec: u32,
    /// Largest snapshot datagram, bytes (also bounded by the path's datagram size). The
    /// default, 800 bytes at 20 Hz, keeps a client in a dense crowd at 16 kB/s; entities
    /// that do not fit are sent in later snapshots, the most out-of-date and nearest first.
    pub snapshot_max_bytes: u32,
    /// Inputs per client per second; more are dropped and counted.
    pub input_rate_per_sec: u32,
    /// Seconds a client has to finish hello and login (0.1 to 600).
    pub handshake_timeout_secs: f32,
    /// Seconds of silence after which a connection closes (1 to 3,600).
    pub idle_timeout_secs: f32,
    /// Seconds between keep-alive packets (0.1 to 3,600, below the idle timeout).
    pub keep_alive_secs: f32,
    /// Seconds given to clients to leave after a shutdown starts.
    pub shutdown_grace_secs: f32,
    /// Ask unvalidated client addresses to prove they own them (QUIC retry) before any
    /// connection state is kept for them. Costs one round trip per connection.
    pub retry: bool,
    /// Consecutive dropped snapshots (20 per second) after which a client is disconnected
    /// as too slow.
    pub slow_client_ticks: u32,
    /// Threads that build snapshots, each serving a fixed share of the clients; 0: the
    /// cores left after the world's thread (at least one).
    pub snapshot_workers: u32,
    /// Threads of the async runtime that runs QUIC (quinn's endpoint and connections) and
    /// the sessions; 0: half the cores, at least one ([`Config::quic_threads_or_default`]).
    /// On a machine whose cores the world, the snapshot workers and QUIC already fill, a
    /// thread fewer means fewer wake-ups handed between threads (docs/benchmarks.md).
    pub quic_threads: u32,
    /// Niceness the world thread asks for (Linux: −20 runs first, 19 last; 0, the default,
    /// leaves it at the process's). The world's tick waits only for the CPU, so on a busy
    /// machine a negative value keeps its ticks on time; but the time it takes first is
    /// then missing elsewhere (on a saturated machine, QUIC falls behind: see
    /// docs/benchmarks.md). Below 0 needs `CAP_SYS_NICE` (root has it; in Docker,
    /// `cap_add: [SYS_NICE]`); without it the server logs a warning and goes on.
    pub world_nice: i32,
    /// Niceness each snapshot worker thread asks for, as [`Config::world_nice`] for the
    /// world: on a machine whose cores it shares, a negative value keeps the time between
    /// a client's snapshots steady (`mmo_snapshot_send_interval_seconds`), at the cost of
    /// the other threads (QUIC's among them). 0, the default, leaves them at the process's.
    pub snapshot_nice: i32,
    /// Receive buffer to ask the kernel for on the QUIC socket, bytes. Linux grants at most
    /// `net.core.rmem_max` (the server warns when it gets less); a burst of packets beyond
    /// the buffer is dropped by the kernel (`mmo_udp_receive_drops_total`).
    pub socket_recv_buffer_bytes: u32,
    /// Send buffer to ask the kernel for on the QUIC socket, bytes (Linux: at most
    /// `net.core.wmem_max`).
    pub socket_send_buffer_bytes: u32,
    /// Log line format.
    pub log_format: LogFormat,
    /// Also write the certificate's SHA-256 fingerprint (hex) to this file at start, for
    /// clients started beside the server (docker-compose) to pin.
    pub fingerprint_file: Option<PathBuf>,
    /// Directory of the embedded character store. `server run` uses `./data` when neither
    /// this nor [`Config::store`] is set; a server started as a library with neither keeps
    /// no characters.
    pub data_dir: Option<PathBuf>,
    /// PostgreSQL url of the character store (`postgres://...`); replaces the embedded
    /// store, and [`Config::data_dir`] is then unused.
    pub store: Option<String>,
    /// Ed25519 public key (PEM, as `server keygen` or `openssl pkey -pubout` writes it) that
    /// login tokens must be signed for. `None`: development mode, where anyone logs in
    /// under any name.
    pub auth_public_key: Option<PathBuf>,
    /// HTTP address of the admin API (`/admin/...`); it listens only when a token is
    /// configured ([`Config::admin_token_file`] or [`Config::admin_token`]).
    pub admin_listen: SocketAddr,
    /// A file holding the admin API's bearer token (surrounding whitespace ignored).
    pub admin_token_file: Option<PathBuf>,
    /// The admin API's bearer token itself; `server run` takes it from the environment
    /// variable `MMO_ADMIN_TOKEN`, never from the TOML file.
    #[serde(skip)]
    pub admin_token: Option<AdminToken>,
    /// Doors: wall segments the admin API can open and close, each `[x1, y1, x2, y2]` in
    /// metres, all open at start, numbered from 0 in this order.
    pub doors: Vec<[f32; 4]>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 4433)),
            metrics_listen: SocketAddr::from(([127, 0, 0, 1], 9100)),
            map: None,
            npcs: 2_000,
            seed: 1,
            path_budget: 20_000,
            path_budget_per_body: 2.5,
            path_corner_graph: false,
            spawn_point: None,
            spawn_spread_m: crate::game::SPAWN_SPREAD_M,
            cert: None,
            key: None,
            max_clients: 2_000,
            max_clients_per_ip: 64,
            view_radius_m: 30.0,
            view_hysteresis_m: 4.0,
            bandwidth_cap_bytes_per_sec: 64_000,
            snapshot_max_bytes: 800,
            input_rate_per_sec: 30,
            handshake_timeout_secs: 5.0,
            idle_timeout_secs: 15.0,
            keep_alive_secs: 4.0,
            shutdown_grace_secs: 2.0,
            retry: true,
            slow_client_ticks: 200,
            snapshot_workers: 0,
            quic_threads: 0,
            world_nice: 0,
            snapshot_nice: 0,
            socket_recv_buffer_bytes: DEFAULT_SOCKET_BUFFER_BYTES,
            socket_send_buffer_bytes: DEFAULT_SOCKET_BUFFER_BYTES,
            log_format: LogFormat::Human,
            fingerprint_file: None,
            data_dir: None,
            store: None,
            auth_public_key: None,
            admin_listen: SocketAddr::from(([127, 0, 0, 1], 9101)),
            admin_token_file: None,
            admin_token: None,
            doors: Vec::new(),
        }
    }
}

/// The longest key or token file read, bytes: a PEM Ed25519 key is near 120.
pub const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// The longest configuration file read, bytes.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;

/// The text of the file at `path`, `what` it is (for errors), refused without reading on
/// past `limit` bytes: a path to `/dev/zero` or a large file by mistake gets an error, not
/// a process that reads until memory runs out.
pub fn read_bounded(path: &Path, what: &str, limit: u64) -> Result<String> {
    use std::io::Read as _;
    let cannot = || format!("cannot read {what} {}", path.display());
    let file = std::fs::File::open(path).with_context(cannot)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    if bytes.len() as u64 > limit {
        anyhow::bail!(
            "{what} {} is longer than {limit} bytes: not the file meant",
            path.display()
        );
    }
    String::from_utf8(bytes).with_context(|| format!("{what} {} is not UTF-8", path.display()))
}

impl Config {
    /// Defaults overridden by a TOML file.
    pub fn from_toml_file(path: &Path) -> Result<Config> {
        let text = read_bounded(path, "config file", MAX_CONFIG_FILE_BYTES)?;
        Config::from_toml(&text).with_context(|| format!("config file {}", path.display()))
    }

    /// Defaults overridden by TOML text.
    pub fn from_toml(text: &str) -> Result<Config> {
        let config: Config = toml::from_str(text).map_err(|err| anyhow::anyhow!("{err}"))?;
        Ok(config)
    }

    /// The QUIC runtime's thread count: [`Config::quic_threads`], or for 0 half the cores
    /// (at least one).
    pub fn quic_threads_or_default(&self) -> usize {
        match self.quic_threads {
            0 => std::thread::available_parallelism()
                .map_or(1, |cores| cores.get() / 2)
                .max(1),
            n => n as usize,
        }
    }

    /// Checks every setting; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.cert.is_some() != self.key.is_some() {
            return Err(ConfigError::CertWithoutKey);
        }
        at_most("npcs", self.npcs, 100_000)?;
        between("path_budget", self.path_budget, 1..=100_000_000)?;
        between(
            "path_budget_per_body",
            self.path_budget_per_body,
            0.0..=1000.0,
        )?;
        if let Some([x, y]) = self.spawn_point
            && !(x.is_finite() && y.is_finite())
        {
            return Err(ConfigError::SpawnPointNotFinite { x, y });
        }
        positive("spawn_spread_m", self.spawn_spread_m, 10_000.0)?;
        at_least("max_clients", self.max_clients, 1)?;
        at_least("max_clients_per_ip", self.max_clients_per_ip, 1)?;
        positive("view_radius_m", self.view_radius_m, 1_000.0)?;
        between("view_hysteresis_m", self.view_hysteresis_m, 0.0..=100.0)?;
        between(
            "bandwidth_cap_bytes_per_sec",
            self.bandwidth_cap_bytes_per_sec,
            2_000..=10_000_000,
        )?;
        between(
            "snapshot_max_bytes",
            self.snapshot_max_bytes,
            MIN_SNAPSHOT_BYTES..=protocol::MAX_DATAGRAM_BYTES as u32,
        )?;
        between("input_rate_per_sec", self.input_rate_per_sec, 1..=1_000)?;
        // QUIC counts these in whole milliseconds, and an idle timeout of 0 means none:
        // a tiny value would turn the reaping of silent connections off, or fail every
        // handshake, or ping every connection thousands of times a second.
        between(
            "handshake_timeout_secs",
            self.handshake_timeout_secs,
            0.1..=600.0,
        )?;
        between("idle_timeout_secs", self.idle_timeout_secs, 1.0..=3_600.0)?;
        between("keep_alive_secs", self.keep_alive_secs, 0.1..=3_600.0)?;
        if self.keep_alive_secs >= self.idle_timeout_secs {
            return Err(ConfigError::KeepAliveNotShorter {
                keep_alive_secs: self.keep_alive_secs,
                idle_timeout_secs: self.idle_timeout_secs,
            });
        }
        between("shutdown_grace_secs", self.shutdown_grace_secs, 0.0..=600.0)?;
        at_least("slow_client_ticks", self.slow_client_ticks, 1)?;
        if self.snapshot_workers > MAX_SNAPSHOT_WORKERS {
            return Err(ConfigError::OutOfRange {
                setting: "snapshot_workers",
                allowed: format!("at most {MAX_SNAPSHOT_WORKERS}"),
                got: self.snapshot_workers.to_string(),
            });
        }
        if self.quic_threads > MAX_QUIC_THREADS {
            return Err(ConfigError::OutOfRange {
                setting: "quic_threads",
                allowed: format!("at most {MAX_QUIC_THREADS}"),
                got: self.quic_threads.to_string(),
            });
        }
        between("world_nice", self.world_nice, -20..=19)?;
        between("snapshot_nice", self.snapshot_nice, -20..=19)?;
        between(
            "socket_recv_buffer_bytes",
            self.socket_recv_buffer_bytes,
            SOCKET_BUFFER_RANGE,
        )?;
        between(
            "socket_send_buffer_bytes",
            self.socket_send_buffer_bytes,
            SOCKET_BUFFER_RANGE,
        )?;
        if self.admin_token.is_some() && self.admin_token_file.is_some() {
            return Err(ConfigError::AdminTokenTwice);
        }
        if let Some(at) = self
            .doors
            .iter()
            .position(|d| !d.iter().all(|v| v.is_finite()))
        {
            return Err(ConfigError::DoorNotFinite { door: at });
        }
        Ok(())
    }

    /// The admin API's token: read from [`Config::admin_token_file`], or the one given in
    /// [`Config::admin_token`]; `None` (with a line in the log) when there is neither, and
    /// the admin API stays off.
    pub fn load_admin_token(&self) -> Result<Option<AdminToken>> {
        if let Some(path) = &self.admin_token_file {
            let text = read_bounded(path, "admin_token_file", MAX_SECRET_FILE_BYTES)?;
            let token = AdminToken::new(text.trim())
                .with_context(|| format!("admin_token_file {}", path.display()))?;
            return Ok(Some(token));
        }
        if self.admin_token.is_none() {
            tracing::info!(
                "no admin token (admin_token_file or MMO_ADMIN_TOKEN): the admin API is off"
            );
        }
        Ok(self.admin_token.clone())
    }

    /// The public key of `auth_public_key`, read and checked; `None` (with a warning in the
    /// log) when no key is configured.
    pub fn load_auth_key(&self) -> Result<Option<auth::PublicKey>> {
        let Some(path) = &self.auth_public_key else {
            tracing::warn!(
                "no auth_public_key: logins are not authenticated, anyone may log in under any name (development mode)"
            );
            return Ok(None);
        };
        let text = read_bounded(path, "auth_public_key", MAX_SECRET_FILE_BYTES)?;
        let key = auth::PublicKey::from_pem(&text)
            .with_context(|| format!("auth_public_key {}", path.display()))?;
        tracing::info!(key = %path.display(), "logins need a token signed for this key");
        Ok(Some(key))
    }

    /// The handshake timeout.
    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_secs_f32(self.handshake_timeout_secs)
    }

    /// The shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs_f32(self.shutdown_grace_secs)
    }
}

/// A setting outside its range (NaN is outside every range).
fn between<T>(
    setting: &'static str,
    value: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<(), ConfigError>
where
    T: PartialOrd + std::fmt::Display,
{
    if range.contains(&value) {
        return Ok(());
    }
    Err(ConfigError::OutOfRange {
        setting,
        allowed: format!("between {} and {}", range.start(), range.end()),
        got: value.to_string(),
    })
}

fn at_most(setting: &'static str, value: u32, max: u32) -> Result<(), ConfigError> {
    if value <= max {
        return Ok(());
    }
    Err(ConfigError::OutOfRange {
        setting,
        allowed: format!("at most {max}"),
        got: value.to_string(),
    })
}

fn at_least(setting: &'static str, value: u32, min: u32) -> Result<(), ConfigError> {
    if value >= min {
        return Ok(());
    }
    Err(ConfigError::OutOfRange {
        setting,
        allowed: format!("at least {min}"),
        got: value.to_string(),
    })
}

fn positive(setting: &'static str, value: f32, max: f32) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 && value <= max {
        return Ok(());
    }
    Err(ConfigError::OutOfRange {
        setting,
        allowed: format!("above 0 and at most {max}"),
        got: value.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key or token file path that names something endless or huge is refused after a
    /// bounded read, naming the setting and the path; a real one is read.
    #[test]
    fn secret_files_are_read_up_to_a_bound() {
        let config = Config {
            auth_public_key: Some("/dev/zero".into()),
            admin_token_file: Some("/dev/zero".into()),
            ..Config::default()
        };
        for err in [
            config.load_auth_key().unwrap_err(),
            config.load_admin_token().unwrap_err(),
        ] {
            let text = format!("{err:#}");
            assert!(
                text.contains("/dev/zero is longer than 65536 bytes"),
                "{text}"
            );
        }
        let public = auth::SigningKey::generate().unwrap().public_key();
        let key = crate::test_support::ScratchFile::new("auth.pub", &public.to_pem());
        let config = Config {
            auth_public_key: Some(key.0.clone()),
            ..Config::default()
        };
        assert_eq!(config.load_auth_key().unwrap(), Some(public));
    }

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
        // The server's default budget is the world's.
        assert_eq!(
            Config::default().path_budget as usize,
            sim::WorldConfig::default().path_budget_per_tick
        );
        assert_eq!(
            Config::default().path_budget_per_body,
            sim::WorldConfig::default().path_budget_per_body
        );
    }

    #[test]
    fn the_example_file_states_the_defaults() {
        let example = include_str!("../../docs/server.example.toml");
        assert_eq!(Config::from_toml(example).unwrap(), Config::default());
    }

    #[test]
    fn http_listen_is_another_name_for_metrics_listen() {
        let config = Config::from_toml("http_listen = \"127.0.0.1:9999\"\n").unwrap();
        assert_eq!(config.metrics_listen, "127.0.0.1:9999".parse().unwrap());
    }

    #[test]
    fn quic_threads_default_to_half_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            Config::default().quic_threads_or_default(),
            (cores / 2).max(1)
        );
        let three = Config {
            quic_threads: 3,
            ..Config::default()
        };
        assert_eq!(three.quic_threads_or_default(), 3);
    }

    #[test]
    fn toml_overrides_defaults_and_names_errors() {
        let config = Config::from_toml("npcs = 10\nlisten = \"127.0.0.1:5000\"\n").unwrap();
        assert_eq!(config.npcs, 10);
        assert_eq!(config.listen.port(), 5000);
        assert_eq!(config.view_radius_m, Config::default().view_radius_m);

        let err = Config::from_toml("npc = 10\n").unwrap_err().to_string();
        assert!(err.contains("unknown field"), "{err}");
        let err = Config::from_toml("npcs = \"many\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("npcs"), "{err}");

        let bad = Config {
            view_radius_m: f32::NAN,
            ..Config::default()
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("view_radius_m"), "{err}");
        let bad = Config {
            path_budget: 0,
            ..Config::default()
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("path_budget"), "{err}");
        let bad = Config {
            quic_threads: MAX_QUIC_THREADS + 1,
            ..Config::default()
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("quic_threads"), "{err}");
        for per_body in [-1.0, f32::NAN, f32::INFINITY] {
            let bad = Config {
                path_budget_per_body: per_body,
                ..Config::default()
            };
            let err = bad.validate().unwrap_err().to_string();
            assert!(err.contains("path_budget_per_body"), "{err}");
        }
        let config = Config::from_toml(
            "path_budget_per_body = 4.0
path_corner_graph = true
",
        );
        let config = config.unwrap();
        assert_eq!(config.path_budget_per_body, 4.0);
        assert!(config.path_corner_graph);
        assert_eq!(
            Config::from_toml("path_budget = 40000\n")
                .unwrap()
                .path_budget,
            40_000
        );
        let bad = Config {
            cert: Some(PathBuf::from("cert.pem")),
            ..Config::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("cert and key")
        );
    }
    #[test]
    fn validation_errors_are_typed_and_name_the_setting() {
        let cases: [(Config, &str); 11] = [
            (
                Config {
                    key: Some(PathBuf::from("key.pem")),
                    ..Config::default()
                },
                "cert",
            ),
            (
                Config {
                    spawn_point: Some([f32::NAN, 1.0]),
                    ..Config::default()
                },
                "spawn_point",
            ),
            (
                Config {
                    keep_alive_secs: 20.0,
                    ..Config::default()
                },
                "keep_alive_secs",
            ),
            // Below a millisecond, QUIC would read "no idle timeout".
            (
                Config {
                    idle_timeout_secs: 0.0005,
                    keep_alive_secs: 0.0001,
                    ..Config::default()
                },
                "idle_timeout_secs",
            ),
            (
                Config {
                    keep_alive_secs: 0.0001,
                    ..Config::default()
                },
                "keep_alive_secs",
            ),
            (
                Config {
                    handshake_timeout_secs: 1e-9,
                    ..Config::default()
                },
                "handshake_timeout_secs",
            ),
            (
                Config {
                    snapshot_max_bytes: MIN_SNAPSHOT_BYTES - 1,
                    ..Config::default()
                },
                "snapshot_max_bytes",
            ),
            (
                Config {
                    socket_recv_buffer_bytes: 1024,
                    ..Config::default()
                },
                "socket_recv_buffer_bytes",
            ),
            (
                Config {
                    socket_send_buffer_bytes: u32::MAX,
                    ..Config::default()
                },
                "socket_send_buffer_bytes",
            ),
            (
                Config {
                    world_nice: -21,
                    ..Config::default()
                },
                "world_nice",
            ),
            (
                Config {
                    snapshot_nice: 20,
                    ..Config::default()
                },
                "snapshot_nice",
            ),
        ];
        for (config, setting) in cases {
            let err = config.validate().unwrap_err();
            assert_eq!(err.setting(), setting, "{err}");
            assert!(err.to_string().starts_with(setting), "{err}");
        }
        let err = Config {
            input_rate_per_sec: 0,
            ..Config::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(
            err,
            ConfigError::OutOfRange {
                setting: "input_rate_per_sec",
                allowed: "between 1 and 1000".to_owned(),
                got: "0".to_owned(),
            }
        );
        let twice = Config {
            admin_token: Some(AdminToken::new("0123456789abcdef").unwrap()),
            admin_token_file: Some(PathBuf::from("admin.token")),
            ..Config::default()
        };
        assert_eq!(twice.validate(), Err(ConfigError::AdminTokenTwice));
        assert_eq!(ConfigError::AdminTokenTwice.setting(), "admin_token_file");
        let door =
            Config::from_toml("doors = [[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 1.0, 0.0]]\n").unwrap();
        assert_eq!(door.doors.len(), 2);
        door.validate().unwrap();
        let bad_door = Config {
            doors: vec![[0.0, f32::INFINITY, 1.0, 1.0]],
            ..Config::default()
        };
        let err = bad_door.validate().unwrap_err();
        assert_eq!(err, ConfigError::DoorNotFinite { door: 0 });
        assert!(err.to_string().starts_with("doors"), "{err}");
        // The token itself never comes from a file's text.
        let err = Config::from_toml("admin_token = \"0123456789abcdef\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field"), "{err}");
        let sockets = Config::from_toml(
            "socket_recv_buffer_bytes = 8388608\nsocket_send_buffer_bytes = 65536\n",
        )
        .unwrap();
        assert_eq!(sockets.socket_recv_buffer_bytes, 8 << 20);
        assert_eq!(sockets.socket_send_buffer_bytes, 64 << 10);
    }
}
