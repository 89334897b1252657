//! Path queries: the shortest path between two points for a disc of a given radius.
//!
//! # Point agents: the corner graph
//! For radius 0 on an island whose corner graph has a distance table (see the `corners`
//! module, `navmesh/src/corners.rs`: every island of up to 2,500 convex wall corners,
//! built on the first query or by [`NavMesh::prepare_point_queries`]), no search runs
//! (`path/corner_graph.rs`). A visibility sweep from the start finds the goal if it is in view (the path is then the straight
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
//!   (root-level pruning). Pruning per vertex alone would lose regions that only one of
//!   two turns at a vertex opens, and with them whole paths.
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
//! are sums of floats). The tests run every scenario query of the five shipped Moving AI
//! maps against an exact visibility-graph reference and fail a map if a query finds no
//! path, if a path is shorter than the reference's by more than 1e-4, or if more than 1%
//! of its paths are more than 1% longer than the reference's. Known gap: on rare random
//! point pairs the search's forward and backward lengths differ by a small fraction of a
//! percent: some funnel boundary still rounds the wrong way. Islands are checked first, so
//! a goal on another island is answered without expanding anything.
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
//! Then (`path/clearance.rs`) corners the path goes straight on at are dropped (the search keeps zero-angle
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
//! # Triangle costs
//! [`NavMeshQuery::set_triangle_costs`] adds a cost to every triangle a path enters (a
//! crowd's jams, say). A node then carries those costs apart from its root's length
//! (`Node::extra`): root-level pruning still compares lengths to roots plus the costs
//! before them, and `f` is the node's cost so far plus a bound on the rest: the length
//! bounds above plus a bound on the costs still to pay (`path/costs.rs`: a Dijkstra over
//! the parts the costly triangles cut the mesh into). Without that second bound, a costly
//! band across the only way would make the search expand every node shorter than the way
//! plus its cost, most of the map. The search returns the taut path of least length plus
//! costs. Without costs nothing changes.
//!
//! # Slicing
//! [`NavMeshQuery::begin_search`], [`NavMeshQuery::update_search`] and
//! [`NavMeshQuery::finish_search`] split one search over several calls with a bounded
//! number of node expansions each, so a world can spread many requests over its ticks.
//!
//! # Layout
//! This file holds the public API ([`NavMeshQuery`], [`Path`], [`PathError`],
//! [`SearchStats`]) and the slicing; the rest is split by concern: `search.rs` (funnel
//! nodes, the open list, node expansion, the landmark flood), `corner_graph.rs` (queries
//! answered through the corner graph, and the width check that admits them for a radius)
//! and `clearance.rs` (a radius path's corners moved off the walls, its segments
//! repaired).

mod clearance;
mod corner_graph;
mod costs;
mod search;

use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::corners::Sweep;
use crate::corridor::Corridor;
use crate::geom::Point;
use crate::landmarks::{Active, Landmarks};
use crate::mesh::{NavMesh, TriId};
use search::{
    ACTIVE_LANDMARKS, NO_KEY, NO_ROOT, NO_VERTEX, Node, Open, Root, landmark_bound, length_eps,
    triangles_containing,
};

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
    /// Best `g` per turn (see `search::turn_key`), valid where `turn_stamp` equals `stamp`.
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
    /// Extra cost per triangle entered, metres (see [`NavMeshQuery::set_triangle_costs`]).
    triangle_costs: Option<Arc<[f64]>>,
    /// False to leave `triangle_costs` out of later searches (see
    /// [`NavMeshQuery::use_triangle_costs`]).
    costs_on: bool,
    /// The costs of the running search (`triangle_costs` when it began, if they fit).
    costs_in_use: Option<Arc<[f64]>>,
    /// The running search's lower bound on the costs still to pay.
    cost_bound: costs::CostBound,
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
            triangle_costs: None,
            costs_on: true,
            costs_in_use: None,
            cost_bound: costs::CostBound::default(),
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

    /// Extra costs for later searches: `costs[t]` metres are added to a path each time it
    /// enters triangle `t` (from another triangle; the start's triangles are free), so that
    /// the search returns the way of least length plus costs among the taut paths it
    /// considers (a path still bends only at wall corners). A crowd uses this to route
    /// round its jams.
    ///
    /// Costs that are not all finite and not negative, a slice of another length than the
    /// mesh's triangle count, or `None` (the default) mean no costs: paths are then the
    /// shortest ones, as the module docs say. With costs, queries always run the search
    /// (the corner graph knows only lengths), and each search first bounds the costs
    /// still to pay from every triangle (`path/costs.rs`), a few microseconds on a mesh of
    /// a few thousand triangles. A search already running keeps the costs it began with.
    pub fn set_triangle_costs(&mut self, costs: Option<Arc<[f64]>>) {
        self.triangle_costs = costs.filter(|c| c.iter().all(|x| x.is_finite() && *x >= 0.0));
    }

    /// Whether later searches pay the costs set by [`NavMeshQuery::set_triangle_costs`]
    /// (true by default). Off, they return the shortest paths while the costs stay set for
    /// when it is turned on again: a crowd's queue serves searches of both kinds without
    /// checking the costs anew each time.
    pub fn use_triangle_costs(&mut self, on: bool) {
        self.costs_on = on;
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
        self.costs_in_use = self
            .triangle_costs
            .as_ref()
            .filter(|c| self.costs_on && c.len() == mesh.triangle_count())
            .cloned();
        if self.costs_in_use.is_none()
            && self.corner_graph
            && self.corner_query(mesh, start, goal, radius)
        {
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
        if let Some(costs) = &self.costs_in_use {
            self.cost_bound.prepare(mesh, costs);
            self.cost_bound.search_from(&self.goal_tris);
        }
        self.seed(mesh, start, goal, radius);
        Ok(())
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
                    self.clear_walls(mesh, out, radius);
                }
                Ok(out.windows(2).map(|w| w[0].distance(w[1])).sum())
            }
            Search::Failed(FailKind::Unreachable) => Err(PathError::Unreachable),
            Search::Idle | Search::Running { .. } => Err(PathError::Unreachable),
        }
    }
}
