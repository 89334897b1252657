//! A player's input on its way to the world: its sequence number and acknowledgement
//! taken, its command turned into the world's input.

use protocol::Command;
use sim::{EntityId, Input, Vec2, World};

use super::SessionId;
use crate::metrics::{InputDrop, Metrics};
use crate::snapshots::Membership;

/// A move-to point off the walkable area goes to the nearest walkable point this close.
const SNAP_GOAL_M: f64 = 1_000.0;

/// The world's input for a player's command to `entity`; `None` when a move-to point has
/// no walkable point near it. A point in a wall or on another island means "as near there
/// as you can walk": the goal moves to the nearest point of the body's own island
/// (sessions checked the bounds).
pub(crate) fn command_input(world: &World, entity: EntityId, command: Command) -> Option<Input> {
    Some(match command {
        Command::MoveTo { x, y } => {
            let mesh = world.mesh();
            let wanted = navmesh::Point::new(f64::from(x), f64::from(y));
            let island = world.body(entity).and_then(|body| {
                let at = navmesh::Point::new(f64::from(body.pos.x), f64::from(body.pos.y));
                mesh.locate(at).map(|tri| mesh.island(tri))
            });
            let (goal, _) = match island {
                Some(island) => mesh.nearest_point_on_island(wanted, SNAP_GOAL_M, island)?,
                None => mesh.nearest_point(wanted, SNAP_GOAL_M)?,
            };
            Input::MoveTo(entity, Vec2::new(goal.x as f32, goal.y as f32))
        }
        Command::Direction { x, y } => Input::MoveInDirection(entity, Vec2::new(x, y)),
        Command::Stop | Command::Nothing => Input::Stop(entity),
    })
}

/// Takes an input's sequence number and acknowledgement for a session whose newest taken
/// input is `taken_seq`; `false` (counted) when the input is stale.
pub(super) fn take_input(
    taken_seq: &mut Option<u32>,
    session: SessionId,
    input: &protocol::Input,
    membership: &mut Membership,
    metrics: &Metrics,
) -> bool {
    if taken_seq.is_some_and(|taken| input.seq <= taken) {
        metrics.input_dropped(InputDrop::Stale);
        return false;
    }
    *taken_seq = Some(input.seq);
    if let Some(tick) = input.ack_tick {
        let acked = membership.acks.entry(session).or_insert(tick);
        *acked = (*acked).max(tick);
    }
    true
}

#[cfg(test)]
mod tests {
    use sim::{Brain, Kind, WorldConfig};

    use super::*;

    /// On the arena, a click in the wall of the east room (x 32 to 40, y 10 to 20) that is
    /// nearer the walkable strip beyond it, another island: the character walks to the
    /// room's wall, as near the click as it can, instead of being sent to the strip it
    /// cannot reach (its order was dropped and it stood still).
    #[test]
    fn a_click_nearer_another_island_walks_as_near_as_the_own_island_allows() {
        let mesh = super::super::tests::arena();
        let mut world = World::new(WorldConfig::default(), mesh, 1);
        let spawn = Input::Spawn {
            kind: Kind::Player,
            pos: Vec2::new(35.0, 12.0),
            radius_m: 0.4,
            speed_mps: 1.5,
            brain: Brain::Idle,
        };
        let me = world.step(&[spawn]).spawned[0];
        let click = Command::MoveTo { x: 35.0, y: 21.8 };
        let order = command_input(&world, me, click).expect("a walkable point near");
        let Input::MoveTo(_, goal) = order else {
            panic!("{order:?}");
        };
        assert!(
            (goal - Vec2::new(35.0, 20.0)).length() < 0.01,
            "goal {goal:?}"
        );
        world.step(&[order]);
        for _ in 0..200 {
            world.step(&[]);
        }
        let at = world.body(me).unwrap().pos;
        assert!(at.y > 18.5, "stands at {at:?}: {:?}", world.inspect(me));
    }
}
