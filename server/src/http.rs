//! A minimal HTTP/1.1 endpoint for operations: `GET /metrics` (Prometheus text format),
//! `GET /healthz` (the process is serving) and `GET /readyz` (the world has ticked and the
//! server is not shutting down). One request per connection, bounded in size and time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::timeout;
use tracing::debug;

use crate::metrics::Metrics;

/// Largest request head read, bytes.
const MAX_REQUEST_BYTES: usize = 8 * 1024;

/// What the endpoint reports on.
pub(crate) struct Health {
    /// Server metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// Set once the world has run its first tick.
    pub(crate) ready: Arc<AtomicBool>,
    /// `true` once shutdown has begun.
    pub(crate) shutdown: watch::Receiver<bool>,
}

/// Serves requests until `shutdown` flips.
pub(crate) async fn serve(listener: TcpListener, health: Arc<Health>) {
    let mut shutdown = health.shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let health = Arc::clone(&health);
                tokio::spawn(async move {
                    // Slow or broken clients are cut off; nothing else depends on them.
                    let _ = timeout(Duration::from_secs(5), answer(stream, &health)).await;
                });
            }
            _ = shutdown.changed() => return,
        }
    }
}

async fn answer(mut stream: TcpStream, health: &Health) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_REQUEST_BYTES {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                "request too large\n",
            )
            .await;
        }
    }
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let mut parts = line.split(' ');
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    debug!(method, path, "http request");
    if method != "GET" {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            "only GET\n",
        )
        .await;
    }
    match path {
        "/metrics" => {
            let body = health.metrics.render();
            respond(&mut stream, "200 OK", "text/plain; version=0.0.4", &body).await
        }
        "/healthz" => respond(&mut stream, "200 OK", "text/plain", "ok\n").await,
        "/readyz" => {
            let ready = health.ready.load(Ordering::Relaxed) && !*health.shutdown.borrow();
            if ready {
                respond(&mut stream, "200 OK", "text/plain", "ready\n").await
            } else {
                respond(
                    &mut stream,
                    "503 Service Unavailable",
                    "text/plain",
                    "not ready\n",
                )
                .await
            }
        }
        _ => respond(&mut stream, "404 Not Found", "text/plain", "not found\n").await,
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
