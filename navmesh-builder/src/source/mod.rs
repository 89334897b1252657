//! Map sources: everything the builder reads, parsed into walkable [`Region`]s.
//!
//! Each parser reports errors with the line (and, where it helps, column or vertex index)
//! of the offending input. Parsing checks syntax and the shape of the data; geometric
//! validity (crossings, holes outside their ring, ...) is the next stage's job
//! ([`crate::validate`]).

pub mod grid;
pub mod polygon;

use navmesh::Point;

/// One connected walkable area: an outer boundary and the obstacles cut out of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    /// The outer boundary ring, first point not repeated.
    pub outer: Vec<Point>,
    /// Obstacle rings inside `outer`, first point not repeated.
    pub holes: Vec<Vec<Point>>,
}

/// A parsed map: the walkable regions and where they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct MapInput {
    /// A short name for the source (usually the file name), stored in the navmesh file.
    pub name: String,
    /// The walkable regions, in map units.
    pub regions: Vec<Region>,
    /// The walkable area the source itself claims, when it knows it exactly (a grid map
    /// knows its number of passable cells). Tests compare the mesh against it.
    pub known_area: Option<f64>,
}
