//! Landmarks: exact shortest distances from a few chosen vertices to every vertex, for the
//! ALT heuristic (Goldberg & Harrelson, "Computing the Shortest Path: A\* Search Meets
//! Graph Theory", SODA 2005).
//!
//! By the triangle inequality, the shortest distance between `a` and `b` is at least
//! `|d(L, a) - d(L, b)|` for any landmark `L`. On maze-like maps that bound is far tighter
//! than the straight-line distance, so the path search expands far fewer nodes while staying
//! exact. Landmarks are chosen farthest-first (each new one as far as possible from those
//! already chosen), one at least on every island big enough to matter. Distances are for a
//! point agent, so they remain lower bounds for any radius.

use crate::geom::Point;
use crate::mesh::{NavMesh, TriId, VertId};
use crate::path::NavMeshQuery;

/// Landmark distances: `dist[k * vertex_count + v]`, infinite off the landmark's island.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Landmarks {
    vertices: Vec<VertId>,
    vertex_count: usize,
    dist: Vec<f64>,
    /// The same distances vertex-major (`[v * count + k]`), for the per-node bound.
    transposed: Vec<f64>,
}

/// How many landmarks a mesh gets (fewer when it has fewer eligible vertices).
pub(crate) const LANDMARK_COUNT: usize = 16;

impl Landmarks {
    /// Chooses up to `count` landmarks and computes their distances.
    pub(crate) fn compute(mesh: &NavMesh, count: usize) -> Landmarks {
        let n = mesh.vertices().len();
        let eligible = eligible_vertices(mesh);
        let mut landmarks = Landmarks {
            vertices: Vec::new(),
            vertex_count: n,
            dist: Vec::new(),
            transposed: Vec::new(),
        };
        if eligible.is_empty() {
            return landmarks;
        }
        let mut query = NavMeshQuery::new();
        let mut nearest = vec![f64::INFINITY; n];
        let mut row = Vec::new();
        for _ in 0..count {
            // Farthest from the landmarks so far; unreached islands (infinity) come first.
            let mut pick = None;
            let mut best = 0.0f64;
            for &v in &eligible {
                let d = nearest[v.index()];
                if pick.is_none() || d > best {
                    pick = Some(v);
                    best = d;
                }
            }
            let Some(v) = pick else { break };
            if best == 0.0 {
                break;
            }
            query.flood_distances(mesh, v, &mut row);
            for (m, &d) in nearest.iter_mut().zip(&row) {
                *m = m.min(d);
            }
            landmarks.vertices.push(v);
            landmarks.dist.extend_from_slice(&row);
        }
        let k = landmarks.vertices.len();
        landmarks.transposed = vec![f64::INFINITY; n * k];
        for (i, row) in landmarks.dist.chunks(n.max(1)).enumerate() {
            for (v, &d) in row.iter().enumerate() {
                landmarks.transposed[v * k + i] = d;
            }
        }
        landmarks
    }

    fn row(&self, k: usize) -> &[f64] {
        &self.dist[k * self.vertex_count..(k + 1) * self.vertex_count]
    }

    /// For every landmark, lower and upper bounds on its distance to point `p`, which lies
    /// in each of `tris`: through the corners of those triangles, which `p` sees directly.
    pub(crate) fn point_bounds(
        &self,
        mesh: &NavMesh,
        p: Point,
        tris: &[TriId],
        out: &mut Vec<(f64, f64)>,
    ) {
        out.clear();
        for k in 0..self.vertices.len() {
            let row = self.row(k);
            let mut lo = f64::NEG_INFINITY;
            let mut hi = f64::INFINITY;
            for &t in tris {
                for v in mesh.triangles()[t.index()] {
                    let d = row[v.index()];
                    let to_p = mesh.vertices()[v.index()].distance(p);
                    lo = lo.max(d - to_p);
                    hi = hi.min(d + to_p);
                }
            }
            out.push((lo, hi));
        }
    }

    /// A lower bound on the distance from any point of edge `p q` (length `len`) to a point
    /// with the given bounds. A point `x` of the edge sees both ends, so its landmark
    /// distance lies within `(d(p) + d(q) ∓ len) / 2`.
    pub(crate) fn edge_bound(&self, p: VertId, q: VertId, len: f64, goal: &[Active]) -> f64 {
        let mut best = 0.0f64;
        let (rp, rq) = (self.by_vertex(p), self.by_vertex(q));
        let half = len / 2.0;
        for a in goal {
            let mid = (rp[a.landmark] + rq[a.landmark]) / 2.0;
            let bound = (a.lo - (mid + half)).max(mid - half - a.hi);
            if bound.is_finite() {
                best = best.max(bound);
            }
        }
        best
    }

    /// Vertex `v`'s distances to every landmark.
    fn by_vertex(&self, v: VertId) -> &[f64] {
        let k = self.vertices.len();
        &self.transposed[v.index() * k..(v.index() + 1) * k]
    }

    /// The landmark lower bound on the distance from vertex `v` to a point with the given
    /// bounds on its distance to every landmark (`goal[k]` = lower, upper). Roots are few
    /// enough to afford every landmark.
    pub(crate) fn vertex_bound(&self, v: VertId, goal: &[(f64, f64)]) -> f64 {
        let mut best = 0.0f64;
        for (&d, &(lo, hi)) in self.by_vertex(v).iter().zip(goal) {
            let bound = (lo - d).max(d - hi);
            if bound.is_finite() {
                best = best.max(bound);
            }
        }
        best
    }

    /// Chooses the landmarks one search evaluates: the `count` that bound the distance from
    /// start to goal best (Goldberg & Harrelson's "active landmarks"). Every landmark gives
    /// a valid lower bound, so any subset keeps the search exact; the ones that are tight
    /// between start and goal tend to be tight along the way, and evaluating a few instead
    /// of all of them is most of the saving of a search node.
    pub(crate) fn choose_active(
        start: &[(f64, f64)],
        goal: &[(f64, f64)],
        count: usize,
        out: &mut Vec<Active>,
    ) {
        out.clear();
        for (k, (&(s_lo, s_hi), &(g_lo, g_hi))) in start.iter().zip(goal).enumerate() {
            let bound = (s_lo - g_hi).max(g_lo - s_hi);
            if bound.is_finite() {
                out.push(Active {
                    landmark: k,
                    lo: g_lo,
                    hi: g_hi,
                    score: bound,
                });
            }
        }
        out.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.landmark.cmp(&b.landmark))
        });
        out.truncate(count);
    }
}

/// A landmark chosen for one search, with the goal's bounds on its distance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Active {
    landmark: usize,
    lo: f64,
    hi: f64,
    /// How well it bounds start to goal (the choice's key).
    score: f64,
}

/// Wall vertices of islands big enough to deserve a landmark: at least 64 triangles and
/// 1% of the mesh. Small islands are searched quickly without one.
fn eligible_vertices(mesh: &NavMesh) -> Vec<VertId> {
    let mut island_size = vec![0usize; mesh.island_count() as usize];
    for island in mesh.islands() {
        island_size[island.index()] += 1;
    }
    let min_size = 64.max(mesh.triangle_count() / 100);
    let mut chosen = vec![false; mesh.vertices().len()];
    for (t, tri) in mesh.triangles().iter().enumerate() {
        if island_size[mesh.islands()[t].index()] >= min_size {
            for v in tri {
                if mesh.is_wall_vertex(*v) {
                    chosen[v.index()] = true;
                }
            }
        }
    }
    (0..chosen.len())
        .filter(|&v| chosen[v])
        .map(|v| VertId(v as u32))
        .collect()
}
