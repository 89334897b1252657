//! Spawn points: random walkable points (uniform by area, from the mesh's
//! [`NavMesh::random_point`]) kept clear of walls and of each other.

use std::collections::HashMap;

use navmesh::{IslandId, NavMesh, Point, Rng};

/// Chooses spawn points: uniformly random by area, each retried a few times to keep its
/// disc clear of walls and of the discs already placed. A point that stays blocked after
/// the last try is used anyway (the world's repulsion separates it) and counted.
pub(crate) struct SpawnPlacer<'a> {
    mesh: &'a NavMesh,
    radius: f64,
    /// Placed points by grid cell of side `2 × radius`.
    cells: HashMap<(i64, i64), Vec<Point>>,
    /// Points that could not be placed clear.
    pub(crate) blocked: usize,
}

/// Tries per spawn point before a blocked one is accepted. Generous: at 10,000 NPCs on
/// den520d the discs already placed cover about 70% of the floor by the last spawns, and
/// with 16 tries one of three seeds measured placed a spawn blocked (30% of the radius
/// into another body until repulsion parted them); 256 fail with a chance of about
/// 0.7^256.
const SPAWN_TRIES: usize = 256;

impl<'a> SpawnPlacer<'a> {
    /// A placer for discs of `radius`.
    pub(crate) fn new(mesh: &'a NavMesh, radius: f64) -> SpawnPlacer<'a> {
        SpawnPlacer {
            mesh,
            radius,
            cells: HashMap::new(),
            blocked: 0,
        }
    }

    /// The next spawn point and its island; `None` for a mesh without area.
    pub(crate) fn place(&mut self, rng: &mut Rng) -> Option<(Point, IslandId)> {
        let mut last = None;
        for _ in 0..SPAWN_TRIES {
            let (p, tri) = self.mesh.random_point(rng)?;
            let island = self.mesh.island(tri);
            last = Some((p, island));
            if self.is_clear(p) {
                self.insert(p);
                return last;
            }
        }
        if let Some((p, _)) = last {
            self.blocked += 1;
            self.insert(p);
        }
        last
    }

    /// Keeps the next points clear of a body already at `p`.
    pub(crate) fn occupy(&mut self, p: Point) {
        self.insert(p);
    }

    fn cell(&self, p: Point) -> (i64, i64) {
        let side = 2.0 * self.radius;
        ((p.x / side).floor() as i64, (p.y / side).floor() as i64)
    }

    fn is_clear(&self, p: Point) -> bool {
        if self.mesh.nearest_wall(p, self.radius).is_some() {
            return false;
        }
        let (cx, cy) = self.cell(p);
        let min = 2.0 * self.radius;
        for dx in -1..=1 {
            for dy in -1..=1 {
                if let Some(list) = self.cells.get(&(cx + dx, cy + dy))
                    && list.iter().any(|q| q.distance(p) < min)
                {
                    return false;
                }
            }
        }
        true
    }

    fn insert(&mut self, p: Point) {
        let cell = self.cell(p);
        self.cells.entry(cell).or_default().push(p);
    }
}

/// A joining character is kept this far clear of other bodies' edges, metres.
const SPAWN_GAP_M: f32 = 0.1;
/// How far from its spawn point a joining character may be moved to a free spot, metres.
const SPAWN_SEARCH_M: f32 = 4.0;
/// Rings of points tried within that distance.
const SPAWN_RINGS: usize = 8;

/// A point near `wanted` where a joining character (a disc of [`crate::game::RADIUS_M`])
/// overlaps none of the bodies at `occupied` (the world's and those queued to spawn this
/// tick). Tried on rings round `wanted`, each point in plain sight of it (no wall between)
/// and clear of walls by a body's radius; `wanted` itself when all are taken. Players
/// joining near each other, or on one spawn point, would otherwise land on each other, and
/// the ticks end with overlaps until the repulsion parts them.
pub(crate) fn free_spot(
    mesh: &NavMesh,
    wanted: sim::Vec2,
    occupied: impl Iterator<Item = sim::Vec2>,
) -> sim::Vec2 {
    use crate::game::RADIUS_M;
    let clear = 2.0 * RADIUS_M + SPAWN_GAP_M;
    let taken: Vec<sim::Vec2> = occupied
        .filter(|p| (*p - wanted).length() < SPAWN_SEARCH_M + clear)
        .collect();
    let free = |p: sim::Vec2| taken.iter().all(|t| (*t - p).length() >= clear);
    if free(wanted) {
        return wanted;
    }
    let from = Point::new(f64::from(wanted.x), f64::from(wanted.y));
    for ring in 1..=SPAWN_RINGS {
        let r = SPAWN_SEARCH_M * ring as f32 / SPAWN_RINGS as f32;
        let points = 6 * ring;
        for k in 0..points {
            let angle = std::f32::consts::TAU * k as f32 / points as f32;
            let p = wanted + sim::Vec2::new(angle.cos(), angle.sin()) * r;
            let at = Point::new(f64::from(p.x), f64::from(p.y));
            if free(p)
                && mesh.locate(at).is_some()
                && mesh.nearest_wall(at, f64::from(RADIUS_M)).is_none()
                && matches!(mesh.raycast(from, at), Ok(navmesh::Raycast::Clear))
            {
                return p;
            }
        }
    }
    wanted
}

#[cfg(test)]
mod tests {
    use navmesh::{BuildInfo, VertId};

    use super::*;

    /// Two 10 × 10 squares, apart: two islands of 100 m² each.
    fn two_squares() -> NavMesh {
        let mut v = Vec::new();
        let mut t = Vec::new();
        for x0 in [0.0, 20.0] {
            let base = v.len() as u32;
            v.extend([
                Point::new(x0, 0.0),
                Point::new(x0 + 10.0, 0.0),
                Point::new(x0 + 10.0, 10.0),
                Point::new(x0, 10.0),
            ]);
            t.push([VertId(base), VertId(base + 1), VertId(base + 2)]);
            t.push([VertId(base), VertId(base + 2), VertId(base + 3)]);
        }
        NavMesh::new(BuildInfo::default(), v, t).unwrap()
    }

    #[test]
    fn spawns_keep_clear_while_there_is_room() {
        let mesh = two_squares();
        let mut placer = SpawnPlacer::new(&mesh, 0.4);
        let mut rng = Rng::new(3);
        let points: Vec<Point> = (0..40).map(|_| placer.place(&mut rng).unwrap().0).collect();
        assert_eq!(placer.blocked, 0);
        for (i, p) in points.iter().enumerate() {
            assert!(mesh.nearest_wall(*p, 0.4).is_none());
            for q in &points[..i] {
                assert!(p.distance(*q) >= 0.8);
            }
        }
    }

    /// Points placed after bodies were marked as already there keep clear of them too.
    #[test]
    fn spawns_keep_clear_of_the_bodies_already_there() {
        let mesh = two_squares();
        let mut placer = SpawnPlacer::new(&mesh, 0.4);
        let bodies: Vec<Point> = (0..10)
            .flat_map(|i| {
                (0..3).map(move |j| Point::new(1.0 + f64::from(i), 1.5 + 3.0 * f64::from(j)))
            })
            .collect();
        for &body in &bodies {
            placer.occupy(body);
        }
        let mut rng = Rng::new(5);
        let points: Vec<Point> = (0..30).map(|_| placer.place(&mut rng).unwrap().0).collect();
        assert_eq!(placer.blocked, 0);
        for p in &points {
            for body in &bodies {
                assert!(p.distance(*body) >= 0.8, "{p:?} on the body at {body:?}");
            }
        }
    }

    /// Late spawns in a crowded floor: the discs placed cover most of the room left, and
    /// each new one still finds a clear spot (with 16 tries a spawn, as before, some were
    /// placed blocked).
    #[test]
    fn spawns_keep_clear_in_a_crowded_floor() {
        let mesh = two_squares();
        let mut placer = SpawnPlacer::new(&mesh, 0.4);
        let mut rng = Rng::new(1);
        let island = mesh.island(navmesh::TriId(0));
        let mut points = Vec::new();
        while points.len() < 55 {
            let (p, at) = placer.place(&mut rng).unwrap();
            if at == island {
                points.push(p);
            }
        }
        assert_eq!(placer.blocked, 0);
        for (i, p) in points.iter().enumerate() {
            for q in &points[..i] {
                assert!(p.distance(*q) >= 0.8, "{p:?} and {q:?} overlap");
            }
        }
    }
}
