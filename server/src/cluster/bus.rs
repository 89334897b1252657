//! The cluster's NATS side: the subjects, the connection, and encoding on and off the bus.
//!
//! Subjects (payloads: [`protocol::bus`]):
//!
//! | subject | from → to | message |
//! | --- | --- | --- |
//! | `mmo.zone.NAME.frame` | zone → gateways, neighbours, census | `Frame` every tick |
//! | `mmo.zone.NAME.join` | gateway → zone, request/reply | `Join` → `Joined` |
//! | `mmo.zone.NAME.input` | gateway (or a zone forwarding) → zone | `Input` |
//! | `mmo.zone.NAME.leave` | gateway (or a zone forwarding) → zone | `Leave` |
//! | `mmo.zone.NAME.handoff` | zone → zone, request/reply | `Handoff` → `HandoffAck` |
//! | `mmo.directory` | zones → anyone, every second | `Announce` |
//! | `mmo.gateways` | gateways → zones, every second | `GatewayAlive` |

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use protocol::bus::BusMessage;
use protocol::codec::{decode_bus, encode_bus};
use tracing::{info, warn};

/// The subjects of one zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Its frames.
    Frame,
    /// Joins for it.
    Join,
    /// Inputs for its players.
    Input,
    /// Its players' leaves.
    Leave,
    /// Handoffs to it.
    Handoff,
}

impl Verb {
    fn name(self) -> &'static str {
        match self {
            Verb::Frame => "frame",
            Verb::Join => "join",
            Verb::Input => "input",
            Verb::Leave => "leave",
            Verb::Handoff => "handoff",
        }
    }
}

/// The subject `mmo.zone.ZONE.VERB`.
pub fn subject(zone: &str, verb: Verb) -> String {
    format!("mmo.zone.{zone}.{}", verb.name())
}

/// The zones' directory: each announces itself every second.
pub const DIRECTORY: &str = "mmo.directory";

/// The gateways' heartbeats: each says it is alive every second.
pub const GATEWAYS: &str = "mmo.gateways";

/// Every zone's frames.
pub const ALL_FRAMES: &str = "mmo.zone.*.frame";

/// How long a handoff or join waits for its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to NATS at `url` as `name`; an error names the URL. After the first
/// connection the client reconnects by itself whenever the server comes back, and
/// subscriptions carry over.
pub async fn connect(url: &str, name: &str) -> Result<async_nats::Client> {
    connect_counting(url, name, Arc::default()).await
}

/// [`connect`], counting each connection to NATS (the first one and every reconnection)
/// in `connections`.
pub async fn connect_counting(
    url: &str,
    name: &str,
    connections: Arc<AtomicU64>,
) -> Result<async_nats::Client> {
    let label = name.to_owned();
    let client = async_nats::ConnectOptions::new()
        .name(name)
        .connection_timeout(Duration::from_secs(3))
        .request_timeout(Some(REQUEST_TIMEOUT))
        .event_callback(move |event| {
            let label = label.clone();
            let connections = Arc::clone(&connections);
            async move {
                match event {
                    async_nats::Event::Connected => {
                        connections.fetch_add(1, Ordering::Relaxed);
                        info!(client = %label, "NATS connected");
                    }
                    async_nats::Event::Disconnected => {
                        warn!(client = %label, "NATS disconnected; reconnecting")
                    }
                    other => info!(client = %label, event = %other, "NATS event"),
                }
            }
        })
        .connect(url)
        .await
        .with_context(|| format!("cannot reach NATS at {url}"))?;
    Ok(client)
}

/// Encodes a message for the bus.
pub fn encode(message: &BusMessage) -> Result<Bytes> {
    Ok(Bytes::from(encode_bus(message).context("bus message")?))
}

/// Decodes a bus payload, or says what is wrong with it and where it came from.
pub fn decode(subject: &str, payload: &[u8]) -> Result<BusMessage, String> {
    decode_bus(payload).map_err(|err| format!("{subject}: {err}"))
}
