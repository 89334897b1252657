//! The walkable point nearest to a point, anywhere on the mesh or on one island.

use crate::geom::Point;
use crate::mesh::{IslandId, NavMesh, TriId};
use crate::walls::{NUDGE, WallHit};

impl NavMesh {
    /// The point of the walkable area nearest to `p`, and the triangle [`NavMesh::locate`]
    /// gives for it: `p` itself when it is on the mesh; otherwise the closest point of the
    /// nearest wall within `max_dist` (the walkable area's boundary is made of walls), or
    /// `None` when no wall is that close.
    ///
    /// A wall point computed in floating point may fall a hair outside its triangle; it is
    /// then moved toward the triangle's centroid by the smallest of 1e-12, 1e-11, 1e-10 and
    /// [`NUDGE`] (1e-9) that makes it locate. Only where 1e-9 is below the coordinates'
    /// floating-point resolution (beyond about 1e7 map units) or the triangle is thinner
    /// than that can all of these fail; the triangle's centroid is returned then.
    pub fn nearest_point(&self, p: Point, max_dist: f64) -> Option<(Point, TriId)> {
        if let Some(tri) = self.locate(p) {
            return Some((p, tri));
        }
        let hit = self.nearest_wall(p, max_dist)?;
        Some(self.onto_mesh(hit))
    }

    /// [`NavMesh::nearest_point`] of the island `island` only: where a body on that island
    /// can walk nearest to `p`. `p` itself when it is on that island; else the closest point
    /// of the island's walls within `max_dist` (`p` in a wall, or on another island).
    pub fn nearest_point_on_island(
        &self,
        p: Point,
        max_dist: f64,
        island: IslandId,
    ) -> Option<(Point, TriId)> {
        if let Some(tri) = self.locate(p).filter(|&tri| self.island(tri) == island) {
            return Some((p, tri));
        }
        let on_island = |w: usize| self.island(self.walls()[w].tri) == island;
        let hit = self
            .wall_grid()
            .nearest_where(self, p, max_dist, on_island)?;
        Some(self.onto_mesh(hit))
    }

    /// A wall's closest point, moved onto its own triangle when floating point left it a
    /// hair outside (see [`NavMesh::nearest_point`]).
    fn onto_mesh(&self, hit: WallHit) -> (Point, TriId) {
        let q = hit.point;
        let tri = self.walls()[hit.wall].tri;
        if let Some(found) = self
            .locate(q)
            .filter(|&t| self.island(t) == self.island(tri))
        {
            return (q, found);
        }
        let centroid = self.centroid(tri);
        let towards = centroid - q;
        let len = towards.length();
        if len > 0.0 {
            for step in [1e-12, 1e-11, 1e-10, NUDGE] {
                let moved = q + towards * (step.min(len) / len);
                if let Some(found) = self.locate(moved) {
                    return (moved, found);
                }
            }
        }
        (centroid, tri)
    }
}

#[cfg(test)]
mod tests {
    use crate::geom::Point;
    use crate::walls::fixtures::grid;

    /// Two islands, the squares `[0, 2]²` and `[3, 5] × [0, 2]` of a 5 × 2 grid whose
    /// third column is missing: a point in the gap, nearer the east island, snaps there
    /// for any island, and to the west island's edge for a body of the west island; a
    /// point on the east island snaps to the west island's nearest edge.
    #[test]
    fn the_nearest_point_of_one_island() {
        let mesh = grid(5, 2, &[(2, 0), (2, 1)], 0.0);
        assert_eq!(mesh.island_count(), 2);
        let west = mesh.island(mesh.locate(Point::new(0.5, 0.5)).unwrap());
        let east = mesh.island(mesh.locate(Point::new(4.5, 0.5)).unwrap());
        assert_ne!(west, east);
        let gap = Point::new(2.8, 1.0);
        let (any, tri) = mesh.nearest_point(gap, 10.0).unwrap();
        assert_eq!((any, mesh.island(tri)), (Point::new(3.0, 1.0), east));
        let (own, tri) = mesh.nearest_point_on_island(gap, 10.0, west).unwrap();
        assert_eq!((own, mesh.island(tri)), (Point::new(2.0, 1.0), west));
        let on_east = Point::new(4.0, 1.5);
        let (own, tri) = mesh.nearest_point_on_island(on_east, 10.0, west).unwrap();
        assert_eq!((own, mesh.island(tri)), (Point::new(2.0, 1.5), west));
        assert_eq!(
            mesh.nearest_point_on_island(on_east, 10.0, east),
            mesh.nearest_point(on_east, 10.0)
        );
        // Out of reach of the island's walls.
        assert!(mesh.nearest_point_on_island(on_east, 1.0, west).is_none());
    }
}
