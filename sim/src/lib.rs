//! sim: the 20 Hz world. NPCs and player characters are parry2d balls on a navmesh; each
//! tick moves them toward their goals with the paper's circling avoidance (PAPER §2.2) and
//! pushes overlapping bodies apart with its repulsion velocity (PAPER §3.2).
//!
//! Rules: deterministic (a seeded generator, ordered iteration; same seed and inputs give
//! the same [`World::state_hash`] every tick), no I/O, no clock (phase timings come from a
//! caller-supplied [`PhaseClock`]). The binary owns the clock and the network.
//!
//! Entry point: [`World::new`], then [`World::step`] once per tick with that tick's
//! [`Input`]s; the [`StepOutput`] carries timings and health figures. [`World::body`] and
//! [`World::bodies`] show the bodies as [`BodyView`]s.
//!
//! Layout: [`types`] is the vocabulary (ids, inputs, configuration, output); [`world`]
//! holds the [`World`] and lists the phases of its tick, one file each under `world/`,
//! next to the state they own: the generational body set (`world/bodies.rs`), the path
//! queue (`world/paths.rs`), the walls and doors (`world/obstacles.rs`), the tick's
//! contacts (`world/contacts.rs`). The broad-phase grid (`grid.rs`), the static wall
//! lists per cell (`walls.rs`) serve them; the seeded generator is [`navmesh::Rng`].

mod grid;
pub mod types;
mod walls;
pub mod world;

pub use types::{
    Brain, CRAWL_RATIO, EntityId, Input, Kind, Motion, NoClock, PhaseClock, PhaseTimes, StepOutput,
    Tick, Vec2, WorldConfig,
};
pub use world::{BodyDetail, BodyView, Carried, DT_SECS, MAX_RADIUS_M, World};
