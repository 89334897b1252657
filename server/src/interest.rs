//! The server's side of interest management: capturing the world's bodies into the
//! [`interest`] engine's [`Frame`] once per tick, and the wire ids of world entities. The
//! engine itself (views, deltas, priorities) is the `interest` crate.

use protocol::{EntityKind, EntityState, Motion, NetId, QPos};
use sim::{EntityId, Kind, World};

pub use interest::{ClientView, Frame, HISTORY, Scratch, ViewRange};

/// The wire id of a world entity.
pub fn net_id(id: EntityId) -> NetId {
    NetId {
        index: id.index,
        generation: id.generation,
    }
}

/// Copies the world's bodies into a frame for views of `range`.
pub fn capture(world: &World, range: ViewRange) -> Frame {
    let bounds = world.mesh().bounds();
    let mut states = Vec::new();
    let mut positions = Vec::new();
    for sim::BodyView {
        id,
        kind,
        pos,
        radius_m,
        motion,
    } in world.bodies()
    {
        states.push(EntityState {
            id: net_id(id),
            kind: match kind {
                Kind::Npc => EntityKind::Npc,
                Kind::Player => EntityKind::Player,
            },
            radius_cm: (radius_m * 100.0).round().clamp(0.0, f32::from(u16::MAX)) as u16,
            pos: QPos::from_metres(pos.x, pos.y),
            motion: wire_motion(motion),
        });
        positions.push((pos.x, pos.y));
    }
    Frame::from_states(
        states,
        positions,
        (bounds.min.x as f32, bounds.min.y as f32),
        (bounds.max.x as f32, bounds.max.y as f32),
        range,
    )
}

/// The wire form of a body's motion.
pub(crate) fn wire_motion(motion: sim::Motion) -> Motion {
    match motion {
        sim::Motion::Idle => Motion::Idle,
        sim::Motion::Moving => Motion::Moving,
        sim::Motion::WaitingForPath => Motion::WaitingForPath,
        sim::Motion::Circling => Motion::Circling,
        sim::Motion::Repulsed => Motion::Repulsed,
    }
}
