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
