//! The search: funnel nodes (a root and an interval of a triangle edge), the open list,
//! node expansion (the funnel algorithm folded into the search) and the landmark flood.
//! See the parent module's docs for the algorithm and its guarantees.

use std::cmp::Ordering;

use super::{NavMeshQuery, Search, SearchStats, SliceStatus};
use crate::geom::{Point, orient};
use crate::mesh::{NavMesh, TriId, VertId};

/// How many landmarks each search evaluates per node (see [`crate::landmarks::Landmarks::choose_active`]).
pub(super) const ACTIVE_LANDMARKS: usize = 4;

pub(super) const NO_VERTEX: u32 = u32::MAX;
pub(super) const NO_ROOT: u32 = u32::MAX;
pub(super) const NO_KEY: u32 = u32::MAX;

/// Identifies a turn: bending at corner `corner` of triangle `tri`, counter-clockwise
/// around it (`ccw`, a left turn seen from the parent root) or clockwise.
fn turn_key(tri: TriId, corner: usize, ccw: bool) -> u32 {
    tri.0 * 6 + corner as u32 * 2 + u32::from(ccw)
}

/// A turning point of a partial path: the start, or a wall vertex the path bends around.
#[derive(Clone, Copy, Debug)]
pub(super) struct Root {
    pub(super) point: Point,
    pub(super) vertex: u32,
    /// The turn this root was reached by ([`turn_key`]), or `NO_KEY` for the start.
    pub(super) key: u32,
    pub(super) parent: u32,
    /// Landmark lower bound on the distance from this root to the goal.
    pub(super) alt: f64,
}

/// A search node: everything in triangle `tri` seen from `root` through the interval
/// `left..right` of the triangle's edge `edge`. Left and right are as seen from the root;
/// the flags say whether an end is exactly the edge's own vertex.
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    pub(super) root: u32,
    pub(super) left: Point,
    pub(super) right: Point,
    pub(super) left_is_corner: bool,
    pub(super) right_is_corner: bool,
    pub(super) tri: TriId,
    pub(super) edge: u8,
    pub(super) g: f64,
    /// The triangle costs (see [`NavMeshQuery::set_triangle_costs`]) of the triangles
    /// entered since the root: the node's cost so far is `g + extra` plus the distance from
    /// the root. Kept apart from `g` because root-level pruning compares roots' `g`.
    pub(super) extra: f64,
}

/// An open-list entry: lowest `f` first, then highest `g` (deeper nodes first on ties).
#[derive(Clone, Copy, Debug)]
pub(super) struct Open {
    pub(super) f: f64,
    pub(super) g: f64,
    /// A node index, or for the goal a root index with `is_goal` set.
    pub(super) index: u32,
    pub(super) is_goal: bool,
}

impl PartialEq for Open {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Open {}
impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: invert f so the smallest f comes out first.
        other.f.total_cmp(&self.f).then(self.g.total_cmp(&other.g))
    }
}

/// The landmark lower bound on the distance between two points, given each one's bounds
/// on its distance to every landmark: `max_k max(lo_a - hi_b, lo_b - hi_a)`.
pub(super) fn landmark_bound(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let mut best = 0.0f64;
    for (&(a_lo, a_hi), &(b_lo, b_hi)) in a.iter().zip(b) {
        // Infinite bounds (another island) give no information.
        let d = (a_lo - b_hi).max(b_lo - a_hi);
        if d.is_finite() {
            best = best.max(d);
        }
    }
    best
}

/// Tolerance for comparing path lengths, relative to the length.
pub(super) fn length_eps(g: f64) -> f64 {
    1e-9 * (1.0 + g)
}

/// Which corner two edges of a triangle share.
fn shared_corner(a: usize, b: usize) -> usize {
    if b == (a + 1) % 3 { b } else { a }
}

/// The index of the edge of `tri` whose neighbour is `from`.
fn edge_towards(mesh: &NavMesh, tri: TriId, from: TriId) -> usize {
    let n = mesh.neighbours()[tri.index()];
    if n[0] == Some(from) {
        0
    } else if n[1] == Some(from) {
        1
    } else {
        2
    }
}

/// Where the ray from `r` through `a` meets segment `p q`, as a parameter of `p q` in [0, 1].
fn ray_param(r: Point, a: Point, p: Point, q: Point) -> f64 {
    let op = orient(r, a, p);
    let oq = orient(r, a, q);
    let denom = op - oq;
    if denom == 0.0 {
        return 0.0;
    }
    (op / denom).clamp(0.0, 1.0)
}

/// The smallest `|r x| + |x goal|` over points `x` of segment `p q`: an admissible estimate
/// of the rest of any path that leaves `r` through that segment.
fn heuristic(r: Point, p: Point, q: Point, goal: Point) -> f64 {
    let pq = q - p;
    let len2 = pq.dot(pq);
    if len2 == 0.0 {
        return r.distance(p) + p.distance(goal);
    }
    let side_r = orient(p, q, r);
    let mut target = goal;
    let side_g = orient(p, q, goal);
    if side_r * side_g > 0.0 {
        // Same side: mirror the goal so the path must cross the segment's line.
        let n = Point::new(-pq.y, pq.x) * (1.0 / len2.sqrt());
        target = goal - n * (2.0 * n.dot(goal - p));
    }
    let dr = orient(p, q, r);
    let dt = orient(p, q, target);
    if dr == dt {
        // Root on the line (and so the target too): the straight distance is a lower bound.
        return r.distance(goal);
    }
    let x = r + (target - r) * (dr / (dr - dt));
    let u = (x - p).dot(pq) / len2;
    if (0.0..=1.0).contains(&u) {
        r.distance(target)
    } else {
        (r.distance(p) + p.distance(target)).min(r.distance(q) + q.distance(target))
    }
}

impl NavMeshQuery {
    /// The running search's cost for entering `tri` (0 without costs, and while flooding).
    #[inline(always)]
    fn triangle_cost(&self, tri: TriId) -> f64 {
        match &self.costs_in_use {
            Some(costs) if !self.flood => costs[tri.index()],
            _ => 0.0,
        }
    }

    /// A fresh stamp for the per-vertex arrays, sizing them for this mesh.
    pub(super) fn next_stamp(&mut self, mesh: &NavMesh) {
        if self.turn_stamp.len() != mesh.triangle_count() * 6 {
            self.turn_stamp = vec![0; mesh.triangle_count() * 6];
            self.turn_best = vec![f64::INFINITY; mesh.triangle_count() * 6];
            self.edge_stamp = vec![0; mesh.triangle_count() * 3];
            self.edge_bound = vec![0.0; mesh.triangle_count() * 3];
            self.stamp = 0;
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.turn_stamp.fill(0);
            self.edge_stamp.fill(0);
            self.stamp = 1;
        }
    }

    /// Queues the first nodes: every edge of every start triangle, seen from the start.
    pub(super) fn seed(&mut self, mesh: &NavMesh, start: Point, goal: Point, radius: f64) {
        for i in 0..self.start_tris.len() {
            let tri = self.start_tris[i];
            let corners = mesh.triangle_points(tri);
            for e in 0..3 {
                let (p, q) = (corners[e], corners[(e + 1) % 3]);
                if orient(p, q, start) == 0.0 {
                    // The start lies on this edge: the triangle across is a start triangle too.
                    continue;
                }
                self.push_successor(
                    mesh,
                    radius,
                    tri,
                    None,
                    e,
                    (q, true),
                    (p, true),
                    0,
                    (0.0, 0.0),
                );
            }
        }
        self.queue_pending(mesh, goal);
    }

    /// Shortest distances from vertex `source` to every vertex of its island (infinity
    /// elsewhere), for a point agent: the search run to exhaustion without a goal. Used to
    /// build the landmark heuristic; the mesh's own landmarks are not used while flooding.
    pub(crate) fn flood_distances(&mut self, mesh: &NavMesh, source: VertId, out: &mut Vec<f64>) {
        out.clear();
        out.resize(mesh.vertices().len(), f64::INFINITY);
        let start = mesh.vertices()[source.index()];
        self.stats = SearchStats::default();
        self.nodes.clear();
        self.roots.clear();
        self.open.clear();
        self.pending.clear();
        self.goal_tris.clear();
        let Some(first) = mesh.locate(start) else {
            return;
        };
        triangles_containing(mesh, start, first, &mut self.start_tris);
        self.next_stamp(mesh);
        self.flood = true;
        self.flood_dist = std::mem::take(out);
        self.flood_dist[source.index()] = 0.0;
        self.roots.push(Root {
            point: start,
            vertex: source.0,
            key: NO_KEY,
            parent: NO_ROOT,
            alt: 0.0,
        });
        self.state = Search::Running {
            goal: start,
            radius: 0.0,
        };
        self.seed(mesh, start, start, 0.0);
        for i in 0..self.start_tris.len() {
            let corners = mesh.triangles()[self.start_tris[i].index()];
            for v in corners {
                self.record(v, start.distance(mesh.vertices()[v.index()]));
            }
        }
        while self.update_search(mesh, usize::MAX) == SliceStatus::InProgress {}
        *out = std::mem::take(&mut self.flood_dist);
        self.flood = false;
        self.state = Search::Idle;
    }

    fn record(&mut self, v: VertId, d: f64) {
        if self.flood && d < self.flood_dist[v.index()] {
            self.flood_dist[v.index()] = d;
        }
    }

    /// Records a new root at wall vertex `vertex` for the turn `key`, unless that turn is
    /// already reached more cheaply (root-level pruning, per turn: a turn at the same
    /// vertex from another triangle or to the other side opens another region, so it is
    /// not dominated).
    fn add_root(
        &mut self,
        mesh: &NavMesh,
        vertex: VertId,
        key: u32,
        parent: u32,
        g: f64,
    ) -> Option<u32> {
        let k = key as usize;
        if self.turn_stamp[k] == self.stamp {
            if self.turn_best[k] < g - length_eps(g) {
                return None;
            }
            self.turn_best[k] = self.turn_best[k].min(g);
        } else {
            self.turn_stamp[k] = self.stamp;
            self.turn_best[k] = g;
        }
        self.record(vertex, g);
        let alt = if self.flood {
            0.0
        } else {
            mesh.landmarks().vertex_bound(vertex, &self.goal_bounds)
        };
        self.roots.push(Root {
            point: mesh.vertices()[vertex.index()],
            vertex: vertex.0,
            key,
            parent,
            alt,
        });
        Some(self.roots.len() as u32 - 1)
    }

    fn push_goal(&mut self, root: u32, length: f64) {
        self.stats.generated += 1;
        self.open.push(Open {
            f: length,
            g: length,
            index: root,
            is_goal: true,
        });
    }

    /// Queues the node for the triangle across edge `edge` of `tri`, seeing the interval
    /// `left..right` of that edge from root `root`. `entry` is the edge `tri` was entered by
    /// (None in a start triangle), for the width check. Left and right are given as seen from
    /// the root, each with a flag saying it is exactly the edge's vertex.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push_successor(
        &mut self,
        mesh: &NavMesh,
        radius: f64,
        tri: TriId,
        entry: Option<usize>,
        edge: usize,
        left: (Point, bool),
        right: (Point, bool),
        root: u32,
        (g, extra): (f64, f64),
    ) {
        let Some(next) = mesh.neighbours()[tri.index()][edge] else {
            return;
        };
        // A triangle whose only way on is the way in leads nowhere, unless the goal is in it
        // (or, while flooding, its far corner needs a distance, recorded by the caller).
        if !self.flood && mesh.is_dead_end(next) && !self.goal_tris.contains(&next) {
            return;
        }
        // Nor does a bridge into a part of the mesh without the goal (crate::bridges).
        if !self.flood && mesh.bridges().leads_away(tri, edge, &self.goal_tris) {
            return;
        }
        if let Some(entry) = entry
            && radius > 0.0
            && mesh.traversal_width(tri, shared_corner(entry, edge)) < 2.0 * radius
        {
            return;
        }
        let node = Node {
            root,
            left: left.0,
            right: right.0,
            left_is_corner: left.1,
            right_is_corner: right.1,
            tri: next,
            edge: edge_towards(mesh, next, tri) as u8,
            g,
            extra: extra + self.triangle_cost(next),
        };
        self.nodes.push(node);
        self.stats.generated += 1;
        self.pending.push(self.nodes.len() as u32 - 1);
    }

    /// Queues the pending successors on the open list, each with its `f`.
    pub(super) fn queue_pending(&mut self, mesh: &NavMesh, goal: Point) {
        for k in 0..self.pending.len() {
            let index = self.pending[k];
            let node = self.nodes[index as usize];
            let f = self.estimate(mesh, goal, &node);
            self.open.push(Open {
                f,
                g: node.g + node.extra,
                index,
                is_goal: false,
            });
        }
        self.pending.clear();
    }

    /// A node's `f`: its cost so far (`g` and the triangle costs since its root) plus the
    /// largest of three lower bounds on the rest of the path's length: straight lines
    /// through the interval, landmarks from the root, and landmarks from the interval's
    /// edge; with triangle costs, plus a lower bound on the costs still to pay. Only nodes
    /// that go on the open list need one.
    fn estimate(&mut self, mesh: &NavMesh, goal: Point, node: &Node) -> f64 {
        if self.flood {
            return node.g;
        }
        let root = self.roots[node.root as usize];
        let to_interval = crate::geom::distance_to_segment(root.point, node.left, node.right);
        let edge = usize::from(node.edge);
        let key = node.tri.index() * 3 + edge;
        if self.edge_stamp[key] != self.stamp {
            let corners = mesh.triangles()[node.tri.index()];
            let (p, q) = (corners[edge], corners[(edge + 1) % 3]);
            let len = mesh.vertices()[p.index()].distance(mesh.vertices()[q.index()]);
            self.edge_stamp[key] = self.stamp;
            self.edge_bound[key] = mesh.landmarks().edge_bound(p, q, len, &self.active);
        }
        let via_edge = to_interval + self.edge_bound[key];
        // With triangle costs, the costs still to pay are a bound of their own, added to
        // the length's (see `path/costs.rs`).
        let still_to_pay = if self.costs_in_use.is_some() {
            self.cost_bound.still_to_pay(node.tri)
        } else {
            0.0
        };
        node.g
            + node.extra
            + still_to_pay
            + heuristic(root.point, node.left, node.right, goal)
                .max(root.alt)
                .max(via_edge)
    }

    pub(super) fn expand(&mut self, mesh: &NavMesh, goal: Point, radius: f64, node: Node) {
        let tri = node.tri;
        let e = node.edge as usize;
        // Every successor leaves this triangle, entered through edge `e`.
        let push = |query: &mut NavMeshQuery,
                    edge: usize,
                    left: (Point, bool),
                    right: (Point, bool),
                    root: u32,
                    g: (f64, f64)| {
            query.push_successor(mesh, radius, tri, Some(e), edge, left, right, root, g);
        };
        let corners = mesh.triangles()[tri.index()];
        let pts = mesh.triangle_points(tri);
        let root = self.roots[node.root as usize];
        let r = root.point;
        let in_goal = self.goal_tris.contains(&tri);
        // The cost of this node's way so far, less the distance from its root: paths that
        // leave it (to the goal or through a new root) start from here.
        let base = node.g + node.extra;
        let same_root = (node.g, node.extra);

        if let Some(c) = corners.iter().position(|v| v.0 == root.vertex) {
            // The root is a corner of this triangle: all of it is in view. Continue to the
            // edge opposite the root and, around the root, to its other edge.
            if self.flood {
                for (v, p) in corners.iter().zip(pts) {
                    self.record(*v, node.g + r.distance(p));
                }
            }
            if in_goal {
                self.push_goal(node.root, base + r.distance(goal));
            }
            let opposite = (c + 1) % 3;
            let other = if e == c { (c + 2) % 3 } else { c };
            for edge in [opposite, other] {
                let (p, q) = (pts[edge], pts[(edge + 1) % 3]);
                push(self, edge, (q, true), (p, true), node.root, same_root);
            }
            return;
        }

        let (l, rr, w) = (pts[e], pts[(e + 1) % 3], pts[(e + 2) % 3]);
        let (lv, rv) = (corners[e], corners[(e + 1) % 3]);
        let (a, b) = (node.left, node.right);

        if in_goal {
            // Adjacent funnels share their bounding ray only up to rounding; a goal exactly on
            // that ray (collinear with two roots) must not fall between them, so the test
            // admits a relative tolerance.
            let slack = 1e-9 * r.distance(goal) * (1.0 + r.distance(a).max(r.distance(b)));
            let left_of_a = orient(r, a, goal);
            if left_of_a <= slack && orient(r, b, goal) >= -slack {
                self.push_goal(node.root, base + r.distance(goal));
            } else if left_of_a > 0.0 {
                if node.left_is_corner && mesh.is_wall_vertex(lv) {
                    let g = base + r.distance(l);
                    if let Some(turn) =
                        self.add_root(mesh, lv, turn_key(tri, e, true), node.root, g)
                    {
                        self.push_goal(turn, g + l.distance(goal));
                    }
                }
            } else if node.right_is_corner && mesh.is_wall_vertex(rv) {
                let g = base + r.distance(rr);
                if let Some(turn) =
                    self.add_root(mesh, rv, turn_key(tri, (e + 1) % 3, false), node.root, g)
                {
                    self.push_goal(turn, g + rr.distance(goal));
                }
            }
        }

        // The far side runs L -> W -> R, parameterised by s in [0, 2]: s in [0, 1] on edge
        // L-W, s in [1, 2] on edge W-R. Project the interval's two bounding rays onto it.
        let project = |x: Point| {
            let side = orient(r, x, w);
            let s = if side < 0.0 {
                ray_param(r, x, l, w)
            } else if side > 0.0 {
                1.0 + ray_param(r, x, w, rr)
            } else {
                1.0
            };
            // A ray through a vertex (grid maps are full of collinear corners) must land on
            // it exactly, so that the interval end is flagged as that vertex and a path can
            // bend there; rounding would leave it a hair short and lose the turn.
            // (`s` is in [0, 2]; `f64::round` is a library call on baseline x86-64.)
            let vertex = if s < 0.5 {
                0.0
            } else if s < 1.5 {
                1.0
            } else {
                2.0
            };
            if (s - vertex).abs() < 1e-9 { vertex } else { s }
        };
        let mut sa = project(a);
        let sb = project(b);
        if sa > sb {
            // Rounding on a near-degenerate interval: collapse it.
            sa = sb;
        }
        let at = |s: f64| {
            if s <= 1.0 {
                l + (w - l) * s
            } else {
                w + (rr - w) * (s - 1.0)
            }
        };
        let lw_edge = (e + 2) % 3; // W -> L in this triangle
        let wr_edge = (e + 1) % 3; // R -> W in this triangle

        if self.flood {
            // Every corner of the triangle inside the funnel is seen from the root. Rounding
            // may put a corner that lies exactly on a funnel's ray just outside both funnels
            // that share the ray, so the test admits a relative tolerance.
            for (v, p) in corners.iter().zip(pts) {
                let slack = 1e-9 * r.distance(p) * (1.0 + r.distance(a).max(r.distance(b)));
                if orient(r, a, p) <= slack && orient(r, b, p) >= -slack {
                    self.record(*v, node.g + r.distance(p));
                }
                // A corner out of view is still reached by bending at an interval end that
                // is a vertex (the whole triangle is in view from its own corners). This
                // matters in dead-end triangles, which no node ever enters from there.
                if node.left_is_corner {
                    self.record(*v, node.g + r.distance(l) + l.distance(p));
                }
                if node.right_is_corner {
                    self.record(*v, node.g + r.distance(rr) + rr.distance(p));
                }
            }
        }

        // Observable successors: the part of the far side in view, same root.
        if sa < 1.0 || (sa == 1.0 && sb == 1.0) {
            let hi = sb.min(1.0);
            if hi > sa || (sa == 0.0 || hi == 1.0) {
                push(
                    self,
                    lw_edge,
                    (at(sa), sa == 0.0),
                    (at(hi), hi == 1.0),
                    node.root,
                    same_root,
                );
            }
        }
        if sb > 1.0 || (sa == 1.0 && sb == 1.0) {
            let lo = sa.max(1.0);
            if sb > lo || (lo == 1.0 || sb == 2.0) {
                push(
                    self,
                    wr_edge,
                    (at(lo), lo == 1.0),
                    (at(sb), sb == 2.0),
                    node.root,
                    same_root,
                );
            }
        }

        // Non-observable successors: beyond the left ray, reachable by turning at L. The turn
        // is taut only if the first wall around L on that side bends back toward the root's
        // side of the ray; otherwise the region is in view through other triangles and the
        // detour through L can never be shortest.
        let taut_left = || {
            mesh.fan_wall(tri, e, true)
                .is_some_and(|x| orient(r, l, mesh.vertices()[x.index()]) > 0.0)
        };
        let taut_right = || {
            mesh.fan_wall(tri, (e + 1) % 3, false)
                .is_some_and(|x| orient(r, rr, mesh.vertices()[x.index()]) < 0.0)
        };
        if node.left_is_corner && sa > 0.0 && taut_left() {
            let g = base + r.distance(l);
            if let Some(turn) = self.add_root(mesh, lv, turn_key(tri, e, true), node.root, g) {
                // Edge L-W touches L: the whole edge, and the fan continues around L.
                push(self, lw_edge, (l, true), (w, true), turn, (g, 0.0));
                if sa > 1.0 {
                    push(
                        self,
                        wr_edge,
                        (w, true),
                        (at(sa), sa == 2.0),
                        turn,
                        (g, 0.0),
                    );
                }
            }
        }
        // Beyond the right ray, reachable by turning at R.
        if node.right_is_corner && sb < 2.0 && taut_right() {
            let g = base + r.distance(rr);
            if let Some(turn) =
                self.add_root(mesh, rv, turn_key(tri, (e + 1) % 3, false), node.root, g)
            {
                if sb < 1.0 {
                    push(
                        self,
                        lw_edge,
                        (at(sb), sb == 0.0),
                        (w, true),
                        turn,
                        (g, 0.0),
                    );
                }
                push(self, wr_edge, (w, true), (rr, true), turn, (g, 0.0));
            }
        }
    }
}

/// Every triangle that contains `p` (on an edge or vertex there are several), starting
/// from `first`, which does.
pub(super) fn triangles_containing(mesh: &NavMesh, p: Point, first: TriId, out: &mut Vec<TriId>) {
    out.clear();
    out.push(first);
    let mut i = 0;
    while i < out.len() {
        let t = out[i];
        let pts = mesh.triangle_points(t);
        for e in 0..3 {
            if orient(pts[e], pts[(e + 1) % 3], p) == 0.0
                && let Some(n) = mesh.neighbours()[t.index()][e]
                && !out.contains(&n)
            {
                out.push(n);
            }
        }
        i += 1;
    }
}
