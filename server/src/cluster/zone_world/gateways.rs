//! Which gateways are alive, as a zone hears them: each says so every second on
//! `mmo.gateways` ([`protocol::bus::GatewayAlive`]). A player's character belongs to the
//! start of the gateway that minted its id (its index and incarnation): once that has
//! been silent for [`GATEWAY_SILENT`] (killed, cut off from the bus, or started again
//! under another incarnation), its sessions are gone, and the zone saves the character and
//! takes it out of the world as it would on the player's leave. Otherwise a gateway
//! killed with SIGKILL, which sends no leaves, would leave every one of its players'
//! characters in the world for good, and the same account would be in the world twice at
//! its next login.
//!
//! Silence is counted only while the zone itself hears the bus (anything at all, its own
//! announcements on the directory among it), and from the zone's last connection to NATS:
//! a zone cut off, or back from a NATS restart before the gateways are, does not take them
//! for gone.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use protocol::NetId;
use protocol::bus::GatewayAlive;
use tracing::warn;

use super::ZoneWorld;

/// A gateway not heard from for this long is taken for gone (it says it is alive every
/// second; a zone that has just started, or connected again, waits this long for it).
pub(crate) const GATEWAY_SILENT: Duration = Duration::from_secs(5);

/// Starts of gateways not heard from for this long are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// The starts of gateways heard from, and how long the zone has heard the bus.
#[derive(Debug)]
pub(super) struct Gateways {
    /// The zone's start, or its last connection to NATS.
    since: Instant,
    /// The last time the zone heard anything on the bus.
    bus: Instant,
    /// When each start of a gateway (index in the cluster file, incarnation) was last
    /// heard.
    heard: HashMap<(u32, u32), Instant>,
}

impl Gateways {
    /// A zone started at `now`, which has heard nobody yet.
    pub(super) fn new(now: Instant) -> Gateways {
        Gateways {
            since: now,
            bus: now,
            heard: HashMap::new(),
        }
    }

    /// Gateway `index` said, at `now`, that it is alive as `incarnation`.
    pub(super) fn heard(&mut self, index: u32, incarnation: u32, now: Instant) {
        self.heard.insert((index, incarnation), now);
        self.bus = self.bus.max(now);
    }

    /// The zone heard something on the bus at `now`.
    pub(super) fn bus_heard(&mut self, now: Instant) {
        self.bus = self.bus.max(now);
    }

    /// The zone connected to NATS again at `now`: every gateway has [`GATEWAY_SILENT`]
    /// from now to be heard.
    pub(super) fn connected(&mut self, now: Instant) {
        self.since = now;
        self.bus = self.bus.max(now);
    }

    /// Whether the start of the gateway that minted player id `id` is gone: silent for
    /// [`GATEWAY_SILENT`] while the zone heard the bus, counted from its last word or
    /// from the zone's last connection, whichever is later. An NPC's id has no gateway:
    /// never.
    pub(super) fn gone(&self, id: NetId) -> bool {
        let Some(start) = GatewayAlive::minted(id) else {
            return false;
        };
        let last = self
            .heard
            .get(&start)
            .map_or(self.since, |&at| at.max(self.since));
        self.bus.saturating_duration_since(last) > GATEWAY_SILENT
    }

    /// Forgets the starts of gateways silent for a minute.
    fn forget_old(&mut self) {
        let bus = self.bus;
        self.heard
            .retain(|_, at| bus.saturating_duration_since(*at) < FORGET_AFTER);
    }
}

impl ZoneWorld {
    /// Saves and removes the characters whose gateway is gone ([`Gateways::gone`]).
    pub(super) fn drop_orphans(&mut self) {
        self.gateways.forget_old();
        let gone: Vec<NetId> = self
            .reals
            .iter()
            .filter(|(id, real)| real.player.is_some() && self.gateways.gone(**id))
            .map(|(&id, _)| id)
            .collect();
        if gone.is_empty() {
            return;
        }
        warn!(
            zone = %self.spec.name, characters = gone.len(),
            "characters whose gateway is gone (silent, or started again): saved and removed"
        );
        self.orphans_removed += gone.len() as u64;
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

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_gateway_is_gone_when_silent_while_the_bus_is_heard() {
        let start = Instant::now();
        let mut gateways = Gateways::new(start);
        let (ada, bob) = (player(0, 7), player(1, 9));
        let npc = NetId {
            index: 17,
            generation: 0,
        };
        // Never heard: gone only once the zone has heard the bus long enough.
        gateways.bus_heard(start + secs(1));
        assert!(!gateways.gone(ada));
        gateways.bus_heard(start + secs(6));
        assert!(gateways.gone(ada));
        gateways.heard(0, 7, start + secs(6));
        gateways.heard(1, 9, start + secs(6));
        gateways.bus_heard(start + secs(10));
        assert!(!gateways.gone(ada) && !gateways.gone(bob));
        // Gateway 1 started again: its earlier start's players go once that is silent.
        gateways.heard(1, 10, start + secs(10));
        assert!(!gateways.gone(bob));
        gateways.heard(0, 7, start + secs(12));
        gateways.heard(1, 10, start + secs(12));
        assert!(gateways.gone(bob));
        assert!(!gateways.gone(player(1, 10)) && !gateways.gone(ada));
        assert!(!gateways.gone(npc));
    }

    /// A zone that hears nothing (cut off from NATS) takes nobody for gone, and one that
    /// connects again gives every gateway the whole wait from then.
    #[test]
    fn a_zone_cut_off_or_back_on_the_bus_waits_for_the_gateways() {
        let start = Instant::now();
        let mut gateways = Gateways::new(start);
        let ada = player(0, 7);
        gateways.heard(0, 7, start);
        // Nothing heard for a minute: the zone is the one cut off.
        assert!(!gateways.gone(ada));
        gateways.connected(start + secs(60));
        gateways.bus_heard(start + secs(63));
        assert!(!gateways.gone(ada));
        gateways.bus_heard(start + secs(66));
        assert!(gateways.gone(ada));
    }
}
