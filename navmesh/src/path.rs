//! Path queries: find_path (placeholder; being written).

use crate::geom::Point;
use crate::mesh::NavMesh;

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
    /// Nodes taken from the open list and expanded.
    pub expanded: usize,
    /// Nodes pushed on the open list.
    pub generated: usize,
}

/// A reusable path query: holds the search's scratch (open list, node pool) so that
/// queries allocate nothing once warm. One per thread; the mesh is passed to each call.
#[derive(Debug, Default)]
pub struct NavMeshQuery {
    stats: SearchStats,
}

impl NavMeshQuery {
    /// An empty query object.
    pub fn new() -> NavMeshQuery {
        NavMeshQuery::default()
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
        let _ = (mesh, start, goal, radius, out);
        Err(PathError::Unreachable)
    }
}
