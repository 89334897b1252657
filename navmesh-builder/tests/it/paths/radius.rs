//! Path-finding with an agent radius: doors too narrow for it, clearance from the walls,
//! and the corner graph against the search.

use super::*;

// ---------------------------------------------------------------------------------------
// 3. Agent radius.
// ---------------------------------------------------------------------------------------

/// Two 10 x 10 rooms, x in [0, 10] and [11, 21], with a 1-thick wall between them and one
/// door through it at y in [2, 3] (1.0 wide).
const ONE_NARROW_DOOR: &str = r#"{"regions": [{"outer": [
    [0, 0], [10, 0], [10, 2], [11, 2], [11, 0], [21, 0], [21, 10], [11, 10], [11, 3],
    [10, 3], [10, 10], [0, 10]]}]}"#;

/// The same rooms with a second door at y in [6, 9] (3.0 wide): the wall between the
/// doors is a hole.
const NARROW_AND_WIDE_DOOR: &str = r#"{"regions": [{"outer": [
    [0, 0], [10, 0], [10, 2], [11, 2], [11, 0], [21, 0], [21, 10], [11, 10], [11, 9],
    [10, 9], [10, 10], [0, 10]],
    "holes": [[[10, 3], [11, 3], [11, 6], [10, 6]]]}]}"#;

fn rooms(json: &str) -> NavMesh {
    build(
        "rooms",
        json,
        SourceKind::Polygon,
        &RefineParams::default(),
        &mut |_| {},
    )
    .unwrap()
    .mesh
}

/// Where the path crosses the middle of the wall (x = 10.5), as y values.
fn door_crossings(path: &Path) -> Vec<f64> {
    path.points
        .windows(2)
        .filter(|w| (w[0].x < 10.5) != (w[1].x < 10.5))
        .map(|w| w[0].y + (w[1].y - w[0].y) * (10.5 - w[0].x) / (w[1].x - w[0].x))
        .collect()
}

/// No turning point closer than `radius` (less 1e-4) to a wall.
fn check_corner_clearance(
    walls: &[(Point, Point)],
    path: &Path,
    radius: f64,
) -> Result<f64, String> {
    let n = path.points.len();
    let mut closest = f64::INFINITY;
    for (i, &p) in path.points.iter().enumerate().take(n - 1).skip(1) {
        let d = wall_distance(walls, p);
        closest = closest.min(d);
        if d < radius - 1e-4 {
            return Err(format!(
                "turning point {i} {p:?} is {d} from a wall, radius {radius}"
            ));
        }
    }
    Ok(closest)
}

#[test]
fn radius_narrow_door_only() {
    let mesh = rooms(ONE_NARROW_DOOR);
    let walls = wall_segments(&mesh);
    let (start, goal) = (Point::new(3.0, 2.5), Point::new(18.0, 2.5));
    let mut query = NavMeshQuery::new();

    // 1.2 wide agent, 1.0 wide door: no way through.
    assert_eq!(
        query.find_path(&mesh, start, goal, 0.6),
        Err(PathError::Unreachable)
    );

    // 0.8 wide agent: straight through the door.
    for radius in [0.0, 0.4] {
        let path = query.find_path(&mesh, start, goal, radius).unwrap();
        check_shape(&path, start, goal).unwrap();
        check_raycasts(&mesh, &path).unwrap();
        check_corner_clearance(&walls, &path, radius).unwrap();
        let crossings = door_crossings(&path);
        assert!(
            crossings.len() == 1 && crossings[0] > 2.0 && crossings[0] < 3.0,
            "radius {radius}: expected one crossing in the narrow door, got {crossings:?}: {:?}",
            path.points
        );
        assert!(
            (path.length - 15.0).abs() < 1e-6,
            "radius {radius}: the straight line is clear, length {}",
            path.length
        );
    }
}

#[test]
fn radius_takes_the_wide_door_when_the_narrow_one_is_too_narrow() {
    let mesh = rooms(NARROW_AND_WIDE_DOOR);
    let walls = wall_segments(&mesh);
    let (start, goal) = (Point::new(3.0, 2.5), Point::new(18.0, 2.5));
    let mut query = NavMeshQuery::new();

    // Small agents: straight through the narrow door.
    for radius in [0.0, 0.4] {
        let path = query.find_path(&mesh, start, goal, radius).unwrap();
        check_shape(&path, start, goal).unwrap();
        let crossings = door_crossings(&path);
        assert!(
            crossings.len() == 1 && crossings[0] > 2.0 && crossings[0] < 3.0,
            "radius {radius}: expected the narrow door, got crossings {crossings:?}: {:?}",
            path.points
        );
        assert!(
            (path.length - 15.0).abs() < 1e-6,
            "radius {radius}: {}",
            path.length
        );
    }

    // 1.2 wide agent: around through the 3.0 wide door.
    let radius = 0.6;
    let path = query.find_path(&mesh, start, goal, radius).unwrap();
    check_shape(&path, start, goal).unwrap();
    check_raycasts(&mesh, &path).unwrap();
    check_corner_clearance(&walls, &path, radius).unwrap();
    let crossings = door_crossings(&path);
    assert!(
        crossings.len() == 1 && crossings[0] > 6.0 && crossings[0] < 9.0,
        "expected one crossing in the wide door (y in 6..9), got {crossings:?}: {:?}",
        path.points
    );
    // Up to y >= 6.6 and back: at least 2 * sqrt(7^2 + 4.1^2) + 1.
    assert!(
        path.length > 2.0 * (49.0f64 + 4.1 * 4.1).sqrt(),
        "{}",
        path.length
    );
}

/// Random pairs of points at least `radius` from every wall, on the same island: every
/// path found keeps its turning points `radius` from the walls.
fn check_clearance(name: &str, radius: f64, seed: u64) {
    const PAIRS: usize = 100;
    let mesh = mesh(name);
    let walls = wall_segments(mesh);
    let b = mesh.bounds();
    let size = b.size();
    let mut rng = Rng::new(seed);
    let mut sample = || loop {
        let p = Point::new(
            b.min.x + rng.next_f64() * size.x,
            b.min.y + rng.next_f64() * size.y,
        );
        if let Some(t) = mesh.locate(p)
            && wall_distance(&walls, p) >= radius + 1e-3
        {
            return (p, t);
        }
    };
    let mut query = NavMeshQuery::new();
    let mut failures = Vec::new();
    let (mut found, mut unreachable, mut pairs) = (0, 0, 0);
    let mut closest_corner = f64::INFINITY;
    let mut closest_segment = f64::INFINITY;
    while pairs < PAIRS {
        let (start, ts) = sample();
        let (goal, tg) = sample();
        if mesh.island(ts) != mesh.island(tg) {
            continue;
        }
        pairs += 1;
        let path = match query.find_path(mesh, start, goal, radius) {
            Ok(path) => path,
            Err(PathError::Unreachable) => {
                unreachable += 1;
                continue;
            }
            Err(e) => {
                failures.push(format!("{start:?} -> {goal:?}: {e:?}"));
                continue;
            }
        };
        found += 1;
        let result = check_shape(&path, start, goal)
            .and_then(|()| check_raycasts(mesh, &path))
            .and_then(|()| check_corner_clearance(&walls, &path, radius));
        match result {
            Ok(closest) => closest_corner = closest_corner.min(closest),
            Err(e) => failures.push(format!(
                "{start:?} -> {goal:?}: {e}; path {:?}",
                path.points
            )),
        }
        // How close the segments (not just the corners) come to a wall vertex: at least
        // half the radius, which the clearance repair keeps (`navmesh/src/path/clearance.rs`).
        for w in path.points.windows(2) {
            for &(a, _) in &walls {
                closest_segment = closest_segment.min(segment_distance(a, w[0], w[1]));
            }
        }
    }
    eprintln!(
        "clearance {name}, radius {radius}: {found} of {pairs} same-island pairs found a \
         path ({unreachable} unreachable); closest turning point {closest_corner:.4}, \
         closest segment to a wall vertex {closest_segment:.4}"
    );
    report(&format!("clearance on {name}"), pairs, &failures);
    assert!(
        closest_segment >= 0.5 * radius - 1e-9,
        "{name}: a segment passes {closest_segment} from a wall vertex, under half the \
         radius {radius}"
    );
    assert!(
        found * 2 >= pairs,
        "{name}: only {found} of {pairs} same-island pairs (both ends {radius} clear of \
         walls) found a path"
    );
}

#[test]
fn radius_clearance_lak303d() {
    check_clearance("movingai/lak303d.map", 0.3, 303);
}

#[test]
fn radius_clearance_town() {
    check_clearance("town.json", 0.3, 42);
}

/// With a radius, a query answers from the corner graph when the shortest point path is
/// admissible under the search's width rule, and searches otherwise. Against the search
/// alone (`set_corner_graph(false)`), on random same-island pairs (points of random
/// triangles) and, on grid maps, every `step`-th scenario, for several radii: the same
/// outcome and the same length.
///
/// Tolerances: when both derive their answer from the same point path, the offsetting is
/// the same code on the same input and the lengths are bit-identical; `1e-9 * (1 + length)`
/// only leaves room for nothing else. Two equally long point paths (a tie: mirror-image
/// detours on symmetric maps, or corners collinear up to the rounding of their coordinates,
/// where the exact corner graph bends by a hair and the search goes straight) are offset
/// differently: such a pair counts as a tie, not a failure, when the two point paths'
/// lengths agree within the same `1e-9 * (1 + length)` (different sums of the same
/// distances round apart by about 1e-15; a genuinely different detour on these maps is
/// longer by far more than 1e-9). Ties must stay rare.
fn check_corner_graph_radius(name: &str, scenario_step: Option<usize>, seed: u64) {
    const PAIRS: usize = 200;
    let mesh = mesh(name);
    mesh.prepare_point_queries();
    let tris = mesh.triangle_count();
    let mut rng = Rng::new(seed);
    let mut pairs = Vec::new();
    while pairs.len() < PAIRS {
        let mut point = || {
            let t = (rng.next_f64() * tris as f64) as usize;
            (point_in(mesh, t, rng.next_f64(), rng.next_f64()), t)
        };
        let ((start, ts), (goal, tg)) = (point(), point());
        if mesh.island(TriId(ts as u32)) == mesh.island(TriId(tg as u32)) {
            pairs.push((start, goal));
        }
    }
    if let (Some(step), Some(map)) = (scenario_step, name.strip_prefix("movingai/")) {
        pairs.extend(
            scenarios(map)
                .iter()
                .step_by(step)
                .map(|s| (s.start, s.goal)),
        );
    }
    let length = |points: &[Point]| -> f64 { points.windows(2).map(|w| w[0].distance(w[1])).sum() };
    let mut fast = NavMeshQuery::new();
    let mut search = NavMeshQuery::new();
    search.set_corner_graph(false);
    let mut failures = Vec::new();
    let mut ties = 0;
    let started = Instant::now();
    for radius in [0.4, 0.5, 1.0] {
        let (mut quick, mut found) = (0, 0);
        for &(start, goal) in &pairs {
            let a = fast.find_path(mesh, start, goal, radius);
            let corner_graph = fast.stats().corner_graph;
            quick += usize::from(corner_graph);
            let b = search.find_path(mesh, start, goal, radius);
            assert!(!search.stats().corner_graph);
            match (&a, &b) {
                (Ok(a), Ok(b)) => {
                    found += 1;
                    let tolerance = |l: f64| 1e-9 * (1.0 + l);
                    if (a.length - b.length).abs() <= tolerance(b.length) {
                        continue;
                    }
                    let (pa, pb) = (fast.last_point_path(), search.last_point_path());
                    if (length(pa) - length(pb)).abs() <= tolerance(length(pb)) {
                        ties += 1;
                        eprintln!(
                            "tie: radius {radius}, {start:?} -> {goal:?}: point paths {pa:?} \
                             and {pb:?}"
                        );
                        continue;
                    }
                    failures.push(format!(
                        "radius {radius}, {start:?} -> {goal:?} (corner graph: {corner_graph}): \
                         length {} against the search's {}; point paths {pa:?} and {pb:?}",
                        a.length, b.length,
                    ));
                }
                (Err(x), Err(y)) if x == y => {}
                _ => failures.push(format!(
                    "radius {radius}, {start:?} -> {goal:?} (corner graph: {corner_graph}): \
                     {a:?} against the search's {b:?}"
                )),
            }
        }
        eprintln!(
            "corner graph with radius {radius} on {name}: {quick} of {} queries answered \
             from the corner graph, {found} found",
            pairs.len()
        );
    }
    let total = 3 * pairs.len();
    eprintln!(
        "corner graph with radius on {name}: {total} queries ({ties} ties) in {:.2?}",
        started.elapsed()
    );
    report(
        &format!("corner graph with radius on {name}"),
        total,
        &failures,
    );
    assert!(
        ties * 100 <= total,
        "{name}: {ties} ties in {total} queries"
    );
}

#[test]
fn radius_corner_graph_matches_search_den520d() {
    check_corner_graph_radius("movingai/den520d.map", Some(4), 520);
}

#[test]
fn radius_corner_graph_matches_search_brc202d() {
    check_corner_graph_radius("movingai/brc202d.map", Some(10), 202);
}

#[test]
fn radius_corner_graph_matches_search_lak303d() {
    check_corner_graph_radius("movingai/lak303d.map", Some(4), 303);
}

#[test]
fn radius_corner_graph_matches_search_arena_map() {
    check_corner_graph_radius("movingai/arena.map", Some(1), 1);
}

#[test]
fn radius_corner_graph_matches_search_arena_json() {
    check_corner_graph_radius("arena.json", None, 2);
}

#[test]
fn radius_corner_graph_matches_search_town_json() {
    check_corner_graph_radius("town.json", None, 3);
}
