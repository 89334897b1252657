//! The `loadtest` binary end to end: its exit code and report against endpoints that need
//! no game server. A closed port, a QUIC server with another certificate, and a server
//! that logs the bots in and then falls silent (as a killed one does) must each fail the
//! run (exit 2), even without `--slo`. Each run lasts a few seconds.
//!
//! The swarm against the real server (a healthy run, a server shut down mid-run) is tested
//! in the server's test suite, which may depend on this crate; this crate does not depend
//! on the server.

// Test setup failures panic: that is the report.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use protocol::codec::{FrameReader, decode_datagram, encode_datagram, encode_frame};
use protocol::{
    Bounds, ClientDatagram, ClientMessage, Command, EntityKind, EntityState, Motion, NetId,
    PROTOCOL_VERSION, QPos, ServerDatagram, ServerMessage, Snapshot, Welcome,
};
use quinn::crypto::rustls::QuicServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

mod ends;

/// Runs the built `loadtest` with `args` (plus `--quiet`) and waits for it, at most 30 s.
async fn loadtest(args: &[&str]) -> Output {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args(args)
        .arg("--quiet")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the swarm exits by itself")
        .unwrap()
}

/// What a fake server does with a session once it has logged it in.
#[derive(Clone, Copy)]
enum Play {
    /// Never answers the login: QUIC's handshake is done, the welcome never comes.
    NoWelcome,
    /// Hears nothing more, though QUIC keeps the connection open: what a bot sees of a
    /// server that died.
    Silent,
    /// Walks the character at 5 m/s towards each point it is ordered to, from (45, 50),
    /// with a full snapshot every 50 ms; the snapshots of ticks 40 to 45 (2 to 2.3 s) leave
    /// the character out, as a handoff gone wrong would.
    Walker,
    /// The walker up to this tick, then nothing more (the connection stays open): a
    /// server that died late in the run.
    WalkerUntil(u64),
    /// Snapshots every 50 ms, each a delta against a tick the client never had: heard,
    /// never applied.
    Unapplicable,
    /// Ten full snapshots of the character beside a body of the largest radius, then
    /// nothing more.
    GiantThenSilent,
}

/// A QUIC endpoint on 127.0.0.1 speaking the protocol's ALPN with a fresh self-signed
/// certificate. Each connection is logged in (hello, login, welcome) and then played with.
fn fake_server(play: Play) -> SocketAddr {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let mut tls = rustls::ServerConfig::builder_with_provider(client::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    tls.alpn_protocols = vec![protocol::ALPN.to_vec()];
    let crypto = QuicServerConfig::try_from(tls).unwrap();
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = endpoint.local_addr().unwrap();
    tokio::spawn(async move {
        while let Some(incoming) = endpoint.accept().await {
            tokio::spawn(async move {
                let Ok(conn) = incoming.await else { return };
                let Ok((mut send, mut recv)) = conn.accept_bi().await else {
                    return;
                };
                let mut reader = FrameReader::new();
                let mut buf = [0u8; 4096];
                loop {
                    match reader.next_message::<ClientMessage>() {
                        Ok(Some(ClientMessage::Login { .. })) => break,
                        Ok(Some(_)) => continue,
                        Ok(None) => {}
                        Err(_) => return,
                    }
                    match recv.read(&mut buf).await {
                        Ok(Some(n)) => reader.push(&buf[..n]),
                        _ => return,
                    }
                }
                if matches!(play, Play::NoWelcome) {
                    conn.closed().await;
                    return;
                }
                let welcome = ServerMessage::Welcome(Welcome {
                    version: PROTOCOL_VERSION,
                    entity: ME,
                    tick_rate_hz: 20,
                    map_id: "fake".to_owned(),
                    bounds: Bounds {
                        min_x: 0.0,
                        min_y: 0.0,
                        max_x: 100.0,
                        max_y: 100.0,
                    },
                    view_radius_m: 30.0,
                });
                if send
                    .write_all(&encode_frame(&welcome).unwrap())
                    .await
                    .is_err()
                {
                    return;
                }
                match play {
                    Play::Silent | Play::NoWelcome => {
                        conn.closed().await;
                    }
                    Play::Walker => walk(&conn, u64::MAX).await,
                    Play::WalkerUntil(last) => walk(&conn, last).await,
                    Play::Unapplicable => ends::unapplicable(&conn).await,
                    Play::GiantThenSilent => ends::giant(&conn).await,
                }
            });
        }
    });
    addr
}

/// The character of every fake session.
const ME: NetId = NetId {
    index: 1,
    generation: 0,
};

/// [`Play::Walker`]'s session, until the client goes, or up to tick `last` (then it
/// says nothing more).
async fn walk(conn: &quinn::Connection, last: u64) {
    let (mut pos, mut target, mut seq) = ((45.0f32, 50.0f32), (45.0f32, 50.0f32), 0u32);
    let mut ticks = tokio::time::interval(Duration::from_millis(50));
    for tick in 1u64.. {
        if tick > last {
            conn.closed().await;
            return;
        }
        loop {
            tokio::select! {
                biased;
                datagram = conn.read_datagram() => {
                    let Ok(bytes) = datagram else { return };
                    if let Ok(ClientDatagram::Input(input)) = decode_datagram(&bytes) {
                        seq = seq.max(input.seq);
                        if let Command::MoveTo { x, y } = input.command {
                            target = (x, y);
                        }
                    }
                }
                _ = ticks.tick() => break,
            }
        }
        let (dx, dy) = (target.0 - pos.0, target.1 - pos.1);
        let step = (5.0 * 0.05f32).min(dx.hypot(dy));
        if step > 0.0 {
            let length = dx.hypot(dy);
            pos = (pos.0 + dx / length * step, pos.1 + dy / length * step);
        }
        let me = EntityState {
            id: ME,
            kind: EntityKind::Player,
            radius_cm: 40,
            pos: QPos::from_metres(pos.0, pos.1),
            motion: Motion::Moving,
        };
        let snapshot = Snapshot {
            tick,
            baseline_tick: None,
            last_input_seq: seq,
            entered: if (40..46).contains(&tick) {
                Vec::new()
            } else {
                vec![me]
            },
            changed: Vec::new(),
            left: Vec::new(),
        };
        let bytes = encode_datagram(&ServerDatagram::Snapshot(snapshot)).unwrap();
        if conn.send_datagram(bytes.into()).is_err() {
            return;
        }
    }
}

fn silent_server() -> SocketAddr {
    fake_server(Play::Silent)
}

#[tokio::test]
async fn no_server_at_the_address_fails_the_run() {
    // A short run with the default ramp and warm-up: they scale down to fit it.
    let out = loadtest(&[
        "--server",
        "127.0.0.1:1",
        "--bots",
        "3",
        "--duration",
        "3",
        "--insecure-local",
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("bots connected      0 of 3"), "{stdout}");
    assert!(stdout.contains("failed to connect   3"), "{stdout}");
    assert!(
        stdout.contains("SLO missed: failed connections: 3"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_server_with_another_certificate_fails_the_run_with_the_whole_reason() {
    let addr = silent_server().to_string();
    let out = loadtest(&[
        "--server",
        &addr,
        "--bots",
        "2",
        "--duration",
        "2",
        "--cert-fingerprint",
        &"00".repeat(32),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("failed to connect   2"), "{stdout}");
    // The reason names the certificate check, past the first 60 characters of the error.
    let reason = stdout
        .lines()
        .find(|line| line.contains("connect_failed: "))
        .expect("a connect failure with its reason");
    assert!(
        reason.contains("ApplicationVerificationFailure"),
        "{reason}"
    );
}

/// Two bots against `addr` for `seconds`, all logging in at once.
async fn two_bots(addr: &str, seconds: &str) -> Output {
    loadtest(&[
        "--server",
        addr,
        "--bots",
        "2",
        "--duration",
        seconds,
        "--ramp",
        "0",
        "--insecure-local",
    ])
    .await
}

#[tokio::test]
async fn a_login_never_answered_fails_after_the_quic_handshake() {
    let addr = fake_server(Play::NoWelcome).to_string();
    let out = two_bots(&addr, "3").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("bots connected      0 of 2"), "{stdout}");
    // Told apart from a QUIC handshake that never finished (`timeout`).
    assert!(
        stdout.contains("failed to connect   2 (timeout_before_welcome: 2)"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_server_that_falls_silent_fails_the_run() {
    let addr = silent_server().to_string();
    let out = two_bots(&addr, "5").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("bots connected      2 of 2"), "{stdout}");
    assert!(stdout.contains("server_silent: 2"), "{stdout}");
    assert!(
        stdout.contains("SLO missed: dropped sessions: 2"),
        "{stdout}"
    );
}

/// Arguments the parser refuses exit 1, like every reason the run cannot start: a typo
/// must not look like a missed gate (exit 2). `--help` exits 0.
#[tokio::test]
async fn refused_arguments_exit_1_not_2() {
    let cases: [&[&str]; 5] = [
        &["--bots", "1", "--insecure-local"],
        &["--server", "127.0.0.1:1", "--bots", "1", "--no-such-flag"],
        &["--server", "127.0.0.1:1", "--bots", "one"],
        &[
            "--server",
            "127.0.0.1:1",
            "--bots",
            "1",
            "--behaviour",
            "dance",
        ],
        &[
            "--server",
            "127.0.0.1:1",
            "--bots",
            "1",
            "--insecure-local",
            "--cert-fingerprint",
            "00",
        ],
    ];
    for args in cases {
        let out = loadtest(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    }
    // A ramp as long as the run would start the last bot as the run ends.
    let args = [
        "--server",
        "127.0.0.1:1",
        "--bots",
        "2",
        "--insecure-local",
        "--duration",
        "3",
        "--ramp",
        "3",
    ];
    let out = loadtest(&args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--ramp (3 s) must be shorter than --duration (3 s)"),
        "{stderr}"
    );
    let help = loadtest(&["--help"]).await;
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--bots"));
}

/// A file in the system's temporary directory, unique to this test process.
fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("loadtest-it-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

const TWO_ZONES: &str = "nats = \"nats://127.0.0.1:4222\"\n\
    [[zones]]\nname = \"west\"\nregion = [0, 0, 50, 100]\n\
    [[zones]]\nname = \"east\"\nregion = [50, 0, 100, 100]\n";

#[tokio::test]
async fn a_bad_cluster_or_a_border_run_without_one_is_a_setup_error() {
    let overlapping = temp_file(
        "overlap.toml",
        &TWO_ZONES.replace("[50, 0, 100, 100]", "[40, 0, 100, 100]"),
    );
    let unparsable = temp_file("parse.toml", "[[zones]]\nname = 3\n");
    let lone = temp_file(
        "lone.toml",
        "[[zones]]\nname = \"all\"\nregion = [0, 0, 9, 9]\n",
    );
    let missing = std::env::temp_dir().join("loadtest-it-no-such-cluster.toml");
    let path = |p: &std::path::Path| p.display().to_string();
    let cases = [
        (None, "--behaviour border needs --cluster FILE"),
        (
            Some(path(&overlapping)),
            "zones \"west\" and \"east\" overlap",
        ),
        (
            Some(path(&unparsable)),
            "does not parse at line 2, column 8",
        ),
        (Some(path(&lone)), "share no border"),
        (Some(path(&missing)), "cannot read cluster file"),
    ];
    for (cluster, expected) in cases {
        let mut args = vec![
            "--server",
            "127.0.0.1:1",
            "--bots",
            "1",
            "--insecure-local",
            "--behaviour",
            "border",
        ];
        if let Some(cluster) = &cluster {
            args.extend(["--cluster", cluster]);
        }
        let out = loadtest(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
        if let Some(cluster) = &cluster {
            assert!(
                stderr.contains(cluster.as_str()),
                "names the file: {stderr}"
            );
        }
    }
    for file in [overlapping, unparsable, lone] {
        let _ = std::fs::remove_file(file);
    }
}

#[tokio::test]
async fn a_border_run_reports_crossings_and_the_missing_character() {
    let addr = silent_server().to_string();
    let cluster = temp_file("two.toml", TWO_ZONES);
    let report =
        std::env::temp_dir().join(format!("loadtest-it-{}-report.json", std::process::id()));
    let out = loadtest(&[
        "--server",
        &addr,
        "--bots",
        "2",
        "--duration",
        "1",
        "--insecure-local",
        "--behaviour",
        "border",
        "--cluster",
        &cluster.display().to_string(),
        "--report",
        &report.display().to_string(),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("border crossings    0 (per bot 0 to 0)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("own character gone  0 times, longest 0 ms"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["behaviour"], "border");
    for key in [
        "crossings",
        "crossings_per_bot_min",
        "crossings_per_bot_max",
        "own_missing_episodes",
    ] {
        assert_eq!(json[key], 0, "{key}: {json}");
    }
    assert_eq!(json["own_missing_max_ms"], 0.0);
    let _ = std::fs::remove_file(cluster);
    let _ = std::fs::remove_file(report);
}

#[tokio::test]
async fn border_bots_walk_across_and_back_and_a_missing_character_is_timed() {
    let addr = fake_server(Play::Walker).to_string();
    let cluster = temp_file("walk.toml", TWO_ZONES);
    let report = std::env::temp_dir().join(format!("loadtest-it-{}-walk.json", std::process::id()));
    let out = loadtest(&[
        "--server",
        &addr,
        "--bots",
        "3",
        "--duration",
        "10",
        "--ramp",
        "0",
        "--insecure-local",
        "--behaviour",
        "border",
        "--cluster",
        &cluster.display().to_string(),
        "--report",
        &report.display().to_string(),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(cluster);
    let _ = std::fs::remove_file(report);
    println!("{stdout}");
    assert_eq!(json["connected"], 3, "{stdout}{stderr}");
    // Each trip is 6 to 12 m across at 5 m/s, a new one every 3 to 6 s or on arrival: in
    // 10 s every bot crosses at least twice (out and back).
    let least = json["crossings_per_bot_min"].as_u64().unwrap();
    assert!(least >= 2, "{stdout}");
    assert!(json["crossings"].as_u64().unwrap() >= 3 * least, "{stdout}");
    // Six snapshots without the character, 50 ms apart: 300 ms from the first of them to
    // the next with it, once per bot.
    assert_eq!(json["own_missing_episodes"], 3, "{stdout}");
    let longest = json["own_missing_max_ms"].as_f64().unwrap();
    assert!((250.0..450.0).contains(&longest), "{stdout}");
    // The only violations: those six snapshots of each bot.
    assert_eq!(json["violations"]["self_not_in_view"], 18, "{stdout}");
    assert_eq!(json["violations"].as_object().unwrap().len(), 1, "{stdout}");
    assert_eq!(out.status.code(), Some(2), "{stdout}");
}
