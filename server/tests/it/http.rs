//! The operations endpoint of `server run` over real HTTP on 127.0.0.1: the metric names
//! against the checked-in list, the status codes and bodies of every route, bad requests,
//! and shutdown with a client holding an idle connection.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use server::config::Config;
use server::run::{Running, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Every series the server exports, with its type, and every help text: the names as
/// they were before the metrics library, plus `mmo_snapshot_stride`. One line each, in the
/// form [`normalize`] gives.
const METRIC_NAMES: &str = include_str!("metric_names.txt");

fn config() -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        metrics_listen: "127.0.0.1:0".parse().unwrap(),
        npcs: 50,
        shutdown_grace_secs: 0.2,
        ..Config::default()
    }
}

/// Sends raw bytes, returns everything the server sends back until it closes.
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("an answer within 10 s")
        .expect("readable");
    String::from_utf8_lossy(&response).into_owned()
}

async fn get(addr: SocketAddr, path: &str) -> String {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes(),
    )
    .await
}

/// The status line, the `content-type` header and the body of a response.
fn parts(response: &str) -> (&str, &str, &str) {
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().unwrap();
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then_some(value.trim())
        })
        .unwrap_or("");
    (status, content_type, body)
}

/// Starts a server and waits until it reports ready (its world has ticked).
async fn ready_server() -> Running {
    let server = start(config()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !get(server.metrics_addr, "/readyz")
        .await
        .starts_with("HTTP/1.1 200")
    {
        assert!(Instant::now() < deadline, "not ready within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
}

/// One line per series (`TYPE NAME{LABELS}`, labels sorted) and per family's help text
/// (`help NAME TEXT`, named by its counter series when it is a counter), whatever the
/// exposition format: a counter family is `mmo_x_total` in the Prometheus text format and
/// `mmo_x` (series `mmo_x_total`) in OpenMetrics.
fn normalize(text: &str) -> BTreeSet<String> {
    let mut lines = BTreeSet::new();
    let mut helps = Vec::new();
    let mut types = std::collections::HashMap::new();
    let mut family_type = "untyped".to_owned();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (family, help) = rest.split_once(' ').unwrap_or((rest, ""));
            helps.push((family.to_owned(), help.to_owned()));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (family, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            types.insert(family.to_owned(), kind.to_owned());
            family_type = kind.to_owned();
        } else if line.starts_with('#') || line.trim().is_empty() {
            continue;
        } else {
            let (series, _value) = line.rsplit_once(' ').expect("a sample and its value");
            let series = match series.split_once('{') {
                Some((name, labels)) => {
                    let labels: BTreeSet<&str> = labels.trim_end_matches('}').split(',').collect();
                    format!("{name}{{{}}}", Vec::from_iter(labels).join(","))
                }
                None => series.to_owned(),
            };
            lines.insert(format!("{family_type} {series}"));
        }
    }
    for (family, help) in helps {
        let counter = types.get(&family).is_some_and(|kind| kind == "counter");
        let name = if counter && !family.ends_with("_total") {
            format!("{family}_total")
        } else {
            family
        };
        lines.insert(format!("help {name} {help}"));
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metric_names_types_and_help_are_the_checked_in_list() {
    let server = ready_server().await;
    let response = get(server.metrics_addr, "/metrics").await;
    let (status, content_type, body) = parts(&response);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let rendered = normalize(body);
    let expected: BTreeSet<String> = METRIC_NAMES.lines().map(str::to_owned).collect();
    let missing: Vec<_> = expected.difference(&rendered).collect();
    let added: Vec<_> = rendered.difference(&expected).collect();
    assert!(
        missing.is_empty() && added.is_empty(),
        "missing: {missing:#?}\nadded: {added:#?}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_stride_is_rendered() {
    let server = ready_server().await;
    let response = get(server.metrics_addr, "/metrics").await;
    let stride = response
        .lines()
        .find_map(|line| line.strip_prefix("mmo_snapshot_stride "))
        .unwrap_or_else(|| panic!("no mmo_snapshot_stride in\n{response}"));
    // The snapshot thread sets it before its first job; it is 1 while it keeps up.
    let stride: u64 = stride.parse().unwrap();
    assert!((1..=8).contains(&stride), "stride {stride}");
    assert!(response.contains("# TYPE mmo_snapshot_stride gauge\n"));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_answer_with_their_status_and_body() {
    let server = ready_server().await;
    let addr = server.metrics_addr;
    let cases: [(&[u8], &str, &str); 5] = [
        (b"GET /healthz HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK", "ok\n"),
        (
            b"GET /readyz HTTP/1.1\r\n\r\n",
            "HTTP/1.1 200 OK",
            "ready\n",
        ),
        (
            b"GET /nope HTTP/1.1\r\n\r\n",
            "HTTP/1.1 404 Not Found",
            "not found\n",
        ),
        (
            b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 405 Method Not Allowed",
            "only GET\n",
        ),
        (
            b"DELETE /healthz HTTP/1.1\r\n\r\n",
            "HTTP/1.1 405 Method Not Allowed",
            "only GET\n",
        ),
    ];
    for (request, want_status, want_body) in cases {
        let response = exchange(addr, request).await;
        let (status, content_type, body) = parts(&response);
        assert_eq!(status, want_status, "{response}");
        assert_eq!(content_type, "text/plain", "{response}");
        assert_eq!(body, want_body, "{response}");
    }

    // After the shutdown nothing listens.
    let stopping = tokio::spawn(server.shutdown());
    timeout(Duration::from_secs(15), stopping)
        .await
        .expect("shutdown within 15 s")
        .unwrap()
        .unwrap();
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_the_endpoint_keeps_serving() {
    let server = ready_server().await;
    let addr = server.metrics_addr;

    let garbage = exchange(
        addr,
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n",
    )
    .await;
    assert!(garbage.starts_with("HTTP/1.1 400"), "{garbage:?}");

    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Padding: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 16 * 1024));
    huge.extend_from_slice(b"\r\n\r\n");
    let too_large = exchange(addr, &huge).await;
    assert!(too_large.starts_with("HTTP/1.1 431"), "{too_large:?}");

    let bad_version = exchange(addr, b"GET /healthz HTTP/9.9\r\n\r\n").await;
    assert!(bad_version.starts_with("HTTP/1.1 "), "{bad_version:?}");
    assert!(!bad_version.starts_with("HTTP/1.1 200"), "{bad_version:?}");

    // A client that connects, sends half a line and leaves.
    let mut rude = TcpStream::connect(addr).await.unwrap();
    rude.write_all(b"GET /met").await.unwrap();
    drop(rude);

    let response = get(addr, "/healthz").await;
    let (status, _, body) = parts(&response);
    assert_eq!((status, body), ("HTTP/1.1 200 OK", "ok\n"));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_an_idle_http_connection_at_once() {
    let server = ready_server().await;
    // Connected, silent: it has sent nothing and never will.
    let mut idle = TcpStream::connect(server.metrics_addr).await.unwrap();
    let connected = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = tokio::spawn(server.shutdown());
    let mut rest = Vec::new();
    let read = timeout(Duration::from_secs(10), idle.read_to_end(&mut rest))
        .await
        .expect("the server closed the idle connection");
    let closed_after = connected.elapsed();
    // Closed by the shutdown, not by the connection's 5 s deadline.
    assert!(
        closed_after < Duration::from_secs(4),
        "closed after {closed_after:?}"
    );
    assert!(read.is_err() || rest.is_empty(), "{rest:?}");
    timeout(Duration::from_secs(15), stopping)
        .await
        .expect("shutdown within 15 s")
        .unwrap()
        .unwrap();
}

/// One request with raw bytes back: the head as text and the body as bytes.
async fn raw(addr: SocketAddr, request: String) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    timeout(Duration::from_secs(5), stream.read_to_end(&mut bytes))
        .await
        .unwrap()
        .unwrap();
    let at = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8(bytes[..at].to_vec()).unwrap();
    (head, bytes[at + 4..].to_vec())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then_some(value.trim())
    })
}

/// `/map` serves the world's navmesh file: exactly the mesh the server loaded, named by
/// the map id the welcome gives, and cacheable by its entity tag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_serves_the_navmesh_file_and_answers_a_cached_copy_with_304() {
    let config = config();
    let (mesh, map_id) = server::run::load_map(&config).unwrap();
    let server = start(config).await.unwrap();
    let (head, body) = raw(
        server.metrics_addr,
        "GET /map HTTP/1.1\r\nHost: localhost\r\n\r\n".to_owned(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        header(&head, "content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(header(&head, "x-map-id"), Some(map_id.as_str()));
    assert_eq!(body, navmesh::encode(&mesh));
    let served = navmesh::decode(&body).unwrap();
    assert_eq!(served.triangle_count(), mesh.triangle_count());
    let etag = header(&head, "etag").expect("an entity tag").to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");

    let (head, body) = raw(
        server.metrics_addr,
        format!("GET /map HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: {etag}\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 304"), "{head}");
    assert!(body.is_empty());
    // Compared weakly, as caches may hand the tag back.
    let (head, _) = raw(
        server.metrics_addr,
        format!("GET /map HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: \"x\", W/{etag}\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 304"), "{head}");
    let (head, body) = raw(
        server.metrics_addr,
        "GET /map HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: \"stale\"\r\n\r\n".to_owned(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body.len(), navmesh::encode(&mesh).len());
    server.shutdown().await.unwrap();
}

/// The viewer's questions to the world: figures for its corner, and an NPC's path for its
/// selection; a bad id is 400 and an unknown one 404, as JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_asks_the_world_for_figures_and_npc_paths() {
    let server = ready_server().await;
    let world = get(server.metrics_addr, "/api/world").await;
    let (status, content_type, body) = parts(&world);
    assert_eq!(
        (status, content_type),
        ("HTTP/1.1 200 OK", "application/json")
    );
    let world: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(world["npcs"], 50, "{world}");
    assert!(world["tick"].as_u64() > Some(0), "{world}");
    assert!(world["tick_ms"]["mean"].as_f64() > Some(0.0), "{world}");
    // NPCs wander: within a few seconds the first has a path of corners ahead.
    let deadline = Instant::now() + Duration::from_secs(10);
    let npc = loop {
        let answer = get(server.metrics_addr, "/api/npcs/0.0").await;
        let (status, _, body) = parts(&answer);
        assert_eq!(status, "HTTP/1.1 200 OK", "{answer}");
        let npc: serde_json::Value = serde_json::from_str(body).unwrap();
        if npc["path"].as_array().is_some_and(|path| path.len() >= 2) {
            break npc;
        }
        assert!(Instant::now() < deadline, "no path within 10 s: {npc}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(npc["brain"], "wander", "{npc}");
    for path in ["/api/npcs/twelve", "/api/npcs/+0.0", "/api/npcs/%FF.0"] {
        let bad = get(server.metrics_addr, path).await;
        assert!(bad.starts_with("HTTP/1.1 400"), "{path}: {bad}");
        assert_eq!(parts(&bad).1, "application/json", "{path}: {bad}");
        assert!(parts(&bad).2.contains("\"error\""), "{path}: {bad}");
    }
    let unknown = get(server.metrics_addr, "/api/npcs/99999.0").await;
    assert!(unknown.starts_with("HTTP/1.1 404"), "{unknown}");
    server.shutdown().await.unwrap();
}
