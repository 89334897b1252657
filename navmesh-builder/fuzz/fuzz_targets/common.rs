//! What both targets check of a mesh the builder made: its file round trip, and that
//! point location, rays and paths for several radii answer without panicking, with paths
//! whose length is the sum of their segments and no shorter than the line between their
//! ends, and which, for a point (radius 0), start and end where asked.

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

fn span(a: Point, b: Point) -> f64 {
    ((b.x - a.x).powi(2) + (b.y - a.y).powi(2)).sqrt()
}

pub fn check_mesh(mesh: &NavMesh, bytes: &mut Bytes<'_>) {
    let again = navmesh::decode(&navmesh::encode(mesh)).expect("an encoded mesh decodes");
    assert_eq!(again.triangles(), mesh.triangles());
    let bounds = mesh.bounds();
    let point = |bytes: &mut Bytes<'_>| {
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
            let Ok(path) = query.find_path(mesh, start, goal, radius) else {
                continue;
            };
            let points = &path.points;
            let (first, last) = (points[0], points[points.len() - 1]);
            let walked: f64 = points.windows(2).map(|w| span(w[0], w[1])).sum();
            let tolerance = 1e-6 * walked.max(1.0);
            assert!(
                (walked - path.length).abs() <= tolerance,
                "a path of {} whose segments add up to {walked}",
                path.length
            );
            assert!(
                path.length + tolerance >= span(first, last),
                "a path of {} between ends {} apart",
                path.length,
                span(first, last)
            );
            if radius == 0.0 {
                assert_eq!(
                    (first, last),
                    (start, goal),
                    "a point's path ends where asked"
                );
            }
        }
    }
}
