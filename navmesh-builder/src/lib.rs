//! navmesh-builder: maps in, navmesh files out. It plays Recast's role: it turns a map
//! into a [`navmesh::NavMesh`] offline, and the runtime only ever loads the result.
//!
//! # Sources
//! - Polygon JSON (`.json`): walkable regions, each an outer ring and holes, in metres.
//!   The schema is documented in [`source::polygon`].
//! - Moving AI grid maps (`.map`): passable cells become walkable area, outlined along cell
//!   edges with collinear runs merged ([`source::grid`]).
//!
//! # Pipeline
//! Each stage is a public function, so every intermediate result can be inspected:
//! 1. parse ([`source::polygon::parse`], [`source::grid::parse`] +
//!    [`source::grid::trace_regions`]) → [`source::MapInput`];
//! 2. [`validate::validate`] → [`validate::Outline`] (finite coordinates, no crossing
//!    edges, holes inside their ring; rings touching at a shared vertex are legal);
//! 3. [`triangulate::triangulate`]: spade's constrained Delaunay triangulation with every
//!    outline edge as a constraint;
//! 4. [`triangulate::classify`]: faces inside the walkable area (odd winding);
//! 5. [`triangulate::refine`] (optional): spade's Delaunay refinement for `--min-angle` and
//!    `--max-area`;
//! 6. [`bake::bake`]: walkable faces → [`navmesh::NavMesh`] (neighbours, islands, walls).
//!
//! [`pipeline::build`] runs them in order and times each one; [`render::render_svg`] draws
//! a mesh ([`render::render_svg_with_paths`] with paths over it); [`scen::parse`] reads
//! Moving AI scenario files (batches of path queries); [`load::load_map`] is the one map
//! loader of every program (a navmesh file decoded, or a map built in memory). The `navmesh-builder` binary wraps
//! all of it (`build`, `info`, `render`, `query`, `bench`).

pub mod bake;
pub mod load;
pub mod pipeline;
pub mod render;
pub mod scen;
pub mod source;
pub mod triangulate;
pub mod validate;
