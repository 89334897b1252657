//! `loadtest`: runs a bot swarm against a game server and reports. Exits 2 when a gate is
//! missed, naming each: with no `--slo` file, any bot that failed to log in, was dropped
//! or saw a violation fails the run; exits 1 when the run cannot start.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use client::{Fingerprint, Trust};
use loadtest::borders::Borders;
use loadtest::bot::{Behaviour, InputPace};
use loadtest::slo::Slo;
use loadtest::swarm::{Options, Progress, Tokens, run};
use loadtest::targets::BorderTargets;

/// Most bots one run accepts.
const MAX_BOTS: u64 = 20_000;
/// Longest run accepted, seconds.
const MAX_SECONDS: f64 = 3_600.0;

#[derive(Parser)]
#[command(
    version,
    about = "A QUIC bot swarm that measures a game server under load"
)]
struct Cli {
    /// The server's QUIC address; the swarm targets only this address.
    #[arg(long, value_name = "HOST:PORT")]
    server: String,
    /// Bots to run (at most 20,000).
    #[arg(long, value_name = "N")]
    bots: u64,
    /// Seconds over which the bots start, evenly spread; shorter than --duration
    /// [default: 5, or a quarter of a shorter run's --duration].
    #[arg(long, value_name = "SECS")]
    ramp: Option<f64>,
    /// Seconds the run lasts, ramp included (at most 3,600).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    duration: f64,
    /// Seconds at the start left out of percentiles and rates [default: 10, or a third of
    /// a shorter run's --duration].
    #[arg(long, value_name = "SECS")]
    warmup: Option<f64>,
    /// How the bots play (`border` needs --cluster).
    #[arg(long, value_enum, default_value_t = Behaviour::Wander)]
    behaviour: Behaviour,
    /// When the bots send their inputs: `timer`, every 100 ms; `snapshot`, one on each
    /// snapshot, as a game client that sends its input every tick.
    #[arg(long, value_enum, default_value_t = InputPace::Timer)]
    input_pace: InputPace,
    /// The cluster file (TOML): its [[zones]], whose borders every bot counts its character
    /// crossing; `--behaviour border` also reads its `map` and `handoff_margin_m` to walk
    /// across them.
    #[arg(long, value_name = "FILE")]
    cluster: Option<PathBuf>,
    /// Accept only the server certificate with this SHA-256 fingerprint (the server logs it).
    #[arg(long, value_name = "HEX", conflicts_with_all = ["insecure_local", "cert_fingerprint_file"])]
    cert_fingerprint: Option<String>,
    /// Read the fingerprint from this file (the server's --fingerprint-file), waiting up to
    /// 60 s for it to appear.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure_local")]
    cert_fingerprint_file: Option<PathBuf>,
    /// Accept any certificate; only allowed for a server on this machine (loopback).
    #[arg(long)]
    insecure_local: bool,
    /// Also write the report as JSON here.
    #[arg(long, value_name = "OUT.json")]
    report: Option<PathBuf>,
    /// Thresholds (TOML); the exit code is 2 when any is missed. Without it, the run fails
    /// (exit 2) when any bot failed to log in, was dropped or saw a violation.
    #[arg(long, value_name = "FILE")]
    slo: Option<PathBuf>,
    /// The server's metrics URL (http://HOST:PORT/metrics), scraped at start and end.
    #[arg(long, value_name = "URL")]
    metrics: Option<String>,
    /// No progress display.
    #[arg(long)]
    quiet: bool,
    /// Threads the swarm runs on (1 to 64). One keeps the whole swarm on one core; more
    /// let a swarm that cannot keep up with its snapshots on one core do so.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
    /// Signing key (PEM, the server's `keygen` DIR/signing.key) each bot mints its login
    /// token with, for a server run with the matching --auth-public-key [default: no
    /// tokens].
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    /// Seconds a bot's token lasts from when it is minted (just before its login).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 300,
        requires = "auth_key"
    )]
    token_ttl: u64,
}

fn main() -> ExitCode {
    match start() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The default ramp and warm-up, scaled down for a short run so that any `--duration`
/// works without them: a quarter and a third of the run, at most 5 s and 10 s (the warm-up
/// outlasts the ramp, so percentiles start once every bot is in).
fn default_ramp_and_warmup(duration_secs: f64) -> (f64, f64) {
    (
        (duration_secs / 4.0).min(5.0),
        (duration_secs / 3.0).min(10.0),
    )
}

fn seconds(name: &str, value: f64) -> Result<Duration> {
    ensure!(
        value.is_finite() && (0.0..=MAX_SECONDS).contains(&value),
        "--{name} must be between 0 and {MAX_SECONDS} seconds, got {value}"
    );
    Ok(Duration::from_secs_f64(value))
}

/// Waits up to a minute for a fingerprint file (a server started alongside writes it).
fn read_fingerprint(path: &std::path::Path) -> Result<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.trim().is_empty()
        {
            return Ok(text.trim().to_owned());
        }
        if std::time::Instant::now() >= deadline {
            bail!("no fingerprint in {} after 60 s", path.display());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The signing key in `path`, with an error naming the file.
fn signing_key(path: &std::path::Path) -> Result<auth::SigningKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --auth-key {}", path.display()))?;
    auth::SigningKey::from_pem(&text).with_context(|| format!("--auth-key {}", path.display()))
}

/// Runs the swarm; `Ok(false)` when a gate was missed.
fn start() -> Result<bool> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print and exit 0; any argument clap refuses (unknown,
        // missing, malformed or conflicting) exits 1 like every other reason the run cannot
        // start, never 2, which means a missed gate.
        Err(err) if !err.use_stderr() => err.exit(),
        Err(err) => {
            let _ = err.print();
            std::process::exit(1);
        }
    };
    ensure!(
        (1..=MAX_BOTS).contains(&cli.bots),
        "--bots must be between 1 and {MAX_BOTS}, got {}",
        cli.bots
    );
    let duration = seconds("duration", cli.duration)?;
    ensure!(duration > Duration::ZERO, "--duration must be above 0");
    let (default_ramp, default_warmup) = default_ramp_and_warmup(cli.duration);
    let ramp_secs = cli.ramp.unwrap_or(default_ramp);
    let warmup_secs = cli.warmup.unwrap_or(default_warmup);
    let ramp = seconds("ramp", ramp_secs)?;
    let warmup = seconds("warmup", warmup_secs)?;
    // The last bot starts at the ramp's end: a ramp as long as the run leaves it no time.
    ensure!(
        ramp < duration,
        "--ramp ({ramp_secs} s) must be shorter than --duration ({} s)",
        cli.duration
    );
    ensure!(
        warmup < duration,
        "--warmup ({warmup_secs} s) must be shorter than --duration ({} s)",
        cli.duration
    );
    let server: SocketAddr = cli
        .server
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve --server {}", cli.server))?
        .next()
        .with_context(|| format!("--server {} resolves to no address", cli.server))?;
    let from_file = cli
        .cert_fingerprint_file
        .as_deref()
        .map(read_fingerprint)
        .transpose()?;
    let trust = match (
        cli.cert_fingerprint.clone().or(from_file),
        cli.insecure_local,
    ) {
        (Some(hex), _) => Trust::Pinned(Fingerprint::parse(&hex).context("--cert-fingerprint")?),
        (None, true) => {
            if !server.ip().is_loopback() {
                bail!("--insecure-local only works with a loopback server address, not {server}");
            }
            Trust::AnyCertificate
        }
        (None, false) => {
            bail!("give --cert-fingerprint HEX (or --insecure-local for a server on this machine)")
        }
    };
    let borders = cli
        .cluster
        .as_deref()
        .map(Borders::from_file)
        .transpose()?
        .map(Arc::new);
    if cli.behaviour == Behaviour::Border {
        match (&borders, &cli.cluster) {
            (Some(borders), Some(path)) if borders.borders().is_empty() => bail!(
                "--behaviour border: the zones of cluster file {} share no border",
                path.display()
            ),
            (Some(_), _) => {}
            (None, _) => bail!(
                "--behaviour border needs --cluster FILE (the zones whose borders the bots cross)"
            ),
        }
    }
    // Border bots walk to walkable points past the borders, on the cluster's map.
    let targets = match (&borders, &cli.cluster) {
        (Some(borders), Some(path)) if cli.behaviour == Behaviour::Border => {
            Some(Arc::new(BorderTargets::from_file(path, borders)?))
        }
        _ => None,
    };
    let slo = match cli.slo.as_deref() {
        Some(path) => Slo::from_file(path)?,
        None => Slo::default(),
    };
    let options = Options {
        server,
        bots: cli.bots,
        ramp,
        duration,
        warmup,
        behaviour: cli.behaviour,
        pace: cli.input_pace,
        trust,
        metrics_url: cli.metrics.clone(),
        progress: if cli.quiet {
            Progress::Quiet
        } else {
            Progress::Auto
        },
        tokens: match &cli.auth_key {
            Some(path) => Some(Tokens {
                key: Arc::new(signing_key(path)?),
                ttl: Duration::from_secs(cli.token_ttl),
            }),
            None => None,
        },
        borders,
        targets,
    };
    // One thread by default: the whole swarm on one core.
    let runtime = match cli.threads {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(n))
            .enable_all()
            .build(),
    }
    .context("cannot start the async runtime")?;
    let report = runtime.block_on(run(options))?;
    print!("{}", report.table());
    if let Some(path) = &cli.report {
        let json = serde_json::to_string_pretty(&report).context("cannot encode the report")?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let misses = slo.misses(&report);
    for miss in &misses {
        println!("SLO missed: {miss}");
    }
    if misses.is_empty() {
        println!("SLO met");
    }
    Ok(misses.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_runs_get_a_shorter_ramp_and_warmup() {
        assert_eq!(default_ramp_and_warmup(60.0), (5.0, 10.0));
        assert_eq!(default_ramp_and_warmup(3_600.0), (5.0, 10.0));
        let (ramp, warmup) = default_ramp_and_warmup(3.0);
        assert_eq!(ramp, 0.75);
        assert_eq!(warmup, 1.0);
        for duration in [0.1, 1.0, 3.0, 12.0, 29.0, 30.0, 31.0] {
            let (ramp, warmup) = default_ramp_and_warmup(duration);
            assert!(ramp <= warmup && warmup < duration, "{duration}");
        }
    }
}
