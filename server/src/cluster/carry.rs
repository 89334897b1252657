//! A body on the bus and in the world: the conversions a handoff makes between
//! [`protocol::bus::CarriedBody`] and [`sim::Carried`].

use protocol::EntityKind;
use protocol::bus::{CarriedBody, CarriedBrain};
use sim::{Brain, Carried, Kind, Vec2};

/// The wire kind of a world kind.
pub(crate) fn entity_kind(kind: Kind) -> EntityKind {
    match kind {
        Kind::Npc => EntityKind::Npc,
        Kind::Player => EntityKind::Player,
    }
}

/// The world kind of a wire kind.
pub(crate) fn world_kind(kind: EntityKind) -> Kind {
    match kind {
        EntityKind::Npc => Kind::Npc,
        EntityKind::Player => Kind::Player,
    }
}

fn v(p: [f32; 2]) -> Vec2 {
    Vec2::new(p[0], p[1])
}

fn a(v: Vec2) -> [f32; 2] {
    [v.x, v.y]
}

/// The bus form of a carried body.
pub(crate) fn carried_body(c: &Carried) -> CarriedBody {
    CarriedBody {
        kind: entity_kind(c.kind),
        brain: match &c.brain {
            Brain::Wander => CarriedBrain::Wander,
            Brain::Patrol(points) => CarriedBrain::Patrol(points.iter().map(|&p| a(p)).collect()),
            // A gather target is an id of the world it came from: it means nothing there.
            Brain::Idle | Brain::Gather(_) => CarriedBrain::Idle,
        },
        pos: a(c.pos),
        vel: a(c.vel),
        radius_m: c.radius_m,
        speed_mps: c.speed_mps,
        goal: c.goal.map(a),
        direction: c.direction.map(a),
        path: c.path.iter().map(|&p| a(p)).collect(),
        heading: c.heading.map(a),
        motion: sim_motion(c.motion),
        patrol_next: c.patrol_next,
        stalled_ticks: c.stalled_ticks,
        best_goal_dist: c.best_goal_dist,
    }
}

/// The world's form of a carried body.
pub(crate) fn carried(c: &CarriedBody) -> Carried {
    Carried {
        kind: world_kind(c.kind),
        brain: match &c.brain {
            CarriedBrain::Idle => Brain::Idle,
            CarriedBrain::Wander => Brain::Wander,
            CarriedBrain::Patrol(points) => Brain::Patrol(points.iter().map(|&p| v(p)).collect()),
        },
        pos: v(c.pos),
        vel: v(c.vel),
        radius_m: c.radius_m,
        speed_mps: c.speed_mps,
        goal: c.goal.map(v),
        direction: c.direction.map(v),
        path: c.path.iter().map(|&p| v(p)).collect(),
        heading: c.heading.map(v),
        motion: match c.motion {
            protocol::Motion::Idle => sim::Motion::Idle,
            protocol::Motion::Moving => sim::Motion::Moving,
            protocol::Motion::WaitingForPath => sim::Motion::WaitingForPath,
            protocol::Motion::Circling => sim::Motion::Circling,
            protocol::Motion::Repulsed => sim::Motion::Repulsed,
        },
        patrol_next: c.patrol_next,
        stalled_ticks: c.stalled_ticks,
        best_goal_dist: c.best_goal_dist,
    }
}

fn sim_motion(m: sim::Motion) -> protocol::Motion {
    crate::interest::wire_motion(m)
}
