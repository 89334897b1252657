//! Phase 3, the path queue: requests served first come first served within the per-tick
//! node budget, and the found paths shaped for a crowd (ends a body can stand on, corners
//! kept clear of the walls they wrap).

use navmesh::{Point, SliceStatus};

use super::{World, remaining_length, to_point, to_vec};
use crate::types::{EntityId, Vec2};

/// The share of the corner margin a path keeps round a corner it turns right around.
const RIGHT_TURN_MARGIN: f64 = 0.2;

impl World {
    /// Phase 3: path requests, first come first served, within the node budget. A search
    /// that does not finish continues next tick.
    pub fn serve_paths(&mut self) {
        let live = self.slots.len() - self.free.len();
        let per_body = f64::from(self.config.path_budget_per_body.max(0.0)) * live as f64;
        let mut budget = self.config.path_budget_per_tick.max(per_body as usize);
        let tick = self.tick.0;
        let mut longest = 0u64;
        while budget > 0 {
            let (id, goal, queued) = match self.searching {
                Some(active) => active,
                None => {
                    let Some((id, queued)) = self.queue.pop_front() else {
                        break;
                    };
                    let Some(b) = self.get(id) else { continue };
                    let Some(goal) = b.goal else {
                        if let Some(b) = self.get_mut(id) {
                            b.path_pending = false;
                        }
                        continue;
                    };
                    let start = match self.mesh.nearest_point(to_point(b.pos), 1e3) {
                        Some((p, _)) => p,
                        None => to_point(b.pos),
                    };
                    let radius = f64::from(b.ball.radius);
                    budget = budget.saturating_sub(8);
                    if self
                        .query
                        .begin_search(&self.mesh, start, to_point(goal), radius)
                        .is_err()
                    {
                        longest = longest.max(tick.saturating_sub(queued));
                        self.finish_request(id, goal);
                        continue;
                    }
                    // A query the mesh answers at once, through its corner graph
                    // (`WorldConfig::path_corner_graph`), is charged its visibility
                    // sweeps' cones, one unit each like a search node.
                    budget = budget.saturating_sub(self.query.stats().expanded);
                    self.searching = Some((id, goal, queued));
                    (id, goal, queued)
                }
            };
            let before = self.query.stats().expanded;
            let status = self.query.update_search(&self.mesh, budget);
            budget = budget.saturating_sub(self.query.stats().expanded - before);
            if status == SliceStatus::Done {
                self.searching = None;
                longest = longest.max(tick.saturating_sub(queued));
                self.finish_request(id, goal);
            }
        }
        self.out.paths_waiting = self.queue.len() + usize::from(self.searching.is_some());
        // Still waiting: the one being searched and the queue's head are the oldest.
        let oldest = self
            .searching
            .map(|s| s.2)
            .into_iter()
            .chain(self.queue.front().map(|q| q.1));
        for queued in oldest {
            longest = longest.max(tick.saturating_sub(queued));
        }
        self.out.path_wait_ticks = longest;
    }

    fn finish_request(&mut self, id: EntityId, goal: Vec2) {
        self.out.paths_served += 1;
        let mut corners = std::mem::take(&mut self.corners);
        let found = self.query.finish_search(&self.mesh, &mut corners).is_ok();
        if found && let Some(b) = self.get(id) {
            let radius = f64::from(b.ball.radius);
            self.end_where_standable(&mut corners, radius);
            let margin = f64::from(self.config.corner_margin_m);
            self.widen_corners(&mut corners, radius, margin);
        }
        let tick = self.tick.0;

        let requeue = match self.get_mut(id) {
            None => false,
            Some(b) => {
                b.path_pending = false;
                if b.goal != Some(goal) {
                    // The goal changed while the search ran: search again.
                    b.goal.is_some()
                } else {
                    b.clear_path();
                    b.corner = 1;
                    if found {
                        b.path.extend(corners.iter().map(|&p| to_vec(p)));
                        b.along = None;
                        b.progress_tick = tick;
                        b.best_goal_dist = remaining_length(&b.path, 1, b.pos);
                    } else {
                        // Unreachable (another island, or too narrow for this body): give
                        // up this goal; a brain chooses another.
                        b.goal = None;
                    }
                    false
                }
            }
        };
        if requeue && let Some(b) = self.get_mut(id) {
            b.path_pending = true;
            self.queue.push_back((id, tick));
        }
        self.corners = corners;
    }

    /// Moves a path's last point out of the walls' reach when a disc of `radius` cannot
    /// stand on it: a goal picked or clicked closer than the radius to a wall (in a corner,
    /// say) can never be reached within the arrive distance, and the body would press
    /// against the wall until it gave up. The point moves away from the nearest wall until
    /// it keeps the radius (a few steps settle corners), and only if the last segment then
    /// stays in line of sight; otherwise the path is left as it is.
    fn end_where_standable(&mut self, points: &mut [Point], radius: f64) {
        let n = points.len();
        if n < 2 || radius <= 0.0 {
            return;
        }
        let want = radius * (1.0 + 1e-3);
        let mut p = points[n - 1];
        for _ in 0..8 {
            let Some(hit) = self.mesh.nearest_wall(p, want) else {
                break;
            };
            if hit.distance >= want {
                break;
            }
            let away = p - hit.point;
            let len = away.length();
            if len <= 1e-9 {
                return;
            }
            p = p + away * ((want - hit.distance) / len * (1.0 + 1e-6));
        }
        if p == points[n - 1]
            || self.mesh.clearance(p, want) < radius
            || !matches!(
                self.mesh.raycast(points[n - 2], p),
                Ok(navmesh::Raycast::Clear)
            )
        {
            return;
        }
        points[n - 1] = p;
    }

    /// Moves each turning point of a path `margin` farther from the wall corner it wraps
    /// than the radius alone keeps it, where the walls leave room (project decision). The
    /// shortest path for a disc touches every wall corner it turns around, so every body
    /// passing a corner, in both directions, aims at the same point against the wall and
    /// opposing streams meet head-on there with the wall on one side; with the margin, the
    /// space between the stream and the wall is free to step aside into. A point is moved
    /// only if both segments to its neighbours stay in line of sight; otherwise it stays.
    fn widen_corners(&mut self, points: &mut [Point], radius: f64, margin: f64) {
        if margin <= 0.0 {
            return;
        }
        for k in 1..points.len().saturating_sub(1) {
            let turn = (points[k] - points[k - 1]).cross(points[k + 1] - points[k]);
            let want = radius
                + if turn > 0.0 {
                    margin
                } else {
                    margin * RIGHT_TURN_MARGIN
                };
            let mut p = points[k];
            for _ in 0..4 {
                let Some(hit) = self.mesh.nearest_wall(p, want) else {
                    break;
                };
                if hit.distance >= want * (1.0 - 1e-3) {
                    break;
                }
                let away = p - hit.point;
                let len = away.length();
                if len <= 1e-9 {
                    break;
                }
                p = p + away * ((want - hit.distance) / len);
            }
            if p == points[k] || self.mesh.clearance(p, radius) < radius {
                continue;
            }
            let clear =
                |a: Point, b: Point| matches!(self.mesh.raycast(a, b), Ok(navmesh::Raycast::Clear));
            if clear(points[k - 1], p) && clear(p, points[k + 1]) {
                points[k] = p;
            }
        }
    }
}
