//! The world thread's side of the admin API ([`crate::admin`]): requests arrive as
//! [`ToWorld::Admin`](super::ToWorld::Admin) in the world's one inbox and are answered
//! through their oneshot. Reads are answered at once, from the state after the last tick.
//! Changes (doors, spawns, removals) go in as world inputs and are answered after the tick
//! that applied them, so a read that follows the answer sees the change.
//!
//! The world never waits here: a reply whose asker gave up is dropped (`send` on a
//! oneshot does not block).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use protocol::{DisconnectReason, NetId};
use serde::Serialize;
use sim::{Brain, EntityId, Input, Kind, Motion, Vec2};
use tokio::sync::{mpsc, oneshot};

use super::{Game, Kick, RADIUS_M, SPEED_MPS, SessionId, Spawned};
use crate::interest::net_id;
use crate::sample::SpawnPlacer;

/// Most NPCs one request may spawn.
pub const MAX_SPAWN_PER_REQUEST: u32 = 1_000;
/// Most NPCs the world may hold through admin spawns (the `npcs` setting's own bound).
pub const MAX_NPCS: usize = 100_000;
/// A spawn point off the walkable area moves to the nearest walkable point this close,
/// metres; farther, the request is refused.
const SPAWN_SNAP_M: f64 = 10.0;
/// Spacing of NPCs spawned around one point, metres (a little more than a body's width).
const SPAWN_SPACING_M: f32 = 2.2 * RADIUS_M;
/// Ticks of tick durations kept for the figures of `GET /admin/world` (10 s).
const TICK_WINDOW: usize = 200;

/// The answer to an admin request: the value, or why the world refused.
pub type Reply<T> = oneshot::Sender<Result<T, AdminRefusal>>;

/// A request from the admin API to the world thread.
#[derive(Debug)]
pub enum AdminRequest {
    /// The world's figures.
    World(Reply<WorldInfo>),
    /// The sessions with a character.
    Sessions(Reply<Vec<SessionInfo>>),
    /// Ends a session with [`DisconnectReason::Kicked`].
    Kick {
        /// Which session.
        session: SessionId,
        /// For the client's user.
        text: String,
        /// The answer.
        reply: Reply<()>,
    },
    /// One entity in detail.
    Entity {
        /// Which.
        id: EntityId,
        /// The answer.
        reply: Reply<EntityInfo>,
    },
    /// Opens or closes a door.
    SetDoor {
        /// The door's index.
        door: usize,
        /// The new state.
        closed: bool,
        /// The door after the tick that applied the change.
        reply: Reply<DoorInfo>,
    },
    /// Spawns wandering NPCs.
    SpawnNpcs {
        /// How many (1 to [`MAX_SPAWN_PER_REQUEST`]).
        count: u32,
        /// Around this point, metres; `None`: at random walkable points.
        at: Option<Vec2>,
        /// Their ids, after the tick that spawned them.
        reply: Reply<Vec<NetId>>,
    },
    /// Removes an NPC.
    DespawnNpc {
        /// Which.
        id: EntityId,
        /// Answered after the tick that removed it.
        reply: Reply<()>,
    },
}

impl AdminRequest {
    /// Answers the request with `refusal`, whatever it asked for.
    pub fn refuse(self, refusal: AdminRefusal) {
        // An asker that gave up has dropped its end: nothing to tell.
        let _ = match self {
            AdminRequest::World(reply) => reply.send(Err(refusal)).is_ok(),
            AdminRequest::Sessions(reply) => reply.send(Err(refusal)).is_ok(),
            AdminRequest::Kick { reply, .. } | AdminRequest::DespawnNpc { reply, .. } => {
                reply.send(Err(refusal)).is_ok()
            }
            AdminRequest::Entity { reply, .. } => reply.send(Err(refusal)).is_ok(),
            AdminRequest::SetDoor { reply, .. } => reply.send(Err(refusal)).is_ok(),
            AdminRequest::SpawnNpcs { reply, .. } => reply.send(Err(refusal)).is_ok(),
        };
    }
}

/// Why the world refused an admin request.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdminRefusal {
    /// No session in the world (with a character, or spectating) has this id.
    #[error("no session {0} in the world")]
    NoSuchSession(SessionId),
    /// No live entity has this id.
    #[error("no entity {0}")]
    NoSuchEntity(String),
    /// The entity is a player's character, which only its session may remove.
    #[error("entity {0} is a player's character, not an NPC: kick its session instead")]
    NotAnNpc(String),
    /// The door index is out of range.
    #[error("no door {door}: this world has {doors} doors")]
    NoSuchDoor {
        /// The index asked for.
        door: usize,
        /// How many doors there are.
        doors: usize,
    },
    /// The spawn point is nowhere near the walkable area.
    #[error("no walkable point within {SPAWN_SNAP_M} m of [{x}, {y}]")]
    NotWalkable {
        /// x asked for, metres.
        x: f32,
        /// y asked for, metres.
        y: f32,
    },
    /// The spawn would pass the world's NPC limit.
    #[error("the world holds {npcs} NPCs; {count} more would pass the limit of {MAX_NPCS}")]
    TooManyNpcs {
        /// NPCs now.
        npcs: usize,
        /// NPCs asked for.
        count: u32,
    },
    /// The world did not do what it was asked (a spawn went missing).
    #[error("the world did not apply the change")]
    NotApplied,
    /// This process is a cluster's gateway: the world runs in the zones, and only the
    /// admin API's sessions routes are served here (not the viewer's questions).
    #[error(
        "this process is a cluster gateway and runs no world: of the admin API it answers \
         the sessions routes only, and the viewer's /api not at all"
    )]
    NoWorldHere,
}

/// `GET /admin/world`.
#[derive(Clone, Debug, Serialize)]
pub struct WorldInfo {
    /// Ticks run.
    pub tick: u64,
    /// Bodies in the world.
    pub bodies: usize,
    /// NPCs among them.
    pub npcs: usize,
    /// Player characters among them.
    pub players: usize,
    /// Sessions in the world: with a character, or spectating.
    pub sessions: usize,
    /// Spectators among them.
    pub spectators: usize,
    /// Path requests waiting in the queue.
    pub paths_waiting: usize,
    /// Tick durations over the last ticks (up to 10 s).
    pub tick_ms: TickFigures,
    /// The map's bounds, metres: `[min_x, min_y, max_x, max_y]`.
    pub bounds: [f64; 4],
    /// Every door.
    pub doors: Vec<DoorInfo>,
}

/// Tick durations, milliseconds, over the ticks in [`TickFigures::window`].
#[derive(Clone, Debug, Default, Serialize)]
pub struct TickFigures {
    /// Ticks the figures cover.
    pub window: usize,
    /// The last tick.
    pub last: f64,
    /// The mean.
    pub mean: f64,
    /// The longest.
    pub max: f64,
}

/// One door.
#[derive(Clone, Debug, Serialize)]
pub struct DoorInfo {
    /// Its index (the `{id}` of `POST /admin/doors/{id}`).
    pub id: usize,
    /// Its wall segment, `[x1, y1, x2, y2]` in metres.
    pub segment: [f32; 4],
    /// Whether it is closed.
    pub closed: bool,
}

/// One session in the world (`GET /admin/sessions`).
#[derive(Clone, Debug, Serialize)]
pub struct SessionInfo {
    /// The session's number (the `{id}` of the kick route).
    pub id: SessionId,
    /// The account (the login's name).
    pub account: String,
    /// The client's address, when its transport has one.
    pub remote: Option<String>,
    /// Whether it watches without a character.
    pub spectator: bool,
    /// Its character, `index.generation`; `None` for a spectator.
    pub entity: Option<String>,
    /// When it joined the world, Unix milliseconds.
    pub connected_since_ms: u64,
    /// Where its character stands, or a spectator's view centre, metres.
    pub pos: Option<[f32; 2]>,
}

/// One entity in detail (`GET /admin/entities/{id}`).
#[derive(Clone, Debug, Serialize)]
pub struct EntityInfo {
    /// `index.generation`.
    pub id: String,
    /// `npc` or `player`.
    pub kind: &'static str,
    /// The player's session, for a player's character.
    pub session: Option<SessionId>,
    /// Where it stands, metres.
    pub pos: [f32; 2],
    /// Its radius, metres.
    pub radius_m: f32,
    /// The velocity it wanted this tick (steering, before avoidance), m/s.
    pub wanted_vel: [f32; 2],
    /// Its walking speed, m/s.
    pub speed_mps: f32,
    /// `idle`, `moving`, `waiting_for_path`, `circling` or `repulsed`.
    pub motion: &'static str,
    /// `idle`, `wander`, `patrol` or `gather`.
    pub brain: &'static str,
    /// The brain's target: a patrol's points or a gatherer's entity.
    pub brain_target: Option<serde_json::Value>,
    /// Where it is walking to.
    pub goal: Option<[f32; 2]>,
    /// Whether its path request waits in the queue.
    pub path_pending: bool,
    /// Its remaining path corners, its position first, metres.
    pub path: Vec<[f32; 2]>,
}

/// What the world thread keeps for admin requests between ticks.
#[derive(Default)]
pub(super) struct AdminQueue {
    /// NPC spawns for the next tick, in request order.
    spawns: Vec<Input>,
    /// Their askers, with how many each asked for.
    spawn_replies: Vec<(usize, Reply<Vec<NetId>>)>,
    /// Answers owed once the next tick has run.
    after_tick: Vec<AfterTick>,
    /// The last ticks' durations.
    tick_times: VecDeque<Duration>,
}

enum AfterTick {
    Door { door: usize, reply: Reply<DoorInfo> },
    Despawned(Reply<()>),
}

/// What the world knows of a session beyond its character, for the admin API.
#[derive(Clone, Debug)]
pub(super) struct SessionFacts {
    /// Where the world sends a kick.
    pub(super) kick: tokio::sync::mpsc::Sender<Kick>,
    /// The client's address.
    pub(super) remote: Option<SocketAddr>,
    /// When its character joined, Unix milliseconds.
    pub(super) since_ms: u64,
}

impl SessionFacts {
    /// The facts of a session that joins now.
    pub(super) fn new(
        kick: &tokio::sync::mpsc::Sender<Kick>,
        sink: &dyn super::DatagramSink,
    ) -> SessionFacts {
        SessionFacts {
            kick: kick.clone(),
            remote: sink.remote(),
            since_ms: u64::try_from(crate::persist::now_ms()).unwrap_or(0),
        }
    }
}

/// Answers a kick of `session`, whose kick channel is `kick` (`None`: no such session).
pub(crate) fn kick_session(
    kick: Option<&mpsc::Sender<Kick>>,
    session: SessionId,
    text: String,
    reply: Reply<()>,
) {
    let Some(kick) = kick else {
        let _ = reply.send(Err(AdminRefusal::NoSuchSession(session)));
        return;
    };
    // A full kick channel means a kick is already on its way: the session ends either way.
    let _ = kick.try_send(Kick {
        reason: DisconnectReason::Kicked,
        text,
    });
    let _ = reply.send(Ok(()));
}

fn id_text(id: EntityId) -> String {
    format!("{}.{}", id.index, id.generation)
}

fn motion_name(motion: Motion) -> &'static str {
    match motion {
        Motion::Idle => "idle",
        Motion::Moving => "moving",
        Motion::WaitingForPath => "waiting_for_path",
        Motion::Circling => "circling",
        Motion::Repulsed => "repulsed",
    }
}

fn xy(v: Vec2) -> [f32; 2] {
    [v.x, v.y]
}

impl AdminQueue {
    /// Records one tick's duration.
    pub(super) fn note_tick(&mut self, took: Duration) {
        if self.tick_times.len() == TICK_WINDOW {
            self.tick_times.pop_front();
        }
        self.tick_times.push_back(took);
    }

    fn tick_figures(&self) -> TickFigures {
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        let window = self.tick_times.len();
        if window == 0 {
            return TickFigures::default();
        }
        TickFigures {
            window,
            last: self.tick_times.back().map_or(0.0, ms),
            mean: self.tick_times.iter().map(ms).sum::<f64>() / window as f64,
            max: self.tick_times.iter().map(ms).fold(0.0, f64::max),
        }
    }
}

impl Game {
    /// Handles one admin request (see the module docs for when it is answered).
    pub(super) fn handle_admin(&mut self, request: AdminRequest) {
        // A read whose asker gave up (its HTTP connection closed, or it stopped waiting)
        // is not worked out: the world's inbox may hold many such, from a client that
        // asks and hangs up in a loop, and each read walks the world. Changes still apply.
        match request {
            AdminRequest::World(reply) if reply.is_closed() => {}
            AdminRequest::Sessions(reply) if reply.is_closed() => {}
            AdminRequest::Entity { reply, .. } if reply.is_closed() => {}
            AdminRequest::World(reply) => {
                let _ = reply.send(Ok(self.world_info()));
            }
            AdminRequest::Sessions(reply) => {
                let _ = reply.send(Ok(self.session_infos()));
            }
            AdminRequest::Kick {
                session,
                text,
                reply,
            } => {
                let facts = match self.clients.get(&session) {
                    Some(client) => Some(&client.facts),
                    None => self.spectators.get(&session).map(|s| &s.facts),
                };
                kick_session(facts.map(|f| &f.kick), session, text, reply);
            }
            AdminRequest::Entity { id, reply } => {
                let _ = reply.send(self.entity_info(id));
            }
            AdminRequest::SetDoor {
                door,
                closed,
                reply,
            } => {
                let doors = self.world.doors_closed().len();
                if door >= doors {
                    let _ = reply.send(Err(AdminRefusal::NoSuchDoor { door, doors }));
                    return;
                }
                self.inputs.push(Input::SetDoor { door, closed });
                self.admin.after_tick.push(AfterTick::Door { door, reply });
            }
            AdminRequest::SpawnNpcs { count, at, reply } => match self.npc_spawns(count, at) {
                Ok(spawns) => {
                    self.admin.spawn_replies.push((spawns.len(), reply));
                    self.admin.spawns.extend(spawns);
                }
                Err(refusal) => {
                    let _ = reply.send(Err(refusal));
                }
            },
            AdminRequest::DespawnNpc { id, reply } => {
                let Some(body) = self.world.body(id) else {
                    let _ = reply.send(Err(AdminRefusal::NoSuchEntity(id_text(id))));
                    return;
                };
                if body.kind != Kind::Npc {
                    let _ = reply.send(Err(AdminRefusal::NotAnNpc(id_text(id))));
                    return;
                }
                // Asked twice before the tick: one removal, both answered after it.
                if !self.inputs.contains(&Input::Despawn(id)) {
                    self.inputs.push(Input::Despawn(id));
                }
                self.admin.after_tick.push(AfterTick::Despawned(reply));
            }
        }
    }

    /// Queues the admin's NPC spawns among the tick's inputs, after those queued so far;
    /// returns the place of the first.
    pub(super) fn queue_admin_spawns(&mut self) -> usize {
        let first = self.inputs.len();
        self.inputs.append(&mut self.admin.spawns);
        first
    }

    /// Answers what was owed after the tick: the spawned NPCs' ids (each request's spawns
    /// are the inputs from `first` on, in the order asked), doors, removals. A request some
    /// of whose spawns the world refused is answered `NotApplied`.
    pub(super) fn finish_admin(&mut self, spawned: Spawned<'_>, first: usize) {
        let mut input = first;
        for (count, reply) in std::mem::take(&mut self.admin.spawn_replies) {
            let got: Vec<NetId> = (input..input + count)
                .filter_map(|at| spawned.by_input(at))
                .map(net_id)
                .collect();
            input += count;
            let answer = if got.len() == count {
                Ok(got)
            } else {
                Err(AdminRefusal::NotApplied)
            };
            let _ = reply.send(answer);
        }
        for owed in std::mem::take(&mut self.admin.after_tick) {
            match owed {
                AfterTick::Door { door, reply } => {
                    let _ = reply.send(Ok(self.door_info(door)));
                }
                AfterTick::Despawned(reply) => {
                    let _ = reply.send(Ok(()));
                }
            }
        }
    }

    /// Records a tick's duration for `GET /admin/world`.
    pub(super) fn note_tick_time(&mut self, took: Duration) {
        self.admin.note_tick(took);
    }

    fn door_info(&self, door: usize) -> DoorInfo {
        DoorInfo {
            id: door,
            segment: self.config.doors.get(door).copied().unwrap_or([0.0; 4]),
            closed: self
                .world
                .doors_closed()
                .get(door)
                .copied()
                .unwrap_or(false),
        }
    }

    fn world_info(&self) -> WorldInfo {
        let (mut npcs, mut players) = (0, 0);
        for body in self.world.bodies() {
            match body.kind {
                Kind::Npc => npcs += 1,
                Kind::Player => players += 1,
            }
        }
        let bounds = self.world.mesh().bounds();
        WorldInfo {
            tick: self.world.tick().0,
            bodies: npcs + players,
            npcs,
            players,
            sessions: self.clients.len() + self.spectators.len(),
            spectators: self.spectators.len(),
            paths_waiting: self.metrics.paths_waiting.get().max(0) as usize,
            tick_ms: self.admin.tick_figures(),
            bounds: [bounds.min.x, bounds.min.y, bounds.max.x, bounds.max.y],
            doors: (0..self.world.doors_closed().len())
                .map(|door| self.door_info(door))
                .collect(),
        }
    }

    fn session_infos(&self) -> Vec<SessionInfo> {
        let players = self.clients.iter().map(|(&id, client)| SessionInfo {
            id,
            account: client.name.clone(),
            remote: client.facts.remote.map(|addr| addr.to_string()),
            spectator: false,
            entity: Some(id_text(client.entity)),
            connected_since_ms: client.facts.since_ms,
            pos: self.world.body(client.entity).map(|b| xy(b.pos)),
        });
        let spectators = self.spectators.iter().map(|(&id, spectator)| SessionInfo {
            id,
            account: spectator.name.clone(),
            remote: spectator.facts.remote.map(|addr| addr.to_string()),
            spectator: true,
            entity: None,
            connected_since_ms: spectator.facts.since_ms,
            pos: Some(xy(spectator.at)),
        });
        let mut sessions: Vec<SessionInfo> = players.chain(spectators).collect();
        sessions.sort_by_key(|session| session.id);
        sessions
    }

    fn entity_info(&self, id: EntityId) -> Result<EntityInfo, AdminRefusal> {
        let detail = self
            .world
            .inspect(id)
            .ok_or_else(|| AdminRefusal::NoSuchEntity(id_text(id)))?;
        let (brain, brain_target) = match &detail.brain {
            Brain::Idle => ("idle", None),
            Brain::Wander => ("wander", None),
            Brain::Patrol(points) => (
                "patrol",
                Some(serde_json::json!(
                    points.iter().map(|&p| xy(p)).collect::<Vec<_>>()
                )),
            ),
            Brain::Gather(target) => ("gather", Some(serde_json::json!(id_text(*target)))),
        };
        let session = self
            .clients
            .iter()
            .find(|(_, client)| client.entity == id)
            .map(|(&session, _)| session);
        Ok(EntityInfo {
            id: id_text(id),
            kind: match detail.view.kind {
                Kind::Npc => "npc",
                Kind::Player => "player",
            },
            session,
            pos: xy(detail.view.pos),
            radius_m: detail.view.radius_m,
            wanted_vel: xy(detail.wanted_vel),
            speed_mps: detail.speed_mps,
            motion: motion_name(detail.view.motion),
            brain,
            brain_target,
            goal: detail.goal.map(xy),
            path_pending: detail.path_pending,
            path: detail.path.iter().map(|&p| xy(p)).collect(),
        })
    }

    /// The spawn inputs of `count` wandering NPCs: around `at` on a spiral a body's width
    /// apart, or at random walkable points kept clear of walls.
    fn npc_spawns(&mut self, count: u32, at: Option<Vec2>) -> Result<Vec<Input>, AdminRefusal> {
        let npcs =
            self.world.bodies().filter(|b| b.kind == Kind::Npc).count() + self.admin.spawns.len();
        if npcs + count as usize > MAX_NPCS {
            return Err(AdminRefusal::TooManyNpcs { npcs, count });
        }
        let spawn = |pos: Vec2| Input::Spawn {
            kind: Kind::Npc,
            pos,
            radius_m: RADIUS_M,
            speed_mps: SPEED_MPS,
            brain: Brain::Wander,
        };
        let mesh = self.world.mesh();
        let Some(at) = at else {
            // Clear of walls, of each other and of the bodies in the world.
            let mut placer = SpawnPlacer::new(mesh, f64::from(RADIUS_M));
            for body in self.world.bodies() {
                placer.occupy(navmesh::Point::new(
                    f64::from(body.pos.x),
                    f64::from(body.pos.y),
                ));
            }
            return Ok((0..count)
                .filter_map(|_| placer.place(&mut self.rng))
                .map(|(p, _)| spawn(Vec2::new(p.x as f32, p.y as f32)))
                .collect());
        };
        let wanted = navmesh::Point::new(f64::from(at.x), f64::from(at.y));
        let Some((centre, _)) = mesh.nearest_point(wanted, SPAWN_SNAP_M) else {
            return Err(AdminRefusal::NotWalkable { x: at.x, y: at.y });
        };
        let centre = Vec2::new(centre.x as f32, centre.y as f32);
        // A sunflower spiral: one body per disc of the spacing's diameter, at the points of
        // it where a body stands clear of the walls (those off the walkable area or against
        // a wall are passed over: moved onto the walkable area, they would land on each
        // other), up to eight times as many points as asked for; fewer may be placed.
        let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
        let radius = f64::from(RADIUS_M);
        let standable = |p: Vec2| {
            let at = navmesh::Point::new(f64::from(p.x), f64::from(p.y));
            mesh.locate(at).is_some() && mesh.clearance(at, radius) >= radius
        };
        let tries = count.saturating_mul(8).saturating_add(64);
        Ok((0..tries)
            .map(|i| {
                let r = SPAWN_SPACING_M * (i as f32).sqrt();
                let (s, c) = (golden * i as f32).sin_cos();
                centre + Vec2::new(r * c, r * s)
            })
            .filter(|&p| standable(p))
            .take(count as usize)
            .map(spawn)
            .collect())
    }
}

#[cfg(test)]
mod tests;
