//! Phase 4, steering: each body's wanted velocity toward its next path corner, corners
//! passed from the side, and keeping right of oncoming bodies.

use navmesh::NavMesh;

use super::{DT_SECS, World, rotate_by, to_point};
use crate::types::Vec2;

/// Keep right: how often each body looks ahead for oncoming bodies, in ticks.
const LANE_EVERY: u64 = 8;

/// Keep right: how far ahead a body looks, metres.
const LANE_LOOKAHEAD_M: f32 = 3.0;

/// Keep right: the free space wanted between passing bodies, metres.
const LANE_GAP_M: f32 = 0.2;

/// Keep right: the largest turn, degrees.
const LANE_MAX_DEG: f32 = 40.0;

/// A corner can be passed from the side (see `turned_corner`) within this distance of it.
const TURN_REACH_M: f32 = 4.0;

/// Whether a body at `pos` has come round corner `k` of `path` (not the last), which
/// stands at `c`: it stands on the far side of the line through the corner and the next
/// one from where the path came, and sees the next corner. A body pushed wide of its path
/// by a crowd passes the corner there, instead of having to reach the corner point
/// itself, which every path round that wall corner shares and a crowd can keep occupied.
fn turned_corner(mesh: &NavMesh, path: &[Vec2], k: usize, c: Vec2, pos: Vec2) -> bool {
    // Near the corner first: it needs only the corner, which the body remembers, while
    // the corners on either side are in the path's own memory.
    if (pos - c).length_squared() > TURN_REACH_M * TURN_REACH_M {
        return false;
    }
    let (Some(&prev), Some(&next)) = (k.checked_sub(1).and_then(|p| path.get(p)), path.get(k + 1))
    else {
        return false;
    };
    let (u, v) = (c - prev, next - c);
    let turn = u.perp_dot(v);
    let side = v.perp_dot(pos - c);
    let beyond = if turn.abs() <= 1e-6 * u.length() * v.length() {
        v.dot(pos - c) >= 0.0
    } else {
        side * turn <= 0.0
    };
    beyond
        && matches!(
            mesh.raycast(to_point(pos), to_point(next)),
            Ok(navmesh::Raycast::Clear)
        )
}

impl World {
    /// Phase 4: steering, the wanted velocity toward the next path corner.
    pub fn steer(&mut self) {
        // The grid and the overlap flags are those of the last tick's end, unless an input
        // added, removed or re-walled something since.
        if !self.contacts.fresh {
            self.survey(false);
        }
        let arrive = self.config.arrive_distance_m;
        for b in self.bodies.iter_mut() {
            b.want = Vec2::ZERO;
            if let Some(dir) = b.direction {
                b.want = dir * b.speed;
                continue;
            }
            let Some(goal) = b.goal else {
                b.heading = None;
                continue;
            };
            if (b.path_pending && !b.rerouting) || b.path.is_empty() {
                continue;
            }
            while let Some(c) = b.corner_point() {
                let last = b.corner + 1 == b.path.len();
                let to = c - b.pos;
                if last
                    || (to.length() > arrive
                        && !turned_corner(&self.mesh, &b.path, b.corner, c, b.pos))
                {
                    break;
                }
                b.corner += 1;
                b.along = None;
            }
            let target = b.corner_point().unwrap_or(goal);
            let to = target - b.pos;
            let dist = to.length();
            if b.corner + 1 >= b.path.len() && dist <= arrive {
                b.goal = None;
                b.clear_path();
                b.heading = None;
                self.out.arrivals += 1;
                continue;
            }
            b.want = to / dist * b.speed.min(dist / DT_SECS);
        }
        self.keep_lanes();
        self.anticipate();
    }

    /// Keep right (project decision), the steering half: every [`LANE_EVERY`] ticks each
    /// body walking to a goal looks [`LANE_LOOKAHEAD_M`] ahead for bodies walking the other
    /// way in its lane (closer sideways than two radii and a margin, or on its right), and
    /// turns its wanted heading to the right just enough to let the nearest such body pass
    /// on its left (at most [`LANE_MAX_DEG`]); the turn is kept until the next look. Bodies
    /// walking the other way do the same, so opposing streams sort themselves into lanes
    /// before they touch, instead of meeting head-on and leaving circling to untangle them.
    fn keep_lanes(&mut self) {
        let tick = self.tick.0;
        let look = LANE_LOOKAHEAD_M;
        let max_turn = LANE_MAX_DEG.to_radians();
        self.intents.clear();
        self.intents.extend(
            self.bodies
                .slots()
                .map(|b| b.map_or(Vec2::ZERO, |b| b.want)),
        );
        for i in 0..self.bodies.slot_count() {
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            let speed = b.want.length();
            if b.direction.is_some() || speed == 0.0 {
                continue;
            }
            let (pos, r, d0) = (b.pos, b.ball.radius, b.want / speed);
            let mut lane = b.lane;
            if (i as u64 + tick).is_multiple_of(LANE_EVERY) {
                lane = 0.0;
                let left = d0.perp();
                let intents = &self.intents;
                // The cells of the strip ahead: `look` long, `clear` wide on each side.
                let pad = r + self.bodies.max_radius() + LANE_GAP_M;
                let end = pos + d0 * look;
                let cells = self.grid.cells_between(
                    pos.min(end) - Vec2::new(pad, pad),
                    pos.max(end) + Vec2::new(pad, pad),
                );
                // Only the bodies in the strip ahead count (dropped by the grid's
                // straight-line filter, see `BodyGrid::for_each_disc_in`).
                let in_strip = |[x, y, r_other]: [f32; 3]| {
                    let rel = Vec2::new(x, y) - pos;
                    let ahead = rel.dot(d0);
                    let clear = r + r_other + LANE_GAP_M;
                    let side = rel.dot(left);
                    !((ahead <= 0.0) | (ahead > look) | (side >= clear) | (side <= -clear))
                };
                self.grid
                    .for_each_disc_in(cells, in_strip, |j, [x, y, r_other]| {
                        if j == i || r_other < 0.0 {
                            return;
                        }
                        let rel = Vec2::new(x, y) - pos;
                        let ahead = rel.dot(d0);
                        let clear = r + r_other + LANE_GAP_M;
                        let side = rel.dot(left);
                        // The other's heading as its path sets it, not as its own
                        // keep-right turned it (which it has when its slot came first).
                        let o_want = intents[j];
                        if o_want.dot(d0) >= -0.3 * o_want.length() {
                            return;
                        }
                        // Turn right until the other is `clear` to the left of the new heading.
                        let turn = -((clear - side) / ahead).atan().min(max_turn);
                        lane = lane.min(turn);
                    });
            }
            if let Some(b) = self.bodies.at_mut(i) {
                b.lane = lane;
                if lane != 0.0 {
                    let (s, c) = lane.sin_cos();
                    b.want = rotate_by(b.want, s, c);
                }
            }
        }
    }
}
