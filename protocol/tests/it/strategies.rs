//! Generators of arbitrary messages.

use proptest::collection::vec;
use proptest::prelude::*;
use protocol::{
    Bounds, Change, ClientDatagram, ClientMessage, Command, DisconnectReason, EntityKind,
    EntityState, Event, Input, Motion, NetId, QPos, ServerDatagram, ServerMessage, Snapshot,
    Welcome,
};

/// A `u32` of any encoded width: small values take one varint byte and full-range ones
/// five, and both must survive the codec.
pub(crate) fn any_width_u32() -> impl Strategy<Value = u32> {
    prop_oneof![0..300u32, any::<u32>()]
}

/// Same for `u64`.
pub(crate) fn any_width_u64() -> impl Strategy<Value = u64> {
    prop_oneof![0..300u64, 0..70_000u64, any::<u64>()]
}

/// Any `f32` bit pattern, NaNs and infinities included: the codec must carry every one
/// unchanged, so round trips of messages with floats are compared bitwise.
pub(crate) fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        -1.0e4f32..1.0e4f32,
        Just(f32::NAN),
        Just(f32::INFINITY),
        Just(-0.0f32),
    ]
}

/// A string of any characters (control characters and all planes included).
pub(crate) fn any_string(max_chars: usize) -> impl Strategy<Value = String> {
    vec(any::<char>(), 0..=max_chars).prop_map(String::from_iter)
}

pub(crate) fn net_id() -> impl Strategy<Value = NetId> {
    (any_width_u32(), any_width_u32()).prop_map(|(index, generation)| NetId { index, generation })
}

pub(crate) fn kind() -> impl Strategy<Value = EntityKind> {
    prop_oneof![Just(EntityKind::Npc), Just(EntityKind::Player)]
}

pub(crate) fn motion() -> impl Strategy<Value = Motion> {
    prop_oneof![
        Just(Motion::Idle),
        Just(Motion::Moving),
        Just(Motion::WaitingForPath),
        Just(Motion::Circling),
        Just(Motion::Repulsed),
    ]
}

pub(crate) fn qpos() -> impl Strategy<Value = QPos> {
    (any::<i32>(), any::<i32>()).prop_map(|(x_cm, y_cm)| QPos { x_cm, y_cm })
}

pub(crate) fn entity_state() -> impl Strategy<Value = EntityState> {
    (net_id(), kind(), any::<u16>(), qpos(), motion()).prop_map(
        |(id, kind, radius_cm, pos, motion)| EntityState {
            id,
            kind,
            radius_cm,
            pos,
            motion,
        },
    )
}

pub(crate) fn change() -> impl Strategy<Value = Change> {
    change_of(net_id(), any::<i32>())
}

/// A change of an id and deltas from the given strategies.
pub(crate) fn change_of(
    id: impl Strategy<Value = NetId>,
    delta: impl Strategy<Value = i32> + Clone,
) -> impl Strategy<Value = Change> {
    (id, delta.clone(), delta, proptest::option::of(motion())).prop_map(
        |(id, dx_cm, dy_cm, motion)| Change {
            id,
            dx_cm,
            dy_cm,
            motion,
        },
    )
}

/// A snapshot with lists of arbitrary (unchecked) contents. Their sizes are chosen so that
/// some snapshots fit a datagram and some do not.
pub(crate) fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        any_width_u64(),
        proptest::option::of(any_width_u64()),
        any_width_u32(),
        vec(entity_state(), 0..24),
        vec(change(), 0..32),
        vec(net_id(), 0..48),
    )
        .prop_map(
            |(tick, baseline_tick, last_input_seq, entered, changed, left)| Snapshot {
                tick,
                baseline_tick,
                last_input_seq,
                entered,
                changed,
                left,
            },
        )
}

pub(crate) fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        Just(Command::Nothing),
        (any_f32(), any_f32()).prop_map(|(x, y)| Command::MoveTo { x, y }),
        (any_f32(), any_f32()).prop_map(|(x, y)| Command::Direction { x, y }),
        Just(Command::Stop),
    ]
}

pub(crate) fn client_datagram() -> impl Strategy<Value = ClientDatagram> {
    (
        any_width_u32(),
        proptest::option::of(any_width_u64()),
        command(),
    )
        .prop_map(|(seq, ack_tick, command)| {
            ClientDatagram::Input(Input {
                seq,
                ack_tick,
                command,
            })
        })
}

pub(crate) fn server_datagram() -> impl Strategy<Value = ServerDatagram> {
    snapshot().prop_map(ServerDatagram::Snapshot)
}

pub(crate) fn client_message() -> impl Strategy<Value = ClientMessage> {
    prop_oneof![
        any::<u16>().prop_map(|version| ClientMessage::Hello { version }),
        (any_string(40), proptest::option::of(any_string(200)))
            .prop_map(|(name, token)| ClientMessage::Login { name, token }),
        any_width_u64().prop_map(|nonce| ClientMessage::Ping { nonce }),
        any_width_u64().prop_map(|nonce| ClientMessage::Pong { nonce }),
        Just(ClientMessage::Leave),
    ]
}

pub(crate) fn disconnect_reason() -> impl Strategy<Value = DisconnectReason> {
    proptest::sample::select(DisconnectReason::ALL.to_vec())
}

pub(crate) fn welcome() -> impl Strategy<Value = Welcome> {
    (
        any::<u16>(),
        net_id(),
        any::<u16>(),
        any_string(60),
        (any_f32(), any_f32(), any_f32(), any_f32()),
        any_f32(),
    )
        .prop_map(
            |(version, entity, tick_rate_hz, map_id, (min_x, min_y, max_x, max_y), radius)| {
                Welcome {
                    version,
                    entity,
                    tick_rate_hz,
                    map_id,
                    bounds: Bounds {
                        min_x,
                        min_y,
                        max_x,
                        max_y,
                    },
                    view_radius_m: radius,
                }
            },
        )
}

pub(crate) fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        any_width_u32().prop_map(|grace_ms| Event::ShuttingDown { grace_ms }),
        (any_width_u32(), any_string(200))
            .prop_map(|(count, reason)| Event::InvalidInput { count, reason }),
    ]
}

pub(crate) fn server_message() -> impl Strategy<Value = ServerMessage> {
    prop_oneof![
        welcome().prop_map(ServerMessage::Welcome),
        event().prop_map(ServerMessage::Event),
        any_width_u64().prop_map(|nonce| ServerMessage::Ping { nonce }),
        any_width_u64().prop_map(|nonce| ServerMessage::Pong { nonce }),
        (disconnect_reason(), any_string(200))
            .prop_map(|(reason, text)| ServerMessage::Disconnect { reason, text }),
    ]
}
