//! The shipped polygon maps: area, containment and coverage against the polygons.

use navmesh::geom::ring_signed_area;
use navmesh::{Point, Rng, TriId, TriangleLocator};
use navmesh_builder::source::{MapInput, polygon};
use navmesh_builder::triangulate::RefineParams;

use crate::{assert_mesh_invariants, build_map, map_path};

fn input(name: &str) -> MapInput {
    polygon::parse(name, &std::fs::read_to_string(map_path(name)).unwrap()).unwrap()
}

/// Crossing-number point-in-ring test.
fn in_ring(ring: &[Point], p: Point) -> bool {
    let mut inside = false;
    for i in 0..ring.len() {
        let a = ring[i];
        let b = ring[(i + 1) % ring.len()];
        if (a.y > p.y) != (b.y > p.y) && p.x < a.x + (p.y - a.y) / (b.y - a.y) * (b.x - a.x) {
            inside = !inside;
        }
    }
    inside
}

/// Distance from `p` to the nearest ring edge.
fn distance_to_rings(input: &MapInput, p: Point) -> f64 {
    let mut best = f64::INFINITY;
    for region in &input.regions {
        for ring in std::iter::once(&region.outer).chain(&region.holes) {
            for i in 0..ring.len() {
                let a = ring[i];
                let b = ring[(i + 1) % ring.len()];
                let ab = b - a;
                let t = ((p - a).dot(ab) / ab.dot(ab)).clamp(0.0, 1.0);
                best = best.min(p.distance(a + ab * t));
            }
        }
    }
    best
}

fn walkable(input: &MapInput, p: Point) -> bool {
    input
        .regions
        .iter()
        .any(|r| in_ring(&r.outer, p) && !r.holes.iter().any(|h| in_ring(h, p)))
}

fn polygon_area(input: &MapInput) -> f64 {
    input
        .regions
        .iter()
        .map(|r| {
            ring_signed_area(&r.outer).abs()
                - r.holes
                    .iter()
                    .map(|h| ring_signed_area(h).abs())
                    .sum::<f64>()
        })
        .sum()
}

fn check_map(name: &str, params: &RefineParams, islands: u32) {
    let input = input(name);
    let built = build_map(name, params);
    let mesh = &built.mesh;
    assert_mesh_invariants(mesh);
    assert_eq!(mesh.island_count(), islands, "{name}: islands");

    let expected = polygon_area(&input);
    let area = mesh.walkable_area();
    assert!(
        (area - expected).abs() <= 1e-6 * expected,
        "{name}: area {area} vs polygons {expected}"
    );

    for t in 0..mesh.triangle_count() {
        let c = mesh.centroid(TriId(t as u32));
        assert!(
            walkable(&input, c),
            "{name}: triangle {t} centroid {c:?} outside the walkable area"
        );
    }

    let locator = TriangleLocator::new(mesh);
    let b = mesh.bounds();
    let size = b.size();
    let mut rng = Rng::new(11);
    let mut checked = 0;
    while checked < 20_000 {
        let p = Point::new(
            b.min.x + rng.next_f64() * size.x,
            b.min.y + rng.next_f64() * size.y,
        );
        // Points within rounding distance of an outline are ambiguous for the reference test.
        if distance_to_rings(&input, p) < 1e-9 {
            continue;
        }
        let located = locator.locate(mesh, p).is_some();
        assert_eq!(located, walkable(&input, p), "{name}: point {p:?}");
        checked += 1;
    }
}

#[test]
fn arena_json() {
    check_map("arena.json", &RefineParams::default(), 2);
}

#[test]
fn town_json() {
    check_map("town.json", &RefineParams::default(), 2);
}

#[test]
fn town_json_refined() {
    check_map(
        "town.json",
        &RefineParams {
            min_angle_deg: Some(30.0),
            max_area: Some(20.0),
        },
        2,
    );
}
