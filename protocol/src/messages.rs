//! Every message on the wire. Field order is the encoding order (bincode, see
//! [`crate::codec`], and [`crate::wire_examples`] for messages byte by byte); changing a
//! message means bumping [`crate::PROTOCOL_VERSION`].

use serde::{Deserialize, Serialize};

/// An entity as the wire names it: the world's slot and generation. A despawned entity's
/// id never names the entity that later reuses its slot (the slot's generation grows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NetId {
    /// Slot in the server's entity set.
    pub index: u32,
    /// Generation of the slot.
    pub generation: u32,
}

/// A point quantized to whole centimetres (world metres × 100, rounded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QPos {
    /// x in centimetres.
    pub x_cm: i32,
    /// y in centimetres.
    pub y_cm: i32,
}

impl NetId {
    /// No entity: the welcome of a spectator ([`ClientMessage::Spectate`]) names it.
    pub const NONE: NetId = NetId {
        index: u32::MAX,
        generation: u32::MAX,
    };
}

impl QPos {
    /// Quantizes a point in metres (non-finite coordinates become 0; out-of-range ones
    /// saturate).
    pub fn from_metres(x_m: f32, y_m: f32) -> QPos {
        QPos {
            x_cm: quantize_cm(x_m),
            y_cm: quantize_cm(y_m),
        }
    }

    /// The point in metres.
    pub fn to_metres(self) -> (f32, f32) {
        (self.x_cm as f32 / 100.0, self.y_cm as f32 / 100.0)
    }
}

/// Metres to whole centimetres, rounded; NaN becomes 0, out-of-range values saturate.
pub fn quantize_cm(metres: f32) -> i32 {
    // `as` saturates and maps NaN to 0, which is what a wire format wants.
    (metres * 100.0).round() as i32
}

/// Axis-aligned bounds of the map's walkable area, metres.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    /// Smallest x.
    pub min_x: f32,
    /// Smallest y.
    pub min_y: f32,
    /// Largest x.
    pub max_x: f32,
    /// Largest y.
    pub max_y: f32,
}

impl Bounds {
    /// Whether a point lies inside (edges included).
    pub fn contains(&self, x: f32, y: f32) -> bool {
        x >= self.min_x && x <= self.max_x && y >= self.min_y && y <= self.max_y
    }
}

/// Whether an entity is an NPC or a player's character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntityKind {
    /// A server-driven character.
    Npc,
    /// A player's character.
    Player,
}

/// What an entity is doing, for animation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Motion {
    /// Standing.
    Idle,
    /// Walking its path.
    Moving,
    /// Waiting for the server to find its path.
    WaitingForPath,
    /// Stepping around another body (the paper's circling).
    Circling,
    /// Being pushed out of an overlap.
    Repulsed,
}

impl Motion {
    /// `Some(motion)` if `changed`, else `None`, read from a table rather than chosen by a
    /// branch: in a crowd whether a motion changed is a coin toss, and the compiler turns
    /// every other way of writing this into a branch.
    #[inline(always)]
    fn when(changed: bool, motion: Motion) -> Option<Motion> {
        const SOME: [Option<Motion>; 6] = [
            None,
            Some(Motion::Idle),
            Some(Motion::Moving),
            Some(Motion::WaitingForPath),
            Some(Motion::Circling),
            Some(Motion::Repulsed),
        ];
        // Opaque to the compiler, which would otherwise make the product a branch again.
        let changed = std::hint::black_box(u8::from(changed));
        SOME[usize::from(changed) * (motion as usize + 1)]
    }
}

/// Everything a client knows about one entity in view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EntityState {
    /// Which entity.
    pub id: NetId,
    /// NPC or player.
    pub kind: EntityKind,
    /// Body radius, centimetres.
    pub radius_cm: u16,
    /// Position of the body's centre.
    pub pos: QPos,
    /// What it is doing.
    pub motion: Motion,
}

/// A changed entity, relative to the snapshot's baseline: a position delta in centimetres
/// and the motion when it changed. Kind and radius never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Change {
    /// Which entity.
    pub id: NetId,
    /// x now minus x in the baseline, centimetres.
    pub dx_cm: i32,
    /// y now minus y in the baseline, centimetres.
    pub dy_cm: i32,
    /// The new motion, when it changed.
    pub motion: Option<Motion>,
}

impl Change {
    /// The change that takes `old` to `new` (the same entity): the position's exact
    /// difference, and the motion when it differs.
    pub fn between(old: &EntityState, new: &EntityState) -> Change {
        Change {
            id: new.id,
            // Quantized positions stay far inside i32 (±21,000 km); wrapping keeps a corrupt
            // input from panicking, and `View::apply` would then report the overflow.
            dx_cm: new.pos.x_cm.wrapping_sub(old.pos.x_cm),
            dy_cm: new.pos.y_cm.wrapping_sub(old.pos.y_cm),
            motion: Motion::when(new.motion != old.motion, new.motion),
        }
    }
}

/// What the client sees at one tick, as a delta against a snapshot it acknowledged (or
/// against nothing). See [`crate::view::View::apply`] for how a client applies it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The server tick this snapshot shows (ticks count from the server's start).
    pub tick: u64,
    /// The tick of the snapshot this one is a delta against; `None`: against an empty view.
    pub baseline_tick: Option<u64>,
    /// `seq` of the newest input of this client the world had taken when it ran this tick
    /// (`Nothing` inputs included); 0 before any.
    pub last_input_seq: u32,
    /// Entities that came into view (full state).
    #[serde(deserialize_with = "crate::codec::deserialize_list")]
    pub entered: Vec<EntityState>,
    /// Entities that changed.
    #[serde(deserialize_with = "crate::codec::deserialize_list")]
    pub changed: Vec<Change>,
    /// Entities that left the view.
    #[serde(deserialize_with = "crate::codec::deserialize_list")]
    pub left: Vec<NetId>,
}

/// What the client wants its character to do.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// Nothing new: the datagram only acknowledges a snapshot.
    Nothing,
    /// Walk to a point (metres), which must be finite and inside the welcome's bounds; the
    /// server finds the path. A point inside a wall means the nearest walkable point.
    MoveTo {
        /// x, metres.
        x: f32,
        /// y, metres.
        y: f32,
    },
    /// Walk in a direction at the character's speed until the next command. Only the
    /// direction counts; the numbers must be finite, with a length of at least 1e-6.
    Direction {
        /// x component.
        x: f32,
        /// y component.
        y: f32,
    },
    /// Stop where it is.
    Stop,
}

/// A client's input datagram. Inputs are unreliable and the latest wins: the server ignores
/// an input whose `seq` is not newer than the last one it took.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Input {
    /// Grows with every input the client sends (from any start, gaps allowed). It does not
    /// wrap: after `u32::MAX`, every input would be dropped as stale.
    pub seq: u32,
    /// The newest snapshot tick the client has received and applied, so the server can
    /// delta-encode against it; `None` before the first.
    pub ack_tick: Option<u64>,
    /// What to do.
    pub command: Command,
}

/// Client → server, on the control stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClientMessage {
    /// First frame, always: the protocol version the client speaks. This variant stays
    /// first and keeps its shape in every version, so a mismatch is always detectable.
    Hello {
        /// [`crate::PROTOCOL_VERSION`] of the client.
        version: u16,
    },
    /// Second frame: who is playing.
    Login {
        /// Display name: 1 to [`crate::MAX_NAME_CHARS`] characters (Unicode scalar
        /// values), none of them a control character (Unicode category Cc).
        name: String,
        /// The login token (format in the crate docs, *Login tokens*): required by a
        /// server configured with a public key, whose account must equal `name`; ignored by
        /// a server in development mode.
        token: Option<String>,
    },
    /// Asks for a [`ServerMessage::Pong`] with the same nonce (after the login).
    Ping {
        /// Echoed back.
        nonce: u64,
    },
    /// Answers a [`ServerMessage::Ping`].
    Pong {
        /// The ping's nonce.
        nonce: u64,
    },
    /// The client is leaving; the server removes its character and answers with a
    /// [`ServerMessage::Disconnect`] of [`DisconnectReason::ClientLeft`].
    Leave,
    /// An input on the control stream, for a client whose connection takes no datagrams
    /// (see the crate docs, *Clients without datagrams*). Taken exactly as the input
    /// datagram is: the same checks, the same rate limit, the latest `seq` wins. Added
    /// after the others in protocol version 1; a client with datagrams sends inputs as
    /// datagrams.
    Input(Input),
    /// Second frame, instead of [`ClientMessage::Login`]: watch without a character. The
    /// name and token follow the login's rules. The welcome's `entity` is
    /// [`NetId::NONE`]; snapshots show what is within the view radius of the spectator's
    /// point, which starts at (`x`, `y`) (metres, clamped into the map's bounds) and moves
    /// with every [`Command::MoveTo`] the spectator sends (other commands do nothing). A
    /// spectator holds no character, so it is not saved and does not hold its account's
    /// one live session. Added after the others in protocol version 1.
    Spectate {
        /// Display name, as in the login.
        name: String,
        /// The login token, as in the login.
        token: Option<String>,
        /// Where the view starts, x, metres.
        x: f32,
        /// Where the view starts, y, metres.
        y: f32,
    },
}

/// The answer to a successful login.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    /// The server's protocol version.
    pub version: u16,
    /// The client's character.
    pub entity: NetId,
    /// Ticks (and at most as many snapshots) per second: 20.
    pub tick_rate_hz: u16,
    /// Name of the map being served (its file name).
    pub map_id: String,
    /// The map's bounds; move-to points outside are invalid.
    pub bounds: Bounds,
    /// Entities within this distance of the character enter the view, metres (they leave
    /// it a few metres further out).
    pub view_radius_m: f32,
}

/// Something that happened, sent on the control stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// The server is shutting down; after this many milliseconds it ends the session with
    /// [`DisconnectReason::Shutdown`].
    ShuttingDown {
        /// Grace period, milliseconds.
        grace_ms: u32,
    },
    /// Messages from this client were invalid and dropped; at
    /// [`crate::MAX_INVALID_MESSAGES`] in total the server disconnects. Coalesced: sent for
    /// the first invalid message, then for an invalid message only when a second or more has
    /// passed since the last one was sent, so `count` may jump.
    InvalidInput {
        /// Invalid messages so far in this session.
        count: u32,
        /// What was wrong with the latest one.
        reason: String,
    },
}

/// Server → client, on the control stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ServerMessage {
    /// Login accepted.
    Welcome(Welcome),
    /// Something happened.
    Event(Event),
    /// Asks for a [`ClientMessage::Pong`]. Today's server never sends it; a client answers
    /// it all the same.
    Ping {
        /// Echo it back.
        nonce: u64,
    },
    /// Answers a [`ClientMessage::Ping`].
    Pong {
        /// The ping's nonce.
        nonce: u64,
    },
    /// The server closes the session; it finishes the stream, and the QUIC connection
    /// closes with the reason's [`DisconnectReason::code`] and this text right after.
    Disconnect {
        /// Why, as a code.
        reason: DisconnectReason,
        /// Why, for a human.
        text: String,
    },
}

/// Why a session ended. [`DisconnectReason::code`] is also the QUIC application close code;
/// on the wire, in a [`ServerMessage::Disconnect`], the reason is its variant index, one less
/// than its code. [`DisconnectReason::Timeout`], and [`DisconnectReason::ServerFull`] when
/// the connection is refused as it opens, arrive only as close codes, without a
/// `Disconnect` frame. A close with code 0 is no reason: the server closes so when the
/// client finished or reset its control stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DisconnectReason {
    /// Client and server speak different protocol versions.
    VersionMismatch,
    /// A control frame could not be decoded, or a message came out of order (the first
    /// not a hello, the second not a login).
    BadMessage,
    /// A control frame announced more than [`crate::MAX_FRAME_BYTES`].
    FrameTooLarge,
    /// Too many invalid messages ([`crate::MAX_INVALID_MESSAGES`]).
    TooManyInvalid,
    /// The server or this address has as many sessions as it allows (a close code only,
    /// its reason phrase saying which), or the world has no room for another character (a
    /// `Disconnect` frame after the login).
    ServerFull,
    /// The login was refused: the name breaks the rules of [`ClientMessage::Login`], the
    /// token is missing, malformed, forged, expired or for another account, or the account
    /// already has a live session; the text says which. Also sent after the login when the
    /// account went live on another server (this one lost its claim while it could not
    /// reach the character store).
    LoginRejected,
    /// The server is shutting down.
    Shutdown,
    /// The client did not keep up: its snapshots kept being dropped for congestion, or it
    /// did not read its control stream for 5 s.
    SlowClient,
    /// The client did not send hello and login in time (a close code only).
    Timeout,
    /// The client sent [`ClientMessage::Leave`].
    ClientLeft,
    /// Something went wrong on the server.
    Internal,
    /// The client's QUIC connection accepts datagrams (RFC 9221), but only ones too small
    /// for a snapshot, so it could never be sent what it sees. Refused at login. (A
    /// connection that accepts no datagrams at all gets its snapshots on a stream.)
    /// Added after the others in protocol version 1: an older client fails to decode it
    /// (an unknown variant, an unknown close code) rather than taking it for another
    /// reason, and only a client that could not play anyway ever receives it.
    DatagramsUnsupported,
    /// An operator ended the session (the server's admin API); the text may say why.
    /// Added after [`DisconnectReason::DatagramsUnsupported`] in protocol version 1, for
    /// the same reasons: an older client fails to decode it rather than misreading it.
    Kicked,
}

impl DisconnectReason {
    /// Every reason, in code order.
    pub const ALL: [DisconnectReason; 13] = [
        DisconnectReason::VersionMismatch,
        DisconnectReason::BadMessage,
        DisconnectReason::FrameTooLarge,
        DisconnectReason::TooManyInvalid,
        DisconnectReason::ServerFull,
        DisconnectReason::LoginRejected,
        DisconnectReason::Shutdown,
        DisconnectReason::SlowClient,
        DisconnectReason::Timeout,
        DisconnectReason::ClientLeft,
        DisconnectReason::Internal,
        DisconnectReason::DatagramsUnsupported,
        DisconnectReason::Kicked,
    ];

    /// The QUIC application close code: 1 for the first reason, in declaration order.
    pub fn code(self) -> u32 {
        match self {
            DisconnectReason::VersionMismatch => 1,
            DisconnectReason::BadMessage => 2,
            DisconnectReason::FrameTooLarge => 3,
            DisconnectReason::TooManyInvalid => 4,
            DisconnectReason::ServerFull => 5,
            DisconnectReason::LoginRejected => 6,
            DisconnectReason::Shutdown => 7,
            DisconnectReason::SlowClient => 8,
            DisconnectReason::Timeout => 9,
            DisconnectReason::ClientLeft => 10,
            DisconnectReason::Internal => 11,
            DisconnectReason::DatagramsUnsupported => 12,
            DisconnectReason::Kicked => 13,
        }
    }

    /// The reason with this close code; `None` for 0 (the server's close when the client
    /// ended its control stream) and for codes of no reason.
    pub fn from_code(code: u64) -> Option<DisconnectReason> {
        DisconnectReason::ALL
            .into_iter()
            .find(|reason| u64::from(reason.code()) == code)
    }

    /// A short lowercase name, for logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            DisconnectReason::VersionMismatch => "version_mismatch",
            DisconnectReason::BadMessage => "bad_message",
            DisconnectReason::FrameTooLarge => "frame_too_large",
            DisconnectReason::TooManyInvalid => "too_many_invalid",
            DisconnectReason::ServerFull => "server_full",
            DisconnectReason::LoginRejected => "login_rejected",
            DisconnectReason::Shutdown => "shutdown",
            DisconnectReason::SlowClient => "slow_client",
            DisconnectReason::Timeout => "timeout",
            DisconnectReason::ClientLeft => "client_left",
            DisconnectReason::Internal => "internal",
            DisconnectReason::DatagramsUnsupported => "datagrams_unsupported",
            DisconnectReason::Kicked => "kicked",
        }
    }
}

/// Server → client datagram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ServerDatagram {
    /// What the client sees this tick.
    Snapshot(Snapshot),
}

/// Client → server datagram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClientDatagram {
    /// An input (possibly [`Command::Nothing`], only acknowledging a snapshot).
    Input(Input),
}
