//! Phase 7: PAPER §3.2 repulsion for bodies that overlap another body or a wall.

use parry2d::query::PointQuery;

use super::{DT_SECS, OVERLAP_TOLERANCE, World, disc_overlap, rotate, to_point, to_vec};
use crate::types::{Motion, Vec2};

/// A deterministic direction for two bodies at the same point.
fn tie_break(i: usize, j: usize) -> Vec2 {
    let angle = ((i.wrapping_mul(2_654_435_761) ^ j) % 360) as f32;
    let sign = if i < j { 1.0 } else { -1.0 };
    rotate(Vec2::new(sign, 0.0), angle)
}

/// The repulsion direction from unit force directions (PAPER §3.2), or `None`.
fn combine_forces(forces: &[Vec2]) -> Option<Vec2> {
    let first = *forces.first()?;
    let resultant = forces.iter().fold(Vec2::ZERO, |s, &f| s + f);
    let sum = if forces.len() < 3 {
        resultant
    } else {
        // The paper takes "any one force" as the x axis. Project decision: the resultant's
        // direction (the first force when they cancel exactly), so that a body pressed from
        // one side only keeps its push whichever force happens to be listed first.
        let x_axis = if resultant.length() > 1e-6 {
            resultant.normalize()
        } else {
            first
        };
        let y_axis = x_axis.perp();
        let (mut sx, mut sy) = (0.0f32, 0.0f32);
        let (mut x_pos, mut x_neg, mut y_pos, mut y_neg) = (false, false, false, false);
        // Project decision: a force counts as opposing on an axis only when its component
        // there is substantial (over cos 75°); a neighbour touching side-on must not veto
        // the push of a body on the edge of a crowd.
        const EPS: f32 = 0.26;
        for f in forces {
            let (x, y) = (f.dot(x_axis), f.dot(y_axis));
            sx += x;
            sy += y;
            x_pos |= x > EPS;
            x_neg |= x < -EPS;
            y_pos |= y > EPS;
            y_neg |= y < -EPS;
        }
        if x_pos && x_neg {
            sx = 0.0;
        }
        if y_pos && y_neg {
            sy = 0.0;
        }
        x_axis * sx + y_axis * sy
    };
    (sum.length() > 1e-6).then(|| sum.normalize())
}

impl World {
    /// Phase 7: PAPER §3.2 repulsion. A body overlapping others or walls moves at a fixed
    /// speed along the direction of the repulsion forces (their magnitude is ignored). With
    /// three or more contacts, on each axis of a frame aligned with the first force, a
    /// component whose forces disagree in sign is zeroed; if both are, it gets no push.
    pub fn repulse(&mut self) {
        let speed = self.config.repulsion_speed_mps;
        let mut forces: Vec<Vec2> = Vec::new();
        for i in 0..self.bodies.slot_count() {
            let Some(b) = self.bodies.at(i) else {
                continue;
            };
            // A ghost is where its owner put it: it pushes, it is not pushed.
            if !b.overlapping || b.ghost {
                continue;
            }
            let (pos, ball) = (b.pos, b.ball);
            forces.clear();
            let reach = ball.radius + self.bodies.max_radius();
            let bodies = &self.bodies;
            self.grid.for_each_near(pos, reach, |j| {
                if j == i {
                    return;
                }
                if let Some(o) = bodies.at(j)
                    && disc_overlap(pos, ball.radius, o.pos, o.ball.radius)
                        > OVERLAP_TOLERANCE * ball.radius.min(o.ball.radius)
                {
                    let away = pos - o.pos;
                    forces.push(if away.length() > 1e-6 {
                        away.normalize()
                    } else {
                        tie_break(i, j)
                    });
                }
            });
            self.wall_forces(pos, ball.radius, &mut forces);
            let dir = combine_forces(&forces);
            let Some(b) = self.bodies.at_mut(i) else {
                continue;
            };
            b.motion = Motion::Repulsed;
            if let Some(dir) = dir {
                b.next_pos = pos + dir * (speed * DT_SECS);
                self.contacts.next_discs[i] = [b.next_pos.x, b.next_pos.y, b.ball.radius];
                self.grid.set_disc(i, self.contacts.next_discs[i]);
            }
        }
    }

    /// Push-out directions from walls and closed doors the disc reaches into, and toward the
    /// mesh when the centre is off it.
    fn wall_forces(&mut self, pos: Vec2, radius: f32, forces: &mut Vec<Vec2>) {
        let p = to_point(pos);
        if self.mesh.locate(p).is_none() {
            if let Some((q, _)) = self.mesh.nearest_point(p, 1e3) {
                let to = to_vec(q) - pos;
                if to.length() > 1e-6 {
                    forces.push(to.normalize());
                }
            }
            return;
        }
        let limit = radius * (1.0 - OVERLAP_TOLERANCE);
        for (_, wall) in self.obstacles.near(&self.mesh, pos, radius, radius).iter() {
            let proj = wall.project_local_point(pos, true);
            let away = pos - proj.point;
            if away.length() < limit && away.length() > 1e-6 {
                forces.push(away.normalize());
            }
        }
        for (d, closed) in self.obstacles.doors() {
            if !closed {
                continue;
            }
            let proj = d.project_local_point(pos, true);
            let away = pos - proj.point;
            if away.length() < limit {
                // On the door line itself: push to the side the mesh continues on (the
                // door's left normal), deterministic either way.
                let n = if away.length() > 1e-6 {
                    away.normalize()
                } else {
                    (d.b - d.a).perp().normalize()
                };
                forces.push(n);
            }
        }
    }
}
