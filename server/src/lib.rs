//! server: the game server. `server run` serves the world to QUIC clients ([`run::start`]);
//! `server simulate` runs the world headless for benchmarks and pictures
//! ([`simulate::run`]).
//!
//! Rules: the world runs on its own OS thread at a fixed 20 Hz ([`game`]) and is the only
//! authority over where bodies are; sessions ([`session`]) validate everything a client
//! sends before the world sees it and talk to the world through one bounded channel; a
//! client that misbehaves or falls behind is dropped and counted, and never slows the tick
//! or another client. Tokio and quinn stay in this crate (and in `client`, whose
//! [`tls::Fingerprint`] the server reports); the world (`sim`) and the wire (`protocol`)
//! know neither.

pub mod admin;
pub mod cluster;
pub mod config;
mod figures;
pub mod game;
mod http;
pub mod interest;
pub mod metrics;
pub mod persist;
pub mod priority;
mod progress;
pub mod run;
mod sample;
pub mod session;
pub mod simulate;
pub mod snapshot_pool;
pub mod snapshots;
mod svg;
#[cfg(test)]
mod test_support;
pub mod tls;
pub mod udp;
mod viewer;
pub mod webtransport;

/// An error and its causes, joined by ": " as anyhow's `{:#}` shows them, leaving out a
/// cause whose text the one above it already ends with (errors that show their source in
/// their own text, as the stores' do, would show it twice).
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut next = Some(err);
    while let Some(cause) = next {
        let said = cause.to_string();
        if !text.ends_with(&said) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&said);
        }
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    /// An error that shows its source in its own text.
    #[derive(Debug, thiserror::Error)]
    #[error("cannot open the store at data: {0}")]
    struct Open(#[source] std::io::Error);

    #[test]
    fn a_cause_already_shown_is_not_repeated() {
        let err = anyhow::Error::new(Open(std::io::Error::other("locked")))
            .context("cannot start the server");
        assert_eq!(
            super::error_chain(err.as_ref()),
            "cannot start the server: cannot open the store at data: locked"
        );
        let err = anyhow::Error::new(std::io::Error::other("locked")).context("cannot start");
        assert_eq!(super::error_chain(err.as_ref()), "cannot start: locked");
    }
}
