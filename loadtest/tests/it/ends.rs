//! How runs end: a server that stops talking in the run's last seconds, one whose
//! snapshots never apply, one that sent odd numbers before falling silent, and the
//! per-bot rates of a run that is not whole seconds long. Each must be told as it is.

use std::process::Output;
use std::time::Duration;

use protocol::codec::encode_datagram;
use protocol::{EntityKind, EntityState, Motion, QPos, ServerDatagram, Snapshot};

use super::{ME, Play, TWO_ZONES, fake_server, loadtest, temp_file, two_bots};

/// [`Play::Unapplicable`]'s session: deltas against a tick never sent, until the client
/// goes.
pub(super) async fn unapplicable(conn: &quinn::Connection) {
    for tick in 1u64.. {
        let snapshot = Snapshot {
            tick,
            baseline_tick: Some(1_000_000),
            last_input_seq: 0,
            entered: Vec::new(),
            changed: Vec::new(),
            left: Vec::new(),
        };
        if !send_then_wait(conn, snapshot).await {
            return;
        }
    }
}

/// Sends `snapshot`, then waits a tick; `false` once the connection is gone.
async fn send_then_wait(conn: &quinn::Connection, snapshot: Snapshot) -> bool {
    let bytes = encode_datagram(&ServerDatagram::Snapshot(snapshot)).unwrap();
    if conn.send_datagram(bytes.into()).is_err() {
        return false;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    true
}

/// [`Play::GiantThenSilent`]'s session.
pub(super) async fn giant(conn: &quinn::Connection) {
    let me = EntityState {
        id: ME,
        kind: EntityKind::Player,
        radius_cm: 40,
        pos: QPos::from_metres(20.0, 20.0),
        motion: Motion::Idle,
    };
    let mut other = me;
    other.id.index = 2;
    other.radius_cm = u16::MAX;
    for tick in 1..=10u64 {
        let snapshot = Snapshot {
            tick,
            baseline_tick: None,
            last_input_seq: 0,
            entered: vec![me, other],
            changed: Vec::new(),
            left: Vec::new(),
        };
        if !send_then_wait(conn, snapshot).await {
            return;
        }
    }
    conn.closed().await;
}

fn text(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    format!("{stdout}{stderr}")
}

/// Two bots against a fake server playing `play` for `seconds`: the run fails, its
/// sessions dropped as silent.
async fn fails_as_silent(play: Play, seconds: &str) {
    let addr = fake_server(play).to_string();
    let out = two_bots(&addr, seconds).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("server_silent"), "{}", text(&out));
}

/// A server that stops sending 1.5 s into a 4 s run (silent for less than the 3 s that
/// drop a session mid-run) fails the run: a session still silent at the end is dropped.
#[tokio::test]
async fn a_server_silent_in_the_last_seconds_fails_the_run() {
    fails_as_silent(Play::WalkerUntil(30), "4").await;
}

/// Snapshots that never apply (deltas against a tick the bot never had) are not hearing
/// from the server: the sessions are dropped as silent.
#[tokio::test]
async fn snapshots_that_never_apply_fail_the_run() {
    fails_as_silent(Play::Unapplicable, "5").await;
}

/// A bot that saw a body of the largest radius beside its character, and then a server
/// that fell silent for good: whatever the numbers, the session is dropped and counted
/// (with `--cluster`, its end sums up the walk beside that body).
#[tokio::test]
async fn a_silent_server_fails_the_run_whatever_radius_it_sent() {
    let addr = fake_server(Play::GiantThenSilent).to_string();
    let cluster = temp_file("giant.toml", TWO_ZONES);
    let cluster_arg = cluster.display().to_string();
    let out = loadtest(&[
        "--server",
        &addr,
        "--bots",
        "1",
        "--duration",
        "6",
        "--ramp",
        "0",
        "--insecure-local",
        "--behaviour",
        "idle",
        "--cluster",
        &cluster_arg,
    ])
    .await;
    let _ = std::fs::remove_file(cluster);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("server_silent: 1"), "{}", text(&out));
    assert!(!text(&out).contains("panicked"), "{}", text(&out));
}

/// The bytes in per bot per second of a run: the same server measured over 4 s and over
/// 1.5 s gives about the same rate (the run's last half second counts as bot-time too).
#[tokio::test]
async fn per_bot_rates_do_not_depend_on_a_part_of_a_second() {
    let rate = |out: &Output| -> f64 {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.contains("per bot per second"))
            .unwrap_or_else(|| panic!("{stdout}"));
        line.split_whitespace().nth(4).unwrap().parse().unwrap()
    };
    let mut rates = Vec::new();
    for seconds in ["4", "1.5"] {
        let addr = fake_server(Play::Walker).to_string();
        let out = loadtest(&[
            "--server",
            &addr,
            "--bots",
            "10",
            "--duration",
            seconds,
            "--ramp",
            "0",
            "--warmup",
            "0.5",
            "--insecure-local",
            "--behaviour",
            "idle",
        ])
        .await;
        rates.push(rate(&out));
    }
    let ratio = rates[1] / rates[0];
    assert!(
        (0.7..1.4).contains(&ratio),
        "bytes in per bot per second: {rates:?}"
    );
}

/// `client::Client::connect` against a server that never sends the welcome (its QUIC
/// stack answers the client's keep-alives, so the connection never idles out) gives up.
#[tokio::test]
async fn a_client_gives_up_on_a_server_that_never_welcomes() {
    let addr = fake_server(Play::NoWelcome);
    let endpoint = client::endpoint(addr, client::Trust::AnyCertificate).unwrap();
    let connecting = client::Client::connect(&endpoint, addr, "patient");
    let waited = client::WELCOME_TIMEOUT + Duration::from_secs(10);
    let result = tokio::time::timeout(waited, connecting).await;
    match result {
        Ok(Err(client::ClientError::TimedOut(_))) => {}
        Ok(other) => panic!("expected a timeout, got {:?}", other.map(|_| "a client")),
        Err(_) => panic!("Client::connect still waiting after {waited:?}"),
    }
}
