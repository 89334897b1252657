//! Logins against a server with `auth_public_key`, over real QUIC on 127.0.0.1: each kind
//! of bad token is refused with `LoginRejected`, its reason and its count; a valid token
//! gets in; one live session per account; the swarm logs its bots in with minted tokens;
//! `server keygen` and `server token` make keys and tokens the server takes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use auth::{CLOCK_SKEW_SECS, PublicKey, SigningKey};
use client::Trust;
use protocol::codec::{FrameReader, encode_frame};
use protocol::{ClientMessage, DisconnectReason, PROTOCOL_VERSION, ServerMessage};
use server::config::Config;
use server::run::{Running, start};
use server::session::login::LoginRefusal;
use tokio::time::timeout;

/// A temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mmo-auth-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn config(auth_public_key: Option<PathBuf>) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        npcs: 10,
        max_clients_per_ip: 1_000,
        shutdown_grace_secs: 0.5,
        auth_public_key,
        ..Config::default()
    }
}

/// A server whose logins need tokens of a fresh key; the key, and the directory holding
/// its public half.
async fn keyed_server(tag: &str) -> (Running, SigningKey, TempDir) {
    let dir = TempDir::new(tag);
    let key = SigningKey::generate().unwrap();
    let public = dir.0.join("public.key");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    let server = start(config(Some(public))).await.unwrap();
    (server, key, dir)
}

/// An open session, held to keep its account live.
struct Session {
    _endpoint: quinn::Endpoint,
    conn: quinn::Connection,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    reader: FrameReader,
}

/// Hello and login with this name and token: the session when welcomed, the disconnect's
/// reason and text when refused.
async fn log_in(
    server: &Running,
    name: &str,
    token: Option<String>,
) -> Result<Session, (DisconnectReason, String)> {
    let endpoint = client::endpoint(server.quic_addr, Trust::Pinned(server.fingerprint)).unwrap();
    let (conn, mut send, mut recv) = client::open(&endpoint, server.quic_addr).await.unwrap();
    for message in [
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
        },
        ClientMessage::Login {
            name: name.to_owned(),
            token,
        },
    ] {
        send.write_all(&encode_frame(&message).unwrap())
            .await
            .unwrap();
    }
    let mut reader = FrameReader::new();
    let mut buf = [0u8; 4096];
    let answer = timeout(Duration::from_secs(10), async {
        loop {
            match reader.next_message::<ServerMessage>().unwrap() {
                Some(ServerMessage::Welcome(_)) => return Ok(()),
                Some(ServerMessage::Disconnect { reason, text }) => return Err((reason, text)),
                Some(_) => continue,
                None => {}
            }
            let n = recv
                .read(&mut buf)
                .await
                .unwrap()
                .expect("the server answers before closing its stream");
            reader.push(&buf[..n]);
        }
    })
    .await
    .expect("an answer to the login within 10 s");
    answer.map(|()| Session {
        _endpoint: endpoint,
        conn,
        send,
        recv,
        reader,
    })
}

impl Session {
    /// Leaves and waits for the server's goodbye and the connection's close.
    async fn leave(mut self) {
        self.send
            .write_all(&encode_frame(&ClientMessage::Leave).unwrap())
            .await
            .unwrap();
        let mut buf = [0u8; 4096];
        let reason = timeout(Duration::from_secs(5), async {
            loop {
                if let Some(ServerMessage::Disconnect { reason, .. }) =
                    self.reader.next_message::<ServerMessage>().unwrap()
                {
                    return reason;
                }
                let n = self.recv.read(&mut buf).await.unwrap().unwrap();
                self.reader.push(&buf[..n]);
            }
        })
        .await
        .unwrap();
        assert_eq!(reason, DisconnectReason::ClientLeft);
        let _ = timeout(Duration::from_secs(5), self.conn.closed()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_server_refuses_each_bad_login_and_admits_a_valid_one() {
    let (server, key, _dir) = keyed_server("refusals").await;
    let forger = SigningKey::generate().unwrap();
    let cases = [
        (None, LoginRefusal::NoToken, "requires a login token"),
        (
            Some(forger.mint("ada", now() + 60).unwrap()),
            LoginRefusal::BadSignature,
            "signature does not check",
        ),
        (
            Some(key.mint("ada", now() - CLOCK_SKEW_SECS - 60).unwrap()),
            LoginRefusal::Expired,
            "expired",
        ),
        (
            Some(key.mint("bob", now() + 60).unwrap()),
            LoginRefusal::AccountMismatch,
            "for account \"bob\", not for \"ada\"",
        ),
        (
            Some("v1.not-a-token".to_owned()),
            LoginRefusal::Malformed,
            "malformed",
        ),
    ];
    for (token, why, said) in cases {
        let (reason, text) = log_in(&server, "ada", token)
            .await
            .err()
            .unwrap_or_else(|| panic!("a login that should be refused ({why:?}) was welcomed"));
        assert_eq!(reason, DisconnectReason::LoginRejected, "{why:?}: {text}");
        assert!(text.contains(said), "{why:?}: {text:?} lacks {said:?}");
        assert_eq!(server.metrics.logins_rejected_for(why), 1, "{why:?}");
    }
    assert_eq!(
        server
            .metrics
            .disconnects_for(DisconnectReason::LoginRejected),
        5
    );
    // A valid token of the login's account gets in, and the server goes on for others.
    let valid = key.mint("ada", now() + 60).unwrap();
    let ada = log_in(&server, "ada", Some(valid))
        .await
        .expect("a valid token logs in");
    let bob = log_in(&server, "bob", Some(key.mint("bob", now() + 60).unwrap()))
        .await
        .expect("another account logs in beside it");
    ada.leave().await;
    bob.leave().await;
    server.shutdown().await.unwrap();
}

/// One live session per account: a second login of a live account is refused, not taken
/// over; once the first session ends the account logs in again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_live_session_per_account() {
    let (server, key, _dir) = keyed_server("one-session").await;
    let token = || Some(key.mint("ada", now() + 60).unwrap());
    let first = log_in(&server, "ada", token()).await.expect("first login");
    let (reason, text) = log_in(&server, "ada", token())
        .await
        .err()
        .expect("refused");
    assert_eq!(reason, DisconnectReason::LoginRejected);
    assert!(text.contains("already logged in"), "{text}");
    assert_eq!(
        server
            .metrics
            .logins_rejected_for(LoginRefusal::AlreadyLoggedIn),
        1
    );
    // The refusal did not end the first session: it still answers a ping.
    let mut first = first;
    first
        .send
        .write_all(&encode_frame(&ClientMessage::Ping { nonce: 9 }).unwrap())
        .await
        .unwrap();
    let mut buf = [0u8; 4096];
    timeout(Duration::from_secs(5), async {
        loop {
            if let Some(ServerMessage::Pong { nonce: 9 }) =
                first.reader.next_message::<ServerMessage>().unwrap()
            {
                return;
            }
            let n = first.recv.read(&mut buf).await.unwrap().unwrap();
            first.reader.push(&buf[..n]);
        }
    })
    .await
    .expect("the first session answers");

    first.leave().await;
    // The account is freed when the session's task ends, just after it closes the
    // connection: a login right after may still find it live, one a moment later not.
    let mut again = None;
    for _ in 0..50 {
        match log_in(&server, "ada", token()).await {
            Ok(session) => {
                again = Some(session);
                break;
            }
            Err((_, text)) if text.contains("already logged in") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    again
        .expect("the account logs in again after its session ended")
        .leave()
        .await;
    server.shutdown().await.unwrap();
}

/// Without a key the name is the account: no token needed, and the one-session rule holds
/// for names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_the_name_is_the_account() {
    let server = start(config(None)).await.unwrap();
    let ada = log_in(&server, "ada", None).await.expect("no token needed");
    let (reason, text) = log_in(&server, "ada", None).await.err().expect("refused");
    assert_eq!(reason, DisconnectReason::LoginRejected);
    assert!(text.contains("already logged in"), "{text}");
    ada.leave().await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_key_file_stops_the_start_naming_the_file() {
    let dir = TempDir::new("bad-key");
    let path = dir.0.join("public.key");
    std::fs::write(&path, "not a key\n").unwrap();
    let err = start(config(Some(path.clone())))
        .await
        .err()
        .expect("refused");
    let chain = format!("{err:#}");
    assert!(chain.contains(&path.display().to_string()), "{chain}");
    assert!(chain.contains("PUBLIC KEY"), "{chain}");
    let missing = dir.0.join("missing.key");
    let err = start(config(Some(missing.clone())))
        .await
        .err()
        .expect("refused");
    assert!(format!("{err:#}").contains(&missing.display().to_string()));
}

/// The swarm mints a token per bot from the signing key and every bot gets in; without
/// the key every bot is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swarm_logs_in_with_minted_tokens() {
    use loadtest::bot::{Behaviour, InputPace};
    use loadtest::swarm::{Options, Progress, Tokens, run};

    let (server, key, _dir) = keyed_server("swarm").await;
    let options = |tokens| Options {
        server: server.quic_addr,
        bots: 30,
        ramp: Duration::from_secs(1),
        duration: Duration::from_secs(4),
        warmup: Duration::from_secs(2),
        behaviour: Behaviour::Mixed,
        pace: InputPace::Timer,
        trust: Trust::Pinned(server.fingerprint),
        metrics_url: None,
        progress: Progress::Quiet,
        tokens,
        borders: None,
        targets: None,
    };
    let tokens = Tokens {
        key: Arc::new(key),
        ttl: Duration::from_secs(60),
    };
    let report = timeout(Duration::from_secs(30), run(options(Some(tokens))))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.connected, 30, "{:?}", report.failed_to_connect);
    assert_eq!(report.dropped_count(), 0, "{:?}", report.dropped);
    let report = timeout(Duration::from_secs(30), run(options(None)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.connected, 0);
    assert_eq!(
        report
            .failed_to_connect
            .get("login_rejected: this server requires a login token; none was sent"),
        Some(&30),
        "{:?}",
        report.failed_to_connect
    );
    assert_eq!(
        server.metrics.logins_rejected_for(LoginRefusal::NoToken),
        30
    );
    server.shutdown().await.unwrap();
}

fn server_bin(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_server"))
        .args(args)
        .output()
        .unwrap()
}

fn path_arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `server keygen` writes a key pair (the private half readable by its owner only) and
/// will not overwrite it; `server token` prints a token alone that the public key takes.
#[test]
fn keygen_and_token_make_keys_and_tokens_the_server_takes() {
    let dir = TempDir::new("keygen");
    let out = dir.0.join("keys");
    let made = server_bin(&["keygen", "--out", path_arg(&out)]);
    assert!(made.status.success(), "{made:?}");
    let signing = out.join("signing.key");
    let public =
        PublicKey::from_pem(&std::fs::read_to_string(out.join("public.key")).unwrap()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&signing).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let again = server_bin(&["keygen", "--out", path_arg(&out)]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("does not overwrite"));

    let before = now();
    let printed = server_bin(&[
        "token",
        "--signing-key",
        path_arg(&signing),
        "--account",
        "ada lovelace",
        "--ttl",
        "120",
    ]);
    assert!(printed.status.success(), "{printed:?}");
    let stdout = String::from_utf8(printed.stdout).unwrap();
    let token = stdout.strip_suffix('\n').expect("one line");
    assert!(!token.contains(char::is_whitespace), "{stdout:?}");
    let claims = public.verify(token, now()).unwrap();
    assert_eq!(claims.account, "ada lovelace");
    assert!((before + 120..=now() + 120).contains(&claims.expires_unix_secs));

    let refused = server_bin(&[
        "token",
        "--signing-key",
        path_arg(&out.join("public.key")),
        "--account",
        "ada",
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("public.key"));
}
