//! The bake stage: the walkable faces of a triangulation become a [`NavMesh`].

use navmesh::{BuildInfo, MeshError, NavMesh, Point, VertId};
use spade::Triangulation;

use crate::triangulate::{Cdt, Classification};

/// Copies the walkable faces out of the triangulation, renumbering vertices so the mesh
/// holds only the ones it uses, then derives neighbours and islands ([`NavMesh::new`]).
/// Face order follows spade's face order, so the same input always bakes the same mesh.
pub fn bake(cdt: &Cdt, classes: &Classification, info: BuildInfo) -> Result<NavMesh, MeshError> {
    const UNUSED: u32 = u32::MAX;
    let mut remap = vec![UNUSED; cdt.num_vertices()];
    let mut vertices = Vec::new();
    let mut triangles = Vec::with_capacity(classes.inside_count);
    for face in cdt.inner_faces() {
        if !classes.is_inside(face.fix()) {
            continue;
        }
        // spade's inner faces are counter-clockwise in (x, y), as the mesh requires.
        let tri = face.vertices().map(|v| {
            let slot = &mut remap[v.fix().index()];
            if *slot == UNUSED {
                *slot = vertices.len() as u32;
                let p = v.position();
                vertices.push(Point::new(p.x, p.y));
            }
            VertId(*slot)
        });
        triangles.push(tri);
    }
    NavMesh::new(info, vertices, triangles)
}
