//! The live viewer, served by the HTTP endpoint: the page at `/` (plain JavaScript modules
//! and a canvas, in `server/viewer/`, compiled into the binary), the map as an SVG picture
//! for it to draw (`/map.svg`), and what it needs to open WebTransport (`/webtransport`:
//! the QUIC port, the session path, and the SHA-256 of the generated certificate, which the
//! page passes as `serverCertificateHashes`). Two read-only questions to the world feed the
//! page's corner and its selection: `/api/world` (tick, tick times, counts) and
//! `/api/npcs/{index.generation}` (an NPC's motion, brain, goal and path; players'
//! characters are not shown to others). They go to the world thread as the admin API's
//! do, through its bounded inbox, and answer 503 when it does not reply within a second.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use serde_json::json;
use tokio::sync::oneshot;

use crate::game::ToWorld;
use crate::game::admin::{AdminRefusal, AdminRequest, Reply};
use crate::http::Health;
use crate::webtransport::h3::SESSION_PATH;

const INDEX_HTML: &str = include_str!("../viewer/index.html");
const APP_JS: &str = include_str!("../viewer/app.js");
const WIRE_JS: &str = include_str!("../viewer/wire.js");

/// The viewer's routes.
pub(crate) fn routes() -> Router<Arc<Health>> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/viewer/app.js",
            get(|| async { asset("text/javascript", APP_JS) }),
        )
        .route(
            "/viewer/wire.js",
            get(|| async { asset("text/javascript", WIRE_JS) }),
        )
        .route("/map.svg", get(map_svg))
        .route("/webtransport", get(webtransport))
        .route("/api/world", get(world))
        .route("/api/npcs/{id}", get(npc))
}

/// How long the viewer's questions wait for the world.
const WORLD_REPLY_TIMEOUT: Duration = Duration::from_secs(1);

fn json_answer(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        format!("{body}\n"),
    )
        .into_response()
}

fn json_error(status: StatusCode, text: impl std::fmt::Display) -> Response {
    json_answer(status, &json!({ "error": text.to_string() }))
}

/// Asks the world thread; the answer, or the response to give instead.
async fn ask<T>(
    health: &Health,
    request: impl FnOnce(Reply<T>) -> AdminRequest,
) -> Result<Result<T, AdminRefusal>, Response> {
    let unavailable = |text| json_error(StatusCode::SERVICE_UNAVAILABLE, text);
    let Some(world) = &health.world else {
        return Err(unavailable("this server runs no world"));
    };
    let (reply, answer) = oneshot::channel();
    let asked = async {
        world
            .send(ToWorld::Admin(request(reply)))
            .await
            .map_err(|_| ())?;
        answer.await.map_err(|_| ())
    };
    match tokio::time::timeout(WORLD_REPLY_TIMEOUT, asked).await {
        Ok(Ok(Err(refusal @ AdminRefusal::NoWorldHere))) => {
            Err(json_error(StatusCode::NOT_IMPLEMENTED, refusal))
        }
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(())) => Err(unavailable("the world has stopped")),
        Err(_) => Err(unavailable("the world did not answer in time; try again")),
    }
}

/// The page's corner: tick, tick times and counts.
async fn world(State(health): State<Arc<Health>>) -> Response {
    match ask(&health, AdminRequest::World).await {
        Ok(Ok(info)) => json_answer(
            StatusCode::OK,
            &json!({
                "tick": info.tick,
                "npcs": info.npcs,
                "players": info.players,
                "spectators": info.spectators,
                "tick_ms": info.tick_ms,
            }),
        ),
        Ok(Err(refusal)) => json_error(StatusCode::CONFLICT, refusal),
        Err(response) => response,
    }
}

/// One NPC for the page's selection: what it does and the path it follows.
async fn npc(
    State(health): State<Arc<Health>>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match id {
        Ok(Path(id)) => id,
        Err(rejection) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                format!("bad path: {}", rejection.body_text()),
            );
        }
    };
    let Some(id) = crate::admin::parse_entity_id(&id) else {
        return json_error(
            StatusCode::BAD_REQUEST,
            format!("bad entity id {id:?}: expected index.generation, such as 12.0"),
        );
    };
    match ask(&health, |reply| AdminRequest::Entity { id, reply }).await {
        Ok(Ok(info)) if info.kind == "npc" => json_answer(
            StatusCode::OK,
            &json!({
                "id": info.id,
                "pos": info.pos,
                "motion": info.motion,
                "brain": info.brain,
                "goal": info.goal,
                "path_pending": info.path_pending,
                "path": info.path,
            }),
        ),
        Ok(Ok(info)) => json_error(StatusCode::NOT_FOUND, format!("{} is not an NPC", info.id)),
        Ok(Err(refusal)) => json_error(StatusCode::NOT_FOUND, refusal),
        Err(response) => response,
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// Where and how the page opens its WebTransport session.
async fn webtransport(State(health): State<Arc<Health>>) -> Response {
    let hash = health
        .certificates
        .as_ref()
        .and_then(|certs| certs.webtransport())
        .map(|cert| format!("\"{}\"", cert.sha256_hex()))
        .unwrap_or_else(|| "null".to_owned());
    let body = format!(
        "{{\"port\":{},\"path\":\"{SESSION_PATH}\",\"certificate_sha256\":{hash}}}\n",
        health.quic_port
    );
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The walkable area and the walls as SVG in map coordinates (its `viewBox` is the map's
/// bounds, also given in `X-Bounds-*` headers).
async fn map_svg(State(health): State<Arc<Health>>) -> Response {
    let Some(map) = &health.map else {
        return (StatusCode::NOT_FOUND, "this server serves no map\n").into_response();
    };
    let [min_x, min_y, max_x, max_y] = map.bounds;
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "image/svg+xml".to_owned()),
            (header::CACHE_CONTROL, "public, max-age=3600".to_owned()),
            (
                header::HeaderName::from_static("x-bounds-min-x"),
                min_x.to_string(),
            ),
            (
                header::HeaderName::from_static("x-bounds-min-y"),
                min_y.to_string(),
            ),
            (
                header::HeaderName::from_static("x-bounds-max-x"),
                max_x.to_string(),
            ),
            (
                header::HeaderName::from_static("x-bounds-max-y"),
                max_y.to_string(),
            ),
        ],
        map.svg.clone(),
    )
        .into_response()
}

/// Draws `mesh`: walkable triangles filled, walls as lines.
pub(crate) fn walkable_svg(mesh: &navmesh::NavMesh) -> String {
    let b = mesh.bounds();
    let (w, h) = (b.max.x - b.min.x, b.max.y - b.min.y);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="{} {} {w} {h}" shape-rendering="crispEdges">"#,
        b.min.x, b.min.y
    );
    let mut d = String::new();
    for t in 0..mesh.triangle_count() {
        let [p, q, r] = mesh.triangle_points(navmesh::TriId(t as u32));
        let _ = write!(d, "M{} {}L{} {}L{} {}Z", p.x, p.y, q.x, q.y, r.x, r.y);
    }
    let _ = write!(
        svg,
        r##"<path fill="#3b4a52" stroke="#3b4a52" stroke-width="0.05" d="{d}"/>"##
    );
    let mut walls = String::new();
    for wall in mesh.walls() {
        let a = mesh.vertices()[wall.from.index()];
        let c = mesh.vertices()[wall.to.index()];
        let _ = write!(walls, "M{} {}L{} {}", a.x, a.y, c.x, c.y);
    }
    let _ = write!(
        svg,
        r##"<path fill="none" stroke="#8fa3ad" stroke-width="0.15" d="{walls}"/></svg>"##
    );
    svg
}
