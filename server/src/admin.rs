//! The admin API: JSON over HTTP/1.1 on its own listener (`admin_listen`, default
//! 127.0.0.1:9101), for operators. It is on only when a bearer token is configured
//! (`admin_token_file`, or `MMO_ADMIN_TOKEN` for `server run`).
//!
//! Routes (documented for clients in `server/openapi/admin.json`, which a test holds to
//! the router): `GET /admin/world`, `GET /admin/sessions`, `POST /admin/sessions/{id}/kick`,
//! `GET /admin/entities/{id}`, `POST /admin/doors/{id}`, `POST /admin/npcs`,
//! `DELETE /admin/npcs/{id}`. Entity ids are the wire's [`protocol::NetId`] written
//! `index.generation` (such as `12.0`); session ids are the server's session numbers.
//!
//! Rules:
//! - The token is checked before routing (`admin/auth.rs`): any request without it, to any path,
//!   is 401 with `WWW-Authenticate: Bearer` and counted in `mmo_admin_unauthorized_total`.
//! - Every answer is JSON; every error is `{"error": "..."}` saying what was wrong: 400
//!   for a malformed id or body, 404 for an unknown route or thing, 405 for a method a
//!   route does not take, 409 for a change the world's state forbids, 413 for a body over
//!   [`MAX_BODY_BYTES`], 422 for a spawn point nowhere near the walkable area, 503 when
//!   the world does not answer within [`WORLD_REPLY_TIMEOUT`] (counted in
//!   `mmo_admin_world_busy_total`), 500 when the world did not apply a spawn. (A request
//!   HTTP itself cannot read, a malformed request line or headers over the limit, gets
//!   the HTTP layer's 400 or 431 with no body: it never reaches the routes.)
//! - The world thread owns the world: requests reach it as [`crate::game::ToWorld::Admin`]
//!   in its bounded inbox, which it only `try_recv`s, and come back through a oneshot
//!   ([`crate::game::admin`]). The handler waits; the world never does.
//! - The connection loop is the operations endpoint's (`http.rs`): capped
//!   connections, one request each, a deadline, graceful shutdown.

mod auth;
mod routes;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tracing::info;

pub use auth::{AdminToken, AdminTokenError, MAX_TOKEN_CHARS, MIN_TOKEN_CHARS};

use crate::game::ToWorld;
use crate::http::{HttpLimits, serve_router};
use crate::metrics::Metrics;

/// An entity id written `index.generation`, two whole numbers of ASCII digits (such as
/// `12.0`; no sign, no spaces), as the admin API and the viewer's questions take it.
pub(crate) fn parse_entity_id(text: &str) -> Option<sim::EntityId> {
    let number = |digits: &str| {
        let plain = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        plain.then(|| digits.parse().ok()).flatten()
    };
    let (index, generation) = text.split_once('.')?;
    Some(sim::EntityId {
        index: number(index)?,
        generation: number(generation)?,
    })
}

/// Largest request body read, bytes; larger ones get 413.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// How long a handler waits for the world's answer before it answers 503.
pub const WORLD_REPLY_TIMEOUT: Duration = Duration::from_secs(2);

/// What the handlers share.
pub(crate) struct AdminState {
    /// The token every request must carry.
    pub(crate) token: AdminToken,
    /// The world thread's inbox.
    pub(crate) world: mpsc::Sender<ToWorld>,
    /// Server metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// The map's id, as the welcome names it.
    pub(crate) map_id: String,
}

/// Binds the admin listener and serves it until `shutdown` flips; `None` (nothing bound)
/// without a token. Returns the bound address and the serving task.
pub(crate) async fn start(
    listen: SocketAddr,
    token: Option<AdminToken>,
    state: impl FnOnce(AdminToken) -> AdminState,
    shutdown: watch::Receiver<bool>,
) -> Result<Option<(SocketAddr, tokio::task::JoinHandle<()>)>> {
    let Some(token) = token else {
        return Ok(None);
    };
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen for the admin API on {listen}"))?;
    let addr = listener.local_addr().context("admin API address")?;
    info!(admin = %addr, "admin API listening");
    let app = routes::router(Arc::new(state(token)));
    let task = tokio::spawn(serve_router(
        listener,
        app,
        shutdown,
        HttpLimits {
            max_connections: 16,
            max_per_address: 8,
            ..HttpLimits::default()
        },
    ));
    Ok(Some((addr, task)))
}

/// A JSON answer.
fn json(status: StatusCode, value: &impl Serialize) -> Response {
    match serde_json::to_string(value) {
        Ok(body) => (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body + "\n",
        )
            .into_response(),
        Err(err) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot encode the answer: {err}"),
        ),
    }
}

/// An error answer: `{"error": text}`.
fn error(status: StatusCode, text: &str) -> Response {
    let body = serde_json::json!({ "error": text }).to_string() + "\n";
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
