use super::*;
use crate::walls::fixtures::*;
use proptest::prelude::*;

fn p(x: f64, y: f64) -> Point {
    Point::new(x, y)
}

fn wall_points(mesh: &NavMesh, w: usize) -> (Point, Point) {
    let wall = mesh.walls()[w];
    (
        mesh.vertices()[wall.from.index()],
        mesh.vertices()[wall.to.index()],
    )
}

/// Do the segments cross at a point interior to both (exact)?
fn properly_crosses(a: Point, b: Point, c: Point, d: Point) -> bool {
    orient_sign(a, b, c) * orient_sign(a, b, d) < 0
        && orient_sign(c, d, a) * orient_sign(c, d, b) < 0
}

/// The parameter along `a b` of its crossing with `c d` (Cramer's rule).
fn crossing_t(a: Point, b: Point, c: Point, d: Point) -> f64 {
    (c - a).cross(d - c) / (b - a).cross(d - c)
}

fn sample(a: Point, b: Point, k: usize) -> Point {
    if k == 64 {
        b
    } else {
        a + (b - a) * (k as f64 / 64.0)
    }
}

/// The reference: clear iff every 1/64 sample is on the mesh and no wall is properly
/// crossed.
fn reference_clear(mesh: &NavMesh, a: Point, b: Point) -> bool {
    (0..=64).all(|k| mesh.locate(sample(a, b, k)).is_some())
        && (0..mesh.walls().len()).all(|w| {
            let (c, d) = wall_points(mesh, w);
            !properly_crosses(a, b, c, d)
        })
}

/// The first properly crossed wall along `a b`: (t, wall, point).
fn first_crossing(mesh: &NavMesh, a: Point, b: Point) -> Option<(f64, usize, Point)> {
    let mut best: Option<(f64, usize, Point)> = None;
    for w in 0..mesh.walls().len() {
        let (c, d) = wall_points(mesh, w);
        if properly_crosses(a, b, c, d) {
            let t = crossing_t(a, b, c, d);
            if best.is_none_or(|(bt, _, _)| t < bt) {
                best = Some((t, w, a + (b - a) * t));
            }
        }
    }
    best
}

fn distance_to_wall(mesh: &NavMesh, w: usize, q: Point) -> f64 {
    let (c, d) = wall_points(mesh, w);
    crate::geom::distance_to_segment(q, c, d)
}

/// Checks a raycast against the references; returns the result.
fn check(mesh: &NavMesh, a: Point, b: Point) -> Result<Raycast, TestCaseError> {
    let result = mesh.raycast(a, b);
    let Ok(result) = result else {
        return Err(TestCaseError::fail(format!("{a:?} -> {b:?}: {result:?}")));
    };
    let clear = reference_clear(mesh, a, b);
    match result {
        Raycast::Clear => {
            prop_assert!(
                clear,
                "{:?} -> {:?}: clear but the reference is blocked",
                a,
                b
            )
        }
        Raycast::Hit { point, t, wall } => {
            prop_assert!(
                !clear,
                "{:?} -> {:?}: hit {:?} but the reference is clear",
                a,
                b,
                result
            );
            let scale = 1.0 + a.distance(b);
            prop_assert!((0.0..=1.0).contains(&t));
            prop_assert!(distance_to_wall(mesh, wall, point) <= 1e-9 * scale);
            prop_assert!(
                point.distance(a + (b - a) * t) <= 1e-9 * scale,
                "{:?}",
                result
            );
            if let Some((first, _, _)) = first_crossing(mesh, a, b) {
                prop_assert!(first >= t - 1e-9, "{:?}: wall crossed at {}", result, first);
            }
            for k in 0..64 {
                if (k as f64 / 64.0) < t - 1e-7 {
                    prop_assert!(mesh.locate(sample(a, b, k)).is_some());
                }
            }
        }
    }
    Ok(result)
}

fn clear(mesh: &NavMesh, a: Point, b: Point) {
    assert_eq!(check(mesh, a, b).unwrap(), Raycast::Clear, "{a:?} -> {b:?}");
}

fn hit(mesh: &NavMesh, a: Point, b: Point) -> (Point, f64, usize) {
    match check(mesh, a, b).unwrap() {
        Raycast::Hit { point, t, wall } => (point, t, wall),
        Raycast::Clear => panic!("{a:?} -> {b:?} is clear"),
    }
}

/// The walls with an endpoint at `q`.
fn walls_at(mesh: &NavMesh, q: Point) -> Vec<usize> {
    (0..mesh.walls().len())
        .filter(|&w| {
            let (c, d) = wall_points(mesh, w);
            c == q || d == q
        })
        .collect()
}

#[test]
fn clear_rays_in_a_holed_grid() {
    let mesh = holed();
    // Inside one triangle, and across many.
    clear(&mesh, p(0.2, 0.1), p(0.8, 0.15));
    clear(&mesh, p(0.5, 0.5), p(2.5, 0.5));
    clear(&mesh, p(0.1, 0.2), p(0.3, 2.9));
    // Zero length.
    clear(&mesh, p(0.5, 0.5), p(0.5, 0.5));
    // Through a hole corner, touching the hole at a single point.
    clear(&mesh, p(0.0, 2.0), p(2.0, 0.0));
    clear(&mesh, p(1.0, 3.0), p(3.0, 1.0));
    // Along an interior edge, and along interior edges and a wall in one go.
    clear(&mesh, p(1.0, 0.2), p(1.0, 0.8));
    clear(&mesh, p(0.0, 1.0), p(3.0, 1.0));
    clear(&mesh, p(3.0, 2.0), p(0.0, 2.0));
    // Along the outer walls (grazing), whole and in part, both ways.
    clear(&mesh, p(0.0, 0.0), p(3.0, 0.0));
    clear(&mesh, p(2.5, 0.0), p(0.5, 0.0));
    clear(&mesh, p(3.0, 0.2), p(3.0, 2.9));
    // From a vertex (a hole corner, an outer corner, a wall vertex).
    clear(&mesh, p(1.0, 1.0), p(2.5, 0.5));
    clear(&mesh, p(0.0, 0.0), p(2.9, 0.9));
    clear(&mesh, p(1.0, 0.0), p(0.0, 3.0));
    // From an edge and a wall, into the mesh.
    clear(&mesh, p(1.0, 0.5), p(2.5, 0.5));
    clear(&mesh, p(0.5, 0.0), p(0.5, 0.9));
    // Ending exactly on a wall or a vertex.
    clear(&mesh, p(0.5, 0.5), p(1.5, 1.0));
    clear(&mesh, p(0.5, 0.5), p(3.0, 0.5));
    clear(&mesh, p(0.5, 0.5), p(2.0, 1.0));
    clear(&mesh, p(0.5, 0.5), p(3.0, 0.0));
    clear(&mesh, p(2.5, 0.5), p(2.0, 2.0));
}

#[test]
fn blocked_rays_report_the_first_wall() {
    let mesh = holed();
    for (a, b) in [
        (p(0.5, 1.5), p(2.5, 1.5)),
        (p(2.5, 2.5), p(3.5, 2.9)),
        (p(0.25, 1.25), p(2.75, 1.75)),
        (p(0.3, 0.4), p(-1.0, 0.7)),
        (p(2.9, 0.1), p(1.2, 1.9)),
    ] {
        let (point, t, wall) = hit(&mesh, a, b);
        let (ft, fw, fp) = first_crossing(&mesh, a, b).unwrap();
        assert_eq!(wall, fw, "{a:?} -> {b:?}");
        assert!(
            (t - ft).abs() < 1e-12 && point.distance(fp) < 1e-12,
            "{a:?} -> {b:?}"
        );
    }
    let (point, t, _) = hit(&mesh, p(0.5, 1.5), p(2.5, 1.5));
    assert_eq!((point, t), (p(1.0, 1.5), 0.25));
    // Starting on a wall and leaving at once.
    let (point, t, _) = hit(&mesh, p(0.5, 0.0), p(0.5, -1.0));
    assert_eq!((point, t), (p(0.5, 0.0), 0.0));
}

#[test]
fn rays_leaving_through_a_vertex_hit_there() {
    let mesh = holed();
    // Between two hole corners, through the hole.
    let (point, t, _) = hit(&mesh, p(0.5, 2.5), p(2.5, 0.5));
    assert_eq!((point, t), (p(1.0, 2.0), 0.25));
    // Into the hole through its corner.
    let (point, t, wall) = hit(&mesh, p(0.5, 0.5), p(1.5, 1.5));
    assert_eq!((point, t), (p(1.0, 1.0), 0.5));
    assert_eq!(wall, walls_at(&mesh, p(1.0, 1.0))[0]);
    // From the corner itself.
    let (point, t, _) = hit(&mesh, p(1.0, 1.0), p(1.5, 1.5));
    assert_eq!((point, t), (p(1.0, 1.0), 0.0));
    // Out of the mesh through an outer wall vertex.
    let (point, t, wall) = hit(&mesh, p(0.5, 0.5), p(1.5, -0.5));
    assert_eq!((point, t), (p(1.0, 0.0), 0.5));
    assert!(walls_at(&mesh, p(1.0, 0.0)).contains(&wall));
    // The L-shaped corridor: leaving the vertical arm through a wall vertex.
    let mesh = l_shape();
    let (point, t, wall) = hit(&mesh, p(0.5, 3.5), p(3.5, 0.5));
    assert_eq!((point, t), (p(1.0, 3.0), 0.5 / 3.0));
    assert!(walls_at(&mesh, p(1.0, 3.0)).contains(&wall));
    let (point, _, _) = hit(&mesh, p(0.5, 2.5), p(2.5, 0.5));
    assert_eq!(point, p(1.0, 2.0));
    let (point, t, _) = hit(&mesh, p(0.5, 2.0), p(2.0, 0.5));
    assert_eq!((point, t), (p(1.0, 1.5), 1.0 / 3.0));
}

#[test]
fn corridor_fan_and_pinch() {
    let mesh = l_shape();
    // Exactly through the reflex corner.
    clear(&mesh, p(0.0, 2.0), p(2.0, 0.0));
    clear(&mesh, p(0.5, 3.9), p(0.5, 0.1));
    clear(&mesh, p(0.2, 0.8), p(3.8, 0.2));
    clear(&mesh, p(1.0, 4.0), p(1.0, 0.0));
    clear(&mesh, p(1.0, 1.0), p(4.0, 1.0));
    // A fan: through its centre, along a spoke from the centre and from the rim.
    let mesh = fan(8);
    clear(&mesh, p(-0.5, -0.2), p(0.5, 0.2));
    let rim = mesh.vertices()[3];
    clear(&mesh, p(0.0, 0.0), rim * 0.5);
    clear(&mesh, rim, p(0.0, 0.0));
    clear(&mesh, rim, mesh.vertices()[7]);
    clear(&mesh, rim * 0.999, mesh.vertices()[6] * 0.5);
    hit(&mesh, rim * 0.5, rim * 1.5);
    // Two squares meeting at a vertex: the segment through it stays on the area.
    let mesh = pinch();
    clear(&mesh, p(0.5, 0.5), p(1.5, 1.5));
    clear(&mesh, p(1.5, 1.5), p(0.0, 0.0));
    clear(&mesh, p(1.0, 1.0), p(2.0, 1.5));
    let (point, _, _) = hit(&mesh, p(0.5, 0.5), p(1.5, 0.5));
    assert_eq!(point, p(1.0, 0.5));
    let (point, t, _) = hit(&mesh, p(0.5, 0.5), p(1.5, 0.5 + 1.0 / 3.0));
    assert!(point.distance(p(1.0, 2.0 / 3.0)) < 1e-15 && (t - 0.5).abs() < 1e-15);
    // Along a wall of each square, through the pinch.
    clear(&mesh, p(0.0, 1.0), p(2.0, 1.0));
    clear(&mesh, p(1.0, 2.0), p(1.0, 0.0));
}

#[test]
fn errors_and_far_ends() {
    let mesh = holed();
    assert_eq!(
        mesh.raycast(p(1.5, 1.5), p(0.5, 0.5)),
        Err(RaycastError::StartOffMesh { x: 1.5, y: 1.5 })
    );
    assert!(matches!(
        mesh.raycast(p(0.5, 0.5), p(f64::NAN, 0.5)),
        Err(RaycastError::NonFinite { .. })
    ));
    assert!(matches!(
        raycast(&mesh, p(f64::INFINITY, 0.5), p(0.5, 0.5)),
        Err(RaycastError::NonFinite { .. })
    ));
    // A far end: the line y = x leaves through the hole's corner.
    let Ok(Raycast::Hit { point, t, .. }) = mesh.raycast(p(0.5, 0.5), p(f64::MAX, f64::MAX)) else {
        panic!("not a hit");
    };
    assert_eq!(point, p(1.0, 1.0));
    assert!(t > 0.0 && t < 1e-300);
    let Ok(Raycast::Hit { point, .. }) = mesh.raycast(p(0.5, 0.5), p(-1e300, 0.5)) else {
        panic!("not a hit");
    };
    assert_eq!(point, p(0.0, 0.5));
    assert_eq!(
        RaycastError::StartOffMesh { x: 1.5, y: 1.5 }.to_string(),
        "ray start (1.5, 1.5) is off the mesh"
    );
}

/// Meshes for random segments, built once (construction derives a lot).
fn random_meshes() -> &'static [NavMesh] {
    static MESHES: std::sync::OnceLock<Vec<NavMesh>> = std::sync::OnceLock::new();
    MESHES.get_or_init(|| vec![holed(), l_shape(), jittered(), fan(7)])
}

/// Meshes with integer vertices for lattice segments, built once.
fn lattice_meshes() -> &'static [NavMesh] {
    static MESHES: std::sync::OnceLock<Vec<NavMesh>> = std::sync::OnceLock::new();
    MESHES.get_or_init(|| {
        vec![
            holed(),
            l_shape(),
            pinch(),
            grid(4, 4, &[(1, 1), (2, 2), (3, 0)], 0.0),
        ]
    })
}

fn lattice(n: i32) -> impl Strategy<Value = Point> {
    (0..=2 * n, 0..=2 * n).prop_map(|(x, y)| Point::new(x as f64 / 2.0, y as f64 / 2.0))
}

/// A point in a triangle of the mesh: (which triangle, two barycentric coordinates).
fn on_mesh() -> impl Strategy<Value = (f64, f64, f64)> {
    (0.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0)
}

fn place(mesh: &NavMesh, (which, u, v): (f64, f64, f64)) -> Point {
    let t = ((which * mesh.triangle_count() as f64) as usize).min(mesh.triangle_count() - 1);
    let [a, b, c] = mesh.triangle_points(TriId(t as u32));
    let (u, v) = if u + v > 1.0 {
        (1.0 - u, 1.0 - v)
    } else {
        (u, v)
    };
    a + (b - a) * u + (c - a) * v
}

fn anywhere(lo: f64, hi: f64) -> impl Strategy<Value = Point> {
    (lo..hi, lo..hi).prop_map(|(x, y)| Point::new(x, y))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        max_global_rejects: 100_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_segments_agree_with_brute_force(
        which in 0usize..4,
        a in on_mesh(),
        b in on_mesh(),
    ) {
        let mesh = &random_meshes()[which];
        let (a, b) = (place(mesh, a), place(mesh, b));
        prop_assume!(mesh.locate(a).is_some() && mesh.locate(b).is_some());
        check(mesh, a, b)?;
    }

    #[test]
    fn lattice_segments_through_vertices_agree_with_brute_force(
        which in 0usize..4,
        a in lattice(4),
        b in prop_oneof![lattice(4), on_mesh().prop_map(|(x, y, _)| Point::new(4.0 * x, 4.0 * y))],
    ) {
        let mesh = &lattice_meshes()[which];
        prop_assume!(mesh.locate(a).is_some() && mesh.locate(b).is_some());
        check(mesh, a, b)?;
    }

    #[test]
    fn polyline_rays_from_the_last_end_agree_with_fresh_rays(
        which in 0usize..4,
        a in lattice(4),
        b in prop_oneof![lattice(4), on_mesh().prop_map(|(x, y, _)| Point::new(4.0 * x, 4.0 * y))],
        c in prop_oneof![lattice(4), on_mesh().prop_map(|(x, y, _)| Point::new(4.0 * x, 4.0 * y))],
        wrong in 0u32..64,
    ) {
        let mesh = &lattice_meshes()[which];
        prop_assume!(mesh.locate(a).is_some());
        let first = mesh.raycast_from(None, a, b);
        prop_assert_eq!(first.clone().map(|end| end.ray), mesh.raycast(a, b));
        let Ok(RayEnd { ray: Raycast::Clear, tri }) = first else {
            return Ok(());
        };
        let Some(tri) = tri else {
            prop_assert!(false, "a clear ray names the triangle of its end");
            return Ok(());
        };
        // The end's triangle holds `b` exactly, and a ray from there answers as a fresh one
        // (`b` on an edge or a vertex starts it in another triangle than `locate` gives):
        // clear or not, and where it leaves (at a pinch vertex, the wall named may be
        // another of the walls that meet there).
        let [p, q, r] = mesh.triangle_points(tri);
        prop_assert!(orient_sign(p, q, b) >= 0 && orient_sign(q, r, b) >= 0 && orient_sign(r, p, b) >= 0);
        let fresh = mesh.raycast(b, c);
        let other = TriId(wrong % mesh.triangle_count() as u32);
        // A triangle that does not hold the start is ignored.
        for hint in [Some(tri), Some(other), Some(TriId(u32::MAX))] {
            let hinted = mesh.raycast_from(hint, b, c).map(|end| end.ray);
            match (&hinted, &fresh) {
                (Ok(Raycast::Hit { point, t, .. }), Ok(Raycast::Hit { point: p0, t: t0, .. })) => {
                    prop_assert_eq!((point, t), (p0, t0));
                }
                _ => prop_assert_eq!(&hinted, &fresh),
            }
        }
    }

    #[test]
    fn never_panics(
        a in prop_oneof![anywhere(-1.0, 8.0), any::<(f64, f64)>().prop_map(|(x, y)| Point::new(x, y))],
        b in prop_oneof![anywhere(-100.0, 100.0), any::<(f64, f64)>().prop_map(|(x, y)| Point::new(x, y))],
    ) {
        let mesh = &random_meshes()[2];
        match mesh.raycast(a, b) {
            Ok(Raycast::Hit { point, t, wall }) => {
                prop_assert!((0.0..=1.0).contains(&t) && wall < mesh.walls().len());
                prop_assert!(point.is_finite());
            }
            Ok(Raycast::Clear) => prop_assert!(mesh.locate(b).is_some()),
            Err(RaycastError::WalkFailed { .. }) => prop_assert!(false, "walk failed"),
            Err(_) => prop_assert!(mesh.locate(a).is_none() || !b.is_finite()),
        }
    }
}
