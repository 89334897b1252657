//! navmesh: the runtime navigation mesh, the part of the project that plays Detour's role.
//!
//! A [`NavMesh`] is immutable once built: vertices, counter-clockwise triangles, the
//! neighbour across each triangle edge (or a wall), an island id per triangle and the wall
//! edges. Meshes come from `navmesh-builder` as files in the format of [`mod@file`]; loading
//! checks every invariant, so code holding a `NavMesh` can trust it. Everything queries
//! need beyond that is derived from it (at construction, or on first use for the corner
//! graph and the area tables) and never stored in files.
//!
//! This crate does no I/O and reads no clock: [`file::encode`] and [`file::decode`] work on
//! bytes, and the caller reads and writes them. It never triangulates (no spade here). Its
//! randomness is the caller's: [`Rng`], the project's one seeded generator, is passed in.
//!
//! Entry points: [`file::decode`] to load, [`NavMesh::new`] to build from triangles,
//! [`NavMesh::locate`], [`NavMesh::raycast`] and [`NavMesh::nearest_point`] for point
//! queries, [`NavMesh::random_point`] and [`NavMesh::random_point_on_island`] for random
//! points uniform by area, and [`NavMeshQuery`] for paths (see [`path`] for the search and
//! its guarantees).
//!
//! Modules by concern: [`geom`] (points, the exact orientation predicate, distances to
//! segments), [`mesh`] (the mesh and its ids), [`mod@file`], [`locate`], [`walls`],
//! [`mod@raycast`], [`width`] (traversal widths for a radius), [`rng`], and [`path`] (a
//! directory: the query API and slicing, the search, corner-graph queries, clearance for a
//! radius). Internal: `corners` (the corner graph), `corridor` (its radius check),
//! `landmarks` and `bridges` (the search's heuristic and pruning), `random` (random points).

mod bridges;
mod corners;
mod corridor;
pub mod file;
pub mod geom;
mod landmarks;
pub mod locate;
pub mod mesh;
mod nearest;
mod random;
pub mod raycast;
pub mod rng;
pub mod walls;

pub use file::{DecodeError, decode, encode};
pub use geom::{Aabb, Point};
pub use locate::TriangleLocator;
pub use mesh::{BuildInfo, IslandId, MeshError, NavMesh, TriId, VertId, WallEdge};
pub use raycast::{RayEnd, Raycast, RaycastError, raycast};
pub use rng::Rng;
pub use walls::{WallGrid, WallHit};
pub mod path;
pub mod width;

pub use path::{NavMeshQuery, Path, PathError, SearchStats, SliceStatus};
