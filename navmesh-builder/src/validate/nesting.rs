//! Containment checks: holes inside their region's outer ring and not inside one another,
//! and no region inside another region's walkable area.
//!
//! They run after the edge checks, so any two rings are nested or disjoint and one probe point
//! per ring (the midpoint of its first edge) decides. Containment is the parity of the
//! crossings of a ray with a ring's edges, counted through the [`SegmentGrid`]:
//! [`SegmentGrid::for_each_containing`] sweeps each row of cells, carrying the rings that
//! contain one reference point per cell from cell to cell, and reaches each probe from its
//! cell's reference point; [`SegmentGrid::ray_crossings`] is the fallback ray cast.

use navmesh::Point;
use navmesh::geom::orient;

use super::segments::{Segment, SegmentGrid};
use super::{Ring, RingKind, ValidationError};

/// Holes inside their outer ring and not inside each other; regions not inside each other's
/// walkable area. Runs after the edge checks, so any two rings are nested or disjoint and one
/// probe point per ring decides.
pub(super) fn check_nesting(
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

/// A point on a ring's first edge (its midpoint): unlike a vertex, it never lies on another
/// ring once edges are known not to cross, overlap or touch.
fn probe(ring: &Ring) -> Point {
    (ring.points[0] + ring.points[1]) * 0.5
}

/// Where in its cell the reference point of a cell lies, as fractions of the cell size:
/// unequal and away from the cell's centre so that reference points of grid-aligned maps
/// rarely fall on an edge (which only costs a slower fallback).
const REFERENCE: (f64, f64) = (0.5, 0.4375);

impl SegmentGrid {
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
    use crate::validate::fixtures::{err, lcg, map, prepared, pts, region, square};
    use crate::validate::{RingKind, RingRef, ValidationError, validate};

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

    /// Crossing parity of a +x ray from `p` with `ring`, by brute force.
    fn brute_inside(ring: &[Point], p: Point) -> bool {
        let n = ring.len();
        (0..n)
            .filter(|&i| ray_crosses(ring[i], ring[(i + 1) % n], p, false, true))
            .count()
            % 2
            == 1
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
            crate::source::polygon::parse("town", include_str!("../../../maps/town.json")).unwrap(),
            crate::source::polygon::parse("arena", include_str!("../../../maps/arena.json"))
                .unwrap(),
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
}
