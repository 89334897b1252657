//! Path-finding's error cases, random queries on every shipped map, and regressions.

use super::*;

// ---------------------------------------------------------------------------------------
// 4. Unreachable goals and invalid queries.
// ---------------------------------------------------------------------------------------

#[test]
fn other_island_is_unreachable_without_expanding() {
    let map = "AcrosstheCape.map";
    let mesh = grid_mesh(map);
    let grid = grid_map(map);
    assert!(
        mesh.island_count() > 1,
        "{map}: {} islands",
        mesh.island_count()
    );
    let mut rng = Rng::new(58);
    let mut cell = || loop {
        let x = (rng.next_f64() * grid.width() as f64) as usize;
        let y = (rng.next_f64() * grid.height() as f64) as usize;
        if grid.is_passable(x, y) {
            let p = Point::new(x as f64 + 0.5, y as f64 + 0.5);
            return (p, mesh.island(mesh.locate(p).unwrap()));
        }
    };
    let mut query = NavMeshQuery::new();
    let mut failures = Vec::new();
    let mut pairs = 0;
    while pairs < 50 {
        let (start, a) = cell();
        let (goal, b) = cell();
        if a == b {
            // Same island: a real search, which leaves its own counters behind.
            let _ = query.find_path(mesh, start, goal, 0.0);
            continue;
        }
        pairs += 1;
        let result = query.find_path(mesh, start, goal, 0.0);
        let expanded = query.stats().expanded;
        if result != Err(PathError::Unreachable) || expanded != 0 {
            failures.push(format!(
                "{start:?} (island {a}) -> {goal:?} (island {b}): {result:?}, {expanded} \
                 expanded"
            ));
        }
    }
    report(&format!("{map}: other-island queries"), pairs, &failures);
}

#[test]
fn off_mesh_endpoints_and_invalid_radius() {
    let map = "arena.map";
    let mesh = grid_mesh(map);
    let grid = grid_map(map);
    let s = scenarios(map)[0];
    let (start, goal) = (s.start, s.goal);
    let blocked = (0..grid.height())
        .flat_map(|y| (0..grid.width()).map(move |x| (x, y)))
        .find(|&(x, y)| {
            !grid.is_passable(x, y)
                && (x > 0 && grid.is_passable(x - 1, y) || grid.is_passable(x + 1, y))
        })
        .map(|(x, y)| Point::new(x as f64 + 0.5, y as f64 + 0.5))
        .unwrap();
    assert!(mesh.locate(blocked).is_none());
    let outside = Point::new(-3.0, 7.0);
    let mut query = NavMeshQuery::new();

    for p in [blocked, outside] {
        assert_eq!(
            query.find_path(mesh, p, goal, 0.0),
            Err(PathError::StartOffMesh { x: p.x, y: p.y })
        );
        assert_eq!(
            query.find_path(mesh, start, p, 0.0),
            Err(PathError::GoalOffMesh { x: p.x, y: p.y })
        );
    }
    let nan = Point::new(f64::NAN, 5.5);
    assert!(matches!(
        query.find_path(mesh, nan, goal, 0.0),
        Err(PathError::StartOffMesh { x, .. }) if x.is_nan()
    ));
    assert!(matches!(
        query.find_path(mesh, start, nan, 0.0),
        Err(PathError::GoalOffMesh { x, .. }) if x.is_nan()
    ));

    for radius in [-1.0, -1e-12, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(
            query.find_path(mesh, start, goal, radius),
            Err(PathError::InvalidRadius { radius })
        );
    }
    assert!(matches!(
        query.find_path(mesh, start, goal, f64::NAN),
        Err(PathError::InvalidRadius { radius }) if radius.is_nan()
    ));

    let max = mesh.max_radius();
    assert!(max > 0.0 && max.is_finite(), "max radius {max}");
    let radius = max + 1.0;
    assert_eq!(
        query.find_path(mesh, start, goal, radius),
        Err(PathError::RadiusTooLarge { radius, max })
    );
}

// ---------------------------------------------------------------------------------------
// 5. Property test: random queries on every shipped map.
// ---------------------------------------------------------------------------------------

/// 64 random queries between random points of the mesh, with radius 0 or random: no
/// panic; every path found starts and ends at the query points and passes raycast; at
/// radius 0, a path between two points of the same island is always found.
fn random_queries(name: &str) {
    let mesh = mesh(name);
    let tris = mesh.triangle_count();
    // A fixed seed: CI must be reproducible. (This test once found, with a fresh seed,
    // a path search that lost turns at vertices a ray passed exactly through; the
    // fixed-seed cases and the scenario tests cover that now.)
    let config = Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config.clone(),
        TestRng::deterministic_rng(config.rng_algorithm),
    );
    let radius = prop_oneof![Just(0.0), 0.0..1.0f64];
    let strategy = (
        (0..tris, 0.0..1.0f64, 0.0..1.0f64),
        (0..tris, 0.0..1.0f64, 0.0..1.0f64),
        radius,
    );
    runner
        .run(&strategy, |((ts, su, sv), (tg, gu, gv), radius)| {
            let start = point_in(mesh, ts, su, sv);
            let goal = point_in(mesh, tg, gu, gv);
            let mut query = NavMeshQuery::new();
            let result = query.find_path(mesh, start, goal, radius);
            if let Ok(path) = &result {
                check_shape(path, start, goal).map_err(TestCaseError::fail)?;
                check_raycasts(mesh, path).map_err(TestCaseError::fail)?;
                prop_assert!(path.length >= start.distance(goal) - 1e-9);
            }
            // A point agent reaches everything on its own island.
            let island = |p| mesh.locate(p).map(|t| mesh.island(t));
            if radius == 0.0 && island(start).is_some() && island(start) == island(goal) {
                prop_assert!(
                    result.is_ok(),
                    "{start:?} -> {goal:?} on one island, radius 0: {result:?}"
                );
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
}

#[test]
fn random_queries_arena_map() {
    random_queries("movingai/arena.map");
}

#[test]
fn random_queries_lak303d() {
    random_queries("movingai/lak303d.map");
}

#[test]
fn random_queries_den520d() {
    random_queries("movingai/den520d.map");
}

#[test]
fn random_queries_brc202d() {
    random_queries("movingai/brc202d.map");
}

#[test]
fn random_queries_across_the_cape() {
    random_queries("movingai/AcrosstheCape.map");
}

#[test]
fn random_queries_arena_json() {
    random_queries("arena.json");
}

#[test]
fn random_queries_town_json() {
    random_queries("town.json");
}

/// Regression: a ray from an earlier root passed exactly through a wall vertex, rounding
/// left the funnel's end a hair short of it, the end was not recognised as the vertex, and
/// the turn there (the only way on) was lost: the search answered Unreachable.
#[test]
fn turn_at_a_vertex_hit_exactly_by_a_funnel_ray_is_found() {
    let mesh = mesh("movingai/brc202d.map");
    let (s, g) = (Point::new(326.0, 120.0), Point::new(404.0, 31.0));
    let mut query = NavMeshQuery::new();
    let forward = query.find_path(mesh, s, g, 0.0).unwrap();
    let backward = query.find_path(mesh, g, s, 0.0).unwrap();
    assert!(
        (forward.length - backward.length).abs() < 1e-6,
        "{} vs {}",
        forward.length,
        backward.length
    );
    assert!(forward.length < 173.85, "{}", forward.length);
}

/// Shortest paths are symmetric: between wall vertices (where rays pass exactly through
/// corners most often) and random interior points, forward and backward lengths agree.
#[test]
fn paths_between_vertices_are_symmetric_on_lak303d() {
    let mesh = mesh("movingai/lak303d.map");
    let mut query = NavMeshQuery::new();
    let mut rng = Rng::new(5);
    let n = mesh.triangle_count();
    let pick = |rng: &mut Rng, vertex: bool| {
        let t = navmesh::TriId(((rng.next_f64() * n as f64) as usize).min(n - 1) as u32);
        let [a, b, c] = mesh.triangle_points(t);
        if vertex {
            return [a, b, c][((rng.next_f64() * 3.0) as usize).min(2)];
        }
        let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
        if u + v > 1.0 {
            u = 1.0 - u;
            v = 1.0 - v;
        }
        a + (b - a) * u + (c - a) * v
    };
    for i in 0..300 {
        let s = pick(&mut rng, i % 2 == 0);
        let g = pick(&mut rng, i % 3 == 0);
        let forward = query.find_path(mesh, s, g, 0.0).map(|p| p.length);
        let backward = query.find_path(mesh, g, s, 0.0).map(|p| p.length);
        match (forward, backward) {
            (Ok(f), Ok(b)) => assert!(
                (f - b).abs() <= 1e-6 * (1.0 + f),
                "{s:?} -> {g:?}: {f} vs {b}"
            ),
            (Err(_), Err(_)) => {}
            (f, b) => panic!("{s:?} -> {g:?}: {f:?} one way, {b:?} the other"),
        }
    }
}

/// A warm query object allocates nothing: after one pass over every lak303d scenario (which
/// sizes the scratch and the caller's output), a second pass, for a point and for a disc of
/// radius 0.4, makes no heap allocation at all. Counted per thread by
/// `allocation-counter`, so tests running beside this one do not disturb it.
#[test]
fn warm_queries_allocate_nothing() {
    let mesh = grid_mesh("lak303d.map");
    let scenarios = scenarios("lak303d.map");
    let mut query = NavMeshQuery::new();
    let mut out = Vec::new();
    for radius in [0.0, 0.4] {
        let run = |query: &mut NavMeshQuery, out: &mut Vec<Point>| {
            let mut found = 0usize;
            for s in &scenarios {
                found += usize::from(
                    query
                        .find_path_into(mesh, s.start, s.goal, radius, out)
                        .is_ok(),
                );
            }
            found
        };
        let warm = run(&mut query, &mut out);
        let mut again = 0;
        let info = allocation_counter::measure(|| again = run(&mut query, &mut out));
        assert_eq!(
            again, warm,
            "radius {radius}: the second pass found other paths"
        );
        assert!(
            warm > scenarios.len() / 2,
            "radius {radius}: only {warm} paths found"
        );
        assert_eq!(
            info.count_total,
            0,
            "radius {radius}: {} allocations ({} bytes) in {} warm queries",
            info.count_total,
            info.bytes_total,
            scenarios.len()
        );
    }
}
