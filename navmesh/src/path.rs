//! Path queries: the shortest path between two points for a disc of a given radius.
//!
//! # Point agents: the corner graph
//! For radius 0 on an island whose corner graph has a distance table (see the `corners`
//! module, `navmesh/src/corners.rs`: every island of up to 2,500 convex wall corners,
//! built on the first query or by [`NavMesh::prepare_point_queries`]), no search
//! runs. A visibility
//! sweep from the start finds the goal if it is in view (the path is then the straight
//! segment) and otherwise the corners in view along taut segments; a second sweep does the
//! same from the goal; the path is the best `|s a| + D(a, b) + |b g|` over those corners,
//! with `D` read from the table, unrolled corner by corner through the graph's edges. This
//! is exact: a shortest path bends only at convex corners, along taut segments. On larger
//! islands (AcrosstheCape's main one) the search below runs; for a radius above 0, see
//! "Agent radius". [`SearchStats::expanded`] counts the sweeps' cones for a corner-graph
//! query, and [`SearchStats::corner_graph`] says the corner graph answered.
//!
//! # The search
//! PAPER §1.3–§1.4 describe A\* over the triangle graph (the corridor) followed by the
//! funnel algorithm (string pulling through the corridor's portals). Done in that order,
//! the corridor A\* picks is chosen by centroid or midpoint costs and is often not the
//! corridor of the shortest path; on real game maps that costs several percent on many
//! queries. We keep the search on the triangle graph but fold the funnel into it, as
//! Polyanya does (Cui, Harabor & Grastien, "Compromise-free Pathfinding on a Navigation
//! Mesh", IJCAI 2017):
//!
//! - A search node is a funnel: a *root* (the start, or a wall vertex the path bends
//!   around) and an *interval* of a triangle edge (a portal) seen from that root. Its `g` is
//!   the exact length of the path to the root; its `h` is the exact shortest distance from
//!   the root through the interval to the goal (mirroring the goal when it lies on the
//!   root's side), so `f` never overestimates.
//! - Expanding a node into the next triangle projects the funnel's two rays onto the far
//!   edges: the part in view becomes successors with the same root; where an interval end is
//!   a wall vertex, the parts out of view become successors rooted at that vertex (the
//!   path bends there). This is the funnel algorithm, run on every corridor at once.
//! - A node whose root has been reached more cheaply since, through the same turn (the
//!   same vertex, entered from the same triangle, bending to the same side), is dropped
//!   (root-level pruning). Pruning per vertex alone, as first written, lost regions that
//!   only one of two turns at a vertex opens, and with them whole paths.
//! - The search stops when the goal itself comes off the open list: its `f` is then the
//!   exact length and no open node can do better.
//!
//! What keeps it fast, none of which changes the result:
//! - `h` is the largest of three lower bounds: the straight line through the interval, and
//!   the ALT landmark bounds (Goldberg & Harrelson; 16 landmarks chosen farthest-first)
//!   from the root and from the interval's edge. Roots (few) use all 16; edges (many) use
//!   the four that bound the search's start-to-goal distance best, once per edge.
//! - Cul-de-sacs are skipped whole: no node crosses a bridge of the triangle graph (an
//!   edge whose removal splits the island) into the side without the goal, since a
//!   shortest path would have to come back out through the same edge; nor enters a
//!   dead-end triangle without it.
//! - A node with a single successor has it expanded at once, without a trip through the
//!   open list (Polyanya's intermediate pruning).
//!
//! **Guarantee:** for a point agent (radius 0) both the corner graph and the search are
//! exact in exact arithmetic (the sweeps decide visibility with exact predicates; lengths
//! are sums of floats); the tests hold every scenario query of the five shipped Moving AI
//! maps to within 1e-4 of an exact visibility-graph reference (measured: worst excess
//! 0.0000% on each map). Known gap (measured on the search, before
//! the corner graph, and not re-measured since): on random point
//! pairs, forward and backward lengths agree on all but 2 of 12,000 pairs tried (those two
//! differ by 0.003% and 0.05%): some funnel boundary still rounds the wrong way. Islands are
//! checked first, so a goal on another island is answered without expanding anything.
//!
//! # Agent radius
//! With radius `r > 0`, a triangle may only be crossed between two edges if its traversal
//! width there ([`crate::width`]) is at least `2r`, so no path uses a passage narrower than
//! the agent. The path is the shortest among such corridors for a point. On an island with
//! a corner-graph table the point query above runs first, and its path is checked against
//! exactly that rule (`navmesh/src/corridor.rs`: every triangle the path crosses, going
//! round the vertices it bends at or passes through as the search's funnels do, is wide
//! enough where it is crossed; the triangles holding the start and the goal are entered or
//! left by no edge and are not checked). If it passes, it is the shortest admissible path
//! too, and no search runs; otherwise the search runs, as it does on islands without a
//! table. On the shipped grid maps at radius 0.4 every scenario query passes; the tests
//! compare both ways on random and scenario pairs at radii 0.4, 0.5 and 1.0 and find the
//! same results.
//!
//! Then corners the path goes straight on at are dropped (the search keeps zero-angle
//! bends at wall vertices it needed as roots, the corner graph does not), and each corner
//! is moved `r` away from the wall corner it turns around (along the bisector of the walls
//! meeting there, then out of any other wall still closer than `r`), so no corner is closer
//! than `r` to a wall. A segment that still passes closer than `r / 2` to a wall corner gets
//! an extra corner around it. The corners are then no longer exactly optimal for the disc
//! (the true optimum follows arcs of radius `r`); the length reported is the length of the
//! returned polyline. Every segment of the result is checked with a raycast: in staircase
//! passages about as wide as the agent, where the shifted polyline would clip a wall, the
//! exact point path is returned instead (counted in [`SearchStats::radius_fallbacks`]); its
//! corners touch the walls they wrap but it never crosses one.
//!
//! # Slicing
//! [`NavMeshQuery::begin_search`], [`NavMeshQuery::update_search`] and
//! [`NavMeshQuery::finish_search`] split one search over several calls with a bounded
//! number of node expansions each, so a world can spread many requests over its ticks.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::corners::Sweep;
use crate::corridor::Corridor;
use crate::geom::{Point, orient};
use crate::landmarks::{Active, Landmarks};
use crate::mesh::{NavMesh, TriId, VertId};
use crate::raycast::{Raycast, orient_sign};

/// A found path: its corners from start to goal, and its length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Path {
    /// Start, every turning point, goal.
    pub points: Vec<Point>,
    /// Sum of segment lengths.
    pub length: f64,
}

/// Why no path was returned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PathError {
    /// The start is not on the mesh.
    #[error("start ({x}, {y}) is off the mesh")]
    StartOffMesh {
        /// Start x.
        x: f64,
        /// Start y.
        y: f64,
    },
    /// The goal is not on the mesh.
    #[error("goal ({x}, {y}) is off the mesh")]
    GoalOffMesh {
        /// Goal x.
        x: f64,
        /// Goal y.
        y: f64,
    },
    /// Start and goal are on different islands, or every way between them is narrower than
    /// the agent.
    #[error("goal unreachable from start")]
    Unreachable,
    /// The radius is negative or not finite.
    #[error("invalid agent radius {radius}")]
    InvalidRadius {
        /// The radius.
        radius: f64,
    },
    /// No corridor anywhere on the mesh is wide enough for the radius.
    #[error("agent radius {radius} exceeds the largest the mesh admits ({max})")]
    RadiusTooLarge {
        /// The radius.
        radius: f64,
        /// The largest radius any traversal admits.
        max: f64,
    },
}

/// Counters of the last search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Nodes taken from the open list and expanded; for a query answered through the
    /// corner graph, the cones its two visibility sweeps expanded.
    pub expanded: usize,
    /// Nodes pushed on the open list.
    pub generated: usize,
    /// Radius paths returned as the point path because the offset path could not be made
    /// to clear every wall (see the module docs).
    pub radius_fallbacks: usize,
    /// The path came from the corner graph, without a search (see the module docs).
    pub corner_graph: bool,
}

/// A reusable path query: holds the search's scratch (open list, node pool) so that
/// queries allocate nothing once warm. One per thread; the mesh is passed to each call.
#[derive(Debug)]
pub struct NavMeshQuery {
    stats: SearchStats,
    state: Search,
    nodes: Vec<Node>,
    roots: Vec<Root>,
    open: BinaryHeap<Open>,
    start_tris: Vec<TriId>,
    goal_tris: Vec<TriId>,
    /// Best `g` per turn (see [`turn_key`]), valid where `turn_stamp` equals `stamp`.
    turn_best: Vec<f64>,
    turn_stamp: Vec<u32>,
    /// Landmark bound per triangle edge (`tri * 3 + edge`), valid where `edge_stamp`
    /// equals `stamp`: many nodes cross the same edge, the bound depends only on the edge.
    edge_bound: Vec<f64>,
    edge_stamp: Vec<u32>,
    stamp: u32,
    /// Landmark distance bounds of the goal and the start (`[k]` = lower, upper).
    goal_bounds: Vec<(f64, f64)>,
    start_bounds: Vec<(f64, f64)>,
    /// The landmarks this search evaluates per node, with the goal's bounds.
    active: Vec<Active>,
    /// Set while computing landmark distances: no goal, `f = g`, and every vertex seen gets
    /// its distance recorded in `flood_dist`.
    flood: bool,
    flood_dist: Vec<f64>,
    /// Wall indices near a segment, for the radius repair.
    wall_scratch: Vec<usize>,
    /// The point path, kept while a radius path is derived from it.
    point_path: Vec<Point>,
    /// Successors of the node being expanded (indices into `nodes`), before they go on
    /// the open list.
    pending: Vec<u32>,
    /// Visibility sweeps of point-agent queries on the corner graph, and the corners they
    /// saw from the start and from the goal (with distances).
    sweep: Sweep,
    seen_start: Vec<(u32, f64)>,
    seen_goal: Vec<(u32, f64)>,
    /// Scratch of the radius check of corner-graph paths.
    corridor: Corridor,
    /// False to answer every query by the search (see [`NavMeshQuery::set_corner_graph`]).
    corner_graph: bool,
}

impl Default for NavMeshQuery {
    fn default() -> NavMeshQuery {
        NavMeshQuery {
            stats: SearchStats::default(),
            state: Search::default(),
            nodes: Vec::new(),
            roots: Vec::new(),
            open: BinaryHeap::new(),
            start_tris: Vec::new(),
            goal_tris: Vec::new(),
            turn_best: Vec::new(),
            turn_stamp: Vec::new(),
            edge_bound: Vec::new(),
            edge_stamp: Vec::new(),
            stamp: 0,
            goal_bounds: Vec::new(),
            start_bounds: Vec::new(),
            active: Vec::new(),
            flood: false,
            flood_dist: Vec::new(),
            wall_scratch: Vec::new(),
            point_path: Vec::new(),
            pending: Vec::new(),
            sweep: Sweep::default(),
            seen_start: Vec::new(),
            seen_goal: Vec::new(),
            corridor: Corridor::default(),
            corner_graph: true,
        }
    }
}

impl NavMeshQuery {
    /// An empty query object.
    pub fn new() -> NavMeshQuery {
        NavMeshQuery::default()
    }

    /// The point path the last radius query's result was derived from, before its corners
    /// were offset: for tests that tell equally long paths apart. Not part of the supported
    /// API.
    #[doc(hidden)]
    pub fn last_point_path(&self) -> &[Point] {
        &self.point_path
    }

    /// Whether later queries may be answered through the mesh's corner graph (the default)
    /// or always run the search. Both give the same paths (see the module docs); which is
    /// faster depends on the map and the queries: on open maps with many corners in view,
    /// such as den520d, the search is the cheaper one for random pairs at radius 0.4; on
    /// maps of long corridors, such as brc202d, the corner graph is the faster one. A
    /// query object that never uses the corner graph never makes a mesh build it.
    pub fn set_corner_graph(&mut self, enabled: bool) {
        self.corner_graph = enabled;
    }

    /// Counters of the last search.
    pub fn stats(&self) -> SearchStats {
        self.stats
    }

    /// Shortest path from `start` to `goal` for a disc of `radius`; see the module docs.
    pub fn find_path(
        &mut self,
        mesh: &NavMesh,
        start: Point,
        goal: Point,
        radius: f64,
    ) -> Result<Path, PathError> {
        let mut points = Vec::new();
        let length = self.find_path_into(mesh, start, goal, radius, &mut points)?;
        Ok(Path { points, length })
    }

    /// Like [`NavMeshQuery::find_path`], writing the corners into `out` (cleared first) and
    /// returning the length: no allocation once `out` and the scratch are warm.
    pub fn find_path_into(
        &mut self,
        mesh: &NavMesh,
        start: Point,
        goal: Point,
        radius: f64,
        out: &mut Vec<Point>,
    ) -> Result<f64, PathError> {
        self.begin_search(mesh, start, goal, radius)?;
        while self.update_search(mesh, usize::MAX) == SliceStatus::InProgress {}
        self.finish_search(mesh, out)
    }
}

/// Where a running search stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceStatus {
    /// More iterations are needed.
    InProgress,
    /// The search has finished (found or not); call [`NavMeshQuery::finish_search`].
    Done,
}

/// How many landmarks each search evaluates per node (see [`Landmarks::choose_active`]).
const ACTIVE_LANDMARKS: usize = 4;

const NO_VERTEX: u32 = u32::MAX;
const NO_ROOT: u32 = u32::MAX;
const NO_KEY: u32 = u32::MAX;

/// Identifies a turn: bending at corner `corner` of triangle `tri`, counter-clockwise
/// around it (`ccw`, a left turn seen from the parent root) or clockwise.
fn turn_key(tri: TriId, corner: usize, ccw: bool) -> u32 {
    tri.0 * 6 + corner as u32 * 2 + u32::from(ccw)
}

/// A turning point of a partial path: the start, or a wall vertex the path bends around.
#[derive(Clone, Copy, Debug)]
struct Root {
    point: Point,
    vertex: u32,
    /// The turn this root was reached by ([`turn_key`]), or `NO_KEY` for the start.
    key: u32,
    parent: u32,
    /// Landmark lower bound on the distance from this root to the goal.
    alt: f64,
}

/// A search node: everything in triangle `tri` seen from `root` through the interval
/// `left..right` of the triangle's edge `edge`. Left and right are as seen from the root;
/// the flags say whether an end is exactly the edge's own vertex.
#[derive(Clone, Copy, Debug)]
struct Node {
    root: u32,
    left: Point,
    right: Point,
    left_is_corner: bool,
    right_is_corner: bool,
    tri: TriId,
    edge: u8,
    g: f64,
}

/// An open-list entry: lowest `f` first, then highest `g` (deeper nodes first on ties).
#[derive(Clone, Copy, Debug)]
struct Open {
    f: f64,
    g: f64,
    /// A node index, or for the goal a root index with `is_goal` set.
    index: u32,
    is_goal: bool,
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

/// The state of the current search.
#[derive(Clone, Copy, Debug, Default)]
enum Search {
    #[default]
    Idle,
    Running {
        goal: Point,
        radius: f64,
    },
    Found {
        goal: Point,
        radius: f64,
        root: u32,
    },
    Failed(FailKind),
}

#[derive(Clone, Copy, Debug)]
enum FailKind {
    Unreachable,
}

/// The landmark lower bound on the distance between two points, given each one's bounds
/// on its distance to every landmark: `max_k max(lo_a - hi_b, lo_b - hi_a)`.
fn landmark_bound(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
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
fn length_eps(g: f64) -> f64 {
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
    /// Starts a search that [`NavMeshQuery::update_search`] advances in bounded steps.
    /// Errors that need no search (off-mesh points, bad radius, different islands) come
    /// back at once; for different islands nothing is expanded.
    pub fn begin_search(
        &mut self,
        mesh: &NavMesh,
        start: Point,
        goal: Point,
        radius: f64,
    ) -> Result<(), PathError> {
        self.stats = SearchStats::default();
        self.state = Search::Idle;
        self.nodes.clear();
        self.roots.clear();
        self.open.clear();
        self.pending.clear();
        if !(radius >= 0.0 && radius.is_finite()) {
            return Err(PathError::InvalidRadius { radius });
        }
        if radius > mesh.max_radius() {
            return Err(PathError::RadiusTooLarge {
                radius,
                max: mesh.max_radius(),
            });
        }
        let Some(start_tri) = mesh.locate(start) else {
            return Err(PathError::StartOffMesh {
                x: start.x,
                y: start.y,
            });
        };
        let Some(goal_tri) = mesh.locate(goal) else {
            return Err(PathError::GoalOffMesh {
                x: goal.x,
                y: goal.y,
            });
        };
        triangles_containing(mesh, start, start_tri, &mut self.start_tris);
        triangles_containing(mesh, goal, goal_tri, &mut self.goal_tris);
        let reachable = self.start_tris.iter().any(|&s| {
            self.goal_tris
                .iter()
                .any(|&g| mesh.island(s) == mesh.island(g))
        });
        if !reachable {
            self.state = Search::Failed(FailKind::Unreachable);
            return Err(PathError::Unreachable);
        }
        if self.corner_graph && self.corner_query(mesh, start, goal, radius) {
            return Ok(());
        }
        self.next_stamp(mesh);
        let landmarks = mesh.landmarks();
        landmarks.point_bounds(mesh, goal, &self.goal_tris, &mut self.goal_bounds);
        landmarks.point_bounds(mesh, start, &self.start_tris, &mut self.start_bounds);
        let alt = landmark_bound(&self.start_bounds, &self.goal_bounds);
        Landmarks::choose_active(
            &self.start_bounds,
            &self.goal_bounds,
            ACTIVE_LANDMARKS,
            &mut self.active,
        );
        self.roots.push(Root {
            point: start,
            vertex: NO_VERTEX,
            key: NO_KEY,
            parent: NO_ROOT,
            alt,
        });
        if self.start_tris.iter().any(|t| self.goal_tris.contains(t)) {
            // One convex triangle holds both: the straight segment is the path.
            self.state = Search::Found {
                goal,
                radius,
                root: 0,
            };
            return Ok(());
        }
        self.state = Search::Running { goal, radius };
        self.seed(mesh, start, goal, radius);
        Ok(())
    }

    /// A query answered through the corner graph (see [`crate::corners`]): the shortest
    /// point path is straight when the start sees the goal, otherwise through the best pair
    /// of a corner seen from the start and one seen from the goal, joined through the
    /// distance table. With a radius, that path is used only if the search's width rule
    /// admits it ([`crate::corridor`]); it is then also the search's answer. Leaves the
    /// search `Found` and returns true, or returns false (no roots kept) when the island has
    /// no table or the path is not admissible.
    fn corner_query(&mut self, mesh: &NavMesh, start: Point, goal: Point, radius: f64) -> bool {
        let corners = mesh.corners();
        let island = mesh.island(self.start_tris[0]).0;
        if !corners.has_table(island) {
            return false;
        }
        let found = |root| Search::Found { goal, radius, root };
        let start_root = Root {
            point: start,
            vertex: NO_VERTEX,
            key: NO_KEY,
            parent: NO_ROOT,
            alt: 0.0,
        };
        let same_triangle = self.start_tris.iter().any(|t| self.goal_tris.contains(t));
        let visible = same_triangle
            || self.sweep.run(
                mesh,
                corners,
                start,
                &self.start_tris,
                Some((goal, &self.goal_tris)),
                &mut self.seen_start,
            );
        self.stats.expanded += self.sweep.expanded;
        if visible {
            self.roots.push(start_root);
            if !self.admits(mesh, goal, radius) {
                return false;
            }
            self.state = found(0);
            return true;
        }
        self.sweep.run(
            mesh,
            corners,
            goal,
            &self.goal_tris,
            None,
            &mut self.seen_goal,
        );
        self.stats.expanded += self.sweep.expanded;
        // The best pair. A pair can only win if its straight-line bound beats the best so
        // far; the table is read only then.
        let mut best = f64::INFINITY;
        let mut pair = None;
        for &(a, to_a) in &self.seen_start {
            let pa = corners.point(a);
            if to_a + pa.distance(goal) >= best {
                continue;
            }
            let row = corners.row(a);
            for &(b, to_b) in &self.seen_goal {
                let d = to_a + row[corners.local(b)] + to_b;
                if d < best {
                    best = d;
                    pair = Some((a, b));
                }
            }
        }
        let Some((a, b)) = pair else {
            return false;
        };
        self.roots.push(start_root);
        let mut at = a;
        let mut steps = 0;
        loop {
            self.roots.push(Root {
                point: corners.point(at),
                vertex: NO_VERTEX,
                key: NO_KEY,
                parent: self.roots.len() as u32 - 1,
                alt: 0.0,
            });
            if at == b {
                break;
            }
            steps += 1;
            match corners.next_hop(at, b) {
                Some(next) if steps <= corners.count() => at = next,
                _ => {
                    // The table and the edges disagree (cannot happen on a planar mesh).
                    self.roots.clear();
                    return false;
                }
            }
        }
        if !self.admits(mesh, goal, radius) {
            return false;
        }
        self.state = found(self.roots.len() as u32 - 1);
        true
    }

    /// Whether the point path in `roots` (then the goal) is admissible for `radius` under
    /// the search's width rule; if not, the roots are cleared for the search. Always true
    /// for a point agent.
    fn admits(&mut self, mesh: &NavMesh, goal: Point, radius: f64) -> bool {
        if radius == 0.0 {
            self.stats.corner_graph = true;
            return true;
        }
        self.point_path.clear();
        self.point_path
            .extend(self.roots.iter().map(|root| root.point));
        self.point_path.push(goal);
        let admitted = self
            .corridor
            .admits(mesh, &self.point_path, &self.start_tris, radius);
        if admitted {
            self.stats.corner_graph = true;
        } else {
            self.roots.clear();
        }
        admitted
    }

    /// A fresh stamp for the per-vertex arrays, sizing them for this mesh.
    fn next_stamp(&mut self, mesh: &NavMesh) {
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
    fn seed(&mut self, mesh: &NavMesh, start: Point, goal: Point, radius: f64) {
        for i in 0..self.start_tris.len() {
            let tri = self.start_tris[i];
            let corners = mesh.triangle_points(tri);
            for e in 0..3 {
                let (p, q) = (corners[e], corners[(e + 1) % 3]);
                if orient(p, q, start) == 0.0 {
                    // The start lies on this edge: the triangle across is a start triangle too.
                    continue;
                }
                self.push_successor(mesh, radius, tri, None, e, (q, true), (p, true), 0, 0.0);
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

    /// Advances the search by at most `max_iterations` node expansions.
    pub fn update_search(&mut self, mesh: &NavMesh, max_iterations: usize) -> SliceStatus {
        let Search::Running { goal, radius, .. } = self.state else {
            return SliceStatus::Done;
        };
        let mut done = 0;
        while done < max_iterations {
            let Some(open) = self.open.pop() else {
                self.state = Search::Failed(FailKind::Unreachable);
                return SliceStatus::Done;
            };
            if open.is_goal {
                self.state = Search::Found {
                    goal,
                    radius,
                    root: open.index,
                };
                return SliceStatus::Done;
            }
            let mut index = open.index;
            loop {
                let node = self.nodes[index as usize];
                let root = self.roots[node.root as usize];
                if root.key != NO_KEY
                    && self.turn_best[root.key as usize] < node.g - length_eps(node.g)
                {
                    // A shorter way to this node's turn was found after it was queued.
                    self.pending.clear();
                    break;
                }
                self.stats.expanded += 1;
                done += 1;
                self.expand(mesh, goal, radius, node);
                // Intermediate pruning (Polyanya): a node with a single successor is
                // expanded at once instead of going through the open list (within the
                // slice's budget: each counts as an iteration). This only saves the heap's
                // work; the goal still has to come off the open list to end the search.
                if self.pending.len() == 1 && done < max_iterations {
                    index = self.pending[0];
                    self.pending.clear();
                    continue;
                }
                self.queue_pending(mesh, goal);
                break;
            }
        }
        SliceStatus::InProgress
    }

    /// The result of a finished search: corners into `out` (cleared first), length returned.
    /// With a radius, each corner is moved `radius` away from the wall corner it turns
    /// around (see the module docs).
    pub fn finish_search(
        &mut self,
        mesh: &NavMesh,
        out: &mut Vec<Point>,
    ) -> Result<f64, PathError> {
        out.clear();
        match self.state {
            Search::Found { goal, radius, root } => {
                let mut r = root;
                while r != NO_ROOT {
                    out.push(self.roots[r as usize].point);
                    r = self.roots[r as usize].parent;
                }
                out.reverse();
                out.push(goal);
                if radius > 0.0 {
                    drop_straight_corners(out);
                    self.point_path.clear();
                    self.point_path.extend_from_slice(out);
                    offset_corners(mesh, out, radius, &mut self.wall_scratch);
                    repair_clearance(mesh, out, radius, &mut self.wall_scratch);
                    // Where a passage is about as wide as the agent and staircased (grid
                    // maps), the shifted polyline can still clip a wall. Never hand out a
                    // path through a wall: fall back to the exact point path, whose corners
                    // touch the walls they wrap (the world's collision response keeps the
                    // body off them).
                    let clear = out
                        .windows(2)
                        .all(|w| matches!(mesh.raycast(w[0], w[1]), Ok(Raycast::Clear)));
                    if !clear {
                        self.stats.radius_fallbacks += 1;
                        out.clear();
                        out.extend_from_slice(&self.point_path);
                    }
                }
                Ok(out.windows(2).map(|w| w[0].distance(w[1])).sum())
            }
            Search::Failed(FailKind::Unreachable) => Err(PathError::Unreachable),
            Search::Idle | Search::Running { .. } => Err(PathError::Unreachable),
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
        g: f64,
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
        };
        self.nodes.push(node);
        self.stats.generated += 1;
        self.pending.push(self.nodes.len() as u32 - 1);
    }

    /// Queues the pending successors on the open list, each with its `f`.
    fn queue_pending(&mut self, mesh: &NavMesh, goal: Point) {
        for k in 0..self.pending.len() {
            let index = self.pending[k];
            let node = self.nodes[index as usize];
            let f = self.estimate(mesh, goal, &node);
            self.open.push(Open {
                f,
                g: node.g,
                index,
                is_goal: false,
            });
        }
        self.pending.clear();
    }

    /// A node's `f`: its `g` plus the largest of three lower bounds on the rest of the
    /// path: straight lines through the interval, landmarks from the root, and landmarks
    /// from the interval's edge. Only nodes that go on the open list need one.
    fn estimate(&mut self, mesh: &NavMesh, goal: Point, node: &Node) -> f64 {
        if self.flood {
            return node.g;
        }
        let root = self.roots[node.root as usize];
        let to_interval = crate::width::distance_to_segment(root.point, node.left, node.right);
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
        node.g
            + heuristic(root.point, node.left, node.right, goal)
                .max(root.alt)
                .max(via_edge)
    }

    fn expand(&mut self, mesh: &NavMesh, goal: Point, radius: f64, node: Node) {
        let tri = node.tri;
        let e = node.edge as usize;
        // Every successor leaves this triangle, entered through edge `e`.
        let push = |query: &mut NavMeshQuery,
                    edge: usize,
                    left: (Point, bool),
                    right: (Point, bool),
                    root: u32,
                    g: f64| {
            query.push_successor(mesh, radius, tri, Some(e), edge, left, right, root, g);
        };
        let corners = mesh.triangles()[tri.index()];
        let pts = mesh.triangle_points(tri);
        let root = self.roots[node.root as usize];
        let r = root.point;
        let in_goal = self.goal_tris.contains(&tri);

        if let Some(c) = corners.iter().position(|v| v.0 == root.vertex) {
            // The root is a corner of this triangle: all of it is in view. Continue to the
            // edge opposite the root and, around the root, to its other edge.
            if self.flood {
                for (v, p) in corners.iter().zip(pts) {
                    self.record(*v, node.g + r.distance(p));
                }
            }
            if in_goal {
                self.push_goal(node.root, node.g + r.distance(goal));
            }
            let opposite = (c + 1) % 3;
            let other = if e == c { (c + 2) % 3 } else { c };
            for edge in [opposite, other] {
                let (p, q) = (pts[edge], pts[(edge + 1) % 3]);
                push(self, edge, (q, true), (p, true), node.root, node.g);
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
                self.push_goal(node.root, node.g + r.distance(goal));
            } else if left_of_a > 0.0 {
                if node.left_is_corner && mesh.is_wall_vertex(lv) {
                    let g = node.g + r.distance(l);
                    if let Some(turn) =
                        self.add_root(mesh, lv, turn_key(tri, e, true), node.root, g)
                    {
                        self.push_goal(turn, g + l.distance(goal));
                    }
                }
            } else if node.right_is_corner && mesh.is_wall_vertex(rv) {
                let g = node.g + r.distance(rr);
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
                    node.g,
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
                    node.g,
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
            let g = node.g + r.distance(l);
            if let Some(turn) = self.add_root(mesh, lv, turn_key(tri, e, true), node.root, g) {
                // Edge L-W touches L: the whole edge, and the fan continues around L.
                push(self, lw_edge, (l, true), (w, true), turn, g);
                if sa > 1.0 {
                    push(self, wr_edge, (w, true), (at(sa), sa == 2.0), turn, g);
                }
            }
        }
        // Beyond the right ray, reachable by turning at R.
        if node.right_is_corner && sb < 2.0 && taut_right() {
            let g = node.g + r.distance(rr);
            if let Some(turn) =
                self.add_root(mesh, rv, turn_key(tri, (e + 1) % 3, false), node.root, g)
            {
                if sb < 1.0 {
                    push(self, lw_edge, (at(sb), sb == 0.0), (w, true), turn, g);
                }
                push(self, wr_edge, (w, true), (rr, true), turn, g);
            }
        }
    }
}

/// Every triangle that contains `p` (on an edge or vertex there are several), starting
/// from `first`, which does.
fn triangles_containing(mesh: &NavMesh, p: Point, first: TriId, out: &mut Vec<TriId>) {
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

/// Removes the corners a path goes straight on at (exactly collinear with the corners
/// before and after, the path not turning back). The search bends by a zero angle at wall
/// vertices a segment grazes when it needs them as roots, the corner graph does not: the
/// radius offsetting sees the same polyline either way, and grazed wall corners are handled
/// by [`repair_clearance`].
fn drop_straight_corners(points: &mut Vec<Point>) {
    let mut kept = 1;
    for i in 1..points.len() {
        let (prev, here) = (points[kept - 1], points[i]);
        let straight = points.get(i + 1).is_some_and(|&next| {
            orient_sign(prev, here, next) == 0 && (here - prev).dot(next - here) > 0.0
        });
        if !straight {
            points[kept] = here;
            kept += 1;
        }
    }
    points.truncate(kept.min(points.len()));
}

/// Moves every corner of a path (not its ends) `radius` away from the wall corner it
/// turns around, then out of any other wall still closer than `radius`.
fn offset_corners(mesh: &NavMesh, points: &mut [Point], radius: f64, near: &mut Vec<usize>) {
    let n = points.len();
    for i in 1..n.saturating_sub(1) {
        let v = points[i];
        let bend = unit(unit(v - points[i - 1]) - unit(points[i + 1] - v));
        // Corners are wall vertices. Moving along the bisector of the two walls that meet
        // there (their walkable-side normals) puts the corner exactly `radius` from both;
        // where several walls meet (rings touching at a vertex) the pair facing the bend is
        // the one the path wraps.
        let pad = Point::new(1e-9, 1e-9);
        mesh.walls_near(v - pad, v + pad, near);
        let mut dir = Point::default();
        let mut best = f64::NEG_INFINITY;
        for &wi in near.iter() {
            let w_in = mesh.walls()[wi];
            if mesh.vertices()[w_in.to.index()] != v {
                continue;
            }
            for &wo in near.iter() {
                let w_out = mesh.walls()[wo];
                if mesh.vertices()[w_out.from.index()] != v {
                    continue;
                }
                let u = unit(wall_normal(mesh, wi) + wall_normal(mesh, wo));
                if u.dot(bend) > best {
                    best = u.dot(bend);
                    dir = u;
                }
            }
        }
        if dir == Point::default() {
            dir = bend;
        }
        if dir == Point::default() {
            continue;
        }
        let mut p = v + dir * (radius * (1.0 + 1e-9));
        if mesh.locate(p).is_none() {
            continue;
        }
        // Out of any other wall still closer than the radius. A few steps settle it
        // wherever the passage admits the radius, which the search guaranteed.
        for _ in 0..8 {
            let Some(hit) = mesh.nearest_wall(p, radius) else {
                break;
            };
            if hit.distance >= radius * (1.0 - 1e-9) {
                break;
            }
            let away = if hit.distance > 0.0 {
                unit(p - hit.point)
            } else {
                dir
            };
            let moved = p + away * (radius - hit.distance + radius * 1e-9);
            if mesh.locate(moved).is_none() {
                break;
            }
            p = moved;
        }
        points[i] = p;
    }
}

/// The unit normal of a wall pointing to its walkable side (its left).
fn wall_normal(mesh: &NavMesh, wall: usize) -> Point {
    let w = mesh.walls()[wall];
    let d = mesh.vertices()[w.to.index()] - mesh.vertices()[w.from.index()];
    unit(Point::new(-d.y, d.x))
}

/// Bends a radius path around walls its segments pass closer than `radius`.
///
/// The search keeps the agent out of passages narrower than `2 * radius` and
/// [`offset_corners`] keeps each corner `radius` from the corner it wraps, but a straight
/// segment between two corners may still pass closer than `radius` to a third wall corner
/// that the point path only grazed. Each such segment gets a new corner `radius` away from
/// the nearest offending wall point, pushed out of any other wall, until every segment
/// clears or a bounded number of corners has been added (in a passage of exactly `2 *
/// radius` no placement can do better). Corners keep `radius` from walls; segments keep at
/// least half of it.
fn repair_clearance(mesh: &NavMesh, points: &mut Vec<Point>, radius: f64, near: &mut Vec<usize>) {
    let tolerance = radius * 1e-6;
    // Segments between corners offset around the same wall corner are chords of the
    // agent's true arc and dip slightly inside the radius; only real intrusions (closer
    // than half the radius, or through a wall) are repaired.
    let limit = radius * 0.5;
    let mut budget = 4 * points.len() + 32;
    let mut i = 0;
    while i + 1 < points.len() && budget > 0 {
        let (p, q) = (points[i], points[i + 1]);
        mesh.wall_grid().walls_near_segment(p, q, radius, near);
        let mut worst: Option<(f64, Point, Point, usize)> = None;
        for &w in near.iter() {
            let wall = mesh.walls()[w];
            let a = mesh.vertices()[wall.from.index()];
            let b = mesh.vertices()[wall.to.index()];
            let (d, on_segment, on_wall) = segment_distance(p, q, a, b);
            // Touching a wall at the path's own ends is where the path starts or ends.
            if d < limit
                && on_wall.distance(p) > tolerance
                && on_wall.distance(q) > tolerance
                && worst.is_none_or(|(best, ..)| d < best)
            {
                worst = Some((d, on_segment, on_wall, w));
            }
        }
        let Some((d, on_segment, on_wall, w)) = worst else {
            i += 1;
            continue;
        };
        budget -= 1;
        let wall = mesh.walls()[w];
        let along = mesh.vertices()[wall.to.index()] - mesh.vertices()[wall.from.index()];
        // Away from the wall: towards the segment, or the wall's walkable side (its left)
        // when the segment touches or crosses it.
        let away = if d > tolerance {
            unit(on_segment - on_wall)
        } else {
            unit(Point::new(-along.y, along.x))
        };
        let mut corner = on_wall + away * (radius * (1.0 + 1e-9));
        for _ in 0..8 {
            let Some(hit) = mesh.nearest_wall(corner, radius) else {
                break;
            };
            if hit.distance >= radius - tolerance {
                break;
            }
            let out = if hit.distance > 0.0 {
                unit(corner - hit.point)
            } else {
                away
            };
            corner = corner + out * (radius - hit.distance + radius * 1e-9);
        }
        if mesh.locate(corner).is_none()
            || corner.distance(p) <= tolerance
            || corner.distance(q) <= tolerance
        {
            i += 1;
            continue;
        }
        points.insert(i + 1, corner);
    }
}

/// The distance between segments `p q` and `a b`, with the closest point on each.
fn segment_distance(p: Point, q: Point, a: Point, b: Point) -> (f64, Point, Point) {
    // Proper or touching intersection: distance zero at the crossing.
    let (d1, d2) = (orient(a, b, p), orient(a, b, q));
    let (d3, d4) = (orient(p, q, a), orient(p, q, b));
    if d1 * d2 <= 0.0 && d3 * d4 <= 0.0 && (d1 != d2 || d3 != d4) {
        let denom = d1 - d2;
        if denom != 0.0 {
            let x = p + (q - p) * (d1 / denom);
            return (0.0, x, x);
        }
    }
    let mut best = (f64::INFINITY, p, a);
    for (point, seg_a, seg_b, point_on_pq) in [
        (a, p, q, false),
        (b, p, q, false),
        (p, a, b, true),
        (q, a, b, true),
    ] {
        let ab = seg_b - seg_a;
        let len2 = ab.dot(ab);
        let t = if len2 > 0.0 {
            ((point - seg_a).dot(ab) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let closest = seg_a + ab * t;
        let d = point.distance(closest);
        if d < best.0 {
            best = if point_on_pq {
                (d, point, closest)
            } else {
                (d, closest, point)
            };
        }
    }
    best
}

/// The unit vector along `d`, or zero for a zero vector.
fn unit(d: Point) -> Point {
    let len = d.length();
    if len > 0.0 {
        d * (1.0 / len)
    } else {
        Point::default()
    }
}
