//! The operations endpoint over HTTP/1.1: `GET /metrics` (OpenMetrics text),
//! `GET /healthz` (the process is serving), `GET /readyz` (the world has ticked, the
//! character store answers and the server is not shutting down) and `GET /map` (the
//! world's navmesh file, for clients to draw the world and pick walkable points; cacheable
//! by its `ETag`). Any other path is 404, any other method on these paths 405.
//!
//! axum routes the requests; the connection loop is our own, on hyper, because it holds the
//! limits that make the endpoint safe to expose: at most [`HttpLimits::max_connections`]
//! connections at once (a client beyond that waits in the listen backlog until a place is
//! free), of which at most [`HttpLimits::max_per_address`] from one IP address or IPv6 /64
//! (one more is answered 503 and closed at once, so that one host holding idle connections
//! cannot keep a probe from `/healthz`; behind a proxy, every client shares the proxy's), one request per connection, a request head of at most 8 KiB
//! (431 beyond), and a deadline per connection, so a slow or silent client cannot keep its
//! place. Malformed requests get hyper's 400 and cost only their own connection.
//!
//! Shutdown: when the server's shutdown flag flips, the listener closes, idle connections
//! close at once and a request in flight has until its connection's deadline.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::time::timeout;
use tracing::debug;

use crate::metrics::{self, Metrics};

/// Largest request head read, bytes (hyper's smallest buffer limit).
const MAX_REQUEST_BYTES: usize = 8 * 1024;

/// Pause after a failed `accept` (the process may be out of file descriptors), so the loop
/// does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What the endpoint reports on.
pub(crate) struct Health {
    /// Server metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// Set once the world has run its first tick.
    pub(crate) ready: Arc<AtomicBool>,
    /// `true` once shutdown has begun.
    pub(crate) shutdown: watch::Receiver<bool>,
    /// The character store, when the server keeps characters: not ready while it is down.
    pub(crate) store: Option<crate::persist::Persist>,
    /// The world's map as a navmesh file, served at `/map`.
    pub(crate) map: Option<MapFile>,
    /// The server's certificates: the page learns the WebTransport certificate's hash
    /// from `/webtransport`.
    pub(crate) certificates: Option<Arc<crate::tls::Certificates>>,
    /// The QUIC port, for the page's WebTransport URL.
    pub(crate) quic_port: u16,
    /// The world thread's inbox, for the viewer's read-only questions.
    pub(crate) world: Option<tokio::sync::mpsc::Sender<crate::game::ToWorld>>,
}

/// The navmesh file `/map` serves, encoded once at start.
#[derive(Clone, Debug)]
pub(crate) struct MapFile {
    /// The map's id, as the welcome names it.
    pub(crate) id: String,
    /// The file's bytes (`navmesh::encode`).
    pub(crate) bytes: bytes::Bytes,
    /// A strong entity tag: the first 16 bytes of the file's SHA-256, in hex, quoted.
    pub(crate) etag: String,
    /// The walkable area as SVG, for the viewer.
    pub(crate) svg: bytes::Bytes,
    /// The map's bounds: min x, min y, max x, max y.
    pub(crate) bounds: [f64; 4],
}

impl MapFile {
    /// The file of `mesh`, with its id.
    pub(crate) fn new(id: &str, mesh: &navmesh::NavMesh) -> MapFile {
        let bytes = navmesh::encode(mesh);
        let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
        let hex: String = digest.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let b = mesh.bounds();
        MapFile {
            id: id.to_owned(),
            bytes: bytes.into(),
            etag: format!("\"{hex}\""),
            svg: crate::viewer::walkable_svg(mesh).into(),
            bounds: [b.min.x, b.min.y, b.max.x, b.max.y],
        }
    }
}

/// Bounds on the endpoint's connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HttpLimits {
    /// Connections served at once.
    pub(crate) max_connections: usize,
    /// Connections served at once from one IP address.
    pub(crate) max_per_address: usize,
    /// Longest a connection lives, from accept to close.
    pub(crate) connection_deadline: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 64,
            max_per_address: 16,
            connection_deadline: Duration::from_secs(5),
        }
    }
}

/// The routes, with their fallbacks for unknown paths and methods.
fn router(health: Arc<Health>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { text(StatusCode::OK, "ok\n") }))
        .route("/readyz", get(readyz))
        .route("/map", get(map_file))
        .merge(crate::viewer::routes())
        .fallback(|| async { text(StatusCode::NOT_FOUND, "not found\n") })
        .method_not_allowed_fallback(|| async {
            text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n")
        })
        .with_state(health)
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

async fn metrics_text(State(health): State<Arc<Health>>) -> Response {
    match health.metrics.render() {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
            body,
        )
            .into_response(),
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "cannot render metrics\n"),
    }
}

async fn readyz(State(health): State<Arc<Health>>) -> Response {
    let ready = health.ready.load(Ordering::Relaxed)
        && !*health.shutdown.borrow()
        && health.store.as_ref().is_none_or(|store| store.is_up());
    if ready {
        text(StatusCode::OK, "ready\n")
    } else {
        text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

/// The map as a navmesh file. The map never changes while the server runs, so the file is
/// cacheable; a request whose `If-None-Match` holds the current tag gets 304 and no body.
async fn map_file(State(health): State<Arc<Health>>, headers: header::HeaderMap) -> Response {
    let Some(map) = &health.map else {
        return text(StatusCode::NOT_FOUND, "this server serves no map\n");
    };
    let cache = [
        (header::ETAG, map.etag.clone()),
        (header::CACHE_CONTROL, "public, max-age=3600".to_owned()),
        (header::HeaderName::from_static("x-map-id"), map.id.clone()),
    ];
    let fresh = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        // Compared weakly (RFC 9110 §13.1.2): a cache may hand back the tag as `W/"…"`.
        .map(|tag| tag.trim())
        .any(|tag| tag.strip_prefix("W/").unwrap_or(tag) == map.etag || tag == "*");
    if fresh {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (
        StatusCode::OK,
        cache,
        [(header::CONTENT_TYPE, "application/octet-stream".to_owned())],
        map.bytes.clone(),
    )
        .into_response()
}

/// Resolves once the shutdown flag is set (or its sender is gone).
async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`: drop it here, inside the future.
    let _ = shutdown.wait_for(|&stopping| stopping).await;
}

/// Serves requests until the shutdown flag flips, then closes the connections (see the
/// module docs). Returns when every connection has ended.
pub(crate) async fn serve(listener: TcpListener, health: Arc<Health>, limits: HttpLimits) {
    let shutdown = health.shutdown.clone();
    serve_router(listener, router(health), shutdown, limits).await;
}

/// Serves `app` on the capped connection loop (see the module docs) until `shutdown`
/// flips; returns when every connection has ended. The admin API uses it too.
pub(crate) async fn serve_router(
    listener: TcpListener,
    app: Router,
    mut shutdown: watch::Receiver<bool>,
    limits: HttpLimits,
) {
    let service = TowerToHyperService::new(app);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.keep_alive(false).max_buf_size(MAX_REQUEST_BYTES);
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let addresses = Addresses::default();
    let refusals = Arc::new(Semaphore::new(MAX_REFUSING));
    let graceful = GracefulShutdown::new();
    loop {
        // A place first, then the connection: while every place is taken, newcomers wait
        // in the kernel's listen backlog rather than in a task of ours.
        let place = tokio::select! {
            place = Arc::clone(&places).acquire_owned() => place,
            () = stopping(&mut shutdown) => break,
        };
        // The semaphore is never closed; an error would only mean there is nothing to wait for.
        let Ok(place) = place else { break };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    debug!(%err, "http accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = stopping(&mut shutdown) => break,
        };
        let Some(from) = addresses.enter(peer.ip(), limits.max_per_address) else {
            debug!(%peer, "http connection refused: too many from its address");
            // Told so while few are being told; beyond that, closed without a word.
            if let Ok(telling) = Arc::clone(&refusals).try_acquire_owned() {
                tokio::spawn(async move {
                    let _telling = telling;
                    timeout(REFUSAL_DEADLINE, refuse(stream)).await
                });
            }
            continue;
        };
        let connection =
            graceful.watch(http.serve_connection(TokioIo::new(stream), service.clone()));
        let deadline = limits.connection_deadline;
        tokio::spawn(async move {
            let _place = (place, from);
            match timeout(deadline, connection).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => debug!(%err, "http connection failed"),
                Err(_) => debug!("http connection cut at its deadline"),
            }
        });
    }
    drop(listener);
    // Every connection ends by its deadline at the latest, so this wait is bounded too.
    let _ = timeout(limits.connection_deadline, graceful.shutdown()).await;
}

/// Longest a refused connection is kept to be told so.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(1);
/// Refused connections being told so at once, at most; others are closed without an answer.
const MAX_REFUSING: usize = 16;

/// The answer to a connection beyond its address's share.
const TOO_MANY_FROM_ADDRESS: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
    content-type: application/json\r\ncontent-length: 51\r\n\
    connection: close\r\n\r\n{\"error\":\"too many connections from this address\"}\n";

/// Answers 503 and closes; reads what the client sent meanwhile first, as closing with
/// unread bytes would reset the connection, and the client could lose the answer.
async fn refuse(mut stream: tokio::net::TcpStream) {
    if stream.write_all(TOO_MANY_FROM_ADDRESS).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = [0; 1024];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// The connections open from each address (an IPv6 address by its /64, which one host
/// may hold all of).
#[derive(Clone, Default)]
struct Addresses(Arc<Mutex<HashMap<IpAddr, usize>>>);

/// The address a connection from `ip` counts under.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        v4 => v4,
    }
}

/// One connection's share of its address, given back when dropped.
struct FromAddress {
    addresses: Addresses,
    ip: IpAddr,
}

impl Addresses {
    /// A share for one more connection from `ip`, unless it holds `max` already.
    fn enter(&self, ip: IpAddr, max: usize) -> Option<FromAddress> {
        let ip = address_key(ip);
        let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(ip).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(FromAddress {
            addresses: self.clone(),
            ip,
        })
    }
}

impl Drop for FromAddress {
    fn drop(&mut self) {
        let mut open = self
            .addresses
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpStream;

    #[allow(clippy::unwrap_used)]
    async fn start(limits: HttpLimits) -> (std::net::SocketAddr, watch::Sender<bool>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, shutdown) = watch::channel(false);
        let health = Arc::new(Health {
            metrics: Arc::new(Metrics::default()),
            ready: Arc::new(AtomicBool::new(true)),
            store: None,
            map: None,
            certificates: None,
            quic_port: 0,
            world: None,
            shutdown,
        });
        tokio::spawn(serve(listener, health, limits));
        (addr, stop)
    }

    #[allow(clippy::unwrap_used)]
    async fn request(stream: &mut TcpStream, path: &str) -> String {
        let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    /// With every place taken by a silent client, a newcomer waits; it is served as soon
    /// as one of them leaves, long before their deadline.
    #[tokio::test]
    #[allow(clippy::unwrap_used)]
    async fn connections_beyond_the_cap_wait_for_a_free_place() {
        let limits = HttpLimits {
            max_connections: 4,
            max_per_address: 4,
            connection_deadline: Duration::from_secs(30),
        };
        let (addr, _stop) = start(limits).await;
        let mut silent = Vec::new();
        for _ in 0..limits.max_connections {
            silent.push(TcpStream::connect(addr).await.unwrap());
        }
        // Give the server time to accept all of them.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut newcomer = TcpStream::connect(addr).await.unwrap();
        let waiting = tokio::spawn(async move { request(&mut newcomer, "/healthz").await });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!waiting.is_finished(), "served beyond the cap");
        drop(silent.pop());
        let response = timeout(Duration::from_secs(5), waiting)
            .await
            .expect("served once a place is free")
            .unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.ends_with("\r\n\r\nok\n"), "{response}");
    }

    /// A client that never finishes its request loses its connection at the deadline.
    #[tokio::test]
    #[allow(clippy::unwrap_used)]
    async fn a_slow_client_is_cut_at_the_deadline() {
        let limits = HttpLimits {
            max_connections: 1,
            max_per_address: 1,
            connection_deadline: Duration::from_millis(300),
        };
        let (addr, _stop) = start(limits).await;
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /metrics HT").await.unwrap();
        let mut rest = Vec::new();
        let read = timeout(Duration::from_secs(5), slow.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "still open after the deadline");
        // Its place is free again.
        let mut next = TcpStream::connect(addr).await.unwrap();
        let response = timeout(Duration::from_secs(5), request(&mut next, "/readyz"))
            .await
            .unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }

    /// One address holding its share of idle connections is answered 503 for one more at
    /// once; another address is still served, and the first is again once one of its
    /// connections ends.
    #[tokio::test]
    #[allow(clippy::unwrap_used)]
    async fn one_address_cannot_take_every_place() {
        let limits = HttpLimits {
            max_connections: 8,
            max_per_address: 2,
            connection_deadline: Duration::from_secs(30),
        };
        let (addr, _stop) = start(limits).await;
        let mut idle = Vec::new();
        for _ in 0..limits.max_per_address {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut one_more = TcpStream::connect(addr).await.unwrap();
        let response = timeout(Duration::from_secs(5), request(&mut one_more, "/healthz"))
            .await
            .expect("answered at once");
        assert!(response.starts_with("HTTP/1.1 503"), "{response}");
        assert!(
            response.ends_with("\r\n\r\n{\"error\":\"too many connections from this address\"}\n"),
            "{response}"
        );
        // Another loopback address (all of 127/8 is local on Linux) is served.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let mut other = socket.connect(addr).await.unwrap();
        let response = timeout(Duration::from_secs(5), request(&mut other, "/healthz"))
            .await
            .unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        drop(idle.pop());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut again = TcpStream::connect(addr).await.unwrap();
        let response = timeout(Duration::from_secs(5), request(&mut again, "/healthz"))
            .await
            .unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }

    /// An IPv4 client counts as itself whether or not the listener sees it mapped into
    /// IPv6; IPv6 clients count by their /64.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn addresses_count_ipv6_by_their_64() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(address_key(ip("::ffff:10.1.2.3")), ip("10.1.2.3"));
        assert_eq!(address_key(ip("10.1.2.3")), ip("10.1.2.3"));
        assert_eq!(
            address_key(ip("2001:db8:1:2:aaaa::1")),
            ip("2001:db8:1:2::")
        );
        assert_eq!(
            address_key(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")),
            address_key(ip("2001:db8:1:2::7"))
        );
        assert_ne!(
            address_key(ip("2001:db8:1:3::1")),
            address_key(ip("2001:db8:1:2::1"))
        );
    }
}
