//! Which gateways are alive, as a zone hears them: each says so every second on
//! `mmo.gateways` ([`protocol::bus::GatewayAlive`]). A player's character belongs to the
//! gateway that minted its id, and to that start of it: once that gateway has been silent
//! for [`GATEWAY_SILENT`] (killed, or cut off from the bus), or has been heard under
//! another incarnation (started again), its sessions are gone, and the zone saves the
//! character and takes it out of the world as it would on the player's leave. Otherwise a
//! gateway killed with SIGKILL, which sends no leaves, would leave every one of its
//! players' characters in the world for good, and the same account would be in the world
//! twice at its next login.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use protocol::NetId;
use protocol::bus::GatewayAlive;
use tracing::warn;

use super::ZoneWorld;

/// A gateway not heard from for this long is taken for gone (it says it is alive every
/// second; a zone that has just started waits this long for the first word).
pub(crate) const GATEWAY_SILENT: Duration = Duration::from_secs(5);

/// The gateways heard from: by index in the cluster file, the incarnation heard last and
/// when.
#[derive(Debug)]
pub(super) struct Gateways {
    started: Instant,
    heard: HashMap<u32, (u32, Instant)>,
}

impl Gateways {
    pub(super) fn new(started: Instant) -> Gateways {
        Gateways {
            started,
            heard: HashMap::new(),
        }
    }

    /// Gateway `index` said, at `now`, that it is alive as `incarnation`.
    pub(super) fn heard(&mut self, index: u32, incarnation: u32, now: Instant) {
        self.heard.insert(index, (incarnation, now));
    }

    /// Whether the gateway that minted player id `id` is gone at `now`: heard under
    /// another incarnation since, or silent for [`GATEWAY_SILENT`] (counted from the
    /// zone's start when never heard). An NPC's id has no gateway: never.
    pub(super) fn gone(&self, id: NetId, now: Instant) -> bool {
        let Some((index, incarnation)) = GatewayAlive::minted(id) else {
            return false;
        };
        match self.heard.get(&index) {
            Some(&(heard, _)) if heard != incarnation => true,
            Some(&(_, at)) => now.duration_since(at) > GATEWAY_SILENT,
            None => now.duration_since(self.started) > GATEWAY_SILENT,
        }
    }
}

impl ZoneWorld {
    /// Saves and removes the characters whose gateway is gone ([`Gateways::gone`]).
    pub(super) fn drop_orphans(&mut self, now: Instant) {
        let gone: Vec<NetId> = self
            .reals
            .iter()
            .filter(|(id, real)| real.player.is_some() && self.gateways.gone(**id, now))
            .map(|(&id, _)| id)
            .collect();
        if gone.is_empty() {
            return;
        }
        warn!(
            zone = %self.spec.name, characters = gone.len(),
            "characters whose gateway is gone (silent, or started again): saved and removed"
        );
        for id in gone {
            self.leave(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::bus::PLAYER_BIT;

    fn player(gateway: u32, incarnation: u32) -> NetId {
        NetId {
            index: PLAYER_BIT | gateway << 24 | 17,
            generation: incarnation,
        }
    }

    #[test]
    fn a_gateway_is_gone_when_silent_or_started_again() {
        let start = Instant::now();
        let mut gateways = Gateways::new(start);
        let (ada, bob) = (player(0, 7), player(1, 9));
        let npc = NetId {
            index: 17,
            generation: 0,
        };
        // Never heard: gone only once the zone has waited long enough.
        assert!(!gateways.gone(ada, start + Duration::from_secs(1)));
        assert!(gateways.gone(ada, start + GATEWAY_SILENT + Duration::from_secs(1)));
        gateways.heard(0, 7, start + Duration::from_secs(4));
        gateways.heard(1, 9, start + Duration::from_secs(4));
        let later = start + Duration::from_secs(8);
        assert!(!gateways.gone(ada, later));
        assert!(!gateways.gone(bob, later));
        // Gateway 1 started again: its players before that are gone at once.
        gateways.heard(1, 10, later);
        assert!(gateways.gone(bob, later));
        assert!(!gateways.gone(player(1, 10), later));
        // Gateway 0 silent since second 4.
        assert!(gateways.gone(ada, start + Duration::from_secs(10)));
        assert!(!gateways.gone(npc, start + Duration::from_secs(60)));
    }
}
