//! Integration tests for the builder: real maps in, meshes checked against the input.

// Test helpers outside `#[test]` functions may panic on setup failures: that is the report.
#![allow(clippy::unwrap_used)]

mod cli;
mod costs;
mod grid_maps;
mod paths;
mod polygon_maps;
mod reference;

use navmesh::{NavMesh, TriId};
use navmesh_builder::pipeline::{Built, SourceKind, build};
use navmesh_builder::triangulate::RefineParams;

/// A map shipped in the repository's `maps/` folder.
pub fn map_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../maps")
        .join(name)
}

/// Builds a shipped map.
pub fn build_map(name: &str, params: &RefineParams) -> Built {
    let path = map_path(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let kind = SourceKind::from_path(&path).unwrap();
    build(name, &text, kind, params, &mut |_| {}).unwrap()
}

/// Checks what every mesh must satisfy, independently of how `NavMesh::new` checked it:
/// every triangle counter-clockwise with positive area, and neighbours symmetric across
/// the same two vertices.
pub fn assert_mesh_invariants(mesh: &NavMesh) {
    for t in 0..mesh.triangle_count() {
        let tri = TriId(t as u32);
        assert!(
            mesh.triangle_area(tri) > 0.0,
            "triangle {t} not CCW or degenerate"
        );
        let verts = mesh.triangles()[t];
        for e in 0..3 {
            if let Some(n) = mesh.neighbours()[t][e] {
                let back = mesh.neighbours()[n.index()]
                    .iter()
                    .position(|&m| m == Some(tri))
                    .unwrap_or_else(|| {
                        panic!("triangle {t} edge {e}: neighbour {n} does not point back")
                    });
                let nv = mesh.triangles()[n.index()];
                assert_eq!(
                    (verts[e], verts[(e + 1) % 3]),
                    (nv[(back + 1) % 3], nv[back]),
                    "triangle {t} edge {e} and neighbour {n} edge {back} are not the same edge"
                );
                assert_eq!(
                    mesh.island(tri),
                    mesh.island(n),
                    "neighbours on different islands"
                );
            }
        }
    }
}
