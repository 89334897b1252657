//! The world and its tick. [`World::step`] runs one 50 ms tick as a short list of named
//! phases, in this order:
//!
//! 1. [`World::apply_inputs`]: spawn, despawn, move orders, doors (invalid ones counted).
//! 2. [`World::run_brains`]: NPCs without a goal choose one (wander, patrol, gather).
//! 3. [`World::serve_paths`] (`world/paths.rs`): the path queue, sliced within a per-tick
//!    node budget that grows with the number of bodies. Requests beyond it wait for later
//!    ticks; none is dropped. Found paths keep their left-turn corners wide of the walls.
//! 4. [`World::steer`] (`world/steering.rs`): each body's wanted velocity toward its next
//!    path corner (a corner counts as passed from the side), turned right ahead of
//!    oncoming bodies (keep right).
//! 5. [`World::find_contacts`]: broad phase and the bodies already overlapping something.
//! 6. [`World::circle`] (`world/circling.rs`): predicted moves and PAPER §2.2 circling for
//!    blocked ones; a body walked into by an oncoming one circles to its right only.
//! 7. [`World::repulse`] (`world/repulsion.rs`): PAPER §3.2 repulsion for overlapping
//!    bodies.
//! 8. [`World::integrate`]: walls win, positions move, figures are taken.

use std::collections::VecDeque;
use std::sync::Arc;

use navmesh::{NavMesh, NavMeshQuery, Point, TriId};
use parry2d::query::PointQuery;
use parry2d::shape::{Ball, Segment};

use crate::grid::BodyGrid;
use crate::rng::Rng;
use crate::types::{
    Brain, EntityId, Input, Kind, Motion, NoClock, PhaseClock, PhaseTimes, StepOutput, Tick, Vec2,
    WorldConfig,
};
use crate::walls::WallCells;

mod circling;
mod paths;
mod repulsion;
mod steering;

use circling::{Near, SinCos};

/// The fixed tick length: 20 ticks per simulated second.
pub const DT_SECS: f32 = 0.05;

/// Overlap below this fraction of the radius is contact, not overlap (rounding).
const OVERLAP_TOLERANCE: f32 = 1e-3;

/// One body: a parry2d ball with a brain and a path.
#[derive(Clone, Debug)]
struct Body {
    kind: Kind,
    brain: Brain,
    pos: Vec2,
    ball: Ball,
    speed: f32,
    goal: Option<Vec2>,
    direction: Option<Vec2>,
    /// The path's corners (change it through [`Body::clear_path`], or reset `along`).
    path: Vec<Vec2>,
    corner: usize,
    /// The length of the path from corner `.0` on (`path_length_from`), remembered: it is
    /// the same every tick until the body passes a corner or the path changes.
    along: Option<(usize, f32)>,
    path_pending: bool,
    /// The circling heading `d` (PAPER §2.2), while circling.
    heading: Option<Vec2>,
    /// Consecutive ticks this body has waited for an oncoming body to pass on its right
    /// (keep right, see `World::decide`).
    yield_ticks: u32,
    /// Keep-right deflection of the wanted heading, radians (negative: to the right), set
    /// every few ticks by [`World::keep_lanes`].
    lane: f32,
    motion: Motion,
    patrol_next: usize,
    best_goal_dist: f32,
    progress_tick: u64,
    // Per-tick scratch.
    want: Vec2,
    next_pos: Vec2,
    overlapping: bool,
}

impl Body {
    fn clear_path(&mut self) {
        self.path.clear();
        self.along = None;
    }

    /// [`remaining_length`] of the body's path from its next corner, with the part along
    /// the corners remembered (the same arithmetic, so the same value).
    fn remaining_length(&mut self) -> f32 {
        let Some(&first) = self.path.get(self.corner) else {
            return remaining_length(&self.path, self.corner, self.pos);
        };
        let along = match self.along {
            Some((corner, along)) if corner == self.corner => along,
            _ => {
                let along = path_length_from(&self.path, self.corner);
                self.along = Some((self.corner, along));
                along
            }
        };
        (first - self.pos).length() + along
    }
}

#[derive(Clone, Debug, Default)]
struct Slot {
    generation: u32,
    body: Option<Body>,
}

/// The simulated world: one map, its bodies, its doors and its path queue.
pub struct World {
    config: WorldConfig,
    mesh: Arc<NavMesh>,
    walls: Vec<Segment>,
    doors: Vec<Segment>,
    doors_closed: Vec<bool>,
    /// Cumulative triangle area per island, for uniform random wander goals.
    island_tris: Vec<Vec<(f64, TriId)>>,
    rng: Rng,
    tick: Tick,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Path requests in arrival order, each with the tick it was queued.
    queue: VecDeque<(EntityId, u64)>,
    /// The request being searched: body, goal, tick it was queued.
    searching: Option<(EntityId, Vec2, u64)>,
    query: NavMeshQuery,
    grid: BodyGrid,
    max_radius: f32,
    /// The walls near each cell of the map (static), see [`WallCells`].
    wall_cells: WallCells,
    /// Wall query scratch: the mesh's answer, and the same as `u32`.
    near_walls: Vec<usize>,
    wall_scratch: Vec<u32>,
    corners: Vec<Point>,
    positions: Vec<Option<Vec2>>,
    /// Each slot's decided (or current) next position and radius, densely, for the
    /// neighbour tests of the circling phase (`r < 0`: empty slot).
    next_discs: Vec<[f32; 3]>,
    /// Per slot, a disc `(centre, radius)` known to be clear of every wall and closed
    /// door this tick (radius < 0: none known); set by the circling phase.
    wall_free: Vec<(Vec2, f32)>,
    /// Circling scratch: the current body's neighbours, nearby walls and wall depth.
    /// The bodies a move of one step can touch, with their discs.
    surround_near: Vec<Near>,
    /// The walls a move of one step can reach.
    surround_walls: Vec<u32>,
    surround_from_depth: f32,
    /// The step the surroundings were gathered for.
    surround_step: f32,
    /// Circling scratch: `(a, sin_cos(-a), sin_cos(a))` for each deflection `a` of the
    /// PAPER §2.2 search, in search order.
    fan: Vec<(f32, SinCos, SinCos)>,
    /// Survey scratch: each slot's disc at the current positions (`r < 0`: empty slot),
    /// and its deepest overlap with another body.
    survey_discs: Vec<[f32; 3]>,
    survey_deep: Vec<f32>,
    /// Per slot, the last wall depth measured: `(pos, radius, depth)` (radius < 0: none).
    wall_memo: Vec<(Vec2, f32, f32)>,
    /// Deepest overlap per live body from the last survey (scratch).
    survey_overlap: Vec<f32>,
    /// The grid and the overlap flags describe the current positions (set by a survey,
    /// cleared by anything that moves, adds, removes or re-walls bodies).
    contacts_fresh: bool,
    out: StepOutput,
}

fn to_point(v: Vec2) -> Point {
    Point::new(f64::from(v.x), f64::from(v.y))
}

fn to_vec(p: Point) -> Vec2 {
    Vec2::new(p.x as f32, p.y as f32)
}

fn finite(v: Vec2) -> bool {
    v.x.is_finite() && v.y.is_finite()
}

/// Rotates `v` by `deg` degrees (positive: counter-clockwise with x right and y up).
fn rotate(v: Vec2, deg: f32) -> Vec2 {
    let (s, c) = deg.to_radians().sin_cos();
    rotate_by(v, s, c)
}

/// Rotates `v` by the angle whose sine and cosine are `s` and `c`.
fn rotate_by(v: Vec2, s: f32, c: f32) -> Vec2 {
    Vec2::new(v.x * c - v.y * s, v.x * s + v.y * c)
}

/// Turns `v` toward `target` by at most `deg` degrees.
fn turn_toward(v: Vec2, target: Vec2, deg: f32) -> Vec2 {
    let angle = v.perp_dot(target).atan2(v.dot(target)).to_degrees();
    if angle.abs() <= deg {
        target
    } else {
        rotate(v, deg.copysign(angle))
    }
}

impl World {
    /// A world on `mesh`, with its own random generator seeded by `seed`.
    ///
    /// With [`WorldConfig::path_corner_graph`], builds the mesh's corner graph now if it is
    /// not built yet (tenths of a second on a large map, see
    /// `NavMesh::prepare_point_queries`), so that the first path request does not stall a
    /// tick.
    pub fn new(config: WorldConfig, mesh: Arc<NavMesh>, seed: u64) -> World {
        let mut query = NavMeshQuery::new();
        query.set_corner_graph(config.path_corner_graph);
        if config.path_corner_graph {
            mesh.prepare_point_queries();
        }
        let walls = mesh
            .walls()
            .iter()
            .map(|w| {
                Segment::new(
                    to_vec(mesh.vertices()[w.from.index()]),
                    to_vec(mesh.vertices()[w.to.index()]),
                )
            })
            .collect();
        let doors: Vec<Segment> = config
            .doors
            .iter()
            .map(|&(a, b)| Segment::new(a, b))
            .collect();
        let doors_closed = (0..doors.len())
            .map(|i| config.doors_closed.get(i).copied().unwrap_or(false))
            .collect();
        let mut island_tris = vec![Vec::new(); mesh.island_count() as usize];
        for t in 0..mesh.triangle_count() {
            let tri = TriId(t as u32);
            let list: &mut Vec<(f64, TriId)> = &mut island_tris[mesh.island(tri).index()];
            let total = list.last().map_or(0.0, |e| e.0) + mesh.triangle_area(tri);
            list.push((total, tri));
        }
        let wall_cells = WallCells::new(&mesh);
        World {
            config,
            mesh,
            walls,
            doors,
            doors_closed,
            island_tris,
            rng: Rng::new(seed),
            tick: Tick(0),
            slots: Vec::new(),
            free: Vec::new(),
            queue: VecDeque::new(),
            searching: None,
            query,
            grid: BodyGrid::default(),
            max_radius: 0.0,
            wall_cells,
            near_walls: Vec::new(),
            wall_scratch: Vec::new(),
            corners: Vec::new(),
            positions: Vec::new(),
            next_discs: Vec::new(),
            wall_free: Vec::new(),
            surround_near: Vec::new(),
            surround_walls: Vec::new(),
            surround_from_depth: 0.0,
            surround_step: 0.0,
            fan: Vec::new(),
            survey_discs: Vec::new(),
            survey_deep: Vec::new(),
            wall_memo: Vec::new(),
            survey_overlap: Vec::new(),
            contacts_fresh: false,
            out: StepOutput::default(),
        }
    }

    /// The current tick (the number of steps taken).
    pub fn tick(&self) -> Tick {
        self.tick
    }

    /// The mesh the world runs on.
    pub fn mesh(&self) -> &NavMesh {
        &self.mesh
    }

    /// A live entity's position, radius and motion.
    pub fn body(&self, id: EntityId) -> Option<(Vec2, f32, Motion)> {
        self.get(id).map(|b| (b.pos, b.ball.radius, b.motion))
    }

    /// Every live entity: id, kind, position, radius, motion. In id order.
    pub fn bodies(&self) -> impl Iterator<Item = (EntityId, Kind, Vec2, f32, Motion)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.body.as_ref().map(|b| {
                (
                    EntityId {
                        index: i as u32,
                        generation: s.generation,
                    },
                    b.kind,
                    b.pos,
                    b.ball.radius,
                    b.motion,
                )
            })
        })
    }

    /// The remaining path corners of an entity (its current position first).
    pub fn path_of(&self, id: EntityId) -> Vec<Vec2> {
        self.get(id).map_or_else(Vec::new, |b| {
            let mut v = vec![b.pos];
            if b.goal.is_some() {
                v.extend_from_slice(&b.path[b.corner.min(b.path.len())..]);
            }
            v
        })
    }

    /// Whether each door is closed.
    pub fn doors_closed(&self) -> &[bool] {
        &self.doors_closed
    }

    /// A hash of the whole simulated state (ids, positions, motion, tick); equal hashes
    /// for equal seeds and inputs are the determinism guarantee.
    pub fn state_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |v: u64| {
            h ^= v;
            h = h.wrapping_mul(0x0100_0000_01b3);
        };
        eat(self.tick.0);
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(b) = &s.body {
                eat(i as u64);
                eat(u64::from(s.generation));
                eat(u64::from(b.pos.x.to_bits()));
                eat(u64::from(b.pos.y.to_bits()));
                eat(b.motion as u64);
            }
        }
        eat(self.rng.state());
        h
    }

    fn get(&self, id: EntityId) -> Option<&Body> {
        let s = self.slots.get(id.index as usize)?;
        if s.generation == id.generation {
            s.body.as_ref()
        } else {
            None
        }
    }

    fn get_mut(&mut self, id: EntityId) -> Option<&mut Body> {
        let s = self.slots.get_mut(id.index as usize)?;
        if s.generation == id.generation {
            s.body.as_mut()
        } else {
            None
        }
    }

    fn id_of(&self, index: usize) -> EntityId {
        EntityId {
            index: index as u32,
            generation: self.slots[index].generation,
        }
    }

    /// One tick without phase timings.
    pub fn step(&mut self, inputs: &[Input]) -> StepOutput {
        self.step_timed(inputs, &NoClock)
    }

    /// One tick, timing each phase with the caller's clock.
    pub fn step_timed(&mut self, inputs: &[Input], clock: &dyn PhaseClock) -> StepOutput {
        self.out = StepOutput {
            tick: Tick(self.tick.0 + 1),
            ..StepOutput::default()
        };
        let mut times = PhaseTimes::default();
        let mut last = clock.now();
        let mut lap = |slot: &mut std::time::Duration| {
            let now = clock.now();
            *slot = now.saturating_sub(last);
            last = now;
        };
        self.apply_inputs(inputs);
        lap(&mut times.inputs);
        self.run_brains();
        lap(&mut times.brains);
        self.serve_paths();
        lap(&mut times.paths);
        self.steer();
        lap(&mut times.steering);
        self.find_contacts();
        lap(&mut times.contacts);
        self.circle();
        lap(&mut times.circling);
        self.repulse();
        lap(&mut times.repulsion);
        self.integrate();
        lap(&mut times.integrate);
        self.tick.0 += 1;
        self.out.phase_times = times;
        std::mem::take(&mut self.out)
    }

    /// Phase 1: inputs. Invalid ones are counted in [`StepOutput::invalid_inputs`].
    pub fn apply_inputs(&mut self, inputs: &[Input]) {
        for input in inputs {
            if !self.apply_input(input) {
                self.out.invalid_inputs += 1;
            }
        }
    }

    fn apply_input(&mut self, input: &Input) -> bool {
        match input {
            Input::Spawn {
                kind,
                pos,
                radius_m,
                speed_mps,
                brain,
            } => {
                let valid = finite(*pos)
                    && *radius_m > 0.0
                    && radius_m.is_finite()
                    && *speed_mps >= 0.0
                    && speed_mps.is_finite();
                if !valid {
                    return false;
                }
                let Some((p, _)) = self.mesh.nearest_point(to_point(*pos), 1e3) else {
                    return false;
                };
                let body = Body {
                    kind: *kind,
                    brain: brain.clone(),
                    pos: to_vec(p),
                    ball: Ball::new(*radius_m),
                    speed: *speed_mps,
                    goal: None,
                    direction: None,
                    path: Vec::new(),
                    corner: 0,
                    path_pending: false,
                    heading: None,
                    yield_ticks: 0,
                    lane: 0.0,
                    motion: Motion::Idle,
                    patrol_next: 0,
                    best_goal_dist: f32::INFINITY,
                    progress_tick: self.tick.0,
                    along: None,
                    want: Vec2::ZERO,
                    next_pos: to_vec(p),
                    overlapping: false,
                };
                let index = match self.free.pop() {
                    Some(i) => i as usize,
                    None => {
                        self.slots.push(Slot::default());
                        self.slots.len() - 1
                    }
                };
                self.slots[index].body = Some(body);
                self.contacts_fresh = false;
                self.max_radius = self.max_radius.max(*radius_m);
                let id = self.id_of(index);
                self.out.spawned.push(id);
                true
            }
            Input::Despawn(id) => {
                if self.get(*id).is_none() {
                    return false;
                }
                let slot = &mut self.slots[id.index as usize];
                slot.body = None;
                slot.generation = slot.generation.wrapping_add(1);
                self.contacts_fresh = false;
                self.free.push(id.index);
                true
            }
            Input::MoveTo(id, goal) => {
                if !finite(*goal) {
                    return false;
                }
                let tick = self.tick.0;
                let Some(b) = self.get_mut(*id) else {
                    return false;
                };
                b.direction = None;
                set_goal(b, *goal, tick);
                if !b.path_pending {
                    b.path_pending = true;
                    self.queue.push_back((*id, tick));
                }
                true
            }
            Input::MoveInDirection(id, dir) => {
                let len = dir.length();
                if !finite(*dir) || len == 0.0 {
                    return false;
                }
                let Some(b) = self.get_mut(*id) else {
                    return false;
                };
                b.goal = None;
                b.clear_path();
                b.direction = Some(*dir / len);
                true
            }
            Input::Stop(id) => {
                let Some(b) = self.get_mut(*id) else {
                    return false;
                };
                b.goal = None;
                b.clear_path();
                b.direction = None;
                b.heading = None;
                true
            }
            Input::SetDoor { door, closed } => match self.doors_closed.get_mut(*door) {
                Some(state) => {
                    *state = *closed;
                    self.contacts_fresh = false;
                    // Wall depths change with the doors.
                    self.wall_memo.clear();
                    true
                }
                None => false,
            },
        }
    }

    /// Phase 2: NPC brains choose goals.
    pub fn run_brains(&mut self) {
        for i in 0..self.slots.len() {
            let Some(b) = self.slots[i].body.as_ref() else {
                continue;
            };
            if b.kind != Kind::Npc || b.path_pending {
                continue;
            }
            let goal = match &b.brain {
                Brain::Idle => None,
                Brain::Wander => {
                    // A wanderer that has made no progress for half the stuck time (two
                    // streams meeting head-on in a corridor one body wide, which circling
                    // cannot solve) gives up its goal and picks another.
                    let give_up = (self.config.stuck_after_secs / 2.0 / DT_SECS) as u64;
                    let mut blocked_dir = None;
                    if b.goal.is_some() {
                        if self.tick.0.saturating_sub(b.progress_tick) <= give_up {
                            continue;
                        }
                        self.out.gave_up += 1;
                        blocked_dir = Some(b.want);
                    }
                    let pos = b.pos;
                    // After giving up, head away from the jam: prefer a goal whose straight
                    // direction turns away from the way that was blocked, so jammed bodies
                    // leave and the jam dissolves instead of being refilled.
                    let mut pick = self.random_point_near(pos);
                    if let Some(dir) = blocked_dir {
                        for _ in 0..8 {
                            if pick.is_none_or(|p| (p - pos).dot(dir) < 0.0) {
                                break;
                            }
                            pick = self.random_point_near(pos);
                        }
                    }
                    pick
                }
                Brain::Patrol(points) => {
                    if b.goal.is_some() || points.is_empty() {
                        continue;
                    }
                    let p = points[b.patrol_next % points.len()];
                    if let Some(b) = self.slots[i].body.as_mut() {
                        b.patrol_next = (b.patrol_next + 1) % points_len(&b.brain);
                    }
                    Some(p)
                }
                Brain::Gather(target) => {
                    let Some(t) = self.get(*target) else { continue };
                    let reach = b.ball.radius + t.ball.radius + self.config.gather_distance_m;
                    if (t.pos - b.pos).length() <= reach {
                        // Close enough: stand here (others press around, the figure 13 case).
                        let b = self.slots[i].body.as_mut();
                        if let Some(b) = b {
                            b.goal = None;
                            b.clear_path();
                        }
                        continue;
                    }
                    match b.goal {
                        Some(g) if (g - t.pos).length() < 1.0 => continue,
                        _ => Some(t.pos),
                    }
                }
            };
            let Some(goal) = goal else { continue };
            let id = self.id_of(i);
            let tick = self.tick.0;
            if let Some(b) = self.slots[i].body.as_mut() {
                set_goal(b, goal, tick);
                b.path_pending = true;
                self.queue.push_back((id, tick));
            }
        }
    }

    /// A uniformly random walkable point on the island under `near`.
    fn random_point_near(&mut self, near: Vec2) -> Option<Vec2> {
        let tri = self.mesh.nearest_point(to_point(near), 1e3)?.1;
        let list = &self.island_tris[self.mesh.island(tri).index()];
        let total = list.last()?.0;
        let pick = self.rng.next_f64() * total;
        let k = list.partition_point(|e| e.0 < pick).min(list.len() - 1);
        let [a, b, c] = self.mesh.triangle_points(list[k].1);
        let (mut u, mut v) = (self.rng.next_f64(), self.rng.next_f64());
        if u + v > 1.0 {
            u = 1.0 - u;
            v = 1.0 - v;
        }
        Some(to_vec(a + (b - a) * u + (c - a) * v))
    }

    /// Phase 5: broad phase, and which bodies already overlap a body or a wall.
    pub fn find_contacts(&mut self) {
        // The previous tick's figures surveyed these same positions, unless an input added,
        // removed or re-walled something since.
        if !self.contacts_fresh {
            self.survey(false);
        }
        self.wall_free.clear();
        self.wall_free.resize(self.slots.len(), (Vec2::ZERO, -1.0));
        self.contacts_fresh = false;
        for slot in &mut self.slots {
            if let Some(b) = slot.body.as_mut() {
                b.next_pos = b.pos;
            }
        }
        self.next_discs.clear();
        self.next_discs.extend(self.slots.iter().map(|s| {
            s.body
                .as_ref()
                .map_or([0.0, 0.0, -1.0], |b| [b.pos.x, b.pos.y, b.ball.radius])
        }));
        // The grid's discs are the current positions (set by the survey), which is where
        // the circling phase starts from.
    }

    /// Rebuilds the broad phase on the current positions and classifies every body: its
    /// deepest overlap with another body (fraction of the smaller radius, into
    /// `survey_overlap`), whether it counts as overlapping something (the repulsion phase's
    /// input), and how many bodies reach more than 1% of their radius into a wall.
    ///
    /// With `wall_free`, the discs the circling phase found clear of walls this tick spare
    /// the wall queries of bodies still inside them.
    fn survey(&mut self, wall_free: bool) -> usize {
        self.positions.clear();
        self.positions
            .extend(self.slots.iter().map(|s| s.body.as_ref().map(|b| b.pos)));
        let bounds = self.mesh.bounds();
        let cell = (2.0 * self.max_radius).max(1.0);
        self.grid.rebuild(
            to_vec(bounds.min),
            to_vec(bounds.max),
            cell,
            &self.positions,
        );
        self.survey_overlap.clear();
        self.survey_discs.clear();
        self.survey_discs.extend(self.slots.iter().map(|s| {
            s.body
                .as_ref()
                .map_or([0.0, 0.0, -1.0], |b| [b.pos.x, b.pos.y, b.ball.radius])
        }));
        for (i, &disc) in self.survey_discs.iter().enumerate() {
            self.grid.set_disc(i, disc);
        }
        // Each body's deepest overlap with another. The cells are at least twice the
        // largest radius wide, so overlapping bodies share a cell or neighbouring ones, and
        // the grid hands each such pair over once; the overlap is symmetric, and a maximum
        // does not depend on the order it is taken in.
        let deep = &mut self.survey_deep;
        deep.clear();
        deep.resize(self.slots.len(), 0.0);
        let discs = &self.survey_discs;
        self.grid.for_each_close_pair(|i, j| {
            let [xi, yi, ri] = discs[i];
            let [xj, yj, rj] = discs[j];
            let d = disc_overlap(Vec2::new(xi, yi), ri, Vec2::new(xj, yj), rj) / ri.min(rj);
            deep[i] = deep[i].max(d);
            deep[j] = deep[j].max(d);
        });
        self.wall_memo
            .resize(self.slots.len(), (Vec2::ZERO, -1.0, 0.0));
        let mut in_walls = 0;
        for i in 0..self.slots.len() {
            let Some(b) = self.slots[i].body.as_ref() else {
                continue;
            };
            let (pos, ball) = (b.pos, b.ball);
            let deepest = self.survey_deep[i];
            let wall = if wall_free && self.known_wall_free(i, pos, ball.radius) {
                0.0
            } else {
                self.body_wall_depth(i, pos, ball.radius)
            };
            if wall > 0.01 * ball.radius {
                in_walls += 1;
            }
            self.survey_overlap.push(deepest);
            if let Some(b) = self.slots[i].body.as_mut() {
                b.overlapping =
                    deepest > OVERLAP_TOLERANCE || wall > OVERLAP_TOLERANCE * ball.radius;
            }
        }
        self.contacts_fresh = true;
        in_walls
    }

    /// [`World::wall_depth`] for body `i` at `pos`, remembered per body: a body standing
    /// still (waiting in a jam, or for its path) is not measured again every tick. The
    /// depth depends only on the point, the radius and the doors (the memo is dropped when
    /// a door changes), so the remembered value is the one a new measure would give.
    fn body_wall_depth(&mut self, i: usize, pos: Vec2, radius: f32) -> f32 {
        if let Some(&(p, r, depth)) = self.wall_memo.get(i)
            && p == pos
            && r == radius
        {
            return depth;
        }
        let depth = self.wall_depth(pos, radius);
        if let Some(m) = self.wall_memo.get_mut(i) {
            *m = (pos, radius, depth);
        }
        depth
    }

    /// How deep a disc at `pos` reaches into walls and closed doors (0 when clear), and,
    /// when the centre is off the mesh, at least the radius.
    fn wall_depth(&mut self, pos: Vec2, radius: f32) -> f32 {
        let clearance = self.clearance(pos, radius);
        if clearance >= radius {
            // A disc clear of every wall is wholly on the mesh or wholly inside an obstacle;
            // bodies never get wholly inside one (spawns snap to the mesh, walls win), so
            // the point location is only needed near walls.
            return 0.0;
        }
        let mut depth = (radius - clearance).max(0.0);
        if self.mesh.locate(to_point(pos)).is_none() {
            depth = depth.max(radius);
        }
        depth
    }

    /// Distance from `pos` to the nearest wall or closed door, capped at `radius`.
    fn clearance(&mut self, pos: Vec2, radius: f32) -> f32 {
        let (_, near) = walls_within(
            &self.wall_cells,
            &self.mesh,
            pos,
            radius,
            radius,
            &mut self.wall_scratch,
            &mut self.near_walls,
        );
        let mut best = radius;
        for &w in near {
            best = best.min(self.walls[w as usize].distance_to_local_point(pos, true));
        }
        for (d, closed) in self.doors.iter().zip(&self.doors_closed) {
            if *closed {
                best = best.min(d.distance_to_local_point(pos, true));
            }
        }
        best
    }

    /// Phase 8: walls win (no body ends deeper in a wall than it started), positions move,
    /// and the figures are taken.
    pub fn integrate(&mut self) {
        let stuck_ticks = (self.config.stuck_after_secs / DT_SECS) as u64;
        for i in 0..self.slots.len() {
            let Some(b) = self.slots[i].body.as_ref() else {
                continue;
            };
            let (pos, next, r) = (b.pos, b.next_pos, b.ball.radius);
            let keep = next == pos || {
                let after = if self.known_wall_free(i, next, r) {
                    0.0
                } else {
                    self.wall_depth(next, r)
                };
                after <= 0.0 || after <= self.wall_depth(pos, r) - 1e-6
            };
            let tick = self.tick.0;
            let Some(b) = self.slots[i].body.as_mut() else {
                continue;
            };
            if keep {
                b.pos = next;
            }
            if let Some(goal) = b.goal {
                // Progress is measured along the path (a path may lead away from the goal
                // around an obstacle); before the path arrives, in a straight line.
                let dist = if b.path.is_empty() || b.path_pending {
                    (goal - b.pos).length()
                } else {
                    b.remaining_length()
                };
                if dist < b.best_goal_dist - 0.05 {
                    b.best_goal_dist = dist;
                    b.progress_tick = tick;
                } else if tick.saturating_sub(b.progress_tick) > stuck_ticks {
                    self.out.stuck += 1;
                }
            }
            match b.motion {
                Motion::Circling => self.out.circling += 1,
                Motion::Repulsed => self.out.repulsed += 1,
                _ => {}
            }
        }
        self.take_figures();
    }

    /// Overlap and wall figures at the tick's end.
    fn take_figures(&mut self) {
        let in_walls = self.survey(true);
        let mut per_body = std::mem::take(&mut self.survey_overlap);
        // The values a full sort would put last and at the 99th percentile.
        self.out.max_overlap = per_body
            .iter()
            .copied()
            .max_by(f32::total_cmp)
            .unwrap_or(0.0);
        self.out.p99_overlap = if per_body.is_empty() {
            0.0
        } else {
            let k = ((per_body.len() - 1) as f32 * 0.99).round() as usize;
            *per_body.select_nth_unstable_by(k, f32::total_cmp).1
        };
        self.out.bodies_in_walls = in_walls;
        self.survey_overlap = per_body;
    }
}

fn points_len(brain: &Brain) -> usize {
    match brain {
        Brain::Patrol(p) => p.len().max(1),
        _ => 1,
    }
}

/// Length of the rest of a path: from `pos` to corner `next`, then along the corners.
fn remaining_length(path: &[Vec2], next: usize, pos: Vec2) -> f32 {
    let Some(&first) = path.get(next) else {
        return path.last().map_or(0.0, |&g| (g - pos).length());
    };
    (first - pos).length() + path_length_from(path, next)
}

/// Length of a path along its corners from corner `next` on.
fn path_length_from(path: &[Vec2], next: usize) -> f32 {
    path[next..]
        .windows(2)
        .map(|w| (w[1] - w[0]).length())
        .sum()
}

fn set_goal(b: &mut Body, goal: Vec2, tick: u64) {
    b.goal = Some(goal);
    b.best_goal_dist = (goal - b.pos).length();
    b.progress_tick = tick;
}

/// How far two discs overlap (0 when apart). The same arithmetic as parry2d's ball–ball
/// contact depth (`contact_ball_ball`, to the bit: see the test), without building a pose
/// and a contact for every pair in the hot loops.
#[inline]
fn disc_overlap(p1: Vec2, r1: f32, p2: Vec2, r2: f32) -> f32 {
    let distance_squared = (p2 - p1).length_squared();
    let sum = r1 + r2;
    if distance_squared < sum * sum {
        (-(distance_squared.sqrt() - sum)).max(0.0)
    } else {
        0.0
    }
}

/// The walls within `reach` of `p` (and perhaps a few farther ones): the map's static
/// cell list, or, for reaches the lists do not cover, the mesh's answer (in `scratch`).
/// Empty when the cell's bound shows that no wall is within `limit` of `p` (the callers
/// only use walls closer than that). Also returns a lower bound on the distance from `p`
/// to any wall (0 when none is known).
fn walls_within<'a>(
    cells: &'a WallCells,
    mesh: &NavMesh,
    p: Vec2,
    reach: f32,
    limit: f32,
    scratch: &'a mut Vec<u32>,
    mesh_scratch: &mut Vec<usize>,
) -> (f32, &'a [u32]) {
    if let Some((bound, list)) = cells.near(p, reach) {
        return (bound, if bound >= limit { &[] } else { list });
    }
    let r = f64::from(reach);
    let q = to_point(p);
    mesh.walls_near(q - Point::new(r, r), q + Point::new(r, r), mesh_scratch);
    scratch.clear();
    scratch.extend(mesh_scratch.iter().map(|&w| w as u32));
    (0.0, scratch)
}

#[cfg(test)]
mod tests {
    use parry2d::math::Pose;
    use parry2d::query::details::contact_ball_ball;

    use super::*;

    #[test]
    fn disc_overlap_is_parrys_ball_contact_depth_to_the_bit() {
        let mut k = 12_345u32;
        let mut next = || {
            k = k.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (k >> 8) as f32 / (1u32 << 24) as f32
        };
        let mut overlapping = 0;
        for _ in 0..100_000 {
            let p1 = Vec2::new(next() * 4.0 - 2.0, next() * 4.0 - 2.0) + Vec2::new(100.0, 50.0);
            let p2 = Vec2::new(next() * 4.0 - 2.0, next() * 4.0 - 2.0) + Vec2::new(100.0, 50.0);
            let (r1, r2) = (next() * 1.5, next() * 1.5);
            let rel = p2 - p1;
            let parry = contact_ball_ball(
                &Pose::translation(rel.x, rel.y),
                &Ball::new(r1),
                &Ball::new(r2),
                0.0,
            )
            .map_or(0.0, |c| (-c.dist).max(0.0));
            let ours = disc_overlap(p1, r1, p2, r2);
            assert_eq!(ours.to_bits(), parry.to_bits(), "{p1:?} {r1} {p2:?} {r2}");
            overlapping += usize::from(ours > 0.0);
        }
        assert!(
            overlapping > 10_000,
            "too few overlapping pairs: {overlapping}"
        );
    }
}
