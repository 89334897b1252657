//! The admin API's routes and handlers: each parses its id and body, asks the world thread
//! and turns the answer into JSON (see the module docs of [`crate::admin`] for the status
//! codes). Every route here is documented in `server/openapi/admin.json`; a test reads
//! the `.route(` lines of this file to hold the two together.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;
use tokio::time::timeout;

use super::{AdminState, MAX_BODY_BYTES, WORLD_REPLY_TIMEOUT, auth, error, json};
use crate::game::admin::{AdminRefusal, AdminRequest, MAX_SPAWN_PER_REQUEST, Reply};
use crate::game::{SessionId, ToWorld};

type Shared = State<Arc<AdminState>>;

/// An error answer: its status and the text of `{"error": text}`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    text: String,
}

impl ApiError {
    fn new(status: StatusCode, text: impl Into<String>) -> ApiError {
        ApiError {
            status,
            text: text.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error(self.status, &self.text)
    }
}

/// What a handler answers.
type Answer = Result<Response, ApiError>;

/// The routes behind the token check (which also guards the fallbacks).
pub(super) fn router(state: Arc<AdminState>) -> Router {
    Router::new()
        .route("/admin/world", get(world))
        .route("/admin/sessions", get(sessions))
        .route("/admin/sessions/{id}/kick", post(kick))
        .route("/admin/entities/{id}", get(entity))
        .route("/admin/doors/{id}", post(door))
        .route("/admin/npcs", post(spawn_npcs))
        .route("/admin/npcs/{id}", delete(despawn_npc))
        .fallback(|method: Method, uri: Uri| async move {
            error(
                StatusCode::NOT_FOUND,
                &format!("no route {method} {}", uri.path()),
            )
        })
        .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
            error(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("{} does not take {method}", uri.path()),
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(from_fn_with_state(Arc::clone(&state), auth::require_token))
        .with_state(state)
}

/// Sends a request to the world and waits for its answer, within [`WORLD_REPLY_TIMEOUT`]
/// for the two together (a full inbox counts against the same deadline).
async fn ask<T>(
    state: &AdminState,
    request: impl FnOnce(Reply<T>) -> AdminRequest,
) -> Result<T, ApiError> {
    let (reply, answer) = oneshot::channel();
    let asked = async {
        state
            .world
            .send(ToWorld::Admin(request(reply)))
            .await
            .map_err(|_| ())?;
        answer.await.map_err(|_| ())
    };
    match timeout(WORLD_REPLY_TIMEOUT, asked).await {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(refusal))) => Err(refused(&refusal)),
        Ok(Err(())) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the world has stopped",
        )),
        Err(_) => {
            state.metrics.admin_world_busy.inc();
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the world did not answer in time; try again",
            ))
        }
    }
}

fn refused(refusal: &AdminRefusal) -> ApiError {
    let status = match refusal {
        AdminRefusal::NoSuchSession(_)
        | AdminRefusal::NoSuchEntity(_)
        | AdminRefusal::NoSuchDoor { .. } => StatusCode::NOT_FOUND,
        AdminRefusal::NotAnNpc(_) | AdminRefusal::TooManyNpcs { .. } => StatusCode::CONFLICT,
        AdminRefusal::NotWalkable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        AdminRefusal::NotApplied => StatusCode::INTERNAL_SERVER_ERROR,
        AdminRefusal::NoWorldHere => StatusCode::NOT_IMPLEMENTED,
    };
    ApiError::new(status, refusal.to_string())
}

fn bad_request(text: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, text)
}

/// The `{id}` of a route, as text.
fn path_id(path: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    path.map(|Path(id)| id)
        .map_err(|rejection| bad_request(format!("bad path: {}", rejection.body_text())))
}

/// An entity id written `index.generation` ([`crate::admin::parse_entity_id`]).
fn entity_id(text: &str) -> Result<sim::EntityId, ApiError> {
    crate::admin::parse_entity_id(text).ok_or_else(|| {
        bad_request(format!(
            "bad entity id {text:?}: expected index.generation, two whole numbers such as 12.0"
        ))
    })
}

/// A JSON body; an empty body reads as `{}` when `empty_ok`.
fn body<T: DeserializeOwned>(
    bytes: Result<Bytes, BytesRejection>,
    empty_ok: bool,
) -> Result<T, ApiError> {
    let bytes = bytes.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is over {MAX_BODY_BYTES} bytes"),
            )
        } else {
            bad_request(format!("cannot read the body: {}", rejection.body_text()))
        }
    })?;
    let text: &[u8] = if empty_ok && bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &bytes
    };
    serde_json::from_slice(text).map_err(|err| bad_request(format!("bad JSON body: {err}")))
}

async fn world(State(state): Shared) -> Answer {
    #[derive(serde::Serialize)]
    struct World<'a> {
        map_id: &'a str,
        #[serde(flatten)]
        world: crate::game::admin::WorldInfo,
    }
    let world = ask(&state, AdminRequest::World).await?;
    let map_id = &state.map_id;
    Ok(json(StatusCode::OK, &World { map_id, world }))
}

async fn sessions(State(state): Shared) -> Answer {
    let sessions = ask(&state, AdminRequest::Sessions).await?;
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "sessions": sessions }),
    ))
}

/// `POST /admin/sessions/{id}/kick`'s optional body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KickBody {
    /// For the client's user.
    #[serde(default)]
    text: Option<String>,
}

/// Longest kick text, characters (it travels in a control frame and a close reason).
const MAX_KICK_TEXT: usize = 200;

async fn kick(
    State(state): Shared,
    path: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    let id = path_id(path)?;
    let session: SessionId = id
        .parse()
        .map_err(|_| bad_request(format!("bad session id {id:?}: expected a whole number")))?;
    let KickBody { text } = body(bytes, true)?;
    let text = text.unwrap_or_else(|| "kicked by an operator".to_owned());
    if text.chars().count() > MAX_KICK_TEXT {
        return Err(bad_request(format!(
            "text is over {MAX_KICK_TEXT} characters"
        )));
    }
    ask(&state, |reply| AdminRequest::Kick {
        session,
        text,
        reply,
    })
    .await?;
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "kicked": session }),
    ))
}

async fn entity(State(state): Shared, path: Result<Path<String>, PathRejection>) -> Answer {
    let id = entity_id(&path_id(path)?)?;
    let info = ask(&state, |reply| AdminRequest::Entity { id, reply }).await?;
    Ok(json(StatusCode::OK, &info))
}

/// `POST /admin/doors/{id}`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DoorBody {
    /// The door's new state.
    closed: bool,
}

async fn door(
    State(state): Shared,
    path: Result<Path<String>, PathRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Answer {
    let id = path_id(path)?;
    let door: usize = id
        .parse()
        .map_err(|_| bad_request(format!("bad door id {id:?}: expected a whole number")))?;
    let DoorBody { closed } = body(bytes, false)?;
    let info = ask(&state, |reply| AdminRequest::SetDoor {
        door,
        closed,
        reply,
    })
    .await?;
    Ok(json(StatusCode::OK, &info))
}

/// `POST /admin/npcs`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnBody {
    /// How many (default 1).
    #[serde(default = "one")]
    count: u32,
    /// Around this point, `[x, y]` in metres.
    #[serde(default)]
    at: Option<[f32; 2]>,
}

fn one() -> u32 {
    1
}

async fn spawn_npcs(State(state): Shared, bytes: Result<Bytes, BytesRejection>) -> Answer {
    let SpawnBody { count, at } = body(bytes, true)?;
    if !(1..=MAX_SPAWN_PER_REQUEST).contains(&count) {
        return Err(bad_request(format!(
            "count must be between 1 and {MAX_SPAWN_PER_REQUEST}, got {count}"
        )));
    }
    if let Some([x, y]) = at
        && !(x.is_finite() && y.is_finite())
    {
        return Err(bad_request(format!(
            "at must be two finite numbers (metres), got [{x}, {y}]"
        )));
    }
    let at = at.map(|[x, y]| sim::Vec2::new(x, y));
    let ids = ask(&state, |reply| AdminRequest::SpawnNpcs { count, at, reply }).await?;
    let ids: Vec<String> = ids
        .iter()
        .map(|id| format!("{}.{}", id.index, id.generation))
        .collect();
    Ok(json(
        StatusCode::CREATED,
        &serde_json::json!({ "ids": ids }),
    ))
}

async fn despawn_npc(State(state): Shared, path: Result<Path<String>, PathRejection>) -> Answer {
    let id = entity_id(&path_id(path)?)?;
    ask(&state, |reply| AdminRequest::DespawnNpc { id, reply }).await?;
    let removed = format!("{}.{}", id.index, id.generation);
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "removed": removed }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::AdminToken;
    use crate::metrics::Metrics;
    use tokio::sync::mpsc;

    /// A world that never reads its inbox gets 503 after the timeout, counted; a world
    /// that is gone gets 503 at once. The handler never hangs.
    #[tokio::test]
    async fn a_silent_world_is_busy_and_a_gone_one_stopped() {
        let (world, inbox) = mpsc::channel(1);
        let state = AdminState {
            token: AdminToken::new("0123456789abcdef").unwrap(),
            world,
            metrics: Arc::new(Metrics::default()),
            map_id: "m".to_owned(),
        };
        let started = std::time::Instant::now();
        let busy = ask(&state, AdminRequest::World).await.unwrap_err();
        assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(busy.text.contains("did not answer in time"), "{busy:?}");
        assert!(started.elapsed() >= WORLD_REPLY_TIMEOUT);
        assert_eq!(state.metrics.admin_world_busy.get(), 1);
        // The inbox is full now: the next request waits within the same deadline.
        let busy = ask(&state, AdminRequest::Sessions).await.unwrap_err();
        assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(state.metrics.admin_world_busy.get(), 2);
        drop(inbox);
        let gone = ask(&state, AdminRequest::World).await.unwrap_err();
        assert_eq!(gone.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(gone.text, "the world has stopped");
        assert_eq!(state.metrics.admin_world_busy.get(), 2);
    }

    #[test]
    fn entity_ids_are_index_dot_generation() {
        assert_eq!(
            entity_id("12.3").ok(),
            Some(sim::EntityId {
                index: 12,
                generation: 3
            })
        );
        for bad in [
            "12",
            "12.",
            ".3",
            "a.b",
            "-1.0",
            "1.2.3",
            "99999999999.0",
            "",
            "+1.0",
            "1.+0",
            " 1.0",
        ] {
            assert!(entity_id(bad).is_err(), "{bad}");
        }
    }
}
