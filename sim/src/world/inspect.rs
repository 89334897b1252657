//! A closer look at one body, for operators and tools: what drives it, where it is going
//! and how it wants to move. The phases never read this; it is a copy taken when asked.

use super::World;
use crate::types::{Brain, EntityId, Vec2};
use crate::world::BodyView;

/// One body in detail ([`World::inspect`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BodyDetail {
    /// What [`World::body`] shows.
    pub view: BodyView,
    /// What drives it.
    pub brain: Brain,
    /// Where it is walking to, if anywhere.
    pub goal: Option<Vec2>,
    /// The direction it walks in by a direction order, if it has one.
    pub direction: Option<Vec2>,
    /// The velocity it wanted this tick after steering (before circling, repulsion and the
    /// walls), metres per second.
    pub wanted_vel: Vec2,
    /// Its walking speed, metres per second.
    pub speed_mps: f32,
    /// Whether its path request waits in the path queue.
    pub path_pending: bool,
    /// Its remaining path corners, its position first ([`World::path_of`]).
    pub path: Vec<Vec2>,
}

impl World {
    /// A live entity in detail, or `None` when `id` names none.
    pub fn inspect(&self, id: EntityId) -> Option<BodyDetail> {
        let body = self.bodies.get(id)?;
        Some(BodyDetail {
            view: body.view(id),
            brain: body.brain.clone(),
            goal: body.goal,
            direction: body.direction,
            wanted_vel: body.want,
            speed_mps: body.speed,
            path_pending: body.path_pending,
            path: self.path_of(id),
        })
    }
}
