//! The `server` crate end to end: `server simulate` runs and its errors, `server run`
//! over real QUIC on loopback (with the reference client and with the load-test swarm),
//! and the binary's start and signal-driven shutdown.

// Test helpers outside `#[test]` functions may panic on setup failures: that is the report.
#![allow(clippy::unwrap_used)]

mod admin;
mod auth;
mod binary;
mod browser;
mod cluster;
mod cluster_failure;
mod cluster_gateways;
mod cluster_logout;
mod http;
mod net;
mod persist;
mod raw;
mod simulate;
mod streams;
mod swarm;
mod webdriver;
mod webtransport;
