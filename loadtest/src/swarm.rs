//! Drives N bots over real QUIC against one server and gathers what they see into a
//! [`Report`]. Every bot shares one QUIC endpoint (one UDP socket); each is a small task
//! that feeds its [`Bot`] what arrives and sends what the bot asks for. The run is bounded:
//! it ends at its duration whatever the server does.
//!
//! Every bot is accounted for: it logs in (and then plays to the end or is dropped, with a
//! reason) or it fails to log in, with a reason; a bot still in its handshake when the run
//! ends (or 10 s after it began) has failed with `timeout`, or with
//! `timeout_before_welcome` when QUIC's handshake was done and the login was not. A session
//! the server stops talking to is dropped as `server_silent`: a server killed outright sends
//! no close, and QUIC's idle timeout alone would outlast a short run.
//!
//! Against a server that authenticates logins, each bot mints its own token for its own
//! name ([`Tokens`]) just before it logs in.
//!
//! Given the cluster's zones ([`Options::borders`]), every bot counts the zone borders its
//! character crosses; the border behaviour needs them, and walks to walkable points past
//! the borders when given the cluster's map too ([`Options::targets`]).

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use client::{ClientError, Trust, close_reason};
use protocol::codec::{FrameReader, encode_datagram, encode_frame};
use protocol::{
    ClientDatagram, ClientMessage, DisconnectReason, PROTOCOL_VERSION, ServerMessage, Welcome,
};
use quinn::{Connection, ConnectionError, RecvStream, SendStream};

use crate::borders::Borders;
use crate::bot::{Behaviour, Bot, InputPace, Sample, Violation};
use crate::report::{Aggregate, Percentiles, Report, Second};
use crate::scrape::{between, scrape};
use crate::targets::BorderTargets;

/// How progress is shown while the swarm runs (on stderr).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// A live bar on a terminal, a line per second otherwise.
    Auto,
    /// Nothing.
    Quiet,
}

/// A swarm run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The server.
    pub server: SocketAddr,
    /// Bots to run.
    pub bots: u64,
    /// Bots start evenly spread over this long.
    pub ramp: Duration,
    /// The whole run, ramp included.
    pub duration: Duration,
    /// The start of the run left out of percentiles and rates.
    pub warmup: Duration,
    /// How the bots play.
    pub behaviour: Behaviour,
    /// When they send their inputs.
    pub pace: InputPace,
    /// Which certificates to accept.
    pub trust: Trust,
    /// The server's Prometheus endpoint, scraped at the start and the end.
    pub metrics_url: Option<String>,
    /// Progress display.
    pub progress: Progress,
    /// The key bots sign their login tokens with; `None`: logins carry no token (a
    /// server in development mode).
    pub tokens: Option<Tokens>,
    /// The cluster's zones: every bot counts the borders its character crosses, and
    /// [`Behaviour::Border`] bots walk across them. `None`: no zones, no crossings (and
    /// the border behaviour is refused).
    pub borders: Option<Arc<Borders>>,
    /// Walkable points past the borders on the cluster's map, for [`Behaviour::Border`]
    /// bots. `None`: they aim a few metres straight across the nearest border, which may
    /// be a wall the server snaps back to their own side.
    pub targets: Option<Arc<BorderTargets>>,
}

/// What bots mint their login tokens with.
#[derive(Clone, Debug)]
pub struct Tokens {
    /// The signing key (the private half of the server's `auth_public_key`).
    pub key: Arc<auth::SigningKey>,
    /// How long each token lasts from the moment it is minted.
    pub ttl: Duration,
}

impl Tokens {
    /// A token for `account`, valid from now for the ttl.
    pub fn mint(&self, account: &str) -> Result<String, auth::MintError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        self.key
            .mint(account, now.saturating_add(self.ttl.as_secs()))
    }
}

/// Time a bot has to connect and log in (and never past the run's end).
const LOGIN_TIMEOUT: Duration = Duration::from_secs(10);
/// A session that hears nothing from the server for this long is dropped. The server
/// sends a snapshot every tick (20 Hz), so this is dozens of missed ticks, not jitter.
const SILENCE_LIMIT: Duration = Duration::from_secs(3);
/// A session still silent this long when the run ends is dropped too: a server that
/// stopped in the run's last seconds must not pass.
const END_SILENCE: Duration = Duration::from_secs(1);
/// How often a bot without an input due wakes to check that the server still talks.
const IDLE_WAKE: Duration = Duration::from_millis(100);
/// How often a bot moves its samples into the shared aggregate (so the warm-up's end and
/// each second's line are this exact).
const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// Most bytes taken from the reliable stream at once.
const STREAM_CHUNK: usize = 4096;
/// Time bots get to leave after the run's end.
const LEAVE_GRACE: Duration = Duration::from_secs(3);

type Shared = Arc<Mutex<Aggregate>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Aggregate> {
    // A bot task that panicked mid-update leaves counts, not broken invariants.
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The receive buffer the swarm's socket asks for (Linux grants at most
/// `net.core.rmem_max`): a thousand bots' snapshots of one server tick, with room to spare.
const SWARM_RECEIVE_BUFFER_BYTES: usize = 8 * 1024 * 1024;

/// Runs the swarm to its end and reports.
pub async fn run(options: Options) -> Result<Report> {
    if options.behaviour == Behaviour::Border {
        match &options.borders {
            None => bail!("the border behaviour needs the cluster's zones (Options::borders)"),
            Some(borders) if borders.borders().is_empty() => {
                bail!("the border behaviour needs zones that share a border; these share none")
            }
            Some(_) => {}
        }
    }
    // Every bot's snapshots arrive on this one socket, a server tick's in one burst.
    let endpoint = client::endpoint_with_receive_buffer(
        options.server,
        options.trust,
        SWARM_RECEIVE_BUFFER_BYTES,
    )
    .map_err(|err| anyhow::anyhow!("{err}"))
    .context("cannot open the client endpoint")?;
    let scraped_start = match &options.metrics_url {
        Some(url) => Some(
            scrape(url)
                .await
                .context("scraping the server's metrics at the start")?,
        ),
        None => None,
    };
    let shared: Shared = Arc::new(Mutex::new(Aggregate::default()));
    let start = Instant::now();
    let end = start + options.duration;

    let mut tasks = tokio::task::JoinSet::new();
    for number in 0..options.bots {
        let offset = options
            .ramp
            .mul_f64(number as f64 / options.bots.max(1) as f64);
        let (endpoint, shared) = (endpoint.clone(), Arc::clone(&shared));
        let (server, behaviour, pace) = (options.server, options.behaviour, options.pace);
        let (tokens, borders) = (options.tokens.clone(), options.borders.clone());
        let targets = options.targets.clone();
        tasks.spawn(async move {
            tokio::time::sleep_until((start + offset).into()).await;
            let bot = BotSpec {
                number,
                behaviour,
                pace,
                tokens: tokens.as_ref(),
                borders,
                targets,
            };
            drive(bot, &endpoint, server, &shared, end).await;
        });
    }

    let mut series = Vec::new();
    let mut display = Display::new(options.progress, options.bots);
    // Samples count from the warm-up's end to the run's (each bot hands its samples over
    // every `FLUSH_EVERY`), and so does bot-time, to the part of a second.
    let warm_at = start + options.warmup;
    let mut next_second = start + Duration::from_secs(1);
    while next_second <= end {
        if warm_at < next_second && !lock(&shared).measuring {
            tokio::time::sleep_until(warm_at.into()).await;
            lock(&shared).measuring = true;
        }
        tokio::time::sleep_until(next_second.into()).await;
        let t = next_second.duration_since(start).as_secs();
        let second = {
            let mut agg = lock(&shared);
            let mut second = std::mem::take(&mut agg.second);
            second.t = t;
            second.connected = agg.connected_now;
            second.rtt_p99_ms = Percentiles::of(&agg.second_rtt_us).p99_ms;
            agg.second_rtt_us.reset();
            if agg.measuring {
                let from = warm_at.max(next_second - Duration::from_secs(1));
                agg.bot_seconds +=
                    agg.connected_now as f64 * next_second.duration_since(from).as_secs_f64();
            }
            second
        };
        display.show(&second, &lock(&shared));
        series.push(second);
        next_second += Duration::from_secs(1);
    }
    display.finish();
    {
        // The run's last part of a second (a duration that is not whole seconds): its
        // bytes and snapshots are counted, so its bot-time is too.
        let last_second = next_second - Duration::from_secs(1);
        if warm_at < end && !lock(&shared).measuring {
            tokio::time::sleep_until(warm_at.into()).await;
            lock(&shared).measuring = true;
        }
        tokio::time::sleep_until(end.into()).await;
        let mut agg = lock(&shared);
        if agg.measuring && end > last_second {
            let tail = end.duration_since(warm_at.max(last_second)).as_secs_f64();
            agg.bot_seconds += agg.connected_now as f64 * tail;
        }
    }

    // Bots leave at the end by themselves (every login gives up at the end); one slow to
    // leave is cut off.
    let _ = tokio::time::timeout_at((end + LEAVE_GRACE).into(), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
    endpoint.close(0u32.into(), b"load test over");
    {
        // Every bot is counted once: a failed login, or a session's end. One that is in
        // neither (its task panicked, or it had not left when cut off) is a dropped
        // session too: the run must not pass on it.
        let mut agg = lock(&shared);
        let failed: u64 = agg.failed.values().sum();
        let lost = options.bots.saturating_sub(failed + agg.ended);
        if lost > 0 {
            *agg.dropped.entry("bot_lost".to_owned()).or_default() += lost;
        }
    }

    let server_figures = match (&options.metrics_url, &scraped_start) {
        (Some(url), Some(first)) => {
            let last = scrape(url)
                .await
                .context("scraping the server's metrics at the end");
            // The server may be gone (a test kills it): the bots' view still stands.
            last.ok().map(|last| between(first, &last))
        }
        _ => None,
    };
    let agg = lock(&shared);
    // Rates are per connected bot-second after the warm-up, so bots that dropped or joined
    // late count for the time they were there.
    let bot_secs = agg.bot_seconds.max(1.0);
    Ok(Report {
        server: options.server.to_string(),
        bots: options.bots,
        behaviour: format!("{:?}", options.behaviour).to_lowercase(),
        input_pace: format!("{:?}", options.pace).to_lowercase(),
        duration_secs: options.duration.as_secs_f64(),
        warmup_secs: options.warmup.as_secs_f64(),
        connected: agg.connected_ever,
        peak_connected: agg.peak_connected,
        failed_to_connect: agg.failed.clone(),
        dropped: agg.dropped.clone(),
        rtt: Percentiles::of(&agg.rtt_us),
        snapshot_interval: Percentiles::of(&agg.interval_us),
        bytes_in_per_bot_per_sec: agg.bytes_in as f64 / bot_secs,
        bytes_out_per_bot_per_sec: agg.bytes_out as f64 / bot_secs,
        snapshots_per_bot_per_sec: agg.snapshots as f64 / bot_secs,
        violations: Violation::ALL
            .iter()
            .filter_map(|v| agg.violations.get(v).map(|n| (violation_name(*v), *n)))
            .collect::<BTreeMap<_, _>>(),
        server_figures,
        series,
        crossings: agg.crossings,
        crossings_per_bot_min: agg.crossings_per_bot_min.unwrap_or(0),
        crossings_per_bot_max: agg.crossings_per_bot_max,
        fewest_crossings_bot: agg.fewest_crossings_bot.clone(),
        own_missing_max_ms: agg.own_missing_max.as_secs_f64() * 1_000.0,
        own_missing_episodes: agg.own_missing_episodes,
    })
}

fn violation_name(violation: Violation) -> String {
    serde_json::to_value(violation)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{violation:?}"))
}

/// Counts that one bot adds to the aggregate.
#[derive(Default)]
struct Tally {
    bytes_in: u64,
    bytes_out: u64,
}

/// Who one bot is.
struct BotSpec<'a> {
    number: u64,
    behaviour: Behaviour,
    pace: InputPace,
    tokens: Option<&'a Tokens>,
    borders: Option<Arc<Borders>>,
    targets: Option<Arc<BorderTargets>>,
}

/// One bot's session: connect, log in, play until `end`, leave.
async fn drive(
    BotSpec {
        number,
        behaviour,
        pace,
        tokens,
        borders,
        targets,
    }: BotSpec<'_>,
    endpoint: &quinn::Endpoint,
    server: SocketAddr,
    shared: &Shared,
    end: Instant,
) {
    let deadline = (Instant::now() + LOGIN_TIMEOUT).min(end);
    let name = Bot::name(number);
    let token = match tokens.map(|tokens| tokens.mint(&name)).transpose() {
        Ok(token) => token,
        Err(_) => {
            *lock(shared)
                .failed
                .entry("token_not_minted".to_owned())
                .or_default() += 1;
            return;
        }
    };
    // Set once QUIC's handshake is done, so that a timeout tells which part stalled.
    let mut connected = false;
    let login = tokio::time::timeout_at(
        deadline.into(),
        login(endpoint, server, &name, token, &mut connected),
    )
    .await;
    let (conn, mut send, recv, mut reader, welcome) = match login {
        Ok(Ok(session)) => session,
        Ok(Err(err)) => {
            *lock(shared)
                .failed
                .entry(client_error_reason(&err))
                .or_default() += 1;
            return;
        }
        Err(_) => {
            let reason = if connected {
                "timeout_before_welcome"
            } else {
                "timeout"
            };
            *lock(shared).failed.entry(reason.to_owned()).or_default() += 1;
            return;
        }
    };
    {
        let mut agg = lock(shared);
        agg.connected_now += 1;
        agg.connected_ever += 1;
        agg.peak_connected = agg.peak_connected.max(agg.connected_now);
    }
    let mut bot = match borders {
        Some(borders) => Bot::with_borders(behaviour, number, borders),
        None => Bot::new(behaviour, number),
    };
    if let Some(targets) = targets {
        bot = bot.with_targets(targets);
    }
    bot = bot.with_pace(pace);
    let welcomed = Instant::now();
    bot.on_welcome(welcome, welcomed);
    // Silence counts from the last snapshot applied: datagrams that cannot be applied
    // (their baseline unknown) are not hearing from the server.
    let silent_for = |bot: &Bot, now: Instant| {
        now.saturating_duration_since(bot.last_applied.unwrap_or(welcomed))
    };
    let mut tally = Tally::default();
    // The loop keeps its futures between events: a snapshot datagram (20 a second) wakes
    // it, and only the datagram's read is made again; the timer is moved only when the
    // bot's next wake changes, and the reliable stream (quiet after the login) is read by
    // a task of its own. Samples reach the shared aggregate every `FLUSH_EVERY`, not one
    // lock per datagram.
    let mut chunks = read_stream(recv);
    let mut armed = next_wake(&bot, Instant::now() + IDLE_WAKE, end);
    let sleep = tokio::time::sleep_until(armed.into());
    tokio::pin!(sleep);
    let datagram = conn.read_datagram();
    tokio::pin!(datagram);
    let mut flush_at = Instant::now() + FLUSH_EVERY;
    let dropped: Option<String> = loop {
        tokio::select! {
            // The timer first: a bot whose datagrams never pause still sends its inputs.
            biased;
            () = &mut sleep => {
                let now = Instant::now();
                if now >= end {
                    break (silent_for(&bot, now) >= END_SILENCE)
                        .then(|| "server_silent".to_owned());
                }
                if silent_for(&bot, now) >= SILENCE_LIMIT {
                    break Some("server_silent".to_owned());
                }
                if let Err(reason) = send_input(&mut bot, now, &conn, &mut tally) {
                    break Some(reason);
                }
            }
            read = &mut datagram => {
                datagram.set(conn.read_datagram());
                match read {
                    Ok(bytes) => {
                        let now = Instant::now();
                        tally.bytes_in += bytes.len() as u64;
                        bot.on_datagram(&bytes, now);
                        // An input paced by the snapshots goes out with this one's
                        // acknowledgement, without waiting for the timer.
                        if pace == InputPace::Snapshot
                            && let Err(reason) = send_input(&mut bot, now, &conn, &mut tally)
                        {
                            break Some(reason);
                        }
                    }
                    Err(err) => break Some(connection_reason(&err)),
                }
            }
            chunk = chunks.recv() => match chunk {
                Some(bytes) => {
                    tally.bytes_in += bytes.len() as u64;
                    reader.push(&bytes);
                    match answer_frames(&mut bot, &mut reader, &mut send, &mut tally).await {
                        Ok(()) => {}
                        Err(reason) => break Some(reason),
                    }
                }
                None => break Some(match conn.close_reason() {
                    Some(err) => connection_reason(&err),
                    None => "stream_closed".to_owned(),
                }),
            },
        }
        // Without an input due, the timer stays where it is until it fires.
        let idle = if armed <= Instant::now() {
            Instant::now() + IDLE_WAKE
        } else {
            armed
        };
        let wake = next_wake(&bot, idle, end);
        if wake != armed {
            armed = wake;
            sleep.as_mut().reset(wake.into());
        }
        let now = Instant::now();
        if now >= flush_at {
            flush(&mut bot, &mut tally, shared);
            flush_at = now + FLUSH_EVERY;
        }
    };
    flush(&mut bot, &mut tally, shared);
    {
        let mut agg = lock(shared);
        agg.connected_now = agg.connected_now.saturating_sub(1);
        if let Some(reason) = dropped {
            *agg.dropped.entry(reason).or_default() += 1;
        }
        agg.ended += 1;
        agg.add_bot_totals(&bot, Instant::now());
    }
    // Leave politely; the server closes the connection.
    if let Ok(frame) = encode_frame(&ClientMessage::Leave) {
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            let _ = send.write_all(&frame).await;
            conn.closed().await
        })
        .await;
    }
    conn.close(0u32.into(), b"bye");
}

type Session = (Connection, SendStream, RecvStream, FrameReader, Welcome);

async fn login(
    endpoint: &quinn::Endpoint,
    server: SocketAddr,
    name: &str,
    token: Option<String>,
    connected: &mut bool,
) -> Result<Session, ClientError> {
    let (conn, mut send, mut recv) = client::open(endpoint, server).await?;
    *connected = true;
    for message in [
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
        },
        ClientMessage::Login {
            name: name.to_owned(),
            token: token.clone(),
        },
    ] {
        let frame = encode_frame(&message).map_err(|err| ClientError::Protocol(err.to_string()))?;
        send.write_all(&frame)
            .await
            .map_err(|err| ClientError::Closed(err.to_string()))?;
    }
    let mut reader = FrameReader::new();
    let mut buf = vec![0u8; 4096];
    loop {
        match reader.next_message::<ServerMessage>() {
            Ok(Some(ServerMessage::Welcome(welcome))) => {
                return Ok((conn, send, recv, reader, welcome));
            }
            Ok(Some(ServerMessage::Disconnect { reason, text })) => {
                return Err(ClientError::Disconnected { reason, text });
            }
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(err) => return Err(ClientError::Protocol(err.to_string())),
        }
        match recv.read(&mut buf).await {
            Ok(Some(n)) => reader.push(&buf[..n]),
            Ok(None) | Err(_) => {
                return Err(match conn.close_reason().as_ref().and_then(close_reason) {
                    Some((reason, text)) => ClientError::Disconnected { reason, text },
                    None => ClientError::Closed("before the welcome".to_owned()),
                });
            }
        }
    }
}

/// Handles every whole control frame; `Err(reason)` when the server ended the session.
async fn answer_frames(
    bot: &mut Bot,
    reader: &mut FrameReader,
    send: &mut SendStream,
    tally: &mut Tally,
) -> Result<(), String> {
    loop {
        match reader.next_message::<ServerMessage>() {
            Ok(None) => return Ok(()),
            Ok(Some(ServerMessage::Disconnect { reason, .. })) => {
                return Err(reason.name().to_owned());
            }
            Ok(Some(message)) => {
                if let Some(reply) = bot.on_message(&message, Instant::now())
                    && let Ok(frame) = encode_frame(&reply)
                {
                    tally.bytes_out += frame.len() as u64;
                    send.write_all(&frame)
                        .await
                        .map_err(|_| "stream_closed".to_owned())?;
                }
            }
            Err(_) => return Err("bad_frame".to_owned()),
        }
    }
}

/// When the bot's loop wakes without a datagram: its next input or order, or else `idle`
/// (to check that the server still talks); never after `end`.
/// Sends the bot's input if one is due `now`; the reason the connection dropped if the
/// send failed.
fn send_input(
    bot: &mut Bot,
    now: Instant,
    conn: &quinn::Connection,
    tally: &mut Tally,
) -> Result<(), String> {
    if let Some(input) = bot.next_input(now)
        && let Ok(bytes) = encode_datagram(&ClientDatagram::Input(input))
    {
        tally.bytes_out += bytes.len() as u64;
        conn.send_datagram(bytes.into()).map_err(|err| match err {
            // The connection's own reason: a server that closed it while this input was
            // on its way said why (shutdown, kicked), and that is the reason it dropped.
            quinn::SendDatagramError::ConnectionLost(err) => connection_reason(&err),
            err => format!("send_failed: {err}"),
        })?;
    }
    Ok(())
}

fn next_wake(bot: &Bot, idle: Instant, end: Instant) -> Instant {
    bot.next_wake().unwrap_or(idle).min(end)
}

/// Reads the reliable stream in a task of its own and hands on what arrives; the channel
/// closes when the stream ends or fails.
fn read_stream(mut recv: RecvStream) -> tokio::sync::mpsc::Receiver<bytes::Bytes> {
    let (chunks, received) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        while let Ok(Some(chunk)) = recv.read_chunk(STREAM_CHUNK, true).await {
            if chunks.send(chunk.bytes).await.is_err() {
                break;
            }
        }
    });
    received
}

/// Moves a bot's samples and counts into the aggregate.
fn flush(bot: &mut Bot, tally: &mut Tally, shared: &Shared) {
    let mut agg = lock(shared);
    let measuring = agg.measuring;
    let agg = &mut *agg;
    for sample in bot.drain() {
        match sample {
            Sample::Rtt(rtt) => {
                Aggregate::record(&mut agg.second_rtt_us, rtt);
                if measuring {
                    Aggregate::record(&mut agg.rtt_us, rtt);
                }
            }
            Sample::SnapshotInterval(interval) => {
                agg.second.snapshots += 1;
                if measuring {
                    agg.snapshots += 1;
                    Aggregate::record(&mut agg.interval_us, interval);
                }
            }
            Sample::Violation(violation) => {
                agg.second.violations += 1;
                *agg.violations.entry(violation).or_default() += 1;
            }
        }
    }
    agg.second.bytes_in += tally.bytes_in;
    agg.second.bytes_out += tally.bytes_out;
    if measuring {
        agg.bytes_in += tally.bytes_in;
        agg.bytes_out += tally.bytes_out;
    }
    *tally = Tally::default();
}

/// A server's refusal of a login as a report's reason: its name, and its text when it
/// sent one (the per-address limit and a full server both say `server_full`; the text
/// tells them apart), cut to 120 characters.
fn told(reason: DisconnectReason, text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return reason.name().to_owned();
    }
    let cut: String = text.chars().take(120).collect();
    format!("{}: {cut}", reason.name())
}

fn client_error_reason(err: &ClientError) -> String {
    match err {
        ClientError::Disconnected { reason, text } => told(*reason, text),
        ClientError::Connect(text) if text.contains("timed out") => "timeout".to_owned(),
        // The cause whole: operators need to tell a refusal from a TLS failure, and which.
        ClientError::Connect(text) => format!("connect_failed: {text}"),
        ClientError::Closed(text) => format!("closed: {text}"),
        ClientError::Protocol(text) => format!("protocol_error: {text}"),
        ClientError::TimedOut(_) => "timeout_before_welcome".to_owned(),
    }
}

fn connection_reason(err: &ConnectionError) -> String {
    // A session's end is counted by its reason's name alone, as `answer_frames` counts a
    // `Disconnect` frame: the frame and the close that follows carry different texts.
    if let Some((reason, _)) = close_reason(err) {
        return reason.name().to_owned();
    }
    match err {
        ConnectionError::TimedOut => "timed_out",
        ConnectionError::Reset => "reset",
        ConnectionError::ApplicationClosed(_) | ConnectionError::ConnectionClosed(_) => "closed",
        ConnectionError::LocallyClosed => "locally_closed",
        _ => "connection_lost",
    }
    .to_owned()
}

/// Live progress: a bar on a terminal, a line per second otherwise.
struct Display {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    bots: u64,
}

impl Display {
    fn new(progress: Progress, bots: u64) -> Display {
        let terminal = std::io::stderr().is_terminal();
        let bar = (progress == Progress::Auto && terminal).then(|| {
            let bar = indicatif::ProgressBar::new(bots);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed:>4} [{bar:30}] {pos}/{len} bots {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Display {
            bar,
            lines: progress == Progress::Auto && !terminal,
            bots,
        }
    }

    fn show(&mut self, second: &Second, agg: &Aggregate) {
        let failures: u64 = agg.failed.values().sum::<u64>() + agg.dropped.values().sum::<u64>();
        let message = format!(
            "| {} failures | {} snapshots/s | RTT p99 {:.1} ms | {:.0} kB/s in",
            failures,
            second.snapshots,
            second.rtt_p99_ms,
            second.bytes_in as f64 / 1e3
        );
        if let Some(bar) = &self.bar {
            bar.set_position(second.connected);
            bar.set_message(message);
        } else if self.lines {
            eprintln!(
                "t={:>4}s {}/{} bots {message}",
                second.t, second.connected, self.bots
            );
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
