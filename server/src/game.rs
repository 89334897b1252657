//! The world thread: the authoritative 20 Hz loop.
//!
//! One OS thread owns the [`World`]. Sessions talk to it only through one bounded channel
//! ([`ToWorld`]): joins, validated inputs, leaves, and the admin API's requests
//! ([`admin`], answered through oneshots). Each tick it drains that channel, steps
//! the world, captures a [`crate::interest::Frame`] of every body's wire state and offers it to the snapshot
//! workers ([`crate::snapshot_pool`]) with `try_send`: they build and send every client's
//! datagram while the world steps the next tick, and a worker still busy skips that tick
//! for its clients (counted) rather than the world waiting. Ticks are
//! scheduled against deadlines 50 ms apart; a late tick is counted as an overrun and the
//! schedule restarts from now rather than running missed ticks in a burst.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use navmesh::{NavMesh, Rng};
use protocol::{Command, DisconnectReason, NetId};
use sim::{Brain, EntityId, Input, Kind, PhaseClock, Vec2, World, WorldConfig};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

pub mod admin;

use crate::interest::{Frame, ViewRange, capture, net_id};
use crate::metrics::Metrics;
use crate::persist::{Saver, now_ms};
use crate::sample::SpawnPlacer;
use crate::snapshots::{ClientTick, Membership, NewViewer, SnapshotJob};
use spectators::Spectator;

mod departed;
mod inputs;
mod spectators;
mod world_loop;

pub(crate) use inputs::command_input;
use inputs::take_input;
pub(crate) use world_loop::Pacer;
pub use world_loop::run_loop;

/// A session, numbered by the accept loop.
pub type SessionId = u64;

/// The tick period.
pub const TICK: Duration = Duration::from_millis(50);

/// Body radius of NPCs and player characters, metres.
pub const RADIUS_M: f32 = 0.4;
/// Walking speed of NPCs and player characters, metres per second.
pub const SPEED_MPS: f32 = 1.5;
/// Spawn points prepared at start for joining players.
const SPAWN_POINTS: usize = 256;
/// How far from the configured spawn point players appear by default, metres.
pub const SPAWN_SPREAD_M: f32 = 8.0;
/// Random points tried when looking for spawn points near the configured one.
const SPAWN_TRIES: usize = 200_000;

/// Where a session's snapshots go: a QUIC connection, or a recorder in tests and benches.
pub trait DatagramSink: Send {
    /// Largest datagram the path takes now, `None` when the peer refuses datagrams.
    fn max_datagram_size(&self) -> Option<usize>;
    /// Free bytes in the outgoing datagram buffer.
    fn send_space(&self) -> usize;
    /// Queues one datagram; `false` when the connection is gone.
    fn send(&self, datagram: Bytes) -> bool;
    /// The client's address, for the admin API; `None` when the transport has none.
    fn remote(&self) -> Option<std::net::SocketAddr> {
        None
    }
}

impl DatagramSink for quinn::Connection {
    fn max_datagram_size(&self) -> Option<usize> {
        quinn::Connection::max_datagram_size(self)
    }
    fn send_space(&self) -> usize {
        self.datagram_send_buffer_space()
    }
    fn send(&self, datagram: Bytes) -> bool {
        self.send_datagram(datagram).is_ok()
    }
    fn remote(&self) -> Option<std::net::SocketAddr> {
        Some(self.remote_address())
    }
}

/// The world tells a session to end.
#[derive(Debug)]
pub struct Kick {
    /// Why.
    pub reason: DisconnectReason,
    /// For the client's user.
    pub text: String,
}

/// What a joining session gets back.
#[derive(Debug)]
pub struct Joined {
    /// The character.
    pub entity: NetId,
}

/// A message from a session to the world thread.
pub enum ToWorld {
    /// A logged-in session wants a character.
    Join {
        /// Which session.
        session: SessionId,
        /// Its player's name (also its account).
        name: String,
        /// Its login's number in the store ([`crate::persist::Claimed::login`]), which a
        /// gateway passes on to the zones for the order of the character's saves; 0 when
        /// not numbered.
        login: u64,
        /// Where its character was saved, if it has been: it resumes there when that
        /// point is still walkable.
        resume_at: Option<Vec2>,
        /// The order of the stored character's last save (`None`: no character, or a
        /// save without one): a gateway that saw the character after that save goes on
        /// from there instead (`cluster::gateway`'s departures).
        saved_order: Option<store::SaveOrder>,
        /// A spectator's starting point: no character, a view from there.
        spectate: Option<Vec2>,
        /// Where its snapshots go.
        sink: Box<dyn DatagramSink>,
        /// Where the world sends a kick.
        kick: mpsc::Sender<Kick>,
        /// The answer.
        reply: oneshot::Sender<Result<Joined, DisconnectReason>>,
    },
    /// A validated input.
    Input {
        /// Whose.
        session: SessionId,
        /// The input.
        input: protocol::Input,
    },
    /// The session ended.
    Leave {
        /// Which.
        session: SessionId,
        /// Its account's claim in the store, when it holds one: a gateway gives it back
        /// only once its save of where it last saw the character is written
        /// ([`crate::persist::Persist::save_then_release`]); elsewhere it is dropped.
        claim: Option<crate::persist::Claimed>,
    },
    /// A request from the admin API ([`admin`]).
    Admin(admin::AdminRequest),
}

/// The world thread's settings.
#[derive(Clone, Debug)]
pub struct GameConfig {
    /// NPCs spawned at start.
    pub npcs: u32,
    /// Seed of the spawn generator and the world.
    pub seed: u64,
    /// The world's path search budget, node expansions per tick.
    pub path_budget: u32,
    /// The world's path search budget per body, node expansions per tick.
    pub path_budget_per_body: f32,
    /// Whether the world answers path requests through the mesh's corner graph.
    pub path_corner_graph: bool,
    /// Players spawn within `spawn_spread_m` of this point; `None`: anywhere.
    pub spawn_point: Option<Vec2>,
    /// How far from `spawn_point` players appear, metres ([`SPAWN_SPREAD_M`] by default).
    pub spawn_spread_m: f32,
    /// Most clients at once.
    pub max_clients: u32,
    /// What each client sees.
    pub view: ViewRange,
    /// Doors, `[x1, y1, x2, y2]` in metres, all open at start.
    pub doors: Vec<[f32; 4]>,
}

struct Client {
    entity: EntityId,
    name: String,
    /// Its login's number in the store (0: not numbered).
    login: u64,
    /// Where its character was last handed to the store.
    last_saved: Option<[f32; 2]>,
    /// Newest input sequence taken (applied at the next tick).
    taken_seq: Option<u32>,
    /// Sequence of the last input the world applied.
    applied_seq: u32,
    /// Command waiting for the next tick.
    pending: Option<Command>,
    /// Its session's kick channel, address and start, for the admin API.
    facts: admin::SessionFacts,
}

/// Whether the session that asked for a character still wants it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// The session waits for its character.
    Waiting,
    /// The session ended first: its character is removed as soon as it exists.
    Abandoned,
}

struct PendingJoin {
    /// The place of its character's spawn among the tick's inputs.
    input: usize,
    session: SessionId,
    claim: Claim,
    name: String,
    login: u64,
    sink: Box<dyn DatagramSink>,
    kick: mpsc::Sender<Kick>,
    reply: oneshot::Sender<Result<Joined, DisconnectReason>>,
}

/// A tick's spawned bodies, each with the place among the tick's inputs of the spawn that
/// made it (`sim::StepOutput::spawned` and `spawned_by`, both in input order).
#[derive(Clone, Copy)]
struct Spawned<'a> {
    ids: &'a [EntityId],
    by: &'a [usize],
}

impl Spawned<'_> {
    /// The body the input at `input` spawned, if the world spawned one.
    fn by_input(self, input: usize) -> Option<EntityId> {
        let at = self.by.binary_search(&input).ok()?;
        self.ids.get(at).copied()
    }
}

/// The world and everything the thread keeps about its clients.
pub struct Game {
    world: World,
    config: GameConfig,
    metrics: Arc<Metrics>,
    clients: BTreeMap<SessionId, Client>,
    spectators: BTreeMap<SessionId, Spectator>,
    spawn_points: Vec<Vec2>,
    rng: Rng,
    inputs: Vec<Input>,
    joins: Vec<PendingJoin>,
    orphans: Vec<EntityId>,
    /// Session changes for the snapshot workers, not handed over yet.
    membership: Membership,
    /// Characters' saves, when the server keeps characters.
    saver: Option<Saver>,
    /// Where the characters that left lately stood.
    departed: departed::Departed,
    /// Ticks run, for the save rounds.
    ticks: u64,
    /// Admin requests waiting for the next tick, and the tick times they report.
    admin: admin::AdminQueue,
    /// The last frame captured, whose roster the next one takes while the bodies stay the
    /// same ([`Frame::follow`]).
    last_frame: Option<Arc<Frame>>,
}

/// Ticks between two rounds of saving the characters that moved (0.5 s).
const SAVE_EVERY_TICKS: u64 = 10;
/// How far from a saved position a character may resume, metres: a saved point that is no
/// longer walkable (a changed map) within this distance means a fresh spawn.
const RESUME_SNAP_M: f64 = 2.0;

struct WallClock(Instant);

impl PhaseClock for WallClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

impl Game {
    /// A world on `mesh` with its NPCs, spawned in the first tick.
    pub fn new(mesh: Arc<NavMesh>, config: GameConfig, metrics: Arc<Metrics>) -> Game {
        let mut rng = Rng::new(config.seed);
        let mut placer = SpawnPlacer::new(&mesh, f64::from(RADIUS_M));
        let mut inputs = Vec::with_capacity(config.npcs as usize);
        for _ in 0..config.npcs {
            let Some((p, _)) = placer.place(&mut rng) else {
                break;
            };
            inputs.push(Input::Spawn {
                kind: Kind::Npc,
                pos: Vec2::new(p.x as f32, p.y as f32),
                radius_m: RADIUS_M,
                speed_mps: SPEED_MPS,
                brain: Brain::Wander,
            });
        }
        let near = |p: &Vec2| {
            config
                .spawn_point
                .is_none_or(|at| (*p - at).length() <= config.spawn_spread_m)
        };
        // Clear of walls by a body's diameter: two players that join on nearby points can
        // always be parted there (against a wall, the repulsion may pin them together).
        let spawn_points: Vec<Vec2> = (0..SPAWN_TRIES)
            .filter_map(|_| mesh.random_point(&mut rng))
            .filter(|(p, _)| mesh.nearest_wall(*p, 2.0 * f64::from(RADIUS_M)).is_none())
            .map(|(p, _)| Vec2::new(p.x as f32, p.y as f32))
            .filter(near)
            .take(SPAWN_POINTS)
            .collect();
        if spawn_points.is_empty() {
            warn!("no walkable spawn point found; logins will be refused");
        }
        let world_config = WorldConfig {
            path_budget_per_tick: config.path_budget as usize,
            path_budget_per_body: config.path_budget_per_body,
            path_corner_graph: config.path_corner_graph,
            doors: config
                .doors
                .iter()
                .map(|&[x1, y1, x2, y2]| (Vec2::new(x1, y1), Vec2::new(x2, y2)))
                .collect(),
            ..WorldConfig::default()
        };
        let world = World::new(world_config, mesh, config.seed);
        Game {
            world,
            config,
            metrics,
            clients: BTreeMap::new(),
            spectators: BTreeMap::new(),
            spawn_points,
            rng,
            inputs,
            joins: Vec::new(),
            orphans: Vec::new(),
            membership: Membership::default(),
            saver: None,
            departed: departed::Departed::default(),
            ticks: 0,
            admin: admin::AdminQueue::default(),
            last_frame: None,
        }
    }

    /// Keeps characters: saves the players' positions through `saver` every
    /// `SAVE_EVERY_TICKS` ticks when they moved, and when they leave.
    pub fn keep_characters(&mut self, saver: Saver) {
        self.saver = Some(saver);
    }

    /// How many spawn points were found for joining players (within `spawn_spread_m` of
    /// `spawn_point`, clear of walls); with none, every login is refused.
    pub fn spawn_point_count(&self) -> usize {
        self.spawn_points.len()
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Handles one message from a session.
    pub fn handle(&mut self, message: ToWorld) {
        match message {
            ToWorld::Join {
                session,
                name,
                login,
                resume_at,
                saved_order: _,
                spectate,
                sink,
                kick,
                reply,
            } => {
                let joining = self.clients.len() + self.spectators.len() + self.joins.len();
                if joining >= self.config.max_clients as usize
                    || (self.spawn_points.is_empty() && spectate.is_none())
                {
                    // The session may be gone already; then nobody needs the answer.
                    let _ = reply.send(Err(DisconnectReason::ServerFull));
                    return;
                }
                if let Some(at) = spectate {
                    self.add_spectator(session, name, at, sink, kick, reply);
                    return;
                }
                let resume_at = self.departed.resume(&name, login).or(resume_at);
                let resumed = resume_at.and_then(|p| {
                    let wanted = navmesh::Point::new(f64::from(p.x), f64::from(p.y));
                    let (at, _) = self.world.mesh().nearest_point(wanted, RESUME_SNAP_M)?;
                    Some(Vec2::new(at.x as f32, at.y as f32))
                });
                let wanted = resumed.unwrap_or_else(|| {
                    let at = self.rng.range(0, self.spawn_points.len() as u64 - 1) as usize;
                    self.spawn_points[at]
                });
                // Clear of the bodies there (but those leaving this tick, a character
                // that logged out included) and of those joining this tick.
                let leaving: Vec<EntityId> = (self.inputs.iter())
                    .filter_map(|input| match input {
                        Input::Despawn(id) => Some(*id),
                        _ => None,
                    })
                    .collect();
                let queued = self.inputs.iter().filter_map(|input| match input {
                    Input::Spawn { pos, .. } => Some(*pos),
                    _ => None,
                });
                let bodies = (self.world.bodies())
                    .filter(|b| !leaving.contains(&b.id))
                    .map(|b| b.pos)
                    .chain(queued);
                let pos = crate::sample::free_spot(self.world.mesh(), wanted, bodies);
                let input = self.inputs.len();
                self.inputs.push(Input::Spawn {
                    kind: Kind::Player,
                    pos,
                    radius_m: RADIUS_M,
                    speed_mps: SPEED_MPS,
                    brain: Brain::Idle,
                });
                self.joins.push(PendingJoin {
                    input,
                    session,
                    claim: Claim::Waiting,
                    name,
                    login,
                    sink,
                    kick,
                    reply,
                });
            }
            ToWorld::Input { session, input } => {
                if self.spectators.contains_key(&session) {
                    self.spectator_input(session, input);
                    return;
                }
                let Some(client) = self.clients.get_mut(&session) else {
                    return;
                };
                let fresh = take_input(
                    &mut client.taken_seq,
                    session,
                    &input,
                    &mut self.membership,
                    &self.metrics,
                );
                if fresh && input.command != Command::Nothing {
                    client.pending = Some(input.command);
                }
            }
            ToWorld::Leave { session, claim } => {
                if let Some(spectator) = self.spectators.remove(&session) {
                    debug!(session, name = %spectator.name, "spectator left");
                    self.membership.acks.remove(&session);
                    self.membership.left.push(session);
                } else if let Some(client) = self.clients.remove(&session) {
                    debug!(session, name = %client.name, "player left");
                    if let Some(body) = self.world.body(client.entity) {
                        self.departed.left(&client.name, body.pos, client.login);
                    }
                    if let (Some(saver), Some(body)) =
                        (self.saver.as_mut(), self.world.body(client.entity))
                    {
                        // The last position, saved whether or not it moved since, and the
                        // account's claim in the store kept until it is written. One
                        // process saves the character: its saves keep their order.
                        let (name, pos) = (&client.name, [body.pos.x, body.pos.y]);
                        saver.save_then_release(name, name, pos, claim, now_ms());
                    }
                    self.inputs.push(Input::Despawn(client.entity));
                    self.membership.acks.remove(&session);
                    self.membership.left.push(session);
                } else if let Some(at) = self.joins.iter().position(|j| j.session == session) {
                    // Left before its character existed: the spawn stays queued, and the
                    // character is removed as soon as it exists.
                    self.joins[at].name.clear();
                    self.joins[at].claim = Claim::Abandoned;
                }
            }
            ToWorld::Admin(request) => self.handle_admin(request),
        }
    }

    /// One tick: the world steps with the queued inputs, then every client gets its
    /// snapshot. Returns the world phase times.
    pub fn tick(&mut self, clock_origin: Instant) -> sim::PhaseTimes {
        for spectator in self.spectators.values_mut() {
            if let Some(seq) = spectator.taken_seq {
                spectator.applied_seq = seq;
            }
        }
        for entity in self.orphans.drain(..) {
            self.inputs.push(Input::Despawn(entity));
        }
        let admin_spawns = self.queue_admin_spawns();
        for client in self.clients.values_mut() {
            if let Some(seq) = client.taken_seq {
                client.applied_seq = seq;
            }
            let Some(command) = client.pending.take() else {
                continue;
            };
            if let Some(input) = command_input(&self.world, client.entity, command) {
                self.inputs.push(input);
            }
        }
        let out = self
            .world
            .step_timed(&self.inputs, &WallClock(clock_origin));
        self.inputs.clear();
        if out.invalid_inputs > 0 {
            warn!(
                count = out.invalid_inputs,
                "the world ignored invalid inputs"
            );
        }
        let spawned = Spawned {
            ids: &out.spawned,
            by: &out.spawned_by,
        };
        self.finish_admin(spawned, admin_spawns);
        self.finish_joins(spawned);
        self.metrics.paths_waiting.set(out.paths_waiting as i64);
        self.ticks += 1;
        if self.ticks.is_multiple_of(SAVE_EVERY_TICKS) {
            self.save_moved();
        }
        out.phase_times
    }

    /// Saves every character where it stands, moved or not (the world is stopping).
    pub fn save_everyone(&mut self) {
        for client in self.clients.values_mut() {
            client.last_saved = None;
        }
        self.save_moved();
        if let Some(saver) = self.saver.as_mut() {
            saver.hand_over_all(crate::persist::HAND_OVER_PATIENCE);
        }
    }

    /// Hands the characters that moved since their last save to the writer.
    fn save_moved(&mut self) {
        let Some(saver) = self.saver.as_mut() else {
            return;
        };
        let now = now_ms();
        for client in self.clients.values_mut() {
            if let Some(body) = self.world.body(client.entity) {
                let pos = [body.pos.x, body.pos.y];
                saver.record(
                    &client.name,
                    &client.name,
                    pos,
                    None,
                    &mut client.last_saved,
                    now,
                );
            }
        }
        saver.flush();
    }

    /// Pairs this tick's spawned characters with the joins that asked for them, by the
    /// place of each join's spawn among the tick's inputs: a join whose spawn the world
    /// refused is answered with an error, and never given another's character.
    fn finish_joins(&mut self, spawned: Spawned<'_>) {
        for join in std::mem::take(&mut self.joins) {
            let Some(entity) = spawned.by_input(join.input) else {
                warn!(session = join.session, name = %join.name, "the world refused a player's spawn");
                let _ = join.reply.send(Err(DisconnectReason::Internal));
                continue;
            };
            let welcome = Joined {
                entity: net_id(entity),
            };
            if join.claim == Claim::Abandoned || join.reply.send(Ok(welcome)).is_err() {
                self.orphans.push(entity);
                continue;
            }
            info!(session = join.session, name = %join.name, entity = %entity, "player joined");
            let facts = admin::SessionFacts::new(&join.kick, join.sink.as_ref());
            self.membership.joined.push(NewViewer {
                session: join.session,
                sink: join.sink,
                kick: join.kick,
            });
            self.clients.insert(
                join.session,
                Client {
                    entity,
                    name: join.name,
                    login: join.login,
                    last_saved: None,
                    taken_seq: None,
                    applied_seq: 0,
                    pending: None,
                    facts,
                },
            );
        }
    }

    /// The snapshot workers' work for the tick just run: the frame, each client's
    /// character, and the session changes not handed over yet.
    /// `None` when there is no client and no session change: nothing to capture then.
    pub fn snapshot_job(&mut self) -> Option<SnapshotJob> {
        let players = self.clients.len() as i64;
        self.metrics.players.set(players);
        if self.clients.is_empty() && self.spectators.is_empty() && self.membership.is_empty() {
            let bodies = self.world.bodies().count() as i64;
            self.metrics.npcs.set(bodies.saturating_sub(players));
            return None;
        }
        let mut frame = capture(&self.world, self.config.view);
        if let Some(last) = &self.last_frame {
            frame.follow(last);
        }
        let clients = self
            .clients
            .iter()
            .filter_map(|(&session, client)| {
                let pos = self.world.body(client.entity)?.pos;
                Some(ClientTick {
                    session,
                    me: net_id(client.entity),
                    at: (pos.x, pos.y),
                    applied_seq: client.applied_seq,
                })
            })
            .chain(
                self.spectators
                    .iter()
                    .map(|(&session, spectator)| ClientTick {
                        session,
                        me: NetId::NONE,
                        at: (spectator.at.x, spectator.at.y),
                        applied_seq: spectator.applied_seq,
                    }),
            )
            .collect();
        self.metrics
            .npcs
            .set((frame.len() as i64).saturating_sub(players));
        let frame = Arc::new(frame);
        self.last_frame = Some(Arc::clone(&frame));
        Some(SnapshotJob {
            tick: self.world.tick().0,
            frame,
            clients,
            changes: std::mem::take(&mut self.membership),
        })
    }

    /// Takes back the session changes the snapshot workers could not take.
    pub fn undeliverable(&mut self, older: Membership) {
        if older.is_empty() {
            return;
        }
        let mut changes = std::mem::take(&mut self.membership);
        changes.prepend(older);
        self.membership = changes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshots::{SnapshotConfig, Snapshotter};

    /// Counts what would have been sent.
    pub(super) struct Recorder;

    impl DatagramSink for Recorder {
        fn max_datagram_size(&self) -> Option<usize> {
            Some(1_200)
        }
        fn send_space(&self) -> usize {
            usize::MAX
        }
        fn send(&self, _datagram: Bytes) -> bool {
            true
        }
    }

    /// The tests' world settings on the arena: `npcs` NPCs, `max_clients` clients, the
    /// server's view range, no doors.
    pub(super) fn test_config(npcs: u32, max_clients: u32) -> GameConfig {
        GameConfig {
            npcs,
            seed: 3,
            path_budget: 20_000,
            path_budget_per_body: 2.5,
            path_corner_graph: false,
            spawn_point: None,
            spawn_spread_m: SPAWN_SPREAD_M,
            max_clients,
            view: ViewRange {
                radius_m: 30.0,
                hysteresis_m: 4.0,
            },
            doors: Vec::new(),
        }
    }

    pub(super) fn arena() -> Arc<NavMesh> {
        let text = include_str!("../../maps/arena.json");
        let built = navmesh_builder::pipeline::build(
            "arena.json",
            text,
            navmesh_builder::pipeline::SourceKind::Polygon,
            &navmesh_builder::triangulate::RefineParams::default(),
            &mut |_| {},
        )
        .unwrap();
        Arc::new(built.mesh)
    }

    #[test]
    fn many_joins_get_distinct_characters() {
        let config = test_config(10, 1_000);
        let mut game = Game::new(arena(), config, Arc::new(Metrics::default()));
        let mut replies = Vec::new();
        // Enough joins that every one of the 256 spawn points is picked, the last included.
        for session in 0..600 {
            let (kick, _) = mpsc::channel(1);
            let (reply, answer) = oneshot::channel();
            game.handle(ToWorld::Join {
                session,
                name: format!("p{session}"),
                login: 0,
                resume_at: None,
                saved_order: None,
                spectate: None,
                sink: Box::new(Recorder),
                kick,
                reply,
            });
            replies.push(answer);
        }
        game.tick(Instant::now());
        let job = game.snapshot_job().expect("clients to serve");
        assert_eq!(job.clients.len(), 600);
        let metrics = Arc::new(Metrics::default());
        let mut snapshotter = Snapshotter::new(
            SnapshotConfig {
                bandwidth_cap_bytes_per_sec: 64_000,
                snapshot_max_bytes: 800,
                slow_client_ticks: 200,
                workers: 1,
                nice: 0,
            },
            Arc::clone(&metrics),
        );
        snapshotter.serve(job, 1);
        assert_eq!(snapshotter.len(), 600);
        assert_eq!(metrics.datagrams_out.get(), 600);
        let mut entities: Vec<NetId> = replies
            .into_iter()
            .map(|mut answer| answer.try_recv().unwrap().unwrap().entity)
            .collect();
        entities.sort();
        entities.dedup();
        assert_eq!(entities.len(), 600);
        assert_eq!(game.world().bodies().count(), 610);
    }
}
