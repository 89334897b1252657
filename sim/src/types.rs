//! The world's vocabulary: ids, configuration, inputs and the per-tick output.

use std::fmt;
use std::time::Duration;

use parry2d::math::Vector;

/// A 2D vector in metres (parry2d's `f32` vector).
pub type Vec2 = Vector;

/// A world tick number (20 per simulated second).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tick(pub u64);

/// An entity, addressed by slot and generation: a despawned entity's id never names the
/// entity that later reuses its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntityId {
    /// Slot in the entity set.
    pub index: u32,
    /// Generation of the slot when this entity was spawned.
    pub generation: u32,
}

impl fmt::Display for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}v{}", self.index, self.generation)
    }
}

/// What drives an entity.
#[derive(Clone, Debug, PartialEq)]
pub enum Brain {
    /// Stands still unless given inputs (player characters use this).
    Idle,
    /// Walks to random reachable points on its island, one after another. One that makes
    /// no progress for half the stuck time gives its goal up and draws the next from the
    /// points that turn away from it (at the side of a crowd, away from the crowd's middle)
    /// and lie in sight, preferring those at least 10 m off whose straight way meets no jam
    /// (the congestion costs) within 40 m.
    Wander,
    /// Walks a loop of points.
    Patrol(Vec<Vec2>),
    /// Walks to an entity (a player) and stays near it (the paper's figure 13).
    Gather(EntityId),
}

/// Whether an entity is an NPC or a player's character. Both are bodies alike; players
/// move only by inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Driven by its brain.
    Npc,
    /// Driven by a client's inputs.
    Player,
}

/// An entity's movement state, for figures and pictures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Motion {
    /// Not trying to move.
    #[default]
    Idle,
    /// Following its path.
    Moving,
    /// Waiting for its path request to be served.
    WaitingForPath,
    /// Deflecting around a contact (PAPER §2.2).
    Circling,
    /// Being pushed out of an overlap (PAPER §3.2).
    Repulsed,
}

/// One request to the world. The world validates every input: a request naming a missing
/// entity or a non-finite point is counted and ignored.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// Adds a body at `pos` (moved to the nearest walkable point when off the mesh).
    Spawn {
        /// NPC or player character.
        kind: Kind,
        /// Where.
        pos: Vec2,
        /// Body radius in metres.
        radius_m: f32,
        /// Walking speed in metres per second.
        speed_mps: f32,
        /// What drives it.
        brain: Brain,
    },
    /// Removes an entity.
    Despawn(EntityId),
    /// Walk to a point (the world finds the path).
    MoveTo(EntityId, Vec2),
    /// Walk in a direction until told otherwise (the world keeps the body out of walls).
    MoveInDirection(EntityId, Vec2),
    /// Stop moving.
    Stop(EntityId),
    /// Adds a ghost at `pos` (taken as given, even off the mesh): a body the world never
    /// moves, which every other body avoids as it avoids any body. A zone mirrors its
    /// neighbours' bodies near the border as ghosts, placing them every tick where their
    /// owner put them ([`Input::PlaceGhost`]). Orders to a ghost are invalid.
    SpawnGhost {
        /// What its owner has: NPC or player character (a player's character anticipates
        /// only players, and their ghosts).
        kind: Kind,
        /// Where.
        pos: Vec2,
        /// Body radius in metres.
        radius_m: f32,
        /// The fastest its owner moves it, metres per second: until it is placed again,
        /// bodies here keep clear of every place it can reach in a tick.
        speed_mps: f32,
    },
    /// Puts a ghost where its owner has it now; its velocity (what others anticipate) is
    /// its move since it was last placed, over one tick. Invalid for a body that is not a
    /// ghost.
    PlaceGhost(EntityId, Vec2),
    /// Adds a body taken from another world ([`crate::World::carry`]) as it was there: its
    /// path, goal, velocity and give-up count go on here (a zone taking over a body from
    /// its neighbour). Invalid when a number in it is not usable.
    Adopt(Box<crate::world::Carried>),
    /// Opens (`closed: false`) or closes a door from [`WorldConfig::doors`].
    SetDoor {
        /// Index into [`WorldConfig::doors`].
        door: usize,
        /// New state.
        closed: bool,
    },
}

/// World settings. [`WorldConfig::default`] gives the project's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldConfig {
    /// Node expansions the path queue may spend per tick, at least; requests beyond the
    /// budget wait.
    pub path_budget_per_tick: usize,
    /// Node expansions per tick for each live body: the budget is the larger of
    /// `path_budget_per_tick` and this times the number of bodies, so that the start-up
    /// burst (every NPC asking for its first path at once, a few hundred nodes each) drains
    /// in about the same time, 3 to 4 s, whatever the size of the world.
    pub path_budget_per_body: f32,
    /// Whether path requests may be answered through the mesh's corner graph (built when
    /// the world is created) instead of the search; the paths are the same. Off by default:
    /// on open maps such as den520d the search is the cheaper one per request, on corridor
    /// maps such as brc202d the corner graph is (see `NavMeshQuery::set_corner_graph`;
    /// the measurements are in `docs/benchmarks.md`).
    pub path_corner_graph: bool,
    /// Anticipation before contact (`world/anticipation.rs`): bodies walking to a goal bend
    /// their wanted velocity away from the collisions that the bodies ahead of them
    /// predict, before they touch. Off, bodies react only on contact (circling and
    /// repulsion), as before the rule existed.
    pub anticipation: bool,
    /// Congestion-aware paths (`world/congestion.rs`): once a simulated second, the bodies
    /// that crawl are counted per mesh triangle, and new paths pay for the triangles they
    /// enter, so they go round jams where the map has another way; bodies whose path leads
    /// into a jam ask for a detour. Players' paths stay the shortest ones. Off, all paths
    /// are the shortest ones.
    pub congestion_routing: bool,
    /// Congestion-aware paths: a body whose path leads into a jam asks for a detour at most
    /// once in this many seconds (it looks once a second, so values below 1 mean every
    /// look). More often gives up fewer goals in a packed crowd, for more path searches
    /// (measured in `docs/benchmarks.md`).
    pub detour_every_secs: f32,
    /// Circling: the first deflection and its widening step, degrees (PAPER §2.2: 10).
    pub circling_step_deg: f32,
    /// Circling: how far the heading drifts back toward the wanted one each tick (10°).
    pub circling_return_deg: f32,
    /// Repulsion: the fixed speed of the push-out velocity (PAPER §3.2), m/s.
    pub repulsion_speed_mps: f32,
    /// Distance at which a path corner (or the goal) counts as reached, metres.
    pub arrive_distance_m: f32,
    /// Extra distance, beyond the body's radius, that path corners keep from the wall
    /// corners they turn around where there is room, metres (project decision: see
    /// `World::widen_corners`).
    pub corner_margin_m: f32,
    /// A body with a goal that has not come closer to it for this long is stuck.
    pub stuck_after_secs: f32,
    /// Gather brains stop within this distance of their target's surface, metres.
    pub gather_distance_m: f32,
    /// Doors: wall segments that can open and close, as pairs of points.
    pub doors: Vec<(Vec2, Vec2)>,
    /// Doors closed at the start (one flag per door; missing flags mean open).
    pub doors_closed: Vec<bool>,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            path_budget_per_tick: 20_000,
            path_budget_per_body: 2.5,
            path_corner_graph: false,
            anticipation: true,
            congestion_routing: true,
            detour_every_secs: 5.0,
            circling_step_deg: 10.0,
            circling_return_deg: 10.0,
            repulsion_speed_mps: 1.0,
            arrive_distance_m: 0.25,
            corner_margin_m: 1.0,
            stuck_after_secs: 5.0,
            gather_distance_m: 1.0,
            doors: Vec::new(),
            doors_closed: Vec::new(),
        }
    }
}

/// Wall-clock time of each phase of one tick. The world reads no clock: the caller's
/// [`PhaseClock`] supplies the readings (all zero with [`NoClock`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseTimes {
    /// Applying inputs.
    pub inputs: Duration,
    /// NPC brains choosing goals.
    pub brains: Duration,
    /// Serving path requests within the budget.
    pub paths: Duration,
    /// Steering toward path corners.
    pub steering: Duration,
    /// Broad phase and contact tests.
    pub contacts: Duration,
    /// Circling avoidance (PAPER §2.2).
    pub circling: Duration,
    /// Repulsion unsticking (PAPER §3.2).
    pub repulsion: Duration,
    /// Integration, walls win, figures.
    pub integrate: Duration,
}

impl PhaseTimes {
    /// Sum of all phases.
    pub fn total(&self) -> Duration {
        self.inputs
            + self.brains
            + self.paths
            + self.steering
            + self.contacts
            + self.circling
            + self.repulsion
            + self.integrate
    }

    /// `(name, time)` per phase, in tick order.
    pub fn named(&self) -> [(&'static str, Duration); 8] {
        [
            ("inputs", self.inputs),
            ("brains", self.brains),
            ("paths", self.paths),
            ("steering", self.steering),
            ("contacts", self.contacts),
            ("circling", self.circling),
            ("repulsion", self.repulsion),
            ("integrate", self.integrate),
        ]
    }
}

/// A monotonic time source supplied by the caller, so the world itself reads no clock.
pub trait PhaseClock {
    /// Time since an arbitrary origin.
    fn now(&self) -> Duration;
}

/// A clock that always reads zero: phase times come out zero.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoClock;

impl PhaseClock for NoClock {
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

/// What one tick did, and the world's health figures after it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepOutput {
    /// The tick just simulated.
    pub tick: Tick,
    /// Entities spawned by this tick's inputs, in input order.
    pub spawned: Vec<EntityId>,
    /// For each of [`StepOutput::spawned`], the place in the tick's inputs of the input
    /// that spawned it (an input refused spawns nothing, so the two lists can be shorter
    /// than the spawning inputs).
    pub spawned_by: Vec<usize>,
    /// Inputs ignored as invalid (missing entity, non-finite numbers, unknown door).
    pub invalid_inputs: usize,
    /// Time per phase.
    pub phase_times: PhaseTimes,
    /// Path requests completed this tick.
    pub paths_served: usize,
    /// Path requests still queued (none is ever dropped).
    pub paths_waiting: usize,
    /// Path search nodes expanded this tick (the search's part of the path budget).
    pub path_nodes: usize,
    /// The longest any path request served this tick waited, or any still queued has
    /// waited so far, in ticks (from the tick it was queued).
    pub path_wait_ticks: u64,
    /// Deepest overlap between two bodies, as a fraction of the smaller radius.
    pub max_overlap: f32,
    /// 99th percentile over bodies of each body's deepest overlap (fraction of radius).
    pub p99_overlap: f32,
    /// Bodies whose disc reaches more than 1% of their radius into a wall or closed door.
    pub bodies_in_walls: usize,
    /// Bodies circling.
    pub circling: usize,
    /// Bodies being repulsed.
    pub repulsed: usize,
    /// Bodies with a goal that made no progress toward it for `stuck_after_secs`.
    pub stuck: usize,
    /// Bodies that reached their goal this tick.
    pub arrivals: usize,
    /// Wandering NPCs that gave up a goal this tick after no progress for half the stuck
    /// time (they pick another goal, so they are never counted stuck themselves).
    pub gave_up: usize,
    /// Mean over NPCs of the distance each moved this tick over the distance its walking
    /// speed would take it (0 to 1; 0 when there are none): how freely the crowd flows.
    pub mean_speed_ratio: f32,
    /// NPCs that moved less than [`CRAWL_RATIO`] of their walking speed this tick.
    pub crawling: usize,
    /// Pairs of bodies overlapping by more than 1% of the smaller radius after the tick.
    pub overlapping_pairs: usize,
}

/// An NPC moving slower than this fraction of its walking speed is crawling (see
/// [`StepOutput::crawling`]).
pub const CRAWL_RATIO: f32 = 0.1;
