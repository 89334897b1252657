//! Path-finding acceptance tests: `NavMeshQuery::find_path` on the shipped maps, against
//! the Moving AI scenarios, an exact any-angle reference ([`crate::reference`]), the
//! mesh's own raycast, agent radius and the error cases.
//!
//! Query points are cell centres `(x + 0.5, y + 0.5)` throughout. Meshes are the default
//! (unrefined) builds, cached once per map for the whole test binary.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use navmesh::raycast::Raycast;
use navmesh::{NavMesh, NavMeshQuery, Path, PathError, Point, Rng, TriId};
use navmesh_builder::pipeline::{SourceKind, build};
use navmesh_builder::source::grid::{self, GridMap};
use navmesh_builder::triangulate::RefineParams;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRng, TestRunner};

use crate::reference::{Grid, Reference, doubled, par_map};
use crate::{build_map, map_path};

/// How many failures a test lists before the summary.
const SHOW: usize = 12;

// ---------------------------------------------------------------------------------------
// Fixtures: scenarios, grids, cached meshes and references.
// ---------------------------------------------------------------------------------------

/// One line of a `.scen` file, as cell-centre points.
#[derive(Clone, Copy, Debug)]
struct Scenario {
    /// 1-based line in the file.
    line: usize,
    start: Point,
    goal: Point,
    /// The 8-connected (octile) optimum the file states.
    octile: f64,
}

/// Reads `maps/movingai/<map>.scen` (its own small parser, independent of the builder's).
fn scenarios(map: &str) -> Vec<Scenario> {
    let path = map_path(&format!("movingai/{map}.scen"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if i == 0 {
            assert!(
                line.starts_with("version"),
                "{}: no version line",
                path.display()
            );
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 9, "{}:{}: {line}", path.display(), i + 1);
        let num = |k: usize| -> f64 { f[k].trim().parse().unwrap() };
        out.push(Scenario {
            line: i + 1,
            start: Point::new(num(4) + 0.5, num(5) + 0.5),
            goal: Point::new(num(6) + 0.5, num(7) + 0.5),
            octile: num(8),
        });
    }
    assert!(!out.is_empty(), "{}: no scenarios", path.display());
    out
}

fn grid_map(map: &str) -> GridMap {
    grid::parse(&std::fs::read_to_string(map_path(&format!("movingai/{map}"))).unwrap()).unwrap()
}

/// One lazily built value per key, shared by all tests of the binary (tests run on
/// several threads; a second test asking for the same key waits for the first).
type Cache<T> = Mutex<BTreeMap<String, &'static OnceLock<T>>>;

fn cached<T: Send + Sync>(
    cache: &'static Cache<T>,
    key: &str,
    make: impl FnOnce() -> T,
) -> &'static T {
    // The map only hands out `&'static` cells; its lock is released at the end of the
    // statement, before the (possibly slow) initialisation.
    let cell: &'static OnceLock<T> = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(key.to_owned())
        .or_insert_with(|| Box::leak(Box::new(OnceLock::new())));
    cell.get_or_init(make)
}

/// The default build of a shipped map (`"movingai/arena.map"`, `"town.json"`, ...).
fn mesh(name: &str) -> &'static NavMesh {
    static MESHES: Cache<NavMesh> = Mutex::new(BTreeMap::new());
    cached(&MESHES, name, || {
        build_map(name, &RefineParams::default()).mesh
    })
}

/// The default build of a Moving AI map by file name (`"arena.map"`).
fn grid_mesh(map: &str) -> &'static NavMesh {
    mesh(&format!("movingai/{map}"))
}

/// The exact reference for a Moving AI map.
fn reference(map: &str) -> &'static Reference {
    static REFERENCES: Cache<Reference> = Mutex::new(BTreeMap::new());
    cached(&REFERENCES, map, || {
        let started = Instant::now();
        let r = Reference::new(&grid_map(map));
        eprintln!(
            "reference {map}: {} corners, {} visibility edges, built in {:.2?}",
            r.corner_count(),
            r.edge_count(),
            started.elapsed()
        );
        r
    })
}

/// The reference's shortest path for every scenario of a map (`None`: no path).
fn reference_paths(map: &str) -> &'static [Option<Path>] {
    static PATHS: Cache<Vec<Option<Path>>> = Mutex::new(BTreeMap::new());
    cached::<Vec<Option<Path>>>(&PATHS, map, || {
        let r = reference(map);
        let scen = scenarios(map);
        let started = Instant::now();
        let paths: Vec<Option<Path>> = par_map(scen.len(), |i| {
            let s = &scen[i];
            let (length, points) =
                r.shortest(doubled(s.start).unwrap(), doubled(s.goal).unwrap())?;
            let points = points
                .iter()
                .map(|&(x, y)| Point::new(x as f64 / 2.0, y as f64 / 2.0))
                .collect();
            Some(Path { points, length })
        });
        eprintln!(
            "reference {map}: {} queries in {:.2?}",
            scen.len(),
            started.elapsed()
        );
        paths
    })
}

// ---------------------------------------------------------------------------------------
// Shared checks.
// ---------------------------------------------------------------------------------------

/// `Ok` when the mesh's raycast finds the segment clear.
fn raycast_clear(mesh: &NavMesh, a: Point, b: Point) -> Result<(), String> {
    match mesh.raycast(a, b) {
        Ok(Raycast::Clear) => Ok(()),
        other => Err(format!("raycast {a:?} -> {b:?} is not clear: {other:?}")),
    }
}

/// The shape every found path must have: at least two points, from exactly `start` to
/// exactly `goal`, all finite, and `length` the sum of its segments.
fn check_shape(path: &Path, start: Point, goal: Point) -> Result<(), String> {
    let pts = &path.points;
    if pts.len() < 2 {
        return Err(format!("path has {} points: {pts:?}", pts.len()));
    }
    if pts[0] != start || pts[pts.len() - 1] != goal {
        return Err(format!(
            "path runs {:?} -> {:?}, expected {start:?} -> {goal:?}",
            pts[0],
            pts[pts.len() - 1]
        ));
    }
    if let Some(p) = pts.iter().find(|p| !p.is_finite()) {
        return Err(format!("non-finite point {p:?}"));
    }
    let sum: f64 = pts.windows(2).map(|w| w[0].distance(w[1])).sum();
    if path.length.is_nan() || (path.length - sum).abs() > 1e-9 * sum.max(1.0) {
        return Err(format!(
            "length {} but the segments sum to {sum}",
            path.length
        ));
    }
    Ok(())
}

/// Every segment of the path passes the mesh's raycast.
fn check_raycasts(mesh: &NavMesh, path: &Path) -> Result<(), String> {
    path.points
        .windows(2)
        .try_for_each(|w| raycast_clear(mesh, w[0], w[1]))
}

/// Independently of the raycast: a radius-0 path on a grid map turns only at lattice
/// points (obstacle corners), and every segment lies in the walkable area (exact test).
fn check_on_grid(grid: &Grid, path: &Path) -> Result<(), String> {
    let n = path.points.len();
    let mut pts = Vec::with_capacity(n);
    for (i, &p) in path.points.iter().enumerate() {
        let d = doubled(p).ok_or_else(|| format!("point {i} {p:?} is not on the half grid"))?;
        if i > 0 && i + 1 < n && (d.0 % 2 != 0 || d.1 % 2 != 0) {
            return Err(format!(
                "turning point {i} {p:?} is not an obstacle corner (a lattice point)"
            ));
        }
        pts.push(d);
    }
    for (i, w) in pts.windows(2).enumerate() {
        if !grid.visible(w[0], w[1]) {
            return Err(format!(
                "segment {i} {:?} -> {:?} leaves the walkable area",
                path.points[i],
                path.points[i + 1]
            ));
        }
    }
    Ok(())
}

/// Distance from `p` to the segment `a b` (brute force, independent of `navmesh::geom`).
fn segment_distance(p: Point, a: Point, b: Point) -> f64 {
    let ab = b - a;
    let len2 = ab.dot(ab);
    let t = if len2 > 0.0 {
        ((p - a).dot(ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    p.distance(a + ab * t)
}

/// All wall segments of a mesh.
fn wall_segments(mesh: &NavMesh) -> Vec<(Point, Point)> {
    let v = mesh.vertices();
    mesh.walls()
        .iter()
        .map(|w| (v[w.from.index()], v[w.to.index()]))
        .collect()
}

fn wall_distance(walls: &[(Point, Point)], p: Point) -> f64 {
    walls
        .iter()
        .map(|&(a, b)| segment_distance(p, a, b))
        .fold(f64::INFINITY, f64::min)
}

/// Fails with the first few messages and a count.
fn report(what: &str, total: usize, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{what}: {} of {total} failed:\n  {}{}",
        failures.len(),
        failures[..failures.len().min(SHOW)].join("\n  "),
        if failures.len() > SHOW { "\n  ..." } else { "" }
    );
}

// ---------------------------------------------------------------------------------------
// 1. Exactness against the reference (every shipped Moving AI map; the brief asked for
//    arena and lak303d, the reference is fast enough for all five).
// ---------------------------------------------------------------------------------------

/// The reference itself: a path for every scenario, from the start to the goal, never
/// longer than the file's octile optimum (an any-angle optimum cannot exceed the
/// 8-connected one), never shorter than the straight line.
fn check_reference(map: &str) {
    let scen = scenarios(map);
    let paths = reference_paths(map);
    let mut failures = Vec::new();
    let mut min_ratio = f64::INFINITY;
    for (s, path) in scen.iter().zip(paths) {
        let Some(path) = path else {
            failures.push(format!("line {}: reference found no path", s.line));
            continue;
        };
        let len = path.length;
        if let Err(e) = check_shape(path, s.start, s.goal) {
            failures.push(format!("line {}: reference path: {e}", s.line));
        }
        if len > s.octile + 1e-3 {
            failures.push(format!(
                "line {}: reference {len} longer than the octile optimum {}: {:?}",
                s.line, s.octile, path.points
            ));
        }
        if len < s.start.distance(s.goal) - 1e-9 {
            failures.push(format!(
                "line {}: reference {len} shorter than the straight line",
                s.line
            ));
        }
        if s.octile > 0.0 {
            min_ratio = min_ratio.min(len / s.octile);
        }
    }
    eprintln!(
        "reference {map}: smallest reference/octile ratio {min_ratio:.4} over {} scenarios",
        scen.len()
    );
    report(&format!("reference on {map}"), scen.len(), &failures);
}

/// `find_path` at radius 0 against the reference: never shorter (beyond 1e-4), and within
/// 1% on at least 99% of the queries.
fn check_against_reference(map: &str) {
    let scen = scenarios(map);
    let paths = reference_paths(map);
    let mesh = grid_mesh(map);
    let mut query = NavMeshQuery::new();
    let mut failures = Vec::new();
    let mut over = Vec::new();
    let (mut sum, mut worst, mut worst_line, mut compared) = (0.0, f64::NEG_INFINITY, 0, 0);
    let started = Instant::now();
    for (s, exact) in scen.iter().zip(paths) {
        let exact = exact
            .as_ref()
            .expect("the reference finds every scenario (see its own test)");
        let path = match query.find_path(mesh, s.start, s.goal, 0.0) {
            Ok(path) => path,
            Err(e) => {
                failures.push(format!("line {}: {e:?}", s.line));
                continue;
            }
        };
        let exact_len = exact.length;
        if path.length < exact_len - 1e-4 {
            failures.push(format!(
                "line {}: length {} is shorter than the exact optimum {exact_len}: {:?}; \
                 reference {:?}",
                s.line, path.length, path.points, exact.points
            ));
        }
        let excess = if exact_len > 0.0 {
            (path.length - exact_len) / exact_len
        } else {
            path.length
        };
        compared += 1;
        sum += excess;
        if excess > worst {
            (worst, worst_line) = (excess, s.line);
        }
        if excess > 0.01 {
            over.push(format!(
                "line {}: {:.3}% longer ({} vs {exact_len}): {:?}; reference {:?}",
                s.line,
                100.0 * excess,
                path.length,
                path.points,
                exact.points
            ));
        }
    }
    eprintln!(
        "find_path {map}: {compared} paths in {:.2?}; excess over the exact optimum: mean \
         {:.4}%, worst {:.4}% (line {worst_line}), {} over 1%",
        started.elapsed(),
        100.0 * sum / compared.max(1) as f64,
        100.0 * worst,
        over.len()
    );
    for line in &over {
        eprintln!("  {line}");
    }
    report(
        &format!("find_path vs reference on {map}"),
        scen.len(),
        &failures,
    );
    assert!(
        over.len() * 100 <= scen.len(),
        "{map}: {} of {} paths are more than 1% longer than the exact optimum (at most 1% \
         may be)",
        over.len(),
        scen.len()
    );
}

#[test]
fn reference_arena_is_within_octile_optimum() {
    check_reference("arena.map");
}

#[test]
fn reference_lak303d_is_within_octile_optimum() {
    check_reference("lak303d.map");
}

#[test]
fn reference_den520d_is_within_octile_optimum() {
    check_reference("den520d.map");
}

#[test]
fn reference_brc202d_is_within_octile_optimum() {
    check_reference("brc202d.map");
}

#[test]
fn reference_across_the_cape_is_within_octile_optimum() {
    check_reference("AcrosstheCape.map");
}

#[test]
fn arena_paths_match_the_exact_reference() {
    check_against_reference("arena.map");
}

#[test]
fn lak303d_paths_match_the_exact_reference() {
    check_against_reference("lak303d.map");
}

#[test]
fn den520d_paths_match_the_exact_reference() {
    check_against_reference("den520d.map");
}

#[test]
fn brc202d_paths_match_the_exact_reference() {
    check_against_reference("brc202d.map");
}

#[test]
fn across_the_cape_paths_match_the_exact_reference() {
    check_against_reference("AcrosstheCape.map");
}

// ---------------------------------------------------------------------------------------
// 2. Every scenario of every shipped Moving AI map.
// ---------------------------------------------------------------------------------------

/// Every `step`-th scenario: a path, no longer than the octile optimum, from the start to
/// the goal, every segment clear by the raycast and inside the walkable area.
fn check_scenarios(map: &str, step: usize) {
    let scen = scenarios(map);
    let mesh = grid_mesh(map);
    let grid = Grid::new(&grid_map(map));
    let mut query = NavMeshQuery::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    let started = Instant::now();
    for s in scen.iter().step_by(step) {
        checked += 1;
        let path = match query.find_path(mesh, s.start, s.goal, 0.0) {
            Ok(path) => path,
            Err(e) => {
                failures.push(format!("line {}: {e:?}", s.line));
                continue;
            }
        };
        let result = check_shape(&path, s.start, s.goal)
            .and_then(|()| {
                if path.length <= s.octile + 1e-3 {
                    Ok(())
                } else {
                    Err(format!(
                        "length {} longer than the octile optimum {}",
                        path.length, s.octile
                    ))
                }
            })
            .and_then(|()| check_raycasts(mesh, &path))
            .and_then(|()| check_on_grid(&grid, &path));
        if let Err(e) = result {
            failures.push(format!("line {}: {e}; path {:?}", s.line, path.points));
        }
    }
    eprintln!(
        "scenarios {map}: {checked} of {} (every {step}) in {:.2?}",
        scen.len(),
        started.elapsed()
    );
    report(&format!("scenarios on {map}"), checked, &failures);
}

#[test]
fn scenarios_arena() {
    check_scenarios("arena.map", 1);
}

#[test]
fn scenarios_lak303d() {
    check_scenarios("lak303d.map", 1);
}

#[test]
fn scenarios_den520d() {
    check_scenarios("den520d.map", 1);
}

#[test]
fn scenarios_brc202d() {
    check_scenarios("brc202d.map", 1);
}

#[test]
fn scenarios_across_the_cape() {
    check_scenarios("AcrosstheCape.map", 1);
}

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
        // Informational: how close the segments (not just the corners) come to a wall
        // vertex.
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

/// A point of triangle `t` from two numbers in [0, 1) (folded into the triangle).
fn point_in(mesh: &NavMesh, t: usize, u: f64, v: f64) -> Point {
    let [a, b, c] = mesh.triangle_points(TriId(t as u32));
    let (u, v) = if u + v > 1.0 {
        (1.0 - u, 1.0 - v)
    } else {
        (u, v)
    };
    a + (b - a) * u + (c - a) * v
}

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
