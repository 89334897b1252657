//! Moving a body between worlds: what a zone hands to its neighbour when one of its bodies
//! walks out of its region ([`World::carry`], [`crate::Input::Adopt`]). The body goes on in
//! the other world where it was, as it was: the same path and goal, the same velocity, the
//! same patience before it gives up its goal.

use super::bodies::Body;
use super::{MAX_RADIUS_M, World, finite, to_point, to_vec};
use crate::types::{Brain, EntityId, Kind, Motion, Vec2};

/// Everything a body is, taken out of one world to go on in another
/// ([`World::carry`], [`crate::Input::Adopt`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Carried {
    /// NPC or player character.
    pub kind: Kind,
    /// What drives it. A [`Brain::Gather`] target is an id of the world it came from.
    pub brain: Brain,
    /// Where its centre stands, metres.
    pub pos: Vec2,
    /// Its velocity over the last tick, metres per second.
    pub vel: Vec2,
    /// Its radius, metres.
    pub radius_m: f32,
    /// Its walking speed, metres per second.
    pub speed_mps: f32,
    /// Where it walks to, if anywhere.
    pub goal: Option<Vec2>,
    /// The direction of its direction order, if it has one.
    pub direction: Option<Vec2>,
    /// Its remaining path corners, the next one first (empty while its path is being
    /// searched: the new world searches it again).
    pub path: Vec<Vec2>,
    /// Its circling heading, while circling (PAPER §2.2).
    pub heading: Option<Vec2>,
    /// What it did in its last tick.
    pub motion: Motion,
    /// The index of the next point of its patrol.
    pub patrol_next: u32,
    /// Ticks since it last came closer to its goal (the give-up rule's count).
    pub stalled_ticks: u32,
    /// The closest it has come to its goal since then, metres.
    pub best_goal_dist: f32,
}

impl Carried {
    /// Whether every number in it is usable: finite points (its patrol's among them), a
    /// positive radius up to [`MAX_RADIUS_M`], a finite speed of at least 0.
    pub fn is_valid(&self) -> bool {
        let points = [
            Some(self.pos),
            Some(self.vel),
            self.goal,
            self.direction,
            self.heading,
        ];
        self.radius_m > 0.0
            && self.radius_m <= MAX_RADIUS_M
            && self.speed_mps >= 0.0
            && self.speed_mps.is_finite()
            && !self.best_goal_dist.is_nan()
            && points.iter().flatten().all(|&p| finite(p))
            && self.path.iter().all(|&p| finite(p))
            && match &self.brain {
                // A point that is not a number would be a goal no search reaches, asked
                // for again every tick.
                Brain::Patrol(points) => points.iter().all(|&p| finite(p)),
                Brain::Idle | Brain::Wander | Brain::Gather(_) => true,
            }
    }
}

impl World {
    /// A copy of everything body `id` is, to hand to another world; `None` for a ghost or
    /// an id that names no body. The body stays here: the caller removes it.
    pub fn carry(&self, id: EntityId) -> Option<Carried> {
        let b = self.bodies.get(id).filter(|b| !b.ghost)?;
        Some(Carried {
            kind: b.kind,
            brain: b.brain.clone(),
            pos: b.pos,
            vel: b.vel,
            radius_m: b.ball.radius,
            speed_mps: b.speed,
            goal: b.goal,
            direction: b.direction,
            path: if b.path_pending {
                Vec::new()
            } else {
                b.path.get(b.corner..).unwrap_or_default().to_vec()
            },
            heading: b.heading,
            motion: b.motion,
            patrol_next: u32::try_from(b.patrol_next).unwrap_or(u32::MAX),
            stalled_ticks: u32::try_from(self.tick.0.saturating_sub(b.progress_tick))
                .unwrap_or(u32::MAX),
            best_goal_dist: b.best_goal_dist,
        })
    }

    /// Phase 1 for [`crate::Input::Adopt`]: inserts the carried body; false (nothing
    /// changed) when a number in it is unusable or it stands off the mesh by more than a
    /// kilometre.
    pub(super) fn adopt(&mut self, carried: &Carried) -> bool {
        if !carried.is_valid() {
            return false;
        }
        let Some((p, _)) = self.mesh.nearest_point(to_point(carried.pos), 1e3) else {
            return false;
        };
        let tick = self.tick.0;
        let mut body = Body::new(
            carried.kind,
            carried.brain.clone(),
            to_vec(p),
            carried.radius_m,
            carried.speed_mps,
            tick.saturating_sub(u64::from(carried.stalled_ticks)),
        );
        body.vel = carried.vel;
        body.goal = carried.goal;
        body.direction = carried.direction;
        body.heading = carried.heading;
        body.motion = carried.motion;
        body.patrol_next = carried.patrol_next as usize;
        body.best_goal_dist = carried.best_goal_dist;
        let needs_path = body.goal.is_some() && carried.path.is_empty();
        if !needs_path {
            // The carried corners run from the next one on; the path starts where the
            // body stands, as a searched path does.
            body.path = std::iter::once(body.pos)
                .chain(carried.path.iter().copied())
                .collect();
            body.corner = 1;
            if carried.path.is_empty() {
                body.path.clear();
                body.corner = 0;
            }
        }
        body.path_pending = needs_path;
        let id = self.bodies.insert(body);
        if needs_path {
            self.paths.push(id, tick);
        }
        self.contacts.fresh = false;
        self.out.spawned.push(id);
        true
    }
}
