//! A lower bound on the triangle costs still to pay (see
//! [`NavMeshQuery::set_triangle_costs`]), so that a search with costs knows early that a
//! costly band lies between it and the goal.
//!
//! The triangles without cost fall into connected parts; every costly triangle is a part
//! of its own. On the graph of parts (adjacent when two of their triangles share an edge),
//! entering a costly part costs its triangle's cost and entering a free part costs
//! nothing; a path of the mesh that enters triangles `t1, t2, …` pays at least the
//! cheapest walk over the parts they lie in. One Dijkstra from the goal's parts, per
//! search, on a graph of a few hundred parts where the mesh has thousands of triangles,
//! gives that bound for every triangle. Added to the length bound it keeps `f` a lower
//! bound on the cost, since lengths and costs are separate sums. The graph ignores the disc's
//! width (a passage too narrow for it still joins two parts), which only lowers the
//! bound.
//!
//! The bound depends only on the parts the goal lies in, so the last [`CACHED`] bounds are
//! kept, by their goal parts, until the costs change: a search toward a part already
//! searched for reuses its bound (the same numbers as a fresh Dijkstra, which is
//! deterministic). Many goals lie in the few large free parts, but in a congested crowd
//! many others lie in costly triangles, each a part of its own, so the cache holds a few
//! hundred bounds; a fingerprint per entry keeps the lookup a scan of integers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::mesh::{NavMesh, TriId};

/// How many bounds (one per set of goal parts) are kept for reuse.
const CACHED: usize = 256;

/// The graph of parts for one set of costs, and the distances of the current search.
#[derive(Debug, Default)]
pub(super) struct CostBound {
    /// The costs the graph was built for.
    built_for: Option<Arc<[f64]>>,
    /// The part of each triangle.
    part: Vec<u32>,
    /// The cost of entering each part.
    entry: Vec<f64>,
    /// Each part's neighbours, `adjacency[start[p]..start[p + 1]]`.
    start: Vec<u32>,
    adjacency: Vec<u32>,
    /// Bounds already found for these costs: the goal parts (sorted, deduplicated) and
    /// the least cost still to pay from each part to one of them.
    cached: Vec<(Vec<u32>, Vec<f64>)>,
    /// Each entry of `cached`'s [`fingerprint`], scanned before the parts are compared.
    fingerprints: Vec<u64>,
    /// The entry of `cached` the current search uses.
    active: usize,
    /// The entry of `cached` the next new bound replaces once [`CACHED`] are kept.
    replace_next: usize,
    /// The goal parts of the current search (scratch).
    goal_parts: Vec<u32>,
    heap: BinaryHeap<Reverse<(OrdF64, u32)>>,
    stack: Vec<u32>,
    pairs: Vec<(u32, u32)>,
}

/// An `f64` ordered by `total_cmp`, for the heap.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A cheap summary of a set of goal parts (equal sets have equal ones): the count and
/// the first part.
fn fingerprint(parts: &[u32]) -> u64 {
    (parts.len() as u64) << 32 | u64::from(parts.first().copied().unwrap_or(0))
}

impl CostBound {
    /// Builds the graph of parts for `costs` (one per triangle of `mesh`), unless it is
    /// built for them already.
    pub(super) fn prepare(&mut self, mesh: &NavMesh, costs: &Arc<[f64]>) {
        if self
            .built_for
            .as_ref()
            .is_some_and(|b| Arc::ptr_eq(b, costs))
        {
            return;
        }
        let n = mesh.triangle_count();
        let neighbours = mesh.neighbours();
        self.part.clear();
        self.part.resize(n, u32::MAX);
        self.entry.clear();
        for t in 0..n {
            if self.part[t] != u32::MAX {
                continue;
            }
            let p = self.entry.len() as u32;
            self.entry.push(costs[t]);
            self.part[t] = p;
            if costs[t] > 0.0 {
                continue;
            }
            // A free part: every free triangle reachable through free triangles.
            self.stack.clear();
            self.stack.push(t as u32);
            while let Some(u) = self.stack.pop() {
                for v in neighbours[u as usize].iter().flatten() {
                    let v = v.index();
                    if self.part[v] == u32::MAX && costs[v] <= 0.0 {
                        self.part[v] = p;
                        self.stack.push(v as u32);
                    }
                }
            }
        }
        self.pairs.clear();
        for (t, around) in neighbours.iter().enumerate() {
            for v in around.iter().flatten() {
                let (a, b) = (self.part[t], self.part[v.index()]);
                if a != b {
                    self.pairs.push((a, b));
                }
            }
        }
        self.pairs.sort_unstable();
        self.pairs.dedup();
        let parts = self.entry.len();
        self.start.clear();
        self.start.resize(parts + 1, 0);
        for &(a, _) in &self.pairs {
            self.start[a as usize + 1] += 1;
        }
        for p in 0..parts {
            self.start[p + 1] += self.start[p];
        }
        self.adjacency.clear();
        self.adjacency.extend(self.pairs.iter().map(|&(_, b)| b));
        self.cached.clear();
        self.fingerprints.clear();
        self.active = 0;
        self.replace_next = 0;
        self.built_for = Some(Arc::clone(costs));
    }

    /// The least costs still to pay from every part to one of `goal_tris` (Dijkstra
    /// backwards: a part's distance is the cheapest entry into a neighbour plus that
    /// neighbour's distance).
    /// A bound found before for the same goal parts is reused (see the module docs).
    pub(super) fn search_from(&mut self, goal_tris: &[TriId]) {
        self.goal_parts.clear();
        self.goal_parts
            .extend(goal_tris.iter().map(|t| self.part[t.index()]));
        self.goal_parts.sort_unstable();
        self.goal_parts.dedup();
        let print = fingerprint(&self.goal_parts);
        if let Some(k) = (0..self.cached.len())
            .find(|&k| self.fingerprints[k] == print && self.cached[k].0 == self.goal_parts)
        {
            self.active = k;
            return;
        }
        let k = if self.cached.len() < CACHED {
            self.cached.push((Vec::new(), Vec::new()));
            self.fingerprints.push(print);
            self.cached.len() - 1
        } else {
            let k = self.replace_next;
            self.replace_next = (k + 1) % CACHED;
            self.fingerprints[k] = print;
            k
        };
        self.active = k;
        let (goals, dist) = &mut self.cached[k];
        goals.clone_from(&self.goal_parts);
        dist.clear();
        dist.resize(self.entry.len(), f64::INFINITY);
        self.heap.clear();
        for &p in goals.iter() {
            dist[p as usize] = 0.0;
            self.heap.push(Reverse((OrdF64(0.0), p)));
        }
        while let Some(Reverse((OrdF64(d), v))) = self.heap.pop() {
            if d > dist[v as usize] {
                continue;
            }
            let through = d + self.entry[v as usize];
            let (a, b) = (self.start[v as usize], self.start[v as usize + 1]);
            for k in a..b {
                let u = self.adjacency[k as usize] as usize;
                if through < dist[u] {
                    dist[u] = through;
                    self.heap.push(Reverse((OrdF64(through), u as u32)));
                }
            }
        }
    }

    /// The least costs still to pay after entering `tri` (its own cost paid).
    #[inline]
    pub(super) fn still_to_pay(&self, tri: TriId) -> f64 {
        self.cached[self.active].1[self.part[tri.index()] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Point;
    use crate::mesh::{BuildInfo, VertId};

    /// A strip of one and a half [`CACHED`] unit squares along x, two triangles each;
    /// every third triangle costs its index, so the triangles fall into more parts than
    /// are kept.
    fn strip() -> (NavMesh, Arc<[f64]>) {
        let squares = (CACHED + CACHED / 2) as u32;
        let mut v = Vec::new();
        for i in 0..=squares {
            v.push(Point::new(f64::from(i), 0.0));
            v.push(Point::new(f64::from(i), 1.0));
        }
        let mut t = Vec::new();
        for i in 0..squares {
            let (a, b, c, d) = (2 * i, 2 * i + 2, 2 * i + 3, 2 * i + 1);
            t.push([VertId(a), VertId(b), VertId(c)]);
            t.push([VertId(a), VertId(c), VertId(d)]);
        }
        let mesh = NavMesh::new(BuildInfo::default(), v, t).unwrap();
        let costs = (0..mesh.triangle_count())
            .map(|t| if t % 3 == 0 { t as f64 } else { 0.0 })
            .collect();
        (mesh, costs)
    }

    fn bound_of(bound: &CostBound, mesh: &NavMesh) -> Vec<f64> {
        (0..mesh.triangle_count())
            .map(|t| bound.still_to_pay(TriId(t as u32)))
            .collect()
    }

    #[test]
    fn a_kept_bound_is_the_bound_a_fresh_search_finds() {
        let (mesh, costs) = strip();
        let n = mesh.triangle_count();
        let fresh: Vec<Vec<f64>> = (0..n)
            .map(|g| {
                let mut bound = CostBound::default();
                bound.prepare(&mesh, &costs);
                bound.search_from(&[TriId(g as u32)]);
                bound_of(&bound, &mesh)
            })
            .collect();
        // The bounds differ between goals (else the check below proves nothing).
        assert_ne!(fresh[1], fresh[n - 1]);
        // One bound, asked again for goals already searched (kept) and for more goals than
        // it keeps (the oldest replaced), always answers as a fresh one.
        let mut bound = CostBound::default();
        bound.prepare(&mesh, &costs);
        assert!(bound.entry.len() > CACHED, "{} parts", bound.entry.len());
        let goals = [1, 7, 1, n - 1, 7]
            .into_iter()
            .chain(0..n)
            .chain([1, n - 1, 40]);
        for g in goals {
            bound.search_from(&[TriId(g as u32)]);
            assert_eq!(bound_of(&bound, &mesh), fresh[g], "goal triangle {g}");
        }
        // New costs: nothing kept for the old ones is used.
        let doubled: Arc<[f64]> = costs.iter().map(|c| c * 2.0).collect();
        bound.prepare(&mesh, &doubled);
        bound.search_from(&[TriId(1)]);
        let mut again = CostBound::default();
        again.prepare(&mesh, &doubled);
        again.search_from(&[TriId(1)]);
        assert_eq!(bound_of(&bound, &mesh), bound_of(&again, &mesh));
        assert_ne!(bound_of(&bound, &mesh), fresh[1]);
    }
}
