//! The world and its tick. [`World::step`] runs one 50 ms tick as a short list of named
//! phases, one file each, in this order:
//!
//! 1. [`World::apply_inputs`] (`world/inputs.rs`): spawn, despawn, move orders, doors
//!    (invalid ones counted).
//! 2. [`World::run_brains`] (`world/brains.rs`): NPCs without a goal choose one (wander,
//!    patrol, gather).
//! 3. [`World::serve_paths`] (`world/paths.rs`): the path queue, sliced within a per-tick
//!    node budget that grows with the number of bodies. Requests beyond it wait for later
//!    ticks; none is dropped. Found paths keep their left-turn corners wide of the walls.
//!    First, once a second, the jams are priced into the search and bodies walking into
//!    one ask for a detour (`world/congestion.rs`).
//! 4. [`World::steer`] (`world/steering.rs`): each body's wanted velocity toward its next
//!    path corner (a corner counts as passed from the side), turned right ahead of
//!    oncoming bodies (keep right).
//! 5. [`World::find_contacts`] (`world/contacts.rs`): broad phase and the bodies already
//!    overlapping something.
//! 6. [`World::circle`] (`world/circling.rs`): predicted moves and PAPER §2.2 circling for
//!    blocked ones; a body walked into by an oncoming one circles to its right only.
//! 7. [`World::repulse`] (`world/repulsion.rs`): PAPER §3.2 repulsion for overlapping
//!    bodies.
//! 8. [`World::integrate`] (`world/integrate.rs`): walls win, positions move, figures are
//!    taken.
//!
//! [`World`] holds its state grouped by owner: the bodies in a generational set
//! (`world/bodies.rs`), the path requests in a queue with their search
//! (`world/paths.rs`), the walls and doors with their queries (`world/obstacles.rs`), the
//! tick's contacts (`world/contacts.rs`) and the circling phase's scratch
//! (`world/circling.rs`). Each phase's scratch lives in the file of its phase.

use std::sync::Arc;

use navmesh::{NavMesh, Point, Rng};

use crate::grid::BodyGrid;
use crate::types::{
    EntityId, Input, NoClock, PhaseClock, PhaseTimes, StepOutput, Tick, Vec2, WorldConfig,
};

mod anticipation;
mod bodies;
mod brains;
mod carry;
mod circling;
mod congestion;
mod contacts;
mod inputs;
mod inspect;
mod integrate;
mod obstacles;
mod paths;
mod repulsion;
mod steering;

use anticipation::AnticipationScratch;
use bodies::BodySet;
pub use bodies::BodyView;
pub use carry::Carried;
use circling::CirclingScratch;
use congestion::Congestion;
use contacts::Contacts;
pub use inspect::BodyDetail;
use obstacles::Obstacles;
use paths::PathQueue;

/// The fixed tick length: 20 ticks per simulated second.
pub const DT_SECS: f32 = 0.05;

/// The largest body radius the world takes, metres: a spawn, ghost or carried body with a
/// larger one is refused. The contact and neighbour searches reach as far as the largest
/// body in the world, so one vast body (from a bad spawn or a zone's frame) would make
/// every search cover the whole map for as long as the world runs.
pub const MAX_RADIUS_M: f32 = 10.0;

/// Overlap below this fraction of the radius is contact, not overlap (rounding).
const OVERLAP_TOLERANCE: f32 = 1e-3;

/// The simulated world: one map, its bodies, its doors and its path queue.
pub struct World {
    config: WorldConfig,
    mesh: Arc<NavMesh>,
    /// The world's seeded generator: wander goals.
    rng: Rng,
    tick: Tick,
    bodies: BodySet,
    paths: PathQueue,
    /// The broad phase: every slot's disc in a uniform grid (see [`World::survey`]).
    grid: BodyGrid,
    obstacles: Obstacles,
    contacts: Contacts,
    circling: CirclingScratch,
    anticipation: AnticipationScratch,
    /// Each slot's wanted velocity as steering set it toward its path, before keep-right
    /// and anticipation turn it (zero for empty slots): what keep-right reads of the
    /// others.
    intents: Vec<Vec2>,
    congestion: Congestion,
    /// The output of the tick being run.
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
    /// not built yet (see `NavMesh::prepare_point_queries`), so that the first path
    /// request does not stall a tick.
    pub fn new(config: WorldConfig, mesh: Arc<NavMesh>, seed: u64) -> World {
        if config.path_corner_graph {
            mesh.prepare_point_queries();
        }
        World {
            paths: PathQueue::new(config.path_corner_graph),
            obstacles: Obstacles::new(&mesh, &config.doors, &config.doors_closed),
            config,
            mesh,
            rng: Rng::new(seed),
            tick: Tick(0),
            bodies: BodySet::default(),
            grid: BodyGrid::default(),
            contacts: Contacts::default(),
            circling: CirclingScratch::default(),
            anticipation: AnticipationScratch::default(),
            intents: Vec::new(),
            congestion: Congestion::default(),
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

    /// A live entity, or `None` when `id` names none.
    pub fn body(&self, id: EntityId) -> Option<BodyView> {
        self.bodies.get(id).map(|b| b.view(id))
    }

    /// Every live entity, in id order.
    pub fn bodies(&self) -> impl Iterator<Item = BodyView> + '_ {
        self.bodies.iter().map(|(id, b)| b.view(id))
    }

    /// Where the NPCs that crawled in the last tick stand (moved less than
    /// [`CRAWL_RATIO`](crate::CRAWL_RATIO) of their walking speed), in id order: the jam
    /// picture's input.
    pub fn crawling(&self) -> impl Iterator<Item = Vec2> + '_ {
        self.bodies.iter().filter_map(|(_, b)| {
            (b.kind == crate::Kind::Npc && b.moved < crate::CRAWL_RATIO * b.speed * DT_SECS)
                .then_some(b.pos)
        })
    }

    /// The remaining path corners of an entity (its current position first).
    pub fn path_of(&self, id: EntityId) -> Vec<Vec2> {
        self.bodies.get(id).map_or_else(Vec::new, |b| {
            let mut v = vec![b.pos];
            if b.goal.is_some() {
                v.extend_from_slice(&b.path[b.corner.min(b.path.len())..]);
            }
            v
        })
    }

    /// Whether `id` is a ghost ([`Input::SpawnGhost`]); `false` for an unknown id.
    pub fn is_ghost(&self, id: EntityId) -> bool {
        self.bodies.get(id).is_some_and(|b| b.ghost)
    }

    /// Whether each door is closed.
    pub fn doors_closed(&self) -> &[bool] {
        self.obstacles.doors_closed()
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
        for (id, b) in self.bodies.iter() {
            eat(u64::from(id.index));
            eat(u64::from(id.generation));
            eat(u64::from(b.pos.x.to_bits()));
            eat(u64::from(b.pos.y.to_bits()));
            eat(b.motion as u64);
        }
        eat(self.rng.state());
        h
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

#[cfg(test)]
mod tests {
    use parry2d::math::Pose;
    use parry2d::query::details::contact_ball_ball;
    use parry2d::shape::Ball;

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
