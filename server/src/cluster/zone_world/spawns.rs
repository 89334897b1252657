//! Pairing a tick's spawned bodies with what each was spawned for (an NPC, a joining
//! character, an adopted or taken-back body, a ghost), by the place of the input that
//! spawned it, and telling whoever asked when the world refused one.

use std::time::{Duration, Instant};

use protocol::NetId;
use sim::EntityId;
use tracing::{debug, error, info, warn};

use sim::{Brain, Input, Kind, Vec2};

use super::{Player, Real, Spawning, ZoneWorld};
use crate::cluster::bus::REQUEST_TIMEOUT;
use crate::game::{RADIUS_M, SPEED_MPS};

/// The most bodies a zone holds: a frame listing them all, each with the largest
/// numbers its fields can take and each a player with an applied input, stays within
/// the bus's message limit ([`protocol::codec::MAX_BUS_BYTES`]; a test checks it).
pub(crate) const MAX_ZONE_BODIES: usize = 20_000;
/// The most NPCs a zone spawns or takes over: the rest of [`MAX_ZONE_BODIES`] is kept
/// for players.
pub(crate) const NPC_ROOM: usize = 16_000;

/// How long a body stays offered with no answer before it is taken back: longer than a
/// request waits for its answer, which normally settles the offer first.
pub(super) const FLIGHT_MAX: Duration = REQUEST_TIMEOUT.saturating_mul(3);

impl ZoneWorld {
    /// The bodies this zone's frame lists (real and in flight), and those spawning this
    /// tick to be real here (ghosts are not listed).
    pub(super) fn bodies_held(&self) -> usize {
        let ghost = |what: &Spawning| matches!(what, Spawning::Ghost(..));
        let spawning = self
            .spawning
            .iter()
            .filter(|(_, what)| !ghost(what))
            .count();
        self.reals.len() + self.in_flight.len() + spawning
    }

    /// Why a body cannot come here (a join, or an offer of `kind`), if it cannot: the
    /// zone holds as many as its frame may list ([`MAX_ZONE_BODIES`]; NPCs only up to
    /// [`NPC_ROOM`], so that players always find room).
    pub(super) fn no_room(&self, npc: bool) -> Option<String> {
        let (held, most) = (
            self.bodies_held(),
            if npc { NPC_ROOM } else { MAX_ZONE_BODIES },
        );
        (held >= most).then(|| format!("zone {} is full ({held} bodies)", self.spec.name))
    }

    /// Spawns the NPCs once every neighbour has been heard from (or after
    /// [`super::NPC_SPAWN_WAIT_TICKS`]): a zone started again must not put its NPCs on bodies
    /// its neighbours kept, or walked into its region, while it was down. A spawn point
    /// such a body stands on is skipped, and so are those past [`NPC_ROOM`].
    pub(super) fn place_npcs(&mut self) {
        if self.npcs_to_place.is_empty() {
            return;
        }
        if !self.heard_from_neighbours() {
            return;
        }
        let clear = 2.0 * RADIUS_M + 0.1;
        // The neighbours' bodies at the region's edge, and this zone's own: players who
        // joined while the NPCs waited, bodies handed over to it, and this tick's spawns.
        let mut taken: Vec<Vec2> = self
            .frames
            .values()
            .flat_map(|(frame, _)| frame.bodies.iter())
            .filter(|b| self.spec.distance(b.pos[0], b.pos[1]) <= clear)
            .map(|b| Vec2::new(b.pos[0], b.pos[1]))
            .collect();
        taken.extend(self.occupied());
        let (mut skipped, mut full) = (0, 0);
        for pos in std::mem::take(&mut self.npcs_to_place) {
            if self.bodies_held() >= NPC_ROOM {
                full += 1;
                continue;
            }
            if taken.iter().any(|t| (*t - pos).length() < clear) {
                skipped += 1;
                continue;
            }
            self.inputs.push(Input::Spawn {
                kind: Kind::Npc,
                pos,
                radius_m: RADIUS_M,
                speed_mps: SPEED_MPS,
                brain: Brain::Wander,
            });
            self.spawned_for(Spawning::Npc);
        }
        info!(zone = %self.spec.name, skipped, "NPCs spawned");
        if full > 0 {
            warn!(zone = %self.spec.name, full, "NPCs of the zone's share not spawned: it holds {NPC_ROOM} bodies");
        }
    }

    /// Takes back every body offered to a neighbour longer than [`FLIGHT_MAX`] ago with no
    /// answer (the offer's request was dropped before it left, or its answer was lost on
    /// the way to the world thread), as a refusal would: a body is never left in flight,
    /// real nowhere. The offer's epoch is older than the one it is taken back with, so a
    /// neighbour that took it after all gives it up ([`ZoneWorld::superseded`]'s rule).
    /// Returns how many were taken back.
    pub(super) fn expire_flights(&mut self, now: Instant) -> u64 {
        let expired: Vec<(NetId, u32)> = (self.in_flight.iter())
            .filter(|(_, flight)| now.saturating_duration_since(flight.since) > FLIGHT_MAX)
            .map(|(&id, flight)| (id, flight.epoch))
            .collect();
        for &(id, epoch) in &expired {
            warn!(zone = %self.spec.name, ?id, "an offer unanswered for {FLIGHT_MAX:?}: taken back");
            self.answered(id, epoch, None);
        }
        expired.len() as u64
    }

    /// Notes what the input just queued spawns a body for.
    pub(super) fn spawned_for(&mut self, what: Spawning) {
        self.spawning.push((self.inputs.len() - 1, what));
    }

    /// The newest epoch at which body `id` is spawning this tick (joining, taken over or
    /// taken back), if it is.
    pub(super) fn spawning_epoch(&self, id: NetId) -> Option<u32> {
        let epochs = self.spawning.iter().filter_map(|(_, what)| match what {
            Spawning::Join(request, _) if request.id == id => Some(request.epoch),
            Spawning::Adopt(handoff, _) if handoff.id == id => Some(handoff.epoch),
            Spawning::TakeBack(taken, epoch, _) if *taken == id => Some(*epoch),
            _ => None,
        });
        epochs.max()
    }

    /// Makes `real` this zone's body `id`. Should a body hold the id already (two offers
    /// of one body, or an offer and a join, spawned in one tick), the one of the older
    /// epoch is removed from the world: one id, one body. Should its player have left
    /// while the body was not real here, it leaves now, saved where it stands.
    pub(super) fn make_real(&mut self, id: NetId, real: Real) {
        let removed = match self.reals.remove(&id) {
            Some(held) if held.epoch > real.epoch => {
                let local = real.local;
                self.reals.insert(id, held);
                Some(local)
            }
            held => {
                self.reals.insert(id, real);
                held.map(|held| held.local)
            }
        };
        if let Some(local) = removed {
            let zone = &self.spec.name;
            warn!(%zone, ?id, "two bodies for one id: the older epoch's is removed");
            self.inputs.push(Input::Despawn(local));
        }
        if self.left.remove(&id).is_some() {
            info!(zone = %self.spec.name, ?id, "a player that left while in flight leaves here");
            self.leave(id);
        }
    }

    /// Pairs this tick's spawned bodies with what they were spawned for, by the place of
    /// the input that spawned each (`spawned_by`); what the world refused to spawn is
    /// refused in turn.
    pub(super) fn take_spawned(&mut self, spawned: &[EntityId], spawned_by: &[usize]) {
        let spawning = std::mem::take(&mut self.spawning);
        let mut made = spawned_by.iter().zip(spawned).peekable();
        for (at, what) in spawning {
            let Some((_, &local)) = made.next_if(|&(&by, _)| by == at) else {
                self.not_spawned(what);
                continue;
            };
            match what {
                Spawning::Npc => {
                    let id = NetId {
                        index: ((self.index as u32 + 1) << 24) | (self.next_npc & 0xff_ffff),
                        generation: self.incarnation,
                    };
                    self.next_npc = self.next_npc.wrapping_add(1);
                    self.reals.insert(
                        id,
                        Real {
                            local,
                            epoch: 0,
                            player: None,
                        },
                    );
                }
                Spawning::Join(request, reply) => {
                    info!(zone = %self.spec.name, id = ?request.id, account = %request.account, "player joined");
                    let (id, reply) = (request.id, reply);
                    self.make_real(
                        id,
                        Real {
                            local,
                            epoch: request.epoch,
                            player: Some(Player {
                                account: request.account,
                                login: request.login,
                                taken_seq: None,
                                applied_seq: 0,
                                pending: None,
                                last_saved: None,
                            }),
                        },
                    );
                    self.answer_join(reply, id, None);
                }
                Spawning::Adopt(handoff, reply) => {
                    debug!(zone = %self.spec.name, id = ?handoff.id, from = %handoff.from, "body taken over");
                    let player = handoff.player.map(|p| Player {
                        account: p.account,
                        login: p.login,
                        taken_seq: Some(p.applied_seq),
                        applied_seq: p.applied_seq,
                        pending: None,
                        last_saved: None,
                    });
                    let real = Real {
                        local,
                        epoch: handoff.epoch,
                        player,
                    };
                    self.make_real(handoff.id, real);
                    self.answer_handoff(reply, (handoff.id, handoff.epoch), None);
                }
                Spawning::Ghost(id, epoch) => {
                    self.ghosts.insert(id, (local, epoch));
                }
                Spawning::TakeBack(id, epoch, mut player) => {
                    // Saved afresh at its new epoch: the neighbour may have saved it at
                    // the epoch it was offered with before its answer was lost.
                    if let Some(player) = player.as_mut() {
                        player.last_saved = None;
                    }
                    self.make_real(
                        id,
                        Real {
                            local,
                            epoch,
                            player,
                        },
                    );
                }
            }
        }
    }

    /// What was to be spawned and was not: the world refused the input (numbers it
    /// cannot use, no walkable point within its reach). Whoever asked is told.
    fn not_spawned(&mut self, what: Spawning) {
        let zone = &self.spec.name;
        match what {
            Spawning::Npc => warn!(%zone, "an NPC's spawn was refused"),
            Spawning::Join(request, reply) => {
                warn!(%zone, id = ?request.id, at = ?request.at, "a joining character's body was refused");
                let why = format!("no body can stand at {:?}", request.at);
                self.answer_join(reply, request.id, Some(why));
            }
            Spawning::Adopt(handoff, reply) => {
                let why = format!("no walkable point near {:?}", handoff.body.pos);
                warn!(%zone, id = ?handoff.id, %why, "handoff refused");
                self.answer_handoff(reply, (handoff.id, handoff.epoch), Some(why));
            }
            // Tried again with the neighbour's next frame while it is in the band.
            Spawning::Ghost(id, _) => debug!(%zone, ?id, "a ghost's body was refused"),
            Spawning::TakeBack(id, _, player) => error!(
                %zone, ?id, account = ?player.map(|p| p.account),
                "a body taken back from a refused handoff was refused by the world: it is lost"
            ),
        }
    }
}
