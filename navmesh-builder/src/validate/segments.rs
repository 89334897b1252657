//! Edge checks: the segment grid and the checks between pairs of edges.
//!
//! [`SegmentGrid`] lists each ring edge in every cell of a uniform grid that its bounding box
//! covers, so that only edges sharing a cell are compared. [`SegmentGrid::check_edges`]
//! rejects edges that cross, overlap collinearly or meet at a T-junction, and collects the
//! points where two passes of rings start an edge; [`SegmentGrid::check_shared_vertices`]
//! then checks that the passes through each such vertex only touch there, without crossing.
//!
//! The containment checks in the sibling `nesting` module cast their rays through the same
//! grid.

use navmesh::Point;
use navmesh::geom::orient;

use super::{Ring, ValidationError};

/// Edge `index` of ring `ring`, from `a` to `b`, with the range of grid cells its bounding box
/// covers.
#[derive(Clone, Copy, Debug)]
pub(super) struct Segment {
    pub(super) a: Point,
    pub(super) b: Point,
    pub(super) ring: u32,
    pub(super) index: u32,
    pub(super) col0: u32,
    pub(super) col1: u32,
    pub(super) row0: u32,
    pub(super) row1: u32,
}

impl Segment {
    /// How many cells its bounding box covers.
    fn cells(&self) -> u64 {
        u64::from(self.col1 - self.col0 + 1) * u64::from(self.row1 - self.row0 + 1)
    }
}

/// The most cells a segment is listed in, on average, before the grid's cells grow.
const MAX_ITEMS_PER_SEGMENT: u64 = 16;

/// A uniform grid over the map bounds; each cell lists the segments whose bounding box
/// overlaps it (compressed rows: `cell_start` indexes `items`).
pub(super) struct SegmentGrid {
    pub(super) origin: Point,
    pub(super) inv_cell: f64,
    pub(super) cols: usize,
    pub(super) rows: usize,
    cell_start: Vec<u32>,
    items: Vec<u32>,
    pub(super) segments: Vec<Segment>,
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
    pub(super) fn new(rings: &[Ring]) -> SegmentGrid {
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
        // A few long edges among many short ones (a map drawn to be slow: long diagonals
        // across a staircase of short steps) would each be listed in most cells; larger
        // cells keep the lists to a few entries a segment, and their counts in 32 bits.
        let max_items = (MAX_ITEMS_PER_SEGMENT * count as u64 + 4096).min(u64::from(u32::MAX));
        let mut grid = loop {
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
            grid.place_segments(rings);
            let items: u64 = grid.segments.iter().map(Segment::cells).sum();
            if items <= max_items || grid.cols * grid.rows == 1 {
                break grid;
            }
            cell *= 2.0;
        };
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

    /// Lists every ring edge with the range of cells its bounding box covers.
    fn place_segments(&mut self, rings: &[Ring]) {
        for (r, ring) in rings.iter().enumerate() {
            let n = ring.points.len();
            for i in 0..n {
                let (a, b) = (ring.points[i], ring.points[(i + 1) % n]);
                let (col0, row0) = self.cell_of(Point::new(a.x.min(b.x), a.y.min(b.y)));
                let (col1, row1) = self.cell_of(Point::new(a.x.max(b.x), a.y.max(b.y)));
                self.segments.push(Segment {
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
    }

    /// The cell containing `p` (monotone in each coordinate, clamped to the grid).
    pub(super) fn cell_of(&self, p: Point) -> (usize, usize) {
        let clamp = |v: f64, n: usize| if v > 0.0 { (v as usize).min(n - 1) } else { 0 };
        (
            clamp(((p.x - self.origin.x) * self.inv_cell).floor(), self.cols),
            clamp(((p.y - self.origin.y) * self.inv_cell).floor(), self.rows),
        )
    }

    pub(super) fn cell(&self, col: usize, row: usize) -> &[u32] {
        let i = row * self.cols + col;
        &self.items[self.cell_start[i] as usize..self.cell_start[i + 1] as usize]
    }

    /// Tests every pair of edges whose bounding boxes share a cell (each pair once, in the
    /// first cell both cover). Returns the points where two edges start: vertices passed
    /// more than once, candidates for rings crossing at a vertex.
    ///
    /// Within a cell, the edges are sorted by where they start along one axis and each is
    /// compared only with those that start before it ends: a cell holding thousands of
    /// edges (a detailed stretch of wall in a large, plain map, which the grid's uniform
    /// cells cannot split) costs about as many comparisons as edges, not their square. The
    /// axis is the one along which the cell's edges are shorter in sum, so that a stack of
    /// long parallel edges is swept across, not along.
    pub(super) fn check_edges(&self, rings: &[Ring]) -> Result<Vec<Point>, ValidationError> {
        let mut shared = Vec::new();
        let mut order: Vec<(f64, f64, u32)> = Vec::new();
        for row in 0..self.rows {
            for col in 0..self.cols {
                let cell = self.cell(col, row);
                if cell.len() < 2 {
                    continue;
                }
                let (across_x, across_y) = cell.iter().fold((0.0, 0.0), |(x, y), &i| {
                    let s = &self.segments[i as usize];
                    (x + (s.b.x - s.a.x).abs(), y + (s.b.y - s.a.y).abs())
                });
                let along_x = across_x <= across_y;
                order.clear();
                order.extend(cell.iter().map(|&i| {
                    let s = &self.segments[i as usize];
                    let (u, v) = if along_x {
                        (s.a.x, s.b.x)
                    } else {
                        (s.a.y, s.b.y)
                    };
                    (u.min(v), u.max(v), i)
                }));
                order.sort_unstable_by(|p, q| p.0.total_cmp(&q.0).then(p.2.cmp(&q.2)));
                for (k, &(_, end, i)) in order.iter().enumerate() {
                    let s = &self.segments[i as usize];
                    for &(start, _, j) in &order[k + 1..] {
                        if start > end {
                            break;
                        }
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
    pub(super) fn check_shared_vertices(
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

/// A number in `[0, 4)` increasing with the angle of `d` (non-zero) from the +x axis, like
/// `atan2` but cheaper.
fn pseudo_angle(d: Point) -> f64 {
    let t = d.x / (d.x.abs() + d.y.abs());
    if d.y >= 0.0 { 1.0 - t } else { 3.0 + t }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::fixtures::{OUTER, err, lcg, map, prepared, pts, region, square};
    use crate::validate::{EdgeRef, RingKind, ValidationError, VertexRef, validate};

    /// A ring of many short edges (a staircase) and a hundred long ones across the whole
    /// map: the long edges' bounding boxes cover most cells, so the grid's cells grow until
    /// the lists hold a few entries a segment (about 2 million at the average edge's cell
    /// size), and validation still finds the crossing the ring ends with.
    #[test]
    fn long_edges_across_the_map_keep_the_grid_small() {
        let side = 10_000.0;
        let mut points = Vec::new();
        for step in 0..10_000 {
            let at = f64::from(step);
            points.push((at, at));
            points.push((at + 1.0, at));
        }
        // Back to the start along a zigzag of diagonals over the whole map.
        for tooth in 0..50 {
            let lift = 1.0 + f64::from(49 - tooth) * 0.1;
            points.push((side, side + lift));
            points.push((0.0, lift));
        }
        // The last edge crosses the first step.
        points.push((0.5, -1.0));
        let input = map(vec![region(pts(&points), vec![])]);
        let (_, grid) = prepared(&input);
        let segments = grid.segments.len() as u64;
        assert!(
            (grid.items.len() as u64) <= MAX_ITEMS_PER_SEGMENT * segments + 4096,
            "{} items for {segments} segments in {} by {} cells",
            grid.items.len(),
            grid.cols,
            grid.rows
        );
        assert!(matches!(err(input), ValidationError::EdgesCross { .. }));
    }

    /// A comb of 20,000 thin teeth in a 10 m box, in the middle of a plain 1 km square: the
    /// whole comb lies in a few of the grid's cells. Validation compares each edge with the
    /// few whose extent along the cell's sweep axis overlaps its own, and still finds one
    /// tooth that leans over its neighbour.
    #[test]
    fn a_dense_comb_in_a_large_plain_map_is_checked_edge_by_edge() {
        let teeth = 20_000;
        let width = 10.0 / f64::from(teeth);
        let comb = |lean: Option<u32>| {
            let mut points = Vec::new();
            for i in 0..teeth {
                let x = 500.0 + f64::from(i) * width;
                let top = if Some(i) == lean {
                    x + 2.5 * width
                } else {
                    x + 0.5 * width
                };
                points.push((x, 500.0));
                points.push((top, 510.0));
            }
            points.push((510.0, 499.0));
            points.push((500.0, 499.0));
            map(vec![region(square(0.0, 0.0, 1000.0), vec![pts(&points)])])
        };
        let (_, grid) = prepared(&comb(None));
        let busiest = (0..grid.rows)
            .flat_map(|r| (0..grid.cols).map(move |c| (c, r)))
            .map(|(c, r)| grid.cell(c, r).len())
            .max();
        assert!(
            busiest > Some(10_000),
            "the comb is not in a few cells: {busiest:?}"
        );
        assert!(validate(&comb(None)).is_ok());
        assert!(matches!(
            err(comb(Some(12_345))),
            ValidationError::EdgesCross { .. }
        ));
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
}
