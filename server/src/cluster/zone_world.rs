//! A zone's world thread: the bodies real in its region, the ghosts of its neighbours'
//! bodies near its borders, the handoffs in both directions, and its players. No NATS
//! here: the bus shell ([`super::zone`]) hands it what arrived ([`ZoneIn`]) and takes
//! what it has to say ([`ZoneOut`]), so the world thread never waits on the bus.
//!
//! Custody rules (see `docs/zones.md`):
//! - a body is real in exactly one zone; a zone hands a real body that walked more than
//!   the handoff margin out of its region to the zone that owns its position, with its
//!   epoch plus one, and lists it as in flight until the answer;
//! - the receiver makes it real, publishes a frame with it, and only then answers;
//! - on a refusal or no answer the sender takes it back with its epoch plus one again, and
//!   of two real claims on one id the higher epoch wins (the lower one is dropped).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use navmesh::{NavMesh, Rng};
use protocol::bus::{
    BusMessage, Custody, FrameBody, Handoff, HandoffAck, HandoffPlayer, JoinReply, JoinRequest,
    ZoneAnnounce, ZoneFrame,
};
use protocol::{Command, NetId};
use sim::{Carried, EntityId, Input, Kind, Vec2, World, WorldConfig};
use store::SaveOrder;
use tracing::{info, warn};

use super::bus::{DIRECTORY, Verb, subject};
use super::carry::{carried, carried_body, entity_kind, world_kind};
use super::{ClusterFile, ZoneSpec};
use crate::game::{RADIUS_M, SPEED_MPS};
use crate::persist::{Saver, now_ms};
use crate::sample::SpawnPlacer;

/// What the bus brought a zone.
#[derive(Debug)]
pub(crate) enum ZoneIn {
    /// A gateway asks for a character; answer on `reply`.
    Join(JoinRequest, Option<String>),
    /// A player's command.
    Input(protocol::bus::PlayerInput),
    /// A player left.
    Leave(NetId),
    /// A gateway saw a newer real claim on this body elsewhere, at this epoch
    /// ([`protocol::bus::Superseded`]).
    Superseded(NetId, u32),
    /// A neighbour hands over a body; answer on `reply`.
    Handoff(Box<Handoff>, Option<String>),
    /// The answer to a handoff this zone sent (`None`: none came in time).
    HandoffAnswer {
        /// The body.
        id: NetId,
        /// The epoch it was offered with.
        epoch: u32,
        /// The answer.
        ack: Option<HandoffAck>,
    },
    /// A neighbour's frame.
    Frame(Box<ZoneFrame>),
    /// A zone, this one among them, announced itself on the directory: the bus is heard.
    Announced,
    /// A gateway says it is alive ([`protocol::bus::GatewayAlive`]).
    GatewayAlive {
        /// Its place among the cluster file's gateways.
        index: u32,
        /// Which start of it.
        incarnation: u32,
    },
}

/// What a zone says on the bus, in order.
#[derive(Debug)]
pub(crate) enum ZoneOut {
    /// Published on `subject`.
    Publish(String, BusMessage),
    /// A handoff request on `subject`; its answer comes back as [`ZoneIn::HandoffAnswer`].
    Request(String, BusMessage, NetId, u32),
}

/// Counts the shell turns into metrics.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ZoneCounts {
    /// Bodies real here.
    pub(crate) reals: usize,
    /// Bodies handed over and not yet answered.
    pub(crate) in_flight: usize,
    /// Ghosts mirrored.
    pub(crate) ghosts: usize,
    /// Player characters real here.
    pub(crate) players: usize,
}

struct Player {
    account: String,
    /// Its login's number in the store ([`JoinRequest::login`]); 0: not numbered.
    login: u64,
    taken_seq: Option<u32>,
    applied_seq: u32,
    pending: Option<Command>,
    last_saved: Option<[f32; 2]>,
}

impl Player {
    /// Where a save made at `epoch` stands among the character's saves, when its login is
    /// numbered.
    fn order(&self, epoch: u32) -> Option<SaveOrder> {
        (self.login > 0).then_some(SaveOrder {
            session: self.login,
            epoch,
        })
    }
}

struct Real {
    local: EntityId,
    epoch: u32,
    player: Option<Player>,
}

struct InFlight {
    to: String,
    epoch: u32,
    since: Instant,
    carried: Carried,
    player: Option<Player>,
}

/// What a spawn input in this tick's list was for, in order.
enum Spawning {
    Npc,
    Join(JoinRequest, Option<String>),
    Adopt(Box<Handoff>, Option<String>),
    Ghost(NetId, u32),
    TakeBack(NetId, u32, Option<Player>),
}

/// How one of this zone's handoffs ended, for the shell's metrics.
pub(crate) enum Settled {
    /// The neighbour took it, this long after the offer.
    Handed(Duration),
    /// Refused or unanswered: the body stayed here.
    Failed,
}

/// The zone's world and everything it keeps about bodies across the cluster.
pub(crate) struct ZoneWorld {
    world: World,
    file: Arc<ClusterFile>,
    spec: ZoneSpec,
    index: usize,
    incarnation: u32,
    reals: BTreeMap<NetId, Real>,
    in_flight: BTreeMap<NetId, InFlight>,
    ghosts: HashMap<NetId, (EntityId, u32)>,
    /// Each neighbour's latest frame and when it came.
    frames: BTreeMap<String, (ZoneFrame, Instant)>,
    /// Where bodies went, so late inputs and leaves follow them.
    handed_to: HashMap<NetId, (String, u64)>,
    /// Bodies whose offer was not taken, with the tick from which they may be offered
    /// again: a neighbour that is full (or refuses for any reason) is not asked at every
    /// tick.
    offer_after: HashMap<NetId, u64>,
    /// Players whose leave came while their body was not real here (offered to or taken
    /// over from a neighbour, or not offered here yet), with the tick: should the body
    /// become real here after all (the offer refused, the body still spawning, or the
    /// offer coming after the leave), it leaves then.
    left: HashMap<NetId, u64>,
    inputs: Vec<Input>,
    /// What each of this tick's spawning inputs is for, with its place in `inputs`.
    spawning: Vec<(usize, Spawning)>,
    /// Bodies handed over in the last tick: at the next step each becomes a ghost where it
    /// stood (id, its body here, where, its new epoch).
    leaving: Vec<(NetId, EntityId, Vec2, u32, Kind)>,
    out: Vec<ZoneOut>,
    /// Answers sent after this tick's frame.
    answers: Vec<ZoneOut>,
    next_npc: u32,
    /// Where this zone's NPCs will spawn, once its neighbours have been heard from.
    npcs_to_place: Vec<Vec2>,
    /// Joins to place at the next tick once every neighbour has been heard from (see
    /// [`ZoneWorld::join`]), with their reply subjects.
    deferred_joins: Vec<(JoinRequest, Option<String>)>,
    saver: Option<Saver>,
    ticks: u64,
    /// The gateways heard from: their players' characters go with them.
    gateways: gateways::Gateways,
    /// Characters removed because their gateway was gone, and offers taken back unanswered
    /// ([`ZoneWorld::expire_flights`]), not yet taken for the metrics.
    orphans_removed: u64,
    flights_expired: u64,
    /// Whether a message came since the last tick.
    heard_bus: bool,
}

/// Ticks between two announcements on the directory (a second).
const ANNOUNCE_EVERY_TICKS: u64 = 20;
/// Ticks between two rounds of saving the players that moved.
const SAVE_EVERY_TICKS: u64 = 10;
/// How long a zone remembers where a body went, ticks (late inputs follow it).
const REMEMBER_HANDED_TICKS: u64 = 200;
/// Ticks a body whose offer was not taken waits before it is offered again.
const REOFFER_AFTER_TICKS: u64 = 20;
/// Leaves remembered for bodies not here (yet) at most: a bound on what a flood of leaves
/// for unknown ids holds.
const LEFT_AHEAD_MAX: usize = 16_384;
/// Ticks a starting zone waits for its neighbours' frames before spawning its NPCs.
const NPC_SPAWN_WAIT_TICKS: u64 = 40;
/// A neighbour whose last frame is older than this is taken for down.
const NEIGHBOUR_STALE: Duration = Duration::from_secs(1);
pub(crate) use protocol::bus::PLAYER_BIT;

mod gateways;
mod players;
mod spawns;

pub(crate) use spawns::NPC_ROOM;

impl ZoneWorld {
    /// Zone `index` of `file` on `mesh`, with its share of the NPCs spawned at the first
    /// tick; `incarnation` tells this start from earlier ones.
    pub(crate) fn new(
        mesh: Arc<NavMesh>,
        file: Arc<ClusterFile>,
        index: usize,
        incarnation: u32,
        saver: Option<Saver>,
    ) -> ZoneWorld {
        let spec = file.zones[index].clone();
        let seed = file.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let world = World::new(WorldConfig::default(), Arc::clone(&mesh), seed);
        let mut zone = ZoneWorld {
            world,
            spec,
            index,
            incarnation,
            reals: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            ghosts: HashMap::new(),
            frames: BTreeMap::new(),
            handed_to: HashMap::new(),
            offer_after: HashMap::new(),
            left: HashMap::new(),
            inputs: Vec::new(),
            spawning: Vec::new(),
            leaving: Vec::new(),
            out: Vec::new(),
            answers: Vec::new(),
            next_npc: 0,
            npcs_to_place: Vec::new(),
            deferred_joins: Vec::new(),
            saver,
            ticks: 0,
            gateways: gateways::Gateways::new(Instant::now()),
            orphans_removed: 0,
            flights_expired: 0,
            heard_bus: false,
            file,
        };
        zone.spawn_npcs(&mesh, seed);
        zone
    }

    /// Queues this zone's share of the NPCs: the cluster's count times its share of the
    /// walkable area (estimated by sampling), placed in its region.
    fn spawn_npcs(&mut self, mesh: &NavMesh, seed: u64) {
        let mut rng = Rng::new(seed);
        let samples = 4_000;
        let mine = (0..samples)
            .filter_map(|_| mesh.random_point(&mut rng))
            .filter(|(p, _)| self.spec.contains(p.x as f32, p.y as f32))
            .count();
        let count = (f64::from(self.file.npcs) * mine as f64 / f64::from(samples)).round() as usize;
        let mut placer = SpawnPlacer::new(mesh, f64::from(RADIUS_M));
        let mut placed = 0;
        for _ in 0..count.saturating_mul(50) {
            if placed == count {
                break;
            }
            let Some((p, _)) = placer.place(&mut rng) else {
                break;
            };
            if !self.spec.contains(p.x as f32, p.y as f32) {
                continue;
            }
            self.npcs_to_place.push(Vec2::new(p.x as f32, p.y as f32));
            placed += 1;
        }
        info!(zone = %self.spec.name, npcs = placed, "NPC spawn points chosen in the region");
    }
    /// Whether this zone has a frame of every neighbour (or has waited
    /// [`NPC_SPAWN_WAIT_TICKS`] for them): until then its world lacks the ghosts of the
    /// neighbours' bodies at its edge, and new bodies (NPCs, joining characters) wait, or
    /// they could land on them.
    fn heard_from_neighbours(&self) -> bool {
        self.frames.len() >= self.file.neighbours(&self.spec).len()
            || self.ticks >= NPC_SPAWN_WAIT_TICKS
    }

    /// Where bodies stand, or will once this tick's inputs are stepped: the world's bodies
    /// and ghosts, and the bodies the queued inputs spawn, take over or move a ghost to.
    fn occupied(&self) -> impl Iterator<Item = Vec2> + '_ {
        let queued = self.inputs.iter().filter_map(|input| match input {
            Input::Spawn { pos, .. }
            | Input::SpawnGhost { pos, .. }
            | Input::PlaceGhost(_, pos) => Some(*pos),
            Input::Adopt(carried) => Some(carried.pos),
            _ => None,
        });
        self.world.bodies().map(|b| b.pos).chain(queued)
    }

    /// Takes one message from the bus.
    pub(crate) fn handle(&mut self, message: ZoneIn) -> Option<Settled> {
        self.heard_bus = true;
        match message {
            ZoneIn::Join(request, reply) => self.join(request, reply),
            ZoneIn::Input(input) => {
                if let Some(player) = self
                    .reals
                    .get_mut(&input.id)
                    .and_then(|real| real.player.as_mut())
                {
                    if player.taken_seq.is_none_or(|taken| input.seq > taken) {
                        player.taken_seq = Some(input.seq);
                        if input.command != Command::Nothing {
                            player.pending = Some(input.command);
                        }
                    }
                } else if let Some(flight) = self.in_flight.get(&input.id) {
                    let to = flight.to.clone();
                    self.forward(&to, Verb::Input, BusMessage::Input(input));
                } else if let Some((to, _)) = self.handed_to.get(&input.id).cloned() {
                    self.forward(&to, Verb::Input, BusMessage::Input(input));
                }
            }
            ZoneIn::Leave(id) => self.leave(id),
            ZoneIn::Superseded(id, epoch) => self.superseded(id, epoch),
            ZoneIn::Handoff(handoff, reply) => self.offered(handoff, reply),
            ZoneIn::HandoffAnswer { id, epoch, ack } => return self.answered(id, epoch, ack),
            ZoneIn::GatewayAlive { index, incarnation } => {
                self.gateways.heard(index, incarnation, Instant::now());
            }
            ZoneIn::Announced => {}
            ZoneIn::Frame(frame) => {
                // Another zone of the cluster file: a frame under any other name would put
                // ghosts here, and each new name would be kept for ever.
                let known = self.file.zones.iter().any(|zone| zone.name == frame.zone);
                if known && frame.zone != self.spec.name {
                    self.frames
                        .insert(frame.zone.clone(), (*frame, Instant::now()));
                }
            }
        }
        None
    }

    fn forward(&mut self, zone: &str, verb: Verb, message: BusMessage) {
        self.out
            .push(ZoneOut::Publish(subject(zone, verb), message));
    }

    /// Answers a join on `reply` (none: nobody waits for it): placed, or refused and why.
    fn answer_join(&mut self, reply: Option<String>, id: NetId, refused: Option<String>) {
        if let Some(reply) = reply {
            let answer = BusMessage::Joined(JoinReply { id, refused });
            self.answers.push(ZoneOut::Publish(reply, answer));
        }
    }

    /// Answers a handoff on `reply` (none: nobody waits for it): taken, or refused and why.
    fn answer_handoff(
        &mut self,
        reply: Option<String>,
        (id, epoch): (NetId, u32),
        refused: Option<String>,
    ) {
        if let Some(reply) = reply {
            let answer = BusMessage::HandoffAck(HandoffAck { id, epoch, refused });
            self.answers.push(ZoneOut::Publish(reply, answer));
        }
    }

    /// A neighbour offers a body.
    fn offered(&mut self, handoff: Box<Handoff>, reply: Option<String>) {
        let held = self
            .reals
            .get(&handoff.id)
            .map(|r| r.epoch)
            .or_else(|| self.in_flight.get(&handoff.id).map(|f| f.epoch))
            .or_else(|| self.spawning_epoch(handoff.id));
        let named = self.file.zones.iter().any(|zone| zone.name == handoff.from);
        let why = if !named || handoff.from == self.spec.name {
            Some(format!(
                "{:?} is not another zone of the cluster file",
                handoff.from
            ))
        } else if held.is_some_and(|epoch| epoch >= handoff.epoch) {
            Some(format!("epoch {} is not newer than ours", handoff.epoch))
        } else if let Some(why) = self.no_room(handoff.player.is_none()) {
            Some(why)
        } else if !carried(&handoff.body).is_valid() {
            Some("the body's numbers are not usable".to_owned())
        } else if let Some(player) = &handoff.player {
            players::account_problem(&player.account)
        } else {
            None
        };
        if let Some(why) = why {
            warn!(zone = %self.spec.name, id = ?handoff.id, %why, "handoff refused");
            self.answer_handoff(reply, (handoff.id, handoff.epoch), Some(why));
            return;
        }
        if let Some(real) = self.reals.remove(&handoff.id) {
            // An older claim of ours loses to the newer epoch.
            self.inputs.push(Input::Despawn(real.local));
        }
        if let Some((ghost, _)) = self.ghosts.remove(&handoff.id) {
            self.inputs.push(Input::Despawn(ghost));
        }
        self.inputs
            .push(Input::Adopt(Box::new(carried(&handoff.body))));
        self.spawned_for(Spawning::Adopt(handoff, reply));
    }

    /// The answer to one of our handoffs.
    fn answered(&mut self, id: NetId, epoch: u32, ack: Option<HandoffAck>) -> Option<Settled> {
        let flight = self.in_flight.get(&id).filter(|f| f.epoch == epoch)?;
        match ack {
            Some(HandoffAck { refused: None, .. }) => {
                let flight = self.in_flight.remove(&id)?;
                self.handed_to.insert(id, (flight.to, self.ticks));
                Some(Settled::Handed(flight.since.elapsed()))
            }
            answer => {
                warn!(
                    zone = %self.spec.name, ?id, to = %flight.to,
                    why = ?answer.and_then(|a| a.refused),
                    "handoff not taken; the body stays here"
                );
                let flight = self.in_flight.remove(&id)?;
                self.offer_after
                    .insert(id, self.ticks + REOFFER_AFTER_TICKS);
                // Refused before the next tick (a neighbour that just went down answers
                // "no responders" at once): the body has not been turned into a ghost
                // yet, so it is simply real again. Taking it back as a new body would
                // leave it standing on its own ghost for a tick, and it would be offered
                // and refused again every other tick.
                if let Some(k) = self.leaving.iter().position(|l| l.0 == id) {
                    let (_, local, _, _, _) = self.leaving.remove(k);
                    let mut player = flight.player;
                    if let Some(player) = player.as_mut() {
                        player.last_saved = None;
                    }
                    let epoch = flight.epoch.saturating_add(1);
                    self.make_real(
                        id,
                        Real {
                            local,
                            epoch,
                            player,
                        },
                    );
                    return Some(Settled::Failed);
                }
                self.inputs.push(Input::Adopt(Box::new(flight.carried)));
                self.spawned_for(Spawning::TakeBack(
                    id,
                    flight.epoch.saturating_add(1),
                    flight.player,
                ));
                Some(Settled::Failed)
            }
        }
    }

    /// The zone connected to NATS again: the gateways' silence counts from now.
    pub(crate) fn bus_connected(&mut self) {
        self.gateways.connected(Instant::now());
    }

    /// Characters removed because their gateway was gone, since the last call.
    pub(crate) fn take_orphans_removed(&mut self) -> u64 {
        std::mem::take(&mut self.orphans_removed)
    }

    /// Offers taken back with no answer since the last call.
    pub(crate) fn take_flights_expired(&mut self) -> u64 {
        std::mem::take(&mut self.flights_expired)
    }

    /// One tick: ghosts placed, players' commands, the world stepped, bodies handed over,
    /// the frame and the answers queued. Returns what to say on the bus, in order.
    pub(crate) fn tick(&mut self) -> (sim::StepOutput, Vec<ZoneOut>) {
        self.ticks += 1;
        if std::mem::take(&mut self.heard_bus) {
            self.gateways.bus_heard(Instant::now());
        }
        self.sync_ghosts();
        if self.ticks.is_multiple_of(ANNOUNCE_EVERY_TICKS) {
            self.drop_orphans();
        }
        self.place_npcs();
        self.flights_expired += self.expire_flights(Instant::now());
        if !self.deferred_joins.is_empty() && self.heard_from_neighbours() {
            for (request, reply) in std::mem::take(&mut self.deferred_joins) {
                self.place_join(request, reply);
            }
        }
        for (id, local, pos, epoch, kind) in std::mem::take(&mut self.leaving) {
            // The source keeps a body it handed over only as a ghost.
            self.inputs.push(Input::Despawn(local));
            self.inputs.push(Input::SpawnGhost {
                kind,
                pos,
                radius_m: RADIUS_M,
                speed_mps: SPEED_MPS,
            });
            self.spawned_for(Spawning::Ghost(id, epoch));
        }
        self.players_commands();
        let out = self.world.step(&self.inputs);
        self.inputs.clear();
        self.take_spawned(&out.spawned, &out.spawned_by);
        self.hand_over();
        self.handed_to
            .retain(|_, (_, at)| self.ticks.saturating_sub(*at) < REMEMBER_HANDED_TICKS);
        self.left
            .retain(|_, at| self.ticks.saturating_sub(*at) < REMEMBER_HANDED_TICKS);
        self.offer_after.retain(|_, after| self.ticks < *after);
        if self.ticks.is_multiple_of(SAVE_EVERY_TICKS) {
            self.save_moved();
        }
        // The frame goes first: it lists the bodies offered in this tick as in flight
        // before their offers leave, and the bodies taken over as real before the answers
        // that say so, so a listener to every frame never sees a body real twice or
        // nowhere.
        let mut said = vec![ZoneOut::Publish(
            subject(&self.spec.name, Verb::Frame),
            BusMessage::Frame(self.frame()),
        )];
        said.append(&mut self.out);
        said.append(&mut self.answers);
        if self.ticks % ANNOUNCE_EVERY_TICKS == 1 {
            said.push(ZoneOut::Publish(
                DIRECTORY.to_owned(),
                BusMessage::Announce(ZoneAnnounce {
                    zone: self.spec.name.clone(),
                    incarnation: self.incarnation,
                    region: self.spec.region,
                    tick: self.world.tick().0,
                    reals: self.reals.len() as u32,
                    in_flight: self.in_flight.len() as u32,
                }),
            ));
        }
        (out, said)
    }

    /// Drops our real claim on `id` if it is older than `epoch`, which a gateway saw in
    /// another zone's frame (one that may not be a neighbour: its frames never reach us).
    /// Not saved: the newer claim's saves win over ours anyway.
    fn superseded(&mut self, id: NetId, epoch: u32) {
        if self.reals.get(&id).is_some_and(|real| real.epoch < epoch)
            && let Some(real) = self.reals.remove(&id)
        {
            let (zone, ours) = (&self.spec.name, real.epoch);
            warn!(%zone, ?id, ours, newer = epoch, "a gateway saw a newer claim; ours is dropped");
            self.inputs.push(Input::Despawn(real.local));
        }
    }

    /// Mirrors the neighbours' bodies within the ghost band; drops our real claims that a
    /// neighbour holds with a newer epoch.
    fn sync_ghosts(&mut self) {
        let band = self.file.ghost_band_m;
        let mut seen: HashMap<NetId, ()> = HashMap::with_capacity(self.ghosts.len());
        // Bodies in flight keep their ghost here until their new owner's frame moves it.
        for id in self.in_flight.keys() {
            seen.insert(*id, ());
        }
        // Bodies becoming ghosts here, and bodies becoming real here this tick (adopted,
        // joined, taken back): no second body for them.
        let mut becoming: Vec<NetId> = self.leaving.iter().map(|l| l.0).collect();
        becoming.extend(self.spawning.iter().filter_map(|(_, s)| match s {
            Spawning::Join(request, _) => Some(request.id),
            Spawning::Adopt(handoff, _) => Some(handoff.id),
            Spawning::TakeBack(id, _, _) => Some(*id),
            Spawning::Npc | Spawning::Ghost(..) => None,
        }));
        let mut lost = Vec::new();
        // A neighbour silent for a second is down: its ghosts go (they come back with it).
        let now = Instant::now();
        self.frames
            .retain(|_, (_, at)| now.duration_since(*at) < NEIGHBOUR_STALE);
        for (frame, _) in self.frames.values() {
            for body in &frame.bodies {
                if let Some(real) = self.reals.get(&body.id) {
                    if body.custody == Custody::Real && body.epoch > real.epoch {
                        lost.push(body.id);
                    }
                    continue;
                }
                // A position that is not a number is in no band.
                let near = self.spec.distance(body.pos[0], body.pos[1]) <= band;
                if becoming.contains(&body.id)
                    || !near
                    || (seen.contains_key(&body.id) && !self.in_flight.contains_key(&body.id))
                {
                    continue;
                }
                seen.insert(body.id, ());
                let pos = Vec2::new(body.pos[0], body.pos[1]);
                match self.ghosts.get(&body.id) {
                    Some(&(local, _)) => self.inputs.push(Input::PlaceGhost(local, pos)),
                    None => {
                        self.inputs.push(Input::SpawnGhost {
                            kind: world_kind(body.kind),
                            pos,
                            radius_m: body.radius_m,
                            speed_mps: body.speed_mps,
                        });
                        // (`spawned_for`, with the frames still borrowed.)
                        let at = self.inputs.len() - 1;
                        self.spawning
                            .push((at, Spawning::Ghost(body.id, body.epoch)));
                    }
                }
            }
        }
        for id in lost {
            if let Some(real) = self.reals.remove(&id) {
                warn!(zone = %self.spec.name, ?id, "a newer claim elsewhere; ours is dropped");
                self.inputs.push(Input::Despawn(real.local));
            }
        }
        let gone: Vec<NetId> = self
            .ghosts
            .keys()
            .filter(|id| !seen.contains_key(id))
            .copied()
            .collect();
        for id in gone {
            if let Some((local, _)) = self.ghosts.remove(&id) {
                self.inputs.push(Input::Despawn(local));
            }
        }
    }

    /// Offers every real body more than the margin out of the region to its new owner.
    fn hand_over(&mut self) {
        let margin = self.file.handoff_margin_m;
        let leaving: Vec<(NetId, String)> = self
            .reals
            .iter()
            .filter_map(|(&id, real)| {
                let body = self.world.body(real.local)?;
                if self.spec.distance(body.pos.x, body.pos.y) <= margin {
                    return None;
                }
                let owner = self.file.zone_of(body.pos.x, body.pos.y)?;
                // A neighbour that is down (no fresh frame) cannot take it: it stays real
                // here, offered again once the neighbour is back.
                let waits = self.offer_after.get(&id).is_some_and(|&t| self.ticks < t);
                if !self.frames.contains_key(&owner.name) || waits {
                    return None;
                }
                Some((id, owner.name.clone()))
            })
            .collect();
        for (id, to) in leaving {
            let Some(real) = self.reals.remove(&id) else {
                continue;
            };
            let Some(carried) = self.world.carry(real.local) else {
                continue;
            };
            // Saturating: an epoch is a number from the bus, and one that wrapped would look
            // older than every claim.
            let epoch = real.epoch.saturating_add(1);
            let handoff = Handoff {
                from: self.spec.name.clone(),
                id,
                epoch,
                player: real.player.as_ref().map(|p| HandoffPlayer {
                    account: p.account.clone(),
                    applied_seq: p.applied_seq,
                    login: p.login,
                }),
                body: carried_body(&carried),
            };
            if let (Some(saver), Some(player)) = (self.saver.as_mut(), real.player.as_ref()) {
                let mut last = None;
                let pos = [carried.pos.x, carried.pos.y];
                let order = player.order(real.epoch);
                saver.record(
                    &player.account,
                    &player.account,
                    pos,
                    order,
                    &mut last,
                    now_ms(),
                );
                saver.flush();
            }
            self.out.push(ZoneOut::Request(
                subject(&to, Verb::Handoff),
                BusMessage::Handoff(handoff),
                id,
                epoch,
            ));
            self.leaving
                .push((id, real.local, carried.pos, epoch, carried.kind));
            self.in_flight.insert(
                id,
                InFlight {
                    to,
                    epoch,
                    since: Instant::now(),
                    carried,
                    player: real.player,
                },
            );
        }
    }

    fn frame(&self) -> ZoneFrame {
        let mut bodies = Vec::with_capacity(self.reals.len() + self.in_flight.len());
        let mut applied = Vec::new();
        for (&id, real) in &self.reals {
            let Some(body) = self.world.body(real.local) else {
                continue;
            };
            bodies.push(FrameBody {
                id,
                epoch: real.epoch,
                custody: Custody::Real,
                kind: entity_kind(body.kind),
                pos: [body.pos.x, body.pos.y],
                radius_m: body.radius_m,
                speed_mps: SPEED_MPS,
                motion: crate::interest::wire_motion(body.motion),
            });
            if let Some(player) = &real.player {
                applied.push((id, player.applied_seq));
            }
        }
        for (&id, flight) in &self.in_flight {
            let c = &flight.carried;
            bodies.push(FrameBody {
                id,
                epoch: flight.epoch,
                custody: Custody::InFlight,
                kind: entity_kind(c.kind),
                pos: [c.pos.x, c.pos.y],
                radius_m: c.radius_m,
                speed_mps: c.speed_mps,
                motion: crate::interest::wire_motion(c.motion),
            });
        }
        ZoneFrame {
            zone: self.spec.name.clone(),
            incarnation: self.incarnation,
            tick: self.world.tick().0,
            bodies,
            applied,
        }
    }

    /// The counts for the metrics.
    pub(crate) fn counts(&self) -> ZoneCounts {
        ZoneCounts {
            reals: self.reals.len(),
            in_flight: self.in_flight.len(),
            ghosts: self.ghosts.len(),
            players: self.reals.values().filter(|r| r.player.is_some()).count(),
        }
    }
}

#[cfg(test)]
mod tests;
