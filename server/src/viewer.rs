//! The live viewer, served by the HTTP endpoint: the page at `/` (plain JavaScript modules
//! and a canvas, in `server/viewer/`, compiled into the binary), the map as an SVG picture
//! for it to draw (`/map.svg`), and what it needs to open WebTransport (`/webtransport`:
//! the QUIC port, the session path, and the SHA-256 of the generated certificate, which the
//! page passes as `serverCertificateHashes`).

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

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
