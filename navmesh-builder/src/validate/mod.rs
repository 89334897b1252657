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
//!
//! This module holds the public types, [`validate`] and the per-ring checks. The private
//! `segments` module builds the grid and runs the edge and shared-vertex checks; `nesting`
//! runs the containment checks (holes, nested holes, overlapping regions) through it.

mod nesting;
mod segments;

#[cfg(test)]
mod fixtures;

use std::fmt;

use navmesh::Point;
use navmesh::geom::{orient, ring_signed_area};

use crate::source::MapInput;
use nesting::check_nesting;
use segments::SegmentGrid;

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

#[cfg(test)]
mod tests {
    use super::fixtures::{OUTER, err, map, pts, region, square};
    use super::*;

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
    fn example_maps_validate() {
        for (name, text) in [
            ("arena", include_str!("../../../maps/arena.json")),
            ("town", include_str!("../../../maps/town.json")),
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
