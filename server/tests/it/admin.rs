//! The admin API of `server run` over real HTTP on 127.0.0.1: the token check on every
//! path (401, counted), every route with good and bad input, a kick that a real client
//! sees, doors, spawns and removals seen in `/admin/world`, and the OpenAPI file held to
//! the router.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use client::{Client, Trust};
use protocol::{DisconnectReason, ServerMessage};
use serde_json::Value;
use server::admin::AdminToken;
use server::config::Config;
use server::run::{Running, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::net::{http_get, metric_value};

const TOKEN: &str = "test-admin-token-0123456789";
/// An open spot of den520d (the embedded default map) where test players spawn.
const SPAWN: [f32; 2] = [68.5, 164.5];
const OPENAPI: &str = include_str!("../../openapi/admin.json");
const ROUTES_SOURCE: &str = include_str!("../../src/admin/routes.rs");

fn config() -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        admin_listen: "127.0.0.1:0".parse().unwrap(),
        admin_token: Some(AdminToken::new(TOKEN).unwrap()),
        npcs: 50,
        spawn_point: Some(SPAWN),
        shutdown_grace_secs: 0.2,
        doors: vec![[66.0, 160.0, 71.0, 160.0]],
        ..Config::default()
    }
}

/// A response: status, head (lower-cased header names kept as sent) and JSON body.
struct Answer {
    status: u16,
    head: String,
    body: Value,
}

impl Answer {
    fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or("")
    }
}

/// One request over a fresh connection, with the token when given.
async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Answer {
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    if let Some(token) = token {
        request += &format!("Authorization: Bearer {token}\r\n");
    }
    let body = body.unwrap_or("");
    request += &format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("an answer within 10 s")
        .expect("readable");
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body =
        serde_json::from_str(body).unwrap_or_else(|err| panic!("not JSON ({err}): {response}"));
    Answer {
        status,
        head: head.to_owned(),
        body,
    }
}

async fn admin(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> Answer {
    call(addr, method, path, Some(TOKEN), body).await
}

async fn world(addr: SocketAddr) -> Value {
    let answer = admin(addr, "GET", "/admin/world", None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body
}

/// Starts a server and waits until its world has ticked.
async fn ready_server(config: Config) -> (Running, SocketAddr) {
    let server = start(config).await.unwrap();
    let addr = server.admin_addr.expect("the admin API is on");
    let deadline = Instant::now() + Duration::from_secs(20);
    while world(addr).await["tick"].as_u64() == Some(0) {
        assert!(Instant::now() < deadline, "no tick within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (server, addr)
}

async fn connect(server: &Running, name: &str) -> Client {
    let endpoint = client::endpoint(server.quic_addr, Trust::Pinned(server.fingerprint)).unwrap();
    timeout(
        Duration::from_secs(10),
        Client::connect(&endpoint, server.quic_addr, name),
    )
    .await
    .expect("login within 10 s")
    .expect("login accepted")
}

async fn unauthorized_count(server: &Running) -> u64 {
    let metrics = http_get(server.metrics_addr, "/metrics").await;
    metric_value(&metrics, "mmo_admin_unauthorized_total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_the_admin_api_is_off() {
    let server = start(Config {
        admin_token: None,
        ..config()
    })
    .await
    .unwrap();
    assert_eq!(server.admin_addr, None);
    server.shutdown().await.unwrap();
    // A token from a file (its trailing newline ignored).
    let dir = std::env::temp_dir().join(format!("mmo-admin-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("admin.token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let (server, addr) = ready_server(Config {
        admin_token: None,
        admin_token_file: Some(file.clone()),
        ..config()
    })
    .await;
    assert_eq!(
        admin(addr, "GET", "/admin/sessions", None).await.status,
        200
    );
    server.shutdown().await.unwrap();
    std::fs::write(&file, "short\n").unwrap();
    let err = start(Config {
        admin_token: None,
        admin_token_file: Some(file.clone()),
        ..config()
    })
    .await
    .err()
    .expect("a short token is refused");
    assert!(
        format!("{err:#}").contains("16 to 512 characters"),
        "{err:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    // Both a file and the environment's token: refused, naming the setting.
    let err = start(Config {
        admin_token_file: Some("admin.token".into()),
        ..config()
    })
    .await
    .err()
    .expect("refused");
    assert!(err.to_string().contains("admin_token_file"), "{err:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_path_needs_the_token_and_refusals_are_counted() {
    let (server, addr) = ready_server(config()).await;
    assert_eq!(unauthorized_count(&server).await, 0);
    let wrong = "test-admin-token-0123456788";
    let cases = [
        ("GET", "/admin/world", None),
        ("GET", "/admin/world", Some(wrong)),
        ("GET", "/admin/world", Some("short")),
        ("GET", "/no/such/path", None),
        ("DELETE", "/admin/npcs/0.0", Some(wrong)),
        ("POST", "/admin/doors/0", None),
    ];
    for (method, path, token) in cases {
        let answer = call(addr, method, path, token, Some("{\"closed\": true}")).await;
        assert_eq!(answer.status, 401, "{method} {path}: {}", answer.body);
        assert!(
            answer
                .head
                .to_ascii_lowercase()
                .contains("\r\nwww-authenticate: bearer"),
            "{}",
            answer.head
        );
        assert!(answer.error().contains("bearer token"), "{}", answer.body);
    }
    assert_eq!(unauthorized_count(&server).await, cases.len() as u64);
    // Nothing changed: the door is still open, the NPC still there.
    let now = world(addr).await;
    assert_eq!(now["doors"][0]["closed"], false);
    assert_eq!(now["npcs"], 50);
    // With the token, an unknown path is 404 and a wrong method 405, both in JSON.
    let missing = admin(addr, "GET", "/no/such/path", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.error(), "no route GET /no/such/path");
    let method = admin(addr, "PUT", "/admin/world", None).await;
    assert_eq!(method.status, 405, "{}", method.body);
    assert_eq!(unauthorized_count(&server).await, cases.len() as u64);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doors_spawns_removals_and_entities() {
    let (server, addr) = ready_server(config()).await;
    let before = world(addr).await;
    assert_eq!(before["map_id"], "den520d.map");
    assert_eq!(before["npcs"], 50);
    assert_eq!(before["players"], 0);
    assert!(before["tick_ms"]["window"].as_u64().unwrap() >= 1);
    assert!(before["bounds"][2].as_f64().unwrap() > before["bounds"][0].as_f64().unwrap());
    assert_eq!(
        before["doors"],
        serde_json::json!([{"id": 0, "segment": [66.0, 160.0, 71.0, 160.0], "closed": false}])
    );

    // Doors: closing shows in the world; bad ids and bodies are 400, unknown doors 404.
    let closed = admin(addr, "POST", "/admin/doors/0", Some(r#"{"closed": true}"#)).await;
    assert_eq!(closed.status, 200, "{}", closed.body);
    assert_eq!(closed.body["closed"], true);
    assert_eq!(world(addr).await["doors"][0]["closed"], true);
    let opened = admin(addr, "POST", "/admin/doors/0", Some(r#"{"closed": false}"#)).await;
    assert_eq!(opened.body["closed"], false);
    assert_eq!(world(addr).await["doors"][0]["closed"], false);
    let unknown = admin(addr, "POST", "/admin/doors/7", Some(r#"{"closed": true}"#)).await;
    assert_eq!(
        (unknown.status, unknown.error()),
        (404, "no door 7: this world has 1 doors")
    );
    for (path, body, says) in [
        ("/admin/doors/x", r#"{"closed": true}"#, "bad door id"),
        ("/admin/doors/0", r#"{"closed": "yes"}"#, "bad JSON body"),
        (
            "/admin/doors/0",
            r#"{"closed": true, "x": 1}"#,
            "unknown field",
        ),
        ("/admin/doors/0", "", "bad JSON body"),
        ("/admin/doors/0", "{", "bad JSON body"),
    ] {
        let answer = admin(addr, "POST", path, Some(body)).await;
        assert_eq!(answer.status, 400, "{path} {body}: {}", answer.body);
        assert!(answer.error().contains(says), "{}", answer.body);
    }
    let huge = format!(r#"{{"closed": true, "pad": "{}"}}"#, "x".repeat(20_000));
    let answer = admin(addr, "POST", "/admin/doors/0", Some(&huge)).await;
    assert_eq!(answer.status, 413, "{}", answer.body);

    // Spawns: around a point, they exist at once in the counts; bad requests change nothing.
    let body = format!(r#"{{"count": 5, "at": [{}, {}]}}"#, SPAWN[0], SPAWN[1]);
    let spawned = admin(addr, "POST", "/admin/npcs", Some(&body)).await;
    assert_eq!(spawned.status, 201, "{}", spawned.body);
    let ids: Vec<String> = spawned.body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(world(addr).await["npcs"], 55);
    let one = admin(addr, "POST", "/admin/npcs", None).await;
    assert_eq!(one.status, 201, "{}", one.body);
    assert_eq!(world(addr).await["npcs"], 56);
    for (body, status, says) in [
        (r#"{"count": 0}"#, 400, "count must be between 1 and 1000"),
        (
            r#"{"count": 1001}"#,
            400,
            "count must be between 1 and 1000",
        ),
        (r#"{"count": -1}"#, 400, "bad JSON body"),
        (r#"{"at": [1e6, 1e6]}"#, 422, "no walkable point"),
        (r#"{"at": [1e39, 0]}"#, 400, "finite"),
    ] {
        let answer = admin(addr, "POST", "/admin/npcs", Some(body)).await;
        assert_eq!(answer.status, status, "{body}: {}", answer.body);
        assert!(answer.error().contains(says), "{body}: {}", answer.body);
    }
    assert_eq!(world(addr).await["npcs"], 56);

    // An NPC in detail: it wanders, so it soon has a path of at least one corner ahead.
    let id = &ids[0];
    let deadline = Instant::now() + Duration::from_secs(10);
    let entity = loop {
        let answer = admin(addr, "GET", &format!("/admin/entities/{id}"), None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        if answer.body["path"].as_array().unwrap().len() >= 2 {
            break answer.body;
        }
        assert!(
            Instant::now() < deadline,
            "no path within 10 s: {}",
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(entity["id"], id.as_str());
    assert_eq!(entity["kind"], "npc");
    assert_eq!(entity["brain"], "wander");
    assert!(entity["goal"].is_array(), "{entity}");
    assert_eq!(entity["path"][0], entity["pos"]);
    assert_eq!(entity["speed_mps"], 1.5);
    let pos = entity["pos"].as_array().unwrap();
    let near = (pos[0].as_f64().unwrap() - f64::from(SPAWN[0]))
        .hypot(pos[1].as_f64().unwrap() - f64::from(SPAWN[1]));
    assert!(near < 20.0, "spawned {near} m from the point: {entity}");
    for (path, status) in [
        ("/admin/entities/12", 400),
        ("/admin/entities/a.b", 400),
        ("/admin/entities/+1.+0", 400),
        ("/admin/entities/4000000.0", 404),
    ] {
        let answer = admin(addr, "GET", path, None).await;
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
    }

    // Removal: the count drops, the id is gone, a second removal is 404.
    // Written with a leading zero, it is answered as the world writes it.
    let removed = admin(addr, "DELETE", &format!("/admin/npcs/0{id}"), None).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(removed.body["removed"], id.as_str(), "{}", removed.body);
    assert_eq!(world(addr).await["npcs"], 55);
    let gone = admin(addr, "GET", &format!("/admin/entities/{id}"), None).await;
    assert_eq!(
        (gone.status, gone.error()),
        (404, format!("no entity {id}").as_str())
    );
    let again = admin(addr, "DELETE", &format!("/admin/npcs/{id}"), None).await;
    assert_eq!(again.status, 404, "{}", again.body);
    let bad = admin(addr, "DELETE", "/admin/npcs/nope", None).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_and_a_kicked_client_is_told() {
    let (server, addr) = ready_server(config()).await;
    let mut client = connect(&server, "ada").await;
    let me = client.welcome().entity;
    let me = format!("{}.{}", me.index, me.generation);
    let listed = admin(addr, "GET", "/admin/sessions", None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let sessions = listed.body["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 1, "{}", listed.body);
    let session = &sessions[0];
    assert_eq!(session["account"], "ada");
    assert_eq!(session["entity"], me.as_str());
    let remote = session["remote"].as_str().unwrap();
    assert!(remote.starts_with("127.0.0.1:"), "{remote}");
    assert!(session["connected_since_ms"].as_u64().unwrap() > 1_700_000_000_000);
    let world_now = world(addr).await;
    assert_eq!(
        (world_now["players"].clone(), world_now["sessions"].clone()),
        (1.into(), 1.into())
    );

    // The player's character is not an NPC: it cannot be removed, only kicked.
    let refused = admin(addr, "DELETE", &format!("/admin/npcs/{me}"), None).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.error().contains("player's character"),
        "{}",
        refused.body
    );
    let entity = admin(addr, "GET", &format!("/admin/entities/{me}"), None).await;
    assert_eq!(entity.body["kind"], "player");
    assert_eq!(entity.body["session"], session["id"]);

    let id = session["id"].as_u64().unwrap();
    let long = format!(r#"{{"text": "{}"}}"#, "x".repeat(201));
    let kick_path = format!("/admin/sessions/{id}/kick");
    for (path, body, status) in [
        ("/admin/sessions/abc/kick".to_owned(), "", 400),
        (format!("/admin/sessions/{}/kick", id + 1000), "", 404),
        (kick_path.clone(), long.as_str(), 400),
        (kick_path.clone(), r#"{"text": 5}"#, 400),
    ] {
        let answer = admin(addr, "POST", &path, Some(body)).await;
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
    }
    // None of those ended the session.
    assert_eq!(world(addr).await["players"], 1);
    let kicked = admin(
        addr,
        "POST",
        &format!("/admin/sessions/{id}/kick"),
        Some(r#"{"text": "see you"}"#),
    )
    .await;
    assert_eq!(kicked.status, 200, "{}", kicked.body);
    assert_eq!(kicked.body["kicked"], id);
    let last = loop {
        let message = timeout(Duration::from_secs(5), client.next_message())
            .await
            .expect("the disconnect within 5 s")
            .expect("a message");
        if matches!(message, ServerMessage::Disconnect { .. }) {
            break message;
        }
    };
    assert_eq!(
        last,
        ServerMessage::Disconnect {
            reason: DisconnectReason::Kicked,
            text: "see you".to_owned()
        }
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while world(addr).await["players"] != 0 {
        assert!(Instant::now() < deadline, "the character stayed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let listed = admin(addr, "GET", "/admin/sessions", None).await;
    assert_eq!(listed.body["sessions"], serde_json::json!([]));
    let metrics = http_get(server.metrics_addr, "/metrics").await;
    assert_eq!(
        metric_value(&metrics, "mmo_disconnects_total{reason=\"kicked\"}"),
        1
    );
    server.shutdown().await.unwrap();
}

/// The `(METHOD, path)` pairs the router declares: its `.route("PATH", method(...))` lines.
fn routed() -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for line in ROUTES_SOURCE.lines() {
        let Some(rest) = line.trim().strip_prefix(".route(\"") else {
            continue;
        };
        let (path, handlers) = rest.split_once('"').unwrap();
        for method in ["get", "post", "put", "patch", "delete"] {
            if handlers.contains(&format!(" {method}("))
                || handlers.contains(&format!(".{method}("))
            {
                routes.insert((method.to_ascii_uppercase(), path.to_owned()));
            }
        }
    }
    routes
}

/// Every documented operation is routed and every route documented; each documented
/// operation answers (not a missing route, not a wrong method) over HTTP with the token,
/// and a method not documented for a path is 405.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_file_matches_the_routes() {
    let spec: Value = serde_json::from_str(OPENAPI).expect("admin.json is JSON");
    assert!(spec["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_ascii_uppercase(), path.clone()));
            let op = &item[method];
            assert!(
                op["responses"]["401"].is_object(),
                "{method} {path}: no 401"
            );
            assert!(op["summary"].is_string(), "{method} {path}: no summary");
        }
    }
    assert_eq!(documented, routed(), "documented against routed");
    assert_eq!(documented.len(), 7);

    let (server, addr) = ready_server(config()).await;
    for (method, path) in &documented {
        // Entity ids of NPCs spawned at start (index 1 and up, generation 0); session and
        // door 0.
        let concrete = if path.contains("entities") || path.contains("npcs/") {
            path.replace("{id}", "1.0")
        } else {
            path.replace("{id}", "0")
        };
        let body = if path.contains("doors") {
            Some(r#"{"closed": true}"#)
        } else {
            None
        };
        let answer = admin(addr, method, &concrete, body).await;
        assert_ne!(answer.status, 405, "{method} {concrete}: {}", answer.body);
        assert!(
            !answer.error().starts_with("no route"),
            "{method} {concrete}: {}",
            answer.body
        );
        assert!(
            spec["paths"][path][method.to_ascii_lowercase()]["responses"]
                [answer.status.to_string()]
            .is_object(),
            "{method} {concrete} answered {} which is not documented: {}",
            answer.status,
            answer.body
        );
        for other in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if documented.contains(&(other.to_owned(), path.clone())) {
                continue;
            }
            let answer = admin(addr, other, &concrete, None).await;
            assert_eq!(answer.status, 405, "{other} {concrete}: {}", answer.body);
        }
    }
    server.shutdown().await.unwrap();
}

/// A flood of admin calls, good and bad, for 2 s from four connections at a time: every
/// one is answered with its own status (never a 5xx) and the world keeps its 20 Hz.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_admin_calls_does_not_slow_the_tick() {
    let (server, addr) = ready_server(Config {
        npcs: 500,
        ..config()
    })
    .await;
    let ticks_before = server.metrics.ticks.get();
    let started = Instant::now();
    let flood = Duration::from_secs(2);
    let mut tasks = Vec::new();
    for task in 0..4 {
        tasks.push(tokio::spawn(async move {
            let mut answered = 0u32;
            while started.elapsed() < flood && answered < 2_000 {
                let (token, method, path, body, want) = match (answered + task) % 4 {
                    0 => (None, "GET", "/admin/world", None, 401),
                    1 => (Some(TOKEN), "GET", "/admin/world", None, 200),
                    2 => (Some(TOKEN), "POST", "/admin/doors/0", Some("{"), 400),
                    _ => (Some(TOKEN), "GET", "/admin/entities/1.0", None, 200),
                };
                let answer = call(addr, method, path, token, body).await;
                assert_eq!(answer.status, want, "{method} {path}: {}", answer.body);
                answered += 1;
            }
            answered
        }));
    }
    let mut answered = 0;
    for task in tasks {
        answered += task.await.unwrap();
    }
    let elapsed = started.elapsed();
    let ticks = server.metrics.ticks.get() - ticks_before;
    let expected = elapsed.as_secs_f64() * 20.0;
    assert!(
        answered >= 40,
        "only {answered} calls answered in {elapsed:?}"
    );
    // A loaded machine may lose a few ticks to the scheduler, not a quarter of them.
    assert!(
        ticks as f64 >= 0.75 * expected,
        "{ticks} ticks in {elapsed:?} with {answered} admin calls"
    );
    server.shutdown().await.unwrap();
}
