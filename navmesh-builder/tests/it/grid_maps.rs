//! Every shipped Moving AI map: area, islands, coverage and containment against the grid.

use navmesh::{Point, Rng, TriId, TriangleLocator};
use navmesh_builder::source::grid::{self, GridMap};
use navmesh_builder::triangulate::RefineParams;

use crate::{assert_mesh_invariants, build_map, map_path};

const MAPS: [&str; 5] = [
    "arena.map",
    "lak303d.map",
    "den520d.map",
    "brc202d.map",
    "AcrosstheCape.map",
];

fn grid(name: &str) -> GridMap {
    grid::parse(&std::fs::read_to_string(map_path(&format!("movingai/{name}"))).unwrap()).unwrap()
}

/// True when the closed unit cells around `p` include a passable one (a point on a cell
/// border belongs to both cells).
fn walkable(grid: &GridMap, p: Point) -> bool {
    let xs = [p.x.floor(), (p.x - 1.0).ceil()];
    let ys = [p.y.floor(), (p.y - 1.0).ceil()];
    xs.iter().any(|&x| {
        ys.iter()
            .any(|&y| x >= 0.0 && y >= 0.0 && grid.is_passable(x as usize, y as usize))
    })
}

fn check_map(name: &str) {
    let grid = grid(name);
    let built = build_map(&format!("movingai/{name}"), &RefineParams::default());
    let mesh = &built.mesh;
    assert_mesh_invariants(mesh);

    // Area: exactly the number of passable cells (integer corners make every sum exact).
    assert_eq!(
        mesh.walkable_area(),
        grid.passable_count() as f64,
        "{name}: area"
    );
    assert_eq!(built.known_area, Some(grid.passable_count() as f64));

    // Islands: edge-connected components of passable cells.
    assert_eq!(
        mesh.island_count() as usize,
        grid.component_count(),
        "{name}: islands"
    );

    // No triangle outside the walkable area.
    for t in 0..mesh.triangle_count() {
        let c = mesh.centroid(TriId(t as u32));
        assert!(
            walkable(&grid, c),
            "{name}: triangle {t} centroid {c:?} is on a blocked cell"
        );
    }

    // No walkable point uncovered: the centre and a random point of every passable cell.
    let locator = TriangleLocator::new(mesh);
    let mut rng = Rng::new(7);
    for y in 0..grid.height() {
        for x in 0..grid.width() {
            if !grid.is_passable(x, y) {
                continue;
            }
            for p in [
                Point::new(x as f64 + 0.5, y as f64 + 0.5),
                Point::new(x as f64 + rng.next_f64(), y as f64 + rng.next_f64()),
            ] {
                assert!(
                    locator.locate(mesh, p).is_some(),
                    "{name}: walkable point {p:?} not covered"
                );
            }
        }
    }

    // Round trip through the file format, bit for bit.
    let bytes = navmesh::encode(mesh);
    let decoded = navmesh::decode(&bytes).unwrap();
    assert_eq!(&decoded, mesh);
    assert_eq!(navmesh::encode(&decoded), bytes);
}

#[test]
fn arena() {
    check_map(MAPS[0]);
}

#[test]
fn lak303d() {
    check_map(MAPS[1]);
}

#[test]
fn den520d() {
    check_map(MAPS[2]);
}

#[test]
fn brc202d() {
    check_map(MAPS[3]);
}

#[test]
fn across_the_cape() {
    check_map(MAPS[4]);
}

#[test]
fn refinement_keeps_the_area_and_improves_angles() {
    let plain = build_map("movingai/lak303d.map", &RefineParams::default());
    let params = RefineParams {
        min_angle_deg: Some(25.0),
        max_area: Some(8.0),
    };
    let refined = build_map("movingai/lak303d.map", &params);
    assert_mesh_invariants(&refined.mesh);
    let area = refined.mesh.walkable_area();
    let expected = plain.mesh.walkable_area();
    assert!(
        (area - expected).abs() <= 1e-6 * expected,
        "refined area {area} vs {expected}"
    );
    assert_eq!(refined.mesh.island_count(), plain.mesh.island_count());
    assert!(refined.refine.is_some_and(|r| r.added_vertices > 0));
    let max_area = (0..refined.mesh.triangle_count())
        .map(|t| refined.mesh.triangle_area(TriId(t as u32)))
        .fold(0.0, f64::max);
    assert!(
        max_area <= 8.0 + 1e-9,
        "largest triangle {max_area} above the limit"
    );
    assert_eq!(refined.mesh.info().min_angle_deg, Some(25.0));
}
