//! Phase 6: predicted moves and PAPER §2.2 circling for the bodies whose move collides,
//! with the keep-right rule for bodies walking into each other.

use parry2d::query::PointQuery;

use super::{DT_SECS, World, disc_overlap, rotate_by, to_point, turn_toward};
use crate::types::{Motion, Vec2};

/// How many ticks in a row a body may wait for an oncoming body to pass on its right
/// before it circles both ways (see [`World::decide`]).
const KEEP_RIGHT_TICKS: u32 = 20;

/// `(sin, cos)` of an angle.
type SinCos = (f32, f32);

/// A neighbour disc a circling body's move can touch (see [`World::gather_surroundings`]).
#[derive(Clone, Copy, Debug)]
struct Near {
    /// Centre (its decided or current next position).
    p: Vec2,
    /// Radius.
    r: f32,
    /// How deep the circling body overlaps it before moving.
    before: f32,
}

/// The circling phase's scratch: the deflections of the search, and what the body being
/// decided can touch (see [`World::gather_surroundings`]).
#[derive(Default)]
pub(super) struct CirclingScratch {
    /// `(a, sin_cos(-a), sin_cos(a))` for each deflection `a` of the PAPER §2.2 search, in
    /// search order.
    fan: Vec<(f32, SinCos, SinCos)>,
    /// The bodies a move of one step can touch, with their discs.
    near: Vec<Near>,
    /// The walls a move of one step can reach.
    walls: Vec<u32>,
    /// The body's wall depth where it stands.
    from_depth: f32,
    /// The step the surroundings were gathered for.
    step: f32,
    /// The longest step any body wants this tick.
    max_step: f32,
}

impl World {
    /// Phase 6: predicted moves, and PAPER §2.2 circling for bodies whose move collides.
    ///
    /// Bodies are decided in id order; each is tested against the already decided next
    /// positions of the others, so two bodies never step into the same free spot. A body
    /// that collides tries headings `d ± a` for `a = 10°, 20°, … 180°` (clockwise first),
    /// takes the first free one, and keeps it as its circling heading; each later tick it
    /// first tries its wanted heading `d0` (free: leave circling and replan the static
    /// path), else turns `d` back toward `d0` by 10° and searches again from there. With no
    /// free heading it waits this tick (project decision).
    pub fn circle(&mut self) {
        let step_deg = self.config.circling_step_deg.max(1.0);
        // The deflections `a = step, 2 step, … <= 180°` (accumulated as the search always
        // did) with their sines and cosines, computed once a tick instead of per candidate.
        self.circling.fan.clear();
        let mut a = step_deg;
        while a <= 180.0 {
            self.circling
                .fan
                .push((a, (-a).to_radians().sin_cos(), a.to_radians().sin_cos()));
            a += step_deg;
        }
        self.circling.max_step = self
            .bodies
            .iter()
            .map(|(_, b)| {
                // A ghost's disc is grown by its step instead (see `find_contacts`).
                if b.ghost {
                    b.speed * DT_SECS
                } else {
                    b.want.length() * DT_SECS
                }
            })
            .fold(0.0, f32::max);
        for i in 0..self.bodies.slot_count() {
            self.decide(i);
        }
    }

    /// Decides body `i`'s move for this tick (see [`World::circle`]).
    fn decide(&mut self, i: usize) {
        let return_deg = self.config.circling_return_deg;
        let Some(b) = self.bodies.at(i) else {
            return;
        };
        // A ghost's next place was predicted when the tick's contacts were made.
        if b.overlapping || b.ghost {
            return;
        }
        let (pos, want, heading) = (b.pos, b.want, b.heading);
        // Project decision: a body walking in a direction (a player holding a key)
        // slides along what blocks it, at most 90° off its direction, and never turns
        // back; circling around to the far side is for bodies walking to a goal.
        let steered = b.direction.is_some();
        let max_angle = if steered { 90.0 } else { 180.0 };
        let heading = if steered { None } else { heading };
        let speed = want.length();
        if speed == 0.0 {
            if let Some(b) = self.bodies.at_mut(i) {
                b.next_pos = pos;
                b.motion = if b.path_pending {
                    Motion::WaitingForPath
                } else {
                    Motion::Idle
                };
            }
            return;
        }
        let d0 = want / speed;
        let step = speed * DT_SECS;
        let mut replan = false;
        let radius = b.ball.radius;
        let ahead = pos + d0 * step;
        let blocker = self.gather_surroundings(i, pos, radius, step, (!steered).then_some(ahead));
        // Keep right (project decision): when the body in the way walks toward this one,
        // both step aside to their own right, as people do, and pass. A body that cannot
        // (a wall or others on its right) waits where it is rather than swerving left into
        // the other's way, for up to a second; then it circles both ways as PAPER §2.2 says.
        // Without this, a body with a wall on its right swerves left, where the oncoming one
        // steps too, and opposing streams along one wall jam.
        let oncoming = !steered
            && blocker.is_some_and(|j| {
                self.bodies
                    .at(j)
                    .is_some_and(|o| o.want.dot(pos - o.pos) > 0.0 && o.want.dot(d0) < 0.0)
            })
            && self
                .bodies
                .at(i)
                .is_some_and(|b| b.yield_ticks < KEEP_RIGHT_TICKS);
        let chosen = if self.is_free(radius, ahead) {
            replan = heading.is_some();
            Some((d0, false))
        } else {
            let d = heading.map_or(d0, |d| turn_toward(d, d0, return_deg));
            if heading.is_some() && self.is_free(radius, pos + d * step) {
                Some((d, true))
            } else {
                let (max_angle, sides) = if oncoming { (90.0, 1) } else { (max_angle, 2) };
                let mut found = None;
                'search: for k in 0..self.circling.fan.len() {
                    let (a, minus, plus) = self.circling.fan[k];
                    if a > max_angle {
                        break;
                    }
                    for &(s, c) in [minus, plus].iter().take(sides) {
                        let cand = rotate_by(d, s, c);
                        if self.is_free(radius, pos + cand * step) {
                            found = Some((cand, true));
                            break 'search;
                        }
                    }
                }
                found
            }
        };
        if let Some(b) = self.bodies.at_mut(i) {
            b.yield_ticks = if oncoming && chosen.is_none() {
                b.yield_ticks + 1
            } else {
                0
            };
        }
        let tick = self.tick.0;
        let id = self.bodies.id_at(i);
        let Some(b) = self.bodies.at_mut(i) else {
            return;
        };
        match chosen {
            Some((dir, circling)) => {
                b.next_pos = pos + dir * step;
                b.heading = circling.then_some(dir);
                b.motion = if circling {
                    Motion::Circling
                } else {
                    Motion::Moving
                };
            }
            None => {
                // Every heading collides: wait, still circling.
                b.next_pos = pos;
                b.heading = Some(heading.unwrap_or(d0));
                b.motion = Motion::Circling;
            }
        }
        self.contacts.next_discs[i] = [b.next_pos.x, b.next_pos.y, b.ball.radius];
        self.grid.set_disc(i, self.contacts.next_discs[i]);
        // Leaving the circling state: recompute the static path (PAPER §2.2 step 6).
        // Project decision: only when circling took the body out of sight of its next
        // corner; otherwise the path it has is still the shortest way on, and replanning
        // every body that ever circled would flood the path queue in a crowd.
        let corner = b.path.get(b.corner).copied();
        if replan
            && let Some(goal) = b.goal
            && !b.path_pending
            && !corner.is_some_and(|c| {
                matches!(
                    self.mesh.raycast(to_point(pos), to_point(c)),
                    Ok(navmesh::Raycast::Clear)
                )
            })
        {
            b.set_goal(goal, tick);
            b.path_pending = true;
            self.paths.push(id, tick);
        }
    }

    /// Collects, once per body and tick, everything a move of up to `step` from `from`
    /// could touch: the bodies a step can touch, with their discs as decided so far and
    /// their overlap before the move (`CirclingScratch::near`), and the walls within the
    /// radius plus the step (`CirclingScratch::walls`). Every candidate heading of the
    /// circling search is then tested against these short lists. Nothing else is decided
    /// while one body searches, so the discs are those the search would read anyway.
    ///
    /// The lists leave out only what cannot matter: a disc or wall farther than radius plus
    /// step (plus 1 mm for rounding) from `from` is beyond the body's disc after any move
    /// of one step, so it never blocks a heading nor lowers the clearance below the radius.
    /// With no wall (and no closed door) that near, the body's `wall_free` disc records it.
    ///
    /// With `ahead` (the straight move's end), it also returns [`World::first_blocker`] of
    /// that move, from the same pass: the grid query around `ahead` visits a subset of
    /// these cells, in the same order, so the same bodies are compared in the same order.
    fn gather_surroundings(
        &mut self,
        i: usize,
        from: Vec2,
        radius: f32,
        step: f32,
        ahead: Option<Vec2>,
    ) -> Option<usize> {
        const SLACK: f32 = 1e-3;
        // A neighbour's decided disc may stand its own step away from the cell it is filed
        // in: reach past the longest step any body takes this tick as well as this one's.
        let reach = radius + self.bodies.max_radius() + step + self.circling.max_step.max(step);
        let gathered = self.grid.cell_box(from, reach);
        // The cells the blocker's own grid query would visit; when rounding puts them
        // beyond the gathered ones, that query runs after all.
        let ahead = ahead.map(|to| {
            let cells = self
                .grid
                .cell_box(to, radius + self.bodies.max_radius() + (to - from).length());
            let inside = cells[0] >= gathered[0]
                && cells[1] >= gathered[1]
                && cells[2] <= gathered[2]
                && cells[3] <= gathered[3];
            (to, cells, inside)
        });
        let mut worst: Option<(f32, usize)> = None;
        let near = &mut self.circling.near;
        near.clear();
        // The grid holds the same discs as `Contacts::next_discs` (both are set together).
        let grid = &self.grid;
        grid.for_each_placed_disc_in(gathered, |j, [x, y, r], k, cy| {
            if j == i || r < 0.0 {
                return;
            }
            let p = Vec2::new(x, y);
            // Most bodies of the cells are beyond a step's reach: drop them first. (A
            // right-of-way blocker overlaps the straight move's end, so it is never one
            // of them.)
            let far = radius + r + step + SLACK;
            if (from - p).length_squared() >= far * far {
                return;
            }
            if let Some((to, cells, true)) = &ahead {
                let sum = radius + r;
                // Beyond 1 mm past touching, the depth below is negative: skip the roots.
                let clear = sum + SLACK;
                if (*to - p).length_squared() < clear * clear {
                    let depth = radius + r - (*to - p).length();
                    let before = radius + r - (from - p).length();
                    if depth > 0.0
                        && depth > before
                        && worst.is_none_or(|(d, _)| depth > d)
                        && grid.places_in(*cells, k, cy)
                    {
                        worst = Some((depth, j));
                    }
                }
            }
            near.push(Near {
                p,
                r,
                before: disc_overlap(from, radius, p, r),
            });
        });
        let blocker = match ahead {
            Some((to, _, false)) => self.first_blocker(i, from, to),
            _ => worst.map(|(_, j)| j),
        };
        // The walls list reaches 1 cm past the step, so that a body that moves its full
        // step with no wall listed is still known clear of walls where it lands.
        let wall_reach = radius + step + 0.01;
        let walls = self
            .obstacles
            .near_for(i, &self.mesh, from, wall_reach, wall_reach);
        let bound = walls.bound;
        self.circling.walls.clear();
        let far = radius + step + SLACK;
        // A lower bound on the distance from `from` to any wall: walls not listed are at
        // least the reach away, and none is nearer than the cell's bound.
        let mut nearest = wall_reach;
        for (w, wall) in walls.iter() {
            let d = wall.distance_to_local_point(from, true);
            nearest = nearest.min(d);
            if d < far {
                self.circling.walls.push(w);
            }
        }
        self.circling.step = step;
        let doors_closed = self.obstacles.any_door_closed();
        self.contacts.wall_free[i] = (
            from,
            if doors_closed {
                -1.0
            } else {
                nearest.max(bound)
            },
        );
        self.circling.from_depth = if self.circling.walls.is_empty() && !doors_closed {
            0.0
        } else {
            self.obstacles.body_depth(&self.mesh, i, from, radius)
        };
        blocker
    }

    /// Whether moving the circling body from where it stands to `to` is free: it must not
    /// deepen an overlap with any body (at its already decided next position) or with a
    /// wall. Bodies already overlapping may separate.
    ///
    /// Tests against what [`World::gather_surroundings`] collected for this body.
    fn is_free(&mut self, radius: f32, to: Vec2) -> bool {
        let near = &mut self.circling.near;
        for k in 0..near.len() {
            let n = near[k];
            // Cheap reject before the exact contact depth.
            let sum = radius + n.r;
            if (to - n.p).length_squared() >= sum * sum {
                continue;
            }
            let depth_after = disc_overlap(to, radius, n.p, n.r);
            if depth_after > 0.0 && depth_after > n.before {
                // Neighbouring headings are mostly blocked by the same body: test it first
                // next time (the answer is the same in any order).
                near.swap(0, k);
                return false;
            }
        }
        let mut clearance = radius;
        for &w in &self.circling.walls {
            clearance = clearance.min(self.obstacles.wall(w).distance_to_local_point(to, true));
        }
        for (d, closed) in self.obstacles.doors() {
            if closed {
                clearance = clearance.min(d.distance_to_local_point(to, true));
            }
        }
        if clearance >= radius {
            return true;
        }
        let mut after = radius - clearance;
        // Only a move that crosses a wall takes the centre off the mesh (the walkable
        // area's boundary is made of walls), and the crossed wall would lie within the
        // step of `to` and be listed: a centre that starts on the mesh (its depth is below
        // the radius) and ends farther than the step from every wall is still on it.
        let stays_on = self.circling.from_depth < radius && clearance > self.circling.step + 1e-3;
        if !stays_on && self.mesh.locate(to_point(to)).is_none() {
            after = radius;
        }
        after <= self.circling.from_depth
    }

    /// The body (other than `i`) that a move of `i` from `from` to `to` would push into
    /// most deeply, if any.
    fn first_blocker(&self, i: usize, from: Vec2, to: Vec2) -> Option<usize> {
        let ball = self.bodies.at(i)?.ball;
        let reach = ball.radius + self.bodies.max_radius() + (to - from).length();
        let discs = &self.contacts.next_discs;
        let mut worst: Option<(f32, usize)> = None;
        self.grid.for_each_near(to, reach, |j| {
            let [x, y, r] = discs[j];
            if j == i || r < 0.0 {
                return;
            }
            let other = Vec2::new(x, y);
            let depth = ball.radius + r - (to - other).length();
            let before = ball.radius + r - (from - other).length();
            if depth > 0.0 && depth > before && worst.is_none_or(|(d, _)| depth > d) {
                worst = Some((depth, j));
            }
        });
        worst.map(|(_, j)| j)
    }
}
