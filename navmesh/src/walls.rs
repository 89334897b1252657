//! Wall queries: a uniform grid of wall segments ([`WallGrid`]) and the questions it answers
//! on [`NavMesh`]: the nearest wall to a point, the walls near a box, the clearance at a point
//! and the nearest point of the walkable area.
//!
//! The grid covers the mesh bounds with square cells about as long as the average wall, so a
//! cell lists a handful of walls. Each cell lists every wall whose segment touches it (grown by
//! a hair, a millionth of a cell, so that rounding in the cell arithmetic never drops a wall),
//! in ascending wall order. Cells on the border of the grid extend to infinity, so every point
//! of the plane falls in exactly one cell; queries rely on that to bound their search.

use crate::geom::{Aabb, Point, grid_cell};
use crate::mesh::{NavMesh, WallEdge};

/// At most this many cells along either axis.
const MAX_DIM: usize = 1 << 12;

/// How far (in cells) wall registration and search bounds are grown to absorb rounding.
const SLACK: f64 = 1e-6;

/// The largest distance [`NavMesh::nearest_point`] moves a wall point toward its triangle's
/// centroid to make it [`NavMesh::locate`].
pub const NUDGE: f64 = 1e-9;

/// The closest point of a wall to a query point, see [`NavMesh::nearest_wall`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WallHit {
    /// The wall, an index into [`NavMesh::walls`].
    pub wall: usize,
    /// The point of the wall closest to the query point.
    pub point: Point,
    /// Distance from the query point to `point`.
    pub distance: f64,
}

/// A uniform grid over the mesh bounds; each cell lists the walls (indices into
/// [`NavMesh::walls`]) whose segment touches it, in ascending order (compressed rows:
/// `cell_start` indexes `walls`). See the module docs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WallGrid {
    origin: Point,
    cell: f64,
    inv_cell: f64,
    cols: usize,
    rows: usize,
    cell_start: Vec<usize>,
    walls: Vec<usize>,
}

impl WallGrid {
    /// Builds the index of `mesh`'s walls (the mesh already holds one, see
    /// [`NavMesh::wall_grid`]).
    pub fn new(mesh: &NavMesh) -> WallGrid {
        WallGrid::build(mesh.vertices(), mesh.walls(), mesh.bounds())
    }

    /// Builds the index from the parts [`NavMesh`] assembles: cells about the average wall
    /// length, at most `max(4 × walls, 64)` cells and 4096 per axis.
    pub(crate) fn build(vertices: &[Point], walls: &[WallEdge], bounds: Aabb) -> WallGrid {
        let segment = |w: &WallEdge| (vertices[w.from.index()], vertices[w.to.index()]);
        let size = bounds.size();
        let total: f64 = walls
            .iter()
            .map(|w| {
                let (a, b) = segment(w);
                a.distance(b)
            })
            .sum();
        let average = total / walls.len().max(1) as f64;
        let max_cells = (4 * walls.len()).max(64) as f64;
        let cell = average
            .max((size.x * size.y / max_cells).sqrt())
            .max(size.x.max(size.y) / MAX_DIM as f64)
            .max(1e-9);
        let cols = ((size.x / cell).ceil() as usize).clamp(1, MAX_DIM);
        let rows = ((size.y / cell).ceil() as usize).clamp(1, MAX_DIM);
        let mut grid = WallGrid {
            origin: bounds.min,
            cell,
            inv_cell: 1.0 / cell,
            cols,
            rows,
            cell_start: Vec::new(),
            walls: Vec::new(),
        };
        // Two passes: count per cell, then fill in wall order (keeps every cell sorted).
        let mut counts = vec![0usize; cols * rows + 1];
        for w in walls {
            let (a, b) = segment(w);
            grid.segment_cells(a, b, |cell| counts[cell + 1] += 1);
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let mut fill = counts.clone();
        let mut list = vec![0usize; counts.last().copied().unwrap_or(0)];
        for (i, w) in walls.iter().enumerate() {
            let (a, b) = segment(w);
            grid.segment_cells(a, b, |cell| {
                list[fill[cell]] = i;
                fill[cell] += 1;
            });
        }
        grid.cell_start = counts;
        grid.walls = list;
        grid
    }

    fn col_of(&self, x: f64) -> usize {
        // NaN and out-of-range values clamp to the border cells, which extend to infinity.
        grid_cell(
            (x - self.origin.x) * self.inv_cell,
            self.cols.saturating_sub(1),
        )
    }

    fn row_of(&self, y: f64) -> usize {
        grid_cell(
            (y - self.origin.y) * self.inv_cell,
            self.rows.saturating_sub(1),
        )
    }

    /// Calls `f` with every cell the segment `a b` touches (grown by the slack), once each.
    /// Row by row: the part of the segment within the row's slab gives a range of columns.
    fn segment_cells(&self, a: Point, b: Point, mut f: impl FnMut(usize)) {
        let slack = self.cell * SLACK;
        let (ra, rb) = (self.row_of(a.y), self.row_of(b.y));
        let r0 = self.row_of(a.y.min(b.y) - slack).min(ra).min(rb);
        let r1 = self.row_of(a.y.max(b.y) + slack).max(ra).max(rb);
        let (ca, cb) = (self.col_of(a.x), self.col_of(b.x));
        let dy = b.y - a.y;
        for r in r0..=r1 {
            let y_lo = if r == 0 {
                f64::NEG_INFINITY
            } else {
                self.origin.y + r as f64 * self.cell - slack
            };
            let y_hi = if r + 1 == self.rows {
                f64::INFINITY
            } else {
                self.origin.y + (r + 1) as f64 * self.cell + slack
            };
            let (mut t0, mut t1) = (0.0f64, 1.0f64);
            if dy != 0.0 {
                let (ta, tb) = ((y_lo - a.y) / dy, (y_hi - a.y) / dy);
                t0 = t0.max(ta.min(tb));
                t1 = t1.min(ta.max(tb));
            }
            let (mut c0, mut c1) = (usize::MAX, 0);
            if t0 <= t1 {
                let xa = a.x + (b.x - a.x) * t0;
                let xb = a.x + (b.x - a.x) * t1;
                c0 = self.col_of(xa.min(xb) - slack);
                c1 = self.col_of(xa.max(xb) + slack);
            }
            // The endpoints' own cells, whatever the slab arithmetic said.
            for (row, col) in [(ra, ca), (rb, cb)] {
                if row == r {
                    c0 = c0.min(col);
                    c1 = c1.max(col);
                }
            }
            if c0 <= c1 {
                for c in c0..=c1 {
                    f(r * self.cols + c);
                }
            }
        }
    }

    fn cell_walls(&self, cell: usize) -> &[usize] {
        &self.walls[self.cell_start[cell]..self.cell_start[cell + 1]]
    }

    /// The walls listed in the cell containing `p`: among them, every wall with an endpoint
    /// at `p`.
    pub(crate) fn walls_at(&self, p: Point) -> &[usize] {
        if self.is_empty_grid() {
            return &[];
        }
        self.cell_walls(self.row_of(p.y) * self.cols + self.col_of(p.x))
    }

    fn is_empty_grid(&self) -> bool {
        self.cols == 0 || self.rows == 0 || self.cell_start.len() != self.cols * self.rows + 1
    }

    /// The closest wall point to `p` no farther than `max_dist` (inclusive), searching rings
    /// of cells around `p`'s cell until the ring is farther than the best wall found or than
    /// `max_dist`. Ties go to the lowest wall index. `None` for a non-finite `p`, a negative
    /// or NaN `max_dist`, or no wall in reach. `mesh` must be the mesh the grid was built for.
    pub fn nearest(&self, mesh: &NavMesh, p: Point, max_dist: f64) -> Option<WallHit> {
        self.nearest_where(mesh, p, max_dist, |_| true)
    }

    /// [`WallGrid::nearest`] among the walls `keep` takes (by index).
    pub fn nearest_where(
        &self,
        mesh: &NavMesh,
        p: Point,
        max_dist: f64,
        keep: impl Fn(usize) -> bool,
    ) -> Option<WallHit> {
        if !p.is_finite() || max_dist.is_nan() || max_dist < 0.0 || self.is_empty_grid() {
            return None;
        }
        let slack = self.cell * SLACK;
        let (cp, rp) = (self.col_of(p.x), self.row_of(p.y));
        let mut best: Option<WallHit> = None;
        let consider = |best: &mut Option<WallHit>, w: usize| {
            let Some(wall) = mesh.walls().get(w).filter(|_| keep(w)) else {
                return;
            };
            let a = mesh.vertices()[wall.from.index()];
            let b = mesh.vertices()[wall.to.index()];
            let point = closest_point_on_segment(p, a, b);
            let distance = p.distance(point);
            let better = match best {
                None => true,
                Some(h) => distance < h.distance || (distance == h.distance && w < h.wall),
            };
            if distance <= max_dist && better {
                *best = Some(WallHit {
                    wall: w,
                    point,
                    distance,
                });
            }
        };
        for k in 0usize.. {
            let r_lo = rp.saturating_sub(k);
            let r_hi = (rp + k).min(self.rows - 1);
            let c_lo = cp.saturating_sub(k);
            let c_hi = (cp + k).min(self.cols - 1);
            // Only the ring itself (inner cells were visited by earlier rings): whole rows at
            // its top and bottom, its left and right cells on the rows between.
            let mut visit = |cell: usize| {
                for &w in self.cell_walls(cell) {
                    consider(&mut best, w);
                }
            };
            for r in r_lo..=r_hi {
                let row = r * self.cols;
                if r.abs_diff(rp) == k {
                    (c_lo..=c_hi).for_each(|c| visit(row + c));
                } else {
                    if cp >= k {
                        visit(row + cp - k);
                    }
                    if cp + k < self.cols {
                        visit(row + cp + k);
                    }
                }
            }
            if c_lo == 0 && r_lo == 0 && c_hi == self.cols - 1 && r_hi == self.rows - 1 {
                break;
            }
            // Every cell not yet visited lies outside the visited block; its nearest side
            // bounds the distance to any wall listed only there. Border cells are unbounded.
            let cell = self.cell;
            let o = self.origin;
            let left = if c_lo == 0 {
                f64::INFINITY
            } else {
                p.x - (o.x + c_lo as f64 * cell)
            };
            let right = if c_hi == self.cols - 1 {
                f64::INFINITY
            } else {
                o.x + (c_hi + 1) as f64 * cell - p.x
            };
            let below = if r_lo == 0 {
                f64::INFINITY
            } else {
                p.y - (o.y + r_lo as f64 * cell)
            };
            let above = if r_hi == self.rows - 1 {
                f64::INFINITY
            } else {
                o.y + (r_hi + 1) as f64 * cell - p.y
            };
            let bound = left.min(right).min(below).min(above) - slack;
            if best.is_some_and(|h| h.distance <= bound) || bound > max_dist {
                break;
            }
        }
        best
    }

    /// Writes into `out` (cleared first) the walls listed in the cells the box `min..max`
    /// overlaps, ascending and without duplicates: every wall that intersects the box is
    /// there, and some that merely share a cell with it. Nothing for a non-finite or empty
    /// (`min > max`) box.
    pub fn walls_near(&self, min: Point, max: Point, out: &mut Vec<usize>) {
        out.clear();
        if !min.is_finite() || !max.is_finite() || min.x > max.x || min.y > max.y {
            return;
        }
        if self.is_empty_grid() {
            return;
        }
        let (c0, r0) = (self.col_of(min.x), self.row_of(min.y));
        let (c1, r1) = (self.col_of(max.x), self.row_of(max.y));
        for r in r0..=r1 {
            for c in c0..=c1 {
                out.extend_from_slice(self.cell_walls(r * self.cols + c));
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Writes into `out` (cleared first) the walls that may come within `pad` of segment
    /// `p q`, ascending and without duplicates: every wall closer than `pad` to the segment
    /// is there. Unlike [`WallGrid::walls_near`] on the segment's bounding box, only the
    /// cells along the segment are visited, so a long diagonal costs its length, not its
    /// box's area. Nothing for non-finite input or a negative `pad`.
    pub fn walls_near_segment(&self, p: Point, q: Point, pad: f64, out: &mut Vec<usize>) {
        out.clear();
        if !(p.is_finite() && q.is_finite() && pad >= 0.0 && pad.is_finite()) {
            return;
        }
        if self.is_empty_grid() {
            return;
        }
        let (r0, r1) = (
            self.row_of(p.y.min(q.y) - pad),
            self.row_of(p.y.max(q.y) + pad),
        );
        for r in r0..=r1 {
            // The row's band, widened by the pad (border rows reach to infinity).
            let lo = if r == 0 {
                f64::NEG_INFINITY
            } else {
                self.origin.y + r as f64 * self.cell - pad
            };
            let hi = if r + 1 == self.rows {
                f64::INFINITY
            } else {
                self.origin.y + (r + 1) as f64 * self.cell + pad
            };
            // The part of the segment inside the band, as an x range.
            let (xa, xb) = if p.y == q.y {
                (p.x.min(q.x), p.x.max(q.x))
            } else {
                let ta = ((lo - p.y) / (q.y - p.y)).clamp(0.0, 1.0);
                let tb = ((hi - p.y) / (q.y - p.y)).clamp(0.0, 1.0);
                let (xa, xb) = (p.x + (q.x - p.x) * ta, p.x + (q.x - p.x) * tb);
                (xa.min(xb), xa.max(xb))
            };
            for c in self.col_of(xa - pad)..=self.col_of(xb + pad) {
                out.extend_from_slice(self.cell_walls(r * self.cols + c));
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// Kept here too (it lives in [`crate::geom`]) for callers that name it by this path.
pub use crate::geom::closest_point_on_segment;

impl NavMesh {
    /// The closest wall point to `p` within `max_dist` (inclusive); ties go to the lowest
    /// wall index. `None` when no wall is that close, `p` is not finite or `max_dist` is
    /// negative or NaN. Works for points off the mesh too.
    pub fn nearest_wall(&self, p: Point, max_dist: f64) -> Option<WallHit> {
        self.wall_grid().nearest(self, p, max_dist)
    }

    /// Writes into `out` (cleared first) the indices of the walls near the box `min..max`,
    /// ascending and without duplicates: every wall that intersects the box, and possibly a
    /// few more that share a grid cell with it. Callers test the candidates exactly.
    pub fn walls_near(&self, min: Point, max: Point, out: &mut Vec<usize>) {
        self.wall_grid().walls_near(min, max, out);
    }

    /// Distance from `p` to the nearest wall, or `max_dist` when no wall is closer (also for
    /// a non-finite `p`).
    pub fn clearance(&self, p: Point, max_dist: f64) -> f64 {
        self.nearest_wall(p, max_dist)
            .map_or(max_dist, |hit| hit.distance)
    }
}

/// Small meshes shared by the tests of this module and of [`crate::raycast`].
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::geom::Point;
    use crate::mesh::{BuildInfo, NavMesh, VertId};

    /// A `w × h` grid of unit squares without the `missing` cells, each square split in two
    /// triangles (diagonals alternate), every vertex moved by up to `jitter` in x and y.
    pub(crate) fn grid(w: usize, h: usize, missing: &[(usize, usize)], jitter: f64) -> NavMesh {
        let id = |i: usize, j: usize| VertId((j * (w + 1) + i) as u32);
        let mut vertices = Vec::new();
        for j in 0..=h {
            for i in 0..=w {
                // A fixed pseudo-random offset in [-1, 1] per vertex.
                let hash = |salt: usize| {
                    let x = (i * 7919 + j * 104_729 + salt * 1_299_709) % 2003;
                    x as f64 / 1001.0 - 1.0
                };
                vertices.push(Point::new(
                    i as f64 + jitter * hash(1),
                    j as f64 + jitter * hash(2),
                ));
            }
        }
        let mut triangles = Vec::new();
        for j in 0..h {
            for i in 0..w {
                if missing.contains(&(i, j)) {
                    continue;
                }
                let (v00, v10, v11, v01) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
                if (i + j) % 2 == 0 {
                    triangles.push([v00, v10, v11]);
                    triangles.push([v00, v11, v01]);
                } else {
                    triangles.push([v00, v10, v01]);
                    triangles.push([v10, v11, v01]);
                }
            }
        }
        NavMesh::new(BuildInfo::default(), vertices, triangles).unwrap()
    }

    /// 3 × 3 unit squares, the centre one missing: a hole `[1, 2]²`.
    pub(crate) fn holed() -> NavMesh {
        grid(3, 3, &[(1, 1)], 0.0)
    }

    /// An L-shaped corridor one unit wide: `[0, 1] × [0, 4]` and `[0, 4] × [0, 1]`.
    pub(crate) fn l_shape() -> NavMesh {
        let missing: Vec<_> = (1..4).flat_map(|i| (1..4).map(move |j| (i, j))).collect();
        grid(4, 4, &missing, 0.0)
    }

    /// Two unit squares meeting only at the vertex `(1, 1)`.
    pub(crate) fn pinch() -> NavMesh {
        grid(2, 2, &[(1, 0), (0, 1)], 0.0)
    }

    /// A regular `n`-gon of radius 1 around the origin, fanned from a centre vertex.
    pub(crate) fn fan(n: usize) -> NavMesh {
        let mut vertices = vec![Point::new(0.0, 0.0)];
        for i in 0..n {
            let a = std::f64::consts::TAU * i as f64 / n as f64;
            vertices.push(Point::new(a.cos(), a.sin()));
        }
        let triangles = (0..n)
            .map(|i| {
                [
                    VertId(0),
                    VertId(1 + i as u32),
                    VertId(1 + ((i + 1) % n) as u32),
                ]
            })
            .collect();
        NavMesh::new(BuildInfo::default(), vertices, triangles).unwrap()
    }

    /// A jittered 7 × 6 grid with holes, a notch and a pinch vertex (cells (2, 2) and (3, 3)
    /// are missing and share a corner): slanted walls everywhere.
    pub(crate) fn jittered() -> NavMesh {
        grid(7, 6, &[(2, 2), (3, 3), (5, 1), (5, 2), (0, 5), (6, 4)], 0.2)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::geom::orient;
    use proptest::prelude::*;

    fn brute_nearest(mesh: &NavMesh, p: Point, max_dist: f64) -> Option<WallHit> {
        let mut best: Option<WallHit> = None;
        for (i, w) in mesh.walls().iter().enumerate() {
            let a = mesh.vertices()[w.from.index()];
            let b = mesh.vertices()[w.to.index()];
            let point = closest_point_on_segment(p, a, b);
            let distance = p.distance(point);
            if distance <= max_dist && best.is_none_or(|h| distance < h.distance) {
                best = Some(WallHit {
                    wall: i,
                    point,
                    distance,
                });
            }
        }
        best
    }

    /// Does segment `a b` intersect the closed box?
    fn segment_meets_box(a: Point, b: Point, min: Point, max: Point) -> bool {
        // Liang–Barsky clipping of the parameter range.
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        let d = b - a;
        for (p, dp, lo, hi) in [(a.x, d.x, min.x, max.x), (a.y, d.y, min.y, max.y)] {
            if dp == 0.0 {
                if p < lo || p > hi {
                    return false;
                }
            } else {
                let (ta, tb) = ((lo - p) / dp, (hi - p) / dp);
                t0 = t0.max(ta.min(tb));
                t1 = t1.min(ta.max(tb));
            }
        }
        t0 <= t1
    }

    /// The test meshes, built once (construction derives a lot).
    fn meshes() -> &'static [NavMesh] {
        static MESHES: std::sync::OnceLock<Vec<NavMesh>> = std::sync::OnceLock::new();
        MESHES.get_or_init(|| {
            vec![
                holed(),
                l_shape(),
                pinch(),
                fan(8),
                jittered(),
                grid(40, 30, &[(3, 3), (20, 10), (21, 11)], 0.1),
            ]
        })
    }

    #[test]
    fn every_wall_is_listed_in_the_cells_of_its_endpoints_and_lists_are_sorted() {
        for mesh in meshes() {
            let grid = mesh.wall_grid();
            assert_eq!(grid, &WallGrid::new(mesh));
            for cell in 0..grid.cols * grid.rows {
                assert!(grid.cell_walls(cell).windows(2).all(|w| w[0] < w[1]));
            }
            for (i, w) in mesh.walls().iter().enumerate() {
                for v in [w.from, w.to] {
                    let p = mesh.vertices()[v.index()];
                    let cell = grid.row_of(p.y) * grid.cols + grid.col_of(p.x);
                    assert!(grid.cell_walls(cell).contains(&i));
                }
            }
        }
    }

    #[test]
    fn nearest_wall_in_a_holed_grid() {
        let mesh = holed();
        let hit = mesh.nearest_wall(Point::new(1.5, 0.75), 10.0).unwrap();
        assert_eq!(hit.point, Point::new(1.5, 1.0));
        assert_eq!(hit.distance, 0.25);
        let w = mesh.walls()[hit.wall];
        let (a, b) = (
            mesh.vertices()[w.from.index()],
            mesh.vertices()[w.to.index()],
        );
        assert_eq!((a.y, b.y), (1.0, 1.0));
        // Within reach or not.
        assert!(mesh.nearest_wall(Point::new(1.5, 0.75), 0.2).is_none());
        assert_eq!(mesh.clearance(Point::new(1.5, 0.75), 0.2), 0.2);
        assert_eq!(mesh.clearance(Point::new(1.5, 0.75), 1.0), 0.25);
        // Off the mesh, in the hole and far away.
        assert_eq!(mesh.clearance(Point::new(1.5, 1.5), 1.0), 0.5);
        let far = mesh
            .nearest_wall(Point::new(13.0, 3.0), f64::INFINITY)
            .unwrap();
        assert_eq!((far.point, far.distance), (Point::new(3.0, 3.0), 10.0));
        // Bad input.
        assert!(mesh.nearest_wall(Point::new(f64::NAN, 0.0), 1.0).is_none());
        assert!(mesh.nearest_wall(Point::new(0.5, 0.5), -1.0).is_none());
        assert!(mesh.nearest_wall(Point::new(0.5, 0.5), f64::NAN).is_none());
        assert!(
            WallGrid::default()
                .nearest(&mesh, Point::new(0.5, 0.5), 1.0)
                .is_none()
        );
    }

    #[test]
    fn ties_go_to_the_lowest_wall() {
        let mesh = holed();
        // The corner (0, 0) is on two walls.
        let hit = mesh.nearest_wall(Point::new(-1.0, -1.0), 5.0).unwrap();
        assert_eq!(
            hit,
            brute_nearest(&mesh, Point::new(-1.0, -1.0), 5.0).unwrap()
        );
        assert_eq!(hit.point, Point::new(0.0, 0.0));
        let at_corner: Vec<usize> = (0..mesh.walls().len())
            .filter(|&i| {
                let w = mesh.walls()[i];
                [w.from, w.to]
                    .iter()
                    .any(|v| mesh.vertices()[v.index()] == Point::new(0.0, 0.0))
            })
            .collect();
        assert_eq!(hit.wall, at_corner[0]);
    }

    #[test]
    fn nearest_point_inside_just_outside_and_far() {
        let mesh = holed();
        let inside = Point::new(0.5, 0.25);
        assert_eq!(
            mesh.nearest_point(inside, 0.0),
            Some((inside, mesh.locate(inside).unwrap()))
        );
        let (p, t) = mesh.nearest_point(Point::new(1.5, 1.2), 1.0).unwrap();
        assert_eq!(p, Point::new(1.5, 1.0));
        assert_eq!(mesh.locate(p), Some(t));
        let (p, _) = mesh
            .nearest_point(Point::new(3.000_000_1, 1.3), 1.0)
            .unwrap();
        assert_eq!(p, Point::new(3.0, 1.3));
        assert_eq!(mesh.nearest_point(Point::new(10.0, 10.0), 1.0), None);
        let (p, t) = mesh.nearest_point(Point::new(10.0, 10.0), 100.0).unwrap();
        assert_eq!((p, mesh.locate(p)), (Point::new(3.0, 3.0), Some(t)));
        assert_eq!(
            mesh.nearest_point(Point::new(f64::INFINITY, 0.0), 1.0),
            None
        );
    }

    #[test]
    fn walls_near_a_box() {
        let mesh = holed();
        let mut out = vec![99];
        mesh.walls_near(Point::new(1.4, 0.9), Point::new(1.6, 1.1), &mut out);
        let bottom_of_hole = (0..mesh.walls().len()).find(|&i| {
            let w = mesh.walls()[i];
            let (a, b) = (
                mesh.vertices()[w.from.index()],
                mesh.vertices()[w.to.index()],
            );
            a.y == 1.0 && b.y == 1.0
        });
        assert!(out.contains(&bottom_of_hole.unwrap()));
        assert!(!out.contains(&99));
        mesh.walls_near(Point::new(1.0, 1.0), Point::new(0.0, 0.0), &mut out);
        assert!(out.is_empty());
        mesh.walls_near(Point::new(f64::NAN, 1.0), Point::new(2.0, 2.0), &mut out);
        assert!(out.is_empty());
        // A box covering everything lists every wall once.
        mesh.walls_near(Point::new(-1.0, -1.0), Point::new(4.0, 4.0), &mut out);
        assert_eq!(out, (0..mesh.walls().len()).collect::<Vec<_>>());
    }

    #[test]
    fn nearest_point_nudges_wall_points_onto_the_mesh() {
        // Slanted walls: many closest points round to just outside their triangle.
        let mesh = fan(7);
        let mut nudged = 0;
        for i in 0..100 {
            for j in 0..100 {
                let p = Point::new(-1.5 + i as f64 * 0.03, -1.5 + j as f64 * 0.03);
                if mesh.locate(p).is_some() {
                    continue;
                }
                let hit = mesh.nearest_wall(p, 2.0).unwrap();
                let (q, tri) = mesh.nearest_point(p, 2.0).unwrap();
                assert_eq!(mesh.locate(q), Some(tri));
                assert!(q.distance(hit.point) <= NUDGE * (1.0 + 1e-6));
                if q != hit.point {
                    nudged += 1;
                }
            }
        }
        assert!(nudged > 0);
    }

    fn point_in(lo: f64, hi: f64) -> impl Strategy<Value = Point> {
        (lo..hi, lo..hi).prop_map(|(x, y)| Point::new(x, y))
    }

    proptest! {
        #[test]
        fn nearest_wall_and_clearance_match_brute_force(
            which in 0usize..6,
            p in point_in(-3.0, 12.0),
            max_dist in prop_oneof![Just(f64::INFINITY), 0.0f64..3.0],
        ) {
            let mesh = &meshes()[which];
            let expected = brute_nearest(mesh, p, max_dist);
            prop_assert_eq!(mesh.nearest_wall(p, max_dist), expected);
            prop_assert_eq!(mesh.clearance(p, max_dist), expected.map_or(max_dist, |h| h.distance));
        }

        #[test]
        fn walls_near_lists_every_wall_meeting_the_box(
            which in 0usize..6,
            corner in point_in(-2.0, 10.0),
            w in 0.0f64..3.0,
            h in 0.0f64..3.0,
        ) {
            let mesh = &meshes()[which];
            let max = Point::new(corner.x + w, corner.y + h);
            let mut out = Vec::new();
            mesh.walls_near(corner, max, &mut out);
            prop_assert!(out.windows(2).all(|p| p[0] < p[1]));
            for (i, wall) in mesh.walls().iter().enumerate() {
                let a = mesh.vertices()[wall.from.index()];
                let b = mesh.vertices()[wall.to.index()];
                if segment_meets_box(a, b, corner, max) {
                    prop_assert!(out.contains(&i), "wall {} missing", i);
                }
            }
        }

        #[test]
        fn walls_near_segment_lists_every_wall_within_the_pad(
            which in 0usize..6,
            p in point_in(-3.0, 12.0),
            q in point_in(-3.0, 12.0),
            pad in 0.0f64..2.0,
        ) {
            let mesh = &meshes()[which];
            let mut out = Vec::new();
            mesh.wall_grid().walls_near_segment(p, q, pad, &mut out);
            prop_assert!(out.windows(2).all(|p| p[0] < p[1]));
            for (i, wall) in mesh.walls().iter().enumerate() {
                let a = mesh.vertices()[wall.from.index()];
                let b = mesh.vertices()[wall.to.index()];
                let gap = [
                    a.distance(closest_point_on_segment(a, p, q)),
                    b.distance(closest_point_on_segment(b, p, q)),
                    p.distance(closest_point_on_segment(p, a, b)),
                    q.distance(closest_point_on_segment(q, a, b)),
                ]
                .into_iter()
                .fold(f64::INFINITY, f64::min);
                let crossing = orient(a, b, p) * orient(a, b, q) < 0.0
                    && orient(p, q, a) * orient(p, q, b) < 0.0;
                if gap <= pad || crossing {
                    prop_assert!(out.contains(&i), "wall {} missing (gap {})", i, gap);
                }
            }
        }

        #[test]
        fn nearest_point_locates_and_is_nearest(
            which in 0usize..6,
            p in point_in(-2.0, 10.0),
            max_dist in 0.0f64..4.0,
        ) {
            let mesh = &meshes()[which];
            match mesh.nearest_point(p, max_dist) {
                Some((q, tri)) => {
                    prop_assert_eq!(mesh.locate(q), Some(tri));
                    if mesh.locate(p).is_some() {
                        prop_assert_eq!(q, p);
                    } else {
                        let d = brute_nearest(mesh, p, max_dist).unwrap().distance;
                        prop_assert!((p.distance(q) - d).abs() <= 1.1e-9);
                    }
                }
                None => {
                    prop_assert!(mesh.locate(p).is_none());
                    prop_assert!(brute_nearest(mesh, p, max_dist).is_none());
                }
            }
        }
    }
}
