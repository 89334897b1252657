//! Triangulation stages: constrained Delaunay triangulation of the outline (spade), the
//! inside/outside classification of its faces, and optional Delaunay refinement.

use spade::handles::{FixedFaceHandle, InnerTag};
use spade::{
    AngleLimit, ConstrainedDelaunayTriangulation, Point2, RefinementParameters, Triangulation,
};

use crate::validate::Outline;

/// The triangulation type the builder works on.
pub type Cdt = ConstrainedDelaunayTriangulation<Point2<f64>>;

/// Why the outline could not be triangulated.
#[derive(Debug, thiserror::Error)]
pub enum TriangulateError {
    /// spade refused a vertex (coordinates out of its supported range).
    #[error("spade rejected the outline's vertices: {0:?}")]
    Insertion(spade::InsertionError),
    /// Two constraint edges intersect, which validation should have caught; reported rather
    /// than left to spade's panic.
    #[error(
        "outline edges intersect near ({x}, {y}): {count} constraint edges could not be inserted"
    )]
    ConflictingEdges {
        /// A point on the first conflicting edge.
        x: f64,
        /// A point on the first conflicting edge.
        y: f64,
        /// How many edges conflicted.
        count: usize,
    },
    /// The triangulation has no face inside the walkable area.
    #[error("the outline encloses no walkable triangle")]
    NothingInside,
}

/// Inserts every ring vertex and every ring edge as a constraint, in one bulk load.
pub fn triangulate(outline: &Outline) -> Result<Cdt, TriangulateError> {
    let vertex_count: usize = outline.rings.iter().map(Vec::len).sum();
    let mut vertices = Vec::with_capacity(vertex_count);
    let mut edges = Vec::with_capacity(vertex_count);
    for ring in &outline.rings {
        let first = vertices.len();
        for (i, p) in ring.iter().enumerate() {
            vertices.push(Point2::new(p.x, p.y));
            let next = if i + 1 == ring.len() {
                first
            } else {
                first + i + 1
            };
            edges.push([first + i, next]);
        }
    }
    // Rings that touch share a position; bulk loading keeps one vertex per position and
    // re-routes the edges, which is exactly the shared vertex we want. Conflicts can only come
    // from an outline validation let through, and become an error instead of a panic.
    let mut conflicts = Vec::new();
    let cdt = Cdt::try_bulk_load_cdt(vertices, edges, |e| conflicts.push(e))
        .map_err(TriangulateError::Insertion)?;
    if let Some(&[a, _]) = conflicts.first() {
        let p = cdt
            .vertices()
            .nth(a)
            .map(|v| v.position())
            .unwrap_or(Point2::new(f64::NAN, f64::NAN));
        return Err(TriangulateError::ConflictingEdges {
            x: p.x,
            y: p.y,
            count: conflicts.len(),
        });
    }
    Ok(cdt)
}

/// Which faces of a triangulation are walkable, indexed by spade's face index (index 0 is
/// the outer face and is never walkable).
#[derive(Clone, Debug)]
pub struct Classification {
    /// `inside[face.index()]`.
    pub inside: Vec<bool>,
    /// Number of walkable faces.
    pub inside_count: usize,
}

impl Classification {
    /// True when the inner face is walkable.
    pub fn is_inside(&self, face: FixedFaceHandle<InnerTag>) -> bool {
        self.inside[face.index()]
    }
}

/// Classifies faces by the odd-winding rule: a face is walkable when any path to it from
/// outside the convex hull crosses an odd number of outline edges. A breadth-first search
/// with 0/1 weights (crossing a constraint costs 1) finds the crossing count of every face in
/// linear time; with a valid outline every path gives the same parity.
pub fn classify(cdt: &Cdt) -> Result<Classification, TriangulateError> {
    let face_count = cdt.num_all_faces();
    let mut depth = vec![u32::MAX; face_count];
    let mut deque = std::collections::VecDeque::new();
    for edge in cdt.convex_hull() {
        // `convex_hull` yields edges with the outer face on their left; the inner face is
        // across.
        let inner = edge.rev().face();
        if let Some(face) = inner.as_inner() {
            let d = u32::from(edge.is_constraint_edge());
            let slot = &mut depth[face.index()];
            if d < *slot {
                *slot = d;
                if d == 0 {
                    deque.push_front(face.fix())
                } else {
                    deque.push_back(face.fix())
                }
            }
        }
    }
    while let Some(fixed) = deque.pop_front() {
        let face = cdt.face(fixed);
        let d = depth[fixed.index()];
        for edge in face.adjacent_edges() {
            let Some(next) = edge.rev().face().as_inner() else {
                continue;
            };
            let step = u32::from(edge.is_constraint_edge());
            let nd = d + step;
            let slot = &mut depth[next.index()];
            if nd < *slot {
                *slot = nd;
                if step == 0 {
                    deque.push_front(next.fix())
                } else {
                    deque.push_back(next.fix())
                }
            }
        }
    }
    let inside: Vec<bool> = depth.iter().map(|&d| d != u32::MAX && d % 2 == 1).collect();
    let inside_count = inside.iter().filter(|&&b| b).count();
    if inside_count == 0 {
        return Err(TriangulateError::NothingInside);
    }
    Ok(Classification {
        inside,
        inside_count,
    })
}

/// Delaunay refinement settings (`--min-angle`, `--max-area`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RefineParams {
    /// Smallest inner angle to aim for, in degrees (0 < angle <= 34).
    pub min_angle_deg: Option<f64>,
    /// Largest triangle area allowed, in square map units (> 0).
    pub max_area: Option<f64>,
}

/// Invalid refinement settings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RefineParamsError {
    /// The angle is not in (0, 34] degrees; above ~34 degrees refinement may not terminate.
    #[error("--min-angle must be greater than 0 and at most 34 degrees, got {0}")]
    MinAngle(f64),
    /// The area is not a positive finite number.
    #[error("--max-area must be a positive number, got {0}")]
    MaxArea(f64),
}

impl RefineParams {
    /// True when either limit is set.
    pub fn is_enabled(&self) -> bool {
        self.min_angle_deg.is_some() || self.max_area.is_some()
    }

    /// Checks the ranges.
    pub fn check(&self) -> Result<(), RefineParamsError> {
        if let Some(a) = self.min_angle_deg
            && !(a > 0.0 && a <= 34.0)
        {
            return Err(RefineParamsError::MinAngle(a));
        }
        if let Some(a) = self.max_area
            && !(a > 0.0 && a.is_finite())
        {
            return Err(RefineParamsError::MaxArea(a));
        }
        Ok(())
    }
}

/// What refinement did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefineReport {
    /// Vertices added (Steiner points).
    pub added_vertices: usize,
    /// False when spade ran out of its vertex budget before meeting every limit.
    pub complete: bool,
}

/// Refines the walkable part of the triangulation with spade's Ruppert/Chew refinement.
/// Outline edges may be split (the halves stay constraints, so the walkable area is
/// unchanged); faces outside the walkable area are left alone.
pub fn refine(cdt: &mut Cdt, params: &RefineParams) -> Result<RefineReport, RefineParamsError> {
    params.check()?;
    let before = cdt.num_vertices();
    let angle = AngleLimit::from_deg(params.min_angle_deg.unwrap_or(0.0));
    let mut spade_params = RefinementParameters::<f64>::new()
        .with_angle_limit(angle)
        .exclude_outer_faces(true);
    if let Some(area) = params.max_area {
        spade_params = spade_params.with_max_allowed_area(area);
    }
    let result = cdt.refine(spade_params);
    Ok(RefineReport {
        added_vertices: cdt.num_vertices() - before,
        complete: result.refinement_complete,
    })
}
