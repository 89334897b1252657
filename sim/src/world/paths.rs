//! Phase 3, the path queue: requests served first come first served within the per-tick
//! node budget, and the found paths shaped for a crowd (ends a body can stand on, corners
//! kept clear of the walls they wrap).

use std::collections::VecDeque;
use std::sync::Arc;

use navmesh::{NavMesh, NavMeshQuery, Point, SliceStatus, TriId};

use super::{World, remaining_length, to_point, to_vec};
use crate::types::{EntityId, Kind, Vec2};

/// The share of the corner margin a path keeps round a corner it turns right around.
const RIGHT_TURN_MARGIN: f64 = 0.2;

/// A path request being searched.
#[derive(Clone, Copy, Debug)]
struct Search {
    id: EntityId,
    goal: Vec2,
    /// The tick the request was queued.
    queued: u64,
}

/// The path requests and the search that serves them, as DetourCrowd keeps its
/// `dtPathQueue` apart from the crowd: requests wait in arrival order, one is searched at
/// a time, sliced over ticks, with a reusable query (its node pool) and corner buffer.
pub(super) struct PathQueue {
    /// Requests in arrival order, each with the tick it was queued.
    waiting: VecDeque<(EntityId, u64)>,
    /// The request being searched.
    searching: Option<Search>,
    query: NavMeshQuery,
    /// The corners of the last path found.
    corners: Vec<Point>,
}

impl PathQueue {
    /// An empty queue; `corner_graph` as [`WorldConfig::path_corner_graph`](crate::WorldConfig::path_corner_graph).
    pub(super) fn new(corner_graph: bool) -> PathQueue {
        let mut query = NavMeshQuery::new();
        query.set_corner_graph(corner_graph);
        PathQueue {
            waiting: VecDeque::new(),
            searching: None,
            query,
            corners: Vec::new(),
        }
    }

    /// Sets the triangle costs of later searches (see `NavMeshQuery::set_triangle_costs`;
    /// `world/congestion.rs`).
    pub(super) fn set_triangle_costs(&mut self, costs: Option<Arc<[f64]>>) {
        self.query.set_triangle_costs(costs);
    }

    /// Queues a path request for body `id` at `tick` (the body's goal is read when its
    /// turn comes; a body has at most one request queued, see `Body::path_pending`).
    pub(super) fn push(&mut self, id: EntityId, tick: u64) {
        self.waiting.push_back((id, tick));
    }

    /// The requests not yet answered, the one being searched included.
    pub(super) fn len(&self) -> usize {
        self.waiting.len() + usize::from(self.searching.is_some())
    }

    /// The ticks the oldest unanswered requests were queued: the one being searched and
    /// the queue's head.
    fn oldest(&self) -> impl Iterator<Item = u64> + '_ {
        self.searching
            .map(|s| s.queued)
            .into_iter()
            .chain(self.waiting.front().map(|q| q.1))
    }
}

impl World {
    /// Phase 3: path requests, first come first served, within the node budget. A search
    /// that does not finish continues next tick.
    pub fn serve_paths(&mut self) {
        self.refresh_congestion();
        self.reroute();
        let live = self.bodies.len();
        let per_body = f64::from(self.config.path_budget_per_body.max(0.0)) * live as f64;
        let mut budget = self.config.path_budget_per_tick.max(per_body as usize);
        let tick = self.tick.0;
        let mut longest = 0u64;
        while budget > 0 {
            let search = match self.paths.searching {
                Some(active) => active,
                None => {
                    let Some((id, queued)) = self.paths.waiting.pop_front() else {
                        break;
                    };
                    let Some(b) = self.bodies.get(id) else {
                        continue;
                    };
                    let Some(goal) = b.goal else {
                        if let Some(b) = self.bodies.get_mut(id) {
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
                    let query = &mut self.paths.query;
                    // A player chose where to go: its path is the shortest, never a
                    // detour round a crowd (`world/congestion.rs` routes the NPCs).
                    query.use_triangle_costs(b.kind != Kind::Player);
                    // The goal as a point of the mesh too: a point snapped to the edge of
                    // the walkable area can fall a hair outside it once rounded to f32
                    // (the mesh's tests are exact), and the order would be dropped.
                    let end = match self.mesh.nearest_point(to_point(goal), 1e3) {
                        Some((p, _)) => p,
                        None => to_point(goal),
                    };
                    if query.begin_search(&self.mesh, start, end, radius).is_err() {
                        longest = longest.max(tick.saturating_sub(queued));
                        self.finish_request(id, goal);
                        continue;
                    }
                    // A query the mesh answers at once, through its corner graph
                    // (`WorldConfig::path_corner_graph`), is charged its visibility
                    // sweeps' cones, one unit each like a search node.
                    budget = budget.saturating_sub(query.stats().expanded);
                    self.out.path_nodes += query.stats().expanded;
                    let search = Search { id, goal, queued };
                    self.paths.searching = Some(search);
                    search
                }
            };
            let query = &mut self.paths.query;
            let before = query.stats().expanded;
            let status = query.update_search(&self.mesh, budget);
            budget = budget.saturating_sub(query.stats().expanded - before);
            self.out.path_nodes += query.stats().expanded - before;
            if status == SliceStatus::Done {
                self.paths.searching = None;
                longest = longest.max(tick.saturating_sub(search.queued));
                self.finish_request(search.id, search.goal);
            }
        }
        self.out.paths_waiting = self.paths.len();
        // Still waiting: the one being searched and the queue's head are the oldest.
        for queued in self.paths.oldest() {
            longest = longest.max(tick.saturating_sub(queued));
        }
        self.out.path_wait_ticks = longest;
    }

    /// Hands the path the query found (or its failure) to body `id`, if it still lives;
    /// queues the body again if its goal changed while the search ran.
    fn finish_request(&mut self, id: EntityId, goal: Vec2) {
        self.out.paths_served += 1;
        let corners = &mut self.paths.corners;
        let found = self.paths.query.finish_search(&self.mesh, corners).is_ok();
        if found && let Some(b) = self.bodies.get(id) {
            let radius = f64::from(b.ball.radius);
            end_where_standable(&self.mesh, corners, radius);
            let margin = f64::from(self.config.corner_margin_m);
            widen_corners(&self.mesh, corners, radius, margin);
        }
        let tick = self.tick.0;
        let Some(b) = self.bodies.get_mut(id) else {
            return;
        };
        b.path_pending = false;
        let detour = std::mem::take(&mut b.rerouting);
        if b.goal != Some(goal) {
            // The goal changed while the search ran: search again.
            if b.goal.is_some() {
                b.path_pending = true;
                self.paths.push(id, tick);
            }
            return;
        }
        if detour {
            // A detour round a jam: the body keeps walking its path if none is found, and
            // the new path does not restart its give-up clock, only where progress is
            // measured from.
            if found {
                b.clear_path();
                b.corner = 1;
                b.path.extend(corners.iter().map(|&p| to_vec(p)));
                b.best_goal_dist = remaining_length(&b.path, 1, b.pos);
            }
            return;
        }
        b.clear_path();
        b.corner = 1;
        if found {
            b.path.extend(corners.iter().map(|&p| to_vec(p)));
            b.along = None;
            b.progress_tick = tick;
            b.best_goal_dist = remaining_length(&b.path, 1, b.pos);
        } else {
            // Unreachable (another island, or too narrow for this body): give up this
            // goal; a brain chooses another.
            b.goal = None;
        }
    }
}

/// Moves a path's last point out of the walls' reach when a disc of `radius` cannot
/// stand on it: a goal picked or clicked closer than the radius to a wall (in a corner,
/// say) can never be reached within the arrive distance, and the body would press
/// against the wall until it gave up. The point moves away from the nearest wall until
/// it keeps the radius (a few steps settle corners), and only if the last segment then
/// stays in line of sight; otherwise the path is left as it is.
fn end_where_standable(mesh: &NavMesh, points: &mut [Point], radius: f64) {
    let n = points.len();
    if n < 2 || radius <= 0.0 {
        return;
    }
    let Some(p) = clear_of_walls(mesh, points[n - 1], radius) else {
        return;
    };
    if p == points[n - 1] || !matches!(mesh.raycast(points[n - 2], p), Ok(navmesh::Raycast::Clear))
    {
        return;
    }
    points[n - 1] = p;
}

/// `p`, a point of the walkable area, moved away from the walls until a disc of `radius`
/// stands there clear of them (a few steps settle corners); `None` when the walls leave
/// no such room near it. A point on a wall's line (where the nearest wall gives no way
/// out) steps towards the inside of the triangle it is on first.
pub(super) fn clear_of_walls(mesh: &NavMesh, p: Point, radius: f64) -> Option<Point> {
    let want = radius * (1.0 + 1e-3);
    let mut at = p;
    for _ in 0..8 {
        let Some(hit) = mesh.nearest_wall(at, want) else {
            break;
        };
        if hit.distance >= want {
            break;
        }
        let away = at - hit.point;
        let len = away.length();
        if len <= 1e-9 {
            let (_, tri) = mesh.nearest_point(at, want)?;
            let inward = mesh.centroid(tri) - at;
            let l = inward.length();
            if l <= 1e-9 {
                return None;
            }
            at = at + inward * (want.min(l * 0.5) / l);
            continue;
        }
        at = at + away * ((want - hit.distance) / len * (1.0 + 1e-6));
    }
    (mesh.locate(at).is_some() && mesh.clearance(at, want) >= radius).then_some(at)
}

/// Moves each turning point of a path `margin` farther from the wall corner it wraps
/// than the radius alone keeps it, where the walls leave room (project decision). The
/// shortest path for a disc touches every wall corner it turns around, so every body
/// passing a corner, in both directions, aims at the same point against the wall and
/// opposing streams meet head-on there with the wall on one side; with the margin, the
/// space between the stream and the wall is free to step aside into. A point is moved
/// only if both segments to its neighbours stay in line of sight; otherwise it stays.
fn widen_corners(mesh: &NavMesh, points: &mut [Point], radius: f64, margin: f64) {
    if margin <= 0.0 {
        return;
    }
    // Triangles known to hold `points[k - 1]` and `points[k]` (where a clear ray ended),
    // so that the rays checking the next corner need not locate their start.
    let (mut before, mut here) = (None, None);
    for k in 1..points.len().saturating_sub(1) {
        let turn = (points[k] - points[k - 1]).cross(points[k + 1] - points[k]);
        let want = radius
            + if turn > 0.0 {
                margin
            } else {
                margin * RIGHT_TURN_MARGIN
            };
        let mut p = points[k];
        // Whether the last nearest-wall step found no wall closer than `radius` to `p`
        // (then `p`'s clearance need not be looked up again).
        let mut clear_of_walls = false;
        for _ in 0..4 {
            let Some(hit) = mesh.nearest_wall(p, want) else {
                clear_of_walls = want >= radius;
                break;
            };
            if hit.distance >= want * (1.0 - 1e-3) {
                clear_of_walls = hit.distance >= radius;
                break;
            }
            let away = p - hit.point;
            let len = away.length();
            if len <= 1e-9 {
                break;
            }
            p = p + away * ((want - hit.distance) / len);
        }
        let from = before;
        (before, here) = (here, None);
        if p == points[k] || (!clear_of_walls && mesh.clearance(p, radius) < radius) {
            continue;
        }
        // The triangle holding the ray's end when it is clear.
        let clear = |tri: Option<TriId>, a: Point, b: Point| match mesh.raycast_from(tri, a, b) {
            Ok(end) if end.ray == navmesh::Raycast::Clear => Some(end.tri),
            _ => None,
        };
        if let Some(p_tri) = clear(from, points[k - 1], p)
            && let Some(next_tri) = clear(p_tri, p, points[k + 1])
        {
            points[k] = p;
            (before, here) = (p_tri, next_tri);
        }
    }
}
