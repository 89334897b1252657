//! Triangle costs (`NavMeshQuery::set_triangle_costs`): a path pays for the triangles it
//! enters and takes the longer way round when the short one costs more; a costly band
//! with no way round is crossed without the search flooding the mesh; invalid costs are
//! ignored.

use std::sync::Arc;

use navmesh::{NavMesh, NavMeshQuery, Point, TriId};
use navmesh_builder::pipeline::{SourceKind, build};

/// A 40 × 20 m room with a block in the middle (x 15–25, y 4–14): a 4 m way below the
/// block and a 6 m way above it.
fn room_with_block() -> NavMesh {
    let json = r#"{"regions": [{"outer": [[0, 0], [40, 0], [40, 20], [0, 20]],
        "holes": [[[15, 4], [15, 14], [25, 14], [25, 4]]]}]}"#;
    build(
        "block",
        json,
        SourceKind::Polygon,
        &Default::default(),
        &mut |_| {},
    )
    .unwrap()
    .mesh
}

/// Every triangle whose centroid lies in the way below the block costs `cost`.
fn costs_below_block(mesh: &NavMesh, cost: f64) -> Arc<[f64]> {
    (0..mesh.triangle_count())
        .map(|t| {
            let [a, b, c] = mesh.triangle_points(TriId(t as u32));
            let (x, y) = ((a.x + b.x + c.x) / 3.0, (a.y + b.y + c.y) / 3.0);
            if (15.0..=25.0).contains(&x) && y < 4.0 {
                cost
            } else {
                0.0
            }
        })
        .collect()
}

/// The lowest and highest y of a path's corners.
fn y_range(points: &[Point]) -> (f64, f64) {
    points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.y), hi.max(p.y))
        })
}

#[test]
fn a_costly_way_is_avoided_and_a_cheap_one_kept() {
    let mesh = room_with_block();
    let (start, goal) = (Point::new(5.0, 6.0), Point::new(35.0, 6.0));
    let mut query = NavMeshQuery::new();
    let shortest = query.find_path(&mesh, start, goal, 0.4).unwrap();
    let (lo, _) = y_range(&shortest.points);
    assert!(
        lo < 4.0,
        "the shortest way goes below the block: {shortest:?}"
    );

    // Costs below the block worth more than the detour: the path goes above it.
    let below = costs_below_block(&mesh, 50.0);
    assert!(
        below.iter().any(|&c| c > 0.0),
        "no triangle below the block"
    );
    query.set_triangle_costs(Some(Arc::clone(&below)));
    let round = query.find_path(&mesh, start, goal, 0.4).unwrap();
    let (lo, hi) = y_range(&round.points);
    assert!(
        lo > 4.0 && hi > 14.0,
        "the path still goes below: {round:?}"
    );
    assert!(round.length > shortest.length + 5.0);

    // A cost smaller than the detour leaves the shortest way.
    query.set_triangle_costs(Some(costs_below_block(&mesh, 1.0)));
    let cheap = query.find_path(&mesh, start, goal, 0.4).unwrap();
    assert_eq!(cheap.points, shortest.points);
}

#[test]
fn invalid_costs_and_no_costs_give_the_shortest_path() {
    let mesh = room_with_block();
    let (start, goal) = (Point::new(5.0, 6.0), Point::new(35.0, 6.0));
    let mut query = NavMeshQuery::new();
    let shortest = query.find_path(&mesh, start, goal, 0.4).unwrap();
    let n = mesh.triangle_count();
    let invalid: [Arc<[f64]>; 3] = [
        vec![f64::NAN; n].into(),
        vec![-1.0; n].into(),
        vec![100.0; n + 1].into(),
    ];
    for costs in invalid {
        query.set_triangle_costs(Some(costs));
        let path = query.find_path(&mesh, start, goal, 0.4).unwrap();
        assert_eq!(path.points, shortest.points);
    }
    query.set_triangle_costs(Some(costs_below_block(&mesh, 50.0)));
    query.set_triangle_costs(None);
    assert_eq!(
        query.find_path(&mesh, start, goal, 0.4).unwrap().points,
        shortest.points
    );
}

#[test]
fn a_costly_band_with_no_way_round_is_crossed_without_flooding_the_mesh() {
    // A 100 × 100 m room with a wall across it at y 48–52, open only from x 48 to 52, so
    // that every way from the south half to the north half crosses the gap; pillars 1 m
    // square every 6 m give the search many triangles to expand.
    let mut holes = Vec::new();
    for i in 0..16 {
        for j in 0..16 {
            let (x, y) = (3.0 + 6.0 * f64::from(i), 3.0 + 6.0 * f64::from(j));
            if (45.0..56.0).contains(&y) {
                continue;
            }
            holes.push(format!(
                "[[{x}, {y}], [{x}, {}], [{}, {}], [{}, {y}]]",
                y + 1.0,
                x + 1.0,
                y + 1.0,
                x + 1.0
            ));
        }
    }
    let json = format!(
        r#"{{"regions": [{{"outer": [[0, 0], [100, 0], [100, 48], [52, 48], [52, 52],
            [100, 52], [100, 100], [0, 100], [0, 52], [48, 52], [48, 48], [0, 48]],
            "holes": [{}]}}]}}"#,
        holes.join(", ")
    );
    let mesh = build(
        "band",
        &json,
        SourceKind::Polygon,
        &Default::default(),
        &mut |_| {},
    )
    .unwrap()
    .mesh;
    let (start, goal) = (Point::new(10.0, 10.0), Point::new(90.0, 90.0));
    let mut query = NavMeshQuery::new();
    let shortest = query.find_path(&mesh, start, goal, 0.4).unwrap();
    let plain = query.stats().expanded;
    // Every triangle in the gap costs 1 km.
    let gap: Arc<[f64]> = (0..mesh.triangle_count())
        .map(|t| {
            let [a, b, c] = mesh.triangle_points(TriId(t as u32));
            let (x, y) = ((a.x + b.x + c.x) / 3.0, (a.y + b.y + c.y) / 3.0);
            if (48.0..=52.0).contains(&x) && (48.0..=52.0).contains(&y) {
                1000.0
            } else {
                0.0
            }
        })
        .collect();
    assert!(gap.iter().any(|&c| c > 0.0), "no triangle in the gap");
    query.set_triangle_costs(Some(gap));
    let through = query.find_path(&mesh, start, goal, 0.4).unwrap();
    let costly = query.stats().expanded;
    assert_eq!(through.points, shortest.points);
    // The bound on the costs still to pay makes the search expect the gap's cost from the
    // start: it expands about as many nodes as without costs, not the whole room.
    eprintln!("{costly} nodes expanded with costs, {plain} without");
    assert!(
        costly <= 2 * plain + 10,
        "{costly} nodes expanded with costs, {plain} without"
    );
}
