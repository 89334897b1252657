//! Static wall lists per cell: the walls never move, so the wall lists the world asks for
//! many times a tick (every contact, clearance and circling test near a body) are looked up
//! once per map instead of per query.
//!
//! Each cell of a uniform grid over the mesh bounds keeps [`NavMesh::walls_near`] of the
//! cell grown by [`STORED_MARGIN`] on every side. A query for the walls within `reach` of a
//! point `p` with `reach <= MAX_REACH` reads the list of `p`'s cell: the query box
//! `p ± reach` lies inside the grown cell (the gap between the two margins absorbs any
//! rounding in the cell arithmetic), and `walls_near` of a larger box lists every wall of a
//! smaller one, so the list holds every wall `walls_near(p ± reach)` would give (it may hold
//! a few more, farther away; every caller takes a minimum distance or a depth over the
//! list, which those cannot change). Larger reaches, and points off the grid, ask the mesh.

use navmesh::{NavMesh, Point};

use crate::types::Vec2;

/// Largest query reach a cell list answers, metres (a 0.4 m body stepping 0.075 m needs
/// 0.475 m).
pub(crate) const MAX_REACH: f32 = 0.5;

/// How far each cell's box is grown before asking the mesh for its walls, metres.
const STORED_MARGIN: f64 = 0.6;

/// Taken off each cell's wall distance bound, metres: far more than the rounding of the
/// cell arithmetic and of the distances the callers compare the bound with.
const BOUND_SLACK: f64 = 1e-3;

/// Cell side, metres.
const CELL: f64 = 1.0;

/// At most this many cells (the cell side grows on huge maps).
const MAX_CELLS: f64 = 4_194_304.0;

/// Wall indices (into [`NavMesh::walls`]) per cell, in compressed rows.
#[derive(Clone, Debug, Default)]
pub(crate) struct WallCells {
    origin: Point,
    inv_cell: f64,
    cols: usize,
    rows: usize,
    /// Per cell: where its list starts in `items` (it ends where the next cell's starts),
    /// and a lower bound on the distance from any point of the cell to any wall.
    start: Vec<(u32, f32)>,
    items: Vec<u32>,
}

impl WallCells {
    /// Builds the lists for every cell of `mesh`'s bounds.
    pub(crate) fn new(mesh: &NavMesh) -> WallCells {
        let bounds = mesh.bounds();
        let (w, h) = (bounds.max.x - bounds.min.x, bounds.max.y - bounds.min.y);
        if !(w.is_finite() && h.is_finite() && w >= 0.0 && h >= 0.0) {
            return WallCells::default();
        }
        let mut cell = CELL;
        while (w / cell + 1.0) * (h / cell + 1.0) > MAX_CELLS {
            cell *= 2.0;
        }
        let cols = (w / cell).floor() as usize + 1;
        let rows = (h / cell).floor() as usize + 1;
        let mut start = Vec::with_capacity(cols * rows + 1);
        let mut items = Vec::new();
        let mut near = Vec::new();
        let segment = |w: usize| {
            let wall = &mesh.walls()[w];
            (
                mesh.vertices()[wall.from.index()],
                mesh.vertices()[wall.to.index()],
            )
        };
        for r in 0..rows {
            for c in 0..cols {
                let min = Point::new(
                    bounds.min.x + c as f64 * cell - STORED_MARGIN,
                    bounds.min.y + r as f64 * cell - STORED_MARGIN,
                );
                let max = Point::new(
                    min.x + cell + 2.0 * STORED_MARGIN,
                    min.y + cell + 2.0 * STORED_MARGIN,
                );
                mesh.walls_near(min, max, &mut near);
                // Walls not listed are farther than the margin from the cell.
                let cell_min = Point::new(min.x + STORED_MARGIN, min.y + STORED_MARGIN);
                let cell_max = Point::new(cell_min.x + cell, cell_min.y + cell);
                let nearest = near.iter().fold(STORED_MARGIN, |d, &w| {
                    let (a, b) = segment(w);
                    d.min(segment_box_distance(a, b, cell_min, cell_max))
                });
                start.push((items.len() as u32, (nearest - BOUND_SLACK).max(0.0) as f32));
                items.extend(near.iter().map(|&w| w as u32));
            }
        }
        start.push((items.len() as u32, 0.0));
        WallCells {
            origin: bounds.min,
            inv_cell: 1.0 / cell,
            cols,
            rows,
            start,
            items,
        }
    }

    /// Every wall within `reach` of `p` (and perhaps a few more), with a lower bound on the
    /// distance from `p` to any wall; or `None` when the lists cannot answer (reach over
    /// [`MAX_REACH`], `p` off the grid or not finite). (The world reads the same through
    /// [`WallCells::cell`] and [`WallCells::list`], remembering each body's cell.)
    #[cfg(test)]
    pub(crate) fn near(&self, p: Vec2, reach: f32) -> Option<(f32, &[u32])> {
        let (bound, from, to) = self.list(self.cell(p, reach)?);
        Some((bound, self.items(from, to)))
    }

    /// The cell whose list [`WallCells::near`] reads for `p` and `reach`, or `None` when
    /// the lists cannot answer.
    #[inline]
    pub(crate) fn cell(&self, p: Vec2, reach: f32) -> Option<u32> {
        // NaN reaches are refused too.
        if reach.is_nan() || reach > MAX_REACH || self.cols == 0 {
            return None;
        }
        let fx = (f64::from(p.x) - self.origin.x) * self.inv_cell;
        let fy = (f64::from(p.y) - self.origin.y) * self.inv_cell;
        let inside = fx >= 0.0 && fy >= 0.0 && fx < self.cols as f64 && fy < self.rows as f64;
        // The comparisons are false for NaN too.
        if !inside {
            return None;
        }
        Some(((fy as usize) * self.cols + fx as usize) as u32)
    }

    /// Cell `c`'s wall distance bound and where its list lies in the items (see
    /// [`WallCells::items`]).
    #[inline]
    pub(crate) fn list(&self, c: u32) -> (f32, u32, u32) {
        let c = c as usize;
        let ((from, bound), (to, _)) = (self.start[c], self.start[c + 1]);
        (bound, from, to)
    }

    /// The walls of a list [`WallCells::list`] gave.
    #[inline]
    pub(crate) fn items(&self, from: u32, to: u32) -> &[u32] {
        &self.items[from as usize..to as usize]
    }
}

/// Distance between segment `a b` and the box `min max` (0 when they meet).
fn segment_box_distance(a: Point, b: Point, min: Point, max: Point) -> f64 {
    let inside = |p: Point| p.x >= min.x && p.x <= max.x && p.y >= min.y && p.y <= max.y;
    if inside(a) || inside(b) {
        return 0.0;
    }
    let corners = [min, Point::new(max.x, min.y), max, Point::new(min.x, max.y)];
    let cross =
        |o: Point, p: Point, q: Point| (p.x - o.x) * (q.y - o.y) - (p.y - o.y) * (q.x - o.x);
    let mut best = f64::INFINITY;
    for k in 0..4 {
        let (c, d) = (corners[k], corners[(k + 1) % 4]);
        // A proper crossing of an edge of the box.
        let (d1, d2) = (cross(a, b, c), cross(a, b, d));
        let (d3, d4) = (cross(c, d, a), cross(c, d, b));
        if ((d1 > 0.0) != (d2 > 0.0)) && ((d3 > 0.0) != (d4 > 0.0)) {
            return 0.0;
        }
        best = best
            .min(point_segment_distance(c, a, b))
            .min(point_segment_distance(a, c, d))
            .min(point_segment_distance(b, c, d));
    }
    best
}

fn point_segment_distance(p: Point, a: Point, b: Point) -> f64 {
    (p - navmesh::walls::closest_point_on_segment(p, a, b)).length()
}

#[cfg(test)]
mod tests {
    use super::*;
    use navmesh::{BuildInfo, VertId};

    #[test]
    fn cell_lists_hold_every_wall_the_mesh_lists() {
        // A 12 m × 9 m room of two triangles, and a separate triangle inside it (its own
        // island), so cells see walls on both sides.
        let vertices: Vec<Point> = [
            (0.0, 0.0),
            (12.0, 0.0),
            (12.0, 9.0),
            (0.0, 9.0),
            (20.0, 20.0),
            (23.0, 20.0),
            (21.0, 23.0),
        ]
        .iter()
        .map(|&(x, y)| Point::new(x, y))
        .collect();
        let triangles = vec![
            [VertId(0), VertId(1), VertId(2)],
            [VertId(0), VertId(2), VertId(3)],
            [VertId(4), VertId(5), VertId(6)],
        ];
        let Ok(mesh) = NavMesh::new(BuildInfo::default(), vertices, triangles) else {
            panic!("mesh");
        };
        let cells = WallCells::new(&mesh);
        let mut expected = Vec::new();
        let mut bounded = 0;
        let mut k = 0u32;
        for i in 0..4000 {
            k = k.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let x = (k >> 8) as f32 / (1u32 << 24) as f32 * 24.0;
            k = k.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let y = (k >> 8) as f32 / (1u32 << 24) as f32 * 24.0;
            let reach = MAX_REACH * (i % 5) as f32 / 4.0;
            let p = Vec2::new(x, y);
            let r = f64::from(reach);
            let c = Point::new(f64::from(x), f64::from(y));
            mesh.walls_near(c - Point::new(r, r), c + Point::new(r, r), &mut expected);
            let Some(got) = cells.near(p, reach) else {
                panic!("no list at {p:?}");
            };
            let (bound, got) = got;
            for w in &expected {
                assert!(got.contains(&(*w as u32)), "wall {w} missing at {p:?}");
            }
            // The bound is below the true distance to every wall.
            for (w, wall) in mesh.walls().iter().enumerate() {
                let (a, b) = (
                    mesh.vertices()[wall.from.index()],
                    mesh.vertices()[wall.to.index()],
                );
                let d = point_segment_distance(c, a, b);
                assert!(
                    f64::from(bound) <= d,
                    "bound {bound} over {d} (wall {w}) at {p:?}"
                );
            }
            bounded += usize::from(bound > 0.0);
        }
        assert!(bounded > 1000, "only {bounded} points with a wall bound");
        assert!(cells.near(Vec2::new(1.0, 1.0), MAX_REACH * 1.01).is_none());
        assert!(cells.near(Vec2::new(-5.0, 1.0), 0.1).is_none());
        assert!(cells.near(Vec2::new(f32::NAN, 1.0), 0.1).is_none());
    }
}
