//! The admin API's bearer token and its check, which runs before routing: any request
//! without the right token, to any path, is answered 401 and counted.

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{AdminState, error};

/// Shortest token accepted, characters: shorter ones are guessable.
pub const MIN_TOKEN_CHARS: usize = 16;
/// Longest token accepted, characters.
pub const MAX_TOKEN_CHARS: usize = 512;

/// The admin API's bearer token. Its `Debug` form does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

/// Why a token is refused ([`AdminToken::new`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdminTokenError {
    /// Fewer than [`MIN_TOKEN_CHARS`] or more than [`MAX_TOKEN_CHARS`] characters.
    #[error("the admin token must have {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters, got {0}")]
    Length(usize),
    /// A character that an `Authorization` header cannot carry as is.
    #[error("the admin token must be visible ASCII without spaces (as in a bearer token)")]
    Characters,
}

impl AdminToken {
    /// A token from its text, checked.
    pub fn new(text: &str) -> Result<AdminToken, AdminTokenError> {
        let chars = text.chars().count();
        if !(MIN_TOKEN_CHARS..=MAX_TOKEN_CHARS).contains(&chars) {
            return Err(AdminTokenError::Length(chars));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AdminTokenError::Characters);
        }
        Ok(AdminToken(text.to_owned()))
    }

    /// Whether `given` is this token. The time taken does not depend on where the two
    /// first differ, nor on `given`'s length: both are hashed and the digests compared
    /// byte by byte without an early exit.
    pub(crate) fn matches(&self, given: &[u8]) -> bool {
        let ours = ring::digest::digest(&ring::digest::SHA256, self.0.as_bytes());
        let theirs = ring::digest::digest(&ring::digest::SHA256, given);
        let differ = ours
            .as_ref()
            .iter()
            .zip(theirs.as_ref())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        differ == 0
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

/// The bearer token of an `Authorization` header (the scheme in any case).
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| token.trim_ascii())
}

/// The middleware in front of every route and the fallback.
pub(super) async fn require_token(
    State(state): State<Arc<AdminState>>,
    request: Request,
    next: Next,
) -> Response {
    let authorized = bearer(request.headers()).is_some_and(|given| state.token.matches(given));
    if authorized {
        return next.run(request).await;
    }
    state.metrics.admin_unauthorized.inc();
    let mut response = error(
        StatusCode::UNAUTHORIZED,
        "missing or wrong bearer token (Authorization: Bearer TOKEN)",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"mmo-admin\""),
    );
    response.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_and_compared_whole() {
        assert_eq!(AdminToken::new("short"), Err(AdminTokenError::Length(5)));
        assert_eq!(
            AdminToken::new("has a space in it, long enough"),
            Err(AdminTokenError::Characters)
        );
        let token = AdminToken::new("0123456789abcdef").unwrap();
        assert!(token.matches(b"0123456789abcdef"));
        assert!(!token.matches(b"0123456789abcdeF"));
        assert!(!token.matches(b"0123456789abcdef0"));
        assert!(!token.matches(b""));
        assert_eq!(format!("{token:?}"), "AdminToken(..)");
    }

    #[test]
    fn the_bearer_scheme_is_case_blind() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "bEaReR  abc ".parse().unwrap());
        assert_eq!(bearer(&headers), Some(&b"abc"[..]));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bear".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }
}
