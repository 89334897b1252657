//! The gateway's tasks on the bus: one brings the zones' frames to the router, one
//! publishes what the router says.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures_util::StreamExt;
use protocol::bus::{BusMessage, JoinRequest};
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::{GatewayIn, GatewayOut};
use crate::cluster::ClusterFile;
use crate::cluster::bus::{self, ALL_FRAMES, DIRECTORY, Verb, subject};
use crate::game::Kick;
use crate::persist::Persist;

/// Subscribes to every zone's frames and forwards them to the router.
pub(crate) async fn listen_frames(
    client: async_nats::Client,
    file: Arc<ClusterFile>,
    inbox: mpsc::Sender<GatewayIn>,
) -> anyhow::Result<()> {
    // The zones' directory, logged: a zone that starts, or starts again. Only the cluster
    // file's zones are remembered: each new name would be kept for ever.
    let mut directory = client.subscribe(DIRECTORY).await?;
    tokio::spawn(async move {
        let mut heard = Directory {
            file,
            known: HashMap::new(),
            strangers: HashSet::new(),
        };
        while let Some(message) = directory.next().await {
            let Ok(BusMessage::Announce(zone)) = bus::decode(&message.subject, &message.payload)
            else {
                continue;
            };
            match heard.announced(&zone.zone, zone.incarnation) {
                Heard::Up => info!(
                    zone = %zone.zone, incarnation = zone.incarnation, region = ?zone.region,
                    reals = zone.reals, "zone up"
                ),
                Heard::Again | Heard::Stranger => {}
                Heard::Unknown => warn!(
                    zone = %shown(&zone.zone),
                    "an announcement from a zone the cluster file does not name: ignored"
                ),
            }
        }
    });
    let mut frames = client.subscribe(ALL_FRAMES).await?;
    tokio::spawn(async move {
        while let Some(message) = frames.next().await {
            match bus::decode(&message.subject, &message.payload) {
                Ok(BusMessage::Frame(frame)) => {
                    if inbox.try_send(GatewayIn::Frame(Box::new(frame))).is_err() {
                        warn!("the gateway's inbox is full; a frame was dropped");
                    }
                }
                Ok(_) => warn!(subject = %message.subject, "not a frame"),
                Err(why) => warn!(%why, "bus payload refused"),
            }
        }
    });
    Ok(())
}

/// The zones heard on the directory, each with its latest incarnation: only the cluster
/// file's, so that announcements under other names cannot grow it.
struct Directory {
    file: Arc<ClusterFile>,
    known: HashMap<String, u32>,
    /// Names not in the cluster file already warned about (up to [`MAX_STRANGERS`]).
    strangers: HashSet<String>,
}

/// Zones not in the cluster file that the gateway warns about (once each), at most.
const MAX_STRANGERS: usize = 64;

/// What an announcement told the gateway.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    /// A zone of the cluster file started, or started again.
    Up,
    /// Its incarnation was already known.
    Again,
    /// The cluster file names no such zone (said the first time).
    Unknown,
    /// The same, heard before or past the names kept: not said again.
    Stranger,
}

impl Directory {
    /// What an announcement of `zone`, started as `incarnation`, tells.
    fn announced(&mut self, zone: &str, incarnation: u32) -> Heard {
        if !self.file.zones.iter().any(|spec| spec.name == zone) {
            if self.strangers.len() < MAX_STRANGERS && self.strangers.insert(zone.to_owned()) {
                Heard::Unknown
            } else {
                Heard::Stranger
            }
        } else if self.known.insert(zone.to_owned(), incarnation) == Some(incarnation) {
            Heard::Again
        } else {
            Heard::Up
        }
    }
}

/// A zone name from the bus as a log line shows it: its first 64 characters (a name the
/// cluster file does not know can be as long as a bus message).
pub(crate) fn shown(name: &str) -> &str {
    name.char_indices()
        .nth(64)
        .map_or(name, |(end, _)| &name[..end])
}

/// Publishes what the router says; joins wait for their answer on tasks of their own.
pub(crate) async fn publish(
    client: async_nats::Client,
    file: Arc<ClusterFile>,
    persist: Option<Persist>,
    mut outbox: mpsc::Receiver<GatewayOut>,
    inbox: mpsc::Sender<GatewayIn>,
) {
    while let Some(out) = outbox.recv().await {
        match out {
            GatewayOut::Publish(subject, message) => {
                if let Ok(payload) = bus::encode(&message)
                    && let Err(err) = client.publish(subject.clone(), payload).await
                {
                    warn!(%subject, %err, "cannot publish");
                }
            }
            GatewayOut::Join { request, reload } => {
                let (client, inbox, file, persist) = (
                    client.clone(),
                    inbox.clone(),
                    Arc::clone(&file),
                    persist.clone(),
                );
                tokio::spawn(async move {
                    let answer = match reload_position(request, reload, persist.as_ref()).await {
                        Ok(request) => ask_zone(&client, &file, request).await,
                        Err(refused) => refused,
                    };
                    let _ = inbox.send(answer).await;
                });
            }
        }
    }
    // The router has stopped: what it published last (the leaves of its players) must
    // leave the client's buffer before the process ends.
    match tokio::time::timeout(FLUSH_PATIENCE, client.flush()).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => warn!(%err, "cannot flush the bus as the gateway stops"),
        Err(_) => warn!(
            patience = ?FLUSH_PATIENCE,
            "the bus was not flushed in time as the gateway stopped"
        ),
    }
}

/// How long a stopping gateway waits for NATS to take what it published last.
const FLUSH_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// With `reload` (a character asked for again after its zone died), the request's
/// position from the store, kept when the store has none. A character the store cannot
/// give (its record is damaged, or the store is unavailable) is not placed where the
/// gateway last saw it, for its zone to save that over the stored character: its session
/// ends as a login is refused whose character cannot be loaded
/// ([`crate::session::load_refused`]). A first join needs no load here: the session
/// loaded the character, and refused the login if it could not.
pub(super) async fn reload_position(
    mut request: JoinRequest,
    reload: bool,
    persist: Option<&Persist>,
) -> Result<JoinRequest, GatewayIn> {
    let Some(persist) = persist.filter(|_| reload) else {
        return Ok(request);
    };
    match persist.load(&request.account).await {
        Ok(Some(saved)) => {
            request.at = saved.pos;
            // Newer than the epoch of every save of this login (a zone may have saved it
            // after a handoff the gateway never saw in a frame): the saves of the zone
            // that takes it are then never taken for older ones.
            if let Some(order) = saved.order.filter(|o| o.session == request.login)
                && request.login > 0
            {
                request.epoch = request.epoch.max(order.epoch.saturating_add(1));
            }
            Ok(request)
        }
        Ok(None) => Ok(request),
        Err(err) => {
            warn!(
                account = %request.account, id = ?request.id, %err,
                "the character asked for again cannot be loaded; its session ends"
            );
            let end = crate::session::load_refused(&err);
            Err(GatewayIn::LoadRefused(
                request.id,
                Kick {
                    reason: end.reason,
                    text: end.text,
                },
            ))
        }
    }
}

/// Asks the zone that owns the request's position for the character.
async fn ask_zone(
    client: &async_nats::Client,
    file: &ClusterFile,
    request: JoinRequest,
) -> GatewayIn {
    let zone = file
        .zone_of(request.at[0], request.at[1])
        .unwrap_or(&file.zones[0])
        .name
        .clone();
    let id = request.id;
    let answer = match bus::encode(&BusMessage::Join(request)) {
        Err(err) => Err(err.to_string()),
        Ok(payload) => match client.request(subject(&zone, Verb::Join), payload).await {
            Err(err) => Err(format!("zone {zone}: {err}")),
            Ok(reply) => match bus::decode(&reply.subject, &reply.payload) {
                Ok(BusMessage::Joined(joined)) => match joined.refused {
                    None => Ok(()),
                    Some(why) => Err(format!("zone {zone}: {why}")),
                },
                Ok(_) => Err(format!("zone {zone}: not an answer to a join")),
                Err(why) => Err(why),
            },
        },
    };
    GatewayIn::Joined(id, zone, answer)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::{Directory, Heard, shown};
    use crate::cluster::ClusterFile;

    /// Announcements under names the cluster file does not give are not remembered.
    #[test]
    fn the_directory_remembers_only_the_cluster_files_zones() {
        let file = ClusterFile::from_toml(
            "npcs = 0\nnats = \"nats://127.0.0.1:4222\"\n\
             [[zones]]\nname = \"west\"\nregion = [0.0, 0.0, 20.0, 20.0]\n\
             [[gateways]]\nname = \"gw1\"\nlisten = \"127.0.0.1:0\"\n\
             metrics_listen = \"127.0.0.1:0\"\n",
        )
        .unwrap();
        let mut directory = Directory {
            file: Arc::new(file),
            known: HashMap::new(),
            strangers: Default::default(),
        };
        assert_eq!(directory.announced("west", 1), Heard::Up);
        assert_eq!(directory.announced("west", 1), Heard::Again);
        assert_eq!(directory.announced("west", 2), Heard::Up);
        assert_eq!(directory.announced("north", 1), Heard::Unknown);
        assert_eq!(directory.announced("north", 1), Heard::Stranger);
        for n in 0..100 {
            let name = format!("{n}{}", "x".repeat(1000));
            let heard = directory.announced(&name, 1);
            assert_ne!(heard, Heard::Up);
            assert_ne!(heard, Heard::Again);
        }
        assert_eq!(directory.known.len(), 1);
        assert_eq!(directory.strangers.len(), super::MAX_STRANGERS);
    }

    #[test]
    fn a_zone_name_is_shown_up_to_64_characters() {
        assert_eq!(shown("west"), "west");
        let long = "é".repeat(100);
        assert_eq!(shown(&long), "é".repeat(64));
        assert_eq!(shown(&"z".repeat(64)), "z".repeat(64));
    }
}
