//! `server gateway --cluster FILE`: holds the clients' connections with the client
//! protocol unchanged (a client never learns about zones) and stands where `server run`
//! has its world thread. Its router thread asks the zone that owns a spawn point for each
//! new character, forwards every input to the zone its character is real in now, merges
//! the zones' latest frames into one [`crate::interest::Frame`] and hands it to the same
//! snapshot workers `server run` uses.
//!
//! Characters whose zone died: once a character has been in no zone's frame for
//! [`REJOIN_AFTER`] and the zone that owns its saved position is publishing again, the
//! gateway asks that zone for it again at its saved position (the store the zones save
//! to). A character in flight between zones is in its sender's frame, so it is never
//! asked for while a handoff of it is under way.
//!
//! Joins are never left waiting: one that no zone answers in time is refused, and its
//! zone told to let the character go (`joins`); joins and leaves never give way to inputs
//! on the bus queue (`outbox`). A player id is never minted while one is still in use.

mod admin;
mod bus_io;
mod departed;
mod joins;
mod outbox;
mod superseded;
#[cfg(test)]
mod tests;

pub(crate) use bus_io::{listen_frames, publish, shown};
pub(crate) use joins::JOIN_ANSWERED_WITHIN;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use protocol::bus::{BusMessage, Custody, GatewayAlive, JoinRequest, PlayerInput, ZoneFrame};
use protocol::{Command, DisconnectReason, EntityState, NetId, QPos};
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use super::ClusterFile;
use super::bus::{GATEWAYS, Verb, subject};
use super::zone_world::PLAYER_BIT;
use crate::game::{Joined, Kick, Pacer, RADIUS_M, SessionId, ToWorld};
use crate::interest::{Frame, ViewRange};
use crate::metrics::{InputDrop, Metrics};
use crate::persist::Persist;
use crate::snapshot_pool::SnapshotPool;
use crate::snapshots::{ClientTick, Membership, NewViewer, SnapshotConfig, SnapshotJob};
use departed::Departures;
use joins::{Joins, Pending, finish_joins};
use outbox::Outbox;

/// A zone whose last frame is older than this is taken for down: its bodies leave the
/// clients' views.
pub const ZONE_STALE: Duration = Duration::from_secs(1);
/// How long a character may be in no zone's frame before the gateway asks for it again.
pub const REJOIN_AFTER: Duration = Duration::from_secs(1);
/// How far a character asked for again moves its epoch up: more handoffs than a character
/// can make in the time a gateway waits before asking again, which it may not have seen.
const REJOIN_EPOCH_STEP: u32 = 1 << 12;
/// Most bus messages drained per tick.
const MAX_BUS_PER_TICK: usize = 65_536;

/// What the bus brought the gateway.
#[derive(Debug)]
pub(crate) enum GatewayIn {
    /// A zone's frame.
    Frame(Box<ZoneFrame>),
    /// A zone's answer to a join: the character, the zone asked, its answer (`Err`: why).
    Joined(NetId, String, Result<(), String>),
    /// A character asked for again whose saved state the store could not give: its
    /// session ends with this.
    LoadRefused(NetId, Kick),
}

/// What the gateway says on the bus.
#[derive(Debug)]
pub(crate) enum GatewayOut {
    /// Published on the subject.
    Publish(String, BusMessage),
    /// A join for the character with this id; with `reload`, its position comes from the
    /// store first (a character asked for again after its zone died).
    Join {
        /// The request (its `at` is the fallback when the store has nothing).
        request: JoinRequest,
        /// Load the position from the store first.
        reload: bool,
    },
}

struct Player {
    id: NetId,
    account: String,
    /// Its login's number in the store ([`JoinRequest::login`]).
    login: u64,
    /// The newest epoch of its character the gateway has seen in a frame.
    epoch: u32,
    zone: String,
    /// Where the router ends the session.
    kick: mpsc::Sender<Kick>,
    /// For the admin API: the client's address and when it joined, Unix milliseconds.
    remote: Option<String>,
    since_ms: u64,
    taken_seq: Option<u32>,
    /// The newest input whose command went to a zone.
    forwarded_seq: u32,
    /// The newest of those its zone applied.
    zone_applied: u32,
    at: (f32, f32),
    /// Since when it has been in no frame.
    missing_since: Option<Instant>,
    rejoining: bool,
}

impl Player {
    /// The newest input applied: inputs without a command apply at once, so once the
    /// zone applied the newest command, every input taken since counts as applied.
    fn applied_seq(&self) -> u32 {
        if self.zone_applied >= self.forwarded_seq {
            self.taken_seq.unwrap_or(0)
        } else {
            self.zone_applied
        }
    }
}

struct Watcher {
    at: (f32, f32),
    taken_seq: Option<u32>,
    account: String,
    kick: mpsc::Sender<Kick>,
    remote: Option<String>,
    since_ms: u64,
}

/// Time between two of the gateway's heartbeats on the bus.
pub(crate) const ALIVE_EVERY: Duration = Duration::from_secs(1);

/// The part of a player id its gateway counts in.
const ID_COUNTER: u32 = 0xff_ffff;

/// The gateway's router: sessions on one side, zones on the other.
pub(crate) struct Router {
    file: Arc<ClusterFile>,
    name: String,
    index: u32,
    incarnation: u32,
    /// When the router last said on the bus that it is alive.
    alive_at: Option<Instant>,
    view: ViewRange,
    bounds: ((f32, f32), (f32, f32)),
    spawn_points: Vec<(f32, f32)>,
    rng: navmesh::Rng,
    next_id: u32,
    /// The id counter has come round once: a fresh id may be one still in use.
    ids_wrapped: bool,
    players: BTreeMap<SessionId, Player>,
    watchers: BTreeMap<SessionId, Watcher>,
    pending: HashMap<NetId, Pending>,
    frames: BTreeMap<String, (ZoneFrame, Instant)>,
    membership: Membership,
    outbox: Outbox,
    ticks: u64,
    /// The merge's tables, kept from tick to tick for their memory.
    merge: Merge,
    /// The last frame merged, whose roster the next one takes while the bodies stay the
    /// same ([`Frame::follow`]).
    last_frame: Option<Arc<Frame>>,
    /// Where the characters of ended sessions were last seen, for logins right after.
    departures: Departures,
    /// The store and the map's name, for the saves of where characters that logged out
    /// were last seen ([`Router::keep_last_seen`]).
    store: Option<(Persist, String)>,
    /// When each zone was last told of a superseded claim, by id ([`superseded::tell`]).
    told: HashMap<(NetId, String), Instant>,
}

/// The tables [`Router::tick`] merges the zones' frames with, cleared every tick.
#[derive(Default)]
struct Merge {
    /// Each id's newest claim: (epoch, real, frame, index in the frame's bodies).
    best: HashMap<NetId, (u32, bool, u32, u32)>,
    /// The newest input each zone applied, by player id.
    applied: HashMap<NetId, u32>,
    /// Each player character in the live frames: its frame and where it stands.
    owner: HashMap<NetId, (u32, (f32, f32))>,
    /// Per live frame, which of its bodies won their id.
    winners: Vec<Vec<bool>>,
    /// Real claims that a newer real claim elsewhere supersedes: (frame, id, newer epoch).
    superseded: Vec<(u32, NetId, u32)>,
}

impl Router {
    /// How many spawn points were found for joining players (as
    /// [`crate::game::Game::spawn_point_count`]); with none, every login is refused.
    pub(crate) fn spawn_point_count(&self) -> usize {
        self.spawn_points.len()
    }

    /// A router for gateway `index` of `file`.
    pub(crate) fn new(
        file: Arc<ClusterFile>,
        index: usize,
        mesh: &navmesh::NavMesh,
        view: ViewRange,
        spawn_point: Option<((f32, f32), f32)>,
        bus_out: mpsc::Sender<GatewayOut>,
    ) -> Router {
        let mut rng = navmesh::Rng::new(file.seed ^ 0x6761_7465 ^ index as u64);
        // As `server run`: players appear within a few metres of the configured point.
        let near = |&(x, y): &(f32, f32)| {
            spawn_point.is_none_or(|((sx, sy), spread)| (x - sx).hypot(y - sy) <= spread)
        };
        // Clear of walls by a body's diameter: two players that join on nearby points can
        // always be parted there (against a wall, the repulsion may pin them together).
        let clear = |(p, _): &(navmesh::Point, navmesh::TriId)| {
            mesh.nearest_wall(*p, 2.0 * f64::from(RADIUS_M)).is_none()
        };
        let spawn_points: Vec<(f32, f32)> = (0..200_000)
            .filter_map(|_| mesh.random_point(&mut rng))
            .filter(clear)
            .map(|(p, _)| (p.x as f32, p.y as f32))
            .filter(near)
            .take(256)
            .collect();
        if spawn_points.is_empty() {
            warn!("no walkable spawn point found; logins will be refused");
        }
        let b = mesh.bounds();
        Router {
            name: file.gateways[index].name.clone(),
            index: index as u32,
            alive_at: None,
            incarnation: std::process::id()
                ^ (std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u32)),
            file,
            view,
            bounds: (
                (b.min.x as f32, b.min.y as f32),
                (b.max.x as f32, b.max.y as f32),
            ),
            spawn_points,
            rng,
            next_id: 0,
            ids_wrapped: false,
            players: BTreeMap::new(),
            watchers: BTreeMap::new(),
            pending: HashMap::new(),
            frames: BTreeMap::new(),
            membership: Membership::default(),
            outbox: Outbox::new(bus_out),
            ticks: 0,
            merge: Merge::default(),
            last_frame: None,
            departures: Departures::default(),
            store: None,
            told: HashMap::new(),
        }
    }

    /// A fresh player id: one no live player or waiting join has. Until the 24-bit
    /// counter first comes round every id is fresh; after that, ids in use are skipped
    /// (among one more ids than are in use, one is free). `None` only if none is.
    fn mint_id(&mut self) -> Option<NetId> {
        let tries = if self.ids_wrapped {
            self.players.len() + self.pending.len() + 1
        } else {
            1
        };
        for _ in 0..tries {
            let id = NetId {
                index: PLAYER_BIT | (self.index << 24) | (self.next_id & ID_COUNTER),
                generation: self.incarnation,
            };
            self.next_id = (self.next_id + 1) & ID_COUNTER;
            let in_use = self.ids_wrapped
                && (self.pending.contains_key(&id) || self.players.values().any(|p| p.id == id));
            if self.next_id == 0 {
                self.ids_wrapped = true;
            }
            if !in_use {
                return Some(id);
            }
        }
        None
    }

    fn zone_for(&self, (x, y): (f32, f32)) -> String {
        self.file
            .zone_of(x, y)
            .unwrap_or(&self.file.zones[0])
            .name
            .clone()
    }

    /// Handles a session's message.
    pub(crate) fn handle(&mut self, message: ToWorld) {
        match message {
            ToWorld::Join {
                session,
                name,
                login,
                resume_at,
                saved_order,
                spectate,
                sink,
                kick,
                reply,
            } => {
                if let Some(at) = spectate {
                    let remote = sink.remote().map(|addr| addr.to_string());
                    if reply
                        .send(Ok(Joined {
                            entity: NetId::NONE,
                        }))
                        .is_ok()
                    {
                        self.membership.joined.push(NewViewer {
                            session,
                            sink,
                            kick: kick.clone(),
                        });
                        self.watchers.insert(
                            session,
                            Watcher {
                                at: (at.x, at.y),
                                taken_seq: None,
                                account: name,
                                kick,
                                remote,
                                since_ms: crate::persist::now_ms().max(0) as u64,
                            },
                        );
                    }
                    return;
                }
                let last_seen = self.departures.resume(&name, saved_order);
                if let Some(at) = last_seen {
                    info!(
                        account = %name, ?at, stored = ?saved_order,
                        "the store lacks the last save yet: going on from where last seen"
                    );
                }
                let at = match last_seen.or(resume_at.map(|p| (p.x, p.y))) {
                    Some(at) => at,
                    None if self.spawn_points.is_empty() => {
                        let _ = reply.send(Err(DisconnectReason::ServerFull));
                        return;
                    }
                    None => {
                        let k = self.rng.range(0, self.spawn_points.len() as u64 - 1) as usize;
                        self.spawn_points[k]
                    }
                };
                if self.outbox.backlog() >= outbox::MAX_BACKLOG {
                    warn!(account = %name, waiting = self.outbox.backlog(), "the bus is backed up; login refused");
                    let _ = reply.send(Err(DisconnectReason::ServerFull));
                    return;
                }
                let Some(id) = self.mint_id() else {
                    error!(account = %name, "no free player id; login refused");
                    let _ = reply.send(Err(DisconnectReason::ServerFull));
                    return;
                };
                let zone = self.zone_for(at);
                self.outbox.control(GatewayOut::Join {
                    request: JoinRequest {
                        gateway: self.name.clone(),
                        id,
                        account: name.clone(),
                        at: [at.0, at.1],
                        login,
                        epoch: 0,
                    },
                    reload: false,
                });
                self.pending.insert(
                    id,
                    Pending {
                        session,
                        account: name,
                        login,
                        zone,
                        at,
                        sink,
                        kick,
                        reply,
                        asked: Instant::now(),
                        accepted: None,
                    },
                );
            }
            ToWorld::Input { session, input } => {
                if let Some(watcher) = self.watchers.get_mut(&session) {
                    if watcher.taken_seq.is_some_and(|t| input.seq <= t) {
                        return;
                    }
                    watcher.taken_seq = Some(input.seq);
                    if let Command::MoveTo { x, y } = input.command {
                        let ((x0, y0), (x1, y1)) = self.bounds;
                        watcher.at = (x.clamp(x0, x1), y.clamp(y0, y1));
                    }
                    self.ack(session, input.ack_tick);
                    return;
                }
                let Some(player) = self.players.get_mut(&session) else {
                    return;
                };
                if player.taken_seq.is_some_and(|t| input.seq <= t) {
                    return;
                }
                player.taken_seq = Some(input.seq);
                let (zone, id) = (player.zone.clone(), player.id);
                if input.command != Command::Nothing {
                    player.forwarded_seq = input.seq;
                }
                self.ack(session, input.ack_tick);
                if input.command != Command::Nothing {
                    self.outbox.input(GatewayOut::Publish(
                        subject(&zone, Verb::Input),
                        BusMessage::Input(PlayerInput {
                            id,
                            seq: input.seq,
                            command: input.command,
                        }),
                    ));
                }
            }
            ToWorld::Leave { session, claim } => {
                if self.watchers.remove(&session).is_some() {
                    self.membership.acks.remove(&session);
                    self.membership.left.push(session);
                } else if let Some(player) = self.players.remove(&session) {
                    info!(session, account = %player.account, "player left");
                    let (frames, zone) = (&self.frames, &player.zone);
                    joins::leave_everywhere(&mut self.outbox, frames, zone, player.id);
                    let order = (player.login, player.epoch);
                    let now = Instant::now();
                    self.departures
                        .record(&player.account, player.at, order, now);
                    if let Some(claim) = claim {
                        self.save_last_seen(&player, claim);
                    }
                    self.membership.acks.remove(&session);
                    self.membership.left.push(session);
                } else if let Some((&id, _)) =
                    self.pending.iter().find(|(_, p)| p.session == session)
                {
                    // Gone before its character came: the character is removed when it does.
                    if let Some(pending) = self.pending.remove(&id) {
                        joins::leave(&mut self.outbox, &pending.zone, id);
                    }
                }
            }
            ToWorld::Admin(request) => self.admin(request),
        }
    }

    fn ack(&mut self, session: SessionId, tick: Option<u64>) {
        if let Some(tick) = tick {
            let acked = self.membership.acks.entry(session).or_insert(tick);
            *acked = (*acked).max(tick);
        }
    }

    /// Handles what the bus brought.
    pub(crate) fn on_bus(&mut self, message: GatewayIn) {
        match message {
            GatewayIn::Frame(frame) => {
                // Only the cluster file's zones: a frame under another name would put its
                // bodies in every client's world, and each new name would be kept for ever.
                if self.file.zones.iter().any(|zone| zone.name == frame.zone) {
                    self.frames
                        .insert(frame.zone.clone(), (*frame, Instant::now()));
                } else {
                    warn!(
                        zone = %bus_io::shown(&frame.zone),
                        "a frame from a zone the cluster file does not name: ignored"
                    );
                }
            }
            GatewayIn::Joined(id, zone, answer) => {
                if let Some(pending) = self.pending.get_mut(&id) {
                    match answer {
                        Ok(()) => pending.accepted = Some((zone, Instant::now())),
                        Err(why) => {
                            if let Some(pending) = self.pending.remove(&id) {
                                warn!(account = %pending.account, %why, "join refused by its zone");
                                let _ = pending.reply.send(Err(DisconnectReason::Internal));
                                // An answer lost on its way back may hide a placed character.
                                joins::leave(&mut self.outbox, &pending.zone, id);
                            }
                        }
                    }
                    return;
                }
                if let Some(player) = self.players.values_mut().find(|p| p.id == id) {
                    // An answer to a join asked again after its zone died.
                    player.rejoining = false;
                    match answer {
                        Ok(()) => {
                            info!(?id, %zone, "character back after its zone restarted");
                            player.zone = zone;
                            player.missing_since = None;
                        }
                        Err(why) => {
                            // Asked again after REJOIN_AFTER anew, not at every tick.
                            player.missing_since = Some(Instant::now());
                            warn!(?id, %why, "asking for a character again failed; will retry")
                        }
                    }
                    return;
                }
                // Nobody waits for it any more (its join was given up, or its session
                // left while the zone placed it): the zone lets it go, refused or not (a
                // late or lost answer may hide a placed character).
                info!(?id, %zone, placed = answer.is_ok(), "a join nobody waits for: it leaves");
                joins::leave(&mut self.outbox, &zone, id);
            }
            GatewayIn::LoadRefused(id, kick) => {
                let Some(player) = self.players.values_mut().find(|p| p.id == id) else {
                    return;
                };
                // Left in no zone (`rejoining` stays set, so it is not asked for again)
                // until its session's leave takes it out.
                warn!(?id, account = %player.account, text = %kick.text, "ending the session of a character that cannot be loaded");
                if player.kick.try_send(kick).is_err() {
                    warn!(?id, "the session's kick queue is full or closed");
                }
            }
        }
    }

    /// One tick: the merged frame, each player's owner and place, the snapshot job.
    pub(crate) fn tick(&mut self) -> Option<SnapshotJob> {
        self.ticks += 1;
        self.outbox.flush();
        let now = Instant::now();
        // By the clock, not by ticks, which an overloaded gateway stretches.
        if self
            .alive_at
            .is_none_or(|at| now.duration_since(at) >= ALIVE_EVERY)
        {
            self.alive_at = Some(now);
            self.departures.expire(now);
            superseded::forget_old(&mut self.told, now);
            // Never dropped (a zone takes a gateway silent for a while for gone, and
            // removes its players' characters).
            self.outbox.control(GatewayOut::Publish(
                GATEWAYS.to_owned(),
                BusMessage::GatewayAlive(GatewayAlive {
                    gateway: self.name.clone(),
                    index: self.index,
                    incarnation: self.incarnation,
                }),
            ));
        }
        // The live zones' frames, in the zones' order; bodies are named by (frame, index).
        let live: Vec<&ZoneFrame> = self
            .frames
            .values()
            .filter(|(_, at)| now.duration_since(*at) < ZONE_STALE)
            .map(|(frame, _)| frame)
            .collect();
        let merge = &mut self.merge;
        merge.best.clear();
        merge.applied.clear();
        merge.owner.clear();
        merge.superseded.clear();
        // The newest claim of each id over every live zone.
        for (f, frame) in live.iter().enumerate() {
            for (k, body) in frame.bodies.iter().enumerate() {
                let real = body.custody == Custody::Real;
                let claim = (body.epoch, real, f as u32, k as u32);
                merge
                    .best
                    .entry(body.id)
                    .and_modify(|best| {
                        let (epoch, was_real, bf, _) = *best;
                        if real && was_real && body.epoch != epoch {
                            let older = if body.epoch < epoch { f as u32 } else { bf };
                            let newer = body.epoch.max(epoch);
                            merge.superseded.push((older, body.id, newer));
                        }
                        if body.epoch > epoch || (body.epoch == epoch && real && !was_real) {
                            *best = claim;
                        }
                    })
                    .or_insert(claim);
            }
            merge.applied.extend(frame.applied.iter().copied());
        }
        superseded::tell(
            &mut self.outbox,
            &live,
            &merge.superseded,
            &mut self.told,
            now,
        );
        // Each id's winning claim, marked where it stands, so the frame keeps the zones'
        // order of bodies.
        merge.winners.resize(live.len(), Vec::new());
        for (winners, frame) in merge.winners.iter_mut().zip(&live) {
            winners.clear();
            winners.resize(frame.bodies.len(), false);
        }
        for &(_, _, f, k) in merge.best.values() {
            merge.winners[f as usize][k as usize] = true;
        }
        let mut states = Vec::with_capacity(merge.best.len());
        let mut positions = Vec::with_capacity(merge.best.len());
        for (f, frame) in live.iter().enumerate() {
            for (body, _) in frame
                .bodies
                .iter()
                .zip(&merge.winners[f])
                .filter(|(_, won)| **won)
            {
                states.push(EntityState {
                    id: body.id,
                    kind: body.kind,
                    radius_cm: (body.radius_m * 100.0)
                        .round()
                        .clamp(0.0, f32::from(u16::MAX)) as u16,
                    pos: QPos::from_metres(body.pos[0], body.pos[1]),
                    motion: body.motion,
                });
                positions.push((body.pos[0], body.pos[1]));
                if body.id.index & PLAYER_BIT != 0 {
                    merge
                        .owner
                        .insert(body.id, (f as u32, (body.pos[0], body.pos[1])));
                }
            }
        }
        finish_joins(
            Joins {
                pending: &mut self.pending,
                players: &mut self.players,
                membership: &mut self.membership,
                outbox: &mut self.outbox,
            },
            &merge.owner,
            now,
        );
        let mut rejoins = Vec::new();
        for player in self.players.values_mut() {
            if let Some(seq) = merge.applied.get(&player.id) {
                player.zone_applied = player.zone_applied.max(*seq);
            }
            match merge.owner.get(&player.id) {
                Some(&(f, at)) => {
                    let zone = &live[f as usize].zone;
                    if player.zone != *zone {
                        player.zone.clone_from(zone);
                    }
                    player.at = at;
                    player.missing_since = None;
                    if let Some(&(epoch, ..)) = merge.best.get(&player.id) {
                        player.epoch = player.epoch.max(epoch);
                    }
                }
                None => {
                    let since = *player.missing_since.get_or_insert(now);
                    let zone_up = self
                        .file
                        .zone_of(player.at.0, player.at.1)
                        .is_some_and(|zone| live.iter().any(|frame| frame.zone == zone.name));
                    if !player.rejoining && zone_up && now.duration_since(since) >= REJOIN_AFTER {
                        player.rejoining = true;
                        // Far above any claim on it the gateway saw, and above the claims
                        // of handoffs it did not see (one a tick at most): should the zone
                        // that holds it come back, its claim is the one dropped.
                        player.epoch = player.epoch.saturating_add(REJOIN_EPOCH_STEP);
                        rejoins.push(JoinRequest {
                            gateway: self.name.clone(),
                            id: player.id,
                            account: player.account.clone(),
                            at: [player.at.0, player.at.1],
                            login: player.login,
                            epoch: player.epoch,
                        });
                    }
                }
            }
        }
        for request in rejoins {
            warn!(id = ?request.id, account = %request.account, "character in no zone; asking for it again");
            self.outbox.control(GatewayOut::Join {
                request,
                reload: true,
            });
        }
        if self.players.is_empty() && self.watchers.is_empty() && self.membership.is_empty() {
            return None;
        }
        let mut frame =
            Frame::from_states(states, positions, self.bounds.0, self.bounds.1, self.view);
        if let Some(last) = &self.last_frame {
            frame.follow(last);
        }
        let frame = Arc::new(frame);
        self.last_frame = Some(Arc::clone(&frame));
        let clients = self
            .players
            .iter()
            .map(|(&session, p)| ClientTick {
                session,
                me: p.id,
                at: p.at,
                applied_seq: p.applied_seq(),
            })
            .chain(self.watchers.iter().map(|(&session, w)| ClientTick {
                session,
                me: NetId::NONE,
                at: w.at,
                applied_seq: w.taken_seq.unwrap_or(0),
            }))
            .collect();
        Some(SnapshotJob {
            tick: self.ticks,
            frame,
            clients,
            changes: std::mem::take(&mut self.membership),
        })
    }

    /// Takes back the session changes the snapshot workers could not take.
    fn undeliverable(&mut self, older: Membership) {
        if older.is_empty() {
            return;
        }
        let mut changes = std::mem::take(&mut self.membership);
        changes.prepend(older);
        self.membership = changes;
    }
}

/// How long a stopping gateway waits for the bus queue to take its last joins and leaves.
const FINISH_PATIENCE: Duration = Duration::from_secs(2);

/// The router's loop: the world thread of a gateway.
pub(crate) fn run_loop(
    mut router: Router,
    mut sessions: mpsc::Receiver<ToWorld>,
    mut bus_in: mpsc::Receiver<GatewayIn>,
    snapshots: SnapshotConfig,
    metrics: Arc<Metrics>,
    stop: Arc<AtomicBool>,
    ready: Arc<AtomicBool>,
) {
    let mut pool = match SnapshotPool::start(snapshots, Arc::clone(&metrics)) {
        Ok(pool) => pool,
        Err(err) => {
            error!(%err, "cannot start the snapshot workers");
            return;
        }
    };
    let mut pacer = Pacer::new();
    'ticks: while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        loop {
            match sessions.try_recv() {
                Ok(message) => router.handle(message),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => break 'ticks,
            }
        }
        for _ in 0..MAX_BUS_PER_TICK {
            let Ok(message) = bus_in.try_recv() else {
                break;
            };
            router.on_bus(message);
        }
        match router.tick() {
            Some(job) => match pool.offer(job) {
                Ok(undelivered) => router.undeliverable(undelivered),
                Err(_) => break,
            },
            None => pool.rest(),
        }
        metrics.inputs_dropped(InputDrop::QueueFull, router.outbox.take_dropped_inputs());
        metrics.players.set(router.players.len() as i64);
        metrics.ticks.inc();
        metrics.observe_tick(start.elapsed());
        ready.store(true, Ordering::Relaxed);
        pacer.wait(&metrics);
    }
    // The sessions that ended with the shutdown sent their leaves just before it: each must
    // reach its zone, or the character stays there with nobody playing it.
    while let Ok(message) = sessions.try_recv() {
        router.handle(message);
    }
    router.let_everyone_go();
    router.outbox.finish(FINISH_PATIENCE);
    let panicked = pool.stop();
    if panicked > 0 {
        error!(panicked, "snapshot workers panicked");
    }
}
