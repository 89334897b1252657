//! Random walkable points, uniform by area: [`NavMesh::random_point`] over the whole mesh
//! and [`NavMesh::random_point_on_island`] on one island, as Detour's `findRandomPoint`.
//!
//! A draw takes three numbers from the caller's [`Rng`], always in this order, so a seeded
//! caller (the world) gets the same points on every platform:
//! 1. `pick = next_f64() * total`, where `total` is the area of the mesh or of the island.
//!    The triangle is the first whose cumulative area (triangles in index order, summed
//!    as `total = previous + area` in `f64`) is not below `pick`, or the last one should
//!    rounding leave `pick` beyond every entry.
//! 2. `u = next_f64()`, `v = next_f64()`; when `u + v > 1` both are reflected (`1 - u`,
//!    `1 - v`), which folds the unit square onto the triangle without bias.
//! 3. The point is `a + (b - a) * u + (c - a) * v` with `[a, b, c]` the triangle's corners
//!    ([`NavMesh::triangle_points`]).
//!
//! The cumulative tables (one for the mesh, one per island) are derived on the first draw
//! and never stored in files.

use std::sync::OnceLock;

use crate::geom::Point;
use crate::mesh::{IslandId, NavMesh, TriId};
use crate::rng::Rng;

/// Cumulative triangle areas: `(area of this and every earlier entry, triangle)`.
#[derive(Clone, Debug, Default)]
struct AreaTable(Vec<(f64, TriId)>);

impl AreaTable {
    fn push(&mut self, area: f64, tri: TriId) {
        let total = self.0.last().map_or(0.0, |e| e.0) + area;
        self.0.push((total, tri));
    }

    /// A triangle with probability proportional to its area (one draw); `None` when empty.
    fn pick(&self, rng: &mut Rng) -> Option<TriId> {
        let total = self.0.last()?.0;
        let pick = rng.next_f64() * total;
        let k = self.0.partition_point(|e| e.0 < pick).min(self.0.len() - 1);
        Some(self.0[k].1)
    }
}

/// The area tables of a mesh.
#[derive(Clone, Debug, Default)]
struct AreaTables {
    all: AreaTable,
    islands: Vec<AreaTable>,
}

impl AreaTables {
    fn compute(mesh: &NavMesh) -> AreaTables {
        let mut tables = AreaTables {
            all: AreaTable(Vec::with_capacity(mesh.triangle_count())),
            islands: vec![AreaTable::default(); mesh.island_count() as usize],
        };
        for t in 0..mesh.triangle_count() {
            let tri = TriId(t as u32);
            let area = mesh.triangle_area(tri);
            tables.all.push(area, tri);
            if let Some(table) = tables.islands.get_mut(mesh.island(tri).index()) {
                table.push(area, tri);
            }
        }
        tables
    }
}

/// The lazily built area tables. Derived data: two meshes with the same parts are equal
/// whether or not either has built them.
#[derive(Clone, Debug, Default)]
pub(crate) struct LazyAreas(OnceLock<AreaTables>);

impl PartialEq for LazyAreas {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl NavMesh {
    fn area_tables(&self) -> &AreaTables {
        self.lazy_areas()
            .0
            .get_or_init(|| AreaTables::compute(self))
    }

    /// A random walkable point, uniform by area over the whole mesh, and the triangle it is
    /// in; `None` for a mesh without triangles. Takes three numbers from `rng` (see the
    /// module docs for the exact rule, which seeded callers rely on).
    pub fn random_point(&self, rng: &mut Rng) -> Option<(Point, TriId)> {
        let tri = self.area_tables().all.pick(rng)?;
        Some((self.random_point_in(tri, rng), tri))
    }

    /// A random point of `island`, uniform by area, and the triangle it is in; `None` for
    /// an island the mesh does not have. Takes three numbers from `rng` (see the module
    /// docs).
    pub fn random_point_on_island(
        &self,
        island: IslandId,
        rng: &mut Rng,
    ) -> Option<(Point, TriId)> {
        let tri = self.area_tables().islands.get(island.index())?.pick(rng)?;
        Some((self.random_point_in(tri, rng), tri))
    }

    /// A uniform point of triangle `tri` (two draws).
    fn random_point_in(&self, tri: TriId, rng: &mut Rng) -> Point {
        let [a, b, c] = self.triangle_points(tri);
        let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
        if u + v > 1.0 {
            u = 1.0 - u;
            v = 1.0 - v;
        }
        a + (b - a) * u + (c - a) * v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::orient;
    use crate::walls::fixtures::grid;

    /// Two islands of uneven, jittered triangles: columns 0..2 and 3..6 of a 6 × 3 grid.
    fn two_islands() -> NavMesh {
        let mesh = grid(6, 3, &[(2, 0), (2, 1), (2, 2)], 0.2);
        assert_eq!(mesh.island_count(), 2);
        mesh
    }

    fn inside(mesh: &NavMesh, p: Point, tri: TriId) -> bool {
        let [a, b, c] = mesh.triangle_points(tri);
        // The reflection and the sums round: allow a hair outside each edge.
        let slack = 1e-12;
        orient(a, b, p) >= -slack && orient(b, c, p) >= -slack && orient(c, a, p) >= -slack
    }

    #[test]
    fn points_are_in_their_triangle_and_on_the_asked_island() {
        let mesh = two_islands();
        let mut rng = Rng::new(5);
        for island in [IslandId(0), IslandId(1)] {
            for _ in 0..2_000 {
                let (p, tri) = mesh.random_point_on_island(island, &mut rng).unwrap();
                assert_eq!(mesh.island(tri), island);
                assert!(inside(&mesh, p, tri), "{p:?} outside {tri:?}");
            }
        }
        for _ in 0..2_000 {
            let (p, tri) = mesh.random_point(&mut rng).unwrap();
            assert!(inside(&mesh, p, tri), "{p:?} outside {tri:?}");
        }
    }

    #[test]
    fn an_unknown_island_gives_none_and_draws_nothing() {
        let mesh = two_islands();
        let mut rng = Rng::new(1);
        let before = rng.state();
        assert_eq!(mesh.random_point_on_island(IslandId(2), &mut rng), None);
        assert_eq!(rng.state(), before);
    }

    /// Asserts that `counts` (points per triangle out of `n`) follow area over the
    /// triangles `on` accepts, and that no point fell elsewhere. Each count must be within
    /// 5 standard deviations of its expectation: a correct sampler fails that for a given
    /// seed with probability far below one in a million, and the seed is fixed, so the
    /// test cannot flake; a sampler off by a few percent on any triangle fails it.
    fn assert_follows_area(mesh: &NavMesh, counts: &[usize], n: usize, on: impl Fn(TriId) -> bool) {
        let tris = || (0..mesh.triangle_count()).map(|t| TriId(t as u32));
        let total: f64 = tris()
            .filter(|&t| on(t))
            .map(|t| mesh.triangle_area(t))
            .sum();
        for tri in tris() {
            let count = counts[tri.index()];
            if !on(tri) {
                assert_eq!(count, 0, "triangle {tri} is not in the sampled area");
                continue;
            }
            let share = mesh.triangle_area(tri) / total;
            let expected = n as f64 * share;
            let sigma = (n as f64 * share * (1.0 - share)).sqrt();
            assert!(
                (count as f64 - expected).abs() <= 5.0 * sigma,
                "triangle {tri}: {count} points, expected {expected:.0} ± {sigma:.0}"
            );
        }
    }

    #[test]
    fn the_share_of_points_per_triangle_follows_area() {
        let mesh = two_islands();
        let n = 100_000;
        let mut rng = Rng::new(42);
        let mut counts = vec![0usize; mesh.triangle_count()];
        for _ in 0..n {
            counts[mesh.random_point(&mut rng).unwrap().1.index()] += 1;
        }
        assert_follows_area(&mesh, &counts, n, |_| true);

        for island in [IslandId(0), IslandId(1)] {
            let mut counts = vec![0usize; mesh.triangle_count()];
            for _ in 0..n {
                let (_, tri) = mesh.random_point_on_island(island, &mut rng).unwrap();
                counts[tri.index()] += 1;
            }
            assert_follows_area(&mesh, &counts, n, |t| mesh.island(t) == island);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_points() {
        let mesh = two_islands();
        let (mut a, mut b) = (Rng::new(77), Rng::new(77));
        for _ in 0..500 {
            let (pa, ta) = mesh.random_point(&mut a).unwrap();
            let (pb, tb) = mesh.random_point(&mut b).unwrap();
            assert_eq!(
                (pa.x.to_bits(), pa.y.to_bits(), ta),
                (pb.x.to_bits(), pb.y.to_bits(), tb)
            );
        }
        assert_eq!(a, b);
    }

    /// The rule written out longhand, as the world has always drawn its wander targets: the
    /// world's state hash depends on every bit of it.
    #[test]
    fn draws_follow_the_documented_rule_bit_for_bit() {
        let mesh = two_islands();
        let mut island_tris = vec![Vec::new(); mesh.island_count() as usize];
        for t in 0..mesh.triangle_count() {
            let tri = TriId(t as u32);
            let list: &mut Vec<(f64, TriId)> = &mut island_tris[mesh.island(tri).index()];
            let total = list.last().map_or(0.0, |e| e.0) + mesh.triangle_area(tri);
            list.push((total, tri));
        }
        let (mut ours, mut theirs) = (Rng::new(2024), Rng::new(2024));
        for k in 0..1_000 {
            let island = IslandId(k % 2);
            let list = &island_tris[island.index()];
            let total = list.last().unwrap().0;
            let pick = theirs.next_f64() * total;
            let i = list.partition_point(|e| e.0 < pick).min(list.len() - 1);
            let [a, b, c] = mesh.triangle_points(list[i].1);
            let (mut u, mut v) = (theirs.next_f64(), theirs.next_f64());
            if u + v > 1.0 {
                u = 1.0 - u;
                v = 1.0 - v;
            }
            let expected = a + (b - a) * u + (c - a) * v;
            let (p, tri) = mesh.random_point_on_island(island, &mut ours).unwrap();
            assert_eq!(tri, list[i].1);
            assert_eq!(
                (p.x.to_bits(), p.y.to_bits()),
                (expected.x.to_bits(), expected.y.to_bits())
            );
        }
        assert_eq!(ours, theirs);
    }
}
