//! Phase 1, inputs: spawns, despawns, move orders and doors, each validated; invalid ones
//! are counted, never applied.

use super::bodies::Body;
use super::paths::clear_of_walls;
use super::{DT_SECS, MAX_RADIUS_M, World, finite, to_point, to_vec};
use crate::types::{Brain, Input};

impl World {
    /// Phase 1: inputs. Invalid ones are counted in
    /// [`StepOutput::invalid_inputs`](crate::StepOutput::invalid_inputs).
    pub fn apply_inputs(&mut self, inputs: &[Input]) {
        for (at, input) in inputs.iter().enumerate() {
            let spawned = self.out.spawned.len();
            if !self.apply_input(input) {
                self.out.invalid_inputs += 1;
            }
            if self.out.spawned.len() > spawned {
                self.out.spawned_by.push(at);
            }
        }
    }

    /// Applies one input; false when it is invalid (and then changes nothing).
    fn apply_input(&mut self, input: &Input) -> bool {
        match input {
            Input::Spawn {
                kind,
                pos,
                radius_m,
                speed_mps,
                brain,
            } => {
                if !valid_body(*pos, *radius_m, *speed_mps) {
                    return false;
                }
                let Some((p, _)) = self.mesh.nearest_point(to_point(*pos), 1e3) else {
                    return false;
                };
                // Asked for off the walkable area, it lands on its edge, half inside the
                // wall, where no wall force pushes an idle body out: it stands clear of the
                // walls instead, where they leave room.
                let p = clear_of_walls(&self.mesh, p, f64::from(*radius_m)).unwrap_or(p);
                let body = Body::new(
                    *kind,
                    brain.clone(),
                    to_vec(p),
                    *radius_m,
                    *speed_mps,
                    self.tick.0,
                );
                let id = self.bodies.insert(body);
                self.contacts.fresh = false;
                self.out.spawned.push(id);
                true
            }
            Input::SpawnGhost {
                kind,
                pos,
                radius_m,
                speed_mps,
            } => {
                if !valid_body(*pos, *radius_m, *speed_mps) {
                    return false;
                }
                let mut body =
                    Body::new(*kind, Brain::Idle, *pos, *radius_m, *speed_mps, self.tick.0);
                body.ghost = true;
                let id = self.bodies.insert(body);
                self.contacts.fresh = false;
                self.out.spawned.push(id);
                true
            }
            Input::PlaceGhost(id, pos) => {
                if !finite(*pos) {
                    return false;
                }
                let Some(b) = self.bodies.get_mut(*id).filter(|b| b.ghost) else {
                    return false;
                };
                b.vel = (*pos - b.pos) / DT_SECS;
                b.moved = (*pos - b.pos).length();
                b.pos = *pos;
                b.next_pos = *pos;
                self.contacts.fresh = false;
                true
            }
            Input::Adopt(carried) => self.adopt(carried),
            Input::Despawn(id) => {
                if self.bodies.remove(*id).is_none() {
                    return false;
                }
                self.contacts.fresh = false;
                true
            }
            Input::MoveTo(id, goal) => {
                if !finite(*goal) {
                    return false;
                }
                let tick = self.tick.0;
                let Some(b) = self.bodies.get_mut(*id).filter(|b| !b.ghost) else {
                    return false;
                };
                // The same order again (a client repeating it every tick, as a held button
                // does): the body goes on along the path it has or waits for. A new search
                // each time would keep it standing (a body waiting for a path does not
                // move) and spend the tick's path budget on nothing.
                let walking = b.path_pending || b.path.len() > b.corner;
                if b.goal == Some(*goal) && b.direction.is_none() && walking {
                    return true;
                }
                b.direction = None;
                b.set_goal(*goal, tick);
                if !b.path_pending {
                    b.path_pending = true;
                    self.paths.push(*id, tick);
                }
                true
            }
            Input::MoveInDirection(id, dir) => {
                let Some(unit) = unit(*dir) else {
                    return false;
                };
                let Some(b) = self.bodies.get_mut(*id).filter(|b| !b.ghost) else {
                    return false;
                };
                b.goal = None;
                b.clear_path();
                b.direction = Some(unit);
                true
            }
            Input::Stop(id) => {
                let Some(b) = self.bodies.get_mut(*id).filter(|b| !b.ghost) else {
                    return false;
                };
                b.goal = None;
                b.clear_path();
                b.direction = None;
                b.heading = None;
                true
            }
            Input::SetDoor { door, closed } => {
                if !self.obstacles.set_door(*door, *closed) {
                    return false;
                }
                self.contacts.fresh = false;
                true
            }
        }
    }
}

/// `dir` scaled to length 1, or `None` when it has no direction (zero, or not finite).
/// Scaled by its larger component first, so that the length neither overflows (a
/// component above about 1.8e19 squares to infinity in `f32`) nor underflows to zero.
fn unit(dir: crate::types::Vec2) -> Option<crate::types::Vec2> {
    let largest = dir.x.abs().max(dir.y.abs());
    if !finite(dir) || largest == 0.0 {
        return None;
    }
    let scaled = dir / largest;
    Some(scaled / scaled.length())
}

/// Whether a new body's place, radius and speed are usable: finite, a positive radius up
/// to [`MAX_RADIUS_M`], a speed of at least 0.
fn valid_body(pos: crate::types::Vec2, radius_m: f32, speed_mps: f32) -> bool {
    finite(pos)
        && radius_m > 0.0
        && radius_m <= MAX_RADIUS_M
        && speed_mps >= 0.0
        && speed_mps.is_finite()
}
