//! Seeded random numbers and random walkable points, uniform by area.

use std::collections::HashMap;

use navmesh::{IslandId, NavMesh, Point, TriId};

/// SplitMix64: small, fast, and plenty for choosing spawn points and orders.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1)`.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `lo..=hi` (`lo <= hi`).
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// Cumulative triangle areas, for picking triangles in proportion to their area.
struct AreaTable {
    /// `(area of this and every earlier triangle, triangle)`.
    cumulative: Vec<(f64, TriId)>,
}

impl AreaTable {
    fn push(&mut self, area: f64, tri: TriId) {
        let total = self.total() + area;
        self.cumulative.push((total, tri));
    }

    fn total(&self) -> f64 {
        self.cumulative.last().map_or(0.0, |e| e.0)
    }

    fn pick(&self, rng: &mut Rng) -> Option<TriId> {
        let pick = rng.next_f64() * self.total();
        let k = self.cumulative.partition_point(|e| e.0 <= pick);
        self.cumulative
            .get(k.min(self.cumulative.len().checked_sub(1)?))
            .map(|e| e.1)
    }
}

/// Uniformly random walkable points: over the whole mesh or on one island.
pub(crate) struct PointSampler<'a> {
    mesh: &'a NavMesh,
    all: AreaTable,
    islands: Vec<AreaTable>,
}

impl<'a> PointSampler<'a> {
    /// Tables for `mesh`.
    pub(crate) fn new(mesh: &'a NavMesh) -> PointSampler<'a> {
        let mut all = AreaTable {
            cumulative: Vec::with_capacity(mesh.triangle_count()),
        };
        let mut islands: Vec<AreaTable> = (0..mesh.island_count())
            .map(|_| AreaTable {
                cumulative: Vec::new(),
            })
            .collect();
        for t in 0..mesh.triangle_count() {
            let tri = TriId(t as u32);
            let area = mesh.triangle_area(tri);
            all.push(area, tri);
            if let Some(table) = islands.get_mut(mesh.island(tri).index()) {
                table.push(area, tri);
            }
        }
        PointSampler { mesh, all, islands }
    }

    /// Total walkable area.
    pub(crate) fn area(&self) -> f64 {
        self.all.total()
    }

    /// A uniformly random walkable point and its island; `None` for a mesh without area.
    pub(crate) fn anywhere(&self, rng: &mut Rng) -> Option<(Point, IslandId)> {
        let tri = self.all.pick(rng)?;
        Some((self.in_triangle(tri, rng), self.mesh.island(tri)))
    }

    /// A uniformly random point of `island`; `None` for an unknown or empty island.
    pub(crate) fn on_island(&self, island: IslandId, rng: &mut Rng) -> Option<Point> {
        let tri = self.islands.get(island.index())?.pick(rng)?;
        Some(self.in_triangle(tri, rng))
    }

    fn in_triangle(&self, tri: TriId, rng: &mut Rng) -> Point {
        let [a, b, c] = self.mesh.triangle_points(tri);
        let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
        if u + v > 1.0 {
            u = 1.0 - u;
            v = 1.0 - v;
        }
        a + (b - a) * u + (c - a) * v
    }
}

/// Chooses spawn points: uniformly random by area, each retried a few times to keep its
/// disc clear of walls and of the discs already placed. A point that stays blocked after
/// the last try is used anyway (the world's repulsion separates it) and counted.
pub(crate) struct SpawnPlacer<'a> {
    sampler: &'a PointSampler<'a>,
    radius: f64,
    /// Placed points by grid cell of side `2 × radius`.
    cells: HashMap<(i64, i64), Vec<Point>>,
    /// Points that could not be placed clear.
    pub(crate) blocked: usize,
}

/// Tries per spawn point before a blocked one is accepted.
const SPAWN_TRIES: usize = 16;

impl<'a> SpawnPlacer<'a> {
    /// A placer for discs of `radius`.
    pub(crate) fn new(sampler: &'a PointSampler<'a>, radius: f64) -> SpawnPlacer<'a> {
        SpawnPlacer {
            sampler,
            radius,
            cells: HashMap::new(),
            blocked: 0,
        }
    }

    /// The next spawn point and its island; `None` for a mesh without area.
    pub(crate) fn place(&mut self, rng: &mut Rng) -> Option<(Point, IslandId)> {
        let mut last = None;
        for _ in 0..SPAWN_TRIES {
            let (p, island) = self.sampler.anywhere(rng)?;
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

    fn cell(&self, p: Point) -> (i64, i64) {
        let side = 2.0 * self.radius;
        ((p.x / side).floor() as i64, (p.y / side).floor() as i64)
    }

    fn is_clear(&self, p: Point) -> bool {
        if self.sampler.mesh.nearest_wall(p, self.radius).is_some() {
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
    fn rng_is_seeded_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let x = a.next_f64();
            assert!((0.0..1.0).contains(&x));
            assert!((3..=5).contains(&a.range(3, 5)));
            b.next_f64();
            b.range(3, 5);
        }
    }

    #[test]
    fn points_are_on_the_mesh_and_on_their_island() {
        let mesh = two_squares();
        let sampler = PointSampler::new(&mesh);
        assert!((sampler.area() - 200.0).abs() < 1e-9);
        let mut rng = Rng::new(1);
        let mut left = 0;
        for _ in 0..2000 {
            let (p, island) = sampler.anywhere(&mut rng).unwrap();
            let tri = mesh.locate(p).unwrap();
            assert_eq!(mesh.island(tri), island);
            if p.x < 15.0 {
                left += 1;
            }
            let q = sampler.on_island(island, &mut rng).unwrap();
            assert_eq!(mesh.island(mesh.locate(q).unwrap()), island);
        }
        // Equal areas: about half the points on each island.
        assert!((800..1200).contains(&left), "{left}");
    }

    #[test]
    fn spawns_keep_clear_while_there_is_room() {
        let mesh = two_squares();
        let sampler = PointSampler::new(&mesh);
        let mut placer = SpawnPlacer::new(&sampler, 0.4);
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
}
