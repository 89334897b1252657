//! The cluster's bus messages: what zones and gateways say to each other over NATS when one
//! world runs across many processes (`server zone`, `server gateway`; see the project's
//! `docs/zones.md` for the subjects, the roles and the invariants). Clients never see
//! these: a gateway speaks the client protocol of the rest of this crate.
//!
//! Every payload is one [`BusMessage`], encoded by [`crate::codec::encode_bus`]: a version
//! byte ([`BUS_VERSION`]: 4 since gateways tell zones of claims superseded elsewhere) and the
//! message in the same encoding as the client protocol, at most
//! [`crate::codec::MAX_BUS_BYTES`]. Entity ids
//! ([`NetId`]) are cluster-wide: a body keeps its id when it moves between zones, and its
//! **epoch** grows by one at every handoff, so of two claims on one id the higher epoch is
//! the newer.

use serde::{Deserialize, Serialize};

use crate::messages::{Command, EntityKind, Motion, NetId};

/// The bus protocol's version, the first byte of every payload. A process refuses
/// payloads of another version (counted and logged), so zones and gateways of one cluster
/// must be upgraded together.
pub const BUS_VERSION: u8 = 4;

/// Everything that travels on the bus.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum BusMessage {
    /// A zone's tick, on `mmo.zone.NAME.frame`.
    Frame(ZoneFrame),
    /// A gateway asks a zone for a character, on `mmo.zone.NAME.join` (request/reply).
    Join(JoinRequest),
    /// A zone's answer to [`BusMessage::Join`].
    Joined(JoinReply),
    /// A player's command, on `mmo.zone.NAME.input`.
    Input(PlayerInput),
    /// A player's session ended, on `mmo.zone.NAME.leave`: its character is saved and
    /// removed.
    Leave(PlayerLeave),
    /// A zone hands a body to its neighbour, on `mmo.zone.NAME.handoff` (request/reply).
    Handoff(Handoff),
    /// The neighbour's answer to [`BusMessage::Handoff`].
    HandoffAck(HandoffAck),
    /// A zone announces itself every second on `mmo.directory`.
    Announce(ZoneAnnounce),
    /// A gateway says it is alive every second on `mmo.gateways`: a zone removes the
    /// characters of a gateway it has not heard from for a while, or that has started
    /// again since it minted their ids (its players' sessions are gone with it).
    GatewayAlive(GatewayAlive),
    /// A gateway saw a real claim on a body in this zone's frame and a newer one (a higher
    /// epoch) in another zone's, on `mmo.zone.NAME.leave`: the zone drops its claim if it
    /// is still older (not saved: the newer claim's saves win; not forwarded). Zones that
    /// are neighbours settle this between them from each other's frames; zones that are
    /// not (a claim left behind while a partial partition hid it from the gateway, which
    /// asked for the character again) hear it only from the gateway.
    Superseded(Superseded),
}

/// A claim superseded by a newer one elsewhere ([`BusMessage::Superseded`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Superseded {
    /// The body.
    pub id: NetId,
    /// The epoch of the newer claim: a claim below it is dropped.
    pub epoch: u32,
}

/// A gateway's heartbeat: which gateway of the cluster file, and which start of it. The
/// ids a gateway mints for its players name both (see [`GatewayAlive::minted`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatewayAlive {
    /// The gateway's name.
    pub gateway: String,
    /// Its place among the cluster file's gateways.
    pub index: u32,
    /// The number it drew at start: a restarted gateway has another.
    pub incarnation: u32,
}

/// Player ids have this bit of [`NetId::index`] set; zones mint NPC ids without it.
pub const PLAYER_BIT: u32 = 1 << 31;

impl GatewayAlive {
    /// The gateway (its index and incarnation) that minted a player's id: bits 24 to 30
    /// of the index hold the gateway's index, the generation its incarnation. `None` for
    /// an NPC's id.
    pub fn minted(id: NetId) -> Option<(u32, u32)> {
        (id.index & PLAYER_BIT != 0).then_some(((id.index >> 24) & 0x7f, id.generation))
    }
}

/// A zone's entry in the directory: who it is, what it owns, how it is doing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZoneAnnounce {
    /// The zone's name.
    pub zone: String,
    /// The number it drew at start (a restarted zone has another).
    pub incarnation: u32,
    /// Its region, `[x0, y0, x1, y1]` metres.
    pub region: [f32; 4],
    /// Its tick.
    pub tick: u64,
    /// Bodies real in it.
    pub reals: u32,
    /// Bodies it handed over and waits for an answer on.
    pub in_flight: u32,
}

/// Whether a zone simulates a body or is handing it over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Custody {
    /// The zone simulates it: it is real here.
    Real,
    /// The zone offered it to a neighbour and waits for the answer; it stands still in
    /// the frame until then.
    InFlight,
}

/// One body in a zone's frame.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameBody {
    /// Its cluster-wide id.
    pub id: NetId,
    /// Its epoch (see the module docs).
    pub epoch: u32,
    /// Real here, or being handed over.
    pub custody: Custody,
    /// NPC or player character.
    pub kind: EntityKind,
    /// Where its centre is, metres.
    pub pos: [f32; 2],
    /// Its radius, metres.
    pub radius_m: f32,
    /// Its walking speed, metres per second (what a neighbour's ghost of it may reach).
    pub speed_mps: f32,
    /// What it did this tick.
    pub motion: Motion,
}

/// A zone's tick: every body it is responsible for, real or in flight. Its neighbours
/// mirror the bodies near their borders as ghosts; gateways build their clients'
/// snapshots from the frames of every zone; the census checks that every id is real in
/// exactly one zone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZoneFrame {
    /// The zone's name.
    pub zone: String,
    /// A number the zone drew at start: a restarted zone has another one.
    pub incarnation: u32,
    /// The zone's tick number (zones tick on their own clocks).
    pub tick: u64,
    /// Every real and in-flight body.
    pub bodies: Vec<FrameBody>,
    /// For each player character real here, the newest input sequence number the zone
    /// applied (what the gateway acknowledges to its client).
    pub applied: Vec<(NetId, u32)>,
}

/// A gateway asks a zone to make a player's character real.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JoinRequest {
    /// The asking gateway's name.
    pub gateway: String,
    /// The id the gateway gave the character (players' ids are minted by gateways).
    pub id: NetId,
    /// The player's account.
    pub account: String,
    /// Where the character appears: its saved position, or a spawn point.
    pub at: [f32; 2],
    /// The login's number in the store, which orders the character's saves across zones
    /// with the epoch (see the `store` crate's `SaveOrder`); 0 when the store does not
    /// number logins, and then saves carry no order.
    pub login: u64,
    /// The character's epoch in the zone that takes it: 0 at a login; above every epoch
    /// the gateway saw or the store holds for this login when the character is asked for
    /// again.
    pub epoch: u32,
}

/// A zone's answer to a [`JoinRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JoinReply {
    /// The character's id.
    pub id: NetId,
    /// `None`: the character is real in the zone from its next frame on; otherwise why
    /// not.
    pub refused: Option<String>,
}

/// A player's command for its character, forwarded by its gateway.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerInput {
    /// The character.
    pub id: NetId,
    /// The client's input sequence number.
    pub seq: u32,
    /// The command.
    pub command: Command,
}

/// A player's session ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerLeave {
    /// The character.
    pub id: NetId,
}

/// What drives a carried body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CarriedBrain {
    /// Moves only by orders (player characters).
    Idle,
    /// Walks to random points of the map one after another.
    Wander,
    /// Walks a loop of points.
    Patrol(Vec<[f32; 2]>),
}

/// A body's whole state, handed from one zone to another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CarriedBody {
    /// NPC or player character.
    pub kind: EntityKind,
    /// What drives it.
    pub brain: CarriedBrain,
    /// Where its centre is, metres.
    pub pos: [f32; 2],
    /// Its velocity over its last tick, metres per second.
    pub vel: [f32; 2],
    /// Its radius, metres.
    pub radius_m: f32,
    /// Its walking speed, metres per second.
    pub speed_mps: f32,
    /// Where it walks to.
    pub goal: Option<[f32; 2]>,
    /// The direction of its direction order.
    pub direction: Option<[f32; 2]>,
    /// Its remaining path corners, the next one first (planned on the whole map).
    pub path: Vec<[f32; 2]>,
    /// Its circling heading, while circling.
    pub heading: Option<[f32; 2]>,
    /// What it did in its last tick.
    pub motion: Motion,
    /// The next point of its patrol.
    pub patrol_next: u32,
    /// Ticks since it last came closer to its goal.
    pub stalled_ticks: u32,
    /// The closest it has come to its goal since then, metres.
    pub best_goal_dist: f32,
}

/// A zone hands one of its bodies to the zone whose region it walked into.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    /// The zone handing over.
    pub from: String,
    /// The body's id.
    pub id: NetId,
    /// Its new epoch: the one it had plus one.
    pub epoch: u32,
    /// Its player, for a player character.
    pub player: Option<HandoffPlayer>,
    /// The body.
    pub body: CarriedBody,
}

/// The player of a character handed over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HandoffPlayer {
    /// Its account.
    pub account: String,
    /// The newest of its inputs applied.
    pub applied_seq: u32,
    /// Its login's number ([`JoinRequest::login`]).
    pub login: u64,
}

/// The answer to a [`Handoff`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HandoffAck {
    /// The body's id.
    pub id: NetId,
    /// The epoch it was handed over with.
    pub epoch: u32,
    /// `None`: the body is real in the answering zone (and was in its frame before this
    /// answer was sent); otherwise why it was refused, and the body stays with its sender.
    pub refused: Option<String>,
}
