//! Validation of parsed map input: the geometric checks between parsing and triangulation.
//!
//! [`validate`] accepts a [`MapInput`] whose rings describe the walkable area unambiguously
//! under the triangulator's rule (walkable faces are those with odd winding parity over all
//! ring edges) and turns it into an [`Outline`]: rings with consecutive duplicate points
//! removed, outer rings counter-clockwise, holes clockwise, and the walkable area.
//!
//! Rejected, each with its own [`ValidationError`] variant naming the region, ring and vertex
//! (0-based, as given in the input ring):
//!
//! - a map without regions;
//! - a coordinate that is not finite, or whose magnitude exceeds [`MAX_COORDINATE`];
//! - a ring with fewer than 3 points once consecutive duplicates are removed, or with zero
//!   area (all points collinear);
//! - two edges that cross, overlap collinearly, or a vertex lying in the interior of an
//!   edge (a T-junction), across all rings of all regions, a ring against itself included;
//! - two rings (or one ring with itself) passing through a shared vertex and crossing there;
//! - a hole not inside its region's outer ring, a hole inside another hole of its region,
//!   and a region whose outer ring lies inside another region's walkable area.
//!
//! Rings may touch at a **shared vertex** (exactly the same coordinates in both rings, or
//! twice in one ring) as long as they do not cross there: meshes exported from games do
//! this, and so do grid maps whose cells touch only diagonally. A region may also lie inside
//! another region's hole (a courtyard enclosed by a building).
//!
//! Edge tests use a uniform grid over the map (cell size about the average edge length)
//! and test only pairs of edges sharing a cell, so validation stays near linear in the
//! number of edges. Containment uses crossing-number ray casts through the same grid.

use std::fmt;

use navmesh::Point;
use navmesh::geom::{orient, ring_signed_area};

use crate::source::MapInput;

/// The largest coordinate magnitude accepted. Spade's robust predicates need bounded input,
/// and no realistic map in metres comes near it.
pub const MAX_COORDINATE: f64 = 1e9;

/// Input that passed validation, ready for triangulation.
#[derive(Clone, Debug, PartialEq)]
pub struct Outline {
    /// The map's name, copied from the input.
    pub name: String,
    /// Every ring of every region: outers counter-clockwise (positive `ring_signed_area`),
    /// holes clockwise; consecutive duplicate points removed.
    ///
    /// Rings come in input order: each region's outer ring followed by its holes.
    pub rings: Vec<Vec<Point>>,
    /// Walkable area: sum of signed ring areas.
    pub area: f64,
}

/// Which ring of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RingKind {
    /// The region's outer boundary.
    Outer,
    /// The hole with this index in the region's list of holes.
    Hole(usize),
}

impl fmt::Display for RingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingKind::Outer => f.write_str("outer ring"),
            RingKind::Hole(i) => write!(f, "hole {i}"),
        }
    }
}

/// A ring of the input. Displays as `region 1, hole 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingRef {
    /// Index of the region in the input.
    pub region: usize,
    /// Which ring of the region.
    pub ring: RingKind,
}

impl fmt::Display for RingRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region {}, {}", self.region, self.ring)
    }
}

/// A vertex of the input. Displays as `region 1, hole 0, vertex 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VertexRef {
    /// Index of the region in the input.
    pub region: usize,
    /// Which ring of the region.
    pub ring: RingKind,
    /// Index of the point in the input ring (0-based, duplicates counted).
    pub vertex: usize,
}

impl fmt::Display for VertexRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "region {}, {}, vertex {}",
            self.region, self.ring, self.vertex
        )
    }
}

/// An edge of the input: from one point of a ring to the next distinct one. Displays as
/// `region 1, hole 0, edge from vertex 4 to vertex 5`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EdgeRef {
    /// Index of the region in the input.
    pub region: usize,
    /// Which ring of the region.
    pub ring: RingKind,
    /// Index of the edge's first point in the input ring.
    pub from: usize,
    /// Index of the edge's second point in the input ring (0 for the closing edge).
    pub to: usize,
}

impl fmt::Display for EdgeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "region {}, {}, edge from vertex {} to vertex {}",
            self.region, self.ring, self.from, self.to
        )
    }
}

/// Why a map failed validation. Every variant names the place in the input.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ValidationError {
    /// The map has no regions at all.
    #[error("the map has no regions")]
    NoRegions,
    /// A coordinate is NaN or infinite.
    #[error("{at}: coordinate is not finite")]
    NonFinite {
        /// The offending vertex.
        at: VertexRef,
    },
    /// A coordinate's magnitude exceeds [`MAX_COORDINATE`].
    #[error("{at}: coordinate {value} is out of range (magnitude above 1e9)")]
    OutOfRange {
        /// The offending vertex.
        at: VertexRef,
        /// The offending coordinate.
        value: f64,
    },
    /// A ring has fewer than 3 points once consecutive duplicates are removed.
    #[error("{ring}: ring has only {points} distinct points, at least 3 are needed")]
    TooFewPoints {
        /// The offending ring.
        ring: RingRef,
        /// Points left after removing consecutive duplicates.
        points: usize,
    },
    /// All points of a ring lie on one line.
    #[error("{ring}: ring has zero area (all points are collinear)")]
    ZeroArea {
        /// The offending ring.
        ring: RingRef,
    },
    /// Two edges cross at a point interior to both.
    #[error("{a} crosses {b}")]
    EdgesCross {
        /// The first edge.
        a: EdgeRef,
        /// The second edge.
        b: EdgeRef,
    },
    /// Two collinear edges overlap along a stretch of positive length.
    #[error("{a} overlaps {b} (collinear edges)")]
    EdgesOverlap {
        /// The first edge.
        a: EdgeRef,
        /// The second edge.
        b: EdgeRef,
    },
    /// A vertex lies in the interior of an edge (a T-junction); rings may only touch at a
    /// vertex both of them have.
    #[error("{vertex} lies in the interior of {edge} (T-junction)")]
    VertexOnEdge {
        /// The vertex.
        vertex: VertexRef,
        /// The edge it lies on.
        edge: EdgeRef,
    },
    /// Two rings (or two passes of one ring) meet at a shared vertex and cross each other
    /// there instead of merely touching.
    #[error("{a} and {b}: the rings cross at this shared vertex")]
    CrossAtVertex {
        /// One occurrence of the shared vertex.
        a: VertexRef,
        /// The other occurrence.
        b: VertexRef,
    },
    /// A hole does not lie inside its region's outer ring.
    #[error("{hole}: hole is not inside the region's outer ring")]
    HoleOutside {
        /// The offending hole.
        hole: RingRef,
    },
    /// A hole lies inside another hole of the same region.
    #[error("{hole}: hole lies inside hole {outer} of the same region")]
    NestedHole {
        /// The inner hole.
        hole: RingRef,
        /// Index of the enclosing hole in the same region.
        outer: usize,
    },
    /// A region's outer ring lies inside another region's walkable area (the regions
    /// overlap). A region inside another region's hole is fine.
    #[error("region {region}: outer ring lies inside the walkable area of region {other}")]
    RegionsOverlap {
        /// The region that lies inside.
        region: usize,
        /// The region whose walkable area contains it.
        other: usize,
    },
}

/// Checks `input` and returns its normalised outline.
///
/// The per-ring checks (coordinates, point count, area) run first, ring by ring in input
/// order; then the edge tests, the shared vertices and finally containment. The first failure
/// is returned.
pub fn validate(input: &MapInput) -> Result<Outline, ValidationError> {
    if input.regions.is_empty() {
        return Err(ValidationError::NoRegions);
    }
    let mut rings = Vec::new();
    // Ring index of each region's outer ring, plus one past the last ring.
    let mut region_start = Vec::with_capacity(input.regions.len() + 1);
    for (r, region) in input.regions.iter().enumerate() {
        region_start.push(rings.len());
        rings.push(Ring::new(
            RingRef {
                region: r,
                ring: RingKind::Outer,
            },
            &region.outer,
        )?);
        for (h, hole) in region.holes.iter().enumerate() {
            rings.push(Ring::new(
                RingRef {
                    region: r,
                    ring: RingKind::Hole(h),
                },
                hole,
            )?);
        }
    }
    region_start.push(rings.len());

    let grid = SegmentGrid::new(&rings);
    let shared = grid.check_edges(&rings)?;
    grid.check_shared_vertices(&rings, shared)?;
    check_nesting(&rings, &region_start, &grid)?;

    let mut area = 0.0;
    let mut out = Vec::with_capacity(rings.len());
    for ring in rings {
        let mut points = ring.points;
        let signed = ring_signed_area(&points);
        let want_positive = ring.at.ring == RingKind::Outer;
        if (signed > 0.0) != want_positive {
            points.reverse();
        }
        area += ring_signed_area(&points);
        out.push(points);
    }
    Ok(Outline {
        name: input.name.clone(),
        rings: out,
        area,
    })
}

/// One input ring after the per-ring checks.
struct Ring {
    at: RingRef,
    /// Points with consecutive duplicates (and a closing repeat of the first) removed.
    points: Vec<Point>,
    /// Index in the input ring of each kept point; empty when no point was removed before the
    /// last kept one (the common case: indices are unchanged).
    input_index: Vec<usize>,
}

impl Ring {
    fn new(at: RingRef, input: &[Point]) -> Result<Ring, ValidationError> {
        let vertex = |i| VertexRef {
            region: at.region,
            ring: at.ring,
            vertex: i,
        };
        let mut points: Vec<Point> = Vec::with_capacity(input.len());
        let mut input_index = Vec::new();
        for (i, &p) in input.iter().enumerate() {
            if !p.is_finite() {
                return Err(ValidationError::NonFinite { at: vertex(i) });
            }
            for value in [p.x, p.y] {
                if value.abs() > MAX_COORDINATE {
                    return Err(ValidationError::OutOfRange {
                        at: vertex(i),
                        value,
                    });
                }
            }
            if points.last() == Some(&p) {
                if input_index.is_empty() {
                    input_index.extend(0..points.len());
                }
            } else {
                points.push(p);
                if !input_index.is_empty() {
                    input_index.push(i);
                }
            }
        }
        while points.len() > 1 && points.first() == points.last() {
            points.pop();
            input_index.pop();
        }
        if points.len() < 3 {
            return Err(ValidationError::TooFewPoints {
                ring: at,
                points: points.len(),
            });
        }
        let (p0, p1) = (points[0], points[1]);
        if points[2..].iter().all(|&p| orient(p0, p1, p) == 0.0) {
            return Err(ValidationError::ZeroArea { ring: at });
        }
        Ok(Ring {
            at,
            points,
            input_index,
        })
    }

    fn vertex(&self, i: usize) -> VertexRef {
        VertexRef {
            region: self.at.region,
            ring: self.at.ring,
            vertex: self.input(i),
        }
    }

    /// Index in the input ring of point `i`.
    fn input(&self, i: usize) -> usize {
        self.input_index.get(i).copied().unwrap_or(i)
    }

    fn edge(&self, i: usize) -> EdgeRef {
        let next = (i + 1) % self.points.len();
        EdgeRef {
            region: self.at.region,
            ring: self.at.ring,
            from: self.input(i),
            to: self.input(next),
        }
    }
}

/// Edge `index` of ring `ring`, from `a` to `b`, with the range of grid cells its bounding box
/// covers.
#[derive(Clone, Copy, Debug)]
struct Segment {
    a: Point,
    b: Point,
    ring: u32,
    index: u32,
    col0: u32,
    col1: u32,
    row0: u32,
    row1: u32,
}

/// A uniform grid over the map bounds; each cell lists the segments whose bounding box
/// overlaps it (compressed rows: `cell_start` indexes `items`).
struct SegmentGrid {
    origin: Point,
    inv_cell: f64,
    cols: usize,
    rows: usize,
    cell_start: Vec<u32>,
    items: Vec<u32>,
    segments: Vec<Segment>,
}

/// How two edges meet.
enum Contact {
    /// Not at all, or at a shared endpoint.
    Clear,
    /// At a point interior to both.
    Cross,
    /// Along a collinear stretch of positive length.
    Overlap,
    /// This endpoint lies in the interior of the other edge.
    OnEdge(Endpoint),
}

/// Which endpoint of a pair of edges `a b`, `c d`.
#[derive(Clone, Copy)]
enum Endpoint {
    A,
    B,
    C,
    D,
}

impl SegmentGrid {
    fn new(rings: &[Ring]) -> SegmentGrid {
        let mut min = Point::new(f64::INFINITY, f64::INFINITY);
        let mut max = Point::new(f64::NEG_INFINITY, f64::NEG_INFINITY);
        let mut total_length = 0.0;
        let mut count = 0usize;
        for ring in rings {
            let n = ring.points.len();
            for (i, &p) in ring.points.iter().enumerate() {
                min = Point::new(min.x.min(p.x), min.y.min(p.y));
                max = Point::new(max.x.max(p.x), max.y.max(p.y));
                let d = ring.points[(i + 1) % n] - p;
                total_length += d.dot(d).sqrt();
            }
            count += n;
        }
        let size = max - min;
        // About the average edge length, but never more cells than a few per segment.
        let max_cells = (4 * count).max(64) as f64;
        let mut cell = (total_length / count.max(1) as f64).max(size.x.max(size.y) / 65536.0);
        if !cell.is_finite() || cell <= 0.0 {
            cell = 1.0;
        }
        let dims = |cell: f64| ((size.x / cell).floor() + 1.0, (size.y / cell).floor() + 1.0);
        while {
            let (c, r) = dims(cell);
            c * r > max_cells
        } {
            cell *= 1.25;
        }
        let (cols, rows) = dims(cell);
        let mut grid = SegmentGrid {
            origin: min,
            inv_cell: 1.0 / cell,
            cols: cols as usize,
            rows: rows as usize,
            cell_start: Vec::new(),
            items: Vec::new(),
            segments: Vec::with_capacity(count),
        };
        for (r, ring) in rings.iter().enumerate() {
            let n = ring.points.len();
            for i in 0..n {
                let (a, b) = (ring.points[i], ring.points[(i + 1) % n]);
                let (col0, row0) = grid.cell_of(Point::new(a.x.min(b.x), a.y.min(b.y)));
                let (col1, row1) = grid.cell_of(Point::new(a.x.max(b.x), a.y.max(b.y)));
                grid.segments.push(Segment {
                    a,
                    b,
                    ring: r as u32,
                    index: i as u32,
                    col0: col0 as u32,
                    col1: col1 as u32,
                    row0: row0 as u32,
                    row1: row1 as u32,
                });
            }
        }
        // Two passes: count per cell, then fill in segment order.
        let cols = grid.cols;
        let mut start = vec![0u32; grid.cols * grid.rows + 1];
        for s in &grid.segments {
            for row in s.row0 as usize..=s.row1 as usize {
                for col in s.col0 as usize..=s.col1 as usize {
                    start[row * cols + col + 1] += 1;
                }
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut fill = start.clone();
        let mut items = vec![0u32; start.last().copied().unwrap_or(0) as usize];
        for (id, s) in grid.segments.iter().enumerate() {
            for row in s.row0 as usize..=s.row1 as usize {
                for col in s.col0 as usize..=s.col1 as usize {
                    let slot = &mut fill[row * cols + col];
                    items[*slot as usize] = id as u32;
                    *slot += 1;
                }
            }
        }
        grid.cell_start = start;
        grid.items = items;
        grid
    }

    /// The cell containing `p` (monotone in each coordinate, clamped to the grid).
    fn cell_of(&self, p: Point) -> (usize, usize) {
        let clamp = |v: f64, n: usize| if v > 0.0 { (v as usize).min(n - 1) } else { 0 };
        (
            clamp(((p.x - self.origin.x) * self.inv_cell).floor(), self.cols),
            clamp(((p.y - self.origin.y) * self.inv_cell).floor(), self.rows),
        )
    }

    fn cell(&self, col: usize, row: usize) -> &[u32] {
        let i = row * self.cols + col;
        &self.items[self.cell_start[i] as usize..self.cell_start[i + 1] as usize]
    }

    /// Tests every pair of edges whose bounding boxes share a cell (each pair once, in the
    /// first cell both cover). Returns the points where two edges start: vertices passed
    /// more than once, candidates for rings crossing at a vertex.
    fn check_edges(&self, rings: &[Ring]) -> Result<Vec<Point>, ValidationError> {
        let mut shared = Vec::new();
        for row in 0..self.rows {
            for col in 0..self.cols {
                let cell = self.cell(col, row);
                for (k, &i) in cell.iter().enumerate() {
                    let s = &self.segments[i as usize];
                    for &j in &cell[k + 1..] {
                        let t = &self.segments[j as usize];
                        if col != s.col0.max(t.col0) as usize || row != s.row0.max(t.row0) as usize
                        {
                            continue;
                        }
                        match classify(s.a, s.b, t.a, t.b) {
                            // Two passes through one point, each starting an edge there
                            // (consecutive edges of a ring never start at one point).
                            Contact::Clear if s.a == t.a => shared.push(s.a),
                            Contact::Clear => {}
                            contact => return Err(conflict(rings, s, t, contact)),
                        }
                    }
                }
            }
        }
        Ok(shared)
    }

    /// At every vertex shared by several rings (or passed twice by one ring), checks that the
    /// rings only touch: going around the vertex, the two edges of each pass must not
    /// interleave with those of another pass.
    fn check_shared_vertices(
        &self,
        rings: &[Ring],
        mut points: Vec<Point>,
    ) -> Result<(), ValidationError> {
        // Adding 0.0 turns -0.0 into 0.0, so equal points have equal bits.
        let key = |p: &Point| ((p.x + 0.0).to_bits(), (p.y + 0.0).to_bits());
        points.sort_unstable_by_key(key);
        points.dedup_by_key(|p| key(p));
        let mut passes: Vec<(usize, usize)> = Vec::new();
        let mut around: Vec<(f64, usize)> = Vec::new();
        let mut stack: Vec<usize> = Vec::new();
        for v in points {
            // Each pass through `v` starts exactly one edge at `v`, and every such edge is
            // listed in `v`'s cell.
            let (col, row) = self.cell_of(v);
            passes.clear();
            passes.extend(self.cell(col, row).iter().filter_map(|&id| {
                let s = &self.segments[id as usize];
                (s.a == v).then_some((s.ring as usize, s.index as usize))
            }));
            if passes.len() < 2 {
                continue;
            }
            around.clear();
            for (k, &(r, i)) in passes.iter().enumerate() {
                let pts = &rings[r].points;
                let n = pts.len();
                for q in [pts[(i + n - 1) % n], pts[(i + 1) % n]] {
                    around.push((pseudo_angle(q - v), k));
                }
            }
            around.sort_by(|x, y| x.0.total_cmp(&y.0));
            // The passes are pairwise non-crossing exactly when their edges nest like
            // parentheses around the vertex.
            stack.clear();
            for &(_, k) in &around {
                if stack.last() == Some(&k) {
                    stack.pop();
                } else {
                    stack.push(k);
                }
            }
            if stack.is_empty() {
                continue;
            }
            let position = |k: usize| {
                let mut at = around
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.1 == k)
                    .map(|(i, _)| i);
                let first = at.next().unwrap_or(0);
                (first, at.next().unwrap_or(first))
            };
            for k in 0..passes.len() {
                let (k0, k1) = position(k);
                for m in k + 1..passes.len() {
                    let (m0, m1) = position(m);
                    let inside = |p: usize| k0 < p && p < k1;
                    if inside(m0) != inside(m1) {
                        let vertex = |(r, i): (usize, usize)| rings[r].vertex(i);
                        return Err(ValidationError::CrossAtVertex {
                            a: vertex(passes[k]),
                            b: vertex(passes[m]),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Pushes to `out` the ring of every edge that a ray from `p` crosses, among rings for
    /// which `keep` holds. The ray goes to the nearest side of the grid, along a row or a
    /// column; an edge covering several cells is tested in the first of them the ray meets.
    /// The number of crossings with a ring is odd exactly when `p` lies inside it.
    fn ray_crossings(&self, p: Point, keep: impl Fn(u32) -> bool, out: &mut Vec<u32>) {
        let (col, row) = self.cell_of(p);
        let right = self.cols - 1 - col;
        let up = self.rows - 1 - row;
        let shortest = right.min(col).min(up).min(row);
        let mut test = |c: usize,
                        r: usize,
                        first: &dyn Fn(&Segment) -> bool,
                        vertical: bool,
                        positive: bool| {
            for &id in self.cell(c, r) {
                let s = &self.segments[id as usize];
                if first(s) && keep(s.ring) && ray_crosses(s.a, s.b, p, vertical, positive) {
                    out.push(s.ring);
                }
            }
        };
        if shortest == right {
            for c in col..self.cols {
                test(c, row, &|s| c == (s.col0 as usize).max(col), false, true);
            }
        } else if shortest == col {
            for c in (0..=col).rev() {
                test(c, row, &|s| c == (s.col1 as usize).min(col), false, false);
            }
        } else if shortest == up {
            for r in row..self.rows {
                test(col, r, &|s| r == (s.row0 as usize).max(row), true, true);
            }
        } else {
            for r in (0..=row).rev() {
                test(col, r, &|s| r == (s.row1 as usize).min(row), true, false);
            }
        }
    }
}

/// The error for edges `s` and `t` meeting as `contact` (not [`Contact::Clear`]); the edge
/// first in input order is named first.
fn conflict(rings: &[Ring], s: &Segment, t: &Segment, contact: Contact) -> ValidationError {
    let edge = |seg: &Segment| rings[seg.ring as usize].edge(seg.index as usize);
    let vertex = |seg: &Segment, end: usize| {
        let ring = &rings[seg.ring as usize];
        ring.vertex((seg.index as usize + end) % ring.points.len())
    };
    let (a, b) = if (s.ring, s.index) <= (t.ring, t.index) {
        (edge(s), edge(t))
    } else {
        (edge(t), edge(s))
    };
    match contact {
        Contact::Cross | Contact::Clear => ValidationError::EdgesCross { a, b },
        Contact::Overlap => ValidationError::EdgesOverlap { a, b },
        Contact::OnEdge(end) => {
            let (vertex, edge) = match end {
                Endpoint::A => (vertex(s, 0), edge(t)),
                Endpoint::B => (vertex(s, 1), edge(t)),
                Endpoint::C => (vertex(t, 0), edge(s)),
                Endpoint::D => (vertex(t, 1), edge(s)),
            };
            ValidationError::VertexOnEdge { vertex, edge }
        }
    }
}

/// Classifies how edges `a b` and `c d` (both of positive length) meet.
fn classify(a: Point, b: Point, c: Point, d: Point) -> Contact {
    if a.x.max(b.x) < c.x.min(d.x)
        || c.x.max(d.x) < a.x.min(b.x)
        || a.y.max(b.y) < c.y.min(d.y)
        || c.y.max(d.y) < a.y.min(b.y)
    {
        return Contact::Clear;
    }
    let o1 = orient(a, b, c);
    let o2 = orient(a, b, d);
    if o1 == 0.0 && o2 == 0.0 {
        let (s0, s1, t0, t1) = if (b.x - a.x).abs() >= (b.y - a.y).abs() {
            (a.x, b.x, c.x, d.x)
        } else {
            (a.y, b.y, c.y, d.y)
        };
        let lo = s0.min(s1).max(t0.min(t1));
        let hi = s0.max(s1).min(t0.max(t1));
        return if lo < hi {
            Contact::Overlap
        } else {
            Contact::Clear
        };
    }
    let o3 = orient(c, d, a);
    let o4 = orient(c, d, b);
    let opposite = |u: f64, v: f64| (u > 0.0 && v < 0.0) || (u < 0.0 && v > 0.0);
    if opposite(o1, o2) && opposite(o3, o4) {
        return Contact::Cross;
    }
    if o1 == 0.0 && strictly_between(c, a, b) {
        return Contact::OnEdge(Endpoint::C);
    }
    if o2 == 0.0 && strictly_between(d, a, b) {
        return Contact::OnEdge(Endpoint::D);
    }
    if o3 == 0.0 && strictly_between(a, c, d) {
        return Contact::OnEdge(Endpoint::A);
    }
    if o4 == 0.0 && strictly_between(b, c, d) {
        return Contact::OnEdge(Endpoint::B);
    }
    Contact::Clear
}

/// For `p` on the line through `a b`: true when `p` lies strictly between `a` and `b`.
fn strictly_between(p: Point, a: Point, b: Point) -> bool {
    if (b.x - a.x).abs() >= (b.y - a.y).abs() {
        a.x.min(b.x) < p.x && p.x < a.x.max(b.x)
    } else {
        a.y.min(b.y) < p.y && p.y < a.y.max(b.y)
    }
}

/// True when edge `a b` crosses the axis-parallel ray from `p`: along +x / -x (`vertical`
/// false) or +y / -y (`vertical` true), `positive` choosing the sign. Half-open in the
/// perpendicular coordinate, so a ray through a vertex counts it once.
fn ray_crosses(a: Point, b: Point, p: Point, vertical: bool, positive: bool) -> bool {
    let swap = |q: Point| if vertical { Point::new(q.y, q.x) } else { q };
    let (a, b, p) = (swap(a), swap(b), swap(p));
    if (a.y > p.y) == (b.y > p.y) {
        return false;
    }
    // orient = (b.y - a.y) * (crossing x - p.x), whatever the handedness.
    let o = orient(a, b, p);
    if o == 0.0 {
        return false;
    }
    ((o > 0.0) == (b.y > a.y)) == positive
}

/// A point on a ring's first edge (its midpoint): unlike a vertex, it never lies on another
/// ring once edges are known not to cross, overlap or touch.
fn probe(ring: &Ring) -> Point {
    (ring.points[0] + ring.points[1]) * 0.5
}

/// Holes inside their outer ring and not inside each other; regions not inside each other's
/// walkable area. Runs after the edge checks, so any two rings are nested or disjoint and one
/// probe point per ring decides.
fn check_nesting(
    rings: &[Ring],
    region_start: &[usize],
    grid: &SegmentGrid,
) -> Result<(), ValidationError> {
    let probes: Vec<Point> = rings.iter().map(probe).collect();
    // The first error by ring order; hole errors before overlapping regions.
    let mut hole_error: Option<(usize, ValidationError)> = None;
    let mut region_error: Option<(usize, ValidationError)> = None;
    let keep_first = |slot: &mut Option<(usize, ValidationError)>, ring, error| {
        if slot.as_ref().is_none_or(|(first, _)| ring < *first) {
            *slot = Some((ring, error));
        }
    };
    grid.for_each_containing(&probes, |ring, inside| {
        let at = rings[ring].at;
        let own = region_start[at.region]..region_start[at.region + 1];
        if at.ring == RingKind::Outer {
            // Inside a region's walkable area: inside an odd number of its rings.
            let other = inside
                .iter()
                .map(|&r| rings[r as usize].at.region)
                .filter(|&region| region != at.region)
                .collect::<Vec<_>>()
                .chunk_by(|x, y| x == y)
                .find(|run| run.len() % 2 == 1)
                .map(|run| run[0]);
            if let Some(other) = other {
                let error = ValidationError::RegionsOverlap {
                    region: at.region,
                    other,
                };
                keep_first(&mut region_error, ring, error);
            }
        } else {
            let mut same = inside
                .iter()
                .map(|&r| r as usize)
                .filter(|r| own.contains(r));
            let error = match (same.next(), same.next()) {
                (Some(outer), None) if outer == own.start => return,
                (Some(outer), Some(hole)) if outer == own.start => ValidationError::NestedHole {
                    hole: at,
                    outer: match rings[hole].at.ring {
                        RingKind::Hole(i) => i,
                        RingKind::Outer => 0,
                    },
                },
                _ => ValidationError::HoleOutside { hole: at },
            };
            keep_first(&mut hole_error, ring, error);
        }
    });
    match hole_error.or(region_error) {
        Some((_, error)) => Err(error),
        None => Ok(()),
    }
}

/// Where in its cell the reference point of a cell lies, as fractions of the cell size:
/// unequal and away from the cell's centre so that reference points of grid-aligned maps
/// rarely fall on an edge (which only costs a slower fallback).
const REFERENCE: (f64, f64) = (0.5, 0.4375);

impl SegmentGrid {
    fn reference(&self, col: usize, row: usize) -> Point {
        let cell = 1.0 / self.inv_cell;
        Point::new(
            self.origin.x + (col as f64 + REFERENCE.0) * cell,
            self.origin.y + (row as f64 + REFERENCE.1) * cell,
        )
    }

    /// Calls `f(i, rings)` for each probe point `probes[i]` (a point on ring `i`) with the
    /// sorted list of the other rings containing it.
    ///
    /// Containment is the parity of crossings of a ray towards +x (half-open rules, so
    /// consistent even for points on an edge). Each row of cells holding probes is swept
    /// from the right: the rings containing each cell's reference point follow from the
    /// previous one's by the edges crossed in between. A probe then differs from its cell's
    /// reference point by the edges of that cell crossing an L-shaped path between them.
    /// When that path's corner or the reference point lies on an edge, the +x and +y parities
    /// may disagree there, and the probe falls back to a ray cast through the grid.
    fn for_each_containing(&self, probes: &[Point], mut f: impl FnMut(usize, &[u32])) {
        let mut order: Vec<(usize, usize, usize)> = probes
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let (col, row) = self.cell_of(p);
                (row, col, i)
            })
            .collect();
        order.sort_unstable();
        let mut inside: Vec<u32> = Vec::new();
        let mut scratch: Vec<u32> = Vec::new();
        for row_probes in order.chunk_by(|a, b| a.0 == b.0) {
            let row = row_probes[0].0;
            let min_col = row_probes[0].1;
            let mut pending = row_probes.iter().rev().peekable();
            inside.clear();
            let mut previous: Option<Point> = None;
            for col in (min_col..self.cols).rev() {
                let reference = self.reference(col, row);
                let crosses = |s: &Segment| {
                    let here = ray_crosses(s.a, s.b, reference, false, true);
                    let before = previous.is_some_and(|q| ray_crosses(s.a, s.b, q, false, true));
                    here != before
                };
                for &id in self.cell(col, row) {
                    let s = &self.segments[id as usize];
                    if crosses(s) {
                        toggle(&mut inside, s.ring);
                    }
                }
                if col + 1 < self.cols {
                    for &id in self.cell(col + 1, row) {
                        let s = &self.segments[id as usize];
                        if s.col0 as usize > col && crosses(s) {
                            toggle(&mut inside, s.ring);
                        }
                    }
                }
                previous = Some(reference);
                while let Some(&(_, _, i)) = pending.next_if(|e| e.1 == col) {
                    scratch.clear();
                    if !self.probe_from_reference(
                        probes[i],
                        i as u32,
                        col,
                        row,
                        &inside,
                        &mut scratch,
                    ) {
                        scratch.clear();
                        self.ray_crossings(probes[i], |r| r != i as u32, &mut scratch);
                        scratch.sort_unstable();
                        let odd = odd_runs(&scratch);
                        scratch.clear();
                        scratch.extend(odd);
                    }
                    f(i, &scratch);
                }
            }
        }
    }

    /// The rings containing `p` (on ring `own`, which is left out), from those containing the
    /// reference point of its cell. False when the shortcut does not apply.
    fn probe_from_reference(
        &self,
        p: Point,
        own: u32,
        col: usize,
        row: usize,
        reference_inside: &[u32],
        out: &mut Vec<u32>,
    ) -> bool {
        let reference = self.reference(col, row);
        let corner = Point::new(reference.x, p.y);
        if self.cell_of(reference) != (col, row) || self.cell_of(corner) != (col, row) {
            return false;
        }
        let cell = self.cell(col, row);
        let others = || {
            cell.iter()
                .map(|&id| &self.segments[id as usize])
                .filter(|s| s.ring != own)
        };
        if others().any(|s| on_segment(reference, s.a, s.b) || on_segment(corner, s.a, s.b)) {
            return false;
        }
        out.extend(reference_inside.iter().filter(|&&r| r != own));
        for s in others() {
            let mut flip =
                ray_crosses(s.a, s.b, p, false, true) != ray_crosses(s.a, s.b, corner, false, true);
            flip ^= ray_crosses(s.a, s.b, corner, true, true)
                != ray_crosses(s.a, s.b, reference, true, true);
            if flip {
                toggle(out, s.ring);
            }
        }
        true
    }
}

/// A number in `[0, 4)` increasing with the angle of `d` (non-zero) from the +x axis, like
/// `atan2` but cheaper.
fn pseudo_angle(d: Point) -> f64 {
    let t = d.x / (d.x.abs() + d.y.abs());
    if d.y >= 0.0 { 1.0 - t } else { 3.0 + t }
}

/// Flips `ring`'s membership in the sorted list `set`.
fn toggle(set: &mut Vec<u32>, ring: u32) {
    match set.binary_search(&ring) {
        Ok(i) => {
            set.remove(i);
        }
        Err(i) => set.insert(i, ring),
    }
}

/// True when `p` lies on the closed segment `a b`.
fn on_segment(p: Point, a: Point, b: Point) -> bool {
    orient(a, b, p) == 0.0
        && a.x.min(b.x) <= p.x
        && p.x <= a.x.max(b.x)
        && a.y.min(b.y) <= p.y
        && p.y <= a.y.max(b.y)
}

/// The values occurring an odd number of times in sorted `values`.
fn odd_runs(values: &[u32]) -> Vec<u32> {
    values
        .chunk_by(|x, y| x == y)
        .filter(|run| run.len() % 2 == 1)
        .map(|run| run[0])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Region;

    fn pts(coords: &[(f64, f64)]) -> Vec<Point> {
        coords.iter().map(|&(x, y)| Point::new(x, y)).collect()
    }

    fn square(x: f64, y: f64, size: f64) -> Vec<Point> {
        pts(&[(x, y), (x + size, y), (x + size, y + size), (x, y + size)])
    }

    fn map(regions: Vec<Region>) -> MapInput {
        MapInput {
            name: "test".into(),
            regions,
            known_area: None,
        }
    }

    fn region(outer: Vec<Point>, holes: Vec<Vec<Point>>) -> Region {
        Region { outer, holes }
    }

    fn err(input: MapInput) -> ValidationError {
        match validate(&input) {
            Ok(_) => panic!("expected a validation error"),
            Err(e) => e,
        }
    }

    const OUTER: RingKind = RingKind::Outer;

    #[test]
    fn square_with_square_hole() {
        // Outer clockwise, hole counter-clockwise: both get reversed.
        let mut outer = square(0.0, 0.0, 10.0);
        outer.reverse();
        let hole = square(3.0, 3.0, 2.0);
        let out = validate(&map(vec![region(outer, vec![hole])])).unwrap();
        assert_eq!(out.area, 100.0 - 4.0);
        assert_eq!(out.rings.len(), 2);
        assert!(ring_signed_area(&out.rings[0]) > 0.0);
        assert!(ring_signed_area(&out.rings[1]) < 0.0);
        assert_eq!(out.name, "test");
    }

    #[test]
    fn duplicates_are_removed() {
        let outer = pts(&[
            (0.0, 0.0),
            (0.0, 0.0),
            (4.0, 0.0),
            (4.0, 4.0),
            (4.0, 4.0),
            (0.0, 4.0),
            (0.0, 0.0),
        ]);
        let out = validate(&map(vec![region(outer, vec![])])).unwrap();
        assert_eq!(out.rings[0].len(), 4);
        assert_eq!(out.area, 16.0);
    }

    #[test]
    fn squares_touching_at_a_corner_are_valid() {
        let out = validate(&map(vec![
            region(square(0.0, 0.0, 2.0), vec![]),
            region(square(2.0, 2.0, 2.0), vec![]),
        ]))
        .unwrap();
        assert_eq!(out.area, 8.0);
    }

    #[test]
    fn hole_touching_outer_at_a_vertex_is_valid() {
        let hole = pts(&[(0.0, 0.0), (3.0, 1.0), (1.0, 3.0)]);
        let out = validate(&map(vec![region(square(0.0, 0.0, 10.0), vec![hole])])).unwrap();
        assert_eq!(out.area, 100.0 - 4.0);
    }

    #[test]
    fn figure_eight_touching_itself_is_valid() {
        // Two triangles meeting at (2, 2).
        let ring = pts(&[
            (0.0, 0.0),
            (4.0, 0.0),
            (2.0, 2.0),
            (4.0, 4.0),
            (0.0, 4.0),
            (2.0, 2.0),
        ]);
        let out = validate(&map(vec![region(ring, vec![])])).unwrap();
        assert_eq!(out.area, 8.0);
    }

    #[test]
    fn checkerboard_of_holes_touching_diagonally_is_valid() {
        let mut holes = Vec::new();
        for y in 0..10 {
            for x in 0..10 {
                if (x + y) % 2 == 0 {
                    holes.push(square(x as f64 + 1.0, y as f64 + 1.0, 1.0));
                }
            }
        }
        let out = validate(&map(vec![region(square(0.0, 0.0, 12.0), holes)])).unwrap();
        assert_eq!(out.area, 144.0 - 50.0);
    }

    #[test]
    fn no_regions() {
        let e = err(map(vec![]));
        assert_eq!(e, ValidationError::NoRegions);
        assert_eq!(e.to_string(), "the map has no regions");
    }

    #[test]
    fn non_finite_coordinate() {
        let mut hole = square(2.0, 2.0, 1.0);
        hole.push(Point::new(f64::NAN, 0.0));
        let mut holes = vec![square(5.0, 5.0, 1.0); 1];
        holes.push(hole);
        let e = err(map(vec![
            region(square(0.0, 0.0, 10.0), vec![]),
            region(square(20.0, 0.0, 10.0), holes),
        ]));
        let at = VertexRef {
            region: 1,
            ring: RingKind::Hole(1),
            vertex: 4,
        };
        assert_eq!(e, ValidationError::NonFinite { at });
        assert_eq!(
            e.to_string(),
            "region 1, hole 1, vertex 4: coordinate is not finite"
        );
    }

    #[test]
    fn coordinate_out_of_range() {
        let outer = pts(&[(0.0, 0.0), (2e9, 0.0), (0.0, 1.0)]);
        let e = err(map(vec![region(outer, vec![])]));
        let at = VertexRef {
            region: 0,
            ring: OUTER,
            vertex: 1,
        };
        assert_eq!(e, ValidationError::OutOfRange { at, value: 2e9 });
        assert!(
            e.to_string()
                .starts_with("region 0, outer ring, vertex 1: coordinate"),
            "{e}"
        );
    }

    #[test]
    fn too_few_points() {
        let hole = pts(&[(1.0, 1.0), (2.0, 1.0), (2.0, 1.0), (1.0, 1.0)]);
        let e = err(map(vec![region(square(0.0, 0.0, 10.0), vec![hole])]));
        let ring = RingRef {
            region: 0,
            ring: RingKind::Hole(0),
        };
        assert_eq!(e, ValidationError::TooFewPoints { ring, points: 2 });
        assert!(
            e.to_string()
                .starts_with("region 0, hole 0: ring has only 2"),
            "{e}"
        );
    }

    #[test]
    fn zero_area() {
        let outer = pts(&[(0.0, 0.0), (1.0, 1.0), (3.0, 3.0), (2.0, 2.0)]);
        let e = err(map(vec![
            region(square(10.0, 0.0, 1.0), vec![]),
            region(outer, vec![]),
        ]));
        let ring = RingRef {
            region: 1,
            ring: OUTER,
        };
        assert_eq!(e, ValidationError::ZeroArea { ring });
        assert_eq!(
            e.to_string(),
            "region 1, outer ring: ring has zero area (all points are collinear)"
        );
    }

    #[test]
    fn edges_cross() {
        // A bow tie: edge 1 (vertex 1 to 2) crosses edge 3 (vertex 3 to 0).
        let outer = pts(&[(0.0, 0.0), (4.0, 0.0), (0.0, 4.0), (4.0, 4.0)]);
        let e = err(map(vec![region(outer, vec![])]));
        let a = EdgeRef {
            region: 0,
            ring: OUTER,
            from: 1,
            to: 2,
        };
        let b = EdgeRef {
            region: 0,
            ring: OUTER,
            from: 3,
            to: 0,
        };
        assert_eq!(e, ValidationError::EdgesCross { a, b });
        assert_eq!(
            e.to_string(),
            "region 0, outer ring, edge from vertex 1 to vertex 2 crosses \
             region 0, outer ring, edge from vertex 3 to vertex 0"
        );
    }

    #[test]
    fn hole_crossing_outer() {
        let e = err(map(vec![region(
            square(0.0, 0.0, 10.0),
            vec![square(8.0, 4.0, 4.0)],
        )]));
        let ValidationError::EdgesCross { a, b } = e else {
            panic!("{e}")
        };
        assert_eq!((a.region, a.ring), (0, OUTER));
        assert_eq!((b.region, b.ring), (0, RingKind::Hole(0)));
    }

    #[test]
    fn edges_overlap() {
        // Two regions sharing an edge.
        let e = err(map(vec![
            region(square(0.0, 0.0, 4.0), vec![]),
            region(square(4.0, 0.0, 4.0), vec![]),
        ]));
        let a = EdgeRef {
            region: 0,
            ring: OUTER,
            from: 1,
            to: 2,
        };
        let b = EdgeRef {
            region: 1,
            ring: OUTER,
            from: 3,
            to: 0,
        };
        assert_eq!(e, ValidationError::EdgesOverlap { a, b });
        assert!(
            e.to_string()
                .contains("region 1, outer ring, edge from vertex 3 to vertex 0")
        );
    }

    #[test]
    fn spike_overlaps_itself() {
        let outer = pts(&[
            (0.0, 0.0),
            (4.0, 0.0),
            (4.0, 4.0),
            (6.0, 4.0),
            (4.0, 4.0),
            (0.0, 4.0),
        ]);
        let e = err(map(vec![region(outer, vec![])]));
        let ValidationError::EdgesOverlap { a, b } = e else {
            panic!("{e}")
        };
        assert_eq!((a.from, a.to, b.from, b.to), (2, 3, 3, 4));
    }

    #[test]
    fn vertex_on_edge() {
        // The hole's vertex 1 lies in the middle of the outer ring's edge 1-2.
        let hole = pts(&[(5.0, 5.0), (10.0, 5.0), (7.0, 7.0)]);
        let e = err(map(vec![region(square(0.0, 0.0, 10.0), vec![hole])]));
        let vertex = VertexRef {
            region: 0,
            ring: RingKind::Hole(0),
            vertex: 1,
        };
        let edge = EdgeRef {
            region: 0,
            ring: OUTER,
            from: 1,
            to: 2,
        };
        assert_eq!(e, ValidationError::VertexOnEdge { vertex, edge });
        assert_eq!(
            e.to_string(),
            "region 0, hole 0, vertex 1 lies in the interior of \
             region 0, outer ring, edge from vertex 1 to vertex 2 (T-junction)"
        );
    }

    #[test]
    fn rings_crossing_at_a_shared_vertex() {
        // Two squares overlapping, their boundaries crossing exactly at shared vertices.
        let a = pts(&[
            (0.0, 0.0),
            (10.0, 0.0),
            (10.0, 5.0),
            (10.0, 10.0),
            (5.0, 10.0),
            (0.0, 10.0),
        ]);
        let b = pts(&[
            (5.0, 5.0),
            (10.0, 5.0),
            (15.0, 5.0),
            (15.0, 15.0),
            (5.0, 15.0),
            (5.0, 10.0),
        ]);
        let e = err(map(vec![region(a, vec![]), region(b, vec![])]));
        let ValidationError::CrossAtVertex { a, b } = e else {
            panic!("{e}")
        };
        assert_eq!(a.region, 0);
        assert_eq!(b.region, 1);
        // Either shared vertex may be reported first, but both occurrences name the same one.
        assert!(matches!((a.vertex, b.vertex), (2, 1) | (4, 5)), "{a} {b}");
        assert!(
            e.to_string()
                .contains("the rings cross at this shared vertex")
        );
    }

    #[test]
    fn ring_crossing_itself_at_a_vertex() {
        // A bow tie drawn through a vertex: the lobes have opposite orientation.
        let ring = pts(&[
            (0.0, 0.0),
            (2.0, 2.0),
            (4.0, 4.0),
            (4.0, 0.0),
            (2.0, 2.0),
            (0.0, 4.0),
        ]);
        let e = err(map(vec![region(ring, vec![])]));
        let a = VertexRef {
            region: 0,
            ring: OUTER,
            vertex: 1,
        };
        let b = VertexRef {
            region: 0,
            ring: OUTER,
            vertex: 4,
        };
        assert_eq!(e, ValidationError::CrossAtVertex { a, b });
        assert_eq!(
            e.to_string(),
            "region 0, outer ring, vertex 1 and region 0, outer ring, vertex 4: \
             the rings cross at this shared vertex"
        );
    }

    #[test]
    fn hole_outside() {
        let holes = vec![square(1.0, 1.0, 1.0), square(20.0, 20.0, 1.0)];
        let e = err(map(vec![region(square(0.0, 0.0, 10.0), holes)]));
        let hole = RingRef {
            region: 0,
            ring: RingKind::Hole(1),
        };
        assert_eq!(e, ValidationError::HoleOutside { hole });
        assert_eq!(
            e.to_string(),
            "region 0, hole 1: hole is not inside the region's outer ring"
        );
    }

    #[test]
    fn hole_touching_outer_from_outside() {
        let hole = pts(&[(10.0, 10.0), (12.0, 10.0), (12.0, 12.0)]);
        let e = err(map(vec![region(square(0.0, 0.0, 10.0), vec![hole])]));
        assert!(matches!(e, ValidationError::HoleOutside { .. }), "{e}");
    }

    #[test]
    fn nested_hole() {
        let holes = vec![
            square(1.0, 1.0, 1.0),
            square(3.0, 3.0, 5.0),
            square(4.0, 4.0, 1.0),
        ];
        let e = err(map(vec![region(square(0.0, 0.0, 10.0), holes)]));
        let hole = RingRef {
            region: 0,
            ring: RingKind::Hole(2),
        };
        assert_eq!(e, ValidationError::NestedHole { hole, outer: 1 });
        assert_eq!(
            e.to_string(),
            "region 0, hole 2: hole lies inside hole 1 of the same region"
        );
    }

    #[test]
    fn regions_overlap() {
        let e = err(map(vec![
            region(square(0.0, 0.0, 10.0), vec![square(1.0, 1.0, 2.0)]),
            region(square(4.0, 4.0, 2.0), vec![]),
        ]));
        assert_eq!(
            e,
            ValidationError::RegionsOverlap {
                region: 1,
                other: 0
            }
        );
        assert_eq!(
            e.to_string(),
            "region 1: outer ring lies inside the walkable area of region 0"
        );
    }

    #[test]
    fn region_inside_a_hole_is_valid() {
        let out = validate(&map(vec![
            region(square(0.0, 0.0, 10.0), vec![square(2.0, 2.0, 6.0)]),
            region(square(3.0, 3.0, 4.0), vec![square(4.0, 4.0, 1.0)]),
        ]))
        .unwrap();
        assert_eq!(out.area, 100.0 - 36.0 + 16.0 - 1.0);
    }

    #[test]
    fn region_inside_a_hole_of_a_region_inside_a_hole() {
        // Rings nested four deep, alternating walkable and blocked: fine.
        let out = validate(&map(vec![
            region(square(0.0, 0.0, 20.0), vec![square(2.0, 2.0, 16.0)]),
            region(square(4.0, 4.0, 12.0), vec![square(6.0, 6.0, 8.0)]),
            region(square(8.0, 8.0, 4.0), vec![]),
        ]))
        .unwrap();
        assert_eq!(out.area, 400.0 - 256.0 + 144.0 - 64.0 + 16.0);
        // ...but a region inside another's walkable area is not, however deep.
        let e = err(map(vec![
            region(square(0.0, 0.0, 20.0), vec![square(2.0, 2.0, 16.0)]),
            region(square(4.0, 4.0, 12.0), vec![square(6.0, 6.0, 8.0)]),
            region(square(4.5, 4.5, 1.0), vec![]),
        ]));
        assert_eq!(
            e,
            ValidationError::RegionsOverlap {
                region: 2,
                other: 1
            }
        );
    }

    #[test]
    fn region_enclosing_another_region() {
        let e = err(map(vec![
            region(square(4.0, 4.0, 2.0), vec![]),
            region(square(0.0, 0.0, 10.0), vec![]),
        ]));
        assert_eq!(
            e,
            ValidationError::RegionsOverlap {
                region: 0,
                other: 1
            }
        );
    }

    /// Rings and grid as `validate` builds them.
    fn prepared(input: &MapInput) -> (Vec<Ring>, SegmentGrid) {
        let mut rings = Vec::new();
        for (r, region) in input.regions.iter().enumerate() {
            let at = |ring| RingRef { region: r, ring };
            rings.push(Ring::new(at(OUTER), &region.outer).unwrap());
            for (h, hole) in region.holes.iter().enumerate() {
                rings.push(Ring::new(at(RingKind::Hole(h)), hole).unwrap());
            }
        }
        let grid = SegmentGrid::new(&rings);
        (rings, grid)
    }

    /// Crossing parity of a +x ray from `p` with `ring`, by brute force.
    fn brute_inside(ring: &[Point], p: Point) -> bool {
        let n = ring.len();
        (0..n)
            .filter(|&i| ray_crosses(ring[i], ring[(i + 1) % n], p, false, true))
            .count()
            % 2
            == 1
    }

    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn containment_matches_brute_force() {
        let mut diamonds = Vec::new();
        for y in 0..12 {
            for x in 0..12 {
                let (cx, cy) = (3.0 * x as f64 + 2.0, 3.0 * y as f64 + 2.0);
                diamonds.push(pts(&[
                    (cx, cy - 1.0),
                    (cx + 1.0, cy),
                    (cx, cy + 1.0),
                    (cx - 1.0, cy),
                ]));
            }
        }
        let mut checkerboard = Vec::new();
        for y in 0..16 {
            for x in 0..16 {
                if (x + y) % 2 == 0 {
                    checkerboard.push(square(x as f64 + 1.0, y as f64 + 1.0, 1.0));
                }
            }
        }
        let maps = [
            crate::source::polygon::parse("town", include_str!("../../maps/town.json")).unwrap(),
            crate::source::polygon::parse("arena", include_str!("../../maps/arena.json")).unwrap(),
            map(vec![region(square(0.0, 0.0, 40.0), diamonds)]),
            map(vec![region(square(0.0, 0.0, 18.0), checkerboard)]),
            map(vec![
                region(square(0.0, 0.0, 20.0), vec![square(2.0, 2.0, 16.0)]),
                region(square(4.0, 4.0, 12.0), vec![square(6.0, 6.0, 8.0)]),
                region(square(8.0, 8.0, 4.0), vec![]),
            ]),
        ];
        for input in &maps {
            let (rings, grid) = prepared(input);
            let probes: Vec<Point> = rings.iter().map(probe).collect();
            let mut seen = 0;
            grid.for_each_containing(&probes, |i, inside| {
                let expected: Vec<u32> = (0..rings.len())
                    .filter(|&j| j != i && brute_inside(&rings[j].points, probes[i]))
                    .map(|j| j as u32)
                    .collect();
                assert_eq!(inside, expected, "{}: probe of ring {i}", input.name);
                seen += 1;
            });
            assert_eq!(seen, rings.len());
            // Arbitrary points too, through the fallback ray cast.
            let (min, size) = (
                grid.origin,
                Point::new(grid.cols as f64, grid.rows as f64) * (1.0 / grid.inv_cell),
            );
            let mut state = 7;
            for _ in 0..500 {
                let mut unit = || (lcg(&mut state) % 1_000_000) as f64 / 1e6;
                let p = Point::new(min.x + unit() * size.x, min.y + unit() * size.y);
                let mut hits = Vec::new();
                grid.ray_crossings(p, |_| true, &mut hits);
                hits.sort_unstable();
                let expected: Vec<u32> = (0..rings.len())
                    .filter(|&j| brute_inside(&rings[j].points, p))
                    .map(|j| j as u32)
                    .collect();
                assert_eq!(odd_runs(&hits), expected, "{}: {p:?}", input.name);
            }
        }
    }

    #[test]
    fn edge_grid_finds_what_brute_force_finds() {
        // Random small squares and triangles on an integer lattice: many touch, overlap, cross
        // or meet at T-junctions. The grid must find a conflict exactly when testing all pairs
        // does.
        let mut state = 1;
        let (mut conflicts, mut clean) = (0, 0);
        for _ in 0..400 {
            let mut holes = Vec::new();
            for _ in 0..1 + lcg(&mut state) % 12 {
                let x = (1 + lcg(&mut state) % 14) as f64;
                let y = (1 + lcg(&mut state) % 14) as f64;
                let s = (1 + lcg(&mut state) % 3) as f64;
                holes.push(if lcg(&mut state).is_multiple_of(2) {
                    square(x, y, s)
                } else {
                    pts(&[(x, y), (x + s, y), (x, y + s)])
                });
            }
            let input = map(vec![region(square(0.0, 0.0, 20.0), holes)]);
            let (rings, grid) = prepared(&input);
            let found = grid.check_edges(&rings).is_err();
            let segs = &grid.segments;
            let brute = (0..segs.len()).any(|i| {
                (i + 1..segs.len()).any(|j| {
                    !matches!(
                        classify(segs[i].a, segs[i].b, segs[j].a, segs[j].b),
                        Contact::Clear
                    )
                })
            });
            assert_eq!(found, brute);
            if found { conflicts += 1 } else { clean += 1 }
        }
        assert!(conflicts > 50 && clean > 50, "{conflicts} {clean}");
    }

    fn holes_grid(n: usize) -> MapInput {
        let mut holes = Vec::with_capacity(n * n);
        for y in 0..n {
            for x in 0..n {
                holes.push(square(3.0 * x as f64 + 1.0, 3.0 * y as f64 + 1.0, 1.0));
            }
        }
        map(vec![region(square(0.0, 0.0, 3.0 * n as f64 + 1.0), holes)])
    }

    #[test]
    fn large_grid_of_holes() {
        // 300 x 300 holes (360,004 edges). Time it with `--release -- --nocapture`.
        let n = 300;
        let input = holes_grid(n);
        let start = std::time::Instant::now();
        let out = validate(&input).unwrap();
        let elapsed = start.elapsed();
        let side = 3.0 * n as f64 + 1.0;
        assert_eq!(out.area, side * side - (n * n) as f64);
        println!("validated {} holes in {elapsed:?}", n * n);
    }

    #[test]
    fn large_checkerboard() {
        // Holes touching diagonally everywhere: ~100,000 shared vertices.
        let n = 320;
        let mut holes = Vec::new();
        for y in 0..n {
            for x in 0..n {
                if (x + y) % 2 == 0 {
                    holes.push(square(x as f64 + 1.0, y as f64 + 1.0, 1.0));
                }
            }
        }
        let input = map(vec![region(square(0.0, 0.0, n as f64 + 2.0), holes)]);
        let start = std::time::Instant::now();
        let out = validate(&input).unwrap();
        let elapsed = start.elapsed();
        let side = n as f64 + 2.0;
        assert_eq!(out.area, side * side - (n * n / 2) as f64);
        println!("validated a {n} x {n} checkerboard in {elapsed:?}");
    }

    #[test]
    fn example_maps_validate() {
        for (name, text) in [
            ("arena", include_str!("../../maps/arena.json")),
            ("town", include_str!("../../maps/town.json")),
        ] {
            let input = crate::source::polygon::parse(name, text).unwrap();
            let out = validate(&input).unwrap();
            let holes: usize = input.regions.iter().map(|r| r.holes.len()).sum();
            println!(
                "{name}: {} regions, {holes} holes, walkable area {:.2} m²",
                input.regions.len(),
                out.area
            );
            assert!(out.area > 0.0);
        }
    }
}
