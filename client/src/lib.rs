//! client: the network side of a game client, in working code. It connects over QUIC
//! pinning the server's certificate by its SHA-256 fingerprint ([`tls`]), logs in, sends
//! inputs and rebuilds its view from delta snapshots ([`Client`]).
//!
//! Role: the server's integration tests drive the server with it, the load-test swarm
//! (`loadtest`) builds its bots' connections on it, and it shows a client author the
//! protocol at work. It knows tokio and quinn but nothing of the server: the wire is
//! `protocol`, the trust is a fingerprint, so a client never links the world or the map
//! code.
//!
//! Entry points: [`endpoint`] makes a QUIC endpoint that accepts the certificates a
//! [`Trust`] allows; [`Client::connect`] logs in on it; [`open`] only opens the control
//! stream, for tests that misbehave on purpose.

mod connection;
pub mod tls;

pub use connection::{
    Client, ClientError, WELCOME_TIMEOUT, close_reason, endpoint, endpoint_with_receive_buffer,
    open,
};
pub use tls::{Fingerprint, FingerprintError, Trust};
