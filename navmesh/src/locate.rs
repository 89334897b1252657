//! Point location: which triangle lies under a point, through a uniform grid of triangle
//! bounding boxes (no scan of the mesh).

use crate::geom::{Point, grid_cell, orient};
use crate::mesh::{NavMesh, TriId};

/// A uniform grid over the mesh bounds; each cell lists the triangles whose bounding box
/// overlaps it, in ascending id order (compressed rows: `cell_start` indexes `tris`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriangleLocator {
    origin: Point,
    inv_cell: f64,
    cols: usize,
    rows: usize,
    cell_start: Vec<u32>,
    tris: Vec<TriId>,
}

/// Cell entries the index may hold per triangle, on average. A mesh of thin triangles
/// spanning the map (a convex polygon cut into a fan from one corner, say) would otherwise
/// list most triangles in most cells: memory quadratic in the triangle count, from a file
/// a few megabytes long. Such a mesh gets coarser cells instead, longer lists to scan, and
/// the same answers.
const MAX_ENTRIES_PER_TRIANGLE: u64 = 16;

impl TriangleLocator {
    /// Builds the index: about one cell per triangle, square cells (coarser when the
    /// triangles' bounding boxes would fill more than `MAX_ENTRIES_PER_TRIANGLE` cells
    /// each on average).
    pub fn new(mesh: &NavMesh) -> TriangleLocator {
        let bounds = mesh.bounds();
        let size = bounds.size();
        let area = (size.x * size.y).max(f64::MIN_POSITIVE);
        let mut cell = (area / mesh.triangle_count().max(1) as f64)
            .sqrt()
            .max(1e-9);
        let most = MAX_ENTRIES_PER_TRIANGLE * mesh.triangle_count().max(1) as u64;
        let (mut locator, ranges) = loop {
            let cols = ((size.x / cell).ceil() as usize).clamp(1, 1 << 14);
            let rows = ((size.y / cell).ceil() as usize).clamp(1, 1 << 14);
            let locator = TriangleLocator {
                origin: bounds.min,
                inv_cell: 1.0 / cell,
                cols,
                rows,
                cell_start: Vec::new(),
                tris: Vec::new(),
            };
            let ranges: Vec<_> = (0..mesh.triangle_count())
                .map(|t| locator.cell_range(mesh.triangle_points(TriId(t as u32))))
                .collect();
            let entries: u64 = ranges
                .iter()
                .map(|&(c0, c1, r0, r1)| ((c1 - c0 + 1) * (r1 - r0 + 1)) as u64)
                .sum();
            // One cell over the whole map lists every triangle once: the loop ends.
            if entries <= most || (cols == 1 && rows == 1) {
                break (locator, ranges);
            }
            // Entries shrink about with the square of the cell's size.
            cell *= ((entries as f64 / most as f64).sqrt()).max(2.0);
        };
        let cols = locator.cols;
        locator.cell_start = vec![0; cols * locator.rows + 1];
        // Two passes over the triangles: count per cell, then fill. Filling in id order keeps
        // every cell's list sorted, which makes `locate` deterministic.
        for &(c0, c1, r0, r1) in &ranges {
            for r in r0..=r1 {
                for c in c0..=c1 {
                    locator.cell_start[r * cols + c + 1] += 1;
                }
            }
        }
        for i in 1..locator.cell_start.len() {
            locator.cell_start[i] += locator.cell_start[i - 1];
        }
        let mut fill = locator.cell_start.clone();
        locator.tris = vec![TriId(0); *locator.cell_start.last().unwrap_or(&0) as usize];
        for (t, &(c0, c1, r0, r1)) in ranges.iter().enumerate() {
            for r in r0..=r1 {
                for c in c0..=c1 {
                    let slot = &mut fill[r * cols + c];
                    locator.tris[*slot as usize] = TriId(t as u32);
                    *slot += 1;
                }
            }
        }
        locator
    }

    fn cell_of(&self, p: Point) -> (usize, usize) {
        // NaN and out-of-range values clamp to the border; callers check containment anyway.
        (
            grid_cell(
                (p.x - self.origin.x) * self.inv_cell,
                self.cols.saturating_sub(1),
            ),
            grid_cell(
                (p.y - self.origin.y) * self.inv_cell,
                self.rows.saturating_sub(1),
            ),
        )
    }

    fn cell_range(&self, pts: [Point; 3]) -> (usize, usize, usize, usize) {
        let (mut c0, mut r0) = self.cell_of(pts[0]);
        let (mut c1, mut r1) = (c0, r0);
        for &p in &pts[1..] {
            let (c, r) = self.cell_of(p);
            c0 = c0.min(c);
            c1 = c1.max(c);
            r0 = r0.min(r);
            r1 = r1.max(r);
        }
        (c0, c1, r0, r1)
    }

    /// The triangle containing `p` (boundary included), or `None` off the mesh. A point on a
    /// shared edge or vertex resolves to the lowest triangle id that contains it.
    pub fn locate(&self, mesh: &NavMesh, p: Point) -> Option<TriId> {
        if !p.is_finite() {
            return None;
        }
        let b = mesh.bounds();
        if p.x < b.min.x || p.y < b.min.y || p.x > b.max.x || p.y > b.max.y {
            return None;
        }
        let (c, r) = self.cell_of(p);
        let cell = r * self.cols + c;
        let candidates =
            &self.tris[self.cell_start[cell] as usize..self.cell_start[cell + 1] as usize];
        candidates.iter().copied().find(|&t| {
            let [a, b, c] = mesh.triangle_points(t);
            orient(a, b, p) >= 0.0 && orient(b, c, p) >= 0.0 && orient(c, a, p) >= 0.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{BuildInfo, VertId};

    /// A 2 m square cut along its diagonal from (0, 0) to (2, 2) into two triangles.
    fn square() -> NavMesh {
        let v = vec![
            Point::new(0.0, 0.0),
            Point::new(2.0, 0.0),
            Point::new(2.0, 2.0),
            Point::new(0.0, 2.0),
        ];
        let t = vec![
            [VertId(0), VertId(1), VertId(2)],
            [VertId(0), VertId(2), VertId(3)],
        ];
        NavMesh::new(BuildInfo::default(), v, t).unwrap()
    }

    #[test]
    fn locates_inside_on_edges_and_off_mesh() {
        let mesh = square();
        let loc = TriangleLocator::new(&mesh);
        assert_eq!(loc.locate(&mesh, Point::new(1.5, 0.5)), Some(TriId(0)));
        assert_eq!(loc.locate(&mesh, Point::new(0.5, 1.5)), Some(TriId(1)));
        // The shared diagonal and the shared corner resolve to the lower id.
        assert_eq!(loc.locate(&mesh, Point::new(1.0, 1.0)), Some(TriId(0)));
        assert_eq!(loc.locate(&mesh, Point::new(0.0, 0.0)), Some(TriId(0)));
        assert_eq!(loc.locate(&mesh, Point::new(2.0, 2.0)), Some(TriId(0)));
        assert_eq!(loc.locate(&mesh, Point::new(2.5, 1.0)), None);
        assert_eq!(loc.locate(&mesh, Point::new(f64::NAN, 1.0)), None);
    }

    #[test]
    fn locating_near_a_hint_finds_what_locating_finds() {
        let mesh = square();
        let mut inside_hint = 0;
        // Points inside each triangle, on the shared diagonal, on corners and off the mesh,
        // with every hint: the right one, the wrong one, none and one past the mesh.
        for i in -1..=9 {
            for j in -1..=9 {
                let p = Point::new(f64::from(i) * 0.25, f64::from(j) * 0.25);
                for hint in [None, Some(TriId(0)), Some(TriId(1)), Some(TriId(7))] {
                    let near = mesh.locate_near(hint, p);
                    assert_eq!(near, mesh.locate(p), "{p:?} hint {hint:?}");
                    inside_hint += usize::from(near.is_some() && near == hint);
                }
            }
        }
        assert!(
            inside_hint > 20,
            "too few points in their hint: {inside_hint}"
        );
    }

    /// A quarter disc fanned from its centre's far corner: thin triangles whose bounding
    /// boxes each cover most of the map. The index stays within its entries per triangle
    /// (uncapped, 4,000 such triangles would list about 14 million entries) and still finds
    /// the triangle under each point, the lowest id where several share it.
    #[test]
    fn slivers_spanning_the_map_get_coarser_cells_and_the_same_answers() {
        let n = 4_000u32;
        let mut v = vec![Point::new(0.0, 0.0)];
        for i in 0..=n {
            let a = std::f64::consts::FRAC_PI_2 * f64::from(i) / f64::from(n);
            v.push(Point::new(10.0 + a.cos(), 10.0 + a.sin()));
        }
        let t: Vec<_> = (0..n)
            .map(|i| [VertId(0), VertId(1 + i), VertId(2 + i)])
            .collect();
        let mesh = NavMesh::new(BuildInfo::default(), v, t).unwrap();
        let loc = TriangleLocator::new(&mesh);
        assert!(
            loc.tris.len() as u64 <= MAX_ENTRIES_PER_TRIANGLE * u64::from(n),
            "{} entries for {n} triangles",
            loc.tris.len()
        );
        let brute = |p: Point| {
            (0..n).map(TriId).find(|&t| {
                let [a, b, c] = mesh.triangle_points(t);
                orient(a, b, p) >= 0.0 && orient(b, c, p) >= 0.0 && orient(c, a, p) >= 0.0
            })
        };
        let mut inside = 0;
        for i in 0..=60 {
            for j in 0..=60 {
                let p = Point::new(f64::from(i) * 0.19, f64::from(j) * 0.19);
                let found = loc.locate(&mesh, p);
                assert_eq!(found, brute(p), "{p:?}");
                inside += usize::from(found.is_some());
            }
        }
        assert!(inside > 100, "too few points on the mesh: {inside}");
    }
}
